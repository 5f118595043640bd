//! The predictive distribution returned by every model.

use crate::error::{Error, Result};
use nalgebra::DVector;

/// Gaussian predictive marginals at a batch of test inputs.
///
/// For test point j: $y_{*j} \sim \mathcal N(\mu_{*j}, \sigma^2_{*j})$ with `variance` = σ²_* (the noise
/// σn² included, as in paper eq. 2 and 7), and the latent $f_{*j} \sim \mathcal N(\mu_{*j}, \sigma^2_{*j} - \sigma_n^2)$
/// with `latent_variance`. Every value is finite and every variance ≥ 0: a latent variance below
/// zero by round-off only (down to −[`ROUND_OFF`]·σ0²) is reported as 0, anything else is an
/// error ([`crate::Error::Numerical`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Predictive {
    /// Predictive means μ_*, one per test point (the training-target mean added back).
    pub mean: DVector<f64>,
    /// Variances of the noisy targets y_* (σn² included), one per test point.
    pub variance: DVector<f64>,
    /// Variances of the latent function values f_* (no noise), one per test point.
    pub latent_variance: DVector<f64>,
}

/// How far below zero a computed variance may fall by round-off, relative to the prior variance σ0²
/// it is computed from (e.g. σ0² − ‖L⁻¹k‖²): such a value is reported as 0.
pub const ROUND_OFF: f64 = 1e-10;

/// A variance computed at row `row` as a difference of terms of size `scale` (the prior σ0²):
/// itself when ≥ 0, 0 when below zero by round-off only (≥ −[`ROUND_OFF`]·scale).
///
/// # Errors
/// [`Error::Numerical`] for a NaN, an infinity or a clearly negative value: the computation lost
/// its meaning, e.g. at test inputs so large that their squared distances overflow.
pub(crate) fn round_off_variance(v: f64, scale: f64, row: usize) -> Result<f64> {
    if v >= 0.0 && v.is_finite() {
        Ok(v)
    } else if v >= -ROUND_OFF * scale {
        Ok(0.0)
    } else {
        Err(Error::Numerical {
            what: format!(
                "the predictive variance at test row {row} is {v} (prior variance {scale}): \
                 the inputs may be beyond what f64 can resolve"
            ),
        })
    }
}

impl Predictive {
    /// Assembles a predictive from means and latent variances (checked by the caller, e.g. with
    /// [`round_off_variance`]) and the noise variance σn²: `variance` = latent + σn².
    pub(crate) fn from_latent(
        mean: DVector<f64>,
        latent_variance: DVector<f64>,
        noise_variance: f64,
    ) -> Self {
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
    /// [`Error::Numerical`] naming the first non-finite mean, variance or latent variance and its
    /// test point (the row).
    pub(crate) fn finite(self) -> Result<Self> {
        for (what, values) in [
            ("predictive mean", &self.mean),
            ("predictive variance", &self.variance),
            ("predictive latent variance", &self.latent_variance),
        ] {
            if let Some((row, &value)) = values.iter().enumerate().find(|(_, v)| !v.is_finite()) {
                return Err(Error::Numerical {
                    what: format!(
                        "the {what} at test row {row} is {value}: the inputs may be beyond what \
                         f64 can resolve"
                    ),
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
