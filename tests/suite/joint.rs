//! Joint predictions of every model: `predict_covariance` against the dense formulas and against
//! `predict`'s marginals, `predict_mean` against `predict`, and joint samples against the
//! covariance they are drawn from.

use crate::common::{se_ard_by_definition, ssgp_covariance};
use nalgebra::{DMatrix, DVector};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::StandardNormal;
use ssgp::data::sinc_data;
use ssgp::ensemble::{Combine, Ensemble};
use ssgp::predictive::{JointPredictive, MAX_JOINT_POINTS};
use ssgp::ssgp::{Ssgp, SsgpHyperparameters};
use ssgp::standardize::Standardized;
use ssgp::{Dataset, Error, Fitc, FittedRegressor, FullGp, Hyperparameters, ParamGuard, Regressor};

fn random_data(n: usize, d: usize, rng: &mut StdRng) -> Dataset {
    let x = DMatrix::from_fn(n, d, |_, _| rng.random_range(-2.0..2.0));
    let y = DVector::from_fn(n, |i, _| {
        f64::sin(x.row(i).sum()) + 0.1 * rng.sample::<f64, _>(StandardNormal) + 1.5
    });
    Dataset::new(x, y).unwrap()
}

/// The largest |a − b| over the entries, relative to `scale`.
fn max_error(a: &DMatrix<f64>, b: &DMatrix<f64>, scale: f64) -> f64 {
    assert_eq!(a.shape(), b.shape());
    a.iter()
        .zip(b.iter())
        .map(|(x, y)| (x - y).abs() / scale)
        .fold(0.0, f64::max)
}

/// The GP posterior covariance K** − K*f(K_ff + σn²I)⁻¹K_f* of any prior covariance `k(a, b)`, by
/// nalgebra's dense Cholesky.
fn dense_posterior(
    k: impl Fn(&DMatrix<f64>, &DMatrix<f64>) -> DMatrix<f64>,
    x: &DMatrix<f64>,
    xs: &DMatrix<f64>,
    noise: f64,
) -> DMatrix<f64> {
    let n = x.nrows();
    let c = k(x, x) + DMatrix::identity(n, n) * noise;
    let ksf = k(xs, x);
    k(xs, xs) - &ksf * c.cholesky().unwrap().solve(&ksf.transpose())
}

#[test]
fn full_gp_covariance_is_the_dense_posterior_covariance() {
    let mut rng = StdRng::seed_from_u64(21);
    let data = random_data(30, 2, &mut rng);
    let theta = DVector::from_vec(vec![0.1, -0.3, 0.2, -1.5]);
    let fitted = FullGp::params()
        .check()
        .unwrap()
        .condition(&data, &theta)
        .unwrap();
    let xs = DMatrix::from_fn(11, 2, |_, _| rng.random_range(-2.5..2.5));
    let joint = fitted.predict_covariance(&xs).unwrap();
    let (ell, sf2) = (fitted.lengthscales(), fitted.signal_variance());
    let kernel =
        |a: &DMatrix<f64>, b: &DMatrix<f64>| se_ard_by_definition(a, b, ell.as_slice(), sf2);
    let dense = dense_posterior(kernel, data.x(), &xs, fitted.noise_variance());
    let err = max_error(&joint.f_covariance, &dense, sf2);
    println!("full GP: max |ΔΣ_f|/σ0² = {err:.1e}");
    assert!(err < 1e-10, "full GP covariance: {err:e}");
    assert_eq!(joint.f_covariance, joint.f_covariance.transpose());
    assert_eq!(joint.noise_variance, fitted.noise_variance());
}

/// SSGP's σn²Φ*A⁻¹Φ*ᵀ (weight space) equals the GP posterior covariance under its kernel (eq. 6,
/// function space), computed densely without any design matrix.
#[test]
fn ssgp_covariance_is_the_dense_posterior_covariance_of_its_kernel() {
    let mut rng = StdRng::seed_from_u64(22);
    for (n, m, d) in [(40, 5, 2), (25, 20, 3)] {
        let data = random_data(n, d, &mut rng);
        let hyper = SsgpHyperparameters {
            hyper: Hyperparameters {
                lengthscales: DVector::from_fn(d, |_, _| rng.random_range(-1.0f64..1.0).exp()),
                signal_variance: rng.random_range(-1.0f64..1.0).exp(),
                noise_variance: rng.random_range(-3.0f64..-1.0).exp(),
            },
            unit_frequencies: DMatrix::from_fn(m, d, |_, _| {
                1.5 * rng.sample::<f64, _>(StandardNormal)
            }),
        };
        let fitted = Ssgp::params(m)
            .check()
            .unwrap()
            .condition(&data, &hyper)
            .unwrap();
        let xs = DMatrix::from_fn(9, d, |_, _| rng.random_range(-3.0..3.0));
        let joint = fitted.predict_covariance(&xs).unwrap();
        let h = fitted.hyperparameters();
        let kernel = |a: &DMatrix<f64>, b: &DMatrix<f64>| ssgp_covariance(a, b, h);
        let dense = dense_posterior(kernel, data.x(), &xs, h.hyper.noise_variance);
        let err = max_error(&joint.f_covariance, &dense, h.hyper.signal_variance);
        println!("SSGP (n {n}, m {m}, D {d}): max |ΔΣ_f|/σ0² = {err:.1e}");
        assert!(err < 1e-9, "SSGP covariance: {err:e}");
        assert_eq!(joint.f_covariance, joint.f_covariance.transpose());
    }
}

