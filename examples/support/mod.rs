//! Code shared by the `kin40k` and `benchmark` examples: building each method at a number of
//! basis functions (restarts, standardisation and the lengthscale start as the settings say),
//! timing a fit and its predictions, progress on stderr, and the results table with each fit's
//! termination.

use ssgp::ensemble::{Combine, Ensemble};
use ssgp::kernel::Kernel;
use ssgp::metrics::{mnlp, nmse};
use ssgp::optim::{progress_printer, Method};
use ssgp::standardize::Standardized;
use ssgp::{Dataset, Fitc, FullGp, LengthscaleInit, Regressor, Ssgp, Vfe};
use std::error::Error;
use std::time::Instant;

/// The methods of the paper's comparison (§5.2), SSGP's restarts combined as an equal-weight
/// mixture (`ssgp-mix`) or kept as the best by evidence (`ssgp-best`), and VFE (`vfe`, Titsias'
/// bound, GPflow's SGPR).
pub const METHODS: [&str; 7] = [
    "ssgp",
    "ssgp-fixed",
    "fitc",
    "full",
    "ssgp-mix",
    "ssgp-best",
    "vfe",
];

/// Settings shared by every fit of a run.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The optimiser; `None` for each model's default (L-BFGS for VFE, conjugate gradients for
    /// the others).
    pub method: Option<Method>,
    /// Optimiser iterations (line searches) per fit.
    pub iterations: u64,
    /// Objective evaluations per fit.
    pub evaluations: usize,
    /// Lower bound on σn² (0 for none).
    pub noise_floor: f64,
    /// Points the full GP learns its hyperparameters on (it then conditions on all); `None` for
    /// min(2000, n).
    pub full_subset: Option<usize>,
    /// How SSGP and FITC start their lengthscales; `None` for the crate's default
    /// (`ssgp::init::DEFAULT_START`).
    pub init: Option<LengthscaleInit>,
    /// Fits per `ssgp-mix` and `ssgp-best` ensemble (seeds s, s+1, …).
    pub restarts: usize,
    /// Wrap every model in `Standardized` (inputs and targets standardised, undone in predictions).
    pub standardize: bool,
    /// Keep the best model of a failed training instead of an error (its termination names the
    /// failure).
    pub best_effort: bool,
    /// Threads (0 = all cores).
    pub threads: usize,
    /// The covariance family of every model (SSGP: its spectral density).
    pub kernel: Kernel,
    /// Print optimiser progress to stderr.
    pub progress: bool,
}

impl Default for Settings {
    /// The crate's optimiser defaults: each model's optimiser, no iteration cap, so the original code's budget of 1000
    /// evaluations binds (a cap of 500 iterations cut runs short). No noise floor, the crate's lengthscale start, the full GP's
    /// hyperparameters from min(2000, n) points, 4 restarts per ensemble, no standardisation, a
    /// failed training is an error, all cores, the squared exponential, progress shown.
    fn default() -> Self {
        Self {
            method: None,
            iterations: u64::MAX,
            evaluations: 1000,
            noise_floor: 0.0,
            full_subset: None,
            init: None,
            restarts: 4,
            standardize: false,
            best_effort: false,
            threads: 0,
            kernel: Kernel::SquaredExponential,
            progress: true,
        }
    }
}

/// One fitted model's figures.
#[derive(Clone, Debug, Default)]
pub struct Run {
    pub method: String,
    pub basis: Option<usize>,
    pub m: Option<usize>,
    pub seed: u64,
    pub n_train: usize,
    pub n_test: usize,
    pub nmse: f64,
    pub mnlp: f64,
    /// −log p(y|θ) at the fitted θ; for VFE −F, the negated bound (≥ −log p).
    pub nlml: f64,
    pub train_seconds: f64,
    pub predict_seconds: f64,
    pub iterations: u64,
    pub evaluations: usize,
    /// Why the optimiser stopped (the `Termination`'s text).
    pub termination: String,
    /// The fit's diagnosis on its training data (`TrainingSummary::diagnosis`'s text; printed,
    /// not recorded in `runs.csv`).
    pub diagnostic: String,
    /// The error that ended this fit instead of a result (its figures are then NaN).
    pub error: Option<String>,
}

/// Number of spectral points (SSGP) or pseudo-inputs (FITC, VFE) for a number of basis functions.
pub fn size_for(method: &str, basis: usize) -> Option<usize> {
    match method {
        "ssgp" | "ssgp-fixed" | "ssgp-mix" | "ssgp-best" => Some((basis / 2).max(1)),
        "fitc" | "vfe" => Some(basis),
        _ => None,
    }
}

/// The kernel named `name` (`se`, `matern12`, `matern32`, `matern52`).
///
/// # Errors
/// For any other name, listing the known ones.
pub fn parse_kernel(name: &str) -> Result<Kernel, Box<dyn Error>> {
    Kernel::ALL
        .into_iter()
        .find(|k| k.name() == name)
        .ok_or_else(|| {
            let names: Vec<_> = Kernel::ALL.iter().map(Kernel::name).collect();
            format!("unknown kernel `{name}` (expected one of {names:?})").into()
        })
}

