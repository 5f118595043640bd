//! Dense linear algebra on nalgebra buffers: gemm, Cholesky, triangular solves, products and
//! inverses, blocked and multithreaded.
//!
//! nalgebra's `DMatrix<f64>` is the public currency of this crate; its column-major buffer is
//! viewed in place as a strided `MatRef`/`MatMut`, so nothing is copied. Why not nalgebra's
//! own: its `Cholesky` and triangular solves are unblocked (4–14× slower on the matrices the
//! models factor) and its `tr_mul` is a loop of dot products (15–20× slower than a packed gemm).
//! Every operation here recurses into one packed gemm (`private-gemm-x86`'s kernels on x86-64
//! with AVX2, `gemm-f64`'s elsewhere) down to blocks of 32 columns.
//!
//! - `views`: strided views, and nalgebra buffers seen through them;
//! - `gemm`: the matrix product and its dispatch by shape and CPU;
//! - `leaf`: the kernels on triangles of at most 32 columns where the recursions stop;
//! - `blas3`: the recursive symmetric rank-k update, triangular solves and products, and the
//!   symmetric product of SSGP's, FITC's and VFE's hot paths;
//! - `factor`: Cholesky factorisation (with the crate's one [`Jitter`] policy), log-determinants,
//!   solves and inverses;
//! - `threads`, `update`: who runs parallel jobs; rank-one updates of a factor.
//!
//! Conventions: Cholesky factors are **lower** triangular, A = L Lᵀ, stored in the lower triangle
//! (the strict upper triangle is zeroed).
//!
//! # Panics
//! The public kernels ([`tr_mul_to`], [`log_det_from_cholesky`]) panic on operands of
//! mismatched shapes (a non-square factor, an output of the wrong size), as nalgebra's
//! operations do.

mod blas3;
mod factor;
mod gemm;
mod leaf;
mod threads;
mod update;
mod views;

pub(crate) use blas3::{
    add_gram, right_solve_cholesky, solve_right_lower, solve_right_lower_transpose, symm_lower,
    syrk_lower,
};
/// A symmetric positive definite test matrix (k×k), for the tests outside `linalg` too.
#[cfg(test)]
pub(crate) use factor::tests::spd;
pub(crate) use factor::{
    cholesky_in_place_lower, cholesky_solve_in_place, factorize_with_jitter, invert_lower,
    invert_lower_in, solve_lower, solve_lower_transpose, spd_inverse_lower,
};
pub use factor::{log_det_from_cholesky, Jitter};
pub(crate) use gemm::gemm;
pub use gemm::tr_mul_to;
pub(crate) use threads::Threads;
pub(crate) use update::{
    add_to_diagonal, rank_one_update, rank_one_update_from, scale_lower, scale_lower_from,
    SpareFactor,
};
pub(crate) use views::{rows_view, vector_view, vector_view_mut, view, view_mut, MatMut, MatRef};

use crate::error::{Error, Result};
use nalgebra::{DMatrix, DVector};

/// How many threads a kernel may use: one (sequential) or several of rayon's — the last argument
/// of the crate's public building blocks ([`crate::ssgp::features::design_matrix`],
/// [`crate::kernel::squared_distances`], …).
///
/// Results do not depend on it: every kernel sums each entry in the same order on any number of
/// threads.
///
/// ```
/// use ssgp::linalg::Par;
/// assert_eq!(Par::rayon(1), Par::Seq);
/// assert_eq!(Par::rayon(4).degree(), 4);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Par {
    /// On the calling thread.
    Seq,
    /// On this many (≥ 2) threads.
    Rayon(usize),
}

impl Par {
    /// `threads` threads; 0 means all of rayon's (by default one per core).
    pub fn rayon(threads: usize) -> Self {
        let t = if threads == 0 {
            rayon::current_num_threads()
        } else {
            threads
        };
        if t <= 1 {
            Self::Seq
        } else {
            Self::Rayon(t)
        }
    }

    /// The number of threads.
    pub fn degree(self) -> usize {
        match self {
            Self::Seq => 1,
            Self::Rayon(t) => t,
        }
    }
}

