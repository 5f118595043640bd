//! SSGP inside linfa (feature `linfa`): Kin-40k held as linfa `Dataset`s of ndarray arrays,
//! trained through linfa's `Fit` and predicted through its `Predict`, scored with the crate's
//! NMSE and MNLP.
//!
//! `cargo run --release --features linfa --example linfa [-- --spectral-points M --evals E]`
//! (defaults: 100 spectral points = 200 basis functions, 1000 evaluations).

use ssgp::linfa::dataset::Records;
use ssgp::linfa::traits::{Fit, Predict};
use ssgp::linfa::DatasetBase;
use ssgp::ndarray::{Array1, Array2};
use ssgp::ssgp::Ssgp;
use ssgp::{metrics, Predictive};
use std::error::Error;
use std::path::PathBuf;
use std::time::Instant;

/// A linfa data set: records n×D, one target per record.
type Table = DatasetBase<Array2<f64>, Array1<f64>>;

/// A CSV of the crate's data directory as a linfa data set.
fn load(path: PathBuf) -> Result<Table, Box<dyn Error>> {
    let data = ssgp::Dataset::from_csv(path)?;
    let (n, d) = (data.len(), data.dim());
    let x = Array2::from_shape_fn((n, d), |(i, j)| data.x()[(i, j)]);
    let y = Array1::from_iter(data.y().iter().copied());
    Ok(DatasetBase::new(x, y))
}

fn main() -> Result<(), Box<dyn Error>> {
    let (mut m, mut evals) = (100, 1000);
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--spectral-points" => m = value.parse()?,
            "--evals" => evals = value.parse()?,
            other => {
                return Err(
                    format!("unknown argument `{other}` (--spectral-points, --evals)").into(),
                )
            }
        }
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/kin40k");
    let (train, test) = (load(root.join("train.csv"))?, load(root.join("test.csv"))?);
    eprintln!(
        "Kin-40k through linfa: {} training and {} test points",
        train.nsamples(),
        test.nsamples()
    );
    let params = Ssgp::params(m).seed(1).max_evaluations(evals);
    let start = Instant::now();
    let fitted = Fit::<_, _, ssgp::Error>::fit(&params, &train)?;
    let seconds = start.elapsed().as_secs_f64();
    let pred: Predictive = Predict::predict(&fitted, test.records());
    let y = ssgp::nalgebra::DVector::from_iterator(test.nsamples(), test.targets().iter().copied());
    let y_mean = train.targets().mean().unwrap_or(0.0);
    println!("method  m    NMSE     MNLP    −log p(y|θ)  train [s]  termination");
    println!(
        "ssgp  {m:4}  {:.4}  {:+.4}  {:11.2}  {seconds:9.1}  {}",
        metrics::nmse(&y, &pred, y_mean)?,
        metrics::mnlp(&y, &pred)?,
        fitted.neg_log_evidence(),
        fitted.training().termination
    );
    Ok(())
}
