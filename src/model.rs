//! The interface every model shares: SSGP, FITC, the full GP and the wrappers around them.
//!
//! - [`Fit`]: a configuration that trains into a concrete fitted type (generic code keeps the
//!   type: a standardised SSGP still samples functions);
//! - [`Regressor`] / [`FittedRegressor`]: the object-safe forms, so benchmarks can loop over
//!   `Vec<Box<dyn Regressor>>`; every [`Fit`] is a [`Regressor`], and `Box<dyn Regressor>` is
//!   itself a [`Fit`];
//! - [`TrainingSummary`]: how a training run went, the same for every model.

use crate::data::{Dataset, InputColumns};
use crate::error::{Error, Result};
use crate::hyperparameters::NoiseParam;
use crate::optim::Observer;
use crate::optim::OptimReport;
use crate::predictive::{JointPredictive, JointSamples, Predictive, PredictiveGradients};
use crate::termination::{HeldOutCalibration, LooDiagnostic, Remedy, TrainingSummary};
use nalgebra::{DMatrix, DVector};

impl TrainingSummary {
    /// The summary of an optimiser run on data whose used input columns are `columns`.
    pub fn new(report: &OptimReport, columns: &InputColumns) -> Self {
        Self {
            initial_neg_log_evidence: report.initial_value,
            neg_log_evidence: report.value,
            iterations: report.iterations,
            evaluations: report.evaluations,
            termination: report.termination.clone(),
            ignored_inputs: columns.ignored(),
            noise_at_floor: false,
            diagnostic: None,
            remedy: None,
        }
    }

    /// The summary of a model without SSGP's calibration check trained on inputs `x`: flagged
    /// ([`Remedy::FewInputs`]) on fewer than [`Remedy::MIN_CHECKED_INPUTS`] distinct inputs,
    /// where its LOO cannot check the error bars between them.
    ///
    /// # Errors
    /// [`Error::Allocation`] if the index of equal inputs cannot be allocated.
    pub(crate) fn on_inputs(mut self, x: &DMatrix<f64>) -> Result<Self> {
        let (_, inputs) = crate::data::groups_of_equal_inputs(x)?;
        if inputs < Remedy::MIN_CHECKED_INPUTS {
            self.remedy = Some(Remedy::FewInputs {
                inputs,
                random_features: false,
            });
        }
        Ok(self)
    }

