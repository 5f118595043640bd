//! The ranks of an MPI job as the distributed fit sees them: a communicator, the collectives the
//! evidence needs (sum all-reduce, broadcast from rank 0, all-gather of rows), agreement on
//! errors, and a count of the bytes and time spent communicating.

use crate::error::{Error, Result};
use mpi::collective::SystemOperation;
use mpi::datatype::PartitionMut;
use mpi::topology::SimpleCommunicator;
use mpi::traits::{Communicator, CommunicatorCollectives, Root};
use mpi::Count;
use std::cell::Cell;
use std::time::{Duration, Instant};

/// Communication so far: collectives called, their payload in bytes (each rank's buffer, the
/// same on every rank) and the wall-clock time spent inside them (waiting for slower ranks
/// included).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Traffic {
    /// Collectives called.
    pub collectives: u64,
    /// Bytes of the buffers passed to them.
    pub bytes: u64,
    /// Time spent inside them.
    pub time: Duration,
}

/// The ranks of an MPI job: rank 0 leads (it runs the optimiser and its decisions are
/// broadcast); every method that communicates is a **collective**: all ranks call it in the same
/// order with buffers of the same length.
///
/// ```no_run
/// let universe = ssgp::mpi::initialize().ok_or("MPI was initialised already")?;
/// let cluster = ssgp::distributed::Cluster::new(universe.world());
/// println!("rank {} of {}", cluster.rank(), cluster.size());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Cluster {
    comm: SimpleCommunicator,
    traffic: Cell<Traffic>,
}

impl Cluster {
    /// The ranks of a communicator (usually `universe.world()`).
    pub fn new(comm: SimpleCommunicator) -> Self {
        Self {
            comm,
            traffic: Cell::new(Traffic::default()),
        }
    }

    /// This process's rank (0 … size − 1).
    pub fn rank(&self) -> usize {
        usize::try_from(self.comm.rank()).unwrap_or(0)
    }

    /// The number of ranks.
    pub fn size(&self) -> usize {
        usize::try_from(self.comm.size()).unwrap_or(1)
    }

    /// Whether this is rank 0, the one that decides.
    pub fn is_root(&self) -> bool {
        self.rank() == 0
    }

    /// The communication so far on this rank.
    pub fn traffic(&self) -> Traffic {
        self.traffic.get()
    }

    /// Counts one collective of `len` values of `width` bytes that started at `start`.
    fn count(&self, start: Instant, len: usize, width: usize) {
        let mut t = self.traffic.get();
        t.collectives += 1;
        t.bytes += (len * width) as u64;
        t.time += start.elapsed();
        self.traffic.set(t);
    }

    /// Collective: `buf` ← the element-wise sum of every rank's `buf` (MPI_Allreduce).
    pub(crate) fn sum(&self, buf: &mut [f64]) {
        self.all_reduce(buf, SystemOperation::sum());
    }

    /// Collective: `buf` ← the element-wise sum of every rank's `buf` as rank 0 computed it, on
    /// every rank (an all-reduce, then rank 0's bits broadcast): for sums a decision rests on,
    /// which every rank must take alike.
    pub(crate) fn sum_as_root(&self, buf: &mut [f64]) {
        self.sum(buf);
        self.broadcast(buf);
    }

    /// Collective: `buf` ← the element-wise maximum of every rank's `buf`.
    pub(crate) fn max(&self, buf: &mut [f64]) {
        self.all_reduce(buf, SystemOperation::max());
    }

    fn all_reduce(&self, buf: &mut [f64], op: SystemOperation) {
        let start = Instant::now();
        let local = buf.to_vec();
        self.comm.all_reduce_into(&local[..], buf, op);
        self.count(start, buf.len(), 8);
    }

    /// Collective: `buf` ← rank 0's `buf` (MPI_Bcast).
    pub(crate) fn broadcast(&self, buf: &mut [f64]) {
        let start = Instant::now();
        self.comm.process_at_rank(0).broadcast_into(buf);
        self.count(start, buf.len(), 8);
    }

