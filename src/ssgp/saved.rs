//! A fitted SSGP as saved (feature `serde`): θ, the posterior's α, L and centre, the fixed
//! frequencies if any, the settings its predictions run with and, once updated online, the
//! updates' record and b = Φᵀ(y − ȳ); ℓ, σ0², σn², W and Ω = W ⊘ ℓ are decoded from θ on load by
//! the code that decoded them when fitting.

use super::features::scaled_frequencies;
use super::online::MIN_PRIOR_LEVEL;
use super::posterior::{FittedSsgp, WeightPosterior};
use super::SsgpHyperparameters;
use crate::data::InputColumns;
use crate::error::{Error, Result};
use crate::hyperparameters::{self, NoiseParam};
use crate::linalg::SpareFactor;
use crate::model::FitRecord;
use crate::params::{check_at_least_one, check_threads};
use crate::schema::{
    bounded, finite, lower_factor, matrix, rows, vector, Bounds, FactorNorms, OnlineRecord,
    SsgpRepr,
};
use nalgebra::DVector;

impl FittedSsgp {
    /// The saved form.
    pub(crate) fn to_repr(&self) -> SsgpRepr {
        SsgpRepr {
            input_columns: self.record.columns.clone().into(),
            num_spectral_points: self.num_spectral_points(),
            noise_floor: self.record.noise_floor,
            parameters: self.record.theta.as_slice().to_vec(),
            fixed_unit_frequencies: self.fixed.then(|| rows(&self.hyper.unit_frequencies)),
            centre: self.posterior.centre.as_slice().to_vec(),
            alpha: self.posterior.alpha.as_slice().to_vec(),
            cholesky_factor: rows(&self.posterior.l),
            y_mean: self.record.y_mean,
            neg_log_evidence: self.record.neg_log_evidence,
            training: (&self.record.training).into(),
            threads: self.record.threads,
            chunk_rows: self.chunk_rows,
            online: (self.updates > 0).then(|| OnlineRecord {
                updates: self.updates,
                prequential: self.prequential.clone(),
                prior_level: self.prior_level,
            }),
            rhs: self.rhs.as_ref().map(|b| b.as_slice().to_vec()),
        }
    }

