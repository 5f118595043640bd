//! The saved forms of every kind of model, as plain data (vectors, rows of matrices, numbers):
//! what a file holds, before any check. Each model converts itself to its form (its `saved.rs`)
//! and back; only `crate::persist`, on the top floor, knows every kind.

#[cfg(test)]
use super::checks::rows_mut;
use super::checks::{Rows, SummaryRepr};
use crate::data::ColumnsRepr;
use crate::error::{Error, Result};
use crate::kernel::Kernel;
use crate::linalg::Jitter;
use crate::termination::Prequential;
use serde::{Deserialize, Serialize};

/// What an updated model's online updates recorded: how many samples they added, how the
/// model predicted each before the call that added it, and (SSGP) how much of the prior term its
/// forgetting has left.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct OnlineRecord {
    pub(crate) updates: usize,
    pub(crate) prequential: Prequential,
    /// The share ρ of an SSGP's prior term in A = D + ρλI after forgetting (format 12); not
    /// written when it is 1 (no forgetting since the prior was last whole; and the full GP's),
    /// and read as 1 when absent (files before format 12 too).
    #[serde(default = "whole_prior", skip_serializing_if = "is_whole_prior")]
    pub(crate) prior_level: f64,
}

/// The prior level of a record that does not write one.
fn whole_prior() -> f64 {
    1.0
}

/// Whether a record's prior level is whole (and so not written).
fn is_whole_prior(level: &f64) -> bool {
    *level == 1.0
}

impl OnlineRecord {
    /// The update count, the record and the prior level, checked: the record counts that many
    /// samples, its sums finite, not negative, and 0 before any sample; the prior level in
    /// [`least_prior_level`, 1] (the model's own bound: 1 for a model without one).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming `online` otherwise.
    pub(crate) fn checked(self, least_prior_level: f64) -> Result<(usize, Prequential, f64)> {
        if !(least_prior_level..=1.0).contains(&self.prior_level) {
            return Err(Error::InvalidParameter {
                name: "online",
                reason: format!(
                    "the prior level {} must be in [{least_prior_level}, 1]: forgetting \
                     restores the prior term once it falls below {least_prior_level}",
                    self.prior_level
                ),
            });
        }
        if !self.prequential.counts(self.updates) {
            return Err(Error::InvalidParameter {
                name: "online",
                reason: format!(
                    "the online record {:?} must count its {} updates, its sums finite, not \
                     negative, and 0 before any update",
                    self.prequential, self.updates
                ),
            });
        }
        Ok((self.updates, self.prequential, self.prior_level))
    }
}

/// The saved forms of the models, as the file holds them (unchecked).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ModelRepr {
    Ssgp(SsgpRepr),
    Fitc(FitcRepr),
    Vfe(VfeRepr),
    FullGp(FullGpRepr),
    Standardized(Box<StandardizedRepr>),
    Ensemble(EnsembleRepr),
}

/// The saved form of a SSGP (`FittedSsgp`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SsgpRepr {
    pub(crate) input_columns: ColumnsRepr,
    pub(crate) num_spectral_points: usize,
    pub(crate) noise_floor: f64,
    /// θ = [log ℓ, log σ0, p_n, vec(W) unless fixed].
    pub(crate) parameters: Vec<f64>,
    /// W (m×D) when the spectral points were fixed (then not in θ).
    pub(crate) fixed_unit_frequencies: Option<Rows>,
    pub(crate) centre: Vec<f64>,
    pub(crate) alpha: Vec<f64>,
    pub(crate) cholesky_factor: Rows,
    pub(crate) y_mean: f64,
    pub(crate) neg_log_evidence: f64,
    pub(crate) training: SummaryRepr,
    pub(crate) threads: usize,
    pub(crate) chunk_rows: usize,
    /// The online updates' record (format 11; its prior level format 12); absent for a model
    /// never updated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) online: Option<OnlineRecord>,
    /// b = Φᵀ(y − ȳ) (2m) as the online updates accumulated it (format 13), so that a loaded
    /// model's next update is the original's bit for bit; absent for a model never updated, and
    /// in older files, where it is recovered as Aα (to round-off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) rhs: Option<Vec<f64>>,
}

