//! Training an SSGP (§4.2): its evidence on the data, the start (lengthscales, variances, the best
//! of K spectral draws, the optional noise bound from a fixed-points fit), the optimiser, and the
//! conditioning on the learned θ (eq. 7 via Appendix A).

use super::evidence::SsgpEvidence;
use super::params::{NoiseBound, ValidSsgpParams};
use super::posterior::{FittedSsgp, WeightPosterior};
use super::SsgpHyperparameters;
use crate::data::{Dataset, InputColumns};
use crate::error::{Error, Result};
use crate::hyperparameters::{check_block, Hyperparameters};
use crate::init::{self};
use crate::linalg::{self, SpareFactor};
use crate::model::FitRecord;
use crate::optim::Observer;
use crate::termination::TrainingSummary;
use nalgebra::{DMatrix, DVector};

/// The spreads (standard deviations) of the targets SSGP fits in f64, from 1e-60 to 1e60: its
/// gradient with respect to σn² has a term q/σn⁴ (eq. 8), and σn⁴ under- or overflows for a
/// spread beyond about 1e∓75 (measured on the sinc data). [`crate::standardize::Standardized`]
/// fits any other spread from [`crate::data::SMALLEST_TARGET_SPREAD`] to
/// [`crate::data::LARGEST_TARGET_SPREAD`].
pub const TARGET_SPREAD: (f64, f64) = (1e-60, 1e60);

/// Checks that the targets' `spread` is in [`TARGET_SPREAD`].
///
/// # Errors
/// [`Error::Scale`] naming the spread and the `remedy`.
pub(crate) fn check_ssgp_target_spread(spread: f64, remedy: &str) -> Result<()> {
    let (low, high) = TARGET_SPREAD;
    // Constant targets (spread 0) are `Error::ConstantTargets`, from the start values.
    let side = if spread > 0.0 && spread < low {
        "below"
    } else if spread > high {
        "above"
    } else {
        return Ok(());
    };
    Err(Error::Scale {
        what: format!(
            "the targets' spread {spread:e} is {side} what SSGP can fit in f64 (from {low:e} to \
             {high:e}: its gradient divides by σn⁴); {remedy}"
        ),
    })
}

