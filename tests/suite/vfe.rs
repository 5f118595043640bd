//! VFE (Titsias' collapsed bound): the fast bound against its dense n×n formula, gradients by
//! central differences for every kernel, F ≤ log p(y|θ) with equality at X̄ = X (jitter 0: to
//! 1e-8 relative, 1e-6 for Matérn ½, whose k is not smooth at r = 0), predictions and
//! the joint covariance against the dense formulas of the optimal q(u), the trace diagnostic,
//! persistence bit for bit, the sinc toy end to end and errors on bad input.

use crate::common::{
    assert_flagged_for_few_inputs, check_gradient, check_gradient_entries, dense_neg_log_evidence,
    inducing_problem,
};
use nalgebra::{DMatrix, DVector};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use ssgp::data::{Problem, Roughness};
use ssgp::kernel::Kernel;
use ssgp::linalg::Jitter;
use ssgp::optim::Objective;
use ssgp::vfe::InducingStart;
use ssgp::{Dataset, Error, FittedRegressor, ParamGuard, Vfe};

/// k(a_i, b_j) = σ0² shape(r²) with r² = Σ_d (a_id − b_jd)²/ℓ_d², by its definition.
fn gram(a: &DMatrix<f64>, b: &DMatrix<f64>, kernel: Kernel, ell: &[f64], sf2: f64) -> DMatrix<f64> {
    DMatrix::from_fn(a.nrows(), b.nrows(), |i, j| {
        let r2: f64 = (0..a.ncols())
            .map(|d| ((a[(i, d)] - b[(j, d)]) / ell[d]).powi(2))
            .sum();
        sf2 * kernel.shape(r2)
    })
}

/// θ = [log ℓ, log σ0, p, vec(X̄ − 1cᵀ)] decoded, the inducing inputs back in the inputs'
/// coordinates (c the column means of `x`).
struct Decoded {
    ell: Vec<f64>,
    sf2: f64,
    sn2: f64,
    z: DMatrix<f64>,
}

fn decode(theta: &DVector<f64>, x: &DMatrix<f64>, m: usize, floor: f64) -> Decoded {
    let dim = x.ncols();
    let mut z = DMatrix::from_column_slice(m, dim, &theta.as_slice()[dim + 2..]);
    for d in 0..dim {
        let mean = x.column(d).mean();
        z.column_mut(d).add_scalar_mut(mean);
    }
    Decoded {
        ell: (0..dim).map(|d| theta[d].exp()).collect(),
        sf2: (2.0 * theta[dim]).exp(),
        sn2: floor + (2.0 * theta[dim + 1]).exp(),
        z,
    }
}

/// The dense pieces at θ: K_ff, K_fu, K_uu + δI (δ absolute) and Q_ff.
struct Dense {
    p: Decoded,
    k_ff: DMatrix<f64>,
    k_fu: DMatrix<f64>,
    k_uu: DMatrix<f64>,
    q_ff: DMatrix<f64>,
}

fn dense(x: &DMatrix<f64>, theta: &DVector<f64>, m: usize, kernel: Kernel, jitter: f64) -> Dense {
    let p = decode(theta, x, m, 0.0);
    let k_ff = gram(x, x, kernel, &p.ell, p.sf2);
    let k_fu = gram(x, &p.z, kernel, &p.ell, p.sf2);
    let k_uu = gram(&p.z, &p.z, kernel, &p.ell, p.sf2) + DMatrix::identity(m, m) * jitter;
    let q_ff = &k_fu * k_uu.clone().cholesky().unwrap().solve(&k_fu.transpose());
    Dense {
        p,
        k_ff,
        k_fu,
        k_uu,
        q_ff,
    }
}

/// −F = −log N(y | 0, Q_ff + σn²I) + tr(K_ff − Q_ff)/(2σn²) with n×n matrices.
fn dense_neg_bound(dn: &Dense, y: &DVector<f64>) -> f64 {
    let n = y.len();
    let c = &dn.q_ff + DMatrix::identity(n, n) * dn.p.sn2;
    dense_neg_log_evidence(c, y) + (&dn.k_ff - &dn.q_ff).trace() / (2.0 * dn.p.sn2)
}

