//! SSGP: exact gradients, fast formulas against dense ones, end-to-end sinc, bad input.

use crate::common::{check_gradient, ssgp_covariance};
use approx::assert_relative_eq;
use nalgebra::{DMatrix, DVector};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::StandardNormal;
use ssgp::data::sinc_data;
use ssgp::optim::{Objective, Phase};
use ssgp::ssgp::{Ssgp, SsgpHyperparameters};
use ssgp::{metrics, Dataset, Error, Hyperparameters, ParamGuard};

fn random_data(n: usize, d: usize, rng: &mut StdRng) -> Dataset {
    let x = DMatrix::from_fn(n, d, |_, _| rng.random_range(-2.0..2.0));
    let y = DVector::from_fn(n, |i, _| {
        f64::sin(x.row(i).sum()) + 0.1 * rng.sample::<f64, _>(StandardNormal)
    });
    Dataset::new(x, y).unwrap()
}

fn random_hyper(m: usize, d: usize, rng: &mut StdRng) -> SsgpHyperparameters {
    SsgpHyperparameters {
        hyper: Hyperparameters {
            lengthscales: DVector::from_fn(d, |_, _| rng.random_range(-1.0f64..1.0).exp()),
            signal_variance: rng.random_range(-1.0f64..1.0).exp(),
            noise_variance: rng.random_range(-3.0f64..0.0).exp(),
        },
        unit_frequencies: DMatrix::from_fn(m, d, |_, _| 1.5 * rng.sample::<f64, _>(StandardNormal)),
    }
}

/// The hyperparameters with σn² raised by `floor` (so they lie above a noise floor).
fn above_floor(hyper: &SsgpHyperparameters, floor: f64) -> SsgpHyperparameters {
    let mut h = hyper.clone();
    h.hyper.noise_variance += floor;
    h
}

/// Checks the learned and fixed-point gradients of `params` at random θ on `data`.
fn check_ssgp_gradients(data: &Dataset, m: usize, floor: f64, rng: &mut StdRng, label: &str) {
    let d = data.dim();
    let hyper = above_floor(&random_hyper(m, d, rng), floor);
    let free_params = Ssgp::params(m).noise_floor(floor).check().unwrap();
    let free = free_params.evidence(data).unwrap();
    check_gradient(&free, &free.pack(&hyper).unwrap(), label);
    let fixed_params = Ssgp::params(m)
        .noise_floor(floor)
        .fixed_spectral_points(true)
        .initial_unit_frequencies(hyper.unit_frequencies.clone())
        .check()
        .unwrap();
    let fixed = fixed_params.evidence(data).unwrap();
    check_gradient(&fixed, &fixed.pack(&hyper).unwrap(), label);
}

/// m ≥ 20 (2m > 32: the recursive halving of the right-side solves and of the symmetric
/// update), and 10 000 rows in chunks of 700 (two row blocks) with the design matrix kept
/// between the passes for all, some, or none of the chunks.
#[test]
fn gradient_matches_finite_differences_through_recursive_solves_and_streaming() {
    let mut rng = StdRng::seed_from_u64(12);
    let data = random_data(120, 2, &mut rng);
    check_ssgp_gradients(&data, 20, 0.0, &mut rng, "SSGP (120,20,2)");
    check_ssgp_gradients(&data, 40, 0.0, &mut rng, "SSGP (120,40,2)");

    let data = random_data(10_000, 2, &mut rng);
    let m = 32;
    let hyper = random_hyper(m, 2, &mut rng);
    let chunk_bytes = 700 * 2 * m * 8;
    let mut values = vec![];
    for cache in [usize::MAX / 2, 3 * chunk_bytes + 1, 0] {
        let params = Ssgp::params(m)
            .chunk_rows(700)
            .cache_bytes(cache)
            .check()
            .unwrap();
        let evidence = params.evidence(&data).unwrap();
        let theta = evidence.pack(&hyper).unwrap();
        check_gradient(&evidence, &theta, &format!("SSGP n=10000 cache {cache}"));
        values.push(evidence.value_and_gradient(&theta).unwrap());
    }
    // Caching changes the work, not the arithmetic.
    assert!(values.windows(2).all(|w| w[0] == w[1]));
}

#[test]
fn gradient_matches_finite_differences() {
    let mut rng = StdRng::seed_from_u64(11);
    for &(n, m, d) in &[(30, 3, 1), (50, 6, 3), (80, 4, 5)] {
        let data = random_data(n, d, &mut rng);
        for floor in [0.0, 0.02] {
            for _ in 0..3 {
                let label = format!("SSGP ({n},{m},{d}) floor {floor}");
                check_ssgp_gradients(&data, m, floor, &mut rng, &label);
            }
        }
    }
}