    /// The summary judged by the held-out check of a model without SSGP's calibration check
    /// (the full GP, FITC, VFE; [`Remedy::HeldOutRefit`]): from
    /// [`Remedy::MIN_CHECKED_INPUTS`] distinct inputs (a summary [`Self::on_inputs`] flagged is
    /// returned as it is) up to [`Remedy::HELD_OUT_CHECK_MAX_ROWS`] rows of `data` (the rows the
    /// model was trained on, its used columns), the rows are cut into
    /// [`Remedy::HELD_OUT_CHECK_FOLDS`] folds of whole groups of equal inputs (in the shuffle of
    /// `seed`), and for each fold in turn, until [`Remedy::HELD_OUT_CHECK_SCORED_ROWS`] rows are
    /// scored, `refit(fit, held)` trains the model as configured on the other folds and returns
    /// its predictive at the fold's inputs and its ȳ: the record is the mean z² over every scored
    /// row and the NMSE of their sums (each fold's by its refit's ȳ). A
    /// fold whose other rows have constant targets, or whose refit fails, is not scored; where
    /// none is, or the score is not finite, nothing is recorded and the fit is judged by its
    /// LOO alone, as above the rows. Cost: one training on 3/4 of the rows per fold refitted
    /// (four up to 533 rows, three below 800, two below 1 600, one from there), and a prediction at
    /// the rest.
    ///
    /// # Errors
    /// [`Error::Allocation`] if the index of equal inputs or a subset cannot be allocated (the
    /// refits' own allocation failures too).
    pub(crate) fn judged_by_refit(
        mut self,
        data: &Dataset,
        seed: u64,
        mut refit: impl FnMut(&Dataset, &Dataset) -> Result<(Predictive, f64)>,
    ) -> Result<Self> {
        if self.remedy.is_some() || data.len() > Remedy::HELD_OUT_CHECK_MAX_ROWS {
            return Ok(self);
        }
        let (groups, count) = crate::data::groups_of_equal_inputs(data.x())?;
        let order = crate::data::held_out_split((&groups, count), 0, seed).order;
        let mut sums = [0.0; 5];
        for fold in crate::data::folds(&order, &groups, Remedy::HELD_OUT_CHECK_FOLDS) {
            if sums[0] >= Remedy::HELD_OUT_CHECK_SCORED_ROWS as f64 {
                break;
            }
            let others: Vec<usize> = order[..fold.start]
                .iter()
                .chain(&order[fold.end..])
                .copied()
                .collect();
            if !crate::data::varies_on(data.y(), &others) {
                continue;
            }
            let (fit, held) = (data.subset(&others)?, data.subset(&order[fold])?);
            let (p, y_mean) = match refit(&fit, &held) {
                Ok(refitted) => refitted,
                Err(e @ Error::Allocation { .. }) => return Err(e),
                Err(_) => continue,
            };
            let residuals = held.y() - &p.mean;
            let centred = held.y().add_scalar(-y_mean);
            let fold_sums = LooDiagnostic::sums(
                residuals.as_slice(),
                p.y_variance.as_slice(),
                centred.as_slice(),
            );
            sums.iter_mut().zip(fold_sums).for_each(|(s, f)| *s += f);
        }
        if let Some(d) = LooDiagnostic::from_sums(sums) {
            self.remedy = Some(Remedy::HeldOutRefit {
                held_out: HeldOutCalibration {
                    rows: sums[0] as usize,
                    mean_z2: d.mean_z2,
                    nmse: d.nmse,
                },
            });
        }
        Ok(self)
    }
}

/// What every fitted model of the crate holds besides its posterior.
#[derive(Clone)]
pub(crate) struct FitRecord {
    /// θ in the model's layout ([`crate::hyperparameters`]), for the used input columns.
    pub(crate) theta: DVector<f64>,
    /// ȳ, the training targets' mean, added back to every predictive mean.
    pub(crate) y_mean: f64,
    /// −log p(y|θ) of the centred training targets at θ.
    pub(crate) neg_log_evidence: f64,
    /// How training went.
    pub(crate) training: TrainingSummary,
    /// The noise floor θ's noise entry is decoded with (σn² = floor + e^{2p}).
    pub(crate) noise_floor: f64,
    /// The thread count the model's predictions run with.
    pub(crate) threads: usize,
    /// The training's observer, which the predictions report to (none for a loaded model).
    pub(crate) observer: Option<Observer>,
    /// The input columns used (the others were constant on the training data).
    pub(crate) columns: InputColumns,
}

crate::optim::debug_with_observer! {
    FitRecord { theta, y_mean, neg_log_evidence, training, noise_floor, threads, columns }
}

impl FitRecord {
    /// The record of a model at θ (its noise entry decoded with `noise`), on the used `columns`;
    /// the training summary learns whether σn² sits at its floor
    /// ([`TrainingSummary::noise_at_floor`]).
    pub(crate) fn new(
        theta: DVector<f64>,
        (y_mean, neg_log_evidence): (f64, f64),
        mut training: TrainingSummary,
        noise: NoiseParam,
        (threads, observer): (usize, Option<Observer>),
        columns: InputColumns,
    ) -> Self {
        let noise_entry = columns.used().len() + 1;
        training.noise_at_floor = theta.get(noise_entry).is_some_and(|&p| noise.at_floor(p));
        Self {
            theta,
            y_mean,
            neg_log_evidence,
            training,
            noise_floor: noise.floor,
            threads,
            columns,
            observer,
        }
    }
}

