//! The settings FITC and VFE share beside the training settings ([`Settings`]: m, the jitter on
//! K_uu, the start of the inducing inputs), their checks, the start, training and conditioning
//! both run, and the public methods both builders write alike ([`inducing_params`],
//! [`trained_methods`]).

use super::{
    centred_rows, greedy_inputs, kmeans, weights, working_bytes, Approximation, Fitted,
    InducingObjective,
};
use crate::data::{Dataset, InputColumns};
use crate::error::{Error, Result};
use crate::hyperparameters::{self, check_block, Hyperparameters};
use crate::init::{self, LengthscaleInit};
use crate::kernel::Covariance;
use crate::linalg::Jitter;
#[cfg(doc)]
use crate::optim::Phase;
use crate::params::TrainingSettings;
#[cfg(doc)]
use crate::termination::Remedy;
use crate::termination::TrainingSummary;
use nalgebra::{DMatrix, DVector};

/// Where the inducing inputs start when none are given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InducingStart {
    /// m distinct training inputs drawn at random with the seed (FITC's start).
    #[default]
    Subset,
    /// Lloyd's k-means centres of the training inputs (in inputs scaled by their standard
    /// deviations) after at most this many rounds, started from [`InducingStart::Subset`]:
    /// O(nmD) per round.
    KMeans(usize),
    /// The training inputs chosen greedily by their conditional variance under the starting
    /// hyperparameters (Burt, Rasmussen & van der Wilk 2020, §3): each next one the input with
    /// the largest $k(x_i, x_i) - Q_{ii}$ given those chosen before, a pivoted Cholesky of
    /// $K_{ff}$, O(nm² + nmD). It needs the start's lengthscales (with a fixed block and no
    /// given inputs, [`crate::full_gp`]'s start is computed for it). The choice itself draws
    /// nothing; the seed enters through the start's lengthscales where they are learned on a
    /// seeded subset (above 1 024 rows by default), and where the training inputs hold fewer
    /// than m distinct ones: the rest are then drawn in their bounding box, as [`Self::Subset`]'s.
    Greedy,
}

/// Which of the two models the shared code serves: its approximation and the words of its
/// messages (built by [`kind`] from the model's name and what it calls its inducing inputs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Kind {
    pub approx: Approximation,
    /// The model's name in messages ("FITC").
    pub model: &'static str,
    /// The model's optimiser where [`crate::optim::OptimConfig::method`] leaves it to the model.
    pub optimizer: crate::optim::Method,
    /// Why m = 0 is refused ("FITC needs at least one pseudo-input").
    pub too_few: &'static str,
    /// The builder's name of the given inputs ("pseudo_inputs").
    pub field: &'static str,
    /// The inputs in messages ("pseudo-inputs"), with their rows and columns.
    pub inputs: &'static str,
    pub rows: &'static str,
    pub columns: &'static str,
    /// θ while training ("FITC parameter vector").
    pub theta: &'static str,
    /// An evaluation's buffers in an allocation error.
    pub buffers: &'static str,
    /// The words of loading its saved form.
    #[cfg(feature = "serde")]
    pub saved: super::SavedWords,
}

/// The spreads of input columns an inducing-point model fits: its gradient squares the
/// differences between inputs and inducing inputs and divides by ℓ², which leave the normal
/// f64 numbers for columns much wider than 1e152 or narrower than 1e-152 (the start's ℓ is on
/// the column's scale).
pub(crate) const INPUT_SPREAD: (f64, f64) = (1e-152, 1e152);

