//! Gaussian-process regression with the Sparse Spectrum Gaussian Process (SSGP).
#![warn(missing_docs)]

pub mod data;
pub mod error;
pub mod full_gp;
pub mod kernel;
pub mod linalg;
pub mod metrics;
pub mod model;
pub mod optim;
pub mod predictive;

pub use data::Dataset;
pub use error::{Error, Result};
pub use full_gp::{FittedFullGp, FullGp, FullGpParams};
pub use model::{FittedRegressor, NoiseParam, Regressor, TrainingSummary};
pub use optim::{OptimConfig, Progress, Termination};
pub use predictive::Predictive;
