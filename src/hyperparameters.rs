//! The hyperparameters every model shares and their place in the parameter vector θ.
//!
//! Every model's covariance is a stationary ARD kernel (the squared exponential of paper eq. 3 by
//! default, or a Matérn, [`crate::kernel`]) with Gaussian noise, so they share ℓ (D
//! lengthscales), the signal variance σ0² and the noise variance σn². In θ these come first, in
//! log space:
//!
//! $$θ = [\log ℓ_1, …, \log ℓ_D,\ \log σ_0,\ p_n,\ \mathrm{vec}(B)],$$
//!
//! where σ0 is a standard deviation (σ0² = e^{2θ_D}), σn² = floor + e^{2p_n} ([`NoiseParam`]; so
//! p_n = log σn without a floor), and vec(B) is an optional block: a model's own m×D matrix stored
//! column by column, entry (r, d) at index D + 2 + r + d·m — SSGP's unit frequencies W (the
//! original `ssgpr.m` layout) and FITC's pseudo-inputs X̄ (Snelson's, up to the log
//! parametrisation). The full GP has no block, and neither do SSGP and FITC when the block is held
//! fixed. [`pack`] and `unpack` are the only functions that know this layout.
//!
//! ```
//! use ssgp::hyperparameters::{pack, theta_len, NoiseParam};
//! use ssgp::nalgebra::{DMatrix, DVector};
//! use ssgp::Hyperparameters;
//!
//! let h = Hyperparameters {
//!     lengthscales: DVector::from_vec(vec![0.5, 2.0]),
//!     signal_variance: 4.0,
//!     noise_variance: 0.01,
//! };
//! let w = DMatrix::from_row_slice(3, 2, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]); // an m×D block, m = 3
//! let theta = pack(&h, NoiseParam { floor: 0.0 }, Some(&w));
//! assert_eq!(theta.len(), theta_len(2, 3));        // D + 2 + m·D = 10
//! assert_eq!(theta[0], 0.5f64.ln());               // log ℓ_1
//! assert_eq!(theta[2], 0.5 * 4.0f64.ln());         // log σ0
//! assert!((theta[3] - 0.1f64.ln()).abs() < 1e-15); // p_n = log σn without a floor
//! assert_eq!((theta[4], theta[5], theta[7]), (1.0, 3.0, 2.0)); // W column by column
//! ```

use crate::error::{Error, Result};
use nalgebra::{DMatrix, DVector};
use std::borrow::Cow;

/// The kernel's hyperparameters in natural units: lengthscales ℓ, signal variance σ0², noise
/// variance σn².
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Hyperparameters {
    /// Lengthscales ℓ (D), all positive.
    pub lengthscales: DVector<f64>,
    /// Signal variance σ0² (the prior variance of f).
    pub signal_variance: f64,
    /// Noise variance σn² (any floor included).
    pub noise_variance: f64,
}

impl Hyperparameters {
    /// Input dimension D.
    pub fn dim(&self) -> usize {
        self.lengthscales.len()
    }

    /// Checks that every lengthscale and both variances are positive and finite.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming the first bad value.
    pub fn validate(&self) -> Result<()> {
        if let Some(bad) = self
            .lengthscales
            .iter()
            .find(|l| !(**l > 0.0 && l.is_finite()))
        {
            return Err(Error::InvalidParameter {
                name: "lengthscales",
                reason: format!("{bad} is not a positive finite lengthscale"),
            });
        }
        for (name, v) in [
            ("signal_variance", self.signal_variance),
            ("noise_variance", self.noise_variance),
        ] {
            if !(v > 0.0 && v.is_finite()) {
                return Err(Error::InvalidParameter {
                    name,
                    reason: format!("{v} is not a positive finite variance"),
                });
            }
        }
        Ok(())
    }
}

/// The noise variance as an unconstrained parameter p, with an optional lower bound (§5.2):
/// σn² = floor + e^{2p}. Without a floor (floor = 0), p = log σn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NoiseParam {
    /// The lower bound on σn² (0 for none).
    pub floor: f64,
}

impl NoiseParam {
    /// σn² at parameter p.
    pub fn variance(&self, p: f64) -> f64 {
        self.floor + (2.0 * p).exp()
    }

    /// dσn²/dp at parameter p.
    pub fn variance_derivative(&self, p: f64) -> f64 {
        2.0 * (2.0 * p).exp()
    }

    /// The parameter p for a noise variance (a value at or below the floor starts just above it,
    /// at floor + max(v − floor, floor·1e-3)).
    pub fn param(&self, variance: f64) -> f64 {
        let excess = (variance - self.floor).max(self.floor * 1e-3);
        0.5 * excess.max(f64::MIN_POSITIVE).ln()
    }

