//! The full GP's training objective: the negative log evidence (paper eq. 4) and its analytic
//! gradient, for the SE-ARD covariance (eq. 3).
//!
//! # Parameter layout
//!
//! θ has D + 2 entries, all unconstrained:
//!
//! | entry | meaning |
//! | --- | --- |
//! | θ_0 … θ_{D−1} | log ℓ_d, the log lengthscales |
//! | θ_D | log σ0, so σ0² = e^{2θ_D} |
//! | θ_{D+1} | the noise parameter p of [`NoiseParam`]: σn² = floor + e^{2p} (= e^{2p} without a floor) |
//!
//! # Value and gradient
//!
//! With K the n×n SE-ARD matrix of the training inputs, K_y = K + σn² I and α = K_y⁻¹ y (y centred),
//!
//! ```text
//! −log p(y|θ) = ½ log|K_y| + ½ yᵀα + (n/2) log 2π
//! ∂/∂θ_i      = ½ tr(W ∂K_y/∂θ_i),   W = K_y⁻¹ − ααᵀ,
//! ```
//!
//! and, writing M = W ∘ K (element-wise) and z_id = x_id/ℓ_d,
//!
//! ```text
//! ∂/∂log ℓ_d = ½ Σ_ij M_ij (z_id − z_jd)² = Σ_i z_id² (M1)_i − (Z_dᵀ M Z_d)
//! ∂/∂log σ0  = Σ_ij M_ij
//! ∂/∂p       = ½ (dσn²/dp) tr(W) = ½ (dσn²/dp) (tr K_y⁻¹ − αᵀα)
//! ```
//!
//! The lengthscale terms expand (z_i − z_j)² = z_i² + z_j² − 2 z_i z_j, so all D of them come from
//! the row sums M1 and one symmetric n×n · n×D product M Z: no n×n matrix per dimension.
//!
//! # Cost and memory
//!
//! One evaluation is one Cholesky factorisation (n³/3 flops), the inverse K_y⁻¹ from it (2n³/3),
//! and O(n²D) more, all through faer's blocked, multithreaded kernels. Three n×n `f64` buffers
//! (24·n² bytes: 2.4 GB at n = 10 000) are allocated at the first evaluation and reused until the
//! objective is dropped: K (then M), the factor L (then K_y⁻¹), and L⁻¹. Only lower triangles are
//! computed.

use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::linalg;
use crate::model::NoiseParam;
use crate::optim::Objective;
use faer::{MatMut, MatRef, Par};
use nalgebra::{DMatrix, DVector};
use std::sync::{Mutex, PoisonError};

/// Number of jittered retries after a failed Cholesky factorisation of K + σn² I.
pub(crate) const JITTER_TRIES: i32 = 5;

/// The first jitter, relative to σ0²; each retry multiplies it by 10 (so at most 1e-6·σ0²).
pub(crate) const JITTER_BASE: f64 = 1e-10;

/// The SE-ARD hyperparameters that θ encodes (see the [module docs](self) for the layout).
#[derive(Debug, Clone, PartialEq)]
pub struct Hyperparameters {
    /// ℓ (D), all positive.
    pub lengthscales: DVector<f64>,
    /// σ0², the signal variance.
    pub signal_variance: f64,
    /// σn², the noise variance (the floor included).
    pub noise_variance: f64,
}

impl Hyperparameters {
    /// Decodes θ (length D + 2): ℓ_d = e^{θ_d}, σ0² = e^{2θ_D}, σn² = `noise`.variance(θ_{D+1}).
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] if θ has not `dim` + 2 entries, [`Error::NonFinite`] for a
    /// non-finite entry, [`Error::InvalidParameter`] if a lengthscale or a variance under- or
    /// overflows (is 0 or infinite).
    pub fn from_theta(theta: &DVector<f64>, dim: usize, noise: NoiseParam) -> Result<Self> {
        if theta.len() != dim + 2 {
            return Err(Error::DimensionMismatch {
                what: "full-GP hyperparameter vector θ (D + 2 entries)",
                expected: dim + 2,
                found: theta.len(),
            });
        }
        crate::data::check_finite_vector("full-GP hyperparameters θ", theta)?;
        let lengthscales = theta.rows(0, dim).map(f64::exp);
        let signal_variance = (2.0 * theta[dim]).exp();
        let noise_variance = noise.variance(theta[dim + 1]);
        let usable = |v: f64| v > 0.0 && v.is_finite();
        if !lengthscales.iter().all(|&l| usable(l))
            || !usable(signal_variance)
            || !usable(noise_variance)
        {
            return Err(Error::InvalidParameter {
                name: "theta",
                reason: format!(
                    "θ = {:?} gives a zero or infinite lengthscale or variance",
                    theta.as_slice()
                ),
            });
        }
        Ok(Self {
            lengthscales,
            signal_variance,
            noise_variance,
        })
    }

    /// Encodes these hyperparameters as θ (length D + 2), the inverse of [`Self::from_theta`]
    /// (a noise variance at or below the floor is moved just above it, see [`NoiseParam::param`]).
    pub fn to_theta(&self, noise: NoiseParam) -> DVector<f64> {
        let dim = self.lengthscales.len();
        let mut theta = DVector::zeros(dim + 2);
        for d in 0..dim {
            theta[d] = self.lengthscales[d].ln();
        }
        theta[dim] = 0.5 * self.signal_variance.ln();
        theta[dim + 1] = noise.param(self.noise_variance);
        theta
    }
}

