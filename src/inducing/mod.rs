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
//! # The evaluation
//! Both [`factorize`] and [`gradient`] are one pass over the n points in chunks of 256, as
//! SSGP's evidence is: the chunks are grouped into 12, 6, 4, 3, 2 or 1 contiguous blocks chosen
//! from n and m alone, the blocks run in parallel (one job per block, its chunks in order), and
//! their partial sums are added in block order, so an evaluation gives the same bits on any
//! number of threads. Everything a chunk needs stays in the core's cache while its O(m²)
//! per-point steps run as gemms on it, and every n×m matrix is held transposed, one row per
//! point (a chunk is a len×m column-major block, [`Chunked`]), so that the chunk's triangular
//! solves are right-side solves on contiguous columns: pass 1 computes the chunk's rows of
//! $K_{fu}$, $V^⊤ = K_{fu}L_u^{-⊤}$, λ and its share of $VΛ^{-1}V^⊤$ and $VΛ^{-1}y$; pass 2 its
//! $B^⊤$, α, w, $P_V^⊤$, its share of $P_VV^⊤$, $P^⊤ = P_V^⊤L_u^{-1}$ and the sums of
//! $P ∘ K_{uf}$ and $P ∘ G_{uf}$ against the coordinate differences. Only $K_{fu}$ and $V^⊤$
//! (n×m each) are kept between the passes, in buffers reused from one evaluation to the next.
//!
//! Cost: about 7nm² flops in gemms and triangular solves (2nm² in pass 1, 5nm² in pass 2),
//! plus O(nmD) for the kernel and its derivatives; memory O(nm).

mod fitted;
mod greedy;
mod kmeans;
mod objective;
#[cfg(feature = "serde")]
mod saved;
mod settings;

#[cfg(test)]
pub(crate) use fitted::PREDICT_BLOCK;
pub(crate) use fitted::{fitted_methods, Fitted};
use greedy::greedy_inputs;
use kmeans::kmeans;
pub(crate) use objective::{evidence_methods, InducingObjective};
#[cfg(feature = "serde")]
pub(crate) use saved::{saved_methods, SavedWords};
pub use settings::InducingStart;
pub(crate) use settings::{inducing_params, kind, trained_methods, Kind, Settings};

use crate::error::{Error, Result};
use crate::hyperparameters::Decoded;
use crate::kernel::{self, Covariance, Kernel};
use crate::linalg::{self, every_build, Build, Jitter, Threads};
use crate::linalg::{MatMut, MatRef, Par};
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
    /// $K_{fu} = K_{uf}^⊤$ (n×m) chunk by chunk (see [`Chunked`]).
    pub k_fu: Chunked,
    /// The slopes $G_{fu}$ (n×m) of $K_{fu}$, laid out as it; `None` for the squared
    /// exponential, where G = K.
    pub g_fu: Option<Chunked>,
    /// $K_{uu} - δI$, m×m (the jitter-free covariance of the inducing inputs).
    pub k_uu: DMatrix<f64>,
    /// The slopes $G_{uu}$ (m×m) of $K_{uu}$; `None` for the squared exponential.
    pub g_uu: Option<DMatrix<f64>>,
    /// $L_u$, the lower Cholesky factor of $K_{uu}$ (jitter included), m×m.
    pub l_u: DMatrix<f64>,
    /// $V^⊤ = K_{fu}L_u^{-⊤}$ (n×m, $V = L_u^{-1}K_{uf}$) chunk by chunk (see [`Chunked`]).
    pub vt: Chunked,
    /// λ = diag(Λ), n.
    pub lambda: DVector<f64>,
    /// $L_A$, the lower Cholesky factor of $A = I + VΛ^{-1}V^⊤$, m×m.
    pub l_a: DMatrix<f64>,
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

/// Points per chunk: a chunk's rows of K_fu, V^⊤ and one 256×m work matrix stay in the core's
/// cache while every O(nm²) step runs on them.
const CHUNK: usize = 256;
/// The block counts [`blocks`] chooses from, largest first: 12, 6, 4, 3 and 2 blocks keep 2
/// (and most other numbers of) threads equally busy.
const BLOCK_COUNTS: [usize; 6] = [12, 6, 4, 3, 2, 1];
/// The least work (points × m²) worth a block of its own: smaller blocks make the products too
/// small to run at full speed.
const MIN_BLOCK_WORK: f64 = 2e7;

/// The n points cut into contiguous blocks (start, len) of equal size (±1, the longer first):
/// as many (12, 6, 4, 3, 2 or 1) as keep each block's work at least 2·10⁷ points × m². The plan
/// depends on n and m alone, and every sum over the points is taken block by block in block
/// order, so an evaluation gives the same bits on any number of threads.
fn blocks(n: usize, m: usize) -> Vec<(usize, usize)> {
    let per_point = (m as f64) * (m as f64);
    let count = BLOCK_COUNTS
        .into_iter()
        .find(|&b| (n / b) as f64 * per_point >= MIN_BLOCK_WORK)
        .unwrap_or(1)
        .min(n.max(1));
    let (size, extra) = (n / count, n % count);
    let mut start = 0;
    (0..count)
        .map(|p| {
            let len = size + usize::from(p < extra);
            start += len;
            (start - len, len)
        })
        .collect()
}

/// The bytes an evaluation with gradient holds at its peak beyond the data, for n points in D
/// dimensions, m inducing inputs, the kernel `family` and `threads` threads (0: rayon's pool):
/// 8·[(2 + g)·n·m ($K_{fu}$, $V^⊤$ and, for kernels other than the squared exponential, g = 1,
/// their slopes $G_{fu}$) + (blocks + 8)·m² ($K_{uu}$, $G_{uu}$, $L_u$, $L_A$, the m×m distances
/// between the inducing inputs, the gradient's sums M and their temporaries, and each block's
/// sums) + threads·[`CHUNK`]·m (the running blocks' work matrices) + 4n + 2mD];
/// `usize::MAX` when that overflows.
pub(crate) fn working_bytes(
    (n, dim): (usize, usize),
    m: usize,
    family: Kernel,
    threads: usize,
) -> usize {
    let tall = if family == Kernel::SquaredExponential {
        2
    } else {
        3
    };
    let blocks = blocks(n, m).len();
    let columns = n.saturating_mul(m).saturating_mul(tall);
    let squares = m.saturating_mul(m).saturating_mul(blocks.saturating_add(8));
    let running = if threads == 0 {
        rayon::current_num_threads()
    } else {
        threads
    };
    let work = running
        .clamp(1, blocks.max(1))
        .saturating_mul(CHUNK)
        .saturating_mul(m);
    let small = n
        .saturating_mul(4)
        .saturating_add(m.saturating_mul(dim).saturating_mul(2));
    columns
        .saturating_add(squares)
        .saturating_add(work)
        .saturating_add(small)
        .saturating_mul(8)
}

/// The chunks (start, len) of a block (start, len), in order: as few as hold at most [`CHUNK`]
/// points each, of equal size (±1, the longer first).
fn chunks((start, len): (usize, usize)) -> impl Iterator<Item = (usize, usize)> {
    let count = len.div_ceil(CHUNK).max(1);
    let (size, extra) = (len / count, len % count);
    (0..count).map(move |p| {
        let before = p * size + p.min(extra);
        (start + before, size + usize::from(p < extra))
    })
}