/// FITC's K** − Q** + K*u(K_uu + K_ufΛ⁻¹K_fu)⁻¹K_u* equals the dense form K** − Q*f C⁻¹ Q_f* with
/// the FITC training covariance C = Q_ff + diag(K_ff − Q_ff) + σn²I, Q_ab = K_au K_uu⁻¹ K_ub
/// (K_uu with the model's jitter).
#[test]
fn fitc_covariance_is_the_dense_fitc_formula() {
    let mut rng = StdRng::seed_from_u64(23);
    let (n, m, d) = (35, 7, 2);
    let data = random_data(n, d, &mut rng);
    let mut theta = DVector::zeros(d + 2 + m * d);
    theta[0] = 0.2;
    theta[1] = -0.1;
    theta[2] = 0.1;
    theta[3] = -1.2;
    for v in theta.as_mut_slice()[d + 2..].iter_mut() {
        *v = rng.random_range(-1.8..1.8);
    }
    let fitted = Fitc::params(m)
        .check()
        .unwrap()
        .condition(&data, &theta)
        .unwrap();
    let xs = DMatrix::from_fn(10, d, |_, _| rng.random_range(-2.5..2.5));
    let joint = fitted.predict_covariance(&xs).unwrap();

    let (ell, sf2, sn2) = (
        fitted.lengthscales(),
        fitted.signal_variance(),
        fitted.noise_variance(),
    );
    let k = |a: &DMatrix<f64>, b: &DMatrix<f64>| se_ard_by_definition(a, b, ell.as_slice(), sf2);
    let (x, u) = (data.x(), fitted.pseudo_inputs());
    let kuu = k(&u, &u) + DMatrix::identity(m, m) * fitted.jitter();
    let kuu = kuu.cholesky().unwrap();
    let q = |a: &DMatrix<f64>, b: &DMatrix<f64>| k(a, &u) * kuu.solve(&k(&u, b));
    let qff = q(x, x);
    let mut c = qff.clone();
    for i in 0..n {
        c[(i, i)] += sf2 - qff[(i, i)] + sn2;
    }
    let qsf = q(&xs, x);
    let dense = k(&xs, &xs) - &qsf * c.cholesky().unwrap().solve(&qsf.transpose());
    let err = max_error(&joint.f_covariance, &dense, sf2);
    println!("FITC: max |ΔΣ_f|/σ0² = {err:.1e}");
    assert!(err < 1e-9, "FITC covariance: {err:e}");
    assert_eq!(joint.f_covariance, joint.f_covariance.transpose());
}

/// Far from the training inputs a kernel model's joint covariance is its prior's: at x = 10⁸ +
/// {0, ½, 1} (sinc's inputs within ±10) the full GP's, FITC's and VFE's Σ_f is the kernel's
/// σ0² exp(−Δ²/2ℓ²) by definition. K** was expanded as ‖z_i‖² + ‖z_j‖² − 2z_iᵀz_j on inputs
/// centred on the training inputs, whose ~10¹⁶ norms left errors of order 1 in the squared
/// distances (0.25 and 1 here); it is centred on the test points now.
#[test]
fn joint_covariances_far_from_the_data_are_the_kernels() {
    let mut rng = StdRng::seed_from_u64(25);
    let train = sinc_data(60, false, 0.05, &mut rng).unwrap();
    let far = DMatrix::from_column_slice(3, 1, &[1e8, 1e8 + 0.5, 1e8 + 1.0]);
    let full = FullGp::params().max_evaluations(50).fit(&train).unwrap();
    let fitc = Fitc::params(8)
        .seed(1)
        .max_evaluations(50)
        .fit(&train)
        .unwrap();
    let vfe = ssgp::Vfe::params(8)
        .seed(1)
        .max_evaluations(50)
        .fit(&train)
        .unwrap();
    let cases = [
        (
            "full",
            full.predict_covariance(&far),
            full.lengthscales(),
            full.signal_variance(),
        ),
        (
            "fitc",
            fitc.predict_covariance(&far),
            fitc.lengthscales(),
            fitc.signal_variance(),
        ),
        (
            "vfe",
            vfe.predict_covariance(&far),
            vfe.lengthscales(),
            vfe.signal_variance(),
        ),
    ];
    for (name, joint, ell, sf2) in cases {
        let joint = joint.unwrap();
        let prior = se_ard_by_definition(&far, &far, ell.as_slice(), sf2);
        let error = max_error(&joint.f_covariance, &prior, sf2);
        assert!(
            error < 1e-9,
            "{name}: {error:e}\n{}{prior}",
            joint.f_covariance
        );
    }
}

