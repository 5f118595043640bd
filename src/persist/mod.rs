//! Saving and loading fitted models (feature `serde`): every model of the crate — SSGP (learned
//! or fixed spectral points), FITC, VFE, the full GP, standardised models and ensembles of any of
//! them — as one JSON format, read back with **bit-identical** predictions and checked on the
//! way in as thoroughly as a constructor checks its arguments.
//!
//! ```
//! use ssgp::persist::{self, SavedModel};
//! use ssgp::rand::{rngs::StdRng, SeedableRng};
//! use ssgp::{data::sinc_data, FittedRegressor, FittedSsgp, Ssgp};
//!
//! let mut rng = StdRng::seed_from_u64(0);
//! let train = sinc_data(60, false, 0.05, &mut rng)?;
//! let fitted = Ssgp::params(8).seed(1).initial_draws(5).fit(&train)?;
//! let json = persist::to_json(&fitted)?;           // or persist::save_json(&fitted, path)
//! let loaded: FittedSsgp = persist::from_json(&json)?;
//! assert_eq!(loaded.predict(train.x())?, fitted.predict(train.x())?);
//! // Any kind, when the caller does not know which: a `SavedModel` (or a Box<dyn FittedRegressor>).
//! let any: SavedModel = persist::from_json(&json)?;
//! assert_eq!(any.kind(), "ssgp");
//! # Ok::<(), ssgp::Error>(())
//! ```
//!
//! # The format
//!
//! A saved model is `{"format_version": 15, "model": {"<kind>": {...}}}` (the current
//! [`FORMAT_VERSION`]) with kind `ssgp`,
//! `fitc`, `vfe`, `full_gp`, `standardized` (a scaler and its `model`) or `ensemble` (`combine` and
//! `members`, each a model). Matrices are lists of rows. What is saved is what the model cannot
//! recompute: θ (ℓ, σ0², σn² and SSGP's frequencies or FITC's pseudo-inputs are decoded from it
//! by the code that decoded them when fitting), the posterior's factors, and the settings
//! predictions run with (threads, SSGP's chunk size). The full GP saves its training data and θ
//! and conditions again on load, through the same code and thread count as the fit (n³/3 flops;
//! a file of 8·n·(D + 1) bytes' worth of numbers instead of the 8·n² of the factor).
//!
//! Every fitted type is also serde's `Serialize` and `Deserialize` in this format (with
//! [`FittedStandardized<F>`] and [`FittedEnsemble<M>`] for every persistable `F` and `M`), so
//! other serde formats work too; to read predictions back bit for bit a format must round-trip
//! `f64` exactly (a binary one, or serde_json with its `float_roundtrip` feature, which this
//! crate's feature `serde` turns on). Standardised models and ensembles nest models, and their
//! derived `Deserialize` recurses once per level before any check runs: serde_json stops at 128
//! levels, but a format without a recursion limit (bincode 1, say) reading an untrusted file
//! can overflow the stack on a few bytes per level — bound the nesting there, or read untrusted
//! files as JSON.
//!
//! # Versions
//!
//! [`FORMAT_VERSION`] is written first in every file and checked first when one is read: a file
//! of a version outside [`OLDEST_READ_VERSION`]..=[`FORMAT_VERSION`] is [`Error::FormatVersion`],
//! naming both. Older versions in that range are migrated as they are read: a format-2 file
//! (before the leave-one-out diagnostic) loads with `TrainingSummary::diagnostic` = `None`, a
//! format-2 or format-3 file (before SSGP's calibration check) with `TrainingSummary::remedy` =
//! `None`, a file before format 5 with every diagnostic's `honest` = false, a file before
//! format 6 with every held-out check's `learned_budget` = `None`, a file before format 7 with
//! every held-out check's `random_features_by_margin` = false, a file before format 8 with
//! every held-out check's `start_hyperparameters` = `start_rows` = 0 (format 9 adds
//! `Remedy::FewInputs`, which no older file holds), a file before format 10 with no training
//! mean scored, before format 11 with no online record (an updated model then loaded as fitted
//! on all its rows), before format 12 with SSGP's prior taken as whole, before format 13 with an
//! updated SSGP's b recovered as Aα (its next update equal to round-off), before format 14 with
//! `noise_at_floor` from θ alone (a fit widened above its floor loads without the flag)
//! (format 15 adds the full GP's, FITC's and VFE's `Remedy::HeldOutRefit`, which no older file
//! holds) (`FORMAT_VERSION`'s docs
//! list every version's fields), and all predict what they predicted when saved
//! (`tests/suite/format2.rs`: bit for bit but FITC's variances, to 1e-12 relative since the
//! crate's own blocked kernels sum in another order; an updated full GP saved before format 11,
//! refactorised on all its rows, to round-off). **Any change to what a saved
//! type writes or reads — a field added, removed, renamed or read differently, a check that would
//! refuse files that loaded before — bumps [`FORMAT_VERSION`].**
//!
//! # What loading checks
//!
//! Everything a constructor would, with the error a constructor would give:
//! - shapes against each other: θ against D and m; SSGP's α (2m), its factor L (2m×2m), the
//!   centre (D) and fixed frequencies (m×D); FITC's and VFE's L_A (m×m) and weights (m) —
//!   their L_u is not saved but refactorised from K_uu with the saved jitter; the full GP's
//!   inputs (n×D) against its targets (n); a scaler against its model's D; ensemble members
//!   against each other. A count in the file (m) is compared only with an array present in it;
//!   nothing is allocated from a count;
//! - the input columns: D ≥ 1, used and ignored columns each listed once, in increasing order;
//! - finite values everywhere; positive variances and scales (σ0², σn² decoded from θ must not
//!   under- or overflow), a noise floor that is finite and ≥ 0 (σn² = floor + e^{2p} ≥ floor);
//! - Cholesky factors lower triangular (zeros above the diagonal) with a positive diagonal;
//! - settings within bounds: threads ≤ [`crate::params::MAX_THREADS`], SSGP's chunk ≥ 1 row,
//!   jitter retries ≤ [`crate::linalg::Jitter::MAX_RETRIES`];
//! - the training summary: finite evidences, sums over an ensemble's members that do not overflow;
//!   VFE's trace tr(K_ff − Q_ff) ≥ 0;
//! - online records: an SSGP's or full GP's count of updates is its record's rows; an updated
//!   full GP's `blocks` and `online` record come together and count the same rows;
//! - that predictions cannot overflow: bounds on every mean, variance and intermediate sum of a
//!   prediction at any test input (for SSGP, any whose phases Ω(x* − c) are finite) are computed
//!   from the loaded values — for a triangular solve from ‖L‖_F and ‖L⁻¹‖_F — and must stay
//!   below 10³⁰⁰. A model that passes predicts finite means and variances ≥ its σn².
//!
//! Text that is not JSON, a missing, unknown or mistyped field is [`Error::MalformedModel`] (with
//! serde_json's line and column); a model of another kind than asked for is
//! [`Error::WrongModelKind`]. Runtime-only settings of training (seed, budgets, observer) are not
//! saved: a loaded model predicts, it does not train.