/// `data` (`per_point` entries per point, the points in order) cut into the blocks of `plan`.
fn split_points<'a>(
    mut data: &'a mut [f64],
    per_point: usize,
    plan: &[(usize, usize)],
) -> Vec<&'a mut [f64]> {
    plan.iter()
        .map(|&(_, len)| {
            let (head, tail) = std::mem::take(&mut data).split_at_mut(len * per_point);
            data = tail;
            head
        })
        .collect()
}

/// A column-major `rows`×`cols` slice as a mutable view.
fn mat(data: &mut [f64], rows: usize, cols: usize) -> MatMut<'_> {
    MatMut::from_column_major_slice_mut(data, rows, cols)
}

/// An n×m matrix with one row per point ($K_{fu}$, $G_{fu}$ or $V^⊤$) stored chunk by chunk in
/// the plan of [`blocks`] and [`chunks`] for (n, m): the chunk of points (s, len) is the len×m
/// column-major block at entries s·m .. (s + len)·m. Each chunk's triangular solves are then
/// right-side solves ($XL^{-⊤}$, $XL^{-1}$) on contiguous columns, with no copy.
#[derive(Debug, Clone)]
pub(crate) struct Chunked {
    data: Vec<f64>,
    m: usize,
}

impl Chunked {
    /// The len×m block (column major) of the chunk of points (s, len).
    fn chunk(&self, (s, len): (usize, usize)) -> &[f64] {
        &self.data[s * self.m..(s + len) * self.m]
    }
}

/// The buffers of an evaluation kept for the next one behind mutexes: the two n×m matrices
/// ($K_{fu}$ and $V^⊤$) and the blocks' scratch (each block's 256×m work matrix and its m×m
/// sums, up to [`SCRATCH_KEPT`] of them). A fresh buffer costs a page fault per 4 KiB page on
/// first write: for the two matrices about a tenth of an evaluation at n = 10 000, for the
/// scratch (24 blocks of 0.7 MB at m = 200) a few per cent. The contents are always overwritten
/// (sums are handed out zeroed, work matrices as they were left, every entry written before it
/// is read); the evaluation stays a pure function of (data, θ).
#[derive(Default)]
pub(crate) struct Buffers {
    matrices: std::sync::Mutex<Vec<Vec<f64>>>,
    scratch: std::sync::Mutex<Vec<Vec<f64>>>,
}

/// The most scratch buffers [`Buffers`] keeps: the 12 blocks' sums of a pass, alive together
/// when they are added, and the work matrices of the blocks running beside them.
const SCRATCH_KEPT: usize = 32;

impl Buffers {
    /// An n×m [`Chunked`] matrix with unspecified contents (a kept buffer when there is one).
    fn take(&self, n: usize, m: usize) -> Chunked {
        let kept = self.matrices.lock().ok().and_then(|mut spare| spare.pop());
        let mut data = kept.unwrap_or_default();
        data.resize(n * m, 0.0);
        Chunked { data, m }
    }

    /// Keeps `matrix`'s buffer for the next evaluation (at most two are kept).
    fn give(&self, matrix: Chunked) {
        if let Ok(mut spare) = self.matrices.lock() {
            if spare.len() < 2 {
                spare.push(matrix.data);
            }
        }
    }

    /// `len` zeros (a kept scratch buffer when there is one).
    fn zeros(&self, len: usize) -> Vec<f64> {
        let mut data = self.work(len);
        data.fill(0.0);
        data
    }

    /// `len` entries with unspecified contents (a kept scratch buffer when there is one, as it
    /// was left): for a chunk's work matrix, every entry of which is written before it is read.
    fn work(&self, len: usize) -> Vec<f64> {
        let kept = self.scratch.lock().ok().and_then(|mut spare| spare.pop());
        let mut data = kept.unwrap_or_default();
        data.truncate(len);
        data.resize(len, 0.0);
        data
    }

    /// An m×m zero matrix on a kept scratch buffer (see [`Buffers::zeros`]).
    fn zero_matrix(&self, m: usize) -> DMatrix<f64> {
        DMatrix::from_vec(m, m, self.zeros(m * m))
    }

    /// Keeps `data` as scratch for later (up to [`SCRATCH_KEPT`] buffers).
    fn keep(&self, data: Vec<f64>) {
        if let Ok(mut spare) = self.scratch.lock() {
            if spare.len() < SCRATCH_KEPT {
                spare.push(data);
            }
        }
    }
}

impl Clone for Buffers {
    /// A clone keeps no buffers of its own yet.
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl std::fmt::Debug for Buffers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Buffers")
    }
}

/// One block's share of the n-long results of [`factorize`]'s pass: its chunks of K_fu, G_fu (if
/// any) and V^⊤ (m entries per point), λ and y_s.
struct BlockColumns<'a> {
    range: (usize, usize),
    k: &'a mut [f64],
    g: Option<&'a mut [f64]>,
    v: &'a mut [f64],
    lambda: &'a mut [f64],
    ys: &'a mut [f64],
}

/// One block's sums in [`factorize`]: the lower triangle of $V_sV_s^⊤$ (m×m, $V_s = VΛ^{-1/2}$),
/// $V_s y_s$ (m), Σ log λ_i, ‖y_s‖² and Σ (σ0² − ‖V_{:i}‖²).
struct FactorSums {
    a: DMatrix<f64>,
    vy: DMatrix<f64>,
    log_lambda: f64,
    ys2: f64,
    trace: f64,
}