    /// The parameter p of a noise variance above the floor, exactly: σn² = floor + e^{2p} gives
    /// it back to round-off (where [`Self::param`] moves a start at or within 10⁻³·floor of the
    /// floor to floor + 10⁻³·floor; above that the two are the same bits).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming `noise_floor` for a variance at or below the floor (no
    /// p gives it): `what` names the variance, `remedy` says how to condition at it.
    pub(crate) fn exact_param(&self, variance: f64, what: &str, remedy: &str) -> Result<f64> {
        if variance > self.floor {
            Ok(0.5 * (variance - self.floor).ln())
        } else {
            Err(Error::InvalidParameter {
                name: "noise_floor",
                reason: format!(
                    "{what} {variance:e} is not above the noise floor {:e} (σn² = floor + e^{{2p}} \
                     cannot hold it); {remedy}",
                    self.floor
                ),
            })
        }
    }

    /// Whether σn² sits at its floor at parameter p: a positive floor, and the free part e^{2p}
    /// at most 1 % of it (the data asked for less noise than the floor allows — noise-free
    /// data, or an overfitted noise).
    pub fn at_floor(&self, p: f64) -> bool {
        self.floor > 0.0 && (2.0 * p).exp() <= 0.01 * self.floor
    }

    /// Checks the floor.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a negative or non-finite floor.
    pub fn validate(&self) -> Result<()> {
        if !(self.floor >= 0.0 && self.floor.is_finite()) {
            return Err(Error::InvalidParameter {
                name: "noise_floor",
                reason: format!("{} is not a finite non-negative variance", self.floor),
            });
        }
        Ok(())
    }
}

/// θ in the full layout `[log ℓ (D), log σ0, p_n, vec(B)]` after an optimisation of `theta`:
/// `theta` itself when it holds the block, or its head followed by vec(`block`) (m×D, column
/// by column) when the block was held fixed and left out of the optimised θ.
pub(crate) fn with_fixed_block(
    theta: &DVector<f64>,
    block: &DMatrix<f64>,
    fixed: bool,
) -> DVector<f64> {
    if !fixed {
        return theta.clone();
    }
    let head = block.ncols() + 2;
    let mut full = DVector::zeros(theta_len(block.ncols(), block.nrows()));
    full.rows_mut(0, head).copy_from(&theta.rows(0, head));
    full.as_mut_slice()[head..].copy_from_slice(block.as_slice());
    full
}

/// Number of entries of θ for D inputs and an m×D block (`block_rows` = m, or 0 for none);
/// `usize::MAX` if that overflows (no θ has that length, so a check against it fails).
pub fn theta_len(dim: usize, block_rows: usize) -> usize {
    block_rows
        .saturating_mul(dim)
        .saturating_add(dim)
        .saturating_add(2)
}

/// Packs hyperparameters and an optional m×D block into θ (layout in the [module docs](self)).
///
/// The caller has checked the values ([`Hyperparameters::validate`]) and the block's shape.
///
/// # Panics
/// If the block has not D = `h.dim()` columns.
pub fn pack(h: &Hyperparameters, noise: NoiseParam, block: Option<&DMatrix<f64>>) -> DVector<f64> {
    let dim = h.dim();
    let mut theta = DVector::zeros(theta_len(dim, block.map_or(0, |b| b.nrows())));
    for d in 0..dim {
        theta[d] = h.lengthscales[d].ln();
    }
    theta[dim] = 0.5 * h.signal_variance.ln();
    theta[dim + 1] = noise.param(h.noise_variance);
    if let Some(b) = block {
        theta.as_mut_slice()[dim + 2..].copy_from_slice(b.as_slice());
    }
    theta
}

/// θ decoded: the hyperparameters and the m×D block (borrowed when it is held fixed).
#[derive(Debug, Clone)]
pub(crate) struct Decoded<'b> {
    /// ℓ, σ0², σn².
    pub hyper: Hyperparameters,
    /// dσn²/dp_n at θ's noise entry.
    pub noise_derivative: f64,
    /// The block (W or X̄), or an empty 0×D matrix for a model without one.
    pub block: Cow<'b, DMatrix<f64>>,
}

