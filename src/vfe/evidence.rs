//! The negative VFE bound −F and its gradient, in one O(nm² + nmD) pass.
//!
//! The equations, shapes and parameter layout are on [`VfeEvidence`]'s page.

#[cfg(doc)]
use super::ValidVfeParams;
use crate::error::Result;
use crate::inducing::{evidence_methods, InducingObjective};
#[cfg(doc)]
use crate::optim::Objective;
use nalgebra::DVector;

/// The negative VFE bound −F and its gradient, in one O(nm² + nmD) pass.
///
/// # The objective
/// With training inputs X (n×D), inducing inputs X̄ (m×D) and a stationary ARD covariance
/// ([`crate::kernel::Kernel`]), $K_{uf} = k(X̄, X)$ (m×n), $K_{uu} = k(X̄, X̄) + δI$ (m×m, the jitter
/// δ relative to σ0² by default, [`crate::linalg::Jitter`]) and $Q_{ff} = K_{fu}K_{uu}^{-1}K_{uf}$,
/// $$-F = \tfrac12 y^⊤C^{-1}y + \tfrac12\log|C| + \tfrac n2\log 2π +
///   \frac{\mathrm{tr}(K_{ff} - Q_{ff})}{2σ_n^2}, \qquad C = Q_{ff} + σ_n^2 I,$$
/// for centred targets y. F ≤ log p(y|θ) of the exact GP at the same θ (Titsias 2009, eq. 9): the
/// optimiser minimises −F, an upper bound on −log p(y|θ).
///
/// # Parameter layout
/// FITC's: θ = `[log ℓ_1 … log ℓ_D, log σ0, p_noise, vec(X̄ − 1cᵀ)]`, length D + 2 + mD (the shared
/// layout of [`crate::hyperparameters`]), the inducing inputs relative to the training inputs'
/// column means c, column by column; with fixed inducing inputs only the first D + 2 entries.
///
/// # Computation (no n×n matrix)
/// $K_{uu} = L_uL_u^⊤$, $V = L_u^{-1}K_{uf}$ (m×n), so $Q_{ff} = V^⊤V$ and
/// $\mathrm{tr}(K_{ff} - Q_{ff}) = nσ_0^2 - \|V\|_F^2$; with $A = I + VV^⊤/σ_n^2 = L_AL_A^⊤$ and
/// $B = L_A^{-1}V/σ_n$, $y^⊤C^{-1}y = (\|y\|^2 - \|By\|^2)/σ_n^2$ and
/// $\log|C| = n\log σ_n^2 + \log|A|$. The factorisation and the gradient are FITC's with
/// Λ = σn²I (the crate's `inducing` module, `src/inducing/mod.rs`, its `Approximation::Vfe`,
/// where the trace term's derivative folds into the same two weight matrices): about 7nm² flops
/// in gemms and triangular solves plus O(nmD), memory O(nm).
///
/// The negative VFE bound θ ↦ (−F(θ), ∇θ) on fixed training data, for
/// [`crate::optim::minimize`]; build it with [`ValidVfeParams::evidence`].
///
/// Holds the training inputs X (n×D) and the targets y (n), both **centred** (inputs by their
/// column means c: the inducing inputs in θ are relative to c too), the number m of inducing
/// inputs, the jitter policy for $K_{uu}$, the noise floor and the thread count; with fixed
/// inducing inputs θ holds only the D + 2 hyperparameters.
#[derive(Debug, Clone)]
pub struct VfeEvidence(pub(crate) InducingObjective);

evidence_methods! {
    VfeEvidence, "inducing inputs";
    value:
    /// −F(θ) alone (no gradient; about half the work).
    ///
    /// # Errors
    /// As [`Objective::value_and_gradient`].
    parameter_scales:
    /// FITC's scales ([`crate::fitc::FitcEvidence`]): 1 for the hyperparameters, √m times the
    /// standard deviation of their input column for the inducing inputs.
    value_and_gradient:
    /// −F(θ) and its gradient in one pass.
    ///
    /// # Errors
    /// [`crate::Error::DimensionMismatch`] for a θ of the wrong length,
    /// [`crate::Error::NonFinite`] for a NaN or infinite θ, [`crate::Error::InvalidParameter`] for
    /// an overflowing lengthscale or variance, [`crate::Error::NotPositiveDefinite`] if $K_{uu}$
    /// (jitter included) or the Woodbury matrix fails to factor;
    /// [`crate::Error::NonFiniteObjective`] for a value that is not finite (e.g. σn² near the
    /// smallest f64 with no noise floor: yᵀy/σn² overflows).
}

impl VfeEvidence {
    /// −F(θ) and the trace tr(K_ff − Q_ff) at θ.
    ///
    /// # Errors
    /// As [`Objective::value_and_gradient`].
    pub fn value_and_trace(&self, theta: &DVector<f64>) -> Result<(f64, f64)> {
        self.0
            .factors(theta)
            .map(|(_, f)| (f.neg_log_evidence, f.trace))
    }
}
