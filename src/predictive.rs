//! The predictive distribution returned by every model.

use crate::error::{Error, Result};
use nalgebra::DVector;

/// Gaussian predictive marginals at a batch of test inputs.
///
/// For test point j: $y_{*j} \sim \mathcal N(\mu_{*j}, \sigma^2_{*j})$ with `variance` = σ²_* (the noise
/// σn² included, as in paper eq. 2 and 7), and the latent $f_{*j} \sim \mathcal N(\mu_{*j}, \sigma^2_{*j} - \sigma_n^2)$
/// with `latent_variance` (clamped at 0 against round-off).
#[derive(Debug, Clone, PartialEq)]
pub struct Predictive {
    /// Predictive means μ_*, one per test point (the training-target mean added back).
    pub mean: DVector<f64>,
    /// Variances of the noisy targets y_* (σn² included), one per test point.
    pub variance: DVector<f64>,
    /// Variances of the latent function values f_* (no noise), one per test point.
    pub latent_variance: DVector<f64>,
}

impl Predictive {
    /// Assembles a predictive from means, latent variances and the noise variance σn².
    ///
    /// Negative latent variances are clamped at 0 (they can dip below by round-off); `variance` =
    /// latent + σn².
    pub(crate) fn from_latent(
        mean: DVector<f64>,
        mut latent_variance: DVector<f64>,
        noise_variance: f64,
    ) -> Self {
        // Negative round-off only: a NaN stays NaN, for `finite` to report.
        latent_variance.apply(|v| {
            if *v < 0.0 {
                *v = 0.0;
            }
        });
        let variance = latent_variance.map(|v| v + noise_variance);
        Self {
            mean,
            variance,
            latent_variance,
        }
    }

    /// The predictive itself if every mean and variance is finite.
    ///
    /// A model whose arithmetic overflows at a test input — e.g. an SSGP asked about a point so
    /// far from its training data that a phase Ω_rᵀ(x* − c) exceeds the largest `f64` — would
    /// otherwise return NaN or ±∞ as if it were a prediction.
    ///
    /// # Errors
    /// [`Error::NonFinite`] naming the first non-finite mean, variance or latent variance and its
    /// test point (the row).
    pub(crate) fn finite(self) -> Result<Self> {
        for (what, values) in [
            ("predictive mean", &self.mean),
            ("predictive variance", &self.variance),
            ("predictive latent variance", &self.latent_variance),
        ] {
            if let Some((row, &value)) = values.iter().enumerate().find(|(_, v)| !v.is_finite()) {
                return Err(Error::NonFinite {
                    what,
                    row,
                    col: 0,
                    value,
                });
            }
        }
        Ok(self)
    }

    /// Number of test points.
    pub fn len(&self) -> usize {
        self.mean.len()
    }

    /// True when there are no test points.
    pub fn is_empty(&self) -> bool {
        self.mean.is_empty()
    }
}
