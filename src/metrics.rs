//! Test-set error measures of paper eq. 13.
//!
//! Both take the test targets y_* and a [`Predictive`]; NMSE also takes the **training** mean ȳ.
//!
//! ```
//! use ssgp::rand::{rngs::StdRng, SeedableRng};
//! use ssgp::{data::sinc_data, metrics, Ssgp};
//!
//! let mut rng = StdRng::seed_from_u64(0);
//! let (train, test) = (sinc_data(80, false, 0.05, &mut rng)?, sinc_data(300, true, 0.05, &mut rng)?);
//! let pred = Ssgp::params(10).seed(1).initial_draws(10).fit(&train)?.predict(&test)?;
//! let nmse = metrics::nmse(test.y(), &pred, train.y_mean())?;   // 1 = predicting ȳ
//! let mnlp = metrics::mnlp(test.y(), &pred)?;                    // lower is better
//! let c = metrics::calibration(test.y(), &pred)?;                // are the error bars right?
//! println!("NMSE {nmse:.4}, MNLP {mnlp:.3}, within 2 sd {:.2}", c.within_two_sd);
//! # Ok::<(), ssgp::Error>(())
//! ```

use crate::error::{Error, Result};
use crate::predictive::Predictive;
use nalgebra::DVector;

fn check(y_test: &DVector<f64>, pred: &Predictive) -> Result<()> {
    if y_test.is_empty() {
        return Err(Error::EmptyData {
            what: "test targets",
        });
    }
    pred.check_lengths(Some(y_test.len()))?;
    crate::data::check_finite_vector("test targets", y_test)?;
    crate::data::check_finite_vector("predictive means", &pred.mean)
}

/// Mean squared error $\langle (y_{*j} - \mu_{*j})^2 \rangle$.
///
/// # Errors
/// [`Error::EmptyData`] for no test points, [`Error::DimensionMismatch`] if the predictive's
/// fields or the test targets have not one entry per predictive mean, [`Error::NonFinite`] for a
/// NaN or infinite target or mean; [`Error::Numerical`] if the squared errors overflow f64.
pub fn mse(y_test: &DVector<f64>, pred: &Predictive) -> Result<f64> {
    check(y_test, pred)?;
    finite_mean_square(
        (y_test - &pred.mean).norm_squared() / y_test.len() as f64,
        "errors",
    )
}

/// `value`, a mean of squares of `what`, checked finite.
///
/// # Errors
/// [`Error::Numerical`] if it overflowed.
fn finite_mean_square(value: f64, what: &str) -> Result<f64> {
    if value.is_finite() {
        Ok(value)
    } else {
        Err(Error::Numerical {
            what: format!(
                "the mean square of the {what} overflows f64 (values beyond about 1e154 apart): \
                 compare targets and predictions on a smaller scale"
            ),
        })
    }
}

