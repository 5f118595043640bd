//! Posterior function samples of an SSGP trained behind a scaler
//! ([`Standardized`](crate::standardize::Standardized)), evaluated on the original scale: the
//! wrapper knows no model, so SSGP's own sampling of a standardised fit lives with SSGP.

use super::{FittedSsgp, PosteriorSample};
use crate::error::Result;
use crate::standardize::{FittedStandardized, Scaler};
use nalgebra::{DMatrix, DVector};
use rand::Rng;

impl FittedStandardized<FittedSsgp> {
    /// Draws a function from the wrapped SSGP's posterior, evaluated on the original scale.
    pub fn sample_posterior<G: Rng + ?Sized>(&self, rng: &mut G) -> StandardizedSample {
        StandardizedSample {
            scaler: self.scaler.clone(),
            inner: self.inner.sample_posterior(rng),
        }
    }

    /// Adds samples on the original scale (`x` n×D, `y` n) to the wrapped SSGP's posterior
    /// ([`FittedSsgp::update`]): scaled by the training data's [`Scaler`], which stays as it
    /// is (so the wrapped model's θ, the scale it was learned on, still holds), then absorbed
    /// with θ fixed in O(m²) per sample. Predictions after it equal conditioning on the
    /// training rows and the samples at θ, all scaled by that scaler.
    ///
    /// ```
    /// use nalgebra::{DMatrix, DVector};
    /// use ssgp::{standardize::Standardized, Dataset, Ssgp};
    /// // Inputs in thousands, targets around 300: the model sees them standardised.
    /// let x = DMatrix::from_fn(60, 1, |i, _| 1e3 * i as f64 / 10.0);
    /// let y = x.map(|v| 300.0 + 20.0 * (v / 1e3).sin()).column(0).into_owned();
    /// let mut model = Standardized::new(Ssgp::params(10).seed(1)).fit(&Dataset::new(x, y)?)?;
    /// for k in 0..20 {
    ///     let t = 6e3 + 50.0 * k as f64;
    ///     let (xs, ys) = (DMatrix::from_element(1, 1, t), DVector::from_element(1, 300.0 + 20.0 * (t / 1e3).sin()));
    ///     model.update(&xs, &ys)?;
    /// }
    /// assert_eq!(model.inner().num_updates(), 20);
    /// let p = model.predict(&DMatrix::from_element(1, 1, 6.5e3))?;
    /// assert!((p.mean[0] - (300.0 + 20.0 * 6.5f64.sin())).abs() < 2.0);
    /// # Ok::<(), ssgp::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`Scaler::transform_inputs`] for `x` and [`FittedSsgp::update`]. The model is unchanged
    /// on an error.
    pub fn update(&mut self, x: &DMatrix<f64>, y: &DVector<f64>) -> Result<()> {
        self.update_forgetting(x, y, 1.0)
    }

    /// [`Self::update`] with a forgetting factor γ ∈ (0, 1] ([`FittedSsgp::update_forgetting`]).
    ///
    /// # Errors
    /// As [`Scaler::transform_inputs`] for `x` and [`FittedSsgp::update_forgetting`]. The model
    /// is unchanged on an error.
    pub fn update_forgetting(
        &mut self,
        x: &DMatrix<f64>,
        y: &DVector<f64>,
        forgetting: f64,
    ) -> Result<()> {
        let z = self.scaler.transform_inputs(x)?;
        let (mean, scale) = (self.scaler.y_mean, self.scaler.y_scale);
        let y = y.map(|v| (v - mean) / scale);
        self.inner.update_forgetting(&z, &y, forgetting)
    }
}

/// A posterior function sample of a standardised SSGP, on the original scale:
/// f(x) = s_y·f̃((x − m_x) ⊘ s_x) + m_y.
#[derive(Debug, Clone)]
pub struct StandardizedSample {
    scaler: Scaler,
    inner: PosteriorSample,
}

impl StandardizedSample {
    /// Evaluates the sampled function at `x` (n*×D): `x` scaled (one n*×D copy), then the
    /// wrapped sample evaluated in chunks of rows ([`PosteriorSample::evaluate`]).
    ///
    /// # Errors
    /// As [`Scaler::transform_inputs`] and [`PosteriorSample::evaluate`].
    pub fn evaluate(&self, x: &DMatrix<f64>) -> Result<DVector<f64>> {
        let f = self.inner.evaluate(&self.scaler.transform_inputs(x)?)?;
        Ok(f.map(|v| v * self.scaler.y_scale + self.scaler.y_mean))
    }
}
