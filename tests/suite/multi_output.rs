//! The multi-output SSGP: at the same θ its evidence and gradient are the sums of the P
//! single-output ones; its predictions are each output's; updates, CSV, rows.

use crate::common::check_gradient;
use approx::assert_relative_eq;
use nalgebra::{DMatrix, DVector};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use ssgp::data::{CsvOptions, MultiDataset, Target};
use ssgp::optim::Objective;
use ssgp::ssgp::{MultiSsgpHyperparameters, Ssgp};
use ssgp::{Dataset, ParamGuard};

fn problem(n: usize, dim: usize, outputs: usize, rng: &mut StdRng) -> MultiDataset {
    let x = DMatrix::from_fn(n, dim, |_, _| rng.random_range(-2.0..2.0));
    let y = DMatrix::from_fn(n, outputs, |i, p| {
        let s: f64 = (0..dim).map(|d| x[(i, d)] * (d + p + 1) as f64 * 0.5).sum();
        (p as f64 + 1.0) * 10.0 * s.sin() + p as f64 + 0.2 * rng.random_range(-1.0..1.0)
    });
    MultiDataset::new(x, y).unwrap()
}

#[test]
fn evidence_and_gradient_are_sums_of_the_single_output_ones() {
    let mut rng = StdRng::seed_from_u64(71);
    let (n, dim, m, outputs) = (45, 3, 6, 3);
    let data = problem(n, dim, outputs, &mut rng);
    let params = Ssgp::params(m)
        .threads(1)
        .chunk_rows(7)
        .relative_noise_floor(0.0)
        .check()
        .unwrap();
    let evidence = params.multi_evidence(data.x(), data.y(), None).unwrap();
    let hyper = MultiSsgpHyperparameters {
        lengthscales: DVector::from_fn(dim, |_, _| rng.random_range(0.7..2.0)),
        signal_variances: DVector::from_vec(vec![2.0, 30.0, 0.5]),
        noise_ratio: 0.03,
        unit_frequencies: DMatrix::from_fn(m, dim, |_, _| rng.random_range(-2.0..2.0)),
    };
    let theta = evidence.pack(&hyper).unwrap();
    let (value, grad) = evidence.value_and_gradient(&theta).unwrap();
    let p_rho = theta[dim + outputs];
    let (mut sum, mut grad_shared) = (0.0, DVector::zeros(dim + m * dim));
    let mut d_rho = 0.0;
    for p in 0..outputs {
        let single_data = data.output(p).unwrap();
        let single = params.evidence(&single_data).unwrap();
        let mut theta_p = DVector::zeros(dim + 2 + m * dim);
        theta_p.rows_mut(0, dim).copy_from(&theta.rows(0, dim));
        theta_p[dim] = theta[dim + p];
        theta_p[dim + 1] = theta[dim + p] + p_rho;
        theta_p
            .rows_mut(dim + 2, m * dim)
            .copy_from(&theta.rows(dim + outputs + 1, m * dim));
        let (v, g) = single.value_and_gradient(&theta_p).unwrap();
        sum += v;
        for i in 0..dim {
            grad_shared[i] += g[i];
        }
        for i in 0..m * dim {
            grad_shared[dim + i] += g[dim + 2 + i];
        }
        // σ0p moves σnp with it (ρ fixed); p_ρ moves every σnp.
        assert_relative_eq!(
            grad[dim + p],
            g[dim] + g[dim + 1],
            max_relative = 1e-9,
            epsilon = 1e-9
        );
        d_rho += g[dim + 1];
    }
    assert_relative_eq!(value, sum, max_relative = 1e-12);
    assert_relative_eq!(
        grad[dim + outputs],
        d_rho,
        max_relative = 1e-9,
        epsilon = 1e-9
    );
    for i in 0..dim {
        assert_relative_eq!(grad[i], grad_shared[i], max_relative = 1e-9, epsilon = 1e-9);
    }
    for i in 0..m * dim {
        assert_relative_eq!(
            grad[dim + outputs + 1 + i],
            grad_shared[dim + i],
            max_relative = 1e-9,
            epsilon = 1e-9
        );
    }
    check_gradient(&evidence, &theta, "multi-output SSGP");
}

