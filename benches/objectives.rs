//! Cost of one evaluation of each model's evidence and gradient, against the machine's gemm rate.
//!
//! `cargo bench --bench objectives [-- --threads T] [-- --quick]` prints one JSON object per case:
//! `method`, `n`, `m`, `d`, `threads`, `seconds_median`, `flops`, `gflops`, `gemm_gflops`,
//! `efficiency` (= gflops / gemm_gflops).
//!
//! Flop counts are fixed definitions, so the figure cannot be flattered:
//! - SSGP: 12·n·m² = 3·n·(2m)²: the symmetric rank-2m product ΦᵀΦ and the two triangular solves
//!   for ΦA⁻¹ that the gradient needs (trig, the phases and O(m³) terms not counted);
//! - `gemm_gflops`: faer's f64 matrix product — the one the crate uses — at shape (2m×n)·(n×2m),
//!   2·n·(2m)² flops, with the same thread count.

use nalgebra::{DMatrix, DVector};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use ssgp::optim::Objective;
use ssgp::ssgp::{Ssgp, SsgpHyperparameters};
use ssgp::Dataset;
use std::time::Instant;

fn median_seconds(reps: usize, mut f: impl FnMut()) -> f64 {
    f();
    let mut times: Vec<f64> = (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

/// Rate (GFLOP/s) of faer's gemm at (k×n)·(n×k), as used for ΦᵀΦ.
fn gemm_gflops(n: usize, k: usize, threads: usize, reps: usize) -> f64 {
    let a = faer::Mat::<f64>::from_fn(n, k, |i, j| ((i * 31 + j * 17) % 97) as f64 / 97.0);
    let mut c = faer::Mat::<f64>::zeros(k, k);
    let par = ssgp::linalg::par(threads);
    let secs = median_seconds(reps, || {
        faer::linalg::matmul::matmul(
            c.as_mut(),
            faer::Accum::Replace,
            a.transpose(),
            a.as_ref(),
            1.0,
            par,
        );
    });
    2.0 * n as f64 * (k * k) as f64 / secs / 1e9
}

fn random_data(n: usize, d: usize, rng: &mut StdRng) -> Dataset {
    let x = DMatrix::from_fn(n, d, |_, _| rng.random_range(-1.7..1.7));
    let y = DVector::from_fn(n, |i, _| f64::sin(x.row(i).sum()));
    Dataset::new(x, y).expect("finite data")
}

#[allow(clippy::too_many_arguments)]
fn emit(
    method: &str,
    n: usize,
    m: usize,
    d: usize,
    threads: usize,
    secs: f64,
    flops: f64,
    gemm: f64,
) {
    let gflops = flops / secs / 1e9;
    println!(
        "{{\"method\":\"{method}\",\"n\":{n},\"m\":{m},\"d\":{d},\"threads\":{threads},\"seconds_median\":{secs:.6},\"flops\":{flops:.0},\"gflops\":{gflops:.3},\"gemm_gflops\":{gemm:.3},\"efficiency\":{:.3}}}",
        gflops / gemm
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let threads = args
        .iter()
        .position(|a| a == "--threads")
        .and_then(|i| args.get(i + 1))
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(rayon::current_num_threads);
    let quick = args.iter().any(|a| a == "--quick");
    let reps = if quick { 3 } else { 7 };
    let mut rng = StdRng::seed_from_u64(0);
    let (n, d) = (10_000, 8);
    let data = random_data(n, d, &mut rng);
    for m in [50, 100, 250, 375] {
        let objective = Ssgp::params(m)
            .threads(threads)
            .objective(&data)
            .expect("valid");
        let hyper = SsgpHyperparameters {
            lengthscales: DVector::from_element(d, 1.0),
            signal_variance: 1.0,
            noise_variance: 0.1,
            unit_frequencies: DMatrix::from_fn(m, d, |_, _| rng.random_range(-2.0..2.0)),
        };
        let theta = objective.pack(&hyper).expect("valid");
        let secs = median_seconds(reps, || {
            objective.value_and_gradient(&theta).expect("evaluates");
        });
        let gemm = gemm_gflops(n, 2 * m, threads, reps);
        emit(
            "ssgp",
            n,
            m,
            d,
            threads,
            secs,
            12.0 * n as f64 * (m * m) as f64,
            gemm,
        );
    }
}
