//! Kernels on triangles of at most [`BLOCK`] = 32 columns: the leaves where the recursive
//! kernels of `blas3` and `factor` stop halving (everything above them is gemms).
//!
//! - [`right_triangular`]: X ← X·L⁻ᵀ, X·L⁻¹ or X·L for a tall X (the panel kernel of the
//!   triangular solves and products), vectorised over rows — AVX2 where the CPU has it, with the
//!   same operations in the same order as the portable build, so both give the same bits;
//! - [`cholesky`], [`invert_lower`], [`lower_gram`]: the small dense factorisation, triangular
//!   inverse and L ↦ LᵀL, O(b³) scalar loops on a local copy.

use super::views::{MatMut, MatRef};

/// The largest triangle a leaf kernel takes (and the block width of the recursions above them).
pub(crate) const BLOCK: usize = 32;

/// Rows of X handled together in [`right_triangular`]: packed into a local buffer when X's rows
/// are not contiguous.
const PANEL: usize = 64;

/// Rows of a panel updated together while their running sums stay in registers.
const LANES: usize = 16;

/// Which triangular operation [`right_triangular`] applies to X (n×b) with the lower triangle L
/// (b×b).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum RightOp {
    /// X ← X·L⁻ᵀ: column j of the result is (x_j − Σ_{p<j} L_jp z_p)/L_jj, j ascending.
    SolveTransposed,
    /// X ← X·L⁻¹: column j is (x_j − Σ_{p>j} L_pj z_p)/L_jj, j descending.
    Solve,
    /// X ← X·L: column j is L_jj x_j + Σ_{p>j} L_pj x_p, j ascending (in place: the x_p it reads
    /// are not yet overwritten).
    Multiply,
}

/// The coefficients of one [`RightOp`] with L: column j's diagonal factor, in `coef[j·BLOCK + p]`
/// the weight of column p in column j, the source columns of each column in the order they are
/// combined, and the order in which the columns are computed (column indices below [`BLOCK`],
/// held as bytes in local arrays: building it allocates nothing).
struct Coefficients {
    coef: [f64; BLOCK * BLOCK],
    diag: [f64; BLOCK],
    /// Column j's sources in `sources[j][..counts[j]]`.
    sources: [[u8; BLOCK]; BLOCK],
    counts: [u8; BLOCK],
    order: [u8; BLOCK],
    b: usize,
    op: RightOp,
}

impl Coefficients {
    fn new(l: MatRef<'_>, op: RightOp) -> Self {
        let b = l.nrows();
        let mut c = Self {
            coef: [0.0; BLOCK * BLOCK],
            diag: [0.0; BLOCK],
            sources: [[0; BLOCK]; BLOCK],
            counts: [0; BLOCK],
            order: [0; BLOCK],
            b,
            op,
        };
        for j in 0..b {
            // b ≤ BLOCK = 32: every index fits in a byte.
            c.order[j] = match op {
                RightOp::Solve => (b - 1 - j) as u8,
                _ => j as u8,
            };
            let sources: &mut dyn Iterator<Item = usize> = match op {
                RightOp::SolveTransposed => &mut (0..j),
                RightOp::Solve => &mut (j + 1..b).rev(),
                RightOp::Multiply => &mut (j + 1..b),
            };
            for p in sources {
                c.sources[j][usize::from(c.counts[j])] = p as u8;
                c.counts[j] += 1;
                c.coef[j * BLOCK + p] = match op {
                    RightOp::SolveTransposed => l.at(j, p),
                    _ => l.at(p, j),
                };
            }
            c.diag[j] = match op {
                RightOp::Multiply => l.at(j, j),
                _ => 1.0 / l.at(j, j),
            };
        }
        c
    }

    /// The order in which the columns are computed.
    fn order(&self) -> impl Iterator<Item = usize> + '_ {
        self.order[..self.b].iter().map(|&j| usize::from(j))
    }

    /// Column j's source columns, in the order they are combined.
    fn sources(&self, j: usize) -> impl Iterator<Item = usize> + '_ {
        self.sources[j][..usize::from(self.counts[j])]
            .iter()
            .map(|&p| usize::from(p))
    }
}