/// Factorises C = Q_ff + Λ of `approx` at decoded θ: x is n×D (with its column medians, the
/// centre of K_uf's distances), y the n centred targets, θ's block the inducing inputs (m×D, in
/// x's coordinates); K_uu gets the jitter of `jitter` (relative to σ0² if so set).
///
/// One pass over the points in chunks of [`CHUNK`], the blocks of [`blocks`] on `threads`: per
/// chunk (len points) its rows of $K_{fu}$ (len×m), $V^⊤ = K_{fu}L_u^{-⊤}$ (len×m, a recursive
/// right-side triangular solve), λ, and the chunk's $V_sV_s^⊤$ (m×m, a symmetric rank-len
/// product of $V_s^⊤ = Λ^{-1/2}V^⊤$) and $V_sy_s$ (m), summed block by block. Then
/// $A = I + \sum V_sV_s^⊤ = L_AL_A^⊤$ and $By_s = L_A^{-1}V_sy_s$: 2nm² flops in gemms, plus
/// O(nmD) for the kernel.
///
/// # Errors
/// [`Error::NotPositiveDefinite`] if $K_{uu}$ or A fails to factor or some λ_i is not positive.
pub(crate) fn factorize(
    (x, x_medians): (&DMatrix<f64>, &DVector<f64>),
    y: &DVector<f64>,
    theta: &Decoded<'_>,
    (family, jitter): (Kernel, &Jitter),
    approx: Approximation,
    (threads, par, buffers): (&Threads, Par, &Buffers),
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

    let zu = kernel::shift_and_scale(pseudo, x_medians, ell);
    let zx = kernel::shift_and_scale(x, x_medians, ell);
    let (nu, nx) = (kernel::row_norms(&zu), kernel::row_norms(&zx));
    let mut k_fu = buffers.take(n, m);
    let mut g_fu = (family != Kernel::SquaredExponential).then(|| Chunked {
        data: vec![0.0; n * m],
        m,
    });
    let mut vt = buffers.take(n, m);
    let mut lambda = DVector::zeros(n);
    let mut ys = DVector::zeros(n);
    let plan = blocks(n, m);
    let mut g_blocks: Vec<Option<&mut [f64]>> = match g_fu.as_mut() {
        Some(g) => split_points(&mut g.data, m, &plan)
            .into_iter()
            .map(Some)
            .collect(),
        None => plan.iter().map(|_| None).collect(),
    };
    let jobs: Vec<BlockColumns<'_>> = split_points(&mut k_fu.data, m, &plan)
        .into_iter()
        .zip(split_points(&mut vt.data, m, &plan))
        .zip(split_points(lambda.as_mut_slice(), 1, &plan))
        .zip(split_points(ys.as_mut_slice(), 1, &plan))
        .zip(g_blocks.drain(..))
        .zip(&plan)
        .map(|(((((k, v), lambda), ys), g), &range)| BlockColumns {
            range,
            k,
            g,
            v,
            lambda,
            ys,
        })
        .collect();
    let lu = linalg::view(&l_u);
    let job = |mut cols: BlockColumns<'_>| -> Result<FactorSums> {
        let (start, len) = cols.range;
        let mut sums = FactorSums {
            a: buffers.zero_matrix(m),
            vy: DMatrix::zeros(m, 1),
            log_lambda: 0.0,
            ys2: 0.0,
            trace: 0.0,
        };
        let mut work = buffers.work(m * CHUNK.min(len));
        let (mut q, mut inv_sl) = (vec![0.0; CHUNK], vec![0.0; CHUNK]);
        for (first, (s, len)) in chunks(cols.range).enumerate().map(|(i, c)| (i == 0, c)) {
            let (o, rows_c) = (s - start, (s - start) * m..(s - start + len) * m);
            let k_c = &mut cols.k[rows_c.clone()];
            let g_c = cols.g.as_mut().map(|g| &mut g[rows_c.clone()]);
            let zx_c = linalg::rows_view(&zx, s, len);
            kernel.cross_scaled_into((zx_c, &nx[s..s + len]), (linalg::view(&zu), &nu), k_c, g_c);
            // V^⊤ = K_fu L_u⁻ᵀ, len×m.
            let v_c = &mut cols.v[rows_c];
            v_c.copy_from_slice(k_c);
            linalg::solve_right_lower_transpose(mat(v_c, len, m), lu, Par::Seq);
            let (q, inv_sl) = (&mut q[..len], &mut inv_sl[..len]);
            row_squares(v_c, q);
            for (i, (&q, inv)) in q.iter().zip(inv_sl.iter_mut()).enumerate() {
                sums.trace += c - q;
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
                        pivot: s + i,
                        max_jitter: 0.0,
                    });
                }
                let sl = l.sqrt();
                cols.lambda[o + i] = l;
                cols.ys[o + i] = y[s + i] / sl;
                sums.log_lambda += l.ln();
                sums.ys2 += cols.ys[o + i] * cols.ys[o + i];
                *inv = 1.0 / sl;
            }
            // V_s^⊤ = Λ^{-1/2} V^⊤ (len×m); A += V_s V_s^⊤, V_s y_s.
            let work = &mut work[..m * len];
            scale_rows_and_dot(
                work,
                v_c,
                inv_sl,
                &cols.ys[o..o + len],
                sums.vy.as_mut_slice(),
            );
            let vs = MatRef::from_column_major_slice(work, len, m);
            linalg::syrk_lower(linalg::view_mut(&mut sums.a), !first, vs, 1.0, Par::Seq);
        }
        buffers.keep(work);
        Ok(sums)
    };
    let mut l_a = DMatrix::identity(m, m);
    let mut by = DMatrix::zeros(m, 1);
    let (mut log_lambda, mut ys2, mut trace) = (0.0, 0.0, 0.0);
    for sums in threads.map(jobs, job) {
        let sums = sums?;
        l_a += &sums.a;
        buffers.keep(sums.a.data.into());
        by += &sums.vy;
        log_lambda += sums.log_lambda;
        ys2 += sums.ys2;
        trace += sums.trace;
    }
    drop(zx);
    linalg::cholesky_in_place_lower(&mut l_a, "A = I + V Λ⁻¹ Vᵀ (Woodbury matrix)", par)?;
    linalg::solve_lower(linalg::view(&l_a), linalg::view_mut(&mut by), par);
    let by = by.column(0).into_owned();

    let log_det = log_lambda + linalg::log_det_from_cholesky(&l_a);
    let quad = ys2 - by.norm_squared();
    let mut neg_log_evidence =
        0.5 * (quad + log_det + n as f64 * (2.0 * std::f64::consts::PI).ln());
    if approx == Approximation::Vfe {
        neg_log_evidence += trace / (2.0 * sn2);
    }

    Ok(Factors {
        k_fu,
        g_fu,
        k_uu,
        g_uu,
        l_u,
        vt,
        lambda,
        l_a,
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

/// One block's sums in [`gradient`]: $P_VV^⊤$ (m×m), Σ w_i, Σ (P ∘ K_uf), and the weighted
/// coordinate differences of [`weighted_differences`] for each input dimension d (row sums r,
/// m×D, and totals s, D).
struct GradientSums {
    pv: DMatrix<f64>,
    sum_w: f64,
    sum_pk: f64,
    r: DMatrix<f64>,
    s: Vec<f64>,
}

/// The gradient of `approx`'s objective from the factors of [`factorize`] (D + 2 entries, plus
/// the mD of the inducing inputs X̄ − 1cᵀ, column by column, when `free_pseudo`), in the layout
/// of [`crate::hyperparameters`].
///
/// One pass over the points in the chunks and blocks of [`factorize`], every chunk's matrices
/// len×m (one row per point) and every solve a right-side one: per chunk
/// $B^⊤ = Λ^{-1/2}V^⊤L_A^{-⊤}$ (its row norms give diag(C⁻¹), its product with $By_s$ gives α),
/// then $P_V^⊤ = Λ^{-1/2}B^⊤L_A^{-1} - α(Vα)^⊤ - \mathrm{diag}(d)V^⊤$, the chunk's $P_VV^⊤$
/// (m×m, a gemm), $P^⊤ = P_V^⊤L_u^{-1}$ and the kernel-derivative sums of $P ∘ K_{uf}$ and
/// $P ∘ G_{uf}$ while the chunk is in cache: 5nm² flops in gemms, plus O(nmD).
pub(crate) fn gradient(
    x: &DMatrix<f64>,
    theta: &Decoded<'_>,
    f: Factors,
    approx: Approximation,
    free_pseudo: bool,
    (threads, par, buffers): (&Threads, Par, &Buffers),
) -> DVector<f64> {
    let (n, dim) = x.shape();
    let m = f.l_u.nrows();
    let pseudo = theta.block.as_ref();
    let sn2 = theta.hyper.noise_variance;
    let inv_sn2 = 1.0 / sn2;

    // Vα = L_A⁻ᵀ B y_s.
    let mut v_alpha = DMatrix::from_column_slice(m, 1, f.by.as_slice());
    linalg::solve_lower_transpose(linalg::view(&f.l_a), linalg::view_mut(&mut v_alpha), par);
    let (la, lu) = (linalg::view(&f.l_a), linalg::view(&f.l_u));
    let job = |block: (usize, usize)| -> GradientSums {
        let mut sums = GradientSums {
            pv: buffers.zero_matrix(m),
            sum_w: 0.0,
            sum_pk: 0.0,
            r: DMatrix::zeros(m, dim),
            s: vec![0.0; dim],
        };
        let mut work = buffers.work(m * CHUNK.min(block.1));
        let mut scratch = vec![0.0; 4 * CHUNK];
        let list: Vec<(usize, usize)> = chunks(block).collect();
        for (i, &chunk) in list.iter().enumerate() {
            let (first, next) = (i == 0, list.get(i + 1).copied());
            let (s, len) = chunk;
            let work = &mut work[..m * len];
            let (inv_sl, rest) = scratch.split_at_mut(len);
            let (alpha, rest) = rest.split_at_mut(len);
            let (d, rest) = rest.split_at_mut(len);
            let b2 = &mut rest[..len];
            let v_c = f.vt.chunk(chunk);
            for (inv, &l) in inv_sl.iter_mut().zip(&f.lambda.as_slice()[s..s + len]) {
                *inv = 1.0 / l.sqrt();
            }
            scale_rows(work, v_c, inv_sl);
            // B^⊤ = V_s^⊤ L_A⁻ᵀ (len×m); α = C⁻¹y = Λ^{-1/2}(y_s − Bᵀ B y_s); w = diag(C⁻¹) − α².
            linalg::solve_right_lower_transpose(mat(work, len, m), la, Par::Seq);
            row_squares_and_products(work, f.by.as_slice(), b2, alpha);
            for i in 0..len {
                let l = f.lambda[s + i];
                alpha[i] = (f.ys[s + i] - alpha[i]) * inv_sl[i];
                let wi = (1.0 - b2[i]) / l - alpha[i] * alpha[i];
                sums.sum_w += wi;
                d[i] = match approx {
                    Approximation::Fitc => wi,
                    Approximation::Vfe => inv_sn2,
                };
            }
            // P_V^⊤ = Λ^{-1/2} B^⊤ L_A⁻¹ − α(Vα)ᵀ − diag(d) V^⊤.
            linalg::solve_right_lower(mat(work, len, m), la, Par::Seq);
            // The next chunk's rows of V^⊤ and K_fu, from memory to the second-level cache a
            // column's share at a time while this chunk's products run.
            let ahead = next.map(|c| (f.vt.chunk(c), f.k_fu.chunk(c)));
            let rows = PointTerms { inv_sl, alpha, d };
            projected_rows(work, v_c, rows, v_alpha.as_slice(), ahead);
            let v_view = MatRef::from_column_major_slice(v_c, len, m);
            let p_view = MatRef::from_column_major_slice(work, len, m);
            linalg::gemm(
                linalg::view_mut(&mut sums.pv),
                !first,
                p_view.transpose(),
                v_view,
                1.0,
                Par::Seq,
            );
            // P^⊤ = P_V^⊤ L_u⁻¹; P ∘ K_uf weights ∂/∂log σ0, P ∘ G_uf the lengthscales and inputs.
            linalg::solve_right_lower(mat(work, len, m), lu, Par::Seq);
            let k_c = f.k_fu.chunk(chunk);
            let slopes = f.g_fu.as_ref().map_or(k_c, |g| g.chunk(chunk));
            sums.sum_pk += dot_then_scale(work, k_c, slopes);
            weighted_differences(work, pseudo, (x, s), &mut sums.r, &mut sums.s);
        }
        buffers.keep(work);
        sums
    };
    let mut mm = DMatrix::zeros(m, m);
    let (mut sum_w, mut sum_pk) = (0.0, 0.0);
    let mut r1 = DMatrix::zeros(m, dim);
    let mut s1 = vec![0.0; dim];
    for sums in threads.map(blocks(n, m), job) {
        mm += &sums.pv;
        buffers.keep(sums.pv.data.into());
        sum_w += sums.sum_w;
        sum_pk += sums.sum_pk;
        r1 += &sums.r;
        s1.iter_mut().zip(&sums.s).for_each(|(a, b)| *a += b);
    }
    let Factors { k_fu, vt, .. } = f;
    buffers.give(k_fu);
    buffers.give(vt);

    // M = L_u⁻ᵀ (P_V Vᵀ) L_u⁻¹ (symmetric).
    linalg::solve_lower_transpose(lu, linalg::view_mut(&mut mm), par);
    let mut mm = mm.transpose();
    linalg::solve_lower_transpose(lu, linalg::view_mut(&mut mm), par);

    // A2 = M ∘ (K_uu − δI) weights ∂/∂log σ0, M ∘ G_uu the lengthscales and inputs (the same
    // matrix for the squared exponential, where G = K).
    // A jitter relative to σ0² moves with log σ0: ∂(δσ0²I)/∂log σ0 = 2δσ0²I.
    let jitter_term = f.relative_jitter * mm.trace();
    let mut a2 = mm;
    let b2 = f.g_uu.as_ref().map(|g| a2.component_mul(g));
    a2.component_mul_assign(&f.k_uu);

    let c = theta.hyper.signal_variance;
    let mut g = DVector::zeros(dim + 2 + if free_pseudo { m * dim } else { 0 });
    // ∂K/∂log σ0 = 2K for K_uf, K_uu − δI and diag K_ff (FITC: ½Σw_i·2σ0²; VFE: n·2σ0²/(2σn²)).
    let diagonal = match approx {
        Approximation::Fitc => c * sum_w,
        Approximation::Vfe => n as f64 * c / sn2,
    };
    g[dim] = 2.0 * sum_pk - a2.sum() - jitter_term + diagonal;
    g[dim + 1] = match approx {
        Approximation::Fitc => 0.5 * theta.noise_derivative * sum_w,
        // tr(K_ff − Q_ff)/(2σn⁴) as (tr/σn²)/(2σn²): σn⁴ itself underflows below σn² ≈ 1e-154.
        Approximation::Vfe => theta.noise_derivative * (0.5 * sum_w - f.trace / sn2 / (2.0 * sn2)),
    };

    // ∂K_ab/∂log ℓ_d = G_ab (a_d − b_d)²/ℓ_d²;  ∂K_uf[j,i]/∂x̄_jd = −G_uf[j,i](x̄_jd − x_id)/ℓ_d²;
    // ∂K_uu[j,k]/∂x̄_jd = −G_uu[j,k](x̄_jd − x̄_kd)/ℓ_d² (row and column j).
    let w2 = b2.as_ref().unwrap_or(&a2);
    // M, K_uu and G_uu are symmetric: the weights of inducing point j are row or column j alike.
    let (mut r2, mut s2) = (DMatrix::zeros(m, dim), vec![0.0; dim]);
    weighted_differences(w2.as_slice(), pseudo, (pseudo, 0), &mut r2, &mut s2);
    for d in 0..dim {
        let inv_l2 = theta.hyper.lengthscales[d].powi(-2);
        g[d] = (s1[d] - 0.5 * s2[d]) * inv_l2;
        if free_pseudo {
            for j in 0..m {
                g[dim + 2 + j + d * m] = (r2[(j, d)] - r1[(j, d)]) * inv_l2;
            }
        }
    }
    g
}

/// Asks the core to bring the `part`-th of `parts` equal runs of `data`'s cache lines into its
/// second-level cache (a hint: no effect on any result; nothing off x86-64).
#[inline(always)]
fn prefetch_part(data: &[f64], part: usize, parts: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T1};
        let lines = data.len().div_ceil(8);
        for line in lines * part / parts..lines * (part + 1) / parts {
            // SAFETY: the address is inside `data`; a prefetch reads nothing and never faults.
            unsafe { _mm_prefetch::<_MM_HINT_T1>(data.as_ptr().add(line * 8).cast()) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (data, part, parts);
}

/// Σ a_i b_i over equal-length slices, in eight interleaved partial sums (so the loop
/// vectorises instead of waiting on one chain of additions), added pairwise at the end.
#[inline(always)]
fn dot(a: &[f64], b: &[f64]) -> f64 {
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f64 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    let mut acc = [0.0; 8];
    for (x, y) in ca.zip(cb) {
        for k in 0..8 {
            acc[k] += x[k] * y[k];
        }
    }
    pairwise(&acc) + tail
}

/// The per-point factors of [`projected_rows`]: $λ_i^{-1/2}$, $α_i$ and $d_i$.
#[derive(Clone, Copy)]
struct PointTerms<'a> {
    inv_sl: &'a [f64],
    alpha: &'a [f64],
    d: &'a [f64],
}

every_build! {
/// $P_V^⊤$ ← $Λ^{-1/2}P - α(Vα)^⊤ - \mathrm{diag}(d)V^⊤$ in place of `p` (len×m column major,
/// len = the terms' length), from $V^⊤$ (`v`, len×m) and Vα (`v_alpha`, m); with `ahead`, the
/// next chunk's rows of $V^⊤$ and $K_{fu}$ are prefetched a column's share at a time
/// ([`prefetch_part`]).
fn projected_rows / projected_rows_on(
    p: &mut [f64],
    v: &[f64],
    terms: PointTerms<'_>,
    v_alpha: &[f64],
    ahead: Option<(&[f64], &[f64])>,
) {
    let PointTerms { inv_sl, alpha, d } = terms;
    let (len, m) = (inv_sl.len().max(1), v_alpha.len());
    for (j, ((p, vj), &va)) in p
        .chunks_exact_mut(len)
        .zip(v.chunks_exact(len))
        .zip(v_alpha)
        .enumerate()
    {
        if let Some((v_next, k_next)) = ahead {
            prefetch_part(v_next, j, m);
            prefetch_part(k_next, j, m);
        }
        for i in 0..len.min(p.len()) {
            p[i] = p[i] * inv_sl[i] - alpha[i] * va - d[i] * vj[i];
        }
    }
}
}

every_build! {
/// [`dot`]`(a, b)`, then $a_i$ ← $a_i g_i$, in one pass over the three equal-length slices
/// (each block of eight is multiplied once its products are summed): the same bits as the two
/// passes.
fn dot_then_scale / dot_then_scale_on(a: &mut [f64], b: &[f64], g: &[f64]) -> f64 {
    let full = a.len().min(b.len()).min(g.len()) / 8 * 8;
    let (head, rest) = a.split_at_mut(full);
    let mut acc = [0.0; 8];
    for ((x, y), s) in head
        .chunks_exact_mut(8)
        .zip(b.chunks_exact(8))
        .zip(g.chunks_exact(8))
    {
        for k in 0..8 {
            acc[k] += x[k] * y[k];
            x[k] *= s[k];
        }
    }
    let mut tail = 0.0;
    for ((x, y), s) in rest.iter_mut().zip(&b[full..]).zip(&g[full..]) {
        tail += *x * y;
        *x *= s;
    }
    pairwise(&acc) + tail
}
}

/// For a weight matrix `a` (k×m, column major: column j the weights of inducing point j), the
/// inducing inputs `u` (m×D) and k points `z` (rows `start` .. `start` + k of an N×D matrix):
/// adds $\sum_i a_{ij}(u_{jd} - z_{id})$ to `r[(j, d)]` (r m×D) and
/// $\sum_{ij} a_{ij}(u_{jd} - z_{id})^2$ to `s[d]` (D). Column by column, so that each column of
/// `a` is read from the core's first-level cache for all D coordinates, through
/// [`column_sums`].
fn weighted_differences(
    a: &[f64],
    u: &DMatrix<f64>,
    (z, start): (&DMatrix<f64>, usize),
    r: &mut DMatrix<f64>,
    s: &mut [f64],
) {
    let (m, dim) = u.shape();
    let k = a.len() / m.max(1);
    let (us, zs, zn) = (u.as_slice(), z.as_slice(), z.nrows());
    let build = Build::detected();
    for (j, col) in a.chunks_exact(k.max(1)).enumerate() {
        for d in 0..dim {
            let zd = &zs[d * zn + start..d * zn + start + k];
            let (rj, qj) = column_sums(col, us[j + d * m], zd, build);
            r[(j, d)] += rj;
            s[d] += qj;
        }
    }
}

/// $(\sum_i a_i(u - z_i), \sum_i a_i(u - z_i)^2)$ for equal-length `a` and `z`, each in eight
/// interleaved partial sums (lane l takes the i ≡ l mod 8) added pairwise at the end, and the
/// last k mod 8 terms in order after them; with AVX2 the eight lanes run as two vectors of four,
/// with AVX-512 as one of eight (`build`, which the caller has checked the CPU runs), the same
/// operations in the same order, so the same bits (the compiler does not vectorise the portable
/// loop's two reductions).
fn column_sums(a: &[f64], u: f64, z: &[f64], build: Build) -> (f64, f64) {
    let full = a.len().min(z.len()) / 8 * 8;
    let (mut r, mut q) = ([0.0; 8], [0.0; 8]);
    let (a8, z8) = (&a[..full], &z[..full]);
    match build {
        // SAFETY: the CPU has AVX-512F (the caller's check); both slices hold `full` entries.
        #[cfg(target_arch = "x86_64")]
        Build::Avx512 => unsafe { column_sums_avx512(a8, u, z8, &mut r, &mut q) },
        // SAFETY: as above, AVX2.
        #[cfg(target_arch = "x86_64")]
        Build::Avx2 => unsafe { column_sums_avx2(a8, u, z8, &mut r, &mut q) },
        _ => {
            for (a8, z8) in a8.chunks_exact(8).zip(z8.chunks_exact(8)) {
                for l in 0..8 {
                    let diff = u - z8[l];
                    let t = a8[l] * diff;
                    r[l] += t;
                    q[l] += t * diff;
                }
            }
        }
    }
    let (mut r_tail, mut q_tail) = (0.0, 0.0);
    for (&ai, &zi) in a[full..].iter().zip(&z[full..]) {
        let diff = u - zi;
        let t = ai * diff;
        r_tail += t;
        q_tail += t * diff;
    }
    (pairwise(&r) + r_tail, pairwise(&q) + q_tail)
}

/// The eight lanes of [`column_sums`] over `a` and `z` (of one length, a multiple of 8) as two
/// AVX2 vectors each for the two sums, stored into `r` and `q`.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn column_sums_avx2(a: &[f64], u: f64, z: &[f64], r: &mut [f64; 8], q: &mut [f64; 8]) {
    use std::arch::x86_64::{
        _mm256_add_pd, _mm256_loadu_pd, _mm256_mul_pd, _mm256_set1_pd, _mm256_setzero_pd,
        _mm256_storeu_pd, _mm256_sub_pd,
    };
    let uu = _mm256_set1_pd(u);
    let (mut r0, mut r1) = (_mm256_setzero_pd(), _mm256_setzero_pd());
    let (mut q0, mut q1) = (_mm256_setzero_pd(), _mm256_setzero_pd());
    for (a8, z8) in a.chunks_exact(8).zip(z.chunks_exact(8)) {
        // SAFETY: a8 and z8 hold eight entries each: two unaligned loads of four.
        let (d0, d1, t0, t1) = unsafe {
            let d0 = _mm256_sub_pd(uu, _mm256_loadu_pd(z8.as_ptr()));
            let d1 = _mm256_sub_pd(uu, _mm256_loadu_pd(z8.as_ptr().add(4)));
            let t0 = _mm256_mul_pd(_mm256_loadu_pd(a8.as_ptr()), d0);
            let t1 = _mm256_mul_pd(_mm256_loadu_pd(a8.as_ptr().add(4)), d1);
            (d0, d1, t0, t1)
        };
        r0 = _mm256_add_pd(r0, t0);
        r1 = _mm256_add_pd(r1, t1);
        q0 = _mm256_add_pd(q0, _mm256_mul_pd(t0, d0));
        q1 = _mm256_add_pd(q1, _mm256_mul_pd(t1, d1));
    }
    // SAFETY: r and q hold eight entries each: two unaligned stores of four.
    unsafe {
        _mm256_storeu_pd(r.as_mut_ptr(), r0);
        _mm256_storeu_pd(r.as_mut_ptr().add(4), r1);
        _mm256_storeu_pd(q.as_mut_ptr(), q0);
        _mm256_storeu_pd(q.as_mut_ptr().add(4), q1);
    }
}

/// The eight lanes of [`column_sums`] over `a` and `z` (of one length, a multiple of 8) as one
/// AVX-512 vector for each of the two sums, stored into `r` and `q`.
///
/// # Safety
/// The CPU must support AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn column_sums_avx512(a: &[f64], u: f64, z: &[f64], r: &mut [f64; 8], q: &mut [f64; 8]) {
    use std::arch::x86_64::{
        _mm512_add_pd, _mm512_loadu_pd, _mm512_mul_pd, _mm512_set1_pd, _mm512_setzero_pd,
        _mm512_storeu_pd, _mm512_sub_pd,
    };
    let uu = _mm512_set1_pd(u);
    let (mut rv, mut qv) = (_mm512_setzero_pd(), _mm512_setzero_pd());
    for (a8, z8) in a.chunks_exact(8).zip(z.chunks_exact(8)) {
        // SAFETY: a8 and z8 hold eight entries each: one unaligned load of eight.
        let (d, t) = unsafe {
            let d = _mm512_sub_pd(uu, _mm512_loadu_pd(z8.as_ptr()));
            (d, _mm512_mul_pd(_mm512_loadu_pd(a8.as_ptr()), d))
        };
        rv = _mm512_add_pd(rv, t);
        qv = _mm512_add_pd(qv, _mm512_mul_pd(t, d));
    }
    // SAFETY: r and q hold eight entries each: one unaligned store of eight.
    unsafe {
        _mm512_storeu_pd(r.as_mut_ptr(), rv);
        _mm512_storeu_pd(q.as_mut_ptr(), qv);
    }
}

