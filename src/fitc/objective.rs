//! The FITC negative log evidence and its gradient, in one O(nm² + nmD) pass.
//!
//! # The model
//! With training inputs X (n×D), pseudo-inputs X̄ (m×D) and the SE-ARD covariance
//! $k(x, x') = σ_0^2 \exp(-\tfrac12 \sum_d (x_d - x'_d)^2/ℓ_d^2)$,
//! $$C = Q_{ff} + Λ, \quad Q_{ff} = K_{fu} K_{uu}^{-1} K_{uf}, \quad
//!   Λ = \mathrm{diag}(K_{ff} - Q_{ff}) + σ_n^2 I,$$
//! where $K_{uf} = k(X̄, X)$ is m×n, $K_{ff}$ has the constant diagonal σ0², and
//! $K_{uu} = k(X̄, X̄) + δ I$ carries the jitter δ (and nothing else does; δ does not scale with σ0²,
//! as in Snelson's `spgp_lik.m`). The objective is
//! $$-\log p(y \mid θ) = \tfrac12 y^⊤ C^{-1} y + \tfrac12 \log|C| + \tfrac n2 \log 2π$$
//! for centred targets y.
//!
//! # Parameter layout
//! θ = `[log ℓ_1 … log ℓ_D, log σ0, p_noise, vec(X̄)]`, length D + 2 + mD, where σ0 is a standard
//! deviation (σ0² = e^{2θ_D}), σn² = [`NoiseParam::variance`]`(θ_{D+1})` (= e^{2θ_{D+1}} without a
//! floor), and vec(X̄) is the m×D pseudo-input matrix stored column by column: entry (j, d) at index
//! D + 2 + j + d·m (zero-based). With fixed pseudo-inputs θ is only the first D + 2 entries.
//!
//! # Computation (no n×n matrix)
//! $K_{uu} = L_u L_u^⊤$, $V = L_u^{-1} K_{uf}$ (m×n), so $Q_{ff} = V^⊤V$ and
//! $λ_i = σ_0^2 - \|V_{:i}\|^2 + σ_n^2$. Woodbury with $V_s = V Λ^{-1/2}$ and
//! $A = I + V_s V_s^⊤ = L_A L_A^⊤$ (m×m), $B = L_A^{-1} V_s$ (m×n):
//! $$C^{-1} = Λ^{-1/2}(I - B^⊤B)Λ^{-1/2}, \qquad \log|C| = \log|Λ| + \log|A|.$$
//! With $y_s = Λ^{-1/2} y$: $y^⊤C^{-1}y = \|y_s\|^2 - \|B y_s\|^2$.
//!
//! The gradient is $\tfrac12 \mathrm{tr}(W\,∂C)$ with $W = C^{-1} - αα^⊤$, $α = C^{-1}y$. Writing
//! $w = \mathrm{diag}(W)$, $\tilde W = W - \mathrm{diag}(w)$ and $R = K_{uu}^{-1}K_{uf}$,
//! $$\tfrac12\mathrm{tr}(W∂C) = \mathrm{tr}(P\,∂K_{fu}) - \tfrac12\mathrm{tr}(M\,∂K_{uu}) +
//!   \tfrac12 \textstyle\sum_i w_i(∂(K_{ff})_{ii} + ∂σ_n^2),$$
//! with $P = R\tilde W$ (m×n) and $M = R\tilde W R^⊤$ (m×m). Because $VΛ^{-1}V^⊤ = A - I$, the
//! identity $V C^{-1} = A^{-1} V Λ^{-1}$ gives everything by triangular solves and one gemm:
//! $P_V = V\tilde W = L_A^{-⊤} B Λ^{-1/2} - (Vα)α^⊤ - V\,\mathrm{diag}(w)$,
//! $P = L_u^{-⊤} P_V$, $M = L_u^{-⊤} (P_V V^⊤) L_u^{-1}$, $Vα = L_A^{-⊤} B y_s$ and
//! $\mathrm{diag}(C^{-1})_i = (1 - \|B_{:i}\|^2)/λ_i$. The kernel derivatives then enter through the
//! elementwise products $P ∘ K_{uf}$ and $M ∘ (K_{uu} - δI)$ and the coordinate differences
//! $x̄_{jd} - x_{id}$, an O(nmD) pass.
//!
//! Cost: about 7nm² flops in faer gemms and triangular solves, plus O(nmD) for the kernel and its
//! derivatives; memory O(nm).

