//! Initial lengthscales from a full GP on a subset (paper §5.2, Pumadyn-32nm), for SSGP and FITC.

use nalgebra::{DMatrix, DVector};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use ssgp::full_gp::lengthscales_from_subset;
use ssgp::metrics::nmse;
use ssgp::ssgp::Ssgp;
use ssgp::{Dataset, Error, Fitc, LengthscaleInit};

/// 8 inputs of which only the first two matter (an ARD problem like Pumadyn-32nm).
fn ard_problem(n: usize, rng: &mut StdRng) -> Dataset {
    let x = DMatrix::from_fn(n, 8, |_, _| rng.random_range(-1.0..1.0));
    let y = DVector::from_fn(n, |i, _| {
        f64::sin(3.0 * x[(i, 0)]) * f64::cos(2.0 * x[(i, 1)]) + 0.05 * rng.random_range(-1.0..1.0)
    });
    Dataset::new(x, y).unwrap()
}

#[test]
fn full_gp_initialisation_starts_from_the_subset_lengthscales() {
    let mut rng = StdRng::seed_from_u64(5);
    let train = ard_problem(300, &mut rng);
    let test = ard_problem(500, &mut rng);
    let ell = lengthscales_from_subset(&train, 150, 3, 0).unwrap();
    println!("full-GP lengthscales on 150 points: {:.2}", ell.transpose());
    // ARD found the two relevant inputs: their lengthscales are far shorter than the others'.
    assert!(ell[0].max(ell[1]) * 3.0 < ell.rows(2, 6).min(), "{ell}");

    let base = Ssgp::params(20)
        .seed(3)
        .initial_draws(10)
        .max_evaluations(300);
    let from_gp = base
        .clone()
        .initial_lengthscales_from_full_gp(150)
        .fit(&train)
        .unwrap();
    let explicit = base
        .clone()
        .initial_lengthscales(ell.clone())
        .fit(&train)
        .unwrap();
    assert_eq!(
        from_gp.parameters(),
        explicit.parameters(),
        "same start, same fit"
    );
    let half_range = base
        .lengthscale_init(LengthscaleInit::HalfRange)
        .fit(&train)
        .unwrap();
    let error = |p| nmse(test.y(), &p, train.y_mean()).unwrap();
    let (e_gp, e_half) = (
        error(from_gp.predict(test.x()).unwrap()),
        error(half_range.predict(test.x()).unwrap()),
    );
    println!("SSGP NMSE: full-GP initialisation {e_gp:.4}, half-range initialisation {e_half:.4}");
    // The noise alone is NMSE ≈ 0.004 (variance 0.05²/3 against a signal variance ≈ 0.21).
    assert!(e_gp < 0.006 && e_gp <= 1.05 * e_half, "{e_gp} vs {e_half}");

    let fitc = Fitc::params(20)
        .seed(3)
        .max_evaluations(300)
        .initial_lengthscales_from_full_gp(150)
        .fit(&train)
        .unwrap();
    let fitc_explicit = Fitc::params(20)
        .seed(3)
        .max_evaluations(300)
        .initial_lengthscales(ell)
        .fit(&train)
        .unwrap();
    assert_eq!(fitc.parameters(), fitc_explicit.parameters());
    let fitc_half = Fitc::params(20)
        .seed(3)
        .max_evaluations(300)
        .lengthscale_init(LengthscaleInit::HalfRange)
        .fit(&train)
        .unwrap();
    let (f_gp, f_half) = (
        error(fitc.predict(test.x()).unwrap()),
        error(fitc_half.predict(test.x()).unwrap()),
    );
    println!("FITC NMSE: full-GP initialisation {f_gp:.4}, half-range initialisation {f_half:.4}");
    assert!(f_gp < 0.006 && f_gp <= 1.05 * f_half, "{f_gp} vs {f_half}");
    assert!(matches!(
        Ssgp::params(5)
            .initial_lengthscales_from_full_gp(0)
            .fit(&train),
        Err(Error::InvalidParameter { .. })
    ));
    assert!(matches!(
        Fitc::params(5)
            .initial_lengthscales_from_full_gp(0)
            .fit(&train),
        Err(Error::InvalidParameter { .. })
    ));
}

/// sin(ωx) on [0, 20] turning many times (ω = 3: 400 rows; ω = 6: 800), noise 0.05: from half
/// ranges (ℓ = 10) the full GP settled where a long lengthscale calls the signal noise (ℓ = 22,
/// σn² = 0.98·var y, test NMSE 1), and SSGP, started from it, kept the training mean. The full
/// GP is trained again from shorter lengthscales (`full_gp::SHORTER_STARTS`) while its fit calls
/// more than half of the variance noise, and both now resolve the signal; a fit that explains
/// its data from half ranges (ω = 1 on [0, 5]) is the one from half ranges.
#[test]
fn a_signal_turning_many_times_is_not_fitted_as_noise() {
    use ssgp::FullGp;
    let periodic = |omega: f64, range: f64, n: usize, rng: &mut StdRng| {
        let x = DMatrix::from_fn(n, 1, |_, _| rng.random_range(0.0..range));
        let y = DVector::from_fn(n, |i, _| {
            (omega * x[(i, 0)]).sin() + 0.05 * rng.random_range(-1.7..1.7)
        });
        Dataset::new(x, y).unwrap()
    };
    for (omega, n) in [(3.0, 400), (6.0, 800)] {
        let mut rng = StdRng::seed_from_u64(1);
        let train = periodic(omega, 20.0, n, &mut rng);
        let test = periodic(omega, 20.0, 1000, &mut rng);
        let full = FullGp::params().fit(&train).unwrap();
        let p = full.predict(test.x()).unwrap();
        let error = nmse(test.y(), &p, train.y_mean()).unwrap();
        assert!(error < 0.02, "ω = {omega}: full GP NMSE {error}");
        assert!(full.noise_variance() < 0.01 * train.y_variance());
        // The kept shorter start, given explicitly, is the same fit with fewer evaluations than
        // the default counts (the half range's run and every retry's).
        if n == 400 {
            let column = train.x().column(0);
            let half_range = 0.5 * (column.max() - column.min());
            let kept: Vec<_> = ssgp::full_gp::SHORTER_STARTS
                .iter()
                .map(|factor| {
                    FullGp::params()
                        .initial_lengthscales(DVector::from_element(1, factor * half_range))
                        .fit(&train)
                        .unwrap()
                })
                .filter(|shorter| shorter.parameters() == full.parameters())
                .collect();
            assert_eq!(kept.len(), 1, "ω = {omega}: one shorter start kept");
            assert!(
                full.training().evaluations > kept[0].training().evaluations,
                "ω = {omega}: {} evaluations counted, {} in the kept run",
                full.training().evaluations,
                kept[0].training().evaluations
            );
        }
        let ssgp = Ssgp::params(50).seed(1).fit(&train).unwrap();
        let p = ssgp.predict(test.x()).unwrap();
        let error = nmse(test.y(), &p, train.y_mean()).unwrap();
        assert!(error < 0.02, "ω = {omega}: SSGP NMSE {error}");
    }
    let mut rng = StdRng::seed_from_u64(2);
    let train = periodic(1.0, 5.0, 200, &mut rng);
    let fitted = FullGp::params().fit(&train).unwrap();
    let column = train.x().column(0);
    let half_range = FullGp::params()
        .initial_lengthscales(DVector::from_element(
            1,
            0.5 * (column.max() - column.min()),
        ))
        .fit(&train)
        .unwrap();
    assert_eq!(fitted.parameters(), half_range.parameters());
}
