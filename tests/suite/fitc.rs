//! FITC: gradient by finite differences, the fast evidence against dense formulas, the full-GP limit,
//! Snelson's reference values on Kin-40k, the sinc toy end to end, and errors on bad input.

use crate::common::{
    assert_flagged_for_few_inputs, assert_overconfidence_found_by_refits, check_gradient,
    check_gradient_entries, dense_neg_log_evidence, inducing_problem, kin40k_train, read_numbers,
    se_ard_by_definition as gram,
};
use approx::assert_relative_eq;
use nalgebra::{DMatrix, DVector};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use ssgp::data::{Problem, Roughness};
use ssgp::kernel::Kernel;
use ssgp::linalg::Jitter;
use ssgp::optim::Objective;
use ssgp::{Dataset, Error, Fitc, ParamGuard, Regressor, Vfe};

/// Hyperparameters and pseudo-inputs decoded from our layout θ = [log ℓ, log σ0, p, vec(X̄)].
struct Decoded {
    ell: Vec<f64>,
    sf2: f64,
    sn2: f64,
    xb: DMatrix<f64>,
}

fn decode(theta: &DVector<f64>, dim: usize, m: usize, floor: f64) -> Decoded {
    Decoded {
        ell: (0..dim).map(|d| theta[d].exp()).collect(),
        sf2: (2.0 * theta[dim]).exp(),
        sn2: floor + (2.0 * theta[dim + 1]).exp(),
        xb: DMatrix::from_column_slice(m, dim, &theta.as_slice()[dim + 2..]),
    }
}

/// The FITC evidence built with n×n matrices: log N(y | 0, Q_ff + diag(K_ff − Q_ff) + σn²I).
fn dense_fitc_nlml(
    x: &DMatrix<f64>,
    y: &DVector<f64>,
    theta: &DVector<f64>,
    m: usize,
    jitter: f64,
    floor: f64,
) -> f64 {
    dense_neg_log_evidence(dense_fitc_covariance(x, theta, m, jitter, floor), y)
}

/// FITC's prior covariance of the targets, Q_ff + diag(K_ff − Q_ff) + σn²I (n×n), at θ.
fn dense_fitc_covariance(
    x: &DMatrix<f64>,
    theta: &DVector<f64>,
    m: usize,
    jitter: f64,
    floor: f64,
) -> DMatrix<f64> {
    let mut p = decode(theta, x.ncols(), m, floor);
    // θ holds the pseudo-inputs relative to the inputs' column means.
    for d in 0..x.ncols() {
        let mean = x.column(d).mean();
        p.xb.column_mut(d).add_scalar_mut(mean);
    }
    let k_ff = gram(x, x, &p.ell, p.sf2);
    let k_fu = gram(x, &p.xb, &p.ell, p.sf2);
    let k_uu = gram(&p.xb, &p.xb, &p.ell, p.sf2) + DMatrix::identity(m, m) * jitter;
    let q = &k_fu * k_uu.cholesky().unwrap().solve(&k_fu.transpose());
    let n = x.nrows();
    let mut c = q.clone();
    for i in 0..n {
        c[(i, i)] = k_ff[(i, i)] + p.sn2;
    }
    c
}

/// FITC's LOO diagnostic (its Woodbury form, O(nm)) is leave-one-out of Q + Λ by definition.
#[test]
fn loo_diagnostic_is_leave_one_out_by_definition() {
    let mut rng = StdRng::seed_from_u64(8);
    let (x, y, _) = inducing_problem(40, 6, 2, &mut rng);
    let data = Dataset::new(x.clone(), y.clone()).unwrap();
    let fitted = Fitc::params(6)
        .seed(2)
        .max_evaluations(60)
        .fit(&data)
        .unwrap();
    let c = dense_fitc_covariance(
        &x,
        fitted.parameters(),
        6,
        fitted.jitter(),
        fitted.noise_floor(),
    );
    let (z2, mnlp, nmse) = crate::common::loo_by_definition(&c, &y.add_scalar(-data.y_mean()));
    let found = fitted.training().diagnostic.unwrap();
    println!("fitc: {found} (by definition z² {z2:.6}, MNLP {mnlp:.6}, NMSE {nmse:.6})");
    assert_relative_eq!(found.mean_z2, z2, max_relative = 1e-8);
    assert_relative_eq!(found.mnlp, mnlp, max_relative = 1e-8);
    assert_relative_eq!(found.nmse, nmse, max_relative = 1e-8);
}

