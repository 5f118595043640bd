//! Dense linear algebra on nalgebra buffers, run by `faer`'s blocked, multithreaded kernels.
//!
//! nalgebra's `DMatrix<f64>` is the public currency of this crate; its column-major buffer is
//! viewed in place as a faer matrix, so nothing is copied. Why faer: nalgebra's own `Cholesky`
//! and triangular solves are unblocked (4–14× slower on the matrices the models factor) and its
//! `tr_mul` is a loop of dot products (15–20× slower than a packed gemm on this machine).
//!
//! - [`views`](self#views): nalgebra buffers seen as faer matrices;
//! - `factor`: Cholesky factorisation (with the crate's one [`Jitter`] policy), log-determinants,
//!   triangular solves and inverses;
//! - `blas3`: gemm and the recursive symmetric product and right-side solves of SSGP's hot path.
//!
//! Conventions: Cholesky factors are **lower** triangular, A = L Lᵀ, stored in the lower triangle
//! (the strict upper triangle is zeroed).

mod blas3;
mod factor;
mod views;

pub(crate) use blas3::{gemm, right_solve_cholesky, symm_lower, syrk_lower};
pub(crate) use factor::{
    cholesky_in_place_lower, cholesky_solve_in_place, factorize_with_jitter, invert_lower,
    solve_lower, solve_lower_transpose, spd_inverse_lower,
};
pub use factor::{log_det_from_cholesky, Jitter};
pub(crate) use views::{rows_view, vector_view, vector_view_mut, view, view_mut};

use crate::error::{Error, Result};
use faer::Par;
use nalgebra::DMatrix;

/// The parallelism for faer kernels from a thread count: 1 runs sequentially, 0 means "all of
/// rayon's threads" (by default one per core).
pub fn par(threads: usize) -> Par {
    if threads == 1 {
        Par::Seq
    } else {
        Par::rayon(threads)
    }
}

/// A `rows`×`cols` matrix of zeros, allocated fallibly: for the n×n buffers of the full GP, where
/// too many points must be an error, not an aborted process.
///
/// # Errors
/// [`Error::Allocation`] (naming `what`) if the buffer cannot be allocated or its size overflows.
pub(crate) fn try_zeros(rows: usize, cols: usize, what: &'static str) -> Result<DMatrix<f64>> {
    let too_big = |entries: usize| Error::Allocation {
        what,
        bytes: entries.saturating_mul(std::mem::size_of::<f64>()),
    };
    let entries = rows.checked_mul(cols).ok_or(too_big(usize::MAX))?;
    let mut buffer = Vec::new();
    buffer
        .try_reserve_exact(entries)
        .map_err(|_| too_big(entries))?;
    buffer.resize(entries, 0.0);
    Ok(DMatrix::from_vec(rows, cols, buffer))
}

/// Clears the upper halves of the AVX registers (`vzeroupper`) on x86-64 CPUs with AVX.
///
/// faer's kernels use 256/512-bit AVX and can return with the upper register halves dirty; the
/// SSE-encoded code that follows (this crate's loops, libm's `exp`, `sin`, `cos`) then pays a state
/// transition on every instruction — measured here at 140 ns instead of 7 ns per `exp`. Every
/// wrapper in this module calls this after its faer kernel, and parallel loops call it at the
/// start of each task (rayon's workers run faer's kernels too).
#[inline]
pub(crate) fn clear_avx_upper() {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx") {
            // SAFETY: `vzeroupper` only zeroes the upper halves of the vector registers, which no
            // live Rust value occupies across this point; the CPU supports AVX (checked above).
            unsafe { std::arch::asm!("vzeroupper", options(nomem, nostack, preserves_flags)) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
