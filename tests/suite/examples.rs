//! Every example answers `--help` with its flags and exits 0 (`cargo test` builds the examples
//! beside this binary, in `target/<profile>/examples/`; the benchmark, built as a test binary,
//! checks its own help).

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
