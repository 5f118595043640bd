//! Validated data sets, CSV loading and the sinc toy problem.

use crate::error::{Error, Result};
use nalgebra::{DMatrix, DVector};
use rand::Rng;
use rand_distr::{Distribution, Normal};
use std::path::Path;

/// A regression data set: inputs `x` (n×D, one row per point) and targets `y` (n).
///
/// Checked once at construction: n ≥ 1, D ≥ 1, matching lengths, every value finite. Models take
/// `&Dataset` and never re-validate it.
#[derive(Debug, Clone, PartialEq)]
pub struct Dataset {
    x: DMatrix<f64>,
    y: DVector<f64>,
}

/// Returns an error naming the first non-finite entry of `m`, if any.
pub(crate) fn check_finite(what: &'static str, m: &DMatrix<f64>) -> Result<()> {
    for col in 0..m.ncols() {
        for row in 0..m.nrows() {
            let value = m[(row, col)];
            if !value.is_finite() {
                return Err(Error::NonFinite {
                    what,
                    row,
                    col,
                    value,
                });
            }
        }
    }
    Ok(())
}

/// Returns an error naming the first non-finite entry of `v`, if any.
pub(crate) fn check_finite_vector(what: &'static str, v: &DVector<f64>) -> Result<()> {
    match v.iter().enumerate().find(|(_, x)| !x.is_finite()) {
        Some((row, &value)) => Err(Error::NonFinite {
            what,
            row,
            col: 0,
            value,
        }),
        None => Ok(()),
    }
}

/// Checks a matrix of test inputs against the training dimension D.
pub(crate) fn check_inputs(x: &DMatrix<f64>, dim: usize) -> Result<()> {
    if x.ncols() != dim {
        return Err(Error::DimensionMismatch {
            what: "test inputs",
            expected: dim,
            found: x.ncols(),
        });
    }
    check_finite("test inputs", x)
}

impl Dataset {
    /// Builds a data set from inputs `x` (n×D) and targets `y` (n).
    ///
    /// # Errors
    /// [`Error::EmptyData`] if n = 0 or D = 0, [`Error::LengthMismatch`] if `y` has not n entries,
    /// [`Error::NonFinite`] for a NaN or infinity anywhere.
    pub fn new(x: DMatrix<f64>, y: DVector<f64>) -> Result<Self> {
        if x.nrows() == 0 || y.is_empty() {
            return Err(Error::EmptyData {
                what: "the data set has no points",
            });
        }
        if x.ncols() == 0 {
            return Err(Error::EmptyData {
                what: "the inputs have no columns",
            });
        }
        if x.nrows() != y.len() {
            return Err(Error::LengthMismatch {
                x_rows: x.nrows(),
                y_len: y.len(),
            });
        }
        check_finite("inputs", &x)?;
        check_finite_vector("targets", &y)?;
        Ok(Self { x, y })
    }

    /// Loads a comma-separated file with no header, one point per line, the target in the **last**
    /// column. Blank lines are skipped.
    ///
    /// # Errors
    /// [`Error::Io`] if the file cannot be read; [`Error::Csv`] naming the file and line of a
    /// non-number or a line whose number of columns differs from the first line's; then as [`Dataset::new`].
    pub fn from_csv(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse_csv(&text, path)
    }