#[test]
fn fast_evidence_and_predictions_equal_dense_gp_formulas() {
    let mut rng = StdRng::seed_from_u64(5);
    for &(n, m, d) in &[(40, 5, 2), (25, 20, 3)] {
        let data = random_data(n, d, &mut rng);
        let hyper = random_hyper(m, d, &mut rng);
        let params = Ssgp::params(m).chunk_rows(7).check().unwrap();
        let evidence = params.evidence(&data).unwrap();
        let value = evidence.value(&evidence.pack(&hyper).unwrap()).unwrap();

        // Dense: −log N(y | 0, K + σn²I), y centred.
        let y = data.y().add_scalar(-data.y_mean());
        let k = ssgp_covariance(data.x(), data.x(), &hyper);
        let ky = &k + DMatrix::identity(n, n) * hyper.hyper.noise_variance;
        let chol = ky.clone().cholesky().unwrap();
        let dense = 0.5 * y.dot(&chol.solve(&y))
            + 0.5 * chol.determinant().ln()
            + 0.5 * n as f64 * (2.0 * std::f64::consts::PI).ln();
        assert_relative_eq!(value, dense, max_relative = 1e-10);

        // Predictions (eq. 2 with the SSGP covariance).
        let fitted = params.condition(&data, &hyper).unwrap();
        assert_relative_eq!(fitted.neg_log_evidence(), dense, max_relative = 1e-10);
        let xs = DMatrix::from_fn(13, d, |_, _| rng.random_range(-3.0..3.0));
        let pred = fitted.predict(&xs).unwrap();
        let ks = ssgp_covariance(&xs, data.x(), &hyper);
        let mean = &ks * chol.solve(&y);
        let kss = ssgp_covariance(&xs, &xs, &hyper);
        let latent = (&kss - &ks * chol.solve(&ks.transpose())).diagonal();
        for j in 0..13 {
            assert_relative_eq!(pred.mean[j], mean[j] + data.y_mean(), epsilon = 1e-9);
            assert_relative_eq!(pred.f_variance[j], latent[j].max(0.0), epsilon = 1e-9);
            assert_relative_eq!(
                pred.y_variance[j],
                pred.f_variance[j] + hyper.hyper.noise_variance,
                epsilon = 1e-12
            );
            assert!(pred.y_variance[j] >= hyper.hyper.noise_variance);
        }
    }
}

/// Draws from the posterior over the weights have the predictive mean and the whole predictive
/// covariance K** − K*(K + σn²I)⁻¹K*ᵀ (dense, from the covariance's definition), cross terms
/// included, within 5 standard errors of the Monte Carlo estimates.
#[test]
fn posterior_samples_have_the_predictive_mean_and_covariance() {
    let mut rng = StdRng::seed_from_u64(8);
    let data = sinc_data(60, false, 0.1, &mut rng).unwrap();
    let hyper = random_hyper(6, 1, &mut rng);
    let fitted = Ssgp::params(6)
        .check()
        .unwrap()
        .condition(&data, &hyper)
        .unwrap();
    let xs = DMatrix::from_column_slice(4, 1, &[-2.0, 1.0, 1.3, 4.5]);
    let n = data.len();
    let y = data.y().add_scalar(-data.y_mean());
    let ks = ssgp_covariance(&xs, data.x(), &hyper);
    let ky = ssgp_covariance(data.x(), data.x(), &hyper)
        + DMatrix::identity(n, n) * hyper.hyper.noise_variance;
    let chol = ky.cholesky().unwrap();
    let mean = (&ks * chol.solve(&y)).add_scalar(data.y_mean());
    let cov = ssgp_covariance(&xs, &xs, &hyper) - &ks * chol.solve(&ks.transpose());

    let draws = 20_000;
    let samples: Vec<DVector<f64>> = (0..draws)
        .map(|_| fitted.sample_posterior(&mut rng).evaluate(&xs).unwrap())
        .collect();
    let avg = samples.iter().sum::<DVector<f64>>() / draws as f64;
    let mut sample_cov = DMatrix::zeros(4, 4);
    for f in &samples {
        let e = f - &avg;
        sample_cov += &e * e.transpose();
    }
    sample_cov /= (draws - 1) as f64;
    for i in 0..4 {
        let se = (cov[(i, i)] / draws as f64).sqrt();
        assert!(
            (avg[i] - mean[i]).abs() < 5.0 * se,
            "mean at {i}: {} vs {}",
            avg[i],
            mean[i]
        );
        for j in 0..4 {
            // The standard error of a sample covariance of Gaussians.
            let se = ((cov[(i, i)] * cov[(j, j)] + cov[(i, j)].powi(2)) / draws as f64).sqrt();
            assert!(
                (sample_cov[(i, j)] - cov[(i, j)]).abs() < 5.0 * se,
                "covariance ({i},{j}): {} vs {} (standard error {se:e})",
                sample_cov[(i, j)],
                cov[(i, j)]
            );
        }
    }
    // The points 1.0 and 1.3 are strongly correlated: the test is not all diagonal.
    assert!(cov[(1, 2)] > 0.5 * (cov[(1, 1)] * cov[(2, 2)]).sqrt());
}

