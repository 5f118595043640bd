//! Standardisation of inputs and targets, undone in predictions, around any model.
//!
//! Every model of this crate is equivariant to per-column affine maps of the inputs and to a
//! scaling of the targets: its initial ℓ is half each input's range (or learned by a full GP
//! started there, the sparse models' default), its initial σ0² the target
//! variance, SSGP's evidence is invariant to input shifts (a shift rotates each cos/sin pair),
//! and the parameters are optimised in log space; the SE-ARD kernel centres its inputs before
//! expanding distances. So standardising changes a fit only by round-off — measured on the sinc
//! toy with inputs scaled by 120 and shifted by 700 and targets scaled by 0.01: the same NMSE to
//! 1e-5 — and it is **off by default**. Use [`Standardized`] when you want hyperparameters on a
//! unit scale (e.g. to compare lengthscales across inputs) or predictions of a model trained on
//! standardised data mapped back for you.
//!
//! The evidence a standardised model reports is on the **original** target scale:
//! −log p(y) = −log p(ỹ) + n log s_y for ỹ = (y − m_y)/s_y.

use crate::data::{check_inputs, Dataset};
use crate::data::{Inputs, TrainingData};
use crate::error::{Error, Result};
use crate::model::{Fit, FittedRegressor};
use crate::params::Reseed;
use crate::predictive::{JointPredictive, Predictive, PredictiveGradients};
use crate::termination::TrainingSummary;
use nalgebra::{DMatrix, DVector};

/// Means and standard deviations (1/n) of each input column and of the targets.
///
/// ```
/// use ssgp::nalgebra::{DMatrix, DVector};
/// use ssgp::standardize::Scaler;
/// use ssgp::Dataset;
///
/// let x = DMatrix::from_row_slice(4, 2, &[1e3, 0.0, 2e3, 1.0, 3e3, 0.0, 4e3, 1.0]);
/// let data = Dataset::new(x, DVector::from_vec(vec![300.0, 310.0, 290.0, 300.0]))?;
/// let scaler = Scaler::fit(&data)?;
/// assert_eq!((scaler.x_mean[0], scaler.y_mean), (2.5e3, 300.0));
/// let z = scaler.transform(&data)?;               // every column mean 0, sd 1
/// assert!(z.x().column(0).mean().abs() < 1e-12 && (z.y_variance() - 1.0).abs() < 1e-12);
/// # Ok::<(), ssgp::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Scaler {
    /// Mean of each input column (D).
    pub x_mean: DVector<f64>,
    /// Standard deviation of each input column (D).
    pub x_scale: DVector<f64>,
    /// Mean of the targets.
    pub y_mean: f64,
    /// Standard deviation of the targets.
    pub y_scale: f64,
}

impl Scaler {
    /// Learns the centring and scaling from a data set. A constant input column is centred and
    /// not scaled (its scale is 1): the models ignore it anyway.
    ///
    /// # Errors
    /// [`Error::ConstantTargets`] for constant targets; [`Error::Scale`] for targets whose
    /// spread is outside [`SMALLEST_TARGET_SPREAD`](crate::data::SMALLEST_TARGET_SPREAD) …
    /// [`LARGEST_TARGET_SPREAD`](crate::data::LARGEST_TARGET_SPREAD) (variances on their scale
    /// would leave f64's normal numbers).
    pub fn fit(data: &Dataset) -> Result<Self> {
        data.check_target_spread()?;
        let x = data.x();
        let n = x.nrows() as f64;
        let mut x_mean = DVector::zeros(x.ncols());
        let mut x_scale = DVector::zeros(x.ncols());
        for (d, col) in x.column_iter().enumerate() {
            let mean = col.sum() / n;
            let sd = crate::data::standard_deviation(col.as_slice(), mean);
            x_mean[d] = mean;
            x_scale[d] = if sd > 0.0 { sd } else { 1.0 };
        }
        let y_mean = data.y_mean();
        let y_scale = crate::data::standard_deviation(data.y().as_slice(), y_mean);
        if y_scale.is_nan() || y_scale <= 0.0 {
            return Err(Error::ConstantTargets { value: y_mean });
        }
        Ok(Self {
            x_mean,
            x_scale,
            y_mean,
            y_scale,
        })
    }

