//! The generated suite of small and wide problems (`ssgp::data::calibration_suite`): the
//! problems are reproducible, shaped as described, and the fast subset's fits carry their
//! leave-one-out diagnostic. `examples/calibration.rs` runs the whole suite (the README's table).

use ssgp::data::{calibration_suite, Roughness};
use ssgp::{FullGp, Ssgp};

#[test]
fn the_suite_covers_small_and_wide_problems_and_is_reproducible() {
    let suite = calibration_suite();
    assert!(suite.len() >= 30);
    assert!(suite
        .iter()
        .all(|p| (50..=1000).contains(&p.n) && p.dim <= 2 * p.n));
    assert!(suite.iter().any(|p| p.dim == 1) && suite.iter().any(|p| p.dim == 2 * p.n));
    assert!(
        suite.iter().filter(|p| p.dim >= p.n).count() >= 8,
        "wide problems"
    );
    assert!(suite.iter().any(|p| p.roughness == Roughness::Rough));
    assert!(
        suite.iter().any(|p| p.relevant < p.dim),
        "irrelevant inputs"
    );
    let noise: Vec<f64> = suite.iter().map(|p| p.noise).collect();
    assert!(noise.contains(&0.001) && noise.contains(&1.0));
    let (a, b) = suite[4].generate(100).unwrap();
    let (c, d) = suite[4].generate(100).unwrap();
    assert_eq!((&a, &b), (&c, &d), "same seed, same bits");
    assert_eq!((a.len(), a.dim(), b.len()), (50, 50, 100));
}

/// The fast subset (the four n = 50 problems up to D = 50): every SSGP and full-GP fit reports
/// its diagnostic, and the full GP (D + 2 learned hyperparameters, so its LOO at the fitted θ is
/// nearly honest) has a LOO mean z² near 1.
#[test]
fn the_fast_subset_fits_carry_their_diagnostic() {
    for problem in calibration_suite().into_iter().take(5) {
        let (train, _) = problem.generate(10).unwrap();
        let name = problem.name();
        let ssgp = Ssgp::params(20)
            .seed(1)
            .max_evaluations(200)
            .fit(&train)
            .unwrap();
        assert!(ssgp.training().diagnostic.is_some(), "{name}: SSGP");
        let full = FullGp::params().max_evaluations(200).fit(&train).unwrap();
        let d = full.training().diagnostic.unwrap();
        println!(
            "{name}: SSGP {}; full GP {d}",
            ssgp.training().diagnostic.unwrap()
        );
        assert!((0.5..2.0).contains(&d.mean_z2), "{name}: full GP {d}");
    }
}
