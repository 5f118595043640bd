//! Online updates of a fitted full GP: new samples extend the Cholesky factor of K + σn²I by
//! rows, O(n²) per sample, at the same θ.

use super::posterior::FittedFullGp;
use crate::data::Dataset;
use crate::error::Result;
use crate::kernel;
use crate::linalg::{self, view, view_mut};
use crate::predictive::round_off_variance;
use nalgebra::{DMatrix, DVector};
use std::sync::Arc;

impl FittedFullGp {
    /// Adds the samples (`x` k×D, `y` k) to the conditioning set without changing θ, by extending
    /// the factor of K + σn²I (+ the fit's jitter) block-wise:
    /// $$L' = \begin{pmatrix} L & 0 \\ B & C \end{pmatrix},\quad B^⊤ = L^{-1}K_{fn},\quad
    ///   CC^⊤ = K_{nn} + (σ_n^2 + δ)I - BB^⊤,$$
    /// n²k + O(nk² + k³) flops, then α = L'⁻ᵀL'⁻¹(y − ȳ) and −log p(y|θ) over all the data
    /// (O((n + k)²)). ȳ and the inputs' centre stay the fit's, so the result is conditioning from
    /// scratch on all the data at θ with that offset. The model keeps the data (it needs it to
    /// predict): memory grows as 8(n + k)² bytes.
    ///
    /// # Errors
    /// [`crate::error::Error::LengthMismatch`], [`crate::error::Error::DimensionMismatch`] or
    /// [`crate::error::Error::NonFinite`] for bad samples; [`crate::error::Error::Scale`] for a
    /// target more than [`LARGEST_TARGET_SPREAD`](crate::data::LARGEST_TARGET_SPREAD) from ȳ;
    /// [`crate::error::Error::Allocation`] if
    /// the larger factor cannot be allocated; [`crate::error::Error::NotPositiveDefinite`] if the
    /// new block cannot be factorised (e.g. a sample repeated with σn² + δ ≈ 0);
    /// [`crate::error::Error::NonFiniteObjective`] if −log p(y|θ) over all the data overflows (a
    /// target too far from ȳ for the model's noise). The model is unchanged on an error.
    ///
    /// The call's samples are first scored by the model before it ([`Self::prequential`]): their
    /// predictive means K_nfᵀα and variances, the diagonal of CCᵀ less δ, come with the update.
    pub fn update(&mut self, x: &DMatrix<f64>, y: &DVector<f64>) -> Result<()> {
        let ym = DMatrix::from_column_slice(y.len(), 1, y.as_slice());
        let offsets = [self.record.y_mean];
        let xu = crate::data::check_new_samples(&self.record.columns, x, &ym, &offsets)?;
        if xu.nrows() == 0 {
            return Ok(());
        }
        let (means, variances) = self.extend(&xu, y)?;
        for (i, (&mean, &variance)) in means.iter().zip(&variances).enumerate() {
            self.prequential
                .add(y[i] - self.record.y_mean, mean, variance);
        }
        Ok(())
    }

