//! How a training run ended and went: [`Termination`] (success, spent budget or failure),
//! [`FailedTraining`] with the best parameters of a failed run, and every model's
//! [`TrainingSummary`]. A leaf: it imports nothing else from the crate, so the error type can
//! carry a failed run without depending on the optimiser (argmin keeps `core/termination.rs` the
//! same way).

use nalgebra::DVector;
use std::fmt;
#[cfg(doc)]
use std::ops::ControlFlow;

/// Why the optimiser stopped. [`Termination::is_success`] tells the outcomes a model may be
/// trusted after (convergence, a spent budget, a requested stop) from the failures.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Termination {
    /// Success: −log p decreased by at most `tolerance`·(value scale) over the last `window`
    /// iterations — a flat objective.
    Converged,
    /// Success: the gradient's largest entry fell to `gradient_tolerance`·(value scale) or below.
    SmallGradient,
    /// Success (budget): the iteration budget ran out.
    MaxIterations,
    /// Success (budget): the evaluation budget ran out.
    MaxEvaluations,
    /// Success (budget): the wall-clock budget ran out.
    TimeLimit,
    /// Success (requested): the observer returned [`ControlFlow::Break`].
    StoppedByObserver,
    /// No iteration was allowed (`max_iterations` = 0) or the model was built at given
    /// parameters: θ₀ evaluated only.
    NotStarted,
    /// Failure: two line searches in a row (the second along −∇) found no step meeting the
    /// Wolfe conditions; the message says more. The best θ seen is kept.
    LineSearchFailed(String),
    /// Failure: the objective failed (a Cholesky factorisation, a non-finite value) at the trial
    /// points of two line searches in a row, even after backing off; the message is the last
    /// failure. The best θ seen is kept.
    EvaluationFailed(String),
    /// Failure: argmin reported an error of its own (the message).
    OptimiserError(String),
}

impl Termination {
    /// Whether the run ended as it should: converged, a budget spent, or a requested stop.
    pub fn is_success(&self) -> bool {
        !matches!(
            self,
            Self::LineSearchFailed(_) | Self::EvaluationFailed(_) | Self::OptimiserError(_)
        )
    }
}

impl fmt::Display for Termination {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Converged => write!(f, "converged (flat objective)"),
            Self::SmallGradient => write!(f, "converged (small gradient)"),
            Self::MaxIterations => write!(f, "iteration budget spent"),
            Self::MaxEvaluations => write!(f, "evaluation budget spent"),
            Self::TimeLimit => write!(f, "time budget spent"),
            Self::StoppedByObserver => write!(f, "stopped by the observer"),
            Self::NotStarted => write!(f, "not trained"),
            Self::LineSearchFailed(m) => write!(f, "failed: line search: {m}"),
            Self::EvaluationFailed(m) => write!(f, "failed: evaluation: {m}"),
            Self::OptimiserError(m) => write!(f, "failed: optimiser: {m}"),
        }
    }
}

/// A training run that ended by a failure: why, and the best parameters it found (returned in
/// [`Error::TrainingFailed`](crate::error::Error::TrainingFailed) unless best-effort training was asked for).
#[derive(Debug, Clone, PartialEq)]
pub struct FailedTraining {
    /// The failure.
    pub termination: Termination,
    /// The best parameters found, in the model's θ layout.
    pub theta: DVector<f64>,
    /// −log p(y|θ) there.
    pub neg_log_evidence: f64,
    /// −log p(y|θ) at the start.
    pub initial_neg_log_evidence: f64,
    /// Iterations run.
    pub iterations: u64,
    /// Evaluations used.
    pub evaluations: usize,
}

impl fmt::Display for FailedTraining {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "training {} after {} iterations and {} evaluations; the best −log p(y|θ) found was \
             {} (from {} at the start); set `best_effort(true)` to keep that model",
            self.termination,
            self.iterations,
            self.evaluations,
            self.neg_log_evidence,
            self.initial_neg_log_evidence
        )
    }
}

/// How a training run went. For VFE the objective is −F, the negated variational bound
/// (≥ −log p(y|θ)), and its two `neg_log_evidence` fields hold −F.
///
/// ```
/// use ssgp::rand::{rngs::StdRng, SeedableRng};
/// use ssgp::{data::sinc_data, Ssgp};
///
/// let train = sinc_data(100, false, 0.05, &mut StdRng::seed_from_u64(0))?;
/// let fitted = Ssgp::params(10).seed(1).max_evaluations(100).fit(&train)?;
/// let summary = fitted.training();
/// println!("{} iterations, {} evaluations: {}", summary.iterations, summary.evaluations,
///     summary.termination);
/// println!("{}", summary.diagnosis());    // the LOO's and the held-out rows' numbers, any flags
/// if summary.is_flagged() {
///     eprintln!("these error bars need care: {}", summary.flags());
/// }
/// assert!(summary.termination.is_success());
/// # Ok::<(), ssgp::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct TrainingSummary {
    /// −log p(y|θ) at the initial parameters (after any initial draws were compared).
    pub initial_neg_log_evidence: f64,
    /// −log p(y|θ) where the optimiser ended; never above the initial value. A model the
    /// calibration check rescaled (or kept on 3/4 of the rows) reports its own value at its
    /// scaled θ on every training row as `neg_log_evidence()` (e.g.
    /// [`FittedSsgp::neg_log_evidence`](crate::FittedSsgp::neg_log_evidence)).
    pub neg_log_evidence: f64,
    /// Optimiser iterations (line searches).
    pub iterations: u64,
    /// Objective evaluations (value and gradient), initial draws excluded.
    pub evaluations: usize,
    /// Why the optimiser stopped.
    pub termination: Termination,
    /// Input columns left out because they are constant on the training data (zero-based).
    pub ignored_inputs: Vec<usize>,
    /// Whether the noise variance ended its training at its floor (σn² within 1 % of it): the
    /// data asked for less noise than the floor allows — noise-free data under the default
    /// relative floor (`params::DEFAULT_RELATIVE_NOISE_FLOOR`), or an overfitted noise under a
    /// floor of yours. The predictive variances then carry the floor, not a learned noise (times
    /// the factor of a calibration check that widened the fit, which keeps the flag).
    pub noise_at_floor: bool,
    /// The fit's calibration on its own training data by exact leave-one-out, without test data
    /// ([`LooDiagnostic`]); `None` for a model loaded from a format-2 file (saved before the
    /// diagnostic existed) and for models implemented outside the crate.
    pub diagnostic: Option<LooDiagnostic>,
    /// What SSGP's calibration check did ([`Remedy`]); for the full GP, FITC and VFE
    /// [`Remedy::FewInputs`] on fewer than [`Remedy::MIN_CHECKED_INPUTS`] distinct inputs, where
    /// their LOO cannot check the error bars between them, and their held-out check
    /// ([`Remedy::HeldOutRefit`]) up to [`Remedy::HELD_OUT_CHECK_MAX_ROWS`] rows. `None` for
    /// those models' other fits (more rows, the check off, a refit that failed), for an SSGP
    /// fitted with the check off, for a model at given θ without training, and for a model
    /// loaded from a file saved before the check existed (format 2 or 3; format 14 or earlier
    /// for the full GP, FITC and VFE).
    pub remedy: Option<Remedy>,
}