#[test]
fn gradient_matches_central_differences_free_and_fixed() {
    let mut rng = StdRng::seed_from_u64(11);
    let mut worst = 0.0f64;
    for &(n, m, dim) in &[(30, 5, 1), (40, 7, 3), (25, 4, 2)] {
        for trial in 0..3 {
            let (x, y, theta) = inducing_problem(n, m, dim, &mut rng);
            let data = Dataset::new(x, y).unwrap();
            let floor = if trial == 2 { 0.05 } else { 0.0 };
            let free_params = Fitc::params(m)
                .noise_floor(floor)
                .threads(1)
                .check()
                .unwrap();
            let free = free_params.evidence(&data).unwrap();
            worst = worst.max(check_gradient(
                &free,
                &theta,
                &format!("free ({n},{m},{dim}) #{trial}"),
            ));

            // θ's block is relative to the inputs' column means; fixed ones are given raw.
            let xb = DMatrix::from_fn(m, dim, |j, d| {
                theta[dim + 2 + j + d * m] + data.x().column(d).mean()
            });
            let fixed_params = Fitc::params(m)
                .noise_floor(floor)
                .pseudo_inputs(xb.clone())
                .fixed_pseudo_inputs(true)
                .check()
                .unwrap();
            let fixed = fixed_params.evidence(&data).unwrap();
            assert_eq!(fixed.num_params(), dim + 2);
            let head = theta.rows(0, dim + 2).into_owned();
            worst = worst.max(check_gradient(
                &fixed,
                &head,
                &format!("fixed ({n},{m},{dim}) #{trial}"),
            ));
            // The fixed variant's gradient is the head of the free one, at the same pseudo-inputs:
            // the free θ holds X̄ − c as the fixed evidence computes it (not the θ that X̄ came
            // from, which (θ + c) − c would round).
            let mut same = theta.clone();
            for d in 0..dim {
                let mean = data.x().column(d).mean();
                for j in 0..m {
                    same[dim + 2 + j + d * m] = xb[(j, d)] - mean;
                }
            }
            let (vf, gf) = free.value_and_gradient(&same).unwrap();
            let (vx, gx) = fixed.value_and_gradient(&head).unwrap();
            assert_relative_eq!(vf, vx, max_relative = 1e-14);
            assert_relative_eq!(gf.rows(0, dim + 2).into_owned(), gx, max_relative = 1e-12);
        }
    }
    println!("finite differences: largest |Δ| / tolerance = {worst:.3}");
}

/// The pseudo-inputs of θ's block (X̄ − 1cᵀ, column-major after the D + 2 hyperparameters) back
/// in the inputs' own coordinates, as `pseudo_inputs` takes them.
fn pseudo_inputs_of(theta: &DVector<f64>, data: &Dataset, m: usize) -> DMatrix<f64> {
    let dim = data.dim();
    DMatrix::from_fn(m, dim, |j, d| {
        theta[dim + 2 + j + d * m] + data.x().column(d).mean()
    })
}

/// FITC's gradient with an absolute jitter δ on K_uu (`jitter(δ)`, [`Jitter::absolute`]: δI,
/// which does not move with σ0, so none of it enters ∂/∂log σ0 — the factors' relative jitter is
/// 0, where the default's is δσ0²) against central differences, with free and with fixed
/// pseudo-inputs, for the squared exponential and Matérn 3/2. The jitters (1e-3 … 1e-1, against
/// σ0² from 0.37 to 2.7) are large enough that counting them as relative fails ∂/∂log σ0.
#[test]
fn gradient_with_an_absolute_jitter_matches_central_differences() {
    let mut rng = StdRng::seed_from_u64(12);
    let mut worst = 0.0f64;
    for kernel in [Kernel::SquaredExponential, Kernel::Matern32] {
        for (&(n, m, dim), jitter) in [(30, 5, 1), (40, 7, 3), (25, 4, 2)]
            .iter()
            .zip([1e-3, 1e-1, 1e-2])
        {
            let (x, y, theta) = inducing_problem(n, m, dim, &mut rng);
            let data = Dataset::new(x, y).unwrap();
            let params = Fitc::params(m).kernel(kernel).jitter(jitter).threads(1);
            let label = format!("{kernel:?} ({n},{m},{dim}) absolute jitter {jitter:e}");
            let fitted = params.clone().check().unwrap().condition(&data, &theta);
            assert_eq!(fitted.unwrap().jitter(), jitter, "{label}");
            // check_gradient's 1e-5 relative, every FITC check's: h = 1e-5 errs by ~1e-8 absolute.
            let free = params.clone().check().unwrap().evidence(&data).unwrap();
            worst = worst.max(check_gradient(&free, &theta, &format!("free, {label}")));
            let fixed = params
                .pseudo_inputs(pseudo_inputs_of(&theta, &data, m))
                .fixed_pseudo_inputs(true)
                .check()
                .unwrap()
                .evidence(&data)
                .unwrap();
            let head = theta.rows(0, dim + 2).into_owned();
            worst = worst.max(check_gradient(&fixed, &head, &format!("fixed, {label}")));
        }
    }
    println!("finite differences: largest |Δ| / tolerance = {worst:.1e}");
}

/// FITC's gradient with fixed pseudo-inputs (`fixed_pseudo_inputs(true)`: θ = [log ℓ, log σ0,
/// p_n] alone) under the Matérn kernels ½, 3/2 and 5/2 (whose lengthscale derivatives go through
/// the kernels' slopes G_uf and G_uu, not K as for the squared exponential), with and without a
/// noise floor, against central differences; and the head of the free gradient at the same
/// pseudo-inputs.
#[test]
fn fixed_pseudo_inputs_under_matern_kernels_match_central_differences() {
    let mut rng = StdRng::seed_from_u64(13);
    let mut worst = 0.0f64;
    for kernel in [Kernel::Matern12, Kernel::Matern32, Kernel::Matern52] {
        for (trial, &(n, m, dim)) in [(30, 5, 1), (40, 7, 3), (25, 4, 2)].iter().enumerate() {
            let (x, y, theta) = inducing_problem(n, m, dim, &mut rng);
            let data = Dataset::new(x, y).unwrap();
            let floor = if trial == 2 { 0.05 } else { 0.0 };
            let params = Fitc::params(m).kernel(kernel).noise_floor(floor).threads(1);
            let xb = pseudo_inputs_of(&theta, &data, m);
            let fixed = params
                .clone()
                .pseudo_inputs(xb.clone())
                .fixed_pseudo_inputs(true)
                .check()
                .unwrap()
                .evidence(&data)
                .unwrap();
            assert_eq!(fixed.num_params(), dim + 2);
            let head = theta.rows(0, dim + 2).into_owned();
            let label = format!("{kernel:?} fixed ({n},{m},{dim}) floor {floor}");
            // check_gradient's 1e-5 relative, as above (h = 1e-5: ~1e-8 absolute round-off).
            worst = worst.max(check_gradient(&fixed, &head, &label));
            // The free θ holding X̄ − c as the fixed evidence computes it (see
            // `gradient_matches_central_differences_free_and_fixed`).
            let mut same = theta.clone();
            for d in 0..dim {
                let mean = data.x().column(d).mean();
                for j in 0..m {
                    same[dim + 2 + j + d * m] = xb[(j, d)] - mean;
                }
            }
            let free = params.check().unwrap().evidence(&data).unwrap();
            let (vf, gf) = free.value_and_gradient(&same).unwrap();
            let (vx, gx) = fixed.value_and_gradient(&head).unwrap();
            assert_relative_eq!(vf, vx, max_relative = 1e-14);
            assert_relative_eq!(gf.rows(0, dim + 2).into_owned(), gx, max_relative = 1e-12);
        }
    }
    println!("finite differences: largest |Δ| / tolerance = {worst:.1e}");
}