/// A configured model that trains into a concrete fitted type.
///
/// ```
/// use ssgp::rand::{rngs::StdRng, SeedableRng};
/// use ssgp::{data::sinc_data, metrics, Dataset, Fit, FittedRegressor, FullGp, Ssgp};
///
/// /// Any model's test NMSE: generic over the builder.
/// fn test_nmse<F: Fit>(model: &F, train: &Dataset, test: &Dataset) -> ssgp::Result<f64> {
///     let fitted = model.fit(train)?;
///     metrics::nmse(test.y(), &fitted.predict(test.x())?, train.y_mean())
/// }
/// let mut rng = StdRng::seed_from_u64(0);
/// let (train, test) = (sinc_data(80, false, 0.05, &mut rng)?, sinc_data(200, true, 0.05, &mut rng)?);
/// let full = test_nmse(&FullGp::params().max_evaluations(60), &train, &test)?;
/// let sparse = test_nmse(&Ssgp::params(10).seed(1).max_evaluations(100), &train, &test)?;
/// println!("NMSE: full GP {full:.4}, SSGP {sparse:.4}");
/// # Ok::<(), ssgp::Error>(())
/// ```
pub trait Fit: Send + Sync {
    /// What training returns.
    type Fitted: FittedRegressor + 'static;

    /// A short name: `ssgp`, `ssgp-fixed`, `fitc`, `vfe`, `full`, `mixture` or `best-of`.
    fn name(&self) -> &'static str;

    /// Learns the hyperparameters on `data` and returns the fitted model.
    ///
    /// # Errors
    /// Whatever the model's validation and training return (bad settings, constant inputs, a
    /// failed Cholesky, …).
    fn fit(&self, data: &Dataset) -> Result<Self::Fitted>;
}

/// A configured model, ready to be fitted (the object-safe form of [`Fit`]).
///
/// ```
/// use ssgp::rand::{rngs::StdRng, SeedableRng};
/// use ssgp::{data::sinc_data, Fitc, FullGp, Regressor, Ssgp};
///
/// let train = sinc_data(80, false, 0.05, &mut StdRng::seed_from_u64(0))?;
/// // Different models behind one trait object, fitted and used alike.
/// let models: Vec<Box<dyn Regressor>> = vec![
///     Box::new(FullGp::params().max_evaluations(60)),
///     Box::new(Fitc::params(8).seed(1).max_evaluations(60)),
///     Box::new(Ssgp::params(10).seed(1).max_evaluations(60)),
/// ];
/// for model in &models {
///     let fitted = model.fit_boxed(&train)?;       // a Box<dyn FittedRegressor>
///     println!("{}: σn² {:.4}, −log p {:.1}", fitted.name(), fitted.noise_variance(),
///         fitted.neg_log_evidence());
/// }
/// # Ok::<(), ssgp::Error>(())
/// ```
pub trait Regressor: Send + Sync {
    /// A short name: `ssgp`, `ssgp-fixed`, `fitc`, `vfe`, `full`, `mixture` or `best-of`.
    fn name(&self) -> &'static str;

    /// Learns the hyperparameters on `data` and returns the fitted model.
    ///
    /// # Errors
    /// As [`Fit::fit`].
    fn fit_boxed(&self, data: &Dataset) -> Result<Box<dyn FittedRegressor>>;
}

impl<T: Fit> Regressor for T {
    fn name(&self) -> &'static str {
        Fit::name(self)
    }

    fn fit_boxed(&self, data: &Dataset) -> Result<Box<dyn FittedRegressor>> {
        Ok(Box::new(self.fit(data)?))
    }
}

impl Fit for Box<dyn Regressor> {
    type Fitted = Box<dyn FittedRegressor>;

    fn name(&self) -> &'static str {
        self.as_ref().name()
    }

    fn fit(&self, data: &Dataset) -> Result<Box<dyn FittedRegressor>> {
        self.as_ref().fit_boxed(data)
    }
}

