//! The full GP: gradient against finite differences, evidence and predictions against dense
//! nalgebra formulas, the sinc toy, and input validation.

use crate::common::{
    assert_flagged_for_few_inputs, assert_overconfidence_found_by_refits, check_gradient,
    se_ard_by_definition,
};
use approx::assert_relative_eq;
use nalgebra::{DMatrix, DVector};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use ssgp::data::{Problem, Roughness};
use ssgp::{
    Dataset, Error, FittedRegressor, FullGp, Hyperparameters, ParamGuard, Regressor, Remedy,
    Termination,
};

/// n random points in [−2, 2]^D with a smooth target plus noise.
fn random_data(n: usize, dim: usize, seed: u64) -> Dataset {
    let mut rng = StdRng::seed_from_u64(seed);
    let x = DMatrix::from_fn(n, dim, |_, _| rng.random_range(-2.0..2.0));
    let y = DVector::from_fn(n, |i, _| {
        let s: f64 = x
            .row(i)
            .iter()
            .enumerate()
            .map(|(d, v)| (v * (d + 1) as f64).sin())
            .sum();
        s + 0.1 * rng.random_range(-1.0..1.0)
    });
    Dataset::new(x, y).unwrap()
}

fn random_theta(dim: usize, rng: &mut StdRng) -> DVector<f64> {
    DVector::from_fn(dim + 2, |i, _| {
        if i < dim {
            rng.random_range(-0.7..0.9)
        } else if i == dim {
            rng.random_range(-0.5..0.5)
        } else {
            rng.random_range(-2.5..-0.5)
        }
    })
}

/// Where the jitter ladder fires (K + σn²I not positive definite at σn² = e⁻⁴⁰, no noise floor:
/// 200 inputs 1/200 apart, smooth targets), the jitter δ is a multiple of σ0² and moves with
/// log σ0: the gradient's σ0 entry carries δ(tr K_y⁻¹ − αᵀα) (it was left out: −1.6 against a
/// central difference of +190). Every entry against central differences at the same rung
/// (checked at θ ± h).
#[test]
fn gradient_under_the_jitter_ladder_matches_central_differences() {
    let x = DMatrix::from_fn(200, 1, |i, _| i as f64 / 200.0);
    let y = x.column(0).map(|v| (2.0 * v).sin());
    let data = Dataset::new(x, y).unwrap();
    let params = FullGp::params()
        .relative_noise_floor(0.0)
        .threads(1)
        .check()
        .unwrap();
    let evidence = params.evidence(&data).unwrap();
    for theta in [[0.0, 0.0, -20.0], [-0.3, 0.4, -20.0], [0.2, -0.5, -21.0]] {
        let theta = DVector::from_row_slice(&theta);
        let jitter = evidence.evaluate(&theta).unwrap().jitter;
        assert!(jitter > 0.0, "θ = {theta}: the ladder must fire");
        for i in 0..theta.len() {
            for h in [1e-3, -1e-3] {
                let mut moved = theta.clone();
                moved[i] += h;
                let at = evidence.evaluate(&moved).unwrap().jitter;
                let rung = |j: f64, sf: f64| (j / (2.0 * sf).exp()).log10().round();
                assert_eq!(rung(at, moved[1]), rung(jitter, theta[1]), "θ = {theta}");
            }
        }
        // K_y's condition number at the first rung is about n/10⁻¹⁰: values carry relative
        // noise near 10⁻⁶, so h = 10⁻³ (truncation ~h²) and a 1 % tolerance.
        let g = evidence.evaluate(&theta).unwrap().gradient;
        for i in 0..theta.len() {
            let h = 1e-3;
            let value = |s: f64| {
                let mut moved = theta.clone();
                moved[i] += s * h;
                evidence.evaluate(&moved).unwrap().value
            };
            let fd = (value(1.0) - value(-1.0)) / (2.0 * h);
            let tol = 1e-2 * g[i].abs().max(1e-3 * g.amax());
            assert!(
                (fd - g[i]).abs() <= tol,
                "θ = {theta}, entry {i}: {} against {fd}",
                g[i]
            );
        }
    }
}