/// Every model of the crate (as in the conformance suite), trained briefly on the sinc toy.
fn fitted_models() -> Vec<Box<dyn FittedRegressor>> {
    let mut rng = StdRng::seed_from_u64(24);
    let train = sinc_data(60, false, 0.05, &mut rng).unwrap();
    let small = Ssgp::params(6)
        .seed(2)
        .initial_draws(5)
        .max_evaluations(100)
        .chunk_rows(7);
    let models: Vec<Box<dyn Regressor>> = vec![
        Box::new(small.clone()),
        Box::new(Fitc::params(10).seed(2).max_evaluations(100)),
        Box::new(FullGp::params().max_evaluations(100)),
        Box::new(Ensemble::restarts(&small, 3, Combine::Mixture)),
        Box::new(Ensemble::restarts(&small, 3, Combine::Best)),
        Box::new(Standardized::new(small)),
        Box::new(Standardized::new(
            Box::new(Fitc::params(10).seed(3).max_evaluations(100)) as Box<dyn Regressor>,
        )),
    ];
    models
        .iter()
        .map(|m| {
            m.fit_boxed(&train)
                .unwrap_or_else(|e| panic!("{}: {e}", Regressor::name(m.as_ref())))
        })
        .collect()
}

fn test_inputs(n: usize, seed: u64) -> DMatrix<f64> {
    let mut rng = StdRng::seed_from_u64(seed);
    DMatrix::from_fn(n, 1, |_, _| rng.random_range(-12.0..12.0))
}

fn bits(v: &DVector<f64>) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn covariance_diagonals_are_predicts_variances_and_means_are_its_means() {
    let xs = test_inputs(40, 25);
    for model in fitted_models() {
        let name = model.name();
        let pred = model.predict(&xs).unwrap();
        let joint = model.predict_covariance(&xs).unwrap();
        assert_eq!(bits(&joint.mean), bits(&pred.mean), "{name}: means");
        let y_cov = joint.y_covariance();
        for j in 0..40 {
            for (what, cov, var) in [
                ("f", joint.f_covariance[(j, j)], pred.f_variance[j]),
                ("y", y_cov[(j, j)], pred.y_variance[j]),
            ] {
                let rel = (cov - var).abs() / var.abs().max(f64::MIN_POSITIVE);
                assert!(
                    rel <= 1e-12,
                    "{name}: {what} variance at {j}: {cov} vs {var}"
                );
            }
        }
        assert_eq!(joint.f_covariance, joint.f_covariance.transpose(), "{name}");
        assert!(
            (joint.noise_variance - model.noise_variance()).abs() <= 1e-15 * model.noise_variance(),
            "{name}: σn²"
        );
    }
}

#[test]
fn mean_only_predictions_are_predicts_means_bit_for_bit() {
    // More rows than the SSGP's chunk (7) and several chunks' worth.
    let xs = test_inputs(101, 26);
    for model in fitted_models() {
        let name = model.name();
        let fast = model.predict_mean(&xs).unwrap();
        assert_eq!(
            bits(&fast),
            bits(&model.predict(&xs).unwrap().mean),
            "{name}"
        );
        assert!(matches!(
            model.predict_mean(&DMatrix::zeros(0, 1)),
            Err(Error::EmptyData { .. })
        ));
        assert!(matches!(
            model.predict_mean(&DMatrix::zeros(3, 2)),
            Err(Error::DimensionMismatch { .. })
        ));
    }
    let full = FullGp::params().max_evaluations(50);
    let mut rng = StdRng::seed_from_u64(27);
    let data = sinc_data(50, false, 0.05, &mut rng).unwrap();
    let fitted = full.fit(&data).unwrap();
    assert_eq!(
        bits(&fitted.predict_mean(&xs).unwrap()),
        bits(&fitted.predict(&xs).unwrap().mean)
    );
}

