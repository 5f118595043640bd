//! The saved forms of the models around models: a standardised model (its scaler and the model)
//! and an ensemble (how it combines, and its members).

use super::checks::{bounded, finite, positive, vector, Bounds};
use super::{ModelRepr, SavedModel};
use crate::ensemble::{Combine, FittedEnsemble};
use crate::error::{Error, Result};
use crate::model::FittedRegressor;
use crate::standardize::{FittedStandardized, Scaler};
use serde::{Deserialize, Serialize};

/// The saved [`Scaler`].
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScalerRepr {
    x_mean: Vec<f64>,
    x_scale: Vec<f64>,
    y_mean: f64,
    y_scale: f64,
}

/// A saved standardised model: the scaler, the shift of its evidence (n·log s_y) and the model
/// fitted on the standardised data. Its training summary is the model's, shifted.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct StandardizedRepr {
    scaler: ScalerRepr,
    evidence_shift: f64,
    model: ModelRepr,
}

impl StandardizedRepr {
    /// The saved form of `m`.
    pub(super) fn of(m: &FittedStandardized<SavedModel>) -> Self {
        let s = &m.scaler;
        Self {
            scaler: ScalerRepr {
                x_mean: s.x_mean.as_slice().to_vec(),
                x_scale: s.x_scale.as_slice().to_vec(),
                y_mean: s.y_mean,
                y_scale: s.y_scale,
            },
            evidence_shift: m.shift,
            model: m.inner.to_repr(),
        }
    }

    /// The model, checked: the wrapped model, then the scaler against its D (finite means,
    /// positive finite scales), a finite shift; and the bounds on its predictions on the original
    /// scale, μ·s_y + m_y and σ²·s_y².
    ///
    /// # Errors
    /// The wrapped model's; [`Error::DimensionMismatch`], [`Error::NonFinite`] or
    /// [`Error::InvalidParameter`] for the scaler; [`Error::InvalidParameter`] if the predictions
    /// could overflow.
    pub(super) fn into_model(self) -> Result<(FittedStandardized<SavedModel>, Bounds)> {
        let (inner, b) = SavedModel::from_repr(self.model)?;
        let d = inner.dim();
        let ScalerRepr {
            x_mean,
            x_scale,
            y_mean,
            y_scale,
        } = self.scaler;
        let x_mean = vector(x_mean, d, "standardisation: input means (entries, D)")?;
        let x_scale = vector(x_scale, d, "standardisation: input scales (entries, D)")?;
        if let Some(s) = x_scale.iter().find(|s| s.is_nan() || **s <= 0.0) {
            return Err(Error::InvalidParameter {
                name: "x_scale",
                reason: format!("an input scale of {s} is not positive"),
            });
        }
        let y_mean = finite(y_mean, "standardisation: target mean")?;
        let y_scale = positive(y_scale, "y_scale")?;
        let shift = finite(self.evidence_shift, "standardisation: evidence shift")?;
        let mut training = inner.training().clone();
        training.initial_neg_log_evidence = finite(
            training.initial_neg_log_evidence + shift,
            "training summary: initial −log p(y|θ), shifted",
        )?;
        training.neg_log_evidence = finite(
            training.neg_log_evidence + shift,
            "training summary: −log p(y|θ), shifted",
        )?;
        finite(
            inner.neg_log_evidence() + shift,
            "−log p(y|θ) on the original scale",
        )?;
        let bounds = Bounds {
            mean: bounded(
                b.mean * y_scale + y_mean.abs(),
                "y_scale",
                "the predictive mean on the original scale",
            )?,
            variance: bounded(
                b.variance * (y_scale * y_scale),
                "y_scale",
                "the predictive variance on the original scale",
            )?,
        };
        let model = FittedStandardized {
            scaler: Scaler {
                x_mean,
                x_scale,
                y_mean,
                y_scale,
            },
            inner,
            shift,
            training,
        };
        Ok((model, bounds))
    }
}

