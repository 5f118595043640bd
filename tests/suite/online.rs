//! Online updates: after k updates, SSGP and the full GP equal conditioning from scratch on all
//! the data at the same θ (the batch's target offset kept), by dense formulas; updated models
//! save and load.

use crate::common::se_ard_by_definition;
use approx::assert_relative_eq;
use nalgebra::{DMatrix, DVector};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use ssgp::hyperparameters::Hyperparameters;
use ssgp::ssgp::{Ssgp, SsgpHyperparameters};
use ssgp::{Dataset, FittedSsgp, FullGp, ParamGuard};

fn samples(n: usize, dim: usize, shift: f64, rng: &mut StdRng) -> (DMatrix<f64>, DVector<f64>) {
    let x = DMatrix::from_fn(n, dim, |_, _| rng.random_range(-2.0..2.0) + shift);
    let y = DVector::from_fn(n, |i, _| {
        (0..dim).map(|d| x[(i, d)]).sum::<f64>().sin() * 3.0
            + 5.0
            + 0.1 * rng.random_range(-1.0..1.0)
    });
    (x, y)
}

/// The SSGP posterior from scratch by dense formulas, at the model's θ with target offset
/// `y_mean`: rows of the design matrix [cos 2πSx, sin 2πSx] (no centring), A weighted by
/// `weights` (per row) and `prior` (the weight of λI), b = Σ w_i φ_i (y_i − ȳ).
fn dense_ssgp(
    model: &FittedSsgp,
    x: &DMatrix<f64>,
    y: &DVector<f64>,
    (weights, prior): (&[f64], f64),
    xt: &DMatrix<f64>,
) -> (DVector<f64>, DVector<f64>) {
    let s = model.spectral_points();
    let m = s.nrows();
    let two_pi = 2.0 * std::f64::consts::PI;
    let features = |x: &DMatrix<f64>| {
        DMatrix::from_fn(x.nrows(), 2 * m, |i, c| {
            let r = c % m;
            let ph: f64 = two_pi * (0..x.ncols()).map(|d| s[(r, d)] * x[(i, d)]).sum::<f64>();
            if c < m {
                ph.cos()
            } else {
                ph.sin()
            }
        })
    };
    let phi = features(x);
    let lambda = m as f64 * model.noise_variance() / model.signal_variance();
    let mut a = DMatrix::identity(2 * m, 2 * m) * (lambda * prior);
    let mut b = DVector::zeros(2 * m);
    for i in 0..x.nrows() {
        let row = phi.row(i).transpose();
        a += &row * row.transpose() * weights[i];
        b += &row * (weights[i] * (y[i] - model.y_mean()));
    }
    let chol = a.cholesky().unwrap();
    let alpha = chol.solve(&b);
    let pt = features(xt);
    let mean = (&pt * alpha).add_scalar(model.y_mean());
    let var = DVector::from_fn(xt.nrows(), |j, _| {
        let row = pt.row(j).transpose();
        model.noise_variance() * row.dot(&chol.solve(&row))
    });
    (mean, var)
}

fn ssgp_model(batch: &Dataset, m: usize, rng: &mut StdRng) -> FittedSsgp {
    let dim = batch.dim();
    let hyper = SsgpHyperparameters {
        hyper: Hyperparameters {
            lengthscales: DVector::from_fn(dim, |_, _| rng.random_range(0.8..2.0)),
            signal_variance: 2.0,
            noise_variance: 0.05,
        },
        unit_frequencies: DMatrix::from_fn(m, dim, |_, _| rng.random_range(-2.0..2.0)),
    };
    Ssgp::params(m)
        .threads(1)
        .check()
        .unwrap()
        .condition(batch, &hyper)
        .unwrap()
}

fn assert_close(a: &DVector<f64>, b: &DVector<f64>, rel: f64, what: &str) {
    for i in 0..a.len() {
        assert!(
            (a[i] - b[i]).abs() <= rel * b[i].abs().max(1e-300),
            "{what}[{i}]: {} vs {} (relative {:e})",
            a[i],
            b[i],
            (a[i] - b[i]).abs() / b[i].abs()
        );
    }
}

/// The batch's rows followed by the stream's: the data a model updated with the stream has seen.
fn stacked(
    (xb, yb): (&DMatrix<f64>, &DVector<f64>),
    (xs, ys): (&DMatrix<f64>, &DVector<f64>),
) -> (DMatrix<f64>, DVector<f64>) {
    let (nb, n) = (xb.nrows(), xb.nrows() + xs.nrows());
    let x = DMatrix::from_fn(n, xb.ncols(), |i, d| {
        if i < nb {
            xb[(i, d)]
        } else {
            xs[(i - nb, d)]
        }
    });
    let y = DVector::from_fn(n, |i, _| if i < nb { yb[i] } else { ys[i - nb] });
    (x, y)
}

/// Feeds the stream (xs, ys) to `update`: its first `singles` rows one at a time, the rest as
/// one batch.
fn feed(
    xs: &DMatrix<f64>,
    ys: &DVector<f64>,
    singles: usize,
    mut update: impl FnMut(&DMatrix<f64>, &DVector<f64>),
) {
    for i in 0..singles {
        update(
            &xs.rows(i, 1).into_owned(),
            &DVector::from_element(1, ys[i]),
        );
    }
    let rest = xs.nrows() - singles;
    update(
        &xs.rows(singles, rest).into_owned(),
        &ys.rows(singles, rest).into_owned(),
    );
}