mod wrappers;

pub use crate::schema::{SavedForm, FORMAT_VERSION, OLDEST_READ_VERSION};

use crate::ensemble::FittedEnsemble;
use crate::error::{Error, Result};
use crate::fitc::FittedFitc;
use crate::full_gp::FittedFullGp;
use crate::model::FittedRegressor;
use crate::schema::{check_version, Bounds, Envelope, ModelRepr};
use crate::ssgp::FittedSsgp;
use crate::standardize::FittedStandardized;
use crate::vfe::FittedVfe;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::path::Path;

/// A loaded (or about to be saved) model of any kind: the closed set of models the format knows.
///
/// Get one from a concrete fitted model with `From` (`SavedModel::from(fitted)`), from a file with
/// [`load_json`] / [`from_json`]; it predicts as the model it holds ([`FittedRegressor`]), turns
/// into a `Box<dyn FittedRegressor>` with [`SavedModel::into_boxed`], or into a concrete type with
/// [`FromSaved`].
#[derive(Debug, Clone)]
pub enum SavedModel {
    /// An SSGP, with learned or fixed spectral points.
    Ssgp(FittedSsgp),
    /// A FITC model.
    Fitc(FittedFitc),
    /// A VFE model.
    Vfe(FittedVfe),
    /// A full GP.
    FullGp(FittedFullGp),
    /// A model behind a scaler.
    Standardized(Box<FittedStandardized<SavedModel>>),
    /// Restarts kept as the best or combined as a mixture.
    Ensemble(FittedEnsemble<SavedModel>),
}

