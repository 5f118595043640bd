//! The map-reduce SSGP's evidence is made of, with sums that do not depend on the thread count.
//!
//! The n rows are cut into up to 12 contiguous blocks of equal size ([`RowPlan::for_work`]), and
//! each block into chunks of at most `chunk_rows` rows. One job per block runs through its chunks
//! in order, accumulating the chunk's contributions (to A = ΦᵀΦ, b = Φᵀy, ∂/∂Ω) into the block's
//! own sums; the blocks are handed out in order to the threads, and their sums are folded into
//! the total in block order, each as soon as it and every block before it are done (while the
//! sums of a block the thread has just finished are still in its cache), the set of sums then
//! going back to a pool for the next block. The chunks' work buffers come from a pool too, so
//! the blocks run one after another reuse buffers still in cache. The
//! plan depends on the data's size and the settings only, and every sum is taken in the same
//! order whatever runs it: a fit gives the same bits on 1, 2 or 12 threads (threads change the
//! speed only). Block counts of 12, 6, 4, 3 or 2 keep 2 (and most other numbers of) threads
//! equally busy, with one synchronisation per pass.

use crate::linalg;
use crate::linalg::Threads;
use nalgebra::DMatrix;
use std::sync::{Mutex, MutexGuard};

/// Default number of rows per chunk of the design matrix.
pub const DEFAULT_CHUNK_ROWS: usize = 4096;
/// Default memory (bytes) the evidence may use to keep the design matrix between the value pass
/// and the gradient pass; the chunks beyond it are recomputed.
pub const DEFAULT_CACHE_BYTES: usize = 512 << 20;
/// The block counts a plan chooses from, largest first.
const BLOCK_COUNTS: [usize; 6] = [12, 6, 4, 3, 2, 1];
/// The least work (rows × (2m)²) worth a block of its own: smaller blocks make the matrix
/// products too small to run at full speed.
const MIN_BLOCK_WORK: f64 = 4e7;

/// How the n rows are cut into blocks and chunks.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RowPlan {
    /// Number of rows n.
    pub n: usize,
    /// The largest chunk.
    pub chunk_rows: usize,
    /// The number of blocks.
    pub blocks: usize,
    /// The design matrix's columns 2m (the cache slots' width).
    pub columns: usize,
}

/// Buffers kept between evaluations.
#[derive(Default)]
pub(crate) struct Workspace {
    /// The design matrix of the leading chunks, when it is kept between the passes.
    pub phi_chunks: Vec<DMatrix<f64>>,
    /// The sets of block sums not in use: a block's job takes one (or a fresh one) and gives it
    /// back once its sums are folded, so the blocks running at once and those waiting for their
    /// turn hold sets, not every block (one set on one thread instead of 12 of (2m)² entries —
    /// 0.86 GB at m = 1 500).
    pub sums: Mutex<Vec<BlockSums>>,
    /// The sets of chunk work buffers not in use: a block's job takes one and gives it back, so
    /// there are as many as jobs run at once (the threads, at most the blocks). With a set of its
    /// own per block, one thread went through 6–12 sets of the chunk's size (Kin-40k's 10 000
    /// rows: 2.7 MB each at m = 100, 5 MB at m = 375), none of them in cache when its block came;
    /// sharing one set measured 1.5–3 % faster per evaluation at m = 100–375 on one thread.
    pub buffers: Mutex<Vec<ChunkBuffers>>,
    /// The last evaluation's factor L (2m×2m), handed back for the next one's total of ΦᵀΦ
    /// (which becomes its factor in place); empty until then. A fresh 2m×2m total at every
    /// evaluation was fresh pages to fault in (m = 250: 2 MB, about 500 page faults).
    pub factor: DMatrix<f64>,
}

/// One chunk's work buffers, reused by the chunks and blocks a thread runs and across
/// evaluations (each use overwrites them).
#[derive(Default)]
pub(crate) struct ChunkBuffers {
    /// The chunk's design matrix, when it is not kept in the cache.
    pub phi: DMatrix<f64>,
    /// The chunk's inputs, centred.
    pub centred: DMatrix<f64>,
    /// ΦA⁻¹ for the chunk, then the chain rule's g in its cosine block.
    pub solved: DMatrix<f64>,
    /// r = (y − Φα)/σn² on the chunk's rows.
    pub r: DMatrix<f64>,
}