/// A fitted model: predictions, the joint predictive and its samples, gradients where the
/// model has them, and how its training went — the same calls for every model.
///
/// ```
/// use ssgp::nalgebra::DMatrix;
/// use ssgp::rand::{rngs::StdRng, SeedableRng};
/// use ssgp::{data::sinc_data, FittedRegressor, FullGp, Ssgp};
///
/// /// The 95 % interval's width at `x` of any fitted model.
/// fn width(model: &dyn FittedRegressor, x: &DMatrix<f64>) -> ssgp::Result<f64> {
///     let (lo, hi) = model.predict(x)?.interval(0.95)?;
///     Ok(hi[0] - lo[0])
/// }
/// let train = sinc_data(80, false, 0.05, &mut StdRng::seed_from_u64(0))?;
/// let x = DMatrix::from_element(1, 1, 0.5);
/// let full = FullGp::params().max_evaluations(60).fit(&train)?;
/// let sparse = Ssgp::params(10).seed(1).max_evaluations(100).fit(&train)?;
/// println!("widths at 0.5: {:.3} and {:.3}", width(&full, &x)?, width(&sparse, &x)?);
/// # Ok::<(), ssgp::Error>(())
/// ```
pub trait FittedRegressor: Send + Sync {
    /// The same name as the [`Regressor`] it came from.
    fn name(&self) -> &'static str;

    /// Predictive distribution at test inputs `x` (n*×D).
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] if `x` has not D columns, [`Error::NonFinite`]
    /// for a NaN or infinity in `x`, [`Error::Numerical`] for a prediction that overflows there
    /// (never a NaN or ∞ in the result), [`Error::EmptyData`] for no rows.
    fn predict(&self, x: &DMatrix<f64>) -> Result<Predictive>;

    /// The predictive means alone at `x` (n*×D): `predict(x)?.mean` bit for bit, without the
    /// variance work (the crate's models skip their triangular solves; the default calls
    /// `predict`).
    ///
    /// # Errors
    /// As [`FittedRegressor::predict`].
    fn predict_mean(&self, x: &DMatrix<f64>) -> Result<DVector<f64>> {
        Ok(self.predict(x)?.mean)
    }

    /// The joint predictive at `x` (n*×D, n* ≤ [`crate::predictive::MAX_JOINT_POINTS`]): the
    /// means and the n*×n* latent covariance Σ_f, whose diagonal is `predict`'s `f_variance`;
    /// Σ_f + σn²I ([`JointPredictive::y_covariance`]) is the covariance of the noisy targets.
    ///
    /// # Errors
    /// As [`FittedRegressor::predict`]; [`Error::InvalidParameter`] (naming `x`) for more
    /// than [`crate::predictive::MAX_JOINT_POINTS`] test points; [`Error::Allocation`] if
    /// the covariance cannot be allocated; [`Error::Numerical`] for a non-finite entry.
    fn predict_covariance(&self, x: &DMatrix<f64>) -> Result<JointPredictive>;

    /// `draws` joint posterior samples of the latent values f_* at `x` (n*×D), seeded: draws of
    /// N(μ_*, Σ_f) from [`FittedRegressor::predict_covariance`] by Cholesky
    /// ([`JointPredictive::sample`], which reports any jitter); a mixture draws a member for each
    /// sample, then from that member's Gaussian.
    ///
    /// # Errors
    /// As [`FittedRegressor::predict_covariance`] and [`JointPredictive::sample`].
    fn sample_joint(&self, x: &DMatrix<f64>, draws: usize, seed: u64) -> Result<JointSamples> {
        self.predict_covariance(x)?.sample(draws, seed)
    }

    /// The gradients of the predictive mean and variance with respect to the test inputs `x`
    /// (n*×D): ∂μ_*/∂x_* and ∂σ²_*/∂x_* (n*×D each, row j for test point j), with the
    /// predictive itself — what a surrogate-based optimiser or a model-based controller needs.
    /// SSGP differentiates its features (O(mD) per point for the mean, O(m² + mD) for the
    /// variance), FITC and the full GP their kernel; standardised models and ensembles apply the
    /// chain rule. The default (models implemented outside the crate) is an error.
    ///
    /// # Errors
    /// As [`FittedRegressor::predict`]; [`Error::Numerical`] for a non-finite gradient;
    /// [`Error::NotDifferentiable`] from the default.
    fn predict_gradients(&self, x: &DMatrix<f64>) -> Result<PredictiveGradients> {
        let _ = x;
        Err(crate::error::Error::NotDifferentiable { name: self.name() })
    }

    /// −log p(y|θ) of the training targets (centred by their mean) at the fitted θ.
    fn neg_log_evidence(&self) -> f64;

    /// The noise variance σn² in the predictive variances: `y_variance` − `f_variance`.
    fn noise_variance(&self) -> f64;

    /// How training went.
    fn training(&self) -> &TrainingSummary;

    /// The model's saved form (feature `serde`), which [`crate::persist`] writes (`to_json`,
    /// `save_json`) and reads back as the model or as a `persist::SavedModel`. Every fitted
    /// model of the crate implements it (standardised models and ensembles when what they hold
    /// does).
    ///
    /// # Errors
    /// [`Error::NotPersistable`] for a model implemented outside the crate (the default).
    #[cfg(feature = "serde")]
    fn saved_form(&self) -> Result<crate::schema::SavedForm> {
        Err(crate::error::Error::NotPersistable { name: self.name() })
    }
}