impl SavedModel {
    /// The kind, as the format names it: `ssgp`, `fitc`, `vfe`, `full_gp`, `standardized` or
    /// `ensemble`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Ssgp(_) => "ssgp",
            Self::Fitc(_) => "fitc",
            Self::Vfe(_) => "vfe",
            Self::FullGp(_) => "full_gp",
            Self::Standardized(_) => "standardized",
            Self::Ensemble(_) => "ensemble",
        }
    }

    /// The input dimension D the model predicts at.
    pub fn dim(&self) -> usize {
        match self {
            Self::Ssgp(m) => m.dim(),
            Self::Fitc(m) => m.dim(),
            Self::Vfe(m) => m.dim(),
            Self::FullGp(m) => m.dim(),
            Self::Standardized(m) => m.scaler().x_mean.len(),
            Self::Ensemble(m) => m.members().first().map_or(0, SavedModel::dim),
        }
    }

    /// The model it holds, boxed as its own type (a standardised model or an ensemble holds
    /// `SavedModel`s).
    pub fn into_boxed(self) -> Box<dyn FittedRegressor> {
        match self {
            Self::Ssgp(m) => Box::new(m),
            Self::Fitc(m) => Box::new(m),
            Self::Vfe(m) => Box::new(m),
            Self::FullGp(m) => Box::new(m),
            Self::Standardized(m) => m,
            Self::Ensemble(m) => Box::new(m),
        }
    }

    /// The model it holds.
    fn as_dyn(&self) -> &dyn FittedRegressor {
        match self {
            Self::Ssgp(m) => m,
            Self::Fitc(m) => m,
            Self::Vfe(m) => m,
            Self::FullGp(m) => m,
            Self::Standardized(m) => m.as_ref(),
            Self::Ensemble(m) => m,
        }
    }

    /// The saved model of any fitted model of the crate: its [`FittedRegressor::saved_form`],
    /// checked and rebuilt as loading does (the full GP refactorises, n³/3 flops).
    ///
    /// # Errors
    /// [`Error::NotPersistable`] for a model implemented outside the crate; as [`from_json`].
    pub fn of<M: FittedRegressor + ?Sized>(model: &M) -> Result<Self> {
        Ok(Self::from_repr(model.saved_form()?.0)?.0)
    }

    /// The model a saved form describes, checked (see the [module docs](self)), and bounds on
    /// its predictions.
    ///
    /// # Errors
    /// The first check that fails.
    fn from_repr(repr: ModelRepr) -> Result<(Self, Bounds)> {
        /// A checked model of one kind, wrapped by `kind`, with its bounds.
        fn wrap<M>(
            (m, b): (M, Bounds),
            kind: impl FnOnce(M) -> SavedModel,
        ) -> (SavedModel, Bounds) {
            (kind(m), b)
        }
        Ok(match repr {
            ModelRepr::Ssgp(r) => wrap(FittedSsgp::from_repr(r)?, Self::Ssgp),
            ModelRepr::Fitc(r) => wrap(FittedFitc::from_repr(r)?, Self::Fitc),
            ModelRepr::Vfe(r) => wrap(FittedVfe::from_repr(r)?, Self::Vfe),
            ModelRepr::FullGp(r) => wrap(FittedFullGp::from_repr(r)?, Self::FullGp),
            ModelRepr::Standardized(r) => wrap(wrappers::standardized(*r)?, |m| {
                Self::Standardized(Box::new(m))
            }),
            ModelRepr::Ensemble(r) => wrap(wrappers::ensemble(r)?, Self::Ensemble),
        })
    }
}

crate::model::fitted_regressor!(SavedModel, model => model.as_dyn());

