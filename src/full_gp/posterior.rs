//! A full GP conditioned on its training data (paper eq. 2), and its predictions.

use crate::data::Inputs;
use crate::data::{Dataset, InputColumns};
use crate::error::Result;
use crate::hyperparameters::Hyperparameters;
use crate::kernel::{self, Covariance, Kernel};
use crate::linalg::Par;
use crate::linalg::{self, Jitter};
use crate::model::fitted_regressor;
use crate::model::FitRecord;
use crate::prediction_loop::{
    gradients_in_chunks, mean_in_chunks, predict_in_chunks, Chunk, ChunkGradients,
};
use crate::predictive::{check_joint_size, JointPredictive, Predictive, PredictiveGradients};
use crate::termination::TrainingSummary;
use nalgebra::{DMatrix, DVector};
use std::sync::Arc;

/// Test points per prediction batch are chosen so that the n×batch cross-covariance holds about
/// this many entries (128 MB).
const PREDICT_BATCH_ENTRIES: usize = 1 << 24;

/// A full GP conditioned on its training data (n points, D inputs).
///
/// Holds the Cholesky factor L of K + σn² I (8·n² bytes, shared between clones), α = (K + σn² I)⁻¹(y − ȳ),
/// the scaled training inputs, and the training data and settings it was conditioned with (what
/// is saved: loading conditions again, with the same code, and gets the same factor).
#[derive(Debug, Clone)]
pub struct FittedFullGp {
    /// The training data on the used input columns (n×D_used inputs, n targets).
    pub(crate) data: Arc<Dataset>,
    /// Training inputs, centred and divided by ℓ (n×D).
    pub(crate) z: DMatrix<f64>,
    /// Column means of the training inputs (D).
    pub(crate) input_means: DVector<f64>,
    pub(crate) alpha: DVector<f64>,
    /// L (n×n, lower).
    pub(crate) factor: Arc<DMatrix<f64>>,
    pub(crate) hyperparameters: Hyperparameters,
    pub(crate) jitter: f64,
    /// The covariance family.
    pub(crate) kernel: Kernel,
    /// The jitter policy of the factorisation.
    pub(crate) jitter_policy: Jitter,
    /// θ, ȳ, −log p(y|θ), the training summary, the noise floor, the thread count and the
    /// used input columns.
    pub(crate) record: FitRecord,
    /// How the samples [`FittedFullGp::update`] added were predicted before the call that added
    /// them ([`FittedFullGp::prequential`]).
    pub(crate) prequential: crate::termination::Prequential,
    /// The rows of the fit and of each [`FittedFullGp::update`] after it, in order (empty before
    /// any update): a saved model replays them on load, to the same factor bit for bit.
    pub(crate) blocks: Vec<usize>,
}

impl FittedFullGp {
    /// The exact leave-one-out diagnostic (R&W §5.4.2, eq. 5.12): [K⁻¹]ᵢᵢ = ‖(L⁻¹)·ᵢ‖², the
    /// squared column norms of the inverse of the n×n factor (an extra n³/3 flops and 8n² bytes),
    /// the residual αᵢ/[K⁻¹]ᵢᵢ and the variance 1/[K⁻¹]ᵢᵢ; `None` if the inverse cannot be
    /// allocated (the fit itself stands).
    pub(crate) fn loo_diagnostic(&self) -> Option<crate::termination::LooDiagnostic> {
        let n = self.alpha.len();
        let bytes = n.checked_mul(n)?.checked_mul(8)?;
        linalg::check_allocation(bytes, "the inverse factor of the LOO diagnostic").ok()?;
        let inverse = linalg::invert_lower(&self.factor, self.par());
        let (mut residuals, mut variances) = (Vec::with_capacity(n), Vec::with_capacity(n));
        for (i, col) in inverse.column_iter().enumerate() {
            let k_inv = col.norm_squared();
            residuals.push(self.alpha[i] / k_inv);
            variances.push(1.0 / k_inv);
        }
        let y_mean = self.record.y_mean;
        let centred: Vec<f64> = self.data.y().iter().map(|y| y - y_mean).collect();
        crate::termination::LooDiagnostic::from_residuals(&residuals, &variances, &centred)
    }

