//! The optimiser loop: argmin's nonlinear conjugate gradient (Polak–Ribière+, More–Thuente line
//! search) over any [`Objective`], with the things argmin's CG lacks.
//!
//! - **One evaluation per θ.** argmin asks for the cost and the gradient separately, in either
//!   order; an [`Objective`] computes both in one pass, and the last (θ, value, gradient) is cached.
//! - **A budget** in argmin iterations (line searches) and in objective evaluations.
//! - **A convergence test**: the relative decrease of the objective over a window of iterations.
//! - **The best θ is kept.** The line search errors out once no descent direction is left near an
//!   optimum, and can end on a point worse than where it started; the best point seen is returned
//!   whatever happens, so a fit is never lost or made worse than its start.
//! - **Initial step lengths** that carry over between line searches (Nocedal & Wright's
//!   α₀ = α_{k−1}·gᵀ_{k−1}p_{k−1}/gᵀ_k p_k, capped at a 100-fold increase), as in Rasmussen's
//!   `minimize.m`; argmin's CG otherwise starts every line search at α = 1.
//!
//! The objective functions themselves are pure functions of (data, θ) and live with their models;
//! nothing here knows about Gaussian processes. Files: `problem.rs` (the argmin adapter),
//! `line_search.rs` (More–Thuente with carried-over steps), `stopping.rs` (the stopping rule and
//! the progress reports); this file holds the settings, the report and the loop.

mod line_search;
mod problem;
mod stopping;

use crate::error::{Error, Result};
use argmin::core::{Executor, IterState, State, TerminationReason};
use argmin::solver::conjugategradient::{beta::PolakRibierePlus, NonlinearConjugateGradient};
use argmin::solver::linesearch::MoreThuenteLineSearch;
use line_search::CarriedStep;
use nalgebra::DVector;
use problem::{Record, RecordingProblem};
use std::cell::RefCell;
use std::fmt;
use std::rc::Rc;
use std::sync::Arc;
use stopping::StoppingRule;

/// A differentiable objective to minimise: θ ↦ (f(θ), ∇f(θ)) in one call.
pub trait Objective {
    /// Number of parameters (the length of θ).
    fn num_params(&self) -> usize;

    /// f(θ) and ∇f(θ) together.
    ///
    /// # Errors
    /// Whatever the model's evaluation reports (e.g. a failed Cholesky, a non-finite value).
    fn value_and_gradient(&self, theta: &DVector<f64>) -> Result<(f64, DVector<f64>)>;
}

/// What the optimiser reports after each iteration (line search).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Progress {
    /// Iterations (line searches) completed.
    pub iteration: u64,
    /// Objective evaluations so far.
    pub evaluations: usize,
    /// Objective value at the current point.
    pub value: f64,
    /// Best objective value so far.
    pub best_value: f64,
    /// Euclidean norm of the gradient at the current point.
    pub gradient_norm: f64,
}

/// A callback receiving [`Progress`] after every iteration.
pub type Observer = Arc<dyn Fn(&Progress) + Send + Sync>;

/// Budget and stopping rule of the optimiser.
#[derive(Clone)]
pub struct OptimConfig {
    /// Maximum argmin iterations (line searches). Default 500.
    pub max_iterations: u64,
    /// Maximum objective evaluations (each one value + gradient). Default 1000, the original SSGP
    /// code's budget.
    pub max_evaluations: usize,
    /// Stop when the objective decreased by less than `tolerance · max(1, |f|)` over the last
    /// `window` iterations. Default 1e-10.
    pub tolerance: f64,
    /// Number of iterations the decrease is measured over. Default 10.
    pub window: usize,
    /// Called after every iteration; `None` by default.
    pub observer: Option<Observer>,
}

impl Default for OptimConfig {
    fn default() -> Self {
        Self {
            max_iterations: 500,
            max_evaluations: 1000,
            tolerance: 1e-10,
            window: 10,
            observer: None,
        }
    }
}

impl fmt::Debug for OptimConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OptimConfig")
            .field("max_iterations", &self.max_iterations)
            .field("max_evaluations", &self.max_evaluations)
            .field("tolerance", &self.tolerance)
            .field("window", &self.window)
            .field("observer", &self.observer.as_ref().map(|_| "Fn(&Progress)"))
            .finish()
    }
}

impl OptimConfig {
    /// Checks the budget and tolerances.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a zero evaluation budget, a zero window or a negative or
    /// non-finite tolerance.
    pub fn validate(&self) -> Result<()> {
        if self.max_evaluations == 0 {
            return Err(Error::InvalidParameter {
                name: "max_evaluations",
                reason: "must be at least 1".into(),
            });
        }
        if self.window == 0 {
            return Err(Error::InvalidParameter {
                name: "window",
                reason: "must be at least 1".into(),
            });
        }
        if !(self.tolerance >= 0.0 && self.tolerance.is_finite()) {
            return Err(Error::InvalidParameter {
                name: "tolerance",
                reason: format!("{} is not a finite non-negative number", self.tolerance),
            });
        }
        Ok(())
    }
}

/// Why the optimiser stopped.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Termination {
    /// The relative decrease over the window fell below the tolerance.
    Converged,
    /// The line search found no further descent (argmin's error near an optimum): converged.
    LineSearchStalled,
    /// The iteration budget ran out.
    MaxIterations,
    /// The evaluation budget ran out.
    MaxEvaluations,
    /// No iteration was allowed (`max_iterations` = 0): θ₀ evaluated only.
    NotStarted,
    /// An evaluation failed (e.g. a Cholesky at an extreme trial point); the best θ before it is kept.
    EvaluationFailed(String),
}