/// What SSGP's calibration check (`ssgp::CalibrationGuard`, issue 17) did: whether the learned fit
/// was kept or the random-feature fit (spectral points drawn from the kernel at the start's
/// lengthscales, held fixed with them; σ0² and σn² trained) replaced it, and on what evidence;
/// for the full GP, FITC and VFE, what judged their fit ([`Remedy::FewInputs`],
/// [`Remedy::HeldOutRefit`]).
///
/// ```
/// use ssgp::rand::{rngs::StdRng, SeedableRng};
/// use ssgp::{data::sinc_data, Ssgp};
///
/// let train = sinc_data(100, false, 0.05, &mut StdRng::seed_from_u64(0))?;
/// let fitted = Ssgp::params(10).seed(1).max_evaluations(100).fit(&train)?;
/// if let Some(remedy) = fitted.training().remedy {
///     println!("{remedy}");             // which fit was kept, and the held-out rows' scores
///     println!("random features: {}, training mean: {}, variances × {:.3}",
///         remedy.random_features(), remedy.mean_kept(), remedy.variance_scale());
/// }
/// # Ok::<(), ssgp::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
pub enum Remedy {
    /// Both fits were trained on 3/4 of the rows and scored by their mean negative log
    /// predictive density on the other 1/4, each with its predictive variances multiplied by the
    /// factor the held-out rows ask for (their mean z², where it differs from 1 beyond chance; a
    /// learned fit is only widened on fewer than
    /// [`CalibrationGuard::LEARNED_SCALE_MIN_HELD_OUT_ROWS`](crate::ssgp::CalibrationGuard::LEARNED_SCALE_MIN_HELD_OUT_ROWS)
    /// held-out rows unless they hold as many distinct inputs as early stopping needs rows, and
    /// not scaled on fewer rows than that; from
    /// [`CalibrationGuard::EARLY_STOPPING_MIN_HELD_OUT_ROWS`](crate::ssgp::CalibrationGuard::EARLY_STOPPING_MIN_HELD_OUT_ROWS)
    /// of them the learned fit was stopped early, `learned_budget`); the
    /// one with the lower MNLP was refitted on all rows (the random-feature
    /// fit when `random_features_mnlp < learned_mnlp` or `random_features_by_margin`; a widened
    /// learned fit is kept as it was
    /// trained instead, `on_comparison_rows`, its −log p(y|θ) that of its θ on every training
    /// row) and its σ0² and σn² multiplied by its factor, `variance_scale`. Above
    /// [`CalibrationGuard::HELD_OUT_MAX_ROWS`](crate::ssgp::CalibrationGuard::HELD_OUT_MAX_ROWS)
    /// rows: the fits were trained on half the rows (the learned one with half the evaluations)
    /// and scored on the other half, the learned fit's factor free to widen, and a winning
    /// learned fit is the one trained on all rows, scaled. The training mean, N(ȳ, s·var y) of
    /// the rows the fits were trained on, is scored too: unless the winner's MNLP is lower than
    /// the mean's (from
    /// [`CalibrationGuard::EARLY_STOPPING_MIN_HELD_OUT_ROWS`](crate::ssgp::CalibrationGuard::EARLY_STOPPING_MIN_HELD_OUT_ROWS)
    /// held-out rows, by more than one standard error of their row-by-row difference: the
    /// one-standard-error rule, as for a widened learned fit), the model is the training mean
    /// on all rows (`mean_kept`) — the inputs explained nothing the held-out rows can tell
    /// from chance.
    HeldOut {
        /// The learned fit's held-out MNLP (`f64::MAX` if not finite; the multi-output check's
        /// is summed over the outputs, as the fits are compared).
        learned_mnlp: f64,
        /// The random-feature fit's held-out MNLP (`f64::MAX` if not finite; summed over the
        /// outputs as `learned_mnlp`).
        random_features_mnlp: f64,
        /// The factor s on the kept fit's σ0² and σn² (so on every predictive variance; the
        /// mean is unchanged): for a widened random-feature fit the least factor its held-out
        /// rows ask for (their mean z² divided by 1 + 2√(2/rows), which leaves it at the edge of
        /// chance), and so for a learned fit refitted where 55–99 held-out rows hold as many
        /// distinct inputs; for a learned fit refitted on all rows and not widened, at most the
        /// noise level its held-out rows measured (its z² there × σn² of the 3/4 fit over its
        /// own); else the one it was compared with; 1 in files saved before it existed.
        #[cfg_attr(feature = "serde", serde(default = "unit_scale"))]
        variance_scale: f64,
        /// The kept candidate's calibration on the held-out rows, its variances multiplied by
        /// `variance_scale`: what [`TrainingSummary::flags`] judges the fit's error bars by.
        /// `None` in files saved before it existed.
        #[cfg_attr(
            feature = "serde",
            serde(default, skip_serializing_if = "Option::is_none")
        )]
        held_out: Option<HeldOutCalibration>,
        /// Whether the kept fit is the comparison's learned candidate itself, trained on the
        /// 3/4 of the rows not held out and not refitted on all rows: a learned fit the held-out
        /// rows widen (with at least
        /// [`CalibrationGuard::LEARNED_SCALE_MIN_HELD_OUT_ROWS`](crate::ssgp::CalibrationGuard::LEARNED_SCALE_MIN_HELD_OUT_ROWS)
        /// of them; on fewer, a widened learned fit is refitted on all rows). Its θ, −log p(y|θ) and LOO diagnostic are on those rows. `false` in files
        /// saved before it existed.
        #[cfg_attr(feature = "serde", serde(default))]
        on_comparison_rows: bool,
        /// The evaluation budget the held-out rows chose for the learned fit (early stopping),
        /// when the comparison scored it after 1/32, 1/16, …, 1 of `max_evaluations` (from
        /// [`CalibrationGuard::EARLY_STOPPING_MIN_HELD_OUT_ROWS`](crate::ssgp::CalibrationGuard::EARLY_STOPPING_MIN_HELD_OUT_ROWS)
        /// held-out rows, up to
        /// [`CalibrationGuard::HELD_OUT_MAX_ROWS`](crate::ssgp::CalibrationGuard::HELD_OUT_MAX_ROWS)
        /// training points); a kept learned fit was trained with it, so its `termination` is
        /// the exhausted budget when it is below `max_evaluations`. `None` when the learned fit
        /// ran with the whole budget only, and in files saved before it existed.
        #[cfg_attr(
            feature = "serde",
            serde(default, skip_serializing_if = "Option::is_none")
        )]
        learned_budget: Option<usize>,
        /// Whether the random-feature fit was kept although the learned fit's held-out MNLP was
        /// lower: a learned fit widened on fewer than
        /// [`CalibrationGuard::LEARNED_SCALE_MIN_HELD_OUT_ROWS`](crate::ssgp::CalibrationGuard::LEARNED_SCALE_MIN_HELD_OUT_ROWS)
        /// held-out rows must lead by more than one standard error of the row-by-row difference
        /// of the two fits' negative log predictive densities (the one-standard-error rule), and
        /// this one did not. `false` in files saved before it existed.
        #[cfg_attr(feature = "serde", serde(default))]
        random_features_by_margin: bool,
        /// How many hyperparameters the lengthscale start learned from the training rows, the
        /// held-out ones included (D + 2 for the full GP of
        /// [`LengthscaleInit::FullGpSubset`](crate::init::LengthscaleInit::FullGpSubset); 0 for
        /// a start that learned nothing from the data, and in files saved before it existed).
        #[cfg_attr(feature = "serde", serde(default))]
        start_hyperparameters: usize,
        /// The rows the lengthscale start learned them on (0 as above).
        #[cfg_attr(feature = "serde", serde(default))]
        start_rows: usize,
        /// The training mean's held-out MNLP (`f64::MAX` if not finite; for the multi-output
        /// check, the outputs' summed MNLP with this output's mean in place of its fit, beside
        /// the summed MNLPs above; `None` in files saved before it was scored).
        #[cfg_attr(
            feature = "serde",
            serde(default, skip_serializing_if = "Option::is_none")
        )]
        mean_mnlp: Option<f64>,
        /// Whether the model is the training mean: the kept fit's held-out MNLP was not lower
        /// than the mean's (by more than one standard error, from 55 held-out rows). Its predictive is N(ȳ, s·var y) on
        /// all rows (an SSGP whose σ0² is 10⁻⁴⁰ of its σn² = var y, so that every weight's
        /// posterior mean vanishes), `held_out` and `variance_scale` are the mean's. `false` in
        /// files saved before it existed.
        #[cfg_attr(feature = "serde", serde(default))]
        mean_kept: bool,
    },
    /// Too few rows for the held-out comparison: the learned fit was kept, its LOO diagnostic
    /// not fitting the training points too well. Saved by earlier builds only, for a
    /// distributed fit below 100 held-out rows and one process's fits on fewer than 20 rows
    /// (both now [`Remedy::FewInputs`], flagged), and above `HELD_OUT_MAX_ROWS` rows, which then
    /// kept such a learned fit unchecked.
    LooChecked,
    /// Too few rows for the held-out comparison: the learned fit's LOO diagnostic
    /// fitted its training points too well ([`LooDiagnostic::fits_too_well`]), and the
    /// random-feature fit replaced it. Saved by earlier builds only, for a distributed fit below
    /// 100 held-out rows and one process's fits on fewer than 20 rows (both now
    /// [`Remedy::FewInputs`]).
    LooFitsTooWell,
    /// The random-feature fit, as asked for (`CalibrationGuard::RandomFeatures`).
    RandomFeatures,
    /// Too few distinct inputs for the held-out comparison (fewer than
    /// [`CalibrationGuard::HELD_OUT_MIN_ROWS`](crate::ssgp::CalibrationGuard::HELD_OUT_MIN_ROWS),
    /// or fewer rows than that: none to hold out; across MPI ranks, fewer than 100 held-out
    /// rows, about 200 rows, `inputs` then the ranks' distinct inputs summed); the rows of a replicated input are held out
    /// together, so the comparison would judge
    /// the error bars by one to four inputs: on 80 rows of 2 inputs it widened them
    /// ×2·10⁴. The learned fit was judged by its LOO diagnostic instead (on fewer rows than
    /// that and no more than its m·D frequencies, the random-feature fit was kept without it).
    /// That LOO leaves out one row of a replicated input, not the input, and cannot see
    /// frequencies fitted to the rows it leaves out, so it vouches for the error bars at most at
    /// the training inputs and not between them: the fit is flagged
    /// ([`Flags::few_inputs`]). Either fit is kept at its best point if its line search stalls
    /// (near noise-free data; the summary's termination says so). Before the eighteenth
    /// session a fit on fewer than 20 rows was
    /// saved as [`Remedy::LooChecked`] or [`Remedy::LooFitsTooWell`], unflagged. The full GP,
    /// FITC and VFE, which have no check, are flagged so on fewer than
    /// [`Remedy::MIN_CHECKED_INPUTS`] distinct inputs (their learned fit, LOO checked).
    FewInputs {
        /// The number of distinct input rows among the training points.
        inputs: usize,
        /// Whether the learned fit's LOO diagnostic fitted its training points too well
        /// ([`LooDiagnostic::fits_too_well`]) and the random-feature fit replaced it.
        random_features: bool,
    },
    /// The held-out check of the full GP, FITC and VFE (their `held_out_check`, on by default;
    /// from [`Remedy::MIN_CHECKED_INPUTS`] distinct inputs up to
    /// [`Remedy::HELD_OUT_CHECK_MAX_ROWS`] rows): the rows cut into
    /// [`Remedy::HELD_OUT_CHECK_FOLDS`] folds of whole groups of equal inputs (as SSGP's check
    /// splits them), the model as configured refitted on all folds but one (from the fit's
    /// lengthscales) and scored on that one, in turn, until
    /// [`Remedy::HELD_OUT_CHECK_SCORED_ROWS`] rows are scored; `held_out` the mean z² and NMSE
    /// over every row so scored. The fit itself is the one trained on all rows, unchanged: the refits
    /// judge its error bars and accuracy where the LOO cannot — a LOO at hyperparameters
    /// learned on the rows it leaves out is optimistic with few rows per hyperparameter (the
    /// full GP on 400 rows of 100 inputs: LOO mean z² 0.90, test 2.50; FITC's 50 pseudo-inputs
    /// on 100 rows of 9 inputs: 0.73 and 3.18) and where inputs repeat.
    HeldOutRefit {
        /// The refits' mean z² and NMSE on the rows each held out.
        held_out: HeldOutCalibration,
    },
}

