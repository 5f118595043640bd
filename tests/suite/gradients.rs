//! `predict_gradients` on every model and kernel against central differences of `predict`, and
//! against the models' own `predict` for the values it returns.

use nalgebra::{DMatrix, DVector};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use ssgp::ensemble::{Combine, Ensemble};
use ssgp::kernel::Kernel;
use ssgp::ssgp::{Ssgp, SsgpHyperparameters};
use ssgp::standardize::Standardized;
use ssgp::{
    Dataset, Fitc, FittedRegressor, FullGp, ParamGuard, PredictiveGradients, Regressor, Vfe,
};

fn problem(n: usize, dim: usize, rng: &mut StdRng) -> Dataset {
    let x = DMatrix::from_fn(n, dim, |_, _| rng.random_range(-2.0..2.0));
    let y = DVector::from_fn(n, |i, _| {
        (0..dim).map(|d| x[(i, d)]).sum::<f64>().sin() + 0.1 * rng.random_range(-1.0..1.0)
    });
    Dataset::new(x, y).unwrap()
}

/// θ = [log ℓ, log σ0, log σn] at random.
fn head(dim: usize, rng: &mut StdRng) -> DVector<f64> {
    DVector::from_fn(dim + 2, |i, _| match i {
        i if i < dim => rng.random_range(-0.3..0.7),
        i if i == dim => rng.random_range(-0.5..0.5),
        _ => rng.random_range(-1.5..-0.5),
    })
}

/// Central differences (step `h`) of `predict`'s means and y-variances at every row of `x`,
/// against `predict_gradients`: |Δ| ≤ `tol`·max(1, |g|) entry by entry; the values it returns
/// equal `predict`'s to 1e-11. Returns the largest |Δ| / max(1, |g|).
fn check(model: &dyn FittedRegressor, x: &DMatrix<f64>, h: f64, tol: f64, label: &str) -> f64 {
    let mut worst = 0.0f64;
    let g: PredictiveGradients = model.predict_gradients(x).unwrap();
    let p = model.predict(x).unwrap();
    assert_eq!(g.mean.shape(), x.shape(), "{label}");
    assert_eq!(g.variance.shape(), x.shape(), "{label}");
    for j in 0..x.nrows() {
        let scale = p.mean[j].abs().max(1.0);
        assert!(
            (g.predictive.mean[j] - p.mean[j]).abs() <= 1e-11 * scale,
            "{label}: mean"
        );
        let vscale = p.y_variance[j].abs().max(1e-3);
        assert!(
            (g.predictive.y_variance[j] - p.y_variance[j]).abs() <= 1e-11 * vscale,
            "{label}: variance {} vs {}",
            g.predictive.y_variance[j],
            p.y_variance[j]
        );
    }
    for d in 0..x.ncols() {
        let (mut xp, mut xm) = (x.clone(), x.clone());
        xp.column_mut(d).add_scalar_mut(h);
        xm.column_mut(d).add_scalar_mut(-h);
        let (pp, pm) = (model.predict(&xp).unwrap(), model.predict(&xm).unwrap());
        for j in 0..x.nrows() {
            let fd_mean = (pp.mean[j] - pm.mean[j]) / (2.0 * h);
            let fd_var = (pp.y_variance[j] - pm.y_variance[j]) / (2.0 * h);
            let (gm, gv) = (g.mean[(j, d)], g.variance[(j, d)]);
            worst = worst
                .max((fd_mean - gm).abs() / gm.abs().max(1.0))
                .max((fd_var - gv).abs() / gv.abs().max(1.0));
            assert!(
                (fd_mean - gm).abs() <= tol * gm.abs().max(1.0),
                "{label}: ∂μ/∂x[{j},{d}]: analytic {gm} vs finite difference {fd_mean}"
            );
            assert!(
                (fd_var - gv).abs() <= tol * gv.abs().max(1.0),
                "{label}: ∂σ²/∂x[{j},{d}]: analytic {gv} vs finite difference {fd_var}"
            );
        }
    }
    worst
}

fn test_inputs(rows: usize, dim: usize, rng: &mut StdRng) -> DMatrix<f64> {
    DMatrix::from_fn(rows, dim, |_, _| rng.random_range(-2.5..2.5))
}