/// The shorter-start retries (from half ranges, while a fit calls more than half the targets'
/// variance noise) share the fit's budgets: with `max_evaluations(10)` the fit uses at most 10
/// evaluations in all (each retry had its own 10: up to 30), on a signal that turns many times
/// across its range and under a noise floor of 0.6·var(y) (where no retry can help and none runs).
#[test]
fn shorter_starts_share_the_fits_budget() {
    let x = DMatrix::from_fn(200, 1, |i, _| i as f64 / 10.0);
    let y = x.column(0).map(|v| (3.0 * v).sin());
    let data = Dataset::new(x, y).unwrap();
    for floor in [0.0, 0.6] {
        let fitted = FullGp::params()
            .relative_noise_floor(floor)
            .max_evaluations(10)
            .fit(&data)
            .unwrap();
        let evaluations = fitted.training().evaluations;
        assert!(
            evaluations <= 10,
            "floor {floor}: {evaluations} evaluations"
        );
    }
}

/// An observer's stop and a time limit end the fit as they say: `StoppedByObserver` after the
/// first iteration (no shorter-start retry runs after it, on the same many-turn signal as
/// above, where they run otherwise), and `TimeLimit` at θ₀ for a limit of zero.
#[test]
fn an_observers_stop_and_a_time_limit_end_the_fit() {
    use ssgp::optim::{Observer, Phase};
    use ssgp::Termination;
    use std::ops::ControlFlow;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let x = DMatrix::from_fn(200, 1, |i, _| i as f64 / 10.0);
    let y = x.column(0).map(|v| (3.0 * v).sin());
    let data = Dataset::new(x, y).unwrap();
    let iterations = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&iterations);
    let stop: Observer = Arc::new(move |p| {
        if p.phase == Phase::Optimiser {
            seen.fetch_add(1, Ordering::SeqCst);
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    });
    let fitted = FullGp::params().observer(stop).fit(&data).unwrap();
    assert_eq!(
        fitted.training().termination,
        Termination::StoppedByObserver
    );
    assert_eq!(
        iterations.load(Ordering::SeqCst),
        1,
        "no retry after the stop"
    );
    let timed = FullGp::params()
        .max_time(std::time::Duration::ZERO)
        .best_effort(true)
        .fit(&data)
        .unwrap();
    assert_eq!(timed.training().termination, Termination::TimeLimit);
}

#[test]
fn gradient_matches_central_differences() {
    let mut rng = StdRng::seed_from_u64(11);
    for (n, dim) in [(12, 1), (30, 3), (45, 6)] {
        let data = random_data(n, dim, n as u64);
        for floor in [0.0, 0.02] {
            let params = FullGp::params().noise_floor(floor).check().unwrap();
            let evidence = params.evidence(&data).unwrap();
            for _ in 0..3 {
                let theta = random_theta(dim, &mut rng);
                assert_eq!(evidence.evaluate(&theta).unwrap().jitter, 0.0);
                check_gradient(
                    &evidence,
                    &theta,
                    &format!("n={n} D={dim} floor={floor} θ={:?}", theta.as_slice()),
                );
            }
        }
    }
}

/// K + σn² I on the raw inputs with nalgebra, and the centred targets.
fn dense_system(data: &Dataset, h: &Hyperparameters) -> (DMatrix<f64>, DVector<f64>) {
    let mut ky = se_ard_by_definition(
        data.x(),
        data.x(),
        h.lengthscales.as_slice(),
        h.signal_variance,
    );
    for i in 0..data.len() {
        ky[(i, i)] += h.noise_variance;
    }
    (ky, data.y().add_scalar(-data.y_mean()))
}

