//! The crate's integration tests, in one binary: one module per model and per shared concern,
//! and `common` for the helpers they share (gradient check, dense formulas, data files).

mod common;
mod conformance;
mod data;
mod ensemble;
mod fitc;
mod full_gp;
mod init;
mod joint;
mod kernels;
mod linfa;
mod overfitting;
mod persistence;
mod reference;
mod ssgp_model;
mod standardize;
mod threads;
mod training;
mod vfe;
