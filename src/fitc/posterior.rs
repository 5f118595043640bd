//! A FITC model conditioned on its training data at fixed parameters, and its predictions.

use super::evidence::Factors;
use crate::data::InputColumns;
use crate::data::Inputs;
use crate::error::Result;
use crate::inducing::{self, Posterior};
use crate::kernel::{Covariance, Kernel};
use crate::linalg::par;
use crate::model::fitted_regressor;
use crate::model::FitRecord;
use crate::prediction_loop::{mean_in_chunks, predict_in_chunks, Chunk};
use crate::predictive::{
    check_joint_size, JointPredictive, JointSamples, Predictive, PredictiveGradients,
};
use crate::termination::TrainingSummary;
use nalgebra::{DMatrix, DVector};

/// Test points per block in [`FittedFitc::predict`] (bounds the working memory to O(m·block)).
pub(crate) const PREDICT_BLOCK: usize = 4096;

/// A FITC model conditioned on its training data at fixed parameters.
///
/// Caches $L_u$ ($K_{uu} = L_uL_u^⊤$, jitter included), $L_A$ ($A = I + VΛ^{-1}V^⊤ = L_AL_A^⊤$,
/// $V = L_u^{-1}K_{uf}$) and the weights $β = L_u^{-⊤}L_A^{-⊤}L_A^{-1}VΛ^{-1}y$ (m), so that at a
/// test input x* with $k_* = k(X̄, x_*)$ (m):
/// $$μ_* = \bar y + k_*^⊤β, \qquad
///   σ^2_{f*} = σ_0^2 - \|L_u^{-1}k_*\|^2 + \|L_A^{-1}L_u^{-1}k_*\|^2,$$
/// i.e. $k_{**} - Q_{**} + k_{*u}(K_{uu} + K_{uf}Λ^{-1}K_{fu})^{-1}k_{u*}$, and
/// $σ^2_* = σ^2_{f*} + σ_n^2$.
#[derive(Debug, Clone)]
pub struct FittedFitc {
    pub(crate) lengthscales: DVector<f64>,
    pub(crate) signal_variance: f64,
    pub(crate) noise_variance: f64,
    /// X̄ − 1cᵀ, the pseudo-inputs relative to the training inputs' column means c.
    pub(crate) pseudo: DMatrix<f64>,
    /// c (D).
    pub(crate) centre: DVector<f64>,
    /// The covariance family.
    pub(crate) kernel: Kernel,
    /// The jitter δ on $K_{uu}$'s diagonal.
    pub(crate) jitter: f64,
    pub(crate) l_u: DMatrix<f64>,
    pub(crate) l_a: DMatrix<f64>,
    pub(crate) weights: DVector<f64>,
    /// θ, ȳ, −log p(y|θ), the training summary, the noise floor, the thread count and the
    /// used input columns.
    pub(crate) record: FitRecord,
}

/// The prediction weights β = L_u^{-⊤}L_A^{-⊤}(By) (m) from the factors at θ.
pub(crate) fn weights(f: &Factors, threads: usize) -> DVector<f64> {
    inducing::weights(f, par(threads))
}

impl FittedFitc {
    /// Predictive means and variances at test inputs `x` (n*×D), O(m² + mD) per point.
    ///
    /// # Errors
    /// [`crate::error::Error::EmptyData`] for no rows, [`crate::error::Error::DimensionMismatch`] if `x` has
    /// not D columns, [`crate::error::Error::NonFinite`] for a NaN or infinity in `x` or in a
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