#[test]
fn evidence_and_predictions_match_dense_formulas() {
    let mut rng = StdRng::seed_from_u64(5);
    let params = FullGp::params().threads(1).check().unwrap();
    for (n, dim) in [(20, 2), (37, 4)] {
        let data = random_data(n, dim, 100 + n as u64);
        let objective = params.evidence(&data).unwrap();
        let theta = random_theta(dim, &mut rng);
        let h = objective.unpack(&theta).unwrap();
        let (ky, y) = dense_system(&data, &h);
        let chol = ky.clone().cholesky().unwrap();
        let naive = 0.5 * chol.determinant().ln()
            + 0.5 * y.dot(&chol.solve(&y))
            + 0.5 * n as f64 * (2.0 * std::f64::consts::PI).ln();
        let value = objective.evaluate(&theta).unwrap().value;
        assert_relative_eq!(value, naive, max_relative = 1e-10);

        let fitted = params.condition(&data, &theta).unwrap();
        assert_relative_eq!(fitted.neg_log_evidence(), naive, max_relative = 1e-10);
        assert_eq!(fitted.jitter(), 0.0);
        assert_eq!(fitted.training().termination, Termination::NotStarted);

        let xt = DMatrix::from_fn(9, dim, |_, _| rng.random_range(-2.5..2.5));
        let ks = se_ard_by_definition(&xt, data.x(), h.lengthscales.as_slice(), h.signal_variance);
        let inv = ky.try_inverse().unwrap();
        let mean = &ks * &inv * &y;
        // One batch, and batches of 1, 2 and 4 test points (the last one shorter).
        let batches = [1, 2, 4, 9].map(|b| fitted.predict_in_batches(&xt, b).unwrap());
        for pred in std::iter::once(fitted.predict(&xt).unwrap()).chain(batches) {
            for j in 0..9 {
                let k = ks.row(j).transpose();
                let var = h.noise_variance + h.signal_variance - (k.transpose() * &inv * &k)[0];
                assert_relative_eq!(pred.mean[j], mean[j] + data.y_mean(), epsilon = 1e-10);
                assert_relative_eq!(pred.y_variance[j], var, epsilon = 1e-10);
                assert_relative_eq!(pred.f_variance[j], var - h.noise_variance, epsilon = 1e-10);
            }
        }
        assert!(matches!(
            fitted.predict_in_batches(&xt, 0),
            Err(ssgp::Error::InvalidParameter { name: "batch", .. })
        ));
    }
}

fn sinc_problem() -> (Dataset, Dataset) {
    let mut rng = StdRng::seed_from_u64(2010);
    let train = ssgp::data::sinc_data(100, false, 0.05, &mut rng).unwrap();
    let test = ssgp::data::sinc_data(1000, true, 0.05, &mut rng).unwrap();
    (train, test)
}

#[test]
fn sinc_is_learned_and_training_never_worsens_the_evidence() {
    let (train, test) = sinc_problem();
    let fitted = FullGp::params().fit(&train).unwrap();
    let t = fitted.training();
    assert!(t.neg_log_evidence <= t.initial_neg_log_evidence, "{t:?}");
    assert!(t.evaluations > 1 && t.iterations > 0, "{t:?}");
    assert_relative_eq!(
        fitted.neg_log_evidence(),
        t.neg_log_evidence,
        max_relative = 1e-12
    );
    let pred = fitted.predict(test.x()).unwrap();
    let nmse = ssgp::metrics::nmse(test.y(), &pred, train.y_mean()).unwrap();
    assert!(nmse <= 0.03, "NMSE {nmse}, {t:?}");
    // The learned noise is close to the true 0.05².
    assert!(
        (0.0015..0.004).contains(&fitted.noise_variance()),
        "{}",
        fitted.noise_variance()
    );

    // Through the object-safe traits.
    let model: Box<dyn Regressor> = Box::new(FullGp::params().max_evaluations(5));
    assert_eq!(model.name(), "full");
    let boxed: Box<dyn FittedRegressor> = model.fit_boxed(&train).unwrap();
    assert_eq!(boxed.name(), "full");
    assert!(boxed.training().evaluations <= 5);
    assert_eq!(boxed.predict(test.x()).unwrap().len(), 1000);
}