/// Draws N = 20000 joint samples at 6 inputs from every model; each entry of the sample mean
/// lies within k = 5 standard errors sqrt(Σ_ii/N) of μ, and each entry of the sample covariance
/// within 5 standard errors sqrt((Σ_ii Σ_jj + Σ_ij²)/N) of Σ_f (the Gaussian's; a mixture's
/// heavier tails are well inside this at these spreads). Seeded, so the outcome is fixed; the
/// same seed gives the same draws.
#[test]
fn joint_samples_have_the_predicted_mean_and_covariance() {
    let (draws, k) = (20_000, 5.0);
    let xs = DMatrix::from_column_slice(6, 1, &[-3.0, -1.0, -0.5, 0.0, 0.4, 2.5]);
    for model in fitted_models() {
        let name = model.name();
        let joint = model.predict_covariance(&xs).unwrap();
        let samples = model.sample_joint(&xs, draws, 7).unwrap();
        assert_eq!(samples.values.shape(), (6, draws));
        assert_eq!(
            samples,
            model.sample_joint(&xs, draws, 7).unwrap(),
            "{name}"
        );
        let (worst_mean, worst_cov) = sample_errors(&joint, &samples.values);
        println!(
            "{name}: jitter {:.1e}; worst |mean error| {worst_mean:.2} SE, worst |covariance \
             error| {worst_cov:.2} SE",
            samples.jitter
        );
        assert!(worst_mean < k, "{name}: mean off by {worst_mean} SE");
        assert!(worst_cov < k, "{name}: covariance off by {worst_cov} SE");
    }
}

/// The largest errors of the sample mean and sample covariance of `values` (n*×N) against
/// `joint`, in standard errors.
fn sample_errors(joint: &JointPredictive, values: &DMatrix<f64>) -> (f64, f64) {
    let (n, draws) = (values.nrows(), values.ncols() as f64);
    let sigma = &joint.f_covariance;
    let mean = values.column_mean();
    let centred = DMatrix::from_fn(n, values.ncols(), |i, s| values[(i, s)] - mean[i]);
    let cov = &centred * centred.transpose() / (draws - 1.0);
    let mut worst = (0.0f64, 0.0f64);
    for i in 0..n {
        let se = (sigma[(i, i)] / draws).sqrt();
        worst.0 = worst.0.max((mean[i] - joint.mean[i]).abs() / se);
        for j in 0..n {
            let se = ((sigma[(i, i)] * sigma[(j, j)] + sigma[(i, j)].powi(2)) / draws).sqrt();
            worst.1 = worst.1.max((cov[(i, j)] - sigma[(i, j)]).abs() / se);
        }
    }
    worst
}

#[test]
fn repeated_inputs_sample_with_reported_jitter_and_too_many_are_refused() {
    for model in fitted_models() {
        let name = model.name();
        // Twice the same points: Σ_f is singular, rows 0..3 and 3..6 are the same variable.
        let xs = DMatrix::from_column_slice(6, 1, &[-1.0, 0.0, 1.0, -1.0, 0.0, 1.0]);
        let samples = model.sample_joint(&xs, 50, 3).unwrap();
        let sd = model.predict(&xs).unwrap().f_variance.max().sqrt();
        let gap = (0..3)
            .flat_map(|i| (0..50).map(move |s| (i, s)))
            .map(|(i, s)| (samples.values[(i, s)] - samples.values[(i + 3, s)]).abs())
            .fold(0.0, f64::max);
        println!(
            "{name}: jitter {:.1e}, largest gap {gap:.1e} (sd {sd:.1e})",
            samples.jitter
        );
        assert!(gap <= 1e-2 * sd, "{name}: repeated inputs differ by {gap}");
        let too_many = DMatrix::zeros(MAX_JOINT_POINTS + 1, 1);
        assert!(
            matches!(
                model.predict_covariance(&too_many),
                Err(Error::InvalidParameter { name: "x", .. })
            ),
            "{name}"
        );
        // 10¹⁰ draws (80 GB per test point) are an allocation error, never an abort — the
        // mixture's per-draw member choice included.
        let one = DMatrix::from_element(1, 1, 0.5);
        let huge = model.sample_joint(&one, 10_000_000_000, 1);
        assert!(
            matches!(huge, Err(Error::Allocation { .. })),
            "{name}: {:?}",
            huge.map(|s| s.values.ncols())
        );
    }
}
