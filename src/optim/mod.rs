//! The optimiser loop: argmin's nonlinear conjugate gradient (Polak–Ribière+), or L-BFGS
//! ([`Method::Lbfgs`], `lbfgs.rs`: argmin's Moré–Thuente line search, as scipy's and GPflow's),
//! over any [`Objective`], with what argmin lacks for training GPs on real data.
//!
//! - **One evaluation per θ.** argmin asks for the cost and the gradient separately, in either
//!   order; an [`Objective`] computes both in one pass, and the last and the best (θ, value,
//!   gradient) are cached (`problem.rs`).
//! - **The line search of the original code** (`line_search.rs`, Rasmussen's `minimize.m`):
//!   strong Wolfe conditions by cubic extrapolation and interpolation, a failed or non-finite
//!   trial point shrinks the step, the best point seen is kept, and initial steps carry over.
//! - **Restarts and honest ends** (`stopping.rs`): a failed line search is followed by one restart
//!   along −∇ (for L-BFGS with its memory cleared); two in a row end the run as a *failure*; a flat objective or a small gradient end
//!   it as *converged*; budgets in iterations, evaluations and wall-clock time end it as
//!   *exhausted*; the observer can stop it. Every [`Termination`] says which.
//! - **The best θ is kept** whatever happens, so a fit is never lost or made worse than its start.
//!
//! The objective functions themselves are pure functions of (data, θ) and live with their models;
//! nothing here knows about Gaussian processes.

mod lbfgs;
mod line_search;
mod problem;
mod progress;
mod stopping;

use crate::error::{Error, Result};
use crate::termination::{FailedTraining, Termination};
use argmin::core::{Executor, IterState, Solver, State, TerminationReason};
use argmin::solver::conjugategradient::{beta::PolakRibierePlus, NonlinearConjugateGradient};
use lbfgs::Lbfgs;
use line_search::WolfeSearch;
use nalgebra::DVector;
use problem::{Record, RecordingProblem};
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;
use stopping::StoppingRule;

#[cfg(feature = "log")]
pub use progress::log_observer;
pub(crate) use progress::retag;
pub use progress::{progress_printer, Observer, Phase, Progress};

/// A differentiable objective to minimise: θ ↦ (f(θ), ∇f(θ)) in one call.
pub trait Objective {
    /// Number of parameters (the length of θ).
    fn num_params(&self) -> usize;

    /// f(θ) and ∇f(θ) together.
    ///
    /// # Errors
    /// Whatever the model's evaluation reports (e.g. a failed Cholesky, a non-finite value).
    fn value_and_gradient(&self, theta: &DVector<f64>) -> Result<(f64, DVector<f64>)>;

    /// The size of the objective's natural unit: the stopping tolerances are multiples of it.
    /// For a negative log evidence, the number of data points it sums over. Default 1; must be
    /// positive and finite ([`minimize`] refuses another).
    fn value_scale(&self) -> f64 {
        1.0
    }

    /// A diagonal preconditioner: positive scales s (one per parameter) such that the optimiser
    /// works on ψ = θ ⊘ s, where a unit step means a comparable change of the objective for
    /// every parameter. Conjugate gradients are not invariant to such scalings, and a
    /// badly scaled block of parameters can slow them down by orders of magnitude. Default:
    /// none (s = 1).
    fn parameter_scales(&self) -> Option<DVector<f64>> {
        None
    }
}