fn sinc_problem() -> (Dataset, Dataset) {
    let mut rng = StdRng::seed_from_u64(1);
    let train = sinc_data(100, false, 0.05, &mut rng).unwrap();
    let test = sinc_data(1000, true, 0.05, &mut rng).unwrap();
    (train, test)
}

#[test]
fn sinc_end_to_end_is_accurate_calibrated_and_reproducible() {
    let (train, test) = sinc_problem();
    let params = Ssgp::params(10).seed(1);
    let fitted = params.fit(&train).unwrap();
    let pred = fitted.predict(test.x()).unwrap();
    let nmse = metrics::nmse(test.y(), &pred, train.y_mean()).unwrap();
    let mnlp = metrics::mnlp(test.y(), &pred).unwrap();
    let t = fitted.training();
    println!(
        "sinc SSGP m=10: NMSE {nmse:.4}, MNLP {mnlp:.4}, {} iterations, {} evaluations, {:?}",
        t.iterations, t.evaluations, t.termination
    );
    assert!(nmse <= 0.03, "NMSE {nmse}");
    assert!(mnlp <= -1.4, "MNLP {mnlp}");
    assert!(t.neg_log_evidence <= t.initial_neg_log_evidence);
    let again = params.fit(&train).unwrap();
    assert_eq!(again.parameters(), fitted.parameters());
    assert_eq!(again.predict(test.x()).unwrap(), pred);

    // The paper's Figure 2a: 20 fixed spectral points.
    let fixed = Ssgp::params(20)
        .seed(1)
        .fixed_spectral_points(true)
        .fit(&train)
        .unwrap();
    let pred = fixed.predict(test.x()).unwrap();
    let nmse_fixed = metrics::nmse(test.y(), &pred, train.y_mean()).unwrap();
    println!(
        "sinc SSGP fixed m=20: NMSE {nmse_fixed:.4}, MNLP {:.4}",
        metrics::mnlp(test.y(), &pred).unwrap()
    );
    assert!(nmse_fixed <= 0.05, "fixed NMSE {nmse_fixed}");
    assert!(fixed.training().neg_log_evidence <= fixed.training().initial_neg_log_evidence);
    assert_eq!(fixed.unit_frequencies().nrows(), 20);
}

#[test]
fn noise_floor_is_respected() {
    let (train, _) = sinc_problem();
    let floor = 0.01; // four times the true noise variance
    let fitted = Ssgp::params(10)
        .seed(2)
        .initial_draws(5)
        .noise_floor(floor)
        .fit(&train)
        .unwrap();
    assert!(fitted.noise_variance() >= floor);
    let free = Ssgp::params(10)
        .seed(2)
        .initial_draws(5)
        .fit(&train)
        .unwrap();
    assert!(free.noise_variance() < floor, "{}", free.noise_variance());
}