    /// (x − mean) / sd for each column of `x` (n×D).
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] for a wrong D, [`Error::NonFinite`] for a NaN or infinity;
    /// for a scaler built by hand, [`Error::InvalidParameter`] naming `x_scale` for a scale that
    /// is not positive and finite, [`Error::NonFinite`] for a mean that is not finite.
    pub fn transform_inputs(&self, x: &DMatrix<f64>) -> Result<DMatrix<f64>> {
        check_inputs(x, self.x_mean.len())?;
        if self.x_scale.len() != self.x_mean.len() {
            return Err(Error::DimensionMismatch {
                what: "the scaler's `x_scale` (one per entry of `x_mean`)",
                expected: self.x_mean.len(),
                found: self.x_scale.len(),
            });
        }
        // The fields are public: a scaler built by hand may hold a scale no fit gives.
        if let Some((d, scale)) = self
            .x_scale
            .iter()
            .enumerate()
            .find(|(_, s)| !(**s > 0.0 && s.is_finite()))
        {
            return Err(Error::InvalidParameter {
                name: "x_scale",
                reason: format!("input column {d}'s scale {scale} is not positive and finite"),
            });
        }
        crate::data::check_finite_vector("the scaler's `x_mean`", &self.x_mean)?;
        let mut z = x.clone();
        for (d, mut col) in z.column_iter_mut().enumerate() {
            col.apply(|v| *v = (*v - self.x_mean[d]) / self.x_scale[d]);
        }
        Ok(z)
    }

    /// The standardised data set.
    ///
    /// # Errors
    /// As [`Scaler::transform_inputs`].
    pub fn transform(&self, data: &Dataset) -> Result<Dataset> {
        let x = self.transform_inputs(data.x())?;
        let y = data.y().map(|v| (v - self.y_mean) / self.y_scale);
        Dataset::new(x, y)
    }

    /// A mean on the standardised scale mapped back: m·s_y + m_y.
    fn mean_back(&self, m: f64) -> f64 {
        m * self.y_scale + self.y_mean
    }

    /// Maps a predictive on the standardised scale back to the original one.
    pub fn inverse_predictive(&self, p: Predictive) -> Predictive {
        let s2 = self.y_scale * self.y_scale;
        Predictive {
            mean: p.mean.map(|m| self.mean_back(m)),
            y_variance: p.y_variance * s2,
            f_variance: p.f_variance * s2,
        }
    }
}

/// A model trained on standardised data, predicting on the original scale.
///
/// Generic over the wrapped configuration, so the fitted model keeps its type: a standardised SSGP
/// still exposes its hyperparameters (on the standardised scale, through
/// [`FittedStandardized::inner`]) and samples functions on the original scale
/// (`FittedStandardized::<FittedSsgp>::sample_posterior`, with SSGP). `Standardized<Box<dyn Regressor>>` wraps any model.
///
/// ```
/// use ssgp::rand::{rngs::StdRng, SeedableRng};
/// use ssgp::standardize::Standardized;
/// use ssgp::{data::sinc_data, Dataset, Ssgp};
///
/// let raw = sinc_data(60, false, 0.05, &mut StdRng::seed_from_u64(0))?;
/// // Targets in other units (×1000, offset 5·10⁴): the model sees them standardised.
/// let data = Dataset::new(raw.x().clone(), raw.y().map(|v| 5e4 + 1e3 * v))?;
/// let fitted = Standardized::new(Ssgp::params(8).seed(1).initial_draws(5)).fit(&data)?;
/// let pred = fitted.predict(&data)?;                      // back on the original scale
/// assert!((pred.mean[0] - data.y()[0]).abs() < 200.0);
/// # Ok::<(), ssgp::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Standardized<R> {
    inner: R,
}

impl<R: Fit> Standardized<R> {
    /// Wraps a model configuration.
    pub fn new(inner: R) -> Self {
        Self { inner }
    }

    /// Standardises `data`, fits the wrapped model, and keeps the scaler.
    ///
    /// # Errors
    /// As [`Scaler::fit`] and the wrapped model's fit.
    pub fn fit<T: TrainingData + ?Sized>(&self, data: &T) -> Result<FittedStandardized<R::Fitted>> {
        let data = &*data.to_dataset()?;
        let scaler = Scaler::fit(data)?;
        let inner = self.inner.fit(&scaler.transform(data)?)?;
        let shift = data.len() as f64 * scaler.y_scale.ln();
        let training = inner.training().clone().rescaled(shift, scaler.y_scale);
        Ok(FittedStandardized {
            scaler,
            inner,
            shift,
            training,
        })
    }
}

impl<R: Reseed> Reseed for Standardized<R> {
    fn current_seed(&self) -> u64 {
        self.inner.current_seed()
    }

    fn reseeded(&self, seed: u64) -> Self {
        Self {
            inner: self.inner.reseeded(seed),
        }
    }

    fn restart(&self, index: usize, count: usize) -> Self {
        Self {
            inner: self.inner.restart(index, count),
        }
    }
}

impl<R: Fit> Fit for Standardized<R> {
    type Fitted = FittedStandardized<R::Fitted>;

    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn fit(&self, data: &Dataset) -> Result<Self::Fitted> {
        Standardized::fit(self, data)
    }
}

