//! Training that holds on real data: one test per case of the issue that found it, on data the
//! test generates. Each asserts the test NMSE a *good* fit reaches — good meaning the best of the
//! default start, the full-GP-subset start and a start at the true relevances (same m and budget)
//! — within 10%, and an outcome that says what happened; the old optimiser failed every one of
//! them (NMSE 0.32–2.1 where good fits reach 0.014–0.026, or an error).

use nalgebra::{DMatrix, DVector};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::StandardNormal;
use ssgp::metrics::nmse;
use ssgp::ssgp::CalibrationGuard;
use ssgp::{Dataset, Fitc, FittedRegressor, FullGp, LengthscaleInit, Regressor, Ssgp, Termination};

/// Fits `model`, returning its test NMSE and the fitted model.
fn fit(
    label: &str,
    model: &dyn Regressor,
    train: &Dataset,
    test: &Dataset,
) -> (f64, Box<dyn FittedRegressor>) {
    let fitted = model
        .fit_boxed(train)
        .unwrap_or_else(|e| panic!("{label}: {e}"));
    let pred = fitted.predict(test.x()).unwrap();
    let e = nmse(test.y(), &pred, train.y_mean()).unwrap();
    let t = fitted.training();
    println!(
        "{label:<32} NMSE {e:.4}  −log p {:>10.2}  {} after {} evaluations",
        t.neg_log_evidence, t.termination, t.evaluations
    );
    assert!(t.termination.is_success(), "{label}: {}", t.termination);
    (e, fitted)
}

/// The default's NMSE is within 10% of the best of the candidates (the default among them).
fn assert_good(label: &str, default: f64, others: &[f64]) {
    let good = others.iter().copied().fold(default, f64::min);
    assert!(
        default <= 1.1 * good,
        "{label}: default NMSE {default} against a good fit's {good}"
    );
}

/// 17 inputs on wildly different raw scales (10⁻³ … 10⁴, offsets up to ±8000), five of them
/// relevant: the start's gradient is huge and badly scaled (case 1).
fn raw_scales(n: usize, rng: &mut StdRng) -> (Dataset, Vec<f64>) {
    let scales: Vec<f64> = (0..17)
        .map(|d| 10f64.powf(-3.0 + 7.0 * d as f64 / 16.0))
        .collect();
    let u = DMatrix::from_fn(n, 17, |_, _| rng.random_range(-1.0..1.0));
    let x = DMatrix::from_fn(n, 17, |i, d| 1e3 * (d as f64 - 8.0) + scales[d] * u[(i, d)]);
    let y = DVector::from_fn(n, |i, _| {
        100.0
            * (f64::sin(2.0 * u[(i, 0)])
                + u[(i, 5)] * u[(i, 9)]
                + 0.5 * f64::cos(3.0 * u[(i, 13)])
                + 0.3 * u[(i, 16)])
            + 10.0 * rng.sample::<f64, _>(StandardNormal)
    });
    (Dataset::new(x, y).unwrap(), scales)
}

#[test]
fn case_1_raw_input_scales_fitc_trains_to_a_good_fit() {
    let mut rng = StdRng::seed_from_u64(1);
    let (train, scales) = raw_scales(1000, &mut rng);
    let (test, _) = raw_scales(1000, &mut rng);
    let params = Fitc::params(50).seed(1);
    let (default, fitted) = fit("FITC-50 default", &params, &train, &test);
    assert!(fitted.training().evaluations > 100, "no early stop");
    let relevant = [0, 5, 9, 13, 16];
    let truth = DVector::from_fn(17, |d, _| {
        if relevant.contains(&d) {
            scales[d]
        } else {
            1e3 * scales[d]
        }
    });
    let (true_start, _) = fit(
        "FITC-50 true relevance",
        &params.clone().initial_lengthscales(truth),
        &train,
        &test,
    );
    assert_good("case 1", default, &[true_start]);
    assert!(default < 0.03, "NMSE {default} (the old optimiser: 0.32)");
}

