//! Training VFE: its bound on the data, the start (lengthscales, variances, inducing inputs),
//! the optimiser on −F, and the optimal variational posterior at the learned θ.

use super::evidence::VfeEvidence;
#[cfg(doc)]
use super::params::VfeParams;
use super::params::{InducingStart, ValidVfeParams};
use super::posterior::FittedVfe;
use crate::data::{Dataset, InputColumns};
#[cfg(doc)]
use crate::error::Error;
use crate::error::Result;
use crate::hyperparameters::{self, check_block};
use crate::inducing::{self, centred_rows};
use crate::init::{self};
use crate::linalg::par;
use crate::termination::TrainingSummary;
use nalgebra::{DMatrix, DVector};

impl ValidVfeParams {
    /// The bound of this configuration on `data`: θ ↦ (−F(θ), ∇θ). With fixed inducing inputs
    /// they are the given ones, or the seed's random subset of the training inputs.
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] if given inducing inputs do not have D columns;
    /// [`Error::InvalidParameter`] if m > n and none are given.
    pub fn evidence(&self, data: &Dataset) -> Result<VfeEvidence> {
        let this = &self.resolved_for(data.y_variance());
        let fixed = if this.fixed_inducing_inputs {
            Some(this.initial_inducing_inputs(data, &InputColumns::all(data.dim()))?)
        } else {
            None
        };
        Ok(VfeEvidence::new(data, this, fixed))
    }

    /// The starting inducing inputs for `data` restricted to the used `columns`: the given ones
    /// (checked against D, then restricted), or drawn by [`init::pseudo_inputs`] (and moved by
    /// k-means when so set).
    fn initial_inducing_inputs(
        &self,
        data: &Dataset,
        columns: &InputColumns,
    ) -> Result<DMatrix<f64>> {
        match &self.inducing_inputs {
            Some(given) => {
                check_block(
                    given,
                    (self.m, "inducing inputs (rows, m)"),
                    (columns.dim(), "inducing inputs (columns, D)"),
                    "inducing inputs",
                )?;
                Ok(columns.select(given)?.into_owned())
            }
            None => {
                let subset = init::pseudo_inputs(data, self.m, self.training.seed)?;
                Ok(match self.start {
                    InducingStart::Subset => subset,
                    InducingStart::KMeans(rounds) => inducing::kmeans(data.x(), subset, rounds),
                })
            }
        }
    }

    /// Learns θ on `data` by minimising −F(θ) (targets centred by their mean) from the start
    /// values of [`crate::init`] (ℓ by the lengthscale strategy, σ0² = var(y), σn² = σ0²/4,
    /// inducing inputs a seeded random subset of m training inputs or the given ones). The
    /// returned model never has a worse bound than θ₀.
    ///
    /// Input columns constant on `data` are left out (as if their lengthscale were infinite) and
    /// named in the training summary; given initial lengthscales are then for the remaining
    /// columns (given inducing inputs have all D columns).
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] if the given inducing inputs or lengthscales do not have D
    /// columns (used entries); [`Error::ConstantInput`] if every input column is constant,
    /// [`Error::ConstantTargets`]; [`Error::NotPositiveDefinite`] if the initial θ cannot be
    /// factored; [`Error::TrainingFailed`] if training failed (unless best effort was asked for).
    pub fn fit(&self, data: &Dataset) -> Result<FittedVfe> {
        let columns = InputColumns::varying(data)?;
        let used = columns.select_data(data)?;
        let data = used.as_ref();
        self.resolved_for(data.y_variance()).fit_used(data, columns)
    }

    /// Trains on `data`, already restricted to the used `columns`, with a resolved noise floor.
    fn fit_used(&self, data: &Dataset, columns: InputColumns) -> Result<FittedVfe> {
        let start = crate::full_gp::start(data, &self.training)?;
        let inducing = self.initial_inducing_inputs(data, &columns)?;
        let noise = self.training.noise();
        let fixed = self.fixed_inducing_inputs.then(|| inducing.clone());
        let evidence = VfeEvidence::new(data, self, fixed);
        let centred = centred_rows(&inducing, evidence.centre());
        let theta0 = hyperparameters::pack(
            &start,
            noise,
            (!self.fixed_inducing_inputs).then_some(&centred),
        );
        let report = self.training.minimize(&evidence, theta0)?;
        let theta =
            hyperparameters::with_fixed_block(&report.theta, &centred, self.fixed_inducing_inputs);
        self.build(
            data,
            theta,
            Some(TrainingSummary::new(&report, &columns)),
            columns,
        )
    }

    /// A fitted model at given parameters, without training: conditions on `data` (targets
    /// centred by their mean) at θ in the **full** layout (`[log ℓ, log σ0, p_noise,
    /// vec(X̄ − 1cᵀ)]`, the inducing inputs relative to the column means c of `data`'s inputs,
    /// length D + 2 + mD, whatever [`VfeParams::fixed_inducing_inputs`] says), using this
    /// configuration's jitter, noise floor and threads. The training summary is
    /// [`TrainingSummary::untrained`] at −F(θ).
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] for a θ of the wrong length, [`Error::NonFinite`] for a NaN or
    /// infinity in θ, [`Error::NotPositiveDefinite`] if θ cannot be factored.
    pub fn condition(&self, data: &Dataset, theta: &DVector<f64>) -> Result<FittedVfe> {
        self.resolved_for(data.y_variance()).build(
            data,
            theta.clone(),
            None,
            InputColumns::all(data.dim()),
        )
    }

    /// Factorises at the full θ and caches what prediction needs (q(u)'s β, L_u, L_A); without a
    /// training summary, the untrained one at θ.
    fn build(
        &self,
        data: &Dataset,
        theta: DVector<f64>,
        training: Option<TrainingSummary>,
        columns: InputColumns,
    ) -> Result<FittedVfe> {
        let evidence = VfeEvidence::new(data, self, None);
        let (decoded, f) = evidence.factors(&theta)?;
        let threads = self.training.threads;
        Ok(FittedVfe {
            lengthscales: decoded.hyper.lengthscales,
            signal_variance: decoded.hyper.signal_variance,
            noise_variance: decoded.hyper.noise_variance,
            inducing: decoded.block.into_owned(),
            centre: evidence.centre().clone(),
            weights: inducing::weights(&f, par(threads)),
            kernel: self.training.kernel,
            jitter: f.jitter,
            l_u: f.l_u,
            l_a: f.l_a,
            trace: f.trace,
            record: self.training.record(
                theta,
                data.y_mean(),
                f.neg_log_evidence,
                training.unwrap_or_else(|| TrainingSummary::untrained(f.neg_log_evidence)),
                columns,
            ),
        })
    }
}
