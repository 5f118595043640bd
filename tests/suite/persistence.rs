//! Saving and loading every fitted model (feature `serde`): JSON round trips predict bit for bit;
//! each kind of tampering the format must refuse is a typed error; and thousands of randomly
//! mutated files (text and values) either fail to load with an error or load into a model whose
//! predictions are finite, with variances at least its noise variance — never a panic, a hang or
//! an abort.
#![cfg(feature = "serde")]

use nalgebra::{DMatrix, DVector};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::Value;
use ssgp::data::sinc_data;
use ssgp::ensemble::{Combine, Ensemble, FittedEnsemble};
use ssgp::persist::{self, FromSaved, SavedModel, FORMAT_VERSION};
use ssgp::ssgp::Ssgp;
use ssgp::standardize::{FittedStandardized, Standardized};
use ssgp::{
    Dataset, Error, Fitc, FittedFitc, FittedFullGp, FittedRegressor, FittedSsgp, FullGp,
    JointPredictive, Predictive, Regressor, TrainingSummary, Vfe,
};
use std::collections::BTreeMap;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The training data (sinc, D = 1) and a variant with a constant second column (D = 2).
fn data() -> (Dataset, Dataset) {
    let mut rng = StdRng::seed_from_u64(4);
    let train = sinc_data(50, false, 0.05, &mut rng).unwrap();
    let wide = Dataset::new(
        DMatrix::from_fn(
            train.len(),
            2,
            |i, j| {
                if j == 0 {
                    train.x()[(i, 0)]
                } else {
                    3.5
                }
            },
        ),
        train.y().clone(),
    )
    .unwrap();
    (train, wide)
}

/// Fixed test inputs of D columns: inside and beyond the training range (the second column,
/// when there is one, away from its constant training value).
fn test_inputs(dim: usize) -> DMatrix<f64> {
    DMatrix::from_fn(
        13,
        dim,
        |i, j| {
            if j == 0 {
                -3.0 + 0.9 * i as f64
            } else {
                -1.0
            }
        },
    )
}

fn ssgp_params() -> ssgp::SsgpParams {
    Ssgp::params(6).seed(3).initial_draws(5).max_evaluations(60)
}

fn fitc_params() -> ssgp::FitcParams {
    Fitc::params(5).seed(2).max_evaluations(60)
}

fn full_params() -> ssgp::FullGpParams {
    FullGp::params()
        .hyperparameter_subset(Some(30))
        .max_evaluations(60)
}

/// Every mean, variance and latent variance bit for bit.
fn assert_bits(a: &Predictive, b: &Predictive, label: &str) {
    for (what, x, y) in [
        ("mean", &a.mean, &b.mean),
        ("variance", &a.y_variance, &b.y_variance),
        ("latent variance", &a.f_variance, &b.f_variance),
    ] {
        assert_eq!(x.len(), y.len(), "{label}: {what}");
        for (j, (u, v)) in x.iter().zip(y.iter()).enumerate() {
            assert_eq!(u.to_bits(), v.to_bits(), "{label}: {what} {j}: {u} vs {v}");
        }
    }
}

/// Saves `fitted`, loads it back as its own type, as a `SavedModel` and as a
/// `Box<dyn FittedRegressor>`, and checks that all three predict bit for bit as it does, report
/// the same evidence, noise and training summary, and save to the same text; through serde alone
/// too. Returns the JSON.
fn round_trip<M>(fitted: &M, x: &DMatrix<f64>, label: &str) -> String
where
    M: FittedRegressor + FromSaved + serde::Serialize + serde::de::DeserializeOwned,
{
    let json = persist::to_json(fitted).unwrap();
    assert_eq!(serde_json::to_string(fitted).unwrap(), json, "{label}");
    let expected = fitted.predict(x).unwrap();
    let typed: M = persist::from_json(&json).unwrap();
    let through_serde: M = serde_json::from_str(&json).unwrap();
    let saved: SavedModel = persist::from_json(&json).unwrap();
    let boxed: Box<dyn FittedRegressor> = persist::from_json(&json).unwrap();
    let loaded: [(&dyn FittedRegressor, &str); 4] = [
        (&typed, "as its type"),
        (&through_serde, "through serde"),
        (&saved, "as a SavedModel"),
        (boxed.as_ref(), "boxed"),
    ];
    for (model, how) in loaded {
        let label = format!("{label} {how}");
        assert_bits(&expected, &model.predict(x).unwrap(), &label);
        assert_eq!(model.name(), fitted.name(), "{label}");
        assert_eq!(
            model.neg_log_evidence().to_bits(),
            fitted.neg_log_evidence().to_bits(),
            "{label}"
        );
        assert_eq!(
            model.noise_variance().to_bits(),
            fitted.noise_variance().to_bits(),
            "{label}"
        );
        assert_eq!(model.training(), fitted.training(), "{label}");
        assert!(
            model.training().diagnostic.is_some(),
            "{label}: the LOO diagnostic is saved with the model"
        );
        assert_eq!(
            persist::to_json(model).unwrap(),
            json,
            "{label}: saved again"
        );
    }
    json
}

