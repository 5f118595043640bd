//! Ensembles: the mixture's moments against ones computed by hand from the members' predictions,
//! best-of against its member, the spread diagnostic.

use approx::assert_relative_eq;
use nalgebra::DMatrix;
use rand::rngs::StdRng;
use rand::SeedableRng;
use ssgp::data::sinc_data;
use ssgp::ensemble::{Combine, Ensemble};
use ssgp::{Fitc, FullGp, Regressor, Ssgp};

/// Three models that disagree: a full GP, a small FITC and a small SSGP.
fn members() -> Vec<Box<dyn Regressor>> {
    vec![
        Box::new(FullGp::params().max_evaluations(60)),
        Box::new(Fitc::params(4).seed(1).max_evaluations(40)),
        Box::new(Ssgp::params(3).seed(1).initial_draws(2).max_evaluations(40)),
    ]
}

#[test]
fn mixture_moments_are_the_members_average_plus_their_disagreement() {
    let mut rng = StdRng::seed_from_u64(4);
    let train = sinc_data(50, false, 0.05, &mut rng).unwrap();
    let xs = DMatrix::from_column_slice(5, 1, &[-9.0, -2.0, 0.3, 1.7, 12.0]);
    let mixture = Ensemble::new(members(), Combine::Mixture)
        .fit(&train)
        .unwrap();
    let pred = mixture.predict(&xs).unwrap();
    let spread = mixture.spread(&xs).unwrap();
    let each: Vec<_> = mixture
        .members()
        .iter()
        .map(|m| m.predict(&xs).unwrap())
        .collect();
    let mut disagreement = 0.0f64;
    for j in 0..5 {
        let mu: Vec<f64> = each.iter().map(|p| p.mean[j]).collect();
        let mean = (mu[0] + mu[1] + mu[2]) / 3.0;
        let between =
            ((mu[0] - mean).powi(2) + (mu[1] - mean).powi(2) + (mu[2] - mean).powi(2)) / 3.0;
        let within = (each[0].y_variance[j] + each[1].y_variance[j] + each[2].y_variance[j]) / 3.0;
        let latent = (each[0].f_variance[j] + each[1].f_variance[j] + each[2].f_variance[j]) / 3.0;
        assert_relative_eq!(pred.mean[j], mean, max_relative = 1e-14);
        assert_relative_eq!(pred.y_variance[j], within + between, max_relative = 1e-14);
        assert_relative_eq!(pred.f_variance[j], latent + between, max_relative = 1e-14);
        assert_relative_eq!(spread.between[j], between, max_relative = 1e-14);
        assert_relative_eq!(spread.within[j], within, max_relative = 1e-14);
        disagreement = disagreement.max(between / within);
    }
    // The members do disagree somewhere, so the disagreement term is exercised.
    assert!(disagreement > 1e-3, "members agree: {disagreement:e}");
    let noise: f64 = mixture.members().iter().map(|m| m.noise_variance()).sum();
    assert_relative_eq!(
        ssgp::FittedRegressor::noise_variance(&mixture),
        noise / 3.0,
        max_relative = 1e-14
    );
}

#[test]
fn best_of_predicts_as_its_member_with_the_lowest_negative_log_evidence() {
    let mut rng = StdRng::seed_from_u64(4);
    let train = sinc_data(50, false, 0.05, &mut rng).unwrap();
    let xs = DMatrix::from_column_slice(3, 1, &[-2.0, 0.3, 1.7]);
    let best = Ensemble::new(members(), Combine::Best).fit(&train).unwrap();
    let values: Vec<f64> = best
        .members()
        .iter()
        .map(|m| m.neg_log_evidence())
        .collect();
    let lowest = (0..3)
        .min_by(|&a, &b| values[a].total_cmp(&values[b]))
        .unwrap();
    assert_eq!(best.best_index(), lowest);
    assert_eq!(
        best.predict(&xs).unwrap(),
        best.members()[lowest].predict(&xs).unwrap()
    );
}

