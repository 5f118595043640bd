//! SSGP trained across the ranks of an MPI job on Kin-40k (or any CSV): each rank reads only its
//! share of the training rows; the model, the same on every rank, is tested on rank 0.
//!
//! `mpirun -np N target/release/examples/distributed [--basis B --evals E --seed S --draws K
//! --start half --calibration off --train FILE --test FILE]` (defaults: Kin-40k, 200 basis
//! functions = 100 spectral points, 1000 evaluations, seed 1, the best of 100 initial draws,
//! lengthscales from a full GP on 1024 gathered rows, the calibration check; `--start half`
//! starts from half ranges instead). Build with `cargo build --release --features mpi --example
//! distributed`. Prints the table (method, m, NMSE, MNLP, −log p, train seconds, evaluations),
//! the ranks, the bytes moved per evaluation with the compute and communication time, and what
//! the calibration check did.

#[path = "cli/mod.rs"]
mod cli;
use ssgp::data::CsvOptions;
use ssgp::distributed::{load_csv_share, Cluster};
use ssgp::metrics::{mnlp, nmse};
use ssgp::ssgp::CalibrationGuard;
use ssgp::{Dataset, LengthscaleInit, ParamGuard, Ssgp};
use std::error::Error;
use std::path::PathBuf;
use std::time::Instant;

const HELP: &str = "\
SSGP across the ranks of an MPI job (run under mpirun) on Kin-40k or any CSV.

Usage: mpirun -np N distributed [OPTIONS]

Options:
  --basis B      basis functions = 2 × spectral points (default 200)
  --evals E      optimiser evaluations (default 1000)
  --seed S       seed (default 1)
  --draws K      initial spectral draws (default 100)
  --start half   start the lengthscales at half the input ranges (default: a full GP on 1024
                 gathered rows)
  --calibration C
                 check (the default: the held-out check across the ranks), off (the learned
                 fit alone) or features (the random-feature fit)
  --train FILE   training CSV (default Kin-40k's)
  --test FILE    test CSV (default Kin-40k's)
  -h, --help     this text";

fn main() -> std::process::ExitCode {
    cli::main("distributed", run)
}

fn run() -> Result<(), Box<dyn Error>> {
    use lexopt::prelude::*;
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/kin40k");
    let (mut train, mut test) = (root.join("train.csv"), root.join("test.csv"));
    let (mut train_given, mut test_given) = (false, false);
    let (mut basis, mut evals, mut seed, mut draws) = (200, 1000, 1, 100);
    let mut start = None;
    let mut guard = CalibrationGuard::Check;
    let mut parser = lexopt::Parser::from_env();
    while let Some(arg) = parser.next()? {
        match arg {
            Long("basis") => basis = parser.value()?.parse()?,
            Long("evals") => evals = parser.value()?.parse()?,
            Long("seed") => seed = parser.value()?.parse()?,
            Long("draws") => draws = parser.value()?.parse()?,
            Long("start") => match parser.value()?.string()?.as_str() {
                "half" => start = Some(LengthscaleInit::HalfRange),
                other => return Err(format!("--start {other}: only `half` is known").into()),
            },
            Long("calibration") => {
                guard = match parser.value()?.string()?.as_str() {
                    "check" => CalibrationGuard::Check,
                    "off" => CalibrationGuard::Off,
                    "features" => CalibrationGuard::RandomFeatures,
                    other => {
                        return Err(format!(
                            "--calibration {other}: expected check, off or features"
                        )
                        .into())
                    }
                }
            }
            Long("train") => {
                train = parser.value()?.into();
                train_given = true;
            }
            Long("test") => {
                test = parser.value()?.into();
                test_given = true;
            }
            Short('h') | Long("help") => {
                println!("{HELP}");
                return Ok(());
            }
            _ => return Err(cli::unexpected(arg, HELP)),
        }
    }
    if train_given != test_given {
        // One file of the user's scored on (or trained with) Kin-40k's other half.
        return Err("give both --train and --test (or neither, for Kin-40k)".into());
    }
    let universe = ssgp::mpi::initialize().ok_or("MPI was initialised already")?;
    let cluster = Cluster::new(universe.world());
    let local = load_csv_share(&train, &CsvOptions::new(), &cluster)?;
    let m = (basis / 2).max(1);
    let params = Ssgp::params(m)
        .seed(seed)
        .max_evaluations(evals)
        .initial_draws(draws)
        .calibration(guard);
    let params = match start {
        Some(init) => params.lengthscale_init(init),
        None => params,
    }
    .check()?;
    let started = Instant::now();
    let fit = params.fit_distributed(&local, &cluster)?;
    let train_seconds = started.elapsed().as_secs_f64();
    let model = &fit.model;
    let evaluations = fit.evaluations.max(1) as f64;
    eprintln!(
        "rank {}: {} rows; per evaluation {:.4} s computing, {:.4} s in collectives, {:.0} bytes",
        cluster.rank(),
        local.len(),
        fit.compute.as_secs_f64() / evaluations,
        fit.traffic.time.as_secs_f64() / evaluations,
        fit.traffic.bytes as f64 / evaluations
    );
    if cluster.is_root() {
        let test = Dataset::from_csv(&test)?;
        let pred = model.predict(test.x())?;
        println!(
            "\n{} ranks, {} training rows ({} on rank 0), {} test rows",
            fit.ranks,
            fit.rows,
            local.len(),
            test.len()
        );
        println!(
            "{:<12} {:>5} {:>9} {:>9} {:>12} {:>9} {:>6} {:>6} {:>14}",
            "method", "m", "NMSE", "MNLP", "−log p", "train s", "evals", "ranks", "bytes/eval"
        );
        println!(
            "{:<12} {:>5} {:>9.5} {:>9.4} {:>12.2} {:>9.2} {:>6} {:>6} {:>14.0}",
            "ssgp-mpi",
            m,
            nmse(test.y(), &pred, model.y_mean())?,
            mnlp(test.y(), &pred)?,
            model.neg_log_evidence(),
            train_seconds,
            model.training().evaluations,
            fit.ranks,
            fit.traffic.bytes as f64 / evaluations
        );
        println!("termination: {}", model.training().termination);
        println!("check: {}", model.training().diagnosis());
    }
    Ok(())
}
