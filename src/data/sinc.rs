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
/// [`Error::EmptyData`] if `n` = 0; [`Error::InvalidParameter`] for a negative or non-finite
/// `noise_std`; [`Error::Allocation`] if the 16·n bytes of inputs and targets cannot be
/// allocated.
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
    let too_big = || Error::Allocation {
        what: "the sinc data's inputs and targets",
        bytes: n.saturating_mul(2 * std::mem::size_of::<f64>()),
    };
    let (mut x, mut y) = (Vec::new(), Vec::new());
    x.try_reserve_exact(n).map_err(|_| too_big())?;
    y.try_reserve_exact(n).map_err(|_| too_big())?;
    if grid {
        let step = if n > 1 { 6.0 / (n - 1) as f64 } else { 0.0 };
        x.extend((0..n).map(|i| -1.0 + step * i as f64));
    } else {
        x.extend((0..n).map(|_| rng.random_range(-1.0..5.0)));
    }
    y.extend(x.iter().map(|&xi| sinc(xi) + noise.sample(rng)));
    Dataset::new(DMatrix::from_vec(n, 1, x), DVector::from_vec(y))
}
