//! Updating a Cholesky factor: a rank-one update LLᵀ + xxᵀ (O(k²), no refactorisation), a
//! scaling by a forgetting factor, and a multiple of the identity added (O(k³), refactorised).

use super::{view, view_mut, Par};
use crate::error::Result;
use nalgebra::DMatrix;

/// Overwrites the lower factor `l` (k×k, A = LLᵀ) with that of A + xxᵀ, consuming `x` (k) as
/// workspace: one Givens-like rotation per column (the classic `cholupdate`),
/// $$r = \sqrt{L_{jj}^2 + x_j^2},\ c = r/L_{jj},\ s = x_j/L_{jj}:\quad
///   L_{ij} ← (L_{ij} + s x_i)/c,\ x_i ← c x_i - s L_{ij}\ (i > j),$$
/// k² multiply-adds. The strict upper triangle is not read or written. An update never loses
/// positive definiteness: every new diagonal entry is at least the old one.
///
/// Returns det(A + xxᵀ)/det(A) = Π_j c_j² = 1 + xᵀA⁻¹x (the matrix determinant lemma), one
/// multiplication per column: the leverage of x under the factor before the update, for free.
///
/// `l` must have a positive diagonal and `x.len()` must be k (checked by the callers).
pub(crate) fn rank_one_update(l: &mut DMatrix<f64>, x: &mut [f64]) -> f64 {
    let k = l.nrows();
    let mut ratio = 1.0;
    for (j, col) in l.as_mut_slice().chunks_exact_mut(k).enumerate() {
        let pairs = col[j..].iter_mut().map(|v| (*v, v));
        ratio *= rotate_column(pairs, &mut x[j..]);
    }
    ratio
}

/// [`rank_one_update`] of the factor `from` written to `to` (both k×k; `to`'s strict upper
/// triangle is left as it was): the same arithmetic, so the same bits, in one pass that reads
/// `from` without changing it — an update its caller can drop, keeping the factor it read.
pub(crate) fn rank_one_update_from(
    from: &DMatrix<f64>,
    to: &mut DMatrix<f64>,
    x: &mut [f64],
) -> f64 {
    let k = from.nrows();
    let mut ratio = 1.0;
    let columns = from.as_slice().chunks_exact(k);
    for (j, (old, new)) in columns
        .zip(to.as_mut_slice().chunks_exact_mut(k))
        .enumerate()
    {
        let pairs = old[j..].iter().copied().zip(new[j..].iter_mut());
        ratio *= rotate_column(pairs, &mut x[j..]);
    }
    ratio
}

/// Column j of a rank-one update: `pairs` yields (old L_ij, where the new L_ij goes) for
/// i = j, …, k − 1, the diagonal first; `x` is x_j, …, x_{k−1}. Returns c² (1 where x_j = 0:
/// the column is written as it was).
fn rotate_column<'a>(mut pairs: impl Iterator<Item = (f64, &'a mut f64)>, x: &mut [f64]) -> f64 {
    let Some((ljj, diagonal)) = pairs.next() else {
        return 1.0;
    };
    let xj = x[0];
    if xj == 0.0 {
        *diagonal = ljj;
        for (old, new) in pairs {
            *new = old;
        }
        return 1.0;
    }
    let r = (ljj * ljj + xj * xj).sqrt();
    let (c_inv, s) = (ljj / r, xj / ljj);
    let c = r / ljj;
    *diagonal = r;
    for ((old, new), xi) in pairs.zip(x[1..].iter_mut()) {
        let updated = (old + s * *xi) * c_inv;
        *xi = c * *xi - s * updated;
        *new = updated;
    }
    c * c
}

/// Scales the lower triangle (diagonal included) of `l` (k×k) by `factor`: the factor of
/// factor²·A.
pub(crate) fn scale_lower(l: &mut DMatrix<f64>, factor: f64) {
    let k = l.nrows();
    for (j, col) in l.as_mut_slice().chunks_exact_mut(k).enumerate() {
        for v in &mut col[j..] {
            *v *= factor;
        }
    }
}

/// [`scale_lower`] of `from` written to `to` (both k×k; `to`'s strict upper triangle is left as
/// it was), the same bits.
pub(crate) fn scale_lower_from(from: &DMatrix<f64>, to: &mut DMatrix<f64>, factor: f64) {
    let k = from.nrows();
    let columns = from.as_slice().chunks_exact(k);
    for (j, (old, new)) in columns
        .zip(to.as_mut_slice().chunks_exact_mut(k))
        .enumerate()
    {
        for (v, w) in old[j..].iter().zip(&mut new[j..]) {
            *w = v * factor;
        }
    }
}

