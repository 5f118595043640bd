//! The loop's control around the optimiser (argmin's CG or [`super::lbfgs`]): when to stop, restarts along −∇ after a failed line
//! search, and the progress reports to the observer.
//!
//! After every iteration, in this order:
//! 1. the observer sees the [`Progress`] and may stop the run ([`Termination::StoppedByObserver`]);
//! 2. the wall-clock budget ([`Termination::TimeLimit`]);
//! 3. **a flat objective**: −log p decreased by at most `tolerance`·s over the last `window`
//!    iterations ([`Termination::Converged`]);
//! 4. **a small gradient**: ‖∇‖∞ ≤ `gradient_tolerance`·s ([`Termination::SmallGradient`]);
//!
//! where s is the objective's [`Objective::value_scale`] (the number of data points for the
//! evidences), so both tests mean the same on any data set and are invariant to the scale of the
//! inputs and targets (a rescaling shifts −log p by a constant and leaves the gradient in log
//! space unchanged).
//!
//! A line search that finds no acceptable step (it still moves to the best point it saw) is
//! followed by one restart along −∇; a second failure in a row ends the run, as in `minimize.m`:
//! as converged if −log p decreased by at most the tolerance over the last 5 iterations — no step
//! improves on a point where the objective is flat to within round-off — and otherwise as a
//! failure ([`Termination::LineSearchFailed`], or
//! [`Termination::EvaluationFailed`] when the objective failed at the trial points).

use super::problem::Record;
use super::{CgState, Objective, Observer, OptimConfig, Phase, Progress, Vector};
use crate::termination::Termination;
use argmin::core::{Problem, Solver, State, TerminationReason, TerminationStatus, KV};
use std::cell::RefCell;
use std::ops::ControlFlow;
use std::rc::Rc;

/// Iterations over which the objective must be flat for a second line-search failure in a row to
/// count as convergence.
const FLAT_AT_FAILURE: usize = 5;

/// The optimiser with the stopping tests, the restarts and the progress reports.
pub(super) struct StoppingRule<S> {
    inner: S,
    /// A copy of the solver as built, to restart from along −∇.
    fresh: S,
    history: Vec<f64>,
    tolerance: f64,
    gradient_tolerance: f64,
    window: usize,
    observer: Option<Observer>,
    record: Rc<RefCell<Record>>,
    /// Line searches that failed in a row.
    failures: u32,
    /// The parameters' scales s: the gradient in θ is ∇ψ ⊘ s.
    scales: Vector,
}

impl<S: Clone> StoppingRule<S> {
    /// The rules of `config` around `inner`, scaled by the objective's value scale.
    pub(super) fn new<O: Objective>(
        inner: S,
        (config, objective, scales, record): (&OptimConfig, &O, &Vector, &Rc<RefCell<Record>>),
    ) -> Self {
        let scale = objective.value_scale();
        Self {
            fresh: inner.clone(),
            inner,
            history: Vec::new(),
            tolerance: config.tolerance * scale,
            gradient_tolerance: config.gradient_tolerance * scale,
            window: config.window,
            observer: config.observer.clone(),
            record: Rc::clone(record),
            failures: 0,
            scales: scales.clone(),
        }
    }

    /// Whether −log p, now `cost`, decreased by at most the tolerance over the last `window`
    /// iterations (and there were that many).
    fn flat(&self, cost: f64, window: usize) -> bool {
        let k = self.history.len();
        window > 0 && k >= window && self.history[k - window] - cost <= self.tolerance
    }

    /// Ends the run with `termination` at `state`.
    fn stop(&self, state: CgState, termination: Termination) -> CgState {
        self.record.borrow_mut().stop = Some(termination);
        state.terminate_with(TerminationReason::SolverExit("stopped".into()))
    }
}

impl<P, S: Solver<P, CgState> + Clone> Solver<P, CgState> for StoppingRule<S> {
    fn name(&self) -> &str {
        "the optimiser with restarts and stopping tests"
    }