#[test]
fn ssgp_updates_equal_conditioning_from_scratch() {
    let mut rng = StdRng::seed_from_u64(61);
    let (dim, m) = (3, 12);
    let (xb, yb) = samples(50, dim, 0.0, &mut rng);
    let batch = Dataset::new(xb.clone(), yb.clone()).unwrap();
    let mut model = ssgp_model(&batch, m, &mut rng);
    // The stream drifts beyond the batch's range: one sample at a time, then a batch of 30.
    let (xs, ys) = samples(60, dim, 1.5, &mut rng);
    feed(&xs, &ys, 30, |x, y| model.update(x, y).unwrap());
    assert_eq!(model.num_updates(), 60);
    let (x_all, y_all) = stacked((&xb, &yb), (&xs, &ys));
    let xt = samples(9, dim, 0.8, &mut rng).0;
    let (mean, var) = dense_ssgp(&model, &x_all, &y_all, (&[1.0; 110], 1.0), &xt);
    let p = model.predict(&xt).unwrap();
    assert_close(&p.mean, &mean, 1e-10, "mean");
    assert_close(&p.f_variance, &var, 1e-10, "latent variance");
    // Gradients and samples of the updated model come from the same posterior.
    let g = model.predict_gradients(&xt).unwrap();
    assert_close(&g.predictive.mean, &mean, 1e-10, "gradients' mean");
}

/// Models from `fit` (the calibration check's: learned or random-feature fits whose σ0² and σn²
/// the check rescaled, or the training mean) updated with a stream equal the dense posterior on
/// all the rows at their own θ — as the models from `condition` above; the check's kinds of
/// model were never updated in a test.
#[test]
fn updates_of_fitted_models_equal_conditioning_from_scratch() {
    let mut kinds = std::collections::BTreeSet::new();
    for seed in 0..6u64 {
        let mut rng = StdRng::seed_from_u64(70 + seed);
        let dim = 1 + (seed as usize % 3);
        let (xb, yb) = samples(120, dim, 0.0, &mut rng);
        let mut model = Ssgp::params(8)
            .seed(seed)
            .max_evaluations(60)
            .fit(&Dataset::new(xb.clone(), yb.clone()).unwrap())
            .unwrap();
        let remedy = model.training().remedy.expect("the check ran");
        let kind = match remedy {
            r if r.mean_kept() => "mean",
            r if r.random_features() => "features",
            _ => "learned",
        };
        kinds.insert((kind, remedy.variance_scale() != 1.0));
        let (xs, ys) = samples(30, dim, 0.5, &mut rng);
        feed(&xs, &ys, 10, |x, y| model.update(x, y).unwrap());
        let (x_all, y_all) = stacked((&xb, &yb), (&xs, &ys));
        let xt = samples(7, dim, 0.3, &mut rng).0;
        let (mean, var) = dense_ssgp(&model, &x_all, &y_all, (&[1.0; 150], 1.0), &xt);
        let p = model.predict(&xt).unwrap();
        let what = format!("seed {seed}, {kind} ×{}", remedy.variance_scale());
        assert_close(&p.mean, &mean, 1e-9, &format!("{what}: mean"));
        assert_close(
            &p.f_variance,
            &var,
            1e-9,
            &format!("{what}: latent variance"),
        );
    }
    assert!(kinds.len() >= 2, "{kinds:?}");
}

/// A standardised SSGP updated with samples on the original scale equals the dense posterior of
/// its wrapped model on all the rows scaled by the training scaler, mapped back (before, a
/// standardised fit could not be updated: a user had to scale the samples by hand).
#[test]
fn standardized_ssgp_updates_equal_conditioning_from_scratch_on_the_scaled_rows() {
    let mut rng = StdRng::seed_from_u64(91);
    let dim = 2;
    let raw = |(x, y): (DMatrix<f64>, DVector<f64>)| (x * 250.0, y.map(|v| 4e3 + 60.0 * v));
    let (xb, yb) = raw(samples(100, dim, 0.0, &mut rng));
    let mut model =
        ssgp::standardize::Standardized::new(Ssgp::params(8).seed(2).max_evaluations(60))
            .fit(&Dataset::new(xb.clone(), yb.clone()).unwrap())
            .unwrap();
    let (xs, ys) = raw(samples(40, dim, 0.5, &mut rng));
    feed(&xs, &ys, 15, |x, y| model.update(x, y).unwrap());
    assert_eq!(model.inner().num_updates(), 40);
    let (x_all, y_all) = stacked((&xb, &yb), (&xs, &ys));
    let scaler = model.scaler().clone();
    let z_all = scaler.transform_inputs(&x_all).unwrap();
    let t_all = y_all.map(|v| (v - scaler.y_mean) / scaler.y_scale);
    let xt = raw(samples(7, dim, 0.3, &mut rng)).0;
    let zt = scaler.transform_inputs(&xt).unwrap();
    let (mean, var) = dense_ssgp(model.inner(), &z_all, &t_all, (&[1.0; 140], 1.0), &zt);
    let mean = mean.map(|m| m * scaler.y_scale + scaler.y_mean);
    let var = var * scaler.y_scale.powi(2);
    let p = model.predict(&xt).unwrap();
    assert_close(&p.mean, &mean, 1e-9, "mean");
    assert_close(&p.f_variance, &var, 1e-9, "latent variance");
    // A sample of the wrong width is refused and leaves the model.
    let before = model.predict(&xt).unwrap();
    assert!(model
        .update(&DMatrix::zeros(1, dim + 1), &DVector::zeros(1))
        .is_err());
    assert_eq!(model.predict(&xt).unwrap().mean, before.mean);
}

