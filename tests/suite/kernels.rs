//! The Matérn kernels (ν = ½, 3/2, 5/2) in every model: the full GP's and FITC's gradients
//! against central differences, their evidences and the full GP's predictions against dense
//! formulas built from the kernels' definitions, and SSGP with fixed spectral points drawn from
//! the Student-t spectral densities approaching the exact Matérn GP.

use crate::common::{check_gradient, dense_neg_log_evidence};
use approx::assert_relative_eq;
use nalgebra::{DMatrix, DVector};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use ssgp::hyperparameters::Hyperparameters;
use ssgp::kernel::Kernel;
use ssgp::optim::Objective;
use ssgp::ssgp::{Ssgp, SsgpHyperparameters};
use ssgp::{Dataset, Fitc, FullGp, ParamGuard};

/// k(a_i, b_j) by the closed forms of each kernel, r = ‖(a_i − b_j) ⊘ ℓ‖.
fn by_definition(
    kernel: Kernel,
    a: &DMatrix<f64>,
    b: &DMatrix<f64>,
    ell: &[f64],
    sf2: f64,
) -> DMatrix<f64> {
    DMatrix::from_fn(a.nrows(), b.nrows(), |i, j| {
        let r = (0..a.ncols())
            .map(|d| ((a[(i, d)] - b[(j, d)]) / ell[d]).powi(2))
            .sum::<f64>()
            .sqrt();
        let (s3, s5) = (3f64.sqrt() * r, 5f64.sqrt() * r);
        sf2 * match kernel {
            Kernel::SquaredExponential => (-0.5 * r * r).exp(),
            Kernel::Matern12 => (-r).exp(),
            Kernel::Matern32 => (1.0 + s3) * (-s3).exp(),
            Kernel::Matern52 => (1.0 + s5 + s5 * s5 / 3.0) * (-s5).exp(),
        }
    })
}

fn problem(n: usize, dim: usize, rng: &mut StdRng) -> (DMatrix<f64>, DVector<f64>) {
    let x = DMatrix::from_fn(n, dim, |_, _| rng.random_range(-2.0..2.0));
    let y = DVector::from_fn(n, |i, _| {
        (0..dim).map(|d| x[(i, d)]).sum::<f64>().sin() + 0.3 * rng.random_range(-1.0..1.0)
    });
    (x, y)
}

/// θ = [log ℓ, log σ0, log σn] at random.
fn head(dim: usize, rng: &mut StdRng) -> DVector<f64> {
    DVector::from_fn(dim + 2, |i, _| match i {
        i if i < dim => rng.random_range(-0.3..0.7),
        i if i == dim => rng.random_range(-0.5..0.5),
        _ => rng.random_range(-1.5..-0.5),
    })
}

const MATERN: [Kernel; 3] = [Kernel::Matern12, Kernel::Matern32, Kernel::Matern52];

#[test]
fn full_gp_and_fitc_gradients_match_central_differences() {
    let mut rng = StdRng::seed_from_u64(21);
    for kernel in MATERN {
        for (n, m, dim, floor) in [(30, 5, 1, 0.0), (40, 6, 3, 0.0), (25, 4, 2, 0.05)] {
            let (x, y) = problem(n, dim, &mut rng);
            let data = Dataset::new(x, y).unwrap();
            let label = format!("{kernel:?} ({n},{m},{dim}) floor {floor}");
            let theta = head(dim, &mut rng);
            let full = FullGp::params()
                .kernel(kernel)
                .noise_floor(floor)
                .threads(1)
                .check()
                .unwrap()
                .evidence(&data)
                .unwrap();
            check_gradient(&full, &theta, &format!("full GP, {label}"));

            let fitc = Fitc::params(m)
                .kernel(kernel)
                .noise_floor(floor)
                .threads(1)
                .check()
                .unwrap();
            let fitc = fitc.evidence(&data).unwrap();
            let mut theta_fitc = DVector::zeros(fitc.num_params());
            theta_fitc.rows_mut(0, dim + 2).copy_from(&theta);
            for i in dim + 2..theta_fitc.len() {
                theta_fitc[i] = rng.random_range(-2.0..2.0);
            }
            check_gradient(&fitc, &theta_fitc, &format!("FITC, {label}"));
        }
    }
}

