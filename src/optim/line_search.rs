//! The line search: Rasmussen's, from `minimize.m` (the optimiser of the original SSGP code), as
//! an argmin line search for argmin's nonlinear CG.
//!
//! Along a descent direction s from x₀ (value f₀, slope d₀ = ∇f(x₀)ᵀs < 0) it looks for a step α
//! meeting the strong Wolfe conditions
//!
//! $$f(x_0 + αs) ≤ f_0 + ρ α d_0, \qquad |∇f(x_0 + αs)^⊤ s| ≤ -σ d_0, \qquad ρ = 0.05,\ σ = 0.1,$$
//!
//! by cubic extrapolation (at most ×3 per step) until the minimum is bracketed, then cubic or
//! quadratic interpolation inside the bracket (never within 10% of its ends), with at most 20
//! evaluations. What argmin's More–Thuente lacks, and this search does:
//! - **a failed or non-finite evaluation at a trial point shrinks the step**: the trial point is
//!   moved halfway back towards the last good point (while extrapolating) or treated as too far
//!   (while interpolating), instead of ending the run;
//! - **the best point seen is kept**: when no step meets the conditions in 20 evaluations, the
//!   search returns the best point it evaluated (possibly the start) and reports the failure, so
//!   the caller restarts along −∇ ([`super::stopping`]);
//! - **the initial step carries over** between line searches: α₀ = α_{k−1}·min(10, d_{0,k−1}/d_{0,k})
//!   (Nocedal & Wright's rule, as `minimize.m`), and the first search (or one after a failure)
//!   starts at α₀ = 1/(1 + ‖s‖∞): a step that moves no parameter by more than about 1, whatever
//!   the scale of the gradient;
//! - **no step moves a parameter by more than 1** (in the optimiser's scaled units: a factor e for
//!   a log parameter): a line search still descending steeply there takes that step and stops, so
//!   it cannot leap across a basin of the evidence.
//!
//! A direction that is not a descent direction (possible after an inexact line search) is
//! replaced by the steepest descent direction −∇f(x₀), as `minimize.m` does.

use super::problem::{Record, RecordingProblem};
use super::{CgState, Objective, Vector};
use argmin::core::{LineSearch, Problem, Solver, State, TerminationReason, KV};
use std::cell::{Cell, RefCell};
use std::rc::Rc;

/// Don't re-evaluate within this fraction of the current bracket's ends.
const INT: f64 = 0.1;
/// Extrapolate at most this many times the current step.
const EXT: f64 = 3.0;
/// Evaluations per line search.
const MAX_EVALUATIONS: usize = 20;
/// The largest growth of the initial step from one line search to the next.
const RATIO: f64 = 10.0;
/// The curvature constant σ of the strong Wolfe conditions.
const SIG: f64 = 0.1;
/// The sufficient-decrease constant ρ.
const RHO: f64 = SIG / 2.0;
/// The largest change of any parameter in one line search, in the optimiser's scaled units (log
/// units for positive parameters: a factor e).
///
/// A cap on the step keeps a line search from leaping from one basin of the evidence into another:
/// on 20 inputs with 5 replicates each (sinc), the full GP's first line search from ℓ = 3 went
/// straight past the optimum at ℓ ≈ 0.8 into the degenerate ℓ → 0 region (NMSE 0.77 instead of
/// 0.023); with the cap it reaches ℓ ≈ 0.8. On Kin-40k it changes the final evidence by less than
/// the spread between seeds.
const MAX_MOVE: f64 = 1.0;

/// Rasmussen's strong-Wolfe line search (see the [module docs](self)).
#[derive(Clone)]
pub(super) struct WolfeSearch {
    direction: Option<Vector>,
    /// The step to try first.
    alpha: f64,
    /// (accepted step, initial slope) of the previous line search; shared by argmin's clones.
    memory: Rc<Cell<Option<(f64, f64)>>>,
    record: Rc<RefCell<Record>>,
    /// x₀, f₀, ∇f(x₀) and d₀ of the current search.
    start: Option<(Vector, f64, Vector, f64)>,
    /// The longest step of the current search: no parameter moves by more than [`MAX_MOVE`].
    alpha_max: f64,
}

impl WolfeSearch {
    /// A line search reporting to `record`.
    pub(super) fn new(record: Rc<RefCell<Record>>) -> Self {
        Self {
            direction: None,
            alpha: 1.0,
            memory: Rc::new(Cell::new(None)),
            record,
            start: None,
            alpha_max: f64::INFINITY,
        }
    }
}

impl LineSearch<Vector, f64> for WolfeSearch {
    fn search_direction(&mut self, direction: Vector) {
        self.direction = Some(direction);
    }

    fn initial_step_length(&mut self, alpha: f64) -> std::result::Result<(), argmin::core::Error> {
        self.alpha = alpha;
        Ok(())
    }
}

/// The value and gradient at `x`, `None` if the objective failed or was not finite there (the
/// run goes on), an error if the run must end (budget, time).
fn evaluate<O: Objective>(
    problem: &mut Problem<RecordingProblem<'_, O>>,
    record: &RefCell<Record>,
    x: &Vector,
) -> std::result::Result<Option<(f64, Vector)>, argmin::core::Error> {
    let value = problem.cost(x).and_then(|f| Ok((f, problem.gradient(x)?)));
    match value {
        Ok(v) => Ok(Some(v)),
        Err(e) if record.borrow().stop.is_some() => Err(e),
        Err(_) => Ok(None),
    }
}

impl<'a, O: Objective> Solver<RecordingProblem<'a, O>, CgState> for WolfeSearch {
    fn name(&self) -> &str {
        "Rasmussen's strong-Wolfe line search (minimize.m)"
    }