/// FITC's gradient under `jitter_policy(Jitter::ladder())` against central differences, free and
/// with fixed pseudo-inputs, for the squared exponential and Matérn 5/2. The ladder adds jitter
/// only when K_uu fails to factor (1e-10·σ0², then ×10 up to 1e-6·σ0²); at these random θ K_uu
/// factors at the first rung, with no jitter (checked: the conditioned model's jitter is 0, and
/// value and gradient are `jitter(0.0)`'s bit for bit), so this checks the ladder's first rung;
/// the retried rungs are not reached here.
#[test]
fn gradient_under_the_jitter_ladder_matches_central_differences() {
    let mut rng = StdRng::seed_from_u64(14);
    let mut worst = 0.0f64;
    for kernel in [Kernel::SquaredExponential, Kernel::Matern52] {
        for &(n, m, dim) in &[(30, 5, 1), (40, 7, 3), (25, 4, 2)] {
            let (x, y, theta) = inducing_problem(n, m, dim, &mut rng);
            let data = Dataset::new(x, y).unwrap();
            let params = Fitc::params(m)
                .kernel(kernel)
                .jitter_policy(Jitter::ladder())
                .threads(1);
            let label = format!("{kernel:?} ({n},{m},{dim}) ladder");
            let fitted = params.clone().check().unwrap().condition(&data, &theta);
            assert_eq!(fitted.unwrap().jitter(), 0.0, "{label}: first rung");
            let free = params.clone().check().unwrap().evidence(&data).unwrap();
            let none = params.clone().jitter(0.0).check().unwrap();
            let none = none.evidence(&data).unwrap().value_and_gradient(&theta);
            assert_eq!(free.value_and_gradient(&theta).unwrap(), none.unwrap());
            // check_gradient's 1e-5 relative, as above (h = 1e-5: ~1e-8 absolute round-off).
            worst = worst.max(check_gradient(&free, &theta, &format!("free, {label}")));
            let fixed = params
                .pseudo_inputs(pseudo_inputs_of(&theta, &data, m))
                .fixed_pseudo_inputs(true)
                .check()
                .unwrap()
                .evidence(&data)
                .unwrap();
            let head = theta.rows(0, dim + 2).into_owned();
            worst = worst.max(check_gradient(&fixed, &head, &format!("fixed, {label}")));
        }
    }
    println!("finite differences: largest |Δ| / tolerance = {worst:.1e}");
}

