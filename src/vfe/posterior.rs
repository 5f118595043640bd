//! A VFE model conditioned on its training data at fixed parameters, and its predictions.

use crate::data::InputColumns;
use crate::data::Inputs;
use crate::error::Result;
use crate::inducing::Posterior;
use crate::kernel::{Covariance, Kernel};
use crate::linalg::par;
use crate::model::{fitted_regressor, FitRecord};
use crate::prediction_loop::{mean_in_chunks, predict_in_chunks, Chunk};
use crate::predictive::PredictiveGradients;
use crate::predictive::{check_joint_size, JointPredictive, JointSamples, Predictive};
use crate::termination::TrainingSummary;
use nalgebra::{DMatrix, DVector};

/// Test points per block in [`FittedVfe::predict`] (bounds the working memory to O(m·block)).
const PREDICT_BLOCK: usize = 4096;

/// A VFE model conditioned on its training data at fixed parameters: the optimal variational
/// posterior (Titsias 2009, eq. 10–11)
/// $$q(u) = N\big(σ_n^{-2}K_{uu}ΣK_{uf}y,\; K_{uu}ΣK_{uu}\big), \qquad
///   Σ = (K_{uu} + σ_n^{-2}K_{uf}K_{fu})^{-1},$$
/// with the exact conditional p(f*|u) at test inputs.
///
/// Caches $L_u$ ($K_{uu} = L_uL_u^⊤$, jitter included), $L_A$ ($A = I + VV^⊤/σ_n^2 = L_AL_A^⊤$,
/// $V = L_u^{-1}K_{uf}$) and the weights $β = L_u^{-⊤}L_A^{-⊤}L_A^{-1}Vy/σ_n^2 = ΣK_{uf}y/σ_n^2$
/// (m), so that at a test input x* with $k_* = k(X̄, x_*)$ (m):
/// $$μ_* = \bar y + k_*^⊤β, \qquad
///   σ^2_{f*} = σ_0^2 - \|L_u^{-1}k_*\|^2 + \|L_A^{-1}L_u^{-1}k_*\|^2
///            = k_{**} - Q_{**} + k_{*u}Σk_{u*},$$
/// and $σ^2_{y*} = σ^2_{f*} + σ_n^2$. These are FITC's formulas with Λ = σn²I (the code is
/// shared).
#[derive(Debug, Clone)]
pub struct FittedVfe {
    pub(crate) lengthscales: DVector<f64>,
    pub(crate) signal_variance: f64,
    pub(crate) noise_variance: f64,
    /// X̄ − 1cᵀ, the inducing inputs relative to the training inputs' column means c.
    pub(crate) inducing: DMatrix<f64>,
    /// c (D).
    pub(crate) centre: DVector<f64>,
    /// The covariance family.
    pub(crate) kernel: Kernel,
    /// The jitter δ on $K_{uu}$'s diagonal.
    pub(crate) jitter: f64,
    pub(crate) l_u: DMatrix<f64>,
    pub(crate) l_a: DMatrix<f64>,
    pub(crate) weights: DVector<f64>,
    /// tr(K_ff − Q_ff) at θ.
    pub(crate) trace: f64,
    /// θ (full layout), ȳ, −F at θ (in `neg_log_evidence`), the training summary, the noise
    /// floor, the thread count and the used input columns.
    pub(crate) record: FitRecord,
}

impl FittedVfe {
    /// Predictive means and variances at test inputs `x` (n*×D), O(m² + mD) per point.
    ///
    /// # Errors
    /// [`crate::Error::EmptyData`] for no rows, [`crate::Error::DimensionMismatch`] if `x` has
    /// not D columns, [`crate::Error::NonFinite`] for a NaN or infinity in `x` or in a
    /// prediction.
    pub fn predict<X: Inputs + ?Sized>(&self, x: &X) -> Result<Predictive> {
        let x = &*x.to_matrix()?;
        predict_in_chunks(
            x,
            &self.record,
            PREDICT_BLOCK,
            (self.signal_variance, self.noise_variance),
            self.chunk(),
        )
    }

