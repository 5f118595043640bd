//! The argmin adapter: the [`Objective`] as an argmin `Problem` that evaluates each θ once (argmin
//! asks for the cost and the gradient separately), counts evaluations against the budget, and
//! records the last and the best point seen and the first failure.

use super::{Objective, Vector};
use crate::error::Error;
use argmin::core::{CostFunction, Gradient};
use std::cell::RefCell;
use std::rc::Rc;

/// What the optimiser loop shares with its problem and solvers: the budget, the points seen and
/// how the run is going.
pub(super) struct Record {
    pub last: Option<(Vector, f64, Vector)>,
    pub best: Option<(Vector, f64, Vector)>,
    pub evaluations: usize,
    pub max_evaluations: usize,
    pub budget_hit: bool,
    pub failure: Option<Error>,
    /// Iterations (line searches) completed, counted here so a run that argmin ends with an
    /// error still reports them.
    pub iterations: u64,
}

/// The argmin `Problem`: evaluates the objective once per θ and records the best point.
pub(super) struct RecordingProblem<'a, O> {
    pub objective: &'a O,
    pub record: Rc<RefCell<Record>>,
}

impl<O: Objective> RecordingProblem<'_, O> {
    fn eval(&self, theta: &Vector) -> std::result::Result<(f64, Vector), argmin::core::Error> {
        let mut rec = self.record.borrow_mut();
        if let Some((t, f, g)) = &rec.last {
            if t == theta {
                return Ok((*f, g.clone()));
            }
        }
        if rec.evaluations >= rec.max_evaluations {
            rec.budget_hit = true;
            return Err(argmin::core::Error::msg("evaluation budget exhausted"));
        }
        rec.evaluations += 1;
        match self.objective.value_and_gradient(theta) {
            Ok((f, g)) if f.is_finite() && g.iter().all(|v| v.is_finite()) => {
                if rec.best.as_ref().is_none_or(|(_, fb, _)| f < *fb) {
                    rec.best = Some((theta.clone(), f, g.clone()));
                }
                rec.last = Some((theta.clone(), f, g.clone()));
                Ok((f, g))
            }
            Ok((f, _)) => {
                let e = Error::NonFiniteObjective {
                    what: format!("value {f} or a gradient entry"),
                };
                let msg = e.to_string();
                rec.failure = Some(e);
                Err(argmin::core::Error::msg(msg))
            }
            Err(e) => {
                let msg = e.to_string();
                rec.failure = Some(e);
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
