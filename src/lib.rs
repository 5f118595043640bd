//! Gaussian-process regression with the **Sparse Spectrum Gaussian Process** (SSGP) of
//! Lázaro-Gredilla, Quiñonero-Candela, Rasmussen and Figueiras-Vidal (JMLR 11, 2010), with the
//! exact GP, FITC and VFE as baselines.
//!
//! SSGP approximates a stationary GP by a sparse set of m **spectral points**: the function is a
//! Bayesian linear model on m cosine/sine pairs (eq. 5), whose frequencies, lengthscales, signal
//! and noise variances are learned together by maximising the evidence (eq. 8). Training costs
//! O(nm²) per evaluation, prediction O(mD) (mean) and O(m² + mD) (variance) per test point, and the
//! predictive distribution is a proper Gaussian with a calibrated variance.
//!
//! # Quick start
//! ```
//! use ssgp::{data::sinc_data, metrics, ssgp::Ssgp};
//! use ssgp::rand::{rngs::StdRng, SeedableRng};      // re-exported: no rand of your own needed
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
//! The paper's pipeline, each step owned by one module that every model uses, in floors whose
//! imports run one way: `docs/design.md` gives the floors and maps every file, and
//! `tests/suite/house.rs` fails on an import that runs up a floor or closes a cycle. The
//! pipeline:
//!
//! ```text
//! data → start values → kernel / features → evidence + gradient → optimiser → posterior → prediction
//! ```
//!
//! | module | what it holds |
//! |---|---|
//! | [`termination`] | how a training run ended and went: [`Termination`], [`termination::FailedTraining`], [`TrainingSummary`] |
//! | [`error`] | the crate's one [`Error`] type |
//! | [`data`] | [`Dataset`] (validated once) from row-major slices, rows, nalgebra, ndarray (feature `ndarray`) or CSV ([`data::CsvOptions`]: delimiter, header, target column, row ranges; file:line errors), the sinc toy |
//! | [`optim`] | argmin's nonlinear CG (or L-BFGS, VFE's default) over any [`optim::Objective`], with budgets, a convergence test and best-θ keeping |
//! | [`linalg`] | Cholesky with the one [`linalg::Jitter`] policy, triangular solves, BLAS-3 kernels on a packed gemm |
//! | [`hyperparameters`] | the shared [`Hyperparameters`] (ℓ, σ0², σn²), the noise parametrisation and the θ layout |
//! | [`kernel`] | the stationary ARD covariances (squared exponential, eq. 3; Matérn ½, 3/2, 5/2) and their spectral densities (eq. 9–12) |
//! | [`predictive`] | [`Predictive`]: means and variances of y* (`y_variance`) and f* (`f_variance`); [`JointPredictive`]: the joint covariance at up to [`predictive::MAX_JOINT_POINTS`] points and seeded joint samples ([`JointSamples`]) |
//! | [`init`] | start values from the data: lengthscale strategies ([`LengthscaleInit`]), σ0², σn², spectral points, pseudo-inputs |
//! | [`metrics`] | NMSE and MNLP (eq. 13), calibration |
//! | `inducing` | (private) what FITC and VFE share: K_uf, K_uu's factor with its jitter, the Woodbury factorisation and gradient, the posterior's solves, the k-means and greedy starts |
//! | [`params`] | validated settings ([`ParamGuard`]), the training settings every model shares, [`params::Reseed`] |
//! | [`model`] | the [`Fit`], [`Regressor`] and [`FittedRegressor`] traits |
//! | [`full_gp`] | the exact GP (eq. 2–4): evidence and gradient, subset training, prediction; the §5.2 start [`full_gp::lengthscales_from_subset`] |
//! | [`fitc`] | FITC (Snelson & Ghahramani 2006): pseudo-inputs, evidence and gradient, prediction |
//! | [`vfe`] | VFE (Titsias 2009; GPflow's and GPyTorch's SGPR): the collapsed variational bound, its gradient, the optimal variational posterior; its factorisation and gradient shared with FITC |
//! | [`ssgp`] | spectral points, design matrix, evidence and gradient, training, prediction, posterior samples |
//! | [`standardize`] | centring and scaling of inputs and targets around any model, undone in predictions |
//! | [`ensemble`] | restarts of any seeded builder kept as the best fit or combined as a mixture, and their spread (§5.4) |
//! | `persist` | (feature `serde`) saving and loading every fitted model: one JSON format with a version, checked on load, bit-identical predictions |
//! | `distributed` | (feature `mpi`) SSGP across the ranks of an MPI job — each rank's sums all-reduced, rank 0 leads the optimiser, the same model on every rank |
//! | `linfa_traits` | (feature `linfa`) linfa's `Fit` and `PredictInplace` on the models |
//! | [`guide`] | the user's guide: which model, choosing m, overconfidence and its remedies, reproducibility, other libraries' calls here |
//!
//! Each model is a configuration (`Ssgp::params(m)`, a builder) that [`ParamGuard::check`]
//! validates once and that then [`fit`](ssgp::ValidSsgpParams::fit)s a [`Dataset`] into a fitted
//! model that predicts. The evidence and its gradient are pure functions of (data, θ) —
//! [`ssgp::SsgpEvidence`], [`fitc::FitcEvidence`], [`vfe::VfeEvidence`] (a bound),
//! [`full_gp::FullGpEvidence`] — kept apart from
//! the optimiser loop. Positive parameters live in log space; every failure is an [`Error`].
//! Maths in the docs is KaTeX (`$…$`), rendered on docs.rs.
#![deny(missing_docs)]