/// Normalised mean squared error (eq. 13):
/// $\langle (y_{*j} - \mu_{*j})^2 \rangle / \langle (y_{*j} - \bar y)^2 \rangle$, with ȳ the mean of the
/// **training** targets (so predicting ȳ everywhere scores 1 on test targets from the training
/// distribution, and exactly 1 for a predictive mean of ȳ).
///
/// # Errors
/// As [`mse`], [`Error::NonFinite`] for a non-finite ȳ, and [`Error::InvalidParameter`] if every
/// test target equals ȳ.
pub fn nmse(y_test: &DVector<f64>, pred: &Predictive, y_train_mean: f64) -> Result<f64> {
    let num = mse(y_test, pred)?;
    if !y_train_mean.is_finite() {
        return Err(Error::NonFinite {
            what: "training mean ȳ",
            row: 0,
            col: 0,
            value: y_train_mean,
        });
    }
    // Summed as the numerator is, so that predicting ȳ everywhere scores exactly 1.
    let den = finite_mean_square(
        y_test.add_scalar(-y_train_mean).norm_squared() / y_test.len() as f64,
        "test targets' deviations from ȳ",
    )?;
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
/// As [`mse`], and [`Error::InvalidParameter`] if a predictive variance is not positive and
/// finite.
pub fn mnlp(y_test: &DVector<f64>, pred: &Predictive) -> Result<f64> {
    finite_nlp(half_mean(&twice_nlp(y_test, pred)?))
}

/// `value`, a (mean) negative log probability, checked finite.
///
/// # Errors
/// [`Error::Numerical`] if it overflowed.
fn finite_nlp(value: f64) -> Result<f64> {
    if value.is_finite() {
        Ok(value)
    } else {
        Err(Error::Numerical {
            what: "the squared error over the predictive variance overflows f64 (an error beyond \
                   about 1e154 standard deviations): compare targets and predictions on a \
                   smaller scale"
                .into(),
        })
    }
}

/// The negative log probability of each test target under the noisy predictive (n_*), whose
/// mean is [`mnlp`]: ½[((y_{*j} − μ_{*j})/σ_{*j})² + log σ_{*j}² + log 2π].
///
/// # Errors
/// As [`mnlp`].
pub fn nlp(y_test: &DVector<f64>, pred: &Predictive) -> Result<DVector<f64>> {
    let nlp = twice_nlp(y_test, pred)? * 0.5;
    finite_nlp(nlp.sum())?;
    Ok(nlp)
}

/// [`nlp`] and [`mnlp`] from one pass over the targets (the mean with `mnlp`'s bits).
///
/// # Errors
/// As [`mnlp`].
pub(crate) fn nlp_and_mnlp(
    y_test: &DVector<f64>,
    pred: &Predictive,
) -> Result<(DVector<f64>, f64)> {
    let twice = twice_nlp(y_test, pred)?;
    let mean = half_mean(&twice);
    Ok((twice * 0.5, mean))
}

/// Half the mean of twice the NLPs: [`mnlp`].
fn half_mean(twice: &DVector<f64>) -> f64 {
    0.5 * twice.sum() / twice.len() as f64
}

/// Twice each target's negative log probability, checked as [`mnlp`] says.
fn twice_nlp(y_test: &DVector<f64>, pred: &Predictive) -> Result<DVector<f64>> {
    check(y_test, pred)?;
    if let Some(var) = pred
        .y_variance
        .iter()
        .find(|v| !(**v > 0.0 && v.is_finite()))
    {
        return Err(Error::InvalidParameter {
            name: "variance",
            reason: format!("predictive variance {var} is not positive and finite"),
        });
    }
    Ok(DVector::from_fn(y_test.len(), |j, _| {
        let var = pred.y_variance[j];
        (y_test[j] - pred.mean[j]).powi(2) / var + var.ln() + (2.0 * std::f64::consts::PI).ln()
    }))
}

/// How well the predictive variances match the errors on held-out data: a check for the
/// overconfidence of paper §5.4, where the means are good and the variances far too small.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Calibration {
    /// Fraction of test targets within one predictive standard deviation (0.683 if calibrated).
    pub within_one_sd: f64,
    /// Fraction within two standard deviations (0.954 if calibrated).
    pub within_two_sd: f64,
    /// Fraction inside the central 95 % interval μ ± 1.96σ, the coverage of
    /// [`Predictive::interval`]`(0.95)` (0.95 if calibrated).
    pub within_95: f64,
    /// Mean of the squared standardised errors ((y − μ)/σ)² (1 if calibrated, ≫ 1 if overconfident,
    /// ≪ 1 if underconfident).
    pub mean_squared_z: f64,
}

/// 1.959963984540054², the 0.95 quantile of χ²₁: z² below it is inside the central 95 % interval.
const Z95_SQUARED: f64 = 3.841_458_820_694_124;

/// Calibration of the noisy predictive on held-out targets.
///
/// # Errors
/// As [`mnlp`].
pub fn calibration(y_test: &DVector<f64>, pred: &Predictive) -> Result<Calibration> {
    let c = calibration_unchecked(y_test, pred)?;
    finite_nlp(c.mean_squared_z)?;
    Ok(c)
}

