//! nalgebra buffers viewed in place as faer matrices (column major, no copy).

use faer::{MatMut, MatRef};
use nalgebra::{DMatrix, DVector};

/// Views a whole nalgebra matrix as a faer matrix.
pub(crate) fn view(m: &DMatrix<f64>) -> MatRef<'_, f64> {
    MatRef::from_column_major_slice(m.as_slice(), m.nrows(), m.ncols())
}

/// Mutable faer view of a whole nalgebra matrix.
pub(crate) fn view_mut(m: &mut DMatrix<f64>) -> MatMut<'_, f64> {
    let (r, c) = m.shape();
    MatMut::from_column_major_slice_mut(m.as_mut_slice(), r, c)
}

/// Column-vector faer view of a nalgebra vector (n×1).
pub(crate) fn vector_view(v: &DVector<f64>) -> MatRef<'_, f64> {
    MatRef::from_column_major_slice(v.as_slice(), v.len(), 1)
}

/// Mutable column-vector faer view of a nalgebra vector (n×1).
pub(crate) fn vector_view_mut(v: &mut DVector<f64>) -> MatMut<'_, f64> {
    let n = v.len();
    MatMut::from_column_major_slice_mut(v.as_mut_slice(), n, 1)
}

/// Views rows `start .. start + len` of a column-major matrix (all columns).
pub(crate) fn rows_view(m: &DMatrix<f64>, start: usize, len: usize) -> MatRef<'_, f64> {
    let n = m.nrows();
    let c = m.ncols();
    if c == 0 || len == 0 {
        return MatRef::from_column_major_slice(&[], len, c);
    }
    MatRef::from_column_major_slice_with_stride(&m.as_slice()[start..], len, c, n)
}
