//! What loading checks for every saved model: matrices and vectors against the shapes the other
//! fields imply, finite values, triangular factors, the training summary, and bounds showing that
//! a loaded model's predictions cannot overflow.
//!
//! Shapes are compared before anything is allocated from them: a count in a file (m, n) is only
//! ever compared with the length of an array present in it, never used to size a buffer.

use crate::data::InputColumns;
use crate::error::{Error, Result};
use crate::linalg;
use crate::linalg::Par;
use crate::termination::Termination;
use crate::termination::{HeldOutCalibration, LooDiagnostic, Remedy, TrainingSummary};
use nalgebra::{DMatrix, DVector};
use serde::{Deserialize, Serialize};

/// A matrix as saved: one inner list per row.
pub(crate) type Rows = Vec<Vec<f64>>;

/// The rows of `m`.
pub(crate) fn rows(m: &DMatrix<f64>) -> Rows {
    m.row_iter().map(|r| r.iter().copied().collect()).collect()
}

/// A `rows`×`cols` matrix from saved rows, labelled `what` with what is counted.
///
/// # Errors
/// [`Error::DimensionMismatch`] naming `rows.1` or `cols.1` for a wrong number of rows or a row of
/// the wrong length, [`Error::NonFinite`] naming `what` for a NaN or infinity.
pub(crate) fn matrix(
    saved: &[Vec<f64>],
    rows: (usize, &'static str),
    cols: (usize, &'static str),
    what: &'static str,
) -> Result<DMatrix<f64>> {
    if saved.len() != rows.0 {
        return Err(Error::DimensionMismatch {
            what: rows.1,
            expected: rows.0,
            found: saved.len(),
        });
    }
    if let Some(row) = saved.iter().find(|r| r.len() != cols.0) {
        return Err(Error::DimensionMismatch {
            what: cols.1,
            expected: cols.0,
            found: row.len(),
        });
    }
    let m = DMatrix::from_fn(rows.0, cols.0, |i, j| saved[i][j]);
    crate::data::check_finite(what, &m)?;
    Ok(m)
}

/// A vector of `len` finite entries.
///
/// # Errors
/// [`Error::DimensionMismatch`] naming `what` for another length, [`Error::NonFinite`] for a NaN
/// or infinity.
pub(crate) fn vector(saved: Vec<f64>, len: usize, what: &'static str) -> Result<DVector<f64>> {
    if saved.len() != len {
        return Err(Error::DimensionMismatch {
            what,
            expected: len,
            found: saved.len(),
        });
    }
    let v = DVector::from_vec(saved);
    crate::data::check_finite_vector(what, &v)?;
    Ok(v)
}

/// A finite number.
///
/// # Errors
/// [`Error::NonFinite`] naming `what`.
pub(crate) fn finite(value: f64, what: &'static str) -> Result<f64> {
    if value.is_finite() {
        Ok(value)
    } else {
        Err(Error::NonFinite {
            what,
            row: 0,
            col: 0,
            value,
        })
    }
}

/// A positive finite number (a variance, a scale).
///
/// # Errors
/// [`Error::InvalidParameter`] naming `name`.
pub(crate) fn positive(value: f64, name: &'static str) -> Result<f64> {
    if value > 0.0 && value.is_finite() {
        Ok(value)
    } else {
        Err(Error::InvalidParameter {
            name,
            reason: format!("{value} is not positive and finite"),
        })
    }
}

/// A k×k Cholesky factor: finite, lower triangular (exact zeros above the diagonal) with a
/// positive diagonal.
///
/// # Errors
/// As [`matrix`]; [`Error::InvalidParameter`] naming `name` for a non-zero entry above the
/// diagonal or a diagonal entry that is not positive.
pub(crate) fn lower_factor(
    saved: &[Vec<f64>],
    k: usize,
    labels: (&'static str, &'static str),
    name: &'static str,
) -> Result<DMatrix<f64>> {
    let l = matrix(saved, (k, labels.0), (k, labels.1), name)?;
    for j in 0..k {
        if l[(j, j)].is_nan() || l[(j, j)] <= 0.0 {
            return Err(Error::InvalidParameter {
                name,
                reason: format!(
                    "diagonal entry ({j}, {j}) = {} of a Cholesky factor is not positive",
                    l[(j, j)]
                ),
            });
        }
        if let Some(i) = (0..j).find(|&i| l[(i, j)] != 0.0) {
            return Err(Error::InvalidParameter {
                name,
                reason: format!(
                    "entry ({i}, {j}) = {} above the diagonal of a lower-triangular factor",
                    l[(i, j)]
                ),
            });
        }
    }
    Ok(l)
}

/// The largest magnitude a loaded model's predictions, or any intermediate sum in them, may be
/// shown to stay below.
pub(crate) const LIMIT: f64 = 1e300;

/// `value` if it is at most [`LIMIT`].
///
/// # Errors
/// [`Error::InvalidParameter`] naming `name`, saying that `what` could overflow.
pub(crate) fn bounded(value: f64, name: &'static str, what: &str) -> Result<f64> {
    if value <= LIMIT {
        Ok(value)
    } else {
        Err(Error::InvalidParameter {
            name,
            reason: format!(
                "{what} is bounded only by {value:e} (beyond {LIMIT:e}): the model's predictions \
                 could overflow"
            ),
        })
    }
}

/// Bounds on a model's predictions at any test input (for SSGP: any test input whose phases are
/// finite): |mean| ≤ `mean` and variance of y* ≤ `variance`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Bounds {
    /// A bound on the predictive means' magnitude.
    pub mean: f64,
    /// A bound on the predictive variances.
    pub variance: f64,
}

/// ‖m‖_F, scaled by the largest entry so that squaring entries up to the largest `f64` does not
/// overflow (∞ if an entry is not finite).
fn frobenius(m: &DMatrix<f64>) -> f64 {
    if m.iter().any(|v| !v.is_finite()) {
        return f64::INFINITY;
    }
    let scale = m.iter().fold(0.0f64, |a, v| a.max(v.abs()));
    if scale == 0.0 {
        return 0.0;
    }
    scale * m.iter().map(|v| (v / scale).powi(2)).sum::<f64>().sqrt()
}

/// The Frobenius norms of a lower-triangular factor L and of L⁻¹: what bounds a triangular solve
/// with L.
pub(crate) struct FactorNorms {
    norm: f64,
    inverse_norm: f64,
}

impl FactorNorms {
    /// The norms of `l` (k×k, lower triangular, positive diagonal); L⁻¹ costs k³/3 flops.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming `name` if either norm overflows.
    pub(crate) fn of(l: &DMatrix<f64>, name: &'static str) -> Result<Self> {
        let inverse = linalg::invert_lower(l, Par::Seq);
        let norms = Self {
            norm: frobenius(l),
            inverse_norm: frobenius(&inverse),
        };
        bounded(norms.norm, name, "the factor's norm")?;
        bounded(norms.inverse_norm, name, "the norm of the factor's inverse")?;
        Ok(norms)
    }

    /// A bound on ‖L⁻¹b‖ for every ‖b‖ ≤ `rhs`, checked with its square (the norms predictions
    /// take) and the partial sums of the substitution (at most ‖L‖‖L⁻¹b‖).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming `name` if one of them could exceed [`LIMIT`].
    pub(crate) fn solve_bound(&self, rhs: f64, name: &'static str) -> Result<f64> {
        let out = bounded(self.inverse_norm * rhs, name, "a solve with the factor")?;
        bounded(
            out * out,
            name,
            "the squared norm of a solve with the factor",
        )?;
        bounded(
            self.norm * out,
            name,
            "the partial sums of a solve with the factor",
        )?;
        Ok(out)
    }
}

/// The saved training summary; the ignored inputs are the model's ignored columns.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SummaryRepr {
    initial_neg_log_evidence: f64,
    neg_log_evidence: f64,
    iterations: u64,
    evaluations: usize,
    termination: Termination,
    /// The leave-one-out diagnostic (format 3); absent in format-2 files, which migrate to
    /// `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    diagnostic: Option<LooDiagnostic>,
    /// What SSGP's calibration check did (format 4); absent in older files and for models
    /// without the check, which load with `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    remedy: Option<Remedy>,
    /// Whether the noise ended training at its floor (format 14), written only when it did: a
    /// model knows whether σn² sits at its floor from θ, but not a fit the check widened
    /// above it. Absent, false (the model's θ decides, as before).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    noise_at_floor: bool,
}

