//! Data with several target columns (P outputs sharing the inputs), for the multi-output SSGP.

use super::csv::{CsvOptions, FirstLine, Target};
use super::{check_finite, Dataset};
use crate::error::{Error, Result};
use nalgebra::{DMatrix, DVector};
use std::path::Path;

/// A validated data set with P ≥ 1 target columns: inputs x (n×D), targets Y (n×P), all finite.
///
/// ```
/// use ssgp::data::MultiDataset;
/// use ssgp::nalgebra::DMatrix;
///
/// let x = DMatrix::from_row_slice(3, 2, &[0.0, 1.0, 0.5, 2.0, 1.0, 0.0]);
/// let y = DMatrix::from_row_slice(3, 2, &[1.0, 10.0, 2.0, 20.0, 3.0, 35.0]);
/// let data = MultiDataset::new(x, y)?;
/// assert_eq!((data.len(), data.dim(), data.outputs()), (3, 2, 2));
/// let second = data.output(1)?;                   // one output as a `Dataset`
/// assert_eq!(second.y()[2], 35.0);
/// assert!(MultiDataset::new(DMatrix::zeros(3, 2), DMatrix::zeros(2, 2)).is_err());
/// # Ok::<(), ssgp::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct MultiDataset {
    x: DMatrix<f64>,
    y: DMatrix<f64>,
}

impl MultiDataset {
    /// Builds a data set from inputs `x` (n×D) and targets `y` (n×P, one column per output).
    ///
    /// # Errors
    /// [`Error::EmptyData`] for n = 0, D = 0 or P = 0; [`Error::LengthMismatch`] if `y` has not
    /// n rows; [`Error::NonFinite`] for a NaN or infinity.
    pub fn new(x: DMatrix<f64>, y: DMatrix<f64>) -> Result<Self> {
        if y.ncols() == 0 {
            return Err(Error::EmptyData {
                what: "the targets have no columns",
            });
        }
        // The checks of a single-output data set on the first column.
        Dataset::new(x.clone(), y.column(0).into_owned())?;
        check_finite("targets", &y)?;
        Ok(Self { x, y })
    }

    /// From a list of input rows (each of D values) and of target rows (each of P values).
    ///
    /// # Errors
    /// [`Error::RaggedRows`] for rows of different lengths; as [`MultiDataset::new`].
    pub fn from_rows<R: AsRef<[f64]>, T: AsRef<[f64]>>(rows: &[R], targets: &[T]) -> Result<Self> {
        Self::new(matrix_of_rows(rows)?, matrix_of_rows(targets)?)
    }

    /// From ndarray views of the inputs (n×D) and targets (n×P), any memory order.
    ///
    /// # Errors
    /// As [`MultiDataset::new`].
    #[cfg(feature = "ndarray")]
    pub fn from_ndarray(
        x: ndarray::ArrayView2<'_, f64>,
        y: ndarray::ArrayView2<'_, f64>,
    ) -> Result<Self> {
        Self::new(super::matrix_from_ndarray(x), super::matrix_from_ndarray(y))
    }

    /// Loads a CSV file with `options` (delimiter, header, rows; its target is ignored) and the
    /// target columns `targets` (by zero-based index, by name in the header, or the last
    /// column), in that order; the other columns are the inputs, in file order. The first line
    /// is read, split and detected as a header by [`Dataset::from_csv_with`]'s own parser (a
    /// byte-order mark dropped, a quoted name holding the delimiter one column).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for no targets, a column given twice, an index beyond the
    /// columns, a name not in the header (names match exactly, as [`Target::Named`] says: the
    /// reason names a column that differs only in case) or in two of its columns, or a name when
    /// the first line is data; [`Error::Io`] and the CSV errors of [`Dataset::from_csv_with`];
    /// [`Error::DimensionMismatch`] if the file's columns changed between reading its first line
    /// and loading it.
    pub fn from_csv_with(
        path: impl AsRef<Path>,
        options: &CsvOptions,
        targets: &[Target],
    ) -> Result<Self> {
        let path = path.as_ref();
        let invalid = |reason: String| Error::InvalidParameter {
            name: "targets",
            reason,
        };
        if targets.is_empty() {
            return Err(invalid("at least one target column is needed".into()));
        }
        let first_line = FirstLine::read(path, options)?;
        let columns = first_line.columns();
        let mut index = Vec::with_capacity(targets.len());
        for t in targets {
            let i = match t {
                Target::Last => columns - 1,
                Target::Column(i) if *i < columns => *i,
                Target::Column(i) => {
                    return Err(invalid(format!(
                        "column {i} is beyond the {columns} columns"
                    )))
                }
                Target::Named(name) => first_line.named(name).map_err(invalid)?,
            };
            if index.contains(&i) {
                return Err(invalid(format!("column {i} is named twice")));
            }
            index.push(i);
        }
        let first = index[0];
        let data = Dataset::from_csv_with(path, &options.clone().target(Target::Column(first)))?;
        // Columns of data.x() are the file's without `first`.
        let shifted: Vec<usize> = index[1..]
            .iter()
            .map(|&i| if i > first { i - 1 } else { i })
            .collect();
        let (n, c) = data.x().shape();
        if c + 1 != columns {
            return Err(Error::DimensionMismatch {
                what: "CSV columns (the file changed while it was read)",
                expected: columns,
                found: c + 1,
            });
        }
        let inputs: Vec<usize> = (0..c).filter(|i| !shifted.contains(i)).collect();
        let x = DMatrix::from_fn(n, inputs.len(), |r, j| data.x()[(r, inputs[j])]);
        let y = DMatrix::from_fn(n, index.len(), |r, p| {
            if p == 0 {
                data.y()[r]
            } else {
                data.x()[(r, shifted[p - 1])]
            }
        });
        Self::new(x, y)
    }

    /// Inputs, n×D.
    pub fn x(&self) -> &DMatrix<f64> {
        &self.x
    }

    /// Targets, n×P (one column per output).
    pub fn y(&self) -> &DMatrix<f64> {
        &self.y
    }

    /// The number of points n.
    pub fn len(&self) -> usize {
        self.x.nrows()
    }

    /// Always false: a data set has at least one point.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The input dimension D.
    pub fn dim(&self) -> usize {
        self.x.ncols()
    }

    /// The number of outputs P.
    pub fn outputs(&self) -> usize {
        self.y.ncols()
    }

    /// The mean of each target column (P).
    pub fn y_means(&self) -> DVector<f64> {
        DVector::from_iterator(self.outputs(), self.y.column_iter().map(|c| c.mean()))
    }

    /// Output `p` alone as a single-output [`Dataset`] (the inputs copied).
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] for p ≥ P.
    pub fn output(&self, p: usize) -> Result<Dataset> {
        if p >= self.outputs() {
            return Err(Error::DimensionMismatch {
                what: "output index (outputs, P)",
                expected: self.outputs(),
                found: p,
            });
        }
        Dataset::new(self.x.clone(), self.y.column(p).into_owned())
    }
}

/// The rows (all of the first one's length) as a matrix.
fn matrix_of_rows<R: AsRef<[f64]>>(rows: &[R]) -> Result<DMatrix<f64>> {
    let width = rows.first().map_or(0, |r| r.as_ref().len());
    if let Some((row, r)) = rows
        .iter()
        .enumerate()
        .find(|(_, r)| r.as_ref().len() != width)
    {
        return Err(Error::RaggedRows {
            row,
            expected: width,
            found: r.as_ref().len(),
        });
    }
    Ok(DMatrix::from_fn(rows.len(), width, |i, j| {
        rows[i].as_ref()[j]
    }))
}