/// The variance factor of a held-out check saved without one (it scaled nothing).
#[cfg(feature = "serde")]
fn unit_scale() -> f64 {
    1.0
}

#[cfg(test)]
impl Remedy {
    /// A held-out check's record for tests: the two fits' held-out MNLPs, the kept one's factor
    /// and calibration, every other field at its plainest (refitted on all rows, the whole
    /// budget, no margin, no start learned, no mean scored).
    pub(crate) fn held_out_for_test(
        (learned_mnlp, random_features_mnlp): (f64, f64),
        variance_scale: f64,
        held_out: Option<HeldOutCalibration>,
    ) -> Self {
        Self::HeldOut {
            learned_mnlp,
            random_features_mnlp,
            variance_scale,
            held_out,
            on_comparison_rows: false,
            learned_budget: None,
            random_features_by_margin: false,
            start_hyperparameters: 0,
            start_rows: 0,
            mean_mnlp: None,
            mean_kept: false,
        }
    }
}

impl Remedy {
    /// The fewest rows per hyperparameter of the lengthscale start for which a held-out check
    /// vouches for the error bars ([`Remedy::start_overfits`]).
    pub const START_ROWS_PER_HYPERPARAMETER: usize = 2;

    /// The fewest distinct training inputs on which a fit's error bars are checked between them:
    /// below, every model's fit is flagged ([`Remedy::FewInputs`], [`Flags::few_inputs`]) and
    /// SSGP's calibration check holds no rows out
    /// ([`CalibrationGuard::HELD_OUT_MIN_ROWS`](crate::ssgp::CalibrationGuard::HELD_OUT_MIN_ROWS)).
    /// A LOO checks them at the training inputs, with hyperparameters learned there: on
    /// generated tables of 6–39 rows (D = 1–5, seed 1; 192 per model) it left unflagged 78 of
    /// the full GP's 85 bad fits (NMSE > 1 or test mean z² > 2, up to 1 300), 94 of FITC's 108
    /// and 25 of VFE's 26; from 45 rows the full GP and VFE had none.
    pub const MIN_CHECKED_INPUTS: usize = 40;

    /// The most training rows on which the full GP, FITC and VFE run their held-out check
    /// ([`Remedy::HeldOutRefit`]), as SSGP's check compares its fits on 3/4 of the rows up to
    /// [`CalibrationGuard::HELD_OUT_MAX_ROWS`](crate::ssgp::CalibrationGuard::HELD_OUT_MAX_ROWS)
    /// rows; above, their fits are judged by the LOO, which had at least 10 rows per kernel
    /// hyperparameter on every such table of the calibration suites.
    pub const HELD_OUT_CHECK_MAX_ROWS: usize = 2000;

    /// The folds of the held-out check of the full GP, FITC and VFE ([`Remedy::HeldOutRefit`]):
    /// each is held out from one refit on the others, so every row is scored once. With one fold
    /// (a quarter of the rows, as SSGP's check holds out) the full GP's held-out mean z² on 12–200
    /// rows strayed from its test rows' by up to 0.5: on the calibration suite, the messy tables
    /// and eight wide ones (seed 1) it caught 8 of the 11 fits bad on test data and flagged 16 of
    /// the 43 others; four folds catch 11 and flag 12 (see the guide).
    pub const HELD_OUT_CHECK_FOLDS: usize = 4;

    /// The rows the held-out check of the full GP, FITC and VFE scores before it stops refitting
    /// ([`Remedy::HeldOutRefit`]): the folds are refitted in turn until this many rows are
    /// scored or every fold is — four refits up to 533 rows, one from 1 600 — so that its cost
    /// stays near one training on 3/4 of the rows where those rows are many, while its mean z²
    /// strays from 1 by chance by at most 2·√(2/400) = 0.14.
    pub const HELD_OUT_CHECK_SCORED_ROWS: usize = 400;

    /// Whether the held-out check cannot vouch for the fit's error bars: both of its fits
    /// start from lengthscales a full GP learned on the training rows, held-out ones included,
    /// with more than one hyperparameter per [`Remedy::START_ROWS_PER_HYPERPARAMETER`] rows,
    /// so the held-out rows were fitted too. On the calibration suite (`examples/calibration.rs`,
    /// seeds 0–5, 48 such fits among 216: n ≤ 300 with D > n/2 − 2) every such fit was flagged
    /// already (predicting about the mean) or bad on test data: n = 50, D = 50 overconfident on
    /// every seed (test mean z² 12.8–30.5, held-out 1.0–1.5), and four fits worse than the mean
    /// (test NMSE 1.01–1.10). The suite's next fewest rows per hyperparameter are n = 50,
    /// D = 20 (2.3 rows each) and n = 150, D = 60 (2.4), not flagged by this.
    pub fn start_overfits(&self) -> bool {
        match self {
            Self::HeldOut {
                start_hyperparameters,
                start_rows,
                mean_kept,
                ..
            } => {
                // The training mean does not depend on the lengthscales.
                !*mean_kept
                    && *start_rows > 0
                    && *start_rows < Self::START_ROWS_PER_HYPERPARAMETER * *start_hyperparameters
            }
            _ => false,
        }
    }

