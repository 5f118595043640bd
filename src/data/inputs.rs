//! Data in whatever form it comes: [`Inputs`] (test inputs for `predict`, `predict_mean`,
//! `predict_covariance`, `sample_joint`) and [`TrainingData`] (what the builders' `fit` takes),
//! each implemented for the forms the crate trains from, so that a model predicts from what it was
//! trained on.

use super::Dataset;
use crate::error::{Error, Result};
use nalgebra::DMatrix;
use std::borrow::Cow;

/// Test inputs (n*×D) in any of the crate's forms: `DMatrix<f64>`, rows (`[Vec<f64>]`,
/// `Vec<Vec<f64>>`, `[[f64; D]]`, `Vec<[f64; D]>`, `[&[f64]]`), a [`Dataset`] (its inputs), and
/// with the `ndarray` feature any ndarray matrix or view (any memory order). Every fitted model's
/// inherent `predict`, `predict_mean`, `predict_covariance` and `sample_joint` take `&impl Inputs`;
/// the object-safe [`FittedRegressor`](crate::model::FittedRegressor) takes `&DMatrix<f64>`
/// (convert with [`Inputs::to_matrix`]).
///
/// ```
/// use ssgp::rand::{rngs::StdRng, SeedableRng};
/// use ssgp::{data::sinc_data, Ssgp};
///
/// let train = sinc_data(60, false, 0.05, &mut StdRng::seed_from_u64(0))?;
/// let fitted = Ssgp::params(8).seed(1).initial_draws(5).fit(&train)?;
/// let rows: Vec<Vec<f64>> = vec![vec![0.5], vec![1.5]];
/// let fixed: [[f64; 1]; 2] = [[0.5], [1.5]];
/// let a = fitted.predict(&rows)?;          // rows
/// let b = fitted.predict(&fixed[..])?;     // fixed-size rows
/// assert_eq!(a, b);                        // the same bits, whatever the form
/// # Ok::<(), ssgp::Error>(())
/// ```
pub trait Inputs {
    /// The inputs as an n*×D matrix: borrowed when they already are one, copied otherwise.
    ///
    /// # Errors
    /// [`Error::RaggedRows`] for rows of different lengths; [`Error::EmptyData`] for rows of
    /// length 0. Shapes against the model and finiteness are the model's to check.
    fn to_matrix(&self) -> Result<Cow<'_, DMatrix<f64>>>;
}

impl Inputs for DMatrix<f64> {
    fn to_matrix(&self) -> Result<Cow<'_, DMatrix<f64>>> {
        Ok(Cow::Borrowed(self))
    }
}

impl Inputs for Dataset {
    fn to_matrix(&self) -> Result<Cow<'_, DMatrix<f64>>> {
        Ok(Cow::Borrowed(self.x()))
    }
}

/// Rows of equal length as an n×D matrix.
///
/// # Errors
/// [`Error::RaggedRows`] naming the first row whose length differs from row 0's;
/// [`Error::EmptyData`] for rows of length 0.
fn rows_matrix<R: AsRef<[f64]>>(rows: &[R]) -> Result<DMatrix<f64>> {
    let d = rows.first().map_or(0, |r| r.as_ref().len());
    if let Some((row, r)) = rows.iter().enumerate().find(|(_, r)| r.as_ref().len() != d) {
        return Err(Error::RaggedRows {
            row,
            expected: d,
            found: r.as_ref().len(),
        });
    }
    if d == 0 && !rows.is_empty() {
        return Err(Error::EmptyData {
            what: "the test rows have no inputs",
        });
    }
    Ok(DMatrix::from_fn(rows.len(), d, |i, j| rows[i].as_ref()[j]))
}

impl Inputs for [Vec<f64>] {
    fn to_matrix(&self) -> Result<Cow<'_, DMatrix<f64>>> {
        rows_matrix(self).map(Cow::Owned)
    }
}

impl Inputs for Vec<Vec<f64>> {
    fn to_matrix(&self) -> Result<Cow<'_, DMatrix<f64>>> {
        rows_matrix(self).map(Cow::Owned)
    }
}

impl Inputs for [&[f64]] {
    fn to_matrix(&self) -> Result<Cow<'_, DMatrix<f64>>> {
        rows_matrix(self).map(Cow::Owned)
    }
}

impl<const D: usize> Inputs for [[f64; D]] {
    fn to_matrix(&self) -> Result<Cow<'_, DMatrix<f64>>> {
        rows_matrix(self).map(Cow::Owned)
    }
}

impl<const D: usize> Inputs for Vec<[f64; D]> {
    fn to_matrix(&self) -> Result<Cow<'_, DMatrix<f64>>> {
        rows_matrix(self).map(Cow::Owned)
    }
}

#[cfg(feature = "ndarray")]
impl<S: ndarray::Data<Elem = f64>> Inputs for ndarray::ArrayBase<S, ndarray::Ix2> {
    fn to_matrix(&self) -> Result<Cow<'_, DMatrix<f64>>> {
        Ok(Cow::Owned(super::matrix_from_ndarray(self.view())))
    }
}

/// Training data in any form the builders' `fit` takes: a [`Dataset`], and with the `linfa`
/// feature linfa's `DatasetBase` of an ndarray matrix of records and a vector of targets (so that
/// `params.fit(&linfa_dataset)?` reads as linfa's idiom, with the crate's error).
pub trait TrainingData {
    /// The data as a validated [`Dataset`]: borrowed when it is one.
    ///
    /// # Errors
    /// As [`Dataset::new`] (no rows, a length mismatch, a NaN or infinity).
    fn to_dataset(&self) -> Result<Cow<'_, Dataset>>;
}

impl TrainingData for Dataset {
    fn to_dataset(&self) -> Result<Cow<'_, Dataset>> {
        Ok(Cow::Borrowed(self))
    }
}

#[cfg(feature = "linfa")]
impl<D, T> TrainingData for linfa::DatasetBase<ndarray::ArrayBase<D, ndarray::Ix2>, T>
where
    D: ndarray::Data<Elem = f64>,
    T: linfa::dataset::AsSingleTargets<Elem = f64>,
{
    /// As [`Dataset::new`]; [`crate::error::Error::InvalidParameter`] naming `weights` for
    /// sample weights other than 1 (`with_weights`): every row of a GP's likelihood weighs the
    /// same, and a weight would otherwise be dropped unseen.
    fn to_dataset(&self) -> Result<Cow<'_, Dataset>> {
        use linfa::dataset::AsSingleTargets;
        if let Some(w) = self
            .weights()
            .and_then(|w| w.iter().position(|&w| w != 1.0))
        {
            return Err(crate::error::Error::InvalidParameter {
                name: "weights",
                reason: format!(
                    "row {w} has sample weight {}: the models weigh every row alike; repeat or \
                     drop rows instead, or leave the weights out",
                    self.weight_for(w)
                ),
            });
        }
        Dataset::from_ndarray(self.records().view(), self.as_single_targets()).map(Cow::Owned)
    }
}