/// A saved ensemble: how it combines and its members. The best member (lowest −log p(y|θ), the
/// first of equals) and the training summary (the best's, iterations and evaluations summed) are
/// derived, as fitting derives them.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct EnsembleRepr {
    combine: Combine,
    members: Vec<ModelRepr>,
}

impl EnsembleRepr {
    /// The saved form of `m`.
    pub(super) fn of(m: &FittedEnsemble<SavedModel>) -> Self {
        Self {
            combine: m.combine,
            members: m.members.iter().map(SavedModel::to_repr).collect(),
        }
    }

    /// The ensemble, checked: at least one member, each member checked, all of one D; the sums
    /// of the members' iterations and evaluations must not overflow; a mixture's moments
    /// (K·max|μ_k|, (2 max|μ_k|)² + max σ_k²) must stay bounded.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for no member, an overflowing sum or moment;
    /// [`Error::DimensionMismatch`] for members of different D; a member's error.
    pub(super) fn into_model(self) -> Result<(FittedEnsemble<SavedModel>, Bounds)> {
        if self.members.is_empty() {
            return Err(Error::InvalidParameter {
                name: "members",
                reason: "an ensemble needs at least one model".into(),
            });
        }
        let mut members = Vec::with_capacity(self.members.len());
        let mut bounds = Vec::with_capacity(self.members.len());
        for repr in self.members {
            let (member, b) = SavedModel::from_repr(repr)?;
            if let Some(first) = members.first().map(SavedModel::dim) {
                if member.dim() != first {
                    return Err(Error::DimensionMismatch {
                        what: "ensemble members' input dimension D",
                        expected: first,
                        found: member.dim(),
                    });
                }
            }
            members.push(member);
            bounds.push(b);
        }
        let best = members
            .iter()
            .enumerate()
            .min_by(|a, b| a.1.neg_log_evidence().total_cmp(&b.1.neg_log_evidence()))
            .map_or(0, |(i, _)| i);
        let overflow = |what: &str| Error::InvalidParameter {
            name: "members",
            reason: format!("the members' {what} add up beyond the largest integer"),
        };
        let mut training = members[best].training().clone();
        training.iterations = members
            .iter()
            .try_fold(0u64, |a, m| a.checked_add(m.training().iterations))
            .ok_or_else(|| overflow("iterations"))?;
        training.evaluations = members
            .iter()
            .try_fold(0usize, |a, m| a.checked_add(m.training().evaluations))
            .ok_or_else(|| overflow("evaluations"))?;
        let bounds = match self.combine {
            Combine::Best => bounds[best],
            Combine::Mixture => {
                let k = members.len() as f64;
                let mean = bounds.iter().map(|b| b.mean).fold(0.0, f64::max);
                let variance = bounds.iter().map(|b| b.variance).fold(0.0, f64::max);
                let spread = bounded(
                    (2.0 * mean) * (2.0 * mean),
                    "members",
                    "the spread of the mixture's means",
                )?;
                bounded(
                    k * mean.max(variance).max(spread),
                    "members",
                    "the mixture's sums over its members",
                )?;
                Bounds {
                    mean,
                    variance: bounded(
                        variance + spread,
                        "members",
                        "the mixture's predictive variance",
                    )?,
                }
            }
        };
        let model = FittedEnsemble {
            members,
            best,
            combine: self.combine,
            training,
        };
        Ok((model, bounds))
    }
}

#[cfg(test)]
impl StandardizedRepr {
    /// Every float slot, the wrapped model's included.
    pub(super) fn floats_mut(&mut self) -> Vec<&mut f64> {
        let s = &mut self.scaler;
        let mut all = vec![&mut s.y_mean, &mut s.y_scale, &mut self.evidence_shift];
        all.extend(s.x_mean.iter_mut());
        all.extend(s.x_scale.iter_mut());
        all.extend(self.model.floats_mut());
        all
    }
}

#[cfg(test)]
impl EnsembleRepr {
    /// Every float slot of every member.
    pub(super) fn floats_mut(&mut self) -> Vec<&mut f64> {
        self.members
            .iter_mut()
            .flat_map(ModelRepr::floats_mut)
            .collect()
    }
}