#[test]
fn ssgp_gradients_match_central_differences() {
    let mut rng = StdRng::seed_from_u64(41);
    for (m, dim) in [(1, 1), (7, 3), (20, 2)] {
        let data = problem(40, dim, &mut rng);
        let theta = head(dim, &mut rng);
        let hyper = SsgpHyperparameters {
            hyper: ssgp::hyperparameters::Hyperparameters {
                lengthscales: DVector::from_fn(dim, |d, _| theta[d].exp()),
                signal_variance: (2.0 * theta[dim]).exp(),
                noise_variance: (2.0 * theta[dim + 1]).exp(),
            },
            unit_frequencies: DMatrix::from_fn(m, dim, |_, _| rng.random_range(-2.0..2.0)),
        };
        // Small chunks, so the gradient loop crosses chunk borders.
        let fitted = Ssgp::params(m)
            .chunk_rows(3)
            .threads(1)
            .check()
            .unwrap()
            .condition(&data, &hyper)
            .unwrap();
        let x = test_inputs(8, dim, &mut rng);
        check(&fitted, &x, 1e-5, 1e-6, &format!("ssgp m={m} D={dim}"));
    }
}

#[test]
fn full_gp_fitc_and_vfe_gradients_match_central_differences_for_every_kernel() {
    let mut rng = StdRng::seed_from_u64(42);
    for kernel in Kernel::ALL {
        let dim = 2;
        let data = problem(30, dim, &mut rng);
        let theta = head(dim, &mut rng);
        let full = FullGp::params()
            .kernel(kernel)
            .threads(1)
            .check()
            .unwrap()
            .condition(&data, &theta)
            .unwrap();
        let x = test_inputs(7, dim, &mut rng);
        check(&full, &x, 1e-6, 1e-5, &format!("full {}", kernel.name()));
        let m = 6;
        let fitc = Fitc::params(m).kernel(kernel).threads(1).check().unwrap();
        let mut theta_fitc = DVector::zeros(dim + 2 + m * dim);
        theta_fitc.rows_mut(0, dim + 2).copy_from(&theta);
        for i in dim + 2..theta_fitc.len() {
            theta_fitc[i] = rng.random_range(-2.0..2.0);
        }
        let fitc = fitc.condition(&data, &theta_fitc).unwrap();
        check(&fitc, &x, 1e-6, 1e-5, &format!("fitc {}", kernel.name()));
        // VFE at the same θ: the same posterior form through its own factors (A = I + VVᵀ/σn²).
        let vfe = Vfe::params(m)
            .kernel(kernel)
            .threads(1)
            .check()
            .unwrap()
            .condition(&data, &theta_fitc)
            .unwrap();
        check(&vfe, &x, 1e-6, 1e-5, &format!("vfe {}", kernel.name()));
    }
}

#[test]
fn matern12_at_a_training_input_gives_the_central_difference_limit() {
    let mut rng = StdRng::seed_from_u64(43);
    let data = problem(20, 2, &mut rng);
    let theta = head(2, &mut rng);
    let full = FullGp::params()
        .kernel(Kernel::Matern12)
        .threads(1)
        .check()
        .unwrap()
        .condition(&data, &theta)
        .unwrap();
    // At training inputs the kink's own term cancels in central differences exactly, so they
    // converge to the documented value (a step not so small that the squared distances' round-off
    // of ε‖z‖² shows in r ≈ h).
    let x = data.x().rows(0, 4).into_owned();
    check(&full, &x, 1e-4, 1e-4, "full matern12 at training inputs");
}

#[test]
fn wrapped_models_gradients_follow_the_chain_rule() {
    let mut rng = StdRng::seed_from_u64(44);
    let dim = 2;
    // Inputs on different scales and a shifted target: the scaler's chain rule matters.
    let base = problem(60, dim, &mut rng);
    let mut x = base.x().clone();
    x.column_mut(0).scale_mut(30.0);
    x.column_mut(1).add_scalar_mut(5.0);
    let data = Dataset::new(x, base.y().map(|v| 100.0 + 20.0 * v)).unwrap();
    let budget = |p: ssgp::ssgp::SsgpParams| p.max_evaluations(40).initial_draws(3).threads(1);
    let standardized = Standardized::new(budget(Ssgp::params(8)).seed(3))
        .fit(&data)
        .unwrap();
    let mut xt = test_inputs(6, dim, &mut rng);
    xt.column_mut(0).scale_mut(30.0);
    xt.column_mut(1).add_scalar_mut(5.0);
    check(&standardized, &xt, 1e-5, 1e-5, "standardised ssgp");
    for combine in [Combine::Best, Combine::Mixture] {
        let members: Vec<Box<dyn Regressor>> = (0..3)
            .map(|s| Box::new(budget(Ssgp::params(6)).seed(s)) as Box<dyn Regressor>)
            .collect();
        let fitted = Ensemble::new(members, combine).fit(&data).unwrap();
        check(&fitted, &xt, 1e-5, 1e-5, combine.name());
    }
}