/// `distinct` grid inputs in [−1, 5], `reps` noisy sinc targets each, inputs perturbed by
/// ±`perturbation`.
fn replicated(distinct: usize, reps: usize, perturbation: f64, rng: &mut StdRng) -> Dataset {
    let (mut x, mut y) = (Vec::new(), Vec::new());
    for i in 0..distinct {
        let xi = -1.0 + 6.0 * i as f64 / (distinct - 1) as f64;
        for _ in 0..reps {
            x.push(xi + perturbation * rng.random_range(-1.0..1.0));
            y.push(ssgp::data::sinc(xi) + 0.05 * rng.sample::<f64, _>(StandardNormal));
        }
    }
    Dataset::new(DMatrix::from_vec(x.len(), 1, x), DVector::from_vec(y)).unwrap()
}

#[test]
fn case_2_failed_trial_points_back_off_instead_of_ending_training() {
    let mut rng = StdRng::seed_from_u64(1);
    let near_duplicates = replicated(10, 4, 1e-6, &mut rng);
    let duplicates = replicated(10, 4, 0.0, &mut rng);
    let test = ssgp::data::sinc_data(500, true, 0.05, &mut rng).unwrap();
    let truth = DVector::from_element(1, 0.8);

    let (full, _) = fit(
        "full GP, inputs ±1e-6",
        &FullGp::params(),
        &near_duplicates,
        &test,
    );
    let (full_true, _) = fit(
        "full GP, true ℓ",
        &FullGp::params().initial_lengthscales(truth.clone()),
        &near_duplicates,
        &test,
    );
    assert_good("case 2, full GP", full, &[full_true]);
    assert!(full < 0.035, "NMSE {full} (the old optimiser: 0.57)");

    let params = Fitc::params(40).seed(1);
    let (fitc, _) = fit("FITC m = n = 40, 10 inputs", &params, &duplicates, &test);
    let (fitc_true, _) = fit(
        "FITC, true ℓ",
        &params.clone().initial_lengthscales(truth),
        &duplicates,
        &test,
    );
    assert_good("case 2, FITC", fitc, &[fitc_true]);
    assert!(fitc < 0.035, "NMSE {fitc} (the old optimiser: 0.58)");
}

/// n points in [−1, 1]^D whose target depends on the first 4 inputs (Pumadyn-like).
fn few_relevant(n: usize, dim: usize, rng: &mut StdRng) -> Dataset {
    let x = DMatrix::from_fn(n, dim, |_, _| rng.random_range(-1.0..1.0));
    let y = DVector::from_fn(n, |i, _| {
        f64::sin(2.0 * x[(i, 0)]) * f64::cos(x[(i, 1)])
            + x[(i, 2)] * x[(i, 3)]
            + 0.1 * rng.sample::<f64, _>(StandardNormal)
    });
    Dataset::new(x, y).unwrap()
}

#[test]
fn case_3_a_flat_objective_stops_early() {
    let mut rng = StdRng::seed_from_u64(1);
    let train = few_relevant(1000, 26, &mut rng);
    let test = few_relevant(1000, 26, &mut rng);
    let (default, fitted) = fit("full GP, 26 inputs", &FullGp::params(), &train, &test);
    let t = fitted.training();
    assert!(
        matches!(
            t.termination,
            Termination::Converged | Termination::SmallGradient
        ),
        "{}",
        t.termination
    );
    // The irrelevant lengthscales crawl towards infinity and −log p with them: the old test
    // (relative decrease 1e-10 over 10 iterations) never fired and spent all 1000 evaluations.
    assert!(t.evaluations < 800, "{} evaluations", t.evaluations);
    let truth = DVector::from_fn(26, |d, _| if d < 4 { 1.0 } else { 100.0 });
    let (true_start, _) = fit(
        "full GP, true relevance",
        &FullGp::params().initial_lengthscales(truth),
        &train,
        &test,
    );
    assert_good("case 3", default, &[true_start]);
}

