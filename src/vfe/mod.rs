//! VFE, the collapsed variational bound of Titsias (2009) — GPflow's and GPyTorch's `SGPR` —
//! beside FITC as the crate's second sparse baseline.
//!
//! m inducing inputs X̄ (m×D) summarise the n training points. Instead of changing the prior, as
//! FITC does, VFE keeps the exact GP and fits a Gaussian q(u) on the inducing values
//! u = f(X̄); with q(u) optimal, the log marginal likelihood is bounded below by
//! $$F = \log N(y \mid 0, Q_{ff} + σ_n^2 I) - \frac{\mathrm{tr}(K_{ff} - Q_{ff})}{2σ_n^2}
//!   \;\le\; \log p(y \mid θ), \qquad Q_{ff} = K_{fu}K_{uu}^{-1}K_{uf},$$
//! which is maximised over the kernel's hyperparameters and the inducing inputs together
//! ([`VfeEvidence`] has the layout and the O(nm²) computation, shared with FITC). The trace term,
//! the prior variance the inducing inputs leave unexplained, penalises a poor X̄: the bound
//! cannot overfit the inducing inputs the way FITC's evidence can (Bauer, van der Wilk &
//! Rasmussen 2016), and it tends to overestimate the noise instead. F equals log p(y|θ) when X̄
//! is the training inputs (up to the jitter on K_uu). Prediction costs O(m²) per test point.
//!
//! - `params.rs`: the configuration ([`VfeParams`] → [`ValidVfeParams`]); `train.rs` its
//!   training and conditioning (written once for FITC and VFE in the private `inducing` module);
//! - `evidence.rs`: −F and its gradient ([`VfeEvidence`]);
//! - `saved.rs`: (feature `serde`) the fitted model's saved form;
//! - `posterior.rs`: the fitted model ([`FittedVfe`]) and its predictions.
//!
//! ```
//! use ssgp::{data::sinc_data, metrics, Vfe};
//! use ssgp::rand::{rngs::StdRng, SeedableRng};
//!
//! let mut rng = StdRng::seed_from_u64(0);
//! let train = sinc_data(80, false, 0.05, &mut rng)?;
//! let test = sinc_data(200, true, 0.05, &mut rng)?;
//! let model = Vfe::params(10).seed(1).fit(&train)?;
//! let pred = model.predict(test.x())?;
//! assert!(metrics::nmse(test.y(), &pred, train.y_mean())? < 0.05);
//! assert!(model.bound() <= -model.neg_log_evidence() + 1e-9); // F is the negated objective
//! # Ok::<(), ssgp::Error>(())
//! ```

mod evidence;
mod params;
mod posterior;
#[cfg(feature = "serde")]
mod saved;
mod train;

pub use evidence::VfeEvidence;
pub use params::{
    InducingStart, ValidVfeParams, VfeParams, DEFAULT_INDUCING_START, DEFAULT_JITTER,
    DEFAULT_OPTIMIZER,
};
pub use posterior::FittedVfe;

/// Entry point of the VFE builder: `Vfe::params(m)`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Vfe;

impl Vfe {
    /// A VFE configuration with `m` inducing inputs and default settings (see
    /// [`ValidVfeParams`]).
    pub fn params(m: usize) -> VfeParams {
        VfeParams::new(m)
    }
}
