//! Gaussian-process regression with the **Sparse Spectrum Gaussian Process** (SSGP) of
//! Lázaro-Gredilla, Quiñonero-Candela, Rasmussen and Figueiras-Vidal (JMLR 11, 2010), with the
//! exact GP and FITC as baselines.
//!
//! SSGP approximates a stationary GP by a sparse set of m **spectral points**: the function is a
//! Bayesian linear model on m cosine/sine pairs (eq. 5), whose frequencies, lengthscales, signal
//! and noise variances are learned together by maximising the evidence (eq. 8). Training costs
//! O(nm²) per evaluation, prediction O(m) (mean) and O(m²) (variance) per test point, and the
//! predictive distribution is a proper Gaussian with a calibrated variance.
//!
//! # Quick start
//! ```
//! use ssgp::{data::sinc_data, metrics, ssgp::Ssgp};
//! use rand::{rngs::StdRng, SeedableRng};
//!
//! let mut rng = StdRng::seed_from_u64(0);
//! let train = sinc_data(100, false, 0.05, &mut rng)?;   // y = sinc(x) + noise, x ∈ [−1, 5]
//! let test = sinc_data(500, true, 0.05, &mut rng)?;
//!
//! let fitted = Ssgp::params(10).seed(1).fit(&train)?;   // 10 spectral points, 20 basis functions
//! let pred = fitted.predict(test.x())?;                 // mean and variance of y* and f*
//! println!(
//!     "NMSE {:.4}, MNLP {:.3}, −log p(y|θ) {:.2}",
//!     metrics::nmse(test.y(), &pred, train.y_mean())?,
//!     metrics::mnlp(test.y(), &pred)?,
//!     fitted.neg_log_evidence()
//! );
//! # Ok::<(), ssgp::Error>(())
//! ```
//!
//! # Map of the crate
//! | module | what it holds |
//! |---|---|
//! | [`data`] | [`Dataset`] (validated once), CSV loading with line-numbered errors, the sinc toy |
//! | [`ensemble`] | restarts kept as the best fit or combined as a mixture, and their spread (§5.4) |
//! | [`kernel`] | the SE-ARD covariance (eq. 3) and its spectral density (eq. 12), shared by every model |
//! | [`ssgp`] | spectral points, design matrix, evidence and gradient, training, prediction, posterior samples |
//! | [`optim`] | argmin's nonlinear CG over any [`optim::Objective`], with budgets, a convergence test and best-θ keeping |
//! | [`linalg`] | Cholesky and triangular solves on faer's blocked kernels, over nalgebra buffers |
//! | [`model`] | the [`Regressor`] / [`FittedRegressor`] traits every model implements |
//! | [`metrics`] | NMSE and MNLP (eq. 13) |
//! | [`standardize`] | centring and scaling of inputs and targets around any model, undone in predictions |
//! | [`predictive`] | [`Predictive`]: means and variances of y* and f* |
//!
//! Each model is a configuration (`Ssgp::params(m)`, a builder checked before any work) that
//! [`fit`](ssgp::SsgpParams::fit)s a [`Dataset`] into a fitted model that predicts. The evidence
//! and its gradient are pure functions of (data, θ) — [`ssgp::SsgpObjective`] — kept apart from
//! the optimiser loop. Positive parameters live in log space; every failure is an [`Error`].
#![warn(missing_docs)]

pub mod data;
pub mod ensemble;
pub mod error;
pub mod fitc;
pub mod full_gp;
pub mod kernel;
pub mod linalg;
pub mod metrics;
pub mod model;
pub mod optim;
pub mod predictive;
pub mod ssgp;
pub mod standardize;

pub use data::Dataset;
pub use error::{Error, Result};
pub use fitc::{Fitc, FitcParams, FittedFitc};
pub use full_gp::{FittedFullGp, FullGp, FullGpParams};
pub use model::{FittedRegressor, NoiseParam, Regressor, TrainingSummary};
pub use optim::{OptimConfig, Progress, Termination};
pub use predictive::Predictive;
