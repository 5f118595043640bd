//! The paper's accuracy-versus-cost comparison (§5.2, Figure 3) on Kin-40k or on any data.
//!
//! ```text
//! cargo run --release --example benchmark -- [--train FILE --test FILE | --data DIR]
//!     [--target NAME|K] [--delimiter C]
//!     [--methods ssgp,ssgp-fixed,fitc,full,ssgp-mix,ssgp-best,vfe] [--basis 50,100,200] [--reps N]
//!     [--seed S] [--optimizer cg|lbfgs[:M]] [--iters K] [--evals E] [--noise-floor V] [--full-subset N]
//!     [--init half|full:N|default] [--restarts K] [--standardize] [--best-effort] [--threads T]
//!     [--kernel se|matern12|matern32|matern52]
//!     [--out DIR] [--json] [--quiet] [--from-csv FILE]
//! ```
//!
//! Data files are comma-separated (`--delimiter`), target in the last column (`--target` names
//! another by header name or zero-based index), a header line allowed — the same in both files,
//! which must differ (`--data DIR` reads `DIR/train.csv` and `DIR/test.csv`; Kin-40k from
//! `data/kin40k` when neither is given).
//!
//! - `--methods`: `ssgp` (learned spectral points), `ssgp-fixed` (fixed ones), `fitc`, `full`
//!   (default: these four, the paper's), `ssgp-mix` and `ssgp-best` (`--restarts` SSGP fits with
//!   seeds S, S+1, … combined as an equal-weight predictive mixture, or the one with the best
//!   evidence kept; default 4 restarts), `vfe` (Titsias' collapsed variational bound, GPflow's
//!   SGPR; its `nlml` is −F, the negated bound, not −log p).
//! - `--basis` counts basis functions: basis/2 spectral points for SSGP, basis pseudo-inputs for
//!   FITC and basis inducing inputs for VFE; ignored by the full GP, which learns its hyperparameters on `--full-subset` points
//!   (default min(2000, n)) and conditions on all.
//! - `--reps N` repeats every fit with seeds S, S+1, … (`--seed`, default 1).
//! - `--optimizer` is every model's optimiser: conjugate gradients or L-BFGS keeping M pairs
//!   (`lbfgs` for 10, scipy's and GPflow's); by default each model's own (VFE: L-BFGS with 50
//!   pairs, `ssgp::vfe::DEFAULT_OPTIMIZER`; the others: conjugate gradients); `--iters` and `--evals` are the optimiser's budget
//!   (default: no iteration cap, 1000 evaluations); `--noise-floor` a lower bound on σn²; `--threads` 0 for all cores.
//! - `--init` is SSGP's, FITC's and VFE's lengthscale start: half the input ranges, a full GP on N
//!   points (`full:1024`), or the crate's default.
//! - `--kernel` is every model's covariance (SSGP: its spectral density); default `se`.
//! - `--standardize` wraps every model in `Standardized` (inputs and targets standardised,
//!   undone in predictions).
//! - `--best-effort` keeps the best model of a failed training; its row names the failure as
//!   its termination.
//!
//! A fit that fails (training, a bad setting for that method, …) gives an error row with its
//! message and the run goes on; the exit status is non-zero only if no fit succeeded. The table
//! (stdout) ends in each fit's termination. Writes `runs.csv` (with `error` and `termination`
//! columns), `nmse.svg` and `mnlp.svg` to `--out` (default `target/benchmark`); `--json` prints
//! one JSON object per fit on stdout instead of the table (progress goes to stderr unless
//! `--quiet`). `--from-csv FILE` redraws the plots from a `runs.csv` of an earlier run (of this
//! version or the first, without those two columns) without fitting anything.

#[path = "../support/mod.rs"]
mod support;

mod plot;
mod record;

#[path = "../cli/mod.rs"]
mod cli;
use plot::plot;
use ssgp::data::{CsvOptions, Target};
use ssgp::optim::Method;
use ssgp::{Dataset, LengthscaleInit};
use std::error::Error;
use std::fmt::Display;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::str::FromStr;
use support::{parse_kernel, print_table, run, Run, Settings, METHODS};

