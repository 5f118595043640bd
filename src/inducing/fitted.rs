//! A fitted inducing-point model (FITC's or VFE's): what both hold, their predictions from it,
//! and the public methods both models write the same way ([`fitted_methods`]).

use super::centred_rows;
use crate::error::Result;
use crate::hyperparameters::Hyperparameters;
use crate::kernel::{self, Covariance, Kernel};
use crate::linalg;
use crate::linalg::Par;
use crate::model::FitRecord;
use crate::prediction_loop::{
    gradients_in_chunks, mean_in_chunks, predict_in_chunks, Chunk, ChunkGradients,
};
use crate::predictive::{check_joint_size, JointPredictive, Predictive, PredictiveGradients};
use nalgebra::{DMatrix, DVector};

/// Test points per block in the predictions (bounds the working memory to O(m·block)).
pub(crate) const PREDICT_BLOCK: usize = 4096;

/// An inducing-point model conditioned on its training data at fixed parameters, the posterior
/// both models predict with: $L_u$ ($K_{uu} = L_uL_u^⊤$, jitter included), $L_A$
/// ($A = I + VΛ^{-1}V^⊤ = L_AL_A^⊤$, $V = L_u^{-1}K_{uf}$) and the weights
/// $β = L_u^{-⊤}L_A^{-⊤}L_A^{-1}VΛ^{-1}y$ (m), so that at a test input x* with
/// $k_* = k(X̄, x_*)$ (m)
/// $$μ_* - \bar y = k_*^⊤β, \qquad
///   σ^2_{f*} = σ_0^2 - \|L_u^{-1}k_*\|^2 + \|L_A^{-1}L_u^{-1}k_*\|^2,$$
/// i.e. $k_{**} - Q_{**} + k_{*u}(K_{uu} + K_{uf}Λ^{-1}K_{fu})^{-1}k_{u*}$ (for VFE, Λ = σn²I,
/// Titsias' optimal q(u) with the exact conditional p(f*|u)).
#[derive(Debug, Clone)]
pub(crate) struct Fitted {
    /// The covariance family.
    pub(crate) kernel: Kernel,
    /// ℓ, σ0², σn².
    pub(crate) hyper: Hyperparameters,
    /// X̄ − 1cᵀ, the inducing inputs relative to the training inputs' column means c.
    pub(crate) inducing: DMatrix<f64>,
    /// c (D).
    pub(crate) centre: DVector<f64>,
    /// The jitter δ on $K_{uu}$'s diagonal.
    pub(crate) jitter: f64,
    pub(crate) l_u: DMatrix<f64>,
    pub(crate) l_a: DMatrix<f64>,
    /// β (m).
    pub(crate) weights: DVector<f64>,
    /// θ (full layout), ȳ, the objective at θ (−log p(y|θ) for FITC, −F for VFE), the training
    /// summary, the noise floor, the thread count and the used input columns.
    pub(crate) record: FitRecord,
}

