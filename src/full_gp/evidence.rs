//! The full GP's training objective: the negative log evidence (paper eq. 4) and its analytic
//!
//! The equations, shapes and parameter layout are on [`FullGpEvidence`]'s page.

use super::ValidFullGpParams;
use crate::data::Dataset;
use crate::error::Result;
use crate::hyperparameters::{self, Decoded, Hyperparameters, NoiseParam};
use crate::kernel::{self, Covariance, Kernel};
use crate::linalg::Par;
use crate::linalg::{self, Jitter};
use crate::optim::Objective;
use nalgebra::{DMatrix, DVector};
use std::sync::{Mutex, PoisonError};

/// One evaluation of [`FullGpEvidence`].
#[derive(Debug, Clone, PartialEq)]
pub struct Evaluation {
    /// −log p(y|θ).
    pub value: f64,
    /// ∇_θ of it (D + 2).
    pub gradient: DVector<f64>,
    /// The diagonal jitter that the Cholesky factorisation needed on top of σn² (0 normally).
    /// Value and gradient are exact for K + (σn² + jitter) I, the jitter a fixed multiple of σ0²
    /// (the ladder's rung: it moves with log σ0, and the gradient says so).
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

/// The full GP's training objective: the negative log evidence (paper eq. 4) and its analytic
/// gradient, for any [`Kernel`] (the SE-ARD covariance of eq. 3 by default).
///
/// # Parameter layout
///
/// θ has D + 2 entries, all unconstrained:
///
/// | entry | meaning |
/// | --- | --- |
/// | θ_0 … θ_{D−1} | log ℓ_d, the log lengthscales |
/// | θ_D | log σ0, so σ0² = e^{2θ_D} |
/// | θ_{D+1} | the noise parameter p of [`NoiseParam`]: σn² = floor + e^{2p} (= e^{2p} without a floor) |
///
/// (the shared head of [`crate::hyperparameters`], with no block).
///
/// # Value and gradient
///
/// With K the n×n SE-ARD matrix of the training inputs, K_y = K + σn² I and α = K_y⁻¹ y (y centred),
///
/// ```text
/// −log p(y|θ) = ½ log|K_y| + ½ yᵀα + (n/2) log 2π
/// ∂/∂θ_i      = ½ tr(W ∂K_y/∂θ_i),   W = K_y⁻¹ − ααᵀ,
/// ```
///
/// and, writing M = W ∘ G (element-wise; G the kernel's slopes, = K for the squared exponential,
/// see [`crate::kernel`]) and z_id = x_id/ℓ_d,
///
/// ```text
/// ∂/∂log ℓ_d = ½ Σ_ij M_ij (z_id − z_jd)² = Σ_i z_id² (M1)_i − (Z_dᵀ M Z_d)
/// ∂/∂log σ0  = Σ_ij (W ∘ K)_ij
/// ∂/∂p       = ½ (dσn²/dp) tr(W) = ½ (dσn²/dp) (tr K_y⁻¹ − αᵀα)
/// ```
///
/// The lengthscale terms expand (z_i − z_j)² = z_i² + z_j² − 2 z_i z_j, so all D of them come from
/// the row sums M1 and one symmetric n×n · n×D product M Z: no n×n matrix per dimension.
///
/// # Cost and memory
///
/// One evaluation is one Cholesky factorisation (n³/3 flops), the inverse K_y⁻¹ from it (2n³/3),
/// and O(n²D) more, all through the blocked, multithreaded kernels of `linalg`. Three n×n `f64` buffers
/// (24·n² bytes: 2.4 GB at n = 10 000) are allocated at the first evaluation and reused until the
/// objective is dropped: K (then M), the factor L (then K_y⁻¹), and L⁻¹. Only lower triangles are
/// computed.
///
/// −log p(y|θ) of a full GP with the SE-ARD covariance on a fixed data set, and its gradient;
/// build it with [`ValidFullGpParams::evidence`].
///
/// See above for the parameter layout, the equations and the 24·n²-byte
/// workspace. The inputs are centred by their column means and the targets by their mean at
/// construction; the SE-ARD kernel is translation invariant, so the evidence is that of the
/// centred targets on the original inputs.
pub struct FullGpEvidence {
    /// Centred inputs, n×D.
    x: DMatrix<f64>,
    /// Centred targets, n.
    y: DVector<f64>,
    kernel: Kernel,
    noise: NoiseParam,
    jitter: Jitter,
    par: Par,
    workspace: Mutex<Option<Workspace>>,
}

impl std::fmt::Debug for FullGpEvidence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FullGpEvidence")
            .field("n", &self.x.nrows())
            .field("dim", &self.x.ncols())
            .field("kernel", &self.kernel)
            .field("noise", &self.noise)
            .field("par", &self.par)
            .finish_non_exhaustive()
    }
}

