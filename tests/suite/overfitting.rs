//! SSGP's failure mode of paper §5.4 — good means, overconfident variances on a small data set
//! with many spectral points — and the remedies: a mixture of restarts and a data-estimated noise
//! bound; the restarts' spread flags the failure.

use nalgebra::{DMatrix, DVector};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use ssgp::data::sinc_data;
use ssgp::ensemble::{Combine, Ensemble};
use ssgp::metrics::{calibration, mnlp, nmse};
use ssgp::ssgp::{CalibrationGuard, NoiseBound, Ssgp, SsgpParams};
use ssgp::Dataset;

/// A smooth, almost noise-free 4-input function (noise variance 3.3e-5), like the Pendulum set.
fn smooth(n: usize, rng: &mut StdRng) -> Dataset {
    let x = DMatrix::from_fn(n, 4, |_, _| rng.random_range(-1.0..1.0));
    let y = DVector::from_fn(n, |i, _| {
        let r = x.row(i);
        f64::sin(2.0 * r[0]) * f64::cos(1.5 * r[1])
            + r[2] * r[3]
            + 0.5 * r[2] * r[2]
            + 0.01 * rng.random_range(-1.0..1.0)
    });
    Dataset::new(x, y).unwrap()
}

fn problem() -> (Dataset, Dataset, SsgpParams) {
    let mut rng = StdRng::seed_from_u64(3);
    let train = smooth(40, &mut rng);
    let test = smooth(500, &mut rng);
    // 60 spectral points (120 basis functions, 304 parameters) for 40 points, in the paper's
    // parametrisation (no noise floor, no calibration check): §5.4's failure. The crate's
    // default floor (1e-4·var y) alone keeps this fit's MNLP near −1 (see the test below); the
    // default check alone keeps the random-feature fit (NMSE 0.058, MNLP −0.61).
    let params = Ssgp::params(60)
        .calibration(CalibrationGuard::Off)
        .relative_noise_floor(0.0)
        .initial_draws(10)
        .max_evaluations(2000)
        .max_iterations(1000);
    (train, test, params)
}

#[test]
fn single_fit_is_overconfident_and_the_remedies_restore_calibration() {
    let (train, test, params) = problem();
    let single = params.clone().seed(1).fit(&train).unwrap();
    let pred = single.predict(test.x()).unwrap();
    let (nmse_1, mnlp_1) = (
        nmse(test.y(), &pred, train.y_mean()).unwrap(),
        mnlp(test.y(), &pred).unwrap(),
    );
    println!(
        "single: NMSE {nmse_1:.4} MNLP {mnlp_1:.2} σn² {:.2e}",
        single.noise_variance()
    );
    assert!(nmse_1 < 0.05, "the means are good: NMSE {nmse_1}");
    assert!(
        mnlp_1 > 10.0,
        "the variances are overconfident: MNLP {mnlp_1}"
    );

    let mixture = Ensemble::restarts(&params, 8, Combine::Mixture)
        .fit(&train)
        .unwrap();
    let pred = mixture.predict(test.x()).unwrap();
    let (nmse_m, mnlp_m) = (
        nmse(test.y(), &pred, train.y_mean()).unwrap(),
        mnlp(test.y(), &pred).unwrap(),
    );
    println!("mixture of 8: NMSE {nmse_m:.4} MNLP {mnlp_m:.2}");
    assert!(mnlp_m < 0.0, "mixture MNLP {mnlp_m}");
    let c = calibration(test.y(), &pred).unwrap();
    println!("mixture calibration: {c:?}");
    assert!(c.within_two_sd > 0.7, "{c:?}");
    assert!(nmse_m < 0.05);
    let spread = mixture.spread(test.x()).unwrap().ratio();
    println!("spread between restarts / within: {spread:.1}");
    assert!(
        spread > 10.0,
        "the restarts disagree far beyond their error bars: {spread}"
    );

    let best = Ensemble::restarts(&params, 4, Combine::Best)
        .fit(&train)
        .unwrap();
    let member_best = best
        .members()
        .iter()
        .map(|m| m.neg_log_evidence())
        .fold(f64::INFINITY, f64::min);
    assert_eq!(ssgp::FittedRegressor::neg_log_evidence(&best), member_best);

    let bounded = params
        .clone()
        .seed(1)
        .noise_bound(NoiseBound::FixedSpectralPoints { fraction: 1.0 })
        .fit(&train)
        .unwrap();
    let pred = bounded.predict(test.x()).unwrap();
    let (nmse_b, mnlp_b) = (
        nmse(test.y(), &pred, train.y_mean()).unwrap(),
        mnlp(test.y(), &pred).unwrap(),
    );
    println!(
        "noise bound {:.2e}: NMSE {nmse_b:.4} MNLP {mnlp_b:.2} σn² {:.2e}",
        bounded.noise_floor(),
        bounded.noise_variance()
    );
    assert!(bounded.noise_floor() > 1e-6);
    assert!(bounded.noise_variance() >= bounded.noise_floor());
    // The bound (an underestimate here: 9e-6 against a true 3.3e-5) does not reach calibration on
    // its own, but cuts the overconfidence by well over an order of magnitude.
    assert!(
        mnlp_b < 0.1 * mnlp_1,
        "bounded MNLP {mnlp_b} against {mnlp_1} unbounded"
    );
}

#[test]
fn restarts_agree_where_ssgp_does_not_overfit() {
    let mut rng = StdRng::seed_from_u64(1);
    let train = sinc_data(100, false, 0.05, &mut rng).unwrap();
    let test = sinc_data(300, true, 0.05, &mut rng).unwrap();
    let fitted = Ensemble::restarts(&Ssgp::params(10).initial_draws(20), 4, Combine::Mixture)
        .fit(&train)
        .unwrap();
    let spread = fitted.spread(test.x()).unwrap().ratio();
    println!("sinc spread ratio {spread:.3}");
    assert!(spread < 1.0, "{spread}");
    let c = calibration(test.y(), &fitted.predict(test.x()).unwrap()).unwrap();
    println!("sinc calibration: {c:?}");
    assert!(
        (c.within_two_sd - 0.954).abs() < 0.05 && (c.mean_squared_z - 1.0).abs() < 0.3,
        "{c:?}"
    );
    assert_eq!(fitted.members().len(), 4);
}

/// The default noise floor (1e-4·var y) keeps §5.4's single overfitted fit from collapsing its
/// noise: the same fit is no longer overconfident.
#[test]
fn the_default_noise_floor_keeps_the_single_fit_calibrated() {
    let (train, test, params) = problem();
    let floored = params.relative_noise_floor(ssgp::params::DEFAULT_RELATIVE_NOISE_FLOOR);
    let fitted = floored.seed(1).fit(&train).unwrap();
    let pred = fitted.predict(test.x()).unwrap();
    let (nmse_1, mnlp_1) = (
        nmse(test.y(), &pred, train.y_mean()).unwrap(),
        mnlp(test.y(), &pred).unwrap(),
    );
    println!(
        "default floor: NMSE {nmse_1:.4} MNLP {mnlp_1:.2} σn² {:.2e}",
        fitted.noise_variance()
    );
    assert!(
        nmse_1 < 0.05 && mnlp_1 < 0.0,
        "NMSE {nmse_1}, MNLP {mnlp_1}"
    );
}
