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
//! with a fixed summation order ([`super::chunks`]), so memory beyond the data is
//! O(chunk·m + m² + mD) plus whatever part of the design matrix the cache budget keeps.
//!
//! Each pass is a local step over the rows (`local_sums`: ΦᵀΦ, b, yᵀy, n; `local_gradient`:
//! ∂/∂Ω) and a finalize step on the sums (`finalize`: the factor, α, the value;
//! `finalize_gradient`: ∇θ). The single-process evidence runs them back to back; the distributed
//! evidence (feature `mpi`) all-reduces the local sums over ranks in between.
//!
//! The inputs are centred (a shift rotates each cosine/sine pair and changes nothing), and the
//! optimiser sees W in units of 10·√m ([`crate::optim::Objective::parameter_scales`]): a change
//! of log ℓ_d moves the phases of all m spectral points at once, so the evidence is far more
//! sensitive to the hyperparameters than to one entry of W, and conjugate gradients in θ crawl
//! along W. Measured on Kin-40k (seeds 1–8, 1000 evaluations, m = 25 … 200), the scaling lowers
//! the final −log p(y|θ) by 20–40% (m = 100: −7893 → −10532 on average) and the test NMSE from
//! 0.0139 to 0.0088; results are flat for scales between about 3√m and 15√m.

use super::chunks::{BlockSums, ChunkBuffers, RowPlan, Workspace};
use super::features::{centre_rows, design_matrix_into, scaled_frequencies};
use super::posterior::WeightPosterior;
use super::{SsgpHyperparameters, ValidSsgpParams};
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::hyperparameters::{self, Decoded, Hyperparameters, NoiseParam};
use crate::linalg::{self, view, view_mut};
use crate::linalg::{MatRef, Par};
use crate::optim::Objective;
use nalgebra::{DMatrix, DVector};
use std::sync::{Mutex, MutexGuard};

/// A point θ decoded for one evaluation: what the passes over the rows and the finalize steps
/// share.
pub(crate) struct EvaluationPoint {
    hyper: Hyperparameters,
    /// dσn²/dp_n.
    noise_derivative: f64,
    /// Ω = W ⊘ ℓ (m×D).
    omega: DMatrix<f64>,
    /// How many leading chunks of Φ the first pass keeps for the gradient pass.
    cached: usize,
}

/// The sums over data points that eq. 8 needs. They add over any partition of the rows (row
/// chunks, the blocks of threads, the ranks of an MPI job), so [`SsgpEvidence::finalize`] can
/// take them from one process or from an all-reduce. At a fixed (ℓ, W) they do not depend on σ0²
/// or σn²: the random-feature fit takes them once ([`SsgpEvidence::sums_at`]).
#[derive(Clone)]
pub(crate) struct DataSums {
    /// ΦᵀΦ (2m×2m); only the lower triangle, diagonal included, is set.
    pub a: DMatrix<f64>,
    /// b = Φᵀy (2m×1).
    pub b: DMatrix<f64>,
    /// yᵀy, with y centred.
    pub yty: f64,
    /// The number of rows n.
    pub n: usize,
}

/// What the first pass leaves for the second: −log p(y|θ), the factor, α and the pieces of eq. 8.
pub(crate) struct FirstPass {
    value: f64,
    posterior: WeightPosterior,
    hyper: Hyperparameters,
    /// dσn²/dp_n.
    noise_derivative: f64,
    /// yᵀy − bᵀA⁻¹b.
    q: f64,
    /// λ = mσn²/σ0².
    lambda: f64,
    /// How many leading chunks of Φ were kept in the workspace.
    cached: usize,
    /// The number of rows n the sums were taken over.
    n: usize,
}

impl FirstPass {
    /// −log p(y|θ).
    pub(crate) fn value(&self) -> f64 {
        self.value
    }

    /// Replaces −log p(y|θ) by `value`: a distributed evaluation returns rank 0's on every rank.
    #[cfg(feature = "mpi")]
    pub(crate) fn set_value(&mut self, value: f64) {
        self.value = value;
    }

    /// The posterior over the weights, N(α, σn²A⁻¹) with A = LLᵀ.
    pub(crate) fn into_posterior(self) -> WeightPosterior {
        self.posterior
    }
}

