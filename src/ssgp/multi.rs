//! SSGP with P outputs on shared spectral points (as Incremental SSGP learns the torques of all
//! joints): one design matrix Φ, the lengthscales, the spectral points and the ratio
//! ρ = σn²/σ0² shared — so λ = mρ and **one** factor of A = ΦᵀΦ + λI — with a signal variance
//! σ0p² per output (outputs differ in size) and σnp² = ρσ0p².
//!
//! Each output has SSGP's evidence (eq. 8) with its own B column b_p = Φᵀy_p, v_p = L⁻¹b_p,
//! α_p = L⁻ᵀv_p, and the evidence of the P outputs is their sum:
//! $$-\log p(Y|θ) = \sum_p \Big[\frac{y_p^⊤y_p - \lVert v_p\rVert^2}{2σ_{np}^2} + \frac n2\log 2πσ_{np}^2\Big] + P\Big(\sum_i \log L_{ii} - m\log λ\Big).$$
//! Its gradient with respect to the design matrix is ∂/∂Φ = PΦA⁻¹ − Σ_p r_pα_pᵀ with
//! r_p = (y_p − Φα_p)/σnp², chained through cos/sin into Ω = W ⊘ ℓ as for one output
//! ([`super::SsgpEvidence`]); σ0p and ρ enter through σnp² = ρσ0p² and λ = mρ. Cost per
//! evaluation: n(2m)² for ΦᵀΦ, 2n(2m)² for ΦA⁻¹, O(nmP) for B, R and RαᵀP, O(nmD) for the phases,
//! O(m³) for the factor: O(nm² + nmP), one factorisation whatever P.
//!
//! **Parameter layout**: θ = [log ℓ (D), log σ0_1 … log σ0_P, p_ρ, vec(W)] with
//! ρ = floor + e^{2p_ρ} (the training settings' noise floor bounds the **ratio** σn²/σ0² here,
//! and so does their relative floor f, default 1e-4: the floor is max(noise floor, f), so that
//! σnp² ≥ f·σ0p² for every output and noise-free outputs fit, as with one output),
//! W m×D column by column (left out with fixed spectral points). At the same θ the evidence and
//! its gradient are the sums of the P single-output ones at θ_p = [log ℓ, log σ0p, log σnp, W]
//! (mapped by the chain rule for σ0p and p_ρ; tested).
//!
//! ```
//! use ssgp::nalgebra::{DMatrix, DVector};
//! use ssgp::optim::Objective;
//! use ssgp::ssgp::{MultiSsgpHyperparameters, Ssgp};
//! use ssgp::ParamGuard;
//!
//! let x = DMatrix::from_fn(40, 2, |i, d| ((i * (d + 3)) % 17) as f64 / 4.0);
//! let y = DMatrix::from_fn(40, 2, |i, p| (x[(i, 0)] + p as f64).sin() + x[(i, 1)].cos());
//! let params = Ssgp::params(6).check()?;
//! let evidence = params.multi_evidence(&x, &y, None)?;
//! let theta = evidence.pack(&MultiSsgpHyperparameters {
//!     lengthscales: DVector::from_element(2, 1.0),
//!     signal_variances: DVector::from_vec(vec![1.0, 1.5]),
//!     noise_ratio: 0.1,
//!     unit_frequencies: DMatrix::from_fn(6, 2, |r, d| (r as f64 - 2.5) * (d as f64 + 0.5)),
//! })?;
//! let (value, gradient) = evidence.value_and_gradient(&theta)?; // −log p(Y|θ) and ∇θ
//! assert_eq!(gradient.len(), 2 + 2 + 1 + 6 * 2);                 // [log ℓ, log σ0p, p_ρ, vec(W)]
//! assert!(value.is_finite());
//! # Ok::<(), ssgp::Error>(())
//! ```

use super::chunks::{ChunkBuffers, RowPlan, Workspace};
use super::evidence::{chunk_design, design_sums, Design};
use super::features::scaled_frequencies;
use super::multi_posterior::FittedMultiSsgp;
use super::{SsgpParams, ValidSsgpParams};
use crate::data::{Dataset, InputColumns, MultiDataset};
use crate::error::{Error, Result};
use crate::hyperparameters::NoiseParam;
use crate::hyperparameters::{check_block, Hyperparameters};
use crate::linalg::{self, view, view_mut};
use crate::linalg::{MatRef, Par};
use crate::optim::{Objective, OptimReport};
use crate::params::ParamGuard;
use crate::termination::TrainingSummary;
use nalgebra::{DMatrix, DVector};
use std::sync::{Mutex, MutexGuard};

/// The multi-output SSGP's hyperparameters in natural units.
#[derive(Debug, Clone, PartialEq)]
pub struct MultiSsgpHyperparameters {
    /// Lengthscales ℓ (D), shared.
    pub lengthscales: DVector<f64>,
    /// Signal variances σ0p² (P), one per output.
    pub signal_variances: DVector<f64>,
    /// The ratio ρ = σnp²/σ0p², shared (λ = mρ).
    pub noise_ratio: f64,
    /// Unit frequencies W (m×D), shared; spectral points s_r = W_r ⊘ (2πℓ).
    pub unit_frequencies: DMatrix<f64>,
}

