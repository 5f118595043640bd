//! A fitted full GP as saved (feature `serde`): the training data it is conditioned on (used
//! columns), θ and the conditioning's settings (kernel, noise floor, jitter policy, threads). Loading
//! conditions again through [`ValidFullGpParams::condition_used`], the code path of fitting, with
//! the same thread count, so the factor, α and the evidence are those of the fit, bit for bit.
//!
//! A model updated with new samples ([`FittedFullGp::update`]) saves all its data, its target
//! offset ȳ (`y_mean`, the fit's, written only when it is not the targets' mean) and the rows of
//! its fit and of each update (`blocks`); loading conditions on the fit's rows and extends the
//! factor by each update's rows in turn, as the updates did, so it predicts what the updated
//! model predicts, bit for bit. A file without `blocks` (format 10 and before) refactorises
//! K + σn²I from scratch on all rows, with the inputs centred on their mean: its predictions
//! equal the updated model's within round-off, not bit for bit.

use super::params::ValidFullGpParams;
use super::posterior::FittedFullGp;
use crate::data::{Dataset, InputColumns};
use crate::error::Result;
use crate::params::{check_threads, TrainingSettings};
use crate::schema::{bounded, finite, rows, Bounds, FullGpRepr, OnlineRecord};
use nalgebra::{DMatrix, DVector};
use std::sync::Arc;

impl FittedFullGp {
    /// The saved form.
    pub(crate) fn to_repr(&self) -> FullGpRepr {
        FullGpRepr {
            input_columns: self.record.columns.clone().into(),
            kernel: self.kernel,
            noise_floor: self.record.noise_floor,
            jitter: self.jitter_policy,
            threads: self.record.threads,
            parameters: self.record.theta.as_slice().to_vec(),
            inputs: rows(self.data.x()),
            targets: self.data.y().as_slice().to_vec(),
            training: (&self.record.training).into(),
            y_mean: (self.record.y_mean != self.data.y_mean()).then_some(self.record.y_mean),
            blocks: (!self.blocks.is_empty()).then(|| self.blocks.clone()),
            online: self.prequential.calibration().map(|record| OnlineRecord {
                updates: record.rows,
                prequential: self.prequential.clone(),
                prior_level: 1.0,
            }),
        }
    }