/// The sum of eight partial sums, added pairwise.
#[inline(always)]
fn pairwise(acc: &[f64; 8]) -> f64 {
    ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]))
}

every_build! {
/// $q_i = \sum_j a_{ij}^2$ and $o_i = \sum_j a_{ij}x_j$ for `a` len×m column major (len = `q.len()`
/// = `o.len()`, m = `x.len()`): its rows' squared norms and its product with x, in one pass over
/// its columns.
fn row_squares_and_products / row_squares_and_products_on(
    a: &[f64],
    x: &[f64],
    q: &mut [f64],
    o: &mut [f64],
) {
    q.fill(0.0);
    o.fill(0.0);
    for (col, &xj) in a.chunks_exact(q.len().max(1)).zip(x) {
        for ((q, o), t) in q.iter_mut().zip(o.iter_mut()).zip(col) {
            *q += t * t;
            *o += t * xj;
        }
    }
}
}

every_build! {
/// $q_i = \sum_j a_{ij}^2$ for `a` len×m column major (len = `q.len()`): its rows' squared norms.
fn row_squares / row_squares_on(a: &[f64], q: &mut [f64]) {
    q.fill(0.0);
    for col in a.chunks_exact(q.len().max(1)) {
        q.iter_mut().zip(col).for_each(|(q, t)| *q += t * t);
    }
}
}