    /// The predictive means alone, ȳ + k_*ᵀβ at `x` (n*×D): [`Self::predict`]'s means bit for
    /// bit, without either triangular solve (O(mD) per point).
    ///
    /// # Errors
    /// As [`Self::predict`].
    pub fn predict_mean<X: Inputs + ?Sized>(&self, x: &X) -> Result<DVector<f64>> {
        let x = &*x.to_matrix()?;
        mean_in_chunks(x, &self.record, PREDICT_BLOCK, self.chunk())
    }

    /// The posterior shared with FITC.
    fn posterior(&self) -> Posterior<'_> {
        Posterior {
            kernel: Covariance {
                kernel: self.kernel,
                lengthscales: &self.lengthscales,
                signal_variance: self.signal_variance,
            },
            pseudo: &self.inducing,
            centre: &self.centre,
            l_u: &self.l_u,
            l_a: &self.l_a,
            weights: &self.weights,
            par: par(self.record.threads),
        }
    }

    /// The work of one block of test rows for [`predict_in_chunks`].
    fn chunk(&self) -> impl Chunk + '_ {
        self.posterior().chunk()
    }

    /// The joint predictive at `x` (n*×D, n* ≤
    /// [`MAX_JOINT_POINTS`](crate::predictive::MAX_JOINT_POINTS)): q(f*) = ∫p(f*|u)q(u)du,
    /// $$Σ_f = K_{**} - Q_{**} + K_{*u}ΣK_{u*} = K_{**} - V^⊤V + W^⊤W,$$
    /// $V = L_u^{-1}K_{u*}$, $W = L_A^{-1}V$ (m×n*, two triangular solves). Memory O(n*² + n*m).
    ///
    /// # Errors
    /// As [`Self::predict`]; [`crate::Error::InvalidParameter`] above
    /// [`MAX_JOINT_POINTS`](crate::predictive::MAX_JOINT_POINTS); [`crate::Error::Allocation`] if
    /// Σ_f cannot be allocated.
    pub fn predict_covariance<X: Inputs + ?Sized>(&self, x: &X) -> Result<JointPredictive> {
        let x = &*x.to_matrix()?;
        check_joint_size(x.nrows())?;
        let pred = self.predict(x)?;
        let xs = self.record.columns.select(x)?;
        let cov = self.posterior().latent_covariance(&xs)?;
        JointPredictive::assemble(pred, cov, self.noise_variance)
    }

    /// `draws` joint samples of f* at `x` (n*×D) from [`Self::predict_covariance`], seeded
    /// ([`JointPredictive::sample`]).
    ///
    /// # Errors
    /// As [`Self::predict_covariance`] and [`JointPredictive::sample`].
    pub fn sample_joint<X: Inputs + ?Sized>(
        &self,
        x: &X,
        draws: usize,
        seed: u64,
    ) -> Result<JointSamples> {
        let x = &*x.to_matrix()?;
        self.predict_covariance(x)?.sample(draws, seed)
    }

    /// The predictive at `x` (n*×D) with ∂μ*/∂x* and ∂σ²*/∂x* (n*×D each), through the
    /// kernel's slopes as FITC's (the same posterior form, with A = I + VVᵀ/σn²): O(m² + mD)
    /// per point. Matérn ½ at an inducing input gives the central-difference limit.
    ///
    /// # Errors
    /// As [`Self::predict`]; [`crate::error::Error::Numerical`] for a non-finite gradient.
    pub fn predict_gradients<X: Inputs + ?Sized>(&self, x: &X) -> Result<PredictiveGradients> {
        let x = &*x.to_matrix()?;
        self.posterior().gradients(
            x,
            &self.record.columns,
            PREDICT_BLOCK,
            (self.record.y_mean, self.noise_variance),
        )
    }

    /// `vfe`.
    pub fn name(&self) -> &'static str {
        "vfe"
    }

    /// The inducing inputs X̄, m×D (one per row); NaN in the ignored (constant) input columns,
    /// which the kernel does not see.
    pub fn inducing_inputs(&self) -> DMatrix<f64> {
        let mut raw = self.inducing.clone();
        for (d, mut col) in raw.column_iter_mut().enumerate() {
            col.add_scalar_mut(self.centre[d]);
        }
        self.record.columns.expand_columns(&raw, f64::NAN)
    }

    /// The lengthscales ℓ (D); infinite for the ignored (constant) input columns.
    pub fn lengthscales(&self) -> DVector<f64> {
        self.record
            .columns
            .expand(&self.lengthscales, f64::INFINITY)
    }

    /// The input columns the model uses (the others were constant on the training data).
    pub fn input_columns(&self) -> &InputColumns {
        &self.record.columns
    }

    /// The lower bound σn² was trained under.
    pub fn noise_floor(&self) -> f64 {
        self.record.noise_floor
    }

    /// The number of inducing inputs m.
    pub fn num_inducing_inputs(&self) -> usize {
        self.inducing.nrows()
    }

    /// Input dimension D (used and ignored columns).
    pub fn dim(&self) -> usize {
        self.record.columns.dim()
    }

    /// The covariance family.
    pub fn kernel(&self) -> Kernel {
        self.kernel
    }

    /// The jitter δ added to the diagonal of $K_{uu}$ when the model was conditioned (see
    /// [`crate::linalg::Jitter`]).
    pub fn jitter(&self) -> f64 {
        self.jitter
    }

    /// The signal variance σ0².
    pub fn signal_variance(&self) -> f64 {
        self.signal_variance
    }

    /// The noise variance σn².
    pub fn noise_variance(&self) -> f64 {
        self.noise_variance
    }

    /// −F, the **negated bound** at the fitted θ: not −log p(y|θ) but an upper bound on it
    /// (F ≤ log p(y|θ)), for the centred training targets. The name is the interface's
    /// ([`crate::FittedRegressor::neg_log_evidence`]); [`Self::bound`] is F itself.
    pub fn neg_log_evidence(&self) -> f64 {
        self.record.neg_log_evidence
    }

    /// F = log N(y | 0, Q_ff + σn²I) − tr(K_ff − Q_ff)/(2σn²), the collapsed bound on
    /// log p(y|θ) at the fitted θ.
    pub fn bound(&self) -> f64 {
        -self.record.neg_log_evidence
    }

    /// tr(K_ff − Q_ff) ≥ 0 (up to round-off) at the fitted θ: the prior variance of f at the
    /// training inputs that the inducing inputs leave unexplained, a quality diagnostic — 0 when
    /// X̄ covers the data, nσ0² when it explains nothing; small against nσn² when m suffices
    /// (Burt, Rasmussen & van der Wilk 2019).
    pub fn trace(&self) -> f64 {
        self.trace
    }

    /// The trace term tr(K_ff − Q_ff)/(2σn²) that F subtracts from log N(y | 0, Q_ff + σn²I).
    pub fn trace_term(&self) -> f64 {
        self.trace / (2.0 * self.noise_variance)
    }

    /// How training went; its `neg_log_evidence` values are −F (bounds), as
    /// [`Self::neg_log_evidence`].
    pub fn training(&self) -> &TrainingSummary {
        &self.record.training
    }

    /// The full parameter vector θ = `[log ℓ, log σ0, p_noise, vec(X̄ − 1cᵀ)]` (layout in
    /// [`crate::hyperparameters`]; the inducing inputs relative to the training inputs' column
    /// means c) for the used input columns, inducing inputs included even when they were fixed
    /// during training.
    pub fn parameters(&self) -> &DVector<f64> {
        &self.record.theta
    }
}

fitted_regressor!(FittedVfe, model => model, saved Vfe);
