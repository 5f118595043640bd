//! Learning the inverse dynamics of a simulated two-link planar arm online, as Incremental SSGP
//! does (Gijsberts and Metta, Neural Networks 41, 2013): torques τ₁, τ₂ from (q, q̇, q̈) — D = 6,
//! P = 2 — with the hyperparameters of a multi-output SSGP (m = 100, shared spectral points)
//! learned on a batch of 1 000 samples, then a stream of 20 000 samples along trajectories that
//! drift beyond the batch's range, each predicted before it is added by a rank-one update.
//!
//! The arm (rigid-body equations, τ = M(q)q̈ + C(q, q̇)q̇ + g(q) + F q̇) has links of 0.5 m, masses
//! 2 and 1 kg at mid-link, rod inertias and viscous friction; the targets carry Gaussian sensor
//! noise of 1 % of each torque's standard deviation. Reported on the second half of the stream,
//! on one thread: NMSE, MNLP, 95 % coverage and mean z² of the updated model, the same with its
//! variances widened by `online_variance_factor` (each prediction by the factor of the samples
//! before it), the model's own one-step-ahead record (`prequential`, the whole stream), the NMSE
//! of the frozen batch model, updates per second (the updates alone, without the predictions),
//! and the relative error
//! ‖J − M(q)‖_F/‖M(q)‖_F of the predicted torques' Jacobian J = ∂τ̂/∂q̈ (from `predict_gradients`)
//! against the arm's inertia matrix at every fifth state of the stream's last second (10 states;
//! fewer, from the stream's start, for a stream shorter than a second).
//!
//! `cargo run --release --example robot_arm [-- --json] [--evaluations N] [--stream N] [--seed S]`

#[path = "cli/mod.rs"]
mod cli;
use nalgebra::{DMatrix, Matrix2, Vector2};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Normal};
use ssgp::data::MultiDataset;
use ssgp::metrics::{calibration, mnlp, nmse};
use ssgp::ssgp::{FittedMultiSsgp, Ssgp};
use ssgp::{Predictive, Remedy};
use std::error::Error;
use std::fmt::Display;
use std::str::FromStr;
use std::time::Instant;

/// The two-link arm's constants (SI units).
struct Arm {
    a: f64,
    b: f64,
    d: f64,
    gravity: [f64; 2],
    friction: [f64; 2],
}

impl Arm {
    fn new() -> Self {
        let (m1, m2, l1, l2) = (2.0, 1.0, 0.5, 0.5);
        let (lc1, lc2) = (l1 / 2.0, l2 / 2.0);
        let (i1, i2) = (m1 * l1 * l1 / 12.0, m2 * l2 * l2 / 12.0);
        let g = 9.81;
        Self {
            a: i1 + i2 + m1 * lc1 * lc1 + m2 * (l1 * l1 + lc2 * lc2),
            b: m2 * l1 * lc2,
            d: i2 + m2 * lc2 * lc2,
            gravity: [(m1 * lc1 + m2 * l1) * g, m2 * lc2 * g],
            friction: [0.3, 0.2],
        }
    }

    /// The inertia matrix M(q).
    fn inertia(&self, q: [f64; 2]) -> Matrix2<f64> {
        let c2 = q[1].cos();
        Matrix2::new(
            self.a + 2.0 * self.b * c2,
            self.d + self.b * c2,
            self.d + self.b * c2,
            self.d,
        )
    }

    /// τ = M(q)q̈ + C(q, q̇)q̇ + g(q) + F q̇.
    fn torques(&self, q: [f64; 2], qd: [f64; 2], qdd: [f64; 2]) -> Vector2<f64> {
        let s2 = q[1].sin();
        let coriolis = Vector2::new(
            -self.b * s2 * (2.0 * qd[0] * qd[1] + qd[1] * qd[1]),
            self.b * s2 * qd[0] * qd[0],
        );
        let gravity = Vector2::new(
            self.gravity[0] * q[0].cos() + self.gravity[1] * (q[0] + q[1]).cos(),
            self.gravity[1] * (q[0] + q[1]).cos(),
        );
        let friction = Vector2::new(self.friction[0] * qd[0], self.friction[1] * qd[1]);
        self.inertia(q) * Vector2::new(qdd[0], qdd[1]) + coriolis + gravity + friction
    }
}

/// Joint trajectories: per joint a sum of three sines around an offset that drifts linearly
/// from `t_drift` on (and an amplitude that grows with it).
struct Trajectory {
    amplitude: [[f64; 3]; 2],
    frequency: [[f64; 3]; 2],
    phase: [[f64; 3]; 2],
    offset: [f64; 2],
    drift: [f64; 2],
    t_drift: f64,
    t_end: f64,
}