/// The inherent `sample_joint` of a fitted type whose joint predictive distribution is its own
/// inherent `predict_covariance` (SSGP, FITC, VFE, the full GP): `draws` seeded joint samples of
/// f* at `x` by [`JointPredictive::sample`](crate::predictive::JointPredictive::sample). Doc
/// lines given to the macro are added to the method's first paragraph.
macro_rules! sample_joint_from_covariance {
    ($(#[doc = $extra:expr])*) => {
        /// `draws` joint samples of f* at `x` (n*×D) from [`Self::predict_covariance`], seeded
        /// ([`JointPredictive::sample`](crate::predictive::JointPredictive::sample)).
        $(#[doc = $extra])*
        ///
        /// # Errors
        /// As [`Self::predict_covariance`] and
        /// [`JointPredictive::sample`](crate::predictive::JointPredictive::sample).
        pub fn sample_joint<X: $crate::data::Inputs + ?Sized>(
            &self,
            x: &X,
            draws: usize,
            seed: u64,
        ) -> $crate::error::Result<$crate::predictive::JointSamples> {
            self.predict_covariance(&*x.to_matrix()?)?
                .sample(draws, seed)
        }
    };
}
pub(crate) use sample_joint_from_covariance;

/// The [`FittedRegressor`] impl of a type whose calls go to a model: `$this => $inner` turns
/// `&self` (bound to `$this`) into that model — a `&dyn FittedRegressor` held inside, or `self`
/// itself for a fitted type with inherent `name`, `predict`, `predict_mean`,
/// `predict_covariance`, `sample_joint`, `neg_log_evidence`, `noise_variance` and `training`
/// methods (inherent methods win over the trait's). The saved form (feature `serde`) is the held
/// model's, or with `saved Kind` the `Kind` saved form of the type's own `to_repr`.
///
/// Inside an impl of [`FittedRegressor`], `@plain $this => $inner; method -> Type, …` writes
/// `fn method(&self) -> Type` and `@on_inputs $this => $inner; method -> Type, …` writes
/// `fn method(&self, x: &DMatrix<f64>) -> Result<Type>`, each calling the same method of `$inner`;
/// `@predictions $this => $inner` writes `predict`, `predict_mean`, `predict_covariance` and
/// `predict_gradients` so (a wrapper with its own name, noise variance or summary uses it alone).
macro_rules! fitted_regressor {
    ($holder:ty, $this:ident => $inner:expr $(, saved $kind:ident)?) => {
        impl $crate::model::FittedRegressor for $holder {
            $crate::model::fitted_regressor! {
                @plain $this => $inner;
                name -> &'static str,
                neg_log_evidence -> f64,
                noise_variance -> f64,
                training -> &$crate::termination::TrainingSummary
            }

            $crate::model::fitted_regressor!(@predictions $this => $inner);

            fn sample_joint(
                &self,
                x: &nalgebra::DMatrix<f64>,
                draws: usize,
                seed: u64,
            ) -> $crate::error::Result<$crate::predictive::JointSamples> {
                let $this = self;
                $inner.sample_joint(x, draws, seed)
            }

            #[cfg(feature = "serde")]
            fn saved_form(&self) -> $crate::error::Result<$crate::schema::SavedForm> {
                let $this = self;
                $crate::model::fitted_regressor!(@saved $this => $inner $(, $kind)?)
            }
        }
    };
    (@plain $this:ident => $inner:expr; $($method:ident -> $out:ty),*) => {
        $(
            fn $method(&self) -> $out {
                let $this = self;
                $inner.$method()
            }
        )*
    };
    (@predictions $this:ident => $inner:expr) => {
        $crate::model::fitted_regressor! {
            @on_inputs $this => $inner;
            predict -> $crate::predictive::Predictive,
            predict_mean -> nalgebra::DVector<f64>,
            predict_covariance -> $crate::predictive::JointPredictive,
            predict_gradients -> $crate::predictive::PredictiveGradients
        }
    };
    (@on_inputs $this:ident => $inner:expr; $($method:ident -> $out:ty),*) => {
        $(
            fn $method(&self, x: &nalgebra::DMatrix<f64>) -> $crate::error::Result<$out> {
                let $this = self;
                $inner.$method(x)
            }
        )*
    };
    (@saved $this:ident => $inner:expr) => {
        $inner.saved_form()
    };
    (@saved $this:ident => $inner:expr, $kind:ident) => {
        Ok($crate::schema::SavedForm(
            $crate::schema::ModelRepr::$kind($this.to_repr()),
        ))
    };
}

pub(crate) use fitted_regressor;

fitted_regressor!(Box<dyn FittedRegressor>, model => model.as_ref());

#[cfg(test)]
mod tests {
    use super::*;
    use crate::termination::Termination;
    use std::cell::Cell;

    fn summary() -> TrainingSummary {
        TrainingSummary::untrained(0.0)
    }

    /// 120 rows, each input twice (60 groups), targets varying.
    fn replicated() -> Dataset {
        let x = DMatrix::from_fn(120, 2, |i, j| ((i / 2) * (j + 3)) as f64 * 0.01);
        let y = DVector::from_fn(120, |i, _| (i as f64 * 0.37).sin() + (i % 2) as f64 * 0.1);
        Dataset::new(x, y).unwrap()
    }

    /// Each refit sees one of four folds held out in whole groups of equal inputs and trains on
    /// the rest; every row is held out once, and the recorded score is the mean z² and the NMSE
    /// of the sums over every fold of what the refits return, computed here from their
    /// definitions.
    #[test]
    fn every_row_is_scored_once_by_a_refit_without_its_fold() {
        let data = replicated();
        let (mut z2, mut sse, mut sst, mut scored) = (0.0, 0.0, 0.0, vec![0; 120]);
        let judged = summary()
            .judged_by_refit(&data, 3, |fit, held| {
                assert_eq!((fit.len(), held.len()), (90, 30), "60 groups of 2, 4 folds");
                for h in held.x().row_iter() {
                    assert!(fit.x().row_iter().all(|f| f != h));
                }
                let rows = held.len();
                let level = 0.1 * rows as f64 / 30.0 + fit.y()[0];
                for (i, &y) in held.y().iter().enumerate() {
                    let row = (0..120)
                        .find(|&r| data.x().row(r) == held.x().row(i))
                        .unwrap();
                    scored[row - row % 2] += 1;
                    z2 += (y - level).powi(2) / 0.5;
                    sse += (y - level).powi(2);
                    sst += (y - fit.y_mean()).powi(2);
                }
                let p = Predictive {
                    mean: DVector::from_element(rows, level),
                    y_variance: DVector::from_element(rows, 0.5),
                    f_variance: DVector::zeros(rows),
                };
                Ok((p, fit.y_mean()))
            })
            .unwrap();
        let Some(Remedy::HeldOutRefit { held_out }) = judged.remedy else {
            panic!("{:?}", judged.remedy);
        };
        assert!(scored.chunks(2).all(|pair| pair == [2, 0]), "{scored:?}");
        assert_eq!(held_out.rows, 120);
        approx::assert_relative_eq!(held_out.mean_z2, z2 / 120.0, max_relative = 1e-12);
        approx::assert_relative_eq!(held_out.nmse, sse / sst, max_relative = 1e-12);
    }

    /// No refit where the summary is flagged for too few inputs or above the rows; a refit that
    /// fails records nothing, but an allocation failure is the fit's error; on 1 000 rows two
    /// folds are refitted, enough to score 400 rows.
    #[test]
    fn the_refit_runs_only_where_it_judges_and_its_failures_record_nothing() {
        let data = replicated();
        let calls = Cell::new(0);
        let refit = |_: &Dataset, _: &Dataset| -> Result<(Predictive, f64)> {
            calls.set(calls.get() + 1);
            Err(Error::NotPositiveDefinite {
                what: "K",
                dim: 1,
                pivot: 0,
                max_jitter: 0.0,
            })
        };
        let few = TrainingSummary {
            remedy: Some(Remedy::FewInputs {
                inputs: 3,
                random_features: false,
            }),
            ..summary()
        };
        assert_eq!(few.clone().judged_by_refit(&data, 0, refit).unwrap(), few);
        let rows = Remedy::HELD_OUT_CHECK_MAX_ROWS + 1;
        let many = Dataset::new(
            DMatrix::from_fn(rows, 1, |i, _| i as f64),
            DVector::from_fn(rows, |i, _| (i as f64).cos()),
        )
        .unwrap();
        assert_eq!(
            summary().judged_by_refit(&many, 0, refit).unwrap(),
            summary()
        );
        assert_eq!(calls.get(), 0);
        assert_eq!(
            summary().judged_by_refit(&data, 0, refit).unwrap(),
            summary()
        );
        assert_eq!(calls.get(), Remedy::HELD_OUT_CHECK_FOLDS);
        let allocation = summary().judged_by_refit(&data, 0, |_, _| {
            Err(Error::Allocation {
                what: "a refit",
                bytes: usize::MAX,
            })
        });
        assert!(matches!(allocation, Err(Error::Allocation { .. })));

        let rows = 1000;
        let larger = Dataset::new(
            DMatrix::from_fn(rows, 1, |i, _| i as f64),
            DVector::from_fn(rows, |i, _| (i as f64).cos()),
        )
        .unwrap();
        let refits = Cell::new(0);
        let judged = summary()
            .judged_by_refit(&larger, 0, |_, held| {
                refits.set(refits.get() + 1);
                let p = Predictive {
                    mean: DVector::zeros(held.len()),
                    y_variance: DVector::from_element(held.len(), 1.0),
                    f_variance: DVector::zeros(held.len()),
                };
                Ok((p, 0.0))
            })
            .unwrap();
        assert_eq!(refits.get(), 2, "two folds of 250 reach 400 scored rows");
        assert_eq!(judged.held_out().map(|h| h.rows), Some(500));
    }

    /// A judged fit is flagged by its held-out rows, and for a failed training too (the refit
    /// does not vouch for the point a failure left the fit at).
    #[test]
    fn a_fit_judged_by_its_refit_is_flagged_by_the_held_out_rows() {
        let judged = |mean_z2: f64, nmse: f64, termination: Termination| TrainingSummary {
            termination,
            diagnostic: LooDiagnostic::from_residuals(&[0.1, -0.1], &[0.01, 0.01], &[1.0, -1.0]),
            remedy: Some(Remedy::HeldOutRefit {
                held_out: HeldOutCalibration {
                    rows: 100,
                    mean_z2,
                    nmse,
                },
            }),
            ..summary()
        };
        let converged = Termination::Converged;
        assert!(!judged(1.1, 0.1, converged.clone()).is_flagged());
        let narrow = judged(2.0, 0.1, converged.clone()).flags();
        assert!(narrow.overconfident && !narrow.fits_too_well, "{narrow}");
        assert!(judged(0.2, 0.1, converged.clone()).flags().underconfident);
        let worse = judged(1.0, 1.2, converged).flags();
        assert!(worse.worse_than_mean && worse.explains_little, "{worse}");
        let failed = judged(1.0, 0.1, Termination::LineSearchFailed("no step".into())).flags();
        assert!(failed.training_failed && failed.any(), "{failed}");
    }
}
