//! One suite run over every model of the crate (as GPflow's shared tests): shapes, positive
//! variances, variance of y* = latent variance + σn² ≥ σn², training never worsens the evidence,
//! and every bad input gives its error.

use nalgebra::{DMatrix, DVector};
use rand::rngs::StdRng;
use rand::SeedableRng;
use ssgp::data::sinc_data;
use ssgp::ensemble::{Combine, Ensemble};
use ssgp::metrics::nmse;
use ssgp::ssgp::Ssgp;
use ssgp::standardize::Standardized;
use ssgp::{Dataset, Error, Fitc, FullGp, Regressor, Vfe};

fn models() -> Vec<Box<dyn Regressor>> {
    let small = Ssgp::params(6)
        .seed(2)
        .initial_draws(5)
        .max_evaluations(150);
    vec![
        Box::new(small.clone()),
        Box::new(
            Ssgp::params(8)
                .seed(2)
                .initial_draws(5)
                .fixed_spectral_points(true),
        ),
        Box::new(Fitc::params(10).seed(2).max_evaluations(150)),
        Box::new(Vfe::params(10).seed(2).max_evaluations(150)),
        Box::new(FullGp::params().max_evaluations(150)),
        Box::new(Ensemble::restarts(&small, 3, Combine::Mixture)),
        Box::new(Ensemble::restarts(&small, 3, Combine::Best)),
        Box::new(Standardized::new(small)),
    ]
}

#[test]
fn every_model_predicts_well_formed_gaussians() {
    let mut rng = StdRng::seed_from_u64(9);
    let train = sinc_data(60, false, 0.05, &mut rng).unwrap();
    let test = sinc_data(200, true, 0.05, &mut rng).unwrap();
    for model in models() {
        let name = model.name();
        let fitted = model
            .fit_boxed(&train)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(fitted.name(), name);
        let pred = fitted.predict(test.x()).unwrap();
        assert_eq!(
            (
                pred.mean.len(),
                pred.y_variance.len(),
                pred.f_variance.len()
            ),
            (200, 200, 200),
            "{name}"
        );
        let sn2 = fitted.noise_variance();
        assert!(sn2 > 0.0, "{name}: σn² {sn2}");
        for j in 0..200 {
            assert!(pred.f_variance[j] >= 0.0, "{name}");
            assert!(
                pred.y_variance[j] > 0.0 && pred.y_variance[j] >= sn2 * (1.0 - 1e-12),
                "{name}: {} < {sn2}",
                pred.y_variance[j]
            );
            assert!(pred.mean[j].is_finite());
        }
        let t = fitted.training();
        assert!(
            t.neg_log_evidence <= t.initial_neg_log_evidence,
            "{name}: {t:?}"
        );
        assert!(fitted.neg_log_evidence().is_finite());
        let e = nmse(test.y(), &pred, train.y_mean()).unwrap();
        assert!(e < 0.2, "{name}: NMSE {e}");
    }
}