#[test]
fn fast_bound_matches_the_dense_formula_for_every_kernel() {
    let mut rng = StdRng::seed_from_u64(31);
    let mut worst = 0.0f64;
    for kernel in Kernel::ALL {
        for &(n, m, dim, jitter) in &[(30, 5, 1, 1e-6), (50, 8, 3, 1e-6), (35, 10, 2, 1e-3)] {
            let (x, y, theta) = inducing_problem(n, m, dim, &mut rng);
            let data = Dataset::new(x.clone(), y.clone()).unwrap();
            let params = Vfe::params(m)
                .relative_noise_floor(0.0)
                .kernel(kernel)
                .jitter(jitter)
                .check()
                .unwrap();
            let obj = params.evidence(&data).unwrap();
            let (fast, trace) = obj.value_and_trace(&theta).unwrap();
            assert_eq!(fast, obj.value_and_gradient(&theta).unwrap().0);
            let dn = dense(&x, &theta, m, kernel, jitter);
            let expected = dense_neg_bound(&dn, &y);
            let rel = (fast - expected).abs() / expected.abs();
            worst = worst.max(rel);
            assert!(
                rel <= 1e-10,
                "{kernel:?} ({n},{m},{dim}): relative error {rel:e}"
            );
            let dense_trace = (&dn.k_ff - &dn.q_ff).trace();
            assert!(
                (trace - dense_trace).abs() <= 1e-10 * n as f64 * dn.p.sf2,
                "{kernel:?}: trace {trace} vs {dense_trace}"
            );
            assert!(trace >= 0.0);
        }
    }
    println!("fast vs dense VFE bound: largest relative error {worst:.1e}");
}

#[test]
fn gradient_matches_central_differences_for_every_kernel() {
    let mut rng = StdRng::seed_from_u64(32);
    let mut worst = 0.0f64;
    for kernel in Kernel::ALL {
        for (trial, &(n, m, dim)) in [(30, 5, 1), (40, 7, 3), (25, 4, 2)].iter().enumerate() {
            let (x, y, theta) = inducing_problem(n, m, dim, &mut rng);
            let data = Dataset::new(x, y).unwrap();
            let floor = if trial == 2 { 0.05 } else { 0.0 };
            // The default relative jitter moves with σ0; an absolute one does not.
            let params = Vfe::params(m).kernel(kernel).noise_floor(floor).threads(1);
            let params = if trial == 1 {
                params.jitter(1e-4)
            } else {
                params
            };
            let free = params.clone().check().unwrap().evidence(&data).unwrap();
            worst = worst.max(check_gradient(
                &free,
                &theta,
                &format!("{kernel:?} free ({n},{m},{dim})"),
            ));
            let z = DMatrix::from_fn(m, dim, |j, d| {
                theta[dim + 2 + j + d * m] + data.x().column(d).mean()
            });
            let fixed = params
                .inducing_inputs(z)
                .fixed_inducing_inputs(true)
                .check()
                .unwrap()
                .evidence(&data)
                .unwrap();
            assert_eq!(fixed.num_params(), dim + 2);
            let head = theta.rows(0, dim + 2).into_owned();
            worst = worst.max(check_gradient(
                &fixed,
                &head,
                &format!("{kernel:?} fixed ({n},{m},{dim})"),
            ));
        }
    }
    println!("VFE gradient: worst |Δ|/tolerance {worst:.2}");
}

/// VFE's gradient under `jitter_policy(Jitter::ladder())` against central differences, free and
/// with fixed inducing inputs, for the squared exponential and Matérn 3/2. The ladder adds jitter
/// only when K_uu fails to factor (1e-10·σ0², then ×10 up to 1e-6·σ0²); at these random θ K_uu
/// factors at the first rung, with no jitter (checked: the conditioned model's jitter is 0, and
/// value and gradient are `jitter(0.0)`'s bit for bit), so this checks the ladder's first rung;
/// the retried rungs are not reached here.
#[test]
fn gradient_under_the_jitter_ladder_matches_central_differences() {
    let mut rng = StdRng::seed_from_u64(39);
    let mut worst = 0.0f64;
    for kernel in [Kernel::SquaredExponential, Kernel::Matern32] {
        for &(n, m, dim) in &[(30, 5, 1), (40, 7, 3), (25, 4, 2)] {
            let (x, y, theta) = inducing_problem(n, m, dim, &mut rng);
            let data = Dataset::new(x, y).unwrap();
            let params = Vfe::params(m)
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
            // check_gradient's 1e-5 relative, every VFE check's: h = 1e-5 errs by ~1e-8 absolute.
            worst = worst.max(check_gradient(&free, &theta, &format!("free, {label}")));
            let z = DMatrix::from_fn(m, dim, |j, d| {
                theta[dim + 2 + j + d * m] + data.x().column(d).mean()
            });
            let fixed = params
                .inducing_inputs(z)
                .fixed_inducing_inputs(true)
                .check()
                .unwrap()
                .evidence(&data)
                .unwrap();
            let head = theta.rows(0, dim + 2).into_owned();
            worst = worst.max(check_gradient(&fixed, &head, &format!("fixed, {label}")));
        }
    }
    println!("VFE gradient under the ladder: worst |Δ|/tolerance {worst:.1e}");
}

