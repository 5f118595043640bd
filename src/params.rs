//! Validated configuration, shared by every model.
//!
//! Each model has a builder (`SsgpParams`, `FitcParams`, `FullGpParams`) holding unchecked
//! settings and a validated twin (`ValidSsgpParams`, …) produced by [`ParamGuard::check`]: the
//! pattern of linfa's `ParamGuard`. Training and the evidence are implemented on the validated
//! type, so nothing deeper down validates a setting again; the builders' `fit` checks first.
//!
//! The settings every model's training shares — seed, optimiser budget and observer, threads,
//! noise floor, lengthscale start — live in [`TrainingSettings`], and every builder has the same
//! methods to set them.
//!
//! ```
//! use ssgp::{Error, FullGp, ParamGuard, Ssgp};
//!
//! // The same training settings on every builder.
//! let sparse = Ssgp::params(20).seed(3).threads(1).max_evaluations(200).check()?;
//! let full = FullGp::params().seed(3).threads(1).max_evaluations(200).check()?;
//! assert_eq!(sparse.training().seed(), full.training().seed());
//! // A bad setting is an error when checked (or fitted), naming it.
//! assert!(matches!(
//!     Ssgp::params(20).relative_noise_floor(2.0).check(),
//!     Err(Error::InvalidParameter { name: "relative_noise_floor", .. })
//! ));
//! # Ok::<(), ssgp::Error>(())
//! ```

use crate::data::InputColumns;
use crate::error::{Error, Result};
use crate::hyperparameters::NoiseParam;
use crate::init::LengthscaleInit;
use crate::model::FitRecord;
use crate::optim::{minimize, minimize_with_checkpoints, Objective, OptimConfig, OptimReport};
use crate::termination::TrainingSummary;
use nalgebra::DVector;

/// Turns unchecked settings into validated ones.
pub trait ParamGuard {
    /// The validated settings.
    type Checked;

    /// Validates by reference.
    ///
    /// # Errors
    /// [`crate::error::Error::InvalidParameter`] (or a shape or finiteness error) for the first bad
    /// setting.
    fn check_ref(&self) -> Result<&Self::Checked>;

    /// Validates and returns the validated settings.
    ///
    /// # Errors
    /// As [`ParamGuard::check_ref`].
    fn check(self) -> Result<Self::Checked>;
}

/// The most threads a model may be configured with (a fitted model's thread count is checked
/// against it too when it is loaded): far more than any machine has cores, and few enough that a
/// thread count from a corrupted file cannot make the linear algebra allocate per-thread state
/// for 2⁴⁰ threads.
pub const MAX_THREADS: usize = 4096;

/// Checks a thread count against [`MAX_THREADS`].
///
/// # Errors
/// [`Error::InvalidParameter`] naming `threads` for more than [`MAX_THREADS`].
pub(crate) fn check_threads(threads: usize) -> Result<()> {
    if threads > MAX_THREADS {
        return Err(Error::InvalidParameter {
            name: "threads",
            reason: format!("{threads} threads asked for; at most {MAX_THREADS} are allowed"),
        });
    }
    Ok(())
}

/// The default lower bound on σn², relative to the training targets' variance: 1e-4·var(y), the
/// bound GPyTorch puts on its noise by default.
///
/// Noise-free data (a computer experiment, a simulator) drive σn² towards zero, where K + σn²I
/// (or A) becomes singular and training fails; with this floor every model fits them, and its
/// predictions interpolate to within about √(1e-4) = 1 % of the targets' standard deviation
/// (measured on 24 noise-free problems, n = 30–400, D = 1–5, with the three models: 1e-6 left 2
/// of 72 fits failing, 1e-5 one, 1e-4 none). It is the role of scikit-learn's `alpha` and
/// GPyTorch's noise constraint; a fit whose noise ends at its floor says so
/// ([`TrainingSummary::noise_at_floor`](crate::TrainingSummary)). Set
/// `relative_noise_floor(0.0)` on any builder for none (the paper's and the original code's
/// parametrisation, σn² = e^{2p}).
pub const DEFAULT_RELATIVE_NOISE_FLOOR: f64 = 1e-4;

/// The largest absolute noise floor a fit accepts, as a multiple of the variance of the targets it
/// is fitted to: a floor above 10⁴·var(y) puts the noise's standard deviation at more than a
/// hundred times the targets' whole spread, which leaves no signal to fit — certainly a mistake
/// (a floor in other units than the targets, say), and beyond which the factorisations fail
/// without naming the floor. A fit checks it once it knows var(y).
pub const MAX_NOISE_FLOOR_RATIO: f64 = 1e4;