#[test]
fn case_4a_replicated_inputs_reach_the_good_optimum() {
    let truth = DVector::from_element(1, 0.8);
    for seed in 1..=3u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let train = replicated(20, 5, 0.0, &mut rng);
        let test = ssgp::data::sinc_data(1000, true, 0.05, &mut rng).unwrap();
        // The full GP from half ranges: the old first line search leapt from ℓ = 3 past
        // ℓ ≈ 0.8 into the degenerate ℓ → 0 basin (NMSE 0.9985).
        let (full, fitted) = fit("full GP, 20×5 replicates", &FullGp::params(), &train, &test);
        let (full_true, _) = fit(
            "full GP, true ℓ",
            &FullGp::params().initial_lengthscales(truth.clone()),
            &train,
            &test,
        );
        assert_good("case 4a, full GP", full, &[full_true]);
        assert!(fitted.training().evaluations < 200);
        // The optimiser's case, in the paper's parametrisation (no noise floor). SSGP-10 on
        // these 20 distinct inputs lands in a poor local optimum (NMSE > 0.035) for about a
        // quarter of the seeds whatever the floor (seeds 1–12: 3 without a floor, 4 with the
        // default 1e-4·var y — seed 1 among them); restarts are the cure, not this test's subject.
        let params = Ssgp::params(10).seed(seed).relative_noise_floor(0.0);
        let (ssgp, _) = fit("SSGP-10, 20×5 replicates", &params, &train, &test);
        let (ssgp_true, _) = fit(
            "SSGP-10, true ℓ",
            &params.clone().initial_lengthscales(truth.clone()),
            &train,
            &test,
        );
        assert_good("case 4a, SSGP", ssgp, &[ssgp_true]);
        assert!(
            full < 0.035 && ssgp < 0.035,
            "seed {seed}: NMSE {full}, {ssgp} (the old optimiser: 0.9985 and 0.2–2.1)"
        );
    }
}

/// The case 4(b): x ~ U(−1, 1)^50, y = sin(3x₁) + 0.5·x₂ − cos(2x₃) + N(0, 0.1²).
fn irrelevant_inputs(n: usize, rng: &mut StdRng) -> Dataset {
    let x = DMatrix::from_fn(n, 50, |_, _| rng.random_range(-1.0..1.0));
    let y = DVector::from_fn(n, |i, _| {
        f64::sin(3.0 * x[(i, 0)]) + 0.5 * x[(i, 1)] - f64::cos(2.0 * x[(i, 2)])
            + 0.1 * rng.sample::<f64, _>(StandardNormal)
    });
    Dataset::new(x, y).unwrap()
}

#[test]
fn case_4b_many_irrelevant_inputs_the_default_start_finds_the_three_that_matter() {
    for seed in 1..=3u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let train = irrelevant_inputs(500, &mut rng);
        let test = irrelevant_inputs(1000, &mut rng);
        let params = Ssgp::params(50).seed(seed);
        let (default, _) = fit("SSGP-50, 50 inputs", &params, &train, &test);
        let truth = DVector::from_fn(50, |d, _| match d {
            0 => 0.5,
            1 => 2.0,
            2 => 0.7,
            _ => 100.0,
        });
        let (true_start, _) = fit(
            "SSGP-50, true relevance",
            &params.clone().initial_lengthscales(truth),
            &train,
            &test,
        );
        assert_good("case 4b", default, &[true_start]);
        assert!(
            default <= 0.05,
            "seed {seed}: NMSE {default} (half ranges: 1.5)"
        );
        // Half ranges let SSGP use all 50 inputs and overfit: the default is not that start.
        let (half, _) = fit(
            "SSGP-50, half ranges",
            &params.clone().lengthscale_init(LengthscaleInit::HalfRange),
            &train,
            &test,
        );
        assert!(half > 10.0 * default, "half ranges {half} vs {default}");
    }
}

#[test]
fn case_6_a_column_constant_in_the_full_gps_subset_is_ignored_there() {
    let mut rng = StdRng::seed_from_u64(1);
    let sparse_column = |data: Dataset, one: Option<usize>| {
        let mut x = data.x().clone();
        x.column_mut(5).fill(0.0);
        if let Some(row) = one {
            x[(row, 5)] = 1.0;
        }
        Dataset::new(x, data.y().clone()).unwrap()
    };
    let train = sparse_column(few_relevant(3000, 8, &mut rng), Some(17));
    let test = sparse_column(few_relevant(1000, 8, &mut rng), None);
    let (full, fitted) = fit(
        "full GP, θ on 1000 points",
        &FullGp::params().hyperparameter_subset(Some(1000)),
        &train,
        &test,
    );
    // Row 17 is not in the subset: column 5 is constant there and left out (it used to be a
    // ConstantInput error that aborted the benchmark).
    assert_eq!(fitted.training().ignored_inputs, vec![5]);
    assert!(full < 0.03, "NMSE {full}");
    let (ssgp, fitted) = fit("SSGP-50", &Ssgp::params(50).seed(1), &train, &test);
    assert!(fitted.training().ignored_inputs.is_empty());
    assert!(ssgp < 0.03, "NMSE {ssgp}");
}