/// VFE's gradient under Matérn 3/2 and 5/2 (the lengthscales and inducing inputs through the
/// kernels' slopes) on more points than one row block: n = 5 000 with m = 90 is two blocks of
/// ten 250-point chunks each (`inducing::blocks` gives a block per 2·10⁷ points × m², chunks of
/// at most 256 points), so the blocks' partial sums and the chunks' offsets all enter; against
/// central differences in every hyperparameter and in eight inducing coordinates drawn at random
/// (all 184 would take 368 evaluations of 5 000 points).
#[test]
fn matern_gradient_over_several_row_blocks_matches_central_differences() {
    let (n, m, dim) = (5000, 90, 2);
    // Two blocks: ⌊n/2⌋·m² reaches the block's least work, ⌊n/3⌋·m² does not.
    assert!((n / 2) * m * m >= 20_000_000 && (n / 3) * m * m < 20_000_000);
    let mut rng = StdRng::seed_from_u64(40);
    let (x, y, theta) = inducing_problem(n, m, dim, &mut rng);
    let data = Dataset::new(x, y).unwrap();
    let mut entries: Vec<usize> = (0..dim + 2).collect();
    entries.extend((0..8).map(|_| rng.random_range(dim + 2..theta.len())));
    let mut worst = 0.0f64;
    for kernel in [Kernel::Matern32, Kernel::Matern52] {
        let objective = Vfe::params(m)
            .kernel(kernel)
            .threads(1)
            .check()
            .unwrap()
            .evidence(&data)
            .unwrap();
        // check_gradient's 1e-5 relative: −F ~ 10³ leaves round-off ε|F|/h ~ 1e-8 at h = 1e-5.
        let label = format!("{kernel:?} ({n},{m},{dim})");
        worst = worst.max(check_gradient_entries(&objective, &theta, &entries, &label));
    }
    println!("VFE gradient over two row blocks: worst |Δ|/tolerance {worst:.1e} at {entries:?}");
}

#[test]
fn the_bound_is_below_the_exact_evidence_and_meets_it_at_the_training_inputs() {
    let mut rng = StdRng::seed_from_u64(33);
    for kernel in Kernel::ALL {
        let (n, m, dim) = (40, 6, 2);
        let (x, y, theta) = inducing_problem(n, m, dim, &mut rng);
        let data = Dataset::new(x.clone(), y.clone()).unwrap();
        let p = decode(&theta, &x, m, 0.0);
        let k = gram(&x, &x, kernel, &p.ell, p.sf2) + DMatrix::identity(n, n) * p.sn2;
        let exact = dense_neg_log_evidence(k, &y);
        // Random inducing inputs, default (relative) jitter: −F ≥ −log p.
        let obj = Vfe::params(m)
            .relative_noise_floor(0.0)
            .kernel(kernel)
            .check()
            .unwrap()
            .evidence(&data)
            .unwrap();
        let neg_bound = obj.value(&theta).unwrap();
        assert!(
            neg_bound >= exact,
            "{kernel:?}: −F {neg_bound} < −log p {exact}"
        );

        // X̄ = X with no jitter (K_uu = K_ff, Q_ff = K_ff): F = log p(y|θ) to 1e-8 relative.
        let mut at_x = DVector::zeros(dim + 2 + n * dim);
        at_x.rows_mut(0, dim + 2).copy_from(&theta.rows(0, dim + 2));
        for d in 0..dim {
            let mean = x.column(d).mean();
            for i in 0..n {
                at_x[dim + 2 + i + d * n] = x[(i, d)] - mean;
            }
        }
        let obj = Vfe::params(n)
            .relative_noise_floor(0.0)
            .kernel(kernel)
            .jitter(0.0)
            .check()
            .unwrap()
            .evidence(&data)
            .unwrap();
        let (at_data, trace) = obj.value_and_trace(&at_x).unwrap();
        let rel = (at_data - exact).abs() / exact.abs();
        // Matérn ½ is not smooth at r = 0: the round-off ε in a coincident pair's squared
        // distance (‖a‖² + ‖b‖² − 2aᵀb) becomes √ε in k(r) = σ0² e^{−r}, in K_uf but not on
        // K_uu's exact diagonal, so Q_ff misses K_ff by ~1e-8·σ0² per point there.
        let tolerance = if kernel == Kernel::Matern12 {
            1e-6
        } else {
            1e-8
        };
        assert!(
            rel <= tolerance,
            "{kernel:?}: −F {at_data} vs −log p {exact} at X̄ = X (relative {rel:e}, trace {trace:e})"
        );
        assert!(
            trace.abs() <= tolerance * n as f64 * p.sf2,
            "{kernel:?}: trace {trace:e}"
        );
    }
}

