//! Progress from the first second to the last: what a fit or a prediction reports to an
//! [`Observer`] — the start values, SSGP's spectral draws, each optimiser iteration, each chunk of
//! predictions — tagged with the restart it belongs to, and a ready printer for it.

use std::ops::ControlFlow;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What a run is doing when it reports ([`Progress::phase`]), in the order a fit goes through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Phase {
    /// Start values: a full GP learns the lengthscales on a subset (§5.2,
    /// [`LengthscaleInit::FullGpSubset`](crate::init::LengthscaleInit::FullGpSubset)); the
    /// optimiser fields are that full GP's.
    StartValues,
    /// SSGP's initial spectral draws (§4.2): `done` of `total` evaluated; `value` is the last
    /// draw's −log p(y|θ), `best_value` the best so far (the one training starts from).
    SpectralDraws {
        /// Draws evaluated.
        done: usize,
        /// Draws in all.
        total: usize,
    },
    /// SSGP's calibration check ([`CalibrationGuard::Check`](crate::ssgp::CalibrationGuard::Check),
    /// from 40 distinct inputs): the learned and the random-feature fit on 3/4 of the rows, compared on the
    /// rest before the winner is refitted on all rows (above 2 000 rows: on half the rows, after
    /// the learned fit's own phases on all rows); their spectral draws and optimiser iterations
    /// are reported with this phase (the optimiser fields are theirs).
    CalibrationCheck,
    /// The optimiser on the model's own evidence.
    Optimiser,
    /// Predictions: `done` of `total` test rows computed.
    Prediction {
        /// Test rows done.
        done: usize,
        /// Test rows in all.
        total: usize,
    },
}

/// What a fit or a prediction reports: after every optimiser iteration (of the start-value full
/// GP and of the model), every spectral draw and every chunk of test rows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Progress {
    /// What the run is doing.
    pub phase: Phase,
    /// `Some((k, K))` when the fit is restart k (from 0) of K of an
    /// [`Ensemble`](crate::ensemble::Ensemble); `None` otherwise.
    pub restart: Option<(usize, usize)>,
    /// Iterations (line searches) completed (optimiser phases; 0 otherwise).
    pub iteration: u64,
    /// Objective evaluations so far (optimiser phases; spectral draws evaluated; 0 otherwise).
    pub evaluations: usize,
    /// Objective value at the current point (NaN in the prediction phase).
    pub value: f64,
    /// Best objective value so far (NaN in the prediction phase).
    pub best_value: f64,
    /// Euclidean norm of the gradient at the current point (NaN outside the optimiser phases).
    pub gradient_norm: f64,
    /// Wall-clock time since the phase started.
    pub elapsed: Duration,
}

impl Progress {
    /// A report of `phase` with no optimiser figures (`value` for the spectral draws).
    pub(crate) fn of(phase: Phase, value: f64, best_value: f64, elapsed: Duration) -> Self {
        let evaluations = match phase {
            Phase::SpectralDraws { done, .. } => done,
            _ => 0,
        };
        Self {
            phase,
            restart: None,
            iteration: 0,
            evaluations,
            value,
            best_value,
            gradient_norm: f64::NAN,
            elapsed,
        }
    }
}

/// A callback receiving every [`Progress`] report; returning [`ControlFlow::Break`] stops
/// training (the optimiser with
/// [`Termination::StoppedByObserver`](crate::termination::Termination::StoppedByObserver) and its
/// best θ kept; the spectral draws with the best so far). Predictions report but cannot be
/// stopped. Set one with any builder's `observer`; a fitted model keeps it for its predictions
/// (a loaded one has none).
///
/// ```
/// use ssgp::optim::{Observer, Phase, Progress};
/// use ssgp::rand::{rngs::StdRng, SeedableRng};
/// use ssgp::{data::sinc_data, Ssgp};
/// use std::ops::ControlFlow;
/// use std::sync::{Arc, Mutex};
///
/// let train = sinc_data(60, false, 0.05, &mut StdRng::seed_from_u64(0))?;
/// let phases = Arc::new(Mutex::new(Vec::new()));
/// let seen = Arc::clone(&phases);
/// let observer: Observer = Arc::new(move |p: &Progress| {
///     seen.lock().unwrap().push(p.phase);
///     ControlFlow::Continue(())
/// });
/// let fitted = Ssgp::params(8).seed(1).initial_draws(5).observer(observer).fit(&train)?;
/// let phases = phases.lock().unwrap();
/// assert_eq!(phases[0], Phase::StartValues);              // the full GP on a subset
/// assert!(phases.contains(&Phase::CalibrationCheck));     // two fits on 3/4 of the rows
/// assert_eq!(phases.last(), Some(&Phase::Optimiser));     // then the kept fit's iterations
/// # Ok::<(), ssgp::Error>(())
/// ```
pub type Observer = Arc<dyn Fn(&Progress) -> ControlFlow<()> + Send + Sync>;

/// An observer that hands `observer` every report after `tag` has changed it (its phase, its
/// restart).
pub(crate) fn retag(
    observer: &Observer,
    tag: impl Fn(&mut Progress) + Send + Sync + 'static,
) -> Observer {
    let inner = Arc::clone(observer);
    Arc::new(move |p: &Progress| {
        let mut tagged = *p;
        tag(&mut tagged);
        inner(&tagged)
    })
}