#[test]
fn ignored_inputs_have_zero_gradients() {
    let mut rng = StdRng::seed_from_u64(45);
    let base = problem(40, 2, &mut rng);
    let mut x = DMatrix::zeros(40, 3);
    x.column_mut(0).copy_from(&base.x().column(0));
    x.column_mut(1).fill(7.0);
    x.column_mut(2).copy_from(&base.x().column(1));
    let data = Dataset::new(x, base.y().clone()).unwrap();
    let fitted = Ssgp::params(5)
        .max_evaluations(20)
        .initial_draws(2)
        .threads(1)
        .fit(&data)
        .unwrap();
    let xt = DMatrix::from_fn(4, 3, |_, d| if d == 1 { 7.0 } else { 0.3 });
    let g = fitted.predict_gradients(&xt).unwrap();
    assert!(g.mean.column(1).iter().all(|v| *v == 0.0));
    assert!(g.variance.column(1).iter().all(|v| *v == 0.0));
    assert!(g.mean.column(0).iter().any(|v| *v != 0.0));
}

#[test]
fn ssgp_gradient_covariance_matches_differences_of_the_joint_covariance() {
    let mut rng = StdRng::seed_from_u64(46);
    let (m, dim) = (9, 2);
    let data = problem(40, dim, &mut rng);
    let hyper = SsgpHyperparameters {
        hyper: ssgp::hyperparameters::Hyperparameters {
            lengthscales: DVector::from_vec(vec![0.9, 1.4]),
            signal_variance: 1.5,
            noise_variance: 0.02,
        },
        unit_frequencies: DMatrix::from_fn(m, dim, |_, _| rng.random_range(-2.0..2.0)),
    };
    let fitted = Ssgp::params(m)
        .threads(1)
        .check()
        .unwrap()
        .condition(&data, &hyper)
        .unwrap();
    let x = test_inputs(3, dim, &mut rng);
    let covs = fitted.gradient_covariance(&x).unwrap();
    let h = 1e-3;
    for (j, cov) in covs.iter().enumerate() {
        // Cov of central differences from the joint covariance at x ± h e_d.
        let pts = DMatrix::from_fn(2 * dim, dim, |k, d| {
            x[(j, d)]
                + if d == k / 2 {
                    if k % 2 == 0 {
                        h
                    } else {
                        -h
                    }
                } else {
                    0.0
                }
        });
        let c = fitted.predict_covariance(&pts).unwrap().f_covariance;
        for a in 0..dim {
            for b in 0..dim {
                let fd = (c[(2 * a, 2 * b)] - c[(2 * a, 2 * b + 1)] - c[(2 * a + 1, 2 * b)]
                    + c[(2 * a + 1, 2 * b + 1)])
                    / (4.0 * h * h);
                assert!(
                    (fd - cov[(a, b)]).abs() <= 1e-4 * cov.amax(),
                    "point {j}, ({a}, {b}): {} vs {fd}",
                    cov[(a, b)]
                );
            }
        }
        assert!(cov[(0, 0)] > 0.0 && cov[(1, 1)] > 0.0);
    }
}