#[test]
fn predictions_updates_and_outputs_agree_with_single_output_models() {
    let mut rng = StdRng::seed_from_u64(72);
    let (dim, m, outputs) = (2, 8, 2);
    let data = problem(50, dim, outputs, &mut rng);
    let params = Ssgp::params(m).threads(1).check().unwrap();
    let hyper = MultiSsgpHyperparameters {
        lengthscales: DVector::from_vec(vec![1.1, 0.9]),
        signal_variances: DVector::from_vec(vec![50.0, 300.0]),
        noise_ratio: 0.01,
        unit_frequencies: DMatrix::from_fn(m, dim, |_, _| rng.random_range(-2.0..2.0)),
    };
    let mut fitted = params.condition_multi(&data, &hyper).unwrap();
    let xt = DMatrix::from_fn(6, dim, |_, _| rng.random_range(-2.5..2.5));
    let preds = fitted.predict(&xt).unwrap();
    let grads = fitted.predict_gradients(&xt).unwrap();
    for p in 0..outputs {
        let single = fitted.output(p).unwrap();
        let q = single.predict(&xt).unwrap();
        assert_eq!(q.mean, preds[p].mean);
        assert_relative_eq!(q.f_variance, preds[p].f_variance, max_relative = 1e-13);
        assert_eq!(single.predict_gradients(&xt).unwrap().mean, grads[p].mean);
        // Conditioning a single-output SSGP at output p's θ gives the same posterior.
        let alone = params
            .condition(&data.output(p).unwrap(), single.hyperparameters())
            .unwrap();
        let r = alone.predict(&xt).unwrap();
        assert_relative_eq!(r.mean, q.mean, max_relative = 1e-10);
        assert_relative_eq!(r.f_variance, q.f_variance, max_relative = 1e-10);
    }
    // Updating all outputs at once equals updating each output's model.
    let more = problem(20, dim, outputs, &mut rng);
    let mut singles: Vec<_> = (0..outputs).map(|p| fitted.output(p).unwrap()).collect();
    fitted.update(more.x(), more.y()).unwrap();
    assert_eq!(fitted.num_updates(), 20);
    for (p, s) in singles.iter_mut().enumerate() {
        s.update(more.x(), &more.y().column(p).into_owned())
            .unwrap();
        let (a, b) = (
            fitted.predict_output(&xt, p).unwrap(),
            s.predict(&xt).unwrap(),
        );
        assert_relative_eq!(a.mean, b.mean, max_relative = 1e-10);
        assert_relative_eq!(a.f_variance, b.f_variance, max_relative = 1e-10);
    }
    assert!(fitted.update(more.x(), &DMatrix::zeros(20, 3)).is_err());
    assert!(fitted.predict_output(&xt, 2).is_err());
}

/// The noise ratio ρ = σn²/σ0² of the multi-output model is bounded by the relative noise floor
/// (default 1e-4), and noise-free outputs of different scales (two sinusoids the spectral points
/// can represent exactly) fit, ρ heading down to that floor (the summary says whether it sits
/// there). The fit runs to convergence (about 1 600 evaluations): at a budget of 1 000 it is
/// still on its way down, and where it stands then depends on round-off (ρ = 1.2e-4 with faer's
/// kernels, 2.1e-4 with the crate's own).
#[test]
fn noise_free_outputs_fit_with_the_ratio_at_its_default_floor() {
    let mut rng = StdRng::seed_from_u64(74);
    let x: DMatrix<f64> = DMatrix::from_fn(120, 2, |_, _| rng.random_range(-2.0..2.0));
    let y = DMatrix::from_fn(120, 2, |i, p| {
        (p as f64 * 99.0 + 1.0) * (1.3 * x[(i, 0)] + 0.4 * x[(i, 1)] + p as f64).cos()
    });
    let data = MultiDataset::new(x, y).unwrap();
    let hyper = |noise_ratio| MultiSsgpHyperparameters {
        lengthscales: DVector::from_element(2, 1.0),
        signal_variances: DVector::from_vec(vec![1.0, 1e4]),
        noise_ratio,
        unit_frequencies: DMatrix::from_element(4, 2, 0.5),
    };
    let defaults = Ssgp::params(4).check().unwrap();
    let evidence = defaults.multi_evidence(data.x(), data.y(), None).unwrap();
    assert!(evidence.pack(&hyper(5e-5)).is_err());
    assert!(evidence.pack(&hyper(2e-4)).is_ok());
    let unbounded = Ssgp::params(4).relative_noise_floor(0.0).check().unwrap();
    let evidence = unbounded.multi_evidence(data.x(), data.y(), None).unwrap();
    assert!(evidence.pack(&hyper(5e-5)).is_ok());

    let fitted = Ssgp::params(4)
        .seed(1)
        .initial_draws(20)
        .max_evaluations(5000)
        .threads(1)
        .fit_multi(&data)
        .unwrap();
    let ratio = fitted.hyperparameters().noise_ratio;
    assert!(
        (1e-4..2e-4).contains(&ratio),
        "noise ratio {ratio} (floor 1e-4)"
    );
    assert_eq!(fitted.training().noise_at_floor, ratio <= 1.01e-4);
}

