//! The interface every model shares: SSGP, FITC, the full GP and the wrappers around them.
//!
//! - [`Fit`]: a configuration that trains into a concrete fitted type (generic code keeps the
//!   type: a standardised SSGP still samples functions);
//! - [`Regressor`] / [`FittedRegressor`]: the object-safe forms, so benchmarks can loop over
//!   `Vec<Box<dyn Regressor>>`; every [`Fit`] is a [`Regressor`], and `Box<dyn Regressor>` is
//!   itself a [`Fit`];
//! - [`TrainingSummary`]: how a training run went, the same for every model.

use crate::data::{Dataset, InputColumns};
#[cfg(doc)]
use crate::error::Error;
use crate::error::Result;
use crate::hyperparameters::NoiseParam;
use crate::optim::Observer;
use crate::optim::OptimReport;
use crate::predictive::{JointPredictive, JointSamples, Predictive, PredictiveGradients};
use crate::termination::{Remedy, TrainingSummary};
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
