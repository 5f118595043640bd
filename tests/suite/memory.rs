//! Requests whose results memory cannot hold are `Error::Allocation` before the work, never an
//! aborted process: each test runs in a subprocess whose address space is limited to 1 GB
//! ([`in_memory_limited_child`]), so that it asks for more than that without using it.

use crate::common::in_memory_limited_child;
use nalgebra::{DMatrix, DVector};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use ssgp::ssgp::{Ssgp, SsgpHyperparameters};
use ssgp::{Dataset, Error, Hyperparameters, ParamGuard};

/// The address-space limit of the subprocesses, in KiB.
const LIMIT_KIB: u64 = 1_000_000;

/// An SSGP with `m` spectral points conditioned on 30 random points with `dim` inputs (no
/// training).
fn conditioned(m: usize, dim: usize) -> ssgp::ssgp::FittedSsgp {
    conditioned_in_chunks(m, dim, ssgp::ssgp::DEFAULT_CHUNK_ROWS)
}

/// [`conditioned`] with `chunk_rows` rows per chunk.
fn conditioned_in_chunks(m: usize, dim: usize, chunk_rows: usize) -> ssgp::ssgp::FittedSsgp {
    let mut rng = StdRng::seed_from_u64(7);
    let x = DMatrix::from_fn(30, dim, |_, _| rng.random_range(-1.0..1.0));
    let y = DVector::from_fn(30, |i, _| f64::sin(x.row(i).sum()));
    let hyper = SsgpHyperparameters {
        hyper: Hyperparameters {
            lengthscales: DVector::from_element(dim, 1.0),
            signal_variance: 1.0,
            noise_variance: 0.01,
        },
        unit_frequencies: DMatrix::from_fn(m, dim, |_, _| rng.random_range(-2.0..2.0)),
    };
    let data = Dataset::new(x, y).unwrap();
    Ssgp::params(m)
        .threads(1)
        .chunk_rows(chunk_rows)
        .check()
        .unwrap()
        .condition(&data, &hyper)
        .unwrap()
}

/// 500 test rows of D = 1500 ask for 500 gradient covariances of 1500×1500 (9 GB): an
/// allocation error up front, where each matrix used to be allocated unchecked until the
/// process aborted.
#[test]
fn gradient_covariances_beyond_memory() {
    if !in_memory_limited_child("memory::gradient_covariances_beyond_memory", LIMIT_KIB) {
        return;
    }
    let fitted = conditioned(4, 1500);
    let result = fitted.gradient_covariance(&DMatrix::from_element(500, 1500, 0.5));
    assert!(
        matches!(
            result,
            Err(Error::Allocation {
                bytes: 9_000_000_000,
                ..
            })
        ),
        "{:?}",
        result.map(|c| c.len())
    );
    assert_eq!(
        fitted
            .gradient_covariance(&DMatrix::zeros(2, 1500))
            .unwrap()
            .len(),
        2
    );
}

/// A full GP that ignores 999 constant inputs of 1000, asked for gradients at 50 000 rows
/// (400 MB of inputs): the two 50 000×1000 gradients (800 MB) are an allocation error up front,
/// where they used to be widened to all the inputs unchecked.
#[test]
fn gradients_beyond_memory() {
    if !in_memory_limited_child("memory::gradients_beyond_memory", LIMIT_KIB) {
        return;
    }
    let x = DMatrix::from_fn(30, 1000, |i, d| if d == 0 { i as f64 / 30.0 } else { 1.0 });
    let y = DVector::from_fn(30, |i, _| f64::sin(6.0 * x[(i, 0)]));
    let fitted = ssgp::FullGp::params()
        .threads(1)
        .fit(&Dataset::new(x, y).unwrap())
        .unwrap();
    let result = fitted.predict_gradients(&DMatrix::from_element(50_000, 1000, 0.5));
    assert!(
        matches!(result, Err(Error::Allocation { .. })),
        "{:?}",
        result.map(|g| g.mean.shape())
    );
    let small = fitted
        .predict_gradients(&DMatrix::from_element(3, 1000, 0.5))
        .unwrap();
    assert_eq!(small.mean.shape(), (3, 1000));
}

