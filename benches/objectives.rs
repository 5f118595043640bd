//! Cost of one evaluation of each model's evidence and gradient, against the machine's gemm rate.
//!
//! `cargo bench --bench objectives [-- --threads T] [-- --quick]` prints one JSON object per case:
//! `method`, `n`, `m`, `d`, `threads`, `seconds_median`, `flops`, `gflops`, `gemm_gflops`,
//! `efficiency` (= gflops / gemm_gflops).
//!
//! Flop counts are fixed definitions, so the figure cannot be flattered:
//! - SSGP: 12·n·m² = 3·n·(2m)²: the symmetric rank-2m product ΦᵀΦ and the two triangular solves
//!   for ΦA⁻¹ that the gradient needs (trig, the phases and O(m³) terms not counted);
//! - FITC: 7·n·m², the count of its gemms and triangular solves (V = L_u⁻¹K_uf, the Woodbury
//!   product VΛ⁻¹Vᵀ, and the solves and product of the gradient; kernels and O(nmD) terms not
//!   counted), see `src/inducing/mod.rs`;
//! - VFE: 7·n·m², FITC's count: the same factorisation and gradient with Λ = σn²I (the trace
//!   term is the O(nm) column norms of V, not counted);
//! - full GP: n³ (Cholesky n³/3, triangular inverse n³/3, L⁻ᵀL⁻¹ n³/3: the leading terms);
//! - `gemm_gflops`: faer's f64 matrix product — the one the crate uses — with the same thread
//!   count, at shape (2m×n)·(n×2m) for SSGP, (m×n)·(n×m) for FITC and VFE, and (n×n)·(n×512) for the
//!   full GP (its kernels are square).

use nalgebra::{DMatrix, DVector};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use ssgp::optim::Objective;
use ssgp::ssgp::{Ssgp, SsgpHyperparameters};
use ssgp::{Dataset, Fitc, FullGp, Hyperparameters, ParamGuard, Vfe};
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

/// Rate (GFLOP/s) of faer's gemm at (k×n)·(n×r), as used for ΦᵀΦ when r = k.
fn gemm_gflops(n: usize, k: usize, r: usize, threads: usize, reps: usize) -> f64 {
    let a = faer::Mat::<f64>::from_fn(n, k, |i, j| ((i * 31 + j * 17) % 97) as f64 / 97.0);
    let b = faer::Mat::<f64>::from_fn(n, r, |i, j| ((i * 13 + j * 7) % 89) as f64 / 89.0);
    let mut c = faer::Mat::<f64>::zeros(k, r);
    let par = if threads == 1 {
        faer::Par::Seq
    } else {
        faer::Par::rayon(threads)
    };
    let secs = median_seconds(reps, || {
        faer::linalg::matmul::matmul(
            c.as_mut(),
            faer::Accum::Replace,
            a.transpose(),
            b.as_ref(),
            1.0,
            par,
        );
    });
    2.0 * n as f64 * (k * r) as f64 / secs / 1e9
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
        let params = Ssgp::params(m).threads(threads).check().expect("valid");
        let objective = params.evidence(&data).expect("valid");
        let hyper = SsgpHyperparameters {
            hyper: Hyperparameters {
                lengthscales: DVector::from_element(d, 1.0),
                signal_variance: 1.0,
                noise_variance: 0.1,
            },
            unit_frequencies: DMatrix::from_fn(m, d, |_, _| rng.random_range(-2.0..2.0)),
        };
        let theta = objective.pack(&hyper).expect("valid");
        let secs = median_seconds(reps, || {
            objective.value_and_gradient(&theta).expect("evaluates");
        });
        let gemm = gemm_gflops(n, 2 * m, 2 * m, threads, reps);
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
    for m in [50, 100, 250, 375] {
        let params = Fitc::params(m).threads(threads).check().expect("valid");
        let objective = params.evidence(&data).expect("valid");
        let mut theta = DVector::zeros(d + 2 + m * d);
        theta[d + 1] = 0.5 * 0.1f64.ln();
        for (j, v) in theta.rows_mut(d + 2, m * d).iter_mut().enumerate() {
            *v = data.x()[((j % m) * 37 % n, j / m)];
        }
        let secs = median_seconds(reps, || {
            objective.value_and_gradient(&theta).expect("evaluates");
        });
        let gemm = gemm_gflops(n, m, m, threads, reps);
        emit(
            "fitc",
            n,
            m,
            d,
            threads,
            secs,
            7.0 * n as f64 * (m * m) as f64,
            gemm,
        );
    }
    for m in [50, 100, 250, 375] {
        let params = Vfe::params(m).threads(threads).check().expect("valid");
        let objective = params.evidence(&data).expect("valid");
        let mut theta = DVector::zeros(d + 2 + m * d);
        theta[d + 1] = 0.5 * 0.1f64.ln();
        for (j, v) in theta.rows_mut(d + 2, m * d).iter_mut().enumerate() {
            *v = data.x()[((j % m) * 37 % n, j / m)];
        }
        let secs = median_seconds(reps, || {
            objective.value_and_gradient(&theta).expect("evaluates");
        });
        let gemm = gemm_gflops(n, m, m, threads, reps);
        emit(
            "vfe",
            n,
            m,
            d,
            threads,
            secs,
            7.0 * n as f64 * (m * m) as f64,
            gemm,
        );
    }
    let full_sizes: &[usize] = if quick { &[2000] } else { &[2000, 5000, 10000] };
    for &nf in full_sizes {
        let sub = random_data(nf, d, &mut rng);
        let params = FullGp::params().threads(threads).check().expect("valid");
        let objective = params.evidence(&sub);
        let mut theta = DVector::zeros(d + 2);
        theta[d + 1] = 0.5 * 0.1f64.ln();
        let full_reps = if nf >= 10_000 { 1 } else { reps.min(3) };
        let secs = median_seconds(full_reps, || {
            objective.value_and_gradient(&theta).expect("evaluates");
        });
        let gemm = gemm_gflops(nf, nf, 512, threads, 3);
        emit("full", nf, 0, d, threads, secs, (nf as f64).powi(3), gemm);
    }
}
