//! Helpers shared by every model's tests: the finite-difference gradient check and the dense
//! formulas the fast ones are checked against.

use nalgebra::{DMatrix, DVector};
use rand::rngs::StdRng;
use rand::Rng;
use ssgp::optim::Objective;
use ssgp::ParamGuard;
use std::path::PathBuf;

/// Checks every entry of the analytic gradient at θ against central differences (h = 1e-5) with
/// the tolerance |Δ_i| ≤ 1e-5·max(|g_i|, 1e-3‖g‖∞); returns the largest |Δ_i| / tolerance.
pub fn check_gradient(objective: &dyn Objective, theta: &DVector<f64>, label: &str) -> f64 {
    let all: Vec<usize> = (0..theta.len()).collect();
    check_gradient_entries(objective, theta, &all, label)
}

/// [`check_gradient`] on the entries `indices` of θ alone (for objectives too costly to
/// difference in every entry); the tolerance's ‖g‖∞ is still over the whole gradient.
pub fn check_gradient_entries(
    objective: &dyn Objective,
    theta: &DVector<f64>,
    indices: &[usize],
    label: &str,
) -> f64 {
    let h = 1e-5;
    let (_, g) = objective.value_and_gradient(theta).unwrap();
    assert_eq!(g.len(), theta.len(), "{label}: gradient length");
    let gmax = g.amax();
    let mut worst = 0.0f64;
    for &i in indices {
        let mut tp = theta.clone();
        tp[i] += h;
        let mut tm = theta.clone();
        tm[i] -= h;
        let fd = (objective.value_and_gradient(&tp).unwrap().0
            - objective.value_and_gradient(&tm).unwrap().0)
            / (2.0 * h);
        let tol = 1e-5 * g[i].abs().max(1e-3 * gmax);
        worst = worst.max((fd - g[i]).abs() / tol);
        assert!(
            (fd - g[i]).abs() <= tol,
            "{label}: θ[{i}]: analytic {} vs finite difference {fd} (|Δ| {:e} > {tol:e})",
            g[i],
            (fd - g[i]).abs()
        );
    }
    worst
}

/// The SE-ARD covariance σ0² exp(−½ Σ_d (a_id − b_jd)²/ℓ_d²) between the rows of `a` and `b`, by
/// its definition (eq. 3).
pub fn se_ard_by_definition(
    a: &DMatrix<f64>,
    b: &DMatrix<f64>,
    lengthscales: &[f64],
    signal_variance: f64,
) -> DMatrix<f64> {
    DMatrix::from_fn(a.nrows(), b.nrows(), |i, j| {
        let s: f64 = (0..a.ncols())
            .map(|d| ((a[(i, d)] - b[(j, d)]) / lengthscales[d]).powi(2))
            .sum();
        signal_variance * (-0.5 * s).exp()
    })
}

/// The SSGP covariance (eq. 6) between the rows of `x` and `z`, by its definition:
/// k(x, z) = (σ0²/m) Σ_r cos(ω_r·(x − z)) with ω_rd = W_rd/ℓ_d (no design matrix involved).
pub fn ssgp_covariance(
    x: &DMatrix<f64>,
    z: &DMatrix<f64>,
    h: &ssgp::ssgp::SsgpHyperparameters,
) -> DMatrix<f64> {
    let (w, ell) = (&h.unit_frequencies, &h.hyper.lengthscales);
    let m = w.nrows();
    DMatrix::from_fn(x.nrows(), z.nrows(), |i, j| {
        let sum: f64 = (0..m)
            .map(|r| {
                (0..x.ncols())
                    .map(|d| w[(r, d)] / ell[d] * (x[(i, d)] - z[(j, d)]))
                    .sum::<f64>()
                    .cos()
            })
            .sum();
        h.hyper.signal_variance / m as f64 * sum
    })
}

/// −log N(y | 0, C) by nalgebra's dense Cholesky.
pub fn dense_neg_log_evidence(c: DMatrix<f64>, y: &DVector<f64>) -> f64 {
    let n = y.len() as f64;
    let chol = c.cholesky().expect("dense covariance is positive definite");
    let alpha = chol.solve(y);
    let log_det = 2.0 * chol.l().diagonal().iter().map(|v| v.ln()).sum::<f64>();
    0.5 * (y.dot(&alpha) + log_det + n * (2.0 * std::f64::consts::PI).ln())
}

/// A path inside the crate.
pub fn manifest(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// One number per line of a file inside the crate.
pub fn read_numbers(rel: &str) -> Vec<f64> {
    let path = manifest(rel);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.trim().parse::<f64>().expect("a number per line"))
        .collect()
}

