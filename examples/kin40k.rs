//! Kin-40k (8 inputs, 10000 training and 30000 test points, the original split): SSGP beside FITC
//! at the same number of basis functions and the full GP — the paper's headline comparison (§5.2).
//!
//! `cargo run --release --example kin40k [-- --basis B --evals E --seed S --threads T
//! --kernel K --methods M,…]` (defaults: 100 basis functions = 50 spectral points or 100
//! pseudo-inputs; 1000 evaluations, the original code's budget; the squared exponential
//! (`se`, `matern12`, `matern32`, `matern52`); methods `ssgp,fitc,full`). Progress goes to stderr; the results table to stdout.

#[path = "support/mod.rs"]
mod support;

use ssgp::Dataset;
use std::error::Error;
use std::path::PathBuf;
use support::{parse_kernel, print_table, run, Settings};

fn main() -> Result<(), Box<dyn Error>> {
    let mut basis = 100;
    let mut seed = 1;
    let mut settings = Settings::default();
    let mut methods = vec!["ssgp".to_string(), "fitc".into(), "full".into()];
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--basis" => basis = value.parse()?,
            "--evals" => settings.evaluations = value.parse()?,
            "--seed" => seed = value.parse()?,
            "--threads" => settings.threads = value.parse()?,
            "--kernel" => settings.kernel = parse_kernel(&value)?,
            "--methods" => methods = value.split(',').map(str::to_string).collect(),
            other => {
                return Err(format!(
                    "unknown argument `{other}` (--basis, --evals, --seed, --threads, --kernel, \
                     --methods)"
                )
                .into())
            }
        }
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/kin40k");
    let train = Dataset::from_csv(root.join("train.csv"))?;
    let test = Dataset::from_csv(root.join("test.csv"))?;
    eprintln!(
        "Kin-40k: {} training and {} test points, D = {}",
        train.len(),
        test.len(),
        train.dim()
    );
    let mut rows = Vec::new();
    for method in &methods {
        eprintln!("training {method} …");
        rows.push(run(method, basis, seed, &settings, &train, &test)?);
    }
    print_table(
        &format!(
            "Kin-40k, kernel {}, {basis} basis functions, seed {seed}, budget {} evaluations",
            settings.kernel.name(),
            settings.evaluations
        ),
        &rows,
    );
    Ok(())
}