/// SSGP's evidence θ ↦ −log p(y|θ) and ∇θ on a data set: a pure function of (data, θ); build it
/// with [`ValidSsgpParams::evidence`].
///
/// **Parameter layout** (the original `ssgpr.m`'s, see [`crate::hyperparameters`]):
/// θ = [log ℓ_1 … log ℓ_D, log σ0, p_n, vec(W)], where vec(W) is the m×D unit-frequency matrix
/// stored column by column (entry (r, d) at index D + 2 + r + d·m). With fixed spectral points, θ
/// is only the first D + 2 entries and W is held constant (the frequencies still scale with ℓ:
/// paper §5.2, footnote 4).
///
/// Targets are centred by their mean, as the original code does. Buffers are kept between
/// evaluations (behind a mutex, so the evidence stays `Sync`).
pub struct SsgpEvidence<'a> {
    x: &'a DMatrix<f64>,
    /// The column means of x: the design matrix is built on centred inputs.
    centre: DVector<f64>,
    y: DVector<f64>,
    m: usize,
    fixed: Option<DMatrix<f64>>,
    noise: NoiseParam,
    par: Par,
    plan: RowPlan,
    threads: linalg::Threads,
    cache_bytes: usize,
    workspace: Mutex<Workspace>,
    /// L⁻¹'s buffer ([`SsgpEvidence::variance_gradient`]), kept between evaluations; apart from
    /// the workspace because it is filled while the gradient pass holds that.
    inverse: Mutex<DMatrix<f64>>,
}

impl<'a> SsgpEvidence<'a> {
    /// The evidence of validated settings on `data`; `fixed` holds the unit frequencies W (m×D,
    /// checked by the caller) when they are not learned.
    pub(crate) fn new(
        data: &'a Dataset,
        params: &ValidSsgpParams,
        fixed: Option<DMatrix<f64>>,
    ) -> Self {
        Self::with_centring(data, params, fixed, input_means(data.x()), data.y_mean())
    }

    /// As [`SsgpEvidence::new`], with the inputs centred by `centre` (D) and the targets by
    /// `y_mean` instead of `data`'s own means: a rank of a distributed fit centres its rows by the
    /// global means.
    pub(crate) fn with_centring(
        data: &'a Dataset,
        params: &ValidSsgpParams,
        fixed: Option<DMatrix<f64>>,
        centre: DVector<f64>,
        y_mean: f64,
    ) -> Self {
        let threads = params.training.threads;
        Self {
            x: data.x(),
            centre,
            y: data.y().add_scalar(-y_mean),
            m: params.m,
            fixed,
            noise: params.training.noise(),
            par: linalg::par(threads),
            plan: RowPlan::for_work(data.len(), params.m.saturating_mul(2), params.chunk_rows),
            threads: linalg::Threads::new(threads),
            cache_bytes: params.cache_bytes,
            workspace: Mutex::new(Workspace::default()),
            inverse: Mutex::new(DMatrix::zeros(0, 0)),
        }
    }

    /// Number of spectral points m.
    pub fn num_spectral_points(&self) -> usize {
        self.m
    }

    /// The bytes one evaluation with gradient holds at its peak beyond the data, k = 2m:
    /// 8·[(blocks + 3)·k² (A, L⁻¹ for tr A⁻¹ and the blocks' sums of ΦᵀΦ: a bound, since only
    /// the blocks running or waiting for their turn hold sums — one on one thread, about one
    /// more than the threads on several) + sets·chunk·(2k + D + 1)
    /// (Φ, ΦA⁻¹, centred inputs and r in each set of chunk buffers, one per thread up to the
    /// blocks) + 4mD (W, Ω, ∂/∂Ω and the draws)] plus the design-matrix cache (at most
    /// `cache_bytes` and n·k·8); `usize::MAX` when that overflows.
    /// Every evidence the settings build is checked to fit in memory first
    /// ([`linalg::check_allocation`]), so that a large m is an error, never an abort.
    pub(crate) fn working_bytes(&self) -> usize {
        let k = 2 * self.m;
        let (d, blocks) = (self.x.ncols(), self.plan.blocks);
        let chunk = self.plan.largest_chunk();
        let square = k.saturating_mul(k).saturating_mul(blocks.saturating_add(3));
        let per_block = chunk
            .saturating_mul(k.saturating_mul(2).saturating_add(d).saturating_add(1))
            .saturating_mul(self.plan.workers(&self.threads));
        let frequencies = self.m.saturating_mul(d).saturating_mul(4);
        let cache = self
            .cache_bytes
            .min(self.plan.n.saturating_mul(k).saturating_mul(8));
        square
            .saturating_add(per_block)
            .saturating_add(frequencies)
            .saturating_mul(8)
            .saturating_add(cache)
    }