/// The prior's share ρ in A = D + ρλI after `calls` (samples, γ) from a whole prior, by the
/// documented rule: each sample forgotten scales ρ by γ, and a ρ below ½ after a sample is
/// restored to 1.
fn prior_level(calls: &[(usize, f64)]) -> f64 {
    let mut level = 1.0;
    for &(len, gamma) in calls {
        for _ in 0..len {
            if gamma != 1.0 {
                level *= gamma;
            }
            if level < 0.5 {
                level = 1.0;
            }
        }
    }
    level
}

/// Forgetting discounts the batch's rows and the stream's, A = Σ_j γ^{k−j}φ_jφ_jᵀ + ρλI, but
/// keeps the prior term between λ/2 and λ: calls of one and of several samples whose prior is
/// restored inside a call and between calls, with different γ, against the dense formula.
#[test]
fn ssgp_forgetting_discounts_old_samples_and_keeps_the_prior() {
    let mut rng = StdRng::seed_from_u64(62);
    let (dim, m) = (2, 8);
    let (xb, yb) = samples(40, dim, 0.0, &mut rng);
    let batch = Dataset::new(xb.clone(), yb.clone()).unwrap();
    let mut model = ssgp_model(&batch, m, &mut rng);
    // The last call forgets all but its own samples and the prior (γ = 1e-300 used to overflow
    // the weights: the rank-one update met a factor scaled to 1e-150).
    let calls = [
        (25, 0.97),
        (1, 0.9),
        (1, 1.0),
        (6, 0.9),
        (2, 0.8),
        (1, 0.6),
        (3, 1e-300),
    ];
    let k: usize = calls.iter().map(|c| c.0).sum();
    let (xs, ys) = samples(k, dim, 0.5, &mut rng);
    let xt = samples(7, dim, 0.3, &mut rng).0;
    // Each row's weight: the product of the γ of every sample after it.
    let mut weights = vec![1.0; 40 + k];
    let mut start = 0;
    for (c, &(len, gamma)) in calls.iter().enumerate() {
        model
            .update_forgetting(
                &xs.rows(start, len).into_owned(),
                &ys.rows(start, len).into_owned(),
                gamma,
            )
            .unwrap();
        for i in 0..len {
            for w in &mut weights[..40 + start + i] {
                *w *= gamma;
            }
        }
        start += len;
        let level = prior_level(&calls[..=c]);
        assert!((0.5..=1.0).contains(&level));
        let seen = 40 + start;
        let (x_all, y_all) = stacked(
            (&xb, &yb),
            (
                &xs.rows(0, start).into_owned(),
                &ys.rows(0, start).into_owned(),
            ),
        );
        let (mean, var) = dense_ssgp(&model, &x_all, &y_all, (&weights[..seen], level), &xt);
        let p = model.predict(&xt).unwrap();
        assert_close(&p.mean, &mean, 1e-10, &format!("mean after call {c}"));
        assert_close(
            &p.f_variance,
            &var,
            1e-10,
            &format!("variance after call {c}"),
        );
    }
    // Restored inside the first call (after 23 samples), in the fourth (its sixth sample), the
    // sixth and each sample of the last.
    assert_eq!(prior_level(&calls[..4]), 1.0);
    assert_eq!(prior_level(&calls[..5]), 0.8 * 0.8);
    assert!(model.update_forgetting(&xs, &ys, 0.0).is_err());
    assert!(model.update_forgetting(&xs, &ys, 1.5).is_err());
}

/// A long stream along a curve that visits few directions of the features, with forgetting:
/// the prior keeps the directions it does not visit, so predictions off the curve return to the
/// prior instead of drifting (before the prior was kept: means of 10¹⁴ after 6 400 samples at
/// γ = 0.99, m = 50).
#[test]
fn forgetting_on_a_long_narrow_stream_keeps_predictions_bounded() {
    let mut rng = StdRng::seed_from_u64(65);
    let (xb, yb) = samples(60, 2, 0.0, &mut rng);
    let mut model = ssgp_model(&Dataset::new(xb, yb).unwrap(), 20, &mut rng);
    let grid = DMatrix::from_fn(100, 2, |i, d| {
        -2.0 + 4.0 * ((i * if d == 0 { 1 } else { 37 }) % 100) as f64 / 99.0
    });
    let prior_sd = model.signal_variance().sqrt();
    for step in 0..4000 {
        let t = 0.01 * step as f64;
        let x = DMatrix::from_row_slice(1, 2, &[1.5 * t.sin(), 1.5 * (0.5 * t).cos()]);
        let y = DVector::from_element(1, 5.0 + 3.0 * (x[(0, 0)] + x[(0, 1)]).sin());
        model.update_forgetting(&x, &y, 0.95).unwrap();
    }
    let p = model.predict(&grid).unwrap();
    for i in 0..grid.nrows() {
        // The latent variance never exceeds the prior's at half its weight's precision (×2).
        assert!(
            p.f_variance[i] <= 2.0 * model.signal_variance() * (1.0 + 1e-9),
            "variance {} at grid point {i}",
            p.f_variance[i]
        );
        assert!(
            (p.mean[i] - model.y_mean()).abs() <= 10.0 * prior_sd + 3.0,
            "mean {} at grid point {i}",
            p.mean[i]
        );
    }
}