/// Settings shared by the training of every model.
#[derive(Debug, Clone)]
pub struct TrainingSettings {
    pub(crate) seed: u64,
    pub(crate) lengthscales: LengthscaleInit,
    pub(crate) kernel: crate::kernel::Kernel,
    pub(crate) optim: OptimConfig,
    pub(crate) best_effort: bool,
    pub(crate) threads: usize,
    pub(crate) noise_floor: f64,
    pub(crate) relative_noise_floor: f64,
}

impl Default for TrainingSettings {
    fn default() -> Self {
        Self {
            seed: 0,
            lengthscales: LengthscaleInit::default(),
            kernel: crate::kernel::Kernel::default(),
            optim: OptimConfig::default(),
            best_effort: false,
            threads: 0,
            noise_floor: 0.0,
            relative_noise_floor: DEFAULT_RELATIVE_NOISE_FLOOR,
        }
    }
}

impl TrainingSettings {
    /// The covariance family (SSGP: the spectral density its points are drawn from).
    pub fn kernel(&self) -> crate::kernel::Kernel {
        self.kernel
    }

    /// The seed of the model's random start (spectral points, pseudo-inputs, subsets).
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The optimiser's budget, stopping rule and observer.
    pub fn optim(&self) -> &OptimConfig {
        &self.optim
    }

    /// Threads (0 = all of rayon's).
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// The absolute lower bound on σn² (default 0).
    pub fn noise_floor(&self) -> f64 {
        self.noise_floor
    }

    /// The lower bound on σn² relative to the training targets' variance (default
    /// [`DEFAULT_RELATIVE_NOISE_FLOOR`]); the floor a fit uses is the larger of the two.
    pub fn relative_noise_floor(&self) -> f64 {
        self.relative_noise_floor
    }

    /// These settings with the relative noise floor resolved against the (1/n) variance
    /// `y_variance` of the targets a model is fitted to: floor = max(absolute, relative·var y),
    /// and no relative floor left (resolving twice changes nothing).
    pub(crate) fn resolved(&self, y_variance: f64) -> Self {
        let mut settings = self.clone();
        settings.noise_floor = self.noise_floor.max(self.relative_noise_floor * y_variance);
        settings.relative_noise_floor = 0.0;
        settings
    }

    /// Checks the absolute noise floor against the variance `scale` of the targets it bounds the
    /// noise of (`of` names that variance in the message): at most [`MAX_NOISE_FLOOR_RATIO`]
    /// times it. A zero or non-finite `scale` passes: constant targets and overflowing ones are
    /// the data checks' to name.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming `noise_floor` and the variance for a larger floor.
    pub(crate) fn check_noise_floor(&self, scale: f64, of: &str) -> Result<()> {
        if scale > 0.0 && scale.is_finite() && self.noise_floor > MAX_NOISE_FLOOR_RATIO * scale {
            return Err(Error::InvalidParameter {
                name: "noise_floor",
                reason: format!(
                    "{:e} is more than {MAX_NOISE_FLOOR_RATIO:e} times {of} ({scale:e}): a noise \
                     that large leaves no signal to fit; give the floor in the targets' units, \
                     below their variance (e.g. the variance of their measurement error)",
                    self.noise_floor
                ),
            });
        }
        Ok(())
    }

    /// The noise parametrisation of a model whose noise parameter is the ratio σn²/σ0² (the
    /// multi-output SSGP): the floor is max(noise floor, relative noise floor), the relative
    /// floor bounding the ratio itself.
    pub(crate) fn ratio_noise(&self) -> NoiseParam {
        self.resolved(1.0).noise()
    }

    /// How the lengthscales start.
    pub fn lengthscale_init(&self) -> &LengthscaleInit {
        &self.lengthscales
    }

    /// Whether a failed training returns its best model instead of an error.
    pub fn best_effort(&self) -> bool {
        self.best_effort
    }

    /// These settings with the observer, if any, told that its fits are a held-out check's
    /// ([`Phase::CalibrationCheck`](crate::optim::Phase::CalibrationCheck)): SSGP's calibration
    /// check and the refits of the full GP's, FITC's and VFE's.
    pub(crate) fn reporting_as_check(&self) -> Self {
        let mut quiet = self.clone();
        quiet.optim.observer =
            self.optim.observer.as_ref().map(|o| {
                crate::optim::retag(o, |p| p.phase = crate::optim::Phase::CalibrationCheck)
            });
        quiet
    }

