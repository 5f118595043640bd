//! The argmin adapter: the [`Objective`] as an argmin `Problem` that evaluates each θ once (argmin
//! asks for the cost and the gradient separately), counts evaluations against the budget, keeps
//! the best point seen, and tells recoverable failures (a trial point where the objective fails
//! or is not finite: the line search backs off) from the ends of the run (budget, time).

use super::{Objective, Vector};
use crate::error::Error;
use crate::termination::Termination;
use argmin::core::{CostFunction, Gradient};
use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// What the optimiser loop shares with its problem and solvers: the budget, the points seen and
/// how the run is going.
pub(super) struct Record {
    /// The last point ψ evaluated successfully, with its value and gradient ∇ψ.
    pub last: Option<(Vector, f64, Vector)>,
    /// The best point ψ evaluated so far, with its value and gradient ∇ψ.
    pub best: Option<(Vector, f64, Vector)>,
    /// Evaluations so far.
    pub evaluations: usize,
    /// The evaluation and wall-clock budgets.
    pub budget: Budget,
    /// Iterations (line searches) completed.
    pub iterations: u64,
    /// Why the run must end, once decided (budget, time, observer, convergence, failure).
    pub stop: Option<Termination>,
    /// The message of the last evaluation that failed (or was not finite), kept for the report.
    pub last_failure: Option<String>,
    /// Set by the line search when it found no acceptable step; read by the stopping rule.
    pub line_search_failed: bool,
    /// Evaluation counts, ascending, at which to keep a [`Snapshot`] (those not reached yet).
    pub checkpoints: Vec<usize>,
    /// The snapshots kept so far, one per checkpoint reached.
    pub snapshots: Vec<Snapshot>,
}

/// The run as it stood when, c evaluations done, it asked for one more: where the same run with
/// a budget of c evaluations ended (the path before the budget ends does not depend on it).
#[derive(Clone)]
pub(super) struct Snapshot {
    /// The best point ψ so far, with its value and gradient ∇ψ.
    pub best: (Vector, f64, Vector),
    /// Iterations run: those completed and the one under way.
    pub iterations: u64,
    /// Evaluations so far.
    pub evaluations: usize,
}

/// A run's budgets in evaluations and in wall-clock time from its start.
pub(super) struct Budget {
    /// The evaluation budget.
    pub max_evaluations: usize,
    /// When the run started.
    pub started: Instant,
    /// The wall-clock budget.
    pub max_time: Option<Duration>,
}

impl Record {
    /// The record of a run that starts at θ₀ with its value and gradient (one evaluation), its
    /// wall-clock budget `max_time` counted from `started` (before that evaluation).
    pub fn new(
        theta0: &Vector,
        f0: f64,
        g0: &Vector,
        max_evaluations: usize,
        (started, max_time): (Instant, Option<Duration>),
    ) -> Self {
        Self {
            last: Some((theta0.clone(), f0, g0.clone())),
            best: Some((theta0.clone(), f0, g0.clone())),
            evaluations: 1,
            budget: Budget {
                max_evaluations,
                started,
                max_time,
            },
            iterations: 0,
            stop: None,
            last_failure: None,
            line_search_failed: false,
            checkpoints: Vec::new(),
            snapshots: Vec::new(),
        }
    }

    /// Keeps a [`Snapshot`] for every checkpoint the evaluations have reached, when the run asks
    /// for one more.
    fn take_snapshots(&mut self) {
        while self
            .checkpoints
            .first()
            .is_some_and(|&c| c <= self.evaluations)
        {
            self.checkpoints.remove(0);
            if let Some(best) = self.best.clone() {
                // The request comes from an iteration under way, which a run ending here counts.
                self.snapshots.push(Snapshot {
                    best,
                    iterations: self.iterations + 1,
                    evaluations: self.evaluations,
                });
            }
        }
    }

    /// Whether the wall-clock budget is spent.
    pub fn out_of_time(&self) -> bool {
        let budget = &self.budget;
        budget
            .max_time
            .is_some_and(|limit| budget.started.elapsed() >= limit)
    }
}

/// The argmin `Problem` over the scaled parameters ψ = θ ⊘ s: evaluates the objective once per
/// point (at θ = ψ ⊙ s, returning ∇ψ = ∇θ ⊙ s) and records the best point (in ψ).
///
/// An evaluation that fails or is not finite returns an error and leaves the run going (the
/// line search backs off towards its last good point); an exhausted budget returns an error and
/// sets [`Record::stop`], which ends the run.
pub(super) struct RecordingProblem<'a, O> {
    pub objective: &'a O,
    /// The scales s of the objective's parameters.
    pub scales: &'a Vector,
    pub record: Rc<RefCell<Record>>,
}

impl<O: Objective> RecordingProblem<'_, O> {
    fn eval(&self, psi: &Vector) -> std::result::Result<(f64, Vector), argmin::core::Error> {
        let mut rec = self.record.borrow_mut();
        for (p, f, g) in [&rec.last, &rec.best].into_iter().flatten() {
            if p == psi {
                return Ok((*f, g.clone()));
            }
        }
        if rec.stop.is_some() {
            return Err(argmin::core::Error::msg("the run has ended"));
        }
        // A run with a budget of this checkpoint's evaluations would end here.
        rec.take_snapshots();
        if rec.evaluations >= rec.budget.max_evaluations {
            rec.stop = Some(Termination::MaxEvaluations);
            return Err(argmin::core::Error::msg("evaluation budget exhausted"));
        }
        if rec.out_of_time() {
            rec.stop = Some(Termination::TimeLimit);
            return Err(argmin::core::Error::msg("time budget exhausted"));
        }
        rec.evaluations += 1;
        self.evaluated(&mut rec, psi)
    }

    /// Evaluates the objective at ψ (counted already), recording the point or the failure.
    fn evaluated(
        &self,
        rec: &mut Record,
        psi: &Vector,
    ) -> std::result::Result<(f64, Vector), argmin::core::Error> {
        match self
            .objective
            .value_and_gradient(&psi.component_mul(self.scales))
        {
            Ok((f, g)) if f.is_finite() && g.iter().all(|v| v.is_finite()) => {
                let g = g.component_mul(self.scales);
                if rec.best.as_ref().is_none_or(|(_, fb, _)| f < *fb) {
                    rec.best = Some((psi.clone(), f, g.clone()));
                }
                rec.last = Some((psi.clone(), f, g.clone()));
                Ok((f, g))
            }
            Ok((f, _)) => {
                let msg = Error::NonFiniteObjective {
                    what: format!("value {f} or a gradient entry"),
                }
                .to_string();
                rec.last_failure = Some(msg.clone());
                Err(argmin::core::Error::msg(msg))
            }
            Err(e) => {
                let msg = e.to_string();
                rec.last_failure = Some(msg.clone());
                Err(argmin::core::Error::msg(msg))
            }
        }
    }
}

impl<O: Objective> CostFunction for RecordingProblem<'_, O> {
    type Param = Vector;
    type Output = f64;
    fn cost(&self, p: &Vector) -> std::result::Result<f64, argmin::core::Error> {
        self.eval(p).map(|(f, _)| f)
    }
}

impl<O: Objective> Gradient for RecordingProblem<'_, O> {
    type Param = Vector;
    type Gradient = Vector;
    fn gradient(&self, p: &Vector) -> std::result::Result<Vector, argmin::core::Error> {
        self.eval(p).map(|(_, g)| g)
    }
}