    /// The model a saved form describes, checked, with bounds on its predictions: |μ| ≤ Σ|α_i| +
    /// |ȳ| (each feature is a cosine or a sine) and 𝕍 y* ≤ σn² + σn²‖L⁻¹‖²_F·m (‖φ(x)‖² = m).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for m = 0, bad columns, a bad noise floor, thread count or
    /// chunk size, a factor that is not lower triangular with a positive diagonal, predictions
    /// that could overflow, or an online record that does not count its updates or holds a
    /// negative or non-finite sum; [`Error::DimensionMismatch`] for α, L, the centre, W or θ of the
    /// wrong size; [`Error::NonFinite`] for a NaN or infinity; θ's errors as when fitting.
    pub(crate) fn from_repr(r: SsgpRepr) -> Result<(Self, Bounds)> {
        let columns = InputColumns::try_from(r.input_columns)?;
        let d = columns.used().len();
        let m = r.num_spectral_points;
        check_at_least_one(
            "num_spectral_points",
            m,
            "an SSGP has at least one spectral point",
        )?;
        // m is checked against α, present in the file, before anything is sized by it.
        let k = m.checked_mul(2).ok_or(Error::DimensionMismatch {
            what: "SSGP alpha (entries, 2m)",
            expected: usize::MAX,
            found: r.alpha.len(),
        })?;
        let alpha = vector(r.alpha, k, "SSGP alpha (entries, 2m)")?;
        let l = lower_factor(
            &r.cholesky_factor,
            k,
            (
                "SSGP cholesky_factor (rows, 2m)",
                "SSGP cholesky_factor (columns, 2m)",
            ),
            "cholesky_factor",
        )?;
        let centre = vector(r.centre, d, "SSGP centre (entries, D)")?;
        let rhs = r
            .rhs
            .map(|b| vector(b, k, "SSGP rhs b = Φᵀ(y − ȳ) (entries, 2m)"))
            .transpose()?
            .map(|b| nalgebra::DMatrix::from_column_slice(k, 1, b.as_slice()));
        let noise = NoiseParam {
            floor: r.noise_floor,
        };
        noise.validate()?;
        let fixed = r
            .fixed_unit_frequencies
            .map(|w| {
                matrix(
                    &w,
                    (m, "SSGP fixed_unit_frequencies (rows, m)"),
                    (d, "SSGP fixed_unit_frequencies (columns, D)"),
                    "SSGP fixed_unit_frequencies",
                )
            })
            .transpose()?;
        let theta = DVector::from_vec(r.parameters);
        let decoded =
            hyperparameters::unpack(&theta, d, m, noise, fixed.as_ref(), "SSGP parameters θ")?;
        let hyper = SsgpHyperparameters {
            hyper: decoded.hyper,
            unit_frequencies: decoded.block.into_owned(),
        };
        let omega = scaled_frequencies(&hyper.unit_frequencies, &hyper.hyper.lengthscales);
        crate::data::check_finite("SSGP scaled frequencies Ω = W ⊘ ℓ", &omega)?;
        check_centre(&centre, &omega)?;
        let y_mean = finite(r.y_mean, "SSGP y_mean")?;
        let neg_log_evidence = finite(r.neg_log_evidence, "SSGP −log p(y|θ)")?;
        check_threads(r.threads)?;
        check_at_least_one("chunk_rows", r.chunk_rows, "must be at least 1")?;
        let training = r.training.into_summary(&columns)?;
        let trained_at_floor = training.noise_at_floor;
        let sn2 = hyper.hyper.noise_variance;
        let solved = FactorNorms::of(&l, "cholesky_factor")?
            .solve_bound((m as f64).sqrt(), "cholesky_factor")?;
        let latent = bounded(
            sn2 * solved * solved,
            "cholesky_factor",
            "the latent variance σn²‖L⁻¹φ‖²",
        )?;
        let bounds = Bounds {
            mean: bounded(
                alpha.iter().map(|a| a.abs()).sum::<f64>() + y_mean.abs(),
                "alpha",
                "the predictive mean",
            )?,
            variance: bounded(sn2 + latent, "noise_variance", "the predictive variance")?,
        };
        let mut model = FittedSsgp {
            hyper,
            posterior: WeightPosterior {
                l,
                alpha,
                omega,
                centre,
            },
            spare: SpareFactor::default(),
            prior_level: 1.0,
            fixed: fixed.is_some(),
            chunk_rows: r.chunk_rows,
            record: FitRecord::new(
                theta,
                (y_mean, neg_log_evidence),
                training,
                noise,
                (r.threads, None),
                columns,
            ),
            rhs,
            updates: 0,
            prequential: Default::default(),
        };
        // θ shows whether σn² sits at its floor; a fit the check widened says it ended its
        // training there by the saved flag (format 14).
        model.record.training.noise_at_floor |= trained_at_floor;
        let model = match r.online {
            Some(online) => {
                let (updates, prequential, prior_level) = online.checked(MIN_PRIOR_LEVEL)?;
                FittedSsgp {
                    updates,
                    prequential,
                    prior_level,
                    ..model
                }
            }
            None => model,
        };
        Ok((model, bounds))
    }
}

/// Checks that the inputs' `centre` (D) is one a fit could have written for the scaled
/// frequencies `omega` (m×D): near c_d, neighbouring f64 inputs are |c_d|·2⁻⁵² apart, so where
/// that spacing times max_r |Ω_rd| passes a radian no input near the centre has a resolved
/// phase and the model could predict nothing ([`super::features::PHASE_LIMIT`]). A fit's centre
/// is the mean of inputs it resolved; one beyond is a corrupted file.
///
/// # Errors
/// [`Error::InvalidParameter`] naming `centre` otherwise.
fn check_centre(centre: &DVector<f64>, omega: &nalgebra::DMatrix<f64>) -> Result<()> {
    for (d, (c, col)) in centre.iter().zip(omega.column_iter()).enumerate() {
        let largest = col.iter().fold(0.0, |a: f64, v| a.max(v.abs()));
        if c.abs() * f64::EPSILON * largest > 1.0 {
            return Err(Error::InvalidParameter {
                name: "centre",
                reason: format!(
                    "input {d}'s centre {c:e} is so far from 0 that inputs near it are more than a \
                     radian of phase apart at its frequencies (up to {largest:e}): no fit wrote it"
                ),
            });
        }
    }
    Ok(())
}