#[test]
fn ssgp_update_rejects_bad_samples_and_leaves_the_model() {
    let mut rng = StdRng::seed_from_u64(63);
    let (xb, yb) = samples(30, 2, 0.0, &mut rng);
    let mut model = ssgp_model(&Dataset::new(xb, yb).unwrap(), 5, &mut rng);
    let xt = samples(4, 2, 0.0, &mut rng).0;
    let before = model.predict(&xt).unwrap();
    let x = DMatrix::from_element(2, 2, 0.5);
    assert!(model.update(&x, &DVector::from_element(3, 1.0)).is_err());
    assert!(model
        .update(
            &DMatrix::from_element(2, 3, 0.5),
            &DVector::from_element(2, 1.0)
        )
        .is_err());
    assert!(model
        .update(&x, &DVector::from_vec(vec![1.0, f64::NAN]))
        .is_err());
    // An empty batch is checked too (one of the wrong D was accepted), and one of the right D
    // changes nothing.
    let empty = DVector::zeros(0);
    for (dim, ok) in [(7, false), (2, true)] {
        let batch = DMatrix::zeros(0, dim);
        assert_eq!(model.update(&batch, &empty).is_ok(), ok, "D = {dim}");
        assert_eq!(
            model.update_forgetting(&batch, &empty, 0.9).is_ok(),
            ok,
            "D = {dim}"
        );
    }
    assert_eq!(model.predict(&xt).unwrap(), before);
    assert_eq!(model.num_updates(), 0);
}

#[cfg(feature = "serde")]
#[test]
fn updated_ssgp_saves_loads_and_keeps_updating() {
    use ssgp::persist::{from_json, to_json};
    let mut rng = StdRng::seed_from_u64(64);
    let (xb, yb) = samples(40, 2, 0.0, &mut rng);
    let mut model = ssgp_model(&Dataset::new(xb, yb).unwrap(), 9, &mut rng);
    let (xs, ys) = samples(30, 2, 1.0, &mut rng);
    // With forgetting: the prior, restored at the 14th sample, is at 0.95 of λ when saved, and
    // restored again at the loaded model's 13th sample as at the original's.
    let gamma = 0.95;
    model
        .update_forgetting(
            &xs.rows(0, 15).into_owned(),
            &ys.rows(0, 15).into_owned(),
            gamma,
        )
        .unwrap();
    let xt = samples(6, 2, 0.5, &mut rng).0;
    let json = to_json(&model).unwrap();
    let mut loaded: FittedSsgp = from_json(&json).unwrap();
    assert_eq!(loaded.predict(&xt).unwrap(), model.predict(&xt).unwrap());
    // The online record is saved: the count, the prequential record and its variance factor.
    assert_eq!(loaded.num_updates(), 15);
    assert_eq!(loaded.prequential(), model.prequential());
    assert_eq!(
        loaded.online_variance_factor(),
        model.online_variance_factor()
    );
    // A record that does not count its updates, holds a negative sum, or a prior level outside
    // [½, 1], is refused.
    let record: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(record["model"]["ssgp"]["online"]["prior_level"], gamma);
    for (field, value) in [
        ("updates", 14.0),
        ("sum_z2", -1.0),
        ("prior_level", 0.4),
        ("prior_level", 1.5),
    ] {
        let mut v = record.clone();
        let online = &mut v["model"]["ssgp"]["online"];
        match field {
            "updates" => online["updates"] = serde_json::json!(value as usize),
            "prior_level" => online["prior_level"] = serde_json::json!(value),
            _ => online["prequential"][field] = serde_json::json!(value),
        }
        assert!(
            from_json::<FittedSsgp>(&v.to_string()).is_err(),
            "{field} {value}"
        );
    }
    // Counts at the largest usize (a hand-edited file) stay there as the model is updated: they
    // wrapped to 0 in release builds (the next save dropped the online record) and panicked in
    // debug builds.
    let mut v = record.clone();
    v["model"]["ssgp"]["online"]["updates"] = serde_json::json!(usize::MAX);
    v["model"]["ssgp"]["online"]["prequential"]["rows"] = serde_json::json!(usize::MAX);
    let mut saturated: FittedSsgp = from_json(&v.to_string()).unwrap();
    let one = |m: &mut FittedSsgp| {
        m.update(&xs.rows(15, 1).into_owned(), &ys.rows(15, 1).into_owned())
            .unwrap()
    };
    one(&mut saturated);
    assert_eq!(saturated.num_updates(), usize::MAX);
    assert_eq!(saturated.prequential().map(|p| p.rows), Some(usize::MAX));
    // The loaded model holds b = Φᵀ(y − ȳ) as saved (format 13) and goes on as the original
    // does, bit for bit; from a file without it (before format 13) b is recovered as Aα, and
    // the model goes on to round-off.
    let mut recovered: FittedSsgp = {
        let mut v = record.clone();
        v["model"]["ssgp"]
            .as_object_mut()
            .unwrap()
            .remove("rhs")
            .unwrap();
        from_json(&v.to_string()).unwrap()
    };
    for m in [&mut model, &mut loaded, &mut recovered] {
        m.update_forgetting(
            &xs.rows(15, 15).into_owned(),
            &ys.rows(15, 15).into_owned(),
            gamma,
        )
        .unwrap();
    }
    let b = model.predict(&xt).unwrap();
    assert_eq!(loaded.predict(&xt).unwrap(), b, "after load and update");
    let a = recovered.predict(&xt).unwrap();
    assert_close(&a.mean, &b.mean, 1e-10, "mean after load and update");
    assert_close(
        &a.f_variance,
        &b.f_variance,
        1e-10,
        "variance after load and update",
    );
}

