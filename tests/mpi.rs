//! SSGP across MPI ranks against the single-process code, on Kin-40k (feature `mpi`).
//!
//! A `harness = false` test: MPI initialises once per process, so this binary re-executes itself
//! under `mpirun` (`--oversubscribe --bind-to none`, one thread per rank, `--allow-run-as-root`
//! through Open MPI's environment variables, `MPIEXEC_TIMEOUT` against hangs) for 1, 2 and 4
//! ranks; the child (the environment variable `SSGP_MPI_TEST` names its check) loads its share of
//! the rows and reports through its exit code.
//!
//! - `evidence`: at the reference θ of `tests/data/reference/` (m = 100, all 10000 rows) the
//!   distributed −log p(y|θ) and ∇θ equal the single-process ones to 1e-12 (value relative to
//!   itself, gradient as max|Δg| / max|g|, as `tests/suite/reference.rs` measures);
//! - `training`: a short fit (m = 25, half-range start, 5 draws, 60 evaluations) gives the same
//!   model and LOO diagnostic on every rank, close to the single-process fit's;
//! - `check`: the default fit runs the calibration check across the ranks (each rank holding out
//!   half its rows): on wide data (n = 2 400, D = 30, 10 relevant inputs) it keeps the
//!   random-feature fit, or the training mean it hardly beats, where the learned one is
//!   overconfident on test data (mean z² above 5; the check's below 1.5), on D = 5 it keeps the learned fit's means bit for bit and its
//!   test mean z² no further from 1 (the fit on all rows is narrowed no further than the noise
//!   level its proxy's held-out rows measured: at these 200 evaluations its σn² is below that
//!   level already, and on one rank it is kept at ×1, test z² 0.42), and with noise 100 times the signal it keeps the training mean
//!   (every prediction ȳ); the same model and held-out score on every rank; on 150 and 30 rows
//!   (fewer than 100 held out) the fit is flagged for too few inputs, as one process's;
//! - `disagreement`: when the last rank cannot read its file, or its data have another D, every
//!   rank returns an error (none waits forever in a collective); with m = 2·10⁶ the fit and the
//!   evidence are an allocation error on every rank (before, an abort);
//! - `settings`: ranks given a different m, number of draws, fixed spectral points, noise floor,
//!   seed, budget, kernel or calibration guard all return `Error::Distributed` naming the setting (before, a
//!   different m aborted the job with `MPI_ERR_TRUNCATE` and a different noise floor returned
//!   different models); threads and cache sizes may differ;
//! - `targets`: constant targets, targets of a spread no fit takes, a CSV of fewer rows than
//!   ranks and the LOO diagnostic on n ≤ 4m rows, as one process has them, on every rank;
//! - `shares`: three ranks of 10, 500 and 1 500 rows: the evidence and gradient at a θ as one
//!   process's to 1e-12, the learned fit as one process's on the same rows (the same
//!   evaluations, −log p to 1e-9), the default check holding out every rank's half (1 005 rows),
//!   the same model on every rank;
//! - `no-held-out`: the check where a rank holds out no rows (one row, on the root or the last
//!   rank; four rows at one input): it completes with the others' halves, the same verdict on
//!   every rank;
//! - `subset`: the full-GP start where a rank's share of the subset is 0 rows (the root, then
//!   rank 1): the fit is one process's from the lengthscales learned on the documented subset,
//!   also where that rank's rows alone vary in an input or in the targets (before, the start
//!   failed on every rank: a constant input, constant targets).

use ssgp::data::{Problem, Roughness};
use ssgp::distributed::{load_csv_share, row_share, Cluster};
use ssgp::full_gp::START_TOLERANCE;
use ssgp::metrics::calibration;
use ssgp::mpi::collective::SystemOperation;
use ssgp::mpi::traits::{Communicator, CommunicatorCollectives, Root};
use ssgp::nalgebra::DVector;
use ssgp::optim::{Objective, OptimConfig};
use ssgp::params::DEFAULT_RELATIVE_NOISE_FLOOR;
use ssgp::ssgp::CalibrationGuard;
use ssgp::{
    data::CsvOptions, Dataset, FittedSsgp, FullGp, HeldOutCalibration, LengthscaleInit, ParamGuard,
    Remedy, Ssgp,
};
use std::path::PathBuf;
use std::process::{Command, ExitCode};
use std::time::Instant;

const CHILD: &str = "SSGP_MPI_TEST";