    /// Minimises `objective` from θ₀ with these settings' optimiser; a failed run is an error
    /// unless best effort was asked for.
    ///
    /// # Errors
    /// As [`crate::optim::minimize`], and [`crate::error::Error::TrainingFailed`] for a failure.
    pub(crate) fn minimize<O: Objective>(
        &self,
        objective: &O,
        theta0: DVector<f64>,
    ) -> Result<OptimReport> {
        minimize(objective, theta0, &self.optim)?.or_failure(self.best_effort)
    }

    /// [`TrainingSettings::minimize`] with the reports of the same run at the ascending
    /// evaluation counts `checkpoints` ([`crate::optim::minimize_with_checkpoints`]), each an
    /// error if it failed, as is the whole run's.
    ///
    /// # Errors
    /// As [`TrainingSettings::minimize`].
    pub(crate) fn minimize_with_checkpoints<O: Objective>(
        &self,
        objective: &O,
        theta0: DVector<f64>,
        checkpoints: &[usize],
    ) -> Result<(OptimReport, Vec<OptimReport>)> {
        let (whole, reports) =
            minimize_with_checkpoints(objective, theta0, &self.optim, checkpoints)?;
        let reports = reports
            .into_iter()
            .map(|r| r.or_failure(self.best_effort))
            .collect::<Result<_>>()?;
        Ok((whole.or_failure(self.best_effort)?, reports))
    }

    /// The record a model fitted with these settings holds (their noise floor and thread count),
    /// at θ = `theta` on the used `columns`.
    pub(crate) fn record(
        &self,
        theta: DVector<f64>,
        y_mean: f64,
        neg_log_evidence: f64,
        training: TrainingSummary,
        columns: InputColumns,
    ) -> FitRecord {
        FitRecord::new(
            theta,
            (y_mean, neg_log_evidence),
            training,
            self.noise(),
            (self.threads, self.optim.observer.clone()),
            columns,
        )
    }

    /// The noise parametrisation σn² = floor + e^{2p}.
    pub(crate) fn noise(&self) -> NoiseParam {
        NoiseParam {
            floor: self.noise_floor,
        }
    }

    /// Checks the shared settings.
    ///
    /// # Errors
    /// As [`OptimConfig::validate`], [`NoiseParam::validate`] and [`LengthscaleInit::validate`];
    /// [`Error::InvalidParameter`] for more than [`MAX_THREADS`] threads.
    pub(crate) fn validate(&self) -> Result<()> {
        check_threads(self.threads)?;
        if !(self.relative_noise_floor >= 0.0 && self.relative_noise_floor < 1.0) {
            return Err(Error::InvalidParameter {
                name: "relative_noise_floor",
                reason: format!(
                    "{} is not in [0, 1): the floor on σn² is this fraction of var(y)",
                    self.relative_noise_floor
                ),
            });
        }
        self.optim.validate()?;
        self.noise().validate()?;
        self.lengthscales.validate()
    }
}

/// Checks a count setting that must be at least 1.
///
/// # Errors
/// [`Error::InvalidParameter`] naming `name`, with `reason`, for 0.
pub(crate) fn check_at_least_one(name: &'static str, count: usize, reason: &str) -> Result<()> {
    if count == 0 {
        return Err(Error::InvalidParameter {
            name,
            reason: reason.into(),
        });
    }
    Ok(())
}

/// A configuration whose random start (spectral points, pseudo-inputs, subsets) is fixed by a
/// seed, so that restarts are the same configuration reseeded
/// ([`Ensemble::restarts`](crate::ensemble::Ensemble::restarts)). Every builder of the crate
/// implements it, and so does a standardised one.
pub trait Reseed: Sized {
    /// The seed of the random start.
    fn current_seed(&self) -> u64;

    /// The same configuration with the seed `seed`.
    #[must_use]
    fn reseeded(&self, seed: u64) -> Self;

    /// Restart `index` (from 0) of `count`: reseeded with s + `index` (s its own seed, wrapping
    /// around after 2⁶⁴ − 1), its observer's reports tagged with
    /// [`Progress::restart`](crate::optim::Progress::restart) = `Some((index, count))`.
    #[must_use]
    fn restart(&self, index: usize, count: usize) -> Self;
}