/// A type a [`SavedModel`] can be turned into: each fitted model (when the saved model is of its
/// kind), `SavedModel` itself and `Box<dyn FittedRegressor>` (any kind).
pub trait FromSaved: Sized {
    /// The model `saved` holds, as this type.
    ///
    /// # Errors
    /// [`Error::WrongModelKind`] if `saved` is of another kind (for a standardised model or an
    /// ensemble: if one it holds is).
    fn from_saved(saved: SavedModel) -> Result<Self>;
}

impl FromSaved for SavedModel {
    fn from_saved(saved: SavedModel) -> Result<Self> {
        Ok(saved)
    }
}

impl FromSaved for Box<dyn FittedRegressor> {
    fn from_saved(saved: SavedModel) -> Result<Self> {
        Ok(saved.into_boxed())
    }
}

/// A concrete fitted type's kind and variant.
macro_rules! concrete_kind {
    ($($fitted:ty => $variant:ident, $kind:literal;)*) => {$(
        impl From<$fitted> for SavedModel {
            fn from(model: $fitted) -> Self {
                Self::$variant(model)
            }
        }

        impl FromSaved for $fitted {
            fn from_saved(saved: SavedModel) -> Result<Self> {
                match saved {
                    SavedModel::$variant(model) => Ok(model),
                    other => Err(Error::WrongModelKind {
                        expected: $kind,
                        found: other.kind(),
                    }),
                }
            }
        }

        impl Serialize for $fitted {
            /// The saved-model format of [`crate::persist`].
            fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
                self.saved_form().map_err(serde::ser::Error::custom)?.serialize(serializer)
            }
        }

        impl<'de> Deserialize<'de> for $fitted {
            /// The saved-model format of [`crate::persist`], checked as [`from_json`] does.
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
                Self::from_saved(SavedModel::deserialize(deserializer)?)
                    .map_err(serde::de::Error::custom)
            }
        }
    )*};
}

concrete_kind! {
    FittedSsgp => Ssgp, "ssgp";
    FittedFitc => Fitc, "fitc";
    FittedVfe => Vfe, "vfe";
    FittedFullGp => FullGp, "full_gp";
}

impl<F: FromSaved> FromSaved for FittedStandardized<F> {
    fn from_saved(saved: SavedModel) -> Result<Self> {
        match saved {
            SavedModel::Standardized(model) => {
                let FittedStandardized {
                    scaler,
                    inner,
                    shift,
                    training,
                } = *model;
                Ok(FittedStandardized {
                    scaler,
                    inner: F::from_saved(inner)?,
                    shift,
                    training,
                })
            }
            other => Err(Error::WrongModelKind {
                expected: "standardized",
                found: other.kind(),
            }),
        }
    }
}

impl<M: FromSaved> FromSaved for FittedEnsemble<M> {
    fn from_saved(saved: SavedModel) -> Result<Self> {
        match saved {
            SavedModel::Ensemble(model) => Ok(FittedEnsemble {
                members: model
                    .members
                    .into_iter()
                    .map(M::from_saved)
                    .collect::<Result<_>>()?,
                best: model.best,
                combine: model.combine,
                training: model.training,
            }),
            other => Err(Error::WrongModelKind {
                expected: "ensemble",
                found: other.kind(),
            }),
        }
    }
}

/// serde's `Serialize` and `Deserialize` for a model around models (`$wrapper<$inner>`): the
/// saved-model format of [`crate::persist`], an error if a model inside cannot be saved; read
/// back checked as [`from_json`] does.
macro_rules! wrapper_serde {
    ($($wrapper:ident),*) => {$(
        impl<M: FittedRegressor> Serialize for $wrapper<M> {
            fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
                self.saved_form()
                    .map_err(serde::ser::Error::custom)?
                    .serialize(serializer)
            }
        }

        impl<'de, M: FromSaved> Deserialize<'de> for $wrapper<M> {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
                Self::from_saved(SavedModel::deserialize(deserializer)?)
                    .map_err(serde::de::Error::custom)
            }
        }
    )*};
}

wrapper_serde!(FittedStandardized, FittedEnsemble);

/// Only the version of a saved model (the model is skipped unread).
#[derive(Deserialize)]
struct VersionProbe {
    format_version: serde_json::Value,
}