fn manifest(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn main() -> ExitCode {
    match std::env::var(CHILD) {
        Ok(check) => child(&check),
        Err(_) => parent(),
    }
}

/// Runs `check` under `mpirun -np ranks`; whether it passed.
fn launch(check: &str, ranks: usize) -> bool {
    let started = Instant::now();
    let out = Command::new(std::env::var("MPIRUN").unwrap_or_else(|_| "mpirun".into()))
        .args(["--oversubscribe", "--bind-to", "none", "-np"])
        .arg(ranks.to_string())
        .args(["-x", CHILD, "-x", "RAYON_NUM_THREADS"])
        .arg(std::env::current_exe().expect("the test binary's path"))
        .env(CHILD, check)
        .env("RAYON_NUM_THREADS", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_pml", "ob1")
        .env("MPIEXEC_TIMEOUT", "300")
        .output();
    let ok = match out {
        Ok(out) => {
            print!("{}", String::from_utf8_lossy(&out.stdout));
            if !out.status.success() {
                eprint!("{}", String::from_utf8_lossy(&out.stderr));
            }
            out.status.success()
        }
        Err(e) => {
            eprintln!("cannot run mpirun: {e}");
            false
        }
    };
    println!(
        "test {check} on {ranks} rank(s) ... {} ({:.1} s)",
        if ok { "ok" } else { "FAILED" },
        started.elapsed().as_secs_f64()
    );
    ok
}

fn parent() -> ExitCode {
    let mut failed = 0;
    for ranks in [1, 2, 4] {
        failed += usize::from(!launch("evidence", ranks));
    }
    for ranks in [2, 4] {
        failed += usize::from(!launch("training", ranks));
    }
    for ranks in [1, 3] {
        failed += usize::from(!launch("check", ranks));
    }
    failed += usize::from(!launch("disagreement", 3));
    failed += usize::from(!launch("settings", 2));
    failed += usize::from(!launch("targets", 3));
    for check in ["shares", "no-held-out", "subset", "observer"] {
        failed += usize::from(!launch(check, 3));
    }
    println!("mpi: {} passed, {failed} failed", 14 - failed);
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn child(check: &str) -> ExitCode {
    let Some(universe) = ssgp::mpi::initialize() else {
        eprintln!("MPI was initialised already");
        return ExitCode::FAILURE;
    };
    let world = universe.world();
    let cluster = Cluster::new(universe.world());
    let outcome = match check {
        "evidence" => evidence(&cluster),
        "training" => training(&cluster),
        "check" => calibration_check(&cluster),
        "disagreement" => disagreement(&cluster),
        "settings" => settings(&cluster),
        "targets" => targets(&cluster),
        "shares" => shares(&cluster),
        "no-held-out" => no_held_out(&cluster),
        "subset" => subset(&cluster),
        "observer" => observer(&cluster),
        other => Err(format!("unknown check {other}")),
    };
    if let Err(e) = &outcome {
        eprintln!("rank {}: {e}", cluster.rank());
    }
    // Every rank's verdict, so all ranks exit alike.
    let mut failed = 0i32;
    world.all_reduce_into(
        &i32::from(outcome.is_err()),
        &mut failed,
        SystemOperation::max(),
    );
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn train_csv() -> PathBuf {
    manifest("data/kin40k/train.csv")
}

/// The distributed evidence at the reference θ against the single-process one.
fn evidence(cluster: &Cluster) -> Result<(), String> {
    let local =
        load_csv_share(train_csv(), &CsvOptions::new(), cluster).map_err(|e| e.to_string())?;
    let text =
        std::fs::read_to_string(manifest("tests/data/reference/ssgp_kin40k_m100_params.csv"))
            .map_err(|e| e.to_string())?;
    let theta: Vec<f64> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.trim().parse::<f64>().map_err(|e| e.to_string()))
        .collect::<Result<_, _>>()?;
    let theta = DVector::from_vec(theta);
    let params = Ssgp::params(100).check().map_err(|e| e.to_string())?;
    let distributed = params
        .distributed_evidence(&local, cluster)
        .map_err(|e| e.to_string())?;
    let (value, grad) = distributed
        .value_and_gradient(&theta)
        .map_err(|e| e.to_string())?;
    let value_only = distributed.value(&theta).map_err(|e| e.to_string())?;
    let all = Dataset::from_csv(train_csv()).map_err(|e| e.to_string())?;
    let single = params.evidence(&all).map_err(|e| e.to_string())?;
    let (v1, g1) = single
        .value_and_gradient(&theta)
        .map_err(|e| e.to_string())?;
    let rel = (value - v1).abs() / v1.abs();
    let g_err = (&grad - &g1).amax() / g1.amax();
    if cluster.is_root() {
        println!(
            "  {} rank(s), {} rows on rank 0: −log p {value:.12} vs {v1:.12} (rel {rel:.2e}), \
             gradient rel {g_err:.2e}",
            cluster.size(),
            local.len()
        );
    }
    if local.len() == all.len() && cluster.size() > 1 {
        return Err("a rank loaded every row".into());
    }
    if value_only != value {
        return Err(format!(
            "value alone {value_only} ≠ {value} with the gradient"
        ));
    }
    if !(rel <= 1e-12 && g_err <= 1e-12) {
        return Err(format!(
            "value rel {rel:e}, gradient rel {g_err:e} above 1e-12"
        ));
    }
    Ok(())
}

/// A short distributed fit: the same model on every rank, close to the single-process fit.
fn training(cluster: &Cluster) -> Result<(), String> {
    let local =
        load_csv_share(train_csv(), &CsvOptions::new(), cluster).map_err(|e| e.to_string())?;
    // The distributed fit is the learned fit (no calibration check), so the single-process fit
    // it is compared with below is too.
    let params = Ssgp::params(25)
        .seed(3)
        .initial_draws(5)
        .max_evaluations(60)
        .lengthscale_init(LengthscaleInit::HalfRange)
        .calibration(CalibrationGuard::Off)
        .check()
        .map_err(|e| e.to_string())?;
    let fit = params
        .fit_distributed(&local, cluster)
        .map_err(|e| e.to_string())?;
    let model = &fit.model;
    // Every rank's θ and −log p, bit for bit: their maxima equal their minima.
    let mut mine: Vec<f64> = model.parameters().iter().copied().collect();
    mine.push(model.neg_log_evidence());
    let loo = model
        .training()
        .diagnostic
        .ok_or("the distributed fit has no LOO diagnostic")?;
    mine.extend([loo.mean_z2, loo.mnlp, loo.nmse]);
    let (mut hi, mut lo) = (mine.clone(), mine.clone());
    let world = ssgp::mpi::topology::SimpleCommunicator::world();
    world.all_reduce_into(&mine[..], &mut hi[..], SystemOperation::max());
    world.all_reduce_into(&mine[..], &mut lo[..], SystemOperation::min());
    if hi != lo {
        return Err("the ranks hold different models".into());
    }
    let all = Dataset::from_csv(train_csv()).map_err(|e| e.to_string())?;
    let single = params.fit(&all).map_err(|e| e.to_string())?;
    let (d, s) = (model.neg_log_evidence(), single.neg_log_evidence());
    let rel = (d - s).abs() / s.abs();
    if cluster.is_root() {
        println!(
            "  {} rank(s): −log p {d:.6} vs single process {s:.6} (rel {rel:.1e}); {} evaluations \
             vs {}; {} bytes in {} collectives",
            cluster.size(),
            model.training().evaluations,
            single.training().evaluations,
            fit.traffic.bytes,
            fit.traffic.collectives
        );
    }
    let single_loo = single
        .training()
        .diagnostic
        .ok_or("no single-process diagnostic")?;
    let loo_rel = (loo.mnlp - single_loo.mnlp).abs() / single_loo.mnlp.abs();
    if cluster.is_root() {
        println!("  LOO: {loo} vs single process {single_loo} (MNLP rel {loo_rel:.1e})");
    }
    if loo_rel > 1e-6 {
        return Err(format!(
            "LOO {loo} against the single process's {single_loo}"
        ));
    }
    if model.training().evaluations != single.training().evaluations || rel > 1e-9 {
        return Err(format!(
            "the distributed fit ({d}, {} evaluations) is not the single-process one ({s}, {})",
            model.training().evaluations,
            single.training().evaluations
        ));
    }
    Ok(())
}

/// Whether every rank holds `values` bit for bit (their maxima over the ranks equal their minima).
fn same_on_every_rank(values: &[f64]) -> bool {
    let (mut hi, mut lo) = (values.to_vec(), values.to_vec());
    let world = ssgp::mpi::topology::SimpleCommunicator::world();
    world.all_reduce_into(values, &mut hi[..], SystemOperation::max());
    world.all_reduce_into(values, &mut lo[..], SystemOperation::min());
    hi == lo
}

/// The default fit's calibration check across the ranks, against the learned fit alone.
fn calibration_check(cluster: &Cluster) -> Result<(), String> {
    let text = |e: ssgp::Error| e.to_string();
    for (dim, relevant, noise) in [(30, 10, 0.1), (5, 5, 0.1), (5, 5, 100.0)] {
        let problem = Problem {
            n: 2400,
            dim,
            relevant,
            roughness: Roughness::Smooth,
            noise,
            seed: 7,
        };
        let (all, test) = problem.generate(1000).map_err(text)?;
        let rows: Vec<usize> = row_share(all.len(), cluster.rank(), cluster.size()).collect();
        let local = all.subset(&rows).map_err(text)?;
        let base = Ssgp::params(50)
            .seed(1)
            .max_evaluations(200)
            .lengthscale_init(LengthscaleInit::HalfRange);
        let fit = |params: ssgp::SsgpParams| -> Result<FittedSsgp, String> {
            let params = params.check().map_err(text)?;
            Ok(params.fit_distributed(&local, cluster).map_err(text)?.model)
        };
        let alone = fit(base.clone().calibration(CalibrationGuard::Off))?;
        let checked = fit(base)?;
        // Each rank holds out half its rows (no input repeats).
        let mut expected = [(rows.len() / 2) as f64];
        let world = ssgp::mpi::topology::SimpleCommunicator::world();
        let mine = expected;
        world.all_reduce_into(&mine[..], &mut expected[..], SystemOperation::sum());
        let (held, variance_scale) =
            held_out_everywhere(&checked, expected[0] as usize, &format!("D = {dim}"))?;
        let z2 = |model: &FittedSsgp| -> Result<f64, String> {
            let p = model.predict(test.x()).map_err(text)?;
            Ok(calibration(test.y(), &p).map_err(text)?.mean_squared_z)
        };
        let (z2_alone, z2_checked) = (z2(&alone)?, z2(&checked)?);
        let random_features = checked
            .training()
            .remedy
            .is_some_and(|r| r.random_features());
        if cluster.is_root() {
            println!(
                "  {} rank(s), D = {dim}, noise {noise}: test mean z² {z2_alone:.2} alone, \
                 {z2_checked:.2} checked ({}, factor {variance_scale:.3}, held-out z² {:.2} on \
                 {} rows)",
                cluster.size(),
                checked
                    .training()
                    .remedy
                    .map_or(String::new(), |r| r.to_string()),
                held.mean_z2,
                held.rows
            );
        }
        let mean_kept = checked.training().remedy.is_some_and(|r| r.mean_kept());
        if noise > 1.0 {
            let means = checked.predict_mean(test.x()).map_err(text)?;
            if !mean_kept || means.iter().any(|&m| m != checked.y_mean()) {
                return Err(format!(
                    "noise 100× the signal: the training mean kept: {mean_kept}"
                ));
            }
        } else if dim == 30 {
            // The random-feature fit, or the mean it hardly beats: not the learned fit.
            if !((random_features || mean_kept) && z2_alone > 5.0 && z2_checked < 1.5) {
                return Err(format!(
                    "D = 30: the learned fit alone at test z² {z2_alone}, the checked fit \
                     (random features: {random_features}, the mean: {mean_kept}) at {z2_checked}"
                ));
            }
        } else {
            let same_means = alone.predict_mean(test.x()).map_err(text)?
                == checked.predict_mean(test.x()).map_err(text)?;
            if mean_kept
                || random_features
                || !same_means
                || z2_checked.ln().abs() > z2_alone.ln().abs()
            {
                return Err(format!(
                    "D = 5: the learned fit's means kept: {same_means}; test z² {z2_alone} \
                     alone, {z2_checked} checked"
                ));
            }
        }
    }
    few_rows(cluster)?;
    spike(cluster)
}

/// Targets 0 but for one row (600 rows over the ranks): the fit succeeds on every seed, the
/// same model on every rank. The check's held-out half took the spike on about half the seeds,
/// leaving the training mean a variance of 0 on every rank ("predictive variance 0 is not
/// positive"); the ranks now move their seeds on together while the rows left to train on have
/// constant targets over all of them.
fn spike(cluster: &Cluster) -> Result<(), String> {
    let text = |e: ssgp::Error| e.to_string();
    let n = 600;
    let x = ssgp::nalgebra::DMatrix::from_fn(n, 1, |i, _| i as f64);
    let y = DVector::from_fn(n, |i, _| if i == 7 { 1.0 } else { 0.0 });
    let all = Dataset::new(x, y).map_err(text)?;
    let rows: Vec<usize> = row_share(all.len(), cluster.rank(), cluster.size()).collect();
    let local = all.subset(&rows).map_err(text)?;
    for seed in 0..6 {
        let params = Ssgp::params(10)
            .seed(seed)
            .max_evaluations(30)
            .lengthscale_init(LengthscaleInit::HalfRange)
            .check()
            .map_err(text)?;
        let model = params
            .fit_distributed(&local, cluster)
            .map_err(|e| format!("one spike, seed {seed}: {e}"))?
            .model;
        let mut mine: Vec<f64> = model.parameters().iter().copied().collect();
        mine.push(model.neg_log_evidence());
        if !same_on_every_rank(&mine) {
            return Err(format!(
                "one spike, seed {seed}: the ranks hold different models"
            ));
        }
    }
    if cluster.is_root() {
        println!(
            "  {} rank(s), one spike in {n} rows: seeds 0–5 fitted",
            cluster.size()
        );
    }
    Ok(())
}

/// Below 100 held-out rows over all ranks the distributed fit is flagged for too few inputs, as
/// one process's below 40 distinct inputs: the learned fit judged by its LOO on 150 rows, the
/// random-feature fit kept without it on 30 rows (no more than m·D = 100); the ranks' distinct
/// inputs summed; the same model on every rank. (Before, both were `LooChecked`, unflagged.)
fn few_rows(cluster: &Cluster) -> Result<(), String> {
    let text = |e: ssgp::Error| e.to_string();
    for n in [150, 30] {
        let problem = Problem {
            n,
            dim: 2,
            relevant: 2,
            roughness: Roughness::Smooth,
            noise: 0.1,
            seed: 8,
        };
        let (all, _) = problem.generate(10).map_err(text)?;
        let rows: Vec<usize> = row_share(all.len(), cluster.rank(), cluster.size()).collect();
        let local = all.subset(&rows).map_err(text)?;
        let params = Ssgp::params(50).seed(1).max_evaluations(200);
        let fitted = params
            .check()
            .map_err(text)?
            .fit_distributed(&local, cluster)
            .map_err(text)?
            .model;
        let summary = fitted.training();
        let Some(Remedy::FewInputs {
            inputs,
            random_features,
        }) = summary.remedy
        else {
            return Err(format!("n = {n}: {:?}", summary.remedy));
        };
        if inputs != n || !summary.flags().few_inputs || !summary.is_flagged() {
            return Err(format!("n = {n}: {inputs} inputs, {}", summary.diagnosis()));
        }
        if n == 30 && !(random_features && fitted.fixed_spectral_points()) {
            return Err("n = 30: the random-feature fit not kept".into());
        }
        let mut mine: Vec<f64> = fitted.parameters().iter().copied().collect();
        mine.push(fitted.neg_log_evidence());
        if !same_on_every_rank(&mine) {
            return Err(format!("n = {n}: the ranks hold different models"));
        }
    }
    Ok(())
}

/// The last rank cannot read its file, then drops an input column: every rank must return an
/// error each time, none may hang.
fn disagreement(cluster: &Cluster) -> Result<(), String> {
    let last = cluster.rank() + 1 == cluster.size();
    let path = if last {
        manifest("data/kin40k/no-such-file.csv")
    } else {
        train_csv()
    };
    match load_csv_share(path, &CsvOptions::new(), cluster) {
        Ok(_) => return Err("a load that failed on one rank succeeded on this one".into()),
        Err(e) if cluster.is_root() => {
            println!("  {} ranks, one without its file: {e}", cluster.size())
        }
        Err(_) => {}
    }
    let mut local =
        load_csv_share(train_csv(), &CsvOptions::new(), cluster).map_err(|e| e.to_string())?;
    if last {
        let d = local.dim();
        local = Dataset::new(local.x().columns(0, d - 1).into_owned(), local.y().clone())
            .map_err(|e| e.to_string())?;
    }
    let params = Ssgp::params(10)
        .initial_draws(2)
        .max_evaluations(5)
        .lengthscale_init(LengthscaleInit::HalfRange)
        .check()
        .map_err(|e| e.to_string())?;
    match params.fit_distributed(&local, cluster) {
        Ok(_) => return Err("a fit on data of two different D succeeded".into()),
        Err(e) if cluster.is_root() => {
            println!("  {} ranks, one with another D: {e}", cluster.size())
        }
        Err(_) => {}
    }
    // m = 2·10⁶ (a 4·10⁶×4·10⁶ factor): an allocation error on every rank, never an abort.
    let local =
        load_csv_share(train_csv(), &CsvOptions::new(), cluster).map_err(|e| e.to_string())?;
    let huge = Ssgp::params(2_000_000)
        .initial_draws(2)
        .max_evaluations(5)
        .lengthscale_init(LengthscaleInit::HalfRange)
        .check()
        .map_err(|e| e.to_string())?;
    let outcomes = [
        ("fit", huge.fit_distributed(&local, cluster).map(drop)),
        (
            "evidence",
            huge.distributed_evidence(&local, cluster).map(drop),
        ),
    ];
    for (what, outcome) in outcomes {
        match outcome {
            Err(ssgp::Error::Allocation { .. }) if cluster.is_root() => {
                println!(
                    "  {} ranks, m = 2·10⁶, the {what}: an allocation error",
                    cluster.size()
                )
            }
            Err(ssgp::Error::Allocation { .. }) => {}
            other => return Err(format!("m = 2·10⁶, the {what}: {:?}", other.err())),
        }
    }
    Ok(())
}

/// What one process's fit refuses or computes on few rows, the distributed fit does alike on
/// every rank: constant targets whose all-reduced mean is off by round-off are
/// `ConstantTargets` and targets of spread 1e80, 1e-70 or 1e-200 are `Error::Scale` (before,
/// the distributed fit trained on them); a CSV of fewer data rows than ranks is `EmptyCsv` on
/// every rank (before, one rank's `InvalidParameter`); on n ≤ 4m rows the LOO diagnostic is one
/// process's n×n form of the same model (before, the hat matrix's diagonal, which cancels
/// there).
fn targets(cluster: &Cluster) -> Result<(), String> {
    let text = |e: ssgp::Error| e.to_string();
    let n = 60;
    let x = ssgp::nalgebra::DMatrix::from_fn(n, 2, |i, j| ((i * (j + 3)) % 17) as f64 / 4.0);
    let wave = DVector::from_fn(n, |i, _| (0.37 * i as f64).sin());
    let rows: Vec<usize> = row_share(n, cluster.rank(), cluster.size()).collect();
    let params = Ssgp::params(10)
        .max_evaluations(5)
        .lengthscale_init(LengthscaleInit::HalfRange)
        .check()
        .map_err(text)?;
    let cases = [
        (
            "constant 0.1",
            DVector::from_element(n, 0.1),
            "ConstantTargets",
        ),
        ("spread 1e80", &wave * 1e80, "Scale"),
        ("spread 1e-70", &wave * 1e-70, "Scale"),
        ("spread 1e-200", &wave * 1e-200, "Scale"),
    ];
    for (what, y, expected) in cases {
        let all = Dataset::new(x.clone(), y).map_err(text)?;
        let single = params.fit(&all).err().map(|e| e.variant());
        let local = all.subset(&rows).map_err(text)?;
        let distributed = params.fit_distributed(&local, cluster).err();
        let kind = distributed.as_ref().map(|e| e.variant());
        if single != Some(expected) || kind != Some(expected) {
            return Err(format!(
                "{what}: one process {single:?}, distributed {:?} (expected {expected})",
                distributed.map(|e| e.to_string())
            ));
        }
        if cluster.is_root() {
            println!(
                "  {} ranks, {what}: {}",
                cluster.size(),
                distributed.map_or_else(String::new, |e| e.to_string())
            );
        }
    }
    // Two data rows for three ranks.
    // Rank 0's process id names the file on every rank.
    let world = ssgp::mpi::topology::SimpleCommunicator::world();
    let mut pid = [f64::from(std::process::id())];
    world.process_at_rank(0).broadcast_into(&mut pid[..]);
    let csv = std::env::temp_dir().join(format!("ssgp-mpi-two-rows-{}.csv", pid[0]));
    if cluster.is_root() {
        std::fs::write(&csv, "x,y\n1,2\n3,4\n").map_err(|e| e.to_string())?;
    }
    world.barrier();
    let loaded = load_csv_share(&csv, &CsvOptions::new(), cluster);
    world.barrier();
    if cluster.is_root() {
        std::fs::remove_file(&csv).map_err(|e| e.to_string())?;
    }
    match loaded {
        Err(ssgp::Error::EmptyCsv { .. }) => {}
        other => return Err(format!("two rows on three ranks: {:?}", other.err())),
    }
    // n = 60 ≤ 4m = 200.
    let problem = Problem {
        n,
        dim: 2,
        relevant: 2,
        roughness: Roughness::Smooth,
        noise: 1e-6,
        seed: 3,
    };
    let (all, _) = problem.generate(10).map_err(text)?;
    let local = all.subset(&rows).map_err(text)?;
    let params = Ssgp::params(50)
        .seed(1)
        .max_evaluations(100)
        .lengthscale_init(LengthscaleInit::HalfRange)
        .calibration(CalibrationGuard::Off)
        .check()
        .map_err(text)?;
    let model = params.fit_distributed(&local, cluster).map_err(text)?.model;
    // The same model in one process: conditioned on every row at the distributed fit's θ.
    let single = params
        .condition(&all, model.hyperparameters())
        .map_err(text)?;
    let (Some(d), Some(s)) = (model.training().diagnostic, single.training().diagnostic) else {
        return Err("n = 60, m = 50: a model without its LOO diagnostic".into());
    };
    let rel = |a: f64, b: f64| (a - b).abs() / b.abs();
    let worst = rel(d.mean_z2, s.mean_z2)
        .max(rel(d.mnlp, s.mnlp))
        .max(rel(d.nmse, s.nmse));
    if cluster.is_root() {
        println!("  n = 60, m = 50: {d} vs one process's {s} (worst rel {worst:.1e})");
    }
    // The same form on the same rows differs by the order of the ranks' sums only (3.6e-15 on
    // the day it was written); the hat matrix's diagonal differed by 4.3e-13.
    if worst > 5e-14 || !same_on_every_rank(&[d.mean_z2, d.mnlp, d.nmse]) {
        return Err(format!("n = 60, m = 50: LOO {d} against one process's {s}"));
    }
    Ok(())
}

/// Rank 1 differs from rank 0 in one setting at a time: every rank returns `Error::Distributed`
/// naming it, from the fit and from the evidence; threads and cache sizes may differ.
fn settings(cluster: &Cluster) -> Result<(), String> {
    let local =
        load_csv_share(train_csv(), &CsvOptions::new(), cluster).map_err(|e| e.to_string())?;
    let local = Dataset::new(
        local.x().rows(0, 200).into_owned(),
        local.y().rows(0, 200).into_owned(),
    )
    .map_err(|e| e.to_string())?;
    let odd = cluster.rank() == 1;
    let base = || {
        Ssgp::params(10)
            .initial_draws(2)
            .max_evaluations(5)
            .lengthscale_init(LengthscaleInit::HalfRange)
    };
    let variants: Vec<(&str, ssgp::SsgpParams)> = vec![
        (
            "m",
            if odd {
                Ssgp::params(12)
                    .initial_draws(2)
                    .max_evaluations(5)
                    .lengthscale_init(LengthscaleInit::HalfRange)
            } else {
                base()
            },
        ),
        (
            "initial draws",
            base().initial_draws(if odd { 3 } else { 2 }),
        ),
        ("fixed spectral points", base().fixed_spectral_points(odd)),
        (
            "noise floor",
            base().noise_floor(if odd { 0.5 } else { 0.0 }),
        ),
        ("seed", base().seed(u64::from(odd))),
        (
            "calibration guard",
            base().calibration(if odd {
                CalibrationGuard::Off
            } else {
                CalibrationGuard::Check
            }),
        ),
        ("budgets", base().max_evaluations(if odd { 6 } else { 5 })),
        (
            "kernel",
            base().kernel(if odd {
                ssgp::kernel::Kernel::Matern32
            } else {
                ssgp::kernel::Kernel::SquaredExponential
            }),
        ),
        (
            "relative noise floor",
            base().relative_noise_floor(if odd { 1e-3 } else { 1e-4 }),
        ),
        (
            "optimiser",
            base().optimizer(if odd {
                ssgp::optim::Method::Lbfgs { memory: 10 }
            } else {
                ssgp::optim::Method::ConjugateGradient
            }),
        ),
        ("chunk rows", base().chunk_rows(if odd { 64 } else { 128 })),
        (
            "initial unit frequencies",
            base().initial_unit_frequencies(ssgp::nalgebra::DMatrix::from_element(
                10,
                8,
                if odd { 0.5 } else { 0.25 },
            )),
        ),
        (
            "lengthscale start",
            base().lengthscale_init(if odd {
                LengthscaleInit::FullGpSubset(64)
            } else {
                LengthscaleInit::HalfRange
            }),
        ),
        ("best effort", base().best_effort(odd)),
    ];
    for (name, params) in variants {
        let params = params.check().map_err(|e| e.to_string())?;
        // The error lists the differing settings as "<name> (rank …)", after ": " or "; ".
        let names = |what: &str| {
            what.contains(&format!(": {name} (rank 1"))
                || what.contains(&format!("; {name} (rank 1"))
        };
        match params.fit_distributed(&local, cluster) {
            Ok(_) => return Err(format!("ranks with a different {name} both fitted")),
            Err(ssgp::Error::Distributed { what }) if names(&what) => {
                if cluster.is_root() && name == "m" {
                    println!("  2 ranks, another m on rank 1: {what}");
                }
            }
            Err(e) => return Err(format!("{name}: {e}")),
        }
        match params.distributed_evidence(&local, cluster) {
            Err(ssgp::Error::Distributed { what }) if names(&what) => {}
            Err(e) => return Err(format!("the evidence, {name}: {e}")),
            Ok(_) => {
                return Err(format!(
                    "the evidence of ranks with a different {name} was built"
                ))
            }
        }
    }
    let same = base()
        .threads(if odd { 1 } else { 2 })
        .cache_bytes(if odd { 0 } else { 1 << 20 })
        .check()
        .map_err(|e| e.to_string())?;
    same.fit_distributed(&local, cluster)
        .map(|_| ())
        .map_err(|e| format!("threads and cache sizes that differ: {e}"))
}

/// This rank's rows under `sizes` (rows per rank, in rank order): contiguous ranges in rank
/// order; the check runs on `sizes.len()` ranks.
fn uneven_rows(sizes: &[usize], cluster: &Cluster) -> Result<Vec<usize>, String> {
    if cluster.size() != sizes.len() {
        return Err(format!(
            "this check needs {} ranks, not {}",
            sizes.len(),
            cluster.size()
        ));
    }
    let start: usize = sizes[..cluster.rank()].iter().sum();
    Ok((start..start + sizes[cluster.rank()]).collect())
}

/// The rows (of all ranks' rows one after the other, `sizes` per rank) the distributed
/// `FullGpSubset(size)` start gathers, as `fit_distributed` documents them: rank r's share
/// ⌊size·N_{r+1}/n⌋ − ⌊size·N_r/n⌋ (N_r the rows of the ranks before r), evenly spaced among its
/// rows, in rank order; with each rank's share.
fn start_subset(sizes: &[usize], size: usize) -> (Vec<usize>, Vec<usize>) {
    let n: usize = sizes.iter().sum();
    let share_at = |rows: usize| (size as f64 * rows as f64 / n as f64).floor() as usize;
    let (mut rows, mut shares, mut before) = (Vec::new(), Vec::new(), 0);
    for &len in sizes {
        let share = share_at(before + len) - share_at(before);
        rows.extend((0..share).map(|i| before + i * len / share));
        shares.push(share);
        before += len;
    }
    (rows, shares)
}

/// The largest of |a − b| / |b| over two vectors of the same length (∞ for other lengths).
fn max_rel(a: &DVector<f64>, b: &DVector<f64>) -> f64 {
    if a.len() != b.len() {
        return f64::INFINITY;
    }
    a.iter()
        .zip(b.iter())
        .map(|(x, y)| (x - y).abs() / y.abs())
        .fold(0.0, f64::max)
}

/// Three ranks holding 10, 500 and 1 500 of 2 010 rows: the evidence and its gradient at a θ
/// equal one process's to 1e-12; the learned fit (half-range start, the check off) is one
/// process's fit on the same rows (the same evaluations, −log p to 1e-9), the same model on
/// every rank; the default check completes with every rank's seeded half held out (5 + 250 +
/// 750 rows), the same model and score on every rank; a rank cannot hold 0 rows (a `Dataset`
/// has rows, so such a rank cannot join the fit: `EmptyData` before any collective).
/// A distributed fit with an observer on every rank: rank 0's sees the start's full GP (on the
/// gathered subset) as `StartValues`, every one of its reports before the optimiser's, then the
/// optimiser's completed iterations in order, as one process's — and, as documented, no
/// spectral draw; the other ranks' observers are never called.
fn observer(cluster: &Cluster) -> Result<(), String> {
    use ssgp::optim::Phase;
    use std::sync::{Arc, Mutex};
    let text = |e: ssgp::Error| e.to_string();
    let sizes = [300, 200, 400];
    let rows = uneven_rows(&sizes, cluster)?;
    let problem = Problem {
        n: sizes.iter().sum(),
        dim: 3,
        relevant: 2,
        roughness: Roughness::Smooth,
        noise: 0.1,
        seed: 17,
    };
    let (all, _) = problem.generate(10).map_err(text)?;
    let local = all.subset(&rows).map_err(text)?;
    let seen: Arc<Mutex<Vec<ssgp::Progress>>> = Arc::default();
    let sink = Arc::clone(&seen);
    let observer: ssgp::optim::Observer = Arc::new(move |p: &ssgp::Progress| {
        sink.lock().map(|mut v| v.push(*p)).ok();
        std::ops::ControlFlow::Continue(())
    });
    let fit = Ssgp::params(10)
        .seed(4)
        .initial_draws(3)
        .max_evaluations(40)
        .lengthscale_init(LengthscaleInit::FullGpSubset(64))
        .calibration(CalibrationGuard::Off)
        .observer(observer)
        .check()
        .map_err(text)?
        .fit_distributed(&local, cluster)
        .map_err(text)?
        .model;
    let reports = std::mem::take(&mut *seen.lock().map_err(|e| e.to_string())?);
    if !cluster.is_root() {
        return match reports.first() {
            None => Ok(()),
            Some(p) => Err(format!(
                "rank {}'s observer was called: {p:?}",
                cluster.rank()
            )),
        };
    }
    let start = reports
        .iter()
        .take_while(|p| p.phase == Phase::StartValues)
        .count();
    let rest: Vec<(Phase, u64)> = reports[start..]
        .iter()
        .map(|p| (p.phase, p.iteration))
        .collect();
    let done = fit.training().iterations;
    if start == 0 || reports[..start].iter().any(|p| !p.value.is_finite()) {
        return Err(format!("the start's reports: {:?}", &reports[..start]));
    }
    // Every completed iteration, in order (one cut short by the evaluation budget is counted in
    // the summary, not reported), as in one process.
    let expected: Vec<(Phase, u64)> = (1..=rest.len() as u64)
        .map(|k| (Phase::Optimiser, k))
        .collect();
    if rest != expected || rest.len() as u64 + 1 < done || done <= 1 {
        return Err(format!(
            "after {start} start reports: {rest:?}, for {done} iterations"
        ));
    }
    Ok(())
}

fn shares(cluster: &Cluster) -> Result<(), String> {
    let text = |e: ssgp::Error| e.to_string();
    let sizes = [10, 500, 1500];
    let rows = uneven_rows(&sizes, cluster)?;
    let problem = Problem {
        n: sizes.iter().sum(),
        dim: 3,
        relevant: 3,
        roughness: Roughness::Smooth,
        noise: 0.1,
        seed: 11,
    };
    let (all, _) = problem.generate(10).map_err(text)?;
    let local = all.subset(&rows).map_err(text)?;
    let base = Ssgp::params(15)
        .seed(2)
        .initial_draws(5)
        .max_evaluations(60)
        .lengthscale_init(LengthscaleInit::HalfRange);
    let params = base
        .clone()
        .calibration(CalibrationGuard::Off)
        .check()
        .map_err(text)?;
    let single = params.fit(&all).map_err(text)?;
    // The evidence at the single-process fit's θ.
    let theta = single.parameters().clone();
    let (value, grad) = params
        .distributed_evidence(&local, cluster)
        .map_err(text)?
        .value_and_gradient(&theta)
        .map_err(text)?;
    let (v1, g1) = params
        .evidence(&all)
        .map_err(text)?
        .value_and_gradient(&theta)
        .map_err(text)?;
    let (rel, g_err) = (
        (value - v1).abs() / v1.abs(),
        (&grad - &g1).amax() / g1.amax(),
    );
    if !(rel <= 1e-12 && g_err <= 1e-12) {
        return Err(format!(
            "shares {sizes:?}: the evidence rel {rel:e}, its gradient rel {g_err:e} (above 1e-12)"
        ));
    }
    let fit = params.fit_distributed(&local, cluster).map_err(text)?.model;
    let (d, s) = (fit.neg_log_evidence(), single.neg_log_evidence());
    let fit_rel = (d - s).abs() / s.abs();
    let mut mine: Vec<f64> = fit.parameters().iter().copied().collect();
    mine.push(d);
    if !same_on_every_rank(&mine) {
        return Err(format!("shares {sizes:?}: the ranks hold different models"));
    }
    if fit.training().evaluations != single.training().evaluations || fit_rel > 1e-9 {
        return Err(format!(
            "shares {sizes:?}: the distributed fit ({d}, {} evaluations) is not one process's \
             ({s}, {})",
            fit.training().evaluations,
            single.training().evaluations
        ));
    }
    let checked = base
        .check()
        .map_err(text)?
        .fit_distributed(&local, cluster)
        .map_err(text)?
        .model;
    let expected: usize = sizes.iter().map(|n| n / 2).sum();
    held_out_everywhere(&checked, expected, &format!("shares {sizes:?}"))?;
    if cluster.is_root() {
        println!(
            "  shares {sizes:?}: evidence rel {rel:.1e}, gradient rel {g_err:.1e}; −log p {d:.6} \
             vs one process's {s:.6} (rel {fit_rel:.1e}); checked: {}",
            checked
                .training()
                .remedy
                .map_or(String::new(), |r| r.to_string())
        );
    }
    // A rank without rows has no `Dataset` to pass.
    match all.subset(&[]) {
        Err(ssgp::Error::EmptyData { .. }) => Ok(()),
        other => Err(format!("a Dataset of no rows: {:?}", other.err())),
    }
}

/// Checks that `checked` was judged on `rows` held-out rows summed over the ranks and that every
/// rank holds the same model, factor and held-out score; `what` names the case in the error.
/// The held-out record and the factor.
fn held_out_everywhere(
    checked: &FittedSsgp,
    rows: usize,
    what: &str,
) -> Result<(HeldOutCalibration, f64), String> {
    let Some(Remedy::HeldOut {
        held_out: Some(held),
        variance_scale,
        ..
    }) = checked.training().remedy
    else {
        return Err(format!(
            "{what}: no held-out check in {:?}",
            checked.training().remedy
        ));
    };
    let mut mine: Vec<f64> = checked.parameters().iter().copied().collect();
    mine.extend([
        checked.neg_log_evidence(),
        variance_scale,
        held.mean_z2,
        held.nmse,
    ]);
    if held.rows != rows || !same_on_every_rank(&mine) {
        return Err(format!(
            "{what}: {} held-out rows (expected {rows}), or the ranks hold different checked \
             models",
            held.rows
        ));
    }
    Ok((held, variance_scale))
}

/// The calibration check where a rank holds out no rows: a rank of one row (its half is 0
/// rows), the root and a later rank, and a rank whose four rows share one input (held out
/// whole, the group would leave it nothing to train on): the check completes on every rank with
/// the other ranks' halves held out (150 + 150 rows), the same model and score on every rank.
fn no_held_out(cluster: &Cluster) -> Result<(), String> {
    let text = |e: ssgp::Error| e.to_string();
    let problem = Problem {
        n: 601,
        dim: 2,
        relevant: 2,
        roughness: Roughness::Smooth,
        noise: 0.1,
        seed: 12,
    };
    let (one_row, _) = problem.generate(10).map_err(text)?;
    // 300 + 300 rows and four rows at the input of row 600 (their targets apart by 0.01).
    let x = ssgp::nalgebra::DMatrix::from_fn(604, 2, |i, j| one_row.x()[(i.min(600), j)]);
    let y = DVector::from_fn(604, |i, _| {
        one_row.y()[i.min(600)] + 0.01 * i.saturating_sub(600) as f64
    });
    let one_input = Dataset::new(x, y).map_err(text)?;
    let cases: [(&str, [usize; 3], &Dataset); 3] = [
        ("one row on the root", [1, 300, 300], &one_row),
        ("one row on the last rank", [300, 300, 1], &one_row),
        ("one input on the last rank", [300, 300, 4], &one_input),
    ];
    for (what, sizes, all) in cases {
        let rows = uneven_rows(&sizes, cluster)?;
        let local = all.subset(&rows).map_err(text)?;
        let checked = Ssgp::params(10)
            .seed(1)
            .initial_draws(5)
            .max_evaluations(60)
            .lengthscale_init(LengthscaleInit::HalfRange)
            .check()
            .map_err(text)?
            .fit_distributed(&local, cluster)
            .map_err(|e| format!("{what}: {e}"))?
            .model;
        held_out_everywhere(&checked, 300, what)?;
        if cluster.is_root() {
            println!(
                "  {what}: {}",
                checked
                    .training()
                    .remedy
                    .map_or(String::new(), |r| r.to_string())
            );
        }
    }
    Ok(())
}

/// The full-GP start (`FullGpSubset(64)`) where a rank's share of the subset is 0 rows (10 of
/// 2 010 rows on the root, then on rank 1): the distributed fit is one process's fit started
/// at the lengthscales the full GP learns on the documented subset (the same evaluations,
/// −log p to 1e-9), the same model on every rank; and where that rank's rows are the only ones
/// on which an input varies, or the targets do, the fit succeeds as one process's does (an
/// input constant on the subset starts at half its range over all rows; a subset of constant
/// targets takes the first row in rank order whose target differs, in place of its last row).
/// The start's full GP has the model's noise floor, as one process's (a floor of 0.05 that
/// binds, over the targets' noise variance of about 0.01, included).
fn subset(cluster: &Cluster) -> Result<(), String> {
    let text = |e: ssgp::Error| e.to_string();
    let size = 64;
    for (sizes, empty, floor) in [
        ([10, 500, 1500], 0, 0.0),
        ([410, 10, 1590], 1, 0.0),
        ([410, 10, 1590], 1, 0.05),
    ] {
        let params = |start: LengthscaleInit| {
            Ssgp::params(10)
                .seed(4)
                .initial_draws(3)
                .max_evaluations(40)
                .noise_floor(floor)
                .lengthscale_init(start)
                .calibration(CalibrationGuard::Off)
                .check()
                .map_err(text)
        };
        let (subset_rows, subset_shares) = start_subset(&sizes, size);
        if subset_shares[empty] != 0 {
            return Err(format!(
                "{sizes:?}: rank {empty}'s share is {subset_shares:?}"
            ));
        }
        let rows = uneven_rows(&sizes, cluster)?;
        let problem = Problem {
            n: sizes.iter().sum(),
            dim: 3,
            relevant: 3,
            roughness: Roughness::Smooth,
            noise: 0.1,
            seed: 13,
        };
        let (plain, _) = problem.generate(10).map_err(text)?;
        // Only the small rank's rows vary in input 2, then in the targets.
        let small: Vec<usize> = {
            let start: usize = sizes[..empty].iter().sum();
            (start..start + sizes[empty]).collect()
        };
        let on_small = |i: usize| small.contains(&i);
        let mut x = plain.x().clone();
        for i in 0..x.nrows() {
            if !on_small(i) {
                x[(i, 2)] = 0.0;
            }
        }
        let one_input = Dataset::new(x, plain.y().clone()).map_err(text)?;
        let y = DVector::from_fn(
            plain.len(),
            |i, _| {
                if on_small(i) {
                    plain.y()[i]
                } else {
                    0.0
                }
            },
        );
        let spike = Dataset::new(plain.x().clone(), y).map_err(text)?;
        // The spike's start is a nearly noise-free full GP on 63 zeros and one spike under the
        // model's floor (10⁻⁴·var y of all rows): its lengthscales move with round-off (one
        // process's fit from the subset's rows in another order: −log p 1106.87 against
        // 1106.36; the distributed fit 1106.79), so there the fit is only required to succeed,
        // the same on every rank.
        for (what, all, tolerance) in [
            ("plain", &plain, 1e-9),
            ("input 2 varying on its rows only", &one_input, 1e-9),
            ("targets varying on its rows only", &spike, f64::INFINITY),
        ] {
            let what =
                format!("{sizes:?}, noise floor {floor}, rank {empty} without subset rows, {what}");
            // The subset as documented: the full GP's lengthscales on it (an input constant on
            // it at half its range over all rows; constant targets with their last row replaced
            // by the first that differs).
            let mut gathered = subset_rows.clone();
            let first = all.y()[gathered[0]];
            if gathered.iter().all(|&i| all.y()[i] == first) {
                if let Some(other) = (0..all.len()).find(|&i| all.y()[i] != first) {
                    gathered.pop();
                    gathered.push(other);
                }
            }
            let on_subset = all.subset(&gathered).map_err(text)?;
            let varying: Vec<usize> = (0..all.dim())
                .filter(|&d| {
                    let c = on_subset.x().column(d);
                    c.max() > c.min()
                })
                .collect();
            // One process's start: a full GP with the model's seed and noise floor (resolved on
            // var y of all rows), stopping at the start's tolerance, its best point kept.
            let learned = FullGp::params()
                .seed(4)
                .noise_floor(floor.max(DEFAULT_RELATIVE_NOISE_FLOOR * all.y_variance()))
                .relative_noise_floor(0.0)
                .best_effort(true)
                .optim(OptimConfig {
                    tolerance: START_TOLERANCE,
                    ..OptimConfig::default()
                })
                .fit(
                    &Dataset::new(
                        on_subset.x().select_columns(&varying),
                        on_subset.y().clone(),
                    )
                    .map_err(text)?,
                )
                .map_err(|e| format!("{what}: the expected start: {e}"))?
                .lengthscales();
            let lengthscales = DVector::from_fn(all.dim(), |d, _| {
                match varying.iter().position(|&v| v == d) {
                    Some(k) => learned[k],
                    None => {
                        let c = all.x().column(d);
                        0.5 * (c.max() - c.min())
                    }
                }
            });
            // One process's own start (a random subset) learns from these rows too.
            params(LengthscaleInit::FullGpSubset(size))?
                .fit(all)
                .map_err(|e| format!("{what}: one process from its own subset: {e}"))?;
            let single = params(LengthscaleInit::Given(lengthscales))?
                .fit(all)
                .map_err(|e| format!("{what}: one process: {e}"))?;
            let local = all.subset(&rows).map_err(text)?;
            let fit = params(LengthscaleInit::FullGpSubset(size))?
                .fit_distributed(&local, cluster)
                .map_err(|e| format!("{what}: {e}"))?
                .model;
            let (d, s) = (fit.neg_log_evidence(), single.neg_log_evidence());
            let rel = (d - s).abs() / s.abs();
            let mut mine: Vec<f64> = fit.parameters().iter().copied().collect();
            mine.push(d);
            if !same_on_every_rank(&mine) {
                return Err(format!("{what}: the ranks hold different models"));
            }
            if cluster.is_root() {
                println!(
                    "  {what}: −log p {d:.6} vs one process's {s:.6} (rel {rel:.1e}), θ rel \
                     {:.1e}",
                    max_rel(fit.parameters(), single.parameters())
                );
            }
            if fit.training().evaluations != single.training().evaluations || rel > tolerance {
                return Err(format!(
                    "{what}: the distributed fit ({d}, {} evaluations) is not one process's \
                     from the subset's lengthscales ({s}, {})",
                    fit.training().evaluations,
                    single.training().evaluations
                ));
            }
        }
    }
    Ok(())
}
