//! Who runs the parallel jobs of a row-chunked evaluation (SSGP's evidence, FITC's and VFE's):
//! the calling thread, rayon's global pool, or a pool of the crate's own.

use rayon::prelude::*;
use rayon::ThreadPool;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The pools built so far, one per thread count, kept for the life of the process (as rayon's
/// global pool is): every evidence of every fit with that count runs on the same threads, where
/// building a pool per evidence cost more than a small fit itself (40 rows, 128 threads: 4.8 s
/// against 29 ms on one).
static POOLS: Mutex<Option<HashMap<usize, Arc<ThreadPool>>>> = Mutex::new(None);

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
    /// The runner for a thread setting: 0 → rayon's global pool, t ≥ 1 → the pool of
    /// min(t, the threads the machine runs at once) threads — more cannot make a job faster, and
    /// each costs its wake-ups (a 40-row fit on two cores: 4.3 s on a pool of 1 024 threads,
    /// 27 ms on the pool of two) — built the first time that count is asked for and shared from then on
    /// ([`POOLS`]); a count of 1 runs on the calling thread. A pool the system cannot build (no
    /// memory or threads left) runs the jobs on the calling thread too: the results are the same
    /// bits on any number of threads.
    pub fn new(threads: usize) -> Self {
        if threads == 0 {
            return Self::Global;
        }
        let cores = std::thread::available_parallelism().map_or(threads, |n| n.get());
        match threads.min(cores) {
            1 => Self::Sequential,
            t => {
                let mut pools = POOLS.lock().unwrap_or_else(|p| p.into_inner());
                let pools = pools.get_or_insert_with(HashMap::new);
                if let Some(pool) = pools.get(&t) {
                    return Self::Pool(Arc::clone(pool));
                }
                let named = rayon::ThreadPoolBuilder::new()
                    .num_threads(t)
                    .thread_name(move |i| format!("ssgp-{t}-{i}"));
                match named.build() {
                    Ok(pool) => {
                        let pool = Arc::new(pool);
                        pools.insert(t, Arc::clone(&pool));
                        Self::Pool(pool)
                    }
                    Err(_) => Self::Sequential,
                }
            }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A thread count asked for twice gets the same pool (its threads are built once), of at
    /// most as many threads as the machine runs at once.
    #[test]
    fn a_thread_count_shares_one_pool_of_at_most_the_cores() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert!(matches!(Threads::new(1), Threads::Sequential));
        assert!(matches!(Threads::new(0), Threads::Global));
        for t in [2, 3, 4096] {
            match (Threads::new(t), Threads::new(t)) {
                (Threads::Pool(a), Threads::Pool(b)) => {
                    assert!(Arc::ptr_eq(&a, &b));
                    assert_eq!(a.current_num_threads(), t.min(cores));
                }
                (Threads::Sequential, Threads::Sequential) => assert_eq!(cores, 1),
                other => panic!("{t} threads: {other:?}"),
            }
        }
    }
}