/// One evaluation of [`NegLogEvidence`].
#[derive(Debug, Clone, PartialEq)]
pub struct Evaluation {
    /// −log p(y|θ).
    pub value: f64,
    /// ∇_θ of it (D + 2).
    pub gradient: DVector<f64>,
    /// The diagonal jitter that the Cholesky factorisation needed on top of σn² (0 normally).
    /// Value and gradient are exact for K + (σn² + jitter) I.
    pub jitter: f64,
}

/// The reusable n×n buffers of one evaluation.
struct Workspace {
    /// K, then M = W ∘ K (lower triangles).
    kernel: DMatrix<f64>,
    /// L, then K_y⁻¹ (lower triangles).
    factor: DMatrix<f64>,
    /// L⁻¹ (lower triangle).
    inverse_factor: DMatrix<f64>,
}

/// −log p(y|θ) of a full GP with the SE-ARD covariance on a fixed data set, and its gradient.
///
/// See the [module docs](self) for the parameter layout, the equations and the 24·n²-byte
/// workspace. The inputs are centred by their column means and the targets by their mean at
/// construction; the SE-ARD kernel is translation invariant, so the evidence is that of the
/// centred targets on the original inputs.
pub struct NegLogEvidence {
    /// Centred inputs, n×D.
    x: DMatrix<f64>,
    /// Centred targets, n.
    y: DVector<f64>,
    noise: NoiseParam,
    par: Par,
    workspace: Mutex<Option<Workspace>>,
}

impl std::fmt::Debug for NegLogEvidence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NegLogEvidence")
            .field("n", &self.x.nrows())
            .field("dim", &self.x.ncols())
            .field("noise", &self.noise)
            .field("par", &self.par)
            .finish_non_exhaustive()
    }
}

impl NegLogEvidence {
    /// The objective for `data`, with noise parametrisation `noise` and `threads` threads for the
    /// dense kernels (0 = all cores, 1 = sequential).
    ///
    /// Cheap: the n×n workspace is allocated at the first evaluation.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a negative or non-finite noise floor.
    pub fn new(data: &Dataset, noise: NoiseParam, threads: usize) -> Result<Self> {
        noise.validate()?;
        let (x, _) = centre_columns(data.x());
        let y = data.y().add_scalar(-data.y_mean());
        Ok(Self {
            x,
            y,
            noise,
            par: linalg::par(threads),
            workspace: Mutex::new(None),
        })
    }

    /// Number of training points n.
    pub fn len(&self) -> usize {
        self.x.nrows()
    }

    /// Always false: a data set has at least one point.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Input dimension D (θ has D + 2 entries).
    pub fn dim(&self) -> usize {
        self.x.ncols()
    }