impl MultiSsgpHyperparameters {
    /// The noise variances σnp² = ρσ0p² (P).
    pub fn noise_variances(&self) -> DVector<f64> {
        &self.signal_variances * self.noise_ratio
    }

    /// Whether the lengthscales and signal variances are positive and finite and the noise
    /// ratio finite and above `floor`.
    fn is_valid_above(&self, floor: f64) -> bool {
        self.lengthscales
            .iter()
            .chain(self.signal_variances.iter())
            .all(|v| *v > 0.0 && v.is_finite())
            && self.noise_ratio > floor
            && self.noise_ratio.is_finite()
    }
}

/// What one evaluation leaves: the value, the per-output terms and the posterior.
pub(crate) struct MultiPass {
    pub(crate) value: f64,
    /// Each output's −log p(y_p|θ_p) (P): they sum to `value`.
    pub(crate) per_output: DVector<f64>,
    pub(crate) hyper: MultiSsgpHyperparameters,
    /// L (2m×2m, lower).
    pub(crate) l: DMatrix<f64>,
    /// α = A⁻¹B (2m×P).
    pub(crate) alpha: DMatrix<f64>,
    /// B = Φᵀ(Y − 1ȳᵀ) (2m×P).
    pub(crate) rhs: DMatrix<f64>,
    pub(crate) omega: DMatrix<f64>,
    /// q_p = y_pᵀy_p − ‖v_p‖² (P).
    q: DVector<f64>,
    /// dρ/dp_ρ.
    ratio_derivative: f64,
    /// How many leading chunks of Φ pass 1 kept in the workspace.
    cached: usize,
}

/// The multi-output evidence θ ↦ (−log p(Y|θ), ∇θ) on a data set (see the [module docs](self)).
pub struct MultiSsgpEvidence<'a> {
    x: &'a DMatrix<f64>,
    /// Y centred by its column means (n×P).
    y: DMatrix<f64>,
    centre: DVector<f64>,
    m: usize,
    fixed: Option<DMatrix<f64>>,
    noise: NoiseParam,
    par: Par,
    plan: RowPlan,
    threads: linalg::Threads,
    cache_bytes: usize,
    /// Buffers kept between evaluations, as [`super::SsgpEvidence`]'s.
    workspace: Mutex<Workspace>,
    /// L⁻¹'s buffer (tr A⁻¹ beside the gradient pass), kept between evaluations.
    inverse: Mutex<DMatrix<f64>>,
}

impl<'a> MultiSsgpEvidence<'a> {
    /// The evidence on inputs `x` (n×D, the used columns) and targets `y` (n×P): both centred
    /// on their column means; `fixed` holds W when the spectral points are not learned.
    pub(crate) fn new(
        x: &'a DMatrix<f64>,
        y: &DMatrix<f64>,
        params: &ValidSsgpParams,
        fixed: Option<DMatrix<f64>>,
    ) -> Self {
        let means: Vec<f64> = y.column_iter().map(|c| c.mean()).collect();
        let y = DMatrix::from_fn(y.nrows(), y.ncols(), |i, p| y[(i, p)] - means[p]);
        Self {
            x,
            y,
            centre: super::evidence::input_means(x),
            m: params.m,
            fixed,
            noise: params.training.ratio_noise(),
            par: linalg::par(params.training.threads),
            plan: RowPlan::for_work(x.nrows(), params.m.saturating_mul(2), params.chunk_rows),
            threads: linalg::Threads::new(params.training.threads),
            cache_bytes: params.cache_bytes,
            workspace: Mutex::new(Workspace::default()),
            inverse: Mutex::new(DMatrix::zeros(0, 0)),
        }
    }

    fn outputs(&self) -> usize {
        self.y.ncols()
    }

    /// The bytes one evaluation with gradient holds at its peak beyond the data
    /// ([`multi_working_bytes`]).
    pub(crate) fn working_bytes(&self) -> usize {
        multi_working_bytes(
            &self.plan,
            self.x.ncols(),
            self.outputs(),
            self.m,
            (&self.threads, self.cache_bytes),
        )
    }

    /// The inputs' centre c (D).
    pub(crate) fn centre(&self) -> &DVector<f64> {
        &self.centre
    }