/// FITC's and VFE's `predict_gradients` on data with a constant input column (the middle one of
/// three, which the fit ignores), at more test rows than one prediction block
/// (`inducing::PREDICT_BLOCK`, 4 096 rows): against central differences of `predict` at every
/// row and column — rows on both sides of the block border, the used columns' gradients written
/// at their places among all three, the ignored column's exactly 0 (`predict` does not move with
/// it, whatever the test inputs hold there) — for the squared exponential and Matérn 5/2.
#[test]
fn fitc_and_vfe_gradients_with_an_ignored_column_across_prediction_blocks() {
    const PREDICT_BLOCK: usize = 4096;
    let mut rng = StdRng::seed_from_u64(47);
    let base = problem(40, 2, &mut rng);
    let mut x = DMatrix::zeros(40, 3);
    x.column_mut(0).copy_from(&base.x().column(0));
    x.column_mut(1).fill(-3.0);
    x.column_mut(2).copy_from(&base.x().column(1));
    let data = Dataset::new(x, base.y().clone()).unwrap();
    let xt = test_inputs(PREDICT_BLOCK + 7, 3, &mut rng);
    let mut worst = 0.0f64;
    for kernel in [Kernel::SquaredExponential, Kernel::Matern52] {
        let fitc = Fitc::params(6)
            .kernel(kernel)
            .seed(1)
            .max_evaluations(20)
            .threads(1)
            .fit(&data)
            .unwrap();
        let vfe = Vfe::params(6)
            .kernel(kernel)
            .seed(1)
            .max_evaluations(20)
            .threads(1)
            .fit(&data)
            .unwrap();
        let models: [(&str, &dyn FittedRegressor); 2] = [("fitc", &fitc), ("vfe", &vfe)];
        for (name, model) in models {
            let label = format!("{name} {}, ignored column", kernel.name());
            assert_eq!(model.training().ignored_inputs, vec![1], "{label}");
            // 1e-5 as for FITC and VFE above: h = 1e-6 leaves round-off ε|μ|/h ~ 1e-9 here.
            worst = worst.max(check(model, &xt, 1e-6, 1e-5, &label));
            let g = model.predict_gradients(&xt).unwrap();
            assert!(g.mean.column(1).iter().all(|v| *v == 0.0), "{label}");
            assert!(g.variance.column(1).iter().all(|v| *v == 0.0), "{label}");
            for d in [0, 2] {
                for rows in [(0, PREDICT_BLOCK), (PREDICT_BLOCK, 7)] {
                    let block = g.mean.view((rows.0, d), (rows.1, 1));
                    assert!(block.iter().any(|v| *v != 0.0), "{label}: column {d}");
                }
            }
        }
    }
    println!("largest |Δ| / max(1, |g|) = {worst:.1e}");
}

/// `Standardized<Fitc>` and `Standardized<Vfe>`: `predict_gradients` through the scaler's chain
/// rule (inputs on scales 30 and shifted by 5, targets 100 + 20y, so that ∂/∂x picks up the
/// inputs' and the targets' scales) against central differences of `predict`, for the squared
/// exponential and Matérn 3/2.
#[test]
fn standardized_fitc_and_vfe_gradients_follow_the_chain_rule() {
    let mut rng = StdRng::seed_from_u64(48);
    let dim = 2;
    let base = problem(60, dim, &mut rng);
    let mut x = base.x().clone();
    x.column_mut(0).scale_mut(30.0);
    x.column_mut(1).add_scalar_mut(5.0);
    let data = Dataset::new(x, base.y().map(|v| 100.0 + 20.0 * v)).unwrap();
    let mut xt = test_inputs(6, dim, &mut rng);
    xt.column_mut(0).scale_mut(30.0);
    xt.column_mut(1).add_scalar_mut(5.0);
    let mut worst = 0.0f64;
    for kernel in [Kernel::SquaredExponential, Kernel::Matern32] {
        let fitc = Standardized::new(
            Fitc::params(8)
                .kernel(kernel)
                .seed(3)
                .max_evaluations(40)
                .threads(1),
        )
        .fit(&data)
        .unwrap();
        let vfe = Standardized::new(
            Vfe::params(8)
                .kernel(kernel)
                .seed(3)
                .max_evaluations(40)
                .threads(1),
        )
        .fit(&data)
        .unwrap();
        let models: [(&str, &dyn FittedRegressor); 2] = [("fitc", &fitc), ("vfe", &vfe)];
        for (name, model) in models {
            // 1e-5 as for the standardised SSGP: means ~100 at h = 1e-5 leave round-off ~1e-8.
            let label = format!("standardised {name} {}", kernel.name());
            worst = worst.max(check(model, &xt, 1e-5, 1e-5, &label));
        }
    }
    println!("largest |Δ| / max(1, |g|) = {worst:.1e}");
}
