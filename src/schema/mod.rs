//! The on-disk schema of saved models (feature `serde`): plain data and the checks on load,
//! knowing no model. Each model converts itself to its saved form and back (its `saved.rs`,
//! pointing down here); the closed set of every kind, the JSON functions and the format's docs
//! are `crate::persist`'s, on the top floor.
//!
//! - `models.rs`: the saved form of every kind ([`ModelRepr`]) as the file holds it;
//! - `checks.rs`: what loading checks (shapes, finite values, factors, bounds on predictions)
//!   and the saved training summary.

mod checks;
mod models;

pub(crate) use checks::{
    bounded, finite, lower_factor, matrix, positive, rows, vector, Bounds, FactorNorms,
};
pub(crate) use models::{
    CombineRepr, EnsembleRepr, FitcRepr, FullGpRepr, ModelRepr, OnlineRecord, ScalerRepr, SsgpRepr,
    StandardizedRepr, VfeRepr,
};

use crate::error::{Error, Result};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The version of the saved-model format this build writes and reads (see `crate::persist`'s
/// module docs, "Versions").
///
/// History: 1, the first format; 2, the FITC and full-GP forms carry their `kernel`; 3, every
/// training summary carries its leave-one-out `diagnostic`; 4, an SSGP's training summary
/// carries what its calibration check did (`remedy`, absent for every other model; a held-out
/// check's `variance_scale`, when absent, reads as 1); 5, a diagnostic's `honest` (VFE's LOO,
/// by which a low mean z² flags error bars too wide; absent, it reads as false); 6, a held-out
/// check's `learned_budget` (the learned fit stopped early; absent, it reads as none); 7, a
/// held-out check's `random_features_by_margin` (the random-feature fit kept by the
/// one-standard-error rule; absent, it reads as false); 8, a held-out check's
/// `start_hyperparameters` and `start_rows` (what the lengthscale start learned from the
/// training rows, for `Remedy::start_overfits`; absent, they read as 0: no flag); 9, SSGP's
/// `Remedy::FewInputs` (a fit on enough rows but too few distinct inputs for the held-out
/// check; files before it never hold one); 10, a held-out check's `mean_mnlp` and `mean_kept`
/// (the training mean scored, and kept; absent, they read as none and false); 11, an updated
/// full GP's `blocks` (the rows of its fit and of each update, replayed on load to the same
/// factor bit for bit; absent, the factor is computed afresh on all rows as before) and an
/// updated SSGP's or full GP's `online` record (the count of its updates and how it predicted
/// them, `prequential`; absent, none); 12, the online record's `prior_level` (the share ρ of
/// SSGP's prior term λI in A = D + ρλI that forgetting has left; written only below 1, and read
/// as 1 when absent — an SSGP updated with forgetting and saved in format 11 continues from a
/// prior taken as whole); 13, an updated SSGP's `rhs` b = Φᵀ(y − ȳ) as its updates
/// accumulated it (its next update after loading is then the original's bit for bit; absent, b
/// is recovered as Aα, to round-off), and checks that refuse what loaded before: an unknown field in a
/// training summary's `diagnostic`, `remedy` or held-out record (a misspelt one loaded as its
/// default and moved the flags), a VFE `trace` below 0, an updated full GP's `online` record
/// without its `blocks` or the other way round, or counting other rows than they add (files of
/// every earlier version are read with these checks too: the crate never wrote such a file);
/// 14, a training summary's `noise_at_floor`, written when the noise ended training at its floor
/// (a fit the calibration check then widened keeps the flag on loading; absent, false, and the
/// model's θ decides as before); 15, the full GP's, FITC's and VFE's `Remedy::HeldOutRefit` (their
/// fit judged by refits on 3/4 of the rows, each scored on the rest; files before it never hold
/// one, and their fits load judged by the LOO as before).
pub const FORMAT_VERSION: u32 = 15;

/// The oldest format version this build reads: a format-2 file is migrated on load (its
/// training summaries have no diagnostic: the loaded model reports `diagnostic: None`, and
/// predicts what it predicted when saved — bit for bit but FITC's variances, to 1e-12 relative
/// since the crate's own blocked kernels), and so is a format-3 file (no `remedy`:
/// the loaded model reports `remedy: None`).
pub const OLDEST_READ_VERSION: u32 = 2;

/// A fitted model's saved form, as [`FittedRegressor::saved_form`](crate::model::FittedRegressor::saved_form)
/// returns it: opaque, to be written by `crate::persist` (`to_json`, `save_json`) or serialised
/// with serde in the saved-model format.
#[derive(Debug, Clone)]
pub struct SavedForm(pub(crate) ModelRepr);

impl Serialize for SavedForm {
    /// `{"format_version": …, "model": {…}}`, the fields of the envelope in its order.
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut envelope = serializer.serialize_struct("Envelope", 2)?;
        envelope.serialize_field("format_version", &Version)?;
        envelope.serialize_field("model", &self.0)?;
        envelope.end()
    }
}

/// The format version: written as [`FORMAT_VERSION`], and read as an error for any value outside
/// [`OLDEST_READ_VERSION`]..=[`FORMAT_VERSION`],
/// before the model is read (it is the first field written, and serde reads fields in order).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Version;

impl Serialize for Version {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        serializer.serialize_u32(FORMAT_VERSION)
    }
}

impl<'de> Deserialize<'de> for Version {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        check_version(u64::deserialize(deserializer)?).map_err(serde::de::Error::custom)?;
        Ok(Version)
    }
}

/// Ok for [`FORMAT_VERSION`] and the older versions it migrates, from [`OLDEST_READ_VERSION`].
///
/// # Errors
/// [`Error::FormatVersion`] naming `found` and [`FORMAT_VERSION`].
pub(crate) fn check_version(found: u64) -> Result<()> {
    if (u64::from(OLDEST_READ_VERSION)..=u64::from(FORMAT_VERSION)).contains(&found) {
        Ok(())
    } else {
        Err(Error::FormatVersion {
            found,
            supported: FORMAT_VERSION,
        })
    }
}

/// A saved model: the version first, then the model.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Envelope {
    pub(crate) format_version: Version,
    pub(crate) model: ModelRepr,
}
