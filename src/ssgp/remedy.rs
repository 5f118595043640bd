//! SSGP's calibrated default (issue 17): a guard against the overfitting of learned spectral
//! points on small and wide data (the paper's §5.4).
//!
//! With learned frequencies SSGP has mD + D + 2 parameters; when mD is large against n it fits
//! its training points too well and its error bars come out far too narrow, which the exact LOO
//! at the fitted θ cannot see (the frequencies were fitted to the points it leaves out). The
//! remedy is a second fit that cannot overfit: the *random-feature fit*, m spectral points drawn
//! once from the kernel's spectral density at the start's lengthscales (the full GP's on a
//! subset, honest there) and held fixed with ℓ, training only σ0² and σn² — a random-feature
//! approximation of the start's full GP, whose noise absorbs what the m features miss.
//! [`CalibrationGuard`] chooses between the two fits.

use super::params::{NoiseBound, ValidSsgpParams};
use super::posterior::FittedSsgp;
use super::{SsgpEvidence, SsgpHyperparameters};
use crate::data::{Dataset, InputColumns};
use crate::error::Result;
use crate::hyperparameters::Hyperparameters;
use crate::metrics::mnlp;
use crate::optim::{retag, Objective, Phase};
use crate::termination::{Remedy, TrainingSummary};
use nalgebra::DVector;
use rand::seq::SliceRandom;

/// How an SSGP fit guards its error bars against overfitted spectral points (the default is
/// [`CalibrationGuard::Check`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum CalibrationGuard {
    /// The paper's fit only: learned spectral points (§4.2), no check.
    Off,
    /// Always the random-feature fit (spectral points drawn from the kernel at the start's
    /// lengthscales and held fixed with them; σ0² and σn² trained).
    RandomFeatures,
    /// The learned fit, checked. Up to [`CalibrationGuard::HELD_OUT_MAX_ROWS`] training points,
    /// both fits are trained on a seeded 3/4 of the rows and scored by their MNLP on the other 1/4;
    /// the winner is refitted on all rows (about 2.2 times the learned fit's cost). Above, the
    /// learned fit is kept unless its LOO diagnostic fits its training points too well
    /// ([`LooDiagnostic::fits_too_well`](crate::termination::LooDiagnostic::fits_too_well)),
    /// when the random-feature fit replaces it (a few per cent of the learned fit's cost).
    #[default]
    Check,
}

impl CalibrationGuard {
    /// The number of training points up to which [`CalibrationGuard::Check`] compares the two fits
    /// on held-out rows.
    pub const HELD_OUT_MAX_ROWS: usize = 2000;
    /// The fewest training points for a held-out comparison (below, the learned fit's LOO
    /// decides as above the maximum).
    pub const HELD_OUT_MIN_ROWS: usize = 20;
}

/// −log p(y|θ) of a random-feature fit as a function of (log σ0, p_n) alone: ℓ held at the
/// start's and the spectral points fixed in `evidence`.
struct Variances<'a, 'd> {
    evidence: &'a SsgpEvidence<'d>,
    /// The full θ = [log ℓ (D), log σ0, p_n], of which the last two entries are trained.
    theta: DVector<f64>,
}

impl Variances<'_, '_> {
    /// The full θ with (log σ0, p_n) = `v`.
    fn full(&self, v: &DVector<f64>) -> DVector<f64> {
        let mut theta = self.theta.clone();
        let d = theta.len() - 2;
        theta.rows_mut(d, 2).copy_from(v);
        theta
    }
}

impl Objective for Variances<'_, '_> {
    fn num_params(&self) -> usize {
        2
    }

    fn value_and_gradient(&self, v: &DVector<f64>) -> Result<(f64, DVector<f64>)> {
        let (value, gradient) = self.evidence.value_and_gradient(&self.full(v))?;
        let d = gradient.len() - 2;
        Ok((value, gradient.rows(d, 2).into_owned()))
    }

    fn value_scale(&self) -> f64 {
        self.evidence.value_scale()
    }
}

