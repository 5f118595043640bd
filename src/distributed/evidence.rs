//! SSGP's evidence (eq. 8) and its gradient over the rows of every rank: each rank's sums from
//! [`SsgpEvidence::local_sums`] and [`SsgpEvidence::local_gradient`], all-reduced, then the same
//! [`SsgpEvidence::finalize`] and [`SsgpEvidence::finalize_gradient`] the single-process evidence
//! runs, on every rank.
//!
//! Per evaluation (k = 2m, D used inputs), two all-reduces:
//! 1. [ΦᵀΦ packed lower (k(k+1)/2), Φᵀy (k), yᵀy, n, one failure flag per rank]:
//!    8·(k(k+1)/2 + k + 2 + ranks) bytes = 8·(2m² + 3m + 2 + ranks);
//! 2. [∂/∂Ω (mD), one failure flag per rank, rank 0's −log p]: 8·(mD + ranks + 1) bytes
//!    (the value alone when no gradient is asked for: 8·(ranks + 1)).
//!
//! Every rank then factorises the 2m×2m matrix itself (O(m³)); the value returned is rank 0's,
//! so ranks agree on it even where their CPUs round differently.

use super::cluster::{check_flags, Cluster};
use crate::error::Result;
use crate::optim::Objective;
use crate::ssgp::evidence::{DataSums, FirstPass};
use crate::ssgp::posterior::WeightPosterior;
use crate::ssgp::{SsgpEvidence, SsgpHyperparameters};
use nalgebra::{DMatrix, DVector};
use std::cell::Cell;
use std::time::{Duration, Instant};

/// SSGP's evidence θ ↦ (−log p(y|θ), ∇θ) over the rows of every rank of a [`Cluster`]; build it
/// with [`crate::ssgp::ValidSsgpParams::distributed_evidence`]. Every evaluation is a
/// **collective**: all ranks call it with the same θ (rank 0's, see [`crate::ssgp::ValidSsgpParams::fit_distributed`]).
///
/// θ's layout is [`SsgpEvidence`]'s. At a fixed θ the value and gradient equal the
/// single-process ones on all rows up to rounding (the sums are added in another order): the
/// tests hold them to 1e-12.
pub struct DistributedEvidence<'a> {
    local: SsgpEvidence<'a>,
    cluster: &'a Cluster,
    /// The number of rows over all ranks.
    n: usize,
    /// Time spent computing (the local sums and the finalize steps), collectives excluded.
    compute: Cell<Duration>,
    /// Evaluations so far.
    evaluations: Cell<usize>,
}

impl<'a> DistributedEvidence<'a> {
    /// The evidence over all ranks of this rank's `local` evidence (built on its rows with the
    /// global centring) and `n`, the rows of all ranks.
    pub(crate) fn new(local: SsgpEvidence<'a>, cluster: &'a Cluster, n: usize) -> Self {
        Self {
            local,
            cluster,
            n,
            compute: Cell::new(Duration::ZERO),
            evaluations: Cell::new(0),
        }
    }

    /// The ranks.
    pub fn cluster(&self) -> &Cluster {
        self.cluster
    }

    /// Evaluations so far on this rank, and the time spent computing in them (the time in
    /// collectives is in [`Cluster::traffic`]).
    pub fn compute(&self) -> (usize, Duration) {
        (self.evaluations.get(), self.compute.get())
    }

    /// Packs natural hyperparameters into θ, as [`SsgpEvidence::pack`].
    ///
    /// # Errors
    /// As [`SsgpEvidence::pack`].
    pub fn pack(&self, h: &SsgpHyperparameters) -> Result<DVector<f64>> {
        self.local.pack(h)
    }

    /// θ of a training start, as [`SsgpEvidence::pack_start`].
    pub(crate) fn pack_start(&self, h: &SsgpHyperparameters) -> Result<DVector<f64>> {
        self.local.pack_start(h)
    }

    /// Unpacks θ, as [`SsgpEvidence::unpack`].
    ///
    /// # Errors
    /// As [`SsgpEvidence::unpack`].
    pub fn unpack(&self, theta: &DVector<f64>) -> Result<SsgpHyperparameters> {
        self.local.unpack(theta)
    }

    /// Collective: −log p(y|θ) over all ranks (rank 0's value on every rank).
    ///
    /// # Errors
    /// As [`SsgpEvidence::value`] on any rank (then on every rank).
    pub fn value(&self, theta: &DVector<f64>) -> Result<f64> {
        let (first, _) = self.evaluate(theta, false)?;
        Ok(first.value())
    }

    /// Collective: −log p(y|θ) and the posterior over the weights.
    pub(crate) fn posterior(&self, theta: &DVector<f64>) -> Result<(f64, WeightPosterior)> {
        let (first, _) = self.evaluate(theta, false)?;
        Ok((first.value(), first.into_posterior()))
    }

