//! Strided views of column-major `f64` buffers — [`MatRef`] and [`MatMut`], the currency of the
//! kernels in this module — and nalgebra buffers seen through them (no copy).
//!
//! A view is a pointer, a shape and two strides (in elements): entry (i, j) sits at
//! `ptr + i·row_stride + j·col_stride`. Transposing swaps the shape and the strides, so a kernel
//! written for one layout serves the other. Strides are never negative.

use nalgebra::{DMatrix, DVector};
use std::marker::PhantomData;

/// A read-only view of an `nrows`×`ncols` matrix, borrowed for `'a` (like `&'a [f64]`).
#[derive(Clone, Copy)]
pub(crate) struct MatRef<'a> {
    ptr: *const f64,
    nrows: usize,
    ncols: usize,
    rs: isize,
    cs: isize,
    _borrow: PhantomData<&'a [f64]>,
}

/// A mutable view of an `nrows`×`ncols` matrix, borrowed for `'a` (like `&'a mut [f64]`).
pub(crate) struct MatMut<'a> {
    ptr: *mut f64,
    nrows: usize,
    ncols: usize,
    rs: isize,
    cs: isize,
    _borrow: PhantomData<&'a mut [f64]>,
}

// SAFETY: a `MatRef` is a shared borrow of `f64`s, as `&[f64]` (which is Send and Sync).
unsafe impl Send for MatRef<'_> {}
// SAFETY: as above.
unsafe impl Sync for MatRef<'_> {}
// SAFETY: a `MatMut` is an exclusive borrow of `f64`s, as `&mut [f64]` (which is Send and Sync).
unsafe impl Send for MatMut<'_> {}
// SAFETY: as above; `&MatMut` only reads.
unsafe impl Sync for MatMut<'_> {}

/// Checks that a column-major `rows`×`cols` matrix with column stride `ld` fits in `len`
/// elements (an internal invariant: every caller builds its views from its own buffers).
fn check_fits(len: usize, rows: usize, cols: usize, ld: usize) {
    assert!(
        rows == 0 || cols == 0 || (rows <= ld && (cols - 1) * ld + rows <= len),
        "a {rows}×{cols} view with column stride {ld} does not fit in {len} elements"
    );
}

impl<'a> MatRef<'a> {
    /// The `rows`×`cols` column-major matrix at the start of `data` (column stride `rows`).
    pub fn from_column_major_slice(data: &'a [f64], rows: usize, cols: usize) -> Self {
        Self::from_column_major_slice_with_stride(data, rows, cols, rows)
    }

    /// The `rows`×`cols` column-major matrix at the start of `data` with column stride `ld`.
    pub fn from_column_major_slice_with_stride(
        data: &'a [f64],
        rows: usize,
        cols: usize,
        ld: usize,
    ) -> Self {
        check_fits(data.len(), rows, cols, ld);
        Self {
            ptr: data.as_ptr(),
            nrows: rows,
            ncols: cols,
            rs: 1,
            cs: ld as isize,
            _borrow: PhantomData,
        }
    }

    /// The number of rows.
    pub fn nrows(&self) -> usize {
        self.nrows
    }

    /// The number of columns.
    pub fn ncols(&self) -> usize {
        self.ncols
    }

    /// The distance between rows, in elements.
    pub fn row_stride(&self) -> isize {
        self.rs
    }

    /// The distance between columns, in elements.
    pub fn col_stride(&self) -> isize {
        self.cs
    }

    /// The pointer to entry (0, 0).
    pub fn as_ptr(&self) -> *const f64 {
        self.ptr
    }

    /// The transposed view (no copy).
    pub fn transpose(self) -> Self {
        Self {
            nrows: self.ncols,
            ncols: self.nrows,
            rs: self.cs,
            cs: self.rs,
            ..self
        }
    }

    /// The `rows`×`cols` block whose top-left entry is (i, j).
    pub fn submatrix(self, i: usize, j: usize, rows: usize, cols: usize) -> Self {
        assert!(i + rows <= self.nrows && j + cols <= self.ncols);
        Self {
            ptr: self.ptr.wrapping_offset(self.offset(i, j)),
            nrows: rows,
            ncols: cols,
            ..self
        }
    }

    /// Columns `j .. j + cols`.
    pub fn subcols(self, j: usize, cols: usize) -> Self {
        self.submatrix(0, j, self.nrows, cols)
    }

    /// Rows `i .. i + rows`.
    pub fn subrows(self, i: usize, rows: usize) -> Self {
        self.submatrix(i, 0, rows, self.ncols)
    }

    /// Entry (i, j).
    pub fn at(&self, i: usize, j: usize) -> f64 {
        assert!(i < self.nrows && j < self.ncols);
        // SAFETY: (i, j) is inside the view (checked above), so inside the borrowed buffer.
        unsafe { *self.ptr.offset(self.offset(i, j)) }
    }

    fn offset(&self, i: usize, j: usize) -> isize {
        i as isize * self.rs + j as isize * self.cs
    }
}

impl<'a> MatMut<'a> {
    /// The `rows`×`cols` column-major matrix at the start of `data` (column stride `rows`).
    pub fn from_column_major_slice_mut(data: &'a mut [f64], rows: usize, cols: usize) -> Self {
        check_fits(data.len(), rows, cols, rows);
        Self {
            ptr: data.as_mut_ptr(),
            nrows: rows,
            ncols: cols,
            rs: 1,
            cs: rows as isize,
            _borrow: PhantomData,
        }
    }

    /// The number of rows.
    pub fn nrows(&self) -> usize {
        self.nrows
    }

    /// The number of columns.
    pub fn ncols(&self) -> usize {
        self.ncols
    }