#[test]
fn bad_input_is_a_clear_error() {
    let (train, test) = sinc_problem();
    assert!(matches!(
        Ssgp::params(0).fit(&train),
        Err(Error::InvalidParameter { name: "m", .. })
    ));
    assert!(matches!(
        Ssgp::params(3).initial_draws(0).fit(&train),
        Err(Error::InvalidParameter { .. })
    ));
    assert!(matches!(
        Ssgp::params(3).noise_floor(-1.0).fit(&train),
        Err(Error::InvalidParameter { .. })
    ));
    assert!(matches!(
        Ssgp::params(3).noise_floor(f64::NAN).fit(&train),
        Err(Error::InvalidParameter { .. })
    ));
    assert!(matches!(
        Ssgp::params(3)
            .initial_lengthscales(DVector::from_vec(vec![1.0, 2.0]))
            .fit(&train),
        Err(Error::DimensionMismatch { .. })
    ));
    assert!(matches!(
        Ssgp::params(3)
            .initial_unit_frequencies(DMatrix::zeros(2, 1))
            .fit(&train),
        Err(Error::DimensionMismatch { .. })
    ));
    let constant = Dataset::new(
        DMatrix::from_fn(10, 2, |i, j| if j == 0 { i as f64 } else { 3.0 }),
        DVector::from_fn(10, |i, _| (i as f64).sin()),
    )
    .unwrap();
    let ignoring = Ssgp::params(3).fit(&constant).unwrap();
    assert_eq!(ignoring.training().ignored_inputs, vec![1]);
    assert_eq!(ignoring.lengthscales()[1], f64::INFINITY);
    assert_eq!(ignoring.spectral_points().column(1).amax(), 0.0);
    assert_eq!(ignoring.parameters().len(), 1 + 2 + 3);
    let flat = Dataset::new(
        DMatrix::from_fn(10, 1, |i, _| i as f64),
        DVector::from_element(10, 2.0),
    )
    .unwrap();
    assert!(matches!(
        Ssgp::params(3).fit(&flat),
        Err(Error::ConstantTargets { .. })
    ));

    let fitted = Ssgp::params(4)
        .initial_draws(2)
        .max_evaluations(20)
        .fit(&train)
        .unwrap();
    assert!(matches!(
        fitted.predict(&DMatrix::zeros(3, 2)),
        Err(Error::DimensionMismatch {
            expected: 1,
            found: 2,
            ..
        })
    ));
    assert!(matches!(
        fitted.predict(&DMatrix::zeros(0, 1)),
        Err(Error::EmptyData { .. })
    ));
    let mut xs = test.x().clone();
    xs[(5, 0)] = f64::NAN;
    assert!(matches!(
        fitted.predict(&xs),
        Err(Error::NonFinite { row: 5, .. })
    ));
    assert!(Dataset::new(DMatrix::zeros(3, 1), DVector::zeros(4)).is_err());
    assert!(Dataset::new(DMatrix::zeros(0, 1), DVector::zeros(0)).is_err());
    assert!(matches!(
        Dataset::new(
            DMatrix::from_element(2, 1, f64::INFINITY),
            DVector::zeros(2)
        ),
        Err(Error::NonFinite { .. })
    ));
    let params = Ssgp::params(4).check().unwrap();
    let evidence = params.evidence(&train).unwrap();
    assert!(matches!(
        evidence.value(&DVector::zeros(3)),
        Err(Error::DimensionMismatch { .. })
    ));
    let mut theta = evidence.pack(fitted.hyperparameters()).unwrap();
    theta[1] = f64::NAN;
    assert!(matches!(
        evidence.value(&theta),
        Err(Error::NonFinite { row: 1, .. })
    ));
}

#[test]
fn observer_reports_every_iteration() {
    use std::sync::{Arc, Mutex};
    let (train, _) = sinc_problem();
    let seen: Arc<Mutex<Vec<ssgp::Progress>>> = Arc::default();
    let sink = Arc::clone(&seen);
    let fitted = Ssgp::params(5)
        .initial_draws(3)
        .max_iterations(12)
        .observer(Arc::new(move |p: &ssgp::Progress| {
            sink.lock().unwrap().push(*p);
            std::ops::ControlFlow::Continue(())
        }))
        .fit(&train)
        .unwrap();
    let seen: Vec<ssgp::Progress> = seen
        .lock()
        .unwrap()
        .iter()
        .filter(|p| p.phase == Phase::Optimiser)
        .copied()
        .collect();
    let iterations: Vec<u64> = seen.iter().map(|p| p.iteration).collect();
    assert_eq!(
        iterations,
        (1..=fitted.training().iterations).collect::<Vec<_>>()
    );
    assert!(seen
        .windows(2)
        .all(|w| w[1].evaluations >= w[0].evaluations && w[1].best_value <= w[0].best_value));
    assert!(seen
        .iter()
        .all(|p| p.gradient_norm.is_finite() && p.best_value <= p.value));
    assert_eq!(
        seen.last().unwrap().best_value,
        fitted.training().neg_log_evidence
    );
}