/// [`calibration`] with a mean z² that may have overflowed to ∞: the calibration check scores
/// a candidate whose z² overflows as losing, not as a failed fit.
///
/// # Errors
/// As [`calibration`], overflow aside.
pub(crate) fn calibration_unchecked(
    y_test: &DVector<f64>,
    pred: &Predictive,
) -> Result<Calibration> {
    twice_nlp(y_test, pred)?;
    let n = y_test.len() as f64;
    let z2: Vec<f64> = y_test
        .iter()
        .zip(pred.mean.iter())
        .zip(pred.y_variance.iter())
        .map(|((y, mu), var)| (y - mu).powi(2) / var)
        .collect();
    Ok(Calibration {
        within_one_sd: z2.iter().filter(|&&z| z <= 1.0).count() as f64 / n,
        within_two_sd: z2.iter().filter(|&&z| z <= 4.0).count() as f64 / n,
        within_95: z2.iter().filter(|&&z| z <= Z95_SQUARED).count() as f64 / n,
        mean_squared_z: z2.iter().sum::<f64>() / n,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_relative_eq;

    fn predictive(mean: &[f64], variance: &[f64]) -> Predictive {
        Predictive {
            mean: DVector::from_column_slice(mean),
            y_variance: DVector::from_column_slice(variance),
            f_variance: DVector::from_column_slice(variance),
        }
    }

    /// Metrics that overflow f64, or an infinite predictive variance, are errors: NMSE of
    /// targets ±1e200 was Ok(NaN) (∞/∞), MSE Ok(∞), and an infinite variance passed into MNLP
    /// and calibration (∞/∞ where the error overflowed too).
    #[test]
    fn overflowing_metrics_and_infinite_variances_are_errors() {
        let y = DVector::from_vec(vec![1e200, -1e200]);
        let pred = predictive(&[0.0, 0.0], &[1.0, 1.0]);
        assert!(matches!(mse(&y, &pred), Err(Error::Numerical { .. })));
        assert!(matches!(nmse(&y, &pred, 0.0), Err(Error::Numerical { .. })));
        // The log probabilities and z² overflow too (they were Ok(∞)): errors, as mse's; the
        // calibration check's own scoring keeps the ∞ (a candidate that overflows loses).
        assert!(matches!(mnlp(&y, &pred), Err(Error::Numerical { .. })));
        assert!(matches!(nlp(&y, &pred), Err(Error::Numerical { .. })));
        assert!(matches!(
            calibration(&y, &pred),
            Err(Error::Numerical { .. })
        ));
        let tiny = predictive(&[0.0, 0.0], &[1e-300, 1e-300]);
        let far = DVector::from_vec(vec![1e5, 0.0]);
        assert!(matches!(mnlp(&far, &tiny), Err(Error::Numerical { .. })));
        let unchecked = calibration_unchecked(&y, &pred).unwrap();
        assert_eq!(unchecked.mean_squared_z, f64::INFINITY);
        let wide = predictive(&[0.0, 0.0], &[f64::INFINITY, 1.0]);
        let small = DVector::from_vec(vec![1.0, -1.0]);
        assert!(matches!(
            mnlp(&small, &wide),
            Err(Error::InvalidParameter { .. })
        ));
        assert!(matches!(
            calibration(&small, &wide),
            Err(Error::InvalidParameter { .. })
        ));
        assert_eq!(mse(&small, &pred).unwrap(), 1.0);
    }

    /// Predicting the training mean everywhere scores exactly 1, whatever the targets' round-off
    /// (the numerator and the denominator are summed alike).
    #[test]
    fn predicting_the_training_mean_scores_exactly_one() {
        for seed in 0..20_u32 {
            let y = DVector::from_fn(997, |i, _| {
                (f64::from(seed) * 0.37 + i as f64 * 1.618).sin() * 1e3 + 0.1
            });
            let y_bar = 0.123_456_789 * f64::from(seed);
            let pred = Predictive {
                mean: DVector::from_element(y.len(), y_bar),
                y_variance: DVector::from_element(y.len(), 1.0),
                f_variance: DVector::from_element(y.len(), 1.0),
            };
            assert_eq!(nmse(&y, &pred, y_bar).unwrap(), 1.0, "seed {seed}");
        }
    }

    /// A predictive built by hand with fields of other lengths than its means, or scored on
    /// another number of targets, is a dimension mismatch naming the field for every metric
    /// (MNLP and calibration indexed past the variances, NMSE scored it).
    #[test]
    fn mismatched_lengths_are_dimension_mismatches_for_every_metric() {
        let y = DVector::from_vec(vec![1.0, -1.0, 2.0]);
        let ragged = Predictive {
            mean: DVector::zeros(3),
            y_variance: DVector::from_element(1, 1.0),
            f_variance: DVector::zeros(0),
        };
        let short_f = Predictive {
            f_variance: DVector::zeros(2),
            ..predictive(&[0.0; 3], &[1.0; 3])
        };
        let fine = predictive(&[0.0; 3], &[1.0; 3]);
        let four = DVector::zeros(4);
        let cases = [
            (&y, &ragged, "`y_variance`", 1),
            (&y, &short_f, "`f_variance`", 2),
            (&four, &fine, "test targets", 4),
        ];
        for (y, pred, field, found) in cases {
            let results = [
                ("mse", mse(y, pred).map(drop)),
                ("nmse", nmse(y, pred, 0.5).map(drop)),
                ("mnlp", mnlp(y, pred).map(drop)),
                ("nlp", nlp(y, pred).map(drop)),
                ("calibration", calibration(y, pred).map(drop)),
            ];
            for (metric, result) in results {
                match result {
                    Err(e @ Error::DimensionMismatch { expected: 3, .. }) => {
                        let message = e.to_string();
                        assert!(message.contains(field), "{metric}: {message}");
                        assert!(message.ends_with(&format!("found {found}")), "{message}");
                    }
                    other => panic!("{metric} on {field}: {other:?}"),
                }
            }
        }
    }

    #[test]
    fn nmse_mnlp_and_calibration_by_hand() {
        let y = DVector::from_vec(vec![1.0, -1.0, 2.0, 0.5]);
        let pred = predictive(&[0.5, -0.5, 1.0, 0.5], &[0.25, 4.0, 0.5, 2.0]);
        // MSE (0.25 + 0.25 + 1 + 0) / 4; the training mean 0.2 as the baseline.
        let den = (0.8f64.powi(2) + 1.2f64.powi(2) + 1.8f64.powi(2) + 0.3f64.powi(2)) / 4.0;
        assert_relative_eq!(nmse(&y, &pred, 0.2).unwrap(), 0.375 / den, epsilon = 1e-15);
        // ½⟨z² + log σ² + log 2π⟩ with σ² ≠ 1, so a wrong log-variance term shows.
        let terms = [
            0.25 / 0.25 + 0.25f64.ln(),
            0.25 / 4.0 + 4.0f64.ln(),
            1.0 / 0.5 + 0.5f64.ln(),
            0.0 / 2.0 + 2.0f64.ln(),
        ];
        let expected = 0.5 * (terms.iter().sum::<f64>() / 4.0 + (2.0 * std::f64::consts::PI).ln());
        assert_relative_eq!(mnlp(&y, &pred).unwrap(), expected, epsilon = 1e-15);
        let each = nlp(&y, &pred).unwrap();
        for (j, t) in terms.iter().enumerate() {
            let by_hand = 0.5 * (t + (2.0 * std::f64::consts::PI).ln());
            assert_relative_eq!(each[j], by_hand, epsilon = 1e-15);
        }
        assert!(nlp(&y, &predictive(&[0.5; 4], &[1.0, 0.0, 1.0, 1.0])).is_err());
        let (both, mean) = nlp_and_mnlp(&y, &pred).unwrap();
        assert_eq!(
            (both, mean.to_bits()),
            (each, mnlp(&y, &pred).unwrap().to_bits())
        );
        let c = calibration(&y, &pred).unwrap();
        assert_relative_eq!(c.mean_squared_z, (1.0 + 0.0625 + 2.0 + 0.0) / 4.0);
        assert_relative_eq!(c.within_one_sd, 0.75);
        assert_relative_eq!(c.within_two_sd, 1.0);
        assert_relative_eq!(c.within_95, 1.0);
        // z = 1.97 and 1.99 are within two sd but outside the central 95 % interval (±1.96).
        let edge = DVector::from_vec(vec![1.97, 1.99, 0.0, 1.0]);
        let c = calibration(&edge, &predictive(&[0.0; 4], &[1.0; 4])).unwrap();
        assert_relative_eq!(c.within_two_sd, 1.0);
        assert_relative_eq!(c.within_95, 0.5);
        // Predicting the training mean everywhere scores 1.
        let flat = predictive(&[0.2; 4], &[1.0; 4]);
        assert_relative_eq!(nmse(&y, &flat, 0.2).unwrap(), 1.0, epsilon = 1e-15);
    }

    #[test]
    fn bad_inputs_are_errors() {
        let y = DVector::from_vec(vec![1.0, f64::NAN]);
        let pred = predictive(&[0.0, 0.0], &[1.0, 1.0]);
        assert!(matches!(
            nmse(&y, &pred, 0.0),
            Err(Error::NonFinite { row: 1, .. })
        ));
        let y = DVector::from_vec(vec![1.0, 2.0]);
        assert!(matches!(
            nmse(&y, &pred, f64::NAN),
            Err(Error::NonFinite { .. })
        ));
        let nan_mean = predictive(&[0.0, f64::NAN], &[1.0, 1.0]);
        assert!(matches!(
            mse(&y, &nan_mean),
            Err(Error::NonFinite { row: 1, .. })
        ));
        assert!(mnlp(&y, &predictive(&[0.0, 0.0], &[1.0, 0.0])).is_err());
        assert!(mnlp(&DVector::zeros(3), &pred).is_err());
        assert!(mse(&DVector::zeros(0), &predictive(&[], &[])).is_err());
    }
}