impl From<&TrainingSummary> for SummaryRepr {
    fn from(t: &TrainingSummary) -> Self {
        Self {
            initial_neg_log_evidence: t.initial_neg_log_evidence,
            neg_log_evidence: t.neg_log_evidence,
            iterations: t.iterations,
            evaluations: t.evaluations,
            termination: t.termination.clone(),
            diagnostic: t.diagnostic,
            remedy: t.remedy,
            noise_at_floor: t.noise_at_floor,
        }
    }
}

impl SummaryRepr {
    /// The summary of a model with these input `columns` (whether its noise sits at its floor
    /// is set by the model, from θ: [`FitRecord`](crate::model::FitRecord) is not saved apart;
    /// the saved `noise_at_floor` tells an SSGP that a widening moved it above the floor).
    ///
    /// # Errors
    /// [`Error::NonFinite`] for a non-finite evidence.
    pub(crate) fn into_summary(self, columns: &InputColumns) -> Result<TrainingSummary> {
        Ok(TrainingSummary {
            initial_neg_log_evidence: finite(
                self.initial_neg_log_evidence,
                "training summary: initial −log p(y|θ)",
            )?,
            neg_log_evidence: finite(self.neg_log_evidence, "training summary: −log p(y|θ)")?,
            iterations: self.iterations,
            evaluations: self.evaluations,
            termination: self.termination,
            ignored_inputs: columns.ignored(),
            noise_at_floor: self.noise_at_floor,
            diagnostic: match self.diagnostic {
                None => None,
                Some(d) => Some(LooDiagnostic {
                    mean_z2: finite(d.mean_z2, "training summary: LOO mean z²")?,
                    mnlp: finite(d.mnlp, "training summary: LOO MNLP")?,
                    nmse: finite(d.nmse, "training summary: LOO NMSE")?,
                    honest: d.honest,
                }),
            },
            remedy: match self.remedy {
                Some(Remedy::HeldOut {
                    learned_mnlp,
                    random_features_mnlp,
                    variance_scale,
                    held_out,
                    on_comparison_rows,
                    learned_budget,
                    random_features_by_margin,
                    start_hyperparameters,
                    start_rows,
                    mean_mnlp,
                    mean_kept,
                }) => Some(Remedy::HeldOut {
                    learned_mnlp: finite(learned_mnlp, "training summary: held-out MNLP")?,
                    random_features_mnlp: finite(
                        random_features_mnlp,
                        "training summary: held-out MNLP",
                    )?,
                    variance_scale: positive(
                        variance_scale,
                        "training summary: held-out variance factor",
                    )?,
                    held_out: match held_out {
                        None => None,
                        Some(h) => Some(checked_held_out(h)?),
                    },
                    on_comparison_rows,
                    learned_budget: match learned_budget {
                        Some(0) => {
                            return Err(Error::InvalidParameter {
                                name: "training summary: learned budget",
                                reason: "an early-stopping budget of no evaluations".into(),
                            })
                        }
                        b => b,
                    },
                    random_features_by_margin,
                    start_hyperparameters,
                    start_rows: if (start_rows == 0) == (start_hyperparameters == 0) {
                        start_rows
                    } else {
                        return Err(Error::InvalidParameter {
                            name: "training summary: lengthscale start",
                            reason: format!(
                                "{start_hyperparameters} hyperparameters learned on {start_rows} \
                                 rows (both or neither must be 0)"
                            ),
                        });
                    },
                    mean_mnlp: match mean_mnlp {
                        None => None,
                        Some(v) => Some(finite(v, "training summary: the mean's held-out MNLP")?),
                    },
                    mean_kept: if mean_kept && mean_mnlp.is_none() {
                        return Err(Error::InvalidParameter {
                            name: "training summary: the training mean kept",
                            reason: "kept without its held-out MNLP".into(),
                        });
                    } else {
                        mean_kept
                    },
                }),
                Some(Remedy::HeldOutRefit { held_out }) => Some(Remedy::HeldOutRefit {
                    held_out: checked_held_out(held_out)?,
                }),
                Some(Remedy::FewInputs { inputs: 0, .. }) => {
                    return Err(Error::InvalidParameter {
                        name: "training summary: distinct inputs",
                        reason: "a fit on too few distinct inputs records none".into(),
                    })
                }
                other => other,
            },
        })
    }

