//! The map-reduce SSGP's evidence is made of: row chunks of the data processed in parallel waves,
//! one single-threaded job per worker, and their partial sums added in chunk order, so the sums
//! do not depend on scheduling.

use crate::linalg;
use nalgebra::DMatrix;
use rayon::prelude::*;

/// Default number of rows per chunk of the design matrix.
pub const DEFAULT_CHUNK_ROWS: usize = 4096;
/// Default memory (bytes) the evidence may use to keep the design matrix between the value pass
/// and the gradient pass; the chunks beyond it are recomputed.
pub const DEFAULT_CACHE_BYTES: usize = 512 << 20;

/// How the n rows are cut into chunks and how many chunk jobs run at once.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RowChunks {
    /// Number of rows n.
    pub n: usize,
    /// Chunk jobs run at once (each single-threaded).
    pub workers: usize,
    /// The largest chunk.
    pub chunk_rows: usize,
}

/// Buffers kept between evaluations.
#[derive(Default)]
pub(crate) struct Workspace {
    /// The design matrix of every chunk, when it is kept between the passes.
    pub phi_chunks: Vec<DMatrix<f64>>,
    /// One set of buffers per worker.
    pub workers: Vec<WorkerBuffers>,
}

/// A worker's buffers, reused across evaluations; `a`, `b` and `d_omega` hold its chunk's partial
/// sums until they are added up in chunk order.
#[derive(Default)]
pub(crate) struct WorkerBuffers {
    pub phi: DMatrix<f64>,
    /// The chunk's inputs, centred.
    pub centred: DMatrix<f64>,
    pub solved: DMatrix<f64>,
    pub r: DMatrix<f64>,
    pub a: DMatrix<f64>,
    pub b: DMatrix<f64>,
    pub d_omega: DMatrix<f64>,
}

/// Resizes `m` to r×c if its shape differs (its contents are then overwritten by the caller).
pub(crate) fn resize(m: &mut DMatrix<f64>, r: usize, c: usize) {
    if m.shape() != (r, c) {
        *m = DMatrix::zeros(r, c);
    }
}

impl RowChunks {
    /// Row ranges (start, len): at most `chunk_rows` long, as many as a multiple of the workers
    /// so every wave of parallel chunk jobs is full, and of equal size (±1).
    pub fn ranges(&self) -> Vec<(usize, usize)> {
        let (n, w) = (self.n, self.workers);
        let count = n.div_ceil(self.chunk_rows).div_ceil(w) * w;
        let size = n.div_ceil(count.clamp(1, n));
        (0..n).step_by(size).map(|s| (s, size.min(n - s))).collect()
    }

    /// Runs `job` on every row chunk — in waves of one chunk per worker, in parallel, each job
    /// single-threaded with its worker's buffers and, for the first `cached` chunks, the chunk's
    /// slot of the design-matrix cache — then `reduce` on each worker's buffers in chunk order.
    pub fn waves(
        &self,
        ws: &mut Workspace,
        cached: usize,
        job: impl Fn((usize, usize), &mut WorkerBuffers, Option<&mut DMatrix<f64>>) + Sync,
        mut reduce: impl FnMut(&WorkerBuffers),
    ) {
        let ranges = self.ranges();
        ws.phi_chunks.truncate(cached);
        ws.phi_chunks.resize_with(cached, || DMatrix::zeros(0, 0));
        ws.workers.resize_with(self.workers, WorkerBuffers::default);
        let mut slots = ws.phi_chunks.iter_mut();
        for rows in ranges.chunks(self.workers) {
            let cached: Vec<Option<&mut DMatrix<f64>>> =
                rows.iter().map(|_| slots.next()).collect();
            rows.par_iter()
                .zip(ws.workers[..rows.len()].par_iter_mut())
                .zip(cached.into_par_iter())
                .for_each(|((&range, wb), cached)| {
                    linalg::clear_avx_upper();
                    job(range, wb, cached);
                });
            ws.workers[..rows.len()].iter().for_each(&mut reduce);
        }
    }
}