/// Builder methods on a `…Params(Valid…Params)` newtype that store their argument in the
/// validated settings: each `name(arg: Type) => path` (with its doc comment) becomes
/// `pub fn name(mut self, arg: Type) -> Self` setting `self.0.path = arg`, or `= Some(arg)` when
/// written `=> path = Some`.
macro_rules! setters {
    ($(
        $(#[$attr:meta])*
        $name:ident($arg:ident: $ty:ty) => $($field:ident).+ $(= $wrap:ident)?;
    )*) => {
        $(
            $(#[$attr])*
            pub fn $name(mut self, $arg: $ty) -> Self {
                self.0.$($field).+ = $crate::params::setters!(@value $arg $(, $wrap)?);
                self
            }
        )*
    };
    (@value $arg:ident) => {
        $arg
    };
    (@value $arg:ident, $wrap:ident) => {
        $wrap($arg)
    };
}

pub(crate) use setters;

/// The builder methods of [`TrainingSettings`] on a model's `…Params(Valid…Params)` newtype whose
/// validated settings hold them in a field `training` (the newtype is `#[must_use]`, so every
/// builder method is).
macro_rules! training_builder {
    ($params:ident) => {
        impl $crate::params::Reseed for $params {
            fn current_seed(&self) -> u64 {
                self.0.training.seed
            }

            fn reseeded(&self, seed: u64) -> Self {
                self.clone().seed(seed)
            }

            fn restart(&self, index: usize, count: usize) -> Self {
                let mut restart = self.reseeded(self.current_seed().wrapping_add(index as u64));
                if let Some(observer) = &self.0.training.optim.observer {
                    restart.0.training.optim.observer =
                        Some($crate::optim::retag(observer, move |p| {
                            p.restart = Some((index, count))
                        }));
                }
                restart
            }
        }

        impl $params {
            $crate::params::setters! {
                /// The covariance family (default
                /// [`Kernel::SquaredExponential`](crate::kernel::Kernel)): the covariance of FITC,
                /// VFE and the full GP, the spectral density SSGP draws its spectral points from.
                /// The start's lengthscales ([`crate::init::LengthscaleInit::FullGpSubset`]) are
                /// those of a squared-exponential full GP whatever the kernel.
                kernel(kernel: $crate::kernel::Kernel) => training.kernel;
                /// Seed of the random start (spectral points, pseudo-inputs, subsets): the same
                /// seed gives the same fit. Default 0.
                seed(seed: u64) => training.seed;
                /// The optimiser's method, budget, stopping rule and observer (default
                /// [`OptimConfig::default`](crate::optim::OptimConfig::default), whose method
                /// `None` is the model's own optimiser).
                optim(optim: $crate::optim::OptimConfig) => training.optim;
                /// The optimiser (default: the model's own,
                /// [`Method::ConjugateGradient`](crate::optim::Method::ConjugateGradient) but for
                /// VFE's [`Method::Lbfgs`](crate::optim::Method::Lbfgs), GPflow's; see
                /// [`OptimConfig::method`](crate::optim::OptimConfig::method)).
                optimizer(method: $crate::optim::Method) => training.optim.method = Some;
                /// Maximum optimiser iterations (line searches); 0 evaluates the start only.
                max_iterations(iterations: u64) => training.optim.max_iterations;
                /// Maximum evaluations of the evidence and its gradient.
                max_evaluations(evaluations: usize) => training.optim.max_evaluations;
                /// A wall-clock budget for the optimisation (ends it with
                /// [`Termination::TimeLimit`](crate::Termination::TimeLimit)).
                max_time(limit: std::time::Duration) => training.optim.max_time = Some;
                /// Return the best model found when training fails (a line search or evaluations
                /// that could not be recovered from) instead of
                /// [`Error::TrainingFailed`](crate::error::Error::TrainingFailed); the model's
                /// [`TrainingSummary`](crate::TrainingSummary) names the failure. Default false.
                best_effort(best_effort: bool) => training.best_effort;
                /// A callback that receives the optimiser's progress after every iteration and may
                /// stop training by returning `ControlFlow::Break(())`.
                observer(observer: $crate::optim::Observer) => training.optim.observer = Some;
                /// Threads (0 = all of rayon's, by default one per core; 1 = sequential; more = a
                /// pool of that many, at most as many as the machine runs at once, built the first
                /// time the count is asked for and shared by every model from then on); at most
                /// [`MAX_THREADS`](crate::params::MAX_THREADS).
                threads(threads: usize) => training.threads;
                /// Lower bound on the noise variance, σn² = floor + e^{2p} (§5.2; e.g. bin²/12 for
                /// targets quantised in bins). Default 0; the floor used is the larger of this and
                /// the relative one ([`relative_noise_floor`](Self::relative_noise_floor)). A fit
                /// rejects a floor above
                /// [`MAX_NOISE_FLOOR_RATIO`](crate::params::MAX_NOISE_FLOOR_RATIO) (10⁴) times
                /// the variance of its targets ([`Error::InvalidParameter`](crate::Error)): it
                /// would leave no signal to fit.
                noise_floor(floor: f64) => training.noise_floor;
                /// Lower bound on the noise variance relative to the training targets' variance:
                /// floor = `fraction`·var(y), in [0, 1). Default
                /// [`DEFAULT_RELATIVE_NOISE_FLOOR`](crate::params::DEFAULT_RELATIVE_NOISE_FLOOR)
                /// (1e-4), so noise-free data fit; 0 for none.
                relative_noise_floor(fraction: f64) => training.relative_noise_floor;
                /// How the lengthscales start (SSGP's and FITC's default: a full GP on 1024 points,
                /// [`DEFAULT_START`](crate::init::DEFAULT_START); the full GP's: half the input
                /// ranges).
                lengthscale_init(init: $crate::init::LengthscaleInit) => training.lengthscales;
            }

            /// Initial lengthscales ℓ instead of the default start: one per **used** input column
            /// (columns constant on the training data, or on the hyperparameter subset, are left
            /// out first; a vector of all D is then a `DimensionMismatch`).
            pub fn initial_lengthscales(self, lengthscales: nalgebra::DVector<f64>) -> Self {
                self.lengthscale_init($crate::init::LengthscaleInit::Given(lengthscales))
            }
        }
    };
}

pub(crate) use training_builder;

/// The [`crate::model::Fit`] impls of a builder and its validated twin, both delegating to the
/// validated type's inherent `fit` and `name`.
macro_rules! impl_fit {
    ($params:ident, $valid:ident, $fitted:ident) => {
        impl $crate::model::Fit for $valid {
            type Fitted = $fitted;
            fn name(&self) -> &'static str {
                $valid::name(self)
            }
            fn fit(&self, data: &$crate::data::Dataset) -> $crate::error::Result<$fitted> {
                $valid::fit(self, data)
            }
        }

        impl $crate::model::Fit for $params {
            type Fitted = $fitted;
            fn name(&self) -> &'static str {
                self.0.name()
            }
            fn fit(&self, data: &$crate::data::Dataset) -> $crate::error::Result<$fitted> {
                $params::fit(self, data)
            }
        }

        impl $params {
            /// Validates the settings ([`ParamGuard::check_ref`](crate::params::ParamGuard))
            /// and trains on `data`: a [`Dataset`](crate::data::Dataset) or, with the `linfa`
            /// feature, a linfa `DatasetBase` ([`TrainingData`](crate::data::TrainingData)).
            ///
            /// # Errors
            /// The first invalid setting; the data's errors (as
            /// [`Dataset::new`](crate::data::Dataset::new)); then as the validated type's `fit`.
            pub fn fit<T: $crate::data::TrainingData + ?Sized>(
                &self,
                data: &T,
            ) -> $crate::error::Result<$fitted> {
                let checked = $crate::params::ParamGuard::check_ref(self)?;
                checked.fit(&*data.to_dataset()?)
            }
        }

        impl $valid {
            /// These settings with the relative noise floor resolved against the targets'
            /// variance `y_variance` ([`TrainingSettings`](crate::params::TrainingSettings)):
            /// what every entry point (fit, evidence, conditioning) works with.
            ///
            /// # Errors
            /// [`Error::InvalidParameter`](crate::error::Error::InvalidParameter) naming
            /// `noise_floor` for a floor above
            /// [`MAX_NOISE_FLOOR_RATIO`](crate::params::MAX_NOISE_FLOOR_RATIO)·`y_variance`.
            pub(crate) fn resolved_for(&self, y_variance: f64) -> $crate::error::Result<Self> {
                self.training
                    .check_noise_floor(y_variance, "the training targets' variance")?;
                let mut resolved = self.clone();
                resolved.training = self.training.resolved(y_variance);
                Ok(resolved)
            }
        }

        impl $crate::params::ParamGuard for $params {
            type Checked = $valid;
            fn check_ref(&self) -> $crate::error::Result<&$valid> {
                self.0.validate()?;
                Ok(&self.0)
            }
            fn check(self) -> $crate::error::Result<$valid> {
                self.0.validate()?;
                Ok(self.0)
            }
        }
    };
}

pub(crate) use impl_fit;