/// Applies `op` with the lower triangle of `l` (b×b, b ≤ [`BLOCK`]; only the lower triangle is
/// read) to every row of `x` (n×b) in place: b²·n flops.
pub(crate) fn right_triangular(mut x: MatMut<'_>, l: MatRef<'_>, op: RightOp) {
    let (n, b) = (x.nrows(), x.ncols());
    assert!(b == l.nrows() && b == l.ncols() && b <= BLOCK);
    if n == 0 || b == 0 {
        return;
    }
    let c = Coefficients::new(l, op);
    if (x.row_stride() == 1 || n == 1) && x.col_stride() > 0 {
        let cs = x.col_stride() as usize;
        // SAFETY: x's rows are contiguous (unit row stride, or a single row) and its b columns
        // are `cs` apart in the buffer it borrows exclusively; `panel` stays inside rows 0..n of
        // those columns.
        unsafe { panel(x.as_mut_ptr(), cs, n, &c) };
        return;
    }
    let mut buf = [0.0; PANEL * BLOCK];
    let (rs, cs) = (x.row_stride(), x.col_stride());
    let base = x.as_mut_ptr();
    let at = |i: usize, j: usize| base.wrapping_offset(i as isize * rs + j as isize * cs);
    for r0 in (0..n).step_by(PANEL) {
        let rows = PANEL.min(n - r0);
        for i in 0..rows {
            for j in 0..b {
                // SAFETY: (r0 + i, j) is inside x's n×b shape, so inside its buffer.
                buf[j * PANEL + i] = unsafe { *at(r0 + i, j) };
            }
        }
        // SAFETY: `buf` holds b columns of PANEL rows each, `rows` ≤ PANEL of them in use.
        unsafe { panel(buf.as_mut_ptr(), PANEL, rows, &c) };
        for i in 0..rows {
            for j in 0..b {
                // SAFETY: as above; x borrows its buffer exclusively.
                unsafe { *at(r0 + i, j) = buf[j * PANEL + i] };
            }
        }
    }
}

/// [`right_triangular`] on `rows` rows of a column-major block (columns `cs` apart), through
/// the AVX2 build of [`panel_body`] where the CPU has it.
///
/// # Safety
/// `x` must point to the b columns of `c` of at least `rows` contiguous entries, `cs` apart, that
/// nothing else accesses during the call.
unsafe fn panel(x: *mut f64, cs: usize, rows: usize, c: &Coefficients) {
    #[cfg(target_arch = "x86_64")]
    {
        if super::avx2_available() {
            // SAFETY: the CPU has AVX2 (checked); the rest is this function's contract.
            unsafe { panel_avx2(x, cs, rows, c) };
            return;
        }
    }
    // SAFETY: this function's contract.
    unsafe { panel_body(x, cs, rows, c) }
}

/// [`panel_body`] compiled for AVX2 (the same operations in the same order: no FMA contraction).
///
/// # Safety
/// As [`panel`], on a CPU with AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn panel_avx2(x: *mut f64, cs: usize, rows: usize, c: &Coefficients) {
    // SAFETY: the caller's contract.
    unsafe { panel_body(x, cs, rows, c) }
}

/// The row-vectorised loop of [`right_triangular`]: for each group of [`LANES`] rows, each
/// column in `c`'s order is combined from its sources while the group's running sums stay in
/// registers.
///
/// # Safety
/// As [`panel`].
#[inline(always)]
unsafe fn panel_body(x: *mut f64, cs: usize, rows: usize, c: &Coefficients) {
    let col = |j: usize, r0: usize| x.wrapping_add(j * cs + r0);
    let full = rows - rows % LANES;
    for r0 in (0..full).step_by(LANES) {
        for j in c.order() {
            // SAFETY: rows r0..r0 + LANES ≤ rows of column j, inside the block (contract).
            let mut acc: [f64; LANES] = unsafe { *(col(j, r0) as *const [f64; LANES]) };
            if c.op == RightOp::Multiply {
                for a in &mut acc {
                    *a *= c.diag[j];
                }
            }
            for p in c.sources(j) {
                let w = c.coef[j * BLOCK + p];
                // SAFETY: as above, for column p (a different column from j).
                let src: &[f64; LANES] = unsafe { &*(col(p, r0) as *const [f64; LANES]) };
                if c.op == RightOp::Multiply {
                    for (a, s) in acc.iter_mut().zip(src) {
                        *a += w * s;
                    }
                } else {
                    for (a, s) in acc.iter_mut().zip(src) {
                        *a -= w * s;
                    }
                }
            }
            if c.op != RightOp::Multiply {
                for a in &mut acc {
                    *a *= c.diag[j];
                }
            }
            // SAFETY: as above; no reference into column j is alive.
            unsafe { *(col(j, r0) as *mut [f64; LANES]) = acc };
        }
    }
    for r in full..rows {
        for j in c.order() {
            // SAFETY: row r < rows of columns j and p, inside the block (contract).
            unsafe {
                let mut acc = *col(j, r);
                if c.op == RightOp::Multiply {
                    acc *= c.diag[j];
                }
                for p in c.sources(j) {
                    let w = c.coef[j * BLOCK + p];
                    if c.op == RightOp::Multiply {
                        acc += w * *col(p, r);
                    } else {
                        acc -= w * *col(p, r);
                    }
                }
                if c.op != RightOp::Multiply {
                    acc *= c.diag[j];
                }
                *col(j, r) = acc;
            }
        }
    }
}