    /// Packs natural hyperparameters into θ, at exactly these values: ρ = floor + e^{2p_ρ} must
    /// lie above the ratio's floor (the larger of the settings' noise floor and relative
    /// floor, see the [module docs](self)).
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] for wrong shapes, [`Error::InvalidParameter`] for a
    /// non-positive lengthscale or variance or a ratio that is not positive and finite, or naming
    /// `noise_floor` for a ratio at or below the floor.
    pub fn pack(&self, h: &MultiSsgpHyperparameters) -> Result<DVector<f64>> {
        // A positive finite ratio at or below the floor is the floor's to name; any other bad
        // value, and the shapes, are `pack_start`'s.
        let exact = (h.noise_ratio > 0.0 && h.noise_ratio.is_finite())
            .then(|| {
                self.noise.exact_param(
                    h.noise_ratio,
                    "the noise ratio ρ = σn²/σ0²",
                    "lower the floor to condition at it: it is the larger of `noise_floor` and \
                     `relative_noise_floor` (1e-4 by default; `.relative_noise_floor(0.0)` for \
                     none)",
                )
            })
            .transpose()?;
        let mut theta = self.pack_start(h)?;
        if let Some(p_rho) = exact {
            theta[self.x.ncols() + self.outputs()] = p_rho;
        }
        Ok(theta)
    }

    /// θ of a training start at natural hyperparameters: as [`Self::pack`], except that a ratio
    /// within 10⁻³·floor above the floor starts at floor + 10⁻³·floor ([`NoiseParam::param`]).
    ///
    /// # Errors
    /// As [`Self::pack`], but [`Error::InvalidParameter`] naming `hyperparameters` for a ratio at
    /// or below the floor.
    pub(crate) fn pack_start(&self, h: &MultiSsgpHyperparameters) -> Result<DVector<f64>> {
        let (d, p) = (self.x.ncols(), self.outputs());
        for (what, expected, found) in [
            ("lengthscales", d, h.lengthscales.len()),
            (
                "signal variances (one per output)",
                p,
                h.signal_variances.len(),
            ),
        ] {
            if expected != found {
                return Err(Error::DimensionMismatch {
                    what,
                    expected,
                    found,
                });
            }
        }
        if !h.is_valid_above(self.noise.floor) {
            return Err(Error::InvalidParameter {
                name: "hyperparameters",
                reason: "lengthscales and variances must be positive and finite, the noise ratio above its floor".into(),
            });
        }
        let block = self.fixed.is_none().then_some(&h.unit_frequencies);
        if let Some(w) = block {
            if w.shape() != (self.m, d) {
                return Err(Error::DimensionMismatch {
                    what: "unit frequencies (m×D entries)",
                    expected: self.m * d,
                    found: w.len(),
                });
            }
        }
        let mut theta = DVector::zeros(self.num_params());
        for i in 0..d {
            theta[i] = h.lengthscales[i].ln();
        }
        for q in 0..p {
            theta[d + q] = 0.5 * h.signal_variances[q].ln();
        }
        theta[d + p] = self.noise.param(h.noise_ratio);
        if let Some(w) = block {
            theta
                .rows_mut(d + p + 1, self.m * d)
                .copy_from_slice(w.as_slice());
        }
        Ok(theta)
    }

    /// Unpacks θ: the hyperparameters and dρ/dp_ρ.
    fn unpack(&self, theta: &DVector<f64>) -> Result<(MultiSsgpHyperparameters, f64)> {
        if theta.len() != self.num_params() {
            return Err(Error::DimensionMismatch {
                what: "multi-output SSGP parameter vector",
                expected: self.num_params(),
                found: theta.len(),
            });
        }
        crate::data::check_finite_vector("multi-output SSGP parameter vector", theta)?;
        let (d, p, m) = (self.x.ncols(), self.outputs(), self.m);
        let lengthscales = DVector::from_fn(d, |i, _| theta[i].exp());
        let signal_variances = DVector::from_fn(p, |q, _| (2.0 * theta[d + q]).exp());
        let noise_ratio = self.noise.variance(theta[d + p]);
        let ratio_derivative = self.noise.variance_derivative(theta[d + p]);
        let unit_frequencies = match &self.fixed {
            Some(w) => w.clone(),
            None => DMatrix::from_column_slice(m, d, &theta.as_slice()[d + p + 1..]),
        };
        let h = MultiSsgpHyperparameters {
            lengthscales,
            signal_variances,
            noise_ratio,
            unit_frequencies,
        };
        if !h.is_valid_above(0.0) {
            return Err(Error::InvalidParameter {
                name: "parameters",
                reason: "a lengthscale or variance under- or overflows".into(),
            });
        }
        Ok((h, ratio_derivative))
    }

    /// The buffers kept between evaluations.
    fn workspace(&self) -> MutexGuard<'_, Workspace> {
        self.workspace.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Pass 1 alone (no gradient to follow): see [`MultiSsgpEvidence::first_pass_in`].
    pub(crate) fn first_pass(&self, theta: &DVector<f64>) -> Result<MultiPass> {
        let mut ws = self.workspace();
        self.first_pass_in(theta, &mut ws, false)
    }

    /// Pass 1: A = ΦᵀΦ + λI = LLᵀ, B = ΦᵀY, v, α and the value. The sums over the rows are
    /// taken as one output's ([`super::SsgpEvidence`]): the row plan's blocks of chunks
    /// ([`super::chunks`]), folded in block order (the same bits on any number of threads), the
    /// last evaluation's factor reused as the total of ΦᵀΦ; with `want_gradient`, the leading
    /// chunks of Φ the cache budget allows are kept for the gradient pass.
    fn first_pass_in(
        &self,
        theta: &DVector<f64>,
        ws: &mut Workspace,
        want_gradient: bool,
    ) -> Result<MultiPass> {
        let (hyper, ratio_derivative) = self.unpack(theta)?;
        let (m, k, p, n) = (self.m, 2 * self.m, self.outputs(), self.x.nrows());
        let omega = scaled_frequencies(&hyper.unit_frequencies, &hyper.lengthscales);
        let cached = if want_gradient {
            self.plan.cached_chunks(self.cache_bytes)
        } else {
            0
        };
        let design = Design {
            x: self.x,
            centre: &self.centre,
            omega: &omega,
        };
        let y = view(&self.y);
        let (mut a, b) = design_sums(&self.plan, (ws, cached, &self.threads), &design, y);
        let lambda = m as f64 * hyper.noise_ratio;
        for i in 0..k {
            a[(i, i)] += lambda;
        }
        linalg::cholesky_in_place_lower(&mut a, "A = ΦᵀΦ + (mσn²/σ0²)I", self.par)?;
        let l = a;
        let mut v = b.clone();
        linalg::solve_lower(view(&l), view_mut(&mut v), self.par);
        let log_det_half: f64 = (0..k).map(|i| l[(i, i)].ln()).sum();
        let shared = log_det_half - m as f64 * lambda.ln();
        let sn2 = hyper.noise_variances();
        let q = DVector::from_fn(p, |j, _| {
            self.y.column(j).norm_squared() - v.column(j).norm_squared()
        });
        let per_output = DVector::from_fn(p, |j, _| {
            q[j] / (2.0 * sn2[j])
                + 0.5 * n as f64 * (2.0 * std::f64::consts::PI * sn2[j]).ln()
                + shared
        });
        let value = per_output.sum();
        if !value.is_finite() {
            return Err(Error::NonFiniteObjective {
                what: format!("−log p(Y|θ) = {value}"),
            });
        }
        let mut alpha = v;
        linalg::solve_lower_transpose(view(&l), view_mut(&mut alpha), self.par);
        Ok(MultiPass {
            value,
            per_output,
            hyper,
            l,
            alpha,
            rhs: b,
            omega,
            q,
            ratio_derivative,
            cached,
        })
    }

    /// ∂/∂Ω = gᵀX (m×D) over the rows, a fold over the same blocks of chunks as pass 1 (Φ from
    /// its cache, or recomputed), and tr A⁻¹ = ‖L⁻¹‖²_F beside it on the evidence's threads:
    /// G = PΦA⁻¹ − RAᵀ with R = (Y − ΦA)/σn² column by column (A = α here), chained through
    /// cos/sin into g over G's cosine block.
    fn local_gradient_and_trace(
        &self,
        ws: &mut Workspace,
        first: &MultiPass,
    ) -> (DMatrix<f64>, f64) {
        let (m, k, p, d) = (self.m, 2 * self.m, self.outputs(), self.x.ncols());
        let sn2 = first.hyper.noise_variances();
        let design = Design {
            x: self.x,
            centre: &self.centre,
            omega: &first.omega,
        };
        let pass = || {
            self.plan.map_reduce(
                ws,
                first.cached,
                &self.threads,
                |(start, len), buffers, sums, cached, first_chunk| {
                    let ChunkBuffers {
                        phi: own,
                        centred,
                        solved,
                        r,
                    } = buffers;
                    let phi = chunk_design(&design, (start, len), cached, own, centred);
                    linalg::resize(solved, len, k);
                    solved.copy_from(phi);
                    linalg::right_solve_cholesky(solved, &first.l, Par::Seq);
                    *solved *= p as f64;
                    linalg::resize(r, len, p);
                    r.copy_from(&self.y.rows(start, len));
                    linalg::gemm(
                        view_mut(r),
                        true,
                        view(phi),
                        view(&first.alpha),
                        -1.0,
                        Par::Seq,
                    );
                    for j in 0..p {
                        r.column_mut(j).scale_mut(1.0 / sn2[j]);
                    }
                    linalg::gemm(
                        view_mut(solved),
                        true,
                        view(r),
                        view(&first.alpha).transpose(),
                        -1.0,
                        Par::Seq,
                    );
                    chain_over_cosine_block(solved, phi, m);
                    let g = MatRef::from_column_major_slice(&solved.as_slice()[..len * m], len, m);
                    linalg::resize(&mut sums.d_omega, m, d);
                    linalg::gemm(
                        view_mut(&mut sums.d_omega),
                        !first_chunk,
                        g.transpose(),
                        view(centred),
                        1.0,
                        Par::Seq,
                    );
                },
                DMatrix::zeros(m, d),
                |d_omega, sums| *d_omega += &sums.d_omega,
            )
        };
        let trace = || {
            let mut l_inv = self.inverse.lock().unwrap_or_else(|p| p.into_inner());
            linalg::invert_lower_in(&mut l_inv, &first.l, self.par);
            l_inv.norm_squared()
        };
        self.threads.join(pass, trace)
    }

    /// Pass 2: ∇θ (see the [module docs](self)).
    fn gradient(&self, ws: &mut Workspace, first: &MultiPass) -> DVector<f64> {
        let (m, p, n, d) = (self.m, self.outputs(), self.x.nrows(), self.x.ncols());
        let h = &first.hyper;
        let sn2 = h.noise_variances();
        let (d_omega, trace_a_inv) = self.local_gradient_and_trace(ws, first);
        let lambda = m as f64 * h.noise_ratio;
        let d_lambda = (0..p)
            .map(|j| first.alpha.column(j).norm_squared() / (2.0 * sn2[j]))
            .sum::<f64>()
            + p as f64 * (0.5 * trace_a_inv - m as f64 / lambda);
        let d_sn2 = DVector::from_fn(p, |j, _| {
            -first.q[j] / (2.0 * sn2[j] * sn2[j]) + n as f64 / (2.0 * sn2[j])
        });
        let mut grad = DVector::zeros(self.num_params());
        for dd in 0..d {
            grad[dd] = -first.omega.column(dd).dot(&d_omega.column(dd));
            if self.fixed.is_none() {
                for rr in 0..m {
                    grad[d + p + 1 + rr + dd * m] = d_omega[(rr, dd)] / h.lengthscales[dd];
                }
            }
        }
        for j in 0..p {
            grad[d + j] = 2.0 * sn2[j] * d_sn2[j];
        }
        let d_ratio = (0..p)
            .map(|j| d_sn2[j] * h.signal_variances[j])
            .sum::<f64>()
            + m as f64 * d_lambda;
        grad[d + p] = first.ratio_derivative * d_ratio;
        grad
    }
}