/// `data` with inputs a·x + b and targets c·y.
fn affine(data: &Dataset, a: f64, b: f64, c: f64) -> Dataset {
    Dataset::new(data.x().map(|v| a * v + b), data.y().map(|v| c * v)).unwrap()
}

#[test]
fn case_5_every_model_is_free_of_the_scale_of_inputs_and_targets() {
    // Scalings of the targets by 1e-8 … 1e8 and of the inputs by 1e-6 and 1e6 around an offset
    // of 1e8, without the standardisation wrapper (FITC's absolute jitter made y × 1e-5 give an
    // NMSE of 1.00): the NMSE changes by less than 1%. SSGP with learned spectral points settles
    // in one of several optima of this evidence, up to 5% apart in NMSE, by round-off alone (a
    // change of y by one ulp can move it): for it a scaled fit must be no worse than 1% beyond
    // the worst of its fits to the unscaled data changed by one ulp.
    let mut rng = StdRng::seed_from_u64(1);
    let train = ssgp::data::sinc_data(100, false, 0.05, &mut rng).unwrap();
    let test = ssgp::data::sinc_data(1000, true, 0.05, &mut rng).unwrap();
    let scalings = [
        (1.0, 0.0, 1e-8),
        (1.0, 0.0, 1e-4),
        (1.0, 0.0, 1e4),
        (1.0, 0.0, 1e8),
        (1e-6, 1e8, 1.0),
        (1e6, 1e8, 1.0),
    ];
    let ulps = [
        (1.0, 0.0, 1.0),
        (1.0, 0.0, 1.0 + f64::EPSILON),
        (1.0, 0.0, 1.0 - f64::EPSILON / 2.0),
        (1.0 + f64::EPSILON, 0.0, 1.0),
    ];
    let models: Vec<(&str, Box<dyn Regressor>, bool)> = vec![
        ("SSGP-10", Box::new(Ssgp::params(10).seed(1)), true),
        // Without the calibration check: its choice between two fits whose held-out MNLPs
        // nearly tie can flip by round-off, as learned points move (SSGP-10 covers the check).
        (
            "SSGP-20 fixed",
            Box::new(
                Ssgp::params(20)
                    .seed(1)
                    .fixed_spectral_points(true)
                    .calibration(CalibrationGuard::Off),
            ),
            false,
        ),
        // Fixed pseudo-inputs, trained to convergence: with learned ones FITC-20's evidence has
        // optima 1–5 % apart in NMSE that round-off alone chooses between (one-ulp changes of y
        // or x moved the unscaled fit from NMSE 0.02144 to 0.02175, and at x·1e-6 + 1e8 the
        // crate's own kernels reach a better evidence, −128.9 against −127.9, at NMSE 0.0224);
        // `fitc::the_evidence_is_free_of_the_scale_of_inputs_and_targets` checks FITC's and
        // VFE's evidence at a fixed θ with learnable pseudo-inputs instead.
        (
            "FITC-20",
            Box::new(
                Fitc::params(20)
                    .seed(1)
                    .fixed_pseudo_inputs(true)
                    .max_evaluations(10_000),
            ),
            false,
        ),
        ("full GP", Box::new(FullGp::params()), false),
    ];
    let nmse_at = |model: &dyn Regressor, (a, b, c): (f64, f64, f64)| {
        let (tr, te) = (affine(&train, a, b, c), affine(&test, a, b, c));
        fit(&format!("x·{a:e} + {b:e}, y·{c:e}"), model, &tr, &te).0
    };
    for (name, model, round_off_spread) in &models {
        let reference: Vec<f64> = if *round_off_spread {
            ulps.iter().map(|&s| nmse_at(model.as_ref(), s)).collect()
        } else {
            vec![nmse_at(model.as_ref(), ulps[0])]
        };
        let lo = reference.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = reference.iter().copied().fold(0.0, f64::max);
        for &s in &scalings {
            let e = nmse_at(model.as_ref(), s);
            assert!(
                (*round_off_spread || e >= 0.99 * lo) && e <= 1.01 * hi,
                "{name} at {s:?}: NMSE {e} against {lo}…{hi} unscaled"
            );
        }
    }
}
