//! Validated data sets ([`Dataset`]) from Rust arrays or CSV files, and the sinc toy problem.
//!
//! `mod.rs` holds the type, its validation and the finiteness checks the models share;
//! `columns.rs` the input columns a model uses ([`InputColumns`]: constant ones ignored);
//! `arrays.rs` the constructors from row-major slices, rows and (feature `ndarray`) ndarray
//! views; `csv.rs` the CSV loader; `inputs.rs` test inputs and training data in any form ([`Inputs`],
//! [`TrainingData`]); `multi.rs` data with several target columns ([`MultiDataset`]); `sinc.rs`
//! the toy problem of the paper's Figure 2; `problems.rs` the generated suite of small and wide
//! problems the calibration is checked on.

mod arrays;
mod columns;
mod csv;
mod inputs;
mod multi;
mod problems;
mod sinc;
mod split;

#[cfg(feature = "ndarray")]
pub use arrays::matrix_from_ndarray;
#[cfg(feature = "serde")]
pub(crate) use columns::ColumnsRepr;
pub use columns::InputColumns;
pub use csv::{CsvOptions, Header, Target};
pub use inputs::{Inputs, TrainingData};
pub use multi::MultiDataset;
pub use problems::{
    calibration_suite, messy_suite, multi_output_suite, Mess, MessyTable, MultiOutputProblem,
    Problem, Roughness,
};
pub use sinc::{sinc, sinc_data};
pub(crate) use split::{folds, held_out_split, split_leaving_targets_varying, varies_on};

use crate::error::{Error, Result};
use nalgebra::{DMatrix, DVector};

/// A regression data set: inputs `x` (n×D, one row per point) and targets `y` (n).
///
/// Checked once at construction: n ≥ 1, D ≥ 1, matching lengths, every value finite. Models take
/// `&Dataset` and never re-validate it.
///
/// ```
/// use ssgp::Dataset;
///
/// // One row of inputs per point, and the targets (or `from_csv`, `from_row_major`, ndarray).
/// let rows = vec![vec![0.0, 1.0], vec![0.5, 0.2], vec![1.0, -0.4]];
/// let data = Dataset::from_rows(&rows, &[0.3, 0.1, -0.2])?;
/// assert_eq!((data.len(), data.dim()), (3, 2));
/// assert!(Dataset::from_rows(&rows, &[0.3, f64::NAN, 0.0]).is_err());   // checked once, here
/// # Ok::<(), ssgp::Error>(())
/// ```
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
            what: "test inputs (columns)",
            expected: dim,
            found: x.ncols(),
        });
    }
    check_finite("test inputs", x)
}

impl Dataset {
    /// Builds a data set from inputs `x` (n×D) and targets `y` (n).
    ///
    /// nalgebra stores matrices **column-major**: `DMatrix::from_vec(n, d, v)` reads `v` column
    /// by column, so a `v` holding one point after the other gives scrambled inputs, with no
    /// error. For row-major values use [`Dataset::from_row_major`] (or
    /// `DMatrix::from_row_slice`), for a list of rows [`Dataset::from_rows`].
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
        check_lengths(x.nrows(), y.len())?;
        check_finite("inputs", &x)?;
        check_finite_vector("targets", &y)?;
        Ok(Self { x, y })
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

    /// The targets' (1/n) variance, var(y) = Σ(y_i − ȳ)²/n: the start of σ0² and the scale of the
    /// relative noise floor.
    pub fn y_variance(&self) -> f64 {
        variance(&self.y)
    }

    /// The targets' spread, their standard deviation √(Σ(y − ȳ)²/n), finite for targets of any
    /// finite scale (relative to the largest deviation when the squares overflow).
    pub fn y_spread(&self) -> f64 {
        standard_deviation(self.y.as_slice(), self.y_mean())
    }