/// The methods run when `--methods` is not given: the paper's comparison.
const DEFAULT_METHODS: [&str; 4] = ["ssgp", "ssgp-fixed", "fitc", "full"];

struct Args {
    train: PathBuf,
    test: PathBuf,
    /// How both files are read: target column and delimiter.
    csv: CsvOptions,
    /// The delimiter `csv` reads with (for comparing the files' headers).
    delimiter: u8,
    /// The target column, as the progress line names it.
    target: String,
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
    "\
The paper's Figure 3 on any CSV: NMSE and MNLP of each method at each number of basis functions,
as a table, runs.csv, JSON lines (--json) and SVG plots.

Usage: benchmark [OPTIONS]

Options:
  --train FILE --test FILE   the data (default Kin-40k; two different files: a model scored
                             on its training rows would look better than it is); or
  --data DIR                 DIR/train.csv and DIR/test.csv
  --target NAME|K            the target column: its header name or zero-based index
                             (default the last column)
  --delimiter C              the field delimiter: one character, or `tab` (default `,`)
  --methods M,…              of ssgp, ssgp-fixed, fitc, full, ssgp-mix, ssgp-best, vfe
                             (default ssgp,ssgp-fixed,fitc,full)
  --basis B,…                basis functions (default 50,100,200); inducing inputs for
                             FITC and VFE
  --reps N                   repetitions, seeds S, S+1, … (default 1)
  --seed S                   first seed (default 1)
  --optimizer cg|lbfgs[:M]   conjugate gradients or L-BFGS with M pairs (default 10)
                             for every model (default: each model's own)
  --iters K                  optimiser iterations per fit
  --evals E                  optimiser evaluations per fit (default 1000)
  --noise-floor V            absolute lower bound on σn²
  --full-subset N            points the full GP learns θ on (default min(2000, n))
  --init half|full:N|default how SSGP and FITC start their lengthscales
  --restarts K               fits per ssgp-mix / ssgp-best ensemble
  --standardize              standardise inputs and targets around every model
  --best-effort              keep a failed training's best model
  --threads T                threads, 0 for all cores
  --kernel K                 se, matern12, matern32 or matern52
  --out DIR                  where runs.csv and the plots go (default target/benchmark)
  --json                     one JSON object per run on stdout
  --quiet                    no progress on stderr
  --from-csv FILE            redraw the table and plots from a runs.csv, without fitting
                             (the data and model flags are not used)
  -h, --help                 this text"
        .into()
}

/// The value `s` of `flag`, parsed.
fn number<T: FromStr>(flag: &str, s: &str) -> Result<T, String>
where
    T::Err: Display,
{
    s.trim().parse().map_err(|e| format!("{flag} `{s}`: {e}"))
}

/// `--init`'s value: `half`, `full:N` (N ≥ 1) or `default` (`None`).
fn lengthscale_init(s: &str) -> Result<Option<LengthscaleInit>, String> {
    match (s.trim(), s.trim().strip_prefix("full:")) {
        ("default", _) => Ok(None),
        ("half", _) => Ok(Some(LengthscaleInit::HalfRange)),
        (_, Some(n)) => match number("--init full:N", n)? {
            0 => Err("--init full:N needs at least 1 point".into()),
            n => Ok(Some(LengthscaleInit::FullGpSubset(n))),
        },
        _ => Err(format!(
            "--init `{s}`: expected `half`, `full:N` (a full GP on N points, e.g. full:1024) or \
             `default`"
        )),
    }
}

/// `--delimiter`'s value: one ASCII character, or `tab`.
fn delimiter(s: &str) -> Result<u8, String> {
    match s {
        "tab" | "\\t" | "\t" => Ok(b'\t'),
        _ if s.len() == 1 && s.is_ascii() => Ok(s.as_bytes()[0]),
        _ => Err(format!(
            "--delimiter `{s}`: expected one character (e.g. `;`) or `tab`"
        )),
    }
}

/// The column names of `path`'s header as the crate's CSV loader reads them with `delimiter`
/// ([`Dataset::csv_header`]); `None` for a data line or a file that cannot be read (loading it
/// reports why).
fn header_names(path: &Path, delimiter: u8) -> Option<Vec<String>> {
    Dataset::csv_header(path, &CsvOptions::new().delimiter(delimiter))
        .ok()
        .flatten()
}

/// Refuses a test file that is the training file (its metrics would be the training fit's)
/// and two files whose headers name different columns (they are read by position).
fn check_files(train: &Path, test: &Path, delimiter: u8) -> Result<(), String> {
    if let (Ok(a), Ok(b)) = (train.canonicalize(), test.canonicalize()) {
        if a == b {
            return Err(format!(
                "--train and --test are the same file ({}): its NMSE and MNLP would be the \
                 training fit's, not a test's; hold out rows in a file of their own (rows with \
                 equal inputs together)",
                train.display()
            ));
        }
    }
    if let (Some(a), Some(b)) = (
        header_names(train, delimiter),
        header_names(test, delimiter),
    ) {
        if a != b {
            return Err(format!(
                "the headers differ: train {} has {a:?}, test {} has {b:?}; the columns are \
                 read by position, so give both files the same columns in the same order",
                train.display(),
                test.display()
            ));
        }
    }
    Ok(())
}

/// `--optimizer`'s value: `cg`, `lbfgs` (10 pairs) or `lbfgs:M` (M ≥ 1).
fn optimizer(s: &str) -> Result<Method, String> {
    match (s.trim(), s.trim().strip_prefix("lbfgs:")) {
        ("cg", _) => Ok(Method::ConjugateGradient),
        ("lbfgs", _) => Ok(Method::Lbfgs { memory: 10 }),
        (_, Some(m)) => match number("--optimizer lbfgs:M", m)? {
            0 => Err("--optimizer lbfgs:M needs at least 1 pair".into()),
            memory => Ok(Method::Lbfgs { memory }),
        },
        _ => Err(format!(
            "--optimizer `{s}`: expected `cg`, `lbfgs` or `lbfgs:M` (M pairs, e.g. lbfgs:20)"
        )),
    }
}

fn parse() -> Result<Args, Box<dyn Error>> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut a = Args {
        train: root.join("data/kin40k/train.csv"),
        test: root.join("data/kin40k/test.csv"),
        csv: CsvOptions::new(),
        delimiter: b',',
        target: "the last column".into(),
        methods: DEFAULT_METHODS.iter().map(|s| s.to_string()).collect(),
        basis: vec![50, 100, 200],
        reps: 1,
        seed: 1,
        out: root.join("target/benchmark"),
        json: false,
        from_csv: None,
        settings: Settings::default(),
    };
    let mut parser = lexopt::Parser::from_env();
    let mut train_given = None;
    let mut test_given = None;
    while let Some(arg) = parser.next()? {
        use lexopt::prelude::*;
        let flag = match &arg {
            Long(name) => format!("--{name}"),
            _ => String::new(),
        };
        let s = &mut a.settings;
        match arg {
            Long("train") => train_given = Some(PathBuf::from(parser.value()?)),
            Long("test") => test_given = Some(PathBuf::from(parser.value()?)),
            Long("data") => {
                let dir = PathBuf::from(parser.value()?);
                train_given = Some(dir.join("train.csv"));
                test_given = Some(dir.join("test.csv"));
            }
            Long("target") => {
                let t = parser.value()?.string()?;
                let target = match t.trim().parse::<usize>() {
                    Ok(k) => {
                        a.target = format!("column {k} (zero-based)");
                        Target::Column(k)
                    }
                    Err(_) => {
                        a.target = format!("column `{}`", t.trim());
                        Target::named(t.trim())
                    }
                };
                a.csv = a.csv.target(target);
            }
            Long("delimiter") => {
                a.delimiter = delimiter(&parser.value()?.string()?)?;
                a.csv = a.csv.delimiter(a.delimiter);
            }
            Long("methods") => {
                let list = parser.value()?.string()?;
                a.methods = list.split(',').map(|s| s.trim().to_string()).collect();
                if let Some(bad) = a.methods.iter().find(|m| !METHODS.contains(&m.as_str())) {
                    return Err(
                        format!("unknown method `{bad}`: expected some of {METHODS:?}").into(),
                    );
                }
            }
            Long("basis") => {
                a.basis = parser
                    .value()?
                    .string()?
                    .split(',')
                    .map(|s| number("--basis", s))
                    .collect::<Result<_, _>>()?;
                if a.basis.contains(&0) {
                    return Err("--basis values must be positive".into());
                }
            }
            Long("reps") => a.reps = number(&flag, &parser.value()?.string()?)?,
            Long("seed") => a.seed = number(&flag, &parser.value()?.string()?)?,
            Long("optimizer") => s.method = Some(optimizer(&parser.value()?.string()?)?),
            Long("iters") => s.iterations = number(&flag, &parser.value()?.string()?)?,
            Long("evals") => s.evaluations = number(&flag, &parser.value()?.string()?)?,
            Long("noise-floor") => s.noise_floor = number(&flag, &parser.value()?.string()?)?,
            Long("full-subset") => {
                s.full_subset = Some(number(&flag, &parser.value()?.string()?)?);
            }
            Long("init") => s.init = lengthscale_init(&parser.value()?.string()?)?,
            Long("restarts") => s.restarts = number(&flag, &parser.value()?.string()?)?,
            Long("standardize") => s.standardize = true,
            Long("best-effort") => s.best_effort = true,
            Long("threads") => s.threads = number(&flag, &parser.value()?.string()?)?,
            Long("kernel") => {
                s.kernel = parse_kernel(&parser.value()?.string()?).map_err(|e| e.to_string())?;
            }
            Long("out") => a.out = PathBuf::from(parser.value()?),
            Long("json") => a.json = true,
            Long("from-csv") => a.from_csv = Some(PathBuf::from(parser.value()?)),
            Long("quiet") => s.progress = false,
            Short('h') | Long("help") => {
                println!("{}", usage());
                std::process::exit(0);
            }
            _ => return Err(cli::unexpected(arg, &usage())),
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
    for (flag, v) in [
        ("--reps", a.reps),
        ("--restarts", a.settings.restarts as u64),
    ] {
        if v == 0 {
            return Err(format!("{flag} must be at least 1").into());
        }
    }
    if a.settings.full_subset == Some(0) {
        return Err("--full-subset must be at least 1".into());
    }
    // Repetitions use seeds S, S+1, …, and each ensemble's members seeds s, s+1, … after theirs.
    let ensembles = a
        .methods
        .iter()
        .any(|m| m == "ssgp-mix" || m == "ssgp-best");
    let members = if ensembles { a.settings.restarts } else { 1 };
    let last = (members as u64 - 1)
        .checked_add(a.reps - 1)
        .and_then(|extra| a.seed.checked_add(extra));
    if last.is_none() {
        return Err(format!(
            "--seed {} with --reps {} and {members} fit(s) per ensemble needs seeds beyond 2^64 − 1",
            a.seed, a.reps
        )
        .into());
    }
    Ok(a)
}

/// Both plots of the successful `runs` into `dir`.
fn plots(dir: &Path, runs: &[Run]) -> Result<(), Box<dyn Error>> {
    for (file, title, value, log_y) in [
        (
            "nmse.svg",
            "NMSE",
            (|r: &Run| r.nmse) as fn(&Run) -> f64,
            true,
        ),
        ("mnlp.svg", "MNLP", |r: &Run| r.mnlp, false),
    ] {
        let path = dir.join(file);
        plot(&path.to_string_lossy(), title, runs, value, log_y)
            .map_err(|e| format!("cannot draw {}: {e}", path.display()))?;
    }
    Ok(())
}

/// `method basis B seed S` (no basis for the full GP).
fn label(r: &Run) -> String {
    let basis = r.basis.map_or(String::new(), |b| format!(" basis {b}"));
    format!("{}{basis} seed {}", r.method, r.seed)
}

fn main() -> ExitCode {
    cli::main("benchmark", benchmark)
}

fn benchmark() -> Result<(), Box<dyn Error>> {
    let args = parse()?;
    let create_out = || {
        std::fs::create_dir_all(&args.out)
            .map_err(|e| format!("cannot create {}: {e}", args.out.display()))
    };
    if let Some(path) = &args.from_csv {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let runs = record::from_csv(&text, &path.to_string_lossy())?;
        if !args.json {
            print_table(&format!("runs of {}", path.display()), &runs);
        }
        create_out()?;
        plots(&args.out, &runs)?;
        eprintln!("redrew {} runs into {}", runs.len(), args.out.display());
        return Ok(());
    }
    check_files(&args.train, &args.test, args.delimiter)?;
    let train = Dataset::from_csv_with(&args.train, &args.csv)?;
    let test = Dataset::from_csv_with(&args.test, &args.csv)?;
    if train.dim() != test.dim() {
        return Err(format!(
            "train has {} inputs but test has {}",
            train.dim(),
            test.dim()
        )
        .into());
    }
    eprintln!(
        "train {} ({} points, D = {}, target {}), test {} ({} points); {} cores",
        args.train.display(),
        train.len(),
        train.dim(),
        args.target,
        args.test.display(),
        test.len(),
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    create_out()?;
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
                let r =
                    run(method, basis, seed, &args.settings, &train, &test).unwrap_or_else(|e| {
                        Run::failed(method, basis, seed, (train.len(), test.len()), e.as_ref())
                    });
                if let Some(e) = &r.error {
                    eprintln!("  {} failed: {e}", label(&r));
                }
                if args.json {
                    println!("{}", r.json());
                }
                runs.push(r);
            }
        }
    }
    if !args.json {
        print_table(&format!("benchmark on {}", args.train.display()), &runs);
    }
    let csv = args.out.join("runs.csv");
    std::fs::write(&csv, record::to_csv(&runs))
        .map_err(|e| format!("cannot write {}: {e}", csv.display()))?;
    let failed: Vec<String> = runs
        .iter()
        .filter_map(|r| Some(format!("  {}: {}", label(r), r.error.as_ref()?)))
        .collect();
    if failed.len() == runs.len() {
        return Err(format!(
            "no fit succeeded (wrote {}, no plots):\n{}",
            csv.display(),
            failed.join("\n")
        )
        .into());
    }
    plots(&args.out, &runs)?;
    eprintln!("wrote {}, nmse.svg, mnlp.svg", csv.display());
    if !failed.is_empty() {
        eprintln!(
            "{} of {} fits failed:\n{}",
            failed.len(),
            runs.len(),
            failed.join("\n")
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    /// `--help` lists every flag the parser takes (the suite's example test cannot run this one:
    /// `cargo test` builds it as a test binary).
    #[test]
    fn help_lists_every_flag() {
        let source = include_str!("main.rs");
        let help = super::usage();
        let mut flags = 0;
        for (at, _) in source.match_indices("Long(\"") {
            let name = &source[at + 6..];
            let name = &name[..name.find('"').unwrap()];
            assert!(
                help.contains(&format!("--{name}")),
                "--{name} is not in the help"
            );
            flags += 1;
        }
        assert!(flags >= 20, "{flags} flags found");
        assert!(help.contains("-h, --help"));
    }

    /// The same file twice, or two files whose headers differ, are refused before any fit; the
    /// same columns in two files, or files without a header, pass (before, the first two were
    /// scored as if tested).
    #[test]
    fn train_and_test_files_are_checked_against_each_other() {
        let dir = std::env::temp_dir().join(format!("ssgp-benchmark-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let write = |name: &str, text: &str| {
            let path = dir.join(name);
            std::fs::write(&path, text).unwrap();
            path
        };
        let train = write("train.csv", "y,a,b\n1,2,3\n");
        let test = write("test.csv", "\"y\", a ,b\n4,5,6\n");
        let swapped = write("swapped.csv", "y,b,a\n4,5,6\n");
        let bare = write("bare.csv", "4,5,6\n");
        let tabbed = write("tabbed.csv", "y\ta\tb\n4\t5\t6\n");
        let check = |a: &std::path::Path, b: &std::path::Path, d: u8| super::check_files(a, b, d);
        assert!(check(&train, &train, b',')
            .unwrap_err()
            .contains("the same file"));
        let relative = dir.join(".").join("train.csv");
        assert!(check(&train, &relative, b',').is_err());
        assert!(check(&train, &swapped, b',')
            .unwrap_err()
            .contains("headers differ"));
        assert!(check(&train, &test, b',').is_ok());
        assert!(check(&train, &bare, b',').is_ok());
        assert!(check(&tabbed, &write("tabbed2.csv", "y\ta\tb\n1\t1\t1\n"), b'\t').is_ok());
        assert_eq!(super::delimiter("tab"), Ok(b'\t'));
        assert_eq!(super::delimiter(";"), Ok(b';'));
        assert!(super::delimiter(";;").is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Headers are compared as the loader reads them: a quoted name may hold the delimiter, a
    /// leading byte-order mark is no part of the first name (before, the lines were split at
    /// every delimiter: `"a,b",c` and `a,"b,c"` compared equal, a name like `"t, 2"` made the
    /// header look like data and skipped the check, and a BOM in one file refused the pair).
    #[test]
    fn headers_are_compared_as_the_loader_reads_them() {
        use ssgp::data::{CsvOptions, Target};
        use ssgp::Dataset;
        let dir = std::env::temp_dir().join(format!("ssgp-benchmark-q-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let write = |name: &str, text: &str| {
            let path = dir.join(name);
            std::fs::write(&path, text).unwrap();
            path
        };
        // Every name read is one the loader finds, and there are as many as it reads columns.
        let check = |a: &std::path::Path, b: &std::path::Path, d: u8| {
            for path in [a, b] {
                let names = super::header_names(path, d).unwrap();
                for name in &names {
                    let csv = CsvOptions::new().delimiter(d).target(Target::named(name));
                    let data = Dataset::from_csv_with(path, &csv).unwrap();
                    assert_eq!(data.dim() + 1, names.len(), "{name:?} in {path:?}");
                }
            }
            super::check_files(a, b, d)
        };
        let differ = |a: &str, b: &str, d: u8| {
            let (a, b) = (write("a.csv", a), write("b.csv", b));
            match check(&a, &b, d) {
                Err(e) => assert!(e.contains("headers differ"), "{e}"),
                Ok(()) => panic!("{a:?} and {b:?} passed"),
            }
        };
        differ("\"a,b\",c,y\n1,2,3\n", "a,\"b,c\",y\n1,2,3\n", b',');
        differ("\"t, 2\",y\n1,2\n", "y,\"t, 2\"\n1,2\n", b',');
        differ("\"a;b\";y\n1;2\n", "\"a;c\";y\n1;2\n", b';');
        let same = |a: &str, b: &str, d: u8| {
            let (a, b) = (write("a.csv", a), write("b.csv", b));
            assert_eq!(check(&a, &b, d), Ok(()));
        };
        same("\"t, °C\",y\n1,2\n", " \"t, °C\" ,y\r\n1,2\n", b',');
        same("\u{feff}y,a\n1,2\n", "y,a\n1,2\n", b',');
        same("\n\"a b\"  y\n1 2\n", "  \"a b\" y \n1 2\n", b' ');
        assert_eq!(
            super::header_names(&write("a.csv", "\"a;b\";\" c \"\n1;2\n"), b';'),
            Some(vec!["a;b".to_string(), " c ".to_string()])
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