    /// The factor s the kept fit's σ0² and σn² were multiplied by (1 but for a held-out check
    /// that scaled them).
    pub fn variance_scale(&self) -> f64 {
        match self {
            Self::HeldOut { variance_scale, .. } => *variance_scale,
            _ => 1.0,
        }
    }

    /// Whether the model is the training mean ([`Remedy::HeldOut`]'s `mean_kept`).
    pub fn mean_kept(&self) -> bool {
        matches!(
            self,
            Self::HeldOut {
                mean_kept: true,
                ..
            }
        )
    }

    /// Whether the model is the random-feature fit (not the learned one, nor the training mean).
    pub fn random_features(&self) -> bool {
        match self {
            Self::HeldOut {
                learned_mnlp,
                random_features_mnlp,
                random_features_by_margin,
                mean_kept,
                ..
            } => !*mean_kept && (*random_features_by_margin || random_features_mnlp < learned_mnlp),
            Self::LooChecked => false,
            Self::LooFitsTooWell | Self::RandomFeatures => true,
            Self::FewInputs {
                random_features, ..
            } => *random_features,
            Self::HeldOutRefit { .. } => false,
        }
    }
}

impl fmt::Display for Remedy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kept = if self.mean_kept() {
            "the training mean"
        } else if self.random_features() {
            "random-feature fit"
        } else {
            "learned fit"
        };
        match self {
            Self::HeldOut {
                learned_mnlp,
                random_features_mnlp,
                variance_scale,
                held_out,
                on_comparison_rows,
                learned_budget,
                random_features_by_margin,
                mean_mnlp,
                ..
            } => {
                let rows = if *on_comparison_rows {
                    " on the comparison's 3/4 of the rows"
                } else {
                    ""
                };
                write!(f, "{kept}{rows} (held-out MNLP {learned_mnlp:.3} learned")?;
                if let Some(b) = learned_budget {
                    write!(f, " stopped at {b} evaluations")?;
                }
                write!(f, ", {random_features_mnlp:.3} random features")?;
                if *random_features_by_margin {
                    write!(f, ", the widened learned fit within one standard error")?;
                }
                if let Some(mean) = mean_mnlp {
                    write!(f, ", {mean:.3} the training mean")?;
                    if self.mean_kept() {
                        write!(f, ", neither fit better")?;
                    }
                }
                write!(f, "; variances ×{variance_scale:.3}")?;
                if let Some(h) = held_out {
                    write!(f, "; {h}")?;
                }
                write!(f, ")")
            }
            Self::LooChecked => write!(f, "{kept} (LOO checked)"),
            Self::LooFitsTooWell => write!(f, "{kept} (the learned fit's LOO fits too well)"),
            Self::RandomFeatures => write!(f, "{kept} (asked for)"),
            Self::FewInputs {
                inputs,
                random_features,
            } => {
                let judged = if *random_features {
                    "the learned fit's LOO fits too well"
                } else {
                    "LOO checked"
                };
                write!(
                    f,
                    "{kept} ({inputs} distinct inputs, too few to hold any out: {judged})"
                )
            }
            Self::HeldOutRefit { held_out } => {
                write!(
                    f,
                    "{kept}, judged by its refits without each fold ({held_out})"
                )
            }
        }
    }
}

/// A model's calibration on rows it was not trained on. Two uses: the kept candidate's on the
/// rows SSGP's calibration check held out from it ([`Remedy::HeldOut`]): the candidate was
/// trained without them (on 3/4 of the rows, or half of them above
/// `ssgp::CalibrationGuard::HELD_OUT_MAX_ROWS`), so for SSGP's learned spectral points, which
/// the exact LOO holds fixed, this is the honest measure of the error bars; and a model's
/// record of the samples its online updates added, each predicted before it was added
/// (`FittedSsgp::prequential`, `FittedFullGp::prequential`), where `nmse` is taken against the
/// fit's ȳ.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
pub struct HeldOutCalibration {
    /// The number of held-out rows.
    pub rows: usize,
    /// Mean of zᵢ² = (yᵢ − μᵢ)²/vᵢ over the held-out rows, the variances vᵢ multiplied by the
    /// check's variance factor: 1 for calibrated error bars.
    pub mean_z2: f64,
    /// Σ(yᵢ − μᵢ)² / Σ(yᵢ − ȳ)² over the held-out rows, ȳ the mean of the rows the candidate
    /// was trained on: above 1, worse than predicting that mean.
    pub nmse: f64,
}

impl HeldOutCalibration {
    /// Two standard errors of a mean of `rows` independent χ²₁ variables, 2·√(2/rows): how far
    /// a calibrated model's mean z² strays from 1 by chance.
    pub fn chance(&self) -> f64 {
        Self::chance_on(self.rows)
    }

    /// [`Self::chance`] on `rows` held-out rows.
    pub(crate) fn chance_on(rows: usize) -> f64 {
        2.0 * (2.0 / rows.max(1) as f64).sqrt()
    }

    /// Whether the error bars are too narrow: mean z² above
    /// [`LooDiagnostic::OVERCONFIDENT_Z2`] and above 1 by more than [`Self::chance`].
    pub fn overconfident(&self) -> bool {
        self.mean_z2 > LooDiagnostic::OVERCONFIDENT_Z2 && self.mean_z2 > 1.0 + self.chance()
    }

    /// Whether the error bars are too wide: mean z² below [`LooDiagnostic::FITS_TOO_WELL_Z2`]
    /// and below 1 by more than [`Self::chance`] (a fit the check could not narrow, its σn² at
    /// a floor or bound the user set).
    pub fn underconfident(&self) -> bool {
        self.mean_z2 < LooDiagnostic::FITS_TOO_WELL_Z2 && self.mean_z2 < 1.0 - self.chance()
    }
}

/// A model's running record of how it predicted the samples its online updates added, each
/// before the call that added it (prequential: a stream's next samples are a test set the model
/// has not seen): their count, Σzᵢ² with zᵢ = (yᵢ − μᵢ)/√vᵢ, Σ(yᵢ − μᵢ)² and Σ(yᵢ − ȳ)², ȳ the
/// fit's target offset. One per output; counted from the fit, saved with the model.
/// It also keeps the recent mean z², weighted by [`Prequential::RECENT_DECAY`] per sample, for
/// [`Prequential::variance_factor`].
#[derive(Debug, Clone, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
pub(crate) struct Prequential {
    rows: usize,
    sum_z2: f64,
    sum_squared_error: f64,
    sum_squared_deviation: f64,
    /// Σ_j d^(k−j) z_j² over the k samples so far (d the decay; their weights sum to
    /// (1 − d^k)/(1 − d)).
    recent_z2: f64,
}

impl Prequential {
    /// The weight a sample's z² loses per later sample in the recent mean (an effective window
    /// of (1 + d)/(1 − d) ≈ 200 samples). Measured on the robot arm example's stream (seeds 1–3,
    /// both torques, the second half's 10 000 samples each predicted with the factor of those
    /// before it): coverage 0.930–0.946 and mean z² 1.01–1.04 with 0.99; 0.926–0.942 and
    /// 1.04–1.15 with 0.999; 0.90 and 1.5–1.8 with 0.9999 (seed 1); unwidened 0.49–0.72 and
    /// 3.9–24.
    pub(crate) const RECENT_DECAY: f64 = 0.99;

    /// Adds a sample: its target `y` and predictive mean `mean`, both less ȳ, and the predictive
    /// variance `variance` of y.
    /// Each sum stops at the largest f64: a sample predicted with a variance so small that its z²
    /// overflows (targets of spread 1e-60, σn² near 1e-120, then a target 1e140 away) leaves the
    /// record finite — its mean z² huge, `overconfident`, and the model saved and loaded as any
    /// (an infinite sum made the file unreadable).
    pub(crate) fn add(&mut self, y: f64, mean: f64, variance: f64) {
        let error = y - mean;
        let z2 = error * error / variance;
        let capped = |sum: f64| sum.min(f64::MAX);
        self.rows = self.rows.saturating_add(1);
        self.sum_z2 = capped(self.sum_z2 + z2);
        self.sum_squared_error = capped(self.sum_squared_error + error * error);
        self.sum_squared_deviation = capped(self.sum_squared_deviation + y * y);
        self.recent_z2 = capped(Self::RECENT_DECAY * self.recent_z2 + z2);
    }