/// The optimiser [`minimize`] runs; the restarts after a failed line search, the stopping tests
/// and the budgets are the same for both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Method {
    /// Nonlinear conjugate gradients (Polak–Ribière+, argmin's) with the line search of the
    /// original SSGP code (Rasmussen's `minimize.m`; see the module docs). The default.
    #[default]
    ConjugateGradient,
    /// Limited-memory BFGS keeping `memory` pairs (sᵢ = θᵢ₊₁ − θᵢ, yᵢ = ∇ᵢ₊₁ − ∇ᵢ, in the
    /// scaled parameters of [`Objective::parameter_scales`]): the direction −H∇ by the two-loop
    /// recursion from H⁰ = (sᵀy / yᵀy) I, a step meeting the strong Wolfe conditions
    /// (c₁ = 1e-4, c₂ = 0.9) by argmin's Moré–Thuente line search from α = 1, at most 20
    /// evaluations a search, and a first step (after a start or restart, along −∇) of unit
    /// length. This is scipy's `L-BFGS-B` without bounds (its memory is 10), GPflow's optimiser.
    ///
    /// ```
    /// use ssgp::optim::{Method, OptimConfig};
    /// let config = OptimConfig { method: Some(Method::Lbfgs { memory: 10 }), ..OptimConfig::default() };
    /// assert!(config.validate().is_ok());
    /// ```
    Lbfgs {
        /// Pairs kept (at least 1).
        memory: usize,
    },
}

/// Budget and stopping rule of the optimiser.
///
/// ```
/// use ssgp::optim::Method;
/// use ssgp::rand::{rngs::StdRng, SeedableRng};
/// use ssgp::{data::sinc_data, OptimConfig, Ssgp};
///
/// let train = sinc_data(100, false, 0.05, &mut StdRng::seed_from_u64(0))?;
/// let config = OptimConfig {
///     max_evaluations: 200,                       // the original code's budget is 1 000
///     tolerance: 1e-6,                            // per data point, over the last `window` iterations
///     method: Some(Method::Lbfgs { memory: 10 }), // or conjugate gradients, the default
///     ..OptimConfig::default()
/// };
/// let fitted = Ssgp::params(10).seed(1).optim(config).fit(&train)?;
/// println!("{}", fitted.training().termination);
/// # Ok::<(), ssgp::Error>(())
/// ```
#[derive(Clone)]
pub struct OptimConfig {
    /// The optimiser; `None` (the default) for the model's own: conjugate gradients for SSGP,
    /// FITC and the full GP, L-BFGS for VFE ([`crate::vfe::DEFAULT_OPTIMIZER`]). [`minimize`]
    /// runs conjugate gradients for `None`.
    pub method: Option<Method>,
    /// Maximum iterations (line searches). Default: no limit (the evaluation budget binds).
    pub max_iterations: u64,
    /// Maximum objective evaluations (each one value + gradient). Default 1000, the original SSGP
    /// code's budget.
    pub max_evaluations: usize,
    /// A wall-clock budget for the optimisation, counted from before the initial parameters'
    /// evaluation and checked before each further one (so a run overruns it by at most one
    /// evaluation). Default none.
    pub max_time: Option<Duration>,
    /// Converged when −log p decreased by at most `tolerance` × (the objective's value scale, the
    /// number of data points for the evidences) over the last `window` iterations. Default 1e-5.
    pub tolerance: f64,
    /// Number of iterations the decrease is measured over. Default 25.
    pub window: usize,
    /// Converged when the gradient's largest entry is at most `gradient_tolerance` × the value
    /// scale. Default 1e-6.
    pub gradient_tolerance: f64,
    /// Called after every iteration; `None` by default.
    pub observer: Option<Observer>,
}

impl Default for OptimConfig {
    fn default() -> Self {
        Self {
            method: None,
            max_iterations: u64::MAX,
            max_evaluations: 1000,
            max_time: None,
            tolerance: 1e-5,
            window: 25,
            gradient_tolerance: 1e-6,
            observer: None,
        }
    }
}

/// `Debug` for a struct whose fields print as themselves, listed, followed by its optional
/// `observer`, a callback printed as `Fn(&Progress)`.
macro_rules! debug_with_observer {
    ($ty:ident { $($field:ident),* }) => {
        impl std::fmt::Debug for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($ty))
                    $(.field(stringify!($field), &self.$field))*
                    .field("observer", &self.observer.as_ref().map(|_| "Fn(&Progress)"))
                    .finish()
            }
        }
    };
}

pub(crate) use debug_with_observer;

debug_with_observer! {
    OptimConfig { method, max_iterations, max_evaluations, max_time, tolerance, window, gradient_tolerance }
}