    /// Extends the factor, the scaled inputs and the data by the samples (used inputs `xu` k×D,
    /// k ≥ 1, and targets `y`, checked) as [`Self::update`] describes, and records the block's
    /// rows (`blocks`), with α and −log p(y|θ) over all the rows at the model's ȳ; returns the
    /// predictive means K_nfᵀα (less ȳ) and variances of the samples under the model before.
    /// Nothing is committed before −log p is known finite. A saved model replays its blocks
    /// through this on load, so the
    /// loaded factor is the updated one bit for bit.
    ///
    /// # Errors
    /// [`crate::error::Error::Allocation`] if the larger factor and the work matrices cannot be
    /// allocated (8 bytes times (n + k)² plus nk plus k² plus 2(n + k)D); as [`Self::update`] for
    /// the new block's factorisation. The model is unchanged on an error.
    pub(crate) fn extend(
        &mut self,
        xu: &DMatrix<f64>,
        y: &DVector<f64>,
    ) -> Result<(DVector<f64>, Vec<f64>)> {
        let (n, k, d) = (self.z.nrows(), xu.nrows(), xu.ncols());
        let total = n.saturating_add(k);
        let bytes = total
            .saturating_mul(total)
            .saturating_add(n.saturating_mul(k))
            .saturating_add(k.saturating_mul(k))
            .saturating_add(total.saturating_mul(d).saturating_mul(2))
            .saturating_mul(8);
        linalg::check_allocation(bytes, "the extended Cholesky factor of K + σn²I")?;
        let h = &self.hyperparameters;
        let zt = kernel::shift_and_scale(xu, &self.input_means, &h.lengthscales);
        let cov = self.covariance();
        // Bᵀ = L⁻¹K_fn (n×k), and the predictive means K_nf α (less ȳ) before the solve.
        let mut bt = cov.cross_scaled(&self.z, &zt, self.par());
        let means = bt.tr_mul(&self.alpha);
        linalg::solve_lower(view(&self.factor), view_mut(&mut bt), self.par());
        // C Cᵀ = K_nn + (σn² + δ)I − BBᵀ.
        let mut c = DMatrix::zeros(k, k);
        cov.lower_scaled(&zt, &mut c, self.par());
        for i in 0..k {
            c[(i, i)] += h.noise_variance + self.jitter;
        }
        linalg::gemm(
            view_mut(&mut c),
            true,
            view(&bt).transpose(),
            view(&bt),
            -1.0,
            self.par(),
        );
        // The predictive variances of the new targets: σ0² − ‖L⁻¹k_i‖² + σn², as `predict`
        // (its latent part checked and its round-off below 0 set to 0, as there).
        let noise = h.noise_variance;
        let variances = (0..k)
            .map(|i| {
                let latent = c[(i, i)] - self.jitter - noise;
                Ok(round_off_variance(latent, h.signal_variance, i)? + noise)
            })
            .collect::<Result<Vec<f64>>>()?;
        linalg::cholesky_in_place_lower(&mut c, "the new block of K + σn²I", self.par())?;
        let mut factor = linalg::try_zeros(total, total, "the n×n Cholesky factor of K + σn²I")?;
        for j in 0..n {
            factor
                .view_mut((j, j), (n - j, 1))
                .copy_from(&self.factor.view((j, j), (n - j, 1)));
            for i in 0..k {
                factor[(n + i, j)] = bt[(j, i)];
            }
        }
        for j in 0..k {
            for i in j..k {
                factor[(n + i, n + j)] = c[(i, j)];
            }
        }
        let mut x_all = self.data.x().clone().insert_rows(n, k, 0.0);
        x_all.rows_mut(n, k).copy_from(xu);
        let y_all = DVector::from_iterator(total, self.data.y().iter().chain(y.iter()).copied());
        let data = Dataset::new(x_all, y_all)?;
        let (alpha, neg_log_evidence) =
            solved_targets(&factor, data.y(), self.record.y_mean, self.par());
        if !neg_log_evidence.is_finite() {
            // A target so far from ȳ that yᵀα overflows: the model as it was, and an error.
            return Err(crate::error::Error::NonFiniteObjective {
                what: format!("the updated full GP's −log p(y|θ) = {neg_log_evidence}"),
            });
        }
        let mut z = self.z.clone().insert_rows(n, k, 0.0);
        z.rows_mut(n, k).copy_from(&zt);
        (self.alpha, self.record.neg_log_evidence) = (alpha, neg_log_evidence);
        self.factor = Arc::new(factor);
        self.z = z;
        self.data = Arc::new(data);
        if self.blocks.is_empty() {
            self.blocks.push(n);
        }
        self.blocks.push(k);
        Ok((means, variances))
    }

    /// How the model predicted the samples [`Self::update`] added, each scored by the model
    /// before the call that added it: count, mean z² (1 for calibrated error bars) and NMSE
    /// against the fit's ȳ, as SSGP's [`crate::FittedSsgp::prequential`]; `None` before any
    /// update. Counted from the fit, and saved with the model.
    ///
    /// # Example
    /// ```
    /// use nalgebra::{DMatrix, DVector};
    /// use ssgp::{Dataset, FullGp};
    /// let x = DMatrix::from_fn(40, 1, |i, _| i as f64 / 8.0);
    /// let y = x.column(0).map(|v| v.sin());
    /// let mut model = FullGp::params().max_evaluations(50).fit(&Dataset::new(x, y)?)?;
    /// let xs = DMatrix::from_fn(10, 1, |i, _| 5.0 + i as f64 / 8.0);
    /// let ys = xs.column(0).map(|v| v.sin());
    /// model.update(&xs, &ys)?;
    /// let online = model.prequential().expect("10 samples were added");
    /// assert_eq!(online.rows, 10);
    /// # Ok::<(), ssgp::Error>(())
    /// ```
    pub fn prequential(&self) -> Option<crate::termination::HeldOutCalibration> {
        self.prequential.calibration()
    }

    /// As SSGP's [`crate::FittedSsgp::online_variance_factor`]: the recent one-step-ahead mean
    /// z² of the stream where it is above 1 (1 before any update); `predict` does not apply it.
    pub fn online_variance_factor(&self) -> f64 {
        self.prequential.variance_factor()
    }

    /// Sets the target offset ȳ to `y_mean` and recomputes α = (K + σn²I)⁻¹(y − ȳ) and
    /// −log p(y|θ) from the factor (O(n²)): when loading a model saved with its own ȳ.
    #[cfg(feature = "serde")]
    pub(crate) fn recentre_targets(&mut self, y_mean: f64) {
        (self.alpha, self.record.neg_log_evidence) =
            solved_targets(&self.factor, self.data.y(), y_mean, self.par());
        self.record.y_mean = y_mean;
    }
}

/// α = (K + σn²I)⁻¹(y − ȳ) from the factor of K + σn²I, and −log p(y|θ) = ½ log|K + σn²I| +
/// ½(y − ȳ)ᵀα + (n/2) log 2π (O(n²)).
fn solved_targets(
    factor: &DMatrix<f64>,
    y: &DVector<f64>,
    y_mean: f64,
    par: linalg::Par,
) -> (DVector<f64>, f64) {
    let y = y.add_scalar(-y_mean);
    let mut alpha = y.clone();
    linalg::cholesky_solve_in_place(factor, linalg::vector_view_mut(&mut alpha), par);
    let neg_log_evidence = 0.5 * linalg::log_det_from_cholesky(factor)
        + 0.5 * y.dot(&alpha)
        + 0.5 * y.len() as f64 * (2.0 * std::f64::consts::PI).ln();
    (alpha, neg_log_evidence)
}