#[test]
fn predictions_and_joint_covariance_match_the_dense_optimal_posterior() {
    let mut rng = StdRng::seed_from_u64(34);
    for kernel in Kernel::ALL {
        let (n, m, dim) = (45, 7, 2);
        let (x, y, theta) = inducing_problem(n, m, dim, &mut rng);
        let y_shift = 0.7;
        let data = Dataset::new(x.clone(), y.add_scalar(y_shift)).unwrap();
        let jitter = 1e-6;
        let fitted = Vfe::params(m)
            .relative_noise_floor(0.0)
            .kernel(kernel)
            .jitter(jitter)
            .check()
            .unwrap()
            .condition(&data, &theta)
            .unwrap();
        let xs = DMatrix::from_fn(9, dim, |_, _| rng.random_range(-3.0..3.0));
        let dn = dense(&x, &theta, m, kernel, jitter);
        let p = &dn.p;
        // Σ = (K_uu + K_uf K_fu/σn²)⁻¹; μ* = ȳ + K*u Σ K_uf y/σn²;
        // Σ_f = K** − Q** + K*u Σ K_u*.
        let sigma_inv = &dn.k_uu + dn.k_fu.transpose() * &dn.k_fu / p.sn2;
        let chol = sigma_inv.cholesky().unwrap();
        let k_su = gram(&xs, &p.z, kernel, &p.ell, p.sf2);
        let k_ss = gram(&xs, &xs, kernel, &p.ell, p.sf2);
        let mean = (&k_su * chol.solve(&(dn.k_fu.transpose() * &y))) / p.sn2;
        let k_uu_chol = dn.k_uu.clone().cholesky().unwrap();
        let q_ss = &k_su * k_uu_chol.solve(&k_su.transpose());
        let cov = &k_ss - q_ss + &k_su * chol.solve(&k_su.transpose());

        let pred = fitted.predict(&xs).unwrap();
        let joint = fitted.predict_covariance(&xs).unwrap();
        for i in 0..xs.nrows() {
            assert!(
                (pred.mean[i] - y_shift - mean[i]).abs() <= 1e-9 * (1.0 + mean[i].abs()),
                "{kernel:?}: mean {i}"
            );
            assert!(
                (pred.f_variance[i] - cov[(i, i)]).abs() <= 1e-9 * p.sf2,
                "{kernel:?}: f variance {i}: {} vs {}",
                pred.f_variance[i],
                cov[(i, i)]
            );
            assert!((pred.y_variance[i] - cov[(i, i)] - p.sn2).abs() <= 1e-9 * p.sf2);
            for j in 0..xs.nrows() {
                assert!(
                    (joint.f_covariance[(i, j)] - cov[(i, j)]).abs() <= 1e-9 * p.sf2,
                    "{kernel:?}: covariance ({i},{j})"
                );
            }
        }
        let samples = fitted.sample_joint(&xs, 3, 5).unwrap();
        assert_eq!(samples.values.shape(), (9, 3));
        assert!(fitted.trace() >= 0.0);
        assert!((fitted.trace() - (&dn.k_ff - &dn.q_ff).trace()).abs() <= 1e-10 * n as f64 * p.sf2);
        assert_eq!(fitted.bound(), -fitted.neg_log_evidence());
    }
}

