//! The predictive distribution returned by every model.

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
    /// Latent variances are clamped at 0 (they can dip below by round-off); `variance` = latent + σn².
    pub(crate) fn from_latent(
        mean: DVector<f64>,
        mut latent_variance: DVector<f64>,
        noise_variance: f64,
    ) -> Self {
        latent_variance.apply(|v| *v = v.max(0.0));
        let variance = latent_variance.map(|v| v + noise_variance);
        Self {
            mean,
            variance,
            latent_variance,
        }
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