/// A member from outside the crate whose results have one row too few (a bug in the user's
/// model): the mixture's predictions are a `DimensionMismatch`, where adding its vectors to the
/// others' panicked; one whose variances are 0 is an `InvalidParameter`, where the spread's
/// ratio came out NaN. One whose joint predictive has one row too many (agreeing with itself)
/// and whose gradients have one column too many: the mixture's joint samples and a
/// standardised model's gradients are a `DimensionMismatch`, where both panicked.
#[test]
fn a_member_with_results_of_the_wrong_shape_is_an_error() {
    use nalgebra::DVector;
    use ssgp::standardize::Standardized;
    use ssgp::{
        Dataset, Error, FittedRegressor, JointPredictive, Predictive, PredictiveGradients,
        TrainingSummary,
    };
    /// One row too few, or (`flat`) variances of 0, or (`long`) a joint predictive of one row
    /// too many and gradients of one column too many.
    struct Short {
        flat: bool,
        long: bool,
    }
    struct FittedShort(TrainingSummary, bool, bool);
    impl Regressor for Short {
        fn name(&self) -> &'static str {
            "short"
        }
        fn fit_boxed(&self, _: &Dataset) -> ssgp::Result<Box<dyn FittedRegressor>> {
            Ok(Box::new(FittedShort(
                TrainingSummary::untrained(0.0),
                self.flat,
                self.long,
            )))
        }
    }
    impl FittedRegressor for FittedShort {
        fn name(&self) -> &'static str {
            "short"
        }
        fn predict(&self, x: &DMatrix<f64>) -> ssgp::Result<Predictive> {
            let (n, v) = if self.1 {
                (x.nrows(), 0.0)
            } else {
                (x.nrows() - 1, 1.0)
            };
            Ok(Predictive {
                mean: DVector::zeros(n),
                y_variance: DVector::from_element(n, v),
                f_variance: DVector::zeros(n),
            })
        }
        fn predict_covariance(&self, x: &DMatrix<f64>) -> ssgp::Result<JointPredictive> {
            let n = x.nrows();
            if self.2 {
                return Ok(JointPredictive {
                    mean: DVector::zeros(n + 1),
                    f_covariance: DMatrix::identity(n + 1, n + 1),
                    noise_variance: 1.0,
                });
            }
            Ok(JointPredictive {
                mean: DVector::zeros(n),
                f_covariance: DMatrix::zeros(n - 1, n - 1),
                noise_variance: 1.0,
            })
        }
        fn predict_gradients(&self, x: &DMatrix<f64>) -> ssgp::Result<PredictiveGradients> {
            let (n, d) = x.shape();
            Ok(PredictiveGradients {
                predictive: self.predict(x)?,
                mean: DMatrix::zeros(n, d + 1),
                variance: DMatrix::zeros(n, d + 1),
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
    let mut rng = StdRng::seed_from_u64(4);
    let train = sinc_data(30, false, 0.05, &mut rng).unwrap();
    let members: Vec<Box<dyn Regressor>> = vec![
        Box::new(Ssgp::params(3).seed(1).max_evaluations(20)),
        Box::new(Short {
            flat: false,
            long: false,
        }),
    ];
    let mixture = Ensemble::new(members, Combine::Mixture)
        .fit(&train)
        .unwrap();
    let xs = DMatrix::from_column_slice(4, 1, &[-2.0, 0.0, 1.0, 2.0]);
    let mismatch = |r: ssgp::Result<()>| matches!(r, Err(Error::DimensionMismatch { .. }));
    assert!(mismatch(mixture.predict(&xs).map(|_| ())));
    assert!(mismatch(mixture.predict_mean(&xs).map(|_| ())));
    assert!(mismatch(mixture.spread(&xs).map(|_| ())));
    assert!(mismatch(mixture.predict_covariance(&xs).map(|_| ())));
    assert!(mismatch(mixture.sample_joint(&xs, 3, 1).map(|_| ())));
    let members: Vec<Box<dyn Regressor>> = vec![
        Box::new(Ssgp::params(3).seed(1).max_evaluations(20)),
        Box::new(Short {
            flat: true,
            long: false,
        }),
    ];
    let flat = Ensemble::new(members, Combine::Mixture)
        .fit(&train)
        .unwrap();
    assert!(matches!(
        flat.spread(&xs),
        Err(Error::InvalidParameter {
            name: "members",
            ..
        })
    ));
    let long = || Short {
        flat: true,
        long: true,
    };
    let members: Vec<Box<dyn Regressor>> = vec![Box::new(long())];
    let joint = Ensemble::new(members, Combine::Mixture)
        .fit(&train)
        .unwrap();
    assert!(mismatch(joint.sample_joint(&xs, 3, 1).map(|_| ())));
    let standardized = Standardized::new(Box::new(long()) as Box<dyn Regressor>)
        .fit(&train)
        .unwrap();
    assert!(mismatch(standardized.predict_gradients(&xs).map(|_| ())));
}
