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
use crate::optim::{retag, Phase};
use crate::params::{ParamGuard, TrainingSettings};
use nalgebra::DVector;

/// The lengthscales a full GP learns (from half ranges, with the default optimiser settings, its
/// best point kept even if training fails: it is only a start) on a random subset of `subset`
/// points of `data` (all of them if fewer), drawn with `seed`: the start the paper uses for
/// Pumadyn-32nm (§5.2), [`LengthscaleInit::FullGpSubset`]. A column constant on the subset (but
/// not on `data`) starts at half its range instead.
///
/// # Errors
/// As [`ValidFullGpParams::learn`].
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

/// [`lengthscales_from_subset`] with the seed, threads and noise floors of `settings` (the model's
/// own: the start's full GP bounds its noise as the model does), its optimiser reporting to the
/// settings' observer (as [`Phase::StartValues`]).
fn subset_lengthscales(
    data: &Dataset,
    subset: usize,
    settings: &TrainingSettings,
) -> Result<DVector<f64>> {
    let mut params = FullGp::params()
        .seed(settings.seed)
        .threads(settings.threads)
        .noise_floor(settings.noise_floor)
        .relative_noise_floor(settings.relative_noise_floor)
        .hyperparameter_subset(Some(subset.min(data.len())))
        .best_effort(true);
    let observer = settings.optim.observer.as_ref();
    if let Some(observer) = observer {
        params = params.observer(retag(observer, |p| p.phase = Phase::StartValues));
    }
    let learned = params.check()?.learn(data)?;
    let mut lengthscales = learned.lengthscales();
    for d in learned.columns.ignored() {
        let col = data.x().column(d);
        lengthscales[d] = 0.5 * (col.max() - col.min());
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