/// A two-input model with four outputs asked for gradients at 5·10⁶ rows (80 MB of inputs):
/// each output's result (280 MB) fits under the limit, the four (1.12 GB) do not — an
/// allocation error before the first output's work, where the first three used to be computed
/// before the fourth failed.
#[test]
fn multi_output_gradients_beyond_memory() {
    use ssgp::data::MultiDataset;
    use ssgp::ssgp::MultiSsgpHyperparameters;
    if !in_memory_limited_child("memory::multi_output_gradients_beyond_memory", LIMIT_KIB) {
        return;
    }
    let mut rng = StdRng::seed_from_u64(8);
    let x = DMatrix::from_fn(30, 2, |_, _| rng.random_range(-1.0..1.0));
    let y = DMatrix::from_fn(30, 4, |i, p| f64::sin(x.row(i).sum() + p as f64));
    let hyper = MultiSsgpHyperparameters {
        lengthscales: DVector::from_element(2, 1.0),
        signal_variances: DVector::from_element(4, 1.0),
        noise_ratio: 0.01,
        unit_frequencies: DMatrix::from_fn(4, 2, |_, _| rng.random_range(-2.0..2.0)),
    };
    let fitted = Ssgp::params(4)
        .threads(1)
        .check()
        .unwrap()
        .condition_multi(&MultiDataset::new(x, y).unwrap(), &hyper)
        .unwrap();
    let rows = 5_000_000;
    let result = fitted.predict_gradients(&DMatrix::from_element(rows, 2, 0.5));
    assert!(
        matches!(
            result,
            Err(Error::Allocation {
                what: "every output's predictive and gradients",
                bytes: 1_120_000_000,
            })
        ),
        "{:?}",
        result.map(|g| g.len())
    );
    let small = fitted
        .predict_gradients(&DMatrix::from_element(3, 2, 0.5))
        .unwrap();
    assert_eq!((small.len(), small[3].mean.shape()), (4, (3, 2)));
}

/// A posterior sample of an SSGP with m = 50 evaluated at 1.5·10⁶ rows: chunk by chunk, where
/// the whole 1.5·10⁶×100 design matrix (1.2 GB) used to be built at once, aborting the process.
#[test]
fn posterior_samples_at_many_rows() {
    if !in_memory_limited_child("memory::posterior_samples_at_many_rows", LIMIT_KIB) {
        return;
    }
    let fitted = conditioned(50, 2);
    let sample = fitted.sample_posterior(&mut StdRng::seed_from_u64(1));
    let x = DMatrix::from_fn(1_500_000, 2, |i, d| {
        ((i * (d + 1)) % 1000) as f64 / 500.0 - 1.0
    });
    let f = sample.evaluate(&x).unwrap();
    assert_eq!(f.len(), x.nrows());
    // The last rows alone: the same values up to the round-off of another shape of product.
    let n = x.nrows();
    let last = sample.evaluate(&x.rows(n - 3, 3).into_owned()).unwrap();
    for (a, b) in f.rows(n - 3, 3).iter().zip(last.iter()) {
        assert!((a - b).abs() <= 1e-12 * b.abs().max(1.0), "{a} against {b}");
    }
}

/// One-input predictions at 4·10⁷ rows (320 MB of inputs): the means, latent and noisy
/// variances (960 MB) do not fit beside them, an allocation error where the three vectors used
/// to be allocated unchecked until the process aborted; the means alone (320 MB) fit.
#[test]
fn predictions_beyond_memory() {
    if !in_memory_limited_child("memory::predictions_beyond_memory", LIMIT_KIB) {
        return;
    }
    let fitted = conditioned(4, 1);
    let x = DMatrix::from_element(40_000_000, 1, 0.5);
    let result = fitted.predict(&x);
    assert!(
        matches!(result, Err(Error::Allocation { .. })),
        "{:?}",
        result.map(|p| p.mean.len())
    );
    let means = fitted.predict_mean(&x).unwrap();
    assert_eq!(means.len(), x.nrows());
}