    /// The model a saved form describes: its settings checked, its data checked as a
    /// [`Dataset`], then conditioned at θ as the fit was; with bounds on its predictions: the
    /// kernel's values are in [0, σ0²], so |μ| ≤ σ0² Σ|α_i| + |ȳ|, 𝕍 f* ∈ [0, σ0²], and
    /// ‖L⁻¹k*‖² ≤ nσ0⁴/(σn² + jitter) since LLᵀ ⪰ (σn² + jitter)I.
    ///
    /// # Errors
    /// [`crate::error::Error::InvalidParameter`] for bad columns, a bad noise floor, jitter policy or
    /// thread count, or predictions that could overflow;
    /// [`crate::error::Error::DimensionMismatch`] for input rows without D entries;
    /// [`crate::error::Error::EmptyData`], [`crate::error::Error::LengthMismatch`] or
    /// [`crate::error::Error::NonFinite`] for data a [`Dataset`] refuses; as
    /// [`ValidFullGpParams::condition`] for θ and the factorisation.
    pub(crate) fn from_repr(r: FullGpRepr) -> Result<(Self, Bounds)> {
        let columns = InputColumns::try_from(r.input_columns)?;
        let d = columns.used().len();
        let settings = TrainingSettings {
            threads: r.threads,
            noise_floor: r.noise_floor,
            relative_noise_floor: 0.0,
            kernel: r.kernel,
            ..TrainingSettings::default()
        };
        check_threads(settings.threads)?;
        settings.noise().validate()?;
        r.jitter.validate()?;
        let n = r.inputs.len();
        if let Some(row) = r.inputs.iter().find(|row| row.len() != d) {
            return Err(crate::error::Error::DimensionMismatch {
                what: "full-GP inputs (columns, D)",
                expected: d,
                found: row.len(),
            });
        }
        let x = DMatrix::from_fn(n, d, |i, j| r.inputs[i][j]);
        let data = Dataset::new(x, DVector::from_vec(r.targets))?;
        let training = r.training.into_summary(&columns)?;
        let params = ValidFullGpParams {
            training: settings,
            hyperparameter_subset: None,
            jitter: r.jitter,
            held_out_check: false,
        };
        let theta = DVector::from_vec(r.parameters);
        let mut model = match r.blocks.as_deref() {
            Some(blocks) => {
                check_blocks(blocks, n)?;
                let fit = Dataset::new(
                    data.x().rows(0, blocks[0]).into_owned(),
                    data.y().rows(0, blocks[0]).into_owned(),
                )?;
                let mut model =
                    params.condition_used(Arc::new(fit), &theta, columns, Some(training))?;
                let mut start = blocks[0];
                for &k in &blocks[1..] {
                    let xu = data.x().rows(start, k).into_owned();
                    model.extend(&xu, &data.y().rows(start, k).into_owned())?;
                    start += k;
                }
                model
            }
            None => params.condition_used(Arc::new(data), &theta, columns, Some(training))?,
        };
        if let Some(y_mean) = r.y_mean {
            model.recentre_targets(finite(y_mean, "full-GP y_mean")?);
        }
        // The updates' rows and their record, written together (format 11): each counts the
        // other's rows.
        let updated_rows = r.blocks.as_deref().map(|b| n - b[0]);
        let online = r.online.map(|o| o.checked(1.0)).transpose()?;
        if updated_rows != online.as_ref().map(|(updates, ..)| *updates) {
            return Err(crate::error::Error::InvalidParameter {
                name: "online",
                reason: format!(
                    "the online record counts {:?} updated rows and the blocks add {:?} to the \
                     fit: an updated full GP saves both, with the same count",
                    online.as_ref().map(|(updates, ..)| *updates),
                    updated_rows
                ),
            });
        }
        if let Some((_, prequential, _)) = online {
            model.prequential = prequential;
        }
        crate::data::check_finite_vector("full-GP α = (K + σn²I)⁻¹(y − ȳ)", &model.alpha)?;
        finite(model.record.neg_log_evidence, "full-GP −log p(y|θ)")?;
        let h = &model.hyperparameters;
        let (s0, floor) = (h.signal_variance, h.noise_variance + model.jitter);
        let n = n as f64;
        let solved = bounded(
            n * s0 * s0 / floor,
            "parameters",
            "the squared norm of L⁻¹k*",
        )?;
        bounded(
            ((n * s0 + floor) * solved).sqrt(),
            "parameters",
            "the partial sums of a solve with L",
        )?;
        let bounds = Bounds {
            mean: bounded(
                s0 * model.alpha.iter().map(|a| a.abs()).sum::<f64>() + model.record.y_mean.abs(),
                "targets",
                "the predictive mean",
            )?,
            variance: bounded(
                h.noise_variance + s0,
                "parameters",
                "the predictive variance",
            )?,
        };
        Ok((model, bounds))
    }
}

/// Checks the saved `blocks` of an updated full GP: at least two (the fit's and one update's),
/// none empty, adding up to the `n` saved rows.
///
/// # Errors
/// [`crate::error::Error::InvalidParameter`] otherwise.
fn check_blocks(blocks: &[usize], n: usize) -> Result<()> {
    let total = blocks.iter().try_fold(0usize, |sum, &k| sum.checked_add(k));
    if blocks.len() < 2 || blocks.contains(&0) || total != Some(n) {
        return Err(crate::error::Error::InvalidParameter {
            name: "blocks",
            reason: format!(
                "the rows of the fit and of its updates, {blocks:?}, must be at least two \
                 blocks of at least one row adding up to the {n} saved rows"
            ),
        });
    }
    Ok(())
}