/// Every phase of a default SSGP fit reaches the observer, in order: the full GP that starts the
/// lengthscales (§5.2), each of the 100 spectral draws, SSGP's own iterations, then the chunks of
/// a prediction; restarts of an ensemble tag theirs.
#[test]
fn observer_receives_every_phase_of_a_default_fit_in_order() {
    use ssgp::ensemble::{Combine, Ensemble};
    use std::sync::{Arc, Mutex};
    let (train, test) = sinc_problem();
    let seen: Arc<Mutex<Vec<ssgp::Progress>>> = Arc::default();
    let sink = Arc::clone(&seen);
    let observer: ssgp::optim::Observer = Arc::new(move |p: &ssgp::Progress| {
        sink.lock().unwrap().push(*p);
        std::ops::ControlFlow::Continue(())
    });
    let params = Ssgp::params(6)
        .seed(3)
        .max_evaluations(60)
        .observer(observer);
    let fitted = params.fit(&train).unwrap();
    fitted.predict(test.x()).unwrap();
    let reports = std::mem::take(&mut *seen.lock().unwrap());
    let rank = |p: &ssgp::Progress| match p.phase {
        Phase::StartValues => 0,
        Phase::CalibrationCheck => 1,
        Phase::SpectralDraws { .. } => 2,
        Phase::Optimiser => 3,
        Phase::Prediction { .. } => 4,
        _ => 5,
    };
    let ranks: Vec<usize> = reports.iter().map(rank).collect();
    assert!(
        ranks.windows(2).all(|w| w[0] <= w[1]),
        "phases out of order: {ranks:?}"
    );
    // The calibration check runs (sinc's n is in its held-out range) and kept the learned fit,
    // whose draws and iterations follow.
    assert!(
        matches!(
            fitted.training().remedy,
            Some(ssgp::termination::Remedy::HeldOut { learned_mnlp, random_features_mnlp, .. })
                if learned_mnlp <= random_features_mnlp
        ),
        "{:?}",
        fitted.training().remedy
    );
    for phase in 0..5 {
        assert!(
            ranks.contains(&phase),
            "phase {phase} never reported: {ranks:?}"
        );
    }
    let draws: Vec<(usize, usize)> = reports
        .iter()
        .filter_map(|p| match p.phase {
            Phase::SpectralDraws { done, total } => Some((done, total)),
            _ => None,
        })
        .collect();
    assert_eq!(draws, (1..=100).map(|i| (i, 100)).collect::<Vec<_>>());
    // Every completed iteration (one cut short by the evaluation budget is counted, not reported).
    let iterations: Vec<u64> = reports
        .iter()
        .filter(|p| p.phase == Phase::Optimiser)
        .map(|p| p.iteration)
        .collect();
    let done = fitted.training().iterations;
    assert_eq!(
        iterations,
        (1..=iterations.len() as u64).collect::<Vec<_>>()
    );
    assert!(
        iterations.len() as u64 + 1 >= done && done > 1,
        "{iterations:?} of {done}"
    );
    assert_eq!(
        reports.last().unwrap().phase,
        Phase::Prediction {
            done: test.len(),
            total: test.len()
        }
    );
    assert!(reports.iter().all(|p| p.restart.is_none()));

    // Two restarts: each tagged, each in order on its own.
    Ensemble::restarts(&params, 2, Combine::Mixture)
        .fit(&train)
        .unwrap();
    let reports = std::mem::take(&mut *seen.lock().unwrap());
    for k in 0..2 {
        let own: Vec<usize> = reports
            .iter()
            .filter(|p| p.restart == Some((k, 2)))
            .map(rank)
            .collect();
        assert!(
            own.windows(2).all(|w| w[0] <= w[1]) && own.contains(&2),
            "{k}: {own:?}"
        );
    }
    assert!(reports.iter().all(|p| p.restart.is_some()));
}