#[test]
fn evidences_and_predictions_equal_dense_formulas() {
    let mut rng = StdRng::seed_from_u64(22);
    for kernel in Kernel::ALL {
        let (n, m, dim, jitter) = (35, 7, 2, 1e-6);
        let (x, y) = problem(n, dim, &mut rng);
        let data = Dataset::new(x.clone(), y.clone()).unwrap();
        let yc = y.add_scalar(-y.mean());
        let theta = head(dim, &mut rng);
        let ell: Vec<f64> = (0..dim).map(|d| theta[d].exp()).collect();
        let (sf2, sn2) = ((2.0 * theta[dim]).exp(), (2.0 * theta[dim + 1]).exp());

        // Full GP: −log N(y | 0, K + σn²I), and eq. 2's predictions.
        let params = FullGp::params()
            .relative_noise_floor(0.0)
            .kernel(kernel)
            .threads(1)
            .check()
            .unwrap();
        let k = by_definition(kernel, &x, &x, &ell, sf2);
        let ky = &k + DMatrix::identity(n, n) * sn2;
        let dense = dense_neg_log_evidence(ky.clone(), &yc);
        let value = params
            .evidence(&data)
            .unwrap()
            .evaluate(&theta)
            .unwrap()
            .value;
        assert_relative_eq!(value, dense, max_relative = 1e-10);
        let fitted = params.condition(&data, &theta).unwrap();
        let xt = DMatrix::from_fn(6, dim, |_, _| rng.random_range(-2.5..2.5));
        let ks = by_definition(kernel, &xt, &x, &ell, sf2);
        let chol = ky.cholesky().unwrap();
        let pred = fitted.predict(&xt).unwrap();
        for j in 0..6 {
            let kj = ks.row(j).transpose();
            let mean = kj.dot(&chol.solve(&yc)) + y.mean();
            let var = sf2 - kj.dot(&chol.solve(&kj));
            assert_relative_eq!(pred.mean[j], mean, epsilon = 1e-10);
            assert_relative_eq!(pred.f_variance[j], var, epsilon = 1e-10);
        }
        // The joint covariance K** − K*f(K + σn²I)⁻¹Kf*.
        let dense_joint =
            by_definition(kernel, &xt, &xt, &ell, sf2) - &ks * chol.solve(&ks.transpose());
        let joint = fitted.predict_covariance(&xt).unwrap();
        assert_relative_eq!(joint.f_covariance, dense_joint, epsilon = 1e-10);

        // FITC: −log N(y | 0, Q_ff + diag(K_ff − Q_ff) + σn²I), pseudo-inputs relative to the
        // inputs' column means in θ.
        let fitc = Fitc::params(m)
            .relative_noise_floor(0.0)
            .kernel(kernel)
            .jitter(jitter)
            .threads(1)
            .check()
            .unwrap();
        let evidence = fitc.evidence(&data).unwrap();
        let mut theta_fitc = DVector::zeros(evidence.num_params());
        theta_fitc.rows_mut(0, dim + 2).copy_from(&theta);
        let xb = DMatrix::from_fn(m, dim, |_, _| rng.random_range(-2.0..2.0));
        for d in 0..dim {
            let mean = x.column(d).mean();
            for j in 0..m {
                theta_fitc[dim + 2 + j + d * m] = xb[(j, d)] - mean;
            }
        }
        let k_fu = by_definition(kernel, &x, &xb, &ell, sf2);
        let k_uu = by_definition(kernel, &xb, &xb, &ell, sf2) + DMatrix::identity(m, m) * jitter;
        let q = &k_fu * k_uu.cholesky().unwrap().solve(&k_fu.transpose());
        let mut c = q;
        for i in 0..n {
            c[(i, i)] = sf2 + sn2;
        }
        assert_relative_eq!(
            evidence.value_and_gradient(&theta_fitc).unwrap().0,
            dense_neg_log_evidence(c, &yc),
            max_relative = 1e-10
        );
    }
}