    /// Predictive distribution at test inputs `x` (n*×D), paper eq. 2:
    /// μ_* = k_*ᵀ α + ȳ and latent variance σ0² − ‖L⁻¹ k_*‖² (σn² added in
    /// [`Predictive::y_variance`]), with k_* the covariances between x_* and the training inputs.
    /// Test points are processed in batches through one gemm and one blocked triangular solve each
    /// (n² flops per test point), as many per batch as keep the n×batch cross-covariance at about
    /// 2²⁴ entries (128 MB); [`Self::predict_in_batches`] sets the batch.
    ///
    /// # Errors
    /// [`crate::error::Error::EmptyData`] for no rows, [`crate::error::Error::DimensionMismatch`] if `x` has
    /// not D columns, [`crate::error::Error::NonFinite`] for a NaN or infinity, [`crate::error::Error::Numerical`]
    /// for a non-finite mean or variance (inputs beyond what f64 can resolve).
    pub fn predict<X: Inputs + ?Sized>(&self, x: &X) -> Result<Predictive> {
        let x = &*x.to_matrix()?;
        self.predict_in_batches(x, self.batch())
    }

    /// [`Self::predict`] with `batch` test points per batch (memory 8·n·`batch` bytes); the
    /// result does not depend on it beyond round-off (a batch of one row runs its distances and
    /// its triangular solve by other kernels than a batch of several: the last bits may
    /// differ).
    ///
    /// # Errors
    /// As [`Self::predict`]; [`crate::error::Error::InvalidParameter`] for `batch` = 0;
    /// [`crate::error::Error::Allocation`] before any work if a batch's n×`batch`
    /// cross-covariances (at most n×n*) cannot be allocated.
    pub fn predict_in_batches<X: Inputs + ?Sized>(
        &self,
        x: &X,
        batch: usize,
    ) -> Result<Predictive> {
        let x = &*x.to_matrix()?;
        if batch == 0 {
            return Err(crate::error::Error::InvalidParameter {
                name: "batch",
                reason: "a batch needs at least one test point".into(),
            });
        }
        linalg::check_allocation(
            self.z
                .nrows()
                .saturating_mul(batch.min(x.nrows()))
                .saturating_mul(8),
            "a batch of cross-covariances (n×batch); use a smaller batch",
        )?;
        let h = &self.hyperparameters;
        predict_in_chunks(
            x,
            &self.record,
            batch,
            (h.signal_variance, h.noise_variance),
            self.chunk(),
        )
    }

    /// The predictive means alone, k_*ᵀα + ȳ at `x` (n*×D): [`Self::predict`]'s means bit for
    /// bit (the same batches), without the n×n* triangular solve (2n flops per point instead of
    /// n²).
    ///
    /// # Errors
    /// As [`Self::predict`].
    pub fn predict_mean<X: Inputs + ?Sized>(&self, x: &X) -> Result<DVector<f64>> {
        let x = &*x.to_matrix()?;
        mean_in_chunks(x, &self.record, self.batch(), self.chunk())
    }

    /// The default batch of [`Self::predict`]: about 2²⁴ entries of the n×batch cross-covariance.
    fn batch(&self) -> usize {
        (PREDICT_BATCH_ENTRIES / self.z.nrows()).max(1)
    }

    /// The thread setting of the record's thread count.
    pub(crate) fn par(&self) -> Par {
        linalg::par(self.record.threads)
    }

