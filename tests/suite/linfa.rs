//! linfa's traits (feature `linfa`): a fit through linfa's `Fit` on a `DatasetBase` is the fit
//! through the crate's own call on rows, a row-major slice or ndarray views, bit for bit, and predictions through `PredictInplace` are the
//! model's own; a failed prediction is NaN, as the module documents.
#![cfg(feature = "linfa")]

use ssgp::linfa::traits::{Fit, Predict};
use ssgp::linfa::DatasetBase;
use ssgp::ndarray::{Array1, Array2};
use ssgp::ssgp::Ssgp;
use ssgp::{Dataset, Error, Fitc, FullGp, Predictive};

fn data() -> (Array2<f64>, Array1<f64>) {
    let x = Array2::from_shape_fn((80, 2), |(i, j)| ((i * (j + 3)) as f64 * 0.37).sin());
    let y = Array1::from_shape_fn(80, |i| (x[(i, 0)] * 2.0).sin() + 0.3 * x[(i, 1)]);
    (x, y)
}

#[test]
fn linfa_fits_are_the_crates_own_bit_for_bit() {
    let (x, y) = data();
    let own = Dataset::from_rows(
        &x.outer_iter().map(|r| r.to_vec()).collect::<Vec<_>>(),
        y.as_slice().unwrap(),
    )
    .unwrap();
    let ds = DatasetBase::new(x.clone(), y.clone());
    let ssgp = Ssgp::params(6).seed(3).max_evaluations(60);
    let fitc = Fitc::params(6).seed(3).max_evaluations(60);
    let full = FullGp::params().max_evaluations(60);

    let a = Fit::<_, _, Error>::fit(&ssgp, &ds).unwrap();
    assert_eq!(a.parameters(), ssgp.fit(&own).unwrap().parameters());
    // The same θ from every way in: rows, a row-major slice, ndarray views, linfa.
    let row_major: Vec<f64> = x.iter().copied().collect();
    let y_slice = y.as_slice().unwrap();
    for other in [
        Dataset::from_row_major(&row_major, 80, 2, y_slice).unwrap(),
        Dataset::from_ndarray(x.view(), y.view()).unwrap(),
        Dataset::from_ndarray(x.t().as_standard_layout().t(), y.view()).unwrap(),
    ] {
        assert_eq!(a.parameters(), ssgp.fit(&other).unwrap().parameters());
    }
    let b = Fit::<_, _, Error>::fit(&fitc, &ds).unwrap();
    assert_eq!(b.parameters(), fitc.fit(&own).unwrap().parameters());
    let c = Fit::<_, _, Error>::fit(&full, &ds).unwrap();
    assert_eq!(c.parameters(), full.fit(&own).unwrap().parameters());

    let xt = ssgp::nalgebra::DMatrix::from_fn(80, 2, |i, j| x[(i, j)]);
    let means: Array1<f64> = Predict::predict(&a, &x);
    let whole: Predictive = Predict::predict(&a, &x);
    let direct = a.predict(&xt).unwrap();
    assert_eq!(means.to_vec(), direct.mean.as_slice());
    assert_eq!(whole, direct);
    let means: Array1<f64> = Predict::predict(&b, &x);
    assert_eq!(means.to_vec(), b.predict(&xt).unwrap().mean.as_slice());
    let means: Array1<f64> = Predict::predict(&c, &x);
    assert_eq!(means.to_vec(), c.predict(&xt).unwrap().mean.as_slice());

    // Bad data is the crate's error; a failed prediction is NaN. (The models' inherent `fit`
    // and `predict` take nalgebra types: linfa's are called through their traits.)
    let short = DatasetBase::new(x.clone(), Array1::zeros(79));
    assert!(matches!(
        Fit::<_, _, Error>::fit(&ssgp, &short),
        Err(Error::LengthMismatch { .. })
    ));
    // Sample weights are refused, not dropped unseen; weights of 1 change nothing.
    let weighted =
        DatasetBase::new(x.clone(), y.clone()).with_weights(Array1::from_shape_fn(80, |i| {
            if i == 7 {
                2.0
            } else {
                1.0
            }
        }));
    assert!(matches!(
        Fit::<_, _, Error>::fit(&ssgp, &weighted),
        Err(Error::InvalidParameter {
            name: "weights",
            ..
        })
    ));
    let ones = DatasetBase::new(x.clone(), y.clone()).with_weights(Array1::ones(80));
    let d = Fit::<_, _, Error>::fit(&ssgp, &ones).unwrap();
    assert_eq!(d.parameters(), a.parameters());
    let wrong: Array1<f64> = Predict::predict(&a, &Array2::zeros((3, 5)));
    assert!(wrong.len() == 3 && wrong.iter().all(|v| v.is_nan()));
}
