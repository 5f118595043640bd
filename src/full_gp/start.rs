//! The §5.2 start "lengthscales from a full GP on a subset" ([`LengthscaleInit::FullGpSubset`]),
//! which SSGP and FITC pass to the shared start values (`crate::init`): it needs the full GP, so
//! it lives with it.

use super::FullGp;
#[cfg(doc)]
use super::ValidFullGpParams;
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::hyperparameters::Hyperparameters;
use crate::init;
#[cfg(doc)]
use crate::init::LengthscaleInit;
use crate::optim::{retag, OptimConfig, Phase};
use crate::params::{ParamGuard, TrainingSettings};
use nalgebra::DVector;

/// The start's stopping rule: its full GP stops once −log p has fallen by at most this much per
/// subset row over the optimiser's last 25 iterations ([`OptimConfig::tolerance`]; the models'
/// own default is 1e-5): 0.1 nat on 1 024 rows. The model trains on from the start, so the
/// start's last fractions of a nat are not worth their evaluations.
///
/// Measured (2026-11-26, the 2-core VM, 3 000 generated rows with 6 relevant inputs, m = 10):
/// with 9 inputs the start took 230 evaluations and 7.9 s at 1e-5, 144 evaluations and 4.9 s
/// now, and SSGP, FITC and VFE train in 0.6–0.7× the time (0.8–0.9× with 20 inputs) to the same
/// test NMSE; default SSGP on [`crate::data::calibration_suite`] trains in 54 s instead of 70 s,
/// as many fits calibrated. A looser 1e-3 halved those times but stopped before the lengthscales
/// of irrelevant inputs had grown (their evidence changes little while they do): 50 inputs, 3
/// relevant, lost up to 8 % of NMSE.
pub const START_TOLERANCE: f64 = 1e-4;

/// The lengthscales a full GP learns (from half ranges, with the default optimiser settings but
/// the stopping tolerance [`START_TOLERANCE`], its
/// best point kept even if training fails: it is only a start) on a random subset of `subset`
/// points of `data` (all of them if fewer), drawn with `seed`: the start the paper uses for
/// Pumadyn-32nm (§5.2), [`LengthscaleInit::FullGpSubset`]. A column constant on the subset (but
/// not on `data`) starts at half its range instead.
///
/// # Errors
/// As [`ValidFullGpParams::learn`] (a `subset` below 2 is named `hyperparameter_subset`);
/// [`Error::ConstantInput`] for a column constant on all of `data`.
pub fn lengthscales_from_subset(
    data: &Dataset,
    subset: usize,
    seed: u64,
    threads: usize,
) -> Result<DVector<f64>> {
    let settings = TrainingSettings {
        seed,
        threads,
        ..TrainingSettings::default()
    };
    subset_lengthscales(data, subset, &settings)
}

/// The lengthscales of one process's start ([`start`]'s full GP: the seed, threads, noise floors
/// and observer of `settings`, the model's) learned on all the rows of `subset`, rows gathered
/// from a larger table (the distributed fit's start): a column constant on them starts at
/// `half_ranges`' entry (half its range over the whole table) instead of failing as a constant
/// input.
///
/// # Errors
/// As [`lengthscales_from_subset`]; [`Error::ConstantInput`] for a column whose entry of
/// `half_ranges` is not positive and finite where it is needed.
#[cfg(feature = "mpi")]
pub(crate) fn lengthscales_on_gathered_rows(
    subset: &Dataset,
    half_ranges: &DVector<f64>,
    settings: &TrainingSettings,
) -> Result<DVector<f64>> {
    learned_lengthscales(subset, subset.len(), settings, |d| half_ranges[d])
}

/// [`lengthscales_from_subset`] with the seed, threads and noise floors of `settings` (the model's
/// own: the start's full GP bounds its noise as the model does), its optimiser reporting to the
/// settings' observer (as [`Phase::StartValues`]).
fn subset_lengthscales(
    data: &Dataset,
    subset: usize,
    settings: &TrainingSettings,
) -> Result<DVector<f64>> {
    learned_lengthscales(data, subset, settings, |d| {
        let col = data.x().column(d);
        0.5 * (col.max() - col.min())
    })
}

/// [`subset_lengthscales`] with `half_range(d)` the start of a column `d` the full GP ignores
/// (constant on the rows it learns from).
fn learned_lengthscales(
    data: &Dataset,
    subset: usize,
    settings: &TrainingSettings,
    half_range: impl Fn(usize) -> f64,
) -> Result<DVector<f64>> {
    let mut params = FullGp::params()
        .seed(settings.seed)
        .threads(settings.threads)
        .noise_floor(settings.noise_floor)
        .relative_noise_floor(settings.relative_noise_floor)
        .hyperparameter_subset((subset < data.len()).then_some(subset))
        .best_effort(true)
        .optim(OptimConfig {
            tolerance: START_TOLERANCE,
            ..OptimConfig::default()
        });
    let observer = settings.optim.observer.as_ref();
    if let Some(observer) = observer {
        params = params.observer(retag(observer, |p| p.phase = Phase::StartValues));
    }
    let learned = params.check()?.learn(data)?;
    let mut lengthscales = learned.lengthscales();
    for d in learned.columns.ignored() {
        lengthscales[d] = half_range(d);
    }
    if let Some(d) = lengthscales
        .iter()
        .position(|l| !(*l > 0.0 && l.is_finite()))
    {
        return Err(Error::ConstantInput {
            column: d,
            value: data.x()[(0, d)],
        });
    }
    Ok(lengthscales)
}

/// The starting hyperparameters of a model trained with `settings` on `data`
/// ([`init::start`]): ℓ by the settings' [`LengthscaleInit`], with
/// [`lengthscales_from_subset`] for [`LengthscaleInit::FullGpSubset`] (its iterations reported to
/// the settings' observer as [`Phase::StartValues`]); σ0² = var(y), σn² = σ0²/4.
///
/// # Errors
/// As [`init::start`] and [`lengthscales_from_subset`].
pub(crate) fn start(data: &Dataset, settings: &TrainingSettings) -> Result<Hyperparameters> {
    init::start(data, &settings.lengthscales, |subset| {
        subset_lengthscales(data, subset, settings)
    })
}