#[test]
fn every_model_rejects_bad_input_with_its_error() {
    let mut rng = StdRng::seed_from_u64(9);
    let train = sinc_data(40, false, 0.05, &mut rng).unwrap();
    let constant_column = Dataset::new(
        DMatrix::from_fn(20, 2, |i, j| if j == 0 { i as f64 } else { 1.0 }),
        DVector::from_fn(20, |i, _| (i as f64).sin()),
    )
    .unwrap();
    let constant_targets = Dataset::new(
        DMatrix::from_fn(20, 1, |i, _| i as f64),
        DVector::from_element(20, 0.5),
    )
    .unwrap();
    let no_varying_input = Dataset::new(
        DMatrix::from_element(20, 2, 1.5),
        DVector::from_fn(20, |i, _| (i as f64).sin()),
    )
    .unwrap();
    for model in models() {
        let name = model.name();
        // A constant column carries no information: the model ignores it, names it, and its
        // predictions do not depend on it (the behaviour replaced `Error::ConstantInput`).
        let fitted = model
            .fit_boxed(&constant_column)
            .unwrap_or_else(|e| panic!("{name}: constant column: {e}"));
        assert_eq!(fitted.training().ignored_inputs, vec![1], "{name}");
        let at = |v: f64| DMatrix::from_fn(7, 2, |i, j| if j == 0 { 2.5 * i as f64 } else { v });
        assert_eq!(
            fitted.predict(&at(1.0)).unwrap(),
            fitted.predict(&at(-40.0)).unwrap(),
            "{name}: a constant column must not change the predictions"
        );
        assert!(
            matches!(
                model.fit_boxed(&no_varying_input),
                Err(Error::EmptyData { .. })
            ),
            "{name}: no varying input"
        );
        assert!(
            matches!(
                model.fit_boxed(&constant_targets),
                Err(Error::ConstantTargets { .. })
            ),
            "{name}: constant targets"
        );
        let fitted = model.fit_boxed(&train).unwrap();
        assert!(
            matches!(
                fitted.predict(&DMatrix::zeros(4, 3)),
                Err(Error::DimensionMismatch { .. })
            ),
            "{name}: wrong D"
        );
        let mut nan = DMatrix::zeros(4, 1);
        nan[(2, 0)] = f64::NAN;
        assert!(
            matches!(fitted.predict(&nan), Err(Error::NonFinite { row: 2, .. })),
            "{name}: NaN"
        );
        let mut inf = DMatrix::zeros(4, 1);
        inf[(1, 0)] = f64::INFINITY;
        assert!(
            matches!(fitted.predict(&inf), Err(Error::NonFinite { .. })),
            "{name}: infinity"
        );
        assert!(
            matches!(
                fitted.predict(&DMatrix::zeros(0, 1)),
                Err(Error::EmptyData { .. })
            ),
            "{name}: no rows"
        );
    }
    assert!(matches!(
        Ssgp::params(0).fit(&train),
        Err(Error::InvalidParameter { .. })
    ));
    assert!(matches!(
        Fitc::params(0).fit(&train),
        Err(Error::InvalidParameter { .. })
    ));
    assert!(matches!(
        Ensemble::new(vec![], Combine::Mixture).fit(&train),
        Err(Error::InvalidParameter { .. })
    ));
}

/// σn² is a lower bound on every predictive variance, exactly (not up to round-off), and nothing
/// is NaN or infinite — far from the data too, and with targets far from 0 and of any scale,
/// where a mixture's ⟨σ² + μ²⟩ − ⟨μ⟩² cancels and a standardised model's σn² is scaled twice.
#[test]
fn variances_are_never_below_the_noise_variance() {
    let mut rng = StdRng::seed_from_u64(5);
    let base = sinc_data(40, false, 0.05, &mut rng).unwrap();
    let test = DMatrix::from_fn(24, 1, |i, _| -30.0 + 2.6 * i as f64);
    for (scale, offset) in [
        (1.0, 1e8),
        (3.7, 0.0),
        (0.013, -2.0),
        (91.0, 5e6),
        (1e-3, 0.5),
    ] {
        let train = Dataset::new(base.x().clone(), base.y().map(|v| scale * v + offset)).unwrap();
        for model in models() {
            let name = model.name();
            let fitted = model.fit_boxed(&train).unwrap();
            let pred = fitted.predict(&test).unwrap();
            let sn2 = fitted.noise_variance();
            for j in 0..test.nrows() {
                assert!(
                    pred.mean[j].is_finite() && pred.y_variance[j].is_finite(),
                    "{name} (×{scale} + {offset}): {} ± {}",
                    pred.mean[j],
                    pred.y_variance[j]
                );
                assert!(
                    pred.y_variance[j] >= sn2 && pred.f_variance[j] >= 0.0,
                    "{name} (×{scale} + {offset}): variance {} < σn² {sn2} at {}",
                    pred.y_variance[j],
                    test[(j, 0)]
                );
            }
        }
    }
}

/// A test point so far away that SSGP's phases overflow is an error naming the row (one whose
/// phases f64 cannot resolve, `features::PHASE_LIMIT`), not a NaN returned as a prediction.
#[test]
fn overflowing_predictions_are_errors_not_nan() {
    let mut rng = StdRng::seed_from_u64(9);
    let train = sinc_data(40, false, 0.05, &mut rng).unwrap();
    let fitted = Ssgp::params(6)
        .seed(2)
        .initial_draws(5)
        .max_evaluations(50)
        .fit(&train)
        .unwrap();
    let far = DMatrix::from_column_slice(3, 1, &[0.5, f64::MAX, 0.0]);
    assert!(
        matches!(
            fitted.predict(&far),
            Err(Error::Scale { ref what }) if what.contains("input row 1")
        ),
        "{:?}",
        fitted.predict(&far)
    );
}

