//! Vectorisable sine and cosine for the design matrix.
//!
//! The design matrix needs 2nm sines and cosines per evaluation; through libm they cost about as
//! much as the O(nm²) matrix work at small m. This is the classic fdlibm scheme written as a
//! branch-free loop the compiler vectorises: Cody–Waite reduction by π/2 in three parts, the
//! fdlibm minimax polynomials on [−π/4, π/4], and the quadrant applied with bit operations,
//! compiled three times (portable, AVX2, AVX-512) with the same operations and chosen at run
//! time. No FMA contraction happens in any build, so all three give the same bits.
//! Accurate to about 1 ulp for |x| ≤ 2²⁰·π/2; larger arguments (never produced by sensible
//! frequencies) fall back to libm.

// The constants below are fdlibm's, written with all their published digits.
#![allow(clippy::excessive_precision)]

use crate::linalg::Build;
use std::f64::consts::FRAC_2_PI as TWO_OVER_PI;
/// π/2 in three parts: the first 33 bits, the next 33, and the rest (fdlibm's pio2_1, pio2_2,
/// pio2_3), so k·PIO2_1 and k·PIO2_2 are exact for |k| < 2²⁰.
const PIO2_1: f64 = 1.570_796_326_734_125_6;
const PIO2_2: f64 = 6.077_100_506_303_966e-11;
const PIO2_3: f64 = 2.022_266_248_795_950_6e-21;
/// 1.5·2⁵²: adding and subtracting it rounds to the nearest integer.
const ROUNDER: f64 = 6_755_399_441_055_744.0;
/// Beyond this |x| the three-part reduction loses accuracy.
const LIMIT: f64 = 1_647_099.0;

// fdlibm's minimax coefficients (__kernel_sin, __kernel_cos), as published.
const S1: f64 = -1.666_666_666_666_663_2e-1;
const S2: f64 = 8.333_333_333_322_49e-3;
const S3: f64 = -1.984_126_982_985_795e-4;
const S4: f64 = 2.755_731_370_707_006_8e-6;
const S5: f64 = -2.505_076_025_340_686_3e-8;
const S6: f64 = 1.589_690_995_211_55e-10;
const C1: f64 = 4.166_666_666_666_660_2e-2;
const C2: f64 = -1.388_888_888_887_411e-3;
const C3: f64 = 2.480_158_728_947_673e-5;
const C4: f64 = -2.755_731_435_139_066_3e-7;
const C5: f64 = 2.087_572_321_298_175e-9;
const C6: f64 = -1.135_964_755_778_819_5e-11;

/// sin and cos of one argument with |x| ≤ LIMIT, branch free.
#[inline(always)]
fn sin_cos_reduced(x: f64) -> (f64, f64) {
    let shifted = x * TWO_OVER_PI + ROUNDER;
    let q = shifted.to_bits();
    let k = shifted - ROUNDER;
    let r = ((x - k * PIO2_1) - k * PIO2_2) - k * PIO2_3;
    let z = r * r;
    let s = r + r * z * (S1 + z * (S2 + z * (S3 + z * (S4 + z * (S5 + z * S6)))));
    let hz = 0.5 * z;
    let w = 1.0 - hz;
    let c =
        w + (((1.0 - w) - hz) + z * z * (C1 + z * (C2 + z * (C3 + z * (C4 + z * (C5 + z * C6))))));
    // Quadrant q mod 4: sin x = (s, c, −s, −c), cos x = (c, −s, −c, s).
    let swap = 0u64.wrapping_sub(q & 1);
    let (sb, cb) = (s.to_bits(), c.to_bits());
    let sin_bits = (cb & swap) | (sb & !swap);
    let cos_bits = (sb & swap) | (cb & !swap);
    let sin_sign = (q & 2) << 62;
    let cos_sign = ((q + 1) & 2) << 62;
    (
        f64::from_bits(sin_bits ^ sin_sign),
        f64::from_bits(cos_bits ^ cos_sign),
    )
}