    /// −log p(y|θ), its gradient, and the jitter the factorisation needed.
    ///
    /// # Errors
    /// As [`Hyperparameters::from_theta`] for a bad θ; [`Error::NotPositiveDefinite`] if
    /// K + σn² I cannot be factorised even with the jitter ladder (up to 1e-6·σ0² added).
    pub fn evaluate(&self, theta: &DVector<f64>) -> Result<Evaluation> {
        let n = self.len();
        let dim = self.dim();
        let h = Hyperparameters::from_theta(theta, dim, self.noise)?;
        let z = crate::kernel::scale_inputs(&self.x, &h.lengthscales);
        let par = self.par;

        let mut guard = self
            .workspace
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let Workspace {
            kernel,
            factor,
            inverse_factor,
        } = guard.get_or_insert_with(|| Workspace {
            kernel: DMatrix::zeros(n, n),
            factor: DMatrix::zeros(n, n),
            inverse_factor: DMatrix::zeros(n, n),
        });

        se_ard_lower(&z, h.signal_variance, kernel, par);
        let jitter = factorise_with_jitter(
            factor,
            |f| copy_lower(kernel, f),
            h.noise_variance,
            h.signal_variance,
            par,
        )?;
        let log_det = linalg::log_det_from_cholesky(factor);
        let alpha = cholesky_solve_vector(factor, &self.y, par);
        let value = 0.5 * log_det
            + 0.5 * self.y.dot(&alpha)
            + 0.5 * n as f64 * (2.0 * std::f64::consts::PI).ln();

        linalg::spd_inverse_lower(factor, inverse_factor, par);
        let inverse = &*factor;
        let trace_inverse: f64 = (0..n).map(|i| inverse[(i, i)]).sum();

        // M = (K_y⁻¹ − ααᵀ) ∘ K into the kernel buffer (lower triangle), with its row sums M1
        // and the sum of all its entries.
        let mut row_sums = vec![0.0; n];
        let mut total = 0.0;
        {
            let w = inverse.as_slice();
            let m = kernel.as_mut_slice();
            for j in 0..n {
                let col = j * n;
                let aj = alpha[j];
                let diag = (w[col + j] - aj * aj) * m[col + j];
                m[col + j] = diag;
                let mut off = 0.0;
                for i in (j + 1)..n {
                    let v = (w[col + i] - alpha[i] * aj) * m[col + i];
                    m[col + i] = v;
                    row_sums[i] += v;
                    off += v;
                }
                row_sums[j] += diag + off;
                total += diag + 2.0 * off;
            }
        }
        let mut mz = DMatrix::zeros(n, dim);
        linalg::symm_lower(
            linalg::view_mut(&mut mz),
            linalg::view(kernel),
            linalg::view(&z),
            par,
        );

        let mut gradient = DVector::zeros(dim + 2);
        for d in 0..dim {
            let zd = z.column(d);
            let mzd = mz.column(d);
            gradient[d] = (0..n)
                .map(|i| zd[i] * (zd[i] * row_sums[i] - mzd[i]))
                .sum::<f64>();
        }
        gradient[dim] = total;
        gradient[dim + 1] = 0.5
            * self.noise.variance_derivative(theta[dim + 1])
            * (trace_inverse - alpha.norm_squared());
        Ok(Evaluation {
            value,
            gradient,
            jitter,
        })
    }
}

impl Objective for NegLogEvidence {
    fn num_params(&self) -> usize {
        self.dim() + 2
    }

    fn value_and_gradient(&self, theta: &DVector<f64>) -> Result<(f64, DVector<f64>)> {
        self.evaluate(theta).map(|e| (e.value, e.gradient))
    }
}

/// Subtracts each column's mean; returns the centred matrix and the means (D).
pub(crate) fn centre_columns(x: &DMatrix<f64>) -> (DMatrix<f64>, DVector<f64>) {
    let means = DVector::from_iterator(x.ncols(), x.column_iter().map(|c| c.mean()));
    let mut centred = x.clone();
    for (d, mut col) in centred.column_iter_mut().enumerate() {
        col.add_scalar_mut(-means[d]);
    }
    (centred, means)
}

/// Fills the lower triangle (diagonal included) of `k` (n×n) with the SE-ARD matrix of the rows of
/// the scaled inputs `z` = x ⊘ ℓ (n×D): K_ij = σ0² exp(−½‖z_i − z_j‖²), the squared distances
/// through one symmetric rank-D update ‖z_i‖² + ‖z_j‖² − 2 z_iᵀz_j (clamped at 0). The strict
/// upper triangle is not written.
pub(crate) fn se_ard_lower(z: &DMatrix<f64>, signal_variance: f64, k: &mut DMatrix<f64>, par: Par) {
    let n = z.nrows();
    linalg::syrk_lower(linalg::view_mut(k), false, linalg::view(z).transpose(), par);
    let sq: Vec<f64> = z.row_iter().map(|r| r.norm_squared()).collect();
    let data = k.as_mut_slice();
    for j in 0..n {
        let col = &mut data[j * n..(j + 1) * n];
        col[j] = signal_variance;
        let sj = sq[j];
        for i in (j + 1)..n {
            let d2 = (sq[i] + sj - 2.0 * col[i]).max(0.0);
            col[i] = signal_variance * (-0.5 * d2).exp();
        }
    }
}

/// Copies the lower triangle of `src` into `dst` (both n×n).
fn copy_lower(src: &DMatrix<f64>, dst: &mut DMatrix<f64>) {
    let n = src.nrows();
    let (s, d) = (src.as_slice(), dst.as_mut_slice());
    for j in 0..n {
        d[j * n + j..(j + 1) * n].copy_from_slice(&s[j * n + j..(j + 1) * n]);
    }
}