#[test]
fn thread_counts_are_bounded() {
    let mut rng = StdRng::seed_from_u64(9);
    let train = sinc_data(20, false, 0.05, &mut rng).unwrap();
    let too_many = ssgp::params::MAX_THREADS + 1;
    for result in [
        Ssgp::params(4).threads(too_many).fit(&train).err(),
        Fitc::params(4).threads(too_many).fit(&train).err(),
        FullGp::params().threads(1 << 40).fit(&train).err(),
    ] {
        assert!(
            matches!(
                result,
                Some(Error::InvalidParameter {
                    name: "threads",
                    ..
                })
            ),
            "{result:?}"
        );
    }
}

/// Far beyond the data (5e307, where a squared distance overflows to ∞), the full GP and FITC
/// predict their prior — mean ȳ, latent variance σ0² — not a finite value pulled from a NaN.
#[test]
fn kernel_models_far_from_the_data_predict_their_prior() {
    let mut rng = StdRng::seed_from_u64(9);
    let train = sinc_data(40, false, 0.05, &mut rng).unwrap();
    let far = DMatrix::from_column_slice(2, 1, &[5e307, -5e307]);
    let full = FullGp::params().max_evaluations(50).fit(&train).unwrap();
    let fitc = Fitc::params(6)
        .seed(2)
        .max_evaluations(50)
        .fit(&train)
        .unwrap();
    for (name, p, s0) in [
        (
            "full GP",
            full.predict(&far).unwrap(),
            full.signal_variance(),
        ),
        ("FITC", fitc.predict(&far).unwrap(), fitc.signal_variance()),
    ] {
        for j in 0..2 {
            assert_eq!(p.mean[j], train.y_mean(), "{name}");
            assert_eq!(p.f_variance[j], s0, "{name}");
        }
    }
    // Their joint covariance is the prior's too: equal far points covary by σ0², far points
    // apart not at all (both squared norms overflow: the distance is summed directly, where the
    // expansion ‖a‖² + ‖b‖² − 2aᵀb gave ∞ − ∞ and an error).
    let vfe = Vfe::params(6)
        .seed(2)
        .max_evaluations(50)
        .fit(&train)
        .unwrap();
    let pair = DMatrix::from_column_slice(3, 1, &[5e307, 5e307, -5e307]);
    for (name, joint, s0) in [
        (
            "full GP",
            full.predict_covariance(&pair),
            full.signal_variance(),
        ),
        (
            "FITC",
            fitc.predict_covariance(&pair),
            fitc.signal_variance(),
        ),
        ("VFE", vfe.predict_covariance(&pair), vfe.signal_variance()),
    ] {
        let c = joint.unwrap().f_covariance;
        assert_eq!((c[(0, 0)], c[(0, 1)], c[(1, 1)]), (s0, s0, s0), "{name}");
        assert_eq!((c[(0, 2)], c[(1, 2)]), (0.0, 0.0), "{name}");
    }
    // A far point in the batch leaves a near one's prediction as it is alone (up to the
    // round-off of solving for one column or two).
    let near = DMatrix::from_column_slice(1, 1, &[0.5]);
    let both = DMatrix::from_column_slice(2, 1, &[0.5, 5e307]);
    for (name, alone, mixed) in [
        ("full GP", full.predict(&near), full.predict(&both)),
        ("FITC", fitc.predict(&near), fitc.predict(&both)),
    ] {
        let (alone, mixed) = (alone.unwrap(), mixed.unwrap());
        for (a, b) in [
            (alone.mean[0], mixed.mean[0]),
            (alone.y_variance[0], mixed.y_variance[0]),
        ] {
            assert!(
                (a - b).abs() <= 1e-12 * a.abs(),
                "{name}: {a} alone, {b} beside 5e307"
            );
        }
    }
}

/// Targets whose spread is below what variances on their scale can hold in f64 (their squares
/// under 1e-304) are `Error::Scale` naming the spread and the remedy in every model — not
/// "constant targets", which they are not, nor a non-finite objective — and constant targets
/// name their value in a short form.
#[test]
fn every_model_names_targets_too_narrow_for_f64() {
    let mut rng = StdRng::seed_from_u64(9);
    let train = sinc_data(40, false, 0.05, &mut rng).unwrap();
    for scale in [1e-170, 1e-200, 1e-250] {
        let narrow = Dataset::new(train.x().clone(), train.y() * scale).unwrap();
        for model in models() {
            let message = match model.fit_boxed(&narrow) {
                Ok(_) => panic!("{}: fitted targets × {scale:e}", model.name()),
                Err(e) => e.to_string(),
            };
            assert!(
                message.starts_with("the targets' spread")
                    && message.contains("is below what a Gaussian process can model in f64")
                    && message.contains("multiply them by a power of ten"),
                "{} × {scale:e}: {message}",
                model.name()
            );
        }
    }
    let flat = Dataset::new(train.x().clone(), DVector::from_element(40, 2.5e-300)).unwrap();
    for model in models() {
        let message = model.fit_boxed(&flat).err().map(|e| e.to_string());
        assert_eq!(
            message.as_deref(),
            Some(
                "the training targets are constant (every value is 2.5e-300); there is nothing \
                 to regress"
            ),
            "{}",
            model.name()
        );
    }
}

