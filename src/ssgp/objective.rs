//! SSGP's negative log evidence and its exact gradient (paper eq. 8 and Appendix A).
//!
//! With the design matrix Φ (n×2m, one row per point, see [`super::features`]), λ = mσn²/σ0²,
//! A = ΦᵀΦ + λI = LLᵀ, b = Φᵀy, v = L⁻¹b and α = A⁻¹b = L⁻ᵀv:
//!
//! $$-\log p(y|θ) = \frac{y^⊤y - \lVert v\rVert^2}{2σ_n^2} + \sum_i \log L_{ii} - m\log λ
//!   + \frac n2 \log 2πσ_n^2 .$$
//!
//! (Eq. 8 with the log determinant that eq. 4 as printed drops.) Its gradient with respect to the
//! design matrix is ∂/∂Φ = ΦA⁻¹ − rαᵀ with r = (y − Φα)/σn² = K⁻¹y; the chain rule through
//! cos/sin of the phases θ_ir = Ω_rᵀx_i gives g_ir = G^{sin}_ir cos θ_ir − G^{cos}_ir sin θ_ir and
//! ∂/∂Ω = gᵀX. The frequencies, lengthscales, σ0 and σn follow from Ω = W ⊘ ℓ and λ.
//!
//! Cost per evaluation: one symmetric rank-2m update (n(2m)² flops), two triangular solves with n
//! right-hand sides (2n(2m)²), the phases and ∂/∂Ω gemms (4nmD), 2nm sines and cosines, and
//! O(m³) for the 2m×2m factor: 12nm² + O(nmD + m³) in all. No n×n matrix is formed and A is never
//! inverted (tr A⁻¹ = ‖L⁻¹‖²_F, for the σ gradients, inverts the 2m×2m triangle only). Both passes
//! are folds over row chunks whose partial results add up (A, b and ∂/∂Ω), run in parallel waves
//! with a fixed summation order, so memory beyond the data is O(chunk·m + m² + mD) plus whatever
//! part of the design matrix the cache budget keeps.

use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::linalg::{self, view, view_mut};
use crate::model::NoiseParam;
use crate::optim::Objective;
use crate::ssgp::features::{design_matrix_into, scaled_frequencies};
use faer::{MatRef, Par};
use nalgebra::{DMatrix, DVector};
use rayon::prelude::*;
use std::sync::Mutex;

/// Default number of rows per chunk of the design matrix.
pub const DEFAULT_CHUNK_ROWS: usize = 4096;
/// Default memory (bytes) the objective may use to keep the design matrix between the value pass
/// and the gradient pass; the chunks beyond it are recomputed.
pub const DEFAULT_CACHE_BYTES: usize = 512 << 20;

/// The hyperparameters θ stands for, in natural units.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct SsgpHyperparameters {
    /// Lengthscales ℓ (D).
    pub lengthscales: DVector<f64>,
    /// Signal variance σ0².
    pub signal_variance: f64,
    /// Noise variance σn².
    pub noise_variance: f64,
    /// Unit frequencies W (m×D); spectral points s_r = W_r ⊘ (2πℓ).
    pub unit_frequencies: DMatrix<f64>,
}

/// The trained posterior over the 2m weights: N(α, σn² A⁻¹) with A = LLᵀ.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub(crate) struct WeightPosterior {
    /// Lower Cholesky factor L of A (2m×2m).
    pub l: DMatrix<f64>,
    /// Posterior mean of the weights α = A⁻¹Φᵀy (2m).
    pub alpha: DVector<f64>,
    /// Scaled frequencies Ω = W ⊘ ℓ (m×D).
    pub omega: DMatrix<f64>,
}

/// What the first pass leaves for the second: −log p(y|θ), the factor, α and the pieces of eq. 8.
struct FirstPass {
    value: f64,
    posterior: WeightPosterior,
    hyper: SsgpHyperparameters,
    /// yᵀy − bᵀA⁻¹b.
    q: f64,
    /// λ = mσn²/σ0².
    lambda: f64,
    /// How many leading chunks of Φ were kept in the workspace.
    cached: usize,
}

