//! Training FITC: its evidence on the data, the start (lengthscales, variances, pseudo-inputs),
//! the optimiser, and the conditioning on the learned θ.

use super::evidence::{centred_rows, FitcEvidence};
#[cfg(doc)]
use super::params::FitcParams;
use super::params::ValidFitcParams;
use super::posterior::{weights, FittedFitc};
use crate::data::{Dataset, InputColumns};
#[cfg(doc)]
use crate::error::Error;
use crate::error::Result;
use crate::hyperparameters::{self, check_block};
use crate::init;
use crate::termination::TrainingSummary;
use nalgebra::{DMatrix, DVector};

impl ValidFitcParams {
    /// The evidence of this configuration on `data`: θ ↦ (−log p(y|θ), ∇θ). With fixed
    /// pseudo-inputs they are the given ones, or the seed's random subset of the training inputs.
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] if given pseudo-inputs do not have D columns;
    /// [`Error::InvalidParameter`] if m > n and none are given.
    pub fn evidence(&self, data: &Dataset) -> Result<FitcEvidence> {
        let this = &self.resolved_for(data.y_variance());
        let fixed = if this.fixed_pseudo_inputs {
            Some(this.initial_pseudo_inputs(data, &InputColumns::all(data.dim()))?)
        } else {
            None
        };
        Ok(FitcEvidence::new(data, this, fixed))
    }

    /// The starting pseudo-inputs for `data` restricted to the used `columns`: the given ones
    /// (checked against D, then restricted), or drawn by [`init::pseudo_inputs`].
    fn initial_pseudo_inputs(
        &self,
        data: &Dataset,
        columns: &InputColumns,
    ) -> Result<DMatrix<f64>> {
        match &self.pseudo_inputs {
            Some(given) => {
                check_block(
                    given,
                    (self.m, "pseudo-inputs (rows, m)"),
                    (columns.dim(), "pseudo-inputs (columns, D)"),
                    "pseudo-inputs",
                )?;
                Ok(columns.select(given)?.into_owned())
            }
            None => init::pseudo_inputs(data, self.m, self.training.seed),
        }
    }

    /// Learns θ on `data` by minimising −log p(y|θ) (targets centred by their mean) from the
    /// start values of [`crate::init`] (ℓ by the lengthscale strategy, σ0² = var(y),
    /// σn² = σ0²/4, pseudo-inputs a seeded random subset of m training inputs or the given ones).
    /// The returned model never has a worse evidence than θ₀.
    ///
    /// Input columns constant on `data` are left out (as if their lengthscale were infinite) and
    /// named in the training summary; given initial lengthscales are then for the remaining
    /// columns (given pseudo-inputs have all D columns).
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] if the given pseudo-inputs or lengthscales do not have D
    /// columns (used entries); [`Error::ConstantInput`] if every input column is constant,
    /// [`Error::ConstantTargets`]; [`Error::NotPositiveDefinite`] if the initial θ cannot be
    /// factored; [`Error::TrainingFailed`] if training failed (unless best effort was asked for).
    pub fn fit(&self, data: &Dataset) -> Result<FittedFitc> {
        let columns = InputColumns::varying(data)?;
        let used = columns.select_data(data)?;
        let data = used.as_ref();
        self.resolved_for(data.y_variance()).fit_used(data, columns)
    }

    /// Trains on `data`, already restricted to the used `columns`, with a resolved noise floor.
    fn fit_used(&self, data: &Dataset, columns: InputColumns) -> Result<FittedFitc> {
        let start = crate::full_gp::start(data, &self.training)?;
        let pseudo = self.initial_pseudo_inputs(data, &columns)?;
        let noise = self.training.noise();
        let fixed = self.fixed_pseudo_inputs.then(|| pseudo.clone());
        let evidence = FitcEvidence::new(data, self, fixed);
        let centred = centred_rows(&pseudo, evidence.centre());
        let theta0 = hyperparameters::pack(
            &start,
            noise,
            (!self.fixed_pseudo_inputs).then_some(&centred),
        );
        let report = self.training.minimize(&evidence, theta0)?;
        let theta =
            hyperparameters::with_fixed_block(&report.theta, &centred, self.fixed_pseudo_inputs);
        self.build(
            data,
            theta,
            Some(TrainingSummary::new(&report, &columns)),
            columns,
        )
    }

    /// A fitted model at given parameters, without training: conditions on `data` (targets
    /// centred by their mean) at θ in the **full** layout (`[log ℓ, log σ0, p_noise,
    /// vec(X̄ − 1cᵀ)]`, the pseudo-inputs relative to the column means c of `data`'s inputs,
    /// length D + 2 + mD, whatever [`FitcParams::fixed_pseudo_inputs`](crate::fitc::FitcParams::fixed_pseudo_inputs) says), using this
    /// configuration's jitter, noise floor and threads. The training summary is
    /// [`TrainingSummary::untrained`].
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] for a θ of the wrong length, [`Error::NonFinite`] for a NaN or
    /// infinity in θ, [`Error::NotPositiveDefinite`] if θ cannot be factored.
    pub fn condition(&self, data: &Dataset, theta: &DVector<f64>) -> Result<FittedFitc> {
        self.resolved_for(data.y_variance()).build(
            data,
            theta.clone(),
            None,
            InputColumns::all(data.dim()),
        )
    }

    /// Factorises at the full θ and caches what prediction needs; without a training summary,
    /// the untrained one at θ.
    fn build(
        &self,
        data: &Dataset,
        theta: DVector<f64>,
        training: Option<TrainingSummary>,
        columns: InputColumns,
    ) -> Result<FittedFitc> {
        let evidence = FitcEvidence::new(data, self, None);
        let (decoded, f) = evidence.factors(&theta)?;
        let threads = self.training.threads;
        let mut training =
            training.unwrap_or_else(|| TrainingSummary::untrained(f.neg_log_evidence));
        training.diagnostic = super::evidence::loo_diagnostic(&f);
        Ok(FittedFitc {
            lengthscales: decoded.hyper.lengthscales,
            signal_variance: decoded.hyper.signal_variance,
            noise_variance: decoded.hyper.noise_variance,
            pseudo: decoded.block.into_owned(),
            centre: evidence.centre().clone(),
            weights: weights(&f, threads),
            kernel: self.training.kernel,
            jitter: f.jitter,
            l_u: f.l_u,
            l_a: f.l_a,
            record: self.training.record(
                theta,
                data.y_mean(),
                f.neg_log_evidence,
                training,
                columns,
            ),
        })
    }
}