/// The configured model for `method` at `basis` basis functions, for `n` training points.
pub fn build(
    method: &str,
    basis: usize,
    seed: u64,
    s: &Settings,
    n: usize,
) -> Result<Box<dyn Regressor>, Box<dyn Error>> {
    let label = match size_for(method, basis) {
        Some(m) => format!("{method} m={m}"),
        None => method.to_string(),
    };
    if s.progress {
        eprintln!("{label}:");
    }
    let observer = s.progress.then(progress_printer);
    macro_rules! configure {
        ($params:expr) => {{
            let p = $params
                .seed(seed)
                .max_iterations(s.iterations)
                .max_evaluations(s.evaluations)
                .noise_floor(s.noise_floor)
                .threads(s.threads)
                .kernel(s.kernel)
                .best_effort(s.best_effort);
            let p = match s.method {
                Some(method) => p.optimizer(method),
                None => p,
            };
            match observer {
                Some(o) => p.observer(o),
                None => p,
            }
        }};
    }
    macro_rules! start {
        ($params:expr) => {{
            let p = configure!($params);
            match &s.init {
                Some(init) => p.lengthscale_init(init.clone()),
                None => p,
            }
        }};
    }
    let m = (basis / 2).max(1);
    let model: Box<dyn Regressor> = match method {
        "ssgp" | "ssgp-fixed" => Box::new(start!(
            Ssgp::params(m).fixed_spectral_points(method == "ssgp-fixed")
        )),
        "ssgp-mix" => Box::new(Ensemble::restarts(
            &start!(Ssgp::params(m)),
            s.restarts,
            Combine::Mixture,
        )),
        "ssgp-best" => Box::new(Ensemble::restarts(
            &start!(Ssgp::params(m)),
            s.restarts,
            Combine::Best,
        )),
        "fitc" => Box::new(start!(Fitc::params(basis))),
        "vfe" => Box::new(start!(Vfe::params(basis))),
        "full" => Box::new(configure!(
            FullGp::params().hyperparameter_subset(Some(s.full_subset.unwrap_or(n.min(2000))))
        )),
        other => {
            return Err(format!("unknown method `{other}` (expected one of {METHODS:?})").into())
        }
    };
    Ok(if s.standardize {
        Box::new(Standardized::new(model))
    } else {
        model
    })
}

/// Fits `method` at `basis` on `train`, predicts `test`, and measures it.
///
/// # Errors
/// Whatever building, fitting, predicting or scoring the model returns.
pub fn run(
    method: &str,
    basis: usize,
    seed: u64,
    s: &Settings,
    train: &Dataset,
    test: &Dataset,
) -> Result<Run, Box<dyn Error>> {
    let model = build(method, basis, seed, s, train.len())?;
    let t0 = Instant::now();
    let fitted = model.fit_boxed(train)?;
    let train_seconds = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    let pred = fitted.predict(test.x())?;
    let predict_seconds = t1.elapsed().as_secs_f64();
    let summary = fitted.training();
    let m = size_for(method, basis);
    Ok(Run {
        method: method.to_string(),
        basis: m.map(|_| basis),
        m,
        seed,
        n_train: train.len(),
        n_test: test.len(),
        nmse: nmse(test.y(), &pred, train.y_mean())?,
        mnlp: mnlp(test.y(), &pred)?,
        nlml: fitted.neg_log_evidence(),
        train_seconds,
        predict_seconds,
        iterations: summary.iterations,
        evaluations: summary.evaluations,
        termination: summary.termination.to_string(),
        diagnostic: summary.diagnosis().to_string(),
        error: None,
    })
}

/// Prints the runs as a table: a title line, a header, one row per run (an error row shows its
/// message after the seed).
pub fn print_table(title: &str, runs: &[Run]) {
    if let Some(first) = runs.first() {
        println!(
            "\n{title} ({} training, {} test points)",
            first.n_train, first.n_test
        );
    }
    println!(
        "{:<11} {:>5} {:>5} {:>4} {:>8} {:>9} {:>12} {:>9} {:>9} {:>6} {:>6}  termination",
        "method",
        "basis",
        "m",
        "seed",
        "NMSE",
        "MNLP",
        "−log p(y|θ)",
        "train [s]",
        "pred [s]",
        "iters",
        "evals"
    );
    let opt = |v: Option<usize>| v.map_or("-".to_string(), |v| v.to_string());
    for r in runs {
        let head = format!(
            "{:<11} {:>5} {:>5} {:>4}",
            r.method,
            opt(r.basis),
            opt(r.m),
            r.seed
        );
        match &r.error {
            Some(e) => println!("{head} error: {}", e.replace(['\n', '\r'], " ")),
            None => println!(
                "{head} {:>8.4} {:>+9.4} {:>12.2} {:>9.1} {:>9.2} {:>6} {:>6}  {}",
                r.nmse,
                r.mnlp,
                r.nlml,
                r.train_seconds,
                r.predict_seconds,
                r.iterations,
                r.evaluations,
                r.termination
            ),
        }
        if r.error.is_none() && !r.diagnostic.is_empty() {
            println!("{:<26}{}", "", r.diagnostic);
        }
    }
}