/// Decodes θ for D = `dim` inputs and an m×D block (`block_rows` = m): from θ itself, or `fixed`
/// when the block is held fixed (θ then has D + 2 entries), or none when `block_rows` = 0.
///
/// # Errors
/// [`Error::DimensionMismatch`] (naming `what`) for a θ of the wrong length,
/// [`Error::NonFinite`] for a NaN or infinity in θ, [`Error::InvalidParameter`] if a
/// lengthscale or variance under- or overflows (is 0 or infinite).
pub(crate) fn unpack<'b>(
    theta: &DVector<f64>,
    dim: usize,
    block_rows: usize,
    noise: NoiseParam,
    fixed: Option<&'b DMatrix<f64>>,
    what: &'static str,
) -> Result<Decoded<'b>> {
    let expected = theta_len(dim, if fixed.is_some() { 0 } else { block_rows });
    if theta.len() != expected {
        return Err(Error::DimensionMismatch {
            what,
            expected,
            found: theta.len(),
        });
    }
    crate::data::check_finite_vector(what, theta)?;
    let hyper = Hyperparameters {
        lengthscales: theta.rows(0, dim).map(f64::exp),
        signal_variance: (2.0 * theta[dim]).exp(),
        noise_variance: noise.variance(theta[dim + 1]),
    };
    let usable = |v: f64| v > 0.0 && v.is_finite();
    if !hyper.lengthscales.iter().all(|&l| usable(l))
        || !usable(hyper.signal_variance)
        || !usable(hyper.noise_variance)
    {
        return Err(Error::InvalidParameter {
            name: "theta",
            reason: format!(
                "θ = {:?}… gives a zero or infinite lengthscale or variance",
                &theta.as_slice()[..dim + 2]
            ),
        });
    }
    let block = match fixed {
        Some(b) => Cow::Borrowed(b),
        None => Cow::Owned(DMatrix::from_column_slice(
            block_rows,
            dim,
            &theta.as_slice()[dim + 2..],
        )),
    };
    Ok(Decoded {
        hyper,
        noise_derivative: noise.variance_derivative(theta[dim + 1]),
        block,
    })
}

/// Checks that an m×D block (W or X̄), named `what`, has the shape the model expects and finite
/// entries. `rows` and `cols` pair the expected count with the name of what is counted
/// (e.g. `(m, "pseudo-inputs (rows, m)")`).
///
/// # Errors
/// [`Error::DimensionMismatch`] naming the rows or the columns for a wrong number of them,
/// [`Error::NonFinite`] naming `what` for a NaN or infinity.
pub(crate) fn check_block(
    block: &DMatrix<f64>,
    rows: (usize, &'static str),
    cols: (usize, &'static str),
    what: &'static str,
) -> Result<()> {
    crate::error::check_shape(block.shape(), rows, cols)?;
    crate::data::check_finite(what, block)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack_and_unpack_are_inverse_and_follow_the_layout() {
        let h = Hyperparameters {
            lengthscales: DVector::from_vec(vec![0.5, 2.0]),
            signal_variance: 1.7,
            noise_variance: 0.3,
        };
        let block = DMatrix::from_fn(3, 2, |j, d| (j + 10 * d) as f64);
        let noise = NoiseParam { floor: 0.1 };
        let theta = pack(&h, noise, Some(&block));
        assert_eq!(theta.len(), theta_len(2, 3));
        // Entry (j, d) of the block sits at D + 2 + j + d·m.
        assert_eq!(theta[2 + 2 + 2 + 3], block[(2, 1)]);
        assert_eq!(theta[0], 0.5f64.ln());
        assert_eq!(theta[2], 0.5 * 1.7f64.ln());
        let back = unpack(&theta, 2, 3, noise, None, "θ").unwrap();
        assert!((&back.hyper.lengthscales - &h.lengthscales).amax() < 1e-15);
        assert!((back.hyper.signal_variance - 1.7).abs() < 1e-14);
        assert!((back.hyper.noise_variance - 0.3).abs() < 1e-14);
        assert_eq!(back.block.as_ref(), &block);
        let head = pack(&h, noise, None);
        assert_eq!(head.len(), 4);
        let fixed = unpack(&head, 2, 3, noise, Some(&block), "θ").unwrap();
        assert!(matches!(fixed.block, Cow::Borrowed(_)));
        assert!(matches!(
            unpack(&head, 2, 3, noise, None, "θ"),
            Err(Error::DimensionMismatch {
                expected: 10,
                found: 4,
                ..
            })
        ));
        assert_eq!(
            unpack(&head, 2, 3, noise, None, "θ")
                .unwrap_err()
                .to_string(),
            "dimension mismatch in θ: expected 10, found 4"
        );
        let mut overflow = head.clone();
        overflow[1] = 1e3;
        assert!(matches!(
            unpack(&overflow, 2, 0, noise, None, "θ"),
            Err(Error::InvalidParameter { .. })
        ));
        let mut nan = head;
        nan[3] = f64::NAN;
        assert!(matches!(
            unpack(&nan, 2, 0, noise, None, "θ"),
            Err(Error::NonFinite { row: 3, .. })
        ));
    }
}
