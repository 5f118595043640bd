//! linfa's traits on the models (feature `linfa`): [`Fit`] for the SSGP, FITC and full-GP
//! builders on a linfa `DatasetBase` of an `ArrayBase<_, Ix2>` (n×D records) and single targets
//! (n), and [`PredictInplace`] for the fitted models — into an `Array1<f64>` of predictive means,
//! or into a whole [`Predictive`] (means and both variances).
//!
//! ```
//! use ssgp::linfa::traits::{Fit, Predict};
//! use ssgp::linfa::DatasetBase;
//! use ssgp::ndarray::{Array1, Array2};
//! use ssgp::{Predictive, ssgp::Ssgp};
//!
//! let x = Array2::from_shape_fn((60, 1), |(i, _)| i as f64 / 10.0);
//! let y = Array1::from_shape_fn(60, |i| (i as f64 / 10.0).sin() + 0.1 * (i as f64 * 7.3).sin());
//! let data = DatasetBase::new(x.clone(), y);
//! // The builders' and models' own `fit` and `predict` take nalgebra types; linfa's are
//! // called through its traits.
//! let fitted = Fit::<_, _, ssgp::Error>::fit(&Ssgp::params(5).seed(1), &data)?;
//! let means: Array1<f64> = Predict::predict(&fitted, &x);  // linfa's call: the means
//! let full: Predictive = Predict::predict(&fitted, &x);    // or means and variances
//! assert_eq!(means.to_vec(), full.mean.as_slice());
//! # Ok::<(), ssgp::Error>(())
//! ```
//!
//! linfa's `predict_inplace` cannot return an error: a prediction that fails (test inputs with
//! another D than training, NaN or ∞ in them, inputs beyond what f64 resolves) fills every output
//! with NaN. Call the model's own `predict` to get the [`crate::Error`] instead.

use crate::data::{matrix_from_ndarray, Dataset};
use crate::error::Error;
use crate::predictive::Predictive;
use crate::{
    FitcParams, FittedFitc, FittedFullGp, FittedSsgp, FittedVfe, FullGpParams, SsgpParams,
    VfeParams,
};
use linfa::dataset::{AsSingleTargets, DatasetBase};
use linfa::traits::{Fit, PredictInplace};
use nalgebra::DVector;
use ndarray::{Array1, ArrayBase, Data, Ix2};

/// The crate's [`Dataset`] from a linfa dataset: records n×D, single targets n.
fn dataset<D, T>(ds: &DatasetBase<ArrayBase<D, Ix2>, T>) -> crate::Result<Dataset>
where
    D: Data<Elem = f64>,
    T: AsSingleTargets<Elem = f64>,
{
    Dataset::from_ndarray(ds.records().view(), ds.as_single_targets())
}

/// NaN in every entry: what `predict_inplace` reports for a prediction that failed.
fn failed(n: usize) -> Predictive {
    let nan = DVector::from_element(n, f64::NAN);
    Predictive {
        mean: nan.clone(),
        y_variance: nan.clone(),
        f_variance: nan,
    }
}

/// `Fit` for a builder and `PredictInplace` for its fitted model.
macro_rules! impl_linfa {
    ($params:ty, $fitted:ty) => {
        impl<D, T> Fit<ArrayBase<D, Ix2>, T, Error> for $params
        where
            D: Data<Elem = f64>,
            T: AsSingleTargets<Elem = f64>,
        {
            type Object = $fitted;

            /// Validates the settings and the data (as [`Dataset::new`]) and fits.
            fn fit(&self, ds: &DatasetBase<ArrayBase<D, Ix2>, T>) -> crate::Result<$fitted> {
                <$params>::fit(self, &dataset(ds)?)
            }
        }

        impl<D: Data<Elem = f64>> PredictInplace<ArrayBase<D, Ix2>, Predictive> for $fitted {
            /// The predictive distribution at the records `x` (n*×D); NaN everywhere if the
            /// prediction fails (see the [module docs](self)).
            fn predict_inplace(&self, x: &ArrayBase<D, Ix2>, y: &mut Predictive) {
                *y = self
                    .predict(&matrix_from_ndarray(x.view()))
                    .unwrap_or_else(|_| failed(x.nrows()));
            }

            fn default_target(&self, x: &ArrayBase<D, Ix2>) -> Predictive {
                failed(x.nrows())
            }
        }

        impl<D: Data<Elem = f64>> PredictInplace<ArrayBase<D, Ix2>, Array1<f64>> for $fitted {
            /// The predictive means at the records `x` (n*×D) into `y` (resized to n*); NaN
            /// everywhere if the prediction fails (see the [module docs](self)).
            fn predict_inplace(&self, x: &ArrayBase<D, Ix2>, y: &mut Array1<f64>) {
                let mut p = failed(0);
                PredictInplace::<ArrayBase<D, Ix2>, Predictive>::predict_inplace(self, x, &mut p);
                *y = Array1::from_vec(p.mean.as_slice().to_vec());
            }

            fn default_target(&self, x: &ArrayBase<D, Ix2>) -> Array1<f64> {
                Array1::from_elem(x.nrows(), f64::NAN)
            }
        }
    };
}

impl_linfa!(SsgpParams, FittedSsgp);
impl_linfa!(FitcParams, FittedFitc);
impl_linfa!(FullGpParams, FittedFullGp);
impl_linfa!(VfeParams, FittedVfe);