    /// Collective: rank 0's text on every rank (its length, then its bytes).
    pub(crate) fn broadcast_text(&self, text: &str) -> String {
        let mut len = [text.len() as f64];
        self.broadcast(&mut len);
        if len[0] == 0.0 {
            // Open MPI rejects an empty buffer.
            return String::new();
        }
        let mut bytes = if self.is_root() {
            text.as_bytes().to_vec()
        } else {
            vec![0u8; len[0] as usize]
        };
        let start = Instant::now();
        self.comm.process_at_rank(0).broadcast_into(&mut bytes[..]);
        self.count(start, bytes.len(), 1);
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// Collective: every rank's `local` values one after the other, in rank order, on every rank
    /// (MPI_Allgatherv); `local` may have another length on each rank. The ranks' counts are
    /// gathered first, so every rank sees the same total and fails alike.
    ///
    /// # Errors
    /// [`Error::Distributed`] on every rank if a count or the total exceeds MPI's 2³¹ − 1
    /// values; [`Error::Allocation`] on a rank that cannot allocate the total
    /// ([`Error::Distributed`] on the others).
    pub(crate) fn all_gather(&self, local: &[f64]) -> Result<Vec<f64>> {
        let start = Instant::now();
        // −1 for a count MPI cannot carry.
        let mut counts = vec![0 as Count; self.size()];
        let mine = Count::try_from(local.len()).unwrap_or(-1);
        self.comm.all_gather_into(&mine, &mut counts[..]);
        let mut displs = Vec::with_capacity(counts.len());
        let mut total: Count = 0;
        for &c in &counts {
            displs.push(total);
            total = match total.checked_add(c) {
                Some(t) if c >= 0 => t,
                _ => {
                    return Err(Error::Distributed {
                        what: format!(
                            "the values gathered from the ranks exceed the {} one MPI collective counts",
                            Count::MAX
                        ),
                    })
                }
            };
        }
        let total = total as usize;
        let mut out: Vec<f64> = Vec::new();
        let reserved = out.try_reserve_exact(total).map_err(|_| Error::Allocation {
            what: "the values gathered from every rank",
            bytes: total.saturating_mul(8),
        });
        self.agree(reserved)?;
        out.resize(total, 0.0);
        {
            let mut part = PartitionMut::new(&mut out[..], &counts[..], &displs[..]);
            self.comm.all_gather_varcount_into(local, &mut part);
        }
        self.count(start, total, 8);
        Ok(out)
    }

    /// Collective: whether every rank succeeded. Each rank passes its own result; if any rank
    /// failed, every rank returns an error (its own, or one naming the ranks that failed), so no
    /// rank goes on to a collective the others will not join.
    ///
    /// # Errors
    /// This rank's error, or [`Error::Distributed`] if another rank failed.
    pub(crate) fn agree<T>(&self, local: Result<T>) -> Result<T> {
        let mut failed = vec![0.0; self.size()];
        if local.is_err() {
            failed[self.rank()] = 1.0;
        }
        self.sum(&mut failed);
        check_flags(local, &failed)
    }

    /// Collective: rank 0's result on every rank: its values (`len` of them) or its error (as
    /// [`Error::Distributed`] on the other ranks). The other ranks' `local` is ignored.
    ///
    /// # Errors
    /// Rank 0's error.
    pub(crate) fn root_result(&self, local: Result<Vec<f64>>, len: usize) -> Result<Vec<f64>> {
        let mut buf = vec![0.0; len + 1];
        let mut message = String::new();
        if self.is_root() {
            match &local {
                Ok(v) if v.len() == len => buf[1..].copy_from_slice(v),
                Ok(v) => {
                    buf[0] = 1.0;
                    message = format!("rank 0 produced {} values, not {len}", v.len());
                }
                Err(e) => {
                    buf[0] = 1.0;
                    message = e.to_string();
                }
            }
        }
        self.broadcast(&mut buf);
        if buf[0] == 0.0 {
            return Ok(buf.split_off(1));
        }
        let message = self.broadcast_text(&message);
        match local {
            Err(e) if self.is_root() => Err(e),
            _ => Err(Error::Distributed {
                what: format!("on rank 0: {message}"),
            }),
        }
    }
}

/// This rank's result if no rank's flag in `failed` (one entry per rank, summed over ranks) is
/// set; otherwise an error naming the ranks that failed.
///
/// # Errors
/// This rank's error, or [`Error::Distributed`] if another rank failed.
pub(crate) fn check_flags<T>(local: Result<T>, failed: &[f64]) -> Result<T> {
    if failed.iter().all(|&f| f == 0.0) {
        return local;
    }
    let ranks: Vec<String> = failed
        .iter()
        .enumerate()
        .filter(|(_, &f)| f != 0.0)
        .map(|(r, _)| r.to_string())
        .collect();
    match local {
        Err(e) => Err(e),
        Ok(_) => Err(Error::Distributed {
            what: format!("rank(s) {} failed", ranks.join(", ")),
        }),
    }
}