    /// A repr with every float slot listed (for the NaN and infinity tests).
    #[cfg(test)]
    pub(crate) fn floats_mut(&mut self) -> Vec<&mut f64> {
        let mut all = vec![
            &mut self.initial_neg_log_evidence,
            &mut self.neg_log_evidence,
        ];
        if let Some(d) = &mut self.diagnostic {
            all.extend([&mut d.mean_z2, &mut d.mnlp, &mut d.nmse]);
        }
        match &mut self.remedy {
            Some(Remedy::HeldOut {
                learned_mnlp,
                random_features_mnlp,
                variance_scale,
                held_out,
                mean_mnlp,
                ..
            }) => {
                all.extend([learned_mnlp, random_features_mnlp, variance_scale]);
                if let Some(m) = mean_mnlp {
                    all.push(m);
                }
                if let Some(h) = held_out {
                    all.extend([&mut h.mean_z2, &mut h.nmse]);
                }
            }
            Some(Remedy::HeldOutRefit { held_out: h }) => {
                all.extend([&mut h.mean_z2, &mut h.nmse]);
            }
            _ => {}
        }
        all
    }
}

/// A saved held-out calibration, checked: on at least one row, its mean z² and NMSE finite.
///
/// # Errors
/// [`Error::InvalidParameter`] for no rows, [`Error::NonFinite`] for a non-finite score.
fn checked_held_out(h: HeldOutCalibration) -> Result<HeldOutCalibration> {
    if h.rows == 0 {
        return Err(Error::InvalidParameter {
            name: "training summary: held-out rows",
            reason: "a held-out calibration on no rows".into(),
        });
    }
    Ok(HeldOutCalibration {
        rows: h.rows,
        mean_z2: finite(h.mean_z2, "training summary: held-out mean z²")?,
        nmse: finite(h.nmse, "training summary: held-out NMSE")?,
    })
}