/// The jitter ladder's later rungs: with inducing input 1 a copy of inducing input 0 (and 3 of
/// 2), K_uu is singular, fails to factor without jitter and is factored at a retried rung k ≥ 1
/// (δ = b·10^(k−1)·σ0², relative, so δ moves with σ0 and enters ∂/∂log σ0 through the factors'
/// relative jitter). Three ladders: the default (b = 10⁻¹⁰: rung 1), one whose first rungs are
/// too small to change K_uu in f64 (b = 10⁻²²: rung 6 or later) and one with b = 10⁻² (rung 1,
/// where the relative jitter's term δ·tr(M) in ∂/∂log σ0 is large enough that dropping it fails
/// this test). FITC's and VFE's gradients against central differences in the hyperparameters and
/// in the inducing inputs other than these four (moving one would end the singularity and
/// change the rung), with free and with fixed inducing inputs, for the squared exponential and
/// Matérn 5/2.
#[test]
fn gradient_at_a_later_rung_of_the_jitter_ladder_matches_central_differences() {
    let mut rng = StdRng::seed_from_u64(21);
    let mut rungs = vec![];
    let ladder = |retry_base: f64| Jitter {
        retry_base,
        retries: 30,
        ..Jitter::ladder()
    };
    for kernel in [Kernel::SquaredExponential, Kernel::Matern52] {
        for &(n, m, dim) in &[(30, 5, 1), (40, 7, 3), (25, 6, 2)] {
            let (x, y, mut theta) = inducing_problem(n, m, dim, &mut rng);
            for d in 0..dim {
                let at = |j: usize| dim + 2 + j + d * m;
                theta[at(1)] = theta[at(0)];
                theta[at(3)] = theta[at(2)];
            }
            let data = Dataset::new(x, y).unwrap();
            let sf2 = (2.0 * theta[dim]).exp();
            let moving: Vec<usize> = (0..theta.len())
                .filter(|&i| i < dim + 2 || (i - dim - 2) % m > 3)
                .collect();
            let head: Vec<usize> = (0..dim + 2).collect();
            let theta_head = theta.rows(0, dim + 2).into_owned();
            for (policy, base) in [
                (Jitter::ladder(), 1e-10),
                (ladder(1e-22), 1e-22),
                (ladder(1e-2), 1e-2),
            ] {
                for approx in ["FITC", "VFE"] {
                    let label = format!("{approx} {kernel:?} ({n},{m},{dim}) base {base:e}");
                    // The jitter of the model conditioned at θ, and the objectives with free
                    // and with fixed inducing inputs, of FITC's or VFE's params.
                    macro_rules! objectives {
                        ($params:expr, $inputs:ident, $fixed:ident) => {{
                            let params = $params.kernel(kernel).jitter_policy(policy).threads(1);
                            let jitter = params.clone().check().unwrap().condition(&data, &theta);
                            let fixed = params
                                .clone()
                                .$inputs(pseudo_inputs_of(&theta, &data, m))
                                .$fixed(true);
                            let (free, fixed): (Box<dyn Objective>, Box<dyn Objective>) = (
                                Box::new(params.check().unwrap().evidence(&data).unwrap()),
                                Box::new(fixed.check().unwrap().evidence(&data).unwrap()),
                            );
                            (jitter.unwrap().jitter(), free, fixed)
                        }};
                    }
                    let (jitter, free, fixed) = if approx == "FITC" {
                        objectives!(Fitc::params(m), pseudo_inputs, fixed_pseudo_inputs)
                    } else {
                        objectives!(Vfe::params(m), inducing_inputs, fixed_inducing_inputs)
                    };
                    assert!(jitter > 0.0, "{label}: K_uu factored without jitter");
                    let rung = (jitter / (base * sf2)).log10().round() + 1.0;
                    assert!(
                        (jitter / (base * sf2 * 10f64.powf(rung - 1.0)) - 1.0).abs() < 1e-12,
                        "{label}: jitter {jitter:e} is no rung of the ladder (σ0² = {sf2})"
                    );
                    if base < 1e-20 {
                        assert!(rung >= 6.0, "{label}: rung {rung}");
                    }
                    rungs.push(rung);
                    check_gradient_entries(
                        free.as_ref(),
                        &theta,
                        &moving,
                        &format!("free, {label}"),
                    );
                    check_gradient_entries(
                        fixed.as_ref(),
                        &theta_head,
                        &head,
                        &format!("fixed, {label}"),
                    );
                }
            }
        }
    }
    println!("rungs reached: {rungs:?}");
}

#[test]
fn fast_evidence_matches_dense_formula() {
    let mut rng = StdRng::seed_from_u64(5);
    let mut worst = 0.0f64;
    for &(n, m, dim, floor, jitter) in &[
        (30, 5, 1, 0.0, 1e-6),
        (50, 8, 3, 0.0, 1e-6),
        (40, 6, 2, 0.1, 1e-6),
        (35, 10, 2, 0.02, 1e-3),
    ] {
        let (x, y, theta) = inducing_problem(n, m, dim, &mut rng);
        let data = Dataset::new(x.clone(), y.clone()).unwrap();
        let params = Fitc::params(m)
            .relative_noise_floor(0.0)
            .jitter(jitter)
            .noise_floor(floor)
            .check()
            .unwrap();
        let obj = params.evidence(&data).unwrap();
        let fast = obj.value(&theta).unwrap();
        assert_eq!(fast, obj.value_and_gradient(&theta).unwrap().0);
        let dense = dense_fitc_nlml(&x, &y, &theta, m, jitter, floor);
        let rel = (fast - dense).abs() / dense.abs();
        worst = worst.max(rel);
        assert!(
            rel <= 1e-10,
            "({n},{m},{dim}) floor {floor}: relative error {rel:e}"
        );
    }
    println!("fast vs dense FITC evidence: largest relative error {worst:.1e}");
}