/// Sizes and scales beyond f64 or memory are errors that name the cause and the remedy: a
/// 2·10⁶×2·10⁶ factor is `Error::Allocation` before training starts (not an abort); targets too
/// small for SSGP's gradient, or too large for any model's variances, are `Error::Scale`; inputs
/// of 1e200 behind `Standardized` are scaled, not taken for constants.
#[test]
fn extreme_sizes_and_scales_are_errors_naming_the_cause() {
    use ssgp::standardize::Standardized;
    use ssgp::{Fitc, FittedRegressor, FullGp, Regressor};
    let mut rng = StdRng::seed_from_u64(5);
    let data = sinc_data(200, false, 0.1, &mut rng).unwrap();
    let huge = Ssgp::params(1_000_000).seed(1).fit(&data);
    assert!(
        matches!(huge, Err(Error::Allocation { .. })),
        "{:?}",
        huge.map(|f| f.num_spectral_points())
    );

    let scaled = |xs: f64, ys: f64| Dataset::new(data.x() * xs, data.y() * ys).unwrap();
    let tiny = scaled(1.0, 1e-150);
    let message = Ssgp::params(10).seed(1).fit(&tiny).unwrap_err().to_string();
    assert!(
        message.starts_with("the targets' spread 3.")
            && message.contains("e-151 is below what SSGP can fit in f64")
            && message.contains("standardise them"),
        "{message}"
    );
    Standardized::new(Ssgp::params(10).seed(1))
        .fit(&tiny)
        .unwrap();

    let large = scaled(1.0, 1e200);
    let models: Vec<Box<dyn Regressor>> = vec![
        Box::new(Ssgp::params(10).seed(1)),
        Box::new(Fitc::params(10).seed(1)),
        Box::new(FullGp::params()),
        Box::new(Standardized::new(Ssgp::params(10).seed(1))),
    ];
    for model in &models {
        let message = match model.fit_boxed(&large) {
            Ok(f) => panic!("{}: fitted, σn² {}", model.name(), f.noise_variance()),
            Err(e) => e.to_string(),
        };
        assert!(
            message.contains("e199 is above what a Gaussian process can model in f64")
                && message.contains("divide them by a power of ten"),
            "{}: {message}",
            model.name()
        );
    }

    let wide = scaled(1e200, 1.0);
    let fitted = Standardized::new(Ssgp::params(10).seed(1))
        .fit(&wide)
        .unwrap();
    let p = fitted.predict(&(data.x() * 1e200)).unwrap();
    assert!(metrics::nmse(data.y(), &p, data.y_mean()).unwrap() < 0.1);
}

/// The LOO diagnostic in the training summary (from the hat matrix's diagonal, O(nm²)) is the
/// leave-one-out of eq. 6's covariance by its definition (n dense conditionals), and the full
/// GP's (from the inverse factor) is that of K + σn²I.
#[test]
fn loo_diagnostic_is_leave_one_out_by_definition() {
    use crate::common::{loo_by_definition, se_ard_by_definition};
    use ssgp::FullGp;
    let mut rng = StdRng::seed_from_u64(31);
    let data = random_data(40, 2, &mut rng);
    let y = data.y().add_scalar(-data.y_mean());
    let check = |name: &str, found: ssgp::LooDiagnostic, (z2, mnlp, nmse): (f64, f64, f64)| {
        println!("{name}: {found} (by definition z² {z2:.6}, MNLP {mnlp:.6}, NMSE {nmse:.6})");
        assert_relative_eq!(found.mean_z2, z2, max_relative = 1e-8);
        assert_relative_eq!(found.mnlp, mnlp, max_relative = 1e-8);
        assert_relative_eq!(found.nmse, nmse, max_relative = 1e-8);
    };

    // m = 6: the hat matrix's diagonal (n > 4m); m = 20: the n×n form.
    for m in [6, 20] {
        let ssgp = Ssgp::params(m)
            .seed(3)
            .max_evaluations(60)
            .fit(&data)
            .unwrap();
        let h = ssgp.hyperparameters();
        let c = ssgp_covariance(data.x(), data.x(), h)
            + DMatrix::identity(40, 40) * h.hyper.noise_variance;
        check(
            &format!("ssgp m = {m}"),
            ssgp.training().diagnostic.unwrap(),
            loo_by_definition(&c, &y),
        );
    }

    let full = FullGp::params().max_evaluations(60).fit(&data).unwrap();
    let ell: Vec<f64> = full.lengthscales().iter().copied().collect();
    let c = se_ard_by_definition(data.x(), data.x(), &ell, full.signal_variance())
        + DMatrix::identity(40, 40) * (full.noise_variance() + full.jitter());
    check(
        "full GP",
        full.training().diagnostic.unwrap(),
        loo_by_definition(&c, &y),
    );
}

