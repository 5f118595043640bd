//! The stopping rule around argmin's CG: a relative-decrease test over a window of iterations,
//! the iteration count and the progress reports to the observer.

use super::problem::Record;
use super::{CgState, Observer, Progress};
use argmin::core::{Problem, Solver, State, TerminationReason, TerminationStatus, KV};
use std::cell::RefCell;
use std::rc::Rc;

/// argmin's CG with a convergence test and progress reports.
pub(super) struct StoppingRule<S> {
    inner: S,
    history: Vec<f64>,
    tolerance: f64,
    window: usize,
    observer: Option<Observer>,
    record: Rc<RefCell<Record>>,
}

impl<S> StoppingRule<S> {
    /// Stops `inner` when −log p decreased by less than `tolerance`·max(1, |f|) over `window`
    /// iterations; reports each iteration to `observer`.
    pub(super) fn new(
        inner: S,
        tolerance: f64,
        window: usize,
        observer: Option<Observer>,
        record: Rc<RefCell<Record>>,
    ) -> Self {
        Self {
            inner,
            history: Vec::new(),
            tolerance,
            window,
            observer,
            record,
        }
    }
}

impl<P, S: Solver<P, CgState>> Solver<P, CgState> for StoppingRule<S> {
    fn name(&self) -> &str {
        "nonlinear conjugate gradient (Polak-Ribiere+) with a relative-decrease test"
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
        self.inner.next_iter(problem, state)
    }

    fn terminate(&mut self, state: &CgState) -> TerminationStatus {
        // argmin asks before every iteration, the first included: `get_iter` is the number done.
        let done = state.get_iter();
        if done == 0 {
            return TerminationStatus::NotTerminated;
        }
        let cost = state.get_cost();
        self.history.push(cost);
        self.record.borrow_mut().iterations = done;
        if let Some(observer) = &self.observer {
            let rec = self.record.borrow();
            observer(&Progress {
                iteration: done,
                evaluations: rec.evaluations,
                value: cost,
                best_value: rec.best.as_ref().map_or(cost, |b| b.1),
                gradient_norm: state.get_gradient().map_or(f64::NAN, |g| g.norm()),
            });
        }
        let k = self.history.len();
        if k > self.window {
            let before = self.history[k - 1 - self.window];
            if before - cost <= self.tolerance * cost.abs().max(1.0) {
                return TerminationStatus::Terminated(TerminationReason::SolverConverged);
            }
        }
        TerminationStatus::NotTerminated
    }
}