/// Every kernel's full GP updated online equals the full GP conditioned from scratch on all the
/// rows at the same θ (the update test above covers the squared exponential against its dense
/// definition): the stream's targets have the batch's mean, so both models centre the targets
/// alike. Means and latent variances to 1e-9, −log p to 1e-10.
#[test]
fn every_kernels_full_gp_update_equals_conditioning_from_scratch() {
    use ssgp::kernel::Kernel;
    for (k, kernel) in Kernel::ALL.into_iter().enumerate() {
        let mut rng = StdRng::seed_from_u64(90 + k as u64);
        let (xb, yb) = samples(30, 2, 0.0, &mut rng);
        let (xs, ys) = samples(20, 2, 1.0, &mut rng);
        let ys = ys.add_scalar(yb.mean() - ys.mean());
        let theta = DVector::from_vec(vec![0.1, 0.5, 0.3, -1.5]);
        let params = FullGp::params()
            .kernel(kernel)
            .threads(1)
            .relative_noise_floor(0.0)
            .check()
            .unwrap();
        let mut model = params
            .condition(&Dataset::new(xb.clone(), yb.clone()).unwrap(), &theta)
            .unwrap();
        feed(&xs, &ys, 5, |x, y| model.update(x, y).unwrap());
        let (x_all, y_all) = stacked((&xb, &yb), (&xs, &ys));
        let scratch = params
            .condition(&Dataset::new(x_all, y_all).unwrap(), &theta)
            .unwrap();
        assert_eq!((model.jitter(), scratch.jitter()), (0.0, 0.0), "{kernel:?}");
        let xt = samples(6, 2, 0.5, &mut rng).0;
        let (a, b) = (model.predict(&xt).unwrap(), scratch.predict(&xt).unwrap());
        assert_close(&a.mean, &b.mean, 1e-9, &format!("{kernel:?} mean"));
        assert_close(
            &a.f_variance,
            &b.f_variance,
            1e-9,
            &format!("{kernel:?} variance"),
        );
        assert_relative_eq!(
            model.neg_log_evidence(),
            scratch.neg_log_evidence(),
            max_relative = 1e-10
        );
    }
}