pub mod data;
#[cfg(feature = "mpi")]
pub mod distributed;
pub mod ensemble;
pub mod error;
pub mod fitc;
pub mod full_gp;
pub mod guide;
pub mod hyperparameters;
mod inducing;
pub mod init;
pub mod kernel;
pub mod linalg;
#[cfg(feature = "linfa")]
pub mod linfa_traits;
pub mod metrics;
pub mod model;
pub mod optim;
pub mod params;
#[cfg(feature = "serde")]
pub mod persist;
mod prediction_loop;
pub mod predictive;
mod random;
#[cfg(feature = "serde")]
mod schema;
pub mod ssgp;
pub mod standardize;
pub mod termination;
pub mod vfe;

/// linfa (feature `linfa`), re-exported for its traits and `DatasetBase`: the models implement
/// `Fit` and `PredictInplace` ([`linfa_traits`]).
#[cfg(feature = "linfa")]
pub use linfa;
/// The `mpi` crate (rsmpi) the `distributed` module is built on (feature `mpi`): initialise MPI
/// and build a [`distributed::Cluster`] without a dependency of your own.
#[cfg(feature = "mpi")]
pub use mpi;
/// The linear-algebra crate of the crate's API (`DMatrix`, `DVector`), re-exported so that a
/// user needs no nalgebra of their own, and none of another version.
pub use nalgebra;
/// The n-dimensional array crate (feature `ndarray`), re-exported for
/// [`Dataset::from_ndarray`] and [`data::matrix_from_ndarray`].
#[cfg(feature = "ndarray")]
pub use ndarray;
/// The random-number crate of the crate's API (`StdRng`, `SeedableRng`, `Rng` for
/// [`data::sinc_data`] and posterior samples), re-exported for the same reason.
pub use rand;

pub use data::Dataset;
pub use error::{Error, Result};
pub use fitc::{Fitc, FitcParams, FittedFitc};
pub use full_gp::{FittedFullGp, FullGp, FullGpParams};
pub use hyperparameters::{Hyperparameters, NoiseParam};
pub use init::LengthscaleInit;
pub use model::{Fit, FittedRegressor, Regressor};
pub use optim::{OptimConfig, Progress};
pub use params::ParamGuard;
pub use predictive::{JointPredictive, JointSamples, Predictive, PredictiveGradients};
pub use ssgp::{FittedSsgp, Ssgp, SsgpParams};
pub use termination::{
    Flags, HeldOutCalibration, LooDiagnostic, Remedy, Termination, TrainingSummary,
};
pub use vfe::{FittedVfe, Vfe, VfeParams};

/// The README's code, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