/// The lower triangle of `a` (b×b, b ≤ [`BLOCK`]) as a dense local array (column-major, leading
/// dimension [`BLOCK`]).
fn load_lower(a: MatRef<'_>) -> [f64; BLOCK * BLOCK] {
    let mut t = [0.0; BLOCK * BLOCK];
    for j in 0..a.ncols() {
        for i in j..a.nrows() {
            t[j * BLOCK + i] = a.at(i, j);
        }
    }
    t
}

/// Writes the lower triangle of a local array back into `a`; its strict upper triangle is not
/// touched.
fn store_lower(mut a: MatMut<'_>, t: &[f64; BLOCK * BLOCK]) {
    for j in 0..a.ncols() {
        for i in j..a.nrows() {
            a.set(i, j, t[j * BLOCK + i]);
        }
    }
}

/// Cholesky factorisation A = LLᵀ of a b×b block (b ≤ [`BLOCK`]) in place, reading and writing
/// only its lower triangle (right-looking, column by column: b³/3 flops).
///
/// # Errors
/// The index of the first pivot that is not positive (or not finite); `a` is then partly
/// overwritten.
pub(crate) fn cholesky(a: MatMut<'_>) -> Result<(), usize> {
    let b = a.nrows();
    let mut t = load_lower(a.rb());
    for j in 0..b {
        let d = t[j * BLOCK + j];
        if !(d > 0.0 && d.is_finite()) {
            return Err(j);
        }
        let ljj = d.sqrt();
        t[j * BLOCK + j] = ljj;
        for i in j + 1..b {
            t[j * BLOCK + i] /= ljj;
        }
        for c in j + 1..b {
            let lcj = t[j * BLOCK + c];
            for i in c..b {
                t[c * BLOCK + i] -= t[j * BLOCK + i] * lcj;
            }
        }
    }
    store_lower(a, &t);
    Ok(())
}

/// L⁻¹ of a lower-triangular b×b block (b ≤ [`BLOCK`]) into the lower triangle of `dst`, column by
/// column by forward substitution with the rows of L scaled by their diagonal first,
/// X_ij = −Σ_{j≤p<i} (L_ip/L_ii) X_pj (b³/3 flops), so that a badly scaled factor whose inverse is
/// representable does not overflow on the way. Only lower triangles are read or written.
pub(crate) fn invert_lower(dst: MatMut<'_>, l: MatRef<'_>) {
    let b = l.nrows();
    let mut t = load_lower(l);
    for i in 0..b {
        let d = t[i * BLOCK + i];
        for p in 0..i {
            t[p * BLOCK + i] /= d;
        }
    }
    let mut x = [0.0; BLOCK * BLOCK];
    for j in 0..b {
        x[j * BLOCK + j] = 1.0 / t[j * BLOCK + j];
        for i in j + 1..b {
            let s: f64 = (j..i).map(|p| t[p * BLOCK + i] * x[j * BLOCK + p]).sum();
            x[j * BLOCK + i] = -s;
        }
    }
    store_lower(dst, &x);
}