/// What a block accumulates over its chunks until it is folded into the total in block order: the
/// lower triangle of ΦᵀΦ (`a`, 2m×2m), Φᵀy (`b`, 2m×1, y centred) and its part of the gradient
/// with respect to Ω (`d_omega`, m×D).
#[derive(Default)]
pub(crate) struct BlockSums {
    pub a: DMatrix<f64>,
    pub b: DMatrix<f64>,
    pub d_omega: DMatrix<f64>,
}

/// `n` rows cut into `parts` contiguous ranges (start, len) of equal size (±1), the longer first.
fn split(start: usize, n: usize, parts: usize) -> Vec<(usize, usize)> {
    let parts = parts.clamp(1, n.max(1));
    let (size, extra) = (n / parts, n % parts);
    let mut out = Vec::with_capacity(parts);
    let mut s = start;
    for p in 0..parts {
        let len = size + usize::from(p < extra);
        out.push((s, len));
        s += len;
    }
    out
}

/// One block's share of a [`RowPlan::map_reduce`]: its index, its chunks (start, length) and
/// the cache slots of its first chunks.
type BlockTask<'a> = ((usize, &'a Vec<(usize, usize)>), &'a mut [DMatrix<f64>]);

/// Locks `mutex`, taking over a value a panicking holder left poisoned: every use of the
/// buffers and sums here overwrites or only reads them.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// A set from the pool of free ones (the one given back last, the likeliest in cache), or a
/// fresh one.
fn take<T: Default>(pool: &Mutex<Vec<T>>) -> T {
    lock(pool).pop().unwrap_or_default()
}

/// Which blocks are folded, and the finished ones waiting for their turn.
struct Progress {
    /// The next block to fold: every block before it is folded.
    next: usize,
    /// The sums of finished blocks not folded yet, by block.
    waiting: Vec<Option<BlockSums>>,
    /// Whether a thread is folding (it folds every waiting block in order before it stops).
    folding: bool,
}

/// The total of a [`RowPlan::map_reduce`] and its progress: the blocks' sums are folded into it
/// in block order, each by the thread that finished the last block of the run of finished
/// blocks it ends, so the order (and the bits) never depend on which thread finishes when.
struct InOrder<A> {
    progress: Mutex<Progress>,
    total: Mutex<A>,
}

impl<A> InOrder<A> {
    fn new(total: A, blocks: usize) -> Self {
        Self {
            progress: Mutex::new(Progress {
                next: 0,
                waiting: (0..blocks).map(|_| None).collect(),
                folding: false,
            }),
            total: Mutex::new(total),
        }
    }

    /// Hands in `block`'s sums and, unless another thread is folding (which then folds them: it
    /// only stops at a block that has not handed its sums in when it looks), folds every waiting
    /// block from the next one on, in order, each set of sums then going back to `pool`; the
    /// fold itself runs outside the progress lock.
    fn finish(
        &self,
        (block, sums): (usize, BlockSums),
        fold: &impl Fn(&mut A, &BlockSums),
        pool: &Mutex<Vec<BlockSums>>,
    ) {
        let mut progress = lock(&self.progress);
        progress.waiting[block] = Some(sums);
        if progress.folding {
            return;
        }
        progress.folding = true;
        loop {
            let next = progress.next;
            let Some(sums) = progress.waiting.get_mut(next).and_then(Option::take) else {
                break;
            };
            drop(progress);
            fold(&mut lock(&self.total), &sums);
            lock(pool).push(sums);
            progress = lock(&self.progress);
            progress.next += 1;
        }
        progress.folding = false;
    }
}

impl RowPlan {
    /// The plan for n rows whose design matrix has `columns` columns (2m): as many blocks (12, 6,
    /// 4, 3, 2 or 1) as keep each block's work (rows × columns²) at least 4·10⁷ flops.
    pub fn for_work(n: usize, columns: usize, chunk_rows: usize) -> Self {
        let per_row = (columns as f64) * (columns as f64);
        let blocks = BLOCK_COUNTS
            .into_iter()
            .find(|&b| (n / b) as f64 * per_row >= MIN_BLOCK_WORK)
            .unwrap_or(1);
        Self {
            n,
            chunk_rows,
            blocks,
            columns,
        }
    }

