//! The VFE configuration: a builder, its validated twin, training and conditioning.

use super::evidence::VfeEvidence;
use super::posterior::FittedVfe;
use crate::data::{Dataset, InputColumns};
use crate::error::{Error, Result};
use crate::hyperparameters::{self, check_block};
use crate::inducing::{self, centred_rows};
use crate::init::{self, LengthscaleInit};
use crate::linalg::{par, Jitter};
use crate::model::TrainingSummary;
use crate::params::{impl_fit, training_builder, TrainingSettings};
use nalgebra::{DMatrix, DVector};

/// The default jitter on $K_{uu}$: δ = 1e-6, relative to σ0² (FITC's default too).
pub const DEFAULT_JITTER: f64 = 1e-6;

/// Where the inducing inputs start when none are given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InducingStart {
    /// m distinct training inputs drawn at random with the seed (FITC's start).
    #[default]
    Subset,
    /// Lloyd's k-means centres of the training inputs (in inputs scaled by their standard
    /// deviations) after at most this many rounds, started from [`InducingStart::Subset`]:
    /// O(nmD) per round.
    KMeans(usize),
}

/// Validated VFE settings (from [`VfeParams`] by [`ParamGuard::check`](crate::ParamGuard::check)).
///
/// Defaults: seed 0, [`crate::OptimConfig::default`], all cores, no noise floor, jitter
/// [`Jitter::relative`]`(`[`DEFAULT_JITTER`]`)` on $K_{uu}$, inducing inputs m distinct training
/// inputs drawn at random (the seed's) and learned, lengthscales from a full GP on 1024 points
/// ([`crate::init::DEFAULT_START`]).
#[derive(Debug, Clone)]
pub struct ValidVfeParams {
    pub(crate) m: usize,
    pub(crate) training: TrainingSettings,
    pub(crate) jitter: Jitter,
    pub(crate) inducing_inputs: Option<DMatrix<f64>>,
    pub(crate) fixed_inducing_inputs: bool,
    pub(crate) start: InducingStart,
}

/// A VFE configuration (Titsias' collapsed variational bound, GPflow's `SGPR`), built by
/// [`super::Vfe::params`]; [`VfeParams::fit`] validates it and trains.
#[derive(Debug, Clone)]
#[must_use]
pub struct VfeParams(pub(crate) ValidVfeParams);

impl VfeParams {
    pub(super) fn new(m: usize) -> Self {
        Self(ValidVfeParams {
            m,
            training: TrainingSettings {
                lengthscales: init::DEFAULT_START,
                ..TrainingSettings::default()
            },
            jitter: Jitter::relative(DEFAULT_JITTER),
            inducing_inputs: None,
            fixed_inducing_inputs: false,
            start: InducingStart::default(),
        })
    }

    /// An absolute jitter δ on the diagonal of $K_{uu}$ (the default is relative: 1e-6·σ0², see
    /// [`DEFAULT_JITTER`]); 0 for none.
    pub fn jitter(self, jitter: f64) -> Self {
        self.jitter_policy(Jitter::absolute(jitter))
    }

    /// The jitter policy for $K_{uu}$ (see [`Jitter`]).
    pub fn jitter_policy(mut self, jitter: Jitter) -> Self {
        self.0.jitter = jitter;
        self
    }

    /// Starting inducing inputs X̄ (m×D, one per row) instead of a random subset of the training
    /// inputs.
    pub fn inducing_inputs(mut self, inducing_inputs: DMatrix<f64>) -> Self {
        self.0.inducing_inputs = Some(inducing_inputs);
        self
    }

    /// Where the inducing inputs start when none are given (default
    /// [`InducingStart::Subset`]).
    pub fn inducing_start(mut self, start: InducingStart) -> Self {
        self.0.start = start;
        self
    }

    /// Keeps the inducing inputs at their starting values and learns only the D + 2
    /// hyperparameters.
    pub fn fixed_inducing_inputs(mut self, fixed: bool) -> Self {
        self.0.fixed_inducing_inputs = fixed;
        self
    }

    /// Starting lengthscales learned by a full GP on a seeded random subset of `subset` training
    /// points (all if fewer).
    pub fn initial_lengthscales_from_full_gp(self, subset: usize) -> Self {
        self.lengthscale_init(LengthscaleInit::FullGpSubset(subset))
    }
}

training_builder!(VfeParams);
impl_fit!(VfeParams, ValidVfeParams, FittedVfe);

impl ValidVfeParams {
    /// Validates the configuration (the parts that do not depend on the data).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for m = 0, a negative or non-finite noise floor or jitter, a bad
    /// optimiser budget, user inducing inputs without m rows, or bad initial lengthscales;
    /// [`Error::NonFinite`] for a NaN or infinity in the user inducing inputs.
    fn validate(&self) -> Result<()> {
        if self.m == 0 {
            return Err(Error::InvalidParameter {
                name: "m",
                reason: "VFE needs at least one inducing input".into(),
            });
        }
        self.training.validate()?;
        self.jitter.validate()?;
        if let Some(p) = &self.inducing_inputs {
            if p.nrows() != self.m {
                return Err(Error::InvalidParameter {
                    name: "inducing_inputs",
                    reason: format!("{} rows, but m = {}", p.nrows(), self.m),
                });
            }
            check_block(
                p,
                (self.m, "inducing inputs (rows, m)"),
                (p.ncols(), "inducing inputs (columns, D)"),
                "inducing inputs",
            )?;
        }
        Ok(())
    }

    /// `vfe`.
    pub fn name(&self) -> &'static str {
        "vfe"
    }

    /// The number of inducing inputs m.
    pub fn m(&self) -> usize {
        self.m
    }

    /// The settings shared with the other models (seed, optimiser, threads, noise floor, ℓ start).
    pub fn training(&self) -> &TrainingSettings {
        &self.training
    }

    /// The bound of this configuration on `data`: θ ↦ (−F(θ), ∇θ). With fixed inducing inputs
    /// they are the given ones, or the seed's random subset of the training inputs.
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] if given inducing inputs do not have D columns;
    /// [`Error::InvalidParameter`] if m > n and none are given.
    pub fn evidence(&self, data: &Dataset) -> Result<VfeEvidence> {
        let fixed = if self.fixed_inducing_inputs {
            Some(self.initial_inducing_inputs(data, &InputColumns::all(data.dim()))?)
        } else {
            None
        };
        Ok(VfeEvidence::new(data, self, fixed))
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
        let start = init::start(data, &self.training)?;
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
        let theta = if self.fixed_inducing_inputs {
            let dim = data.dim();
            let mut full = DVector::zeros(hyperparameters::theta_len(dim, self.m));
            full.rows_mut(0, dim + 2).copy_from(&report.theta);
            full.as_mut_slice()[dim + 2..].copy_from_slice(centred.as_slice());
            full
        } else {
            report.theta.clone()
        };
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
        self.build(data, theta.clone(), None, InputColumns::all(data.dim()))
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
            noise_floor: self.training.noise_floor,
            inducing: decoded.block.into_owned(),
            centre: evidence.centre().clone(),
            weights: inducing::weights(&f, par(threads)),
            kernel: self.training.kernel,
            jitter: f.jitter,
            l_u: f.l_u,
            l_a: f.l_a,
            y_mean: data.y_mean(),
            neg_bound: f.neg_log_evidence,
            trace: f.trace,
            training: training.unwrap_or_else(|| TrainingSummary::untrained(f.neg_log_evidence)),
            threads,
            columns,
            theta,
        })
    }
}
