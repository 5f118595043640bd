//! SSGP across the ranks of an MPI job (feature `mpi`), for data that outgrow one machine.
//!
//! SSGP's evidence (eq. 8) needs only sums over data points: A = ΦᵀΦ (2m×2m), b = Φᵀy, yᵀy and
//! n, and its gradient the sum ∂/∂Ω = gᵀX (m×D). Each rank holds its own rows and computes their
//! sums with the single-process code ([`crate::ssgp::SsgpEvidence`]'s local sums); the sums are
//! all-reduced and every rank runs the same finalize step (the 2m×2m Cholesky factor, the value,
//! the gradient). Rank 0 runs the optimiser and broadcasts θ; failures are all-reduced with the
//! sums, so every rank returns the same outcome and none is left waiting in a collective.
//!
//! - `cluster.rs`: [`Cluster`], the ranks and the collectives, with their [`Traffic`];
//! - `statistics.rs`: [`GlobalStatistics`], the all-reduced column ranges and means, ȳ, var y;
//! - `evidence.rs`: [`DistributedEvidence`], eq. 8 and its gradient over all ranks;
//! - `training.rs`: [`crate::ssgp::ValidSsgpParams::fit_distributed`] and [`DistributedFit`];
//!   the learned and the random-feature fit on every rank's rows;
//! - `check.rs`: the calibration check across the ranks (the single-process proxy, each rank
//!   holding out half its rows);
//! - `rows.rs`: [`row_share`] and [`load_csv_share`], a rank's own rows of one CSV file.
//!
//! **Bytes per evaluation** (payload of each rank; k = 2m, D inputs, P = D + 2 + mD entries of
//! θ, R ranks): the command broadcast 8(P + 1), the sums 8(k(k+1)/2 + k + 2 + R), the gradient
//! 8(mD + R + 1): 8(2m² + 2mD + 3m + D + 2R + 6) in all — 1.0 MB at m = 250, D = 8.
//! The cost model and measurements are in `docs/distributed.md`.
//!
//! ```no_run
//! use ssgp::distributed::{load_csv_share, Cluster};
//! use ssgp::{data::CsvOptions, ParamGuard, Ssgp};
//!
//! let universe = ssgp::mpi::initialize().ok_or("MPI was initialised already")?;
//! let cluster = Cluster::new(universe.world());
//! let local = load_csv_share("data/kin40k/train.csv", &CsvOptions::new(), &cluster)?;
//! let fit = Ssgp::params(100).seed(1).check()?.fit_distributed(&local, &cluster)?;
//! if cluster.is_root() {
//!     println!("−log p(y|θ) = {}", fit.model.neg_log_evidence());
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod check;
mod cluster;
mod evidence;
mod fingerprint;
mod rows;
mod statistics;
mod training;

pub use cluster::{Cluster, Traffic};
pub use evidence::DistributedEvidence;
pub use rows::{load_csv_share, row_share};
pub use statistics::GlobalStatistics;
pub use training::DistributedFit;