#[test]
fn every_kind_round_trips_bit_for_bit() {
    let (train, wide) = data();
    let (x1, x2) = (test_inputs(1), test_inputs(2));

    let ssgp = ssgp_params().fit(&train).unwrap();
    round_trip(&ssgp, &x1, "SSGP");
    let fixed = ssgp_params()
        .fixed_spectral_points(true)
        .fit(&train)
        .unwrap();
    assert!(fixed.fixed_spectral_points());
    let json = round_trip(&fixed, &x1, "SSGP, fixed spectral points");
    let loaded: FittedSsgp = persist::from_json(&json).unwrap();
    assert!(loaded.fixed_spectral_points());
    assert_eq!(loaded.unit_frequencies(), fixed.unit_frequencies());
    assert_eq!(loaded.parameters(), fixed.parameters());

    // A fit whose σ0², σn² and noise floor the calibration check multiplied by its held-out
    // factor (a near noise-free problem: narrowed).
    let (near_noise_free, _) = ssgp::data::calibration_suite()[12].generate(1).unwrap();
    let rescaled = Ssgp::params(50).seed(1).fit(&near_noise_free).unwrap();
    let factor = rescaled.training().remedy.unwrap().variance_scale();
    assert!(factor < 1.0, "{factor}");
    round_trip(&rescaled, &x1, "SSGP, variances rescaled by the check");

    // FITC on data with a constant column: the ignored column is saved and still ignored.
    let fitc = fitc_params().fit(&wide).unwrap();
    assert_eq!(fitc.training().ignored_inputs, vec![1]);
    let json = round_trip(&fitc, &x2, "FITC");
    let loaded: FittedFitc = persist::from_json(&json).unwrap();
    assert_eq!(loaded.input_columns(), fitc.input_columns());
    assert_eq!(loaded.parameters(), fitc.parameters());

    // The full GP conditions again on load, with the thread count it was fitted with.
    for threads in [0, 1, 2] {
        let full = full_params().threads(threads).fit(&train).unwrap();
        let json = round_trip(&full, &x1, &format!("full GP, {threads} threads"));
        let loaded: FittedFullGp = persist::from_json(&json).unwrap();
        assert_eq!(loaded.threads(), threads);
        assert_eq!(loaded.jitter().to_bits(), full.jitter().to_bits());
        assert_eq!(loaded.conditioning_data(), full.conditioning_data());
    }

    let standardized = Standardized::new(ssgp_params()).fit(&train).unwrap();
    let json = round_trip(&standardized, &x1, "standardised SSGP");
    let loaded: FittedStandardized<FittedSsgp> = persist::from_json(&json).unwrap();
    assert_eq!(loaded.scaler(), standardized.scaler());
    assert_eq!(
        loaded.inner().parameters(),
        standardized.inner().parameters()
    );

    // The benchmark's form: any model behind a scaler, boxed.
    let boxed = Standardized::new(Box::new(fitc_params()) as Box<dyn Regressor>)
        .fit(&wide)
        .unwrap();
    round_trip(&boxed, &x2, "standardised boxed FITC");

    let mixture = Ensemble::restarts(&ssgp_params(), 3, Combine::Mixture)
        .fit(&train)
        .unwrap();
    let json = round_trip(&mixture, &x1, "mixture of SSGPs");
    let loaded: FittedEnsemble<FittedSsgp> = persist::from_json(&json).unwrap();
    assert_eq!(loaded.members().len(), 3);
    assert_eq!(loaded.best_index(), mixture.best_index());

    let best_of = Ensemble::new(
        vec![Box::new(fitc_params()), Box::new(full_params())],
        Combine::Best,
    )
    .fit(&train)
    .unwrap();
    let json = round_trip(&best_of, &x1, "best of FITC and the full GP");
    assert!(matches!(
        persist::from_json::<FittedEnsemble<FittedSsgp>>(&json),
        Err(Error::WrongModelKind {
            expected: "ssgp",
            found: "fitc"
        })
    ));
}

#[test]
fn files_are_written_and_read_with_their_errors() {
    let (train, _) = data();
    let fitted = ssgp_params().fit(&train).unwrap();
    let dir = std::env::temp_dir().join(format!("ssgp-persist-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("model.json");
    persist::save_json(&fitted, &path).unwrap();
    let loaded: FittedSsgp = persist::load_json(&path).unwrap();
    let x = test_inputs(1);
    assert_bits(
        &fitted.predict(&x).unwrap(),
        &loaded.predict(&x).unwrap(),
        "file",
    );
    assert!(matches!(
        persist::load_json::<SavedModel>(dir.join("missing.json")),
        Err(Error::Io { .. })
    ));
    assert!(matches!(
        persist::save_json(&fitted, dir.join("no-such-dir").join("model.json")),
        Err(Error::Write { .. })
    ));
    assert!(matches!(
        persist::load_json::<FittedFitc>(&path),
        Err(Error::WrongModelKind {
            expected: "fitc",
            found: "ssgp"
        })
    ));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A model from outside the crate: it predicts, but cannot be saved, alone or in an ensemble.
struct Constant;

struct FittedConstant(TrainingSummary);

impl Regressor for Constant {
    fn name(&self) -> &'static str {
        "constant"
    }

    fn fit_boxed(&self, _: &Dataset) -> ssgp::Result<Box<dyn FittedRegressor>> {
        Ok(Box::new(FittedConstant(TrainingSummary::untrained(0.0))))
    }
}

impl FittedRegressor for FittedConstant {
    fn name(&self) -> &'static str {
        "constant"
    }

    fn predict(&self, x: &DMatrix<f64>) -> ssgp::Result<Predictive> {
        let n = x.nrows();
        Ok(Predictive {
            mean: DVector::zeros(n),
            y_variance: DVector::from_element(n, 1.0),
            f_variance: DVector::zeros(n),
        })
    }

    fn predict_covariance(&self, x: &DMatrix<f64>) -> ssgp::Result<JointPredictive> {
        let n = x.nrows();
        Ok(JointPredictive {
            mean: DVector::zeros(n),
            f_covariance: DMatrix::zeros(n, n),
            noise_variance: 1.0,
        })
    }

    fn neg_log_evidence(&self) -> f64 {
        0.0
    }

    fn noise_variance(&self) -> f64 {
        1.0
    }

    fn training(&self) -> &TrainingSummary {
        &self.0
    }
}

#[test]
fn models_from_outside_the_crate_are_not_persistable() {
    let (train, _) = data();
    let ensemble = Ensemble::new(
        vec![Box::new(ssgp_params()), Box::new(Constant)],
        Combine::Best,
    )
    .fit(&train)
    .unwrap();
    assert!(matches!(
        persist::to_json(&ensemble),
        Err(Error::NotPersistable { name: "constant" })
    ));
    assert!(serde_json::to_string(&ensemble).is_err());
}

/// The JSON of a model, decoded.
fn value_of(model: &dyn FittedRegressor) -> Value {
    serde_json::from_str(&persist::to_json(model).unwrap()).unwrap()
}

/// Loads a tampered value as any kind of model.
fn load(value: &Value) -> ssgp::Result<SavedModel> {
    persist::from_json(&value.to_string())
}

/// A tampering: what was changed, what loading gave, and the error it should be.
type TamperCase<'a> = (
    &'a str,
    ssgp::Result<SavedModel>,
    &'a dyn Fn(&Error) -> bool,
);