/// Runs `a` and `b`, which write disjoint blocks: at once on the pool of [`on_pool`] under
/// [`Par::Rayon`] when the smaller of them has at least `work` ≥ [`gemm::PARALLEL_FROM`]
/// multiply-adds (each may run its own parallel gemms), one after the other otherwise.
/// Neither's arithmetic depends on which, so the results are the same bits on any number of
/// threads.
pub(crate) fn join(par: Par, work: usize, a: impl FnOnce() + Send, b: impl FnOnce() + Send) {
    match par {
        Par::Rayon(_) if work >= gemm::PARALLEL_FROM => {
            on_pool(par, || {
                rayon::join(
                    || {
                        clear_avx_upper();
                        a();
                    },
                    || {
                        clear_avx_upper();
                        b();
                    },
                )
            });
        }
        _ => {
            a();
            b();
        }
    }
}

/// Runs `f` under [`Par::Rayon`]`(t)` on a thread of the crate's pool of t threads (at most the
/// machine's cores: [`Threads::new`]), so that the parallel jobs it starts — rayon's iterators
/// and joins, which run on the pool of the thread that starts them — take t threads, not all
/// of rayon's global pool; on the calling thread under [`Par::Seq`]. For the kernels' callers
/// that hold a [`Par`] (the full GP's kernel fills, factorisations and evaluations); from a
/// thread of that pool it runs in place.
pub(crate) fn on_pool<R: Send>(par: Par, f: impl FnOnce() -> R + Send) -> R {
    match par {
        Par::Seq => f(),
        Par::Rayon(t) => Threads::new(t).install(f),
    }
}

/// The parallelism for kernels from a thread count: 1 runs sequentially, 0 means "all of
/// rayon's threads" (by default one per core).
pub(crate) fn par(threads: usize) -> Par {
    if threads == 1 {
        Par::Seq
    } else {
        Par::rayon(threads)
    }
}

/// Makes `m` an r×c matrix of zeros if its shape differs (else leaves it as it is: the callers
/// overwrite it), in its own buffer where r·c fits in the buffer's capacity. A work buffer that
/// row chunks of 833 and 834 rows take turns in is then allocated once, not at every turn: in
/// SSGP's evidence (n = 10 000, 12 blocks) each turn allocated afresh, 113 page faults per
/// evaluation at m = 100 on two threads, 513 with the evaluation on the pool.
pub(crate) fn resize(m: &mut DMatrix<f64>, r: usize, c: usize) {
    if m.shape() != (r, c) {
        let mut data: Vec<f64> = std::mem::replace(m, DMatrix::zeros(0, 0)).data.into();
        data.clear();
        data.resize(r * c, 0.0);
        *m = DMatrix::from_vec(r, c, data);
    }
}

/// [`resize`] for a buffer whose row count the caller chose (a chunk of test rows, as many as
/// `chunk_rows` allows): the buffer grows fallibly, so that a chunk memory cannot hold is an
/// error naming `what`, not an aborted process.
///
/// # Errors
/// [`Error::Allocation`] if r·c overflows or the buffer cannot grow to r·c entries (`m` is then
/// left empty).
pub(crate) fn try_resize(
    m: &mut DMatrix<f64>,
    r: usize,
    c: usize,
    what: &'static str,
) -> Result<()> {
    if m.shape() == (r, c) {
        return Ok(());
    }
    let too_big = |bytes| Error::Allocation { what, bytes };
    let entries = r.checked_mul(c).ok_or(too_big(usize::MAX))?;
    let mut data: Vec<f64> = std::mem::replace(m, DMatrix::zeros(0, 0)).data.into();
    data.clear();
    data.try_reserve_exact(entries)
        .map_err(|_| too_big(entries.saturating_mul(std::mem::size_of::<f64>())))?;
    data.resize(entries, 0.0);
    *m = DMatrix::from_vec(r, c, data);
    Ok(())
}

/// A `rows`×`cols` matrix of zeros, allocated fallibly: for the n×n buffers of the full GP, where
/// too many points must be an error, not an aborted process.
///
/// # Errors
/// [`Error::Allocation`] (naming `what`) if the buffer cannot be allocated or its size overflows.
pub(crate) fn try_zeros(rows: usize, cols: usize, what: &'static str) -> Result<DMatrix<f64>> {
    let too_big = Error::Allocation {
        what,
        bytes: usize::MAX,
    };
    let entries = rows.checked_mul(cols).ok_or(too_big)?;
    Ok(DMatrix::from_vec(rows, cols, try_buffer(entries, what)?))
}