    /// The recent mean z² where it is above 1, else 1 (1 before any sample): the factor by which
    /// the stream's latest one-step-ahead predictions say the predictive variances are too
    /// narrow. Never below 1 (a stream does not narrow the error bars).
    pub(crate) fn variance_factor(&self) -> f64 {
        if self.rows == 0 {
            return 1.0;
        }
        let d = Self::RECENT_DECAY;
        let weight = (1.0 - d.powf(self.rows as f64)) / (1.0 - d);
        (self.recent_z2 / weight).max(1.0)
    }

    /// Whether this (loaded) record is one of `updates` samples: its rows that many, its sums
    /// finite and not negative, all of them 0 before any row.
    #[cfg(feature = "serde")]
    pub(crate) fn counts(&self, updates: usize) -> bool {
        let sums = [
            self.sum_z2,
            self.sum_squared_error,
            self.sum_squared_deviation,
            self.recent_z2,
        ];
        self.rows == updates
            && sums.iter().all(|s| s.is_finite() && *s >= 0.0)
            && (self.rows > 0 || sums.iter().all(|&s| s == 0.0))
    }

    /// The mean z² and NMSE so far, as a [`HeldOutCalibration`] of that many rows (an NMSE of
    /// 0 or ∞ where every target so far was ȳ itself); `None` before any sample.
    pub(crate) fn calibration(&self) -> Option<HeldOutCalibration> {
        let nmse = match (self.sum_squared_error, self.sum_squared_deviation) {
            (error, deviation) if deviation > 0.0 => error / deviation,
            (error, _) if error > 0.0 => f64::INFINITY,
            _ => 0.0,
        };
        (self.rows > 0).then(|| HeldOutCalibration {
            rows: self.rows,
            mean_z2: self.sum_z2 / self.rows as f64,
            nmse,
        })
    }
}

impl fmt::Display for HeldOutCalibration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "held out ({} rows): mean z² {:.3}, NMSE {:.4}",
            self.rows, self.mean_z2, self.nmse
        )
    }
}

/// What a fit is flagged for ([`TrainingSummary::flags`], [`LooDiagnostic::flags`]); its
/// `Display` lists the set flags in words, in parentheses (nothing when none is set).
///
/// ```
/// use ssgp::Flags;
///
/// let flags = Flags { overconfident: true, ..Flags::default() };
/// assert!(flags.any());
/// assert_eq!(flags.to_string(), " (overconfident)");
/// assert!(!Flags::default().any() && Flags::default().to_string().is_empty());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Flags {
    /// Held-out points are predicted worse than by the training mean (NMSE above
    /// [`LooDiagnostic::WORSE_THAN_MEAN_NMSE`]).
    pub worse_than_mean: bool,
    /// Held-out points are predicted hardly better than by the training mean (NMSE above
    /// [`LooDiagnostic::EXPLAINS_LITTLE_NMSE`], worse than the mean included).
    pub explains_little: bool,
    /// The error bars are too narrow.
    pub overconfident: bool,
    /// By the LOO, the fit predicts its training points far better than its error bars say:
    /// hyperparameters adapted to the training points themselves
    /// ([`LooDiagnostic::fits_too_well`]).
    pub fits_too_well: bool,
    /// On held-out rows, the error bars are too wide
    /// ([`HeldOutCalibration::underconfident`]).
    pub underconfident: bool,
    /// The held-out rows cannot vouch for the error bars: the lengthscales the check's fits
    /// start from were learned on them too, with few rows per hyperparameter
    /// ([`Remedy::start_overfits`]).
    pub start_overfits: bool,
    /// Too few distinct inputs to hold any out: the error bars are checked at the training
    /// inputs (by the LOO) and not between them ([`Remedy::FewInputs`]).
    pub few_inputs: bool,
    /// Training ended by a failure ([`Termination::is_success`] false: a fit kept at its best
    /// point by `best_effort`), and no held-out rows vouch for the model it kept.
    pub training_failed: bool,
}

impl Flags {
    /// Whether any flag is set: the fit should not be trusted as it is.
    pub fn any(&self) -> bool {
        self.explains_little
            || self.worse_than_mean
            || self.overconfident
            || self.fits_too_well
            || self.underconfident
            || self.start_overfits
            || self.few_inputs
            || self.training_failed
    }
}

impl fmt::Display for Flags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let words: Vec<&str> = [
            (self.worse_than_mean, "worse than the mean"),
            (
                self.explains_little && !self.worse_than_mean,
                "hardly better than the mean",
            ),
            (self.overconfident, "overconfident"),
            (self.fits_too_well, "fits its training points too well"),
            (self.underconfident, "error bars too wide"),
            (
                self.start_overfits,
                "lengthscales learned on the held-out rows too, with few rows per hyperparameter",
            ),
            (
                self.few_inputs,
                "too few distinct inputs to check the error bars between them",
            ),
            (
                self.training_failed,
                "training failed; kept at its best point",
            ),
        ]
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, text)| *text)
        .collect();
        if words.is_empty() {
            Ok(())
        } else {
            write!(f, " ({})", words.join(", "))
        }
    }
}

/// A fit's calibration by exact leave-one-out (LOO) on its training data, at the fitted
/// hyperparameters: for each training point i the model's predictive N(μ₋ᵢ, v₋ᵢ) of yᵢ given the
/// other n − 1 points, from one factorisation (no refit). With the prior covariance C of the
/// training targets (σn² included) and r = C⁻¹y,
///
/// $$y_i - μ_{-i} = \frac{r_i}{[C^{-1}]_{ii}}, \qquad v_{-i} = \frac{1}{[C^{-1}]_{ii}}$$
///
/// (Rasmussen & Williams eq. 5.12). Per model (n points, m spectral points or pseudo-inputs):
/// SSGP (C = σn²(I − ΦA⁻¹Φᵀ)⁻¹, the hat matrix's diagonal hᵢ = ‖L⁻¹φᵢ‖², O(nm²), about one
/// evaluation of the evidence); FITC (C = Q + Λ, its Woodbury form, O(nm²)); the full GP
/// ([C⁻¹]ᵢᵢ = ‖L⁻¹eᵢ‖², the inverse factor: an extra n³/3 flops and n² numbers).
///
/// The hyperparameters were learned on all n points, point i included, so the LOO is an
/// optimistic estimate for a model with many learned parameters (SSGP's frequencies): with more
/// of them than the data can pin down, the LOO residuals come out far smaller than the LOO
/// variances, which [`LooDiagnostic::fits_too_well`] flags.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
pub struct LooDiagnostic {
    /// Mean of zᵢ² = (yᵢ − μ₋ᵢ)²/v₋ᵢ: 1 for a calibrated model, above for an overconfident one.
    pub mean_z2: f64,
    /// Mean negative log predictive density, ½ log 2πv₋ᵢ + ½zᵢ², on the targets' scale.
    pub mnlp: f64,
    /// Σ(yᵢ − μ₋ᵢ)² / Σ(yᵢ − ȳ)²: above 1, the fit predicts held-out points worse than the mean.
    pub nmse: f64,
    /// Whether nothing the LOO holds fixed was fitted to single training points, so that a mean
    /// z² far below 1 means error bars too wide rather than a fit to the training points: VFE,
    /// whose inducing inputs are variational parameters of a bound that does not overfit them
    /// (Kin-40k, 100 inducing inputs: LOO mean z² 0.46, test 0.52, coverage 0.984 — its σn² is
    /// overestimated). False for SSGP and FITC (learned frequencies, pseudo-inputs) and the full
    /// GP (whose lengthscales can fit a few points), and in files saved before it.
    #[cfg_attr(feature = "serde", serde(default))]
    pub honest: bool,
}