#[cfg(test)]
impl SsgpRepr {
    /// Every float slot (for the NaN and infinity tests).
    pub(crate) fn floats_mut(&mut self) -> Vec<&mut f64> {
        let mut all = vec![
            &mut self.noise_floor,
            &mut self.y_mean,
            &mut self.neg_log_evidence,
        ];
        all.extend(self.parameters.iter_mut());
        if let Some(w) = &mut self.fixed_unit_frequencies {
            all.extend(rows_mut(w));
        }
        all.extend(self.centre.iter_mut());
        all.extend(self.alpha.iter_mut());
        all.extend(rows_mut(&mut self.cholesky_factor));
        if let Some(rhs) = &mut self.rhs {
            all.extend(rhs.iter_mut());
        }
        all.extend(self.training.floats_mut());
        all
    }
}

/// The saved form `$name` of an inducing-point model (FITC or VFE): one field list, m and the
/// objective under the JSON names `$m` and `$objective`, and the model's `$extra` floats before
/// the training summary; for the tests, every float slot.
macro_rules! inducing_repr {
    (
        $(#[$doc:meta])*
        $name:ident, $m:literal, $objective:literal;
        $($(#[$extra_doc:meta])* $extra:ident),*
    ) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Serialize, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub(crate) struct $name {
            pub(crate) input_columns: ColumnsRepr,
            pub(crate) kernel: Kernel,
            /// m, the number of inducing inputs.
            #[serde(rename = $m)]
            pub(crate) m: usize,
            pub(crate) noise_floor: f64,
            /// θ = [log ℓ, log σ0, p_n, vec(X̄ − 1cᵀ)], the full layout.
            pub(crate) parameters: Vec<f64>,
            pub(crate) centre: Vec<f64>,
            /// δ ≥ 0, K_uu = k(X̄, X̄) + δI = L_uL_uᵀ.
            pub(crate) jitter: f64,
            /// L_A (m×m), A = I + VΛ⁻¹Vᵀ = L_AL_Aᵀ (Λ = σn²I for VFE).
            pub(crate) factor_a: Rows,
            pub(crate) weights: Vec<f64>,
            pub(crate) y_mean: f64,
            /// The objective at θ: −log p(y|θ) for FITC, −F for VFE.
            #[serde(rename = $objective)]
            pub(crate) objective: f64,
            $($(#[$extra_doc])* pub(crate) $extra: f64,)*
            pub(crate) training: SummaryRepr,
            pub(crate) threads: usize,
        }

        #[cfg(test)]
        impl $name {
            /// Every float slot (for the NaN and infinity tests).
            pub(crate) fn floats_mut(&mut self) -> Vec<&mut f64> {
                let mut all = vec![
                    &mut self.noise_floor,
                    &mut self.jitter,
                    &mut self.y_mean,
                    &mut self.objective,
                    $(&mut self.$extra,)*
                ];
                all.extend(self.parameters.iter_mut());
                all.extend(self.centre.iter_mut());
                all.extend(rows_mut(&mut self.factor_a));
                all.extend(self.weights.iter_mut());
                all.extend(self.training.floats_mut());
                all
            }
        }
    };
}

inducing_repr! {
    /// The saved form of a FITC model (`FittedFitc`).
    FitcRepr, "num_pseudo_inputs", "neg_log_evidence";
}

/// The saved form of a full GP (`FittedFullGp`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FullGpRepr {
    pub(crate) input_columns: ColumnsRepr,
    pub(crate) kernel: Kernel,
    pub(crate) noise_floor: f64,
    pub(crate) jitter: Jitter,
    pub(crate) threads: usize,
    /// θ = [log ℓ, log σ0, p_n] (D + 2).
    pub(crate) parameters: Vec<f64>,
    /// The training inputs on the used columns, n rows of D.
    pub(crate) inputs: Rows,
    /// The training targets (n).
    pub(crate) targets: Vec<f64>,
    pub(crate) training: SummaryRepr,
    /// The target offset ȳ of a model updated with new samples (`FittedFullGp::update`), which
    /// keeps the mean of the data it was fitted on; absent when ȳ is the mean of `targets`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) y_mean: Option<f64>,
    /// The rows of the fit and of each update after it, in order (they add up to n); absent for
    /// a model never updated. Loading conditions on the fit's rows and replays the updates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) blocks: Option<Vec<usize>>,
    /// The online updates' record (format 11; its prior level format 12); absent for a model
    /// never updated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) online: Option<OnlineRecord>,
}

#[cfg(test)]
impl FullGpRepr {
    /// Every float slot (for the NaN and infinity tests).
    pub(crate) fn floats_mut(&mut self) -> Vec<&mut f64> {
        let mut all = vec![
            &mut self.noise_floor,
            &mut self.jitter.initial,
            &mut self.jitter.retry_base,
        ];
        all.extend(self.parameters.iter_mut());
        all.extend(rows_mut(&mut self.inputs));
        all.extend(self.targets.iter_mut());
        all.extend(self.training.floats_mut());
        all.extend(self.y_mean.iter_mut());
        all
    }
}

/// The saved scaler (`standardize::Scaler`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ScalerRepr {
    pub(crate) x_mean: Vec<f64>,
    pub(crate) x_scale: Vec<f64>,
    pub(crate) y_mean: f64,
    pub(crate) y_scale: f64,
}

/// A saved standardised model: the scaler, the shift of its evidence (n·log s_y) and the model
/// fitted on the standardised data. Its training summary is the model's, shifted.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct StandardizedRepr {
    pub(crate) scaler: ScalerRepr,
    pub(crate) evidence_shift: f64,
    pub(crate) model: ModelRepr,
}

#[cfg(test)]
impl StandardizedRepr {
    /// Every float slot, the wrapped model's included.
    pub(crate) fn floats_mut(&mut self) -> Vec<&mut f64> {
        let s = &mut self.scaler;
        let mut all = vec![&mut s.y_mean, &mut s.y_scale, &mut self.evidence_shift];
        all.extend(s.x_mean.iter_mut());
        all.extend(s.x_scale.iter_mut());
        all.extend(self.model.floats_mut());
        all
    }
}

/// A saved ensemble: how it combines and its members. The best member (lowest −log p(y|θ), the
/// first of equals) and the training summary (the best's, iterations and evaluations summed) are
/// derived, as fitting derives them.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct EnsembleRepr {
    pub(crate) combine: CombineRepr,
    pub(crate) members: Vec<ModelRepr>,
}