#[test]
fn pseudo_inputs_at_the_training_inputs_give_the_full_gp() {
    let mut rng = StdRng::seed_from_u64(8);
    let n = 25;
    let x: DMatrix<f64> = DMatrix::from_fn(n, 2, |_, _| rng.random_range(-3.0..3.0));
    let y = DVector::from_fn(n, |i, _| {
        (x[(i, 0)] + 0.5 * x[(i, 1)]).sin() + 0.1 * rng.random_range(-1.0..1.0) + 2.0
    });
    let data = Dataset::new(x.clone(), y.clone()).unwrap();
    let (ell, sf2, sn2): (Vec<f64>, f64, f64) = (vec![0.8, 1.3], 1.5, 0.04);
    let mut theta = DVector::zeros(2 + 2 + 2 * n);
    theta[0] = ell[0].ln();
    theta[1] = ell[1].ln();
    theta[2] = 0.5 * f64::ln(sf2);
    theta[3] = 0.5 * f64::ln(sn2);
    // The pseudo-inputs at the training inputs, relative to their column means.
    let centred = DMatrix::from_fn(n, 2, |i, d| x[(i, d)] - x.column(d).mean());
    theta.as_mut_slice()[4..].copy_from_slice(centred.as_slice());
    let fitted = Fitc::params(n)
        .relative_noise_floor(0.0)
        .jitter(0.0)
        .check()
        .unwrap()
        .condition(&data, &theta)
        .unwrap();

    let yc = y.add_scalar(-y.mean());
    let c = gram(&x, &x, &ell, sf2) + DMatrix::identity(n, n) * sn2;
    let full_nlml = dense_neg_log_evidence(c.clone(), &yc);
    let rel = (fitted.neg_log_evidence() - full_nlml).abs() / full_nlml.abs();
    assert!(rel < 1e-11, "evidence: relative error {rel:e}");

    let xs = DMatrix::from_fn(40, 2, |_, _| rng.random_range(-3.5..3.5));
    let pred = fitted.predict(&xs).unwrap();
    let c_chol = c.cholesky().unwrap();
    let k_sf = gram(&xs, &x, &ell, sf2);
    let mean = &k_sf * c_chol.solve(&yc);
    let var = DVector::from_fn(40, |j, _| {
        let kj = k_sf.row(j).transpose();
        sf2 - kj.dot(&c_chol.solve(&kj))
    });
    let mean_err = (0..40)
        .map(|j| (pred.mean[j] - y.mean() - mean[j]).abs())
        .fold(0.0, f64::max);
    let var_err = (0..40)
        .map(|j| (pred.f_variance[j] - var[j]).abs())
        .fold(0.0, f64::max);
    let eig = gram(&x, &x, &ell, sf2).symmetric_eigenvalues();
    println!(
        "FITC(X̄ = X, δ = 0) vs full GP: evidence relative error {rel:.1e}, max |Δμ| {mean_err:.1e}, \
         max |Δσ²_f| {var_err:.1e} (cond K_ff = {:.1e})",
        eig.max() / eig.min()
    );
    // Round-off in Q_ff = K_ff grows with cond(K_ff) (about 1e3 here); measured errors are ~1e-15.
    assert!(rel < 1e-11, "evidence: relative error {rel:e}");
    assert!(mean_err < 1e-11, "mean: max error {mean_err:e}");
    assert!(var_err < 1e-11, "latent variance: max error {var_err:e}");
    for j in 0..40 {
        assert_relative_eq!(
            pred.y_variance[j],
            pred.f_variance[j] + sn2,
            epsilon = 1e-15
        );
    }
}

#[test]
fn matches_snelson_reference_on_kin40k() {
    let data = kin40k_train();
    let (n, dim, m) = (data.len(), data.dim(), 50);
    assert_eq!((n, dim), (10000, 8));
    let snelson = read_numbers("tests/data/reference/fitc_kin40k_m50_params.csv");
    let reference = read_numbers("tests/data/reference/fitc_kin40k_m50_nlml_grad.csv");
    assert_eq!(snelson.len(), m * dim + dim + 2);
    assert_eq!(reference.len(), snelson.len() + 1);

    // Snelson: [x̄(:), log b (D), log c, log σn²] with b_d = ℓ_d⁻², c = σ0².
    // Ours:    [log ℓ (D), log σ0, log σn, x̄(:)].
    let md = m * dim;
    let mut theta = DVector::zeros(snelson.len());
    for d in 0..dim {
        theta[d] = -0.5 * snelson[md + d];
    }
    theta[dim] = 0.5 * snelson[md + dim];
    theta[dim + 1] = 0.5 * snelson[md + dim + 1];
    // Ours holds the pseudo-inputs relative to the column means of the inputs.
    let pseudo = DMatrix::from_fn(m, dim, |j, d| {
        snelson[j + d * m] - data.x().column(d).mean()
    });
    theta.as_mut_slice()[dim + 2..].copy_from_slice(pseudo.as_slice());

    let params = Fitc::params(m)
        .relative_noise_floor(0.0)
        .jitter(1e-6)
        .check()
        .unwrap();
    let obj = params.evidence(&data).unwrap();
    let start = std::time::Instant::now();
    let (value, g) = obj.value_and_gradient(&theta).unwrap();
    let elapsed = start.elapsed();

    // Chain rule back to Snelson's layout: ∂/∂log b_d = −½ ∂/∂log ℓ_d, ∂/∂log c = ½ ∂/∂log σ0,
    // ∂/∂log σn² = ½ ∂/∂log σn; pseudo-inputs unchanged.
    let mut g_snelson = vec![0.0; snelson.len()];
    g_snelson[..md].copy_from_slice(&g.as_slice()[dim + 2..]);
    for d in 0..dim {
        g_snelson[md + d] = -0.5 * g[d];
    }
    g_snelson[md + dim] = 0.5 * g[dim];
    g_snelson[md + dim + 1] = 0.5 * g[dim + 1];

    let value_rel = (value - reference[0]).abs() / reference[0].abs();
    let ref_grad = &reference[1..];
    let gmax = ref_grad.iter().fold(0.0f64, |a, v| a.max(v.abs()));
    let grad_rel = g_snelson
        .iter()
        .zip(ref_grad)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f64, f64::max)
        / gmax;
    println!(
        "Kin-40k FITC m=50: value {value} (relative error {value_rel:.2e}), gradient max error / max |g| = {grad_rel:.2e}, one evaluation {elapsed:?}"
    );
    assert!(value_rel <= 1e-10, "value: relative error {value_rel:e}");
    assert!(grad_rel <= 1e-10, "gradient: relative error {grad_rel:e}");

    let fitted = params.condition(&data, &theta).unwrap();
    assert_eq!(fitted.neg_log_evidence(), value);
    assert_eq!(fitted.training().iterations, 0);
}