impl FullGpEvidence {
    /// The evidence of validated settings on `data` (cheap: the n×n workspace is allocated at the
    /// first evaluation).
    pub(crate) fn new(data: &Dataset, params: &ValidFullGpParams) -> Self {
        let (x, _) = kernel::centre_columns(data.x());
        let y = data.y().add_scalar(-data.y_mean());
        Self {
            x,
            y,
            kernel: params.training.kernel,
            noise: params.training.noise(),
            jitter: params.jitter,
            par: linalg::par(params.training.threads),
            workspace: Mutex::new(None),
        }
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

    /// Decodes θ (length D + 2).
    fn decode(&self, theta: &DVector<f64>) -> Result<Decoded<'static>> {
        hyperparameters::unpack(
            theta,
            self.dim(),
            0,
            self.noise,
            None,
            "full-GP hyperparameter vector θ (D + 2 entries)",
        )
    }

    /// The hyperparameters θ stands for.
    ///
    /// # Errors
    /// As [`FullGpEvidence::evaluate`] for a bad θ.
    pub fn unpack(&self, theta: &DVector<f64>) -> Result<Hyperparameters> {
        Ok(self.decode(theta)?.hyper)
    }

    /// −log p(y|θ), its gradient, and the jitter the factorisation needed.
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`](crate::error::Error::DimensionMismatch) for a θ without D + 2 entries, [`Error::NonFinite`](crate::error::Error::NonFinite) for a NaN
    /// or infinity in it, [`Error::InvalidParameter`](crate::error::Error::InvalidParameter) for an overflowing lengthscale or variance;
    /// [`Error::NotPositiveDefinite`](crate::error::Error::NotPositiveDefinite) if K + σn² I cannot be factorised even with the jitter
    /// ladder ([`Jitter::ladder`]: up to 1e-6·σ0² added);
    /// [`Error::NonFiniteObjective`](crate::error::Error::NonFiniteObjective) if −log p(y|θ) is
    /// not finite; [`Error::Allocation`](crate::error::Error::Allocation) if the 24·n² bytes of
    /// workspace cannot be allocated.
    pub fn evaluate(&self, theta: &DVector<f64>) -> Result<Evaluation> {
        let n = self.len();
        let dim = self.dim();
        let Decoded {
            hyper: h,
            noise_derivative,
            ..
        } = self.decode(theta)?;
        let z = kernel::scale_inputs(&self.x, &h.lengthscales);
        let par = self.par;

        let mut guard = self
            .workspace
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let workspace = match guard.take() {
            Some(workspace) => workspace,
            None => {
                let what = "the full GP's n×n evidence workspace";
                Workspace {
                    kernel: linalg::try_zeros(n, n, what)?,
                    factor: linalg::try_zeros(n, n, what)?,
                    inverse_factor: linalg::try_zeros(n, n, what)?,
                }
            }
        };
        let Workspace {
            kernel,
            factor,
            inverse_factor,
        } = guard.insert(workspace);

        let covariance = Covariance {
            kernel: self.kernel,
            lengthscales: &h.lengthscales,
            signal_variance: h.signal_variance,
        };
        covariance.lower_scaled(&z, kernel, par);
        let Conditioned {
            jitter,
            alpha,
            neg_log_evidence: value,
        } = condition(
            factor,
            |f| copy_lower(kernel, f),
            &self.y,
            &h,
            &self.jitter,
            par,
        )?;

        linalg::spd_inverse_lower(factor, inverse_factor, par);
        let inverse = &*factor;
        let trace_inverse: f64 = (0..n).map(|i| inverse[(i, i)]).sum();

        // M = (K_y⁻¹ − ααᵀ) ∘ G into the kernel buffer (lower triangle), with its row sums M1,
        // and the sum of all entries of (K_y⁻¹ − ααᵀ) ∘ K (for σ0). For the squared exponential
        // G = K; otherwise G comes from the squared distances in the strict upper triangle.
        let mut row_sums = vec![0.0; n];
        let mut total = 0.0;
        {
            let w = inverse.as_slice();
            let m = kernel.as_mut_slice();
            let se = self.kernel == Kernel::SquaredExponential;
            let slope_at_zero = covariance.slope_of_squared_distance(0.0);
            for j in 0..n {
                let col = j * n;
                let aj = alpha[j];
                let wjj = w[col + j] - aj * aj;
                let diag_k = wjj * m[col + j];
                let diag = if se { diag_k } else { wjj * slope_at_zero };
                m[col + j] = diag;
                let (mut off, mut off_k) = (0.0, 0.0);
                for i in (j + 1)..n {
                    let wij = w[col + i] - alpha[i] * aj;
                    let vk = wij * m[col + i];
                    let v = if se {
                        vk
                    } else {
                        wij * covariance.slope_of_squared_distance(m[i * n + j])
                    };
                    m[col + i] = v;
                    row_sums[i] += v;
                    off += v;
                    off_k += vk;
                }
                row_sums[j] += diag + off;
                total += if se {
                    diag + 2.0 * off
                } else {
                    diag_k + 2.0 * off_k
                };
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
        // A jitter relative to σ0² (the ladder's) moves with log σ0:
        // ½ tr((K_y⁻¹ − ααᵀ) ∂(δI)/∂log σ0) = δ(tr K_y⁻¹ − αᵀα), as FITC's and VFE's.
        let residual_trace = trace_inverse - alpha.norm_squared();
        let relative_jitter = if self.jitter.relative { jitter } else { 0.0 };
        gradient[dim] = total + relative_jitter * residual_trace;
        gradient[dim + 1] = 0.5 * noise_derivative * residual_trace;
        Ok(Evaluation {
            value,
            gradient,
            jitter,
        })
    }
}

/// The fewest rows from which an evaluation on several threads runs on rayon's pool
/// ([`linalg::on_pool`]): from 256 rows its kernel matrix is filled and its factor's gemms run on
/// several threads, each hand-off then cheaper from inside the pool (two threads: n = 300 1.67 →
/// 1.51 ms, n = 1 024 22.5 → 21.9 ms, n = 2 000 127 → 123 ms); at n = 100, where nothing runs in
/// parallel, moving the evaluation onto the pool alone took 0.19 → 0.24 ms.
const ON_POOL_FROM: usize = 256;

impl Objective for FullGpEvidence {
    fn num_params(&self) -> usize {
        self.dim() + 2
    }

    /// n, the number of data points.
    fn value_scale(&self) -> f64 {
        self.len() as f64
    }

    fn value_and_gradient(&self, theta: &DVector<f64>) -> Result<(f64, DVector<f64>)> {
        // On rayon's pool from `ON_POOL_FROM` rows.
        let hop = if self.len() >= ON_POOL_FROM {
            self.par
        } else {
            Par::Seq
        };
        linalg::on_pool(hop, || self.evaluate(theta)).map(|e| (e.value, e.gradient))
    }
}

/// The posterior at fixed θ: the jitter the factorisation needed, α = (K + σn²I)⁻¹y and
/// −log p(y|θ) = ½ log|K + σn²I| + ½ yᵀα + (n/2) log 2π.
pub(crate) struct Conditioned {
    pub jitter: f64,
    pub alpha: DVector<f64>,
    pub neg_log_evidence: f64,
}

/// Factorises K + σn²I into `factor` (n×n; `fill` writes K's lower triangle) under the jitter
/// policy, and conditions the centred targets `y` on it (eq. 2 and 4).
///
/// # Errors
/// [`crate::error::Error::NotPositiveDefinite`] if the factorisation fails even with jitter;
/// [`crate::error::Error::NonFiniteObjective`] if −log p(y|θ) is not finite.
pub(crate) fn condition(
    factor: &mut DMatrix<f64>,
    fill: impl Fn(&mut DMatrix<f64>),
    y: &DVector<f64>,
    h: &Hyperparameters,
    jitter: &Jitter,
    par: Par,
) -> Result<Conditioned> {
    let jitter = linalg::factorize_with_jitter(
        factor,
        fill,
        h.noise_variance,
        jitter,
        h.signal_variance,
        "K + σn²I",
        par,
    )?;
    let log_det = linalg::log_det_from_cholesky(factor);
    let mut alpha = y.clone();
    linalg::cholesky_solve_in_place(factor, linalg::vector_view_mut(&mut alpha), par);
    let neg_log_evidence = 0.5 * log_det
        + 0.5 * y.dot(&alpha)
        + 0.5 * y.len() as f64 * (2.0 * std::f64::consts::PI).ln();
    // As SSGP's, FITC's and VFE's: a value that overflowed is an error, not an Ok model whose
    // saved file would not load (variances near the smallest f64, targets near 1e155).
    if !neg_log_evidence.is_finite() {
        return Err(crate::error::Error::NonFiniteObjective {
            what: format!("the full GP's −log p(y|θ) = {neg_log_evidence}"),
        });
    }
    Ok(Conditioned {
        jitter,
        alpha,
        neg_log_evidence,
    })
}

/// Copies the lower triangle of `src` into `dst` (both n×n).
fn copy_lower(src: &DMatrix<f64>, dst: &mut DMatrix<f64>) {
    let n = src.nrows();
    let (s, d) = (src.as_slice(), dst.as_mut_slice());
    for j in 0..n {
        d[j * n + j..(j + 1) * n].copy_from_slice(&s[j * n + j..(j + 1) * n]);
    }
}