/// A vector of `len` zeros, allocated fallibly: for results whose length the caller chose (one
/// entry per test input).
///
/// # Errors
/// [`Error::Allocation`] (naming `what`) if the buffer cannot be allocated.
pub(crate) fn try_zeros_vector(len: usize, what: &'static str) -> Result<DVector<f64>> {
    Ok(DVector::from_vec(try_buffer(len, what)?))
}

/// `entries` zeros, allocated fallibly.
fn try_buffer(entries: usize, what: &'static str) -> Result<Vec<f64>> {
    let mut buffer = Vec::new();
    buffer
        .try_reserve_exact(entries)
        .map_err(|_| Error::Allocation {
            what,
            bytes: entries.saturating_mul(std::mem::size_of::<f64>()),
        })?;
    buffer.resize(entries, 0.0);
    Ok(buffer)
}

/// Checks that `bytes` can be allocated now, by reserving them and giving them back: for the
/// working memory of a computation whose size the caller chose (SSGP's m), so that too much is
/// an error before the computation starts instead of an aborted process in the middle of it.
///
/// # Errors
/// [`Error::Allocation`] (naming `what`) if the reservation fails.
pub(crate) fn check_allocation(bytes: usize, what: &'static str) -> Result<()> {
    let mut trial: Vec<u8> = Vec::new();
    trial
        .try_reserve_exact(bytes)
        .map_err(|_| Error::Allocation { what, bytes })
}

/// Clears the upper halves of the AVX registers (`vzeroupper`) on x86-64 CPUs with AVX.
///
/// The packed gemm kernels use 256/512-bit AVX and can return with the upper register halves
/// dirty; the SSE-encoded code that follows (this crate's loops, libm's `exp`, `sin`, `cos`) then
/// pays a state transition on every instruction — measured here at 140 ns instead of 7 ns per
/// `exp`. [`gemm`] calls this after its packed kernel, and parallel loops call it at the start of
/// each task (rayon's workers run the kernels too).
#[inline]
pub(crate) fn clear_avx_upper() {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx") {
            // SAFETY: `vzeroupper` only zeroes the upper halves of the vector registers, declared
            // clobbered (every vector register is caller-saved in the C ABI), so the compiler
            // keeps no live value in them across it; the CPU supports AVX (checked above).
            unsafe {
                std::arch::asm!(
                    "vzeroupper",
                    clobber_abi("C"),
                    options(nomem, nostack, preserves_flags)
                )
            };
        }
    }
}

/// The builds of the crate's vectorised loops (SSGP's sine and cosine, the squared
/// exponential's exponential, the squared distances' norms, FITC's and VFE's chunk loops and
/// coordinate sums): each loop is compiled for the baseline target and with AVX2 and AVX-512F
/// enabled, the same operations in the same order (no FMA contraction in any), so every build
/// gives the same bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(crate) enum Build {
    Portable,
    Avx2,
    Avx512,
}

impl Build {
    /// The widest build this CPU runs.
    pub(crate) fn detected() -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f") {
                return Self::Avx512;
            }
        }
        if avx2_available() {
            Self::Avx2
        } else {
            Self::Portable
        }
    }

    /// Every build this CPU runs, the portable one first (for the tests that compare them).
    #[cfg(test)]
    pub(crate) fn all_here() -> Vec<Self> {
        let widest = Self::detected();
        [Self::Portable, Self::Avx2, Self::Avx512]
            .into_iter()
            .filter(|b| match b {
                Self::Portable => true,
                Self::Avx2 => widest != Self::Portable,
                Self::Avx512 => widest == Self::Avx512,
            })
            .collect()
    }
}

