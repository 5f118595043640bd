//! The sinc toy problem of the paper's Figure 2.

use super::Dataset;
use crate::error::{Error, Result};
use nalgebra::{DMatrix, DVector};
use rand::Rng;
use rand_distr::{Distribution, Normal};

/// sinc(x) = sin(πx)/(πx), with sinc(0) = 1.
pub fn sinc(x: f64) -> f64 {
    if x == 0.0 {
        1.0
    } else {
        let px = std::f64::consts::PI * x;
        px.sin() / px
    }
}

/// The sinc toy of the paper's Figure 2: `n` inputs uniform in [−1, 5] (or, with `grid`, evenly spaced
/// over it) and targets sinc(x) + N(0, `noise_std`²).
///
/// # Errors
/// [`Error::EmptyData`] if `n` = 0; [`Error::InvalidParameter`] for a negative or non-finite `noise_std`.
pub fn sinc_data<R: Rng + ?Sized>(
    n: usize,
    grid: bool,
    noise_std: f64,
    rng: &mut R,
) -> Result<Dataset> {
    if !(noise_std.is_finite() && noise_std >= 0.0) {
        return Err(Error::InvalidParameter {
            name: "noise_std",
            reason: format!("{noise_std} is not a finite standard deviation ≥ 0"),
        });
    }
    let noise = Normal::new(0.0, noise_std).map_err(|e| Error::InvalidParameter {
        name: "noise_std",
        reason: e.to_string(),
    })?;
    let x: Vec<f64> = if grid {
        let step = if n > 1 { 6.0 / (n - 1) as f64 } else { 0.0 };
        (0..n).map(|i| -1.0 + step * i as f64).collect()
    } else {
        (0..n).map(|_| rng.random_range(-1.0..5.0)).collect()
    };
    let y: Vec<f64> = x.iter().map(|&xi| sinc(xi) + noise.sample(rng)).collect();
    Dataset::new(DMatrix::from_vec(n, 1, x), DVector::from_vec(y))
}