    /// The distance between rows, in elements.
    pub fn row_stride(&self) -> isize {
        self.rs
    }

    /// The distance between columns, in elements.
    pub fn col_stride(&self) -> isize {
        self.cs
    }

    /// The pointer to entry (0, 0).
    pub fn as_mut_ptr(&mut self) -> *mut f64 {
        self.ptr
    }

    /// A read-only view of the same entries, for as long as this borrow.
    pub fn rb(&self) -> MatRef<'_> {
        MatRef {
            ptr: self.ptr,
            nrows: self.nrows,
            ncols: self.ncols,
            rs: self.rs,
            cs: self.cs,
            _borrow: PhantomData,
        }
    }

    /// A shorter mutable borrow of the same entries.
    pub fn rb_mut(&mut self) -> MatMut<'_> {
        MatMut {
            ptr: self.ptr,
            nrows: self.nrows,
            ncols: self.ncols,
            rs: self.rs,
            cs: self.cs,
            _borrow: PhantomData,
        }
    }

    /// The transposed view (no copy).
    pub fn transpose_mut(self) -> Self {
        Self {
            nrows: self.ncols,
            ncols: self.nrows,
            rs: self.cs,
            cs: self.rs,
            ..self
        }
    }

    /// The `rows`×`cols` block whose top-left entry is (i, j).
    pub fn submatrix_mut(self, i: usize, j: usize, rows: usize, cols: usize) -> Self {
        assert!(i + rows <= self.nrows && j + cols <= self.ncols);
        Self {
            ptr: self.ptr.wrapping_offset(self.offset(i, j)),
            nrows: rows,
            ncols: cols,
            ..self
        }
    }

    /// Columns `.. j` and `j ..` as two disjoint views.
    pub fn split_at_col_mut(self, j: usize) -> (Self, Self) {
        let (rows, cols) = (self.nrows, self.ncols);
        // Both halves start as copies of this view's fields; they cover disjoint columns.
        let right = MatMut { ..self };
        (
            self.submatrix_mut(0, 0, rows, j),
            right.submatrix_mut(0, j, rows, cols - j),
        )
    }

    /// Rows `.. i` and `i ..` as two disjoint views.
    pub fn split_at_row_mut(self, i: usize) -> (Self, Self) {
        let (top, bottom) = self.transpose_mut().split_at_col_mut(i);
        (top.transpose_mut(), bottom.transpose_mut())
    }

    /// The blocks of a square k×k view's lower block triangle split at h, as three disjoint
    /// views: (A₁₁ h×h, A₂₁ (k − h)×h, A₂₂ (k − h)×(k − h)); A₁₂ is left out.
    pub fn lower_blocks(self, h: usize) -> (Self, Self, Self) {
        let k = self.nrows;
        let (left, right) = self.split_at_col_mut(h);
        let (a11, a21) = left.split_at_row_mut(h);
        (a11, a21, right.submatrix_mut(h, 0, k - h, k - h))
    }

    /// Entry (i, j).
    pub fn at(&self, i: usize, j: usize) -> f64 {
        self.rb().at(i, j)
    }

    /// Sets entry (i, j) to `v`.
    pub fn set(&mut self, i: usize, j: usize, v: f64) {
        assert!(i < self.nrows && j < self.ncols);
        // SAFETY: (i, j) is inside the view (checked above), so inside the borrowed buffer, which
        // this view borrows exclusively.
        unsafe { *self.ptr.offset(self.offset(i, j)) = v }
    }

    /// Sets every entry to `v`.
    pub fn fill(&mut self, v: f64) {
        for j in 0..self.ncols {
            for i in 0..self.nrows {
                self.set(i, j, v);
            }
        }
    }

    fn offset(&self, i: usize, j: usize) -> isize {
        i as isize * self.rs + j as isize * self.cs
    }
}

/// Views a whole nalgebra matrix.
pub(crate) fn view(m: &DMatrix<f64>) -> MatRef<'_> {
    MatRef::from_column_major_slice(m.as_slice(), m.nrows(), m.ncols())
}

/// Mutable view of a whole nalgebra matrix.
pub(crate) fn view_mut(m: &mut DMatrix<f64>) -> MatMut<'_> {
    let (r, c) = m.shape();
    MatMut::from_column_major_slice_mut(m.as_mut_slice(), r, c)
}

/// Column-vector view of a nalgebra vector (n×1).
pub(crate) fn vector_view(v: &DVector<f64>) -> MatRef<'_> {
    MatRef::from_column_major_slice(v.as_slice(), v.len(), 1)
}

/// Mutable column-vector view of a nalgebra vector (n×1).
pub(crate) fn vector_view_mut(v: &mut DVector<f64>) -> MatMut<'_> {
    let n = v.len();
    MatMut::from_column_major_slice_mut(v.as_mut_slice(), n, 1)
}

/// Views rows `start .. start + len` of a column-major matrix (all columns).
pub(crate) fn rows_view(m: &DMatrix<f64>, start: usize, len: usize) -> MatRef<'_> {
    let n = m.nrows();
    let c = m.ncols();
    if c == 0 || len == 0 {
        return MatRef {
            ptr: m.as_slice().as_ptr(),
            nrows: len,
            ncols: c,
            rs: 1,
            cs: len as isize,
            _borrow: PhantomData,
        };
    }
    MatRef::from_column_major_slice_with_stride(&m.as_slice()[start..], len, c, n)
}

#[cfg(test)]
impl MatMut<'_> {
    /// Rows 0, 2, 4, …: a view with no unit stride, for tests of the kernels' general path.
    pub fn every_other_row(self) -> Self {
        Self {
            nrows: self.nrows.div_ceil(2),
            rs: self.rs * 2,
            ..self
        }
    }
}