/// A fitted model behind a [`Scaler`].
#[derive(Debug, Clone)]
pub struct FittedStandardized<F> {
    pub(crate) scaler: Scaler,
    pub(crate) inner: F,
    /// n·log s_y: what the evidence moves by on the original scale.
    pub(crate) shift: f64,
    pub(crate) training: TrainingSummary,
}

impl<F: FittedRegressor> FittedStandardized<F> {
    /// The centring and scaling learned from the training data.
    pub fn scaler(&self) -> &Scaler {
        &self.scaler
    }

    /// The model fitted on the standardised data (its hyperparameters are on that scale).
    pub fn inner(&self) -> &F {
        &self.inner
    }

    /// Predictive distribution at `x` (n*×D) on the original scale.
    ///
    /// # Errors
    /// As [`Scaler::transform_inputs`] and the wrapped model's `predict`;
    /// [`Error::Numerical`] if a prediction overflows on the original scale.
    pub fn predict<X: Inputs + ?Sized>(&self, x: &X) -> Result<Predictive> {
        let x = &*x.to_matrix()?;
        let z = self.scaler.transform_inputs(x)?;
        self.scaler
            .inverse_predictive(self.inner.predict(&z)?)
            .finite()
    }

    /// The predictive means alone at `x` (n*×D) on the original scale: [`Self::predict`]'s
    /// means bit for bit, through the wrapped model's mean-only path.
    ///
    /// # Errors
    /// As [`Self::predict`].
    pub fn predict_mean<X: Inputs + ?Sized>(&self, x: &X) -> Result<DVector<f64>> {
        let x = &*x.to_matrix()?;
        let z = self.scaler.transform_inputs(x)?;
        let mean = self
            .inner
            .predict_mean(&z)?
            .map(|m| self.scaler.mean_back(m));
        match mean.iter().position(|m| !m.is_finite()) {
            Some(row) => Err(Error::Numerical {
                what: format!(
                    "the predictive mean at test row {row} is {} on the original scale",
                    mean[row]
                ),
            }),
            None => Ok(mean),
        }
    }

    /// The joint predictive at `x` (n*×D) on the original scale: the wrapped model's means
    /// mapped back, μ·s_y + m_y, its covariance scaled, Σ_f·s_y², and σn²·s_y².
    ///
    /// # Errors
    /// As [`Self::predict`] and the wrapped model's `predict_covariance`.
    pub fn predict_covariance<X: Inputs + ?Sized>(&self, x: &X) -> Result<JointPredictive> {
        let x = &*x.to_matrix()?;
        let z = self.scaler.transform_inputs(x)?;
        let inner = self.inner.predict_covariance(&z)?;
        let s2 = self.scaler.y_scale * self.scaler.y_scale;
        JointPredictive {
            mean: inner.mean.map(|m| self.scaler.mean_back(m)),
            f_covariance: inner.f_covariance * s2,
            noise_variance: inner.noise_variance * s2,
        }
        .finite()
    }

    crate::model::sample_joint_from_covariance!(
        /// On the original scale, as every fitted model of the crate offers it (before, only
        /// through the [`FittedRegressor`] trait).
    );
}

impl<F: FittedRegressor> FittedStandardized<F> {
    /// The predictive at `x` (n*×D) on the original scale with its gradients with respect to the
    /// original inputs, by the chain rule through z_d = (x_d − m_d)/s_d and μ = μ̃·s_y + m_y:
    /// ∂μ/∂x_d = (s_y/s_d) ∂μ̃/∂z_d and ∂σ²/∂x_d = (s_y²/s_d) ∂σ̃²/∂z_d.
    ///
    /// # Errors
    /// As [`Self::predict`] and the wrapped model's `predict_gradients`;
    /// [`crate::error::Error::DimensionMismatch`] if the wrapped model's gradients are not n*×D.
    pub fn predict_gradients<X: Inputs + ?Sized>(&self, x: &X) -> Result<PredictiveGradients> {
        let x = &*x.to_matrix()?;
        let z = self.scaler.transform_inputs(x)?;
        let inner = self.inner.predict_gradients(&z)?;
        // The wrapped model may be a user's: its shapes are checked before they are indexed.
        let (n, dim) = x.shape();
        const MEANS: &str = "the wrapped model's gradients of the means";
        const VARIANCES: &str = "the wrapped model's gradients of the variances";
        crate::error::check_shape(inner.mean.shape(), (n, MEANS), (dim, MEANS))?;
        crate::error::check_shape(inner.variance.shape(), (n, VARIANCES), (dim, VARIANCES))?;
        let (sy, sx) = (self.scaler.y_scale, &self.scaler.x_scale);
        let mut mean = inner.mean;
        let mut variance = inner.variance;
        for d in 0..mean.ncols() {
            mean.column_mut(d).scale_mut(sy / sx[d]);
            variance.column_mut(d).scale_mut(sy * sy / sx[d]);
        }
        PredictiveGradients {
            predictive: self.scaler.inverse_predictive(inner.predictive).finite()?,
            mean,
            variance,
        }
        .finite()
    }
}