#[derive(Default)]
struct Workspace {
    /// The design matrix of every chunk, when it is kept between the passes.
    phi_chunks: Vec<DMatrix<f64>>,
    /// One set of buffers per worker.
    workers: Vec<WorkerBuffers>,
}

/// A worker's buffers, reused across evaluations; `a`, `b` and `d_omega` hold its chunk's partial
/// sums until they are added up in chunk order.
#[derive(Default)]
struct WorkerBuffers {
    phi: DMatrix<f64>,
    solved: DMatrix<f64>,
    r: DMatrix<f64>,
    a: DMatrix<f64>,
    b: DMatrix<f64>,
    d_omega: DMatrix<f64>,
}

/// Resizes `m` to r×c if needed (contents are then overwritten by the caller).
fn shape(m: &mut DMatrix<f64>, r: usize, c: usize) {
    if m.shape() != (r, c) {
        *m = DMatrix::zeros(r, c);
    }
}

/// SSGP's objective θ ↦ −log p(y|θ) and ∇θ on a data set: a pure function of (data, θ).
///
/// **Parameter layout** (the original `ssgpr.m`'s): θ = [log ℓ_1 … log ℓ_D, log σ0, p_n, vec(W)],
/// where σ0 is the signal standard deviation, σn² = floor + e^{2p_n} (so p_n = log σn without a
/// noise floor), and vec(W) is the m×D unit-frequency matrix stored column by column (entry (r, d)
/// at index D + 2 + r + d·m). With fixed spectral points, θ is only the first D + 2 entries and W
/// is held constant (the frequencies still scale with ℓ: paper §5.2, footnote 4).
///
/// Targets are centred by their mean, as the original code does. Buffers are kept between
/// evaluations (behind a mutex, so the objective stays `Sync`).
pub struct SsgpObjective<'a> {
    x: &'a DMatrix<f64>,
    y: DVector<f64>,
    m: usize,
    fixed: Option<DMatrix<f64>>,
    noise: NoiseParam,
    par: Par,
    /// Chunk jobs run at once (each single-threaded).
    workers: usize,
    chunk_rows: usize,
    cache_bytes: usize,
    workspace: Mutex<Workspace>,
}

impl<'a> SsgpObjective<'a> {
    /// The objective of SSGP with `m` spectral points on `data` (targets centred by their mean).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] if `m` = 0.
    pub fn new(data: &'a Dataset, m: usize) -> Result<Self> {
        if m == 0 {
            return Err(Error::InvalidParameter {
                name: "m",
                reason: "the number of spectral points must be at least 1".into(),
            });
        }
        let mean = data.y_mean();
        Ok(Self {
            x: data.x(),
            y: data.y().add_scalar(-mean),
            m,
            fixed: None,
            noise: NoiseParam { floor: 0.0 },
            par: linalg::par(0),
            workers: rayon::current_num_threads().max(1),
            chunk_rows: DEFAULT_CHUNK_ROWS,
            cache_bytes: DEFAULT_CACHE_BYTES,
            workspace: Mutex::new(Workspace::default()),
        })
    }