/// FITC's and VFE's gradients square the inputs' differences over the squared lengthscales: an
/// input column whose spread leaves that range of f64 is `Error::Scale` naming the column and
/// the remedy, `Standardized` fits the same data, and VFE fits tiny targets its noise gradient
/// once underflowed on (tr(K − Q)/σn⁴ with σn⁴ below 1e-308).
#[test]
fn inducing_models_name_input_columns_beyond_f64_and_fit_them_standardised() {
    let mut rng = StdRng::seed_from_u64(9);
    let train = sinc_data(40, false, 0.05, &mut rng).unwrap();
    let x = DMatrix::from_fn(40, 2, |i, j| {
        if j == 0 {
            train.x()[(i, 0)]
        } else {
            (i as f64).sin()
        }
    });
    let models: Vec<Box<dyn Regressor>> = vec![
        Box::new(Fitc::params(10).seed(2).max_evaluations(100)),
        Box::new(Vfe::params(10).seed(2).max_evaluations(100)),
    ];
    for scale in [1e-200, 1e-160, 1e160, 1e200] {
        let mut scaled = x.clone();
        scaled.column_mut(1).scale_mut(scale);
        let data = Dataset::new(scaled, train.y().clone()).unwrap();
        for model in &models {
            let error = match model.fit_boxed(&data) {
                Ok(_) => panic!("{}: fitted column 1 × {scale:e}", model.name()),
                Err(e) => e,
            };
            let message = error.to_string();
            assert!(
                matches!(error, Error::Scale { .. })
                    && message.starts_with("input column 1's spread")
                    && message.contains("standardise the inputs"),
                "{} × {scale:e}: {message}",
                model.name()
            );
        }
        let standardised = Standardized::new(Fitc::params(10).seed(2).max_evaluations(100));
        let fitted = standardised.fit_boxed(&data).unwrap();
        let p = fitted.predict(data.x()).unwrap();
        assert!(
            nmse(data.y(), &p, data.y_mean()).unwrap() < 0.1,
            "standardised FITC, column 1 × {scale:e}"
        );
    }
    let vfe = Vfe::params(10).seed(2).max_evaluations(100);
    let tiny = Dataset::new(train.x().clone(), train.y() * 1e-100).unwrap();
    let fitted = vfe.fit_boxed(&tiny).unwrap();
    let p = fitted.predict(tiny.x()).unwrap();
    assert!(nmse(tiny.y(), &p, tiny.y_mean()).unwrap() < 0.1);
}