every_build! {
/// [`scale_rows`]`(out, a, s)` and $z_j$ += [`dot`]`(out_{:j}, y)$ for each column j of `out`
/// (z of length m), each column's dot taken while the column is in the first-level cache: the
/// same bits as the two passes.
fn scale_rows_and_dot / scale_rows_and_dot_on(
    out: &mut [f64],
    a: &[f64],
    s: &[f64],
    y: &[f64],
    z: &mut [f64],
) {
    let len = s.len().max(1);
    for ((o, col), zj) in out.chunks_exact_mut(len).zip(a.chunks_exact(len)).zip(z) {
        o.iter_mut()
            .zip(col)
            .zip(s)
            .for_each(|((o, t), si)| *o = t * si);
        *zj += dot(o, y);
    }
}
}

every_build! {
/// `out` ← diag(`s`)·`a` for `a` and `out` len×m column major (len = `s.len()`).
fn scale_rows / scale_rows_on(out: &mut [f64], a: &[f64], s: &[f64]) {
    let len = s.len().max(1);
    for (o, col) in out.chunks_exact_mut(len).zip(a.chunks_exact(len)) {
        o.iter_mut()
            .zip(col)
            .zip(s)
            .for_each(|((o, t), si)| *o = t * si);
    }
}
}

/// The exact leave-one-out diagnostic at the factorised θ, from the Woodbury form of
/// C = Q + Λ: with $B = L_A^{-1}VΛ^{-1/2}$, r = C⁻¹y = Λ^{-1/2}(y_s − Bᵀ B y_s) and
/// [C⁻¹]ᵢᵢ = (1 − ‖Bᵢ‖²)/λᵢ, so the LOO residual is rᵢ/[C⁻¹]ᵢᵢ and its variance 1/[C⁻¹]ᵢᵢ
/// (R&W eq. 5.12): nm² flops for B beyond the factorisation (chunk by chunk, as
/// $B^⊤ = Λ^{-1/2}V^⊤L_A^{-⊤}$). For FITC that is its predictive
/// of yᵢ given the other points. VFE (Λ = σn²I) predicts from q(u) with the extra variance
/// k(xᵢ, xᵢ) − Q_ii = σ0² − ‖V_{:i}‖² that its predictive adds (`vfe_signal_variance` = σ0²):
/// q(u) given the other points is the posterior of C's weights given them, so the mean is the
/// same and the variance 1/[C⁻¹]ᵢᵢ + σ0² − ‖V_{:i}‖².
fn loo_diagnostic(
    f: &Factors,
    par: Par,
    vfe_signal_variance: Option<f64>,
) -> Option<crate::termination::LooDiagnostic> {
    let n = f.lambda.len();
    let (mut residuals, mut variances, mut centred) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    let m = f.l_a.nrows();
    let mut work = vec![0.0; m * CHUNK.min(n)];
    let mut scratch = vec![0.0; 4 * CHUNK];
    for chunk in blocks(n, m).into_iter().flat_map(chunks) {
        let (s, len) = chunk;
        let (inv_sl, rest) = scratch.split_at_mut(len);
        let (b2, rest) = rest.split_at_mut(len);
        let (bty, rest) = rest.split_at_mut(len);
        let v2 = &mut rest[..len];
        let (work, v_c) = (&mut work[..m * len], f.vt.chunk(chunk));
        for (inv, &l) in inv_sl.iter_mut().zip(&f.lambda.as_slice()[s..s + len]) {
            *inv = 1.0 / l.sqrt();
        }
        // B^⊤ = Λ^{-1/2} V^⊤ L_A⁻ᵀ (len×m).
        scale_rows(work, v_c, inv_sl);
        linalg::solve_right_lower_transpose(mat(work, len, m), linalg::view(&f.l_a), par);
        row_squares_and_products(work, f.by.as_slice(), b2, bty);
        row_squares(v_c, v2);
        for i in 0..len {
            let sqrt_lambda = f.lambda[s + i].sqrt();
            let r = (f.ys[s + i] - bty[i]) / sqrt_lambda;
            let c_inv = (1.0 - b2[i]) / f.lambda[s + i];
            let unexplained = vfe_signal_variance.map_or(0.0, |sf2| sf2 - v2[i]);
            residuals.push(r / c_inv);
            variances.push(1.0 / c_inv + unexplained);
            centred.push(f.ys[s + i] * sqrt_lambda);
        }
    }
    crate::termination::LooDiagnostic::from_residuals(&residuals, &variances, &centred).map(|d| {
        crate::termination::LooDiagnostic {
            honest: vfe_signal_variance.is_some(),
            ..d
        }
    })
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
    fn blocks_and_chunks_cover_every_point_once() {
        for (n, m) in [
            (1, 5),
            (255, 5),
            (257, 5),
            (10_000, 100),
            (10_000, 200),
            (5000, 90),
        ] {
            let plan = blocks(n, m);
            let flat: Vec<(usize, usize)> = plan.iter().flat_map(|&b| chunks(b)).collect();
            let mut next = 0;
            for &(start, len) in &flat {
                assert_eq!(start, next, "n {n}, m {m}: contiguous");
                assert!((1..=CHUNK).contains(&len), "n {n}, m {m}: chunk of {len}");
                next += len;
            }
            assert_eq!(next, n);
        }
        assert_eq!(blocks(10_000, 100).len(), 4);
        assert_eq!(blocks(10_000, 200).len(), 12);
        assert_eq!(blocks(5000, 90).len(), 2);
    }

    /// Several blocks of several chunks: the same bits on 1, 2 and 3 threads, and a gradient
    /// that matches central differences (FITC and VFE, the squared exponential through the
    /// vectorised exp and Matérn 3/2 through the slopes).
    #[test]
    fn blocked_evaluation_is_thread_invariant_and_differentiates() {
        use crate::optim::Objective;
        use crate::Dataset;
        use rand::{Rng, SeedableRng};
        let (n, m, dim) = (5000, 90, 2);
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let x = DMatrix::from_fn(n, dim, |_, _| rng.random_range(-2.0..2.0));
        let y = DVector::from_fn(n, |i, _| f64::sin(x[(i, 0)] + 0.5 * x[(i, 1)]));
        let data = Dataset::new(x, y).unwrap();
        let mut theta = DVector::from_fn(dim + 2 + m * dim, |_, _| rng.random_range(-2.0..2.0));
        theta[0] = -0.2;
        theta[1] = 0.3;
        theta[dim] = 0.1;
        theta[dim + 1] = -1.0;
        let cases = [
            (Approximation::Fitc, Kernel::SquaredExponential),
            (Approximation::Vfe, Kernel::SquaredExponential),
            (Approximation::Fitc, Kernel::Matern32),
        ];
        for (approx, kernel) in cases {
            let objective = |threads: usize| {
                let training = crate::params::TrainingSettings {
                    kernel,
                    threads,
                    ..Default::default()
                };
                let settings = (m, &training, Jitter::relative(1e-6));
                InducingObjective::new(&data, settings, None, approx, "test θ")
            };
            let one = objective(1);
            let (value, grad) = one.value_and_gradient(&theta).unwrap();
            for threads in [2, 3] {
                let (v, g) = objective(threads).value_and_gradient(&theta).unwrap();
                assert_eq!(
                    v.to_bits(),
                    value.to_bits(),
                    "{approx:?} on {threads} threads"
                );
                assert!(
                    g.iter().zip(&grad).all(|(a, b)| a.to_bits() == b.to_bits()),
                    "{approx:?} gradient on {threads} threads"
                );
            }
            for i in [0, 1, dim, dim + 1, dim + 2 + 5, dim + 2 + m + 40] {
                let h = 1e-5;
                let mut plus = theta.clone();
                plus[i] += h;
                let mut minus = theta.clone();
                minus[i] -= h;
                let fd = (one.value_and_gradient(&plus).unwrap().0
                    - one.value_and_gradient(&minus).unwrap().0)
                    / (2.0 * h);
                assert!(
                    (fd - grad[i]).abs() <= 1e-5 * (1.0 + grad[i].abs()),
                    "{approx:?} {kernel:?} ∂/∂θ_{i}: {} against {fd}",
                    grad[i]
                );
            }
        }
    }

    #[test]
    fn dot_is_the_sum_of_products_at_every_length() {
        for len in [0, 1, 7, 8, 9, 17, 64] {
            let a: Vec<f64> = (0..len).map(|i| (i as f64 * 0.7).sin()).collect();
            let b: Vec<f64> = (0..len).map(|i| (i as f64 * 0.3).cos()).collect();
            let naive: f64 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            assert!((dot(&a, &b) - naive).abs() < 1e-13, "length {len}");
        }
    }

    #[test]
    fn weighted_differences_match_their_definition() {
        // k = 19 points (two runs of eight and a remainder of three) from row 5 of z, D = 2.
        let (k, m, dim, start) = (19, 4, 2, 5);
        let a = DMatrix::from_fn(k, m, |i, j| ((j * 3 + i * 5) % 7) as f64 - 3.0);
        let u = DMatrix::from_fn(m, dim, |j, d| 0.3 * j as f64 - 0.5 + d as f64);
        let z = DMatrix::from_fn(30, dim, |i, d| (i as f64 + 0.3 * d as f64).sin());
        let (mut r, mut s) = (DMatrix::from_element(m, dim, 1.0), vec![2.0; dim]);
        weighted_differences(a.as_slice(), &u, (&z, start), &mut r, &mut s);
        for d in 0..dim {
            let diff = |i: usize, j: usize| u[(j, d)] - z[(start + i, d)];
            let mut expected = 2.0;
            for j in 0..m {
                let column: f64 = (0..k).map(|i| a[(i, j)] * diff(i, j)).sum();
                assert!((r[(j, d)] - 1.0 - column).abs() < 1e-13);
                expected += (0..k).map(|i| a[(i, j)] * diff(i, j).powi(2)).sum::<f64>();
            }
            assert!((s[d] - expected).abs() < 1e-12);
        }
    }

    /// The AVX2 and AVX-512 builds of the column sums give the portable loop's bits.
    #[test]
    fn column_sums_are_the_same_on_every_build() {
        let a: Vec<f64> = (0..45).map(|i| (i as f64 * 0.37).sin()).collect();
        let z: Vec<f64> = (0..45).map(|i| (i as f64 * 0.11).cos()).collect();
        for len in [0, 3, 8, 16, 45] {
            let portable = column_sums(&a[..len], 0.25, &z[..len], Build::Portable);
            for build in Build::all_here() {
                let (r, q) = column_sums(&a[..len], 0.25, &z[..len], build);
                assert_eq!(r.to_bits(), portable.0.to_bits(), "{build:?}, length {len}");
                assert_eq!(q.to_bits(), portable.1.to_bits(), "{build:?}, length {len}");
            }
            let naive: f64 = (0..len).map(|i| a[i] * (0.25 - z[i])).sum();
            assert!((portable.0 - naive).abs() < 1e-13, "length {len}");
        }
    }

    /// Every build of the chunk loops gives the portable loop's bits, on a chunk of 19 rows
    /// (two runs of eight and a remainder) and one of 256.
    #[test]
    fn every_build_of_the_chunk_loops_gives_the_same_bits() {
        for len in [19, 256] {
            let m = 5;
            let cell = |i: usize, j: usize| ((i * 7 + j * 13) as f64 * 0.37).sin();
            let a: Vec<f64> = (0..len * m).map(|k| cell(k % len, k / len)).collect();
            let v: Vec<f64> = (0..len * m).map(|k| cell(k / m, k % m + 3)).collect();
            let per_point = |c: f64| (0..len).map(|i| 0.3 + (i as f64 * c).cos().abs()).collect();
            let (s, y, d): (Vec<f64>, Vec<f64>, Vec<f64>) =
                (per_point(0.9), per_point(0.4), per_point(1.3));
            let x: Vec<f64> = (0..m).map(|j| j as f64 - 1.5).collect();
            let run = |build: Build| {
                let mut out = vec![0.0; len * m];
                scale_rows_on(build, &mut out, &a, &s);
                let mut dotted = vec![0.0; len * m];
                let mut z = vec![0.5; m];
                scale_rows_and_dot_on(build, &mut dotted, &a, &s, &y, &mut z);
                let mut scaled = a.clone();
                let sum = dot_then_scale_on(build, &mut scaled, &v, &s);
                let (mut q, mut o, mut q_alone) = (vec![0.0; len], vec![0.0; len], vec![0.0; len]);
                row_squares_and_products_on(build, &a, &x, &mut q, &mut o);
                row_squares_on(build, &a, &mut q_alone);
                let mut p = a.clone();
                let terms = PointTerms {
                    inv_sl: &s,
                    alpha: &y,
                    d: &d,
                };
                projected_rows_on(build, &mut p, &v, terms, &x, Some((&v, &a)));
                let bits = |w: &[f64]| w.iter().map(|t| t.to_bits()).collect::<Vec<_>>();
                [out, dotted, z, scaled, vec![sum], q, o, q_alone, p].map(|w| bits(&w))
            };
            let portable = run(Build::Portable);
            for build in Build::all_here() {
                assert_eq!(run(build), portable, "{build:?}, {len} rows");
            }
            // The projection against its definition, P_V^⊤ = Λ^{-1/2}P − α(Vα)ᵀ − diag(d)V^⊤.
            let p: Vec<f64> = portable[8].iter().map(|&b| f64::from_bits(b)).collect();
            for k in 0..len * m {
                let (i, j) = (k % len, k / len);
                let expected = a[k] * s[i] - y[i] * x[j] - d[i] * v[k];
                assert_eq!(p[k], expected, "entry ({i}, {j})");
            }
        }
    }

    #[test]
    fn row_sums_of_a_chunk_match_nalgebra() {
        let a = DMatrix::from_fn(11, 5, |i, j| ((i * 7 + j * 3) as f64).cos());
        let x: Vec<f64> = (0..5).map(|j| j as f64 - 1.5).collect();
        let s: Vec<f64> = (0..11).map(|i| 0.5 + i as f64).collect();
        let (mut q, mut o, mut scaled) = (vec![f64::NAN; 11], vec![f64::NAN; 11], vec![0.0; 55]);
        let mut q_alone = vec![f64::NAN; 11];
        row_squares(a.as_slice(), &mut q_alone);
        row_squares_and_products(a.as_slice(), &x, &mut q, &mut o);
        assert_eq!(q, q_alone);
        let z0 = [1.0, -2.0, 0.5, 0.0, 3.0];
        let mut z = z0;
        scale_rows_and_dot(&mut scaled, a.as_slice(), &s, &x_of_rows(11), &mut z);
        let ax = &a * DVector::from_column_slice(&x);
        for i in 0..11 {
            assert!((q[i] - a.row(i).norm_squared()).abs() < 1e-13);
            assert!((o[i] - ax[i]).abs() < 1e-13);
            for j in 0..5 {
                assert_eq!(scaled[i + 11 * j], a[(i, j)] * s[i]);
            }
        }
        for j in 0..5 {
            let column = &scaled[11 * j..11 * (j + 1)];
            assert_eq!(z[j], z0[j] + dot(column, &x_of_rows(11)), "column {j}");
            let naive: f64 = (0..11).map(|i| a[(i, j)] * s[i] * x_of_rows(11)[i]).sum();
            assert!((z[j] - z0[j] - naive).abs() < 1e-12, "column {j}");
        }
    }

    /// Weights for 11 rows (one run of eight and a remainder of three).
    fn x_of_rows(len: usize) -> Vec<f64> {
        (0..len).map(|i| (i as f64 * 0.9).cos() - 0.2).collect()
    }

    /// The fused dot and scaling gives the bits of the two passes, at lengths with and without
    /// a remainder of eight.
    #[test]
    fn dot_then_scale_is_dot_then_the_products() {
        for len in [0, 5, 8, 19, 64] {
            let a: Vec<f64> = (0..len).map(|i| (i as f64 * 0.7).sin()).collect();
            let b: Vec<f64> = (0..len).map(|i| (i as f64 * 0.3).cos()).collect();
            let g: Vec<f64> = (0..len).map(|i| 1.5 - (i as f64 * 0.2).sin()).collect();
            let mut fused = a.clone();
            let sum = dot_then_scale(&mut fused, &b, &g);
            assert_eq!(sum.to_bits(), dot(&a, &b).to_bits(), "length {len}");
            let scaled: Vec<f64> = a.iter().zip(&g).map(|(x, s)| x * s).collect();
            assert_eq!(fused, scaled, "length {len}");
        }
    }
}
