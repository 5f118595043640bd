//! SSGP's online updates and prediction gradients at m = 100 (200 basis functions), one thread.
//!
//! `cargo bench --bench online` prints one JSON object per case:
//! - `update`: `FittedSsgp::update` with one sample per call (a rank-one update of the 200×200
//!   factor, b += φy, α by two triangular solves) on D = 6 inputs: `updates_per_second`;
//! - `predict` / `predict_gradients`: seconds per test point for 256 test points in one call
//!   (one chunk of `predict_gradients`), and `ratio` = predict_gradients / predict.
//!
//! Medians of many short repetitions, interleaved: on a shared machine a call of a few
//! milliseconds is likely to be preempted, and the longer call more often, so short calls keep the
//! ratio honest; still quote the numbers with the machine's load.

use nalgebra::{DMatrix, DVector};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use ssgp::hyperparameters::Hyperparameters;
use ssgp::ssgp::{Ssgp, SsgpHyperparameters};
use ssgp::{Dataset, ParamGuard};
use std::time::Instant;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> Result<(), ssgp::Error> {
    let (m, dim, n) = (100, 6, 1000);
    let mut rng = StdRng::seed_from_u64(1);
    let x: DMatrix<f64> = DMatrix::from_fn(n, dim, |_, _| rng.random_range(-1.0..1.0));
    let y = DVector::from_fn(n, |i, _| x.row(i).sum().sin());
    let data = Dataset::new(x, y)?;
    let hyper = SsgpHyperparameters {
        hyper: Hyperparameters {
            lengthscales: DVector::from_element(dim, 1.0),
            signal_variance: 1.0,
            noise_variance: 0.01,
        },
        unit_frequencies: DMatrix::from_fn(m, dim, |_, _| rng.random_range(-2.0..2.0)),
    };
    let fitted = Ssgp::params(m)
        .threads(1)
        .check()?
        .condition(&data, &hyper)?;

    let samples = 4000;
    let xs: DMatrix<f64> = DMatrix::from_fn(samples, dim, |_, _| rng.random_range(-1.0..1.0));
    let ys = DVector::from_fn(samples, |i, _| xs.row(i).sum().sin());
    let rows: Vec<DMatrix<f64>> = (0..samples).map(|i| xs.rows(i, 1).into_owned()).collect();
    let targets: Vec<DVector<f64>> = (0..samples)
        .map(|i| DVector::from_element(1, ys[i]))
        .collect();
    let mut rates = Vec::new();
    for _ in 0..5 {
        let mut model = fitted.clone();
        let t = Instant::now();
        for (xi, yi) in rows.iter().zip(&targets) {
            model.update(xi, yi)?;
        }
        rates.push(samples as f64 / t.elapsed().as_secs_f64());
    }
    println!(
        "{{\"case\": \"update\", \"m\": {m}, \"d\": {dim}, \"threads\": 1, \"updates_per_second\": {:.0}}}",
        median(rates)
    );

    let points = 256;
    let xt = DMatrix::from_fn(points, dim, |_, _| rng.random_range(-1.0..1.0));
    let time = |f: &dyn Fn() -> Result<(), ssgp::Error>| -> Result<f64, ssgp::Error> {
        f()?;
        let mut v = Vec::new();
        for _ in 0..41 {
            let t = Instant::now();
            f()?;
            v.push(t.elapsed().as_secs_f64() / points as f64);
        }
        Ok(median(v))
    };
    // Interleaved, so a change in the shared machine's load hits both alike.
    let (mut predict, mut gradients) = (Vec::new(), Vec::new());
    for _ in 0..9 {
        predict.push(time(&|| fitted.predict(&xt).map(|_| ()))?);
        gradients.push(time(&|| fitted.predict_gradients(&xt).map(|_| ()))?);
    }
    let (predict, gradients) = (median(predict), median(gradients));
    println!(
        "{{\"case\": \"predict\", \"m\": {m}, \"d\": {dim}, \"threads\": 1, \"seconds_per_point\": {predict:e}}}"
    );
    println!(
        "{{\"case\": \"predict_gradients\", \"m\": {m}, \"d\": {dim}, \"threads\": 1, \"seconds_per_point\": {gradients:e}, \"ratio\": {:.2}}}",
        gradients / predict
    );
    Ok(())
}
