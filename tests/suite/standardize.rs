//! Standardisation: fits on raw and standardised data agree up to the scaling.

use nalgebra::DMatrix;
use rand::rngs::StdRng;
use rand::SeedableRng;
use ssgp::data::sinc_data;
use ssgp::metrics::{mnlp, nmse};
use ssgp::ssgp::Ssgp;
use ssgp::standardize::{Scaler, Standardized};
use ssgp::{Dataset, FittedRegressor};

fn affine(data: &Dataset, a: f64, b: f64, c: f64, d: f64) -> Dataset {
    Dataset::new(data.x().map(|v| a * v + b), data.y().map(|v| c * v + d)).unwrap()
}

#[test]
fn raw_and_standardised_fits_agree_up_to_the_scaling() {
    let mut rng = StdRng::seed_from_u64(1);
    let train = sinc_data(100, false, 0.05, &mut rng).unwrap();
    let test = sinc_data(400, true, 0.05, &mut rng).unwrap();
    let (a, b, c, d) = (120.0, 700.0, 0.01, 3.0);
    let (train_s, test_s) = (affine(&train, a, b, c, d), affine(&test, a, b, c, d));
    let params = Ssgp::params(10).seed(1).initial_draws(20);
    let raw = params.fit(&train).unwrap();
    let std = Standardized::new(params.clone()).fit(&train_s).unwrap();
    let p_raw = raw.predict(test.x()).unwrap();
    let p_std = std.predict(test_s.x()).unwrap();
    let (n_raw, n_std) = (
        nmse(test.y(), &p_raw, train.y_mean()).unwrap(),
        nmse(test_s.y(), &p_std, train_s.y_mean()).unwrap(),
    );
    let (l_raw, l_std) = (
        mnlp(test.y(), &p_raw).unwrap(),
        mnlp(test_s.y(), &p_std).unwrap() - c.ln(),
    );
    println!("raw NMSE {n_raw:.5} MNLP {l_raw:.4}; standardised NMSE {n_std:.5} MNLP (rescaled) {l_std:.4}");
    // Learned spectral points can settle in either of two nearby optima of sinc's evidence
    // depending on round-off (a 1-ulp change of y does it: here NMSE 0.0228 and 0.0239), so with
    // them both fits are only required to be good; they are compared point by point and by
    // evidence with fixed spectral points, whose optimum round-off does not move.
    for (nmse, mnlp) in [(n_raw, l_raw), (n_std, l_std)] {
        assert!(nmse < 0.03 && mnlp < -1.4, "NMSE {nmse}, MNLP {mnlp}");
    }
    let params = Ssgp::params(20).seed(1).fixed_spectral_points(true);
    let raw = params.fit(&train).unwrap();
    let std = Standardized::new(params.clone()).fit(&train_s).unwrap();
    let p_raw = raw.predict(test.x()).unwrap();
    let p_std = std.predict(test_s.x()).unwrap();
    for j in (0..400).step_by(37) {
        assert!(
            (p_std.mean[j] - (c * p_raw.mean[j] + d)).abs() < 0.02 * c,
            "point {j}"
        );
    }
    // The reported evidence is on the original scale: n·log c apart from the unscaled fit's.
    let shift = train.len() as f64 * c.ln();
    assert!((std.neg_log_evidence() - (raw.neg_log_evidence() + shift)).abs() < 1.0);
    let scaler = Scaler::fit(&train_s).unwrap();
    assert!((scaler.y_mean - (c * train.y_mean() + d)).abs() < 1e-12);
}

/// A standardised model's summary is on the original scale throughout: the calibration
/// check's held-out MNLPs are shifted by log s_y as the LOO diagnostic's is (they were left on
/// the standardised scale, beside a diagnostic on the original one).
#[test]
fn a_standardised_summary_has_every_mnlp_on_the_original_scale() {
    use ssgp::Remedy;
    let mut rng = StdRng::seed_from_u64(12);
    let train = sinc_data(120, false, 0.05, &mut rng).unwrap();
    let y = train.y().map(|v| v * 1e3 + 5.0);
    let train = Dataset::new(train.x().clone(), y).unwrap();
    let fitted = Standardized::new(Ssgp::params(10).seed(1).max_evaluations(60))
        .fit(&train)
        .unwrap();
    let shift = fitted.scaler().y_scale.ln();
    let (outer, inner) = (fitted.training(), fitted.inner().training());
    let mnlps = |r: Option<Remedy>| match r {
        Some(Remedy::HeldOut {
            learned_mnlp,
            random_features_mnlp,
            mean_mnlp,
            ..
        }) => vec![learned_mnlp, random_features_mnlp, mean_mnlp.unwrap()],
        other => panic!("no held-out check: {other:?}"),
    };
    let diagnostic = |s: &ssgp::TrainingSummary| s.diagnostic.unwrap().mnlp;
    assert!((diagnostic(outer) - diagnostic(inner) - shift).abs() < 1e-12);
    for (o, i) in mnlps(outer.remedy).into_iter().zip(mnlps(inner.remedy)) {
        assert!((o - i - shift).abs() < 1e-12, "{o} against {i} + {shift}");
    }
}

#[test]
fn scaler_centres_constant_columns_and_rejects_constant_targets() {
    let x = DMatrix::from_fn(3, 2, |i, j| if j == 0 { i as f64 } else { 2.0 });
    let y = nalgebra::DVector::from_vec(vec![1.0, 2.0, 3.0]);
    let scaler = Scaler::fit(&Dataset::new(x.clone(), y).unwrap()).unwrap();
    assert_eq!((scaler.x_mean[1], scaler.x_scale[1]), (2.0, 1.0));
    // A scaler built by hand with a scale of 0 is an error (it gave ∞ inputs).
    let mut zero = scaler.clone();
    zero.x_scale[0] = 0.0;
    assert!(matches!(
        zero.transform_inputs(&x),
        Err(ssgp::Error::InvalidParameter {
            name: "x_scale",
            ..
        })
    ));
    let flat = nalgebra::DVector::from_element(3, 1.0);
    let x = DMatrix::from_fn(3, 1, |i, _| i as f64);
    assert!(matches!(
        Scaler::fit(&Dataset::new(x, flat).unwrap()),
        Err(ssgp::Error::ConstantTargets { .. })
    ));
}

/// A standardised model samples its joint predictive without the trait in scope, the same
/// samples as through it and as its covariance gives.
#[test]
fn a_standardised_model_samples_jointly_as_the_trait_does() {
    use ssgp::FullGp;
    let x = DMatrix::from_fn(30, 1, |i, _| i as f64 * 50.0);
    let y = x
        .map(|v| (v / 200.0).sin() * 1e3 + 5e3)
        .column(0)
        .into_owned();
    let fitted = Standardized::new(FullGp::params().max_evaluations(20))
        .fit(&Dataset::new(x, y).unwrap())
        .unwrap();
    let xt = DMatrix::from_fn(4, 1, |i, _| 25.0 + i as f64 * 300.0);
    let inherent = fitted.sample_joint(&xt, 3, 7).unwrap();
    let through_trait = FittedRegressor::sample_joint(&fitted, &xt, 3, 7).unwrap();
    let by_covariance = fitted
        .predict_covariance(&xt)
        .unwrap()
        .sample(3, 7)
        .unwrap();
    assert_eq!(inherent, through_trait);
    assert_eq!(inherent, by_covariance);
}
