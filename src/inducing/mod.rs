//! What the inducing-point models share: FITC ([`crate::fitc`]) and VFE ([`crate::vfe`]).
//!
//! Both replace the prior covariance of the n training targets by a low-rank matrix plus a
//! diagonal,
//! $$C = Q_{ff} + Λ, \quad Q_{ff} = K_{fu} K_{uu}^{-1} K_{uf}, \qquad
//!   Λ_{\mathrm{FITC}} = \mathrm{diag}(K_{ff} - Q_{ff}) + σ_n^2 I, \quad
//!   Λ_{\mathrm{VFE}} = σ_n^2 I,$$
//! with inducing inputs X̄ (m×D), $K_{uf} = k(X̄, X)$ (m×n) and $K_{uu} = k(X̄, X̄) + δI$ (m×m, the
//! only matrix with a jitter δ, [`crate::linalg::Jitter`]). Writing $K_{uu} = L_uL_u^⊤$,
//! $V = L_u^{-1}K_{uf}$ (m×n) and $A = I + VΛ^{-1}V^⊤ = L_AL_A^⊤$ (m×m), the Woodbury identity
//! and the matrix determinant lemma give, with $B = L_A^{-1}VΛ^{-1/2}$ and $y_s = Λ^{-1/2}y$,
//! $$y^⊤C^{-1}y = \|y_s\|^2 - \|By_s\|^2, \qquad \log|C| = \textstyle\sum_i \log λ_i + \log|A|.$$
//! This module computes those factors ([`factorize`], O(nm² + nmD)), the gradient of the
//! objective from them ([`gradient`], O(nm² + nmD)) and the predictions of the posterior both
//! models share ([`Fitted`]). The objective is
//! $$-\log N(y \mid 0, C) \;\; \text{(FITC)}, \qquad
//!   -F = -\log N(y \mid 0, C) + \frac{\mathrm{tr}(K_{ff} - Q_{ff})}{2σ_n^2} \;\; \text{(VFE)},$$
//! where $\mathrm{tr}(K_{ff} - Q_{ff}) = nσ_0^2 - \|V\|_F^2$.
//!
//! # The gradient
//! With $W = C^{-1} - αα^⊤$, $α = C^{-1}y$, $w = \mathrm{diag}(W)$ and $R = K_{uu}^{-1}K_{uf}$,
//! the derivative of either objective is
//! $$\mathrm{tr}(P\,∂K_{fu}) - \tfrac12\mathrm{tr}(M\,∂K_{uu}) + (\text{diagonal terms}),
//!   \qquad P = R\hat W, \quad M = R\hat W R^⊤,$$
//! where $\hat W = W - \mathrm{diag}(w)$ for FITC (the diagonal of Q_ff does not enter C) and
//! $\hat W = W - σ_n^{-2}I$ for VFE (the trace term's $-\mathrm{tr}(∂Q_{ff})/(2σ_n^2)$ folded in).
//! The diagonal terms are $\tfrac12\sum_i w_i(∂(K_{ff})_{ii} + ∂σ_n^2)$ for FITC and
//! $\tfrac12 ∂σ_n^2 \sum_i w_i + \sum_i ∂(K_{ff})_{ii}/(2σ_n^2) - \mathrm{tr}(K_{ff} - Q_{ff})\,
//! ∂σ_n^2/(2σ_n^4)$ for VFE. Because $VΛ^{-1}V^⊤ = A - I$, the identity
//! $V C^{-1} = A^{-1} V Λ^{-1}$ gives everything by triangular solves and one gemm:
//! $P_V = V\hat W = L_A^{-⊤} B Λ^{-1/2} - (Vα)α^⊤ - V\,\mathrm{diag}(d)$ ($d = w$ or $σ_n^{-2}$),
//! $P = L_u^{-⊤} P_V$, $M = L_u^{-⊤} (P_V V^⊤) L_u^{-1}$, $Vα = L_A^{-⊤} B y_s$ and
//! $\mathrm{diag}(C^{-1})_i = (1 - \|B_{:i}\|^2)/λ_i$. The kernel derivatives then enter through the
//! elementwise products $P ∘ K_{uf}$ and $M ∘ (K_{uu} - δI)$ (for σ0), $P ∘ G_{uf}$ and
//! $M ∘ G_{uu}$ (the kernel's slopes, [`crate::kernel`]; G = K for the squared exponential) and
//! the coordinate differences $x̄_{jd} - x_{id}$, an O(nmD) pass.
//!
//! Cost: about 7nm² flops in faer gemms and triangular solves, plus O(nmD) for the kernel and its
//! derivatives; memory O(nm).

