//! A FITC model conditioned on its training data at fixed parameters, and its predictions.

use super::evidence::{centred_rows, Factors};
use crate::data::InputColumns;
use crate::data::Inputs;
use crate::error::Result;
use crate::kernel::{self, Covariance, Kernel};
use crate::linalg::{self, par};
use crate::model::fitted_regressor;
use crate::model::FitRecord;
use crate::prediction_loop::{
    gradients_in_chunks, mean_in_chunks, predict_in_chunks, Chunk, ChunkGradients,
};
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
    let p = par(threads);
    let mut weights = DMatrix::from_column_slice(f.by.len(), 1, f.by.as_slice());
    linalg::solve_lower_transpose(linalg::view(&f.l_a), linalg::view_mut(&mut weights), p);
    linalg::solve_lower_transpose(linalg::view(&f.l_u), linalg::view_mut(&mut weights), p);
    weights.column(0).into_owned()
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

    fn covariance(&self) -> Covariance<'_> {
        Covariance {
            kernel: self.kernel,
            lengthscales: &self.lengthscales,
            signal_variance: self.signal_variance,
        }
    }

    /// The work of one block of test rows for [`predict_in_chunks`]: K_u* (m×len), the means
    /// K_u*ᵀβ and, when wanted, the latent variances σ0² − ‖L_u⁻¹k_*‖² + ‖L_A⁻¹L_u⁻¹k_*‖².
    fn chunk(&self) -> impl Chunk + '_ {
        let p = par(self.record.threads);
        move |x: &DMatrix<f64>,
              start: usize,
              len: usize,
              mean: &mut [f64],
              latent: Option<&mut [f64]>| {
            let xs = centred_rows(&x.rows(start, len).into_owned(), &self.centre);
            // Centred on the pseudo-inputs, so a far test point leaves the others exact.
            let mut v = self.covariance().cross(&xs, &self.pseudo, p).transpose();
            mean.copy_from_slice(v.tr_mul(&self.weights).as_slice());
            if let Some(latent) = latent {
                linalg::solve_lower(linalg::view(&self.l_u), linalg::view_mut(&mut v), p);
                let q: Vec<f64> = v.column_iter().map(|c| c.norm_squared()).collect();
                linalg::solve_lower(linalg::view(&self.l_a), linalg::view_mut(&mut v), p);
                for (i, col) in v.column_iter().enumerate() {
                    latent[i] = self.signal_variance - q[i] + col.norm_squared();
                }
            }
            Ok(())
        }
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
        let p = par(self.record.threads);
        let centre = kernel::column_medians(&self.pseudo);
        let zu = kernel::shift_and_scale(&self.pseudo, &centre, &self.lengthscales);
        let m = self.pseudo.nrows();
        gradients_in_chunks(
            x,
            &self.record.columns,
            PREDICT_BLOCK,
            (
                self.record.y_mean,
                self.signal_variance,
                self.noise_variance,
            ),
            |x: &DMatrix<f64>, start: usize, len: usize, out: ChunkGradients<'_>| {
                let xs = centred_rows(&x.rows(start, len).into_owned(), &self.centre);
                let zt = kernel::shift_and_scale(&xs, &centre, &self.lengthscales);
                let cov = self.covariance();
                let (mut v, slopes) = cov.cross_and_slopes_scaled(&zu, &zt, p);
                out.mean.copy_from_slice(v.tr_mul(&self.weights).as_slice());
                let beta = DMatrix::from_fn(m, len, |u, _| self.weights[u]);
                cov.add_input_gradient((&zu, &zt), &slopes, &beta, 1.0, out.d_mean);
                linalg::solve_lower(linalg::view(&self.l_u), linalg::view_mut(&mut v), p);
                let mut w = v.clone();
                linalg::solve_lower(linalg::view(&self.l_a), linalg::view_mut(&mut w), p);
                for (j, latent) in out.latent.iter_mut().enumerate() {
                    *latent = self.signal_variance - v.column(j).norm_squared()
                        + w.column(j).norm_squared();
                }
                linalg::solve_lower_transpose(linalg::view(&self.l_a), linalg::view_mut(&mut w), p);
                v -= &w;
                linalg::solve_lower_transpose(linalg::view(&self.l_u), linalg::view_mut(&mut v), p);
                cov.add_input_gradient((&zu, &zt), &slopes, &v, -2.0, out.d_variance);
                Ok(())
            },
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
        let n = pred.len();
        let p = par(self.record.threads);
        let xs = self.record.columns.select(x)?;
        let xs = centred_rows(&xs, &self.centre);
        let mut cov = linalg::try_zeros(n, n, "joint predictive covariance")?;
        self.covariance()
            .lower_scaled(&kernel::scale_inputs(&xs, &self.lengthscales), &mut cov, p);
        let mut v = self.covariance().cross(&xs, &self.pseudo, p).transpose();
        linalg::solve_lower(linalg::view(&self.l_u), linalg::view_mut(&mut v), p);
        linalg::add_gram(&mut cov, &v, -1.0, p);
        linalg::solve_lower(linalg::view(&self.l_a), linalg::view_mut(&mut v), p);
        linalg::add_gram(&mut cov, &v, 1.0, p);
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