    /// The chunks (start, len) of each block, in row order: the blocks of equal size (±1), each
    /// cut into chunks of at most `chunk_rows` rows of equal size (±1).
    pub fn chunks(&self) -> Vec<Vec<(usize, usize)>> {
        split(0, self.n, self.blocks)
            .into_iter()
            .map(|(start, len)| split(start, len, len.div_ceil(self.chunk_rows.max(1))))
            .collect()
    }

    /// How many leading chunks of the design matrix (n×`columns`) a cache of `bytes` holds
    /// between the two passes: `bytes` over the largest chunk's 8·rows·columns.
    pub fn cached_chunks(&self, bytes: usize) -> usize {
        let chunk_bytes = self
            .largest_chunk()
            .saturating_mul(self.columns)
            .saturating_mul(8);
        bytes / chunk_bytes.max(1)
    }

    /// The rows of the largest chunk.
    pub fn largest_chunk(&self) -> usize {
        self.chunks()
            .iter()
            .flatten()
            .map(|&(_, len)| len)
            .max()
            .unwrap_or(0)
    }

    /// The jobs a [`RowPlan::map_reduce`] on `threads` runs at once (the threads, at most the
    /// blocks), each holding a set of chunk buffers.
    pub fn workers(&self, threads: &Threads) -> usize {
        threads.count().clamp(1, self.blocks.max(1))
    }