impl Trajectory {
    fn random(rng: &mut StdRng, t_drift: f64, t_end: f64) -> Self {
        let mut t = Self {
            amplitude: [[0.0; 3]; 2],
            frequency: [[0.0; 3]; 2],
            phase: [[0.0; 3]; 2],
            offset: [0.3, 0.8],
            drift: [0.9, -0.9],
            t_drift,
            t_end,
        };
        for j in 0..2 {
            for k in 0..3 {
                t.amplitude[j][k] = rng.random_range(0.15..0.35);
                t.frequency[j][k] = rng.random_range(0.5..2.5);
                t.phase[j][k] = rng.random_range(0.0..std::f64::consts::TAU);
            }
        }
        t
    }

    /// (q, q̇, q̈) at time t.
    fn state(&self, t: f64) -> ([f64; 2], [f64; 2], [f64; 2]) {
        let progress = ((t - self.t_drift) / (self.t_end - self.t_drift)).clamp(0.0, 1.0);
        let (mut q, mut qd, mut qdd) = ([0.0; 2], [0.0; 2], [0.0; 2]);
        for j in 0..2 {
            let grow = 1.0 + 0.5 * progress;
            let slope = if t > self.t_drift {
                self.drift[j] / (self.t_end - self.t_drift)
            } else {
                0.0
            };
            q[j] = self.offset[j] + self.drift[j] * progress;
            qd[j] = slope;
            for k in 0..3 {
                let (a, w, p) = (
                    self.amplitude[j][k] * grow,
                    self.frequency[j][k],
                    self.phase[j][k],
                );
                q[j] += a * (w * t + p).sin();
                qd[j] += a * w * (w * t + p).cos();
                qdd[j] -= a * w * w * (w * t + p).sin();
            }
        }
        (q, qd, qdd)
    }
}

const HELP: &str = "\
The inverse dynamics of a simulated two-link arm learned online: multi-output SSGP (m = 100) from
a batch, then a drifting stream predicted and added sample by sample.

Usage: robot_arm [OPTIONS]

Options:
  --json           one JSON object per output on stdout
  --evaluations N  optimiser evaluations on the batch, N ≥ 1 (default 400)
  --stream N       samples in the stream, N ≥ 1 (default 20000; 50 a second)
  --seed S         seed, 0 to 2^64 − 1 (default 1)
  -h, --help       this text";

struct Options {
    json: bool,
    evaluations: usize,
    stream: usize,
    seed: u64,
}

/// The command line's options, checked; `None` after printing the help for `-h`/`--help`.
fn options() -> Result<Option<Options>, Box<dyn Error>> {
    let mut o = Options {
        json: false,
        evaluations: 400,
        stream: 20_000,
        seed: 1,
    };
    use lexopt::prelude::*;
    let mut parser = lexopt::Parser::from_env();
    while let Some(arg) = parser.next()? {
        match arg {
            Long("json") => o.json = true,
            Long("evaluations") => {
                o.evaluations = value(&mut parser, "--evaluations", "a number ≥ 1")?
            }
            Long("stream") => o.stream = value(&mut parser, "--stream", "a number of samples ≥ 1")?,
            Long("seed") => {
                o.seed = value(&mut parser, "--seed", "a whole number from 0 to 2^64 − 1")?
            }
            Short('h') | Long("help") => {
                println!("{HELP}");
                return Ok(None);
            }
            _ => return Err(cli::unexpected(arg, HELP)),
        }
    }
    for (flag, n, what) in [
        (
            "--evaluations",
            o.evaluations,
            "the batch fit needs at least one evaluation",
        ),
        ("--stream", o.stream, "the stream needs at least one sample"),
    ] {
        if n == 0 {
            return Err(format!("{flag} 0: {what}; give N ≥ 1").into());
        }
    }
    Ok(Some(o))
}

/// The next argument, the value of `flag`, parsed.
///
/// # Errors
/// A missing value (lexopt's message names `flag`), or one that does not parse: naming `flag`,
/// the value, the reason and what is `expected`.
fn value<T: FromStr>(
    parser: &mut lexopt::Parser,
    flag: &str,
    expected: &str,
) -> Result<T, Box<dyn Error>>
where
    T::Err: Display,
{
    use lexopt::ValueExt;
    let text = parser.value()?.string()?;
    text.parse()
        .map_err(|e| format!("{flag} `{text}`: {e} (expected {expected})").into())
}

