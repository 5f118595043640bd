//! A seeded fit gives the same bits on any number of threads: through the crate's own thread
//! setting, and through the size of rayon's global pool (`RAYON_NUM_THREADS`, in a subprocess:
//! rayon fixes its global pool at first use).

use nalgebra::{DMatrix, DVector};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use ssgp::init::LengthscaleInit;
use ssgp::optim::Method;
use ssgp::{Dataset, Fitc, FittedRegressor, FullGp, Regressor, Ssgp, Vfe};
use std::process::Command;

/// Set in the subprocess that prints its fingerprints.
const CHILD: &str = "SSGP_THREADS_TEST_CHILD";

/// `n` points, 3 inputs, and 50 test inputs.
fn problem(n: usize) -> (Dataset, DMatrix<f64>) {
    let mut rng = StdRng::seed_from_u64(21);
    let x = DMatrix::from_fn(n, 3, |_, _| rng.random_range(-2.0..2.0));
    let y = DVector::from_fn(n, |i, _| {
        f64::sin(x[(i, 0)]) * f64::cos(0.5 * x[(i, 1)])
            + 0.3 * x[(i, 2)]
            + 0.05 * rng.random_range(-1.0..1.0)
    });
    let test = DMatrix::from_fn(50, 3, |_, _| rng.random_range(-2.5..2.5));
    (Dataset::new(x, y).unwrap(), test)
}

/// The models with `threads` threads (`None`: the default, all of rayon's), and the size
/// of their training set: 8000 rows for SSGP (with m = 100, six row blocks of two chunks each,
/// summed in parallel; with fixed spectral points m = 50, two blocks), 600 for SSGP in one block
/// (m = 20, with its calibration check; its evaluations run on the pool), FITC, VFE trained by
/// L-BFGS and the full GP (whose start, a full GP on a subset, SSGP shares).
fn models(threads: Option<usize>) -> Vec<(&'static str, usize, Box<dyn Regressor>)> {
    let t = threads.unwrap_or(0);
    vec![
        (
            "ssgp",
            8000,
            Box::new(
                Ssgp::params(100)
                    .seed(3)
                    .initial_draws(3)
                    .chunk_rows(1000)
                    .lengthscale_init(LengthscaleInit::HalfRange)
                    .max_evaluations(40)
                    .threads(t),
            ),
        ),
        (
            "ssgp-fixed",
            8000,
            Box::new(
                Ssgp::params(50)
                    .seed(3)
                    .initial_draws(3)
                    .fixed_spectral_points(true)
                    .lengthscale_init(LengthscaleInit::HalfRange)
                    .max_evaluations(40)
                    .threads(t),
            ),
        ),
        (
            "ssgp-one-block",
            600,
            Box::new(
                Ssgp::params(20)
                    .seed(3)
                    .initial_draws(3)
                    .lengthscale_init(LengthscaleInit::HalfRange)
                    .max_evaluations(40)
                    .threads(t),
            ),
        ),
        (
            "fitc",
            600,
            Box::new(Fitc::params(15).seed(3).max_evaluations(150).threads(t)),
        ),
        (
            "vfe-lbfgs",
            600,
            Box::new(
                Vfe::params(15)
                    .seed(3)
                    .optimizer(Method::Lbfgs { memory: 50 })
                    .max_evaluations(150)
                    .threads(t),
            ),
        ),
        (
            "full",
            600,
            Box::new(FullGp::params().max_evaluations(60).threads(t)),
        ),
    ]
}

/// One line per model: the bits of the fitted −log p, of every prediction and variance.
fn fingerprints(threads: Option<usize>) -> Vec<String> {
    models(threads)
        .into_iter()
        .map(|(name, n, model)| {
            let (train, test) = problem(n);
            let fitted = model.fit_boxed(&train).unwrap();
            let pred = fitted.predict(&test).unwrap();
            let bits: Vec<String> = std::iter::once(fitted.neg_log_evidence())
                .chain(pred.mean.iter().copied())
                .chain(pred.y_variance.iter().copied())
                .map(|v| format!("{:016x}", v.to_bits()))
                .collect();
            format!("{name} {}", bits.join(""))
        })
        .collect()
}

#[test]
fn the_same_fit_on_one_two_and_three_threads() {
    let one = fingerprints(Some(1));
    let mut bad = vec![];
    for t in [2, 3] {
        for (a, b) in one.iter().zip(fingerprints(Some(t))) {
            if *a != b {
                bad.push(format!("{} on {t} threads", &a[..a.find(' ').unwrap()]));
            }
        }
    }
    assert!(bad.is_empty(), "{bad:?}");
}

#[test]
fn the_same_fit_on_any_size_of_rayons_pool() {
    if std::env::var_os(CHILD).is_some() {
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let run = |pool: usize| -> Vec<String> {
        let out = Command::new(&exe)
            .args([
                "--exact",
                "threads::fingerprints_of_this_process",
                "--nocapture",
            ])
            .args(["--test-threads", "1"])
            .env(CHILD, "1")
            .env("RAYON_NUM_THREADS", pool.to_string())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            // libtest may print "test … ... " before the first line on the same line.
            .filter_map(|l| l.split_once("FINGERPRINT ").map(|(_, f)| f.to_owned()))
            .collect();
        assert_eq!(lines.len(), models(None).len(), "{lines:?}");
        lines
    };
    let one = run(1);
    for pool in [2, 3] {
        for (a, b) in one.iter().zip(run(pool)) {
            assert_eq!(*a, b, "RAYON_NUM_THREADS={pool}");
        }
    }
}

/// Prints the default-setting fingerprints when run as the subprocess of the test above.
#[test]
fn fingerprints_of_this_process() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    for line in fingerprints(None) {
        println!("FINGERPRINT {line}");
    }
}