use crate::data::{check_finite, check_finite_vector};
use crate::error::{Error, Result};
use crate::kernel;
use crate::linalg::{self, par};
use crate::model::NoiseParam;
use crate::optim::Objective;
use faer::Par;
use nalgebra::{DMatrix, DVector};
use std::borrow::Cow;

/// The default jitter δ added to the diagonal of $K_{uu}$ (an absolute value, as in Snelson's code).
pub const DEFAULT_JITTER: f64 = 1e-6;

/// The hyperparameters and pseudo-inputs encoded by a parameter vector θ (see the
/// [module docs](self) for the layout).
#[derive(Debug, Clone)]
pub(crate) struct Hyper<'p> {
    /// ℓ (D).
    pub lengthscales: DVector<f64>,
    /// σ0².
    pub signal_variance: f64,
    /// σn².
    pub noise_variance: f64,
    /// dσn²/dθ_{D+1}.
    pub noise_derivative: f64,
    /// X̄ (m×D).
    pub pseudo: Cow<'p, DMatrix<f64>>,
}

impl<'p> Hyper<'p> {
    /// Decodes θ; `fixed` supplies X̄ when θ holds only the D + 2 hyperparameters. The caller has
    /// checked the length of θ.
    pub fn unpack(
        theta: &DVector<f64>,
        dim: usize,
        m: usize,
        noise: NoiseParam,
        fixed: Option<&'p DMatrix<f64>>,
    ) -> Self {
        let lengthscales = DVector::from_iterator(dim, theta.rows(0, dim).iter().map(|t| t.exp()));
        let pseudo = match fixed {
            Some(xb) => Cow::Borrowed(xb),
            None => Cow::Owned(DMatrix::from_column_slice(
                m,
                dim,
                &theta.as_slice()[dim + 2..dim + 2 + m * dim],
            )),
        };
        Self {
            lengthscales,
            signal_variance: (2.0 * theta[dim]).exp(),
            noise_variance: noise.variance(theta[dim + 1]),
            noise_derivative: noise.variance_derivative(theta[dim + 1]),
            pseudo,
        }
    }
}

/// Packs hyperparameters and pseudo-inputs into the full parameter vector θ (length D + 2 + mD).
pub(crate) fn pack(
    lengthscales: &DVector<f64>,
    signal_variance: f64,
    noise_param: f64,
    pseudo: Option<&DMatrix<f64>>,
) -> DVector<f64> {
    let dim = lengthscales.len();
    let extra = pseudo.map_or(0, |p| p.len());
    let mut theta = DVector::zeros(dim + 2 + extra);
    for d in 0..dim {
        theta[d] = lengthscales[d].ln();
    }
    theta[dim] = 0.5 * signal_variance.ln();
    theta[dim + 1] = noise_param;
    if let Some(p) = pseudo {
        theta.as_mut_slice()[dim + 2..].copy_from_slice(p.as_slice());
    }
    theta
}

/// Cholesky factors and intermediate matrices of one evaluation at θ (see the
/// [module docs](self) for the notation).
#[derive(Debug, Clone)]
pub(crate) struct Factors {
    /// $K_{uf}$, m×n.
    pub k_uf: DMatrix<f64>,
    /// $K_{uu} - δI$, m×m (the jitter-free covariance of the pseudo-inputs).
    pub k_uu: DMatrix<f64>,
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
    /// −log p(y|θ).
    pub neg_log_evidence: f64,
}

