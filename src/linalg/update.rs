//! Updating a Cholesky factor in place: a rank-one update LLᵀ + xxᵀ (O(k²), no refactorisation),
//! and a scaling by a forgetting factor.

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
    let data = l.as_mut_slice();
    let mut ratio = 1.0;
    for j in 0..k {
        let col = &mut data[j * k..(j + 1) * k];
        let (ljj, xj) = (col[j], x[j]);
        if xj == 0.0 {
            continue;
        }
        let r = (ljj * ljj + xj * xj).sqrt();
        let (c_inv, s) = (ljj / r, xj / ljj);
        let c = r / ljj;
        ratio *= c * c;
        col[j] = r;
        for (lij, xi) in col[j + 1..].iter_mut().zip(x[j + 1..].iter_mut()) {
            let new = (*lij + s * *xi) * c_inv;
            *xi = c * *xi - s * new;
            *lij = new;
        }
    }
    ratio
}

/// Scales the lower triangle (diagonal included) of `l` (k×k) by `factor`: the factor of
/// factor²·A.
pub(crate) fn scale_lower(l: &mut DMatrix<f64>, factor: f64) {
    let k = l.nrows();
    let data = l.as_mut_slice();
    for j in 0..k {
        for v in &mut data[j * k + j..(j + 1) * k] {
            *v *= factor;
        }
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
}