    /// The number D of inputs.
    pub(crate) fn input_dim(&self) -> usize {
        self.x.ncols()
    }

    /// The noise parametrisation in use.
    pub fn noise(&self) -> NoiseParam {
        self.noise
    }

    /// Packs natural hyperparameters into θ (W is left out when the frequencies are fixed), at
    /// exactly these values: σn² = floor + e^{2p_n} must lie above the noise floor
    /// ([`Self::noise`]).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for non-positive lengthscales or variances, or naming
    /// `noise_floor` for σn² at or below the floor; [`Error::DimensionMismatch`] for wrong
    /// shapes.
    pub fn pack(&self, h: &SsgpHyperparameters) -> Result<DVector<f64>> {
        let mut theta = self.pack_start(h)?;
        theta[self.input_dim() + 1] = self.noise.exact_param(
            h.hyper.noise_variance,
            "σn²",
            "lower the floor to condition at it: it is the larger of `noise_floor` and \
             `relative_noise_floor`·var y (1e-4·var y by default; `.relative_noise_floor(0.0)` \
             for none)",
        )?;
        Ok(theta)
    }

    /// θ of a training start at natural hyperparameters: as [`Self::pack`], except that σn² at
    /// or within 10⁻³·floor of the noise floor starts at floor + 10⁻³·floor
    /// ([`NoiseParam::param`]) — a start from elsewhere (the full GP's, the training mean's)
    /// may lie below the floor of these data.
    ///
    /// # Errors
    /// As [`Self::pack`], but for the floor.
    pub(crate) fn pack_start(&self, h: &SsgpHyperparameters) -> Result<DVector<f64>> {
        let d = self.input_dim();
        if h.hyper.dim() != d {
            return Err(Error::DimensionMismatch {
                what: "lengthscales",
                expected: d,
                found: h.hyper.dim(),
            });
        }
        h.hyper.validate()?;
        let block = match self.fixed {
            Some(_) => None,
            None => {
                if h.unit_frequencies.shape() != (self.m, d) {
                    return Err(Error::DimensionMismatch {
                        what: "unit frequencies (m×D entries)",
                        expected: self.m * d,
                        found: h.unit_frequencies.len(),
                    });
                }
                Some(&h.unit_frequencies)
            }
        };
        Ok(hyperparameters::pack(&h.hyper, self.noise, block))
    }