    /// Runs `job(chunk, buffers, sums, cache_slot, first)` on every chunk — the chunks of one
    /// block in order, on a set of work buffers and a set of sums the block's job holds while it
    /// runs (`first` is true for a block's first chunk: the job then overwrites the sums instead
    /// of adding to them), the blocks handed out in order to the workers `threads` runs; the
    /// first `cached` chunks (in row order) also get their slot of the design-matrix cache — and
    /// returns `total` after `fold(total, sums)` on every block's sums in block order, each as
    /// soon as its block and all before it are done.
    ///
    /// Adding the 12 blocks' sums of ΦᵀΦ after the pass took 2.1 ms of an evaluation's 177 on
    /// one thread and 1.35 ms of 97 on two (m = 250, n = 10 000, 2 MB each, from memory); folded
    /// as they come, while in cache, from one set reused, the evaluation took 0.186 → 0.180 s on
    /// one thread and 0.0999 → 0.0967 s on two (5–7 interleaved rounds), and the sums are held
    /// by the blocks running or waiting, not by all 12 (one set on one thread).
    pub fn map_reduce<A: Send>(
        &self,
        ws: &mut Workspace,
        cached: usize,
        threads: &Threads,
        job: impl Fn((usize, usize), &mut ChunkBuffers, &mut BlockSums, Option<&mut DMatrix<f64>>, bool)
            + Sync,
        total: A,
        fold: impl Fn(&mut A, &BlockSums) + Sync,
    ) -> A {
        let plan = self.chunks();
        let cached = cached.min(plan.iter().map(Vec::len).sum());
        ws.phi_chunks.truncate(cached);
        ws.phi_chunks.resize_with(cached, || DMatrix::zeros(0, 0));
        // The cache's slots are allocated here, on the calling thread, not by the jobs on the
        // worker threads: freed with one evidence, the memory is then found again by the next
        // evidence's cache (the calibration check's fits after the learned one). Allocated by
        // whichever worker ran a block, it stayed in that thread's allocator arena while the next
        // evidence's jobs allocated afresh in others (the million example, 10⁶ rows, m = 100, a
        // 512 MiB cache: a peak of 1.07 GB in the check, 0.74 GB with the slots allocated here).
        // The calling thread is the evaluation's, since it runs on the pool
        // (`Threads::install`); the million example's peak stayed 0.75 GB.
        for (slot, &(_, len)) in ws.phi_chunks.iter_mut().zip(plan.iter().flatten()) {
            linalg::resize(slot, len, self.columns);
        }
        // Hand each block the cache slots of its own chunks.
        let mut slots = ws.phi_chunks.as_mut_slice();
        let mut per_block = Vec::with_capacity(plan.len());
        for chunks in &plan {
            let cached_here = chunks.len().min(slots.len());
            let (mine, rest) = slots.split_at_mut(cached_here);
            per_block.push(mine);
            slots = rest;
        }
        let (free_buffers, free_sums) = (&ws.buffers, &ws.sums);
        let in_order = InOrder::new(total, plan.len());
        let run = |((b, chunks), slots): BlockTask<'_>| {
            linalg::clear_avx_upper();
            let (mut buffers, mut sums) = (take(free_buffers), take(free_sums));
            let mut slots = slots.iter_mut();
            for (i, &chunk) in chunks.iter().enumerate() {
                job(chunk, &mut buffers, &mut sums, slots.next(), i == 0);
            }
            lock(free_buffers).push(buffers);
            in_order.finish((b, sums), &fold, free_sums);
        };
        // The blocks are handed out in order, one at a time, to as many workers as run at once:
        // they finish about in order, so each is folded while still in its thread's cache, and
        // few wait for their turn holding a set of sums.
        let tasks = Mutex::new(plan.iter().enumerate().zip(per_block));
        let next_task = || lock(&tasks).next();
        let worker = || {
            while let Some(task) = next_task() {
                run(task);
            }
        };
        let workers = self.workers(threads);
        if workers <= 1 {
            worker();
        } else {
            threads.install(|| {
                rayon::scope(|s| {
                    for _ in 1..workers {
                        s.spawn(|_| worker());
                    }
                    worker();
                })
            });
        }
        in_order
            .total
            .into_inner()
            .unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The blocks are folded in block order whichever finishes first: here the later blocks
    /// finish first on several threads (each block's job sleeps longer the earlier it is), and
    /// the fold sees every block once, in order, with its own sums.
    #[test]
    fn the_blocks_are_folded_in_block_order_whichever_finishes_first() {
        let plan = RowPlan {
            n: 120,
            chunk_rows: 4,
            blocks: 12,
            columns: 2,
        };
        let starts: Vec<f64> = plan.chunks().iter().map(|c| c[0].0 as f64).collect();
        for threads in [1, 2, 3, 5] {
            let mut ws = Workspace::default();
            let folded = plan.map_reduce(
                &mut ws,
                0,
                &Threads::new(threads),
                |(start, _), _, sums, _, first| {
                    if first {
                        sums.b = DMatrix::from_element(1, 1, start as f64);
                        let late = 12 - start / 10;
                        std::thread::sleep(std::time::Duration::from_millis(2 * late as u64));
                    }
                },
                Vec::new(),
                |seen: &mut Vec<f64>, sums| seen.push(sums.b[(0, 0)]),
            );
            assert_eq!(folded, starts, "{threads} threads");
            // Sets kept for the next pass: those that were in use at once.
            let (sums, buffers) = (lock(&ws.sums).len(), lock(&ws.buffers).len());
            if threads == 1 {
                assert_eq!((sums, buffers), (1, 1), "one thread needs one set of each");
            } else {
                assert!(
                    (1..=12).contains(&sums),
                    "{threads} threads: {sums} sets of sums"
                );
                assert!(
                    (1..=threads).contains(&buffers),
                    "{threads} threads: {buffers} sets of buffers"
                );
            }
        }
    }

    #[test]
    fn the_plan_covers_every_row_once_and_ignores_threads() {
        for (n, chunk) in [(1, 4), (11, 4), (12, 4), (1000, 37), (10_000, 4096), (7, 1)] {
            let plan = RowPlan {
                n,
                chunk_rows: chunk,
                blocks: 12,
                columns: 2,
            }
            .chunks();
            assert!(plan.len() <= 12 && !plan.is_empty());
            let flat: Vec<(usize, usize)> = plan.iter().flatten().copied().collect();
            let mut next = 0;
            for &(start, len) in &flat {
                assert_eq!(start, next, "n {n}: contiguous");
                assert!(len >= 1 && len <= chunk, "n {n}: chunk of {len}");
                next += len;
            }
            assert_eq!(next, n);
        }
        // Kin-40k's 10000 rows: 2 blocks at m = 50, 6 at m = 100, 12 at m = 250; a few rows: one.
        assert_eq!(RowPlan::for_work(10_000, 100, 4096).blocks, 2);
        assert_eq!(RowPlan::for_work(10_000, 200, 4096).blocks, 6);
        assert_eq!(RowPlan::for_work(10_000, 500, 4096).blocks, 12);
        assert_eq!(RowPlan::for_work(100, 20, 4096).blocks, 1);
    }
}