/// Factorises the FITC covariance at the given hyperparameters: x is n×D, y the n centred
/// targets. O(nm² + nmD).
///
/// # Errors
/// [`Error::NotPositiveDefinite`] if $K_{uu}$ or A fails to factor or some λ_i is not positive.
pub(crate) fn factorize(
    x: &DMatrix<f64>,
    y: &DVector<f64>,
    hyper: &Hyper<'_>,
    jitter: f64,
    par: Par,
) -> Result<Factors> {
    let n = x.nrows();
    let pseudo = hyper.pseudo.as_ref();
    let m = pseudo.nrows();
    let c = hyper.signal_variance;
    let ell = &hyper.lengthscales;

    let k_uf = kernel::se_ard(pseudo, x, ell, c, par);
    let mut k_uu = kernel::se_ard(pseudo, pseudo, ell, c, par);
    for j in 0..m {
        k_uu[(j, j)] = c;
    }
    let mut l_u = k_uu.clone();
    for j in 0..m {
        l_u[(j, j)] += jitter;
    }
    linalg::cholesky_in_place_lower(&mut l_u, "K_uu (pseudo-input covariance + jitter)", par)?;

    let mut v = k_uf.clone();
    linalg::solve_lower(linalg::view(&l_u), linalg::view_mut(&mut v), par);

    let mut lambda = DVector::zeros(n);
    let mut b = v.clone();
    for (i, mut col) in b.column_iter_mut().enumerate() {
        let l = c - col.norm_squared() + hyper.noise_variance;
        if !(l > 0.0 && l.is_finite()) {
            return Err(Error::NotPositiveDefinite {
                what: "Λ = diag(K_ff − Q_ff) + σn² I",
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
    let neg_log_evidence = 0.5 * (quad + log_det + n as f64 * (2.0 * std::f64::consts::PI).ln());

    Ok(Factors {
        k_uf,
        k_uu,
        l_u,
        v,
        lambda,
        l_a,
        b,
        ys,
        by,
        neg_log_evidence,
    })
}

/// The gradient of −log p(y|θ) from the factors of [`factorize`], in the layout of the module
/// docs; the pseudo-input block is left out when `free_pseudo` is false.
fn gradient(
    x: &DMatrix<f64>,
    hyper: &Hyper<'_>,
    f: Factors,
    free_pseudo: bool,
    par: Par,
) -> DVector<f64> {
    let Factors {
        k_uf,
        k_uu,
        l_u,
        v,
        lambda,
        l_a,
        b,
        ys,
        by,
        ..
    } = f;
    let (n, dim) = x.shape();
    let m = l_u.nrows();
    let pseudo = hyper.pseudo.as_ref();
    let sqrt_lambda = lambda.map(f64::sqrt);

    // α = C⁻¹y = Λ^{-1/2}(y_s − Bᵀ B y_s); w = diag(C⁻¹) − α².
    let alpha = (&ys - b.tr_mul(&by)).component_div(&sqrt_lambda);
    let w = DVector::from_iterator(
        n,
        b.column_iter()
            .enumerate()
            .map(|(i, col)| (1.0 - col.norm_squared()) / lambda[i] - alpha[i] * alpha[i]),
    );

    // Vα = L_A⁻ᵀ B y_s, and P_V = L_A⁻ᵀ B Λ^{-1/2} − (Vα)αᵀ − V diag(w), built in place of B.
    let mut v_alpha = DMatrix::from_column_slice(m, 1, by.as_slice());
    linalg::solve_lower_transpose(linalg::view(&l_a), linalg::view_mut(&mut v_alpha), par);
    let mut p = b;
    linalg::solve_lower_transpose(linalg::view(&l_a), linalg::view_mut(&mut p), par);
    for (i, mut col) in p.column_iter_mut().enumerate() {
        col /= sqrt_lambda[i];
        col.axpy(-alpha[i], &v_alpha.column(0), 1.0);
        col.axpy(-w[i], &v.column(i), 1.0);
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
    linalg::solve_lower_transpose(linalg::view(&l_u), linalg::view_mut(&mut mm), par);
    let mut mm = mm.transpose();
    linalg::solve_lower_transpose(linalg::view(&l_u), linalg::view_mut(&mut mm), par);
    linalg::solve_lower_transpose(linalg::view(&l_u), linalg::view_mut(&mut p), par);

    // A1 = P ∘ K_uf and A2 = M ∘ (K_uu − δI): the weights of every kernel derivative.
    let mut a1 = p;
    a1.component_mul_assign(&k_uf);
    drop(k_uf);
    let mut a2 = mm;
    a2.component_mul_assign(&k_uu);

    let c = hyper.signal_variance;
    let sum_w = w.sum();
    let mut g = DVector::zeros(dim + 2 + if free_pseudo { m * dim } else { 0 });
    // ∂K/∂log σ0 = 2K for K_uf, K_uu − δI and diag K_ff.
    g[dim] = 2.0 * a1.sum() - a2.sum() + c * sum_w;
    g[dim + 1] = 0.5 * hyper.noise_derivative * sum_w;

    // ∂K_ab/∂log ℓ_d = K_ab (a_d − b_d)²/ℓ_d²;  ∂K_uf[j,i]/∂x̄_jd = −K_uf[j,i](x̄_jd − x_id)/ℓ_d²;
    // ∂K_uu[j,k]/∂x̄_jd = −K_uu[j,k](x̄_jd − x̄_kd)/ℓ_d² (row and column j).
    let mut r1 = vec![0.0; m];
    let mut r2 = vec![0.0; m];
    let mut q = vec![0.0; m];
    for d in 0..dim {
        let xb = &pseudo.as_slice()[d * m..(d + 1) * m];
        let xd = &x.as_slice()[d * n..(d + 1) * n];
        let s1 = weighted_differences(&a1, xb, xd, &mut r1, &mut q);
        let s2 = weighted_differences(&a2, xb, xb, &mut r2, &mut q);
        let inv_l2 = hyper.lengthscales[d].powi(-2);
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

/// The FITC objective θ ↦ (−log p(y|θ), ∇θ) on fixed training data, for [`crate::optim::minimize`].
///
/// Holds borrowed inputs X (n×D) and **centred** targets y (n), the number m of pseudo-inputs,
/// the jitter δ on $K_{uu}$'s diagonal, the noise floor and the thread count; optionally the
/// pseudo-inputs are fixed and θ holds only the D + 2 hyperparameters. See the
/// [module docs](self) for the equations and the parameter layout.
#[derive(Debug, Clone)]
pub struct FitcObjective<'a> {
    x: &'a DMatrix<f64>,
    y: &'a DVector<f64>,
    m: usize,
    jitter: f64,
    noise: NoiseParam,
    fixed: Option<&'a DMatrix<f64>>,
    threads: usize,
}

impl<'a> FitcObjective<'a> {
    /// The objective for inputs `x` (n×D), centred targets `y` (n) and `m` free pseudo-inputs, with
    /// the default jitter [`DEFAULT_JITTER`], no noise floor and all cores.
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] if `y` has not n entries, [`Error::EmptyData`] for no rows or no
    /// columns, [`Error::InvalidParameter`] for m = 0, [`Error::NonFinite`] for a NaN or infinity.
    pub fn new(x: &'a DMatrix<f64>, y: &'a DVector<f64>, m: usize) -> Result<Self> {
        if x.nrows() == 0 || x.ncols() == 0 {
            return Err(Error::EmptyData {
                what: "FITC training inputs have no rows or no columns",
            });
        }
        if x.nrows() != y.len() {
            return Err(Error::LengthMismatch {
                x_rows: x.nrows(),
                y_len: y.len(),
            });
        }
        if m == 0 {
            return Err(Error::InvalidParameter {
                name: "m",
                reason: "FITC needs at least one pseudo-input".into(),
            });
        }
        check_finite("inputs", x)?;
        check_finite_vector("targets", y)?;
        Ok(Self {
            x,
            y,
            m,
            jitter: DEFAULT_JITTER,
            noise: NoiseParam { floor: 0.0 },
            fixed: None,
            threads: 0,
        })
    }

    /// Sets the jitter δ added to $K_{uu}$'s diagonal (absolute; 0 allowed).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a negative or non-finite δ.
    pub fn jitter(mut self, jitter: f64) -> Result<Self> {
        validate_jitter(jitter)?;
        self.jitter = jitter;
        Ok(self)
    }

    /// Sets the lower bound on σn²: σn² = floor + e^{2θ_{D+1}}.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a negative or non-finite floor.
    pub fn noise_floor(mut self, floor: f64) -> Result<Self> {
        let noise = NoiseParam { floor };
        noise.validate()?;
        self.noise = noise;
        Ok(self)
    }

    /// Fixes the pseudo-inputs X̄ (m×D): θ then holds only the D + 2 hyperparameters.
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] unless X̄ is m×D, [`Error::NonFinite`] for a NaN or infinity.
    pub fn fixed_pseudo_inputs(mut self, pseudo: &'a DMatrix<f64>) -> Result<Self> {
        check_pseudo_shape(pseudo, self.m, self.x.ncols())?;
        self.fixed = Some(pseudo);
        Ok(self)
    }

    /// Sets the number of threads of the faer kernels (0 = all of rayon's threads, 1 = sequential).
    pub fn threads(mut self, threads: usize) -> Self {
        self.threads = threads;
        self
    }

    /// The input dimension D.
    pub fn dim(&self) -> usize {
        self.x.ncols()
    }

    /// −log p(y|θ) alone (no gradient; about half the work).
    ///
    /// # Errors
    /// As [`Objective::value_and_gradient`].
    pub fn value(&self, theta: &DVector<f64>) -> Result<f64> {
        let hyper = self.unpack(theta)?;
        factorize(self.x, self.y, &hyper, self.jitter, par(self.threads))
            .map(|f| f.neg_log_evidence)
    }

    fn unpack(&self, theta: &DVector<f64>) -> Result<Hyper<'a>> {
        if theta.len() != self.num_params() {
            return Err(Error::DimensionMismatch {
                what: "FITC parameter vector",
                expected: self.num_params(),
                found: theta.len(),
            });
        }
        crate::data::check_finite_vector("FITC parameters", theta)?;
        Ok(Hyper::unpack(
            theta,
            self.dim(),
            self.m,
            self.noise,
            self.fixed,
        ))
    }
}

impl Objective for FitcObjective<'_> {
    /// D + 2, plus mD when the pseudo-inputs are free.
    fn num_params(&self) -> usize {
        self.dim()
            + 2
            + if self.fixed.is_some() {
                0
            } else {
                self.m * self.dim()
            }
    }

    /// −log p(y|θ) and its gradient in one pass.
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] for a θ of the wrong length, [`Error::NonFinite`] for a NaN or
    /// infinite θ, [`Error::NotPositiveDefinite`] if $K_{uu}$ (jitter included) or the Woodbury
    /// matrix fails to factor, or some λ_i ≤ 0.
    fn value_and_gradient(&self, theta: &DVector<f64>) -> Result<(f64, DVector<f64>)> {
        let hyper = self.unpack(theta)?;
        let par = par(self.threads);
        let f = factorize(self.x, self.y, &hyper, self.jitter, par)?;
        let value = f.neg_log_evidence;
        let g = gradient(self.x, &hyper, f, self.fixed.is_none(), par);
        Ok((value, g))
    }
}

/// Checks a jitter value.
pub(crate) fn validate_jitter(jitter: f64) -> Result<()> {
    if !(jitter >= 0.0 && jitter.is_finite()) {
        return Err(Error::InvalidParameter {
            name: "jitter",
            reason: format!("{jitter} is not a finite non-negative number"),
        });
    }
    Ok(())
}

/// Checks that pseudo-inputs are m×D and finite.
pub(crate) fn check_pseudo_shape(pseudo: &DMatrix<f64>, m: usize, dim: usize) -> Result<()> {
    if pseudo.nrows() != m {
        return Err(Error::InvalidParameter {
            name: "pseudo_inputs",
            reason: format!("{} rows, but m = {m}", pseudo.nrows()),
        });
    }
    if pseudo.ncols() != dim {
        return Err(Error::DimensionMismatch {
            what: "pseudo-inputs",
            expected: dim,
            found: pseudo.ncols(),
        });
    }
    check_finite("pseudo-inputs", pseudo)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack_and_unpack_are_inverse() {
        let ell = DVector::from_vec(vec![0.5, 2.0]);
        let pseudo = DMatrix::from_fn(3, 2, |j, d| (j + 10 * d) as f64);
        let noise = NoiseParam { floor: 0.1 };
        let theta = pack(&ell, 1.7, noise.param(0.3), Some(&pseudo));
        assert_eq!(theta.len(), 2 + 2 + 6);
        // Entry (j, d) of X̄ sits at D + 2 + j + d·m.
        assert_eq!(theta[2 + 2 + 2 + 3], pseudo[(2, 1)]);
        let h = Hyper::unpack(&theta, 2, 3, noise, None);
        assert!((&h.lengthscales - &ell).amax() < 1e-15);
        assert!((h.signal_variance - 1.7).abs() < 1e-14);
        assert!((h.noise_variance - 0.3).abs() < 1e-14);
        assert_eq!(h.pseudo.as_ref(), &pseudo);
        let head = pack(&ell, 1.7, 0.0, None);
        assert_eq!(head.len(), 4);
        let fixed = Hyper::unpack(&head, 2, 3, noise, Some(&pseudo));
        assert!(matches!(fixed.pseudo, Cow::Borrowed(_)));
    }

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