    /// Decodes θ in this evidence's layout.
    fn decode(&self, theta: &DVector<f64>) -> Result<Decoded<'_>> {
        hyperparameters::unpack(
            theta,
            self.x.ncols(),
            self.m,
            self.noise,
            self.fixed.as_ref(),
            "SSGP parameter vector",
        )
    }

    /// Unpacks θ into natural hyperparameters.
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] for a θ of the wrong length, [`Error::NonFinite`] for a NaN or
    /// infinity in θ, [`Error::InvalidParameter`] for a lengthscale or variance that under- or
    /// overflows.
    pub fn unpack(&self, theta: &DVector<f64>) -> Result<SsgpHyperparameters> {
        let decoded = self.decode(theta)?;
        Ok(SsgpHyperparameters {
            hyper: decoded.hyper,
            unit_frequencies: decoded.block.into_owned(),
        })
    }

    /// −log p(y|θ) alone (the first pass only: about a third of the cost with the gradient).
    ///
    /// # Errors
    /// As [`SsgpEvidence::unpack`], and [`Error::NotPositiveDefinite`] if A cannot be factored.
    pub fn value(&self, theta: &DVector<f64>) -> Result<f64> {
        let mut ws = self.workspace();
        Ok(self.first_pass(theta, &mut ws, false)?.value)
    }

    /// −log p(y|θ) and the posterior over the weights at θ.
    pub(crate) fn posterior(&self, theta: &DVector<f64>) -> Result<(f64, WeightPosterior)> {
        let mut ws = self.workspace();
        let first = self.first_pass(theta, &mut ws, false)?;
        Ok((first.value(), first.into_posterior()))
    }

    /// The buffers kept between evaluations.
    pub(crate) fn workspace(&self) -> MutexGuard<'_, Workspace> {
        self.workspace.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Pass 1: [`SsgpEvidence::local_sums`] of this evidence's rows, then
    /// [`SsgpEvidence::finalize`].
    fn first_pass(
        &self,
        theta: &DVector<f64>,
        ws: &mut Workspace,
        want_gradient: bool,
    ) -> Result<FirstPass> {
        let point = self.point(theta, want_gradient)?;
        let sums = self.local_sums(&point, ws);
        self.finalize(point, sums)
    }

    /// θ decoded, with Ω = W ⊘ ℓ and how many chunks of Φ to keep for the gradient pass.
    pub(crate) fn point(
        &self,
        theta: &DVector<f64>,
        want_gradient: bool,
    ) -> Result<EvaluationPoint> {
        let Decoded {
            hyper,
            noise_derivative,
            block: w,
        } = self.decode(theta)?;
        let omega = scaled_frequencies(&w, &hyper.lengthscales);
        // Keep as many leading chunks of Φ for the gradient pass as the memory budget allows.
        let cached = if want_gradient {
            self.plan.cached_chunks(self.cache_bytes)
        } else {
            0
        };
        Ok(EvaluationPoint {
            hyper,
            noise_derivative,
            omega,
            cached,
        })
    }

    /// This evidence's share of the sums of eq. 8 (a fold over row chunks): ΦᵀΦ (lower
    /// triangle), b = Φᵀy (2m), yᵀy and n over its rows, at a cost of n(2m)² + 4nmD flops.
    pub(crate) fn local_sums(&self, point: &EvaluationPoint, ws: &mut Workspace) -> DataSums {
        let design = Design {
            x: self.x,
            centre: &self.centre,
            omega: &point.omega,
        };
        let y = MatRef::from_column_major_slice(self.y.as_slice(), self.y.len(), 1);
        let (a, b) = design_sums(&self.plan, (ws, point.cached, &self.threads), &design, y);
        DataSums {
            a,
            b,
            yty: self.y.norm_squared(),
            n: self.x.nrows(),
        }
    }

    /// Eq. 8 from the sums over all rows: A = ΦᵀΦ + λI = LLᵀ (O(m³)), v = L⁻¹b, α = L⁻ᵀv and
    /// −log p(y|θ) = (yᵀy − ‖v‖²)/(2σn²) + Σ log L_ii − m log λ + (n/2) log 2πσn².
    ///
    /// # Errors
    /// [`Error::NotPositiveDefinite`] if A cannot be factored, [`Error::NonFiniteObjective`] for a
    /// non-finite value.
    pub(crate) fn finalize(&self, point: EvaluationPoint, sums: DataSums) -> Result<FirstPass> {
        let EvaluationPoint {
            hyper: h,
            noise_derivative,
            omega,
            cached,
        } = point;
        let DataSums { mut a, b, yty, n } = sums;
        let (m, k) = (self.m, 2 * self.m);
        let par = self.par;
        let sn2 = h.noise_variance;
        let lambda = m as f64 * sn2 / h.signal_variance;
        for i in 0..k {
            a[(i, i)] += lambda;
        }
        linalg::cholesky_in_place_lower(&mut a, "A = ΦᵀΦ + (mσn²/σ0²)I", par)?;
        let l = a;
        let mut v = b;
        linalg::solve_lower(view(&l), view_mut(&mut v), par);
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
            posterior: WeightPosterior {
                l,
                alpha,
                omega,
                centre: self.centre.clone(),
            },
            hyper: h,
            noise_derivative,
            q,
            lambda,
            cached,
            n,
        })
    }

    /// Pass 2: [`SsgpEvidence::local_gradient_and_variances`], then
    /// [`SsgpEvidence::finalize_gradient`].
    fn gradient(&self, ws: &mut Workspace, first: &FirstPass) -> DVector<f64> {
        let (d_omega, variances) = self.local_gradient_and_variances(ws, first);
        self.finalize_gradient(first, &d_omega, variances)
    }

    /// [`SsgpEvidence::local_gradient`] and [`SsgpEvidence::variance_gradient`] at once on the
    /// evidence's threads: the triangular inverse of the latter (O(m³), ≈ 2 % of an evaluation
    /// at m = 250) fills the threads the pass over the rows leaves idle instead of running
    /// after it on one. Each is computed as alone, the same bits on any number of threads.
    pub(crate) fn local_gradient_and_variances(
        &self,
        ws: &mut Workspace,
        first: &FirstPass,
    ) -> (DMatrix<f64>, [f64; 2]) {
        self.threads.join(
            || self.local_gradient(ws, first),
            || self.variance_gradient(first),
        )
    }

    /// This evidence's share of ∂/∂Ω = gᵀX (m×D, a fold over row chunks), from the factor L and
    /// α of the sums over all rows and (cached or recomputed) Φ: g_ir = G^sin_ir cos θ_ir −
    /// G^cos_ir sin θ_ir with G = ΦA⁻¹ − rαᵀ and r = (y − Φα)/σn², at a cost of 2n(2m)² + 2nmD
    /// flops.
    pub(crate) fn local_gradient(&self, ws: &mut Workspace, first: &FirstPass) -> DMatrix<f64> {
        let (d, m) = (self.x.ncols(), self.m);
        let FirstPass {
            posterior: WeightPosterior {
                l, alpha, omega, ..
            },
            hyper: h,
            cached: cache,
            ..
        } = first;
        let cache = *cache;
        let k = 2 * m;
        let sn2 = h.noise_variance;
        let design = Design {
            x: self.x,
            centre: &self.centre,
            omega,
        };
        self.plan.map_reduce(
            ws,
            cache,
            &self.threads,
            |(start, len), buffers, sums, cached, first| {
                let ChunkBuffers {
                    phi: own,
                    centred,
                    solved,
                    r,
                } = buffers;
                let d_omega = &mut sums.d_omega;
                let phi = chunk_design(&design, (start, len), cached, own, centred);
                // r = (y − Φα)/σn² = K⁻¹y on these rows, while Φ is copied for the solves.
                linalg::resize(solved, len, k);
                linalg::resize(r, len, 1);
                copy_and_residual(
                    phi,
                    &self.y.as_slice()[start..start + len],
                    alpha.as_slice(),
                    sn2,
                    solved,
                    r.as_mut_slice(),
                );
                // ΦA⁻¹ for this chunk, by right-side triangular solves with L.
                linalg::right_solve_cholesky(solved, l, Par::Seq);
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
                linalg::resize(d_omega, m, d);
                linalg::gemm(
                    view_mut(d_omega),
                    !first,
                    g.transpose(),
                    view(centred),
                    1.0,
                    Par::Seq,
                );
            },
            DMatrix::zeros(m, d),
            |d_omega, sums| *d_omega += &sums.d_omega,
        )
    }

    /// ∇θ from ∂/∂Ω (m×D, summed over all rows), the first pass and the entries of σ0 and σn
    /// ([`SsgpEvidence::variance_gradient`]): ∂/∂log ℓ_d = −Σ_r Ω_rd ∂/∂Ω_rd and
    /// ∂/∂W_rd = ∂/∂Ω_rd / ℓ_d.
    pub(crate) fn finalize_gradient(
        &self,
        first: &FirstPass,
        d_omega: &DMatrix<f64>,
        variances: [f64; 2],
    ) -> DVector<f64> {
        let (d, m) = (self.x.ncols(), self.m);
        let FirstPass {
            posterior: WeightPosterior { omega, .. },
            hyper: h,
            ..
        } = first;
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
        [grad[d], grad[d + 1]] = variances;
        grad
    }

    /// ∂/∂log σ0 and ∂/∂p_n of eq. 8 from the first pass alone: σ0 and σn enter through
    /// λ = mσn²/σ0² and the explicit terms, with tr A⁻¹ = ‖L⁻¹‖²_F (O(m³)) — no pass over the
    /// rows.
    pub(crate) fn variance_gradient(&self, first: &FirstPass) -> [f64; 2] {
        let FirstPass {
            posterior: WeightPosterior { l, alpha, .. },
            hyper: h,
            noise_derivative,
            q,
            lambda,
            n,
            ..
        } = first;
        let (q, lambda, n) = (*q, *lambda, *n);
        let m = self.m as f64;
        let sn2 = h.noise_variance;
        let mut l_inv = self.inverse.lock().unwrap_or_else(|p| p.into_inner());
        linalg::invert_lower_in(&mut l_inv, l, self.par);
        let trace_a_inv = l_inv.norm_squared();
        let d_lambda = alpha.norm_squared() / (2.0 * sn2) + 0.5 * trace_a_inv - m / lambda;
        let d_sn2 = -q / (2.0 * sn2 * sn2) + n as f64 / (2.0 * sn2) + d_lambda * lambda / sn2;
        [-2.0 * lambda * d_lambda, d_sn2 * noise_derivative]
    }

    /// The sums of eq. 8 over this evidence's rows at θ's ℓ and W (its σ0², σn² play no part):
    /// one pass over the rows, n(2m)² + 4nmD flops.
    ///
    /// # Errors
    /// As [`SsgpEvidence::unpack`].
    pub(crate) fn sums_at(&self, theta: &DVector<f64>) -> Result<DataSums> {
        let point = self.point(theta, false)?;
        Ok(self.local_sums(&point, &mut self.workspace()))
    }

    /// −log p(y|θ) and its [`SsgpEvidence::variance_gradient`] from `sums` taken at θ's ℓ and W
    /// ([`SsgpEvidence::sums_at`]): O(m³), the same bits as the value and those two entries of
    /// the gradient from the rows.
    ///
    /// # Errors
    /// As [`SsgpEvidence::value`].
    pub(crate) fn value_and_variance_gradient(
        &self,
        theta: &DVector<f64>,
        sums: DataSums,
    ) -> Result<(f64, [f64; 2])> {
        let first = self.finalize(self.point(theta, false)?, sums)?;
        Ok((first.value, self.variance_gradient(&first)))
    }
}

