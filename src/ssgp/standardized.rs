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
