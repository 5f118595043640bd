//! Saving and loading a fitted SSGP (the `serde` feature): predictions are bit-identical.
#![cfg(feature = "serde")]

use rand::rngs::StdRng;
use rand::SeedableRng;
use ssgp::data::sinc_data;
use ssgp::ssgp::{FittedSsgp, Ssgp};

#[test]
fn json_round_trip_predicts_bit_identically() {
    let mut rng = StdRng::seed_from_u64(4);
    let train = sinc_data(80, false, 0.05, &mut rng).unwrap();
    let test = sinc_data(300, true, 0.05, &mut rng).unwrap();
    let fitted = Ssgp::params(8)
        .seed(3)
        .initial_draws(5)
        .fit(&train)
        .unwrap();
    let json = serde_json::to_string(&fitted).unwrap();
    let loaded: FittedSsgp = serde_json::from_str(&json).unwrap();
    let (a, b) = (
        fitted.predict(test.x()).unwrap(),
        loaded.predict(test.x()).unwrap(),
    );
    for (x, y) in a
        .mean
        .iter()
        .chain(a.variance.iter())
        .zip(b.mean.iter().chain(b.variance.iter()))
    {
        assert_eq!(x.to_bits(), y.to_bits());
    }
    assert_eq!(loaded.parameters(), fitted.parameters());
    assert_eq!(loaded.training(), fitted.training());
    assert!(serde_json::from_str::<FittedSsgp>("{\"hyper\": 3}").is_err());
}
