//! A FITC model conditioned on its training data at fixed parameters, and its predictions.

use crate::inducing::{fitted_methods, Fitted};
#[cfg(doc)]
use crate::kernel::Covariance;
#[cfg(doc)]
use crate::predictive::JointPredictive;

/// A FITC model conditioned on its training data at fixed parameters.
///
/// Caches $L_u$ ($K_{uu} = L_uL_u^⊤$, jitter included), $L_A$ ($A = I + VΛ^{-1}V^⊤ = L_AL_A^⊤$,
/// $V = L_u^{-1}K_{uf}$) and the weights $β = L_u^{-⊤}L_A^{-⊤}L_A^{-1}VΛ^{-1}y$ (m), so that at a
/// test input x* with $k_* = k(X̄, x_*)$ (m):
/// $$μ_* = \bar y + k_*^⊤β, \qquad
///   σ^2_{f*} = σ_0^2 - \|L_u^{-1}k_*\|^2 + \|L_A^{-1}L_u^{-1}k_*\|^2,$$
/// i.e. $k_{**} - Q_{**} + k_{*u}(K_{uu} + K_{uf}Λ^{-1}K_{fu})^{-1}k_{u*}$, and
/// $σ^2_* = σ^2_{f*} + σ_n^2$.
#[derive(Debug, Clone)]
pub struct FittedFitc {
    /// The posterior shared with VFE: X̄ − 1cᵀ (the pseudo-inputs relative to the training
    /// inputs' column means c), L_u, L_A, β, and the record (θ, ȳ, −log p(y|θ), the training
    /// summary, the noise floor, the thread count and the used input columns).
    pub(crate) fit: Fitted,
}

impl FittedFitc {
    /// The model trained or conditioned by the shared code ([`Fitted`]), FITC keeps no trace.
    pub(crate) fn from_fit((fit, _trace): (Fitted, f64)) -> Self {
        Self { fit }
    }

    crate::model::sample_joint_from_covariance!();
}

fitted_methods! {
    FittedFitc, Fitc, "fitc", "pseudo-inputs", pseudo_inputs, num_pseudo_inputs;
    predict_gradients:
    /// The predictive at `x` (n*×D) with its gradients with respect to the test inputs, through
    /// the kernel's derivative ∂k(x_*, x̄_u)/∂x_* ([`Covariance::add_input_gradient`]): with
    /// V = L_u⁻¹k_*, W = L_A⁻¹V,
    /// $$∂μ_*/∂x_* = \sum_u β_u\,∂k_u/∂x_*,\qquad
    ///   ∂σ^2_*/∂x_* = -2\sum_u c_u\,∂k_u/∂x_*,\quad c = L_u^{-⊤}(V - L_A^{-⊤}W),$$
    /// the derivative of σ0² − ‖V‖² + ‖W‖²: four triangular solves with m×m factors per point
    /// and O(mD) for the sums.
    ///
    /// # Errors
    /// As [`Self::predict`]; [`crate::error::Error::Numerical`] for a non-finite gradient;
    /// [`crate::error::Error::Allocation`] before any work if the result (8·n*·(2D + 3) bytes)
    /// cannot be allocated.
    predict_covariance:
    /// The joint predictive at `x` (n*×D, n* ≤
    /// [`MAX_JOINT_POINTS`](crate::predictive::MAX_JOINT_POINTS)): the posterior of the FITC
    /// prior on the training points with an exact test conditional,
    /// $$Σ_f = K_{**} - Q_{**} + K_{*u}(K_{uu} + K_{uf}Λ^{-1}K_{fu})^{-1}K_{u*}
    ///       = K_{**} - V^⊤V + W^⊤W,$$
    /// $V = L_u^{-1}K_{u*}$, $W = L_A^{-1}V$ (m×n*, two triangular solves),
    /// Λ = diag(K_ff − Q_ff) + σn²I — equivalently $K_{**} - Q_{*f}(Q_{ff} + Λ)^{-1}Q_{f*}$ (Quiñonero-Candela and
    /// Rasmussen 2005, eq. 24; its diagonal is Snelson and Ghahramani's eq. 8 without σn²).
    ///
    /// Memory O(n*² + n*m).
    ///
    /// # Errors
    /// As [`Self::predict`]; [`crate::error::Error::InvalidParameter`] above
    /// [`MAX_JOINT_POINTS`](crate::predictive::MAX_JOINT_POINTS); [`crate::error::Error::Allocation`] if
    /// Σ_f cannot be allocated.
    neg_log_evidence:
    /// −log p(y|θ) of the centred training targets at the fitted θ.
    training:
    /// How training went.
}
