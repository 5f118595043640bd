//! The stationary ARD covariances shared by every model — the squared exponential (paper eq. 3)
//! and the Matérn family with ν ∈ {½, 3/2, 5/2} — and their spectral densities (eq. 9–12,
//! [`spectral`]).
//!
//! With the scaled distance r = ‖(x − x') ⊘ ℓ‖:
//!
//! | [`Kernel`] | k(r)/σ0² | G(r)/σ0² = −k'(r)/(r σ0²) | spectral density of w = 2πℓ ⊙ s |
//! |---|---|---|---|
//! | `SquaredExponential` | exp(−r²/2) | exp(−r²/2) | N(0, I) |
//! | `Matern12` | exp(−r) | exp(−r)/r (0 at r = 0) | Student-t, 1 degree of freedom |
//! | `Matern32` | (1 + √3 r) exp(−√3 r) | 3 exp(−√3 r) | Student-t, 3 degrees of freedom |
//! | `Matern52` | (1 + √5 r + 5r²/3) exp(−√5 r) | (5/3)(1 + √5 r) exp(−√5 r) | Student-t, 5 degrees of freedom |
//!
//! Every derivative the models need comes from k and G: ∂k/∂log σ0 = 2k,
//! ∂k/∂log ℓ_d = G·(x_d − x'_d)²/ℓ_d² and ∂k/∂x_d = −G·(x_d − x'_d)/ℓ_d². For the squared
//! exponential G = k. (Matérn ½ is not differentiable at r = 0; G is taken as 0 there, where every
//! term it multiplies vanishes.)
//!
//! The full GP and FITC evaluate the covariance through [`Covariance`]; SSGP samples its spectral
//! points from the kernel's spectral density ([`Kernel::spectral_density`]). Distances are
//! expanded as ‖a‖² + ‖b‖² − 2abᵀ (one gemm) on inputs that are first **centred** and divided by ℓ,
//! so inputs far from the origin do not cancel.
//!
//! # Panics
//! These are building blocks on matrices whose shapes the caller matches, as nalgebra's
//! operations are: inputs of D columns with D lengthscales and centres, outputs of the shapes
//! documented; like nalgebra's, they panic when the shapes disagree. The models check every
//! shape a user gives them before they call these (an [`Error`](crate::Error), never a panic).

mod exp;
pub mod spectral;

pub use spectral::{Matern, SpectralDensity, SquaredExponential};

use crate::linalg;
use crate::linalg::{MatMut, MatRef, Par};
use nalgebra::{DMatrix, DVector};
use std::sync::Arc;

/// From this many rows, [`Covariance::lower_scaled`] fills its columns on several threads under
/// [`Par::Rayon`] (n²/2 kernel values: at n = 1 024, 3 ms of exp on one thread, an eighth of the
/// full GP's evaluation on two).
const PARALLEL_FILL_FROM: usize = 256;

/// Divides every column d of `x` (n×D) by ℓ_d.
pub fn scale_inputs(x: &DMatrix<f64>, lengthscales: &DVector<f64>) -> DMatrix<f64> {
    let mut z = x.clone();
    for (d, mut col) in z.column_iter_mut().enumerate() {
        col /= lengthscales[d];
    }
    z
}

/// (x − c) ⊘ ℓ row by row: each column d of `x` (n×D) shifted by −c_d, then divided by ℓ_d.
pub fn shift_and_scale(
    x: &DMatrix<f64>,
    centre: &DVector<f64>,
    lengthscales: &DVector<f64>,
) -> DMatrix<f64> {
    let mut z = x.clone();
    for (d, mut col) in z.column_iter_mut().enumerate() {
        col.add_scalar_mut(-centre[d]);
        col /= lengthscales[d];
    }
    z
}

/// Subtracts each column's mean from `x` (n×D); returns the centred matrix and the means (D).
pub fn centre_columns(x: &DMatrix<f64>) -> (DMatrix<f64>, DVector<f64>) {
    let means = DVector::from_iterator(x.ncols(), x.column_iter().map(|c| c.mean()));
    let mut centred = x.clone();
    for (d, mut col) in centred.column_iter_mut().enumerate() {
        col.add_scalar_mut(-means[d]);
    }
    (centred, means)
}