impl LooDiagnostic {
    /// The LOO mean z² above which a fit is flagged overconfident.
    pub const OVERCONFIDENT_Z2: f64 = 1.5;
    /// The LOO NMSE above which a fit is flagged worse than predicting the mean.
    pub const WORSE_THAN_MEAN_NMSE: f64 = 1.0;
    /// The LOO NMSE above which a fit is flagged as explaining little: less than 5 % of the
    /// targets' variance on held-out points, no better than the mean within sampling error.
    pub const EXPLAINS_LITTLE_NMSE: f64 = 0.95;
    /// The LOO mean z² below which a fit is flagged as fitting its training points too well.
    pub const FITS_TOO_WELL_Z2: f64 = 0.5;

    /// The diagnostic from the LOO residuals yᵢ − μ₋ᵢ, their variances v₋ᵢ and the centred
    /// targets yᵢ − ȳ (n each); `None` for no points or a non-finite result.
    pub fn from_residuals(residuals: &[f64], variances: &[f64], centred: &[f64]) -> Option<Self> {
        let n = residuals.len();
        if n == 0 || variances.len() != n || centred.len() != n {
            return None;
        }
        Self::from_sums(Self::sums(residuals, variances, centred))
    }

    /// The sums the diagnostic is made of, [n, Σzᵢ², Σ(½ log 2πv₋ᵢ + ½zᵢ²), Σ(yᵢ − μ₋ᵢ)²,
    /// Σ(yᵢ − ȳ)²], over the points of `residuals`, `variances` and `centred` (as
    /// [`Self::from_residuals`]): they add over any partition of the points (the ranks of a
    /// distributed fit).
    pub fn sums(residuals: &[f64], variances: &[f64], centred: &[f64]) -> [f64; 5] {
        let (mut z2, mut nlp, mut sse) = (0.0, 0.0, 0.0);
        for (e, v) in residuals.iter().zip(variances) {
            let z = e * e / v;
            z2 += z;
            nlp += 0.5 * (2.0 * std::f64::consts::PI * v).ln() + 0.5 * z;
            sse += e * e;
        }
        let sst: f64 = centred.iter().map(|c| c * c).sum();
        [residuals.len() as f64, z2, nlp, sse, sst]
    }

    /// The diagnostic from [`Self::sums`] (added up over the points); `None` for no points or a
    /// non-finite result.
    pub fn from_sums([n, z2, nlp, sse, sst]: [f64; 5]) -> Option<Self> {
        if n < 1.0 {
            return None;
        }
        let d = Self {
            mean_z2: z2 / n,
            mnlp: nlp / n,
            nmse: sse / sst,
            honest: false,
        };
        [d.mean_z2, d.mnlp, d.nmse]
            .iter()
            .all(|v| v.is_finite())
            .then_some(d)
    }

    /// Whether held-out points are predicted worse than by the training mean (LOO NMSE above
    /// [`Self::WORSE_THAN_MEAN_NMSE`]).
    pub fn worse_than_mean(&self) -> bool {
        self.nmse > Self::WORSE_THAN_MEAN_NMSE
    }

    /// Whether held-out points are predicted hardly better than by the training mean (LOO NMSE
    /// above [`Self::EXPLAINS_LITTLE_NMSE`], worse than the mean included). Such a fit predicts
    /// about the mean (wide data with too few rows, a signal under the noise): on new data it
    /// is as likely a little worse than the mean as a little better — on the generated suite
    /// (`examples/calibration.rs`) the fits with LOO NMSE in (0.95, 1] had test NMSE 0.98–1.014.
    pub fn explains_little(&self) -> bool {
        self.nmse > Self::EXPLAINS_LITTLE_NMSE
    }

    /// Whether the error bars are too narrow (LOO mean z² above [`Self::OVERCONFIDENT_Z2`]).
    pub fn overconfident(&self) -> bool {
        self.mean_z2 > Self::OVERCONFIDENT_Z2
    }

    /// Whether held-out training points are predicted far better than the error bars say (LOO
    /// mean z² below [`Self::FITS_TOO_WELL_Z2`]): the sign of hyperparameters (SSGP's learned
    /// frequencies, many lengthscales) adapted to the training points themselves, which the LOO
    /// at the fitted θ cannot see. Measured on the generated suite (`examples/calibration.rs`),
    /// such SSGP fits were overconfident on test data (mean z² 8 to 12 000). A fit SSGP's
    /// calibration check judged on held-out rows is flagged by those instead
    /// ([`TrainingSummary::flags`]).
    pub fn fits_too_well(&self) -> bool {
        self.mean_z2 < Self::FITS_TOO_WELL_Z2
    }

    /// The LOO's flags: explaining little (worse than the mean included), overconfident, or
    /// fitting its training points too well.
    pub fn flags(&self) -> Flags {
        Flags {
            worse_than_mean: self.worse_than_mean(),
            explains_little: self.explains_little(),
            overconfident: self.overconfident(),
            fits_too_well: !self.honest && self.fits_too_well(),
            underconfident: self.honest && self.fits_too_well(),
            start_overfits: false,
            few_inputs: false,
            training_failed: false,
        }
    }

    /// Whether the LOO flags the fit ([`Self::flags`]).
    pub fn is_flagged(&self) -> bool {
        self.flags().any()
    }

    /// Writes the diagnostic's numbers without its flags.
    fn write_numbers(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "LOO mean z² {:.3}, MNLP {:.3}, NMSE {:.4}",
            self.mean_z2, self.mnlp, self.nmse
        )
    }
}

impl fmt::Display for LooDiagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write_numbers(f)?;
        write!(f, "{}", self.flags())
    }
}

/// A fit's diagnosis as [`TrainingSummary::diagnosis`] writes it: the LOO's numbers, the held-out
/// rows' where the calibration check measured them, and the summary's [`Flags`].
#[derive(Debug, Clone, Copy)]
pub struct Diagnosis<'a>(&'a TrainingSummary);

impl fmt::Display for Diagnosis<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0.diagnostic {
            Some(d) => d.write_numbers(f)?,
            None => write!(f, "no LOO diagnostic")?,
        }
        if let Some(h) = self.0.held_out() {
            write!(f, "; {h}")?;
        }
        if self.0.remedy.is_some_and(|r| r.mean_kept()) {
            write!(
                f,
                "; predicts the training mean: no fit beat it on the held-out rows"
            )?;
        }
        write!(f, "{}", self.0.flags())
    }
}

impl TrainingSummary {
    /// The kept candidate's calibration on the rows SSGP's calibration check held out from it,
    /// or the refit's on the rows the held-out check of the full GP, FITC or VFE held out from
    /// it ([`Remedy::HeldOutRefit`]); `None` without a held-out check, or for a file saved
    /// before it was recorded.
    pub fn held_out(&self) -> Option<HeldOutCalibration> {
        match self.remedy {
            Some(Remedy::HeldOut { held_out, .. }) => held_out,
            Some(Remedy::HeldOutRefit { held_out }) => Some(held_out),
            _ => None,
        }
    }

    /// What the fit is flagged for, without test data. By default the LOO's flags
    /// ([`LooDiagnostic::flags`]; none without a diagnostic). For an SSGP fit its calibration
    /// check judged on held-out rows ([`Self::held_out`]), the error bars are judged there
    /// instead — overconfident or too wide beyond chance ([`HeldOutCalibration::overconfident`],
    /// [`HeldOutCalibration::underconfident`]), since the LOO holds the learned spectral points
    /// fixed and a widened fit's LOO z² falls by its factor — and the accuracy by the larger of
    /// the LOO NMSE and the held-out NMSE: a kept learned fit's LOO NMSE is optimistic for the
    /// same reason, and any fit's is where inputs repeat (the row left out is still in the
    /// data under another index; the check holds out whole groups of equal inputs). A fit on
    /// too few distinct inputs for the check is flagged for that ([`Remedy::FewInputs`]), and
    /// a fit whose training ended by a failure (kept at its best point by `best_effort`) for
    /// that, unless held-out rows judged it (the check's own two-parameter fits are kept so
    /// where their evidence is flat within round-off, near noise-free data). A full GP, FITC or
    /// VFE fit judged by its refit ([`Remedy::HeldOutRefit`]) is flagged as an SSGP fit judged
    /// on held-out rows, and for a failed training too: the refit vouches for the model as
    /// configured, not for the point a failure left it at.
    pub fn flags(&self) -> Flags {
        let loo = self.diagnostic.map(|d| d.flags()).unwrap_or_default();
        let start_overfits = self.remedy.is_some_and(|r| r.start_overfits());
        let few_inputs = matches!(self.remedy, Some(Remedy::FewInputs { .. }));
        let Some(h) = self.held_out() else {
            return Flags {
                start_overfits,
                few_inputs,
                training_failed: !self.termination.is_success(),
                ..loo
            };
        };
        if self.remedy.is_some_and(|r| r.mean_kept()) {
            // The training mean explains nothing by construction (the diagnosis says so): only
            // its error bars, var y's, are judged, on the held-out rows.
            return Flags {
                overconfident: h.overconfident(),
                underconfident: h.underconfident(),
                ..Flags::default()
            };
        }
        Flags {
            worse_than_mean: loo.worse_than_mean || h.nmse > LooDiagnostic::WORSE_THAN_MEAN_NMSE,
            explains_little: loo.explains_little || h.nmse > LooDiagnostic::EXPLAINS_LITTLE_NMSE,
            overconfident: h.overconfident(),
            fits_too_well: false,
            underconfident: h.underconfident(),
            start_overfits,
            few_inputs,
            training_failed: matches!(self.remedy, Some(Remedy::HeldOutRefit { .. }))
                && !self.termination.is_success(),
        }
    }

