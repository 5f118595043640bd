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
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct TrainingSummary {
    /// −log p(y|θ) at the initial parameters (after any initial draws were compared).
    pub initial_neg_log_evidence: f64,
    /// −log p(y|θ) at the fitted parameters; never above the initial value.
    pub neg_log_evidence: f64,
    /// Optimiser iterations (line searches).
    pub iterations: u64,
    /// Objective evaluations (value and gradient), initial draws excluded.
    pub evaluations: usize,
    /// Why the optimiser stopped.
    pub termination: Termination,
    /// Input columns left out because they are constant on the training data (zero-based).
    pub ignored_inputs: Vec<usize>,
    /// Whether the noise variance ended at its floor (σn² within 1 % of it): the data asked for
    /// less noise than the floor allows — noise-free data under the default relative floor
    /// (`params::DEFAULT_RELATIVE_NOISE_FLOOR`), or an overfitted noise under a floor of yours.
    /// The predictive variances then carry the floor, not a learned noise.
    pub noise_at_floor: bool,
}

impl TrainingSummary {
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
        }
    }
}