#[test]
fn each_listed_tampering_is_a_typed_error() {
    let (train, _) = data();
    let ssgp = value_of(&ssgp_params().fit(&train).unwrap());
    let fixed = value_of(
        &ssgp_params()
            .fixed_spectral_points(true)
            .fit(&train)
            .unwrap(),
    );
    let fitc = value_of(&fitc_params().fit(&train).unwrap());
    let full = value_of(&full_params().fit(&train).unwrap());
    let standardized = value_of(&Standardized::new(ssgp_params()).fit(&train).unwrap());
    let mixture = value_of(
        &Ensemble::restarts(&ssgp_params(), 2, Combine::Mixture)
            .fit(&train)
            .unwrap(),
    );
    let vfe = value_of(
        &Vfe::params(5)
            .seed(2)
            .max_evaluations(60)
            .fit(&train)
            .unwrap(),
    );
    let mut updated = full_params().fit(&train).unwrap();
    updated
        .update(
            &DMatrix::from_element(2, 1, 0.3),
            &DVector::from_element(2, 0.1),
        )
        .unwrap();
    let updated = value_of(&updated);
    assert!(load(&ssgp).is_ok() && load(&fixed).is_ok() && load(&fitc).is_ok());
    assert!(load(&full).is_ok() && load(&standardized).is_ok());
    assert!(load(&vfe).is_ok() && load(&updated).is_ok());
    let tamper = |base: &Value, path: &str, change: &dyn Fn(&mut Value)| {
        let mut v = base.clone();
        change(v.pointer_mut(path).unwrap_or_else(|| panic!("{path}")));
        load(&v)
    };
    let pop = |v: &mut Value| {
        v.as_array_mut().unwrap().pop();
    };
    let shift = |v: &mut Value| {
        v.as_array_mut().unwrap().remove(0);
    };
    let set = |x: Value| move |v: &mut Value| *v = x.clone();
    let rename = |from: &'static str, to: &'static str| {
        move |v: &mut Value| {
            let fields = v.as_object_mut().unwrap();
            let value = fields.remove(from).unwrap_or_else(|| panic!("{from}"));
            fields.insert(to.into(), value);
        }
    };
    let remove = |field: &'static str| {
        move |v: &mut Value| {
            v.as_object_mut().unwrap().remove(field).unwrap();
        }
    };
    let malformed = |e: &Error| matches!(e, Error::MalformedModel { .. });

    let cases: Vec<TamperCase> = vec![
        (
            "α one entry short",
            tamper(&ssgp, "/model/ssgp/alpha", &pop),
            &|e| {
                matches!(
                    e,
                    Error::DimensionMismatch {
                        what: "SSGP alpha (entries, 2m)",
                        expected: 12,
                        found: 11
                    }
                )
            },
        ),
        (
            "W (Ω = W ⊘ ℓ) one row short",
            tamper(&fixed, "/model/ssgp/fixed_unit_frequencies", &pop),
            &|e| {
                matches!(
                    e,
                    Error::DimensionMismatch {
                        what: "SSGP fixed_unit_frequencies (rows, m)",
                        expected: 6,
                        found: 5
                    }
                )
            },
        ),
        (
            "L replaced by a 2×2",
            tamper(
                &ssgp,
                "/model/ssgp/cholesky_factor",
                &set(serde_json::json!([[1.0, 0.0], [0.5, 1.0]])),
            ),
            &|e| {
                matches!(
                    e,
                    Error::DimensionMismatch {
                        what: "SSGP cholesky_factor (rows, 2m)",
                        expected: 12,
                        found: 2
                    }
                )
            },
        ),
        (
            "L not lower triangular",
            tamper(
                &ssgp,
                "/model/ssgp/cholesky_factor/0/3",
                &set(serde_json::json!(0.25)),
            ),
            &|e| {
                matches!(
                    e,
                    Error::InvalidParameter {
                        name: "cholesky_factor",
                        ..
                    }
                )
            },
        ),
        (
            "L with a negative diagonal entry",
            tamper(
                &ssgp,
                "/model/ssgp/cholesky_factor/4/4",
                &set(serde_json::json!(-0.5)),
            ),
            &|e| {
                matches!(
                    e,
                    Error::InvalidParameter {
                        name: "cholesky_factor",
                        ..
                    }
                )
            },
        ),
        (
            "chunk_rows: 0",
            tamper(&ssgp, "/model/ssgp/chunk_rows", &set(serde_json::json!(0))),
            &|e| {
                matches!(
                    e,
                    Error::InvalidParameter {
                        name: "chunk_rows",
                        ..
                    }
                )
            },
        ),
        (
            "threads: 2^40 (SSGP)",
            tamper(
                &ssgp,
                "/model/ssgp/threads",
                &set(serde_json::json!(1u64 << 40)),
            ),
            &|e| {
                matches!(
                    e,
                    Error::InvalidParameter {
                        name: "threads",
                        ..
                    }
                )
            },
        ),
        (
            "threads: 2^40 (FITC)",
            tamper(
                &fitc,
                "/model/fitc/threads",
                &set(serde_json::json!(1u64 << 40)),
            ),
            &|e| {
                matches!(
                    e,
                    Error::InvalidParameter {
                        name: "threads",
                        ..
                    }
                )
            },
        ),
        (
            "threads: 2^40 (full GP)",
            tamper(
                &full,
                "/model/full_gp/threads",
                &set(serde_json::json!(1u64 << 40)),
            ),
            &|e| {
                matches!(
                    e,
                    Error::InvalidParameter {
                        name: "threads",
                        ..
                    }
                )
            },
        ),
        (
            "θ one entry short",
            tamper(&ssgp, "/model/ssgp/parameters", &pop),
            &|e| {
                matches!(
                    e,
                    Error::DimensionMismatch {
                        what: "SSGP parameters θ",
                        expected: 9,
                        found: 8
                    }
                )
            },
        ),
        (
            "θ without its lengthscale (fixed spectral points)",
            tamper(&fixed, "/model/ssgp/parameters", &shift),
            &|e| {
                matches!(
                    e,
                    Error::DimensionMismatch {
                        what: "SSGP parameters θ",
                        expected: 3,
                        found: 2
                    }
                )
            },
        ),
        (
            "FITC θ one entry short",
            tamper(&fitc, "/model/fitc/parameters", &pop),
            &|e| {
                matches!(
                    e,
                    Error::DimensionMismatch {
                        what: "FITC parameters θ",
                        ..
                    }
                )
            },
        ),
        (
            "lengthscales for two used inputs, θ for one",
            tamper(
                &ssgp,
                "/model/ssgp/input_columns/used",
                &set(serde_json::json!([0, 1])),
            ),
            &|e| {
                matches!(
                    e,
                    Error::DimensionMismatch {
                        expected: 2,
                        found: 1,
                        ..
                    }
                )
            },
        ),
        (
            "input scales of the wrong length",
            tamper(
                &standardized,
                "/model/standardized/scaler/x_scale",
                &set(serde_json::json!([1.0, 1.0])),
            ),
            &|e| {
                matches!(
                    e,
                    Error::DimensionMismatch {
                        what: "standardisation: input scales (entries, D)",
                        ..
                    }
                )
            },
        ),
        (
            "noise_floor: -0.5",
            tamper(
                &ssgp,
                "/model/ssgp/noise_floor",
                &set(serde_json::json!(-0.5)),
            ),
            &|e| {
                matches!(
                    e,
                    Error::InvalidParameter {
                        name: "noise_floor",
                        ..
                    }
                )
            },
        ),
        (
            "noise variance 0 (θ's noise entry −1000, no floor)",
            tamper(&ssgp, "/model/ssgp", &|v| {
                v["parameters"][2] = serde_json::json!(-1000.0);
                v["noise_floor"] = serde_json::json!(0.0);
            }),
            &|e| matches!(e, Error::InvalidParameter { name: "theta", .. }),
        ),
        (
            "a noise_variance entry added (-0.5)",
            tamper(&ssgp, "/model/ssgp", &|v| {
                v.as_object_mut()
                    .unwrap()
                    .insert("noise_variance".into(), serde_json::json!(-0.5));
            }),
            &|e| matches!(e, Error::MalformedModel { reason } if reason.contains("noise_variance")),
        ),
        (
            "y_scale: -0.5",
            tamper(
                &standardized,
                "/model/standardized/scaler/y_scale",
                &set(serde_json::json!(-0.5)),
            ),
            &|e| {
                matches!(
                    e,
                    Error::InvalidParameter {
                        name: "y_scale",
                        ..
                    }
                )
            },
        ),
        (
            "FITC L_A with a zero on its diagonal",
            tamper(
                &fitc,
                "/model/fitc/factor_a/2/2",
                &set(serde_json::json!(0.0)),
            ),
            &|e| {
                matches!(
                    e,
                    Error::InvalidParameter {
                        name: "factor_a",
                        ..
                    }
                )
            },
        ),
        (
            "full GP: one target short",
            tamper(&full, "/model/full_gp/targets", &pop),
            &|e| {
                matches!(
                    e,
                    Error::LengthMismatch {
                        x_rows: 50,
                        y_len: 49
                    }
                )
            },
        ),
        (
            "full GP: jitter retries 2^31",
            tamper(
                &full,
                "/model/full_gp/jitter/retries",
                &set(serde_json::json!(1u64 << 31)),
            ),
            &|e| matches!(e, Error::InvalidParameter { name: "jitter", .. }),
        ),
        (
            "unused column out of range",
            tamper(
                &ssgp,
                "/model/ssgp/input_columns/ignored",
                &set(serde_json::json!([5])),
            ),
            &|e| {
                matches!(
                    e,
                    Error::InvalidParameter {
                        name: "input_columns",
                        ..
                    }
                )
            },
        ),
        (
            "Ω = W ⊘ ℓ overflows (a frequency of 1e300, ℓ = e⁻²⁰)",
            tamper(&ssgp, "/model/ssgp/parameters", &|v| {
                v[0] = serde_json::json!(-20.0);
                v[3] = serde_json::json!(1e300);
            }),
            &|e| {
                matches!(
                    e,
                    Error::NonFinite {
                        what: "SSGP scaled frequencies Ω = W ⊘ ℓ",
                        ..
                    }
                )
            },
        ),
        (
            "α of 1e300s (the mean could overflow)",
            tamper(&ssgp, "/model/ssgp/alpha", &|v| {
                for a in v.as_array_mut().unwrap() {
                    *a = serde_json::json!(1e300);
                }
            }),
            &|e| matches!(e, Error::InvalidParameter { name: "alpha", .. }),
        ),
        (
            "L with an entry of 1e300 below the diagonal (a solve could overflow)",
            tamper(
                &ssgp,
                "/model/ssgp/cholesky_factor/6/2",
                &set(serde_json::json!(-1e300)),
            ),
            &|e| {
                matches!(
                    e,
                    Error::InvalidParameter {
                        name: "cholesky_factor",
                        ..
                    }
                )
            },
        ),
        (
            "y_scale: 1e300 (variances on the original scale could overflow)",
            tamper(
                &standardized,
                "/model/standardized/scaler/y_scale",
                &set(serde_json::json!(1e300)),
            ),
            &|e| {
                matches!(
                    e,
                    Error::InvalidParameter {
                        name: "y_scale",
                        ..
                    }
                )
            },
        ),
        (
            "a mixture member's ȳ = 1e300 (the spread of the means could overflow)",
            tamper(
                &mixture,
                "/model/ensemble/members/1/ssgp/y_mean",
                &set(serde_json::json!(1e300)),
            ),
            &|e| {
                matches!(
                    e,
                    Error::InvalidParameter {
                        name: "members",
                        ..
                    }
                )
            },
        ),
        (
            "an ensemble without members",
            tamper(
                &mixture,
                "/model/ensemble/members",
                &set(serde_json::json!([])),
            ),
            &|e| {
                matches!(
                    e,
                    Error::InvalidParameter {
                        name: "members",
                        ..
                    }
                )
            },
        ),
        (
            "a misspelt field of the LOO diagnostic (it loaded as the default, the flags moved)",
            tamper(
                &ssgp,
                "/model/ssgp/training/diagnostic",
                &rename("honest", "honset"),
            ),
            &malformed,
        ),
        (
            "a misspelt field of the calibration check's record",
            tamper(
                &ssgp,
                "/model/ssgp/training/remedy/HeldOut",
                &rename("mean_kept", "mean_kpet"),
            ),
            &malformed,
        ),
        (
            "a misspelt field of the held-out rows' calibration",
            tamper(
                &ssgp,
                "/model/ssgp/training/remedy/HeldOut/held_out",
                &rename("nmse", "nsme"),
            ),
            &malformed,
        ),
        (
            "VFE's trace tr(K_ff − Q_ff) negative",
            tamper(&vfe, "/model/vfe/trace", &set(serde_json::json!(-1.0))),
            &|e| matches!(e, Error::InvalidParameter { name: "trace", .. }),
        ),
        (
            "an updated full GP's online record without its blocks",
            tamper(&updated, "/model/full_gp", &remove("blocks")),
            &|e| matches!(e, Error::InvalidParameter { name: "online", .. }),
        ),
        (
            "an updated full GP's blocks without its online record",
            tamper(&updated, "/model/full_gp", &remove("online")),
            &|e| matches!(e, Error::InvalidParameter { name: "online", .. }),
        ),
        (
            "another format version",
            tamper(
                &ssgp,
                "/format_version",
                &set(serde_json::json!(FORMAT_VERSION + 1)),
            ),
            &|e| {
                matches!(
                    e,
                    Error::FormatVersion {
                        found,
                        supported: FORMAT_VERSION
                    } if *found == u64::from(FORMAT_VERSION) + 1
                )
            },
        ),
    ];
    for (what, result, expected) in cases {
        match result {
            Err(e) => {
                assert!(expected(&e), "{what}: the wrong error: {e:?}");
                println!("{what}: {e}");
            }
            Ok(_) => panic!("{what}: loaded"),
        }
    }
}

