//! A vectorisable exponential for the squared-exponential kernel's cross-covariances.
//!
//! FITC's and VFE's K_uf needs nm exponentials per evaluation; through libm they cost about a
//! tenth of the evaluation at m = 100. This is the classic scheme written as a branch-free loop
//! the compiler vectorises: x = k·ln 2 + r with k = round(x/ln 2) (Cody–Waite, ln 2 in two
//! parts), e^r by its Taylor polynomial of degree 13 on |r| ≤ ln 2/2 (truncation below 10⁻¹⁷),
//! and 2^k put into the exponent bits. Accurate to about 1 ulp; arguments whose result would be
//! subnormal fall back to libm.

// fdlibm's ln 2 in two parts, written with all their published digits.
#![allow(clippy::excessive_precision)]

use crate::linalg::Build;
use std::f64::consts::LOG2_E;
/// ln 2's first 32 bits (fdlibm's ln2_hi): k·LN2_HI is exact for |k| < 2²⁰.
const LN2_HI: f64 = 6.931_471_803_691_238_164_90e-1;
/// The rest of ln 2 (fdlibm's ln2_lo).
const LN2_LO: f64 = 1.908_214_929_270_587_700_02e-10;
/// 1.5·2⁵²: adding and subtracting it rounds to the nearest integer.
const ROUNDER: f64 = 6_755_399_441_055_744.0;
/// Below this argument e^x is near the subnormal range (2^k would not be a normal number):
/// such blocks go through libm.
const LOWEST: f64 = -708.0;

/// e^x for LOWEST ≤ x ≤ 0 (or NaN, which stays NaN), branch free.
#[inline(always)]
fn exp_reduced(x: f64) -> f64 {
    let shifted = x * LOG2_E + ROUNDER;
    let k = shifted - ROUNDER;
    let r = (x - k * LN2_HI) - k * LN2_LO;
    // Σ_{j ≤ 13} r^j/j! by Horner.
    let mut p = 1.0 / 6_227_020_800.0;
    for c in [
        1.0 / 479_001_600.0,
        1.0 / 39_916_800.0,
        1.0 / 3_628_800.0,
        1.0 / 362_880.0,
        1.0 / 40_320.0,
        1.0 / 5_040.0,
        1.0 / 720.0,
        1.0 / 120.0,
        1.0 / 24.0,
        1.0 / 6.0,
        0.5,
        1.0,
        1.0,
    ] {
        p = p * r + c;
    }
    let n = shifted.to_bits().wrapping_sub(ROUNDER.to_bits());
    p * f64::from_bits(n.wrapping_add(1023) << 52)
}

crate::linalg::every_build! {
/// The fast loop on the build `build` (baseline: two lanes; AVX2: four; AVX-512: eight), the
/// same operations and results on each.
fn scaled_on(values: &mut [f64], scale: f64) {
    for v in values.iter_mut() {
        *v = scale * exp_reduced(-0.5 * *v);
    }
}
}

crate::linalg::every_build! {
/// Whether every r² in `values` is at most −2·[`LOWEST`] or NaN (the fast loop's range), on
/// the build `build`.
fn in_range_on(values: &[f64]) -> bool {
    values
        .iter()
        .fold(true, |ok, &v| ok & (v <= -2.0 * LOWEST || v.is_nan()))
}
}

/// Replaces each squared distance r² in `values` by `scale`·exp(−r²/2): the squared
/// exponential's covariance σ0²·exp(−r²/2) for `scale` = σ0².
///
/// A slice holding any r² > 1416 (a result near the subnormal range, or an infinite r²) goes
/// through libm instead; a NaN stays NaN.
pub(crate) fn scaled_exp_neg_half(values: &mut [f64], scale: f64) {
    scaled_exp_on(values, scale, Build::detected());
}

/// [`scaled_exp_neg_half`] on the given build of the loop (which the caller has checked the CPU
/// runs): the tests run each.
fn scaled_exp_on(values: &mut [f64], scale: f64, build: Build) {
    if in_range_on(build, values) {
        scaled_on(build, values, scale);
    } else {
        for v in values.iter_mut() {
            *v = scale * (-0.5 * *v).exp();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_libm_to_an_ulp_or_two_on_every_build() {
        let mut r2: Vec<f64> = (0..200_001).map(|i| i as f64 * 7e-3).collect();
        r2.extend([0.0, 1e-300, 1e-17, 2.0 * std::f64::consts::LN_2, 1416.0]);
        let run = |build: Build| {
            let mut v = r2.clone();
            scaled_exp_on(&mut v, 1.7, build);
            v
        };
        let fast = run(Build::Portable);
        for (&x, &e) in r2.iter().zip(&fast) {
            let exact = 1.7 * (-0.5 * x).exp();
            assert!(
                (e - exact).abs() <= 4.0 * f64::EPSILON * exact,
                "exp(-{x}/2): {e} against {exact}"
            );
        }
        assert_eq!(fast[r2.len() - 5], 1.7, "exp(0) is exactly 1");
        for build in Build::all_here() {
            assert_eq!(run(build), fast, "{build:?} and portable differ");
        }
    }

    #[test]
    fn far_infinite_and_nan_distances() {
        let mut v = [1e3, 2e3, f64::INFINITY, 3.0];
        scaled_exp_neg_half(&mut v, 2.0);
        assert_eq!(v[0], 2.0 * (-500.0f64).exp());
        assert_eq!(v[1], 0.0);
        assert_eq!(v[2], 0.0);
        assert_eq!(v[3], 2.0 * (-1.5f64).exp());
        let mut v = [f64::NAN, 1.0];
        scaled_exp_neg_half(&mut v, 1.0);
        assert!(v[0].is_nan());
        assert!((v[1] - (-0.5f64).exp()).abs() <= 2.0 * f64::EPSILON);
    }
}
