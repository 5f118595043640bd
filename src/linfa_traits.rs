//! linfa's traits on the models (feature `linfa`): [`Fit`] for the SSGP, FITC, VFE and full-GP
//! builders, [`Ensemble`] and [`Standardized`] on a linfa `DatasetBase` of an `ArrayBase<_, Ix2>`
//! (n×D records) and single targets (n), and [`PredictInplace`] for the fitted models — into an
//! `Array1<f64>` of predictive means, or into a whole [`Predictive`] (means and both variances).
//!
//! In method syntax the crate's own `fit` and `predict` answer first (Rust picks inherent methods
//! before trait methods): they take linfa datasets and ndarray records too
//! ([`TrainingData`](crate::data::TrainingData), [`Inputs`](crate::data::Inputs)) and return the
//! crate's `Result`, so `params.fit(&dataset)?` and `fitted.predict(&records)?` read as linfa's
//! idiom; generic linfa code reaches linfa's traits as usual. A dataset with sample weights
//! other than 1 (`with_weights`) is refused (`Error::InvalidParameter` naming `weights`): every
//! row weighs the same in a GP's likelihood.
//!
//! ```
//! use ssgp::linfa::traits::Predict;
//! use ssgp::linfa::DatasetBase;
//! use ssgp::ndarray::{Array1, Array2};
//! use ssgp::{Predictive, Ssgp};
//!
//! let x = Array2::from_shape_fn((60, 1), |(i, _)| i as f64 / 10.0);
//! let y = Array1::from_shape_fn(60, |i| (i as f64 / 10.0).sin() + 0.1 * (i as f64 * 7.3).sin());
//! let data = DatasetBase::new(x.clone(), y);
//! // linfa's idiom in method syntax, with the crate's `Result`:
//! let fitted = Ssgp::params(5).seed(1).fit(&data)?;
//! let pred: Predictive = fitted.predict(&x)?;             // means and variances
//! // linfa's own traits, for generic linfa code:
//! let means: Array1<f64> = Predict::predict(&fitted, &x); // the means (NaN on failure)
//! assert_eq!(means.to_vec(), pred.mean.as_slice());
//! # Ok::<(), ssgp::Error>(())
//! ```
//!
//! linfa's `predict_inplace` cannot return an error: a prediction that fails (test inputs with
//! another D than training, NaN or ∞ in them, inputs beyond what f64 resolves) fills every output
//! with NaN. Call the model's own `predict` to get the [`crate::error::Error`] instead.

use crate::ensemble::{Ensemble, FittedEnsemble};
use crate::error::Error;
use crate::fitc::{FitcParams, FittedFitc};
use crate::full_gp::{FittedFullGp, FullGpParams};
use crate::model::FittedRegressor;
use crate::predictive::Predictive;
use crate::ssgp::{FittedSsgp, SsgpParams};
use crate::standardize::{FittedStandardized, Standardized};
use crate::vfe::{FittedVfe, VfeParams};
use linfa::dataset::{AsSingleTargets, DatasetBase};
use linfa::traits::{Fit, PredictInplace};
use nalgebra::DVector;
use ndarray::{Array1, ArrayBase, Data, Ix2};

/// NaN in every entry: what `predict_inplace` reports for a prediction that failed.
fn failed(n: usize) -> Predictive {
    let nan = DVector::from_element(n, f64::NAN);
    Predictive {
        mean: nan.clone(),
        y_variance: nan.clone(),
        f_variance: nan,
    }
}

/// linfa's `Fit` for a builder (or a wrapper of builders), through its own `fit`.
macro_rules! linfa_fit {
    ([$($g:tt)*] $params:ty, $fitted:ty) => {
        impl<D, T, $($g)*> Fit<ArrayBase<D, Ix2>, T, Error> for $params
        where
            D: Data<Elem = f64>,
            T: AsSingleTargets<Elem = f64>,
        {
            type Object = $fitted;

            /// Validates the settings and the data (as
            /// [`Dataset::new`](crate::data::Dataset::new)) and fits.
            fn fit(&self, ds: &DatasetBase<ArrayBase<D, Ix2>, T>) -> crate::error::Result<$fitted> {
                <$params>::fit(self, ds)
            }
        }

    };
}

/// linfa's `PredictInplace` for a fitted model, into its [`Predictive`] or its means.
macro_rules! linfa_predict {
    ([$($g:tt)*] $fitted:ty) => {
        impl<D: Data<Elem = f64>, $($g)*> PredictInplace<ArrayBase<D, Ix2>, Predictive> for $fitted {
            /// The predictive distribution at the records `x` (n*×D); NaN everywhere if the
            /// prediction fails (see the [module docs](self)).
            fn predict_inplace(&self, x: &ArrayBase<D, Ix2>, y: &mut Predictive) {
                *y = self
                    .predict(x)
                    .unwrap_or_else(|_| failed(x.nrows()));
            }

            fn default_target(&self, x: &ArrayBase<D, Ix2>) -> Predictive {
                failed(x.nrows())
            }
        }

        impl<D: Data<Elem = f64>, $($g)*> PredictInplace<ArrayBase<D, Ix2>, Array1<f64>> for $fitted {
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

linfa_fit!([] SsgpParams, FittedSsgp);
linfa_fit!([] FitcParams, FittedFitc);
linfa_fit!([] FullGpParams, FittedFullGp);
linfa_fit!([] VfeParams, FittedVfe);
linfa_fit!([] Ensemble, FittedEnsemble);
linfa_fit!([R: crate::model::Fit] Standardized<R>, FittedStandardized<R::Fitted>);
linfa_predict!([] FittedSsgp);
linfa_predict!([] FittedFitc);
linfa_predict!([] FittedFullGp);
linfa_predict!([] FittedVfe);
linfa_predict!([M: FittedRegressor] FittedEnsemble<M>);
linfa_predict!([F: FittedRegressor] FittedStandardized<F>);