/// VFE's LOO diagnostic (the Woodbury form of Q + σn²I plus the variance σ0² − Q_ii the
/// predictive adds, O(nm²)) is leave-one-out of its own predictive by definition: for each i,
/// q(u) from the other n − 1 points at the fitted θ (Σ₋ᵢ = (K_uu + K_u,₋ᵢK_₋ᵢ,u/σn²)⁻¹) and its
/// predictive of yᵢ, with the training mean as the offset.
#[test]
fn loo_diagnostic_is_leave_one_out_of_its_predictive_by_definition() {
    let mut rng = StdRng::seed_from_u64(36);
    for kernel in [Kernel::SquaredExponential, Kernel::Matern32] {
        let (n, m, dim) = (40, 6, 2);
        let (x, y, _) = inducing_problem(n, m, dim, &mut rng);
        let data = Dataset::new(x.clone(), y.clone()).unwrap();
        let jitter = 1e-6;
        let fitted = Vfe::params(m)
            .seed(2)
            .kernel(kernel)
            .jitter(jitter)
            .relative_noise_floor(0.0)
            .max_evaluations(60)
            .fit(&data)
            .unwrap();
        let dn = dense(&x, fitted.parameters(), m, kernel, jitter);
        let p = &dn.p;
        let yc = y.add_scalar(-data.y_mean());
        let (mut z2, mut nlp, mut sse) = (0.0, 0.0, 0.0);
        for i in 0..n {
            let rest: Vec<usize> = (0..n).filter(|&j| j != i).collect();
            let k_ru = dn.k_fu.select_rows(&rest);
            let y_rest = DVector::from_iterator(n - 1, rest.iter().map(|&j| yc[j]));
            let chol = (&dn.k_uu + k_ru.transpose() * &k_ru / p.sn2)
                .cholesky()
                .unwrap();
            let k_iu = dn.k_fu.row(i).transpose();
            let mean = k_iu.dot(&chol.solve(&(k_ru.transpose() * &y_rest))) / p.sn2;
            let var = dn.k_ff[(i, i)] - dn.q_ff[(i, i)] + k_iu.dot(&chol.solve(&k_iu)) + p.sn2;
            let e = yc[i] - mean;
            z2 += e * e / var;
            nlp += 0.5 * (2.0 * std::f64::consts::PI * var).ln() + 0.5 * e * e / var;
            sse += e * e;
        }
        let (z2, mnlp, nmse) = (z2 / n as f64, nlp / n as f64, sse / yc.norm_squared());
        let found = fitted.training().diagnostic.unwrap();
        println!("{kernel:?}: {found} (by definition z² {z2:.6}, MNLP {mnlp:.6}, NMSE {nmse:.6})");
        assert!((found.mean_z2 - z2).abs() <= 1e-8 * z2, "{kernel:?}");
        assert!((found.mnlp - mnlp).abs() <= 1e-8 * mnlp.abs(), "{kernel:?}");
        assert!((found.nmse - nmse).abs() <= 1e-8 * nmse, "{kernel:?}");
    }
}

#[test]
fn sinc_end_to_end_and_summary_reports_the_bound() {
    let mut rng = StdRng::seed_from_u64(35);
    let train = ssgp::data::sinc_data(120, false, 0.05, &mut rng).unwrap();
    let test = ssgp::data::sinc_data(300, true, 0.05, &mut rng).unwrap();
    let fitted = Vfe::params(12).seed(1).fit(&train).unwrap();
    let pred = fitted.predict(test.x()).unwrap();
    let nmse = ssgp::metrics::nmse(test.y(), &pred, train.y_mean()).unwrap();
    assert!(nmse < 0.05, "NMSE {nmse}");
    let t = fitted.training();
    assert_eq!(t.neg_log_evidence, fitted.neg_log_evidence());
    assert!(t.neg_log_evidence <= t.initial_neg_log_evidence);
    assert!(fitted.trace() >= 0.0 && fitted.trace_term() >= 0.0);
    assert_eq!(fitted.num_inducing_inputs(), 12);
    assert_eq!(fitted.inducing_inputs().shape(), (12, 1));
    assert_eq!(FittedRegressor::name(&fitted), "vfe");
    // Fixed inducing inputs stay where they were put.
    let z = DMatrix::from_fn(6, 1, |j, _| -1.0 + j as f64);
    let fixed = Vfe::params(6)
        .inducing_inputs(z.clone())
        .fixed_inducing_inputs(true)
        .max_evaluations(50)
        .fit(&train)
        .unwrap();
    assert!((fixed.inducing_inputs() - z).amax() < 1e-14);
    // A k-means start moves the seeded subset; zero rounds keep it; the default is 20 rounds.
    let subset = Vfe::params(6)
        .seed(3)
        .inducing_start(InducingStart::Subset)
        .max_iterations(0)
        .fit(&train)
        .unwrap();
    let default = Vfe::params(6)
        .seed(3)
        .max_iterations(0)
        .fit(&train)
        .unwrap();
    let none = Vfe::params(6)
        .seed(3)
        .inducing_start(InducingStart::KMeans(0))
        .max_iterations(0)
        .fit(&train)
        .unwrap();
    let kmeans = Vfe::params(6)
        .seed(3)
        .inducing_start(InducingStart::KMeans(20))
        .max_iterations(0)
        .fit(&train)
        .unwrap();
    assert_eq!(subset.parameters(), none.parameters());
    assert_ne!(subset.parameters(), kmeans.parameters());
    assert_eq!(default.parameters(), kmeans.parameters());
    assert!(kmeans.bound().is_finite());
}