/// Factorises K + (σn² + jitter) I in place in `factor`: `fill` writes the lower triangle of K
/// into it, σn² is added to the diagonal and faer's blocked Cholesky runs. On failure the jitter
/// ladder retries with jitter = [`JITTER_BASE`]·σ0²·10^k, k = 0 … [`JITTER_TRIES`] − 1, refilling
/// K each time (no extra n×n buffer). Returns the jitter used (0 if none was needed).
///
/// # Errors
/// [`Error::NotPositiveDefinite`] if the largest jitter fails too.
pub(crate) fn factorise_with_jitter(
    factor: &mut DMatrix<f64>,
    fill: impl Fn(&mut DMatrix<f64>),
    noise_variance: f64,
    signal_variance: f64,
    par: Par,
) -> Result<f64> {
    let n = factor.nrows();
    let mut jitter = 0.0;
    let mut pivot = 0;
    for attempt in 0..=JITTER_TRIES {
        if attempt > 0 {
            jitter = JITTER_BASE * signal_variance * 10f64.powi(attempt - 1);
        }
        fill(factor);
        for i in 0..n {
            factor[(i, i)] += noise_variance + jitter;
        }
        match linalg::cholesky_in_place_lower(factor, "K + σn²I", par) {
            Ok(()) => return Ok(jitter),
            Err(Error::NotPositiveDefinite { pivot: p, .. }) => pivot = p,
            Err(e) => return Err(e),
        }
    }
    Err(Error::NotPositiveDefinite {
        what: "K + σn²I",
        dim: n,
        pivot,
        max_jitter: jitter,
    })
}

/// Column-vector faer view of a nalgebra vector.
pub(crate) fn vector_view_mut(v: &mut DVector<f64>) -> MatMut<'_, f64> {
    let n = v.len();
    MatMut::from_column_major_slice_mut(v.as_mut_slice(), n, 1)
}

/// Column-vector faer view of a nalgebra vector.
pub(crate) fn vector_view(v: &DVector<f64>) -> MatRef<'_, f64> {
    MatRef::from_column_major_slice(v.as_slice(), v.len(), 1)
}

/// (L Lᵀ)⁻¹ b for a lower Cholesky factor L (n×n) and b (n).
pub(crate) fn cholesky_solve_vector(l: &DMatrix<f64>, b: &DVector<f64>, par: Par) -> DVector<f64> {
    let mut x = b.clone();
    linalg::solve_lower(linalg::view(l), vector_view_mut(&mut x), par);
    linalg::solve_lower_transpose(linalg::view(l), vector_view_mut(&mut x), par);
    x
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_relative_eq;

    #[test]
    fn lower_kernel_matches_se_ard_and_theta_round_trips() {
        let x = DMatrix::from_fn(23, 3, |i, j| ((i * 5 + j * 7) % 13) as f64 / 3.0 - 2.0);
        let ell = DVector::from_vec(vec![0.7, 1.9, 3.0]);
        let z = crate::kernel::scale_inputs(&x, &ell);
        let mut k = DMatrix::zeros(23, 23);
        se_ard_lower(&z, 1.3, &mut k, Par::Seq);
        let dense = crate::kernel::se_ard(&x, &x, &ell, 1.3, Par::Seq);
        for j in 0..23 {
            for i in j..23 {
                assert_relative_eq!(k[(i, j)], dense[(i, j)], epsilon = 1e-13);
            }
        }

        let noise = NoiseParam { floor: 1e-3 };
        let h = Hyperparameters {
            lengthscales: ell,
            signal_variance: 1.3,
            noise_variance: 0.2,
        };
        let back = Hyperparameters::from_theta(&h.to_theta(noise), 3, noise).unwrap();
        assert_relative_eq!(back.lengthscales, h.lengthscales, epsilon = 1e-14);
        assert_relative_eq!(back.signal_variance, 1.3, epsilon = 1e-14);
        assert_relative_eq!(back.noise_variance, 0.2, epsilon = 1e-14);
        assert!(Hyperparameters::from_theta(&DVector::zeros(4), 3, noise).is_err());
        let mut inf = h.to_theta(noise);
        inf[1] = 1e3;
        assert!(matches!(
            Hyperparameters::from_theta(&inf, 3, noise),
            Err(Error::InvalidParameter { .. })
        ));
    }

    #[test]
    fn jitter_ladder_rescues_a_singular_kernel() {
        // Duplicated inputs and no noise: K is singular.
        let z = DMatrix::from_vec(4, 1, vec![0.0, 0.0, 1.0, 1.0]);
        let mut k = DMatrix::zeros(4, 4);
        se_ard_lower(&z, 1.0, &mut k, Par::Seq);
        let mut f = DMatrix::zeros(4, 4);
        let jitter =
            factorise_with_jitter(&mut f, |d| copy_lower(&k, d), 0.0, 1.0, Par::Seq).unwrap();
        assert!(jitter > 0.0 && jitter <= 1e-6);
        let err = factorise_with_jitter(&mut f, |d| copy_lower(&k, d), -1.0, 1.0, Par::Seq);
        assert!(matches!(err, Err(Error::NotPositiveDefinite { .. })));
    }
}