#[test]
fn full_gp_updates_equal_conditioning_from_scratch() {
    let mut rng = StdRng::seed_from_u64(65);
    let dim = 2;
    let (xb, yb) = samples(30, dim, 0.0, &mut rng);
    let batch = Dataset::new(xb.clone(), yb.clone()).unwrap();
    let theta = DVector::from_vec(vec![0.2, 0.4, 0.3, -1.2]);
    // No relative noise floor: conditioning from scratch on all the data would resolve it on the
    // variance of all the targets, where the updated model keeps its batch's floor.
    let mut model = FullGp::params()
        .threads(1)
        .relative_noise_floor(0.0)
        .check()
        .unwrap()
        .condition(&batch, &theta)
        .unwrap();
    let (xs, ys) = samples(20, dim, 1.0, &mut rng);
    feed(&xs, &ys, 10, |x, y| model.update(x, y).unwrap());
    assert_eq!(model.len(), 50);
    let (x_all, y_all) = stacked((&xb, &yb), (&xs, &ys));
    let ell = [0.2f64.exp(), 0.4f64.exp()];
    let (sf2, sn2) = ((0.6f64).exp(), (-2.4f64).exp());
    let yc = y_all.add_scalar(-yb.mean());
    let k = se_ard_by_definition(&x_all, &x_all, &ell, sf2) + DMatrix::identity(50, 50) * sn2;
    let chol = k.clone().cholesky().unwrap();
    let xt = samples(8, dim, 0.5, &mut rng).0;
    let ks = se_ard_by_definition(&xt, &x_all, &ell, sf2);
    let mean = (&ks * chol.solve(&yc)).add_scalar(yb.mean());
    let var = DVector::from_fn(8, |j, _| {
        let kj = ks.row(j).transpose();
        sf2 - kj.dot(&chol.solve(&kj))
    });
    let p = model.predict(&xt).unwrap();
    assert_close(&p.mean, &mean, 1e-10, "mean");
    assert_close(&p.f_variance, &var, 1e-10, "latent variance");
    assert_relative_eq!(
        model.neg_log_evidence(),
        crate::common::dense_neg_log_evidence(k, &yc),
        max_relative = 1e-10
    );

    #[cfg(feature = "serde")]
    {
        use ssgp::persist::{from_json, to_json};
        // The fit's rows and each update's are replayed on load: the same bits.
        let json = to_json(&model).unwrap();
        let loaded: ssgp::FittedFullGp = from_json(&json).unwrap();
        assert_eq!(loaded.predict(&xt).unwrap(), p);
        assert_eq!(
            loaded.predict_covariance(&xt).unwrap(),
            model.predict_covariance(&xt).unwrap()
        );
        assert_eq!(loaded.neg_log_evidence(), model.neg_log_evidence());
        assert_eq!(loaded.len(), 50);
        assert_eq!(loaded.prequential(), model.prequential());
        assert_eq!(
            loaded.online_variance_factor(),
            model.online_variance_factor()
        );
        // A file from before (no `blocks`) refactorises on all rows: within round-off.
        let mut value: serde_json::Value = serde_json::from_str(&json).unwrap();
        let saved = value["model"]["full_gp"].as_object_mut().unwrap();
        assert!(saved.remove("online").is_some());
        let blocks = saved.remove("blocks");
        assert_eq!(
            blocks,
            Some(serde_json::json!([30, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 10]))
        );
        value["format_version"] = serde_json::json!(10);
        let old: ssgp::FittedFullGp = from_json(&value.to_string()).unwrap();
        let q = old.predict(&xt).unwrap();
        assert_close(&q.mean, &p.mean, 1e-12, "mean after an old file's load");
        assert_close(
            &q.f_variance,
            &p.f_variance,
            1e-12,
            "variance after an old file's load",
        );
    }
}

/// Samples whose factor memory cannot hold are an allocation error, never an abort, and a
/// target too far from the fit's ȳ (its square overflows) a scale error; the model is unchanged.
#[test]
fn full_gp_update_checks_its_size_and_targets_and_leaves_the_model() {
    let mut rng = StdRng::seed_from_u64(66);
    let (xb, yb) = samples(30, 1, 0.0, &mut rng);
    let mut model = FullGp::params()
        .threads(1)
        .max_evaluations(20)
        .fit(&Dataset::new(xb, yb).unwrap())
        .unwrap();
    let xt = samples(5, 1, 0.0, &mut rng).0;
    let before = model.predict(&xt).unwrap();
    let k = 2_000_000;
    let huge = model.update(
        &DMatrix::from_fn(k, 1, |i, _| i as f64 / k as f64),
        &DVector::from_element(k, 1.0),
    );
    assert!(
        matches!(huge, Err(ssgp::Error::Allocation { .. })),
        "{huge:?}"
    );
    let far = model.update(
        &DMatrix::from_element(1, 1, 0.5),
        &DVector::from_element(1, 1e300),
    );
    assert!(matches!(far, Err(ssgp::Error::Scale { .. })), "{far:?}");
    assert_eq!(model.len(), 30);
    assert_eq!(model.predict(&xt).unwrap(), before);
    assert!(model.prequential().is_none());
}

/// A target within the spread a fit allows but so far from ȳ for a model of tiny noise that
/// yᵀα overflows is an error and leaves the model as it was (the update returned Ok with
/// −log p = ∞, and the saved model could not be loaded); the model then takes a sample as before.
#[test]
fn a_full_gp_update_whose_evidence_overflows_leaves_the_model() {
    let x = DMatrix::from_fn(40, 1, |i, _| i as f64 / 8.0);
    let y = x.column(0).map(|v| 1e-3 * v.sin());
    let mut model = FullGp::params()
        .threads(1)
        .max_evaluations(30)
        .fit(&Dataset::new(x.clone(), y).unwrap())
        .unwrap();
    let xt = DMatrix::from_fn(4, 1, |i, _| 0.3 + i as f64);
    let (before, evidence) = (model.predict(&xt).unwrap(), model.neg_log_evidence());
    let far = model.update(&x.rows(3, 1).into_owned(), &DVector::from_element(1, 1e150));
    assert!(
        matches!(far, Err(ssgp::Error::NonFiniteObjective { .. })),
        "{far:?}"
    );
    assert_eq!((model.len(), model.neg_log_evidence()), (40, evidence));
    assert_eq!(model.predict(&xt).unwrap(), before);
    assert!(model.prequential().is_none());
    model
        .update(
            &DMatrix::from_element(1, 1, 0.7),
            &DVector::from_element(1, 6e-4),
        )
        .unwrap();
    assert_eq!(model.len(), 41);
}