/// The greedy start (Burt, Rasmussen & van der Wilk 2020): distinct training inputs, no seed
/// entering when the lengthscales are given, the first the lowest-index input (every prior
/// variance is σ0²) and the second the input farthest from it in the kernel's metric (the
/// largest residual σ0² − k(x, x₁)²/σ0²); the same inputs when they are held fixed; m > n
/// refused.
#[test]
fn greedy_start_picks_distinct_training_inputs_without_the_seed() {
    let mut rng = StdRng::seed_from_u64(41);
    let n = 200;
    let x = DMatrix::from_fn(n, 2, |_, _| rng.random_range(-3.0..3.0_f64));
    let y = DVector::from_fn(n, |i, _| (x[(i, 0)] * x[(i, 1)]).sin());
    let train = Dataset::new(x.clone(), y).unwrap();
    let ell = [4.0, 3.0];
    let params = |m: usize, seed: u64| {
        Vfe::params(m)
            .seed(seed)
            .initial_lengthscales(DVector::from_row_slice(&ell))
            .inducing_start(InducingStart::Greedy)
    };
    let start = |seed| {
        params(15, seed)
            .max_iterations(0)
            .fit(&train)
            .unwrap()
            .inducing_inputs()
    };
    let z = start(3);
    assert_eq!(z, start(4), "no seed enters");
    let rows: Vec<usize> = (0..z.nrows())
        .map(|j| {
            (0..n)
                .find(|&i| (x.row(i) - z.row(j)).amax() < 1e-12)
                .expect("every inducing input is a training input")
        })
        .collect();
    let mut distinct = rows.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), rows.len(), "distinct inputs: {rows:?}");
    assert_eq!(rows[0], 0);
    let r2 = |i: usize| -> f64 {
        (0..2)
            .map(|d| ((x[(i, d)] - x[(0, d)]) / ell[d]).powi(2))
            .sum()
    };
    let farthest = (1..n).fold(1, |b, i| if r2(i) > r2(b) { i } else { b });
    assert_eq!(rows[1], farthest);
    let subset = Vfe::params(15)
        .seed(3)
        .inducing_start(InducingStart::Subset)
        .max_iterations(0)
        .fit(&train)
        .unwrap();
    assert_ne!(subset.inducing_inputs(), z);
    let fixed = params(15, 3)
        .fixed_inducing_inputs(true)
        .max_evaluations(20)
        .fit(&train)
        .unwrap();
    assert!((fixed.inducing_inputs() - &z).amax() < 1e-12);
    assert!(matches!(
        params(n + 1, 3).fit(&train),
        Err(Error::InvalidParameter { name: "m", .. })
    ));
}

/// With fewer distinct training inputs than m, the greedy start takes every distinct one and
/// draws the rest in their bounding box (as the subset start): it repeated chosen inputs, so
/// that a fit without jitter failed to factor K_uu where the subset start's fitted.
#[test]
fn greedy_start_on_fewer_distinct_inputs_than_m_repeats_none() {
    let n = 50;
    let x = DMatrix::from_fn(n, 1, |i, _| (i % 10) as f64);
    let y = DVector::from_fn(n, |i, _| (x[(i, 0)] * 0.7).sin() + 0.01 * (i as f64).cos());
    let train = Dataset::new(x, y).unwrap();
    let params = |start| {
        Vfe::params(15)
            .seed(5)
            .inducing_start(start)
            .jitter(0.0)
            .max_iterations(0)
    };
    let z = params(InducingStart::Greedy)
        .fit(&train)
        .unwrap()
        .inducing_inputs();
    let mut values: Vec<f64> = z.iter().copied().collect();
    values.sort_by(f64::total_cmp);
    values.dedup();
    assert_eq!(values.len(), 15, "{z}");
    assert!(values.iter().all(|v| (0.0..=9.0).contains(v)), "{z}");
    for k in 0..10 {
        assert!(values.contains(&f64::from(k)), "input {k} not chosen: {z}");
    }
    assert!(params(InducingStart::Subset).fit(&train).is_ok());
}

