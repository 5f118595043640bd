//! Data sets from plain Rust arrays: a row-major slice, a list of rows, fixed-size rows, and (with
//! the `ndarray` feature) ndarray views of any memory order.

use super::Dataset;
use crate::error::{Error, Result};
use nalgebra::{DMatrix, DVector};
#[cfg(feature = "ndarray")]
use ndarray::{ArrayView1, ArrayView2};

/// An ndarray matrix (n×D, any memory order: standard, Fortran or a strided view) as a
/// nalgebra one, e.g. test inputs for `predict`. Values are copied as they are; the model checks
/// the number of columns and finiteness when it predicts.
#[cfg(feature = "ndarray")]
pub fn matrix_from_ndarray(x: ArrayView2<'_, f64>) -> DMatrix<f64> {
    // Iterating the transpose in its logical (row-major) order visits x column by column:
    // nalgebra's storage order.
    DMatrix::from_iterator(x.nrows(), x.ncols(), x.t().iter().copied())
}

impl Dataset {
    /// Builds a data set from `n` points of `d` inputs stored **row-major** in `x` (point i's
    /// inputs are `x[i·d .. (i+1)·d]`, the layout of a C array or a flattened `Vec<[f64; d]>`)
    /// and their targets `y` (n).
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] if `x` has not n·d values (or n·d overflows), then as
    /// [`Dataset::new`]: [`Error::EmptyData`] if n = 0 or d = 0, [`Error::LengthMismatch`] if `y`
    /// has not n entries, [`Error::NonFinite`] for a NaN or infinity.
    pub fn from_row_major(x: &[f64], n: usize, d: usize, y: &[f64]) -> Result<Self> {
        let expected = n.saturating_mul(d);
        if x.len() != expected {
            return Err(Error::DimensionMismatch {
                what: "row-major inputs (n·d values)",
                expected,
                found: x.len(),
            });
        }
        Self::new(
            DMatrix::from_row_slice(n, d, x),
            DVector::from_column_slice(y),
        )
    }

    /// Builds a data set from one row of inputs per point (all of the same length D) and the
    /// targets `y` (one per row). Rows can be `Vec<f64>`, `&[f64]` or `[f64; D]`.
    ///
    /// # Errors
    /// [`Error::EmptyData`] if there are no rows or the rows are empty, [`Error::RaggedRows`]
    /// naming the first row whose length differs from row 0's, then as [`Dataset::new`].
    pub fn from_rows<R: AsRef<[f64]>>(rows: &[R], y: &[f64]) -> Result<Self> {
        let Some(first) = rows.first() else {
            return Err(Error::EmptyData {
                what: "the data set has no points",
            });
        };
        let d = first.as_ref().len();
        if let Some((row, r)) = rows.iter().enumerate().find(|(_, r)| r.as_ref().len() != d) {
            return Err(Error::RaggedRows {
                row,
                expected: d,
                found: r.as_ref().len(),
            });
        }
        let x = DMatrix::from_fn(rows.len(), d, |i, j| rows[i].as_ref()[j]);
        Self::new(x, DVector::from_column_slice(y))
    }

    /// Builds a data set from fixed-size rows, `[f64; D]` per point, and the targets `y` (one per
    /// row); the row length is checked by the compiler.
    ///
    /// # Errors
    /// [`Error::EmptyData`] if there are no rows or D = 0, then as [`Dataset::new`].
    pub fn from_array_rows<const D: usize>(rows: &[[f64; D]], y: &[f64]) -> Result<Self> {
        Self::from_row_major(rows.as_flattened(), rows.len(), D, y)
    }

    /// Builds a data set from ndarray views: inputs `x` (n×D) and targets `y` (n), in any memory
    /// order (standard, Fortran, strided views such as `a.slice(s![..;2, ..])`). The values are
    /// copied once into the data set.
    ///
    /// # Errors
    /// As [`Dataset::new`]: [`Error::EmptyData`] if n = 0 or D = 0, [`Error::LengthMismatch`] if
    /// `y` has not n entries, [`Error::NonFinite`] for a NaN or infinity.
    #[cfg(feature = "ndarray")]
    pub fn from_ndarray(x: ArrayView2<'_, f64>, y: ArrayView1<'_, f64>) -> Result<Self> {
        Self::new(
            matrix_from_ndarray(x),
            DVector::from_iterator(y.len(), y.iter().copied()),
        )
    }

    /// The inputs (n×D, standard memory order) and targets (n) as ndarray arrays.
    #[cfg(feature = "ndarray")]
    pub fn to_ndarray(&self) -> (ndarray::Array2<f64>, ndarray::Array1<f64>) {
        let x = self.x();
        (
            ndarray::Array2::from_shape_fn((x.nrows(), x.ncols()), |(i, j)| x[(i, j)]),
            ndarray::Array1::from_iter(self.y().iter().copied()),
        )
    }

    /// The data set as linfa's `DatasetBase` of n×D records and n targets (feature `linfa`), for
    /// linfa's own tools (splits, cross-validation, other models).
    ///
    /// ```
    /// use ssgp::rand::{rngs::StdRng, SeedableRng};
    /// use ssgp::{data::sinc_data, Ssgp};
    ///
    /// let data = sinc_data(60, false, 0.05, &mut StdRng::seed_from_u64(0))?;
    /// let linfa_data = data.to_linfa();
    /// assert_eq!(linfa_data.records().dim(), (60, 1));
    /// // linfa's idiom, with the crate's error type:
    /// let fitted = Ssgp::params(5).seed(1).initial_draws(5).fit(&linfa_data)?;
    /// let pred = fitted.predict(linfa_data.records())?;
    /// assert_eq!(pred, fitted.predict(data.x())?);
    /// # Ok::<(), ssgp::Error>(())
    /// ```
    #[cfg(feature = "linfa")]
    pub fn to_linfa(&self) -> linfa::DatasetBase<ndarray::Array2<f64>, ndarray::Array1<f64>> {
        let (x, y) = self.to_ndarray();
        linfa::DatasetBase::new(x, y)
    }
}
