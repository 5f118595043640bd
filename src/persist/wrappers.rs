//! Loading the models around models: a standardised model (its scaler and the model) and an
//! ensemble (how it combines, and its members), each checked with the models it holds.

use super::SavedModel;
use crate::ensemble::{Combine, FittedEnsemble};
use crate::error::{Error, Result};
use crate::model::FittedRegressor;
use crate::schema::{
    bounded, finite, positive, vector, Bounds, EnsembleRepr, ScalerRepr, StandardizedRepr,
};
use crate::standardize::{FittedStandardized, Scaler};

/// The model, checked: the wrapped model, then the scaler against its D (finite means,
/// positive finite scales), a finite shift; and the bounds on its predictions on the original
/// scale, μ·s_y + m_y and σ²·s_y².
///
/// # Errors
/// The wrapped model's; [`Error::DimensionMismatch`], [`Error::NonFinite`] or
/// [`Error::InvalidParameter`] for the scaler; [`Error::InvalidParameter`] if the predictions
/// could overflow.
pub(super) fn standardized(
    r: StandardizedRepr,
) -> Result<(FittedStandardized<SavedModel>, Bounds)> {
    let (inner, b) = SavedModel::from_repr(r.model)?;
    let d = inner.dim();
    let ScalerRepr {
        x_mean,
        x_scale,
        y_mean,
        y_scale,
    } = r.scaler;
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
    let shift = finite(r.evidence_shift, "standardisation: evidence shift")?;
    let mut training = inner.training().clone().rescaled(0.0, y_scale);
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

/// The ensemble, checked: at least one member, each member checked, all of one D; the sums
/// of the members' iterations and evaluations must not overflow; a mixture's moments
/// (K·max|μ_k|, (2 max|μ_k|)² + max σ_k²) must stay bounded.
///
/// # Errors
/// [`Error::InvalidParameter`] for no member, an overflowing sum or moment;
/// [`Error::DimensionMismatch`] for members of different D; a member's error.
pub(super) fn ensemble(r: EnsembleRepr) -> Result<(FittedEnsemble<SavedModel>, Bounds)> {
    if r.members.is_empty() {
        return Err(Error::InvalidParameter {
            name: "members",
            reason: "an ensemble needs at least one model".into(),
        });
    }
    let mut members = Vec::with_capacity(r.members.len());
    let mut bounds = Vec::with_capacity(r.members.len());
    for repr in r.members {
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
    let combine = Combine::from(r.combine);
    let bounds = match combine {
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
        combine,
        training,
    };
    Ok((model, bounds))
}