#[test]
fn subset_learns_on_part_and_conditions_on_all() {
    let (train, test) = sinc_problem();
    let params = FullGp::params()
        .hyperparameter_subset(Some(50))
        .seed(3)
        .check()
        .unwrap();
    let fitted = params.fit(&train).unwrap();
    assert_eq!(fitted.len(), 100);
    let t = fitted.training();
    assert!(t.neg_log_evidence <= t.initial_neg_log_evidence);
    // The evidence reported by the model is that of all 100 points at the learned θ.
    let all = FullGp::params().check().unwrap().evidence(&train).unwrap();
    let on_all = all.evaluate(fitted.parameters()).unwrap().value;
    assert_relative_eq!(fitted.neg_log_evidence(), on_all, max_relative = 1e-10);
    assert!((fitted.neg_log_evidence() - t.neg_log_evidence).abs() > 1.0);
    // Conditioning at the same θ gives the same model; the seed is reproducible.
    let again = params.condition(&train, fitted.parameters()).unwrap();
    let pred = fitted.predict(test.x()).unwrap();
    assert_eq!(pred, again.predict(test.x()).unwrap());
    assert_eq!(
        params.fit(&train).unwrap().parameters(),
        fitted.parameters()
    );
    let nmse = ssgp::metrics::nmse(test.y(), &pred, train.y_mean()).unwrap();
    assert!(nmse <= 0.05, "NMSE {nmse}");
    // A subset as large as the data is the plain fit.
    let full = FullGp::params().fit(&train).unwrap();
    let whole = FullGp::params()
        .hyperparameter_subset(Some(100))
        .fit(&train)
        .unwrap();
    assert_eq!(full.parameters(), whole.parameters());
}

#[test]
fn bad_inputs_are_typed_errors() {
    let (train, _) = sinc_problem();
    let fitted = FullGp::params().max_iterations(2).fit(&train).unwrap();
    assert!(matches!(
        fitted.predict(&DMatrix::zeros(3, 2)),
        Err(Error::DimensionMismatch {
            expected: 1,
            found: 2,
            ..
        })
    ));
    let mut nan = DMatrix::zeros(3, 1);
    nan[(1, 0)] = f64::NAN;
    assert!(matches!(
        fitted.predict(&nan),
        Err(Error::NonFinite { row: 1, .. })
    ));
    assert!(matches!(
        fitted.predict(&DMatrix::zeros(0, 1)),
        Err(Error::EmptyData { .. })
    ));

    let mut x = DMatrix::from_fn(10, 2, |i, _| i as f64);
    x.column_mut(1).fill(4.0);
    let constant = Dataset::new(x, DVector::from_fn(10, |i, _| (i as f64).sin())).unwrap();
    let ignoring = FullGp::params().fit(&constant).unwrap();
    assert_eq!(ignoring.training().ignored_inputs, vec![1]);
    assert_eq!(ignoring.lengthscales()[1], f64::INFINITY);
    assert_eq!(ignoring.parameters().len(), 1 + 2);

    for size in [0, 101] {
        assert!(matches!(
            FullGp::params()
                .hyperparameter_subset(Some(size))
                .fit(&train),
            Err(Error::InvalidParameter {
                name: "hyperparameter_subset",
                ..
            })
        ));
    }
    assert!(FullGp::params()
        .hyperparameter_subset(Some(0))
        .check()
        .is_err());
    assert!(FullGp::params().noise_floor(-1.0).check().is_err());
    assert!(FullGp::params().max_evaluations(0).check().is_err());
    assert!(FullGp::params()
        .initial_lengthscales(DVector::from_vec(vec![0.0]))
        .check()
        .is_err());
    assert!(matches!(
        FullGp::params()
            .initial_lengthscales(DVector::from_vec(vec![1.0, 1.0]))
            .fit(&train),
        Err(Error::DimensionMismatch { .. })
    ));
    let params = FullGp::params().check().unwrap();
    assert!(matches!(
        params.condition(&train, &DVector::zeros(4)),
        Err(Error::DimensionMismatch { .. })
    ));
    assert!(matches!(
        params.condition(&train, &DVector::from_vec(vec![0.0, f64::NAN, 0.0])),
        Err(Error::NonFinite { row: 1, .. })
    ));
}

