//! Limited-memory BFGS (Nocedal & Wright 2006, Algorithm 7.4 and 7.5), the optimiser of
//! scipy's `L-BFGS-B` and hence of GPflow's `Scipy`, with argmin's Moré–Thuente line search.
//!
//! At iterate x_k with gradient g_k, the direction is $d_k = -H_k g_k$, where $H_k$ is the
//! inverse-Hessian approximation of the last (at most) `memory` pairs
//! $s_i = x_{i+1} - x_i$, $y_i = g_{i+1} - g_i$, applied by the two-loop recursion from
//! $H_k^0 = γ_k I$, $γ_k = s_{k-1}^⊤y_{k-1} / y_{k-1}^⊤y_{k-1}$. The step along $d_k$ meets the
//! strong Wolfe conditions with c₁ = 1e-4, c₂ = 0.9 (argmin's `MoreThuenteLineSearch`, the
//! MINPACK-2 `dcsrch` scipy runs), starting at α = 1, or at α = 1/‖d‖₂ — a step of unit length
//! in the optimiser's scaled parameters, scipy's first step — along −g after a (re)start.
//!
//! What this adds to argmin's line search, so the run ends as honestly as the CG path
//! ([`super::stopping`]):
//! - **at most 20 evaluations per line search** (scipy's `maxls`);
//! - **the Wolfe conditions are checked** on the point the search returns (argmin's search also
//!   returns on its MINPACK warnings, at points that may not meet them): a point that does not
//!   meet them, an objective that failed or was not finite at a trial point (after up to four
//!   starts each ten times shorter, where no point below the start was seen), or 20 evaluations
//!   without a point that does, is a **failed line search**: the run moves to the best point seen
//!   (possibly the start), and the stopping rule restarts from there along −∇ with an empty
//!   memory; a second failure in a row ends the run;
//! - a pair with $s^⊤y ≤ 0$ (impossible after a Wolfe step, but round-off) is not stored, and a
//!   direction that is not a descent direction is replaced by −g with the memory cleared.

use super::problem::{Record, RecordingProblem};
use super::{CgState, Objective, Vector};
use argmin::core::{LineSearch, Problem, Solver, State, KV};
use argmin::solver::linesearch::MoreThuenteLineSearch;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

/// Evaluations per line search (scipy's `maxls`).
const MAX_EVALUATIONS: usize = 20;
/// How many times a line search that failed at a trial point starts again ten times shorter.
const SHORTER_STARTS: usize = 4;
/// The sufficient-decrease constant c₁ of the strong Wolfe conditions (argmin's default).
const C1: f64 = 1e-4;
/// The curvature constant c₂ (argmin's and scipy's).
const C2: f64 = 0.9;

/// L-BFGS with `memory` pairs and a Moré–Thuente line search (see the [module docs](self)).
#[derive(Clone)]
pub(super) struct Lbfgs {
    memory: usize,
    /// The stored pairs (s, y, 1/sᵀy), oldest first.
    pairs: VecDeque<(Vector, Vector, f64)>,
    record: Rc<RefCell<Record>>,
}

impl Lbfgs {
    /// L-BFGS keeping `memory` (≥ 1) pairs, reporting to `record`.
    pub(super) fn new(memory: usize, record: Rc<RefCell<Record>>) -> Self {
        Self {
            memory,
            // The pairs grow one per iteration: room for a usual memory up front, never for
            // an absurd one (`usize::MAX` would overflow the capacity).
            pairs: VecDeque::with_capacity(memory.min(64)),
            record,
        }
    }

    /// −H g by the two-loop recursion over the stored pairs.
    fn direction(&self, g: &Vector) -> Vector {
        let mut q = g.clone();
        let mut alphas = Vec::with_capacity(self.pairs.len());
        for (s, y, rho) in self.pairs.iter().rev() {
            let alpha = rho * s.dot(&q);
            q.axpy(-alpha, y, 1.0);
            alphas.push(alpha);
        }
        if let Some((s, y, _)) = self.pairs.back() {
            q *= s.dot(y) / y.norm_squared();
        }
        for ((s, y, rho), alpha) in self.pairs.iter().zip(alphas.into_iter().rev()) {
            let beta = rho * y.dot(&q);
            q.axpy(alpha - beta, s, 1.0);
        }
        -q
    }
}

/// The outcome of one line search: the point it ends at, and whether that point meets the strong
/// Wolfe conditions.
struct Searched {
    point: (Vector, f64, Vector),
    wolfe: bool,
}

