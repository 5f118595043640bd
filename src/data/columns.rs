//! The input columns a model learns from: those that vary on its training data.
//!
//! A column constant on the training data carries no information about the targets — with any
//! stationary kernel it acts as if its lengthscale were infinite — so every model leaves it out
//! of θ, accepts it in predictions (and ignores it there), and names it in its training summary.

use super::{check_inputs, Dataset};
use crate::error::{Error, Result};
use nalgebra::{DMatrix, DVector};
use std::borrow::Cow;

/// Which of a data set's D input columns a model uses.
///
/// With the `serde` feature it is written as `{"used": [...], "ignored": [...]}` and checked when
/// read: every column of 0..D exactly once, each list increasing, at least one column used.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(
    feature = "serde",
    serde(try_from = "ColumnsRepr", into = "ColumnsRepr")
)]
pub struct InputColumns {
    dim: usize,
    used: Vec<usize>,
}

/// The saved form of [`InputColumns`]: the used and the ignored columns, so that D is the
/// number of entries present (a saved D of 2⁶⁰ cannot make a loop over the columns hang).
#[cfg(feature = "serde")]
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ColumnsRepr {
    used: Vec<usize>,
    ignored: Vec<usize>,
}

#[cfg(feature = "serde")]
impl From<InputColumns> for ColumnsRepr {
    fn from(columns: InputColumns) -> Self {
        Self {
            ignored: columns.ignored(),
            used: columns.used,
        }
    }
}

#[cfg(feature = "serde")]
impl TryFrom<ColumnsRepr> for InputColumns {
    type Error = Error;

    /// The columns of a saved model: D = used + ignored, each of 0..D named once, both lists
    /// increasing, at least one used.
    fn try_from(repr: ColumnsRepr) -> Result<Self> {
        let bad = |reason: String| Error::InvalidParameter {
            name: "input_columns",
            reason,
        };
        if repr.used.is_empty() {
            return Err(bad("no input column is used".into()));
        }
        let dim = repr
            .used
            .len()
            .checked_add(repr.ignored.len())
            .ok_or_else(|| bad("too many columns".into()))?;
        let mut seen = vec![false; dim];
        for (list, name) in [(&repr.used, "used"), (&repr.ignored, "ignored")] {
            if let Some(w) = list.windows(2).find(|w| w[0] >= w[1]) {
                return Err(bad(format!(
                    "the {name} columns are not increasing: {} then {}",
                    w[0], w[1]
                )));
            }
            for &d in list {
                match seen.get_mut(d) {
                    None => {
                        return Err(bad(format!(
                            "{name} column {d} is out of range for D = {dim} (used + ignored)"
                        )))
                    }
                    Some(true) => return Err(bad(format!("column {d} is both used and ignored"))),
                    Some(s) => *s = true,
                }
            }
        }
        Ok(Self {
            dim,
            used: repr.used,
        })
    }
}

impl InputColumns {
    /// Every column of D-dimensional inputs.
    pub fn all(dim: usize) -> Self {
        Self {
            dim,
            used: (0..dim).collect(),
        }
    }

    /// The columns of `data` that are not constant (their largest and smallest values differ).
    ///
    /// # Errors
    /// [`Error::EmptyData`] if every column is constant: there is nothing to regress on.
    pub fn varying(data: &Dataset) -> Result<Self> {
        let x = data.x();
        let used: Vec<usize> = (0..x.ncols())
            .filter(|&d| x.column(d).max() > x.column(d).min())
            .collect();
        Self::from_used(x.ncols(), used)
    }

    /// The columns `used` (ascending, each below `dim`) of `dim`.
    ///
    /// # Errors
    /// [`Error::EmptyData`] if no column is used: there is nothing to regress on.
    pub(crate) fn from_used(dim: usize, used: Vec<usize>) -> Result<Self> {
        if used.is_empty() {
            return Err(Error::EmptyData {
                what: "every input column is constant: there is nothing to regress on",
            });
        }
        Ok(Self { dim, used })
    }

    /// The number D of input columns of the data (used or not).
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The used columns, in increasing order.
    pub fn used(&self) -> &[usize] {
        &self.used
    }

    /// The ignored (constant) columns, in increasing order: one walk beside the (increasing)
    /// used ones, O(D) — a search of them per column was O(D²), minutes for a saved model of
    /// 10⁶ used and 10⁶ ignored columns, at every load and save.
    pub fn ignored(&self) -> Vec<usize> {
        let mut used = self.used.iter().peekable();
        (0..self.dim)
            .filter(|&d| used.next_if(|&&u| u == d).is_none())
            .collect()
    }

    /// Whether every column is used.
    pub fn all_used(&self) -> bool {
        self.used.len() == self.dim
    }