mod fitted;
mod kmeans;
mod objective;
#[cfg(feature = "serde")]
mod saved;
mod settings;

#[cfg(test)]
pub(crate) use fitted::PREDICT_BLOCK;
pub(crate) use fitted::{fitted_methods, Fitted};
use kmeans::kmeans;
pub(crate) use objective::{evidence_methods, InducingObjective};
#[cfg(feature = "serde")]
pub(crate) use saved::{saved_methods, SavedWords};
pub use settings::InducingStart;
pub(crate) use settings::{inducing_params, kind, trained_methods, Kind, Settings};

use crate::error::{Error, Result};
use crate::hyperparameters::Decoded;
use crate::kernel::{self, Covariance, Kernel};
use crate::linalg::{self, Jitter};
use faer::Par;
use nalgebra::{DMatrix, DVector};

/// Which diagonal Λ the approximation puts beside $Q_{ff}$ (see the [module docs](self)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Approximation {
    /// Λ = diag(K_ff − Q_ff) + σn²I, objective −log N(y | 0, Q_ff + Λ).
    Fitc,
    /// Λ = σn²I, objective −F = −log N(y | 0, Q_ff + σn²I) + tr(K_ff − Q_ff)/(2σn²).
    Vfe,
}

/// Cholesky factors and intermediate matrices of one evaluation at θ (see the
/// [module docs](self) for the notation).
#[derive(Debug, Clone)]
pub(crate) struct Factors {
    /// $K_{uf}$, m×n.
    pub k_uf: DMatrix<f64>,
    /// The slopes $G_{uf}$ (m×n) of $K_{uf}$; `None` for the squared exponential, where G = K.
    pub g_uf: Option<DMatrix<f64>>,
    /// $K_{uu} - δI$, m×m (the jitter-free covariance of the inducing inputs).
    pub k_uu: DMatrix<f64>,
    /// The slopes $G_{uu}$ (m×m) of $K_{uu}$; `None` for the squared exponential.
    pub g_uu: Option<DMatrix<f64>>,
    /// $L_u$, the lower Cholesky factor of $K_{uu}$ (jitter included), m×m.
    pub l_u: DMatrix<f64>,
    /// $V = L_u^{-1}K_{uf}$, m×n.
    pub v: DMatrix<f64>,
    /// λ = diag(Λ), n.
    pub lambda: DVector<f64>,
    /// $L_A$, the lower Cholesky factor of $A = I + VΛ^{-1}V^⊤$, m×m.
    pub l_a: DMatrix<f64>,
    /// $B = L_A^{-1}VΛ^{-1/2}$, m×n.
    pub b: DMatrix<f64>,
    /// $y_s = Λ^{-1/2}y$, n.
    pub ys: DVector<f64>,
    /// $B y_s$, m.
    pub by: DVector<f64>,
    /// The objective: −log N(y | 0, Q_ff + Λ), plus tr(K_ff − Q_ff)/(2σn²) for VFE (−F).
    pub neg_log_evidence: f64,
    /// $\mathrm{tr}(K_{ff} - Q_{ff}) = \sum_i (σ_0^2 - \|V_{:i}\|^2)$.
    pub trace: f64,
    /// The jitter δ added to the diagonal of $K_{uu}$.
    pub jitter: f64,
    /// The part of the jitter on $K_{uu}$ that scales with σ0² (δσ0² for a relative jitter, 0 for
    /// an absolute one): it enters the gradient with respect to log σ0.
    pub relative_jitter: f64,
}