/// [`Error::Allocation`] unless `bytes` of an evaluation's buffers can be allocated (m comes from
/// the caller: a large one is an error, never an abort).
fn check_multi_buffers(bytes: usize) -> Result<()> {
    linalg::check_allocation(
        bytes,
        "the multi-output SSGP's buffers (2m×2m factors and row chunks of the design matrix); use fewer spectral points m",
    )
}

/// The bytes an evaluation with gradient of the multi-output evidence holds at its peak beyond
/// the data, for D inputs, P outputs and k = 2m, on `plan`'s rows with `threads` and a cache of
/// at most `cache_bytes`: one output's ([`super::SsgpEvidence`]'s working bytes) with B, v, α
/// and its copy (4kP) and each set of chunk buffers' R (chunk×P) —
/// 8·[(blocks + 3)·k² + 4kP + sets·chunk·(2k + D + P) + 4mD] plus the design-matrix cache;
/// `usize::MAX` when that overflows.
fn multi_working_bytes(
    plan: &RowPlan,
    d: usize,
    p: usize,
    m: usize,
    (threads, cache_bytes): (&linalg::Threads, usize),
) -> usize {
    let k = m.saturating_mul(2);
    let square = k
        .saturating_mul(k)
        .saturating_mul(plan.blocks.saturating_add(3));
    let outputs = k.saturating_mul(p).saturating_mul(4);
    let per_set = plan
        .largest_chunk()
        .saturating_mul(k.saturating_mul(2).saturating_add(d).saturating_add(p))
        .saturating_mul(plan.workers(threads));
    let frequencies = m.saturating_mul(d).saturating_mul(4);
    let cache = cache_bytes.min(plan.n.saturating_mul(k).saturating_mul(8));
    square
        .saturating_add(outputs)
        .saturating_add(per_set)
        .saturating_add(frequencies)
        .saturating_mul(8)
        .saturating_add(cache)
}

