//! Who runs the parallel jobs of a row-chunked evaluation (SSGP's evidence, FITC's and VFE's):
//! the calling thread, rayon's global pool, or a pool of the crate's own.

use rayon::prelude::*;
use rayon::ThreadPool;
use std::sync::Arc;

/// Who runs the block jobs.
#[derive(Clone)]
pub(crate) enum Threads {
    /// One after the other on the calling thread.
    Sequential,
    /// On rayon's global pool.
    Global,
    /// On a pool of the crate's own with a set number of threads.
    Pool(Arc<ThreadPool>),
}

impl std::fmt::Debug for Threads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Sequential => f.write_str("Sequential"),
            Self::Global => f.write_str("Global"),
            Self::Pool(pool) => write!(f, "Pool({})", pool.current_num_threads()),
        }
    }
}

impl Threads {
    /// The runner for a thread setting: 1 → sequential, 0 → rayon's global pool, t → a pool of
    /// t threads (built once; if it cannot be built, the global pool).
    pub fn new(threads: usize) -> Self {
        match threads {
            0 => Self::Global,
            1 => Self::Sequential,
            t => rayon::ThreadPoolBuilder::new()
                .num_threads(t)
                .build()
                .map_or(Self::Global, |pool| Self::Pool(Arc::new(pool))),
        }
    }

    /// The number of threads that run the jobs.
    pub fn count(&self) -> usize {
        match self {
            Self::Sequential => 1,
            Self::Global => rayon::current_num_threads(),
            Self::Pool(pool) => pool.current_num_threads(),
        }
    }

    /// Runs `f` on one of the runner's threads (on the calling thread for
    /// [`Threads::Sequential`]): the jobs it starts on this runner, and the recursive kernels'
    /// parallel blocks and gemms, are then handed to the other threads from inside the pool, a
    /// push on a queue each, instead of each being injected from outside while the caller sleeps
    /// until it ends. Where each piece runs changes no bit; the move itself is one hand-off,
    /// worth it only where `f` runs parallel pieces.
    pub fn install<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        match self {
            Self::Sequential => f(),
            Self::Global => rayon::scope(|_| f()),
            Self::Pool(pool) => pool.install(f),
        }
    }

    /// `a` and `b` at once where the runner allows (each may run parallel jobs of its own on
    /// this runner; from outside the pool, through [`Threads::install`]), their results as a
    /// pair; one after the other on [`Threads::Sequential`].
    /// Neither's arithmetic depends on which, so the results are the same bits either way.
    pub fn join<A: Send, B: Send>(
        &self,
        a: impl FnOnce() -> A + Send,
        b: impl FnOnce() -> B + Send,
    ) -> (A, B) {
        let a = || {
            super::clear_avx_upper();
            a()
        };
        let b = || {
            super::clear_avx_upper();
            b()
        };
        match self {
            Self::Sequential => (a(), b()),
            _ => self.install(|| rayon::join(a, b)),
        }
    }

    /// `job` on every item, in parallel where the runner allows, the results in the items'
    /// order (so sums taken over them in that order do not depend on the thread count). Each job
    /// starts with [`super::clear_avx_upper`] (rayon's workers also run the gemm kernels).
    pub fn map<T: Send, R: Send>(&self, items: Vec<T>, job: impl Fn(T) -> R + Sync) -> Vec<R> {
        let run = |item| {
            super::clear_avx_upper();
            job(item)
        };
        match self {
            Self::Sequential => items.into_iter().map(run).collect(),
            Self::Global => items.into_par_iter().map(run).collect(),
            Self::Pool(pool) => pool.install(|| items.into_par_iter().map(run).collect()),
        }
    }
}
