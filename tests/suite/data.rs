//! Data in: the data sets the crate builds for you and the ones you bring.

use rand::{rngs::StdRng, SeedableRng};
use ssgp::data::sinc_data;
use ssgp::Error;

#[test]
fn sinc_noise_must_be_a_finite_non_negative_deviation() {
    let mut rng = StdRng::seed_from_u64(0);
    for bad in [-0.1, f64::NAN, f64::INFINITY] {
        assert!(
            matches!(
                sinc_data(10, false, bad, &mut rng),
                Err(Error::InvalidParameter {
                    name: "noise_std",
                    ..
                })
            ),
            "{bad}"
        );
    }
    let clean = sinc_data(10, true, 0.0, &mut rng).unwrap();
    assert_eq!(clean.y()[0], ssgp::data::sinc(-1.0));
}