    /// `data` restricted to the used columns (borrowed when they are all used).
    pub(crate) fn select_data<'a>(&self, data: &'a Dataset) -> Result<Cow<'a, Dataset>> {
        if self.all_used() {
            return Ok(Cow::Borrowed(data));
        }
        Ok(Cow::Owned(Dataset::new(
            data.x().select_columns(&self.used),
            data.y().clone(),
        )?))
    }

    /// Test inputs `x` (n*×D) checked against D and restricted to the used columns.
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] if `x` has not D columns, [`Error::NonFinite`] for a NaN or
    /// infinity; [`Error::Allocation`] if the copy of the used columns cannot be allocated.
    pub(crate) fn select<'a>(&self, x: &'a DMatrix<f64>) -> Result<Cow<'a, DMatrix<f64>>> {
        check_inputs(x, self.dim)?;
        if self.all_used() {
            return Ok(Cow::Borrowed(x));
        }
        let mut used =
            crate::linalg::try_zeros(x.nrows(), self.used.len(), "the used input columns")?;
        for (k, &d) in self.used.iter().enumerate() {
            used.set_column(k, &x.column(d));
        }
        Ok(Cow::Owned(used))
    }

    /// Values of the used columns (one each) spread over all D columns, `fill` for the ignored.
    pub(crate) fn expand(&self, used_values: &DVector<f64>, fill: f64) -> DVector<f64> {
        let mut all = DVector::from_element(self.dim, fill);
        for (k, &d) in self.used.iter().enumerate() {
            all[d] = used_values[k];
        }
        all
    }

    /// The columns of an m×D_used matrix spread over an m×D one, `fill` in the ignored columns.
    pub(crate) fn expand_columns(&self, used: &DMatrix<f64>, fill: f64) -> DMatrix<f64> {
        let mut all = DMatrix::from_element(used.nrows(), self.dim, fill);
        for (k, &d) in self.used.iter().enumerate() {
            all.set_column(d, &used.column(k));
        }
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The walk's ignored columns are those not used, by definition, for every pattern of used
    /// columns among D = 0 … 7 (each subset by its bits).
    #[test]
    fn ignored_columns_are_the_complement_of_the_used_ones() {
        for dim in 0..8usize {
            for bits in 0u32..(1 << dim) {
                let used: Vec<usize> = (0..dim).filter(|d| bits & (1 << d) != 0).collect();
                let columns = InputColumns {
                    dim,
                    used: used.clone(),
                };
                let by_definition: Vec<usize> = (0..dim).filter(|d| !used.contains(d)).collect();
                assert_eq!(columns.ignored(), by_definition, "D = {dim}, used {used:?}");
            }
        }
    }

    #[test]
    fn constant_columns_are_found_selected_and_expanded() {
        let x = DMatrix::from_row_slice(
            3,
            4,
            &[1.0, 5.0, 2.0, 7.0, 1.0, 6.0, 2.0, 7.0, 1.0, 5.5, 2.0, 8.0],
        );
        let data = Dataset::new(x.clone(), DVector::from_vec(vec![0.0, 1.0, 2.0])).unwrap();
        let cols = InputColumns::varying(&data).unwrap();
        assert_eq!(cols.used(), &[1, 3]);
        assert_eq!(cols.ignored(), vec![0, 2]);
        assert!(!cols.all_used());
        let reduced = cols.select_data(&data).unwrap();
        assert_eq!(reduced.x(), &x.select_columns(&[1, 3]));
        assert_eq!(cols.select(&x).unwrap().as_ref(), reduced.x());
        assert!(matches!(
            cols.select(&DMatrix::zeros(2, 3)),
            Err(Error::DimensionMismatch {
                expected: 4,
                found: 3,
                ..
            })
        ));
        let ell = cols.expand(&DVector::from_vec(vec![0.5, 2.0]), f64::INFINITY);
        assert_eq!(ell.as_slice(), &[f64::INFINITY, 0.5, f64::INFINITY, 2.0]);
        let w = cols.expand_columns(&DMatrix::from_element(2, 2, 3.0), 0.0);
        assert_eq!(w.column(2).sum(), 0.0);
        assert_eq!(w.column(3).sum(), 6.0);
        let all = InputColumns::varying(
            &Dataset::new(x.columns(1, 1).into_owned(), data.y().clone()).unwrap(),
        )
        .unwrap();
        assert!(all.all_used());
        let flat = Dataset::new(DMatrix::from_element(3, 2, 4.0), data.y().clone()).unwrap();
        assert!(matches!(
            InputColumns::varying(&flat),
            Err(Error::EmptyData { .. })
        ));
    }

    #[cfg(feature = "serde")]
    #[test]
    fn saved_columns_name_every_column_once() {
        let repr = |used: &[usize], ignored: &[usize]| ColumnsRepr {
            used: used.to_vec(),
            ignored: ignored.to_vec(),
        };
        let cols = InputColumns::try_from(repr(&[1, 3], &[0, 2])).unwrap();
        assert_eq!((cols.dim(), cols.used()), (4, &[1, 3][..]));
        assert_eq!(ColumnsRepr::from(cols), repr(&[1, 3], &[0, 2]));
        for (used, ignored) in [
            (&[][..], &[0][..]),
            (&[0, 2], &[]),
            (&[0, 1], &[1]),
            (&[1, 0], &[]),
            (&[0, 0], &[1]),
            (&[0], &[usize::MAX]),
            (&[0, 1], &[3, 2]),
        ] {
            assert!(
                matches!(
                    InputColumns::try_from(repr(used, ignored)),
                    Err(Error::InvalidParameter {
                        name: "input_columns",
                        ..
                    })
                ),
                "{used:?} {ignored:?}"
            );
        }
    }
}