/// What the design matrix of an evidence's rows is made of: the inputs `x` (n×D), their centre
/// (D) and the scaled frequencies Ω (m×D).
pub(super) struct Design<'a> {
    pub x: &'a DMatrix<f64>,
    pub centre: &'a DVector<f64>,
    pub omega: &'a DMatrix<f64>,
}

/// The sums of a first pass over `plan`'s rows, a fold over their chunks
/// ([`RowPlan::map_reduce`] with the workspace `ws`, its first `cached` chunks of Φ kept there,
/// on `threads`): the lower triangle of ΦᵀΦ (2m×2m, in the buffer of the last evaluation's
/// factor when it was handed back) and ΦᵀY (2m×P) for the centred targets `y` (n×P), at a cost
/// of n(2m)² + 4nmP + 4nmD flops. One output's evidence and the multi-output one take theirs so.
pub(super) fn design_sums(
    plan: &RowPlan,
    (ws, cached, threads): (&mut Workspace, usize, &linalg::Threads),
    design: &Design<'_>,
    y: MatRef<'_>,
) -> (DMatrix<f64>, DMatrix<f64>) {
    let (k, p) = (2 * design.omega.nrows(), y.ncols());
    let mut total = std::mem::replace(&mut ws.factor, DMatrix::zeros(0, 0));
    linalg::resize(&mut total, k, k);
    total.fill(0.0);
    plan.map_reduce(
        ws,
        cached,
        threads,
        |(start, len), buffers, sums, cached, first| {
            let ChunkBuffers {
                phi: own, centred, ..
            } = buffers;
            let BlockSums { a, b, .. } = sums;
            let phi = cached.unwrap_or(own);
            let rows = linalg::rows_view(design.x, start, len);
            design_matrix_into(rows, design.centre, design.omega, phi, centred, Par::Seq);
            linalg::resize(a, k, k);
            linalg::resize(b, k, p);
            linalg::syrk_lower(view_mut(a), !first, view(phi), 1.0, Par::Seq);
            linalg::gemm(
                view_mut(b),
                !first,
                view(phi).transpose(),
                y.subrows(start, len),
                1.0,
                Par::Seq,
            );
        },
        (total, DMatrix::zeros(k, p)),
        |(a, b), sums| {
            add_lower(a, &sums.a);
            *b += &sums.b;
        },
    )
}