/// Overwrites the lower factor `l` (k×k, A = LLᵀ, strict upper triangle zero) with that of
/// A + cI (c ≥ 0): A formed from L (a symmetric rank-k product, k³/3 multiply-adds), c added to
/// its diagonal, and factorised again (k³/3) — the O(k³) a full-rank change costs.
///
/// # Errors
/// [`Error::NotPositiveDefinite`](crate::error::Error::NotPositiveDefinite) naming `what` if a
/// pivot is not positive or not finite (`l` is then unchanged).
pub(crate) fn add_to_diagonal(l: &mut DMatrix<f64>, c: f64, what: &'static str) -> Result<()> {
    let k = l.nrows();
    let mut a = DMatrix::zeros(k, k);
    super::syrk_lower(view_mut(&mut a), false, view(l).transpose(), 1.0, Par::Seq);
    for i in 0..k {
        a[(i, i)] += c;
    }
    super::cholesky_in_place_lower(&mut a, what, Par::Seq)?;
    *l = a;
    Ok(())
}

/// A k×k buffer that an update writes the new factor into, so the factor it reads stays whole
/// until the update has succeeded (then the two are swapped, and the old factor is the next
/// update's buffer). A clone of the model starts without one; it is never saved.
#[derive(Debug, Default)]
pub(crate) struct SpareFactor(Option<DMatrix<f64>>);

impl Clone for SpareFactor {
    fn clone(&self) -> Self {
        Self(None)
    }
}

impl SpareFactor {
    /// The buffer, k×k: the one kept, or a new one (the first update of a model, or after a
    /// failed one).
    pub(crate) fn take(&mut self, k: usize) -> DMatrix<f64> {
        match self.0.take() {
            Some(buffer) if buffer.shape() == (k, k) => buffer,
            _ => DMatrix::zeros(k, k),
        }
    }

    /// Keeps `buffer` for the next update.
    pub(crate) fn keep(&mut self, buffer: DMatrix<f64>) {
        self.0 = Some(buffer);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_relative_eq;

    #[test]
    fn rank_one_updates_equal_refactorising() {
        let k = 9;
        let b = DMatrix::from_fn(k, k, |i, j| ((i * 7 + j * 3) as f64).sin());
        let mut a = &b * b.transpose() + DMatrix::identity(k, k) * 0.5;
        let mut l = a.clone().cholesky().unwrap().l();
        for t in 0..5 {
            let x: Vec<f64> = (0..k)
                .map(|i| ((i + 3 * t) as f64 * 0.7).cos() * if i == 2 { 0.0 } else { 1.0 })
                .collect();
            let xv = nalgebra::DVector::from_column_slice(&x);
            let leverage = (a.clone().cholesky().unwrap().inverse() * &xv).dot(&xv);
            a += &xv * xv.transpose();
            let mut work = x.clone();
            let ratio = rank_one_update(&mut l, &mut work);
            assert_relative_eq!(ratio, 1.0 + leverage, max_relative = 1e-12);
            let fresh = a.clone().cholesky().unwrap().l();
            assert_relative_eq!(l.lower_triangle(), fresh, epsilon = 1e-12);
        }
        scale_lower(&mut l, 0.5);
        let fresh = (a * 0.25).cholesky().unwrap().l();
        assert_relative_eq!(l.lower_triangle(), fresh, epsilon = 1e-12);
    }

    /// Writing the update (or the scaling) to another matrix gives the in-place result's bits
    /// in the lower triangle, leaves the source as it was and the target's strict upper
    /// triangle as it was, also where x has zeros.
    #[test]
    fn updates_written_elsewhere_are_the_in_place_bits() {
        let k = 11;
        let b = DMatrix::from_fn(k, k, |i, j| ((i * 5 + j * 2) as f64).cos());
        let l = (&b * b.transpose() + DMatrix::identity(k, k))
            .cholesky()
            .unwrap()
            .l();
        let x: Vec<f64> = (0..k)
            .map(|i| {
                if i % 4 == 1 {
                    0.0
                } else {
                    (i as f64 * 1.3).sin()
                }
            })
            .collect();
        let (mut in_place, mut work) = (l.clone(), x.clone());
        let ratio = rank_one_update(&mut in_place, &mut work);
        let upper = f64::from_bits(0x7ff8_dead_beef_0001);
        let mut elsewhere = DMatrix::from_element(k, k, upper);
        let mut work_elsewhere = x.clone();
        let ratio_elsewhere = rank_one_update_from(&l, &mut elsewhere, &mut work_elsewhere);
        assert_eq!(ratio.to_bits(), ratio_elsewhere.to_bits());
        assert_eq!(work, work_elsewhere);
        for j in 0..k {
            for i in 0..k {
                let (got, want) = (elsewhere[(i, j)], in_place[(i, j)]);
                if i >= j {
                    assert_eq!(got.to_bits(), want.to_bits(), "({i}, {j})");
                } else {
                    assert_eq!(got.to_bits(), upper.to_bits(), "({i}, {j})");
                }
            }
        }
        assert_eq!(
            l,
            (&b * b.transpose() + DMatrix::identity(k, k))
                .cholesky()
                .unwrap()
                .l()
        );
        let mut scaled = l.clone();
        scale_lower(&mut scaled, 0.3);
        let mut scaled_elsewhere = DMatrix::from_element(k, k, upper);
        scale_lower_from(&l, &mut scaled_elsewhere, 0.3);
        for j in 0..k {
            for i in j..k {
                assert_eq!(scaled[(i, j)].to_bits(), scaled_elsewhere[(i, j)].to_bits());
            }
        }
    }
}