/// Checks that each column of `data` (those of `columns`, in order) has a spread — its standard
/// deviation, 0 for a constant column, which the models ignore — in [`INPUT_SPREAD`].
///
/// # Errors
/// [`Error::Scale`] naming the column (by its index among all of the caller's columns), its
/// spread and the remedy.
fn check_input_spreads(data: &Dataset, columns: &InputColumns, model: &str) -> Result<()> {
    let (low, high) = INPUT_SPREAD;
    for (k, column) in data.x().column_iter().enumerate() {
        let spread = crate::data::standard_deviation(column.as_slice(), column.mean());
        let side = if spread > 0.0 && spread < low {
            "below"
        } else if spread > high {
            "above"
        } else {
            continue;
        };
        let index = columns.used().get(k).copied().unwrap_or(k);
        return Err(Error::Scale {
            what: format!(
                "input column {index}'s spread {spread:e} is {side} what {model} can fit in f64 \
                 (from {low:e} to {high:e}: its gradient squares the inputs' differences and \
                 divides them by the squared lengthscales); standardise the inputs \
                 (`ssgp::standardize::Standardized` scales each column to unit spread)"
            ),
        });
    }
    Ok(())
}

/// The [`Kind`] of `$approx`, trained by `$optimizer` by default, for the model `$model` ("FITC") that calls one inducing input `$one`
/// ("pseudo-input"), several `$inputs` ("pseudo-inputs") and their builder field `$field`
/// ("pseudo_inputs"), and saves its objective as `$objective` ("−log p(y|θ)").
macro_rules! kind {
    ($approx:ident, $optimizer:expr, $model:literal, $one:literal, $inputs:literal, $field:literal, $objective:literal) => {
        $crate::inducing::Kind {
            approx: $crate::inducing::Approximation::$approx,
            model: $model,
            optimizer: $optimizer,
            too_few: concat!($model, " needs at least one ", $one),
            field: $field,
            inputs: $inputs,
            rows: concat!($inputs, " (rows, m)"),
            columns: concat!($inputs, " (columns, D)"),
            theta: concat!($model, " parameter vector"),
            buffers: concat!(
                $model,
                "'s buffers (n×m kernel matrices and m×m factors); use fewer ",
                $inputs
            ),
            #[cfg(feature = "serde")]
            saved: $crate::inducing::SavedWords {
                m: concat!("num_", $field),
                weights: concat!($model, " weights (entries, m)"),
                factor: (
                    concat!($model, " factor_a (rows, m)"),
                    concat!($model, " factor_a (columns, m)"),
                ),
                centre: concat!($model, " centre (entries, D)"),
                theta: concat!($model, " parameters θ"),
                y_mean: concat!($model, " y_mean"),
                objective: concat!($model, " ", $objective),
                jitter: concat!($model, " jitter"),
            },
        }
    };
}

pub(crate) use kind;

/// What FITC's and VFE's validated settings hold beside the [`TrainingSettings`].
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub(crate) kind: &'static Kind,
    /// The number of inducing inputs m.
    pub(crate) m: usize,
    /// The jitter policy for $K_{uu}$.
    pub(crate) jitter: Jitter,
    /// Starting inducing inputs (m×D, one per row) instead of drawn ones.
    pub(crate) given: Option<DMatrix<f64>>,
    /// Whether the inducing inputs stay at their start.
    pub(crate) fixed: bool,
    /// Where they start when none are given.
    pub(crate) start: InducingStart,
    /// Whether a fit is judged by refits on 3/4 of the rows ([`Remedy::HeldOutRefit`]).
    pub(crate) held_out_check: bool,
}

impl Settings {
    /// `kind`'s settings with m inducing inputs, drawn from `start` and learned, and the
    /// relative jitter `jitter` on $K_{uu}$.
    pub(crate) fn new(kind: &'static Kind, m: usize, jitter: f64, start: InducingStart) -> Self {
        Self {
            kind,
            m,
            jitter: Jitter::relative(jitter),
            given: None,
            fixed: false,
            start,
            held_out_check: true,
        }
    }