/// An input so far from the training inputs that f64 cannot resolve the phases of its features
/// (in other units, say: 10¹⁴ where the data spans 0–5) is a scale error naming the row in every
/// prediction and in an update (which leaves the model), where it used to give a confident
/// prediction from noise; far inputs whose phases f64 resolves still predict.
#[test]
fn inputs_whose_phases_f64_cannot_resolve_are_named() {
    let x = DMatrix::from_fn(40, 1, |i, _| i as f64 / 8.0);
    let y = x.column(0).map(f64::sin);
    let mut fitted = Ssgp::params(10)
        .seed(1)
        .max_evaluations(30)
        .fit(&Dataset::new(x, y).unwrap())
        .unwrap();
    let far = DMatrix::from_vec(3, 1, vec![1.0, 1e14, 2.0]);
    let scale = |r: Result<(), Error>, what: &str| match r {
        Err(Error::Scale { what: message }) => {
            assert!(message.contains("input row 1"), "{what}: {message}")
        }
        other => panic!("{what}: {other:?}"),
    };
    scale(fitted.predict(&far).map(drop), "predict");
    scale(fitted.predict_mean(&far).map(drop), "predict_mean");
    scale(
        fitted.predict_covariance(&far).map(drop),
        "predict_covariance",
    );
    scale(
        fitted.predict_gradients(&far).map(drop),
        "predict_gradients",
    );
    scale(
        fitted.gradient_covariance(&far).map(drop),
        "gradient_covariance",
    );
    let sample = fitted.sample_posterior(&mut StdRng::seed_from_u64(2));
    scale(sample.evaluate(&far).map(drop), "a posterior sample");
    let before = fitted.predict(&DMatrix::from_element(1, 1, 2.0)).unwrap();
    scale(
        fitted.update(&far, &DVector::from_element(3, 0.0)),
        "update",
    );
    assert_eq!(fitted.num_updates(), 0);
    assert_eq!(
        fitted.predict(&DMatrix::from_element(1, 1, 2.0)).unwrap(),
        before
    );
    assert!(fitted.predict(&DMatrix::from_element(1, 1, 1e6)).is_ok());
}

/// The calibration check reports the error bars the kept model has: under an absolute noise
/// floor (10⁻³) thirty times the targets' variance (pure noise, var y ≈ 3·10⁻⁵), every candidate
/// carries σn² at least the floor, and the held-out mean z² recorded for the model kept is what
/// its own predictions give on the training rows (to sampling error), flagged as too wide. The
/// training mean was scored at var y (recorded mean z² ≈ 0.95), so it was kept, while its model
/// took σn² = 1.001·floor (its own z² ≈ 0.036), and nothing was flagged.
#[test]
fn the_check_records_the_error_bars_of_the_model_it_keeps_under_an_absolute_floor() {
    let mut rng = StdRng::seed_from_u64(8);
    let n = 440;
    let x: DMatrix<f64> = DMatrix::from_fn(n, 2, |_, _| rng.random_range(-2.0..2.0));
    let y = DVector::from_fn(n, |_, _| 3.0 + 0.01 * rng.random_range(-1.0..1.0));
    let data = Dataset::new(x.clone(), y.clone()).unwrap();
    let floor = 1e-3;
    let fitted = Ssgp::params(8)
        .seed(4)
        .max_evaluations(64)
        .threads(1)
        .noise_floor(floor)
        .fit(&data)
        .unwrap();
    let training = fitted.training();
    assert!(fitted.noise_variance() >= floor);
    let pred = fitted.predict(&x).unwrap();
    let own = metrics::calibration(&y, &pred).unwrap().mean_squared_z;
    let recorded = training.held_out().unwrap().mean_z2;
    assert!(
        (recorded / own - 1.0).abs() < 0.3,
        "recorded held-out mean z² {recorded}, the model's own {own}: {}",
        training.diagnosis()
    );
    assert!(training.flags().underconfident, "{}", training.diagnosis());
}

/// The random-feature fit draws its spectral points from the kernel's density with the seed,
/// whatever initial unit frequencies are given (they start the learned fit only): alone
/// (`CalibrationGuard::RandomFeatures`) and as the default check keeps it on few rows, the fit
/// with given frequencies is the fit without them, bit for bit. The given frequencies (here all
/// 0.7) were the random-feature fit's, so a warm start learned on the check's held-out rows
/// made its reference fit one that had seen them.
#[test]
fn the_random_feature_fit_draws_its_own_spectral_points() {
    use ssgp::ssgp::CalibrationGuard;
    let mut rng = StdRng::seed_from_u64(3);
    let many = sinc_data(120, false, 0.05, &mut rng).unwrap();
    let few = sinc_data(20, false, 0.05, &mut rng).unwrap();
    let xt = DMatrix::from_fn(7, 1, |i, _| i as f64 - 3.0);
    for (data, guard, m) in [
        (&many, CalibrationGuard::RandomFeatures, 10),
        (&few, CalibrationGuard::Check, 30),
    ] {
        let params = || {
            Ssgp::params(m)
                .seed(5)
                .max_evaluations(60)
                .calibration(guard)
        };
        let drawn = params().fit(data).unwrap();
        let given = params()
            .initial_unit_frequencies(DMatrix::from_element(m, 1, 0.7))
            .fit(data)
            .unwrap();
        assert!(
            drawn.fixed_spectral_points(),
            "{guard:?}: random features kept"
        );
        assert_eq!(
            given.unit_frequencies(),
            drawn.unit_frequencies(),
            "{guard:?}"
        );
        assert_eq!(given.predict(&xt).unwrap(), drawn.predict(&xt).unwrap());
    }
    // Given frequencies of the wrong shape are still an error where they are not read.
    let wrong = Ssgp::params(10)
        .calibration(CalibrationGuard::RandomFeatures)
        .initial_unit_frequencies(DMatrix::from_element(10, 2, 0.7))
        .fit(&many);
    assert!(matches!(wrong, Err(Error::DimensionMismatch { .. })));
}