/// The chain rule through cos/sin over the P outputs' G (len×2m, `g`): overwrites its cosine
/// block with g_ir = G^sin_ir cos θ_ir − G^cos_ir sin θ_ir from Φ's (len×2m), entry by entry
/// (each reads only its own pair of G).
fn chain_over_cosine_block(g: &mut DMatrix<f64>, phi: &DMatrix<f64>, m: usize) {
    let len = phi.nrows();
    let (g_cos, g_sin) = g.as_mut_slice().split_at_mut(len * m);
    let (cos, sin) = phi.as_slice().split_at(len * m);
    for (((gc, gs), c), s) in g_cos
        .chunks_mut(len)
        .zip(g_sin.chunks(len))
        .zip(cos.chunks(len))
        .zip(sin.chunks(len))
    {
        for (((gc, gs), c), s) in gc.iter_mut().zip(gs).zip(c).zip(s) {
            *gc = gs * c - *gc * s;
        }
    }
}

impl Objective for MultiSsgpEvidence<'_> {
    fn num_params(&self) -> usize {
        let block = if self.fixed.is_some() {
            0
        } else {
            self.m * self.x.ncols()
        };
        self.x.ncols() + self.outputs() + 1 + block
    }

    /// nP, the number of targets.
    fn value_scale(&self) -> f64 {
        (self.x.nrows() * self.outputs()) as f64
    }

    /// 1 for the hyperparameters, 10·√m for the unit frequencies W (as for one output).
    fn parameter_scales(&self) -> Option<DVector<f64>> {
        let head = self.x.ncols() + self.outputs() + 1;
        Some(super::evidence::parameter_scales(
            self.num_params(),
            head,
            self.m,
        ))
    }

    fn value_and_gradient(&self, theta: &DVector<f64>) -> Result<(f64, DVector<f64>)> {
        // As one output's: on one of the evaluation's threads, the last factor handed back.
        let evaluate = || {
            let mut ws = self.workspace();
            let first = self.first_pass_in(theta, &mut ws, true)?;
            let gradient = self.gradient(&mut ws, &first);
            ws.factor = first.l;
            Ok((first.value, gradient))
        };
        self.threads.install(evaluate)
    }
}