    /// The settings of the held-out check's refit ([`TrainingSummary::judged_by_refit`]) on
    /// `fit` (the fit's used columns), from these and the unresolved `training`: the fit's
    /// `lengthscales` as the start (those of the columns that vary on `fit`; σ0², σn² and the
    /// inducing inputs from the start, so none is placed on a held-out row), at most as many
    /// inducing inputs as `fit` has rows (unless given), kept at their best point if training
    /// fails, the observer's reports in [`Phase::CalibrationCheck`], no check of its own.
    ///
    /// # Errors
    /// [`Error::EmptyData`] if no input column varies on `fit`.
    pub(crate) fn for_refit(
        &self,
        training: &TrainingSettings,
        fit: &Dataset,
        lengthscales: &DVector<f64>,
    ) -> Result<(Self, TrainingSettings)> {
        let columns = InputColumns::varying(fit)?;
        let used = columns.used();
        let mut training = training.reporting_as_check();
        training.lengthscales = LengthscaleInit::Given(DVector::from_iterator(
            used.len(),
            used.iter().map(|&j| lengthscales[j]),
        ));
        training.best_effort = true;
        let mut settings = self.clone();
        settings.held_out_check = false;
        if settings.given.is_none() {
            settings.m = settings.m.min(fit.len());
        }
        Ok((settings, training))
    }

    /// Validates the configuration (the parts that do not depend on the data), `training` after
    /// m.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for m = 0, a negative or non-finite noise floor or jitter, a
    /// bad optimiser budget, given inducing inputs without m rows, or bad initial lengthscales;
    /// [`Error::NonFinite`] for a NaN or infinity in the given inducing inputs.
    pub(crate) fn validate(&self, training: &TrainingSettings) -> Result<()> {
        if self.m == 0 {
            return Err(Error::InvalidParameter {
                name: "m",
                reason: self.kind.too_few.into(),
            });
        }
        training.validate()?;
        self.jitter.validate()?;
        if let Some(p) = &self.given {
            if p.nrows() != self.m {
                return Err(Error::InvalidParameter {
                    name: self.kind.field,
                    reason: format!("{} rows, but m = {}", p.nrows(), self.m),
                });
            }
            check_block(
                p,
                (self.m, self.kind.rows),
                (p.ncols(), self.kind.columns),
                self.kind.inputs,
            )?;
        }
        Ok(())
    }

    /// The starting inducing inputs for `data` restricted to the used `columns`: the given ones
    /// (checked against D, then restricted), or drawn by [`init::pseudo_inputs`] with the seed
    /// of `training` (and moved by k-means when so set), or chosen greedily under the starting
    /// hyperparameters `start` (computed from `training` when `None`).
    fn initial_inputs(
        &self,
        data: &Dataset,
        columns: &InputColumns,
        training: &TrainingSettings,
        start: Option<&Hyperparameters>,
    ) -> Result<DMatrix<f64>> {
        let kind = self.kind;
        match (&self.given, self.start) {
            (Some(given), _) => {
                check_block(
                    given,
                    (self.m, kind.rows),
                    (columns.dim(), kind.columns),
                    kind.inputs,
                )?;
                Ok(columns.select(given)?.into_owned())
            }
            (None, InducingStart::Subset) => init::pseudo_inputs(data, self.m, training.seed),
            (None, InducingStart::KMeans(rounds)) => {
                let subset = init::pseudo_inputs(data, self.m, training.seed)?;
                Ok(kmeans(data.x(), subset, rounds))
            }
            (None, InducingStart::Greedy) => {
                if self.m > data.len() {
                    return Err(Error::InvalidParameter {
                        name: "m",
                        reason: format!(
                            "{} {} cannot be chosen from {} training points",
                            self.m,
                            kind.inputs,
                            data.len()
                        ),
                    });
                }
                let computed;
                let hyper = match start {
                    Some(hyper) => hyper,
                    None => {
                        computed = crate::full_gp::start(data, training)?;
                        &computed
                    }
                };
                let covariance = Covariance {
                    kernel: training.kernel,
                    lengthscales: &hyper.lengthscales,
                    signal_variance: hyper.signal_variance,
                };
                greedy_inputs(data.x(), self.m, &covariance, training.seed)
            }
        }
    }