    /// The posterior shared with VFE ([`crate::inducing::Posterior`]).
    fn posterior(&self) -> Posterior<'_> {
        Posterior {
            kernel: Covariance {
                kernel: self.kernel,
                lengthscales: &self.lengthscales,
                signal_variance: self.signal_variance,
            },
            pseudo: &self.pseudo,
            centre: &self.centre,
            l_u: &self.l_u,
            l_a: &self.l_a,
            weights: &self.weights,
            par: par(self.record.threads),
        }
    }

    /// The work of one block of test rows for [`predict_in_chunks`]: K_u* (m×len), the means
    /// K_u*ᵀβ and, when wanted, the latent variances σ0² − ‖L_u⁻¹k_*‖² + ‖L_A⁻¹L_u⁻¹k_*‖².
    fn chunk(&self) -> impl Chunk + '_ {
        self.posterior().chunk()
    }

    /// The predictive at `x` (n*×D) with its gradients with respect to the test inputs, through
    /// the kernel's derivative ∂k(x_*, x̄_u)/∂x_* ([`Covariance::add_input_gradient`]): with
    /// V = L_u⁻¹k_*, W = L_A⁻¹V,
    /// $$∂μ_*/∂x_* = \sum_u β_u\,∂k_u/∂x_*,\qquad
    ///   ∂σ^2_*/∂x_* = -2\sum_u c_u\,∂k_u/∂x_*,\quad c = L_u^{-⊤}(V - L_A^{-⊤}W),$$
    /// the derivative of σ0² − ‖V‖² + ‖W‖²: four triangular solves with m×m factors per point
    /// and O(mD) for the sums.
    ///
    /// # Errors
    /// As [`Self::predict`].
    pub fn predict_gradients<X: Inputs + ?Sized>(&self, x: &X) -> Result<PredictiveGradients> {
        let x = &*x.to_matrix()?;
        self.posterior().gradients(
            x,
            &self.record.columns,
            PREDICT_BLOCK,
            (self.record.y_mean, self.noise_variance),
        )
    }

    /// The joint predictive at `x` (n*×D, n* ≤
    /// [`MAX_JOINT_POINTS`](crate::predictive::MAX_JOINT_POINTS)): the posterior of the FITC
    /// prior on the training points with an exact test conditional,
    /// $$Σ_f = K_{**} - Q_{**} + K_{*u}(K_{uu} + K_{uf}Λ^{-1}K_{fu})^{-1}K_{u*}
    ///       = K_{**} - V^⊤V + W^⊤W,$$
    /// $V = L_u^{-1}K_{u*}$, $W = L_A^{-1}V$ (m×n*, two triangular solves),
    /// Λ = diag(K_ff − Q_ff) + σn²I — equivalently $K_{**} - Q_{*f}(Q_{ff} + Λ)^{-1}Q_{f*}$ (Quiñonero-Candela and
    /// Rasmussen 2005, eq. 24; its diagonal is Snelson and Ghahramani's eq. 8 without σn²).
    ///
    /// Memory O(n*² + n*m).
    ///
    /// # Errors
    /// As [`Self::predict`]; [`crate::error::Error::InvalidParameter`] above
    /// [`MAX_JOINT_POINTS`](crate::predictive::MAX_JOINT_POINTS); [`crate::error::Error::Allocation`] if
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

    /// `fitc`.
    pub fn name(&self) -> &'static str {
        "fitc"
    }

    /// The pseudo-inputs X̄, m×D (one per row); NaN in the ignored (constant) input columns,
    /// which the kernel does not see.
    pub fn pseudo_inputs(&self) -> DMatrix<f64> {
        let mut raw = self.pseudo.clone();
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

    /// The number of pseudo-inputs m.
    pub fn num_pseudo_inputs(&self) -> usize {
        self.pseudo.nrows()
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

    /// −log p(y|θ) of the centred training targets at the fitted θ.
    pub fn neg_log_evidence(&self) -> f64 {
        self.record.neg_log_evidence
    }

    /// How training went.
    pub fn training(&self) -> &TrainingSummary {
        &self.record.training
    }

    /// The full parameter vector θ = `[log ℓ, log σ0, p_noise, vec(X̄ − 1cᵀ)]` (layout in
    /// [`crate::hyperparameters`]; the pseudo-inputs relative to the training inputs' column
    /// means c) for the used input columns, pseudo-inputs included even when they were fixed
    /// during training.
    pub fn parameters(&self) -> &DVector<f64> {
        &self.record.theta
    }
}

fitted_regressor!(FittedFitc, model => model, saved Fitc);