/// The Kin-40k training set shipped with the crate.
pub fn kin40k_train() -> ssgp::Dataset {
    ssgp::Dataset::from_csv(manifest("data/kin40k/train.csv")).expect("Kin-40k training data")
}

/// Leave-one-out by its definition, for targets `y` (centred) with prior covariance `c` (n×n,
/// noise included): for each i the Gaussian conditional of yᵢ on the other n − 1 targets, by a
/// dense Cholesky of C₋ᵢ,₋ᵢ; returns (mean z², MNLP, NMSE) as `LooDiagnostic` defines them.
pub fn loo_by_definition(c: &DMatrix<f64>, y: &DVector<f64>) -> (f64, f64, f64) {
    let n = y.len();
    let (mut z2, mut nlp, mut sse) = (0.0, 0.0, 0.0);
    for i in 0..n {
        let rest: Vec<usize> = (0..n).filter(|&j| j != i).collect();
        let c_rest = c.select_rows(&rest).select_columns(&rest);
        let k = DVector::from_iterator(n - 1, rest.iter().map(|&j| c[(i, j)]));
        let y_rest = DVector::from_iterator(n - 1, rest.iter().map(|&j| y[j]));
        let chol = c_rest.cholesky().expect("C₋ᵢ is positive definite");
        let mean = k.dot(&chol.solve(&y_rest));
        let var = c[(i, i)] - k.dot(&chol.solve(&k));
        let e = y[i] - mean;
        z2 += e * e / var;
        nlp += 0.5 * (2.0 * std::f64::consts::PI * var).ln() + 0.5 * e * e / var;
        sse += e * e;
    }
    let sst = y.norm_squared();
    (z2 / n as f64, nlp / n as f64, sse / sst)
}

/// FITC's and VFE's test problems: random data (targets centred) and θ = [log ℓ, log σ0, p_n,
/// vec(inducing inputs)] in a well-conditioned range.
pub fn inducing_problem(
    n: usize,
    m: usize,
    dim: usize,
    rng: &mut StdRng,
) -> (DMatrix<f64>, DVector<f64>, DVector<f64>) {
    let x = DMatrix::from_fn(n, dim, |_, _| rng.random_range(-2.0..2.0));
    let y = DVector::from_fn(n, |i, _| {
        (0..dim).map(|d| x[(i, d)]).sum::<f64>().sin() + 0.3 * rng.random_range(-1.0..1.0)
    });
    let y = y.add_scalar(-y.mean());
    let mut theta = DVector::zeros(dim + 2 + m * dim);
    for d in 0..dim {
        theta[d] = rng.random_range(-0.3..0.7);
    }
    theta[dim] = rng.random_range(-0.5..0.5);
    theta[dim + 1] = rng.random_range(-1.5..-0.5);
    for i in dim + 2..theta.len() {
        theta[i] = rng.random_range(-2.0..2.0);
    }
    (x, y, theta)
}

/// The address space the packed gemm (the `private-gemm-x86` crate, on x86-64) reserves on the
/// first thread that runs it, in KiB: two buffers the size of the L3 cache, reserved whatever
/// the product's size (as read from `/sys`, Linux's view of the CPU's own report; 0 where it
/// cannot be read). Mostly never touched, but counted by `ulimit -v`: 520 MiB on a VM that
/// reports a 260 MiB L3, where a 1 GB limit then aborted in the gemm instead of testing the
/// crate's own allocations.
fn packed_gemm_reserve_kib() -> u64 {
    if !cfg!(target_arch = "x86_64") {
        return 0;
    }
    let size = std::fs::read_to_string("/sys/devices/system/cpu/cpu0/cache/index3/size")
        .unwrap_or_default();
    let size = size.trim();
    let kib = match size.strip_suffix('K') {
        Some(k) => k.parse().ok(),
        None => size
            .strip_suffix('M')
            .and_then(|m| m.parse::<u64>().ok())
            .map(|m| m * 1024),
    };
    2 * kib.unwrap_or(0)
}

/// Runs one small packed product on this thread (an SSGP's test phases, 1 000 rows × 8 spectral
/// points), so that the packed gemm takes its reserve ([`packed_gemm_reserve_kib`]) before the
/// test's own allocations, out of the room the limit adds for it.
fn reserve_packed_gemm() {
    let x = DMatrix::from_fn(1000, 1, |i, _| i as f64 / 1000.0);
    let data = ssgp::Dataset::new(x.clone(), x.column(0).map(f64::sin)).expect("a data set");
    let hyper = ssgp::ssgp::SsgpHyperparameters {
        hyper: ssgp::Hyperparameters {
            lengthscales: DVector::from_element(1, 1.0),
            signal_variance: 1.0,
            noise_variance: 0.01,
        },
        unit_frequencies: DMatrix::from_fn(8, 1, |r, _| r as f64 / 4.0 - 1.0),
    };
    let fitted = ssgp::ssgp::Ssgp::params(8)
        .threads(1)
        .check()
        .and_then(|p| p.condition(&data, &hyper))
        .expect("a conditioned SSGP");
    fitted.predict(&x).expect("its predictions");
}