impl Serialize for SavedModel {
    /// `{"format_version": …, "model": {…}}` (see the [module docs](self)).
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        self.saved_form()
            .map_err(serde::ser::Error::custom)?
            .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for SavedModel {
    /// Reads the format of the [module docs](self) and checks the model as [`from_json`] does;
    /// the errors are the format's, with the crate's [`Error`] as their message.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        let envelope = Envelope::deserialize(deserializer)?;
        Self::from_repr(envelope.model)
            .map(|(model, _)| model)
            .map_err(serde::de::Error::custom)
    }
}

/// The JSON text of a fitted model of any of the crate's kinds (floats written so that they read
/// back exactly).
///
/// # Errors
/// [`Error::NotPersistable`] for a model implemented outside the crate (or a standardised model
/// or an ensemble holding one).
pub fn to_json<M: FittedRegressor + ?Sized>(model: &M) -> Result<String> {
    serde_json::to_string(&model.saved_form()?).map_err(|e| Error::MalformedModel {
        reason: e.to_string(),
    })
}

/// The model saved in JSON text `text`, checked (see the [module docs](self)), as type `M`:
/// a concrete fitted type, [`SavedModel`] or `Box<dyn FittedRegressor>` for any kind.
///
/// # Errors
/// [`Error::FormatVersion`] for a file of another format version; [`Error::MalformedModel`] for
/// text that is not a saved model's JSON; the check that failed ([`Error::DimensionMismatch`],
/// [`Error::NonFinite`], [`Error::InvalidParameter`], [`Error::LengthMismatch`],
/// [`Error::EmptyData`]; [`Error::NotPositiveDefinite`] where a factor is recomputed — the full
/// GP's, FITC's and VFE's K_uu —, and for the full GP [`Error::Allocation`] and, replaying its
/// online updates, [`Error::Numerical`]); [`Error::WrongModelKind`] if it is not an `M`.
pub fn from_json<M: FromSaved>(text: &str) -> Result<M> {
    let malformed = |e: serde_json::Error| Error::MalformedModel {
        reason: e.to_string(),
    };
    let probe: VersionProbe = serde_json::from_str(text).map_err(malformed)?;
    let found = probe
        .format_version
        .as_u64()
        .ok_or_else(|| Error::MalformedModel {
            reason: format!(
                "format_version {} is not a non-negative integer",
                probe.format_version
            ),
        })?;
    check_version(found)?;
    let envelope: Envelope = serde_json::from_str(text).map_err(malformed)?;
    let (model, _) = SavedModel::from_repr(envelope.model)?;
    M::from_saved(model)
}

/// Writes a fitted model to the file `path` as [`to_json`] text (replacing the file).
///
/// # Errors
/// As [`to_json`]; [`Error::Write`] naming the file if it cannot be written.
pub fn save_json<M: FittedRegressor + ?Sized>(model: &M, path: impl AsRef<Path>) -> Result<()> {
    let text = to_json(model)?;
    std::fs::write(path.as_ref(), text).map_err(|source| Error::Write {
        path: path.as_ref().to_path_buf(),
        source,
    })
}

