//! The FITC negative log evidence and its gradient, in one O(nm² + nmD) pass.
//!
//! The equations, shapes and parameter layout are on [`FitcEvidence`]'s page.

#[cfg(doc)]
use super::ValidFitcParams;
use crate::inducing::{evidence_methods, InducingObjective};
#[cfg(doc)]
use crate::optim::Objective;

/// The FITC negative log evidence and its gradient, in one O(nm² + nmD) pass.
///
/// # The model
/// With training inputs X (n×D), pseudo-inputs X̄ (m×D) and a stationary ARD covariance
/// ([`crate::kernel::Kernel`]; by default the SE-ARD $k(x, x') = σ_0^2 \exp(-\tfrac12 \sum_d (x_d - x'_d)^2/ℓ_d^2)$),
/// $$C = Q_{ff} + Λ, \quad Q_{ff} = K_{fu} K_{uu}^{-1} K_{uf}, \quad
///   Λ = \mathrm{diag}(K_{ff} - Q_{ff}) + σ_n^2 I,$$
/// where $K_{uf} = k(X̄, X)$ is m×n, $K_{ff}$ has the constant diagonal σ0², and
/// $K_{uu} = k(X̄, X̄) + δ I$ carries the jitter δ (and nothing else does; by default
/// δ = 1e-6·σ0², relative — Snelson's `spgp_lik.m` adds an absolute 1e-6 — see
/// [`crate::linalg::Jitter`]). The objective is
/// $$-\log p(y \mid θ) = \tfrac12 y^⊤ C^{-1} y + \tfrac12 \log|C| + \tfrac n2 \log 2π$$
/// for centred targets y.
///
/// # Parameter layout
/// θ = `[log ℓ_1 … log ℓ_D, log σ0, p_noise, vec(X̄ − 1cᵀ)]`, length D + 2 + mD (the shared layout
/// of [`crate::hyperparameters`]), where σ0 is a standard deviation (σ0² = e^{2θ_D}),
/// σn² = [`crate::hyperparameters::NoiseParam::variance`]`(θ_{D+1})` (= e^{2θ_{D+1}} without a floor), and vec(X̄ − 1cᵀ)
/// is the m×D pseudo-input matrix relative to the training inputs' column means c, stored column
/// by column: entry (j, d) at index D + 2 + j + d·m (zero-based). Relative to c, the pseudo-inputs
/// keep all their digits when the inputs sit far from the origin. With fixed pseudo-inputs θ is
/// only the first D + 2 entries.
///
/// # Computation (no n×n matrix)
/// $K_{uu} = L_u L_u^⊤$, $V = L_u^{-1} K_{uf}$ (m×n), so $Q_{ff} = V^⊤V$ and
/// $λ_i = σ_0^2 - \|V_{:i}\|^2 + σ_n^2$. Woodbury with $V_s = V Λ^{-1/2}$ and
/// $A = I + V_s V_s^⊤ = L_A L_A^⊤$ (m×m), $B = L_A^{-1} V_s$ (m×n):
/// $$C^{-1} = Λ^{-1/2}(I - B^⊤B)Λ^{-1/2}, \qquad \log|C| = \log|Λ| + \log|A|.$$
/// With $y_s = Λ^{-1/2} y$: $y^⊤C^{-1}y = \|y_s\|^2 - \|B y_s\|^2$.
///
/// The factorisation, the gradient (O(nm² + nmD)) and their equations are shared with VFE and
/// live in the crate's `inducing` module (`src/inducing/mod.rs`; FITC is its
/// `Approximation::Fitc`: $\hat W = W - \mathrm{diag}(w)$, the diagonal of $Q_{ff}$ does not
/// enter C).
///
/// Cost: about 7nm² flops in gemms and triangular solves, plus O(nmD) for the kernel and its
/// derivatives; memory O(nm).
///
/// The FITC evidence θ ↦ (−log p(y|θ), ∇θ) on fixed training data, for
/// [`crate::optim::minimize`]; build it with [`ValidFitcParams::evidence`].
///
/// Holds the training inputs X (n×D) and the targets y (n), both **centred** (inputs by their
/// column means c: the pseudo-inputs in θ are relative to c too), the number m of pseudo-inputs,
/// the jitter policy for $K_{uu}$, the noise floor and the thread count; with fixed pseudo-inputs
/// θ holds only the D + 2 hyperparameters. See above for the equations and the parameter layout.
#[derive(Debug, Clone)]
pub struct FitcEvidence(pub(crate) InducingObjective);

evidence_methods! {
    FitcEvidence, "pseudo-inputs";
    value:
    /// −log p(y|θ) alone (no gradient; about half the work).
    ///
    /// # Errors
    /// As [`Objective::value_and_gradient`].
    parameter_scales:
    /// 1 for the hyperparameters; for the pseudo-inputs, √m times the standard deviation of their
    /// input column: in the units of the inputs, so that training does not depend on them, and
    /// √m because a lengthscale moves all m pseudo-inputs' kernel rows at once (as SSGP's unit
    /// frequencies, [`crate::ssgp::SsgpEvidence`]). Measured on sinc (m = 20) and Kin-40k
    /// (m = 100): factors 3–10 reach lower −log p(y|θ) in 1000 evaluations than 1, and √m keeps
    /// the fits on rescaled inputs within 1% of each other.
    value_and_gradient:
    /// −log p(y|θ) and its gradient in one pass.
    ///
    /// # Errors
    /// [`crate::Error::DimensionMismatch`] for a θ of the wrong length,
    /// [`crate::Error::NonFinite`] for a NaN or infinite θ, [`crate::Error::InvalidParameter`] for
    /// an overflowing lengthscale or variance, [`crate::Error::NotPositiveDefinite`] if $K_{uu}$ (jitter included) or the Woodbury matrix fails
    /// to factor, or some λ_i ≤ 0; [`crate::Error::NonFiniteObjective`] for a value that is not
    /// finite (e.g. σn² near the smallest f64 with no noise floor: yᵀΛ⁻¹y overflows).
}