/// Samples (x = (q, q̇, q̈), τ) at `count` times from `t0` with step `dt`, torque noise `noise`.
fn samples(
    arm: &Arm,
    path: &Trajectory,
    (t0, dt, count): (f64, f64, usize),
    noise: [f64; 2],
    rng: &mut StdRng,
) -> Result<(DMatrix<f64>, DMatrix<f64>), Box<dyn Error>> {
    let mut x = DMatrix::zeros(count, 6);
    let mut y = DMatrix::zeros(count, 2);
    let normal = [Normal::new(0.0, noise[0])?, Normal::new(0.0, noise[1])?];
    for i in 0..count {
        let (q, qd, qdd) = path.state(t0 + i as f64 * dt);
        for j in 0..2 {
            x[(i, j)] = q[j];
            x[(i, 2 + j)] = qd[j];
            x[(i, 4 + j)] = qdd[j];
        }
        let tau = arm.torques(q, qd, qdd);
        for p in 0..2 {
            y[(i, p)] = tau[p] + normal[p].sample(rng);
        }
    }
    Ok((x, y))
}

fn run() -> Result<(), Box<dyn Error>> {
    let Some(o) = options()? else {
        return Ok(());
    };
    let arm = Arm::new();
    let mut rng = StdRng::seed_from_u64(o.seed);
    let (batch_n, dt) = (1000, 0.02);
    let t_drift = batch_n as f64 * dt;
    let t_end = t_drift + o.stream as f64 * dt;
    let path = Trajectory::random(&mut rng, t_drift, t_end);
    // Sensor noise: 1 % of each torque's standard deviation (measured on noise-free batch torques).
    let (_, clean) = samples(&arm, &path, (0.0, dt, batch_n), [1e-300; 2], &mut rng)?;
    let sd = |p: usize| {
        let c = clean.column(p);
        (c.map(|v| (v - c.mean()).powi(2)).sum() / c.len() as f64).sqrt()
    };
    let noise = [0.01 * sd(0), 0.01 * sd(1)];
    let (xb, yb) = samples(&arm, &path, (0.0, dt, batch_n), noise, &mut rng)?;
    let batch = MultiDataset::new(xb, yb)?;
    let m = 100;
    let start = Instant::now();
    let frozen = Ssgp::params(m)
        .seed(o.seed)
        .threads(1)
        .initial_draws(20)
        .max_evaluations(o.evaluations)
        .fit_multi(&batch)?;
    let training_seconds = start.elapsed().as_secs_f64();
    let mut model = frozen.clone();

    let (xs, ys) = samples(&arm, &path, (t_drift, dt, o.stream), noise, &mut rng)?;
    let half = o.stream / 2;
    let (mut mean, mut var) = (DMatrix::zeros(o.stream, 2), DMatrix::zeros(o.stream, 2));
    // The variances widened by what the stream's latest one-step-ahead predictions say.
    let mut widened = DMatrix::zeros(o.stream, 2);
    let mut update_seconds = 0.0;
    for i in 0..o.stream {
        let xi = xs.rows(i, 1).into_owned();
        for (p, pred) in model.predict(&xi)?.into_iter().enumerate() {
            mean[(i, p)] = pred.mean[0];
            var[(i, p)] = pred.y_variance[0];
            widened[(i, p)] = pred.y_variance[0] * model.online_variance_factor(p)?;
        }
        let yi = ys.rows(i, 1).into_owned();
        let t = Instant::now();
        model.update(&xi, &yi)?;
        if i >= half {
            update_seconds += t.elapsed().as_secs_f64();
        }
    }
    let updates_per_second = (o.stream - half) as f64 / update_seconds;
    let second = xs.rows(half, o.stream - half).into_owned();
    let frozen_preds = frozen.predict(&second)?;
    let (jacobian_rel_err, jacobian_states) =
        jacobian_error(&arm, &model, &xs, (1.0 / dt).round() as usize)?;

    for (p, frozen_pred) in frozen_preds.iter().enumerate() {
        let y = ys
            .view((half, p), (o.stream - half, 1))
            .column(0)
            .into_owned();
        let pred = Predictive {
            mean: mean
                .view((half, p), (o.stream - half, 1))
                .column(0)
                .into_owned(),
            y_variance: var
                .view((half, p), (o.stream - half, 1))
                .column(0)
                .into_owned(),
            f_variance: var
                .view((half, p), (o.stream - half, 1))
                .column(0)
                .add_scalar(-model.noise_variances()[p]),
        };
        let ybar = batch.y_means()[p];
        let (nmse_online, mnlp_online) = (nmse(&y, &pred, ybar)?, mnlp(&y, &pred)?);
        let nmse_frozen = nmse(&y, frozen_pred, ybar)?;
        let online = calibration(&y, &pred)?;
        let wide = Predictive {
            y_variance: widened
                .view((half, p), (o.stream - half, 1))
                .column(0)
                .into_owned(),
            ..pred.clone()
        };
        let (widened_mnlp, widened) = (mnlp(&y, &wide)?, calibration(&y, &wide)?);
        // The model's own record of the whole stream, each sample predicted before it was added.
        let record = model.prequential(p)?.ok_or("the stream added no samples")?;
        if o.json {
            println!(
                "{{\"output\": {p}, \"m\": {m}, \"threads\": 1, \"nmse\": {nmse_online}, \"mnlp\": \
                 {mnlp_online}, \"coverage\": {}, \"mean_z2\": {}, \"widened_mnlp\": \
                 {widened_mnlp}, \"widened_coverage\": {}, \"widened_mean_z2\": {}, \
                 \"prequential_mean_z2\": {}, \"nmse_frozen\": {nmse_frozen}, \
                 \"updates_per_second\": {updates_per_second}, \"jacobian_rel_err\": \
                 {jacobian_rel_err}, \"jacobian_states\": {jacobian_states}}}",
                online.within_95,
                online.mean_squared_z,
                widened.within_95,
                widened.mean_squared_z,
                record.mean_z2
            );
        } else {
            println!(
                "τ{}: NMSE {nmse_online:.4} (frozen batch model {nmse_frozen:.4}); MNLP \
                 {mnlp_online:.3}, 95 % coverage {:.3}, mean z² {:.2}; widened by \
                 online_variance_factor: MNLP {widened_mnlp:.3}, coverage {:.3}, mean z² {:.2}; \
                 the model's own one-step-ahead record: mean z² {:.2} over {} samples{}",
                p + 1,
                online.within_95,
                online.mean_squared_z,
                widened.within_95,
                widened.mean_squared_z,
                record.mean_z2,
                record.rows,
                if record.overconfident() {
                    " (overconfident)"
                } else {
                    ""
                }
            );
        }
    }
    if !o.json {
        for p in 0..frozen.outputs() {
            let summary = frozen.output_training(p)?;
            let kept = match summary.remedy {
                Some(r) if r.random_features() => "the random-feature fit".to_string(),
                Some(Remedy::HeldOut {
                    learned_budget: Some(b),
                    ..
                }) => format!("the learned fit stopped at {b} evaluations"),
                Some(_) => "the learned fit".into(),
                None => "the learned fit, unchecked".into(),
            };
            println!(
                "batch fit τ{}: {}; kept {kept}, variances ×{:.3}",
                p + 1,
                summary.diagnosis(),
                summary.remedy.map_or(1.0, |r| r.variance_scale())
            );
        }
        println!(
            "batch training {training_seconds:.1} s; {updates_per_second:.0} updates/s on one \
             thread; ∂τ̂/∂q̈ against M(q) at the stream's end ({jacobian_states} states): \
             relative error {jacobian_rel_err:.3}"
        );
    }
    Ok(())
}