impl<F: FittedRegressor> FittedRegressor for FittedStandardized<F> {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    crate::model::fitted_regressor!(@predictions this => this);

    /// σn² on the original target scale (scaled as the predictive variances are, so that they
    /// are never below it by round-off).
    fn noise_variance(&self) -> f64 {
        self.inner.noise_variance() * (self.scaler.y_scale * self.scaler.y_scale)
    }

    /// −log p(y|θ) on the original target scale.
    fn neg_log_evidence(&self) -> f64 {
        self.inner.neg_log_evidence() + self.shift
    }

    fn training(&self) -> &TrainingSummary {
        &self.training
    }

    /// The scaler with the wrapped model saved; an error if it cannot be.
    #[cfg(feature = "serde")]
    fn saved_form(&self) -> Result<crate::schema::SavedForm> {
        use crate::schema::{ModelRepr, SavedForm, ScalerRepr, StandardizedRepr};
        let s = &self.scaler;
        Ok(SavedForm(ModelRepr::Standardized(Box::new(
            StandardizedRepr {
                scaler: ScalerRepr {
                    x_mean: s.x_mean.as_slice().to_vec(),
                    x_scale: s.x_scale.as_slice().to_vec(),
                    y_mean: s.y_mean,
                    y_scale: s.y_scale,
                },
                evidence_shift: self.shift,
                model: self.inner.saved_form()?.0,
            },
        ))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A model with no latent variance anywhere: its predictive variance is σn² exactly.
    struct Flat {
        noise: f64,
        training: TrainingSummary,
    }

    impl FittedRegressor for Flat {
        fn name(&self) -> &'static str {
            "flat"
        }

        fn predict(&self, x: &DMatrix<f64>) -> Result<Predictive> {
            let n = x.nrows();
            Predictive::from_latent(DVector::zeros(n), DVector::zeros(n), self.noise)
        }

        fn predict_covariance(&self, x: &DMatrix<f64>) -> Result<JointPredictive> {
            let n = x.nrows();
            Ok(JointPredictive {
                mean: DVector::zeros(n),
                f_covariance: DMatrix::zeros(n, n),
                noise_variance: self.noise,
            })
        }

        fn neg_log_evidence(&self) -> f64 {
            0.0
        }

        fn noise_variance(&self) -> f64 {
            self.noise
        }

        fn training(&self) -> &TrainingSummary {
            &self.training
        }
    }

    /// σn² on the original scale is scaled as the variances are, by s_y² in one factor: with
    /// (σn²·s_y)·s_y instead, a variance equal to σn² on the standardised scale can come out below
    /// it by one ulp (as it does for some of these scales).
    /// A scaler built by hand with fewer scales than means is an error, not an index panic.
    #[test]
    fn a_hand_built_scaler_of_mismatched_lengths_is_an_error() {
        let scaler = Scaler {
            x_mean: DVector::zeros(3),
            x_scale: DVector::from_element(2, 1.0),
            y_mean: 0.0,
            y_scale: 1.0,
        };
        assert!(matches!(
            scaler.transform_inputs(&DMatrix::zeros(4, 3)),
            Err(Error::DimensionMismatch {
                expected: 3,
                found: 2,
                ..
            })
        ));
    }

    #[test]
    fn noise_variance_bounds_the_variances_exactly() {
        let x = DMatrix::zeros(1, 1);
        let mut differs = 0;
        for i in 1..200 {
            let (noise, y_scale) = (0.001 * i as f64 + 0.37, 0.7 + 0.113 * i as f64);
            let model = FittedStandardized {
                scaler: Scaler {
                    x_mean: DVector::zeros(1),
                    x_scale: DVector::from_element(1, 1.0),
                    y_mean: 0.0,
                    y_scale,
                },
                inner: Flat {
                    noise,
                    training: TrainingSummary::untrained(0.0),
                },
                shift: 0.0,
                training: TrainingSummary::untrained(0.0),
            };
            let variance = model.predict(&x).unwrap().y_variance[0];
            assert!(
                variance >= model.noise_variance(),
                "σn² {noise}, s_y {y_scale}"
            );
            differs += usize::from(noise * y_scale * y_scale != variance);
        }
        assert!(differs > 0, "no scale tells the two roundings apart");
    }
}