/// Factorises C = Q_ff + Λ of `approx` at decoded θ: x is n×D (with its column medians, the
/// centre of K_uf's distances), y the n centred targets, θ's block the inducing inputs (m×D, in
/// x's coordinates); K_uu gets the jitter of `jitter` (relative to σ0² if so set).
/// O(nm² + nmD).
///
/// # Errors
/// [`Error::NotPositiveDefinite`] if $K_{uu}$ or A fails to factor or some λ_i is not positive.
pub(crate) fn factorize(
    (x, x_medians): (&DMatrix<f64>, &DVector<f64>),
    y: &DVector<f64>,
    theta: &Decoded<'_>,
    (family, jitter): (Kernel, &Jitter),
    approx: Approximation,
    par: Par,
) -> Result<Factors> {
    let n = x.nrows();
    let pseudo = theta.block.as_ref();
    let m = pseudo.nrows();
    let c = theta.hyper.signal_variance;
    let sn2 = theta.hyper.noise_variance;
    let ell = &theta.hyper.lengthscales;

    let kernel = Covariance {
        kernel: family,
        lengthscales: ell,
        signal_variance: c,
    };
    let (k_uf, g_uf) = kernel.cross_with_slopes(pseudo, x, x_medians, par);
    let (k_uu, g_uu) = pseudo_covariance(&kernel, pseudo, par);
    let mut l_u = DMatrix::zeros(m, m);
    let added = linalg::factorize_with_jitter(
        &mut l_u,
        |f| f.copy_from(&k_uu),
        0.0,
        jitter,
        c,
        "K_uu (pseudo-input covariance + jitter)",
        par,
    )?;

    let mut v = k_uf.clone();
    linalg::solve_lower(linalg::view(&l_u), linalg::view_mut(&mut v), par);

    let mut lambda = DVector::zeros(n);
    let mut trace = 0.0;
    let mut b = v.clone();
    for (i, mut col) in b.column_iter_mut().enumerate() {
        let q = col.norm_squared();
        trace += c - q;
        let l = match approx {
            Approximation::Fitc => c - q + sn2,
            Approximation::Vfe => sn2,
        };
        if !(l > 0.0 && l.is_finite()) {
            return Err(Error::NotPositiveDefinite {
                what: match approx {
                    Approximation::Fitc => "Λ = diag(K_ff − Q_ff) + σn² I",
                    Approximation::Vfe => "Λ = σn² I",
                },
                dim: n,
                pivot: i,
                max_jitter: 0.0,
            });
        }
        lambda[i] = l;
        col /= l.sqrt();
    }

    let mut l_a = DMatrix::zeros(m, m);
    linalg::syrk_lower(
        linalg::view_mut(&mut l_a),
        false,
        linalg::view(&b).transpose(),
        par,
    );
    for j in 0..m {
        l_a[(j, j)] += 1.0;
    }
    linalg::cholesky_in_place_lower(&mut l_a, "A = I + V Λ⁻¹ Vᵀ (Woodbury matrix)", par)?;
    linalg::solve_lower(linalg::view(&l_a), linalg::view_mut(&mut b), par);

    let ys = y.component_div(&lambda.map(f64::sqrt));
    let by = &b * &ys;
    let log_det = lambda.iter().map(|l| l.ln()).sum::<f64>() + linalg::log_det_from_cholesky(&l_a);
    let quad = ys.norm_squared() - by.norm_squared();
    let mut neg_log_evidence =
        0.5 * (quad + log_det + n as f64 * (2.0 * std::f64::consts::PI).ln());
    if approx == Approximation::Vfe {
        neg_log_evidence += trace / (2.0 * sn2);
    }

    Ok(Factors {
        k_uf,
        g_uf,
        k_uu,
        g_uu,
        l_u,
        v,
        lambda,
        l_a,
        b,
        ys,
        by,
        neg_log_evidence,
        trace,
        jitter: added,
        relative_jitter: if jitter.relative { added } else { 0.0 },
    })
}

/// $k(X̄, X̄)$ (m×m) with its diagonal exactly σ0²: the jitter-free covariance of the inducing
/// inputs `pseudo` (m×D), and its slopes (`None` for the squared exponential).
fn pseudo_covariance(
    kernel: &Covariance<'_>,
    pseudo: &DMatrix<f64>,
    par: Par,
) -> (DMatrix<f64>, Option<DMatrix<f64>>) {
    let (mut k_uu, g_uu) =
        kernel.cross_with_slopes(pseudo, pseudo, &kernel::column_medians(pseudo), par);
    for j in 0..k_uu.nrows() {
        k_uu[(j, j)] = kernel.signal_variance;
    }
    (k_uu, g_uu)
}

