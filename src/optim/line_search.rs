//! The line search: argmin's More–Thuente with an initial step carried over from the previous
//! line search (Nocedal & Wright's α₀ = α_{k−1}·gᵀ_{k−1}p_{k−1}/gᵀ_k p_k, capped at a 100-fold
//! increase), as in Rasmussen's `minimize.m`; argmin's CG otherwise starts every line search at
//! α = 1.

use super::problem::RecordingProblem;
use super::{CgState, Objective, Vector};
use argmin::core::{LineSearch, Problem, Solver, State, KV};
use argmin::solver::linesearch::MoreThuenteLineSearch;
use std::cell::Cell;
use std::rc::Rc;

/// More–Thuente with an initial step carried over from the previous line search.
#[derive(Clone)]
pub(super) struct CarriedStep {
    inner: MoreThuenteLineSearch<Vector, Vector, f64>,
    direction: Option<Vector>,
    start: Option<Vector>,
    slope: f64,
    /// (accepted step, initial slope) of the previous line search; shared by argmin's clones.
    memory: Rc<Cell<Option<(f64, f64)>>>,
}

impl CarriedStep {
    /// Wraps a More–Thuente line search; the first line search starts at α = 1/(1 + ‖p‖).
    pub(super) fn new(inner: MoreThuenteLineSearch<Vector, Vector, f64>) -> Self {
        Self {
            inner,
            direction: None,
            start: None,
            slope: 0.0,
            memory: Rc::new(Cell::new(None)),
        }
    }
}

impl LineSearch<Vector, f64> for CarriedStep {
    fn search_direction(&mut self, direction: Vector) {
        self.direction = Some(direction.clone());
        self.inner.search_direction(direction);
    }
    fn initial_step_length(&mut self, alpha: f64) -> std::result::Result<(), argmin::core::Error> {
        self.inner.initial_step_length(alpha)
    }
}

impl<'a, O: Objective> Solver<RecordingProblem<'a, O>, CgState> for CarriedStep {
    fn name(&self) -> &str {
        "More-Thuente line search with carried-over initial step"
    }

    fn init(
        &mut self,
        problem: &mut Problem<RecordingProblem<'a, O>>,
        state: CgState,
    ) -> std::result::Result<(CgState, Option<KV>), argmin::core::Error> {
        let dir = self
            .direction
            .as_ref()
            .ok_or_else(|| argmin::core::Error::msg("line search without a direction"))?;
        let grad = state
            .get_gradient()
            .ok_or_else(|| argmin::core::Error::msg("line search without a gradient"))?;
        self.slope = grad.dot(dir);
        let alpha = match self.memory.get() {
            Some((prev_alpha, prev_slope)) if self.slope < 0.0 && prev_alpha > 0.0 => {
                prev_alpha * (prev_slope / self.slope).min(100.0)
            }
            _ => 1.0 / (1.0 + dir.norm()),
        };
        self.inner.initial_step_length(alpha)?;
        self.start = state.get_param().cloned();
        self.inner.init(problem, state)
    }

    fn next_iter(
        &mut self,
        problem: &mut Problem<RecordingProblem<'a, O>>,
        state: CgState,
    ) -> std::result::Result<(CgState, Option<KV>), argmin::core::Error> {
        let (state, kv) = self.inner.next_iter(problem, state)?;
        if let (Some(x1), Some(x0), Some(dir)) = (state.get_param(), &self.start, &self.direction) {
            let dd = dir.norm_squared();
            if dd > 0.0 {
                let alpha = (x1 - x0).dot(dir) / dd;
                if alpha > 0.0 {
                    self.memory.set(Some((alpha, self.slope)));
                }
            }
        }
        Ok((state, kv))
    }
}