    /// Whether the fit's LOO diagnostic fits its training points too well
    /// ([`LooDiagnostic::fits_too_well`]; false without one): where SSGP's check has too few
    /// rows to hold any out, the random-feature fit then replaces the learned one.
    pub fn loo_fits_too_well(&self) -> bool {
        self.diagnostic.is_some_and(|d| d.fits_too_well())
    }

    /// Whether any of [`Self::flags`] is set: the fit should not be trusted as it is.
    pub fn is_flagged(&self) -> bool {
        self.flags().any()
    }

    /// The diagnostic's numbers and [`Self::flags`] in one line (what the examples print under
    /// each fit).
    pub fn diagnosis(&self) -> Diagnosis<'_> {
        Diagnosis(self)
    }

    /// The summary of a model built at given parameters without training: no iterations, no
    /// evaluations, [`Termination::NotStarted`], and −log p(y|θ) = `neg_log_evidence` before and
    /// after.
    pub fn untrained(neg_log_evidence: f64) -> Self {
        Self {
            initial_neg_log_evidence: neg_log_evidence,
            neg_log_evidence,
            iterations: 0,
            evaluations: 0,
            termination: Termination::NotStarted,
            ignored_inputs: Vec::new(),
            noise_at_floor: false,
            diagnostic: None,
            remedy: None,
        }
    }

    /// The summary on targets scaled by `y_scale` (a standardised model's on the original scale):
    /// −log p(y|θ) shifted by `evidence_shift` = n log y_scale, every MNLP — the diagnostic's and
    /// the calibration check's held-out ones — by log y_scale (z², NMSE and the check's choices
    /// do not depend on the scale).
    pub fn rescaled(mut self, evidence_shift: f64, y_scale: f64) -> Self {
        let shift = y_scale.ln();
        self.initial_neg_log_evidence += evidence_shift;
        self.neg_log_evidence += evidence_shift;
        if let Some(d) = &mut self.diagnostic {
            d.mnlp += shift;
        }
        if let Some(Remedy::HeldOut {
            learned_mnlp,
            random_features_mnlp,
            mean_mnlp,
            ..
        }) = &mut self.remedy
        {
            *learned_mnlp += shift;
            *random_features_mnlp += shift;
            if let Some(mean) = mean_mnlp {
                *mean += shift;
            }
        }
        self
    }
}

#[cfg(test)]
mod tests {
    /// A record's NMSE is never NaN: 0 or ∞ where every target was ȳ itself.
    #[test]
    fn a_prequential_record_of_targets_at_the_offset_has_no_nan() {
        let mut exact = Prequential::default();
        assert!(exact.calibration().is_none());
        exact.add(0.0, 0.0, 1.0);
        assert_eq!(exact.calibration().map(|c| c.nmse), Some(0.0));
        let mut off = Prequential::default();
        off.add(0.0, 0.5, 1.0);
        let c = off.calibration().unwrap();
        assert_eq!((c.rows, c.mean_z2, c.nmse), (1, 0.25, f64::INFINITY));
        off.add(2.0, 0.0, 4.0);
        let c = off.calibration().unwrap();
        assert_eq!((c.rows, c.mean_z2, c.nmse), (2, 0.625, (0.25 + 4.0) / 4.0));
        assert_eq!(off.variance_factor(), 1.0);
    }

    /// A sample whose z² (or squared error) overflows leaves every sum at the largest f64: the
    /// record stays one a saved file can hold (its sums were ∞, refused on load) and says the
    /// error bars are far too narrow.
    #[test]
    fn a_prequential_record_of_an_overflowing_sample_stays_finite() {
        let mut record = Prequential::default();
        record.add(0.1, 0.0, 1.0);
        record.add(1e140, 0.0, 1e-200);
        record.add(1e300, -1e300, 1.0);
        #[cfg(feature = "serde")]
        assert!(record.counts(3), "{record:?}");
        let c = record.calibration().unwrap();
        assert!(c.mean_z2.is_finite() && c.mean_z2 > 1e300, "{c:?}");
        assert!(c.overconfident());
        assert!(record.variance_factor().is_finite());
    }

    use super::*;

    #[test]
    fn loo_diagnostic_sums_and_flags() {
        // Residuals (1, −2), variances (1, 4), targets (3, −1) about their mean: z² = (1, 1),
        // NLP = ½ log 2π + ½ and ½ log 8π + ½, NMSE = 5 / 10.
        let d = LooDiagnostic::from_residuals(&[1.0, -2.0], &[1.0, 4.0], &[3.0, -1.0]).unwrap();
        let two_pi = 2.0 * std::f64::consts::PI;
        assert_eq!(d.mean_z2, 1.0);
        assert!((d.mnlp - (0.25 * (two_pi.ln() + (4.0 * two_pi).ln()) + 0.5)).abs() < 1e-15);
        assert_eq!(d.nmse, 0.5);
        assert!(!d.is_flagged());
        assert_eq!(d.to_string(), "LOO mean z² 1.000, MNLP 1.766, NMSE 0.5000");
        let over = LooDiagnostic { mean_z2: 1.6, ..d };
        let worse = LooDiagnostic { nmse: 1.01, ..d };
        let little = LooDiagnostic { nmse: 0.96, ..d };
        assert!(!little.worse_than_mean() && little.explains_little() && little.is_flagged());
        assert!(little
            .to_string()
            .ends_with("(hardly better than the mean)"));
        assert!(!LooDiagnostic { nmse: 0.94, ..d }.is_flagged());
        let too_well = LooDiagnostic { mean_z2: 0.49, ..d };
        assert!(over.overconfident() && over.is_flagged());
        assert!(worse.worse_than_mean() && worse.is_flagged());
        assert!(too_well.fits_too_well() && too_well.is_flagged());
        assert!(too_well
            .to_string()
            .ends_with("(fits its training points too well)"));
        // Where nothing the LOO holds fixed was fitted to single points (VFE), the same z²
        // means error bars too wide.
        let wide = LooDiagnostic {
            honest: true,
            ..too_well
        };
        let flags = wide.flags();
        assert!(flags.underconfident && !flags.fits_too_well && wide.is_flagged());
        assert!(wide.to_string().ends_with("(error bars too wide)"));
        assert!(!LooDiagnostic { honest: true, ..d }.is_flagged());
        assert_eq!(LooDiagnostic::from_residuals(&[], &[], &[]), None);
        assert_eq!(LooDiagnostic::from_residuals(&[1.0], &[0.0], &[1.0]), None);
    }

    /// A summary with `loo` and a held-out check that kept the learned fit (or the
    /// random-feature one) with calibration `held_out`.
    fn checked(
        loo: LooDiagnostic,
        random_features: bool,
        held_out: Option<HeldOutCalibration>,
    ) -> TrainingSummary {
        let (learned_mnlp, random_features_mnlp) = if random_features {
            (1.0, 0.5)
        } else {
            (0.5, 1.0)
        };
        TrainingSummary {
            diagnostic: Some(loo),
            remedy: Some(Remedy::held_out_for_test(
                (learned_mnlp, random_features_mnlp),
                1.0,
                held_out,
            )),
            ..TrainingSummary::untrained(0.0)
        }
    }