    /// [`Error::Allocation`] unless an evaluation's buffers on `data` ([`working_bytes`]) can be
    /// allocated: m comes from the caller, so a large one is an error, never an abort.
    fn check_buffers(&self, data: &Dataset, training: &TrainingSettings) -> Result<()> {
        let bytes = working_bytes(
            (data.len(), data.dim()),
            self.m,
            training.kernel,
            training.threads,
        );
        crate::linalg::check_allocation(bytes, self.kind.buffers)
    }

    /// The objective on `data` with `training`'s kernel, noise floor and threads, the inducing
    /// inputs held at `fixed` (m×D, in the inputs' own coordinates) when they are not learned.
    fn objective(
        &self,
        data: &Dataset,
        training: &TrainingSettings,
        fixed: Option<DMatrix<f64>>,
    ) -> InducingObjective {
        let kind = self.kind;
        let settings = (self.m, training, self.jitter);
        InducingObjective::new(data, settings, fixed, kind.approx, kind.theta)
    }

    /// The objective of these settings on `data` (`training` resolved): with fixed inducing
    /// inputs they are the given ones, or the seed's random subset of the training inputs.
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] if given inducing inputs do not have D columns;
    /// [`Error::InvalidParameter`] if m > n and none are given.
    pub(crate) fn evidence(
        &self,
        data: &Dataset,
        training: &TrainingSettings,
    ) -> Result<InducingObjective> {
        check_input_spreads(data, &InputColumns::all(data.dim()), self.kind.model)?;
        self.check_buffers(data, training)?;
        let fixed = if self.fixed {
            let all = InputColumns::all(data.dim());
            Some(self.initial_inputs(data, &all, training, None)?)
        } else {
            None
        };
        Ok(self.objective(data, training, fixed))
    }

    /// Trains on `data`, already restricted to the used `columns`, with `training` resolved:
    /// the start of [`crate::full_gp::start`] and [`Self::initial_inputs`], the optimiser, then
    /// [`Self::build`] at the full θ. Returns the model and tr(K_ff − Q_ff).
    pub(crate) fn fit_used(
        &self,
        data: &Dataset,
        columns: InputColumns,
        training: &TrainingSettings,
    ) -> Result<(Fitted, f64)> {
        check_input_spreads(data, &columns, self.kind.model)?;
        self.check_buffers(data, training)?;
        let start = crate::full_gp::start(data, training)?;
        let inducing = self.initial_inputs(data, &columns, training, Some(&start))?;
        let free = !self.fixed;
        let evidence = self.objective(data, training, self.fixed.then(|| inducing.clone()));
        let centred = centred_rows(&inducing, evidence.centre());
        let theta0 = hyperparameters::pack(&start, training.noise(), free.then_some(&centred));
        let report = if training.optim.method.is_none() {
            let mut own = training.clone();
            own.optim.method = Some(self.kind.optimizer);
            own.minimize(&evidence, theta0)?
        } else {
            training.minimize(&evidence, theta0)?
        };
        let theta = hyperparameters::with_fixed_block(&report.theta, &centred, self.fixed);
        let summary = TrainingSummary::new(&report, &columns).on_inputs(data.x())?;
        self.build(data, theta, training, Some(summary), columns)
    }

    /// Factorises at the full θ (`training` resolved) and caches what prediction needs (β, L_u,
    /// L_A); without a training summary, the untrained one at θ; FITC's carries its exact
    /// leave-one-out diagnostic. Returns the model and tr(K_ff − Q_ff).
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] for a θ of the wrong length, [`Error::NonFinite`] for a NaN
    /// or infinity in θ, [`Error::NotPositiveDefinite`] if θ cannot be factored.
    pub(crate) fn build(
        &self,
        data: &Dataset,
        theta: DVector<f64>,
        training: &TrainingSettings,
        summary: Option<TrainingSummary>,
        columns: InputColumns,
    ) -> Result<(Fitted, f64)> {
        self.check_buffers(data, training)?;
        let evidence = self.objective(data, training, None);
        let (decoded, f) = evidence.factors(&theta)?;
        let mut summary = summary.unwrap_or_else(|| TrainingSummary::untrained(f.neg_log_evidence));
        let vfe_signal_variance =
            (self.kind.approx == Approximation::Vfe).then_some(decoded.hyper.signal_variance);
        summary.diagnostic = super::loo_diagnostic(
            &f,
            crate::linalg::par(training.threads),
            vfe_signal_variance,
        );
        let weights = weights(&f, crate::linalg::par(training.threads));
        let fit = Fitted {
            kernel: training.kernel,
            hyper: decoded.hyper,
            inducing: decoded.block.into_owned(),
            centre: evidence.centre().clone(),
            jitter: f.jitter,
            l_u: f.l_u,
            l_a: f.l_a,
            weights,
            record: training.record(theta, data.y_mean(), f.neg_log_evidence, summary, columns),
        };
        Ok((fit, f.trace))
    }
}

