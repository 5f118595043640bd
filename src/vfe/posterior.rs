//! A VFE model conditioned on its training data at fixed parameters, and its predictions.

use crate::inducing::{fitted_methods, Fitted};
#[cfg(doc)]
use crate::predictive::JointPredictive;

/// A VFE model conditioned on its training data at fixed parameters: the optimal variational
/// posterior (Titsias 2009, eq. 10–11)
/// $$q(u) = N\big(σ_n^{-2}K_{uu}ΣK_{uf}y,\; K_{uu}ΣK_{uu}\big), \qquad
///   Σ = (K_{uu} + σ_n^{-2}K_{uf}K_{fu})^{-1},$$
/// with the exact conditional p(f*|u) at test inputs.
///
/// Caches $L_u$ ($K_{uu} = L_uL_u^⊤$, jitter included), $L_A$ ($A = I + VV^⊤/σ_n^2 = L_AL_A^⊤$,
/// $V = L_u^{-1}K_{uf}$) and the weights $β = L_u^{-⊤}L_A^{-⊤}L_A^{-1}Vy/σ_n^2 = ΣK_{uf}y/σ_n^2$
/// (m), so that at a test input x* with $k_* = k(X̄, x_*)$ (m):
/// $$μ_* = \bar y + k_*^⊤β, \qquad
///   σ^2_{f*} = σ_0^2 - \|L_u^{-1}k_*\|^2 + \|L_A^{-1}L_u^{-1}k_*\|^2
///            = k_{**} - Q_{**} + k_{*u}Σk_{u*},$$
/// and $σ^2_{y*} = σ^2_{f*} + σ_n^2$. These are FITC's formulas with Λ = σn²I (the code is
/// shared).
#[derive(Debug, Clone)]
pub struct FittedVfe {
    /// The posterior shared with FITC: X̄ − 1cᵀ (the inducing inputs relative to the training
    /// inputs' column means c), L_u, L_A, β, and the record (θ in the full layout, ȳ, −F at θ in
    /// `neg_log_evidence`, the training summary, the noise floor, the thread count and the used
    /// input columns).
    pub(crate) fit: Fitted,
    /// tr(K_ff − Q_ff) at θ.
    pub(crate) trace: f64,
}

fitted_methods! {
    FittedVfe, Vfe, "vfe", "inducing inputs", inducing_inputs, num_inducing_inputs;
    predict_gradients:
    /// The predictive at `x` (n*×D) with ∂μ*/∂x* and ∂σ²*/∂x* (n*×D each), through the
    /// kernel's slopes as FITC's (the same posterior form, with A = I + VVᵀ/σn²): O(m² + mD)
    /// per point. Matérn ½ at an inducing input gives the central-difference limit.
    ///
    /// # Errors
    /// As [`Self::predict`]; [`crate::error::Error::Numerical`] for a non-finite gradient;
    /// [`crate::error::Error::Allocation`] before any work if the result (8·n*·(2D + 3) bytes)
    /// cannot be allocated.
    predict_covariance:
    /// The joint predictive at `x` (n*×D, n* ≤
    /// [`MAX_JOINT_POINTS`](crate::predictive::MAX_JOINT_POINTS)): q(f*) = ∫p(f*|u)q(u)du,
    /// $$Σ_f = K_{**} - Q_{**} + K_{*u}ΣK_{u*} = K_{**} - V^⊤V + W^⊤W,$$
    /// $V = L_u^{-1}K_{u*}$, $W = L_A^{-1}V$ (m×n*, two triangular solves). Memory O(n*² + n*m).
    ///
    /// # Errors
    /// As [`Self::predict`]; [`crate::Error::InvalidParameter`] above
    /// [`MAX_JOINT_POINTS`](crate::predictive::MAX_JOINT_POINTS); [`crate::Error::Allocation`] if
    /// Σ_f cannot be allocated.
    neg_log_evidence:
    /// −F, the **negated bound** at the fitted θ: not −log p(y|θ) but an upper bound on it
    /// (F ≤ log p(y|θ)), for the centred training targets. The name is the interface's
    /// ([`crate::FittedRegressor::neg_log_evidence`]); [`Self::bound`] is F itself.
    training:
    /// How training went; its `neg_log_evidence` values are −F (bounds), as
    /// [`Self::neg_log_evidence`].
}

impl FittedVfe {
    /// The model trained or conditioned by the shared code ([`Fitted`]), and tr(K_ff − Q_ff) at θ.
    pub(crate) fn from_fit((fit, trace): (Fitted, f64)) -> Self {
        Self { fit, trace }
    }

    crate::model::sample_joint_from_covariance!();

    /// F = log N(y | 0, Q_ff + σn²I) − tr(K_ff − Q_ff)/(2σn²), the collapsed bound on
    /// log p(y|θ) at the fitted θ.
    pub fn bound(&self) -> f64 {
        -self.fit.record.neg_log_evidence
    }

    /// tr(K_ff − Q_ff) ≥ 0 (up to round-off) at the fitted θ: the prior variance of f at the
    /// training inputs that the inducing inputs leave unexplained, a quality diagnostic — 0 when
    /// X̄ covers the data, nσ0² when it explains nothing; small against nσn² when m suffices
    /// (Burt, Rasmussen & van der Wilk 2019).
    pub fn trace(&self) -> f64 {
        self.trace
    }

    /// The trace term tr(K_ff − Q_ff)/(2σn²) that F subtracts from log N(y | 0, Q_ff + σn²I).
    pub fn trace_term(&self) -> f64 {
        self.trace / (2.0 * self.fit.hyper.noise_variance)
    }
}