impl Fitted {
    /// The covariance at the fitted θ.
    pub(crate) fn covariance(&self) -> Covariance<'_> {
        Covariance {
            kernel: self.kernel,
            lengthscales: &self.hyper.lengthscales,
            signal_variance: self.hyper.signal_variance,
        }
    }

    /// The thread setting of the predictions.
    fn par(&self) -> Par {
        linalg::par(self.record.threads)
    }

    /// Predictive means and variances at test inputs `x` (n*×D), O(m² + mD) per point.
    ///
    /// # Errors
    /// As [`predict_in_chunks`].
    pub(crate) fn predict(&self, x: &DMatrix<f64>) -> Result<Predictive> {
        let variances = (self.hyper.signal_variance, self.hyper.noise_variance);
        predict_in_chunks(x, &self.record, PREDICT_BLOCK, variances, self.chunk())
    }

    /// The predictive means alone, ȳ + k_*ᵀβ at `x` (n*×D): [`Self::predict`]'s means bit for
    /// bit, without either triangular solve (O(mD) per point).
    ///
    /// # Errors
    /// As [`mean_in_chunks`].
    pub(crate) fn predict_mean(&self, x: &DMatrix<f64>) -> Result<DVector<f64>> {
        mean_in_chunks(x, &self.record, PREDICT_BLOCK, self.chunk())
    }

    /// The work of one block of test rows for [`predict_in_chunks`]: K_u* (m×len), the means
    /// K_u*ᵀβ and, when wanted, the latent variances σ0² − ‖L_u⁻¹k_*‖² + ‖L_A⁻¹L_u⁻¹k_*‖².
    fn chunk(&self) -> impl Chunk + '_ {
        let p = self.par();
        let cov = self.covariance();
        move |x: &DMatrix<f64>,
              start: usize,
              len: usize,
              mean: &mut [f64],
              latent: Option<&mut [f64]>| {
            let xs = centred_rows(&x.rows(start, len).into_owned(), &self.centre);
            // Centred on the inducing inputs, so a far test point leaves the others exact.
            let mut v = cov.cross(&xs, &self.inducing, p).transpose();
            mean.copy_from_slice(v.tr_mul(&self.weights).as_slice());
            if let Some(latent) = latent {
                linalg::solve_lower(linalg::view(&self.l_u), linalg::view_mut(&mut v), p);
                let q: Vec<f64> = v.column_iter().map(|c| c.norm_squared()).collect();
                linalg::solve_lower(linalg::view(&self.l_a), linalg::view_mut(&mut v), p);
                for (i, col) in v.column_iter().enumerate() {
                    latent[i] = self.hyper.signal_variance - q[i] + col.norm_squared();
                }
            }
            Ok(())
        }
    }

    /// The predictive at `x` (n*×D) with its gradients with respect to the test inputs:
    /// μ = k_*ᵀβ + ȳ, ∂μ/∂x* = Σ_u β_u ∂k_u/∂x*, and 𝕍f* = σ0² − ‖L_u⁻¹k_*‖² + ‖L_A⁻¹L_u⁻¹k_*‖²
    /// with ∂𝕍f*/∂x* = −2 Σ_u (L_u⁻ᵀ(v − L_A⁻ᵀw))_u ∂k_u/∂x* (v = L_u⁻¹k_*, w = L_A⁻¹v), through
    /// the kernel's slopes; σn² is added to the variances. O(m² + mD) per point.
    ///
    /// # Errors
    /// As [`gradients_in_chunks`].
    pub(crate) fn predict_gradients(&self, x: &DMatrix<f64>) -> Result<PredictiveGradients> {
        let p = self.par();
        let centre = kernel::column_medians(&self.inducing);
        let ell = &self.hyper.lengthscales;
        let zu = kernel::shift_and_scale(&self.inducing, &centre, ell);
        let m = self.inducing.nrows();
        let s0 = self.hyper.signal_variance;
        let cov = self.covariance();
        gradients_in_chunks(
            x,
            &self.record.columns,
            PREDICT_BLOCK,
            (self.record.y_mean, s0, self.hyper.noise_variance),
            |x: &DMatrix<f64>, start: usize, len: usize, out: ChunkGradients<'_>| {
                let xs = centred_rows(&x.rows(start, len).into_owned(), &self.centre);
                let zt = kernel::shift_and_scale(&xs, &centre, ell);
                let (mut v, slopes) = cov.cross_and_slopes_scaled(&zu, &zt, p);
                out.mean.copy_from_slice(v.tr_mul(&self.weights).as_slice());
                let beta = DMatrix::from_fn(m, len, |u, _| self.weights[u]);
                cov.add_input_gradient((&zu, &zt), &slopes, &beta, 1.0, out.d_mean);
                linalg::solve_lower(linalg::view(&self.l_u), linalg::view_mut(&mut v), p);
                let mut w = v.clone();
                linalg::solve_lower(linalg::view(&self.l_a), linalg::view_mut(&mut w), p);
                for (j, latent) in out.latent.iter_mut().enumerate() {
                    *latent = s0 - v.column(j).norm_squared() + w.column(j).norm_squared();
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
    /// [`MAX_JOINT_POINTS`](crate::predictive::MAX_JOINT_POINTS)): the predictive at `x` with
    /// the latent joint covariance $K_{**} - V^⊤V + W^⊤W$, $V = L_u^{-1}K_{u*}$, $W = L_A^{-1}V$.
    ///
    /// # Errors
    /// As [`Self::predict`]; [`crate::Error::InvalidParameter`] above
    /// [`MAX_JOINT_POINTS`](crate::predictive::MAX_JOINT_POINTS); [`crate::Error::Allocation`] if
    /// Σ_f cannot be allocated.
    pub(crate) fn predict_covariance(&self, x: &DMatrix<f64>) -> Result<JointPredictive> {
        check_joint_size(x.nrows())?;
        let pred = self.predict(x)?;
        let xs = self.record.columns.select(x)?;
        let cov = self.latent_covariance(&xs)?;
        JointPredictive::assemble(pred, cov, self.hyper.noise_variance)
    }

    /// The lower triangle of the latent joint covariance at test inputs `xs` (n*×D, the used
    /// columns, not yet centred): $K_{**} - V^⊤V + W^⊤W$, $V = L_u^{-1}K_{u*}$, $W = L_A^{-1}V$.
    ///
    /// # Errors
    /// [`crate::Error::Allocation`] if the n*×n* matrix or the n*×m cross-covariances cannot be
    /// allocated.
    fn latent_covariance(&self, xs: &DMatrix<f64>) -> Result<DMatrix<f64>> {
        let p = self.par();
        let n = xs.nrows();
        let xs = centred_rows(xs, &self.centre);
        let kernel = self.covariance();
        let mut cov = linalg::try_zeros(n, n, "joint predictive covariance")?;
        linalg::check_allocation(
            n.saturating_mul(self.inducing.nrows())
                .saturating_mul(2)
                .saturating_mul(8),
            "the joint predictive's cross-covariances (n*×m)",
        )?;
        // K** on the test points centred on their own medians (as the full GP's).
        let own =
            kernel::shift_and_scale(&xs, &kernel::column_medians(&xs), &self.hyper.lengthscales);
        kernel.lower_scaled(&own, &mut cov, p);
        let mut v = kernel.cross(&xs, &self.inducing, p).transpose();
        for (factor, sign) in [(&self.l_u, -1.0), (&self.l_a, 1.0)] {
            linalg::solve_lower(linalg::view(factor), linalg::view_mut(&mut v), p);
            linalg::gemm(
                linalg::view_mut(&mut cov),
                true,
                linalg::view(&v).transpose(),
                linalg::view(&v),
                sign,
                p,
            );
        }
        Ok(cov)
    }

    /// The inducing inputs X̄, m×D (one per row); NaN in the ignored (constant) input columns.
    pub(crate) fn inducing_inputs(&self) -> DMatrix<f64> {
        let mut raw = self.inducing.clone();
        for (d, mut col) in raw.column_iter_mut().enumerate() {
            col.add_scalar_mut(self.centre[d]);
        }
        self.record.columns.expand_columns(&raw, f64::NAN)
    }
}

/// The public methods of a fitted FITC or VFE model `$fitted` (its field `fit` holds the
/// [`Fitted`] core) that the two write alike, and its [`crate::FittedRegressor`] impl (saved as
/// `ModelRepr::$kind`): `$name` is the model's short name, `$what` what it calls its inducing
/// inputs (in the docs), `$inputs` and `$count` the names of their accessor and count; the docs
/// of the four methods whose docs are the model's own come after their names.
macro_rules! fitted_methods {
    (
        $fitted:ident, $kind:ident, $name:literal, $what:literal, $inputs:ident, $count:ident;
        predict_gradients: $(#[$gradients:meta])*
        predict_covariance: $(#[$covariance:meta])*
        neg_log_evidence: $(#[$evidence:meta])*
        training: $(#[$training:meta])*
    ) => {
        $crate::inducing::fitted_methods! {
            @at_inputs $fitted;
            /// Predictive means and variances at test inputs `x` (n*×D), O(m² + mD) per point.
            ///
            /// # Errors
            /// [`crate::Error::EmptyData`] for no rows, [`crate::Error::DimensionMismatch`] if
            /// `x` has not D columns, [`crate::Error::NonFinite`] for a NaN or infinity in `x`;
            /// [`crate::Error::Numerical`] for a mean or variance that is not finite;
            /// [`crate::Error::Allocation`] if the n* means and variances cannot be allocated.
            predict -> $crate::predictive::Predictive;
            /// The predictive means alone, ȳ + k_*ᵀβ at `x` (n*×D): [`Self::predict`]'s means
            /// bit for bit, without either triangular solve (O(mD) per point).
            ///
            /// # Errors
            /// As [`Self::predict`].
            predict_mean -> nalgebra::DVector<f64>;
            $(#[$gradients])*
            predict_gradients -> $crate::predictive::PredictiveGradients;
            $(#[$covariance])*
            predict_covariance -> $crate::predictive::JointPredictive;
        }

        impl $fitted {
            #[doc = concat!("`", $name, "`.")]
            pub fn name(&self) -> &'static str {
                $name
            }

            #[doc = concat!("The ", $what, " X̄, m×D (one per row); NaN in the ignored (constant) ")]
            /// input columns, which the kernel does not see.
            pub fn $inputs(&self) -> nalgebra::DMatrix<f64> {
                self.fit.inducing_inputs()
            }

            /// The lengthscales ℓ (D); infinite for the ignored (constant) input columns.
            pub fn lengthscales(&self) -> nalgebra::DVector<f64> {
                let fit = &self.fit;
                fit.record.columns.expand(&fit.hyper.lengthscales, f64::INFINITY)
            }

            /// The input columns the model uses (the others were constant on the training data).
            pub fn input_columns(&self) -> &$crate::data::InputColumns {
                &self.fit.record.columns
            }

            /// The lower bound σn² was trained under.
            pub fn noise_floor(&self) -> f64 {
                self.fit.record.noise_floor
            }

            #[doc = concat!("The number of ", $what, " m.")]
            pub fn $count(&self) -> usize {
                self.fit.inducing.nrows()
            }

            /// Input dimension D (used and ignored columns).
            pub fn dim(&self) -> usize {
                self.fit.record.columns.dim()
            }

            /// The covariance family.
            pub fn kernel(&self) -> $crate::kernel::Kernel {
                self.fit.kernel
            }

            /// The jitter δ added to the diagonal of $K_{uu}$ when the model was conditioned (see
            /// [`crate::linalg::Jitter`]).
            pub fn jitter(&self) -> f64 {
                self.fit.jitter
            }

            /// The signal variance σ0².
            pub fn signal_variance(&self) -> f64 {
                self.fit.hyper.signal_variance
            }

            /// The noise variance σn².
            pub fn noise_variance(&self) -> f64 {
                self.fit.hyper.noise_variance
            }

            $(#[$evidence])*
            pub fn neg_log_evidence(&self) -> f64 {
                self.fit.record.neg_log_evidence
            }

            $(#[$training])*
            pub fn training(&self) -> &$crate::termination::TrainingSummary {
                &self.fit.record.training
            }

            /// The full parameter vector θ = `[log ℓ, log σ0, p_noise, vec(X̄ − 1cᵀ)]` (layout in
            #[doc = concat!("[`crate::hyperparameters`]; the ", $what, " relative to the training")]
            /// inputs' column means c) for the used input columns,
            #[doc = concat!($what, " included even when they were fixed during training.")]
            pub fn parameters(&self) -> &nalgebra::DVector<f64> {
                &self.fit.record.theta
            }
        }

        $crate::model::fitted_regressor!($fitted, model => model, saved $kind);
    };
    // The predictions at test inputs: each converts them to a matrix for the core's own.
    (@at_inputs $fitted:ident; $($(#[$doc:meta])* $method:ident -> $output:ty;)*) => {
        impl $fitted {
            $(
                $(#[$doc])*
                pub fn $method<X: $crate::data::Inputs + ?Sized>(
                    &self,
                    x: &X,
                ) -> $crate::error::Result<$output> {
                    self.fit.$method(&*x.to_matrix()?)
                }
            )*
        }
    };
}

pub(crate) use fitted_methods;