/// The outcome of [`minimize`]: the best θ seen and how the run went.
#[derive(Debug, Clone, PartialEq)]
pub struct OptimReport {
    /// The best parameters seen.
    pub theta: DVector<f64>,
    /// The objective there.
    pub value: f64,
    /// The gradient there.
    pub gradient: DVector<f64>,
    /// The objective at the starting point.
    pub initial_value: f64,
    /// argmin iterations (line searches) run.
    pub iterations: u64,
    /// Objective evaluations used.
    pub evaluations: usize,
    /// Why it stopped.
    pub termination: Termination,
}

pub(crate) type Vector = DVector<f64>;
pub(crate) type CgState = IterState<Vector, Vector, (), (), (), f64>;

/// Minimises `objective` from `theta0` with nonlinear CG, returning the best point seen.
///
/// # Errors
/// [`Error::InvalidParameter`] for a bad config or a θ₀ of the wrong length, and whatever the
/// objective returns **at θ₀** (a failure later in the run ends it, keeping the best point).
pub fn minimize<O: Objective>(
    objective: &O,
    theta0: DVector<f64>,
    config: &OptimConfig,
) -> Result<OptimReport> {
    config.validate()?;
    if theta0.len() != objective.num_params() {
        return Err(Error::DimensionMismatch {
            what: "initial parameter vector",
            expected: objective.num_params(),
            found: theta0.len(),
        });
    }
    let (f0, g0) = objective.value_and_gradient(&theta0)?;
    if !f0.is_finite() || g0.iter().any(|v| !v.is_finite()) {
        return Err(Error::NonFiniteObjective {
            what: format!("value {f0} or a gradient entry at the initial parameters"),
        });
    }
    let record = Rc::new(RefCell::new(Record {
        last: Some((theta0.clone(), f0, g0.clone())),
        best: Some((theta0.clone(), f0, g0.clone())),
        evaluations: 1,
        max_evaluations: config.max_evaluations,
        budget_hit: false,
        failure: None,
        iterations: 0,
    }));
    let termination = if config.max_iterations == 0 {
        Termination::NotStarted
    } else {
        let line_search = MoreThuenteLineSearch::new()
            .with_c(1e-4, 0.1)
            .map_err(|e| Error::Optimiser(e.to_string()))?;
        let solver = StoppingRule::new(
            NonlinearConjugateGradient::new(CarriedStep::new(line_search), PolakRibierePlus::new()),
            config.tolerance,
            config.window,
            config.observer.clone(),
            Rc::clone(&record),
        );
        let problem = RecordingProblem {
            objective,
            record: Rc::clone(&record),
        };
        let run = Executor::new(problem, solver)
            .configure(|s| s.param(theta0).max_iters(config.max_iterations))
            .run();
        let rec = record.borrow();
        match run {
            Ok(res) => match res.state.get_termination_reason() {
                Some(TerminationReason::MaxItersReached) => Termination::MaxIterations,
                _ => Termination::Converged,
            },
            Err(e) => {
                if rec.budget_hit {
                    Termination::MaxEvaluations
                } else if let Some(failure) = &rec.failure {
                    Termination::EvaluationFailed(failure.to_string())
                } else {
                    let _ = e;
                    Termination::LineSearchStalled
                }
            }
        }
    };
    let rec = record.borrow();
    let (theta, value, gradient) = rec.best.clone().unwrap_or((DVector::zeros(0), f0, g0));
    Ok(OptimReport {
        theta,
        value,
        gradient,
        initial_value: f0,
        iterations: rec.iterations,
        evaluations: rec.evaluations,
        termination,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rosenbrock in n dimensions.
    struct Rosenbrock;

    impl Objective for Rosenbrock {
        fn num_params(&self) -> usize {
            4
        }
        fn value_and_gradient(&self, x: &DVector<f64>) -> Result<(f64, DVector<f64>)> {
            let n = x.len();
            let mut f = 0.0;
            let mut g = DVector::zeros(n);
            for i in 0..n - 1 {
                let a = x[i + 1] - x[i] * x[i];
                let b = 1.0 - x[i];
                f += 100.0 * a * a + b * b;
                g[i] += -400.0 * x[i] * a - 2.0 * b;
                g[i + 1] += 200.0 * a;
            }
            Ok((f, g))
        }
    }

    #[test]
    fn minimises_rosenbrock_and_respects_budgets() {
        let x0 = DVector::from_vec(vec![-1.2, 1.0, -1.2, 1.0]);
        let rep = minimize(&Rosenbrock, x0.clone(), &OptimConfig::default()).unwrap();
        assert!(rep.value < 1e-8, "{rep:?}");
        assert!((rep.theta.add_scalar(-1.0)).amax() < 1e-3);
        assert!(rep.evaluations <= 1000);

        let tight = OptimConfig {
            max_evaluations: 7,
            ..OptimConfig::default()
        };
        let rep = minimize(&Rosenbrock, x0.clone(), &tight).unwrap();
        assert_eq!(rep.evaluations, 7);
        assert_eq!(rep.termination, Termination::MaxEvaluations);
        assert!(
            rep.iterations >= 1,
            "iterations completed before the budget ran out are counted"
        );
        assert!(rep.value <= rep.initial_value);

        let iters = OptimConfig {
            max_iterations: 3,
            ..OptimConfig::default()
        };
        let rep = minimize(&Rosenbrock, x0, &iters).unwrap();
        assert_eq!(rep.iterations, 3);
        assert_eq!(rep.termination, Termination::MaxIterations);
    }
}
