//! Test-set error measures of paper eq. 13.
//!
//! Both take the test targets y_* and a [`Predictive`]; NMSE also takes the **training** mean ȳ.

use crate::error::{Error, Result};
use crate::predictive::Predictive;
use nalgebra::DVector;

fn check(y_test: &DVector<f64>, pred: &Predictive) -> Result<()> {
    if y_test.is_empty() {
        return Err(Error::EmptyData {
            what: "test targets",
        });
    }
    if pred.len() != y_test.len() {
        return Err(Error::LengthMismatch {
            x_rows: pred.len(),
            y_len: y_test.len(),
        });
    }
    Ok(())
}

/// Mean squared error $\langle (y_{*j} - \mu_{*j})^2 \rangle$.
///
/// # Errors
/// [`Error::EmptyData`] for no test points, [`Error::LengthMismatch`] if the lengths differ.
pub fn mse(y_test: &DVector<f64>, pred: &Predictive) -> Result<f64> {
    check(y_test, pred)?;
    Ok((y_test - &pred.mean).norm_squared() / y_test.len() as f64)
}

/// Normalised mean squared error (eq. 13):
/// $\langle (y_{*j} - \mu_{*j})^2 \rangle / \langle (y_{*j} - \bar y)^2 \rangle$, with ȳ the mean of the
/// **training** targets (so predicting ȳ everywhere scores about 1).
///
/// # Errors
/// As [`mse`], and [`Error::InvalidParameter`] if every test target equals ȳ.
pub fn nmse(y_test: &DVector<f64>, pred: &Predictive, y_train_mean: f64) -> Result<f64> {
    let num = mse(y_test, pred)?;
    let den = y_test.map(|y| (y - y_train_mean).powi(2)).mean();
    if den <= 0.0 {
        return Err(Error::InvalidParameter {
            name: "y_train_mean",
            reason: "every test target equals the training mean; NMSE is undefined".into(),
        });
    }
    Ok(num / den)
}

/// Mean negative log probability (eq. 13) of the test targets under the noisy predictive:
/// $\tfrac12 \langle ((y_{*j} - \mu_{*j})/\sigma_{*j})^2 + \log \sigma_{*j}^2 + \log 2\pi \rangle$.
///
/// # Errors
/// As [`mse`], and [`Error::InvalidParameter`] if a predictive variance is not positive.
pub fn mnlp(y_test: &DVector<f64>, pred: &Predictive) -> Result<f64> {
    check(y_test, pred)?;
    let mut total = 0.0;
    for ((y, mu), var) in y_test
        .iter()
        .zip(pred.mean.iter())
        .zip(pred.variance.iter())
    {
        if var.is_nan() || *var <= 0.0 {
            return Err(Error::InvalidParameter {
                name: "variance",
                reason: format!("predictive variance {var} is not positive"),
            });
        }
        total += (y - mu).powi(2) / var + var.ln() + (2.0 * std::f64::consts::PI).ln();
    }
    Ok(0.5 * total / y_test.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_relative_eq;

    #[test]
    fn standard_normal_mnlp_and_mean_predictor_nmse() {
        let y = DVector::from_vec(vec![1.0, -1.0, 2.0, 0.0]);
        let pred = Predictive::from_latent(DVector::zeros(4), DVector::zeros(4), 1.0);
        // NMSE of predicting the training mean (0) is exactly 1.
        assert_relative_eq!(nmse(&y, &pred, 0.0).unwrap(), 1.0);
        let expected = 0.5 * (6.0 / 4.0 + (2.0 * std::f64::consts::PI).ln());
        assert_relative_eq!(mnlp(&y, &pred).unwrap(), expected, epsilon = 1e-15);
        assert!(mnlp(&DVector::zeros(3), &pred).is_err());
    }
}