/// Squared distances ‖a_i − b_j‖² between the rows of `a` (n×D) and `b` (p×D), n×p, through one gemm
/// (‖a‖² + ‖b‖² − 2abᵀ), negative values (cancellation) set to 0. Where a squared norm overflows
/// (inputs beyond about 1e154) the expansion is ∞ − ∞: a pair with one such row is ∞ apart (a
/// covariance of 0), a pair of two is summed directly, Σ(a_d − b_d)² (0 for equal rows).
pub fn squared_distances(a: &DMatrix<f64>, b: &DMatrix<f64>, par: Par) -> DMatrix<f64> {
    let mut d2 = DMatrix::zeros(a.nrows(), b.nrows());
    squared_distances_into(
        d2.as_mut_slice(),
        (linalg::view(a), &row_norms(a)),
        (linalg::view(b), &row_norms(b)),
        par,
    );
    d2
}

/// The squared norms of the rows of `a` (n×D): n entries.
pub(crate) fn row_norms(a: &DMatrix<f64>) -> Vec<f64> {
    a.row_iter().map(|r| r.norm_squared()).collect()
}

/// [`squared_distances`] into `d2` (n×p, column major) for rows `a` (n×D) and `b` (p×D) given as
/// views with their squared row norms `na` (n) and `nb` (p): one gemm and one pass over `d2`.
pub(crate) fn squared_distances_into(
    d2: &mut [f64],
    (a, na): (MatRef<'_>, &[f64]),
    (b, nb): (MatRef<'_>, &[f64]),
    par: Par,
) {
    let rows = na.len();
    linalg::gemm(
        MatMut::from_column_major_slice_mut(d2, rows, nb.len()),
        false,
        a,
        b.transpose(),
        -2.0,
        par,
    );
    if na.iter().chain(nb).all(|v| v.is_finite()) {
        add_norms(d2, na, nb);
        return;
    }
    for (j, (col, &nbj)) in d2.chunks_exact_mut(rows.max(1)).zip(nb).enumerate() {
        for (i, (v, &nai)) in col.iter_mut().zip(na).enumerate() {
            *v = beyond_norms(nai, nbj, || direct_distance(a, i, b, j))
                .unwrap_or_else(|| clamped_sum(*v, nai, nbj));
        }
    }
}

/// −2aᵀb + ‖a‖² + ‖b‖², negative round-off set to 0 (a NaN stays NaN).
#[inline(always)]
fn clamped_sum(v: f64, na: f64, nb: f64) -> f64 {
    let s = v + na + nb;
    if s < 0.0 {
        0.0
    } else {
        s
    }
}

linalg::every_build! {
/// [`clamped_sum`] on every entry of `d2` (rows×cols column major, holding −2aᵀb) with the
/// squared norms `na` (rows) and `nb` (cols), all finite: the loop of
/// [`squared_distances_into`] without its branches for overflowing norms, so it vectorises.
fn add_norms / add_norms_on(d2: &mut [f64], na: &[f64], nb: &[f64]) {
    for (col, &nbj) in d2.chunks_exact_mut(na.len().max(1)).zip(nb) {
        for (v, &nai) in col.iter_mut().zip(na) {
            *v = clamped_sum(*v, nai, nbj);
        }
    }
}
}

/// The squared distance of two points whose squared norms `na` and `nb` are not both finite
/// (inputs beyond about 1e154), where the expansion ‖a‖² + ‖b‖² − 2aᵀb is ∞ − ∞ or ∞ − ∞ + …:
/// ∞ (a covariance of 0) when one norm overflows and not the other, `direct()`, Σ(a_d − b_d)²,
/// when both do (0 for equal points); `None` for two finite norms.
fn beyond_norms(na: f64, nb: f64, direct: impl FnOnce() -> f64) -> Option<f64> {
    if na.is_infinite() != nb.is_infinite() {
        Some(f64::INFINITY)
    } else if na.is_infinite() {
        Some(direct())
    } else {
        None
    }
}

/// Σ_d (a_id − b_jd)²: the squared distance of row `i` of `a` and row `j` of `b`, summed directly.
fn direct_distance(a: MatRef<'_>, i: usize, b: MatRef<'_>, j: usize) -> f64 {
    (0..a.ncols())
        .map(|d| (a.at(i, d) - b.at(j, d)).powi(2))
        .sum()
}

/// A stationary covariance family with ARD lengthscales (see the [module docs](self)); every
/// model takes one through its builder's `kernel` (default the squared exponential).
///
/// ```
/// use ssgp::kernel::Kernel;
/// use ssgp::rand::{rngs::StdRng, SeedableRng};
/// use ssgp::{data::sinc_data, FullGp};
///
/// let train = sinc_data(60, false, 0.05, &mut StdRng::seed_from_u64(0))?;
/// for kernel in Kernel::ALL {
///     let fitted = FullGp::params().kernel(kernel).fit(&train)?;
///     println!("{:>9}: −log p(y|θ) {:.2}", kernel.name(), fitted.neg_log_evidence());
/// }
/// # Ok::<(), ssgp::Error>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum Kernel {
    /// k(r) = σ0² exp(−r²/2), the paper's (eq. 3).
    #[default]
    SquaredExponential,
    /// Matérn ν = ½: k(r) = σ0² exp(−r) (the exponential, or Ornstein–Uhlenbeck, kernel).
    Matern12,
    /// Matérn ν = 3/2: k(r) = σ0² (1 + √3 r) exp(−√3 r).
    Matern32,
    /// Matérn ν = 5/2: k(r) = σ0² (1 + √5 r + 5r²/3) exp(−√5 r).
    Matern52,
}

impl Kernel {
    /// Every kernel, for loops in tests and reports.
    pub const ALL: [Kernel; 4] = [
        Kernel::SquaredExponential,
        Kernel::Matern12,
        Kernel::Matern32,
        Kernel::Matern52,
    ];

    /// A short name: `se`, `matern12`, `matern32`, `matern52`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::SquaredExponential => "se",
            Self::Matern12 => "matern12",
            Self::Matern32 => "matern32",
            Self::Matern52 => "matern52",
        }
    }

    /// k(r)/σ0² at the scaled squared distance r² (NaN stays NaN, ∞ gives 0).
    #[inline]
    pub fn shape(&self, r2: f64) -> f64 {
        match self {
            Self::SquaredExponential => (-0.5 * r2).exp(),
            Self::Matern12 => (-r2.sqrt()).exp(),
            Self::Matern32 => {
                let a = (3.0 * r2).sqrt();
                if a == f64::INFINITY {
                    0.0
                } else {
                    (1.0 + a) * (-a).exp()
                }
            }
            Self::Matern52 => {
                let a = (5.0 * r2).sqrt();
                if a == f64::INFINITY {
                    0.0
                } else {
                    (1.0 + a + a * a / 3.0) * (-a).exp()
                }
            }
        }
    }

    /// G(r)/σ0² = −k'(r)/(r σ0²) at the scaled squared distance r²: the weight of every
    /// derivative with respect to a lengthscale or an input (0 at r = 0 for Matérn ½).
    #[inline]
    pub fn slope(&self, r2: f64) -> f64 {
        match self {
            Self::SquaredExponential => (-0.5 * r2).exp(),
            Self::Matern12 => {
                let r = r2.sqrt();
                if r > 0.0 {
                    (-r).exp() / r
                } else {
                    0.0
                }
            }
            Self::Matern32 => 3.0 * (-(3.0 * r2).sqrt()).exp(),
            Self::Matern52 => {
                let a = (5.0 * r2).sqrt();
                if a == f64::INFINITY {
                    0.0
                } else {
                    5.0 / 3.0 * (1.0 + a) * (-a).exp()
                }
            }
        }
    }

    /// The spectral density SSGP draws its unit frequencies from: N(0, I) for the squared
    /// exponential, a multivariate Student-t with 2ν degrees of freedom for Matérn ν.
    pub fn spectral_density(&self) -> Arc<dyn SpectralDensity> {
        match self {
            Self::SquaredExponential => Arc::new(SquaredExponential),
            Self::Matern12 => Arc::new(Matern::new(1)),
            Self::Matern32 => Arc::new(Matern::new(3)),
            Self::Matern52 => Arc::new(Matern::new(5)),
        }
    }
}