/// The gradient of `approx`'s objective from the factors of [`factorize`] (D + 2 entries, plus
/// the mD of the inducing inputs X̄ − 1cᵀ, column by column, when `free_pseudo`), in the layout
/// of [`crate::hyperparameters`].
pub(crate) fn gradient(
    x: &DMatrix<f64>,
    theta: &Decoded<'_>,
    f: Factors,
    approx: Approximation,
    free_pseudo: bool,
    par: Par,
) -> DVector<f64> {
    // The matrices moved or dropped along the way; the rest is read from `f`.
    let Factors {
        k_uf,
        g_uf,
        k_uu,
        g_uu,
        v,
        b,
        ..
    } = f;
    let (n, dim) = x.shape();
    let m = f.l_u.nrows();
    let pseudo = theta.block.as_ref();
    let sqrt_lambda = f.lambda.map(f64::sqrt);
    let sn2 = theta.hyper.noise_variance;

    // α = C⁻¹y = Λ^{-1/2}(y_s − Bᵀ B y_s); w = diag(C⁻¹) − α².
    let alpha = (&f.ys - b.tr_mul(&f.by)).component_div(&sqrt_lambda);
    let w = DVector::from_iterator(
        n,
        b.column_iter()
            .enumerate()
            .map(|(i, col)| (1.0 - col.norm_squared()) / f.lambda[i] - alpha[i] * alpha[i]),
    );

    // Vα = L_A⁻ᵀ B y_s, and P_V = L_A⁻ᵀ B Λ^{-1/2} − (Vα)αᵀ − V diag(d), built in place of B.
    let mut v_alpha = DMatrix::from_column_slice(m, 1, f.by.as_slice());
    linalg::solve_lower_transpose(linalg::view(&f.l_a), linalg::view_mut(&mut v_alpha), par);
    let mut p = b;
    linalg::solve_lower_transpose(linalg::view(&f.l_a), linalg::view_mut(&mut p), par);
    let inv_sn2 = 1.0 / sn2;
    for (i, mut col) in p.column_iter_mut().enumerate() {
        col /= sqrt_lambda[i];
        col.axpy(-alpha[i], &v_alpha.column(0), 1.0);
        let d = match approx {
            Approximation::Fitc => w[i],
            Approximation::Vfe => inv_sn2,
        };
        col.axpy(-d, &v.column(i), 1.0);
    }

    // M = L_u⁻ᵀ (P_V Vᵀ) L_u⁻¹ (symmetric), then P = L_u⁻ᵀ P_V.
    let mut mm = DMatrix::zeros(m, m);
    linalg::gemm(
        linalg::view_mut(&mut mm),
        false,
        linalg::view(&p),
        linalg::view(&v).transpose(),
        1.0,
        par,
    );
    drop(v);
    linalg::solve_lower_transpose(linalg::view(&f.l_u), linalg::view_mut(&mut mm), par);
    let mut mm = mm.transpose();
    linalg::solve_lower_transpose(linalg::view(&f.l_u), linalg::view_mut(&mut mm), par);
    linalg::solve_lower_transpose(linalg::view(&f.l_u), linalg::view_mut(&mut p), par);

    // A1 = P ∘ K_uf and A2 = M ∘ (K_uu − δI) weight the derivatives with respect to log σ0;
    // P ∘ G_uf and M ∘ G_uu those with respect to lengthscales and inducing inputs (the same
    // matrices for the squared exponential, where G = K).
    let mut a1 = p;
    let b1 = g_uf.map(|g| a1.component_mul(&g));
    a1.component_mul_assign(&k_uf);
    drop(k_uf);
    // A jitter relative to σ0² moves with log σ0: ∂(δσ0²I)/∂log σ0 = 2δσ0²I.
    let jitter_term = f.relative_jitter * mm.trace();
    let mut a2 = mm;
    let b2 = g_uu.map(|g| a2.component_mul(&g));
    a2.component_mul_assign(&k_uu);

    let c = theta.hyper.signal_variance;
    let sum_w = w.sum();
    let mut g = DVector::zeros(dim + 2 + if free_pseudo { m * dim } else { 0 });
    // ∂K/∂log σ0 = 2K for K_uf, K_uu − δI and diag K_ff (FITC: ½Σw_i·2σ0²; VFE: n·2σ0²/(2σn²)).
    let diagonal = match approx {
        Approximation::Fitc => c * sum_w,
        Approximation::Vfe => n as f64 * c / sn2,
    };
    g[dim] = 2.0 * a1.sum() - a2.sum() - jitter_term + diagonal;
    g[dim + 1] = match approx {
        Approximation::Fitc => 0.5 * theta.noise_derivative * sum_w,
        Approximation::Vfe => theta.noise_derivative * (0.5 * sum_w - f.trace / (2.0 * sn2 * sn2)),
    };

    // ∂K_ab/∂log ℓ_d = G_ab (a_d − b_d)²/ℓ_d²;  ∂K_uf[j,i]/∂x̄_jd = −G_uf[j,i](x̄_jd − x_id)/ℓ_d²;
    // ∂K_uu[j,k]/∂x̄_jd = −G_uu[j,k](x̄_jd − x̄_kd)/ℓ_d² (row and column j).
    let (w1, w2) = (b1.as_ref().unwrap_or(&a1), b2.as_ref().unwrap_or(&a2));
    let mut r1 = vec![0.0; m];
    let mut r2 = vec![0.0; m];
    let mut q = vec![0.0; m];
    for d in 0..dim {
        let xb = &pseudo.as_slice()[d * m..(d + 1) * m];
        let xd = &x.as_slice()[d * n..(d + 1) * n];
        let s1 = weighted_differences(w1, xb, xd, &mut r1, &mut q);
        let s2 = weighted_differences(w2, xb, xb, &mut r2, &mut q);
        let inv_l2 = theta.hyper.lengthscales[d].powi(-2);
        g[d] = (s1 - 0.5 * s2) * inv_l2;
        if free_pseudo {
            for j in 0..m {
                g[dim + 2 + j + d * m] = (r2[j] - r1[j]) * inv_l2;
            }
        }
    }
    g
}