/// A subset of fewer than 2 points to learn from is rejected naming the setting (it used to say
/// that every input column is constant), for the full GP's own subset and for the full-GP start
/// of the other models; 2 points are learned from.
#[test]
fn subsets_too_small_to_learn_from_name_their_setting() {
    use ssgp::init::LengthscaleInit;
    let train = ssgp::data::sinc_data(40, false, 0.1, &mut StdRng::seed_from_u64(8)).unwrap();
    for size in [0, 1] {
        let result = FullGp::params()
            .hyperparameter_subset(Some(size))
            .fit(&train);
        match result {
            Err(
                e @ Error::InvalidParameter {
                    name: "hyperparameter_subset",
                    ..
                },
            ) => {
                assert!(e.to_string().contains("at least 2 points"), "{e}");
            }
            other => panic!("{size}: {:?}", other.map(|f| f.noise_variance())),
        }
        let start = LengthscaleInit::FullGpSubset(size);
        let result = ssgp::Ssgp::params(4).lengthscale_init(start).fit(&train);
        assert!(
            matches!(
                result,
                Err(Error::InvalidParameter {
                    name: "initial_lengthscales_from_full_gp",
                    ..
                })
            ),
            "{size}: {:?}",
            result.map(|f| f.noise_variance())
        );
    }
    FullGp::params()
        .hyperparameter_subset(Some(2))
        .max_evaluations(20)
        .fit(&train)
        .unwrap();
}

/// A full GP on fewer than 40 distinct inputs: its LOO checks the error bars at the training
/// inputs, with hyperparameters learned on them, not between them. On generated tables of
/// 6–39 rows (D = 1, 2, 3, 5; smooth and rough; noise 0.01, 0.1, 0.3; seed 1) 85 of 192 fits
/// were bad on test data (NMSE > 1 or mean z² > 2) and 78 of them unflagged (test mean z² up
/// to 1 300); from 45 rows none was bad. Flagged as SSGP's fits are ([`Remedy::FewInputs`]), by distinct
/// inputs: 20 inputs measured three times are 20; 45 distinct ones are enough.
#[test]
fn a_fit_on_fewer_than_forty_inputs_is_flagged() {
    let problem = |n| Problem {
        n,
        dim: 3,
        relevant: 2,
        roughness: Roughness::Rough,
        noise: 0.01,
        seed: 1,
    };
    let few = |inputs| {
        Some(Remedy::FewInputs {
            inputs,
            random_features: false,
        })
    };
    let (train, test) = problem(30).generate(1000).unwrap();
    let fit = FullGp::params().seed(1).fit(&train).unwrap();
    assert_flagged_for_few_inputs(&fit, &test, 30);
    #[cfg(feature = "serde")]
    {
        let json = ssgp::persist::to_json(&fit).unwrap();
        let loaded: ssgp::FittedFullGp = ssgp::persist::from_json(&json).unwrap();
        assert_eq!(loaded.training().remedy, few(30));
    }

    let rows: Vec<usize> = (0..60).map(|i| i % 20).collect();
    let replicated = train.subset(&rows).unwrap();
    let fit = FullGp::params().seed(1).fit(&replicated).unwrap();
    assert_eq!(fit.training().remedy, few(20));

    let (train, _) = problem(45).generate(1).unwrap();
    let fit = FullGp::params().seed(1).fit(&train).unwrap();
    assert!(
        matches!(fit.training().remedy, Some(Remedy::HeldOutRefit { .. })),
        "{:?}",
        fit.training().remedy
    );
    assert!(!fit.training().flags().few_inputs);
}

