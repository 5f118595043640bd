use nalgebra::{DMatrix, DVector};
use rand::{rngs::StdRng, Rng, SeedableRng};
use ssgp::hyperparameters::Hyperparameters;
use ssgp::ssgp::{Ssgp, SsgpHyperparameters};
use ssgp::{Dataset, ParamGuard};
use std::time::Instant;

fn main() {
    let m: usize = std::env::args().nth(1).map_or(100, |s| s.parse().unwrap());
    let mut rng = StdRng::seed_from_u64(1);
    let d = 8;
    let x: DMatrix<f64> = DMatrix::from_fn(500, d, |_, _| rng.random_range(-1.0..1.0));
    let y = DVector::from_fn(500, |i, _| x.row(i).sum().sin());
    let hyper = SsgpHyperparameters {
        hyper: Hyperparameters {
            lengthscales: DVector::from_element(d, 1.0),
            signal_variance: 1.0,
            noise_variance: 0.01,
        },
        unit_frequencies: DMatrix::from_fn(m, d, |_, _| rng.random_range(-2.0..2.0)),
    };
    let model0 = Ssgp::params(m)
        .threads(1)
        .check()
        .unwrap()
        .condition(&Dataset::new(x, y).unwrap(), &hyper)
        .unwrap();
    let xs: DMatrix<f64> = DMatrix::from_fn(2000, d, |_, _| rng.random_range(-1.0..1.0));
    let ys = DVector::from_fn(2000, |i, _| xs.row(i).sum().sin());
    let mut best = f64::MAX;
    for _ in 0..7 {
        let mut model = model0.clone();
        let t = Instant::now();
        for i in 0..2000 {
            model
                .update(
                    &xs.rows(i, 1).into_owned(),
                    &DVector::from_element(1, ys[i]),
                )
                .unwrap();
        }
        best = best.min(t.elapsed().as_secs_f64());
    }
    println!("m={m} per-sample update {:.2} us", best / 2000.0 * 1e6);
}