impl OptimConfig {
    /// Checks the budget and tolerances.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a zero evaluation budget, a zero window, an L-BFGS memory
    /// of 0 or a negative or non-finite tolerance.
    pub fn validate(&self) -> Result<()> {
        let memory = match self.method {
            Some(Method::Lbfgs { memory }) => memory,
            _ => 1,
        };
        for (name, count) in [
            ("max_evaluations", self.max_evaluations),
            ("window", self.window),
            ("memory", memory),
        ] {
            if count == 0 {
                return Err(Error::InvalidParameter {
                    name,
                    reason: "must be at least 1".into(),
                });
            }
        }
        for (name, v) in [
            ("tolerance", self.tolerance),
            ("gradient_tolerance", self.gradient_tolerance),
        ] {
            if !(v >= 0.0 && v.is_finite()) {
                return Err(Error::InvalidParameter {
                    name,
                    reason: format!("{v} is not a finite non-negative number"),
                });
            }
        }
        Ok(())
    }
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
    /// Iterations (line searches) run.
    pub iterations: u64,
    /// Objective evaluations used.
    pub evaluations: usize,
    /// Why it stopped.
    pub termination: Termination,
}

impl OptimReport {
    /// The report as an error if the run failed and `best_effort` is off, itself otherwise.
    ///
    /// # Errors
    /// [`Error::TrainingFailed`] with the best parameters, for a failed run without best effort.
    pub fn or_failure(self, best_effort: bool) -> Result<Self> {
        if self.termination.is_success() || best_effort {
            return Ok(self);
        }
        Err(Error::TrainingFailed(Box::new(FailedTraining {
            termination: self.termination,
            theta: self.theta,
            neg_log_evidence: self.value,
            initial_neg_log_evidence: self.initial_value,
            iterations: self.iterations,
            evaluations: self.evaluations,
        })))
    }
}

pub(crate) type Vector = DVector<f64>;
pub(crate) type CgState = IterState<Vector, Vector, (), (), (), f64>;

/// The point and the gradient of `state`, or an argmin error naming `who` for a state without
/// them (the line searches' and L-BFGS's start of an iteration).
pub(crate) fn point_and_gradient(
    state: &CgState,
    who: &str,
) -> std::result::Result<(Vector, Vector), argmin::core::Error> {
    match (state.get_param(), state.get_gradient()) {
        (Some(x), Some(g)) => Ok((x.clone(), g.clone())),
        _ => Err(argmin::core::Error::msg(format!(
            "{who} without a point and its gradient"
        ))),
    }
}

/// Minimises `objective` from `theta0` with `config`'s [`Method`], returning the best point seen
/// and why the run ended (which may be a failure: see [`Termination::is_success`]).
///
/// # Errors
/// [`Error::InvalidParameter`] for a bad config, [`Error::DimensionMismatch`] for a θ₀ of the
/// wrong length, [`Error::NonFiniteObjective`] for a value or gradient at θ₀ that is not
/// finite, and whatever the objective returns **at θ₀** (a failure later in the run is
/// recovered from or reported in the [`Termination`], keeping the best point).
pub fn minimize<O: Objective>(
    objective: &O,
    theta0: DVector<f64>,
    config: &OptimConfig,
) -> Result<OptimReport> {
    let (report, _) = minimize_with_checkpoints(objective, theta0, config, &[])?;
    Ok(report)
}