/// Output p of a model whose noise ratio sits at its floor has σn² at its own floor, σ0p²·ρ_f:
/// its summary says so, and so does its model saved and loaded (its floor was 0, so loading
/// found the noise above it and cleared the flag).
#[test]
fn an_outputs_model_keeps_its_noise_at_the_floor_through_saving() {
    let mut rng = StdRng::seed_from_u64(75);
    let x: DMatrix<f64> = DMatrix::from_fn(60, 2, |_, _| rng.random_range(-2.0..2.0));
    let y = DMatrix::from_fn(60, 2, |i, p| (1.3 * x[(i, 0)] + p as f64).cos());
    let data = MultiDataset::new(x, y).unwrap();
    let signal = [2.0, 500.0];
    let hyper = MultiSsgpHyperparameters {
        lengthscales: DVector::from_element(2, 1.0),
        signal_variances: DVector::from_vec(signal.to_vec()),
        noise_ratio: 1.005e-4,
        unit_frequencies: DMatrix::from_fn(6, 2, |_, _| rng.random_range(-1.0..1.0)),
    };
    let params = Ssgp::params(6).check().unwrap();
    let fitted = params.condition_multi(&data, &hyper).unwrap();
    assert!(fitted.training().noise_at_floor);
    let xt = DMatrix::from_fn(5, 2, |_, _| rng.random_range(-2.0..2.0));
    for (p, s0) in signal.into_iter().enumerate() {
        let single = fitted.output(p).unwrap();
        assert!(single.training().noise_at_floor, "output {p}");
        assert_relative_eq!(single.noise_floor(), 1e-4 * s0, max_relative = 1e-14);
        assert_relative_eq!(single.noise_variance(), 1.005e-4 * s0, max_relative = 1e-12);
        assert_eq!(
            single.predict(&xt).unwrap().mean,
            fitted.predict_output(&xt, p).unwrap().mean
        );
        #[cfg(feature = "serde")]
        {
            let json = ssgp::persist::to_json(&single).unwrap();
            let loaded: ssgp::FittedSsgp = ssgp::persist::from_json(&json).unwrap();
            assert!(loaded.training().noise_at_floor, "output {p} loaded");
            assert_eq!(loaded.predict(&xt).unwrap(), single.predict(&xt).unwrap());
        }
    }
}

#[test]
fn a_short_fit_learns_both_outputs() {
    let mut rng = StdRng::seed_from_u64(73);
    let data = problem(200, 2, 2, &mut rng);
    let test = problem(100, 2, 2, &mut rng);
    let fitted = Ssgp::params(15)
        .seed(2)
        .initial_draws(5)
        .max_evaluations(150)
        .threads(1)
        .fit_multi(&data)
        .unwrap();
    assert_eq!(fitted.outputs(), 2);
    let preds = fitted.predict(test.x()).unwrap();
    for (p, pred) in preds.iter().enumerate() {
        let y = test.y().column(p).into_owned();
        let nmse = ssgp::metrics::nmse(&y, pred, data.y_means()[p]).unwrap();
        assert!(nmse < 0.05, "output {p}: NMSE {nmse}");
    }
    assert!(fitted.noise_variances()[1] > fitted.noise_variances()[0]);
}