crate::linalg::every_build! {
/// The fast loop on the build `build` (baseline: two lanes; AVX2: four; AVX-512: eight lanes
/// and 32 registers, so the polynomials' constants stay in registers — about a third faster
/// than the AVX2 build on the AMD EPYC (Zen 4) this was measured on, 1.62 against 2.46 ns per
/// sine–cosine pair), the same operations and results on each.
fn sin_cos_on_build(cos_out: &mut [f64], sin_out: &mut [f64]) {
    for (c, s) in cos_out.iter_mut().zip(sin_out.iter_mut()) {
        let (sn, cs) = sin_cos_reduced(*c);
        *s = sn;
        *c = cs;
    }
}
}

crate::linalg::every_build! {
/// Whether every phase in `values` is within the fast reduction's range (|θ| ≤ [`LIMIT`]; a NaN
/// is not), on the build `build`.
fn in_range_on(values: &[f64]) -> bool {
    values.iter().fold(true, |ok, &x| ok & (x.abs() <= LIMIT))
}
}

/// Replaces each phase θ in `cos_out` by cos θ and writes sin θ into `sin_out` (same length).
///
/// A block holding any argument beyond the fast reduction's range (or a non-finite one) goes
/// through libm instead, so the result is always as accurate as libm's to about 1 ulp.
pub(crate) fn sin_cos_in_place(cos_out: &mut [f64], sin_out: &mut [f64]) {
    sin_cos_on(cos_out, sin_out, Build::detected());
}

/// [`sin_cos_in_place`] on the given build of the loop (which the caller has checked the CPU
/// runs): the tests run each.
fn sin_cos_on(cos_out: &mut [f64], sin_out: &mut [f64], build: Build) {
    if in_range_on(build, cos_out) {
        sin_cos_on_build(build, cos_out, sin_out);
    } else {
        for (c, s) in cos_out.iter_mut().zip(sin_out.iter_mut()) {
            let (sn, cs) = c.sin_cos();
            *s = sn;
            *c = cs;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_build_agrees_with_libm_and_the_others() {
        let xs: Vec<f64> = (0..50_001)
            .map(|i| (i as f64 - 25_000.0) * 3.7e-3)
            .collect();
        let run = |build: Build| {
            let mut c = xs.clone();
            let mut s = vec![0.0; xs.len()];
            sin_cos_on(&mut c, &mut s, build);
            (c, s)
        };
        let (c, s) = run(Build::Portable);
        for (i, &x) in xs.iter().enumerate() {
            assert!((s[i] - x.sin()).abs() <= 2.5e-16, "portable sin({x})");
            assert!((c[i] - x.cos()).abs() <= 2.5e-16, "portable cos({x})");
        }
        for build in Build::all_here() {
            assert_eq!(
                run(build),
                (c.clone(), s.clone()),
                "{build:?} and portable differ"
            );
        }
    }

    #[test]
    fn matches_libm_to_an_ulp_or_two() {
        let mut xs: Vec<f64> = (0..200_001)
            .map(|i| (i as f64 - 100_000.0) * 1e-3)
            .collect();
        xs.extend((0..20_000).map(|i| (i as f64 - 10_000.0) * 97.3 + 0.123));
        xs.extend([
            0.0,
            -0.0,
            1e-300,
            std::f64::consts::FRAC_PI_2,
            std::f64::consts::PI,
            1.6e6,
        ]);
        let mut c = xs.clone();
        let mut s = vec![0.0; xs.len()];
        sin_cos_in_place(&mut c, &mut s);
        let mut worst: f64 = 0.0;
        for (i, &x) in xs.iter().enumerate() {
            worst = worst
                .max((s[i] - x.sin()).abs())
                .max((c[i] - x.cos()).abs());
        }
        assert!(worst <= 2.5e-16, "worst absolute error {worst:e}");
    }

    #[test]
    fn large_and_non_finite_arguments_fall_back_to_libm() {
        let xs = [1e7, -3e9, 0.5];
        let mut c = xs;
        let mut s = [0.0; 3];
        sin_cos_in_place(&mut c, &mut s);
        for i in 0..3 {
            assert_eq!(s[i], xs[i].sin());
            assert_eq!(c[i], xs[i].cos());
        }
        let mut c = [f64::NAN, 1.0];
        let mut s = [0.0; 2];
        sin_cos_in_place(&mut c, &mut s);
        assert!(c[0].is_nan() && s[0].is_nan());
    }
}
