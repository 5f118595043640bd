//! Every example answers `--help` with its flags and exits 0, and the flags whose checks come
//! before any fit (`sinc --out`, `robot_arm --stream`) refuse bad values first (`cargo test`
//! builds the examples beside this binary, in `target/<profile>/examples/`; `cargo test --test
//! suite` alone does not rebuild them; the benchmark, built as a test binary, checks its own help
//! and files).

use std::path::PathBuf;
use std::process::Command;

/// `target/<profile>/examples/`, next to this test binary's `deps/`.
fn examples_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().parent().unwrap().join("examples")
}

#[test]
fn every_example_answers_help() {
    let mut examples = vec![
        ("sinc", &["--out"][..]),
        (
            "kin40k",
            &[
                "--basis",
                "--evals",
                "--seed",
                "--threads",
                "--kernel",
                "--methods",
            ][..],
        ),
        ("million", &["--n"][..]),
        ("calibration", &["--m", "--first", "--variant"][..]),
        (
            "robot_arm",
            &["--json", "--evaluations", "--stream", "--seed"][..],
        ),
    ];
    // The benchmark is built as a test binary (`test = true`), not beside these: its own unit
    // test checks that its help lists every flag it parses.
    if cfg!(feature = "linfa") {
        examples.push(("linfa", &["--spectral-points", "--evals"][..]));
    }
    if cfg!(feature = "mpi") {
        examples.push((
            "distributed",
            &[
                "--basis",
                "--evals",
                "--seed",
                "--draws",
                "--start",
                "--calibration",
                "--train",
                "--test",
            ][..],
        ));
    }
    for (name, flags) in examples {
        let path = examples_dir().join(name);
        let out = Command::new(&path)
            .current_dir(std::env::temp_dir())
            .arg("--help")
            .output()
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{name} --help: {:?}\n{text}",
            out.status
        );
        for flag in flags.iter().chain(&["--help"]) {
            assert!(
                text.contains(flag),
                "{name} --help does not list {flag}:\n{text}"
            );
        }
        let bad = Command::new(&path)
            .current_dir(std::env::temp_dir())
            .arg("--no-such-flag")
            .output()
            .unwrap();
        assert!(!bad.status.success(), "{name} accepted an unknown flag");
        let said = String::from_utf8_lossy(&bad.stderr);
        assert!(
            said.contains("no-such-flag") && !said.contains("\"--"),
            "{name}: {said}"
        );
    }
}

/// `sinc`'s figure goes by default to the crate's `target/sinc.svg` from any directory, a
/// relative `--out` into the current directory, and an `--out` in a missing directory is refused
/// before any fit, naming the flag (the default was `target/sinc.svg` under the current
/// directory: from anywhere but the crate, it and a missing directory failed after every fit
/// with the drawing backend's "No such file or directory").
#[test]
fn sinc_checks_where_its_figure_goes_before_fitting() {
    let dir = std::env::temp_dir().join(format!("ssgp-sinc-out-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sinc = |args: &[&str]| {
        Command::new(examples_dir().join("sinc"))
            .current_dir(&dir)
            .args(args)
            .output()
            .unwrap()
    };
    let missing = sinc(&["--out", "no-such-dir/fig.svg"]);
    let said = String::from_utf8_lossy(&missing.stderr);
    assert!(!missing.status.success(), "{said}");
    assert!(
        missing.stdout.is_empty(),
        "fitted before refusing: {}",
        String::from_utf8_lossy(&missing.stdout)
    );
    assert!(
        said.contains("--out no-such-dir/fig.svg") && said.contains("does not exist"),
        "{said}"
    );
    let relative = sinc(&["--out", "fig.svg"]);
    assert!(
        relative.status.success(),
        "{}",
        String::from_utf8_lossy(&relative.stderr)
    );
    assert!(dir.join("fig.svg").is_file());
    let default = sinc(&[]);
    let figure = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/sinc.svg");
    assert!(
        default.status.success(),
        "{}",
        String::from_utf8_lossy(&default.stderr)
    );
    assert!(
        String::from_utf8_lossy(&default.stdout).contains(&format!("wrote {}", figure.display())),
        "{}",
        String::from_utf8_lossy(&default.stdout)
    );
    assert!(figure.is_file());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `robot_arm --stream 0` is refused before the batch fit, naming `--stream` and the values it
/// takes (it was "empty data: no test inputs" after the fit); `--stream 1` takes its Jacobian
/// states from the stream, its one sample (the states were the last second before the stream's
/// end, so a stream shorter than a second took them from the batch's period).
#[test]
fn robot_arm_checks_its_stream_and_measures_the_jacobian_on_it() {
    let robot_arm = |args: &[&str]| {
        Command::new(examples_dir().join("robot_arm"))
            .current_dir(std::env::temp_dir())
            .args(args)
            .output()
            .unwrap()
    };
    let empty = robot_arm(&["--stream", "0"]);
    let said = String::from_utf8_lossy(&empty.stderr);
    assert!(!empty.status.success() && empty.stdout.is_empty(), "{said}");
    assert!(
        said.contains("--stream 0") && said.contains("N ≥ 1"),
        "{said}"
    );
    let one = robot_arm(&["--stream", "1", "--evaluations", "1", "--json"]);
    let text = String::from_utf8_lossy(&one.stdout);
    assert!(
        one.status.success(),
        "{}",
        String::from_utf8_lossy(&one.stderr)
    );
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{text}");
    for line in &lines {
        assert_eq!(line["jacobian_states"], 1, "{line}");
        assert!(
            line["jacobian_rel_err"].as_f64().unwrap().is_finite(),
            "{line}"
        );
    }
}