    /// A fit whose training failed (kept at its best point) is flagged for it, unless held-out
    /// rows judged the model it kept; a budget spent is no failure.
    #[test]
    fn a_failed_training_is_flagged_unless_held_out_rows_judged_it() {
        let failed = Termination::LineSearchFailed("no decrease".into());
        let alone = TrainingSummary {
            diagnostic: Some(calibrated_loo()),
            termination: failed.clone(),
            ..TrainingSummary::untrained(0.0)
        };
        assert!(alone.flags().training_failed && alone.is_flagged());
        assert!(alone.diagnosis().to_string().contains("training failed"));
        let spent = TrainingSummary {
            termination: Termination::MaxEvaluations,
            ..alone.clone()
        };
        assert!(!spent.is_flagged(), "{}", spent.diagnosis());
        let held = HeldOutCalibration {
            rows: 100,
            mean_z2: 1.0,
            nmse: 0.5,
        };
        let judged = TrainingSummary {
            termination: failed,
            ..checked(calibrated_loo(), true, Some(held))
        };
        assert!(!judged.is_flagged(), "{}", judged.diagnosis());
    }

    /// The training mean kept by a check explains nothing by construction: neither its LOO
    /// (NMSE 1) nor a lengthscale start that overfits flags it, only its held-out error bars.
    #[test]
    fn the_training_mean_is_judged_by_its_held_out_error_bars_alone() {
        let explains_nothing = LooDiagnostic {
            nmse: 1.0,
            ..calibrated_loo()
        };
        let held = |mean_z2| HeldOutCalibration {
            rows: 100,
            mean_z2,
            nmse: 1.0,
        };
        let mean = |mut summary: TrainingSummary, kept: bool| {
            let Some(Remedy::HeldOut {
                start_hyperparameters,
                start_rows,
                mean_mnlp,
                mean_kept,
                ..
            }) = &mut summary.remedy
            else {
                panic!("{:?}", summary.remedy);
            };
            (*start_hyperparameters, *start_rows) = (52, 50);
            (*mean_mnlp, *mean_kept) = (Some(0.7), kept);
            summary
        };
        let kept = mean(checked(explains_nothing, true, Some(held(1.0))), true);
        assert!(kept.remedy.unwrap().mean_kept() && !kept.remedy.unwrap().random_features());
        assert!(!kept.is_flagged(), "{}", kept.diagnosis());
        assert!(kept
            .diagnosis()
            .to_string()
            .contains("predicts the training mean"));
        let wide = mean(checked(explains_nothing, true, Some(held(0.2))), true);
        assert_eq!(
            wide.flags(),
            Flags {
                underconfident: true,
                ..Flags::default()
            }
        );
        // Not kept, the same fit is flagged for explaining little and for its start.
        let fit = mean(checked(explains_nothing, true, Some(held(1.0))), false);
        let flags = fit.flags();
        assert!(flags.explains_little && flags.start_overfits, "{flags:?}");
    }

    /// A LOO diagnostic that flags nothing: calibrated, half the targets' variance explained.
    fn calibrated_loo() -> LooDiagnostic {
        LooDiagnostic {
            mean_z2: 1.0,
            mnlp: 0.0,
            nmse: 0.5,
            honest: false,
        }
    }

    /// A check whose lengthscale start learned D + 2 hyperparameters on fewer than two rows
    /// each is flagged, whatever its held-out rows say (they were fitted too); from two rows
    /// each, or with a start that learned nothing from the data, it is not.
    #[test]
    fn a_start_fitted_with_few_rows_per_hyperparameter_is_flagged() {
        let loo = calibrated_loo();
        let calibrated = HeldOutCalibration {
            rows: 12,
            mean_z2: 1.0,
            nmse: 0.5,
        };
        let with_start = |hyperparameters: usize, rows: usize, held: Option<HeldOutCalibration>| {
            let mut summary = checked(loo, true, held);
            if let Some(Remedy::HeldOut {
                start_hyperparameters,
                start_rows,
                ..
            }) = &mut summary.remedy
            {
                (*start_hyperparameters, *start_rows) = (hyperparameters, rows);
            }
            summary
        };
        for held in [Some(calibrated), None] {
            let flagged = with_start(52, 50, held);
            assert!(flagged.remedy.unwrap().start_overfits());
            assert_eq!(
                flagged.flags(),
                Flags {
                    start_overfits: true,
                    ..checked(loo, true, held).flags()
                }
            );
            assert!(flagged.is_flagged());
            assert!(flagged
                .diagnosis()
                .to_string()
                .contains("lengthscales learned on the held-out rows too"));
            for (hyperparameters, rows) in [(52, 104), (22, 50), (0, 0)] {
                let summary = with_start(hyperparameters, rows, held);
                assert!(!summary.remedy.unwrap().start_overfits());
                assert_eq!(summary.flags(), checked(loo, true, held).flags());
            }
        }
    }

    #[test]
    fn a_checked_fit_is_judged_on_its_held_out_rows() {
        let loo = calibrated_loo();
        let calibrated = HeldOutCalibration {
            rows: 50,
            mean_z2: 1.0,
            nmse: 0.5,
        };
        // Beyond chance on 50 rows: |z² − 1| > 2·√(2/50) = 0.4.
        assert!((calibrated.chance() - 0.4).abs() < 1e-15);
        for random_features in [false, true] {
            assert_eq!(
                checked(loo, random_features, Some(calibrated)).flags(),
                Flags::default()
            );
            // The LOO's z² no longer judges the error bars: a widened fit's falls by its factor.
            let too_well = LooDiagnostic {
                mean_z2: 0.2,
                ..loo
            };
            assert!(too_well.is_flagged());
            assert!(!checked(too_well, random_features, Some(calibrated)).is_flagged());
            let over = LooDiagnostic {
                mean_z2: 3.0,
                ..loo
            };
            assert!(!checked(over, random_features, Some(calibrated)).is_flagged());
            // The held-out rows' z² does, beyond chance only.
            for (z2, over, under) in [
                (1.6, true, false),
                (1.39, false, false),
                (0.45, false, true),
            ] {
                let h = HeldOutCalibration {
                    mean_z2: z2,
                    ..calibrated
                };
                let flags = checked(loo, random_features, Some(h)).flags();
                assert!(!flags.fits_too_well, "{z2}");
                assert_eq!(
                    (flags.overconfident, flags.underconfident),
                    (over, under),
                    "{z2}"
                );
            }
            let few = HeldOutCalibration {
                rows: 8,
                mean_z2: 1.9,
                ..calibrated
            };
            assert!(!checked(loo, random_features, Some(few)).is_flagged());
            // The LOO's NMSE still judges the accuracy.
            let little = LooDiagnostic { nmse: 0.96, ..loo };
            let flags = checked(little, random_features, Some(calibrated)).flags();
            assert!(flags.explains_little && !flags.worse_than_mean);
        }
        // The held-out NMSE too, for either fit: a kept learned fit's LOO NMSE is optimistic,
        // and any fit's where inputs repeat.
        let worse = HeldOutCalibration {
            nmse: 1.2,
            ..calibrated
        };
        for random_features in [false, true] {
            let flags = checked(loo, random_features, Some(worse)).flags();
            assert!(flags.worse_than_mean && flags.explains_little);
        }
        // Without held-out numbers (a file saved before them, or no check), the LOO's flags.
        let too_well = LooDiagnostic {
            mean_z2: 0.2,
            ..loo
        };
        assert_eq!(checked(too_well, false, None).flags(), too_well.flags());
        let plain = TrainingSummary {
            diagnostic: Some(too_well),
            ..TrainingSummary::untrained(0.0)
        };
        assert_eq!(plain.flags(), too_well.flags());
        assert_eq!(TrainingSummary::untrained(0.0).flags(), Flags::default());
        assert_eq!(
            checked(loo, false, Some(worse)).diagnosis().to_string(),
            "LOO mean z² 1.000, MNLP 0.000, NMSE 0.5000; held out (50 rows): mean z² 1.000, \
             NMSE 1.2000 (worse than the mean)"
        );
        assert_eq!(
            TrainingSummary::untrained(0.0).diagnosis().to_string(),
            "no LOO diagnostic"
        );
    }
}