/// The builder `$params` of FITC or VFE (wrapping `$valid`, whose fields are the `training`
/// settings and the `inducing` [`Settings`] of [`Kind`] `$kind`, relative jitter `$jitter` by
/// default) with the methods both write alike, its [`crate::params::training_builder`] methods
/// and [`crate::model::Fit`] impls: `$what` is what the model calls its inducing inputs (in the
/// docs), `$name` its short name, `$given` and `$fixed` the names of the setters of given and
/// fixed inducing inputs; the docs of the two setters whose docs are the model's own come after
/// their names.
macro_rules! inducing_params {
    (
        $params:ident, $valid:ident => $fitted:ident, $kind:ident, $jitter:ident, $start:expr;
        $name:literal, $what:literal, $given:ident, $fixed:ident;
        jitter: $(#[$jitter_doc:meta])*
        initial_lengthscales_from_full_gp: $(#[$subset_doc:meta])*
    ) => {
        impl $params {
            pub(crate) fn new(m: usize) -> Self {
                Self($valid {
                    training: $crate::params::TrainingSettings {
                        lengthscales: $crate::init::DEFAULT_START,
                        ..$crate::params::TrainingSettings::default()
                    },
                    inducing: $crate::inducing::Settings::new(&$kind, m, $jitter, $start),
                })
            }

            $(#[$jitter_doc])*
            pub fn jitter(self, jitter: f64) -> Self {
                self.jitter_policy($crate::linalg::Jitter::absolute(jitter))
            }

            /// The jitter policy for $K_{uu}$ (see [`Jitter`](crate::linalg::Jitter)).
            pub fn jitter_policy(mut self, jitter: $crate::linalg::Jitter) -> Self {
                self.0.inducing.jitter = jitter;
                self
            }

            #[doc = concat!("Starting ", $what, " X̄ (m×D, one per row) instead of those the")]
            /// start chooses from the training inputs.
            pub fn $given(mut self, $given: nalgebra::DMatrix<f64>) -> Self {
                self.0.inducing.given = Some($given);
                self
            }

            #[doc = concat!("Keeps the ", $what, " at their starting values and learns only the")]
            /// D + 2 hyperparameters.
            pub fn $fixed(mut self, fixed: bool) -> Self {
                self.0.inducing.fixed = fixed;
                self
            }

            /// Whether the fit is judged by refits on 3/4 of the rows, each scored on the other 1/4
            /// ([`Remedy::HeldOutRefit`](crate::Remedy::HeldOutRefit); default true): from
            /// [`Remedy::MIN_CHECKED_INPUTS`](crate::Remedy::MIN_CHECKED_INPUTS) distinct inputs
            /// up to [`Remedy::HELD_OUT_CHECK_MAX_ROWS`](crate::Remedy::HELD_OUT_CHECK_MAX_ROWS)
            #[doc = concat!("rows, at the cost of one to four more trainings on 3/4 of the rows (from the fit's lengthscales, the ", $what, " from the start). Off, the fit is judged by its LOO alone, which is optimistic where the ", $what, " and lengthscales can fit single rows. The model is the same either way.")]
            pub fn held_out_check(mut self, check: bool) -> Self {
                self.0.inducing.held_out_check = check;
                self
            }

            $(#[$subset_doc])*
            pub fn initial_lengthscales_from_full_gp(self, subset: usize) -> Self {
                self.lengthscale_init($crate::init::LengthscaleInit::FullGpSubset(subset))
            }
        }

        $crate::params::training_builder!($params);
        $crate::params::impl_fit!($params, $valid, $fitted);

        impl $valid {
            /// Validates the configuration (the parts that do not depend on the data).
            ///
            /// # Errors
            /// As [`Settings::validate`](crate::inducing::Settings::validate).
            fn validate(&self) -> $crate::error::Result<()> {
                self.inducing.validate(&self.training)
            }

            #[doc = concat!("`", $name, "`.")]
            pub fn name(&self) -> &'static str {
                $name
            }

            #[doc = concat!("The number of ", $what, " m.")]
            pub fn m(&self) -> usize {
                self.inducing.m
            }

            /// The settings shared with the other models (seed, optimiser, threads, noise floor,
            /// ℓ start).
            pub fn training(&self) -> &$crate::params::TrainingSettings {
                &self.training
            }
        }
    };
}

pub(crate) use inducing_params;

/// The training entry points of FITC's or VFE's validated settings `$valid`: its objective
/// `$evidence` (a newtype of [`InducingObjective`]) on data, training into `$fitted` (from the
/// model and tr(K_ff − Q_ff)), and conditioning at given parameters; each method's docs, the
/// model's own, come after its name.
macro_rules! trained_methods {
    (
        $valid:ident => $evidence:ident, $fitted:ident;
        evidence: $(#[$evidence_doc:meta])*
        fit: $(#[$fit_doc:meta])*
        condition: $(#[$condition_doc:meta])*
    ) => {
        impl $valid {
            $(#[$evidence_doc])*
            pub fn evidence(
                &self,
                data: &$crate::data::Dataset,
            ) -> $crate::error::Result<$evidence> {
                let this = self.resolved_for(data.y_variance())?;
                this.inducing.evidence(data, &this.training).map($evidence)
            }

            $(#[$fit_doc])*
            pub fn fit(&self, data: &$crate::data::Dataset) -> $crate::error::Result<$fitted> {
                let columns = $crate::data::InputColumns::varying(data)?;
                let used = columns.select_data(data)?;
                let data = used.as_ref();
                let this = self.resolved_for(data.y_variance())?;
                let (mut fitted, trace) = this.inducing.fit_used(data, columns, &this.training)?;
                if this.inducing.held_out_check {
                    let lengthscales = fitted.hyper.lengthscales.clone();
                    let training = fitted.record.training.clone();
                    fitted.record.training =
                        training.judged_by_refit(data, this.training.seed, |fit, held| {
                            let (inducing, training) =
                                self.inducing.for_refit(&self.training, fit, &lengthscales)?;
                            let refit = $valid { training, inducing }.fit(fit)?;
                            let p = $crate::model::FittedRegressor::predict(&refit, held.x())?;
                            Ok((p, refit.fit.record.y_mean))
                        })?;
                }
                Ok($fitted::from_fit((fitted, trace)))
            }

            $(#[$condition_doc])*
            pub fn condition(
                &self,
                data: &$crate::data::Dataset,
                theta: &nalgebra::DVector<f64>,
            ) -> $crate::error::Result<$fitted> {
                let this = self.resolved_for(data.y_variance())?;
                let columns = $crate::data::InputColumns::all(data.dim());
                let fitted = this.inducing.build(data, theta.clone(), &this.training, None, columns)?;
                Ok($fitted::from_fit(fitted))
            }
        }
    };
}

pub(crate) use trained_methods;