/// Chunk (start, len)'s Φ in a gradient pass: its `cached` slot, the centred inputs written into
/// `centred`, or else computed into `own` (with them).
pub(super) fn chunk_design<'b>(
    design: &Design<'_>,
    (start, len): (usize, usize),
    cached: Option<&'b mut DMatrix<f64>>,
    own: &'b mut DMatrix<f64>,
    centred: &mut DMatrix<f64>,
) -> &'b DMatrix<f64> {
    let rows = linalg::rows_view(design.x, start, len);
    match cached {
        Some(phi) => {
            centre_rows(rows, design.centre, centred);
            phi
        }
        None => {
            design_matrix_into(rows, design.centre, design.omega, own, centred, Par::Seq);
            own
        }
    }
}

/// Adds the lower triangle (diagonal included) of a block's partial sum of A = ΦᵀΦ to that of
/// `dst` (both k×k; only the lower triangle is read later, so half the additions suffice).
fn add_lower(dst: &mut DMatrix<f64>, block: &DMatrix<f64>) {
    let k = dst.nrows();
    for (j, (out, v)) in dst
        .as_mut_slice()
        .chunks_mut(k)
        .zip(block.as_slice().chunks(k))
        .enumerate()
    {
        for (o, v) in out[j..].iter_mut().zip(&v[j..]) {
            *o += v;
        }
    }
}