    /// Holds the unit frequencies fixed at `w` (m×D); θ then has D + 2 entries.
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] if `w` is not m×D, [`Error::NonFinite`] for a NaN or infinity.
    pub fn fixed_frequencies(mut self, w: DMatrix<f64>) -> Result<Self> {
        if w.nrows() != self.m {
            return Err(Error::DimensionMismatch {
                what: "fixed unit frequencies (rows)",
                expected: self.m,
                found: w.nrows(),
            });
        }
        if w.ncols() != self.x.ncols() {
            return Err(Error::DimensionMismatch {
                what: "fixed unit frequencies (columns)",
                expected: self.x.ncols(),
                found: w.ncols(),
            });
        }
        crate::data::check_finite("fixed unit frequencies", &w)?;
        self.fixed = Some(w);
        Ok(self)
    }

    /// Lower-bounds σn² by `floor` (paper §5.2); see [`NoiseParam`].
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a negative or non-finite floor.
    pub fn noise_floor(mut self, floor: f64) -> Result<Self> {
        let noise = NoiseParam { floor };
        noise.validate()?;
        self.noise = noise;
        Ok(self)
    }

    /// Threads (0 = all of rayon's, 1 = sequential): that many row chunks are processed at once,
    /// each by a single-threaded job; the 2m×2m factorisation uses faer's parallel kernels.
    pub fn threads(mut self, threads: usize) -> Self {
        self.par = linalg::par(threads);
        self.workers = if threads == 0 {
            rayon::current_num_threads().max(1)
        } else {
            threads
        };
        self
    }

    /// Rows per chunk of the design matrix (at least 1).
    pub fn chunk_rows(mut self, rows: usize) -> Self {
        self.chunk_rows = rows.max(1);
        self
    }

    /// Bytes of the design matrix that may be kept between the two passes (default 512 MiB): as
    /// many leading row chunks as fit are kept, the others recomputed; 0 always recomputes it
    /// chunk by chunk (the streaming mode, O(chunk·m) memory beyond the data).
    pub fn cache_bytes(mut self, bytes: usize) -> Self {
        self.cache_bytes = bytes;
        self
    }

    /// Number of spectral points m.
    pub fn num_spectral_points(&self) -> usize {
        self.m
    }

    /// The noise parametrisation in use.
    pub fn noise(&self) -> NoiseParam {
        self.noise
    }

    /// Packs natural hyperparameters into θ (W is left out when the frequencies are fixed).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for non-positive lengthscales or variances, a noise variance
    /// below the floor; [`Error::DimensionMismatch`] for wrong shapes.
    pub fn pack(&self, h: &SsgpHyperparameters) -> Result<DVector<f64>> {
        let d = self.x.ncols();
        if h.lengthscales.len() != d {
            return Err(Error::DimensionMismatch {
                what: "lengthscales",
                expected: d,
                found: h.lengthscales.len(),
            });
        }
        if h.lengthscales.iter().any(|l| !(*l > 0.0 && l.is_finite())) {
            return Err(Error::InvalidParameter {
                name: "lengthscales",
                reason: "every lengthscale must be positive and finite".into(),
            });
        }
        for (name, v) in [
            ("signal_variance", h.signal_variance),
            ("noise_variance", h.noise_variance),
        ] {
            if !(v > 0.0 && v.is_finite()) {
                return Err(Error::InvalidParameter {
                    name,
                    reason: format!("{v} is not a positive finite variance"),
                });
            }
        }
        let with_w = self.fixed.is_none();
        let mut theta = DVector::zeros(self.num_params());
        for i in 0..d {
            theta[i] = h.lengthscales[i].ln();
        }
        theta[d] = 0.5 * h.signal_variance.ln();
        theta[d + 1] = self.noise.param(h.noise_variance);
        if with_w {
            if h.unit_frequencies.shape() != (self.m, d) {
                return Err(Error::DimensionMismatch {
                    what: "unit frequencies (m×D entries)",
                    expected: self.m * d,
                    found: h.unit_frequencies.len(),
                });
            }
            theta
                .rows_mut(d + 2, self.m * d)
                .copy_from_slice(h.unit_frequencies.as_slice());
        }
        Ok(theta)
    }

    /// Unpacks θ into natural hyperparameters.
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] for a θ of the wrong length, [`Error::NonFinite`] for a NaN or
    /// infinity in θ.
    pub fn unpack(&self, theta: &DVector<f64>) -> Result<SsgpHyperparameters> {
        if theta.len() != self.num_params() {
            return Err(Error::DimensionMismatch {
                what: "SSGP parameter vector",
                expected: self.num_params(),
                found: theta.len(),
            });
        }
        crate::data::check_finite_vector("SSGP parameter vector", theta)?;
        let d = self.x.ncols();
        let w = match &self.fixed {
            Some(w) => w.clone(),
            None => DMatrix::from_column_slice(self.m, d, theta.rows(d + 2, self.m * d).as_slice()),
        };
        Ok(SsgpHyperparameters {
            lengthscales: theta.rows(0, d).map(f64::exp),
            signal_variance: (2.0 * theta[d]).exp(),
            noise_variance: self.noise.variance(theta[d + 1]),
            unit_frequencies: w,
        })
    }

    /// −log p(y|θ) alone (the first pass only: about a third of the cost with the gradient).
    ///
    /// # Errors
    /// As [`SsgpObjective::unpack`], and [`Error::NotPositiveDefinite`] if A cannot be factored.
    pub fn value(&self, theta: &DVector<f64>) -> Result<f64> {
        let mut ws = self.workspace.lock().unwrap_or_else(|p| p.into_inner());
        Ok(self.first_pass(theta, &mut ws, false)?.value)
    }

    /// −log p(y|θ) and the posterior over the weights at θ.
    pub(crate) fn posterior(&self, theta: &DVector<f64>) -> Result<(f64, WeightPosterior)> {
        let mut ws = self.workspace.lock().unwrap_or_else(|p| p.into_inner());
        let first = self.first_pass(theta, &mut ws, false)?;
        Ok((first.value, first.posterior))
    }

    /// Row ranges (start, len): at most `chunk_rows` long, as many as a multiple of the workers
    /// so every wave of parallel chunk jobs is full, and of equal size (±1).
    fn chunks(&self) -> Vec<(usize, usize)> {
        let n = self.x.nrows();
        let w = self.workers;
        let count = n.div_ceil(self.chunk_rows).div_ceil(w) * w;
        let size = n.div_ceil(count.clamp(1, n));
        (0..n).step_by(size).map(|s| (s, size.min(n - s))).collect()
    }

    fn y_rows(&self, start: usize, len: usize) -> MatRef<'_, f64> {
        MatRef::from_column_major_slice(&self.y.as_slice()[start..start + len], len, 1)
    }

    /// Runs `job` on every row chunk — in waves of one chunk per worker, in parallel, each job
    /// single-threaded with its worker's buffers and, for the first `cached` chunks, the chunk's
    /// slot of the design-matrix cache — then `reduce` on each worker's buffers in chunk order, so
    /// sums do not depend on scheduling. This is the map-reduce both passes are made of.
    fn waves(
        &self,
        ws: &mut Workspace,
        cached: usize,
        job: impl Fn((usize, usize), &mut WorkerBuffers, Option<&mut DMatrix<f64>>) + Sync,
        mut reduce: impl FnMut(&WorkerBuffers),
    ) {
        let ranges = self.chunks();
        ws.phi_chunks.truncate(cached);
        ws.phi_chunks.resize_with(cached, || DMatrix::zeros(0, 0));
        ws.workers.resize_with(self.workers, WorkerBuffers::default);
        let mut slots = ws.phi_chunks.iter_mut();
        for rows in ranges.chunks(self.workers) {
            let cached: Vec<Option<&mut DMatrix<f64>>> =
                rows.iter().map(|_| slots.next()).collect();
            rows.par_iter()
                .zip(ws.workers[..rows.len()].par_iter_mut())
                .zip(cached.into_par_iter())
                .for_each(|((&range, wb), cached)| {
                    linalg::clear_avx_upper();
                    job(range, wb, cached);
                });
            ws.workers[..rows.len()].iter().for_each(&mut reduce);
        }
    }

    /// Pass 1 (a fold over row chunks): A = ΦᵀΦ + λI, b = Φᵀy, the factor L and −log p(y|θ).
    fn first_pass(
        &self,
        theta: &DVector<f64>,
        ws: &mut Workspace,
        want_gradient: bool,
    ) -> Result<FirstPass> {
        let h = self.unpack(theta)?;
        let (n, m, k) = (self.x.nrows(), self.m, 2 * self.m);
        let par = self.par;
        let sn2 = h.noise_variance;
        let omega = scaled_frequencies(&h.unit_frequencies, &h.lengthscales);
        // Keep as many leading chunks of Φ for the gradient pass as the memory budget allows.
        let chunk_bytes = self.chunks()[0].1.saturating_mul(k).saturating_mul(8);
        let cache = if want_gradient {
            (self.cache_bytes / chunk_bytes.max(1)).min(self.chunks().len())
        } else {
            0
        };
        let mut a = DMatrix::zeros(k, k);
        let mut b = DMatrix::zeros(k, 1);
        self.waves(
            ws,
            cache,
            |(start, len), wb, cached| {
                let WorkerBuffers { phi: own, a, b, .. } = wb;
                let phi = cached.unwrap_or(own);
                design_matrix_into(linalg::rows_view(self.x, start, len), &omega, phi, Par::Seq);
                shape(a, k, k);
                shape(b, k, 1);
                linalg::syrk_lower(view_mut(a), false, view(phi), Par::Seq);
                linalg::gemm(
                    view_mut(b),
                    false,
                    view(phi).transpose(),
                    self.y_rows(start, len),
                    1.0,
                    Par::Seq,
                );
            },
            |wb| {
                a += &wb.a;
                b += &wb.b;
            },
        );
        let lambda = m as f64 * sn2 / h.signal_variance;
        for i in 0..k {
            a[(i, i)] += lambda;
        }
        linalg::cholesky_in_place_lower(&mut a, "A = ΦᵀΦ + (mσn²/σ0²)I", par)?;
        let l = a;
        let mut v = b;
        linalg::solve_lower(view(&l), view_mut(&mut v), par);
        let yty = self.y.norm_squared();
        let q = yty - v.norm_squared();
        let log_det_half: f64 = (0..k).map(|i| l[(i, i)].ln()).sum();
        let value = q / (2.0 * sn2) + log_det_half - m as f64 * lambda.ln()
            + 0.5 * n as f64 * (2.0 * std::f64::consts::PI * sn2).ln();
        if !value.is_finite() {
            return Err(Error::NonFiniteObjective {
                what: format!("−log p(y|θ) = {value}"),
            });
        }
        let mut alpha = v;
        linalg::solve_lower_transpose(view(&l), view_mut(&mut alpha), par);
        let alpha = DVector::from_column_slice(alpha.as_slice());
        Ok(FirstPass {
            value,
            posterior: WeightPosterior { l, alpha, omega },
            hyper: h,
            q,
            lambda,
            cached: cache,
        })
    }

    /// Pass 2: the gradient, from the factor L, α and (cached or recomputed) Φ; `p_noise` is
    /// θ's noise entry.
    fn gradient(&self, ws: &mut Workspace, first: &FirstPass, p_noise: f64) -> DVector<f64> {
        let (n, d, m) = (self.x.nrows(), self.x.ncols(), self.m);
        let FirstPass {
            posterior: WeightPosterior { l, alpha, omega },
            hyper: h,
            q,
            lambda,
            cached: cache,
            ..
        } = first;
        let (q, lambda, cache) = (*q, *lambda, *cache);
        let k = 2 * m;
        let par = self.par;
        let sn2 = h.noise_variance;
        let alpha_col = MatRef::from_column_major_slice(alpha.as_slice(), k, 1);
        let mut d_omega = DMatrix::zeros(m, d);
        self.waves(
            ws,
            cache,
            |(start, len), wb, cached| {
                let WorkerBuffers {
                    phi: own,
                    solved,
                    r,
                    d_omega,
                    ..
                } = wb;
                let phi: &DMatrix<f64> = match cached {
                    Some(p) => &*p,
                    None => {
                        design_matrix_into(
                            linalg::rows_view(self.x, start, len),
                            omega,
                            own,
                            Par::Seq,
                        );
                        own
                    }
                };
                // ΦA⁻¹ for this chunk, by right-side triangular solves with L.
                shape(solved, len, k);
                solved.copy_from(phi);
                linalg::right_solve_cholesky(solved, l, Par::Seq);
                // r = (y − Φα)/σn² = K⁻¹y on these rows.
                shape(r, len, 1);
                r.copy_from_slice(&self.y.as_slice()[start..start + len]);
                linalg::gemm(view_mut(r), true, view(phi), alpha_col, -1.0, Par::Seq);
                *r /= sn2;
                // g_ir = G^sin_ir cos θ_ir − G^cos_ir sin θ_ir with G = ΦA⁻¹ − rαᵀ, written
                // over the cosine block of `solved`.
                let (g_cos, g_sin) = solved.as_mut_slice().split_at_mut(len * m);
                let (cos, sin) = phi.as_slice().split_at(len * m);
                for (j, (((gc, gs), c), s)) in g_cos
                    .chunks_mut(len)
                    .zip(g_sin.chunks(len))
                    .zip(cos.chunks(len))
                    .zip(sin.chunks(len))
                    .enumerate()
                {
                    chain_through_trig(gc, gs, c, s, r.as_slice(), alpha[j], alpha[m + j]);
                }
                let g = MatRef::from_column_major_slice(&solved.as_slice()[..len * m], len, m);
                shape(d_omega, m, d);
                linalg::gemm(
                    view_mut(d_omega),
                    false,
                    g.transpose(),
                    linalg::rows_view(self.x, start, len),
                    1.0,
                    Par::Seq,
                );
            },
            |wb| d_omega += &wb.d_omega,
        );
        // σ0 and σn enter through λ = mσn²/σ0² and the explicit terms of eq. 8.
        let l_inv = linalg::invert_lower(l, par);
        let trace_a_inv = l_inv.norm_squared();
        let d_lambda = alpha.norm_squared() / (2.0 * sn2) + 0.5 * trace_a_inv - m as f64 / lambda;
        let d_sn2 = -q / (2.0 * sn2 * sn2) + n as f64 / (2.0 * sn2) + d_lambda * lambda / sn2;
        let mut grad = DVector::zeros(self.num_params());
        for dd in 0..d {
            let ell = h.lengthscales[dd];
            // ∂/∂log ℓ_d = −Σ_r Ω_rd ∂/∂Ω_rd.
            grad[dd] = -omega.column(dd).dot(&d_omega.column(dd));
            if self.fixed.is_none() {
                // ∂/∂W_rd = ∂/∂Ω_rd / ℓ_d.
                for rr in 0..m {
                    grad[d + 2 + rr + dd * m] = d_omega[(rr, dd)] / ell;
                }
            }
        }
        grad[d] = -2.0 * lambda * d_lambda;
        grad[d + 1] = d_sn2 * self.noise.variance_derivative(p_noise);
        grad
    }
}