#[test]
fn sinc_end_to_end() {
    let fit = |seed: u64| {
        let mut rng = StdRng::seed_from_u64(seed);
        let train = ssgp::data::sinc_data(100, false, 0.05, &mut rng).unwrap();
        let test = ssgp::data::sinc_data(1000, true, 0.05, &mut rng).unwrap();
        let model = Fitc::params(20).seed(seed).fit(&train).unwrap();
        (train, test, model)
    };
    let (train, test, model) = fit(3);
    let pred = model.predict(test.x()).unwrap();
    let nmse = ssgp::metrics::nmse(test.y(), &pred, train.y_mean()).unwrap();
    let t = model.training();
    println!(
        "sinc FITC m=20: NMSE {nmse:.4}, −log p(y) {:.3} → {:.3} in {} iterations / {} evaluations ({:?}); ℓ = {:.3}, σ0² = {:.3}, σn² = {:.5}",
        t.initial_neg_log_evidence,
        t.neg_log_evidence,
        t.iterations,
        t.evaluations,
        t.termination,
        model.lengthscales()[0],
        model.signal_variance(),
        model.noise_variance()
    );
    assert!(nmse <= 0.03, "NMSE {nmse}");
    assert!(t.neg_log_evidence <= t.initial_neg_log_evidence);
    assert!(
        t.neg_log_evidence < t.initial_neg_log_evidence - 1.0,
        "training made no progress"
    );
    assert_eq!(model.neg_log_evidence(), t.neg_log_evidence);
    assert!(pred.y_variance.iter().all(|v| *v > 0.0));
    assert_eq!(model.pseudo_inputs().shape(), (20, 1));
    assert_eq!(model.parameters().len(), 1 + 2 + 20);

    // Same seed, same fit.
    let (_, _, again) = fit(3);
    assert_eq!(model.parameters(), again.parameters());
    assert_eq!(again.predict(test.x()).unwrap(), pred);

    // Through the trait objects.
    let boxed: Box<dyn Regressor> = Box::new(Fitc::params(20).seed(3));
    assert_eq!(boxed.name(), "fitc");
    let fitted = boxed.fit_boxed(&train).unwrap();
    assert_eq!(fitted.name(), "fitc");
    assert_eq!(fitted.predict(test.x()).unwrap(), pred);
}

/// FITC's and VFE's evidence is free of the scale of inputs and targets at a fixed θ (what
/// `training::case_5` asks of whole fits with fixed pseudo-inputs; with learned ones the path
/// through a multi-modal evidence moves with round-off): on data x·a + b, y·c, at θ with
/// log ℓ + ln a, log σ0 and p_n + ln|c| (no noise floor) and the pseudo-inputs at the same
/// places relative to the data, −log p is the unscaled one + n ln|c|. The unscaled data is the
/// scaled data taken back ((v − b)/a, v/c): x·1e-6 + 1e8 keeps about 11 bits of x's spread, a
/// change of the data itself.
#[test]
fn the_evidence_is_free_of_the_scale_of_inputs_and_targets() {
    let mut rng = StdRng::seed_from_u64(9);
    let (n, m, dim) = (100, 8, 2);
    let (x, y, theta) = inducing_problem(n, m, dim, &mut rng);
    // −log p of `model` (FITC or VFE, no noise floor) on `data` at `theta`.
    macro_rules! value {
        ($model:ident, $data:expr, $theta:expr) => {
            $model::params(m)
                .relative_noise_floor(0.0)
                .noise_floor(0.0)
                .check()
                .unwrap()
                .evidence($data)
                .unwrap()
                .value($theta)
                .unwrap()
        };
    }
    let mut worst = 0.0f64;
    for &(a, b, c) in &[
        (1.0, 0.0, 1e-8),
        (1.0, 0.0, 1e8),
        (1e-6, 1e8, 1.0),
        (1e6, 1e8, 1.0),
        (1e-3, -5e4, -1e3),
    ] {
        let scaled = Dataset::new(x.map(|v| a * v + b), y.map(|v| c * v)).unwrap();
        let back =
            Dataset::new(scaled.x().map(|v| (v - b) / a), scaled.y().map(|v| v / c)).unwrap();
        let mut moved = theta.clone();
        for d in 0..dim {
            moved[d] += a.ln();
        }
        moved[dim] += c.abs().ln();
        moved[dim + 1] += c.abs().ln();
        // The block is the pseudo-inputs' offsets from the inputs' column means, which differ
        // between the frames by δ = mean(back) − (mean(scaled) − b)/a (the scaled mean rounds
        // at its own magnitude): offsets a·(B + δ) put the pseudo-inputs at the same places
        // relative to the data.
        for d in 0..dim {
            let delta = back.x().column(d).mean() - (scaled.x().column(d).mean() - b) / a;
            for j in 0..m {
                moved[dim + 2 + d * m + j] = a * (theta[dim + 2 + d * m + j] + delta);
            }
        }
        let shift = n as f64 * c.abs().ln();
        for (name, unscaled, scaled) in [
            (
                "FITC",
                value!(Fitc, &back, &theta),
                value!(Fitc, &scaled, &moved),
            ),
            (
                "VFE",
                value!(Vfe, &back, &theta),
                value!(Vfe, &scaled, &moved),
            ),
        ] {
            let rel = (scaled - shift - unscaled).abs() / unscaled.abs();
            worst = worst.max(rel);
            assert!(
                rel <= 1e-9,
                "{name} at ({a:e}, {b:e}, {c:e}): {scaled} − {shift} against {unscaled}"
            );
        }
    }
    println!("largest relative difference {worst:.1e}");
}