/// [`minimize`], and for each of the ascending evaluation counts in `checkpoints` the report a
/// run with that budget would have given — one run for all of them, since the path before the
/// budget ends does not depend on it: the best point when the run asked for one evaluation more
/// than the checkpoint ([`Termination::MaxEvaluations`]), or the run's own report if it ended
/// first.
///
/// # Errors
/// As [`minimize`].
pub(crate) fn minimize_with_checkpoints<O: Objective>(
    objective: &O,
    theta0: DVector<f64>,
    config: &OptimConfig,
    checkpoints: &[usize],
) -> Result<(OptimReport, Vec<OptimReport>)> {
    config.validate()?;
    if theta0.len() != objective.num_params() {
        return Err(Error::DimensionMismatch {
            what: "initial parameter vector",
            expected: objective.num_params(),
            found: theta0.len(),
        });
    }
    let scales = objective
        .parameter_scales()
        .unwrap_or_else(|| DVector::from_element(theta0.len(), 1.0));
    if scales.len() != theta0.len() || scales.iter().any(|s| !(*s > 0.0 && s.is_finite())) {
        return Err(Error::InvalidParameter {
            name: "parameter_scales",
            reason: format!(
                "{} scales for {} parameters, all must be positive and finite",
                scales.len(),
                theta0.len()
            ),
        });
    }
    let unit = objective.value_scale();
    if !(unit > 0.0 && unit.is_finite()) {
        // A NaN or negative unit would switch both convergence tests off.
        return Err(Error::InvalidParameter {
            name: "value_scale",
            reason: format!("{unit} is not a positive, finite unit of the objective"),
        });
    }
    // The wall-clock budget counts θ₀'s evaluation too.
    let started = std::time::Instant::now();
    let (f0, g0) = objective.value_and_gradient(&theta0)?;
    if !f0.is_finite() || g0.iter().any(|v| !v.is_finite()) {
        return Err(Error::NonFiniteObjective {
            what: format!("value {f0} or a gradient entry at the initial parameters"),
        });
    }
    let psi0 = theta0.component_div(&scales);
    let record = Rc::new(RefCell::new(Record::new(
        &psi0,
        f0,
        &g0.component_mul(&scales),
        config.max_evaluations,
        (started, config.max_time),
    )));
    record.borrow_mut().checkpoints = checkpoints.to_vec();
    if config.max_iterations == 0 {
        record.borrow_mut().stop = Some(Termination::NotStarted);
    } else {
        let problem = RecordingProblem {
            objective,
            scales: &scales,
            record: Rc::clone(&record),
        };
        let stopping = (config, objective, &scales, &record);
        let run = match config.method.unwrap_or_default() {
            Method::ConjugateGradient => {
                let cg = NonlinearConjugateGradient::new(
                    WolfeSearch::new(Rc::clone(&record)),
                    PolakRibierePlus::new(),
                );
                execute(
                    problem,
                    StoppingRule::new(cg, stopping),
                    psi0,
                    config.max_iterations,
                )
            }
            Method::Lbfgs { memory } => {
                let lbfgs = Lbfgs::new(memory, Rc::clone(&record));
                execute(
                    problem,
                    StoppingRule::new(lbfgs, stopping),
                    psi0,
                    config.max_iterations,
                )
            }
        };
        let mut rec = record.borrow_mut();
        if let Ok(res) = &run {
            rec.iterations = rec.iterations.max(res.get_iter());
        }
        if rec.stop.is_none() {
            rec.stop = Some(match run {
                Ok(res)
                    if res.get_termination_reason()
                        == Some(&TerminationReason::MaxItersReached) =>
                {
                    Termination::MaxIterations
                }
                Ok(res) => Termination::OptimiserError(format!(
                    "argmin ended the run without a reason of ours: {:?}",
                    res.get_termination_reason()
                )),
                Err(e) => Termination::OptimiserError(e.to_string()),
            });
        }
    }
    let rec = record.borrow();
    let (theta, value, gradient) = match &rec.best {
        Some((psi, f, g)) => (psi.component_mul(&scales), *f, g.component_div(&scales)),
        None => (theta0, f0, g0),
    };
    let report = OptimReport {
        theta,
        value,
        gradient,
        initial_value: f0,
        iterations: rec.iterations,
        evaluations: rec.evaluations,
        termination: rec.stop.clone().unwrap_or(Termination::NotStarted),
    };
    let mut snapshots: Vec<OptimReport> = rec
        .snapshots
        .iter()
        .map(|snap| {
            let (psi, f, g) = &snap.best;
            OptimReport {
                theta: psi.component_mul(&scales),
                value: *f,
                gradient: g.component_div(&scales),
                initial_value: f0,
                iterations: snap.iterations,
                evaluations: snap.evaluations,
                termination: Termination::MaxEvaluations,
            }
        })
        .collect();
    snapshots.resize(checkpoints.len(), report.clone());
    Ok((report, snapshots))
}