/// An update that fails (a target whose square overflows) leaves the model as it was: its
/// predictions, its count and its prequential record. (A failure after absorbing the samples
/// takes the same path — nothing is committed before α is finite — but none is known to be
/// reachable since the prior is kept: γ = 1e-300, which overflowed the weights, now forgets all
/// but the call's samples and the prior.)
#[test]
fn a_failed_ssgp_update_leaves_the_model_as_it_was() {
    use ssgp::data::MultiDataset;
    let mut rng = StdRng::seed_from_u64(67);
    let (xb, yb) = samples(30, 2, 0.0, &mut rng);
    let mut model = ssgp_model(&Dataset::new(xb.clone(), yb.clone()).unwrap(), 5, &mut rng);
    let (xs, ys) = samples(6, 2, 0.5, &mut rng);
    model
        .update(&xs.rows(0, 3).into_owned(), &ys.rows(0, 3).into_owned())
        .unwrap();
    let xt = samples(4, 2, 0.0, &mut rng).0;
    let (before, record) = (model.predict(&xt).unwrap(), model.prequential());
    let mut twin = model.clone();
    let (x3, y3) = (xs.rows(3, 3).into_owned(), ys.rows(3, 3).into_owned());
    let far = model.update(&x3, &DVector::from_element(3, -1e300));
    assert!(matches!(far, Err(ssgp::Error::Scale { .. })), "{far:?}");
    assert_eq!(model.predict(&xt).unwrap(), before);
    assert_eq!(model.prequential(), record);
    assert_eq!(model.num_updates(), 3);
    // It goes on as one that never saw the failed calls.
    twin.update(&x3, &y3).unwrap();
    model.update(&x3, &y3).unwrap();
    assert_eq!(model.predict(&xt).unwrap(), twin.predict(&xt).unwrap());

    let y2 = DMatrix::from_fn(30, 2, |i, p| yb[i] * (p + 1) as f64);
    let mut multi = Ssgp::params(5)
        .seed(1)
        .threads(1)
        .max_evaluations(20)
        .fit_multi(&MultiDataset::new(xb, y2).unwrap())
        .unwrap();
    let before = multi.predict(&xt).unwrap();
    let y3m = DMatrix::from_fn(3, 2, |i, p| y3[i] * (p + 1) as f64);
    let far = multi.update(&x3, &DMatrix::from_element(3, 2, 1e300));
    assert!(matches!(far, Err(ssgp::Error::Scale { .. })), "{far:?}");
    assert_eq!(multi.predict(&xt).unwrap(), before);
    assert_eq!(multi.num_updates(), 0);
    assert_eq!(multi.prequential(0).unwrap(), None);
    multi.update_forgetting(&x3, &y3m, 1e-300).unwrap();
    for output in multi.predict(&xt).unwrap() {
        assert!(output
            .mean
            .iter()
            .chain(&output.y_variance)
            .all(|v| v.is_finite()));
    }
}

/// Running sums of one output's predictions against the targets, as `prequential` reports them.
#[derive(Default)]
struct Scored {
    rows: usize,
    z2: f64,
    squared_error: f64,
    squared_deviation: f64,
    recent_z2: f64,
    recent_weight: f64,
}

impl Scored {
    fn add(&mut self, prediction: &ssgp::Predictive, y: &[f64], y_mean: f64) {
        for (i, &yi) in y.iter().enumerate() {
            let e = yi - prediction.mean[i];
            self.rows += 1;
            self.z2 += e * e / prediction.y_variance[i];
            self.squared_error += e * e;
            self.squared_deviation += (yi - y_mean).powi(2);
            self.recent_z2 = 0.99 * self.recent_z2 + e * e / prediction.y_variance[i];
            self.recent_weight = 0.99 * self.recent_weight + 1.0;
        }
    }

    /// The recent mean z² (each sample weighted 0.99 per later one) where above 1.
    fn factor(&self) -> f64 {
        (self.recent_z2 / self.recent_weight).max(1.0)
    }

    fn check(&self, online: Option<ssgp::termination::HeldOutCalibration>, what: &str) {
        let online = online.unwrap_or_else(|| panic!("{what}: no prequential record"));
        assert_eq!(online.rows, self.rows, "{what}");
        let mean_z2 = self.z2 / self.rows as f64;
        assert_relative_eq!(online.mean_z2, mean_z2, max_relative = 1e-10);
        let nmse = self.squared_error / self.squared_deviation;
        assert_relative_eq!(online.nmse, nmse, max_relative = 1e-10);
    }
}