/// A stationary ARD covariance: the family `kernel`, lengthscales ℓ (D) and signal variance σ0².
#[derive(Debug, Clone, Copy)]
pub struct Covariance<'a> {
    /// The family.
    pub kernel: Kernel,
    /// ℓ (D).
    pub lengthscales: &'a DVector<f64>,
    /// σ0².
    pub signal_variance: f64,
}

impl Covariance<'_> {
    /// k at a scaled squared distance r² = Σ_d (τ_d/ℓ_d)².
    #[inline]
    pub fn of_squared_distance(&self, r2: f64) -> f64 {
        self.signal_variance * self.kernel.shape(r2)
    }

    /// G = −k'(r)/r at a scaled squared distance r² (see the [module docs](self)).
    #[inline]
    pub fn slope_of_squared_distance(&self, r2: f64) -> f64 {
        self.signal_variance * self.kernel.slope(r2)
    }

    /// K(a, b), n×p, for `a` n×D and `b` p×D: both centred on the column medians of `b`, scaled
    /// by ℓ, then [`Covariance::cross_scaled`].
    ///
    /// The squared distances ‖z_a‖² + ‖z_b‖² − 2z_aᵀz_b lose about ε·‖z‖² to cancellation; the
    /// median keeps ‖z‖ small for all but the outlying rows (a pseudo-input the optimiser sent
    /// far away, whose covariances are 0 anyway), where the mean would move every row away.
    pub fn cross(&self, a: &DMatrix<f64>, b: &DMatrix<f64>, par: Par) -> DMatrix<f64> {
        self.cross_about(a, b, &column_medians(b), par)
    }

    /// K(a, b) with both centred on a given `centre` (D), e.g. the medians of a fixed `b`
    /// computed once ([`column_medians`]) instead of at every call.
    pub fn cross_about(
        &self,
        a: &DMatrix<f64>,
        b: &DMatrix<f64>,
        centre: &DVector<f64>,
        par: Par,
    ) -> DMatrix<f64> {
        self.cross_scaled(
            &shift_and_scale(a, centre, self.lengthscales),
            &shift_and_scale(b, centre, self.lengthscales),
            par,
        )
    }

    /// K between inputs already shifted and scaled, `za` n×D and `zb` p×D (z = (x − c) ⊘ ℓ for a
    /// common c): n×p.
    pub fn cross_scaled(&self, za: &DMatrix<f64>, zb: &DMatrix<f64>, par: Par) -> DMatrix<f64> {
        let mut k = squared_distances(za, zb, par);
        k.apply(|v| *v = self.of_squared_distance(*v));
        k
    }

    /// K(z, z_*) and the slopes G(z, z_*) (n×n* each) between points `z` (n×D) and test inputs
    /// `zt` (n*×D), both already shifted and scaled (z = (x − c) ⊘ ℓ for a common c): one set of
    /// squared distances for both (G = K for the squared exponential).
    pub fn cross_and_slopes_scaled(
        &self,
        z: &DMatrix<f64>,
        zt: &DMatrix<f64>,
        par: Par,
    ) -> (DMatrix<f64>, DMatrix<f64>) {
        let d2 = squared_distances(z, zt, par);
        let k = d2.map(|v| self.of_squared_distance(v));
        let g = if self.kernel == Kernel::SquaredExponential {
            k.clone()
        } else {
            d2.map(|v| self.slope_of_squared_distance(v))
        };
        (k, g)
    }

    /// Adds `scale` · Σ_i C_ij ∂k(x_*j, x_i)/∂x_*j to row j of `out` (n*×D), for points `z` (n×D)
    /// and test inputs `zt` (n*×D) shifted and scaled as in
    /// [`Covariance::cross_and_slopes_scaled`], their slopes `slopes` = G (n×n*) and weights
    /// `weights` = C (n×n*):
    /// $$∂k(x_*, x_i)/∂x_{*d} = -G_i\,(z_{*d} - z_{id})/ℓ_d,$$
    /// summed term by term (O(n·n*·D)), so a test input on a point x_i adds exactly nothing for
    /// it even where G_i is large.
    ///
    /// Matérn ½ is not differentiable at r = 0: its slope is taken as 0 there, so a test input
    /// on a point x_i drops that point's term — the limit of the central difference
    /// (f(x + h) − f(x − h))/2h, the average of the one-sided slopes in one dimension.
    pub fn add_input_gradient(
        &self,
        (z, zt): (&DMatrix<f64>, &DMatrix<f64>),
        slopes: &DMatrix<f64>,
        weights: &DMatrix<f64>,
        scale: f64,
        out: &mut DMatrix<f64>,
    ) {
        for d in 0..zt.ncols() {
            let f = -scale / self.lengthscales[d];
            let zd = z.column(d);
            for j in 0..zt.nrows() {
                let t = zt[(j, d)];
                let sum: f64 = slopes
                    .column(j)
                    .iter()
                    .zip(weights.column(j).iter())
                    .zip(zd.iter())
                    .map(|((g, c), zi)| g * c * (t - zi))
                    .sum();
                out[(j, d)] += f * sum;
            }
        }
    }

    /// K(a, b) as [`Covariance::cross_about`], and the slopes G(a, b) (n×p) that weight the
    /// derivatives with respect to lengthscales and inputs — `None` for the squared exponential,
    /// where G = K.
    pub fn cross_with_slopes(
        &self,
        a: &DMatrix<f64>,
        b: &DMatrix<f64>,
        centre: &DVector<f64>,
        par: Par,
    ) -> (DMatrix<f64>, Option<DMatrix<f64>>) {
        if self.kernel == Kernel::SquaredExponential {
            return (self.cross_about(a, b, centre, par), None);
        }
        let d2 = squared_distances(
            &shift_and_scale(a, centre, self.lengthscales),
            &shift_and_scale(b, centre, self.lengthscales),
            par,
        );
        (
            d2.map(|v| self.of_squared_distance(v)),
            Some(d2.map(|v| self.slope_of_squared_distance(v))),
        )
    }

    /// K(a, b) into `k` (n×p, column major) and, when given, the slopes G(a, b) into `g`, for
    /// rows `a` (n×D) and `b` (p×D) already shifted and scaled, given as views with their squared
    /// row norms ([`row_norms`]): the one-chunk form of [`Covariance::cross_with_slopes`], run
    /// sequentially (its callers run chunks in parallel).
    pub(crate) fn cross_scaled_into(
        &self,
        a: (MatRef<'_>, &[f64]),
        b: (MatRef<'_>, &[f64]),
        k: &mut [f64],
        g: Option<&mut [f64]>,
    ) {
        match g {
            None if self.kernel == Kernel::SquaredExponential => {
                squared_distances_into(k, a, b, Par::Seq);
                exp::scaled_exp_neg_half(k, self.signal_variance);
            }
            None => {
                squared_distances_into(k, a, b, Par::Seq);
                k.iter_mut().for_each(|v| *v = self.of_squared_distance(*v));
            }
            Some(g) => {
                squared_distances_into(g, a, b, Par::Seq);
                for (kv, gv) in k.iter_mut().zip(g.iter_mut()) {
                    *kv = self.of_squared_distance(*gv);
                    *gv = self.slope_of_squared_distance(*gv);
                }
            }
        }
    }

    /// The lower triangle (diagonal included) of K(z, z) into `k` (n×n) for scaled inputs `z`
    /// (n×D): the squared distances through one symmetric rank-D update ‖z_i‖² + ‖z_j‖² − 2 z_iᵀz_j
    /// (negative values set to 0; pairs with a squared norm that overflows as in
    /// [`squared_distances`]), the diagonal exactly σ0². The strict upper triangle
    /// is scratch for the squared exponential; for the other kernels it holds the squared
    /// distances r²_ij (entry (j, i) for i > j), from which [`Covariance::slope_of_squared_distance`]
    /// gives the gradient's weights. Under [`Par::Rayon`] the columns are filled on several
    /// threads from 256 rows, each entry as on one (the same bits).
    pub fn lower_scaled(&self, z: &DMatrix<f64>, k: &mut DMatrix<f64>, par: Par) {
        let n = z.nrows();
        linalg::syrk_lower(
            linalg::view_mut(k),
            false,
            linalg::view(z).transpose(),
            1.0,
            par,
        );
        let sq: Vec<f64> = z.row_iter().map(|r| r.norm_squared()).collect();
        let data = k.as_mut_slice();
        let keep_distances = self.kernel != Kernel::SquaredExponential;
        let zv = linalg::view(z);
        // Column j below the diagonal: one kernel value (an exp for the squared exponential)
        // per entry, the same arithmetic whichever thread fills it.
        let fill = |j: usize, col: &mut [f64]| {
            col[j] = self.signal_variance;
            let sj = sq[j];
            for i in (j + 1)..n {
                let d2 = beyond_norms(sq[i], sj, || direct_distance(zv, i, zv, j)).unwrap_or_else(
                    || {
                        let d2 = sq[i] + sj - 2.0 * col[i];
                        if d2 < 0.0 {
                            0.0
                        } else {
                            d2
                        }
                    },
                );
                col[i] = if keep_distances {
                    d2
                } else {
                    self.of_squared_distance(d2)
                };
            }
        };
        match par {
            Par::Rayon(_) if n >= PARALLEL_FILL_FROM => {
                use rayon::prelude::*;
                linalg::on_pool(par, || {
                    data.par_chunks_mut(n)
                        .enumerate()
                        .for_each(|(j, col)| fill(j, col))
                });
            }
            _ => data
                .chunks_mut(n)
                .enumerate()
                .for_each(|(j, col)| fill(j, col)),
        }
        if keep_distances {
            for j in 0..n {
                for i in (j + 1)..n {
                    let d2 = data[j * n + i];
                    data[i * n + j] = d2;
                    data[j * n + i] = self.of_squared_distance(d2);
                }
            }
        }
    }
}

/// The median of each column of `x` (n×D; the upper median for even n, 0 for no rows): D
/// entries — the centre [`Covariance::cross`] uses.
pub fn column_medians(x: &DMatrix<f64>) -> DVector<f64> {
    DVector::from_iterator(
        x.ncols(),
        x.column_iter().map(|c| {
            let mut v: Vec<f64> = c.iter().copied().collect();
            if v.is_empty() {
                return 0.0;
            }
            let mid = v.len() / 2;
            *v.select_nth_unstable_by(mid, f64::total_cmp).1
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_relative_eq;

    /// Test inputs: rows × cols entries sin(0.7i − j).
    fn sines(rows: usize, cols: usize) -> DMatrix<f64> {
        DMatrix::from_fn(rows, cols, |i, j| (i as f64 * 0.7 - j as f64).sin())
    }

    /// Test inputs: rows × cols entries cos(0.3i + j).
    fn cosines(rows: usize, cols: usize) -> DMatrix<f64> {
        DMatrix::from_fn(rows, cols, |i, j| (i as f64 * 0.3 + j as f64).cos())
    }

    /// The squared-exponential covariance with lengthscales `ell` and signal variance `sf2`.
    fn squared_exponential(ell: &DVector<f64>, sf2: f64) -> Covariance<'_> {
        Covariance {
            kernel: Kernel::SquaredExponential,
            lengthscales: ell,
            signal_variance: sf2,
        }
    }

    fn by_definition(
        a: &DMatrix<f64>,
        b: &DMatrix<f64>,
        ell: &DVector<f64>,
        sf2: f64,
    ) -> DMatrix<f64> {
        DMatrix::from_fn(a.nrows(), b.nrows(), |i, j| {
            let s: f64 = (0..a.ncols())
                .map(|d| ((a[(i, d)] - b[(j, d)]) / ell[d]).powi(2))
                .sum();
            sf2 * (-0.5 * s).exp()
        })
    }

    /// The branch-free loop on finite norms gives, on every build, the bits of the clamped
    /// sum entry by entry: negative round-off to 0, a NaN kept.
    #[test]
    fn adding_the_norms_clamps_on_every_build() {
        let (rows, cols) = (11, 3);
        let mut products: Vec<f64> = (0..rows * cols)
            .map(|k| -2.0 * ((k * 5) as f64 * 0.3).cos())
            .collect();
        products[4] = f64::NAN;
        let na: Vec<f64> = (0..rows).map(|i| 0.4 + 0.1 * i as f64).collect();
        let nb: Vec<f64> = (0..cols).map(|j| 0.2 * j as f64).collect();
        let expected: Vec<u64> = (0..rows * cols)
            .map(|k| clamped_sum(products[k], na[k % rows], nb[k / rows]).to_bits())
            .collect();
        assert!(expected.contains(&0.0f64.to_bits()), "no entry was clamped");
        for build in linalg::Build::all_here() {
            let mut d2 = products.clone();
            add_norms_on(build, &mut d2, &na, &nb);
            let bits: Vec<u64> = d2.iter().map(|v| v.to_bits()).collect();
            assert_eq!(bits, expected, "{build:?}");
        }
    }

    #[test]
    fn cross_and_lower_match_the_definition() {
        let a = sines(5, 3);
        let b = cosines(4, 3);
        let ell = DVector::from_vec(vec![0.5, 1.5, 2.0]);
        let k = squared_exponential(&ell, 1.7);
        assert_relative_eq!(
            k.cross(&a, &b, Par::Seq),
            by_definition(&a, &b, &ell, 1.7),
            epsilon = 1e-13
        );
        let mut lower = DMatrix::from_element(5, 5, f64::NAN);
        k.lower_scaled(&scale_inputs(&a, &ell), &mut lower, Par::Seq);
        let dense = by_definition(&a, &a, &ell, 1.7);
        for j in 0..5 {
            for i in j..5 {
                assert_relative_eq!(lower[(i, j)], dense[(i, j)], epsilon = 1e-13);
            }
        }
    }

    /// From `PARALLEL_FILL_FROM` rows the columns are filled on several threads: every kernel's
    /// lower triangle, and the squared distances the Matérn kernels keep above it, are the same
    /// bits as on one thread (both start from zeros).
    #[test]
    fn lower_scaled_gives_the_same_bits_on_two_threads() {
        let n = PARALLEL_FILL_FROM + 45;
        let ell = DVector::from_vec(vec![0.5, 1.5, 2.0]);
        let z = scale_inputs(&sines(n, 3), &ell);
        for kernel in Kernel::ALL {
            let covariance = Covariance {
                kernel,
                lengthscales: &ell,
                signal_variance: 1.7,
            };
            let (mut one, mut two) = (DMatrix::zeros(n, n), DMatrix::zeros(n, n));
            covariance.lower_scaled(&z, &mut one, Par::Seq);
            covariance.lower_scaled(&z, &mut two, Par::rayon(2));
            let same = one
                .iter()
                .zip(two.iter())
                .all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(same, "{kernel:?}");
        }
    }

    #[test]
    fn cross_is_accurate_far_from_the_origin() {
        let a = sines(6, 2);
        let b = cosines(5, 2);
        let ell = DVector::from_vec(vec![0.5, 1.5]);
        let k = squared_exponential(&ell, 1.0);
        let near = k.cross(&a, &b, Par::Seq);
        let far = k.cross(&a.add_scalar(1e9), &b.add_scalar(1e9), Par::Seq);
        assert_relative_eq!(near, far, epsilon = 1e-5);
    }

    #[test]
    fn one_outlying_point_leaves_the_others_accurate() {
        // FITC's K_uu with one pseudo-input sent 1e12 away: the others' covariances as defined.
        let mut b = cosines(5, 2);
        b[(4, 0)] = 1e12;
        let ell = DVector::from_vec(vec![0.5, 1.5]);
        let k = squared_exponential(&ell, 1.0);
        assert_relative_eq!(
            k.cross(&b, &b, Par::Seq),
            by_definition(&b, &b, &ell, 1.0),
            epsilon = 1e-13
        );
    }
}