/// The values mutations put in: zero, negative, huge, and an integer of 2⁴⁰ (JSON cannot spell
/// NaN or ∞; those go through the saved forms in the crate's unit tests).
const VALUES: [f64; 10] = [
    0.0,
    -0.0,
    -0.5,
    -1.0,
    1e300,
    -1e300,
    1e30,
    2.5,
    3.0,
    1_099_511_627_776.0,
];

/// A value for a mutation: one of [`VALUES`], the old number changed, or another type.
fn new_value(rng: &mut StdRng, old: Option<f64>) -> Value {
    match (rng.random_range(0..10), old) {
        (0..=4, _) => serde_json::json!(VALUES[rng.random_range(0..VALUES.len())]),
        (5..=6, Some(x)) => {
            let changed = [-x, 2.0 * x, x + 1.0, x * 1e10];
            serde_json::json!(changed[rng.random_range(0..changed.len())])
        }
        (7, _) => serde_json::json!(rng.random_range(0u64..40)),
        (8, _) => serde_json::json!(u64::MAX),
        _ => [
            Value::Null,
            Value::Bool(true),
            Value::String("x".into()),
            serde_json::json!([]),
            serde_json::json!({}),
        ][rng.random_range(0..5)]
        .clone(),
    }
}

/// The JSON pointers of every node of `v`.
fn paths(v: &Value, at: String, out: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                paths(child, format!("{at}/{k}"), out);
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                paths(child, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
    out.push(at);
}

/// One random change of the decoded file: drop or add an entry, shrink or grow an array, put in
/// another value (number or type), or swap two numbers.
fn mutate_value(v: &mut Value, rng: &mut StdRng) {
    let mut all = Vec::new();
    paths(v, String::new(), &mut all);
    let pick = |rng: &mut StdRng, want: &dyn Fn(&Value) -> bool, v: &Value| {
        let fit: Vec<&String> = all
            .iter()
            .filter(|p| v.pointer(p).is_some_and(want))
            .collect();
        (!fit.is_empty()).then(|| fit[rng.random_range(0..fit.len())].clone())
    };
    match rng.random_range(0..6) {
        0 => {
            if let Some(p) = pick(rng, &|x| x.as_object().is_some_and(|m| !m.is_empty()), v) {
                let map = v.pointer_mut(&p).unwrap().as_object_mut().unwrap();
                let key = map
                    .keys()
                    .nth(rng.random_range(0..map.len()))
                    .unwrap()
                    .clone();
                map.remove(&key);
            }
        }
        1 => {
            if let Some(p) = pick(rng, &Value::is_object, v) {
                let keys = ["extra", "noise_variance", "alpha", "threads", "model", "m"];
                let key = keys[rng.random_range(0..keys.len())];
                let value = new_value(rng, None);
                v.pointer_mut(&p)
                    .unwrap()
                    .as_object_mut()
                    .unwrap()
                    .insert(key.into(), value);
            }
        }
        2 => {
            if let Some(p) = pick(rng, &|x| x.as_array().is_some_and(|a| !a.is_empty()), v) {
                let items = v.pointer_mut(&p).unwrap().as_array_mut().unwrap();
                let i = rng.random_range(0..items.len());
                if rng.random_bool(0.5) {
                    items.remove(i);
                } else {
                    let copy = items[i].clone();
                    items.insert(i, copy);
                }
            }
        }
        3 | 4 => {
            if let Some(p) = pick(rng, &Value::is_number, v) {
                let old = v.pointer(&p).and_then(Value::as_f64);
                *v.pointer_mut(&p).unwrap() = new_value(rng, old);
            }
        }
        _ => {
            let (a, b) = (
                pick(rng, &Value::is_number, v),
                pick(rng, &Value::is_number, v),
            );
            if let (Some(a), Some(b)) = (a, b) {
                let (x, y) = (
                    v.pointer(&a).unwrap().clone(),
                    v.pointer(&b).unwrap().clone(),
                );
                *v.pointer_mut(&a).unwrap() = y;
                *v.pointer_mut(&b).unwrap() = x;
            }
        }
    }
}

/// One random change of the text: truncate it, delete, duplicate or insert a character, or
/// replace a number by another.
fn mutate_text(text: &str, rng: &mut StdRng) -> String {
    let cuts: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
    let at = cuts[rng.random_range(0..cuts.len())];
    let next = text[at..].chars().next().map_or(at, |c| at + c.len_utf8());
    match rng.random_range(0..5) {
        0 => text[..at].to_string(),
        1 => format!("{}{}", &text[..at], &text[next..]),
        2 => format!("{}{}", &text[..next], &text[at..]),
        3 => {
            let chars = [',', ']', '}', '[', '{', '"', ':', '0', '-', 'e', '.', '9'];
            format!(
                "{}{}{}",
                &text[..at],
                chars[rng.random_range(0..chars.len())],
                &text[at..]
            )
        }
        _ => {
            // The number token at or after `at`, replaced.
            let is_num = |c: char| c.is_ascii_digit() || "-+.eE".contains(c);
            match text[at..].find(|c: char| c.is_ascii_digit()) {
                Some(off) => {
                    let start = text[..at + off]
                        .rfind(|c: char| !is_num(c))
                        .map_or(0, |i| i + 1);
                    let end = text[at + off..]
                        .find(|c: char| !is_num(c))
                        .map_or(text.len(), |i| at + off + i);
                    let old = text[start..end].parse::<f64>().ok();
                    let new = new_value(rng, old).to_string();
                    format!("{}{}{}", &text[..start], new, &text[end..])
                }
                None => text.to_string(),
            }
        }
    }
}

/// What loading a mutated file gave.
#[derive(Default, Debug)]
struct Tally {
    files: usize,
    loaded: usize,
    errors: BTreeMap<String, usize>,
}

/// Loads `text`; if it loads, predicts at `x` and checks that everything is finite and each
/// variance at least σn², and that saving and loading again predicts the same, bit for bit. A
/// sound SSGP may refuse test inputs whose phases f64 cannot resolve (`Error::Scale`,
/// `features::PHASE_LIMIT`: a mutated scaler can put `x` 10²⁰ of its spreads away): counted as
/// such a refusal, and the model saved and loaded again must refuse them alike.
fn check_mutant(text: &str, x: &DMatrix<f64>, label: &str, tally: &mut Tally) {
    tally.files += 1;
    match persist::from_json::<SavedModel>(text) {
        Err(e) => {
            let kind = format!("{e:?}");
            let kind = kind.split([' ', '(', '{']).next().unwrap_or("").to_string();
            *tally.errors.entry(kind).or_default() += 1;
        }
        Ok(model) => {
            tally.loaded += 1;
            // A mutation may leave a sound model of another input dimension (a column list edited).
            let other;
            let x = if model.dim() == x.ncols() {
                x
            } else {
                other = test_inputs(model.dim());
                &other
            };
            let pred = match model.predict(x) {
                Ok(pred) => pred,
                Err(e @ ssgp::Error::Scale { .. }) if e.to_string().contains("phases") => {
                    let again: SavedModel = persist::from_json(&persist::to_json(&model).unwrap())
                        .unwrap_or_else(|e| panic!("{label}: saved again, it does not load: {e}"));
                    assert_eq!(
                        again.predict(x).unwrap_err().to_string(),
                        e.to_string(),
                        "{label}"
                    );
                    *tally.errors.entry("refused: phases".into()).or_default() += 1;
                    return;
                }
                Err(e) => panic!("{label}: a loaded model failed to predict: {e}\n{text}"),
            };
            let sn2 = model.noise_variance();
            assert!(sn2 > 0.0 && sn2.is_finite(), "{label}: σn² {sn2}\n{text}");
            for j in 0..x.nrows() {
                let (m, v, l) = (pred.mean[j], pred.y_variance[j], pred.f_variance[j]);
                assert!(
                    m.is_finite() && v.is_finite() && l.is_finite() && l >= 0.0 && v >= sn2,
                    "{label}: point {j}: mean {m}, variance {v}, latent {l}, σn² {sn2}\n{text}"
                );
            }
            let again: SavedModel = persist::from_json(&persist::to_json(&model).unwrap())
                .unwrap_or_else(|e| panic!("{label}: saved again, it does not load: {e}"));
            assert_bits(&pred, &again.predict(x).unwrap(), label);
        }
    }
}

/// Mutated files per model kind: half by text, half by decoded value.
const MUTANTS_PER_KIND: usize = 1000;

#[test]
fn mutated_files_load_as_errors_or_sound_models() {
    let (done, finished) = mpsc::channel();
    let worker = std::thread::spawn(move || {
        let result = std::panic::catch_unwind(mutate_all);
        done.send(()).ok();
        result
    });
    // A hang is a failure too: the whole run takes a few seconds.
    let limit = Duration::from_secs(120);
    assert!(
        finished.recv_timeout(limit).is_ok(),
        "loading mutated files did not finish within {limit:?}"
    );
    if let Err(panic) = worker.join().unwrap() {
        std::panic::resume_unwind(panic);
    }
}

fn mutate_all() {
    let start = Instant::now();
    let (train, wide) = data();
    let kinds: Vec<(&str, Box<dyn FittedRegressor>)> = vec![
        ("ssgp", ssgp_params().fit_boxed(&train).unwrap()),
        (
            "ssgp-fixed",
            ssgp_params()
                .fixed_spectral_points(true)
                .fit_boxed(&train)
                .unwrap(),
        ),
        ("fitc", fitc_params().fit_boxed(&wide).unwrap()),
        ("full", full_params().fit_boxed(&train).unwrap()),
        (
            "standardized-ssgp",
            Box::new(Standardized::new(ssgp_params()).fit(&train).unwrap()),
        ),
        (
            "mixture-ssgp",
            Box::new(
                Ensemble::restarts(&ssgp_params(), 3, Combine::Mixture)
                    .fit(&train)
                    .unwrap(),
            ),
        ),
        (
            "best-of-fitc-full",
            Box::new(
                Ensemble::new(
                    vec![Box::new(fitc_params()), Box::new(full_params())],
                    Combine::Best,
                )
                .fit(&train)
                .unwrap(),
            ),
        ),
    ];
    let mut rng = StdRng::seed_from_u64(2024);
    let mut total = 0;
    for (name, model) in &kinds {
        let kind_start = Instant::now();
        let text = persist::to_json(model.as_ref()).unwrap();
        let value: Value = serde_json::from_str(&text).unwrap();
        let x = test_inputs(persist::from_json::<SavedModel>(&text).unwrap().dim());
        let mut tally = Tally::default();
        for i in 0..MUTANTS_PER_KIND {
            let mutant = if i % 2 == 0 {
                let mut t = mutate_text(&text, &mut rng);
                if rng.random_bool(0.3) {
                    t = mutate_text(&t, &mut rng);
                }
                t
            } else {
                let mut v = value.clone();
                for _ in 0..rng.random_range(1..=3) {
                    mutate_value(&mut v, &mut rng);
                }
                v.to_string()
            };
            check_mutant(&mutant, &x, &format!("{name} mutant {i}"), &mut tally);
        }
        println!(
            "{name}: {} files, {} loaded, errors {:?} ({:.2?})",
            tally.files,
            tally.loaded,
            tally.errors,
            kind_start.elapsed()
        );
        assert!(tally.files >= 300, "{name}");
        // Both outcomes happen: the mutations reach past the parser into the checks, and some
        // leave a model that loads.
        assert!(
            tally.loaded >= tally.files / 20 && tally.loaded < tally.files,
            "{name}: {tally:?}"
        );
        let checked = tally
            .errors
            .keys()
            .filter(|k| *k != "MalformedModel")
            .count();
        assert!(checked >= 2, "{name}: only {:?}", tally.errors);
        total += tally.files;
    }
    assert!(total >= 2000, "{total} mutated files");
    println!("{total} mutated files in {:.2?}", start.elapsed());
}

/// The held-out check's variance factor in a saved SSGP: a file without it (written before the
/// factor existed) loads with factor 1, and a factor that is not positive is refused.
#[test]
fn a_held_out_remedy_loads_its_variance_factor() {
    let (near_noise_free, _) = ssgp::data::calibration_suite()[12].generate(1).unwrap();
    let fitted = Ssgp::params(50).seed(1).fit(&near_noise_free).unwrap();
    let json: Value = serde_json::from_str(&persist::to_json(&fitted).unwrap()).unwrap();
    let pointer = "/model/ssgp/training/remedy/HeldOut";
    let factor = json.pointer(pointer).unwrap()["variance_scale"]
        .as_f64()
        .unwrap();
    assert!(factor < 1.0, "{json}");
    let mut without = json.clone();
    let held_out = without
        .pointer_mut(pointer)
        .unwrap()
        .as_object_mut()
        .unwrap();
    assert!(held_out.remove("variance_scale").is_some());
    let loaded: FittedSsgp = persist::from_json(&without.to_string()).unwrap();
    assert_eq!(loaded.training().remedy.unwrap().variance_scale(), 1.0);
    // The held-out rows' calibration round-trips, and a file without it (written before it was
    // recorded) loads without it, its flags the LOO's.
    let calibration = fitted.training().held_out().unwrap();
    let loaded: FittedSsgp = persist::from_json(&json.to_string()).unwrap();
    assert_eq!(loaded.training().held_out(), Some(calibration));
    assert_eq!(loaded.training().flags(), fitted.training().flags());
    let mut older = json.clone();
    let remedy = older.pointer_mut(pointer).unwrap().as_object_mut().unwrap();
    assert!(remedy.remove("held_out").is_some());
    let loaded: FittedSsgp = persist::from_json(&older.to_string()).unwrap();
    assert_eq!(loaded.training().held_out(), None);
    assert_eq!(
        loaded.training().flags(),
        loaded.training().diagnostic.unwrap().flags()
    );
    let mut no_rows = json.clone();
    no_rows.pointer_mut(pointer).unwrap()["held_out"]["rows"] = serde_json::json!(0);
    assert!(matches!(
        persist::from_json::<FittedSsgp>(&no_rows.to_string()),
        Err(Error::InvalidParameter { .. })
    ));
    let mut negative = json;
    negative.pointer_mut(pointer).unwrap()["variance_scale"] = serde_json::json!(-2.0);
    assert!(matches!(
        persist::from_json::<FittedSsgp>(&negative.to_string()),
        Err(Error::InvalidParameter { .. })
    ));
}

/// What the lengthscale start of a held-out check learned from the rows (format 8) is saved
/// with the model, so a loaded fit keeps its flag: n = 50, D = 50, whose start learned 52
/// hyperparameters on the 50 rows. A file without the two fields (written before) loads with
/// 0 and no such flag; one field 0 and the other not is refused.
#[test]
fn a_held_out_remedy_loads_its_lengthscale_start() {
    let problem = &ssgp::data::calibration_suite()[4];
    assert_eq!(problem.name(), "n50-D50-r3-rough-0.3");
    let (train, _) = problem.generate(1).unwrap();
    let fitted = Ssgp::params(50).seed(1).fit(&train).unwrap();
    let remedy = fitted.training().remedy.unwrap();
    assert!(
        matches!(
            remedy,
            ssgp::Remedy::HeldOut {
                start_hyperparameters: 52,
                start_rows: 50,
                ..
            }
        ),
        "{remedy:?}"
    );
    // The training mean does not depend on the lengthscales (Remedy::start_overfits).
    assert_eq!(
        fitted.training().flags().start_overfits,
        !remedy.mean_kept()
    );
    let json: Value = serde_json::from_str(&persist::to_json(&fitted).unwrap()).unwrap();
    let loaded: FittedSsgp = persist::from_json(&json.to_string()).unwrap();
    assert_eq!(loaded.training().remedy, Some(remedy));
    assert_eq!(loaded.training().flags(), fitted.training().flags());
    let pointer = "/model/ssgp/training/remedy/HeldOut";
    let mut older = json.clone();
    let fields = older.pointer_mut(pointer).unwrap().as_object_mut().unwrap();
    assert!(fields.remove("start_hyperparameters").is_some());
    assert!(fields.remove("start_rows").is_some());
    let loaded: FittedSsgp = persist::from_json(&older.to_string()).unwrap();
    assert!(!loaded.training().flags().start_overfits);
    let mut half = json;
    half.pointer_mut(pointer).unwrap()["start_rows"] = serde_json::json!(0);
    assert!(matches!(
        persist::from_json::<FittedSsgp>(&half.to_string()),
        Err(Error::InvalidParameter { .. })
    ));
}

/// A fit on too few distinct inputs for the held-out check (format 9's `Remedy::FewInputs`)
/// keeps its remedy and its flag through a save and load; a record of no distinct inputs is
/// refused.
#[test]
fn a_fit_on_few_distinct_inputs_loads_its_flag() {
    let x = DMatrix::from_fn(60, 1, |i, _| (i % 3) as f64);
    let y = DVector::from_fn(60, |i, _| {
        ((i % 3) as f64).sin() + 0.05 * ((i * 7) % 5) as f64
    });
    let fitted = Ssgp::params(5)
        .seed(1)
        .fit(&Dataset::new(x, y).unwrap())
        .unwrap();
    let remedy = fitted.training().remedy.unwrap();
    assert!(
        matches!(remedy, ssgp::Remedy::FewInputs { inputs: 3, .. }),
        "{remedy:?}"
    );
    let json: Value = serde_json::from_str(&persist::to_json(&fitted).unwrap()).unwrap();
    let loaded: FittedSsgp = persist::from_json(&json.to_string()).unwrap();
    assert_eq!(loaded.training().remedy, Some(remedy));
    assert!(loaded.training().flags().few_inputs);
    let mut none = json;
    none.pointer_mut("/model/ssgp/training/remedy/FewInputs")
        .unwrap()["inputs"] = serde_json::json!(0);
    assert!(matches!(
        persist::from_json::<FittedSsgp>(&none.to_string()),
        Err(Error::InvalidParameter { .. })
    ));
}

/// The held-out check's early-stopping budget in a saved SSGP: it round-trips, a file without it
/// (written before early stopping) loads with none, and a budget of no evaluations is refused.
/// Its `random_features_by_margin` (format 7) round-trips too and reads false where absent.
#[test]
fn a_held_out_remedy_loads_its_learned_budget() {
    let problem = &ssgp::data::calibration_suite()[19];
    assert_eq!(problem.name(), "n300-D1-r1-rough-0.1");
    let (train, _) = problem.generate(1).unwrap();
    let fitted = Ssgp::params(50).seed(1).fit(&train).unwrap();
    let budget = |m: &FittedSsgp| match m.training().remedy {
        Some(ssgp::Remedy::HeldOut { learned_budget, .. }) => learned_budget,
        other => panic!("{other:?}"),
    };
    assert!(budget(&fitted).is_some());
    let json: Value = serde_json::from_str(&persist::to_json(&fitted).unwrap()).unwrap();
    let loaded: FittedSsgp = persist::from_json(&json.to_string()).unwrap();
    assert_eq!(loaded.training().remedy, fitted.training().remedy);
    let pointer = "/model/ssgp/training/remedy/HeldOut";
    let mut older = json.clone();
    let remedy = older.pointer_mut(pointer).unwrap().as_object_mut().unwrap();
    assert!(remedy.remove("learned_budget").is_some());
    assert_eq!(
        remedy.remove("random_features_by_margin"),
        Some(Value::Bool(false))
    );
    let loaded: FittedSsgp = persist::from_json(&older.to_string()).unwrap();
    assert_eq!(budget(&loaded), None);
    assert_eq!(
        loaded.training().remedy.map(|r| r.random_features()),
        fitted.training().remedy.map(|r| r.random_features())
    );
    let mut by_margin = json.clone();
    by_margin.pointer_mut(pointer).unwrap()["random_features_by_margin"] = Value::Bool(true);
    let loaded: FittedSsgp = persist::from_json(&by_margin.to_string()).unwrap();
    assert!(matches!(
        loaded.training().remedy,
        Some(ssgp::Remedy::HeldOut {
            random_features_by_margin: true,
            ..
        })
    ));
    assert!(loaded.training().remedy.unwrap().random_features());
    let mut none = json;
    none.pointer_mut(pointer).unwrap()["learned_budget"] = serde_json::json!(0);
    assert!(matches!(
        persist::from_json::<FittedSsgp>(&none.to_string()),
        Err(Error::InvalidParameter { .. })
    ));
}