/// One spectral point's column of the chain rule through cos/sin: with G = ΦA⁻¹ − rαᵀ,
/// overwrites `b_cos` (ΦA⁻¹'s cosine column) with g_i = G^sin_i cos θ_i − G^cos_i sin θ_i.
fn chain_through_trig(
    b_cos: &mut [f64],
    b_sin: &[f64],
    cos: &[f64],
    sin: &[f64],
    r: &[f64],
    alpha_cos: f64,
    alpha_sin: f64,
) {
    for i in 0..b_cos.len() {
        let g_cos = b_cos[i] - r[i] * alpha_cos;
        let g_sin = b_sin[i] - r[i] * alpha_sin;
        b_cos[i] = g_sin * cos[i] - g_cos * sin[i];
    }
}

impl Objective for SsgpObjective<'_> {
    fn num_params(&self) -> usize {
        let d = self.x.ncols();
        match self.fixed {
            Some(_) => d + 2,
            None => d + 2 + self.m * d,
        }
    }

    fn value_and_gradient(&self, theta: &DVector<f64>) -> Result<(f64, DVector<f64>)> {
        let mut ws = self.workspace.lock().unwrap_or_else(|p| p.into_inner());
        let first = self.first_pass(theta, &mut ws, true)?;
        let d = self.x.ncols();
        let gradient = self.gradient(&mut ws, &first, theta[d + 1]);
        Ok((first.value, gradient))
    }
}