impl ValidSsgpParams {
    /// Trains on `data` (restricted to the used `columns`) from `start` as [`CalibrationGuard`]
    /// says.
    pub(super) fn fit_calibrated(
        &self,
        data: &Dataset,
        start: Hyperparameters,
        columns: &InputColumns,
    ) -> Result<FittedSsgp> {
        let n = data.len();
        match self.calibration {
            CalibrationGuard::Off => self.fit_from(data, start, columns),
            CalibrationGuard::RandomFeatures => {
                self.fit_random_features(data, &start, columns, Remedy::RandomFeatures)
            }
            CalibrationGuard::Check
                if (CalibrationGuard::HELD_OUT_MIN_ROWS..=CalibrationGuard::HELD_OUT_MAX_ROWS)
                    .contains(&n) =>
            {
                let mut rows: Vec<usize> = (0..n).collect();
                rows.shuffle(&mut crate::random::seeded(self.training.seed));
                let (held, fit) = rows.split_at(n / 4);
                let (held, fit) = (data.subset(held)?, data.subset(fit)?);
                let score = |model: &FittedSsgp| -> Result<f64> {
                    let score = mnlp(held.y(), &model.predict(held.x())?)?;
                    Ok(if score.is_finite() { score } else { f64::MAX })
                };
                // The comparison's fits are on the used columns and report to the observer
                // as the calibration check.
                let mut quiet = self.clone();
                quiet.training.optim.observer = self
                    .training
                    .optim
                    .observer
                    .as_ref()
                    .map(|o| retag(o, |p| p.phase = Phase::CalibrationCheck));
                let used = InputColumns::all(data.dim());
                let learned = score(&quiet.fit_from(&fit, start.clone(), &used)?)?;
                let random = score(&quiet.fit_random_features(
                    &fit,
                    &start,
                    &used,
                    Remedy::RandomFeatures,
                )?)?;
                let remedy = Remedy::HeldOut {
                    learned_mnlp: learned,
                    random_features_mnlp: random,
                };
                if random < learned {
                    self.fit_random_features(data, &start, columns, remedy)
                } else {
                    let mut fitted = self.fit_from(data, start, columns)?;
                    fitted.record.training.remedy = Some(remedy);
                    Ok(fitted)
                }
            }
            CalibrationGuard::Check => {
                let mut fitted = self.fit_from(data, start.clone(), columns)?;
                let too_well = fitted
                    .record
                    .training
                    .diagnostic
                    .is_some_and(|d| d.fits_too_well());
                if too_well {
                    return self.fit_random_features(data, &start, columns, Remedy::LooFitsTooWell);
                }
                fitted.record.training.remedy = Some(Remedy::LooChecked);
                Ok(fitted)
            }
        }
    }

    /// The random-feature fit: m unit frequencies W (the given ones, or a draw of the seed from
    /// the spectral density) held fixed, ℓ held at `start`'s, and (log σ0, p_n) trained from
    /// `start`'s by the configured optimiser; `remedy` is recorded in its summary.
    fn fit_random_features(
        &self,
        data: &Dataset,
        start: &Hyperparameters,
        columns: &InputColumns,
        remedy: Remedy,
    ) -> Result<FittedSsgp> {
        let mut fixed = self.clone();
        fixed.fixed_spectral_points = true;
        fixed.noise_bound = NoiseBound::None;
        let w = match &self.initial_unit_frequencies {
            Some(w) => w.clone(),
            None => self.density().sample_unit_frequencies(
                self.m,
                data.dim(),
                &mut crate::random::seeded(self.training.seed),
            ),
        };
        let evidence = fixed.evidence_with(data, Some(&w))?;
        let theta = evidence.pack(&SsgpHyperparameters {
            hyper: start.clone(),
            unit_frequencies: w,
        })?;
        let d = theta.len() - 2;
        let objective = Variances {
            evidence: &evidence,
            theta,
        };
        let v0 = objective.theta.rows(d, 2).into_owned();
        let report = fixed.training.minimize(&objective, v0)?;
        let theta = objective.full(&report.theta);
        let mut training = TrainingSummary::new(&report, columns);
        training.remedy = Some(remedy);
        fixed.build(data, &evidence, &theta, training, columns.clone())
    }
}