    /// Checks that the targets' variance (their spread squared) is a normal, finite f64 with
    /// room to spare, as every model's variances, predictive ones included, are on the targets'
    /// scale: a spread from [`SMALLEST_TARGET_SPREAD`] to [`LARGEST_TARGET_SPREAD`].
    ///
    /// Returns the spread ([`Dataset::y_spread`]).
    ///
    /// # Errors
    /// [`Error::ConstantTargets`] if every target is the same number (their mean, rounded, may
    /// differ from it and leave a spread of round-off); [`Error::Scale`] naming the spread and
    /// the remedy.
    pub(crate) fn check_target_spread(&self) -> Result<f64> {
        check_spread(self.y.as_slice(), self.y_mean())
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

/// The points grouped by their inputs: for each point the index of its group, one group per
/// distinct input row (compared bit for bit, −0 equal to +0), numbered in the order of their
/// first point — 0, 1, …, n − 1 when no input is repeated — and the number of groups. A held-out
/// split of whole groups keeps a replicated input from being both trained on and scored on.
/// O(nD) time and O(n) memory: rows are found by a hash of their bits and compared in full.
///
/// # Errors
/// [`Error::Allocation`] if the n-entry index cannot be allocated.
pub(crate) fn groups_of_equal_inputs(x: &DMatrix<f64>) -> Result<(Vec<usize>, usize)> {
    use std::hash::{Hash, Hasher};
    let n = x.nrows();
    let bits = |v: f64| if v == 0.0 { 0 } else { v.to_bits() };
    let hash = |i: usize| {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        x.row(i).iter().for_each(|&v| bits(v).hash(&mut h));
        h.finish()
    };
    let same = |i: usize, j: usize| {
        x.row(i)
            .iter()
            .zip(x.row(j).iter())
            .all(|(a, b)| bits(*a) == bits(*b))
    };
    let too_big = || Error::Allocation {
        what: "the index of equal training inputs",
        bytes: n.saturating_mul(3 * std::mem::size_of::<usize>()),
    };
    let mut group_of: Vec<usize> = Vec::new();
    group_of.try_reserve_exact(n).map_err(|_| too_big())?;
    // Hash → a row of that group; a different row under the same key moves on to the next key.
    let mut first: std::collections::HashMap<u64, usize> = std::collections::HashMap::new();
    first.try_reserve(n).map_err(|_| too_big())?;
    let mut count = 0;
    for i in 0..n {
        let mut key = hash(i);
        let group = loop {
            match first.get(&key) {
                Some(&row) if same(row, i) => break group_of[row],
                Some(_) => key = key.wrapping_add(1),
                None => {
                    first.insert(key, i);
                    count += 1;
                    break count - 1;
                }
            }
        };
        group_of.push(group);
    }
    Ok((group_of, count))
}

/// Checks that `x_rows` rows of inputs (or predictions) and `y_len` targets agree.
///
/// # Errors
/// [`Error::LengthMismatch`] when they differ.
pub(crate) fn check_lengths(x_rows: usize, y_len: usize) -> Result<()> {
    if x_rows != y_len {
        return Err(Error::LengthMismatch { x_rows, y_len });
    }
    Ok(())
}

/// Checks a batch of new samples: `x` n×D on the model's inputs (restricted to the used
/// columns), targets `y` (n×P), both finite, each target within [`LARGEST_TARGET_SPREAD`] of its
/// output's offset ȳ (`offsets`, P: the model's, as fitted) — the bound a fit puts on the
/// targets' spread, so that the squares of the centred targets stay finite; returns the used
/// inputs.
///
/// # Errors
/// [`Error::DimensionMismatch`] for a wrong D or P, [`Error::LengthMismatch`] for rows of `x`
/// and `y` that disagree, [`Error::NonFinite`] for a NaN or infinity, [`Error::Scale`] for a
/// target too far from its ȳ.
pub(crate) fn check_new_samples<'a>(
    columns: &InputColumns,
    x: &'a DMatrix<f64>,
    y: &DMatrix<f64>,
    offsets: &[f64],
) -> Result<std::borrow::Cow<'a, DMatrix<f64>>> {
    check_lengths(x.nrows(), y.nrows())?;
    if y.ncols() != offsets.len() {
        return Err(Error::DimensionMismatch {
            what: "targets of the new samples (columns, P)",
            expected: offsets.len(),
            found: y.ncols(),
        });
    }
    crate::data::check_finite("targets of the new samples", y)?;
    for (column, &offset) in y.column_iter().zip(offsets) {
        if let Some(&target) = column
            .iter()
            .find(|&&v| (v - offset).abs() > LARGEST_TARGET_SPREAD)
        {
            return Err(Error::Scale {
                what: format!(
                    "a new target, {target:e}, lies {:e} from the model's offset ȳ = {offset:e}, \
                     beyond the {LARGEST_TARGET_SPREAD:e} a fit allows the targets' spread \
                     (its square must stay finite); fit and update on targets divided by a \
                     power of ten",
                    (target - offset).abs()
                ),
            });
        }
    }
    // No rows too: their D is checked (an empty batch of the wrong width was accepted).
    columns.select(x)
}

/// [`Dataset::check_target_spread`] on the targets `y` (at least one) whose mean is `mean`.
///
/// # Errors
/// As [`Dataset::check_target_spread`].
pub(crate) fn check_spread(y: &[f64], mean: f64) -> Result<f64> {
    if y.iter().all(|&v| v == y[0]) {
        return Err(Error::ConstantTargets { value: y[0] });
    }
    check_spread_value(standard_deviation(y, mean))
}

/// [`check_spread`]'s range checks on the `spread` ([`standard_deviation`]) of targets that are
/// not all the same number: the spread, or [`Error::Scale`] naming it and the remedy.
///
/// # Errors
/// [`Error::Scale`] for a spread outside [`SMALLEST_TARGET_SPREAD`]..=[`LARGEST_TARGET_SPREAD`].
pub(crate) fn check_spread_value(spread: f64) -> Result<f64> {
    if spread > 0.0 && spread < SMALLEST_TARGET_SPREAD {
        return Err(Error::Scale {
            what: format!(
                "the targets' spread {spread:e} is below what a Gaussian process can model \
                 in f64 (variances on their scale, down to {SMALLEST_TARGET_SPREAD:e}² = \
                 1e-304, must stay normal f64 numbers, predictive ones included); multiply \
                 them by a power of ten and divide the predictions back"
            ),
        });
    }
    if spread > LARGEST_TARGET_SPREAD || !spread.is_finite() {
        return Err(Error::Scale {
            what: format!(
                "the targets' spread {spread:e} is above what a Gaussian process can model \
                 in f64 (variances on their scale, up to {LARGEST_TARGET_SPREAD:e}² = \
                 1e300, must stay finite, predictive ones included); divide them by a power \
                 of ten and multiply the predictions back"
            ),
        });
    }
    Ok(spread)
}