#[test]
fn fixed_pseudo_inputs_stay_where_they_were_put() {
    let mut rng = StdRng::seed_from_u64(4);
    let train = ssgp::data::sinc_data(80, false, 0.05, &mut rng).unwrap();
    let xb = DMatrix::from_fn(6, 1, |j, _| -1.0 + j as f64);
    let model = Fitc::params(6)
        .pseudo_inputs(xb.clone())
        .fixed_pseudo_inputs(true)
        .initial_lengthscales(DVector::from_element(1, 1.0))
        .max_evaluations(60)
        .threads(1)
        .fit(&train)
        .unwrap();
    assert_eq!(model.pseudo_inputs(), xb);
    let mean = train.x().column(0).mean();
    let block: Vec<f64> = xb.iter().map(|v| v - mean).collect();
    assert_eq!(&model.parameters().as_slice()[3..], block.as_slice());
    assert!(model.training().evaluations <= 60);
    assert!(model.training().neg_log_evidence < model.training().initial_neg_log_evidence);
}

#[test]
fn bad_inputs_are_typed_errors() {
    let mut rng = StdRng::seed_from_u64(1);
    let train = ssgp::data::sinc_data(30, false, 0.05, &mut rng).unwrap();
    assert!(matches!(
        Fitc::params(0).fit(&train),
        Err(Error::InvalidParameter { name: "m", .. })
    ));
    assert!(matches!(
        Fitc::params(31).fit(&train),
        Err(Error::InvalidParameter { name: "m", .. })
    ));
    assert!(matches!(
        Fitc::params(5).jitter(-1.0).check(),
        Err(Error::InvalidParameter { name: "jitter", .. })
    ));
    assert!(matches!(
        Fitc::params(5).noise_floor(f64::NAN).check(),
        Err(Error::InvalidParameter {
            name: "noise_floor",
            ..
        })
    ));
    assert!(matches!(
        Fitc::params(5).pseudo_inputs(DMatrix::zeros(4, 1)).check(),
        Err(Error::InvalidParameter {
            name: "pseudo_inputs",
            ..
        })
    ));
    assert!(matches!(
        Fitc::params(5)
            .pseudo_inputs(DMatrix::zeros(5, 2))
            .fit(&train),
        Err(Error::DimensionMismatch { .. })
    ));
    assert!(matches!(
        Fitc::params(2)
            .pseudo_inputs(DMatrix::from_element(2, 1, f64::INFINITY))
            .check(),
        Err(Error::NonFinite { .. })
    ));
    assert!(matches!(
        Fitc::params(5)
            .initial_lengthscales(DVector::from_element(1, 0.0))
            .check(),
        Err(Error::InvalidParameter {
            name: "initial_lengthscales",
            ..
        })
    ));

    let constant = Dataset::new(
        DMatrix::from_fn(20, 2, |i, d| if d == 1 { 3.0 } else { i as f64 }),
        DVector::from_fn(20, |i, _| (i as f64).sin()),
    )
    .unwrap();
    let ignoring = Fitc::params(5).fit(&constant).unwrap();
    assert_eq!(ignoring.training().ignored_inputs, vec![1]);
    assert_eq!(ignoring.lengthscales()[1], f64::INFINITY);
    assert_eq!(ignoring.parameters().len(), 1 + 2 + 5);

    let model = Fitc::params(5).max_iterations(3).fit(&train).unwrap();
    assert!(matches!(
        model.predict(&DMatrix::zeros(4, 2)),
        Err(Error::DimensionMismatch {
            expected: 1,
            found: 2,
            ..
        })
    ));
    let mut xs = DMatrix::zeros(4, 1);
    xs[(2, 0)] = f64::NAN;
    assert!(matches!(
        model.predict(&xs),
        Err(Error::NonFinite { row: 2, .. })
    ));
    assert!(matches!(
        model.predict(&DMatrix::zeros(0, 1)),
        Err(Error::EmptyData { .. })
    ));
    assert!(matches!(
        Fitc::params(5)
            .check()
            .unwrap()
            .condition(&train, &DVector::zeros(4)),
        Err(Error::DimensionMismatch { .. })
    ));

    // Coincident pseudo-inputs without jitter: a typed Cholesky failure, not a panic.
    let params = Fitc::params(2).jitter(0.0).check().unwrap();
    let obj = params.evidence(&train).unwrap();
    let theta = DVector::from_vec(vec![0.0, 0.0, -1.0, 0.5, 0.5]);
    assert!(matches!(
        obj.value_and_gradient(&theta),
        Err(Error::NotPositiveDefinite { .. })
    ));
    assert!(matches!(
        obj.value_and_gradient(&DVector::zeros(3)),
        Err(Error::DimensionMismatch { .. })
    ));
}