    fn init(
        &mut self,
        problem: &mut Problem<P>,
        state: CgState,
    ) -> std::result::Result<(CgState, Option<KV>), argmin::core::Error> {
        let (state, kv) = self.inner.init(problem, state)?;
        self.history.push(state.get_cost());
        Ok((state, kv))
    }

    fn next_iter(
        &mut self,
        problem: &mut Problem<P>,
        state: CgState,
    ) -> std::result::Result<(CgState, Option<KV>), argmin::core::Error> {
        let before = state.clone();
        let (state, kv) = match self.inner.next_iter(problem, state) {
            Ok(next) => next,
            // The budget or the time ran out inside the iteration: stop where we were.
            Err(_) if self.record.borrow().stop.is_some() => {
                return Ok((
                    before.terminate_with(TerminationReason::SolverExit("stopped".into())),
                    None,
                ))
            }
            Err(e) => {
                let reason = Termination::OptimiserError(e.to_string());
                return Ok((self.stop(before, reason), None));
            }
        };
        let failed = std::mem::take(&mut self.record.borrow_mut().line_search_failed);
        if !failed {
            self.failures = 0;
            return Ok((state, kv));
        }
        self.failures += 1;
        if self.failures >= 2 {
            let last_failure = self.record.borrow().last_failure.clone();
            let reason = if self.flat(state.get_cost(), FLAT_AT_FAILURE) {
                // No step improves on a point where the objective has been flat for a while:
                // converged to within round-off.
                Termination::Converged
            } else {
                match last_failure {
                    Some(msg) => Termination::EvaluationFailed(msg),
                    None => Termination::LineSearchFailed(
                        "no step along the steepest-descent direction met the Wolfe conditions"
                            .into(),
                    ),
                }
            };
            return Ok((self.stop(state, reason), kv));
        }
        // Restart along −∇ from the best point the failed search found.
        self.record.borrow_mut().last_failure = None;
        self.inner = self.fresh.clone();
        self.inner.init(problem, state)
    }

    fn terminate(&mut self, state: &CgState) -> TerminationStatus {
        // argmin asks before every iteration, the first included: `get_iter` is the number done.
        let done = state.get_iter();
        if self.record.borrow().stop.is_some() {
            return TerminationStatus::Terminated(TerminationReason::SolverExit("stopped".into()));
        }
        if done == 0 {
            return TerminationStatus::NotTerminated;
        }
        let cost = state.get_cost();
        self.history.push(cost);
        let gradient = state.get_gradient().map(|g| g.component_div(&self.scales));
        let gradient_max = gradient.as_ref().map_or(f64::NAN, |g| g.amax());
        self.record.borrow_mut().iterations = done;
        let decision = {
            let rec = self.record.borrow();
            let observed = self.observer.as_ref().map(|observer| {
                observer(&Progress {
                    phase: Phase::Optimiser,
                    restart: None,
                    iteration: done,
                    evaluations: rec.evaluations,
                    value: cost,
                    best_value: rec.best.as_ref().map_or(cost, |b| b.1),
                    gradient_norm: gradient.as_ref().map_or(f64::NAN, |g| g.norm()),
                    elapsed: rec.budget.started.elapsed(),
                })
            });
            let flat = self.flat(cost, self.window.saturating_add(1));
            if observed == Some(ControlFlow::Break(())) {
                Some(Termination::StoppedByObserver)
            } else if rec.out_of_time() {
                Some(Termination::TimeLimit)
            } else if flat {
                Some(Termination::Converged)
            } else if gradient_max <= self.gradient_tolerance {
                Some(Termination::SmallGradient)
            } else {
                None
            }
        };
        match decision {
            Some(termination) => {
                self.record.borrow_mut().stop = Some(termination);
                TerminationStatus::Terminated(TerminationReason::SolverConverged)
            }
            None => TerminationStatus::NotTerminated,
        }
    }
}