/// One line of text for a report.
fn describe(p: &Progress) -> String {
    let restart = p.restart.map_or(String::new(), |(k, of)| {
        format!("[restart {}/{of}] ", k + 1)
    });
    let body = match p.phase {
        Phase::StartValues => format!(
            "start values (full GP on a subset): iteration {}, {} evaluations, −log p {:.6e}",
            p.iteration, p.evaluations, p.best_value
        ),
        Phase::SpectralDraws { done, total } => format!(
            "spectral draws: {done}/{total}, best −log p {:.6e}",
            p.best_value
        ),
        Phase::CalibrationCheck => format!(
            "calibration check (fits on 3/4 of the rows): {} evaluations, −log p {:.6e}",
            p.evaluations, p.value
        ),
        Phase::Optimiser => format!(
            "iteration {}, {} evaluations, −log p {:.6e} (best {:.6e}), |∇| {:.2e}",
            p.iteration, p.evaluations, p.value, p.best_value, p.gradient_norm
        ),
        Phase::Prediction { done, total } => format!("prediction: {done}/{total} rows"),
    };
    format!("{restart}{body}, {:.1} s", p.elapsed.as_secs_f64())
}

/// A ready observer that prints progress to stderr: at most one line a second within a phase,
/// the first report of every phase, and the last report of a phase when the next one begins (so
/// a short phase is seen, and where each ended). It never stops a run.
///
/// ```
/// use ssgp::rand::{rngs::StdRng, SeedableRng};
/// use ssgp::{data::sinc_data, optim::progress_printer, Ssgp};
///
/// // With your own table: `let data = ssgp::Dataset::from_csv("data.csv")?;`
/// let data = sinc_data(100, false, 0.05, &mut StdRng::seed_from_u64(0))?;
/// let fitted = Ssgp::params(10).max_evaluations(100).observer(progress_printer()).fit(&data)?;
/// # Ok::<(), ssgp::Error>(())
/// ```
pub fn progress_printer() -> Observer {
    printer(|line| eprintln!("{line}"))
}

/// A phase as the printer tells phases apart: its kind and its restart.
type PhaseKey = (std::mem::Discriminant<Phase>, Option<(usize, usize)>);

/// What [`printer`] remembers between reports.
#[derive(Default)]
struct PrinterState {
    /// When the last line was written.
    printed_at: Option<Instant>,
    /// The phase (kind and restart) of the last report.
    phase: Option<PhaseKey>,
    /// The last report, when it was not written.
    pending: Option<Progress>,
}

/// The printer of [`progress_printer`], writing its lines with `write`.
pub(crate) fn printer(write: impl Fn(&str) + Send + Sync + 'static) -> Observer {
    let state = Mutex::new(PrinterState::default());
    Arc::new(move |p: &Progress| {
        let mut state = state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let phase = Some((std::mem::discriminant(&p.phase), p.restart));
        let new_phase = state.phase != phase;
        if new_phase {
            if let Some(last) = state.pending.take() {
                write(&describe(&last));
            }
        }
        let due = state
            .printed_at
            .is_none_or(|t| t.elapsed() >= Duration::from_secs(1));
        if new_phase || due {
            write(&describe(p));
            state.printed_at = Some(Instant::now());
            state.pending = None;
        } else {
            state.pending = Some(*p);
        }
        state.phase = phase;
        ControlFlow::Continue(())
    })
}

/// An observer that logs every report at `level` through the `log` crate (feature `log`), for
/// applications that route their diagnostics through a logger; target `ssgp`.
#[cfg(feature = "log")]
pub fn log_observer(level: log::Level) -> Observer {
    Arc::new(move |p: &Progress| {
        log::log!(target: "ssgp", level, "{}", describe(p));
        ControlFlow::Continue(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Within a second of each other, only a phase's first report is printed, and its last when
    /// the next phase begins; restarts are phases of their own.
    #[test]
    fn the_printer_writes_the_first_and_last_report_of_each_phase() {
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&lines);
        let print = printer(move |l| sink.lock().unwrap().push(l.to_string()));
        let at = |phase, iteration| Progress {
            iteration,
            ..Progress::of(phase, 1.0, 1.0, Duration::ZERO)
        };
        for i in 1..=500 {
            assert!(print(&at(Phase::Optimiser, i)).is_continue());
        }
        let _ = print(&at(
            Phase::Prediction {
                done: 10,
                total: 20,
            },
            0,
        ));
        let _ = print(&at(
            Phase::Prediction {
                done: 20,
                total: 20,
            },
            0,
        ));
        let mut tagged = at(Phase::Optimiser, 1);
        tagged.restart = Some((1, 3));
        let _ = print(&tagged);
        let lines = lines.lock().unwrap();
        assert_eq!(lines.len(), 5, "{lines:#?}");
        assert!(lines[0].starts_with("iteration 1,"), "{}", lines[0]);
        assert!(lines[1].starts_with("iteration 500,"), "{}", lines[1]);
        assert!(lines[2].starts_with("prediction: 10/20"), "{}", lines[2]);
        assert!(lines[3].starts_with("prediction: 20/20"), "{}", lines[3]);
        assert!(
            lines[4].starts_with("[restart 2/3] iteration 1,"),
            "{}",
            lines[4]
        );
    }
}