#[cfg(test)]
impl EnsembleRepr {
    /// Every float slot of every member.
    pub(crate) fn floats_mut(&mut self) -> Vec<&mut f64> {
        self.members
            .iter_mut()
            .flat_map(ModelRepr::floats_mut)
            .collect()
    }
}

/// How a saved ensemble combines its members (`"best"` or `"mixture"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum CombineRepr {
    /// The member with the lowest −log p(y|θ).
    Best,
    /// The equal-weight mixture of the members.
    Mixture,
}

#[cfg(test)]
impl ModelRepr {
    /// Every float slot of the model and of the models it holds.
    pub(crate) fn floats_mut(&mut self) -> Vec<&mut f64> {
        match self {
            Self::Ssgp(r) => r.floats_mut(),
            Self::Fitc(r) => r.floats_mut(),
            Self::Vfe(r) => r.floats_mut(),
            Self::FullGp(r) => r.floats_mut(),
            Self::Standardized(r) => r.floats_mut(),
            Self::Ensemble(r) => r.floats_mut(),
        }
    }
}

inducing_repr! {
    /// The saved form of a VFE model (`FittedVfe`).
    VfeRepr, "num_inducing_inputs", "neg_bound";
    /// tr(K_ff − Q_ff) at θ.
    trace
}