/// `dst ← XᵀX` on the lower triangle, for a lower-triangular b×b block X (b ≤ [`BLOCK`]; only
/// its lower triangle is read): (XᵀX)_ij = Σ_{p ≥ i} X_pi X_pj for i ≥ j. Only the lower
/// triangle of `dst` is written.
pub(crate) fn lower_gram(dst: MatMut<'_>, x: MatRef<'_>) {
    let b = x.nrows();
    let t = load_lower(x);
    let mut g = [0.0; BLOCK * BLOCK];
    for j in 0..b {
        for i in j..b {
            let s: f64 = (i..b).map(|p| t[i * BLOCK + p] * t[j * BLOCK + p]).sum();
            g[j * BLOCK + i] = s;
        }
    }
    store_lower(dst, &g);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linalg::{view, view_mut};
    use approx::assert_relative_eq;
    use nalgebra::DMatrix;

    fn lower(b: usize) -> DMatrix<f64> {
        DMatrix::from_fn(b, b, |i, j| {
            if i == j {
                2.0 + (i as f64 * 0.3).cos()
            } else if i > j {
                ((i * 5 + j * 3) as f64).sin() * 0.4
            } else {
                f64::NAN
            }
        })
    }

    /// Each operation against its dense definition, on column-major X (in place) and on a
    /// transposed view (packed), with row counts that leave a remainder after the lanes; and
    /// the portable loop gives the AVX2 build's bits.
    #[test]
    fn right_triangular_ops_match_their_definitions() {
        for b in [1, 7, 32] {
            let l = lower(b);
            let lt = l.lower_triangle();
            for n in [1, 17, 150] {
                let x0 = DMatrix::from_fn(n, b, |i, j| ((i * 7 + j) as f64 * 0.1).cos());
                for (op, expected) in [
                    (
                        RightOp::SolveTransposed,
                        &x0 * lt.transpose().try_inverse().unwrap(),
                    ),
                    (RightOp::Solve, &x0 * lt.clone().try_inverse().unwrap()),
                    (RightOp::Multiply, &x0 * &lt),
                ] {
                    let mut x = x0.clone();
                    right_triangular(view_mut(&mut x), view(&l), op);
                    assert_relative_eq!(x, expected, epsilon = 1e-10);
                    let mut xt = x0.transpose();
                    right_triangular(view_mut(&mut xt).transpose_mut(), view(&l), op);
                    assert_eq!(xt.transpose(), x, "row-major and column-major differ");
                    // Neither stride 1: every other row of a transposed wider matrix (packed).
                    let mut wide = DMatrix::from_fn(b, 2 * n, |j, i| {
                        if i % 2 == 0 {
                            x0[(i / 2, j)]
                        } else {
                            f64::NAN
                        }
                    });
                    let v = view_mut(&mut wide).transpose_mut();
                    right_triangular(v.every_other_row(), view(&l), op);
                    let packed = DMatrix::from_fn(n, b, |i, j| wide[(j, 2 * i)]);
                    assert_eq!(packed, x, "packed and in-place differ");
                    let mut portable = x0.clone();
                    let c = Coefficients::new(view(&l), op);
                    // SAFETY: `portable` is n×b column-major, borrowed exclusively.
                    unsafe { panel_body(portable.as_mut_ptr(), n, n, &c) };
                    assert_eq!(portable, x, "portable and dispatched builds differ");
                }
            }
        }
    }

    #[test]
    fn small_factorisation_inverse_and_gram() {
        let b = 29;
        let l = lower(b).lower_triangle();
        let a = &l * l.transpose();
        let mut f = a.clone();
        for j in 1..b {
            for i in 0..j {
                f[(i, j)] = -7.0;
            }
        }
        cholesky(view_mut(&mut f)).unwrap();
        assert_relative_eq!(f.lower_triangle(), l, epsilon = 1e-12);
        assert_eq!(f[(0, 1)], -7.0, "upper triangle written");
        let mut inv = DMatrix::from_element(b, b, -7.0);
        invert_lower(view_mut(&mut inv), view(&lower(b)));
        assert_relative_eq!(
            inv.lower_triangle() * &l,
            DMatrix::identity(b, b),
            epsilon = 1e-12
        );
        assert_eq!(inv[(0, 1)], -7.0, "upper triangle written");
        let mut g = DMatrix::from_element(b, b, 1.0);
        lower_gram(view_mut(&mut g), view(&lower(b)));
        let expected = l.transpose() * &l;
        assert_relative_eq!(
            g.lower_triangle(),
            expected.lower_triangle(),
            epsilon = 1e-12
        );
        assert_eq!(g[(0, 1)], 1.0, "upper triangle written");
        let mut bad = DMatrix::from_row_slice(2, 2, &[1.0, 0.0, 3.0, 1.0]);
        assert_eq!(cholesky(view_mut(&mut bad)), Err(1));
    }
}