/// Reads a model saved by [`save_json`] from the file `path`, as [`from_json`].
///
/// # Errors
/// [`Error::Io`] naming the file if it cannot be read; as [`from_json`].
pub fn load_json<M: FromSaved>(path: impl AsRef<Path>) -> Result<M> {
    let text = std::fs::read_to_string(path.as_ref()).map_err(|source| Error::Io {
        path: path.as_ref().to_path_buf(),
        source,
    })?;
    from_json(&text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::sinc_data;
    use crate::ensemble::{Combine, Ensemble};
    use crate::fitc::Fitc;
    use crate::full_gp::FullGp;
    use crate::ssgp::Ssgp;
    use crate::standardize::Standardized;
    use crate::vfe::Vfe;
    use rand::rngs::StdRng;
    use rand::SeedableRng;

    /// One small fitted model of each kind, and a full GP and a VFE fit judged by their
    /// held-out check ([`crate::Remedy::HeldOutRefit`], from 40 distinct inputs).
    fn models() -> Vec<SavedModel> {
        let mut rng = StdRng::seed_from_u64(3);
        let train = sinc_data(24, false, 0.05, &mut rng).unwrap();
        let checked = sinc_data(48, false, 0.05, &mut rng).unwrap();
        let ssgp = Ssgp::params(3).seed(1).initial_draws(3).max_evaluations(30);
        let fitted =
            |r: &dyn crate::model::Regressor| SavedModel::of(r.fit_boxed(&train).unwrap().as_ref());
        let judged = |r: &dyn crate::model::Regressor| {
            let model = r.fit_boxed(&checked).unwrap();
            let remedy = model.training().remedy;
            assert!(
                matches!(remedy, Some(crate::Remedy::HeldOutRefit { .. })),
                "{remedy:?}"
            );
            SavedModel::of(model.as_ref())
        };
        vec![
            judged(&FullGp::params().max_evaluations(30)),
            judged(&Vfe::params(3).seed(1).max_evaluations(30)),
            fitted(&ssgp),
            fitted(&ssgp.clone().fixed_spectral_points(true)),
            fitted(&Fitc::params(3).seed(1).max_evaluations(30)),
            fitted(&Vfe::params(3).seed(1).max_evaluations(30)),
            fitted(&FullGp::params().max_evaluations(30)),
            fitted(&Standardized::new(ssgp.clone())),
            fitted(&Ensemble::new(
                vec![
                    Box::new(Fitc::params(3).seed(1).max_evaluations(30)),
                    Box::new(ssgp),
                ],
                Combine::Mixture,
            )),
        ]
        .into_iter()
        .collect::<Result<_>>()
        .unwrap()
    }

    /// JSON cannot carry NaN or ±∞, so these go in through the saved forms: each float of each
    /// kind of model, one at a time, is an error when loading.
    #[test]
    fn every_non_finite_value_is_refused() {
        for model in models() {
            let repr = model.saved_form().unwrap().0;
            assert!(
                SavedModel::from_repr(repr.clone()).is_ok(),
                "{}",
                model.kind()
            );
            let slots = repr.clone().floats_mut().len();
            assert!(slots > 20, "{}: {slots} floats", model.kind());
            for slot in 0..slots {
                for value in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
                    let mut bad = repr.clone();
                    *bad.floats_mut().swap_remove(slot) = value;
                    let result = SavedModel::from_repr(bad);
                    assert!(
                        result.is_err(),
                        "{}: float {slot} of {slots} set to {value} loaded",
                        model.kind()
                    );
                }
            }
        }
    }

    #[test]
    fn versions_are_checked_first_and_named() {
        let model = models().swap_remove(0);
        let json = to_json(&model).unwrap();
        let written = format!("{{\"format_version\":{FORMAT_VERSION},");
        assert!(json.starts_with(&written), "{json}");
        let next = u64::from(FORMAT_VERSION) + 1;
        let future = json.replacen(
            &format!("\"format_version\":{FORMAT_VERSION}"),
            &format!("\"format_version\":{next}"),
            1,
        );
        let err = from_json::<SavedModel>(&future).unwrap_err();
        assert!(matches!(
            err,
            Error::FormatVersion {
                found,
                supported: FORMAT_VERSION
            } if found == next
        ));
        assert!(
            err.to_string().contains(&next.to_string())
                && err.to_string().contains(&FORMAT_VERSION.to_string())
        );
        // Through serde alone: the same check, as the format's error.
        let err = serde_json::from_str::<SavedModel>(&future).unwrap_err();
        assert!(
            err.to_string().contains(&format!("format version {next}")),
            "{err}"
        );
        // The version is read before the model: a future file whose model this build cannot
        // parse still says which version it is.
        let garbled = future.replacen("\"model\":{", "\"model\":{\"new_kind\":{}, ", 1);
        assert!(matches!(
            from_json::<SavedModel>(&garbled),
            Err(Error::FormatVersion { found, .. }) if found == next
        ));
        let err = serde_json::from_str::<SavedModel>(&garbled).unwrap_err();
        assert!(
            err.to_string().contains(&format!("format version {next}")),
            "{err}"
        );
    }
}
