//! SSGP inside linfa (feature `linfa`): Kin-40k held as linfa `Dataset`s of ndarray arrays
//! (`Dataset::to_linfa`), trained and predicted in linfa's idiom (`params.fit(&dataset)?`,
//! `fitted.predict(records)?`), scored with the crate's NMSE and MNLP.
//!
//! `cargo run --release --features linfa --example linfa [-- --spectral-points M --evals E]`
//! (defaults: 100 spectral points = 200 basis functions, 1000 evaluations).

#[path = "cli/mod.rs"]
mod cli;
use ssgp::linfa::dataset::Records;
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
    Ok(ssgp::Dataset::from_csv(path)?.to_linfa())
}

const HELP: &str = "\
SSGP inside linfa on Kin-40k: linfa data sets, linfa's idiom, the crate's NMSE and MNLP.

Usage: linfa [OPTIONS]

Options:
  --spectral-points M   spectral points (default 100 = 200 basis functions)
  --evals E             optimiser evaluations (default 1000)
  -h, --help            this text";

fn main() -> std::process::ExitCode {
    cli::main("linfa", run)
}

fn run() -> Result<(), Box<dyn Error>> {
    use lexopt::prelude::*;
    let (mut m, mut evals) = (100, 1000);
    let mut parser = lexopt::Parser::from_env();
    while let Some(arg) = parser.next()? {
        match arg {
            Long("spectral-points") => m = parser.value()?.parse()?,
            Long("evals") => evals = parser.value()?.parse()?,
            Short('h') | Long("help") => {
                println!("{HELP}");
                return Ok(());
            }
            _ => return Err(cli::unexpected(arg, HELP)),
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
    // linfa's idiom in method syntax (the crate's own `fit`, taking linfa data sets); generic
    // linfa code would call `linfa::traits::Fit` and `Predict`, which the models implement too.
    let fitted = params.fit(&train)?;
    let seconds = start.elapsed().as_secs_f64();
    let pred: Predictive = fitted.predict(test.records())?;
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