/// `condition` is the model at exactly the hyperparameters given, or an error naming the noise
/// floor: σn² = 10⁻⁸ below the default floor (10⁻⁴·var y) is `InvalidParameter { name:
/// "noise_floor" }`, σn² = 1.0005·floor (within 10⁻³·floor of it) is kept, and without a
/// relative floor 10⁻⁸ is kept. Both were moved to 1.001·floor without a word (the multi-output
/// `condition_multi` refused a ratio at its floor, naming `hyperparameters`).
#[test]
fn condition_keeps_the_noise_given_or_names_the_floor() {
    let mut rng = StdRng::seed_from_u64(2);
    let data = random_data(40, 1, &mut rng);
    let floor = 1e-4 * data.y_variance();
    let at = |noise_variance: f64| SsgpHyperparameters {
        hyper: Hyperparameters {
            lengthscales: DVector::from_element(1, 1.0),
            signal_variance: 1.0,
            noise_variance,
        },
        unit_frequencies: DMatrix::from_fn(5, 1, |r, _| r as f64 * 0.3 - 0.6),
    };
    let params = Ssgp::params(5).check().unwrap();
    match params.condition(&data, &at(1e-8)) {
        Err(Error::InvalidParameter { name, reason }) => {
            assert_eq!(name, "noise_floor");
            assert!(reason.contains("relative_noise_floor(0.0)"), "{reason}");
        }
        other => panic!(
            "σn² below the floor: {:?}",
            other.map(|f| f.noise_variance())
        ),
    }
    let near = params.condition(&data, &at(1.0005 * floor)).unwrap();
    assert_relative_eq!(near.noise_variance(), 1.0005 * floor, max_relative = 1e-12);
    let free = Ssgp::params(5).relative_noise_floor(0.0).check().unwrap();
    let tiny = free.condition(&data, &at(1e-8)).unwrap();
    assert_relative_eq!(tiny.noise_variance(), 1e-8, max_relative = 1e-12);
}

/// A fitted model's own evidence, as `evidence` documents it: these settings with its W (the
/// used columns) and its noise floor give its −log p at its θ, with fixed spectral points under
/// the default check and on data with a constant input. `evidence` alone fixes the seed's first
/// draw, and the paper's fit started from the best of 100 draws: another W at a θ of the same
/// length.
#[test]
fn a_fitted_models_evidence_is_the_one_at_its_spectral_points_and_floor() {
    use ssgp::ssgp::CalibrationGuard;
    let mut rng = StdRng::seed_from_u64(6);
    let used = random_data(160, 2, &mut rng);
    let x = DMatrix::from_fn(160, 3, |i, d| if d < 2 { used.x()[(i, d)] } else { 4.0 });
    let data = Dataset::new(x, used.y().clone()).unwrap();
    let params = || {
        Ssgp::params(8)
            .seed(2)
            .max_evaluations(60)
            .fixed_spectral_points(true)
    };
    for guard in [CalibrationGuard::Check, CalibrationGuard::Off] {
        let fitted = params().calibration(guard).fit(&data).unwrap();
        assert_eq!(fitted.input_columns().used(), [0, 1]);
        let own = params()
            .initial_unit_frequencies(fitted.hyperparameters().unit_frequencies.clone())
            .noise_floor(fitted.noise_floor())
            .relative_noise_floor(0.0)
            .check()
            .unwrap()
            .evidence(&used)
            .unwrap();
        let value = own.value(fitted.parameters()).unwrap();
        assert_relative_eq!(value, fitted.neg_log_evidence(), max_relative = 1e-9);
        if guard == CalibrationGuard::Off {
            let first = params().check().unwrap().evidence(&used).unwrap();
            let drawn = first.unpack(fitted.parameters()).unwrap().unit_frequencies;
            assert_ne!(drawn, fitted.hyperparameters().unit_frequencies);
        }
    }
}