/// A model whose `chunk_rows` exceeds the test rows predicts them in one chunk: at m = 100 and
/// 10⁶ one-input rows, its features (1.6 GB) are an allocation error for predictions, their
/// means and a posterior sample's values, where they used to be allocated unchecked until the
/// process aborted; in the default chunks the same rows are predicted.
#[test]
fn a_chunk_of_test_rows_beyond_memory() {
    if !in_memory_limited_child("memory::a_chunk_of_test_rows_beyond_memory", LIMIT_KIB) {
        return;
    }
    let one_chunk = conditioned_in_chunks(100, 1, usize::MAX);
    let x = DMatrix::from_fn(1_000_000, 1, |i, _| (i % 1000) as f64 / 500.0 - 1.0);
    let sample = one_chunk.sample_posterior(&mut StdRng::seed_from_u64(1));
    for result in [
        one_chunk.predict(&x).map(|p| p.mean),
        one_chunk.predict_mean(&x),
        sample.evaluate(&x),
    ] {
        assert!(
            matches!(result, Err(Error::Allocation { .. })),
            "{:?}",
            result.map(|m| m.len())
        );
    }
    let chunked = conditioned(100, 1).predict(&x).unwrap();
    assert_eq!(chunked.mean.len(), x.nrows());
}

/// An SSGP with m = 50 updated with 2·10⁶ one-input samples at once: their design matrix
/// (1.6 GB) is an allocation error before any work, where it used to be built unchecked until
/// the process aborted; the model is unchanged and takes a small batch afterwards.
#[test]
fn an_update_beyond_memory() {
    if !in_memory_limited_child("memory::an_update_beyond_memory", LIMIT_KIB) {
        return;
    }
    let mut fitted = conditioned(50, 1);
    let before = fitted.predict(&DMatrix::from_element(3, 1, 0.2)).unwrap();
    let rows = 2_000_000;
    let x = DMatrix::from_fn(rows, 1, |i, _| (i % 1000) as f64 / 500.0 - 1.0);
    let y = DVector::from_fn(rows, |i, _| f64::sin(x[(i, 0)]));
    let result = fitted.update(&x, &y);
    assert!(
        matches!(result, Err(Error::Allocation { .. })),
        "{result:?}"
    );
    let after = fitted.predict(&DMatrix::from_element(3, 1, 0.2)).unwrap();
    assert_eq!(before, after);
    fitted
        .update(&x.rows(0, 100).into_owned(), &y.rows(0, 100).into_owned())
        .unwrap();
}

/// 10⁸ joint samples at one test input: the standard normals (800 MB) fit under the limit, the
/// draws beside them do not — an allocation error, where the draws used to be allocated
/// unchecked after the normals until the process aborted.
#[test]
fn joint_samples_beyond_memory() {
    if !in_memory_limited_child("memory::joint_samples_beyond_memory", LIMIT_KIB) {
        return;
    }
    let fitted = conditioned(4, 1);
    let x = DMatrix::from_element(1, 1, 0.3);
    let result = fitted.sample_joint(&x, 100_000_000, 1);
    assert!(
        matches!(result, Err(Error::Allocation { .. })),
        "{:?}",
        result.map(|s| s.values.shape())
    );
    assert_eq!(
        fitted.sample_joint(&x, 10, 1).unwrap().values.shape(),
        (1, 10)
    );
}

/// A full GP on 2 000 points asked to predict 10⁵ rows in one batch: its 2 000×10⁵
/// cross-covariances (1.6 GB) are an allocation error before any work, where they were
/// allocated unchecked until the process aborted; ten rows in one batch predict as by default.
#[test]
fn a_full_gp_batch_beyond_memory() {
    if !in_memory_limited_child("memory::a_full_gp_batch_beyond_memory", LIMIT_KIB) {
        return;
    }
    let x = DMatrix::from_fn(2000, 1, |i, _| i as f64 / 200.0);
    let y = DVector::from_fn(2000, |i, _| f64::sin(x[(i, 0)]));
    let theta = DVector::from_vec(vec![0.0, 0.0, -2.0]);
    let fitted = ssgp::FullGp::params()
        .threads(1)
        .check()
        .unwrap()
        .condition(&Dataset::new(x, y).unwrap(), &theta)
        .unwrap();
    let xs = DMatrix::from_fn(100_000, 1, |i, _| i as f64 / 10_000.0);
    let result = fitted.predict_in_batches(&xs, usize::MAX);
    assert!(
        matches!(result, Err(Error::Allocation { .. })),
        "{:?}",
        result.map(|p| p.mean.len())
    );
    let few = xs.rows(0, 10).into_owned();
    assert_eq!(
        fitted.predict_in_batches(&few, usize::MAX).unwrap(),
        fitted.predict(&few).unwrap()
    );
}