#[cfg(feature = "serde")]
#[test]
fn persistence_round_trips_bit_for_bit() {
    use ssgp::persist::{self, SavedModel};
    use ssgp::FittedVfe;
    let mut rng = StdRng::seed_from_u64(36);
    let train = ssgp::data::sinc_data(60, false, 0.05, &mut rng).unwrap();
    let xs = DMatrix::from_fn(11, 1, |i, _| -3.0 + 0.9 * i as f64);
    for kernel in [Kernel::SquaredExponential, Kernel::Matern32] {
        let fitted = Vfe::params(6)
            .kernel(kernel)
            .seed(2)
            .max_evaluations(60)
            .fit(&train)
            .unwrap();
        let json = persist::to_json(&fitted).unwrap();
        let loaded: FittedVfe = persist::from_json(&json).unwrap();
        let any: SavedModel = persist::from_json(&json).unwrap();
        assert_eq!(any.kind(), "vfe");
        let (a, b) = (fitted.predict(&xs).unwrap(), loaded.predict(&xs).unwrap());
        for (u, v) in [
            (&a.mean, &b.mean),
            (&a.y_variance, &b.y_variance),
            (&a.f_variance, &b.f_variance),
        ] {
            assert!(u
                .iter()
                .zip(v.iter())
                .all(|(p, q)| p.to_bits() == q.to_bits()));
        }
        let (ja, jb) = (
            fitted.predict_covariance(&xs).unwrap(),
            loaded.predict_covariance(&xs).unwrap(),
        );
        assert!(ja
            .f_covariance
            .iter()
            .zip(jb.f_covariance.iter())
            .all(|(p, q)| p.to_bits() == q.to_bits()));
        assert_eq!(loaded.trace().to_bits(), fitted.trace().to_bits());
        assert_eq!(loaded.bound().to_bits(), fitted.bound().to_bits());
        assert_eq!(loaded.training(), fitted.training());
        assert_eq!(loaded.parameters(), fitted.parameters());
        assert_eq!(persist::to_json(&loaded).unwrap(), json);
        assert_eq!(
            persist::from_json::<ssgp::FittedFitc>(&json)
                .err()
                .map(|e| e.to_string()),
            Some(
                Error::WrongModelKind {
                    expected: "fitc",
                    found: "vfe"
                }
                .to_string()
            )
        );
    }
}

#[test]
fn bad_inputs_are_typed_errors() {
    let mut rng = StdRng::seed_from_u64(37);
    let train = ssgp::data::sinc_data(30, false, 0.05, &mut rng).unwrap();
    assert!(matches!(
        Vfe::params(0).fit(&train),
        Err(Error::InvalidParameter { name: "m", .. })
    ));
    assert!(matches!(
        Vfe::params(3).jitter(-1.0).fit(&train),
        Err(Error::InvalidParameter { name: "jitter", .. })
    ));
    assert!(matches!(
        Vfe::params(3)
            .inducing_inputs(DMatrix::zeros(2, 1))
            .fit(&train),
        Err(Error::InvalidParameter {
            name: "inducing_inputs",
            ..
        })
    ));
    assert!(matches!(
        Vfe::params(3)
            .inducing_inputs(DMatrix::from_element(3, 1, f64::NAN))
            .fit(&train),
        Err(Error::NonFinite { .. })
    ));
    assert!(matches!(
        Vfe::params(3)
            .inducing_inputs(DMatrix::zeros(3, 2))
            .fit(&train),
        Err(Error::DimensionMismatch { .. })
    ));
    assert!(Vfe::params(31).fit(&train).is_err());
    let fitted = Vfe::params(3).max_evaluations(20).fit(&train).unwrap();
    assert!(matches!(
        fitted.predict(&DMatrix::zeros(2, 3)),
        Err(Error::DimensionMismatch { .. })
    ));
    let params = Vfe::params(3).check().unwrap();
    assert!(matches!(
        params.condition(&train, &DVector::zeros(4)),
        Err(Error::DimensionMismatch { .. })
    ));
}