#[test]
fn fixed_spectral_points_approach_the_exact_matern_gp() {
    // SSGP's covariance (σ0²/m) Σ_r cos(ω_rᵀ(x − x')) with ω_r = w_r ⊘ ℓ is an unbiased Monte
    // Carlo estimate of the kernel when the w_r come from its spectral density (eq. 11); its
    // −log p(y|θ), a nonlinear function of it, scatters around the exact GP's with a standard
    // deviation s_m and is biased by b/m + O(1/m²) (the log-determinant's curvature; large for
    // Matérn ½, whose Cauchy frequencies are heavy-tailed). Over 8 seeds at m = 1000 and 2000,
    // the Richardson estimate 2μ_2000 − μ_1000 removes the 1/m bias; its Monte Carlo error is
    // e = √(4 s_2000² + s_1000²)/√8, and it must be within 4e of the exact value. The squared
    // exponential's density (the wrong one) must be rejected by the same test.
    let mut rng = StdRng::seed_from_u64(23);
    let (n, dim) = (200, 2);
    let (x, y) = problem(n, dim, &mut rng);
    let data = Dataset::new(x.clone(), y.clone()).unwrap();
    let theta = DVector::from_vec(vec![0.2, -0.1, 0.0, -1.0]);
    let hyper = Hyperparameters {
        lengthscales: DVector::from_vec(vec![0.2f64.exp(), (-0.1f64).exp()]),
        signal_variance: 1.0,
        noise_variance: (-2.0f64).exp(),
    };
    // Mean and standard deviation of SSGP's −log p(y|θ) over 8 seeds of m points from `density`.
    let ssgp = |density: Kernel, m: usize| {
        let values: Vec<f64> = (0..8)
            .map(|seed| {
                let params = Ssgp::params(m)
                    .kernel(density)
                    .fixed_spectral_points(true)
                    .seed(seed)
                    .check()
                    .unwrap();
                let evidence = params.evidence(&data).unwrap();
                let theta = evidence
                    .pack(&SsgpHyperparameters {
                        hyper: hyper.clone(),
                        unit_frequencies: DMatrix::zeros(m, dim),
                    })
                    .unwrap();
                evidence.value(&theta).unwrap()
            })
            .collect();
        let mean = values.iter().sum::<f64>() / 8.0;
        let sd = (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / 7.0).sqrt();
        (mean, sd)
    };
    // The bias-corrected estimate and its Monte Carlo error.
    let corrected = |density: Kernel| {
        let ((m1, s1), (m2, s2)) = (ssgp(density, 1000), ssgp(density, 2000));
        (
            2.0 * m2 - m1,
            (4.0 * s2 * s2 + s1 * s1).sqrt() / 8f64.sqrt(),
            m1,
            m2,
        )
    };
    let (wrong, wrong_error, _, _) = corrected(Kernel::SquaredExponential);
    println!("the squared exponential's density: {wrong:.3} ± {wrong_error:.3}");
    for kernel in MATERN {
        let exact = FullGp::params()
            .kernel(kernel)
            .check()
            .unwrap()
            .evidence(&data)
            .unwrap()
            .evaluate(&theta)
            .unwrap()
            .value;
        let (estimate, error, m1, m2) = corrected(kernel);
        println!(
            "{kernel:?}: exact {exact:.3}; SSGP m = 1000: {m1:.3}, m = 2000: {m2:.3}, \
             corrected {estimate:.3} ± {error:.3}"
        );
        assert!(
            (estimate - exact).abs() <= 4.0 * error,
            "{kernel:?}: SSGP {estimate} ± {error} vs exact {exact}"
        );
        assert!(
            (wrong - exact).abs() > 4.0 * wrong_error,
            "{kernel:?}: the squared exponential's density also matches: {wrong} vs {exact}"
        );
    }
}

/// A saved FITC or full GP keeps its kernel: loaded, it predicts the same bits.
#[cfg(feature = "serde")]
#[test]
fn matern_models_round_trip_with_their_kernel() {
    use ssgp::persist::{from_json, to_json};
    use ssgp::{FittedFitc, FittedFullGp};
    let mut rng = StdRng::seed_from_u64(24);
    let (x, y) = problem(60, 2, &mut rng);
    let data = Dataset::new(x, y).unwrap();
    let xt = DMatrix::from_fn(7, 2, |_, _| rng.random_range(-2.5..2.5));
    let fitc = Fitc::params(6)
        .kernel(Kernel::Matern32)
        .max_evaluations(40)
        .fit(&data)
        .unwrap();
    let loaded: FittedFitc = from_json(&to_json(&fitc).unwrap()).unwrap();
    assert_eq!(loaded.kernel(), Kernel::Matern32);
    assert_eq!(loaded.predict(&xt).unwrap(), fitc.predict(&xt).unwrap());
    let full = FullGp::params()
        .kernel(Kernel::Matern12)
        .max_evaluations(40)
        .fit(&data)
        .unwrap();
    let loaded: FittedFullGp = from_json(&to_json(&full).unwrap()).unwrap();
    assert_eq!(loaded.kernel(), Kernel::Matern12);
    assert_eq!(loaded.predict(&xt).unwrap(), full.predict(&xt).unwrap());
}