/// Every entry of saved rows (for the NaN and infinity tests).
#[cfg(test)]
pub(crate) fn rows_mut(rows: &mut Rows) -> impl Iterator<Item = &mut f64> {
    rows.iter_mut().flat_map(|r| r.iter_mut())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn factors_are_lower_triangular_with_a_positive_diagonal() {
        let labels = ("L (rows)", "L (columns)");
        let good = vec![vec![2.0, 0.0], vec![-1.0, 0.5]];
        let l = lower_factor(&good, 2, labels, "L").unwrap();
        assert_eq!(l[(1, 0)], -1.0);
        for (bad, what) in [
            (vec![vec![2.0, 0.1], vec![-1.0, 0.5]], "above the diagonal"),
            (vec![vec![2.0, 0.0], vec![-1.0, 0.0]], "not positive"),
            (vec![vec![-2.0, 0.0], vec![-1.0, 0.5]], "not positive"),
        ] {
            let err = lower_factor(&bad, 2, labels, "L").unwrap_err();
            assert!(err.to_string().contains(what), "{err}");
        }
        assert!(matches!(
            lower_factor(&good[..1], 2, labels, "L"),
            Err(Error::DimensionMismatch {
                what: "L (rows)",
                ..
            })
        ));
        assert!(matches!(
            lower_factor(&[vec![1.0], vec![0.0, 1.0]], 2, labels, "L"),
            Err(Error::DimensionMismatch {
                what: "L (columns)",
                ..
            })
        ));
    }

    #[test]
    fn solve_bounds_cover_ill_conditioned_factors() {
        let norms = FactorNorms::of(&DMatrix::identity(3, 3), "L").unwrap();
        assert_eq!(norms.solve_bound(2.0, "L").unwrap(), 2.0 * 3f64.sqrt());
        // Norms of entries whose squares overflow are still finite.
        let big = DMatrix::from_row_slice(2, 2, &[3e200, 0.0, 4e200, 1.0]);
        assert!((frobenius(&big) - 5e200).abs() < 1e186);
        // L and L⁻¹ of [[1e-100, 0], [1e299, 1e299]] are below the limit, but substituting
        // overflows: the partial sum ‖L‖‖L⁻¹b‖ ≈ 1e299·1e100 is the one that is refused.
        let l = DMatrix::from_row_slice(2, 2, &[1e-100, 0.0, 1e299, 1e299]);
        let norms = FactorNorms::of(&l, "L").unwrap();
        assert!(norms.solve_bound(1e-200, "L").is_ok());
        assert!(FactorNorms::of(&l, "L")
            .and_then(|n| n.solve_bound(1.0, "L"))
            .is_err());
        let l = DMatrix::from_row_slice(2, 2, &[1.0, 0.0, 1e301, 1.0]);
        assert!(FactorNorms::of(&l, "L").is_err());
    }
}