    pub(crate) fn covariance(&self) -> Covariance<'_> {
        Covariance {
            kernel: self.kernel,
            lengthscales: &self.hyperparameters.lengthscales,
            signal_variance: self.hyperparameters.signal_variance,
        }
    }

    /// The work of one batch of test rows for [`predict_in_chunks`]: K_f* (n×len), the means
    /// K_f*ᵀα and, when wanted, the latent variances σ0² − ‖L⁻¹k_*‖².
    fn chunk(&self) -> impl Chunk + '_ {
        let h = &self.hyperparameters;
        move |x: &DMatrix<f64>,
              start: usize,
              len: usize,
              mean: &mut [f64],
              latent: Option<&mut [f64]>| {
            let zt = kernel::shift_and_scale(
                &x.rows(start, len).into_owned(),
                &self.input_means,
                &h.lengthscales,
            );
            let mut cross = self.covariance().cross_scaled(&self.z, &zt, self.par());
            linalg::gemm(
                crate::linalg::MatMut::from_column_major_slice_mut(mean, len, 1),
                false,
                linalg::view(&cross).transpose(),
                linalg::vector_view(&self.alpha),
                1.0,
                self.par(),
            );
            if let Some(latent) = latent {
                linalg::solve_lower(
                    linalg::view(&self.factor),
                    linalg::view_mut(&mut cross),
                    self.par(),
                );
                for (j, v) in latent.iter_mut().enumerate() {
                    *v = h.signal_variance - cross.column(j).norm_squared();
                }
            }
            Ok(())
        }
    }

    /// The predictive at `x` (n*×D) with its gradients with respect to the test inputs, through
    /// the kernel's derivative ∂k(x_*, x_i)/∂x_*d = −G_i (x_*d − x_id)/ℓ_d² (G the kernel's slope,
    /// [`crate::kernel`]):
    /// $$∂μ_*/∂x_* = \sum_i α_i\,∂k_i/∂x_*,\qquad
    ///   ∂σ^2_*/∂x_* = -2\sum_i β_i\,∂k_i/∂x_*,\quad β = (K + σ_n^2I)^{-1}k_* = L^{-⊤}L^{-1}k_*,$$
    /// two triangular solves per batch (2n² flops per point) and O(nD) per point for the sums.
    /// Matérn ½ at a training input, where it is not differentiable, gives the limit of the
    /// central difference ([`Covariance::add_input_gradient`]).
    ///
    /// # Errors
    /// As [`Self::predict`].
    pub fn predict_gradients<X: Inputs + ?Sized>(&self, x: &X) -> Result<PredictiveGradients> {
        let x = &*x.to_matrix()?;
        let h = &self.hyperparameters;
        let n = self.z.nrows();
        gradients_in_chunks(
            x,
            &self.record.columns,
            self.batch(),
            (self.record.y_mean, h.signal_variance, h.noise_variance),
            |x: &DMatrix<f64>, start: usize, len: usize, out: ChunkGradients<'_>| {
                let zt = kernel::shift_and_scale(
                    &x.rows(start, len).into_owned(),
                    &self.input_means,
                    &h.lengthscales,
                );
                let cov = self.covariance();
                let (mut cross, slopes) = cov.cross_and_slopes_scaled(&self.z, &zt, self.par());
                let mean = cross.tr_mul(&self.alpha);
                out.mean.copy_from_slice(mean.as_slice());
                let alpha = DMatrix::from_fn(n, len, |i, _| self.alpha[i]);
                cov.add_input_gradient((&self.z, &zt), &slopes, &alpha, 1.0, out.d_mean);
                linalg::solve_lower(
                    linalg::view(&self.factor),
                    linalg::view_mut(&mut cross),
                    self.par(),
                );
                for (j, v) in out.latent.iter_mut().enumerate() {
                    *v = h.signal_variance - cross.column(j).norm_squared();
                }
                linalg::solve_lower_transpose(
                    linalg::view(&self.factor),
                    linalg::view_mut(&mut cross),
                    self.par(),
                );
                cov.add_input_gradient((&self.z, &zt), &slopes, &cross, -2.0, out.d_variance);
                Ok(())
            },
        )
    }

    /// The joint predictive at `x` (n*×D, n* ≤
    /// [`MAX_JOINT_POINTS`](crate::predictive::MAX_JOINT_POINTS)), paper eq. 2 for pairs of
    /// points: Σ_f = K_** − K_*f(K + σn²I)⁻¹K_f* = K_** − VᵀV with V = L⁻¹K_f* (n×n*, one
    /// triangular solve). Memory 8·n·n* bytes for V plus 8·n*² for Σ_f; n²·n* flops.
    ///
    /// # Errors
    /// As [`Self::predict`]; [`crate::error::Error::InvalidParameter`] above
    /// [`MAX_JOINT_POINTS`](crate::predictive::MAX_JOINT_POINTS); [`crate::error::Error::Allocation`] if
    /// Σ_f or the n×n* cross-covariances cannot be allocated.
    pub fn predict_covariance<X: Inputs + ?Sized>(&self, x: &X) -> Result<JointPredictive> {
        let x = &*x.to_matrix()?;
        check_joint_size(x.nrows())?;
        let pred = self.predict(x)?;
        let n = pred.len();
        let h = &self.hyperparameters;
        let xs = self.record.columns.select(x)?;
        let zt = kernel::shift_and_scale(&xs, &self.input_means, &h.lengthscales);
        let mut cov = linalg::try_zeros(n, n, "joint predictive covariance")?;
        linalg::check_allocation(
            self.z.nrows().saturating_mul(n).saturating_mul(8),
            "the joint predictive's cross-covariances (n×n*)",
        )?;
        // K** on the test points centred on their own medians: on the training inputs' centre,
        // test points far from them carry norms whose expanded differences lose every digit.
        let own = kernel::shift_and_scale(&xs, &kernel::column_medians(&xs), &h.lengthscales);
        self.covariance().lower_scaled(&own, &mut cov, self.par());
        let mut v = self.covariance().cross_scaled(&self.z, &zt, self.par());
        linalg::solve_lower(
            linalg::view(&self.factor),
            linalg::view_mut(&mut v),
            self.par(),
        );
        linalg::add_gram(&mut cov, &v, -1.0, self.par());
        JointPredictive::assemble(pred, cov, h.noise_variance)
    }

    crate::model::sample_joint_from_covariance!();

    /// `full`.
    pub fn name(&self) -> &'static str {
        "full"
    }

    /// The covariance family.
    pub fn kernel(&self) -> Kernel {
        self.kernel
    }

    /// The lengthscales ℓ (D); infinite for the ignored (constant) input columns.
    pub fn lengthscales(&self) -> DVector<f64> {
        self.record
            .columns
            .expand(&self.hyperparameters.lengthscales, f64::INFINITY)
    }

    /// The input columns the model uses (the others were constant on the training data).
    pub fn input_columns(&self) -> &InputColumns {
        &self.record.columns
    }

    /// The signal variance σ0².
    pub fn signal_variance(&self) -> f64 {
        self.hyperparameters.signal_variance
    }

    /// The noise variance σn² (the floor included; the [`Self::jitter`] excluded).
    pub fn noise_variance(&self) -> f64 {
        self.hyperparameters.noise_variance
    }

    /// The hyperparameters θ (layout in [`crate::hyperparameters`]) for the used input columns.
    pub fn parameters(&self) -> &DVector<f64> {
        &self.record.theta
    }

    /// The diagonal jitter the final factorisation needed on top of σn² (0 normally).
    pub fn jitter(&self) -> f64 {
        self.jitter
    }

    /// −log p(y|θ) of all the conditioned data (targets centred) at the fitted θ.
    pub fn neg_log_evidence(&self) -> f64 {
        self.record.neg_log_evidence
    }

    /// How training went (on the hyperparameter subset, if one was used).
    pub fn training(&self) -> &TrainingSummary {
        &self.record.training
    }

    /// Number of conditioned training points n.
    pub fn len(&self) -> usize {
        self.z.nrows()
    }

    /// Input dimension D (used and ignored columns).
    pub fn dim(&self) -> usize {
        self.record.columns.dim()
    }

    /// The noise floor σn² was trained under.
    pub fn noise_floor(&self) -> f64 {
        self.record.noise_floor
    }

    /// The data the model is conditioned on, restricted to the used input columns (n×D_used
    /// inputs, n targets).
    pub fn conditioning_data(&self) -> &Dataset {
        &self.data
    }

    /// The jitter policy of the factorisation of K + σn²I ([`Self::jitter`] is what it added).
    pub fn jitter_policy(&self) -> &Jitter {
        &self.jitter_policy
    }

    /// The thread count the model was conditioned and predicts with (0 = all of rayon's).
    pub fn threads(&self) -> usize {
        self.record.threads
    }

    /// Always false: a fitted model has at least one training point.
    pub fn is_empty(&self) -> bool {
        false
    }
}

fitted_regressor!(FittedFullGp, model => model, saved FullGp);