/// A bound that is not finite is an error, never an `Ok` model or value: with no noise floor,
/// σn² = e^(2p) near the smallest f64 and σ0² small enough that the Woodbury matrix still
/// factors, the data term yᵀy/σn² overflows (the model reported −F = ∞ and failed to load once
/// saved). Over p from −349 to −356 each θ gives a finite value or an error, for VFE and FITC.
#[test]
fn a_bound_that_is_not_finite_is_an_error() {
    let mut rng = StdRng::seed_from_u64(38);
    let train = ssgp::data::sinc_data(30, false, 0.05, &mut rng).unwrap();
    let vfe = Vfe::params(3).relative_noise_floor(0.0).check().unwrap();
    let fitc = ssgp::Fitc::params(3)
        .relative_noise_floor(0.0)
        .check()
        .unwrap();
    let mut not_finite = 0;
    for step in 0..=70 {
        let p = -349.0 - 0.1 * f64::from(step);
        let theta = DVector::from_vec(vec![0.0, -348.0, p, -1.0, 0.1, 1.2]);
        let results = [
            vfe.condition(&train, &theta).map(|f| f.neg_log_evidence()),
            vfe.evidence(&train).unwrap().value(&theta),
            fitc.condition(&train, &theta).map(|f| f.neg_log_evidence()),
            fitc.evidence(&train).unwrap().value(&theta),
        ];
        for result in results {
            assert!(
                result.as_ref().map_or(true, |v| v.is_finite()),
                "p = {p}: {result:?}"
            );
            not_finite += usize::from(matches!(result, Err(Error::NonFiniteObjective { .. })));
        }
    }
    assert!(not_finite > 0);
}

/// VFE trains with its own optimiser (`vfe::DEFAULT_OPTIMIZER`, L-BFGS) unless told otherwise:
/// an `OptimConfig` whose `method` is left at its default `None` keeps it (the same fit, bit
/// for bit, as the builder's budget setter), and `optimizer(ConjugateGradient)` or a config
/// naming it gives another fit.
#[test]
fn an_optim_config_without_a_method_keeps_vfe_on_its_own_optimiser() {
    use ssgp::optim::{Method, OptimConfig};
    let mut rng = StdRng::seed_from_u64(36);
    let train = ssgp::data::sinc_data(80, false, 0.05, &mut rng).unwrap();
    let bound = |p: ssgp::vfe::VfeParams| p.fit(&train).unwrap().neg_log_evidence();
    let budget = Vfe::params(8).seed(1).max_evaluations(60);
    let own = bound(budget.clone());
    let config = OptimConfig {
        max_evaluations: 60,
        ..OptimConfig::default()
    };
    assert_eq!(bound(Vfe::params(8).seed(1).optim(config.clone())), own);
    assert_eq!(
        bound(budget.clone().optimizer(ssgp::vfe::DEFAULT_OPTIMIZER)),
        own
    );
    let cg = bound(budget.optimizer(Method::ConjugateGradient));
    assert_ne!(cg, own);
    let named = OptimConfig {
        method: Some(Method::ConjugateGradient),
        ..config
    };
    assert_eq!(bound(Vfe::params(8).seed(1).optim(named)), cg);
}

/// VFE's leave-one-out is honest (its inducing inputs are variational parameters, not fitted to
/// single points), so a LOO mean z² far below 1 flags its error bars as too wide — as they are
/// on test data (Kin-40k, 100 inducing inputs: LOO 0.46, test 0.52, coverage 0.984) — and not
/// as a fit to its training points, which FITC's and SSGP's low LOO z² can be.
#[test]
fn a_low_loo_z2_flags_vfe_error_bars_too_wide() {
    let mut rng = StdRng::seed_from_u64(37);
    let train = ssgp::data::sinc_data(80, false, 0.05, &mut rng).unwrap();
    let vfe = Vfe::params(8).seed(1).fit(&train).unwrap();
    let d = vfe.training().diagnostic.unwrap();
    assert!(d.honest, "{d}");
    let fitc = ssgp::Fitc::params(8).seed(1).fit(&train).unwrap();
    assert!(!fitc.training().diagnostic.unwrap().honest);
    let wide = ssgp::LooDiagnostic { mean_z2: 0.3, ..d };
    let flags = wide.flags();
    assert!(flags.underconfident && !flags.fits_too_well, "{wide}");
}

/// VFE on fewer than 40 distinct inputs is flagged as the full GP and SSGP are
/// ([`Remedy::FewInputs`]): its LOO does not check the error bars between the inputs (generated
/// tables of 6–39 rows, 10 inducing inputs or n/2: 26 of 192 fits bad on test data, 25 of them
/// unflagged). Here 20 rows of
/// one rough input: test mean z² 2.7.
#[test]
fn a_fit_on_fewer_than_forty_inputs_is_flagged() {
    let problem = Problem {
        n: 20,
        dim: 1,
        relevant: 1,
        roughness: Roughness::Rough,
        noise: 0.01,
        seed: 1,
    };
    let (train, test) = problem.generate(1000).unwrap();
    let fit = Vfe::params(10).seed(1).fit(&train).unwrap();
    assert_flagged_for_few_inputs(&fit, &test, 20);
}