/// The column means of `x` (D).
pub(crate) fn input_means(x: &DMatrix<f64>) -> DVector<f64> {
    DVector::from_iterator(x.ncols(), x.column_iter().map(|c| c.mean()))
}

/// The optimiser's parameter scales for `len` parameters whose first `head` are the
/// hyperparameters: 1 for those, and 10·√m for the unit frequencies W after them, the middle of
/// the range measured to work (see the module docs).
pub(crate) fn parameter_scales(len: usize, head: usize, m: usize) -> DVector<f64> {
    let scale = 10.0 * (m as f64).sqrt();
    DVector::from_fn(len, |i, _| if i < head { 1.0 } else { scale })
}

/// Copies Φ (len×k) into `copy` (len×k) and writes r = (y − Φα)/σn² (len) in the same pass over
/// Φ's columns, each read once while it is in cache: r starts as y and takes −α_j·Φ_j column by
/// column in order, as the matrix–vector loop of [`linalg::gemm`] adds them, then is divided by
/// σn² (the same bits as that product followed by the division).
fn copy_and_residual(
    phi: &DMatrix<f64>,
    y: &[f64],
    alpha: &[f64],
    sn2: f64,
    copy: &mut DMatrix<f64>,
    r: &mut [f64],
) {
    let len = y.len();
    r.copy_from_slice(y);
    for ((column, out), &a) in phi
        .as_slice()
        .chunks(len)
        .zip(copy.as_mut_slice().chunks_mut(len))
        .zip(alpha)
    {
        out.copy_from_slice(column);
        let c = -a;
        for (ri, v) in r.iter_mut().zip(column) {
            *ri += c * v;
        }
    }
    for ri in r {
        *ri /= sn2;
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

impl Objective for SsgpEvidence<'_> {
    fn num_params(&self) -> usize {
        let d = self.x.ncols();
        hyperparameters::theta_len(d, if self.fixed.is_some() { 0 } else { self.m })
    }

    /// n, the number of data points.
    fn value_scale(&self) -> f64 {
        self.x.nrows() as f64
    }

    /// 1 for the hyperparameters, 10·√m for the unit frequencies W (see the module docs).
    fn parameter_scales(&self) -> Option<DVector<f64>> {
        Some(parameter_scales(
            self.num_params(),
            self.x.ncols() + 2,
            self.m,
        ))
    }

    fn value_and_gradient(&self, theta: &DVector<f64>) -> Result<(f64, DVector<f64>)> {
        let evaluate = || {
            let mut ws = self.workspace();
            let first = self.first_pass(theta, &mut ws, true)?;
            let gradient = self.gradient(&mut ws, &first);
            ws.factor = first.posterior.l;
            Ok((first.value, gradient))
        };
        // On one of the evaluation's threads, the passes' jobs and the inverse beside the second
        // are handed out from inside the pool (`Threads::install`): two threads, n = 100, m = 50:
        // 0.29 → 0.22 ms; n = 10 000, m = 100: 18.0 → 17.4 ms (9 interleaved rounds, once the work
        // buffers kept their allocation across chunks of 833 and 834 rows: before, on the pool's
        // threads, they were allocated afresh at every turn and the move cost 3 %).
        self.threads.install(evaluate)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fused copy and residual give the bits of the copy, the product r ← y − Φα through
    /// `linalg::gemm` and the division by σn² taken apart (what the second pass did before).
    #[test]
    fn copy_and_residual_is_the_copy_and_the_product_bit_for_bit() {
        for (len, k) in [(1, 2), (7, 6), (300, 40)] {
            let phi = DMatrix::from_fn(len, k, |i, j| ((i * 7 + j * 3) as f64 * 0.37).sin());
            let y: Vec<f64> = (0..len).map(|i| (i as f64 * 0.11).cos()).collect();
            let alpha: Vec<f64> = (0..k).map(|j| 0.3 - j as f64 * 0.05).collect();
            let sn2 = 0.013;
            let (mut copy, mut r) = (DMatrix::zeros(len, k), vec![0.0; len]);
            copy_and_residual(&phi, &y, &alpha, sn2, &mut copy, &mut r);
            let mut expected = DMatrix::from_column_slice(len, 1, &y);
            let a = MatRef::from_column_major_slice(&alpha, k, 1);
            linalg::gemm(view_mut(&mut expected), true, view(&phi), a, -1.0, Par::Seq);
            expected /= sn2;
            assert_eq!(copy, phi, "({len}, {k})");
            assert_eq!(r.as_slice(), expected.as_slice(), "({len}, {k})");
        }
    }

    /// An evidence that keeps its buffers between evaluations (the last factor for the next
    /// total of ΦᵀΦ, L⁻¹'s buffer, the work buffers) gives at each θ the bits a fresh evidence
    /// gives there: value and gradient, the value alone, and the random-feature fit's O(m³)
    /// steps. Several row blocks (n = 2 000, m = 160: four) and one (n = 200).
    #[test]
    fn kept_buffers_give_the_bits_of_a_fresh_evidence() {
        use crate::optim::Objective;
        use crate::params::ParamGuard;
        use rand::SeedableRng;
        use rand_distr::{Distribution, StandardNormal};
        for (n, m) in [(2000, 160), (200, 8)] {
            let d = 3;
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
            let x: DMatrix<f64> = DMatrix::from_fn(n, d, |_, _| StandardNormal.sample(&mut rng));
            let y = DVector::from_fn(n, |i, _| x[(i, 0)].sin() + 0.1 * x[(i, 1)]);
            let data = Dataset::new(x, y).unwrap();
            let params = crate::Ssgp::params(m).seed(3).check().unwrap();
            let kept = params.evidence(&data).unwrap();
            let thetas: Vec<DVector<f64>> = (0..3)
                .map(|s| {
                    let w: DMatrix<f64> =
                        DMatrix::from_fn(m, d, |_, _| StandardNormal.sample(&mut rng));
                    let mut theta = DVector::zeros(d + 2 + m * d);
                    theta[d] = 0.1 * s as f64;
                    theta[d + 1] = -1.0 - 0.3 * s as f64;
                    theta.rows_mut(d + 2, m * d).copy_from_slice(w.as_slice());
                    theta
                })
                .collect();
            for (i, theta) in thetas.iter().enumerate() {
                let fresh = params.evidence(&data).unwrap();
                let (value, gradient) = kept.value_and_gradient(theta).unwrap();
                let (fresh_value, fresh_gradient) = fresh.value_and_gradient(theta).unwrap();
                assert_eq!(value.to_bits(), fresh_value.to_bits(), "n = {n}, θ {i}");
                assert_eq!(gradient, fresh_gradient, "n = {n}, θ {i}");
                assert_eq!(kept.value(theta).unwrap().to_bits(), value.to_bits());
                let sums = kept.sums_at(theta).unwrap();
                let steps = kept
                    .value_and_variance_gradient(theta, sums.clone())
                    .unwrap();
                let again = kept.value_and_variance_gradient(theta, sums).unwrap();
                assert_eq!(steps.0.to_bits(), value.to_bits(), "n = {n}, θ {i}");
                assert_eq!(steps.1, [gradient[d], gradient[d + 1]], "n = {n}, θ {i}");
                assert_eq!(again.1, steps.1, "n = {n}, θ {i}");
            }
        }
    }

    /// A block's partial sum of ΦᵀΦ is added to the lower triangle, diagonal included, and the
    /// upper one is left untouched.
    #[test]
    fn a_partial_sum_is_added_to_the_lower_triangle_only() {
        for k in [1, 5, 40] {
            let block = DMatrix::from_fn(k, k, |i, j| ((i * 7 + j * 3) as f64 * 0.37).sin());
            let start = DMatrix::from_fn(k, k, |i, j| (i + 2 * j) as f64);
            let mut a = start.clone();
            add_lower(&mut a, &block);
            let expected = DMatrix::from_fn(k, k, |i, j| {
                start[(i, j)] + if i >= j { block[(i, j)] } else { 0.0 }
            });
            assert_eq!(a, expected, "k = {k}");
        }
    }
}