impl ValidSsgpParams {
    /// A copy of the fixed unit frequencies `w`, checked m×`dim` and finite.
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] for another shape, [`Error::NonFinite`] for a NaN or infinity.
    pub(super) fn checked_fixed_frequencies(
        &self,
        w: &DMatrix<f64>,
        dim: usize,
    ) -> Result<DMatrix<f64>> {
        check_block(
            w,
            (self.m, "fixed unit frequencies (rows, m)"),
            (dim, "fixed unit frequencies (columns, D)"),
            "fixed unit frequencies",
        )?;
        Ok(w.clone())
    }

    /// Checks that the given initial unit frequencies, if any, have one column per used input
    /// (`dim`): a fit that keeps the random-feature fit (which draws its own) never reads them,
    /// and a wrong shape is still the user's mistake to hear of.
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] naming the columns of the initial unit frequencies.
    pub(crate) fn check_initial_frequencies(&self, dim: usize) -> Result<()> {
        match &self.initial_unit_frequencies {
            Some(w) if w.ncols() != dim => Err(Error::DimensionMismatch {
                what: "initial unit frequencies (columns, one per used input)",
                expected: dim,
                found: w.ncols(),
            }),
            _ => Ok(()),
        }
    }

    /// The unit frequencies W (m×`dim`) training starts from: the given ones, or the best of the
    /// initial draws from the spectral density by `neg_log_evidence`, each reported to
    /// `observer`.
    ///
    /// # Errors
    /// As [`init::unit_frequencies`].
    pub(crate) fn start_unit_frequencies(
        &self,
        dim: usize,
        observer: Option<&Observer>,
        neg_log_evidence: impl Fn(&DMatrix<f64>) -> Result<f64>,
    ) -> Result<DMatrix<f64>> {
        init::unit_frequencies(
            self.initial_unit_frequencies.as_ref(),
            self.density().as_ref(),
            (self.m, dim),
            (self.initial_draws, self.training.seed),
            observer,
            neg_log_evidence,
        )
    }

    /// The evidence of this configuration on `data`: θ ↦ (−log p(y|θ), ∇θ). With fixed spectral
    /// points θ leaves W out and W is the given one, or else the first draw of the seed — not the
    /// W a fit ends with, which is the best of [`initial_draws`](super::SsgpParams::initial_draws)
    /// (the first only by chance) or, from the calibration check, the random-feature fit's: a
    /// fitted model's θ (D + 2 entries either way) evaluated here is then silently another
    /// model. With learned spectral points θ holds W. Either way θ's noise entry is read under
    /// the noise floor resolved on `data`, which a calibration check that narrowed the model
    /// scaled with it. A fitted model's own evidence — its
    /// [`FittedSsgp::neg_log_evidence`] at its θ, on `data` of its used columns — is that of
    /// these settings with its W and its floor:
    /// `.initial_unit_frequencies(fitted.hyperparameters().unit_frequencies.clone())
    /// .noise_floor(fitted.noise_floor()).relative_noise_floor(0.0)`.
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] if given initial frequencies do not have D columns;
    /// [`Error::InvalidParameter`] naming `noise_floor` for a floor above
    /// [`MAX_NOISE_FLOOR_RATIO`](crate::params::MAX_NOISE_FLOOR_RATIO)·var(y);
    /// [`Error::Allocation`] if an evaluation's buffers for this m cannot be allocated.
    pub fn evidence<'a>(&self, data: &'a Dataset) -> Result<SsgpEvidence<'a>> {
        let this = &self.resolved_for(data.y_variance())?;
        this.check_buffers(data)?;
        let fixed = match (this.fixed_spectral_points, &this.initial_unit_frequencies) {
            (false, _) => None,
            (true, Some(w)) => Some(w.clone()),
            (true, None) => {
                let mut rng = crate::random::seeded(this.training.seed);
                Some(
                    this.density()
                        .sample_unit_frequencies(this.m, data.dim(), &mut rng),
                )
            }
        };
        this.evidence_with(data, fixed.as_ref())
    }

    /// The evidence with W fixed at `w` when the spectral points are fixed (ignored otherwise).
    pub(super) fn evidence_with<'a>(
        &self,
        data: &'a Dataset,
        w: Option<&DMatrix<f64>>,
    ) -> Result<SsgpEvidence<'a>> {
        let fixed = match (self.fixed_spectral_points, w) {
            (true, Some(w)) => Some(self.checked_fixed_frequencies(w, data.dim())?),
            _ => None,
        };
        let evidence = SsgpEvidence::new(data, self, fixed);
        let m_by_d = self
            .m
            .checked_mul(data.dim())
            .and_then(|e| e.checked_mul(8));
        linalg::check_allocation(
            m_by_d.unwrap_or(usize::MAX),
            "SSGP's spectral points (m×D); use fewer spectral points m",
        )?;
        linalg::check_allocation(
            evidence.working_bytes(),
            "SSGP's training buffers (2m×2m factors and n-row chunks of the design matrix); use fewer spectral points m",
        )?;
        Ok(evidence)
    }

    /// [`Error::Allocation`] unless the spectral points (m×D) and one evaluation's buffers on
    /// `data` ([`SsgpEvidence::working_bytes`]) can be allocated: m comes from the caller, so
    /// this is checked before anything of its size is drawn or trained
    /// ([`ValidSsgpParams::evidence_with`] checks every evidence it builds the same way).
    pub(crate) fn check_buffers(&self, data: &Dataset) -> Result<()> {
        self.evidence_with(data, None).map(drop)
    }

    /// Trains SSGP on `data` (§4.2): targets centred; the start values of [`crate::init`]
    /// (ℓ by the lengthscale strategy, σ0² = var(y), σn² = σ0²/4, the best of the initial draws of
    /// spectral points by evidence); then nonlinear CG on −log p(y|θ) until convergence or the
    /// budget — and, unless the calibration guard is off, the check that may keep another model
    /// in the learned fit's place ([`CalibrationGuard`](crate::ssgp::CalibrationGuard);
    /// `training().remedy` says which).
    ///
    /// Input columns constant on `data` are left out (as if their lengthscale were infinite) and
    /// named in the training summary; given initial lengthscales and frequencies are then for the
    /// remaining columns.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming `noise_floor` for a floor above
    /// [`MAX_NOISE_FLOOR_RATIO`](crate::params::MAX_NOISE_FLOOR_RATIO)·var(y);
    /// [`Error::EmptyData`] if every input column is constant, [`Error::ConstantTargets`];
    /// [`Error::DimensionMismatch`] if given initial lengthscales or frequencies do not have one
    /// entry/column per used input; [`Error::NotPositiveDefinite`] if A cannot be factored at the
    /// start; [`Error::Scale`] for targets whose spread is outside [`TARGET_SPREAD`];
    /// [`Error::TrainingFailed`] if training failed (unless best effort was asked for);
    /// [`Error::Allocation`] if the training buffers for this m (about 8·(blocks + 3)·(2m)²
    /// bytes, see the guide) cannot be allocated.
    pub fn fit(&self, data: &Dataset) -> Result<FittedSsgp> {
        check_ssgp_target_spread(
            data.check_target_spread()?,
            "standardise them (`Standardized::new(Ssgp::params(m))`)",
        )?;
        let columns = InputColumns::varying(data)?;
        let used = columns.select_data(data)?;
        self.check_initial_frequencies(used.dim())?;
        let this = self.resolved_for(used.y_variance())?;
        this.check_buffers(&used)?;
        let start = crate::full_gp::start(&used, &this.training)?;
        this.fit_calibrated(&used, start, &columns, self.training.noise_floor)
    }

    /// Trains on `data` restricted to the used `columns`, from `start`.
    pub(super) fn fit_from(
        &self,
        data: &Dataset,
        start: Hyperparameters,
        columns: &InputColumns,
    ) -> Result<FittedSsgp> {
        let budget = self.training.optim.max_evaluations;
        let mut fits = self.fit_from_checkpoints(data, start, columns, &[budget])?;
        fits.pop().ok_or_else(|| Error::InvalidParameter {
            name: "max_evaluations",
            reason: "no fit was trained".into(),
        })
    }

    /// The fits [`ValidSsgpParams::fit_from`] gives with budgets of each of the ascending
    /// evaluation counts in `checkpoints` (at most `max_evaluations`), from one run: the
    /// optimiser's path before its budget ends does not depend on it
    /// ([`crate::optim::minimize_with_checkpoints`]). With a [`NoiseBound::FixedSpectralPoints`]
    /// the bound is estimated once, with the whole budget.
    pub(super) fn fit_from_checkpoints(
        &self,
        data: &Dataset,
        start: Hyperparameters,
        columns: &InputColumns,
        checkpoints: &[usize],
    ) -> Result<Vec<FittedSsgp>> {
        if let NoiseBound::FixedSpectralPoints { fraction } = self.noise_bound {
            let mut fixed = self.clone();
            fixed.fixed_spectral_points = true;
            fixed.noise_bound = NoiseBound::None;
            let estimate = fixed
                .fit_from(data, start.clone(), columns)?
                .noise_variance();
            let mut bounded = self.clone();
            bounded.noise_bound = NoiseBound::None;
            bounded.training.noise_floor = self.training.noise_floor.max(fraction * estimate);
            return bounded.fit_from_checkpoints(data, start, columns, checkpoints);
        }
        self.check_buffers(data)?;
        let w0 =
            self.start_unit_frequencies(data.dim(), self.training.optim.observer.as_ref(), |w| {
                let evidence = self.evidence_with(data, Some(w))?;
                evidence.value(&evidence.pack_start(&SsgpHyperparameters {
                    hyper: start.clone(),
                    unit_frequencies: w.clone(),
                })?)
            })?;
        let evidence = self.evidence_with(data, Some(&w0))?;
        let theta0 = evidence.pack_start(&SsgpHyperparameters {
            hyper: start,
            unit_frequencies: w0,
        })?;
        let (_, reports) =
            self.training
                .minimize_with_checkpoints(&evidence, theta0, checkpoints)?;
        reports
            .into_iter()
            .map(|report| {
                let training = TrainingSummary::new(&report, columns);
                self.build(data, &evidence, &report.theta, training, columns.clone())
            })
            .collect()
    }

    /// A fitted model at exactly the given hyperparameters and spectral points (for all D
    /// inputs), without training: a warm start, or values from elsewhere. The evidence is
    /// evaluated at them. σn² must lie above the noise floor of `data`, the larger of
    /// `noise_floor` and `relative_noise_floor`·var y (10⁻⁴·var y by default): σn² =
    /// floor + e^{2p_n} holds no value at or below it, and the model is not moved to one it
    /// does hold — set a lower floor (`.relative_noise_floor(0.0)` for none) to condition there.
    ///
    /// # Errors
    /// As [`SsgpEvidence::pack`] ([`Error::InvalidParameter`] naming `noise_floor` for σn² at or
    /// below the floor, or a floor above
    /// [`MAX_NOISE_FLOOR_RATIO`](crate::params::MAX_NOISE_FLOOR_RATIO)·var(y));
    /// [`Error::NotPositiveDefinite`] if A cannot be factored; [`Error::Allocation`] if the
    /// buffers for this m cannot be allocated.
    pub fn condition(&self, data: &Dataset, hyper: &SsgpHyperparameters) -> Result<FittedSsgp> {
        let this = self.resolved_for(data.y_variance())?;
        let evidence = this.evidence_with(data, Some(&hyper.unit_frequencies))?;
        let theta = evidence.pack(hyper)?;
        let value = evidence.value(&theta)?;
        let training = TrainingSummary::untrained(value);
        this.build(
            data,
            &evidence,
            &theta,
            training,
            InputColumns::all(data.dim()),
        )
    }

    pub(super) fn build(
        &self,
        data: &Dataset,
        evidence: &SsgpEvidence<'_>,
        theta: &DVector<f64>,
        training: TrainingSummary,
        columns: InputColumns,
    ) -> Result<FittedSsgp> {
        let hyper = evidence.unpack(theta)?;
        let (value, posterior) = evidence.posterior(theta)?;
        let record = self
            .training
            .record(theta.clone(), data.y_mean(), value, training, columns);
        let mut fitted = self.fitted(hyper, posterior, record);
        // A diagnostic that cannot be computed (a factor that fails) leaves the fit standing.
        fitted.record.training.diagnostic = fitted.loo_diagnostic(data).ok().flatten();
        Ok(fitted)
    }

    /// The fitted SSGP at the decoded hyperparameters `hyper` with the weight posterior
    /// `posterior` and the `record` of its fit: the one constructor of the single-process and the
    /// distributed fit.
    pub(crate) fn fitted(
        &self,
        hyper: SsgpHyperparameters,
        posterior: WeightPosterior,
        record: FitRecord,
    ) -> FittedSsgp {
        FittedSsgp {
            hyper,
            posterior,
            spare: SpareFactor::default(),
            prior_level: 1.0,
            fixed: self.fixed_spectral_points,
            chunk_rows: self.chunk_rows,
            record,
            rhs: None,
            updates: 0,
            prequential: Default::default(),
        }
    }
}