    /// Collective: one evaluation over all ranks; the gradient too when `want_gradient` (empty
    /// otherwise).
    fn evaluate(
        &self,
        theta: &DVector<f64>,
        want_gradient: bool,
    ) -> Result<(FirstPass, DVector<f64>)> {
        let (ranks, rank) = (self.cluster.size(), self.cluster.rank());
        let k = 2 * self.local.num_spectral_points();
        let packed = k * (k + 1) / 2;
        let started = Instant::now();
        let mut ws = self.local.workspace();
        // Collective 1: the sums of eq. 8, with one failure flag per rank.
        let point = self.local.point(theta, want_gradient);
        let mut buf = vec![0.0; packed + k + 2 + ranks];
        match &point {
            Ok(p) => {
                let sums = self.local.local_sums(p, &mut ws);
                pack_lower(&sums.a, &mut buf[..packed]);
                buf[packed..packed + k].copy_from_slice(sums.b.as_slice());
                buf[packed + k] = sums.yty;
                buf[packed + k + 1] = sums.n as f64;
            }
            Err(_) => buf[packed + k + 2 + rank] = 1.0,
        }
        let mut compute = started.elapsed();
        self.cluster.sum(&mut buf);
        let after_reduce = Instant::now();
        let point = check_flags(point, &buf[packed + k + 2..])?;
        let sums = DataSums {
            a: unpack_lower(&buf[..packed], k),
            b: DMatrix::from_column_slice(k, 1, &buf[packed..packed + k]),
            yty: buf[packed + k],
            n: buf[packed + k + 1] as usize,
        };
        let first = self.local.finalize(point, sums);
        // Collective 2: ∂/∂Ω (when asked for), a failure flag per rank and rank 0's value.
        let m = self.local.num_spectral_points();
        let grad_len = if want_gradient {
            m * self.local.input_dim()
        } else {
            0
        };
        let mut second = vec![0.0; grad_len + ranks + 1];
        // σ0's and σn's entries, from the factor of the reduced sums (the same on every rank).
        let mut variances = [0.0; 2];
        match &first {
            Ok(f) => {
                if want_gradient {
                    let (d_omega, v) = self.local.local_gradient_and_variances(&mut ws, f);
                    second[..grad_len].copy_from_slice(d_omega.as_slice());
                    variances = v;
                }
                if rank == 0 {
                    second[grad_len + ranks] = f.value();
                }
            }
            Err(_) => second[grad_len + rank] = 1.0,
        }
        compute += after_reduce.elapsed();
        self.cluster.sum(&mut second);
        let after_second = Instant::now();
        let mut first = check_flags(first, &second[grad_len..grad_len + ranks])?;
        first.set_value(second[grad_len + ranks]);
        let gradient = if want_gradient {
            let d_omega =
                DMatrix::from_column_slice(m, self.local.input_dim(), &second[..grad_len]);
            self.local.finalize_gradient(&first, &d_omega, variances)
        } else {
            DVector::zeros(0)
        };
        compute += after_second.elapsed();
        self.compute.set(self.compute.get() + compute);
        self.evaluations.set(self.evaluations.get() + 1);
        Ok((first, gradient))
    }
}

/// Writes the lower triangle (diagonal included) of the k×k `a` column by column into `out`
/// (k(k+1)/2).
fn pack_lower(a: &DMatrix<f64>, out: &mut [f64]) {
    let k = a.nrows();
    let mut at = 0;
    for j in 0..k {
        let col = &a.as_slice()[j * k + j..(j + 1) * k];
        out[at..at + col.len()].copy_from_slice(col);
        at += col.len();
    }
}

/// The k×k matrix whose lower triangle is `packed` (as [`pack_lower`] writes it); zeros above.
fn unpack_lower(packed: &[f64], k: usize) -> DMatrix<f64> {
    let mut a = DMatrix::zeros(k, k);
    let mut at = 0;
    for j in 0..k {
        let len = k - j;
        a.as_mut_slice()[j * k + j..(j + 1) * k].copy_from_slice(&packed[at..at + len]);
        at += len;
    }
    a
}

impl Objective for DistributedEvidence<'_> {
    fn num_params(&self) -> usize {
        self.local.num_params()
    }

    /// n over all ranks.
    fn value_scale(&self) -> f64 {
        self.n as f64
    }

    fn parameter_scales(&self) -> Option<DVector<f64>> {
        self.local.parameter_scales()
    }

    /// Collective (see [`DistributedEvidence`]).
    fn value_and_gradient(&self, theta: &DVector<f64>) -> Result<(f64, DVector<f64>)> {
        let (first, gradient) = self.evaluate(theta, true)?;
        Ok((first.value(), gradient))
    }
}