    fn init(
        &mut self,
        _problem: &mut Problem<RecordingProblem<'a, O>>,
        state: CgState,
    ) -> std::result::Result<(CgState, Option<KV>), argmin::core::Error> {
        let (x0, g0) = super::point_and_gradient(&state, "line search")?;
        let mut s = self
            .direction
            .take()
            .ok_or_else(|| argmin::core::Error::msg("line search without a direction"))?;
        let mut d0 = g0.dot(&s);
        // Not a descent direction, or not a number (β of PR+ can overflow): steepest descent.
        if d0.is_nan() || d0 >= 0.0 {
            s = -&g0;
            d0 = -g0.norm_squared();
        }
        self.alpha_max = MAX_MOVE / s.amax();
        self.alpha = match self.memory.get() {
            Some((alpha, slope)) => alpha * RATIO.min(slope / (d0 - f64::MIN_POSITIVE)),
            None => 1.0 / (1.0 + s.amax()),
        }
        .min(self.alpha_max);
        self.direction = Some(s);
        self.start = Some((x0, state.get_cost(), g0, d0));
        Ok((state, None))
    }

    fn next_iter(
        &mut self,
        problem: &mut Problem<RecordingProblem<'a, O>>,
        state: CgState,
    ) -> std::result::Result<(CgState, Option<KV>), argmin::core::Error> {
        let (x0, f0, g0, d0) = self
            .start
            .take()
            .ok_or_else(|| argmin::core::Error::msg("line search not initialised"))?;
        let s = self
            .direction
            .clone()
            .ok_or_else(|| argmin::core::Error::msg("line search without a direction"))?;
        let record = Rc::clone(&self.record);
        let at = |step: f64| &x0 + &s * step;
        let mut left = MAX_EVALUATIONS;
        let mut best = (0.0, f0, g0.clone());
        let (mut x1, mut f1, mut d1);
        let (mut x2, mut f2, mut d2);
        let mut x3 = self.alpha;
        let (mut f3, mut g3, mut d3);
        let mut capped = false;
        // Extrapolation: from the origin through the latest point, until the minimum is bracketed.
        loop {
            (x2, f2, d2) = (0.0, f0, d0);
            (f3, g3) = (f0, g0.clone());
            let mut success = false;
            while !success && left > 0 {
                left -= 1;
                match evaluate(problem, &record, &at(x3))? {
                    Some((f, g)) => {
                        (f3, g3) = (f, g);
                        success = true;
                    }
                    None => x3 = (x2 + x3) / 2.0,
                }
            }
            if f3 < best.1 {
                best = (x3, f3, g3.clone());
            }
            d3 = g3.dot(&s);
            if d3 > SIG * d0 || f3 > f0 + x3 * RHO * d0 || left == 0 {
                break;
            }
            if x3 >= self.alpha_max {
                // Still descending steeply at the longest step allowed: take it.
                capped = true;
                break;
            }
            (x1, f1, d1) = (x2, f2, d2);
            (x2, f2, d2) = (x3, f3, d3);
            let a = 6.0 * (f1 - f2) + 3.0 * (d2 + d1) * (x2 - x1);
            let b = 3.0 * (f2 - f1) - (2.0 * d1 + d2) * (x2 - x1);
            let cubic = x1 - d1 * (x2 - x1).powi(2) / (b + (b * b - a * d1 * (x2 - x1)).sqrt());
            x3 = if !cubic.is_finite() || cubic < 0.0 || cubic > x2 * EXT {
                x2 * EXT
            } else if cubic < x2 + INT * (x2 - x1) {
                x2 + INT * (x2 - x1)
            } else {
                cubic
            }
            .min(self.alpha_max);
        }
        // Interpolation inside the bracket [x2, x4] until the strong Wolfe conditions hold.
        let (mut x4, mut f4, mut d4) = (f64::NAN, f64::NAN, f64::NAN);
        while !capped && (d3.abs() > -SIG * d0 || f3 > f0 + x3 * RHO * d0) && left > 0 {
            if d3 > 0.0 || f3 > f0 + x3 * RHO * d0 {
                (x4, f4, d4) = (x3, f3, d3);
            } else {
                (x2, f2, d2) = (x3, f3, d3);
            }
            x3 = if f4 > f0 {
                x2 - (0.5 * d2 * (x4 - x2).powi(2)) / (f4 - f2 - d2 * (x4 - x2))
            } else {
                let a = 6.0 * (f2 - f4) / (x4 - x2) + 3.0 * (d4 + d2);
                let b = 3.0 * (f4 - f2) - (2.0 * d2 + d4) * (x4 - x2);
                x2 + ((b * b - a * d2 * (x4 - x2).powi(2)).sqrt() - b) / a
            };
            if !x3.is_finite() {
                x3 = (x2 + x4) / 2.0;
            }
            x3 = x3.min(x4 - INT * (x4 - x2)).max(x2 + INT * (x4 - x2));
            left -= 1;
            match evaluate(problem, &record, &at(x3))? {
                Some((f, g)) => {
                    (f3, g3) = (f, g);
                    d3 = g3.dot(&s);
                    if f3 < best.1 {
                        best = (x3, f3, g3.clone());
                    }
                }
                // A failed trial point is too far: it becomes the bracket's far end.
                None => (f3, d3) = (f64::INFINITY, f64::INFINITY),
            }
        }
        let (step, f, g) = if capped || (d3.abs() < -SIG * d0 && f3 < f0 + x3 * RHO * d0) {
            self.memory.set(Some((x3, d0)));
            (x3, f3, g3)
        } else {
            self.memory.set(None);
            record.borrow_mut().line_search_failed = true;
            best
        };
        Ok((
            state
                .param(at(step))
                .cost(f)
                .gradient(g)
                .terminate_with(TerminationReason::SolverConverged),
            None,
        ))
    }
}