/// Set in the subprocess [`in_memory_limited_child`] runs.
const MEMORY_LIMITED: &str = "SSGP_MEMORY_LIMITED_CHILD";

/// For a test that asks for more memory than it may use: true in a subprocess running the test
/// `name` (its path in this binary, e.g. `"ssgp_model::x"`) alone with its address space limited
/// to `kib` KiB (`ulimit -v`) beyond [`packed_gemm_reserve_kib`], where an allocation beyond the
/// limit fails as on a machine that small; false in the parent, which runs that subprocess and
/// fails unless it exits with success (an aborted allocation, say). The test runs its body only
/// when this is true, on one thread.
pub fn in_memory_limited_child(name: &str, kib: u64) -> bool {
    if std::env::var_os(MEMORY_LIMITED).is_some() {
        reserve_packed_gemm();
        return true;
    }
    let kib = kib + packed_gemm_reserve_kib();
    let out = std::process::Command::new("sh")
        .args([
            "-c",
            r#"ulimit -v "$1" && exec "$0" --exact "$2" --test-threads 1"#,
        ])
        .arg(std::env::current_exe().expect("the test binary's path"))
        .args([kib.to_string(), name.to_owned()])
        .env(MEMORY_LIMITED, "1")
        .output()
        .expect("a shell to run the test under a memory limit");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "{name} under a limit of {kib} KiB: {}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    false
}

/// Asserts that `fit`, trained on `inputs` (fewer than 40) distinct inputs, is overconfident on
/// `test` (mean z² > 2) and says so: `Remedy::FewInputs { inputs, random_features: false }` in
/// its summary and the `few_inputs` flag — the full GP's, FITC's and VFE's tests alike.
pub fn assert_flagged_for_few_inputs(
    fit: &dyn ssgp::FittedRegressor,
    test: &ssgp::Dataset,
    inputs: usize,
) {
    let p = fit.predict(test.x()).unwrap();
    let z2 = ssgp::metrics::calibration(test.y(), &p)
        .unwrap()
        .mean_squared_z;
    assert!(z2 > 2.0, "{}: test mean z² {z2}", fit.name());
    let summary = fit.training();
    let few = ssgp::Remedy::FewInputs {
        inputs,
        random_features: false,
    };
    assert_eq!(summary.remedy, Some(few), "{}", summary.diagnosis());
    assert!(summary.flags().few_inputs, "{}", summary.diagnosis());
}

/// The held-out check's case: `checked` and `unchecked` are the same fit with the check on and
/// off (the same predictions, bit for bit); on `test` its error bars are too narrow (mean z²
/// above 2) while its LOO is not (mean z² below 1.5) and the unchecked fit is unflagged; the
/// checked one's refits, which scored each of its `rows` training rows once, flag it
/// overconfident ([`ssgp::Remedy::HeldOutRefit`]).
pub fn assert_overconfidence_found_by_refits(
    checked: &dyn ssgp::FittedRegressor,
    unchecked: &dyn ssgp::FittedRegressor,
    (test, rows): (&ssgp::Dataset, usize),
) {
    let p = checked.predict(test.x()).unwrap();
    let q = unchecked.predict(test.x()).unwrap();
    assert_eq!((&p.mean, &p.y_variance), (&q.mean, &q.y_variance));
    let z2 = ssgp::metrics::calibration(test.y(), &p)
        .unwrap()
        .mean_squared_z;
    let (summary, name) = (checked.training(), checked.name());
    assert!(z2 > 2.0, "{name}: test mean z² {z2}");
    let loo = summary.diagnostic.unwrap();
    assert!(loo.mean_z2 < 1.5, "{name}: {loo}");
    assert_eq!(unchecked.training().remedy, None, "{name}");
    assert!(!unchecked.training().is_flagged(), "{name}");
    let Some(ssgp::Remedy::HeldOutRefit { held_out }) = summary.remedy else {
        panic!("{name}: {:?}", summary.remedy);
    };
    assert_eq!(held_out.rows, rows, "{name}");
    assert!(held_out.overconfident(), "{name}: {held_out}");
    assert!(
        summary.flags().overconfident,
        "{name}: {}",
        summary.diagnosis()
    );
}
