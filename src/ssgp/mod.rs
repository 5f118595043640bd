//! Sparse Spectrum Gaussian Process regression.
pub mod features;
pub mod objective;