/// The largest spread of the targets a model accepts: its square, 1e300, leaves room below
/// f64::MAX for the variances on the targets' scale and their sums.
pub const LARGEST_TARGET_SPREAD: f64 = 1e150;

/// The smallest spread of the targets a model accepts: its square, 1e-304, keeps the variances
/// on the targets' scale normal f64 numbers (the smallest is about 2.2e-308), with room for the
/// predictive variances' fractions of them.
pub const SMALLEST_TARGET_SPREAD: f64 = 1e-152;

/// Below this plain spread, [`standard_deviation`] takes the relative sum: the squares of
/// deviations under about 1e-154 leave the normal f64 numbers, and under about 1e-162 they are 0.
const PLAIN_SPREAD_MIN: f64 = 1e-140;

/// The (1/n) variance Σ(y_i − ȳ)²/n of `y` ([`Dataset::y_variance`], and of a target column
/// or the training rows of a check's fits).
pub(crate) fn variance(y: &DVector<f64>) -> f64 {
    let mean = y.mean();
    y.map(|v| (v - mean).powi(2)).mean()
}

/// Whether a plain √(Σ(v − mean)²/n) is the spread: its squares neither overflowed nor
/// underflowed (else [`standard_deviation`] takes the sum relative to the largest deviation).
pub(crate) fn plain_spread_holds(sd: f64) -> bool {
    sd.is_finite() && sd >= PLAIN_SPREAD_MIN
}

/// The standard deviation √(Σ(v − mean)²/n) of `values` about `mean`; when the squares
/// overflow f64 (a spread beyond about 1e154) or underflow it (below about 1e-154, where a
/// spread of 1e-200 would come out as 0), the same sum is taken relative to the largest
/// |v − mean|, so that values of any finite scale get their spread, and values that differ a
/// spread above 0 (the plain sum, and its bits, otherwise).
pub(crate) fn standard_deviation(values: &[f64], mean: f64) -> f64 {
    let n = values.len() as f64;
    let sd = (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n).sqrt();
    if plain_spread_holds(sd) {
        return sd;
    }
    let largest = values.iter().fold(0.0f64, |a, v| a.max((v - mean).abs()));
    if !largest.is_finite() || largest == 0.0 {
        return sd;
    }
    let relative = values
        .iter()
        .map(|v| ((v - mean) / largest).powi(2))
        .sum::<f64>();
    largest * (relative / n).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_inputs_are_grouped_in_order_of_their_first_point() {
        let x = DMatrix::from_row_slice(
            6,
            2,
            &[1.0, 2.0, 0.0, 1.0, 1.0, 2.0, -0.0, 1.0, 3.0, 2.0, 1.0, 2.0],
        );
        assert_eq!(
            groups_of_equal_inputs(&x).unwrap(),
            (vec![0, 1, 0, 1, 2, 0], 3),
            "−0 equals +0"
        );
        let distinct = DMatrix::from_fn(4, 3, |i, j| (i + j * 4) as f64);
        assert_eq!(
            groups_of_equal_inputs(&distinct).unwrap(),
            (vec![0, 1, 2, 3], 4)
        );
    }

    /// The spread is that of the values at any finite scale: the plain sum where its squares
    /// are normal f64 numbers (its bits), the sum relative to the largest deviation where they
    /// overflow or underflow; 0 only for equal values.
    #[test]
    fn standard_deviations_hold_at_every_scale() {
        let unit = [1.0, -1.0, 3.0, -3.0];
        let plain = standard_deviation(&unit, 0.0);
        assert_eq!(plain, 5f64.sqrt());
        for scale in [1e-320, 1e-250, 1e-200, 1e-160, 1e-150, 1e150, 1e200, 1e300] {
            let values = unit.map(|v| v * scale);
            let sd = standard_deviation(&values, 0.0);
            let expected = 5f64.sqrt() * scale;
            let tolerance = if scale < 1e-300 { 1e-2 } else { 1e-14 };
            assert!(
                ((sd - expected) / expected).abs() < tolerance,
                "{scale:e}: {sd:e} against {expected:e}"
            );
        }
        assert_eq!(standard_deviation(&[2.5e-300; 3], 2.5e-300), 0.0);
    }

    #[test]
    fn dimension_errors_name_what_was_counted() {
        let e = check_inputs(&DMatrix::zeros(2, 3), 2)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "dimension mismatch in test inputs (columns): expected 2, found 3"
        );
    }
}
