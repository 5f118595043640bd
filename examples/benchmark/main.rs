//! The paper's accuracy-versus-cost comparison (§5.2, Figure 3) on Kin-40k or on any data.
//!
//! ```text
//! cargo run --release --example benchmark -- [--train FILE --test FILE | --data DIR]
//!     [--methods ssgp,ssgp-fixed,fitc,full] [--basis 50,100,200] [--reps N] [--seed S]
//!     [--iters K] [--evals E] [--noise-floor V] [--full-subset N] [--threads T]
//!     [--out DIR] [--json] [--quiet]
//! ```
//!
//! Data files are comma-separated, no header, target in the last column (`--data DIR` reads
//! `DIR/train.csv` and `DIR/test.csv`; Kin-40k from `data/kin40k` when neither is given).
//! `--basis` counts basis functions: basis/2 spectral points for SSGP, basis pseudo-inputs for FITC
//! (ignored by the full GP, which learns its hyperparameters on `--full-subset` points, default 2000,
//! and conditions on all). Repetitions use seeds S, S+1, …. Writes `runs.csv`, `nmse.svg` and
//! `mnlp.svg` to `--out` (default `target/benchmark`); `--json` prints one JSON object per fitted
//! model on stdout (progress goes to stderr unless `--quiet`). `--from-csv FILE` redraws the plots
//! from a `runs.csv` of an earlier run without fitting anything.

#[path = "../support/mod.rs"]
mod support;

mod plot;
mod record;

use plot::plot;
use ssgp::Dataset;
use std::error::Error;
use std::path::PathBuf;
use support::{print_table, run, Run, Settings, METHODS};

struct Args {
    train: PathBuf,
    test: PathBuf,
    methods: Vec<String>,
    basis: Vec<usize>,
    reps: u64,
    seed: u64,
    out: PathBuf,
    json: bool,
    from_csv: Option<PathBuf>,
    settings: Settings,
}

fn usage() -> String {
    "usage: benchmark [--train FILE --test FILE | --data DIR] [--methods ssgp,ssgp-fixed,fitc,full] \
     [--basis 50,100,200] [--reps N] [--seed S] [--iters K] [--evals E] [--noise-floor V] \
     [--full-subset N] [--threads T] [--out DIR] [--json] [--quiet] [--from-csv FILE]"
        .into()
}

fn parse() -> Result<Args, Box<dyn Error>> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut a = Args {
        train: root.join("data/kin40k/train.csv"),
        test: root.join("data/kin40k/test.csv"),
        methods: METHODS.iter().map(|s| s.to_string()).collect(),
        basis: vec![50, 100, 200],
        reps: 1,
        seed: 1,
        out: root.join("target/benchmark"),
        json: false,
        from_csv: None,
        settings: Settings::default(),
    };
    let mut it = std::env::args().skip(1);
    let mut train_given = None;
    let mut test_given = None;
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .ok_or_else(|| format!("{flag} needs a value\n{}", usage()))
        };
        match flag.as_str() {
            "--train" => train_given = Some(PathBuf::from(value()?)),
            "--test" => test_given = Some(PathBuf::from(value()?)),
            "--data" => {
                let dir = PathBuf::from(value()?);
                train_given = Some(dir.join("train.csv"));
                test_given = Some(dir.join("test.csv"));
            }
            "--methods" => {
                a.methods = value()?.split(',').map(|s| s.trim().to_string()).collect();
                if let Some(bad) = a.methods.iter().find(|m| !METHODS.contains(&m.as_str())) {
                    return Err(
                        format!("unknown method `{bad}`: expected some of {METHODS:?}").into(),
                    );
                }
            }
            "--basis" => {
                a.basis = value()?
                    .split(',')
                    .map(|s| {
                        s.trim()
                            .parse::<usize>()
                            .map_err(|e| format!("--basis `{s}`: {e}"))
                    })
                    .collect::<Result<_, _>>()?;
                if a.basis.contains(&0) {
                    return Err("--basis values must be positive".into());
                }
            }
            "--reps" => a.reps = value()?.parse()?,
            "--seed" => a.seed = value()?.parse()?,
            "--iters" => a.settings.iterations = value()?.parse()?,
            "--evals" => a.settings.evaluations = value()?.parse()?,
            "--noise-floor" => a.settings.noise_floor = value()?.parse()?,
            "--full-subset" => a.settings.full_subset = value()?.parse()?,
            "--threads" => a.settings.threads = value()?.parse()?,
            "--out" => a.out = PathBuf::from(value()?),
            "--json" => a.json = true,
            "--from-csv" => a.from_csv = Some(PathBuf::from(value()?)),
            "--quiet" => a.settings.progress = false,
            "--help" | "-h" => {
                println!("{}", usage());
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument `{other}`\n{}", usage()).into()),
        }
    }
    match (train_given, test_given) {
        (Some(tr), Some(te)) => {
            a.train = tr;
            a.test = te;
        }
        (None, None) => {}
        _ => return Err("give both --train and --test (or --data DIR)".into()),
    }
    if a.reps == 0 {
        return Err("--reps must be at least 1".into());
    }
    Ok(a)
}

fn main() -> Result<(), Box<dyn Error>> {
    let args = parse()?;
    if let Some(path) = &args.from_csv {
        let text = std::fs::read_to_string(path)?;
        let runs: Vec<Run> = text
            .lines()
            .skip(1)
            .filter(|l| !l.trim().is_empty())
            .map(Run::from_csv)
            .collect::<Result<_, _>>()?;
        std::fs::create_dir_all(&args.out)?;
        let out = |f: &str| args.out.join(f).to_string_lossy().into_owned();
        plot(&out("nmse.svg"), "NMSE", &runs, |r| r.nmse, true)?;
        plot(&out("mnlp.svg"), "MNLP", &runs, |r| r.mnlp, false)?;
        eprintln!("redrew {} runs into {}", runs.len(), args.out.display());
        return Ok(());
    }
    let train = Dataset::from_csv(&args.train)?;
    let test = Dataset::from_csv(&args.test)?;
    if train.dim() != test.dim() {
        return Err(format!(
            "train has {} inputs but test has {}",
            train.dim(),
            test.dim()
        )
        .into());
    }
    eprintln!(
        "train {} ({} points, D = {}), test {} ({} points); {} cores",
        args.train.display(),
        train.len(),
        train.dim(),
        args.test.display(),
        test.len(),
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    std::fs::create_dir_all(&args.out)?;
    let mut runs: Vec<Run> = Vec::new();
    for method in &args.methods {
        let sizes: Vec<usize> = if method == "full" {
            vec![0]
        } else {
            args.basis.clone()
        };
        for &basis in &sizes {
            for rep in 0..args.reps {
                let seed = args.seed + rep;
                let r = run(method, basis, seed, &args.settings, &train, &test)?;
                if args.json {
                    println!("{}", r.json());
                }
                runs.push(r);
            }
        }
    }
    if !args.json {
        print_table("benchmark", &runs);
    }
    let csv: String = std::iter::once(Run::csv_header())
        .chain(runs.iter().map(Run::csv))
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::write(args.out.join("runs.csv"), csv + "\n")?;
    let out = |f: &str| args.out.join(f).to_string_lossy().into_owned();
    plot(&out("nmse.svg"), "NMSE", &runs, |r| r.nmse, true)?;
    plot(&out("mnlp.svg"), "MNLP", &runs, |r| r.mnlp, false)?;
    eprintln!(
        "wrote {}, nmse.svg, mnlp.svg",
        args.out.join("runs.csv").display()
    );
    Ok(())
}
