//! The prediction loop every model shares: test inputs checked once, then processed in chunks of
//! rows so memory stays bounded, each chunk's means and latent variances filled by the model.

use crate::data::InputColumns;
use crate::error::{Error, Result};
use crate::predictive::{round_off_variance, Predictive};
use nalgebra::{DMatrix, DVector};

/// Predicts at `x` (n*×D) chunk by chunk: the inputs are checked and restricted to the model's
/// used `columns`, then `chunk(x_used, start, len, mean, latent)` fills the latent mean μ − ȳ and
/// the latent variance 𝕍 f* of rows `start .. start + len` of `x_used` (slices of length `len`);
/// ȳ = `y_mean` is added here, σn² = `noise_variance` makes the noisy variance, and every value
/// is checked: means finite, latent variances finite and ≥ 0 up to round-off relative to the
/// prior variance `prior_variance` ([`round_off_variance`]).
///
/// # Errors
/// [`Error::EmptyData`] for no rows, [`Error::DimensionMismatch`] if `x` has not D columns,
/// [`Error::NonFinite`] for a NaN or infinity in `x`; [`Error::Numerical`] for a non-finite
/// mean or an invalid variance; whatever `chunk` returns.
pub(crate) fn predict_in_chunks(
    x: &DMatrix<f64>,
    columns: &InputColumns,
    chunk_rows: usize,
    (y_mean, prior_variance, noise_variance): (f64, f64, f64),
    mut chunk: impl FnMut(&DMatrix<f64>, usize, usize, &mut [f64], &mut [f64]) -> Result<()>,
) -> Result<Predictive> {
    if x.nrows() == 0 {
        return Err(Error::EmptyData {
            what: "no test inputs",
        });
    }
    let x = columns.select(x)?;
    let n = x.nrows();
    let mut mean = DVector::zeros(n);
    let mut latent = DVector::zeros(n);
    let mut start = 0;
    while start < n {
        let len = chunk_rows.max(1).min(n - start);
        chunk(
            &x,
            start,
            len,
            &mut mean.as_mut_slice()[start..start + len],
            &mut latent.as_mut_slice()[start..start + len],
        )?;
        start += len;
    }
    mean.add_scalar_mut(y_mean);
    if let Some(row) = mean.iter().position(|m| !m.is_finite()) {
        return Err(Error::Numerical {
            what: format!(
                "the predictive mean at test row {row} is {}: the inputs may be beyond what f64 \
                 can resolve",
                mean[row]
            ),
        });
    }
    for (row, v) in latent.iter_mut().enumerate() {
        *v = round_off_variance(*v, prior_variance, row)?;
    }
    Ok(Predictive::from_latent(mean, latent, noise_variance))
}

/// The [`crate::model::FittedRegressor`] impl of a fitted model with inherent `predict`,
/// `neg_log_evidence`, `noise_variance`, `training` and `name` methods.
macro_rules! impl_fitted_regressor {
    ($fitted:ident) => {
        impl $crate::model::FittedRegressor for $fitted {
            fn name(&self) -> &'static str {
                $fitted::name(self)
            }

            fn predict(
                &self,
                x: &nalgebra::DMatrix<f64>,
            ) -> $crate::error::Result<$crate::predictive::Predictive> {
                $fitted::predict(self, x)
            }

            fn neg_log_evidence(&self) -> f64 {
                $fitted::neg_log_evidence(self)
            }

            fn noise_variance(&self) -> f64 {
                $fitted::noise_variance(self)
            }

            fn training(&self) -> &$crate::model::TrainingSummary {
                $fitted::training(self)
            }

            #[cfg(feature = "serde")]
            fn to_saved(&self) -> $crate::error::Result<$crate::persist::SavedModel> {
                Ok(self.clone().into())
            }
        }
    };
}

pub(crate) use impl_fitted_regressor;