/// The targets are found in the header as one target's loader reads it: a quoted name holding
/// the delimiter is one column, a leading byte-order mark is no part of the first name, and a
/// name given to two columns is refused.
#[test]
fn several_targets_are_named_in_the_header_one_target_reads() {
    let dir = std::env::temp_dir().join(format!("ssgp-multi-header-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("quoted.csv");
    std::fs::write(&path, "\"a, b\",c,y1,y2\n1,2,3,4\n5,6,7,8\n").unwrap();
    let o = CsvOptions::new();
    let one = MultiDataset::from_csv_with(&path, &o, &[Target::named("y1")]).unwrap();
    let single = Dataset::from_csv_with(&path, &o.clone().target(Target::named("y1"))).unwrap();
    assert_eq!(one.x(), single.x());
    assert_eq!(one.y().column(0), single.y().column(0));
    assert_eq!(one.y().as_slice(), [3.0, 7.0]);
    let two = MultiDataset::from_csv_with(&path, &o, &[Target::named("y1"), Target::named("y2")])
        .unwrap();
    let rows = MultiDataset::from_rows(&[[1.0, 2.0], [5.0, 6.0]], &[[3.0, 4.0], [7.0, 8.0]]);
    assert_eq!(two, rows.unwrap());

    let path = dir.join("bom.csv");
    std::fs::write(&path, "\u{feff}y1,x,y2\n1,2,3\n5,6,7\n").unwrap();
    let bom = MultiDataset::from_csv_with(&path, &o, &[Target::named("y1"), Target::named("y2")])
        .unwrap();
    let rows = MultiDataset::from_rows(&[[2.0], [6.0]], &[[1.0, 3.0], [5.0, 7.0]]);
    assert_eq!(bom, rows.unwrap());

    let path = dir.join("twice.csv");
    std::fs::write(&path, "y,x,y,z\n1,2,3,4\n").unwrap();
    let twice = MultiDataset::from_csv_with(&path, &o, &[Target::named("y"), Target::Last]);
    assert!(
        matches!(&twice, Err(ssgp::Error::InvalidParameter { reason, .. })
            if reason == "two columns are named `y`: 1 and 3"),
        "{twice:?}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn several_target_columns_load_from_csv_by_index_or_name_and_from_rows() {
    let dir = std::env::temp_dir().join(format!("ssgp-multi-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("multi.csv");
    std::fs::write(&path, "a,t1,b,t2\n1,10,2,20\n3,30,4,40\n5,50,6,60\n").unwrap();
    let by_name = MultiDataset::from_csv_with(
        &path,
        &CsvOptions::new(),
        &[Target::named("t1"), Target::named("t2")],
    )
    .unwrap();
    let by_index = MultiDataset::from_csv_with(
        &path,
        &CsvOptions::new(),
        &[Target::Column(1), Target::Last],
    )
    .unwrap();
    let rows = MultiDataset::from_rows(
        &[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]],
        &[[10.0, 20.0], [30.0, 40.0], [50.0, 60.0]],
    )
    .unwrap();
    assert_eq!(by_name, rows);
    assert_eq!(by_index, rows);
    // The other order of targets swaps the columns of Y.
    let swapped = MultiDataset::from_csv_with(
        &path,
        &CsvOptions::new(),
        &[Target::Last, Target::Column(1)],
    )
    .unwrap();
    assert_eq!(swapped.y().column(0), rows.y().column(1));
    assert!(
        MultiDataset::from_csv_with(&path, &CsvOptions::new(), &[Target::named("nope")]).is_err()
    );
    assert!(MultiDataset::from_csv_with(
        &path,
        &CsvOptions::new(),
        &[Target::Last, Target::Column(3)]
    )
    .is_err());
    let single: Dataset = rows.output(1).unwrap();
    assert_eq!(single.y().as_slice(), &[20.0, 40.0, 60.0]);
    std::fs::remove_dir_all(&dir).unwrap();

    #[cfg(feature = "ndarray")]
    {
        let x = ndarray::array![[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]];
        let y = ndarray::array![[10.0, 20.0], [30.0, 40.0], [50.0, 60.0]];
        assert_eq!(
            MultiDataset::from_ndarray(x.view(), y.view()).unwrap(),
            rows
        );
    }
}

/// Each output's spread is checked as a single output's and the error names the output: one
/// below f64's range for a Gaussian process (it used to read as "constant targets (every value
/// is 1.02e-200)"), one beyond SSGP's (it used to fail as a non-finite objective), one constant.
#[test]
fn every_output_has_its_spread_checked_by_name() {
    let mut rng = StdRng::seed_from_u64(4);
    let x: DMatrix<f64> = DMatrix::from_fn(30, 2, |_, _| rng.random_range(-2.0..2.0));
    let first = DVector::from_fn(30, |i, _| x[(i, 0)].sin() + 0.5 * x[(i, 1)]);
    let fit = |second: DVector<f64>| {
        let y = DMatrix::from_columns(&[first.clone(), second]);
        Ssgp::params(4)
            .seed(1)
            .max_evaluations(20)
            .fit_multi(&MultiDataset::new(x.clone(), y).unwrap())
            .map(|_| ())
            .unwrap_err()
            .to_string()
    };
    let tiny = fit(&first * 1e-200);
    assert!(
        tiny.starts_with("output 1: the targets' spread")
            && tiny.contains("below what a Gaussian process can model in f64"),
        "{tiny}"
    );
    let large = fit(&first * 1e100);
    assert!(
        large.starts_with("output 1: the targets' spread")
            && large.contains("above what SSGP can fit in f64")
            && large.contains("multiply that output by a power of ten"),
        "{large}"
    );
    assert_eq!(
        fit(DVector::from_element(30, 2.0)),
        "the training targets are constant (every value is 2); there is nothing to regress"
    );
}

/// Each output's LOO diagnostic (`output_training(p)`) is leave-one-out of that output's SSGP
/// covariance (σ0p²/m)Σ_r cos(ω_r·(x − x')) + ρσ0p²δ by definition, on the n×2m form (n > 4m)
/// and on the n×n form (n ≤ 4m), for outputs of very different sizes; `training()` shows the
/// first flagged output's.
#[test]
fn each_output_has_its_leave_one_out_by_definition() {
    let mut rng = StdRng::seed_from_u64(75);
    for (n, m) in [(40, 6), (20, 6)] {
        let (dim, outputs) = (2, 3);
        let data = problem(n, dim, outputs, &mut rng);
        let params = Ssgp::params(m).threads(1).check().unwrap();
        let hyper = MultiSsgpHyperparameters {
            lengthscales: DVector::from_vec(vec![1.3, 0.8]),
            signal_variances: DVector::from_vec(vec![40.0, 0.02, 900.0]),
            noise_ratio: 0.05,
            unit_frequencies: DMatrix::from_fn(m, dim, |_, _| rng.random_range(-2.0..2.0)),
        };
        let fitted = params.condition_multi(&data, &hyper).unwrap();
        let mut flagged = None;
        for p in 0..outputs {
            let single = ssgp::ssgp::SsgpHyperparameters {
                hyper: ssgp::Hyperparameters {
                    lengthscales: hyper.lengthscales.clone(),
                    signal_variance: hyper.signal_variances[p],
                    noise_variance: hyper.signal_variances[p] * hyper.noise_ratio,
                },
                unit_frequencies: hyper.unit_frequencies.clone(),
            };
            let mut c = crate::common::ssgp_covariance(data.x(), data.x(), &single);
            for i in 0..n {
                c[(i, i)] += single.hyper.noise_variance;
            }
            let y = data.y().column(p).add_scalar(-fitted.y_means()[p]);
            let (z2, mnlp, nmse) = crate::common::loo_by_definition(&c, &y);
            let summary = fitted.output_training(p).unwrap();
            let found = summary.diagnostic.unwrap();
            assert_relative_eq!(found.mean_z2, z2, max_relative = 1e-8);
            assert_relative_eq!(found.mnlp, mnlp, max_relative = 1e-8);
            assert_relative_eq!(found.nmse, nmse, max_relative = 1e-8);
            assert_eq!(fitted.output(p).unwrap().training().diagnostic, Some(found));
            if flagged.is_none() && summary.is_flagged() {
                flagged = Some(found);
            }
        }
        let shown = flagged.or(fitted.output_training(0).unwrap().diagnostic);
        assert_eq!(fitted.training().diagnostic, shown);
        assert!(fitted.output_training(outputs).is_err());
    }
}

/// The default multi-output fit is checked as one output's is: on wide data (n = 100, D = 20,
/// two outputs, m = 50) the learned fit alone (the check off) is far too confident on test
/// data — mean z² 90–1 200 there — while the default's error bars hold, each output with its
/// own held-out factor recorded.
#[test]
fn the_default_multi_output_fit_is_calibrated_on_wide_data() {
    let (n, dim, m) = (100, 20, 50);
    let f = |x: &[f64], p: usize| {
        if p == 0 {
            (2.0 * x[0]).sin() + 0.5 * (x[1] * x[2]).cos() + 0.3 * x[3] * x[4]
        } else {
            (1.5 * x[0] + x[1]).cos() + 0.4 * x[2] * x[2] - 0.3 * x[4].sin()
        }
    };
    let (mut worst_default, mut best_off) = (0.0f64, f64::INFINITY);
    let (mut coverage, mut fits) = (0.0, 0.0);
    for seed in 1..=3u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut sample = |rows: usize| {
            let x = DMatrix::from_fn(rows, dim, |_, _| rng.random_range(-2.0..2.0));
            let y = DMatrix::from_fn(rows, 2, |i, p| {
                let row: Vec<f64> = x.row(i).iter().copied().collect();
                f(&row, p) + 0.1 * rng.random_range(-1.7..1.7)
            });
            (x, y)
        };
        let (x, y) = sample(n);
        let (xt, yt) = sample(1000);
        let data = MultiDataset::new(x, y).unwrap();
        let default = Ssgp::params(m).seed(seed).fit_multi(&data).unwrap();
        let off = Ssgp::params(m)
            .seed(seed)
            .calibration(ssgp::ssgp::CalibrationGuard::Off)
            .fit_multi(&data)
            .unwrap();
        for p in 0..2 {
            let truth = yt.column(p).into_owned();
            let score = |model: &ssgp::ssgp::FittedMultiSsgp| {
                let pred = model.predict_output(&xt, p).unwrap();
                ssgp::metrics::calibration(&truth, &pred).unwrap()
            };
            let (checked, alone) = (score(&default), score(&off));
            println!(
                "seed {seed} output {p}: default coverage {:.3} z² {:.2}, off {:.3} z² {:.2}",
                checked.within_95, checked.mean_squared_z, alone.within_95, alone.mean_squared_z
            );
            worst_default = worst_default.max(checked.mean_squared_z);
            best_off = best_off.min(alone.mean_squared_z);
            coverage += checked.within_95;
            fits += 1.0;
            let summary = default.output_training(p).unwrap();
            assert!(
                matches!(summary.remedy, Some(ssgp::Remedy::HeldOut { .. })),
                "{:?}",
                summary.remedy
            );
            assert!(summary.diagnostic.is_some());
            assert_eq!(off.output_training(p).unwrap().remedy, None);
        }
        let any = (0..2).any(|p| default.output_training(p).unwrap().is_flagged());
        assert_eq!(default.training().is_flagged(), any);
    }
    assert!(best_off > 20.0, "the learned fit alone: z² {best_off}");
    assert!(
        worst_default < 3.0,
        "default: worst mean z² {worst_default}"
    );
    assert!(
        coverage / fits > 0.85,
        "default: mean coverage {}",
        coverage / fits
    );
}

/// On fewer than 20 distinct inputs no whole input can be held out: every output is judged by
/// its LOO and flagged for it ([`ssgp::Remedy::FewInputs`]), as one output's fit is.
#[test]
fn a_multi_output_fit_on_few_distinct_inputs_is_flagged() {
    let mut rng = StdRng::seed_from_u64(76);
    let distinct = DMatrix::from_fn(8, 2, |_, _| rng.random_range(-2.0..2.0));
    let x = DMatrix::from_fn(64, 2, |i, d| distinct[(i % 8, d)]);
    let y = DMatrix::from_fn(64, 2, |i, p| {
        (x[(i, 0)] + p as f64).sin() + 0.1 * rng.random_range(-1.0..1.0)
    });
    let fitted = Ssgp::params(10)
        .seed(1)
        .max_evaluations(100)
        .fit_multi(&MultiDataset::new(x, y).unwrap())
        .unwrap();
    for p in 0..2 {
        let summary = fitted.output_training(p).unwrap();
        assert!(matches!(
            summary.remedy,
            Some(ssgp::Remedy::FewInputs { inputs: 8, .. })
        ));
        assert!(summary.flags().few_inputs);
    }
    assert!(fitted.training().is_flagged());
}

/// On fewer rows than 40, and as many learned frequencies as rows, the multi-output fit keeps
/// the random-feature fit without training the learned one, every output flagged for too few
/// inputs to check its error bars, as one output's fit is.
#[test]
fn a_multi_output_fit_on_few_rows_keeps_random_features_and_is_flagged() {
    let mut rng = StdRng::seed_from_u64(77);
    let x = DMatrix::from_fn(25, 2, |_, _| rng.random_range(-2.0..2.0));
    let y = DMatrix::from_fn(25, 2, |i, p| {
        (x[(i, 0)] + p as f64).sin() + 0.1 * rng.random_range(-1.0..1.0)
    });
    let fitted = Ssgp::params(50)
        .seed(1)
        .fit_multi(&MultiDataset::new(x, y).unwrap())
        .unwrap();
    for p in 0..2 {
        let summary = fitted.output_training(p).unwrap();
        assert_eq!(
            summary.remedy,
            Some(ssgp::Remedy::FewInputs {
                inputs: 25,
                random_features: true
            }),
            "output {p}"
        );
        assert!(summary.flags().few_inputs, "{}", summary.diagnosis());
    }
    assert!(fitted.fixed_spectral_points());
}

/// sin x and 2 cos(x + 1) on [0, 50] (400 uniform rows, uniform noise of sd 0.049 and 0.098):
/// the learned fit on 3/4 of the rows, stopped at 250 evaluations, was narrowed by its held-out
/// rows (×0.67 and ×0.66 of its own σnp²); the refit on all rows with that budget called less of
/// the signal noise, and the same factors of its own σnp² left test coverage 0.31 / 0.30, mean
/// z² 13.5 / 15.4, unflagged. Each output's narrowing is now the noise level its held-out rows
/// asked for, as one output's is.
#[test]
fn each_output_is_narrowed_to_the_noise_level_its_held_out_rows_asked_for() {
    let mut rng = StdRng::seed_from_u64(1);
    let mut sample = |rows: usize| {
        let x = DMatrix::from_fn(rows, 1, |_, _| rng.random_range(0.0..50.0));
        let y = DMatrix::from_fn(rows, 2, |i, p| {
            let t: f64 = x[(i, 0)];
            let f = if p == 0 {
                t.sin()
            } else {
                2.0 * (t + 1.0).cos()
            };
            f + 0.05 * (p as f64 + 1.0) * rng.random_range(-1.7..1.7)
        });
        (x, y)
    };
    let (x, y) = sample(400);
    let (xt, yt) = sample(1000);
    let fitted = Ssgp::params(50)
        .seed(1)
        .fit_multi(&MultiDataset::new(x, y).unwrap())
        .unwrap();
    for p in 0..2 {
        let Some(ssgp::Remedy::HeldOut {
            variance_scale,
            learned_budget,
            on_comparison_rows,
            ..
        }) = fitted.output_training(p).unwrap().remedy
        else {
            panic!("output {p}: {:?}", fitted.output_training(p));
        };
        assert!(learned_budget.is_some() && !on_comparison_rows, "refitted");
        assert!(variance_scale < 1.0, "narrowed: ×{variance_scale}");
        let truth = yt.column(p).into_owned();
        let pred = fitted.predict_output(&xt, p).unwrap();
        let c = ssgp::metrics::calibration(&truth, &pred).unwrap();
        assert!(
            c.mean_squared_z < 1.5 && c.within_95 > 0.9,
            "output {p}: z² {}, coverage {}",
            c.mean_squared_z,
            c.within_95
        );
    }
}

/// Fixed unit frequencies with other than the data's D columns (or m rows, given to
/// `condition_multi`) are a `DimensionMismatch` for several outputs as for one — they reached
/// the design matrix unchecked and panicked — and so are targets with fewer rows than the
/// inputs given to the public multi-output evidence.
#[test]
fn fixed_frequencies_of_the_wrong_shape_are_an_error() {
    use ssgp::ssgp::CalibrationGuard;
    use ssgp::Error;
    let mut rng = StdRng::seed_from_u64(5);
    let (m, dim) = (6, 3);
    let data = problem(40, dim, 2, &mut rng);
    let mismatch = |what: &str, r: ssgp::Result<_>| match r {
        Err(Error::DimensionMismatch { .. }) => {}
        Err(e) => panic!("{what}: {e}"),
        Ok(_) => panic!("{what}: fitted"),
    };
    for cols in [dim - 1, dim + 1] {
        let w = DMatrix::from_element(m, cols, 0.5);
        for guard in [CalibrationGuard::Off, CalibrationGuard::RandomFeatures] {
            let params = Ssgp::params(m)
                .threads(1)
                .max_evaluations(5)
                .calibration(guard)
                .fixed_spectral_points(true)
                .initial_unit_frequencies(w.clone());
            mismatch("fit_multi", params.fit_multi(&data).map(|_| ()));
        }
    }
    let params = Ssgp::params(m)
        .threads(1)
        .fixed_spectral_points(true)
        .check()
        .unwrap();
    for (rows, cols) in [(m, dim - 1), (m, dim + 1), (m - 1, dim)] {
        let hyper = MultiSsgpHyperparameters {
            lengthscales: DVector::from_element(dim, 1.0),
            signal_variances: DVector::from_element(2, 1.0),
            noise_ratio: 0.1,
            unit_frequencies: DMatrix::from_element(rows, cols, 0.5),
        };
        mismatch(
            "condition_multi",
            params.condition_multi(&data, &hyper).map(|_| ()),
        );
    }
    let short = data.y().rows(0, 39).into_owned();
    mismatch(
        "multi_evidence",
        params
            .multi_evidence(data.x(), &short, Some(&DMatrix::from_element(m, dim, 0.5)))
            .map(|_| ()),
    );
}

/// A multi-output noise floor bounds the ratio ρ = σn²/σ0², not a variance: an output whose
/// spread is small (variance 8·10⁻¹⁰ beside a floor of 10⁻²) fits under the calibration check
/// as it does without it. The check resolved each output's training mean against the ratio
/// floor as a variance and failed with `InvalidParameter { name: "noise_floor" }` (1e-2 above
/// 10⁴ times that output's variance), where `CalibrationGuard::Off` fitted.
#[test]
fn a_ratio_floor_does_not_reject_an_output_of_small_spread() {
    use ssgp::ssgp::CalibrationGuard;
    let x = DMatrix::from_fn(200, 1, |i, _| i as f64 / 20.0);
    let y = DMatrix::from_fn(200, 2, |i, p| {
        if p == 0 {
            x[(i, 0)].sin()
        } else {
            1e-4 * (((i * 7919) % 97) as f64 / 97.0 - 0.5)
        }
    });
    let data = MultiDataset::new(x, y).unwrap();
    let params = || Ssgp::params(10).seed(1).threads(1).max_evaluations(60);
    let unchecked = params()
        .noise_floor(1e-2)
        .calibration(CalibrationGuard::Off)
        .fit_multi(&data);
    assert!(unchecked.is_ok(), "{:?}", unchecked.err());
    let checked = params().noise_floor(1e-2).fit_multi(&data);
    let fitted = checked.unwrap_or_else(|e| panic!("the check failed: {e}"));
    for p in 0..2 {
        assert!(
            matches!(
                fitted.output_training(p).unwrap().remedy,
                Some(ssgp::Remedy::HeldOut { .. })
            ),
            "output {p} was checked on held-out rows"
        );
    }
}

/// An output that keeps its training mean carries the variance it was scored with on the
/// held-out rows, var y_p times its factor, under a ratio floor far above that variance
/// (ρ ≥ 10⁻², var y_p ≈ 3·10⁻⁵): its predictive variance is that, and the held-out mean z²
/// recorded for it is what its own predictions give on the training rows (to sampling error).
/// The mean's model took the ratio floor as a variance, σn² = 1.001·10⁻², about 300 times the
/// variance it was scored with: recorded mean z² ≈ 1, real z² ≈ 0.003.
#[test]
fn a_kept_mean_carries_the_variance_it_was_scored_with_under_a_ratio_floor() {
    let mut rng = StdRng::seed_from_u64(8);
    let (n, dim) = (440, 2);
    let x: DMatrix<f64> = DMatrix::from_fn(n, dim, |_, _| rng.random_range(-2.0..2.0));
    let y = DMatrix::from_fn(n, 2, |i, p| {
        if p == 0 {
            (1.3 * x[(i, 0)]).sin() * (0.7 * x[(i, 1)]).cos() + 0.05 * rng.random_range(-1.0..1.0)
        } else {
            3.0 + 0.01 * rng.random_range(-1.0..1.0)
        }
    });
    let data = MultiDataset::new(x.clone(), y.clone()).unwrap();
    let fitted = Ssgp::params(8)
        .seed(4)
        .max_evaluations(64)
        .threads(1)
        .noise_floor(1e-2)
        .fit_multi(&data)
        .unwrap();
    let training = fitted.output_training(1).unwrap();
    let remedy = training.remedy.unwrap();
    assert!(remedy.mean_kept(), "{}", training.diagnosis());
    let noise = y.column(1).into_owned();
    let variance = noise.variance();
    let expected = variance * remedy.variance_scale();
    assert_relative_eq!(fitted.noise_variances()[1], expected, max_relative = 1e-9);
    let pred = fitted.predict_output(&x, 1).unwrap();
    for v in pred.y_variance.iter() {
        assert_relative_eq!(*v, expected, max_relative = 1e-9);
    }
    let recorded = training.held_out().unwrap().mean_z2;
    let own = ssgp::metrics::calibration(&noise, &pred)
        .unwrap()
        .mean_squared_z;
    assert!(
        (recorded / own - 1.0).abs() < 0.3,
        "recorded held-out mean z² {recorded}, the model's own {own}"
    );
}

/// `condition_multi` is the model at exactly the noise ratio given, or an error naming the noise
/// floor, as one output's `condition`: ρ = 10⁻⁶ below the default floor (10⁻⁴) is
/// `InvalidParameter { name: "noise_floor" }` (it named `hyperparameters`), ρ = 1.0005·10⁻⁴
/// (within 10⁻³·floor of it) is kept (it was moved to 1.001·10⁻⁴), and without a relative
/// floor 10⁻⁶ is kept.
#[test]
fn condition_multi_keeps_the_ratio_given_or_names_the_floor() {
    let mut rng = StdRng::seed_from_u64(4);
    let (m, dim) = (5, 2);
    let data = problem(40, dim, 2, &mut rng);
    let at = |noise_ratio: f64| MultiSsgpHyperparameters {
        lengthscales: DVector::from_element(dim, 1.0),
        signal_variances: DVector::from_vec(vec![1.0, 2.0]),
        noise_ratio,
        unit_frequencies: DMatrix::from_fn(m, dim, |r, d| (r as f64 - 2.0) * (d as f64 + 0.5)),
    };
    let params = Ssgp::params(m).check().unwrap();
    match params.condition_multi(&data, &at(1e-6)) {
        Err(ssgp::Error::InvalidParameter { name, reason }) => {
            assert_eq!(name, "noise_floor");
            assert!(reason.contains("relative_noise_floor(0.0)"), "{reason}");
        }
        other => panic!(
            "ρ below the floor: {:?}",
            other.map(|f| f.hyperparameters().noise_ratio)
        ),
    }
    let near = params.condition_multi(&data, &at(1.0005e-4)).unwrap();
    assert_relative_eq!(
        near.hyperparameters().noise_ratio,
        1.0005e-4,
        max_relative = 1e-12
    );
    let free = Ssgp::params(m).relative_noise_floor(0.0).check().unwrap();
    let tiny = free.condition_multi(&data, &at(1e-6)).unwrap();
    assert_relative_eq!(
        tiny.hyperparameters().noise_ratio,
        1e-6,
        max_relative = 1e-12
    );
}

/// Where the check keeps every output's training mean, nothing predicts by the shared fit, so it
/// is not trained again on all rows (it did so, as long as the fits themselves): no optimiser
/// report after the check's, and each output predicts its training mean with the variance it
/// was scored with.
#[test]
fn every_output_at_its_mean_trains_no_refit() {
    use ssgp::optim::Phase;
    use std::sync::{Arc, Mutex};
    let mut rng = StdRng::seed_from_u64(12);
    let (n, dim) = (320, 3);
    let x: DMatrix<f64> = DMatrix::from_fn(n, dim, |_, _| rng.random_range(-2.0..2.0));
    let y = DMatrix::from_fn(n, 2, |_, p| 1.0 + p as f64 + rng.random_range(-1.0..1.0));
    let data = MultiDataset::new(x.clone(), y.clone()).unwrap();
    let phases: Arc<Mutex<Vec<Phase>>> = Arc::default();
    let sink = Arc::clone(&phases);
    let fitted = Ssgp::params(10)
        .seed(2)
        .max_evaluations(200)
        .threads(1)
        .observer(Arc::new(move |p: &ssgp::Progress| {
            sink.lock().unwrap().push(p.phase);
            std::ops::ControlFlow::Continue(())
        }))
        .fit_multi(&data)
        .unwrap();
    for p in 0..2 {
        let training = fitted.output_training(p).unwrap();
        assert!(
            training.remedy.is_some_and(|r| r.mean_kept()),
            "output {p}: {}",
            training.diagnosis()
        );
        let pred = fitted.predict_output(&x, p).unwrap();
        let mean = y.column(p).mean();
        assert!(pred
            .mean
            .iter()
            .all(|&v| (v - mean).abs() <= 1e-12 * mean.abs()));
    }
    let phases = phases.lock().unwrap();
    assert!(phases.contains(&Phase::CalibrationCheck));
    let optimiser = phases.iter().filter(|&&p| p == Phase::Optimiser).count();
    assert_eq!(optimiser, 0, "the shared fit was trained again on all rows");
}