/// For a weight matrix `a` (m×k) and coordinates `u` (m) and `z` (k): writes
/// $r_j = \sum_i a_{ji}(u_j - z_i)$ into `r` and returns $\sum_{ji} a_{ji}(u_j - z_i)^2$.
/// `q` (m) is scratch space: the squared sum is accumulated per row so the loop over j vectorises.
fn weighted_differences(
    a: &DMatrix<f64>,
    u: &[f64],
    z: &[f64],
    r: &mut [f64],
    q: &mut [f64],
) -> f64 {
    r.fill(0.0);
    q.fill(0.0);
    for (col, &zi) in a.as_slice().chunks_exact(u.len()).zip(z) {
        for (((rj, qj), &aj), &uj) in r.iter_mut().zip(q.iter_mut()).zip(col).zip(u) {
            let diff = uj - zi;
            let t = aj * diff;
            *rj += t;
            *qj += t * diff;
        }
    }
    q.iter().sum()
}

/// FITC's exact leave-one-out diagnostic at the factorised θ, from its Woodbury form
/// (C = Q + Λ): r = C⁻¹y = Λ^{-1/2}(y_s − Bᵀ B y_s) and [C⁻¹]ᵢᵢ = (1 − ‖Bᵢ‖²)/λᵢ, so the LOO
/// residual is rᵢ/[C⁻¹]ᵢᵢ and its variance 1/[C⁻¹]ᵢᵢ (R&W eq. 5.12): O(nm) beyond the
/// factorisation.
fn loo_diagnostic(f: &Factors) -> Option<crate::termination::LooDiagnostic> {
    let n = f.lambda.len();
    let (mut residuals, mut variances, mut centred) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    let bty = f.b.tr_mul(&f.by);
    for (i, col) in f.b.column_iter().enumerate() {
        let sqrt_lambda = f.lambda[i].sqrt();
        let r = (f.ys[i] - bty[i]) / sqrt_lambda;
        let c_inv = (1.0 - col.norm_squared()) / f.lambda[i];
        residuals.push(r / c_inv);
        variances.push(1.0 / c_inv);
        centred.push(f.ys[i] * sqrt_lambda);
    }
    crate::termination::LooDiagnostic::from_residuals(&residuals, &variances, &centred)
}

/// The rows of `p` (m×D) minus `centre` (D).
pub(crate) fn centred_rows(p: &DMatrix<f64>, centre: &DVector<f64>) -> DMatrix<f64> {
    let mut out = p.clone();
    for (d, mut col) in out.column_iter_mut().enumerate() {
        col.add_scalar_mut(-centre[d]);
    }
    out
}

/// The prediction weights β = L_u^{-⊤}L_A^{-⊤}(By) (m) from the factors at θ.
fn weights(f: &Factors, par: Par) -> DVector<f64> {
    let mut weights = DMatrix::from_column_slice(f.by.len(), 1, f.by.as_slice());
    linalg::solve_lower_transpose(linalg::view(&f.l_a), linalg::view_mut(&mut weights), par);
    linalg::solve_lower_transpose(linalg::view(&f.l_u), linalg::view_mut(&mut weights), par);
    weights.column(0).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weighted_differences_match_their_definition() {
        let a = DMatrix::from_fn(4, 7, |j, i| ((j * 3 + i * 5) % 7) as f64 - 3.0);
        let u: Vec<f64> = (0..4).map(|j| 0.3 * j as f64 - 0.5).collect();
        let z: Vec<f64> = (0..7).map(|i| (i as f64).sin()).collect();
        let (mut r, mut q) = (vec![0.0; 4], vec![0.0; 4]);
        let s = weighted_differences(&a, &u, &z, &mut r, &mut q);
        let mut expected = 0.0;
        for (j, rj) in r.iter().enumerate() {
            let row: f64 = (0..7).map(|i| a[(j, i)] * (u[j] - z[i])).sum();
            assert!((rj - row).abs() < 1e-13);
            expected += (0..7)
                .map(|i| a[(j, i)] * (u[j] - z[i]).powi(2))
                .sum::<f64>();
        }
        assert!((s - expected).abs() < 1e-12);
    }
}
