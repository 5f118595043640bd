//! FITC, the sparse pseudo-input Gaussian process of Snelson & Ghahramani (2006): the paper's
//! sparse baseline.
//!
//! m pseudo-inputs X̄ (m×D) summarise the n training points. The prior covariance of the training
//! targets is replaced by $Q_{ff} + \mathrm{diag}(K_{ff} - Q_{ff}) + σ_n^2 I$ with
//! $Q_{ff} = K_{fu}K_{uu}^{-1}K_{uf}$; the pseudo-inputs are learned together with the
//! kernel's hyperparameters (the squared exponential by default, any of [`crate::kernel`]'s) by
//! maximising the evidence ([`FitcEvidence`] has the equations, the parameter
//! layout and the O(nm²) computation). Prediction costs O(m²) per test point.
//!
//! - `params.rs`: the configuration ([`FitcParams`] → [`ValidFitcParams`]); `train.rs` its
//!   training and conditioning (written once for FITC and VFE in the private `inducing` module);
//! - `evidence.rs`: −log p(y|θ) and its gradient ([`FitcEvidence`]);
//! - `saved.rs`: (feature `serde`) the fitted model's saved form;
//! - `posterior.rs`: the fitted model ([`FittedFitc`]) and its predictions.
//!
//! ```
//! use ssgp::{data::sinc_data, metrics, Fitc};
//! use ssgp::rand::{rngs::StdRng, SeedableRng};      // re-exported: no rand of your own needed
//!
//! let mut rng = StdRng::seed_from_u64(0);
//! let train = sinc_data(80, false, 0.05, &mut rng)?;
//! let test = sinc_data(200, true, 0.05, &mut rng)?;
//! let model = Fitc::params(10).seed(1).fit(&train)?;
//! let pred = model.predict(test.x())?;
//! assert!(metrics::nmse(test.y(), &pred, train.y_mean())? < 0.05);
//! # Ok::<(), ssgp::Error>(())
//! ```

mod evidence;
mod params;
mod posterior;
#[cfg(feature = "serde")]
mod saved;
mod train;

pub use evidence::FitcEvidence;
pub use params::{FitcParams, ValidFitcParams, DEFAULT_JITTER};
pub use posterior::FittedFitc;

/// Entry point of the FITC builder: `Fitc::params(m)`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Fitc;

impl Fitc {
    /// A FITC configuration with `m` pseudo-inputs and default settings (see [`ValidFitcParams`]).
    pub fn params(m: usize) -> FitcParams {
        FitcParams::new(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inducing::PREDICT_BLOCK;
    use nalgebra::DMatrix;
    use rand::SeedableRng;

    #[test]
    fn prediction_in_blocks_equals_prediction_per_point() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(2);
        let train = crate::data::sinc_data(60, false, 0.1, &mut rng).unwrap();
        let model = Fitc::params(8).max_iterations(5).fit(&train).unwrap();
        let n = PREDICT_BLOCK + 7;
        let xs = DMatrix::from_fn(n, 1, |i, _| -1.5 + 7.0 * i as f64 / n as f64);
        let all = model.predict(&xs).unwrap();
        for &i in &[0, PREDICT_BLOCK - 1, PREDICT_BLOCK, n - 1] {
            let one = model.predict(&xs.rows(i, 1).into_owned()).unwrap();
            assert!((one.mean[0] - all.mean[i]).abs() < 1e-13);
            assert!((one.y_variance[0] - all.y_variance[i]).abs() < 1e-13);
        }
        assert!(all.f_variance.iter().all(|v| *v >= 0.0));
    }
}