/// The mean of ‖J − M(q)‖_F/‖M(q)‖_F over every fifth state of the stream's last `window`
/// samples (from its first when it is shorter), and their number: 10 states of a window of 50
/// samples (a second). `stream`'s rows are the samples' (q, q̇, q̈); J_pj = ∂τ̂_p/∂q̈_j from
/// `predict_gradients` (columns 4 and 5 of each output's mean gradient).
fn jacobian_error(
    arm: &Arm,
    model: &FittedMultiSsgp,
    stream: &DMatrix<f64>,
    window: usize,
) -> Result<(f64, usize), Box<dyn Error>> {
    let n = stream.nrows();
    let rows: Vec<usize> = (n.saturating_sub(window)..n).step_by(5).collect();
    let grads = model.predict_gradients(&stream.select_rows(&rows))?;
    let mut total = 0.0;
    for (s, &i) in rows.iter().enumerate() {
        let m = arm.inertia([stream[(i, 0)], stream[(i, 1)]]);
        let j = Matrix2::from_fn(|p, c| grads[p].mean[(s, 4 + c)]);
        total += (j - m).norm() / m.norm();
    }
    Ok((total / rows.len() as f64, rows.len()))
}

fn main() -> std::process::ExitCode {
    cli::main("robot_arm", run)
}