/// 300 rows of 80 inputs, 3 relevant, noise 0.1, seed 1, with 500 test points.
fn wide_table(roughness: Roughness) -> (Problem, (Dataset, Dataset)) {
    let problem = Problem {
        n: 300,
        dim: 80,
        relevant: 3,
        roughness,
        noise: 0.1,
        seed: 1,
    };
    let tables = problem.generate(500).unwrap();
    (problem, tables)
}

/// On a wide table (300 rows of 80 inputs, 3 relevant) the fit from half ranges connects no
/// rows — every row of 80 inputs is r² ≈ 53 from the others at the start — and called the
/// signal noise (test NMSE 1.00 on both tables); the fit from √D times the half ranges
/// (`full_gp::DISCONNECTED_R2`) learns it (NMSE 0.031 and 0.059). SSGP, whose default start is
/// this full GP on its rows, learns it too (0.026 and 0.079), on the smooth table calibrated
/// and unflagged (test mean z² 0.94). Not asserted, the misses of the error bars that the
/// longer start uncovers: on the rough table SSGP's test mean z² is 2.86 while its 75 held-out
/// rows gave 1.19 (unflagged), and the full GP's is 3.65 and 2.36 while its LOO gave 0.95 and
/// 0.91 — 82 hyperparameters fitted to 300 rows (the full GP's held-out check now flags it:
/// `a_full_gp_overconfident_on_a_wide_table_is_flagged_by_its_refits`).
#[test]
fn a_wide_table_with_few_relevant_inputs_is_learned() {
    use ssgp::ssgp::Ssgp;
    for roughness in [Roughness::Smooth, Roughness::Rough] {
        let (problem, (train, test)) = wide_table(roughness);
        let score = |predictive: ssgp::Predictive| {
            let nmse = ssgp::metrics::nmse(test.y(), &predictive, train.y_mean()).unwrap();
            let z2 = (0..test.len())
                .map(|i| (test.y()[i] - predictive.mean[i]).powi(2) / predictive.y_variance[i])
                .sum::<f64>()
                / test.len() as f64;
            (nmse, z2)
        };
        let full = FullGp::params().fit(&train).unwrap();
        let (nmse, _) = score(full.predict(test.x()).unwrap());
        assert!(nmse < 0.2, "{}: full GP NMSE {nmse}", problem.name());
        let ssgp = Ssgp::params(30).seed(1).fit(&train).unwrap();
        let (nmse, z2) = score(ssgp.predict(test.x()).unwrap());
        assert!(nmse < 0.2, "{}: SSGP NMSE {nmse}", problem.name());
        if roughness == Roughness::Smooth {
            assert!((0.5..1.5).contains(&z2), "{}: z² {z2}", problem.name());
            assert!(!ssgp.training().is_flagged(), "{}", problem.name());
        }
    }
}

/// The held-out check ([`Remedy::HeldOutRefit`]): on 300 rows of 80 inputs, 3 relevant, the
/// full GP's 82 hyperparameters fit its rows so that its LOO vouches for error bars that are
/// too narrow (LOO mean z² 0.95 and 0.91, test 3.65 and 2.36; `held_out_check(false)`, the fit
/// before the check, is unflagged); refitted on 3/4 of the rows four times, each quarter
/// scored once, it is flagged overconfident. The model is the same bits either way.
#[test]
fn a_full_gp_overconfident_on_a_wide_table_is_flagged_by_its_refits() {
    for roughness in [Roughness::Smooth, Roughness::Rough] {
        let (_, (train, test)) = wide_table(roughness);
        let checked = FullGp::params().fit(&train).unwrap();
        let unchecked = FullGp::params().held_out_check(false).fit(&train).unwrap();
        assert_overconfidence_found_by_refits(&checked, &unchecked, (&test, 300));
    }
}
