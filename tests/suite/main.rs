//! The crate's integration tests, in one binary: one module per model and per shared concern,
//! and `common` for the helpers they share (gradient check, dense formulas, data files).

mod calibration;
mod common;
mod conformance;
mod data;
mod ensemble;
mod examples;
mod fitc;
mod format2;
mod full_gp;
mod gradients;
mod house;
mod init;
mod joint;
mod kernels;
mod linfa;
mod memory;
mod multi_output;
mod newcomer;
mod online;
mod overfitting;
mod persistence;
mod reference;
mod ssgp_model;
mod standardize;
mod threads;
mod training;
mod vfe;