    /// Parses CSV text (as [`Dataset::from_csv`]); `path` is only used in error messages.
    ///
    /// # Errors
    /// As [`Dataset::from_csv`].
    pub fn parse_csv(text: &str, path: &Path) -> Result<Self> {
        let csv_err = |line: usize, reason: String| Error::Csv {
            path: path.to_path_buf(),
            line,
            reason,
        };
        let mut values: Vec<f64> = Vec::new();
        let mut cols = 0usize;
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() {
                continue;
            }
            let start = values.len();
            for (j, field) in line.split(',').enumerate() {
                let field = field.trim();
                let v: f64 = field.parse().map_err(|_| {
                    csv_err(
                        i + 1,
                        format!("column {}: `{field}` is not a number", j + 1),
                    )
                })?;
                values.push(v);
            }
            let found = values.len() - start;
            if cols == 0 {
                if found < 2 {
                    return Err(csv_err(
                        i + 1,
                        format!("{found} column(s): need at least one input and a target"),
                    ));
                }
                cols = found;
            } else if found != cols {
                return Err(csv_err(
                    i + 1,
                    format!("{found} columns, but the first line has {cols}"),
                ));
            }
        }
        if cols == 0 {
            return Err(Error::EmptyData {
                what: "the CSV file has no data lines",
            });
        }
        let n = values.len() / cols;
        let all = DMatrix::from_row_slice(n, cols, &values);
        let x = all.columns(0, cols - 1).into_owned();
        let y = all.column(cols - 1).into_owned();
        Self::new(x, y)
    }

    /// Inputs, n×D (one row per point).
    pub fn x(&self) -> &DMatrix<f64> {
        &self.x
    }

    /// Targets, n.
    pub fn y(&self) -> &DVector<f64> {
        &self.y
    }

    /// Number of points n.
    pub fn len(&self) -> usize {
        self.y.len()
    }

    /// Always false: a `Dataset` has at least one point.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Input dimension D.
    pub fn dim(&self) -> usize {
        self.x.ncols()
    }

    /// Mean of the targets, ȳ.
    pub fn y_mean(&self) -> f64 {
        self.y.mean()
    }

    /// The rows with the given indices, as a new data set.
    ///
    /// # Errors
    /// [`Error::EmptyData`] if `rows` is empty, [`Error::InvalidParameter`] for an index ≥ n.
    pub fn subset(&self, rows: &[usize]) -> Result<Self> {
        if let Some(&bad) = rows.iter().find(|&&r| r >= self.len()) {
            return Err(Error::InvalidParameter {
                name: "rows",
                reason: format!("row {bad} is out of range for {} points", self.len()),
            });
        }
        let x = self.x.select_rows(rows);
        let y = DVector::from_iterator(rows.len(), rows.iter().map(|&r| self.y[r]));
        Self::new(x, y)
    }
}

/// sinc(x) = sin(πx)/(πx), with sinc(0) = 1.
pub fn sinc(x: f64) -> f64 {
    if x == 0.0 {
        1.0
    } else {
        let px = std::f64::consts::PI * x;
        px.sin() / px
    }
}

/// The sinc toy of the paper's Figure 2: `n` inputs uniform in [−1, 5] (or, with `grid`, evenly spaced
/// over it) and targets sinc(x) + N(0, `noise_std`²).
///
/// # Errors
/// [`Error::EmptyData`] if `n` = 0; [`Error::InvalidParameter`] for a negative or non-finite `noise_std`.
pub fn sinc_data<R: Rng + ?Sized>(
    n: usize,
    grid: bool,
    noise_std: f64,
    rng: &mut R,
) -> Result<Dataset> {
    let noise = Normal::new(0.0, noise_std).map_err(|e| Error::InvalidParameter {
        name: "noise_std",
        reason: e.to_string(),
    })?;
    let x: Vec<f64> = if grid {
        let step = if n > 1 { 6.0 / (n - 1) as f64 } else { 0.0 };
        (0..n).map(|i| -1.0 + step * i as f64).collect()
    } else {
        (0..n).map(|_| rng.random_range(-1.0..5.0)).collect()
    };
    let y: Vec<f64> = x.iter().map(|&xi| sinc(xi) + noise.sample(rng)).collect();
    Dataset::new(DMatrix::from_vec(n, 1, x), DVector::from_vec(y))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_errors_name_file_and_line() {
        let p = Path::new("f.csv");
        let ok = Dataset::parse_csv("1,2,3\n\n4,5,6\n", p).unwrap();
        assert_eq!((ok.len(), ok.dim()), (2, 2));
        assert_eq!(ok.y()[1], 6.0);
        let e = Dataset::parse_csv("1,2,3\n4,x,6\n", p)
            .unwrap_err()
            .to_string();
        assert!(e.contains("f.csv:2") && e.contains("`x`"), "{e}");
        let e = Dataset::parse_csv("1,2,3\n4,5\n", p)
            .unwrap_err()
            .to_string();
        assert!(e.contains("f.csv:2") && e.contains("2 columns"), "{e}");
        assert!(matches!(
            Dataset::parse_csv("", p),
            Err(Error::EmptyData { .. })
        ));
        assert!(matches!(
            Dataset::parse_csv("1,nan\n", p),
            Err(Error::NonFinite { .. })
        ));
    }
}