/// Defines `fn $name(args) -> R`, which runs `$body` compiled for the widest [`Build`] this CPU
/// runs, and `fn $on(build: Build, args) -> R`, which runs the given build (the caller checks
/// the CPU runs it; the tests run each and compare their bits); written `fn $on(args)`, only the
/// latter. Rust never contracts a multiplication and an addition into an FMA, so for a body
/// whose reductions keep their order (independent accumulators per output, or explicit lanes)
/// every build gives the same bits; helpers the body calls are compiled into each build where
/// they are `#[inline(always)]`.
macro_rules! every_build {
    (
        $(#[$meta:meta])*
        fn $name:ident / $on:ident ($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)? $body:block
    ) => {
        $(#[$meta])*
        fn $name($($arg: $ty),*) $(-> $ret)? {
            $on($crate::linalg::Build::detected(), $($arg),*)
        }

        $crate::linalg::every_build! {
            /// The build `build` (which the caller has checked the CPU runs) of the function
            /// above.
            fn $on ($($arg: $ty),*) $(-> $ret)? $body
        }
    };
    (
        $(#[$meta:meta])*
        fn $on:ident ($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)? $body:block
    ) => {
        $(#[$meta])*
        fn $on(build: $crate::linalg::Build, $($arg: $ty),*) $(-> $ret)? {
            #[inline(always)]
            fn body($($arg: $ty),*) $(-> $ret)? $body
            #[cfg(target_arch = "x86_64")]
            {
                /// # Safety
                /// The CPU must support AVX-512F.
                #[target_feature(enable = "avx512f")]
                unsafe fn avx512($($arg: $ty),*) $(-> $ret)? {
                    body($($arg),*)
                }
                /// # Safety
                /// The CPU must support AVX2.
                #[target_feature(enable = "avx2")]
                unsafe fn avx2($($arg: $ty),*) $(-> $ret)? {
                    body($($arg),*)
                }
                match build {
                    // SAFETY: the caller chose AVX-512 only on a CPU with it.
                    $crate::linalg::Build::Avx512 => return unsafe { avx512($($arg),*) },
                    // SAFETY: as above, AVX2.
                    $crate::linalg::Build::Avx2 => return unsafe { avx2($($arg),*) },
                    $crate::linalg::Build::Portable => {}
                }
            }
            let _ = build;
            body($($arg),*)
        }
    };
}

pub(crate) use every_build;

/// Whether this CPU runs AVX2 builds of the crate's vectorised loops ([`Build`]).
pub(crate) fn avx2_available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

#[cfg(test)]
mod tests {
    /// Under `Par::Rayon(t)` a job runs on the crate's pool of t threads (capped at the cores),
    /// whose threads are named `ssgp-…`, not on rayon's global pool (where `threads(t)` of the
    /// full GP filled its kernel on every core); in place from a thread of that pool.
    #[test]
    fn jobs_under_a_thread_count_run_on_the_crates_pool_of_that_count() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        for t in 2..=3 {
            let (name, count) = on_pool(Par::Rayon(t), || {
                let nested = on_pool(Par::Rayon(t), || {
                    std::thread::current().name().map(String::from)
                });
                (nested, rayon::current_num_threads())
            });
            if cores >= 2 {
                let name = name.unwrap_or_default();
                assert!(
                    name.starts_with(&format!("ssgp-{}-", t.min(cores))),
                    "{name}"
                );
                assert_eq!(count, t.min(cores));
            }
        }
        assert_eq!(
            on_pool(Par::Seq, || std::thread::current().name().map(String::from)),
            std::thread::current().name().map(String::from)
        );
    }

    use super::factor::tests::spd;
    use super::*;
    use nalgebra::DMatrix;

    fn bits(m: &DMatrix<f64>) -> Vec<u64> {
        m.iter().map(|v| v.to_bits()).collect()
    }

    /// Runs `kernel` sequentially and on 2, 3 and 4 threads; panics naming `what` if the bits
    /// differ.
    fn same_bits(what: &str, kernel: impl Fn(Par) -> DMatrix<f64>) {
        let seq = bits(&kernel(Par::Seq));
        for t in [2, 3, 4] {
            assert!(
                seq == bits(&kernel(par(t))),
                "{what} differs on {t} threads"
            );
        }
    }

    fn filled(r: usize, c: usize, salt: usize) -> DMatrix<f64> {
        DMatrix::from_fn(r, c, |i, j| ((i * 3 + j * 7 + salt) as f64).sin())
    }

    /// A buffer resized to a shape that fits its allocation keeps it (a chunk of 833 rows after
    /// one of 834) and holds zeros; one of the same shape is left as it is; a larger shape
    /// grows it.
    #[test]
    fn resize_keeps_the_allocation_where_the_new_shape_fits() {
        let mut m = filled(834, 20, 1);
        let ptr = m.as_ptr();
        resize(&mut m, 833, 20);
        assert_eq!(m.shape(), (833, 20));
        assert_eq!(m.as_ptr(), ptr);
        assert!(m.iter().all(|&v| v == 0.0));
        m[(5, 3)] = 2.5;
        resize(&mut m, 833, 20);
        assert_eq!(m[(5, 3)], 2.5);
        resize(&mut m, 834, 20);
        assert_eq!(m.as_ptr(), ptr);
        resize(&mut m, 2000, 30);
        assert_eq!(m.shape(), (2000, 30));
        assert!(m.iter().all(|&v| v == 0.0));
    }

    #[test]
    fn every_kernel_gives_the_same_bits_on_any_number_of_threads() {
        // Products, among them the matrix-vector shapes.
        for (m, n, k) in [
            (1, 1, 100_000),
            (2, 2, 100_000),
            (40, 1, 100_000),
            (1, 40, 100_000),
            (40, 40, 100_000),
            (2000, 1, 2000),
            (1, 2000, 2000),
            (600, 600, 600),
        ] {
            let (a, b) = (filled(m, k, 1), filled(k, n, 2));
            same_bits(&format!("gemm {m}×{n}×{k}"), |p| {
                let mut c = filled(m, n, 3);
                gemm(view_mut(&mut c), true, view(&a), view(&b), 0.5, p);
                c
            });
            same_bits(&format!("syrk {m}×{k}"), |p| {
                let mut c = DMatrix::zeros(m, m);
                syrk_lower(view_mut(&mut c), false, view(&a).transpose(), 1.0, p);
                c
            });
        }
        // Factorisations, solves with 1 to 3 right-hand sides, inverses.
        for k in [40, 600, 1500] {
            let a = spd(k);
            let mut l = a.clone();
            cholesky_in_place_lower(&mut l, "test", Par::Seq).unwrap();
            same_bits(&format!("cholesky {k}"), |p| {
                let mut f = a.clone();
                cholesky_in_place_lower(&mut f, "test", p).unwrap();
                f
            });
            for r in 1..=3 {
                let b = filled(k, r, 4);
                same_bits(&format!("solve {k}×{r}"), |p| {
                    let mut x = b.clone();
                    solve_lower(view(&l), view_mut(&mut x), p);
                    x
                });
                same_bits(&format!("transposed solve {k}×{r}"), |p| {
                    let mut x = b.clone();
                    solve_lower_transpose(view(&l), view_mut(&mut x), p);
                    x
                });
                same_bits(&format!("symm {k}×{r}"), |p| {
                    let mut x = DMatrix::zeros(k, r);
                    symm_lower(view_mut(&mut x), view(&a), view(&b), p);
                    x
                });
                let bt = b.transpose();
                same_bits(&format!("right solve {r}×{k}"), |p| {
                    let mut x = bt.clone();
                    right_solve_cholesky(&mut x, &l, p);
                    x
                });
            }
            same_bits(&format!("triangular inverse {k}"), |p| invert_lower(&l, p));
            same_bits(&format!("spd inverse {k}"), |p| {
                let (mut f, mut work) = (l.clone(), DMatrix::zeros(k, k));
                spd_inverse_lower(&mut f, &mut work, p);
                f
            });
        }
    }

    #[test]
    fn impossible_buffers_are_allocation_errors() {
        assert!(matches!(
            try_zeros(usize::MAX, 2, "test"),
            Err(Error::Allocation {
                what: "test",
                bytes: usize::MAX
            })
        ));
        assert!(matches!(
            try_zeros(1 << 30, 1 << 30, "test"),
            Err(Error::Allocation { bytes, .. }) if bytes == 1 << 63
        ));
        let m = try_zeros(3, 2, "test").unwrap();
        assert_eq!(m, DMatrix::zeros(3, 2));
    }
}