/// The recipe the FITC and VFE `evidence`/`condition` docs give for a fitted model whose training
/// data had a constant column: its θ is for the used columns, and evaluated or conditioned on a
/// data set of those columns it gives the fitted model's −log p (−F for VFE) and predictions.
#[test]
fn a_fitted_theta_is_evaluated_on_its_used_columns() {
    let mut rng = StdRng::seed_from_u64(4);
    let x: DMatrix<f64> = DMatrix::from_fn(120, 3, |_, j| {
        if j == 1 {
            2.5
        } else {
            rng.random_range(-2.0..2.0)
        }
    });
    let y = DVector::from_fn(120, |i, _| x[(i, 0)].sin() + 0.3 * x[(i, 2)]);
    let data = Dataset::new(x.clone(), y.clone()).unwrap();
    let test = DMatrix::from_fn(7, 3, |i, j| if j == 1 { 2.5 } else { 0.3 * i as f64 - 1.0 });
    let fitc = Fitc::params(8).seed(1).max_evaluations(40);
    let vfe = Vfe::params(8).seed(1).max_evaluations(40);
    let fitted_fitc = fitc.clone().fit(&data).unwrap();
    let fitted_vfe = vfe.clone().fit(&data).unwrap();
    let used = fitted_fitc.input_columns().used().to_vec();
    assert_eq!(used, vec![0, 2]);
    assert_eq!(fitted_vfe.input_columns().used(), &used[..]);
    let on_used = Dataset::new(x.select_columns(&used), y).unwrap();
    let test_used = test.select_columns(&used);

    let valid = fitc.check().unwrap();
    let theta = fitted_fitc.parameters();
    assert_eq!(theta.len(), 2 + 2 + 8 * 2);
    assert_eq!(
        valid.evidence(&on_used).unwrap().value(theta).unwrap(),
        fitted_fitc.neg_log_evidence()
    );
    let conditioned = valid.condition(&on_used, theta).unwrap();
    assert_eq!(
        conditioned.neg_log_evidence(),
        fitted_fitc.neg_log_evidence()
    );
    assert_eq!(
        conditioned.predict(&test_used).unwrap().mean,
        fitted_fitc.predict(&test).unwrap().mean
    );
    assert!(matches!(
        valid.condition(&data, theta),
        Err(Error::DimensionMismatch { .. })
    ));

    let valid = vfe.check().unwrap();
    let theta = fitted_vfe.parameters();
    assert_eq!(
        valid.evidence(&on_used).unwrap().value(theta).unwrap(),
        fitted_vfe.neg_log_evidence()
    );
    let conditioned = valid.condition(&on_used, theta).unwrap();
    assert_eq!(
        conditioned.predict(&test_used).unwrap().mean,
        fitted_vfe.predict(&test).unwrap().mean
    );
}

/// FITC on fewer than 40 distinct inputs is flagged as the full GP and SSGP are
/// ([`Remedy::FewInputs`]): its LOO does not check the error bars between the inputs (generated
/// tables of 6–39 rows, 10 pseudo-inputs or n/2: 108 of 192 fits bad on test data, 94 of them
/// unflagged). Here 25 rows, D = 3: test mean z² near 15.
#[test]
fn a_fit_on_fewer_than_forty_inputs_is_flagged() {
    let problem = Problem {
        n: 25,
        dim: 3,
        relevant: 2,
        roughness: Roughness::Smooth,
        noise: 0.3,
        seed: 1,
    };
    let (train, test) = problem.generate(1000).unwrap();
    let fit = Fitc::params(10).seed(1).fit(&train).unwrap();
    assert_flagged_for_few_inputs(&fit, &test, 25);
}

/// More pseudo-inputs than training points (the m of a larger table, on a small one): the
/// error says what to do — at most n of them, or the exact GP, which costs no more there.
#[test]
fn more_pseudo_inputs_than_points_names_the_remedy() {
    let mut rng = StdRng::seed_from_u64(1);
    let train = ssgp::data::sinc_data(5, false, 0.05, &mut rng).unwrap();
    let fitc = Fitc::params(20).fit(&train).map(|_| ());
    let vfe = Vfe::params(20).fit(&train).map(|_| ());
    for result in [fitc, vfe] {
        let e = result.unwrap_err();
        let text = e.to_string();
        assert!(
            matches!(e, Error::InvalidParameter { name: "m", .. }),
            "{text}"
        );
        assert!(text.contains("m ≤ 5") && text.contains("FullGp"), "{text}");
    }
}

/// FITC's held-out check ([`ssgp::Remedy::HeldOutRefit`]): 50 pseudo-inputs learned on 100 rows
/// of 9 inputs (the calibration suite's n100-D9) fit the rows, and the LOO, which holds them
/// fixed, vouches for error bars that are too narrow (LOO mean z² 0.73, test 3.18;
/// unflagged with `held_out_check(false)`, as every such fit was before the check); refitted
/// on 3/4 of the rows four times (from the fit's lengthscales, the pseudo-inputs from the
/// start), each quarter scored once, it is flagged overconfident. The same bits either way.
#[test]
fn fitc_overconfident_on_small_data_is_flagged_by_its_refits() {
    let (train, test) = ssgp::data::calibration_suite()[8].generate(1000).unwrap();
    assert_eq!((train.len(), train.dim()), (100, 9));
    let checked = Fitc::params(50).seed(1).fit(&train).unwrap();
    let unchecked = Fitc::params(50)
        .seed(1)
        .held_out_check(false)
        .fit(&train)
        .unwrap();
    assert_overconfidence_found_by_refits(&checked, &unchecked, (&test, 100));
}

/// The refits of the held-out check report to the fit's observer as the check's
/// ([`ssgp::optim::Phase::CalibrationCheck`]), after the fit's own optimiser; with the check off
/// there are none.
#[test]
fn the_refits_report_as_the_check() {
    use ssgp::optim::Phase;
    use std::sync::{Arc, Mutex};
    let (train, _) = ssgp::data::calibration_suite()[8].generate(1).unwrap();
    for check in [true, false] {
        let phases = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&phases);
        Fitc::params(10)
            .seed(1)
            .max_evaluations(40)
            .held_out_check(check)
            .observer(Arc::new(move |p: &ssgp::Progress| {
                sink.lock().unwrap().push(p.phase);
                std::ops::ControlFlow::Continue(())
            }))
            .fit(&train)
            .unwrap();
        let phases = phases.lock().unwrap();
        let first_check = phases.iter().position(|&p| p == Phase::CalibrationCheck);
        let last_fit = phases.iter().rposition(|&p| p == Phase::Optimiser).unwrap();
        match first_check {
            Some(first) => assert!(check && first > last_fit, "{phases:?}"),
            None => assert!(!check, "{phases:?}"),
        }
    }
}