/// Sizes from the caller that memory cannot hold are [`Error::Allocation`] before any work,
/// never an abort: 2·10⁶ spectral points or inducing inputs (2m×2m or m×m factors of 32–128 TB)
/// when training, conditioning or building the evidence, in every model that takes an m, and
/// more restarts than memory holds.
#[test]
fn sizes_beyond_memory_are_allocation_errors_in_every_model() {
    use ssgp::data::MultiDataset;
    use ssgp::hyperparameters::Hyperparameters;
    use ssgp::params::ParamGuard;
    use ssgp::ssgp::{MultiSsgpHyperparameters, SsgpHyperparameters};
    let data = sinc_data(200, false, 0.1, &mut StdRng::seed_from_u64(3)).unwrap();
    let m = 2_000_000;
    let column = DMatrix::from_fn(m, 1, |i, _| i as f64 / m as f64);
    let hyper = Hyperparameters {
        lengthscales: DVector::from_element(1, 1.0),
        signal_variance: 1.0,
        noise_variance: 0.01,
    };
    let allocation = |what: &str, result: Result<(), Error>| {
        assert!(
            matches!(result, Err(Error::Allocation { .. })),
            "{what}: {result:?}"
        );
    };
    let ssgp = Ssgp::params(m).seed(1);
    allocation("SSGP fit", ssgp.fit(&data).map(drop));
    let valid = ssgp.clone().check().unwrap();
    allocation("SSGP evidence", valid.evidence(&data).map(drop));
    let point = SsgpHyperparameters {
        hyper: hyper.clone(),
        unit_frequencies: column.clone(),
    };
    allocation("SSGP condition", valid.condition(&data, &point).map(drop));
    let outputs = DMatrix::from_fn(200, 2, |i, p| data.y()[i] * (p + 1) as f64);
    let multi = MultiDataset::new(data.x().clone(), outputs).unwrap();
    allocation("multi-output fit", ssgp.fit_multi(&multi).map(drop));
    let shared = MultiSsgpHyperparameters {
        lengthscales: hyper.lengthscales.clone(),
        signal_variances: DVector::from_element(2, 1.0),
        noise_ratio: 0.01,
        unit_frequencies: column.clone(),
    };
    allocation(
        "multi-output condition",
        valid.condition_multi(&multi, &shared).map(drop),
    );

    let fitc = Fitc::params(m).pseudo_inputs(column.clone());
    allocation("FITC fit", fitc.fit(&data).map(drop));
    let theta = DVector::from_fn(3 + m, |i, _| if i < 3 { 0.0 } else { column[i - 3] });
    let valid_fitc = fitc.check().unwrap();
    allocation("FITC evidence", valid_fitc.evidence(&data).map(drop));
    allocation(
        "FITC condition",
        valid_fitc.condition(&data, &theta).map(drop),
    );
    let vfe = Vfe::params(m).inducing_inputs(column);
    allocation("VFE fit", vfe.fit(&data).map(drop));
    allocation(
        "VFE condition",
        vfe.check().unwrap().condition(&data, &theta).map(drop),
    );

    let restarts = Ensemble::restarts(&Ssgp::params(5).seed(1), usize::MAX / 2, Combine::Best);
    allocation("restarts", restarts.fit(&data).map(drop));
}

/// A noise floor far above the targets' variance is rejected when the fit knows that variance,
/// naming `noise_floor` and the variance, in every model that takes one; it used to surface as a
/// Cholesky failure at pivot 0 (SSGP, FITC, VFE) or a failed training that did not name it.
#[test]
fn a_noise_floor_beyond_the_targets_variance_is_named() {
    use ssgp::data::MultiDataset;
    use ssgp::params::{ParamGuard, MAX_NOISE_FLOOR_RATIO};
    let data = sinc_data(60, false, 0.1, &mut StdRng::seed_from_u64(4)).unwrap();
    let floor = 1e300;
    let models: Vec<Box<dyn Regressor>> = vec![
        Box::new(Ssgp::params(4).noise_floor(floor)),
        Box::new(
            Ssgp::params(4)
                .fixed_spectral_points(true)
                .noise_floor(floor),
        ),
        Box::new(Fitc::params(5).noise_floor(floor)),
        Box::new(Vfe::params(5).noise_floor(floor)),
        Box::new(FullGp::params().noise_floor(floor)),
        Box::new(
            FullGp::params()
                .hyperparameter_subset(Some(20))
                .noise_floor(floor),
        ),
    ];
    let named = |what: &str, result: Result<(), Error>| match result {
        Err(
            e @ Error::InvalidParameter {
                name: "noise_floor",
                ..
            },
        ) => {
            let message = e.to_string();
            assert!(
                message.contains("1e300") && message.contains("1e4"),
                "{what}: {message}"
            );
            assert!(message.contains("variance"), "{what}: {message}");
        }
        other => panic!("{what}: {other:?}"),
    };
    for model in &models {
        named(model.name(), model.fit_boxed(&data).map(drop));
    }
    let multi = MultiDataset::new(
        data.x().clone(),
        DMatrix::from_fn(data.len(), 2, |i, p| data.y()[i] * (p + 1) as f64),
    )
    .unwrap();
    named(
        "multi",
        Ssgp::params(4)
            .noise_floor(floor)
            .fit_multi(&multi)
            .map(drop),
    );
    // Each model's evidence checks the floor as its fit does.
    macro_rules! evidence {
        ($params:expr) => {
            $params
                .noise_floor(floor)
                .check()
                .unwrap()
                .evidence(&data)
                .map(drop)
        };
    }
    named("SSGP evidence", evidence!(Ssgp::params(4)));
    named("FITC evidence", evidence!(Fitc::params(5)));
    named("VFE evidence", evidence!(Vfe::params(5)));
    named("full-GP evidence", evidence!(FullGp::params()));
    // At the bound the floor is accepted: the fit calls everything noise.
    let at_bound = MAX_NOISE_FLOOR_RATIO * data.y_variance();
    let fitted = FullGp::params().noise_floor(at_bound).fit(&data).unwrap();
    assert!(fitted.noise_variance() >= at_bound);
}