/// Runs `solver` on `problem` from ψ₀ for at most `max_iterations` iterations: argmin's final
/// state, or its error.
fn execute<P, S: Solver<P, CgState>>(
    problem: P,
    solver: S,
    psi0: Vector,
    max_iterations: u64,
) -> std::result::Result<CgState, argmin::core::Error> {
    Executor::new(problem, solver)
        .configure(|s| s.param(psi0).max_iters(max_iterations))
        .run()
        .map(|r| r.state)
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
        // The default tolerances are per data point of an evidence; Rosenbrock wants tighter.
        let precise = OptimConfig {
            tolerance: 1e-14,
            gradient_tolerance: 1e-10,
            ..OptimConfig::default()
        };
        let rep = minimize(&Rosenbrock, x0.clone(), &precise).unwrap();
        assert!(rep.value < 1e-8, "{rep:?}");
        assert!((rep.theta.add_scalar(-1.0)).amax() < 1e-3);
        assert!(rep.evaluations <= 1000);
        assert!(rep.termination.is_success(), "{rep:?}");

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

    /// Minimises Rosenbrock from (−1.2, 1, −1.2, 1) with L-BFGS keeping `memory` pairs.
    fn lbfgs(memory: usize, config: OptimConfig) -> OptimReport {
        let x0 = DVector::from_vec(vec![-1.2, 1.0, -1.2, 1.0]);
        let config = OptimConfig {
            method: Some(Method::Lbfgs { memory }),
            ..config
        };
        minimize(&Rosenbrock, x0, &config).unwrap()
    }

    #[test]
    fn lbfgs_minimises_rosenbrock_and_respects_budgets() {
        let precise = OptimConfig {
            tolerance: 1e-14,
            gradient_tolerance: 1e-10,
            ..OptimConfig::default()
        };
        // A memory beyond any run's iterations (usize::MAX overflowed the pairs' capacity).
        for memory in [1, 5, 50, usize::MAX] {
            let rep = lbfgs(memory, precise.clone());
            assert!(rep.value < 1e-12, "memory {memory}: {rep:?}");
            assert!((rep.theta.add_scalar(-1.0)).amax() < 1e-5);
            assert!(rep.termination.is_success(), "{rep:?}");
        }
        // Quasi-Newton steps: far fewer evaluations than CG's.
        let (q, cg) = (
            lbfgs(5, precise.clone()),
            minimize(
                &Rosenbrock,
                DVector::from_vec(vec![-1.2, 1.0, -1.2, 1.0]),
                &precise,
            )
            .unwrap(),
        );
        assert!(q.evaluations < cg.evaluations, "{q:?} {cg:?}");

        let tight = OptimConfig {
            max_evaluations: 7,
            ..OptimConfig::default()
        };
        let rep = lbfgs(5, tight);
        assert_eq!(rep.evaluations, 7);
        assert_eq!(rep.termination, Termination::MaxEvaluations);
        assert!(rep.iterations >= 1);
        assert!(rep.value < rep.initial_value);

        let iters = OptimConfig {
            max_iterations: 3,
            ..OptimConfig::default()
        };
        let rep = lbfgs(5, iters);
        assert_eq!(rep.iterations, 3);
        assert_eq!(rep.termination, Termination::MaxIterations);
    }

    #[test]
    fn a_zero_lbfgs_memory_is_refused() {
        let config = OptimConfig {
            method: Some(Method::Lbfgs { memory: 0 }),
            ..OptimConfig::default()
        };
        let err = minimize(&Rosenbrock, DVector::zeros(4), &config).unwrap_err();
        assert!(
            matches!(err, Error::InvalidParameter { name: "memory", .. }),
            "{err}"
        );
    }

    /// x ↦ c‖x‖², with the gradient's sign flipped when `wrong_sign` (no step along the
    /// "descent" direction decreases it), failing away from the start when `fails`.
    struct Broken {
        scale: f64,
        wrong_sign: bool,
        fails: bool,
    }

    impl Objective for Broken {
        fn num_params(&self) -> usize {
            2
        }
        fn value_and_gradient(&self, x: &DVector<f64>) -> Result<(f64, DVector<f64>)> {
            if self.fails && x != &DVector::from_element(2, 1.0) {
                return Err(Error::NonFiniteObjective {
                    what: "a broken evaluation".into(),
                });
            }
            let sign = if self.wrong_sign { -2.0 } else { 2.0 };
            Ok((self.scale * x.norm_squared(), x * (sign * self.scale)))
        }
    }

    #[test]
    fn lbfgs_reports_failed_line_searches_and_keeps_the_best_point() {
        let x0 = DVector::from_element(2, 1.0);
        for method in [Method::ConjugateGradient, Method::Lbfgs { memory: 10 }] {
            let config = OptimConfig {
                method: Some(method),
                ..OptimConfig::default()
            };
            // With c = 1e8, L-BFGS's first step 1/‖∇‖ is below argmin's smallest step, where
            // its search returns (MINPACK's warning 4) at a point that is worse than the start:
            // a failure, not a step.
            for scale in [1.0, 1e8] {
                let wrong = Broken {
                    scale,
                    wrong_sign: true,
                    fails: false,
                };
                let rep = minimize(&wrong, x0.clone(), &config).unwrap();
                assert!(
                    matches!(rep.termination, Termination::LineSearchFailed(_)),
                    "{method:?}: {rep:?}"
                );
                assert_eq!((&rep.theta, rep.value), (&x0, 2.0 * scale), "{method:?}");
                assert!(rep.clone().or_failure(false).is_err());
            }

            let failing = Broken {
                scale: 1.0,
                wrong_sign: false,
                fails: true,
            };
            let rep = minimize(&failing, x0.clone(), &config).unwrap();
            match &rep.termination {
                Termination::EvaluationFailed(msg) => {
                    assert!(msg.contains("a broken evaluation"), "{msg}")
                }
                other => panic!("{method:?}: {other:?}"),
            }
            assert_eq!((&rep.theta, rep.value), (&x0, 2.0), "{method:?}");
        }
    }

    /// x ↦ ‖x‖², failing (an error) where any entry is below ½: a region the steps must back
    /// off from, as a factorisation that fails far from the start.
    struct Walled;

    impl Objective for Walled {
        fn num_params(&self) -> usize {
            2
        }
        fn value_and_gradient(&self, x: &DVector<f64>) -> Result<(f64, DVector<f64>)> {
            if x.iter().any(|&v| v < 0.5) {
                return Err(Error::NonFiniteObjective {
                    what: "beyond a wall".into(),
                });
            }
            Ok((x.norm_squared(), x * 2.0))
        }
    }

    /// Both methods back off from a trial point that fails and go on towards the wall at ½
    /// (value 0.5). L-BFGS's first step (a unit step along −∇ from (1, 1)) lands past it; it
    /// started the same search again and ended at the start, value 2, after 3 evaluations.
    #[test]
    fn both_methods_back_off_from_a_failed_trial_point() {
        for method in [Method::ConjugateGradient, Method::Lbfgs { memory: 10 }] {
            let config = OptimConfig {
                method: Some(method),
                ..OptimConfig::default()
            };
            let rep = minimize(&Walled, DVector::from_element(2, 1.0), &config).unwrap();
            assert!(rep.value < 0.6, "{method:?}: {rep:?}");
            assert!(rep.theta.iter().all(|&v| v >= 0.5), "{method:?}: {rep:?}");
        }
    }

    /// x ↦ ‖x‖², each evaluation taking 40 ms.
    struct Slow;

    impl Objective for Slow {
        fn num_params(&self) -> usize {
            2
        }
        fn value_and_gradient(&self, x: &DVector<f64>) -> Result<(f64, DVector<f64>)> {
            std::thread::sleep(Duration::from_millis(40));
            Ok((x.norm_squared(), x * 2.0))
        }
    }

    /// x ↦ ‖x‖² in a unit that is not positive.
    struct Unitless(f64);

    impl Objective for Unitless {
        fn num_params(&self) -> usize {
            2
        }
        fn value_and_gradient(&self, x: &DVector<f64>) -> Result<(f64, DVector<f64>)> {
            Ok((x.norm_squared(), x * 2.0))
        }
        fn value_scale(&self) -> f64 {
            self.0
        }
    }

    /// A value scale that is NaN, 0 or negative is refused (it switched the convergence tests
    /// off: the run spent its whole budget).
    #[test]
    fn a_value_scale_that_is_no_unit_is_refused() {
        for unit in [f64::NAN, 0.0, -1.0, f64::INFINITY] {
            let err = minimize(
                &Unitless(unit),
                DVector::from_element(2, 1.0),
                &OptimConfig::default(),
            )
            .unwrap_err();
            assert!(
                matches!(
                    err,
                    Error::InvalidParameter {
                        name: "value_scale",
                        ..
                    }
                ),
                "{unit}: {err}"
            );
        }
        assert!(minimize(
            &Unitless(1.0),
            DVector::from_element(2, 1.0),
            &OptimConfig::default()
        )
        .is_ok());
    }

    /// The time budget counts the initial parameters' evaluation: 40 ms of it spend a 20 ms
    /// budget, so the run ends after that one evaluation (it began the clock after it and took
    /// a second).
    #[test]
    fn the_time_budget_counts_the_first_evaluation() {
        for method in [Method::ConjugateGradient, Method::Lbfgs { memory: 10 }] {
            let config = OptimConfig {
                method: Some(method),
                max_time: Some(Duration::from_millis(20)),
                ..OptimConfig::default()
            };
            let rep = minimize(&Slow, DVector::from_element(2, 1.0), &config).unwrap();
            assert_eq!(rep.termination, Termination::TimeLimit, "{method:?}");
            assert_eq!(rep.evaluations, 1, "{method:?}");
        }
    }

    /// One run with checkpoints gives, for each, the report of a run with that budget, field for
    /// field (θ, value, gradient, iterations, evaluations, termination), for both methods; a
    /// checkpoint past the run's end gives its own report.
    #[test]
    fn checkpoints_give_the_runs_with_those_budgets() {
        let x0 = DVector::from_vec(vec![-1.2, 1.0, -1.2, 1.0]);
        let checkpoints = [1, 2, 5, 9, 31, 62, 125, 250, 100_000];
        for method in [Method::ConjugateGradient, Method::Lbfgs { memory: 5 }] {
            let config = OptimConfig {
                method: Some(method),
                max_evaluations: 100_000,
                ..OptimConfig::default()
            };
            let (whole, snapshots) =
                minimize_with_checkpoints(&Rosenbrock, x0.clone(), &config, &checkpoints).unwrap();
            assert_eq!(snapshots.len(), checkpoints.len());
            assert!(whole.evaluations < 100_000, "{whole:?}");
            for (&budget, snapshot) in checkpoints.iter().zip(&snapshots) {
                let alone = minimize(
                    &Rosenbrock,
                    x0.clone(),
                    &OptimConfig {
                        max_evaluations: budget,
                        ..config.clone()
                    },
                )
                .unwrap();
                assert_eq!(snapshot, &alone, "{method:?}, budget {budget}");
            }
            assert_eq!(snapshots.last(), Some(&whole));
            // A checkpoint at the run's own budget gives its report.
            let tight = OptimConfig {
                max_evaluations: 40,
                ..config.clone()
            };
            let (whole, snapshots) =
                minimize_with_checkpoints(&Rosenbrock, x0.clone(), &tight, &[40]).unwrap();
            assert_eq!(whole.termination, Termination::MaxEvaluations);
            assert_eq!(snapshots, vec![whole]);
        }
    }
}