/// Runs argmin's Moré–Thuente search from (x₀, f₀, g₀) along `d` from step `alpha`: at most
/// [`MAX_EVALUATIONS`] evaluations; an error only when the run must end (budget, time). Where the
/// objective failed (or was not finite) at a trial point before any point below f₀ was seen,
/// the search starts again from a step ten times shorter, at most [`SHORTER_STARTS`] times (as
/// the CG path's search backs off from a failed point): the same start again would fail at the
/// same point, and the run would end at x₀.
fn line_search<O: Objective>(
    problem: &mut Problem<RecordingProblem<'_, O>>,
    record: &RefCell<Record>,
    (x0, f0, g0): (&Vector, f64, &Vector),
    d: Vector,
    alpha: f64,
) -> std::result::Result<Searched, argmin::core::Error> {
    let improved = || {
        record
            .borrow()
            .best
            .as_ref()
            .is_some_and(|(_, f, _)| *f < f0)
    };
    let mut alpha = alpha;
    let mut ended = None;
    for shorter in 0..=SHORTER_STARTS {
        let mut search = MoreThuenteLineSearch::new().with_c(C1, C2)?;
        search.initial_step_length(alpha)?;
        search.search_direction(d.clone());
        let start = CgState::new()
            .param(x0.clone())
            .cost(f0)
            .gradient(g0.clone());
        match run_search(&mut search, problem, start) {
            Ok(state) => {
                ended = state;
                break;
            }
            Err(e) if record.borrow().stop.is_some() => return Err(e),
            // The objective failed at a trial point, or argmin's search met a NaN.
            Err(_) if shorter < SHORTER_STARTS && !improved() => alpha *= 0.1,
            Err(_) => break,
        }
    }
    if let Some(mut state) = ended {
        if let (Some(x1), Some(g1)) = (state.take_param(), state.take_gradient()) {
            let f1 = state.get_cost();
            let step = &x1 - x0;
            let slope = g0.dot(&step);
            let wolfe = slope < 0.0 && f1 <= f0 + C1 * slope && g1.dot(&step).abs() <= -C2 * slope;
            if wolfe {
                return Ok(Searched {
                    point: (x1, f1, g1),
                    wolfe,
                });
            }
        }
    }
    let rec = record.borrow();
    let point = match &rec.best {
        Some((x, f, g)) if *f < f0 => (x.clone(), *f, g.clone()),
        _ => (x0.clone(), f0, g0.clone()),
    };
    Ok(Searched {
        point,
        wolfe: false,
    })
}

/// The search's iterations from `start` until it ends (`Some`, at its last point) or
/// [`MAX_EVALUATIONS`] are spent (`None`).
fn run_search<O: Objective>(
    search: &mut MoreThuenteLineSearch<Vector, Vector, f64>,
    problem: &mut Problem<RecordingProblem<'_, O>>,
    start: CgState,
) -> std::result::Result<Option<CgState>, argmin::core::Error> {
    let (mut state, _) = search.init(problem, start)?;
    for _ in 0..MAX_EVALUATIONS {
        state = search.next_iter(problem, state)?.0;
        if state.terminated() {
            return Ok(Some(state));
        }
    }
    Ok(None)
}

impl<'a, O: Objective> Solver<RecordingProblem<'a, O>, CgState> for Lbfgs {
    fn name(&self) -> &str {
        "L-BFGS with a More-Thuente line search"
    }

    fn init(
        &mut self,
        problem: &mut Problem<RecordingProblem<'a, O>>,
        state: CgState,
    ) -> std::result::Result<(CgState, Option<KV>), argmin::core::Error> {
        let x = state
            .get_param()
            .cloned()
            .ok_or_else(|| argmin::core::Error::msg("L-BFGS without a start point"))?;
        let f = problem.cost(&x)?;
        let g = problem.gradient(&x)?;
        Ok((state.param(x).cost(f).gradient(g), None))
    }

    fn next_iter(
        &mut self,
        problem: &mut Problem<RecordingProblem<'a, O>>,
        state: CgState,
    ) -> std::result::Result<(CgState, Option<KV>), argmin::core::Error> {
        let (x0, g0) = super::point_and_gradient(&state, "L-BFGS")?;
        let f0 = state.get_cost();
        let mut d = self.direction(&g0);
        let slope = g0.dot(&d);
        if slope >= 0.0 || slope.is_nan() {
            self.pairs.clear();
            d = -&g0;
        }
        let alpha = if self.pairs.is_empty() {
            1.0 / d.norm()
        } else {
            1.0
        };
        let record = Rc::clone(&self.record);
        let searched = line_search(problem, &record, (&x0, f0, &g0), d, alpha)?;
        let (x1, f1, g1) = searched.point;
        if searched.wolfe {
            let s = &x1 - &x0;
            let y = &g1 - &g0;
            let sy = s.dot(&y);
            if sy > 0.0 {
                if self.pairs.len() == self.memory {
                    self.pairs.pop_front();
                }
                self.pairs.push_back((s, y, 1.0 / sy));
            }
        } else {
            self.pairs.clear();
            record.borrow_mut().line_search_failed = true;
        }
        Ok((state.param(x1).cost(f1).gradient(g1), None))
    }
}