impl SsgpParams {
    /// Validates the settings and trains SSGP on the P outputs of `data` with shared spectral
    /// points ([`ValidSsgpParams::fit_multi`]).
    ///
    /// # Errors
    /// As [`ParamGuard::check`] and [`ValidSsgpParams::fit_multi`].
    pub fn fit_multi(&self, data: &MultiDataset) -> Result<FittedMultiSsgp> {
        self.check_ref()?.fit_multi(data)
    }
}

impl ValidSsgpParams {
    /// The multi-output evidence of these settings on `data` (all input columns), with W fixed
    /// at `w` when the spectral points are fixed.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for fixed spectral points without `w`;
    /// [`Error::DimensionMismatch`] if `y` has not as many rows as `x` or the fixed `w` is not
    /// m×D; [`Error::NonFinite`] for a NaN or infinity in `x`, `y` or the fixed `w`;
    /// [`Error::Allocation`] if an evaluation's buffers for this m cannot be allocated.
    pub fn multi_evidence<'a>(
        &self,
        x: &'a DMatrix<f64>,
        y: &DMatrix<f64>,
        w: Option<&DMatrix<f64>>,
    ) -> Result<MultiSsgpEvidence<'a>> {
        check_block(
            y,
            (x.nrows(), "targets (rows, one per input row)"),
            (y.ncols(), "targets (columns)"),
            "targets",
        )?;
        crate::data::check_finite("inputs", x)?;
        let fixed = match (self.fixed_spectral_points, w) {
            (false, _) => None,
            (true, Some(w)) => Some(self.checked_fixed_frequencies(w, x.ncols())?),
            (true, None) => {
                return Err(Error::InvalidParameter {
                    name: "fixed_spectral_points",
                    reason: "fixed spectral points need their unit frequencies".into(),
                })
            }
        };
        let evidence = MultiSsgpEvidence::new(x, y, self, fixed);
        check_multi_buffers(evidence.working_bytes())?;
        Ok(evidence)
    }

    /// Trains SSGP on the P outputs of `data` (see [`super::multi`](self) for the model): inputs
    /// constant on `data` left out; start values ℓ by the lengthscale strategy (on the first
    /// output), σ0p² = var y_p, ρ = 1/4; the best of the initial draws of spectral points by
    /// the summed evidence; then nonlinear CG on the summed evidence — checked as one output's
    /// fit is, by the [`super::CalibrationGuard`] of the settings (the default
    /// [`super::CalibrationGuard::Check`]: the learned fit against the random-feature fit on
    /// held-out rows, compared by the outputs' summed MNLP, each output's variances scaled by
    /// its own held-out factor; from 55 held-out rows the learned fit stopped early, its budget
    /// chosen by those rows). On the tables measured (n = 100–3 000, the robot arm example's
    /// 1 000 rows, `ssgp::data::multi_output_suite`) it took 0.8–1.4 times the unchecked fit's
    /// time: the refit's budget is the one the held-out rows chose (about 2.2 times where that
    /// is the whole budget). Each output's LOO diagnostic and check are in
    /// [`FittedMultiSsgp::output_training`]; an output that no fit explains better than its
    /// training mean on the held-out rows keeps that mean, as one output's fit does, and the
    /// others are fitted and checked again without it (a second check, on fewer outputs). A noise bound ([`super::NoiseBound`]) is
    /// not supported here.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a noise bound, or naming `noise_floor` for a floor (on the
    /// noise ratio) above [`MAX_NOISE_FLOOR_RATIO`](crate::params::MAX_NOISE_FLOOR_RATIO);
    /// [`Error::EmptyData`] if every input is constant; [`Error::ConstantTargets`] for a
    /// constant output; [`Error::Scale`] naming an output whose spread is beyond f64's range or
    /// SSGP's ([`super::TARGET_SPREAD`]); [`Error::NotPositiveDefinite`] if A cannot be factored
    /// at the start; [`Error::TrainingFailed`] if training failed (unless
    /// best effort was asked for); [`Error::Allocation`] if the buffers for this m cannot be
    /// allocated.
    pub fn fit_multi(&self, data: &MultiDataset) -> Result<FittedMultiSsgp> {
        if self.noise_bound != super::NoiseBound::None {
            return Err(Error::InvalidParameter {
                name: "noise_bound",
                reason: "the multi-output SSGP has no noise bound".into(),
            });
        }
        self.training.check_noise_floor(
            1.0,
            "a noise ratio σn²/σ0² of one (a multi-output fit's floor bounds that ratio)",
        )?;
        // Each output's spread, as one output's (naming the output): not constant, in f64's
        // range for a Gaussian process and in SSGP's for its gradient.
        let means = data.y_means();
        for (p, column) in data.y().column_iter().enumerate() {
            crate::data::check_spread(column.as_slice(), means[p])
                .and_then(|spread| {
                    super::train::check_ssgp_target_spread(
                        spread,
                        "multiply that output by a power of ten and divide its predictions back",
                    )
                })
                .map_err(|e| match e {
                    Error::Scale { what } => Error::Scale {
                        what: format!("output {p}: {what}"),
                    },
                    other => other,
                })?;
        }
        let first = data.output(0)?;
        let columns = InputColumns::varying(&first)?;
        let x = columns.select(data.x())?.into_owned();
        self.check_initial_frequencies(x.ncols())?;
        check_multi_buffers(MultiSsgpEvidence::new(&x, data.y(), self, None).working_bytes())?;
        let start =
            crate::full_gp::start(&Dataset::new(x.clone(), first.y().clone())?, &self.training)?;
        let mut fitted = self.fit_multi_calibrated(&x, data.y(), &start)?;
        fitted.use_columns(columns);
        Ok(fitted)
    }

    /// The start of a multi-output fit on `x` (n×D, the used columns) and `y` (n×P) from the
    /// lengthscales of `start`: σ0p² = var y_p, ρ = 1/4 (above the floor), the unit frequencies W.
    pub(super) fn multi_start(
        &self,
        y: &DMatrix<f64>,
        start: &Hyperparameters,
        unit_frequencies: DMatrix<f64>,
    ) -> MultiSsgpHyperparameters {
        let n = y.nrows() as f64;
        let signal_variances = DVector::from_fn(y.ncols(), |p, _| {
            let column = y.column(p);
            let mean = column.mean();
            column.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n
        });
        let floor = self.training.ratio_noise().floor;
        MultiSsgpHyperparameters {
            lengthscales: start.lengthscales.clone(),
            signal_variances,
            noise_ratio: (floor + 0.25).max(floor * 1.001),
            unit_frequencies,
        }
    }

    /// The learned multi-output fit on `x` (n×D, the used columns) and `y` (n×P) from `start`'s
    /// lengthscales ([`Self::multi_start`]), the best of the initial draws of spectral points
    /// by the summed evidence, then the optimiser on the summed evidence: the fit with the whole
    /// budget, and the fits a budget of each of the ascending evaluation counts `checkpoints`
    /// would give, from the same run ([`crate::optim::minimize_with_checkpoints`]). Each has its
    /// LOO diagnostics; its columns are all of `x`'s.
    pub(super) fn fit_multi_stages(
        &self,
        x: &DMatrix<f64>,
        y: &DMatrix<f64>,
        start: &Hyperparameters,
        checkpoints: &[usize],
    ) -> Result<(FittedMultiSsgp, Vec<FittedMultiSsgp>)> {
        let w0 =
            self.start_unit_frequencies(x.ncols(), self.training.optim.observer.as_ref(), |w| {
                let evidence = self.multi_evidence(x, y, Some(w))?;
                Ok(evidence
                    .first_pass(&evidence.pack_start(&self.multi_start(y, start, w.clone()))?)?
                    .value)
            })?;
        let evidence = self.multi_evidence(x, y, Some(&w0))?;
        let theta0 = evidence.pack_start(&self.multi_start(y, start, w0))?;
        let (whole, stages) =
            self.training
                .minimize_with_checkpoints(&evidence, theta0, checkpoints)?;
        let fitted = |report: OptimReport| {
            let training = TrainingSummary::new(&report, &InputColumns::all(x.ncols()));
            self.multi_fitted(&evidence, (report.theta, training), y)
        };
        let stages = stages.into_iter().map(fitted).collect::<Result<_>>()?;
        Ok((fitted(whole)?, stages))
    }

    /// The fitted model at θ on `evidence`'s rows (targets `y`) with the summary `training`
    /// (whether ρ ended at its floor set from θ) and every output's LOO diagnostic; its columns
    /// are all of the evidence's inputs.
    pub(super) fn multi_fitted(
        &self,
        evidence: &MultiSsgpEvidence<'_>,
        (theta, mut training): (DVector<f64>, TrainingSummary),
        y: &DMatrix<f64>,
    ) -> Result<FittedMultiSsgp> {
        let columns = InputColumns::all(evidence.x.ncols());
        training.noise_at_floor = self
            .training
            .ratio_noise()
            .at_floor(theta[evidence.x.ncols() + y.ncols()]);
        let pass = evidence.first_pass(&theta)?;
        let means = DVector::from_fn(y.ncols(), |p, _| y.column(p).mean());
        let mut fitted = FittedMultiSsgp::new(
            self,
            pass,
            evidence.centre().clone(),
            (theta, means, training, columns),
        );
        fitted.diagnose(evidence.x, y);
        Ok(fitted)
    }

    /// A fitted multi-output model at exactly the given hyperparameters (for all D inputs),
    /// without training. The noise ratio ρ must lie above its floor, the larger of the noise
    /// floor and the relative floor (10⁻⁴ by default): ρ = floor + e^{2p_ρ} holds no value at or
    /// below it, and the model is not moved to one it does hold — set a lower floor
    /// (`.relative_noise_floor(0.0)` for none) to condition there.
    ///
    /// # Errors
    /// As [`MultiSsgpEvidence::pack`] (naming `noise_floor` for a ratio at or below the floor);
    /// [`Error::NotPositiveDefinite`] if A cannot be factored.
    pub fn condition_multi(
        &self,
        data: &MultiDataset,
        hyper: &MultiSsgpHyperparameters,
    ) -> Result<FittedMultiSsgp> {
        let evidence = self.multi_evidence(data.x(), data.y(), Some(&hyper.unit_frequencies))?;
        let theta = evidence.pack(hyper)?;
        let pass = evidence.first_pass(&theta)?;
        let mut training = TrainingSummary::untrained(pass.value);
        training.noise_at_floor = self
            .training
            .ratio_noise()
            .at_floor(theta[data.dim() + data.outputs()]);
        let mut fitted = FittedMultiSsgp::new(
            self,
            pass,
            evidence.centre().clone(),
            (
                theta,
                data.y_means(),
                training,
                InputColumns::all(data.dim()),
            ),
        );
        fitted.diagnose(data.x(), data.y());
        Ok(fitted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::ParamGuard;
    use rand::SeedableRng;
    use rand_distr::{Distribution, StandardNormal};

    /// On the row plan's blocks of chunks (n = 3 000, m = 100: three blocks of chunks of at most
    /// 400 rows, part of Φ cached) the evidence and its gradient have the same bits on 1, 2 and 3
    /// threads, with the whole of Φ cached or none of it, and over the buffers kept from other
    /// evaluations (θ visited in another order) as on a fresh evidence.
    #[test]
    fn the_same_bits_on_any_threads_cache_and_kept_buffers() {
        let (n, d, m, p) = (3000, 3, 100, 2);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let x: DMatrix<f64> = DMatrix::from_fn(n, d, |_, _| StandardNormal.sample(&mut rng));
        let y = DMatrix::from_fn(n, p, |i, j| {
            (x[(i, j)] * (j + 1) as f64).sin() + 0.1 * x[(i, 2)]
        });
        let thetas: Vec<DVector<f64>> = (0..3)
            .map(|s| {
                let mut theta = DVector::zeros(d + p + 1 + m * d);
                for (j, v) in theta.iter_mut().enumerate().skip(d + p + 1) {
                    *v = StandardNormal.sample(&mut rng);
                    if j % 7 == 0 {
                        *v *= 2.0;
                    }
                }
                theta[d] = 0.1 * s as f64;
                theta[d + 1] = -0.2;
                theta[d + p] = -1.0 - 0.4 * s as f64;
                theta
            })
            .collect();
        let chunk_bytes = 400 * 2 * m * 8;
        let settings = |threads: usize, cache_chunks: usize| {
            crate::Ssgp::params(m)
                .threads(threads)
                .chunk_rows(400)
                .cache_bytes(cache_chunks * chunk_bytes)
                .check()
                .unwrap()
        };
        let reference = settings(1, 4);
        let first = reference.multi_evidence(&x, &y, None).unwrap();
        assert!(first.plan.blocks >= 3 && first.plan.chunks().iter().all(|c| c.len() >= 2));
        let expected: Vec<(f64, DVector<f64>)> = thetas
            .iter()
            .map(|t| {
                reference
                    .multi_evidence(&x, &y, None)
                    .unwrap()
                    .value_and_gradient(t)
                    .unwrap()
            })
            .collect();
        for (threads, cache_chunks) in [(1, 4), (2, 4), (3, 4), (2, 0), (1, 100)] {
            let kept = settings(threads, cache_chunks)
                .multi_evidence(&x, &y, None)
                .unwrap();
            for i in [2, 0, 1, 0] {
                let (value, gradient) = kept.value_and_gradient(&thetas[i]).unwrap();
                let what = format!("θ {i}, {threads} threads, {cache_chunks} chunks cached");
                assert_eq!(value.to_bits(), expected[i].0.to_bits(), "{what}");
                assert_eq!(gradient, expected[i].1, "{what}");
                let alone = kept.first_pass(&thetas[i]).unwrap().value;
                assert_eq!(alone.to_bits(), value.to_bits(), "{what}");
            }
        }
    }
}
