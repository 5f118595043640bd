//! The program a new user writes first (issue 18), as written: rows from `Vec<Vec<f64>>` with
//! noise-free targets → a full GP with default settings (it interpolates) → predictions from the
//! same rows → standard deviations and 95 % intervals → SSGP predictions from a slice of rows and
//! from an ndarray (the same bits) → linfa's idiom in method syntax.

use ssgp::rand::{rngs::StdRng, Rng, SeedableRng};
use ssgp::{Dataset, FullGp, Ssgp};

/// y = sin x₀ + 0.1 x₁ at 200 random points of [−3, 3]²: the usual computer experiment.
fn computer_experiment() -> (Vec<Vec<f64>>, Vec<f64>) {
    let mut rng = StdRng::seed_from_u64(7);
    let rows: Vec<Vec<f64>> = (0..200)
        .map(|_| vec![rng.random_range(-3.0..3.0), rng.random_range(-3.0..3.0)])
        .collect();
    let y = rows.iter().map(|r| r[0].sin() + 0.1 * r[1]).collect();
    (rows, y)
}

#[test]
fn a_new_users_first_program_runs_as_written() -> Result<(), Box<dyn std::error::Error>> {
    let (rows, y) = computer_experiment();
    let data = Dataset::from_rows(&rows, &y)?;
    let model = FullGp::params().seed(1).fit(&data)?;
    let pred = model.predict(&rows)?;
    let sd = pred.y_std();
    let (lo, hi) = pred.interval(0.95)?;
    let spread = (data.y_variance()).sqrt();
    for i in 0..rows.len() {
        assert!(
            (pred.mean[i] - y[i]).abs() < 1e-2 * spread,
            "row {i} not interpolated"
        );
        assert!(lo[i] < pred.mean[i] && pred.mean[i] < hi[i] && sd[i] > 0.0);
    }
    assert!(
        model.training().termination.is_success(),
        "{:?}",
        model.training()
    );
    assert!(
        model.training().noise_at_floor,
        "noise-free data: σn² at its floor"
    );

    let ssgp = Ssgp::params(20).seed(1).fit(&data)?;
    let from_rows = ssgp.predict(&rows[..])?;
    assert_eq!(
        from_rows,
        ssgp.predict(&data)?,
        "rows and the data set give the same bits"
    );
    #[cfg(feature = "ndarray")]
    {
        let array = ssgp::ndarray::Array2::from_shape_fn((rows.len(), 2), |(i, j)| rows[i][j]);
        let from_array = ssgp.predict(&array)?;
        assert_eq!(from_rows, from_array, "rows and ndarray give the same bits");
        #[cfg(feature = "linfa")]
        {
            let targets = ssgp::ndarray::Array1::from_vec(y.clone());
            let linfa_data = ssgp::linfa::DatasetBase::new(array.clone(), targets);
            let small = Ssgp::params(10).seed(1).fit(&linfa_data)?;
            let p = small.predict(&array)?;
            assert_eq!(p, Ssgp::params(10).seed(1).fit(&data)?.predict(&rows)?);
        }
    }
    Ok(())
}