/// The prequential record is `predict` of the model before each call at the call's samples,
/// scored against them (calls of one and of several samples, with and without forgetting), for
/// one output and for each of several, and survives `output(p)`.
#[test]
fn prequential_record_is_each_calls_predictions_before_it() {
    let mut rng = StdRng::seed_from_u64(29);
    let (xb, yb) = samples(40, 2, 0.0, &mut rng);
    let batch = Dataset::new(xb.clone(), yb.clone()).unwrap();
    let mut model = ssgp_model(&batch, 12, &mut rng);
    assert!(model.prequential().is_none());
    let (xs, ys) = samples(30, 2, 1.5, &mut rng);
    let mut scored = Scored::default();
    let mut start = 0;
    for (len, forgetting) in [
        (1, 1.0),
        (1, 1.0),
        (5, 0.95),
        (1, 0.9),
        (10, 1.0),
        (12, 0.99),
    ] {
        let x = xs.rows(start, len).into_owned();
        let y = ys.rows(start, len).into_owned();
        scored.add(&model.predict(&x).unwrap(), y.as_slice(), model.y_mean());
        model.update_forgetting(&x, &y, forgetting).unwrap();
        start += len;
    }
    scored.check(model.prequential(), "one output");
    assert!(scored.factor() > 1.0, "the shifted stream widens");
    assert_relative_eq!(
        model.online_variance_factor(),
        scored.factor(),
        max_relative = 1e-10
    );

    let outputs = 3;
    let y2 = DMatrix::from_fn(xb.nrows(), outputs, |i, p| {
        yb[i] * (p + 1) as f64 + p as f64
    });
    let multi_batch = ssgp::data::MultiDataset::new(xb, y2).unwrap();
    let mut multi = Ssgp::params(12)
        .seed(2)
        .threads(1)
        .max_evaluations(30)
        .fit_multi(&multi_batch)
        .unwrap();
    assert!(multi.prequential(0).unwrap().is_none());
    assert!(multi.prequential(outputs).is_err());
    let ys2 = DMatrix::from_fn(xs.nrows(), outputs, |i, p| {
        ys[i] * (p + 1) as f64 + p as f64
    });
    let mut scored: Vec<Scored> = (0..outputs).map(|_| Scored::default()).collect();
    let mut start = 0;
    for (len, forgetting) in [(1, 1.0), (7, 0.9), (1, 1.0), (21, 1.0)] {
        let x = xs.rows(start, len).into_owned();
        let y = ys2.rows(start, len).into_owned();
        for (p, prediction) in multi.predict(&x).unwrap().iter().enumerate() {
            let column = y.column(p).into_owned();
            scored[p].add(prediction, column.as_slice(), multi.y_means()[p]);
        }
        multi.update_forgetting(&x, &y, forgetting).unwrap();
        start += len;
    }
    for (p, s) in scored.iter().enumerate() {
        s.check(multi.prequential(p).unwrap(), &format!("output {p}"));
        let alone = multi.output(p).unwrap();
        assert_eq!(
            alone.prequential(),
            multi.prequential(p).unwrap(),
            "output {p} alone"
        );
        let factor = multi.online_variance_factor(p).unwrap();
        assert_relative_eq!(factor, s.factor(), max_relative = 1e-10);
        assert_eq!(alone.online_variance_factor(), factor, "output {p} alone");
    }
    assert!(multi.online_variance_factor(outputs).is_err());
}

/// The full GP's prequential record is `predict` before each call at the call's samples, scored
/// against them (calls of one and of several samples).
#[test]
fn full_gp_prequential_record_is_each_calls_predictions_before_it() {
    let mut rng = StdRng::seed_from_u64(31);
    let (xb, yb) = samples(30, 2, 0.0, &mut rng);
    let batch = Dataset::new(xb, yb).unwrap();
    let theta = DVector::from_vec(vec![0.2, 0.4, 0.3, -1.2]);
    let mut model = FullGp::params()
        .threads(1)
        .check()
        .unwrap()
        .condition(&batch, &theta)
        .unwrap();
    assert!(model.prequential().is_none());
    assert_eq!(model.online_variance_factor(), 1.0);
    let (xs, ys) = samples(20, 2, 1.0, &mut rng);
    let mut scored = Scored::default();
    let mut start = 0;
    for len in [1, 4, 1, 6, 8] {
        let x = xs.rows(start, len).into_owned();
        let y = ys.rows(start, len).into_owned();
        scored.add(&model.predict(&x).unwrap(), y.as_slice(), batch.y_mean());
        model.update(&x, &y).unwrap();
        start += len;
    }
    scored.check(model.prequential(), "full GP");
    assert_relative_eq!(
        model.online_variance_factor(),
        scored.factor(),
        max_relative = 1e-10
    );
}

/// A full GP conditioned with almost no noise on inputs so dense that its factor needs jitter
/// δ, updated sample by sample at its training inputs: their predictive variances (the new
/// block's diagonal σ0² + σn² + δ − ‖L⁻¹k‖², less δ) are recorded as `predict` gives them —
/// never below σn² by round-off — so the one-step-ahead record stays finite and not negative.
#[test]
fn a_full_gp_update_at_its_training_inputs_records_positive_variances() {
    let x = DMatrix::from_fn(200, 1, |i, _| i as f64 / 200.0);
    let y = x.map(|v| (2.0 * v).sin()).column(0).into_owned();
    // θ = [log ℓ, log σ0, p_n]: ℓ = 1 over inputs 0.005 apart, σn² = e^{2·(−20)}.
    let theta = DVector::from_vec(vec![0.0, 0.0, -20.0]);
    let mut model = FullGp::params()
        .relative_noise_floor(0.0)
        .check()
        .unwrap()
        .condition(&Dataset::new(x.clone(), y.clone()).unwrap(), &theta)
        .unwrap();
    assert!(model.jitter() > 0.0, "δ = {:e}", model.jitter());
    for i in (0..200).step_by(7) {
        let xi = x.rows(i, 1).into_owned();
        let yi = y.rows(i, 1).into_owned();
        model.update(&xi, &yi).unwrap();
    }
    let record = model.prequential().unwrap();
    assert_eq!(record.rows, 29);
    assert!(
        record.mean_z2.is_finite() && record.mean_z2 >= 0.0,
        "{record:?}, σn² {:e}",
        model.noise_variance()
    );
}
