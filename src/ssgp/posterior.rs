//! A trained SSGP: the Gaussian posterior over the 2m weights, its predictions (eq. 7, Appendix
//! A) and posterior function samples (Figure 2a).

use super::features::{self, design_matrix_into};
use super::SsgpHyperparameters;
use crate::data::InputColumns;
use crate::data::Inputs;
use crate::error::Result;
use crate::linalg::{self, view, view_mut};
use crate::linalg::{MatMut, MatRef, Par, SpareFactor};
use crate::model::fitted_regressor;
use crate::model::FitRecord;
use crate::prediction_loop::{
    gradients_in_chunks, mean_in_chunks, predict_in_chunks, Chunk, ChunkGradients, GradientChunk,
    Rows,
};
use crate::predictive::{check_joint_size, JointPredictive, Predictive, PredictiveGradients};
use crate::termination::TrainingSummary;
use nalgebra::{DMatrix, DVector};
use rand::Rng;
use rand_distr::StandardNormal;

/// Test rows per chunk of `predict_gradients` at most: its three len×2m buffers (Φ*, U = Φ*A⁻¹
/// and the chain-rule weights) stay small and are reused chunk after chunk.
pub(crate) const GRADIENT_CHUNK_ROWS: usize = 256;

/// What a chunk of test rows holds, for [`crate::error::Error::Allocation`]: its design matrix
/// and centred inputs have `chunk_rows` rows (all n* rows of a prediction where `chunk_rows` is
/// larger), allocated fallibly.
const CHUNK_BUFFERS: &str =
    "a chunk of test rows' features (chunk_rows × 2m and chunk_rows × D); set a smaller chunk_rows";

/// The trained posterior over the 2m weights: N(α, σn² A⁻¹) with A = LLᵀ.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct WeightPosterior {
    /// Lower Cholesky factor L of A (2m×2m).
    pub l: DMatrix<f64>,
    /// Posterior mean of the weights α = A⁻¹Φᵀy (2m).
    pub alpha: DVector<f64>,
    /// Scaled frequencies Ω = W ⊘ ℓ (m×D).
    pub omega: DMatrix<f64>,
    /// The training inputs' column means (D): the design matrix is built on x − c.
    pub centre: DVector<f64>,
}

/// A trained SSGP: the hyperparameters and the Gaussian posterior over the 2m weights,
/// N(α, σn²A⁻¹), from which predictions (eq. 7) cost O(mD) (mean) and O(m² + mD) (variance) per point.
///
/// With the `serde` feature it can be saved and loaded (`persist`), with bit-identical
/// predictions after loading.
///
/// ```
/// use ssgp::rand::{rngs::StdRng, SeedableRng};
/// use ssgp::{data::sinc_data, Ssgp};
///
/// let mut rng = StdRng::seed_from_u64(0);
/// let train = sinc_data(80, false, 0.05, &mut rng)?;
/// let fitted = Ssgp::params(10).seed(1).initial_draws(10).fit(&train)?;
/// let pred = fitted.predict(&vec![vec![0.5], vec![2.0]])?;   // any rows
/// let f = fitted.sample_posterior(&mut rng);                 // a whole function, anywhere
/// let at_grid = f.evaluate(&ssgp::nalgebra::DMatrix::from_row_slice(2, 1, &[0.5, 2.0]))?;
/// println!("{} spectral points, σn² {:.4}, f(0.5) {:.3} ~ {:.3}", fitted.num_spectral_points(),
///     fitted.noise_variance(), pred.mean[0], at_grid[0]);
/// # Ok::<(), ssgp::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct FittedSsgp {
    pub(crate) hyper: SsgpHyperparameters,
    pub(crate) posterior: WeightPosterior,
    /// The buffer [`FittedSsgp::update`] writes the next factor L into.
    pub(crate) spare: SpareFactor,
    /// The share ρ of the prior term λI in A = D + ρλI (1 but after forgetting; see
    /// [`super::online`]; saved with the online record).
    pub(crate) prior_level: f64,
    /// b = Φᵀ(y − ȳ) (2m×1) once [`FittedSsgp::update`] has run (recovered as Aα before).
    pub(crate) rhs: Option<DMatrix<f64>>,
    /// Samples added by [`FittedSsgp::update`].
    pub(crate) updates: usize,
    /// How those samples were predicted before they were added ([`FittedSsgp::prequential`]).
    pub(crate) prequential: crate::termination::Prequential,
    pub(crate) fixed: bool,
    pub(crate) chunk_rows: usize,
    /// θ, ȳ, −log p(y|θ), the training summary, the noise floor, the thread count and the
    /// used input columns.
    pub(crate) record: FitRecord,
}

impl FittedSsgp {
    /// Predictive distribution at `x` (n*×D), eq. 7 via Appendix A:
    /// 𝔼 y* = φ(x*)ᵀα + ȳ, 𝕍 f* = σn² ‖L⁻¹φ(x*)‖², 𝕍 y* = σn² + 𝕍 f*. Test points are processed
    /// in chunks, so memory is O(chunk·m).
    ///
    /// # Errors
    /// [`crate::error::Error::EmptyData`] for no rows, [`crate::error::Error::DimensionMismatch`] for a wrong
    /// D, [`crate::error::Error::NonFinite`] for a NaN or infinity in `x`;
    /// [`crate::error::Error::Scale`] for a test point so far from the training inputs that f64
    /// cannot resolve the phases of its features ([`features::PHASE_LIMIT`]);
    /// [`crate::error::Error::Numerical`] for a non-finite mean or variance;
    /// [`crate::error::Error::Allocation`] if the n* means and variances cannot be allocated, or
    /// a chunk of test rows' features (min(n*, `chunk_rows`)×2m: see
    /// [`SsgpParams::chunk_rows`](super::SsgpParams::chunk_rows)).
    pub fn predict<X: Inputs + ?Sized>(&self, x: &X) -> Result<Predictive> {
        let x = &*x.to_matrix()?;
        predict_in_chunks(
            x,
            &self.record,
            self.chunk_rows,
            (self.signal_variance(), self.noise_variance()),
            self.chunk(),
        )
    }

    /// The predictive means alone, φ(x*)ᵀα + ȳ at `x` (n*×D): [`Self::predict`]'s means bit for
    /// bit, without the triangular solves (O(mD) per point instead of O(m²)).
    ///
    /// # Errors
    /// As [`Self::predict`].
    pub fn predict_mean<X: Inputs + ?Sized>(&self, x: &X) -> Result<DVector<f64>> {
        let x = &*x.to_matrix()?;
        mean_in_chunks(x, &self.record, self.chunk_rows, self.chunk())
    }

    /// The borrowed posterior the predictions run on.
    pub(crate) fn view(&self) -> OutputView<'_> {
        OutputView {
            l: &self.posterior.l,
            alpha: self.posterior.alpha.as_slice(),
            omega: &self.posterior.omega,
            centre: &self.posterior.centre,
            noise_variance: self.noise_variance(),
            par: linalg::par(self.record.threads),
        }
    }

    fn chunk(&self) -> impl Chunk + '_ {
        self.view().chunk()
    }

    /// The predictive at `x` (n*×D) with its gradients with respect to the test inputs,
    /// differentiating the features φ(x) = [cos Ω(x − c), sin Ω(x − c)] (θ_r = Ω_rᵀ(x − c)):
    /// $$∂μ_*/∂x_* = Ω^⊤g,\quad g_r = α_{m+r}\cos θ_r - α_r \sin θ_r \qquad (O(mD)),$$
    /// $$∂σ^2_*/∂x_* = 2σ_n^2\,Ω^⊤h,\quad h_r = u_{m+r}\cos θ_r - u_r\sin θ_r,\ u = A^{-1}φ(x_*)
    ///   \qquad (O(m^2 + mD)),$$
    /// u by two triangular solves with L (never A⁻¹), σ²_f = σn²‖L⁻¹φ‖². Per chunk of test rows:
    /// Φ* (len×2m), two gemms len×m×D and two triangular solves (twice [`Self::predict`]'s one);
    /// measured at m = 100, D = 6 on one thread about 2× the time of `predict`
    /// (`benches/online.rs`).
    ///
    /// # Errors
    /// As [`Self::predict`]; [`crate::error::Error::Allocation`] before any work if the result
    /// (8·n*·(2D + 3) bytes) cannot be allocated; [`crate::error::Error::Numerical`] for a
    /// non-finite gradient.
    pub fn predict_gradients<X: Inputs + ?Sized>(&self, x: &X) -> Result<PredictiveGradients> {
        let x = &*x.to_matrix()?;
        gradients_in_chunks(
            x,
            &self.record.columns,
            self.chunk_rows.min(GRADIENT_CHUNK_ROWS),
            (
                self.record.y_mean,
                self.signal_variance(),
                self.noise_variance(),
            ),
            self.view().gradient_chunk(),
        )
    }

    /// The posterior covariance of the latent gradient ∂f*/∂x* at each row of `x` (n*×D): one
    /// D×D matrix per test point — the uncertainty of [`Self::predict_gradients`]'s mean
    /// gradient. With J = ∂φ/∂x* (2m×D: J_{r,d} = −Ω_rd sin θ_r, J_{m+r,d} = Ω_rd cos θ_r),
    /// $$\mathrm{Cov}(∂f_*/∂x_*) = σ_n^2 J^⊤A^{-1}J = σ_n^2 V^⊤V,\quad V = L^{-1}J,$$
    /// one triangular solve with D right-hand sides per point, O(m²D). Rows and columns of
    /// ignored inputs are 0.
    ///
    /// # Errors
    /// As [`Self::predict`]; [`crate::error::Error::Allocation`] before any work if the n* D×D
    /// matrices (8·n*·D² bytes) cannot be allocated; [`crate::error::Error::Numerical`] for a
    /// non-finite entry.
    pub fn gradient_covariance<X: Inputs + ?Sized>(&self, x: &X) -> Result<Vec<DMatrix<f64>>> {
        let x = &*x.to_matrix()?;
        if x.nrows() == 0 {
            return Err(crate::error::Error::EmptyData {
                what: "no test inputs",
            });
        }
        let xu = self.record.columns.select(x)?;
        let (n, du) = xu.shape();
        let (post, m) = (&self.posterior, self.num_spectral_points());
        let mut centred = DMatrix::zeros(0, 0);
        features::centre_rows(view(&xu), &post.centre, &mut centred);
        features::check_phases(&centred, &post.omega, 0)?;
        let used = self.record.columns.used();
        let what = "gradient covariances (n*·D² values)";
        let bytes = n
            .saturating_mul(self.dim())
            .saturating_mul(self.dim())
            .saturating_mul(std::mem::size_of::<f64>());
        linalg::check_allocation(bytes, what)?;
        let mut out = Vec::new();
        out.try_reserve_exact(n)
            .map_err(|_| crate::error::Error::Allocation { what, bytes })?;
        let mut j = DMatrix::zeros(2 * m, du);
        for i in 0..n {
            for r in 0..m {
                let phase: f64 = (0..du)
                    .map(|d| post.omega[(r, d)] * (xu[(i, d)] - post.centre[d]))
                    .sum();
                let (sin, cos) = phase.sin_cos();
                for d in 0..du {
                    j[(r, d)] = -post.omega[(r, d)] * sin;
                    j[(m + r, d)] = post.omega[(r, d)] * cos;
                }
            }
            linalg::solve_lower(view(&post.l), view_mut(&mut j), Par::Seq);
            let cov = j.tr_mul(&j) * self.noise_variance();
            let mut full = linalg::try_zeros(self.dim(), self.dim(), what)?;
            for (a, &da) in used.iter().enumerate() {
                for (b, &db) in used.iter().enumerate() {
                    full[(da, db)] = cov[(a, b)];
                }
            }
            if full.iter().any(|v| !v.is_finite()) {
                return Err(crate::error::Error::Numerical {
                    what: format!("the gradient covariance at test row {i} is not finite"),
                });
            }
            out.push(full);
        }
        Ok(out)
    }

    /// The exact leave-one-out diagnostic on the training data `data` (its used columns): SSGP is
    /// Bayesian linear regression on the 2m features, so with the hat matrix's diagonal
    /// hᵢ = φᵢᵀA⁻¹φᵢ = ‖L⁻¹φᵢ‖² and the residual eᵢ = yᵢ − ȳ − φᵢᵀα, the LOO residual is
    /// eᵢ/(1 − hᵢ) and its variance σn²/(1 − hᵢ) (C⁻¹ = (I − ΦA⁻¹Φᵀ)/σn²). One pass of the
    /// prediction chunks over the n rows: O(nm²), about one evaluation of the evidence.
    ///
    /// For n ≤ 4m ([`Self::loo_dual`]) the same quantities come from the n×n form instead: there
    /// 1 − hᵢ and eᵢ are differences of nearly equal numbers when the model (nearly)
    /// interpolates, σn² ≪ σ0².
    ///
    /// # Errors
    /// As the prediction chunks ([`Self::predict`]); [`crate::error::Error::NotPositiveDefinite`]
    /// if ΦΦᵀ + λI cannot be factored.
    pub(crate) fn loo_diagnostic(
        &self,
        data: &crate::data::Dataset,
    ) -> Result<Option<crate::termination::LooDiagnostic>> {
        let n = data.len();
        if n <= 4 * self.num_spectral_points() {
            return self.loo_dual(data);
        }
        Ok(crate::termination::LooDiagnostic::from_sums(
            self.loo_sums(data)?,
        ))
    }

    /// The sums of the diagnostic ([`crate::termination::LooDiagnostic::sums`]) over the rows of
    /// `data` (used columns) by the hat matrix's diagonal: the single-process diagnostic for
    /// n > 4m, and each rank's share in a distributed fit.
    ///
    /// # Errors
    /// As the prediction chunks ([`Self::predict`]).
    pub(crate) fn loo_sums(&self, data: &crate::data::Dataset) -> Result<[f64; 5]> {
        let n = data.len();
        let (mut fitted, mut latent) = (vec![0.0; n], vec![0.0; n]);
        let mut chunk = self.chunk();
        let step = self.chunk_rows.max(1);
        for start in (0..n).step_by(step) {
            let len = step.min(n - start);
            chunk(
                data.x(),
                start,
                len,
                &mut fitted[start..start + len],
                Some(&mut latent[start..start + len]),
            )?;
        }
        let sn2 = self.noise_variance();
        let y_mean = self.record.y_mean;
        let centred: Vec<f64> = data.y().iter().map(|y| y - y_mean).collect();
        let (mut residuals, mut variances) = (Vec::with_capacity(n), Vec::with_capacity(n));
        for i in 0..n {
            let keep = 1.0 - latent[i] / sn2;
            residuals.push((centred[i] - fitted[i]) / keep);
            variances.push(sn2 / keep);
        }
        Ok(crate::termination::LooDiagnostic::sums(
            &residuals, &variances, &centred,
        ))
    }

    /// The leave-one-out diagnostic by the n×n form of SSGP's covariance: C = (σ0²/m)G with
    /// G = ΦΦᵀ + λI (λ = mσn²/σ0²; Φ the n×2m design matrix) = L_G L_Gᵀ, so that the LOO residual
    /// is [G⁻¹y]ᵢ/[G⁻¹]ᵢᵢ and its variance (σ0²/m)/[G⁻¹]ᵢᵢ, with [G⁻¹]ᵢᵢ = ‖(L_G⁻¹)·ᵢ‖² (R&W
    /// eq. 5.12): O(n²m + n³/3), no cancellation.
    ///
    /// # Errors
    /// [`crate::error::Error::NotPositiveDefinite`] if G cannot be factored.
    fn loo_dual(
        &self,
        data: &crate::data::Dataset,
    ) -> Result<Option<crate::termination::LooDiagnostic>> {
        let n = data.len();
        let m = self.num_spectral_points();
        let par = linalg::par(self.record.threads);
        let (mut phi, mut centred_x) = (DMatrix::zeros(0, 0), DMatrix::zeros(0, 0));
        design_matrix_into(
            view(data.x()),
            &self.posterior.centre,
            &self.posterior.omega,
            &mut phi,
            &mut centred_x,
            par,
        );
        let (s0, sn2) = (self.signal_variance(), self.noise_variance());
        let lambda = m as f64 * sn2 / s0;
        let mut g = linalg::try_zeros(n, n, "ΦΦᵀ + λI of the LOO diagnostic")?;
        linalg::syrk_lower(view_mut(&mut g), false, view(&phi).transpose(), 1.0, par);
        for i in 0..n {
            g[(i, i)] += lambda;
        }
        linalg::cholesky_in_place_lower(&mut g, "ΦΦᵀ + λI (LOO diagnostic)", par)?;
        let y_mean = self.record.y_mean;
        let centred: Vec<f64> = data.y().iter().map(|y| y - y_mean).collect();
        let mut r = DMatrix::from_column_slice(n, 1, &centred);
        linalg::solve_lower(view(&g), view_mut(&mut r), par);
        linalg::solve_lower_transpose(view(&g), view_mut(&mut r), par);
        let inverse = linalg::invert_lower(&g, par);
        let (mut residuals, mut variances) = (Vec::with_capacity(n), Vec::with_capacity(n));
        for (i, col) in inverse.column_iter().enumerate() {
            let g_inv = col.norm_squared();
            residuals.push(r[i] / g_inv);
            variances.push(s0 / m as f64 / g_inv);
        }
        Ok(crate::termination::LooDiagnostic::from_residuals(
            &residuals, &variances, &centred,
        ))
    }

    /// The joint predictive at `x` (n*×D, n* ≤ [`MAX_JOINT_POINTS`](crate::predictive::MAX_JOINT_POINTS)), eq. 7 for pairs of points:
    /// Σ_f = σn² Φ* A⁻¹ Φ*ᵀ = σn² VᵀV with V = L⁻¹Φ*ᵀ (2m×n*, one triangular solve; Φ* n*×2m
    /// the test design matrix), of rank at most 2m. Memory O(n*² + n*m).
    ///
    /// # Errors
    /// As [`Self::predict`]; [`crate::error::Error::InvalidParameter`] above [`MAX_JOINT_POINTS`](crate::predictive::MAX_JOINT_POINTS);
    /// [`crate::error::Error::Allocation`] if Σ_f or the n*×2m test design matrix cannot be
    /// allocated.
    pub fn predict_covariance<X: Inputs + ?Sized>(&self, x: &X) -> Result<JointPredictive> {
        let x = &*x.to_matrix()?;
        check_joint_size(x.nrows())?;
        let p = self.predict(x)?;
        let n = p.len();
        let x = self.record.columns.select(x)?;
        let par = linalg::par(self.record.threads);
        // Φ* and its transpose V (n*×2m each) beside Σ_f (n*×n*).
        let cross = n.saturating_mul(self.posterior.l.nrows()).saturating_mul(2);
        linalg::check_allocation(
            cross.saturating_add(n.saturating_mul(n)).saturating_mul(8),
            "the joint predictive's test design matrix (n*×2m) and covariance",
        )?;
        let (mut phi, mut centred) = (DMatrix::zeros(0, 0), DMatrix::zeros(0, 0));
        design_matrix_into(
            view(&x),
            &self.posterior.centre,
            &self.posterior.omega,
            &mut phi,
            &mut centred,
            par,
        );
        let mut v = phi.transpose();
        linalg::solve_lower(view(&self.posterior.l), view_mut(&mut v), par);
        let mut cov = linalg::try_zeros(n, n, "joint predictive covariance")?;
        let sn2 = self.noise_variance();
        linalg::gemm(
            view_mut(&mut cov),
            false,
            view(&v).transpose(),
            view(&v),
            sn2,
            par,
        );
        JointPredictive::assemble(p, cov, sn2)
    }

    crate::model::sample_joint_from_covariance!(
        /// [`Self::sample_posterior`] draws whole functions instead.
    );

    /// Draws a function from the posterior (as in the paper's Figure 2a): weights
    /// w ~ N(α, σn²A⁻¹), i.e. w = α + σn L⁻ᵀz with z ~ N(0, I); the function can then be
    /// evaluated anywhere.
    pub fn sample_posterior<R: Rng + ?Sized>(&self, rng: &mut R) -> PosteriorSample {
        let k = 2 * self.num_spectral_points();
        let mut z = DMatrix::from_fn(k, 1, |_, _| rng.sample::<f64, _>(StandardNormal));
        linalg::solve_lower_transpose(view(&self.posterior.l), view_mut(&mut z), Par::Seq);
        let weights = &self.posterior.alpha + z.column(0) * self.noise_variance().sqrt();
        PosteriorSample {
            omega: self.posterior.omega.clone(),
            centre: self.posterior.centre.clone(),
            columns: self.record.columns.clone(),
            weights,
            offset: self.record.y_mean,
            chunk_rows: self.chunk_rows,
        }
    }

    /// `ssgp`, or `ssgp-fixed` with fixed spectral points.
    pub fn name(&self) -> &'static str {
        if self.fixed {
            "ssgp-fixed"
        } else {
            "ssgp"
        }
    }

    /// Spectral points s_r (m×D), as in φ(x) = [cos(2π s_rᵀx), sin(2π s_rᵀx)]; 0 in the
    /// ignored (constant) input columns.
    pub fn spectral_points(&self) -> DMatrix<f64> {
        self.record
            .columns
            .expand_columns(&features::spectral_points(&self.posterior.omega), 0.0)
    }

    /// Unit frequencies W (m×D), s_r = W_r ⊘ (2πℓ); 0 in the ignored input columns.
    pub fn unit_frequencies(&self) -> DMatrix<f64> {
        self.record
            .columns
            .expand_columns(&self.hyper.unit_frequencies, 0.0)
    }

    /// Lengthscales ℓ (D); infinite for the ignored (constant) input columns.
    pub fn lengthscales(&self) -> DVector<f64> {
        self.record
            .columns
            .expand(&self.hyper.hyper.lengthscales, f64::INFINITY)
    }

    /// The input columns the model uses (the others were constant on the training data).
    pub fn input_columns(&self) -> &InputColumns {
        &self.record.columns
    }

    /// Signal variance σ0².
    pub fn signal_variance(&self) -> f64 {
        self.hyper.hyper.signal_variance
    }

    /// Noise variance σn².
    pub fn noise_variance(&self) -> f64 {
        self.hyper.hyper.noise_variance
    }

    /// The lower bound σn² was trained under (the configured floor, or the data-estimated bound).
    pub fn noise_floor(&self) -> f64 {
        self.record.noise_floor
    }

    /// All hyperparameters in natural units, for the used input columns
    /// ([`FittedSsgp::input_columns`]).
    pub fn hyperparameters(&self) -> &SsgpHyperparameters {
        &self.hyper
    }

    /// The parameter vector θ in the evidence's layout (see [`super::SsgpEvidence`]), for the
    /// used input columns.
    pub fn parameters(&self) -> &DVector<f64> {
        &self.record.theta
    }

    /// Number of spectral points m.
    pub fn num_spectral_points(&self) -> usize {
        self.posterior.omega.nrows()
    }

    /// Input dimension D.
    pub fn dim(&self) -> usize {
        self.record.columns.dim()
    }

    /// Whether the spectral points were held fixed during training.
    pub fn fixed_spectral_points(&self) -> bool {
        self.fixed
    }

    /// Mean of the training targets ȳ (added back to predictions).
    pub fn y_mean(&self) -> f64 {
        self.record.y_mean
    }

    /// −log p(y|θ) of the (centred) training targets at the fitted θ — of every training row,
    /// also for a fit the calibration check kept as trained on 3/4 of them
    /// ([`Remedy::HeldOut`](crate::Remedy::HeldOut)'s `on_comparison_rows`), so that fits on the
    /// same data compare by it.
    pub fn neg_log_evidence(&self) -> f64 {
        self.record.neg_log_evidence
    }

    /// How training went: evidence before and after, iterations, evaluations, termination.
    pub fn training(&self) -> &TrainingSummary {
        &self.record.training
    }
}

fitted_regressor!(FittedSsgp, model => model, saved Ssgp);

/// One output's SSGP posterior, borrowed: the factor L of A (2m×2m), the weights α (2m), the
/// scaled frequencies Ω (m×D), the inputs' centre c (D) and σn²; what the prediction loops run on
/// (a [`FittedSsgp`], or one output of a [`super::FittedMultiSsgp`]).
#[derive(Clone, Copy)]
pub(crate) struct OutputView<'a> {
    pub(crate) l: &'a DMatrix<f64>,
    pub(crate) alpha: &'a [f64],
    pub(crate) omega: &'a DMatrix<f64>,
    pub(crate) centre: &'a DVector<f64>,
    pub(crate) noise_variance: f64,
    pub(crate) par: Par,
}

impl<'a> OutputView<'a> {
    /// The design matrix Φ* (len×2m) of rows `start .. start + len` of `x` into `phi` (their
    /// centred inputs into `centred`) and the means Φ*α into `mean` (len).
    ///
    /// # Errors
    /// As [`features::check_phases`] for rows too far from the training inputs.
    fn design_and_means(
        self,
        x: &DMatrix<f64>,
        (start, len): (usize, usize),
        phi: &mut DMatrix<f64>,
        centred: &mut DMatrix<f64>,
        mean: &mut [f64],
    ) -> Result<()> {
        let alpha = MatRef::from_column_major_slice(self.alpha, self.l.nrows(), 1);
        linalg::try_resize(phi, len, self.l.nrows(), CHUNK_BUFFERS)?;
        linalg::try_resize(centred, len, x.ncols(), CHUNK_BUFFERS)?;
        design_matrix_into(
            linalg::rows_view(x, start, len),
            self.centre,
            self.omega,
            phi,
            centred,
            self.par,
        );
        features::check_phases(centred, self.omega, start)?;
        let mu = MatMut::from_column_major_slice_mut(mean, len, 1);
        linalg::gemm(mu, false, view(phi), alpha, 1.0, self.par);
        Ok(())
    }

    /// The work of one chunk of test rows for [`predict_in_chunks`]: the design matrix Φ*
    /// (len×2m), the means Φ*α and, when wanted, the latent variances σn²‖L⁻¹φ(x*)‖².
    pub(crate) fn chunk(self) -> impl Chunk + 'a {
        let (sn2, par) = (self.noise_variance, self.par);
        let (mut phi, mut centred) = (DMatrix::zeros(0, 0), DMatrix::zeros(0, 0));
        move |x: &DMatrix<f64>,
              start: usize,
              len: usize,
              mean: &mut [f64],
              latent: Option<&mut [f64]>| {
            self.design_and_means(x, (start, len), &mut phi, &mut centred, mean)?;
            if let Some(latent) = latent {
                linalg::solve_lower(view(self.l), view_mut(&mut phi).transpose_mut(), par);
                for (i, v) in latent.iter_mut().enumerate() {
                    *v = sn2 * phi.row(i).norm_squared();
                }
            }
            Ok(())
        }
    }

    /// The work of one chunk of test rows for [`gradients_in_chunks`] (see
    /// [`FittedSsgp::predict_gradients`] for the formulas).
    pub(crate) fn gradient_chunk(self) -> impl GradientChunk + 'a {
        let k = self.l.nrows();
        let m = k / 2;
        let (sn2, par) = (self.noise_variance, self.par);
        let (mut phi, mut centred) = (DMatrix::zeros(0, 0), DMatrix::zeros(0, 0));
        let (mut g, mut u) = (DMatrix::zeros(0, 0), DMatrix::zeros(0, 0));
        move |x: &DMatrix<f64>, start: usize, len: usize, out: ChunkGradients<'_>| {
            self.design_and_means(x, (start, len), &mut phi, &mut centred, out.mean)?;
            // ∂μ: g_ir = α_{m+r} cos θ_ir − α_r sin θ_ir, then gΩ.
            linalg::resize(&mut g, len, m);
            let a = self.alpha;
            chain_through_features(&phi, m, |_, r| (a[r], a[m + r]), &mut g);
            linalg::gemm(
                view_mut(out.d_mean),
                false,
                view(&g),
                view(self.omega),
                1.0,
                par,
            );
            // u_i = A⁻¹φ_i for each row, U = Φ*A⁻¹ = (Φ*L⁻ᵀ)L⁻¹ (len×2m): L⁻¹Φ*ᵀ on the
            // transposed view as in `predict` (the latent variances σn²‖L⁻¹φ‖² from it), then
            // the right-side solve with L (a left-side L⁻ᵀ on a row-major right-hand side is slower).
            linalg::resize(&mut u, len, k);
            u.copy_from(&phi);
            linalg::solve_lower(view(self.l), view_mut(&mut u).transpose_mut(), par);
            for (i, v) in out.latent.iter_mut().enumerate() {
                *v = sn2 * u.row(i).norm_squared();
            }
            linalg::solve_right_lower(view_mut(&mut u), view(self.l), par);
            chain_through_features(&phi, m, |i, r| (u[(i, r)], u[(i, m + r)]), &mut g);
            linalg::gemm(
                view_mut(out.d_variance),
                false,
                view(&g),
                view(self.omega),
                2.0 * sn2,
                par,
            );
            Ok(())
        }
    }
}

/// The chain rule through the features of the rows of `phi` (len×2m, cosines then sines):
/// with coefficients (c_ir, s_ir) = `coefficients(i, r)` on the cosine and sine of spectral point
/// r, writes g_ir = s_ir cos θ_ir − c_ir sin θ_ir into `g` (len×m), so that
/// Σ_r (c_ir ∂cos θ_ir + s_ir ∂sin θ_ir)/∂x = (gΩ)_i.
pub(crate) fn chain_through_features(
    phi: &DMatrix<f64>,
    m: usize,
    coefficients: impl Fn(usize, usize) -> (f64, f64),
    g: &mut DMatrix<f64>,
) {
    let len = phi.nrows();
    for r in 0..m {
        for i in 0..len {
            let (c, s) = coefficients(i, r);
            g[(i, r)] = s * phi[(i, r)] - c * phi[(i, m + r)];
        }
    }
}

/// One function drawn from an SSGP posterior: f(x) = φ(x − c)ᵀw + ȳ with fixed weights w.
#[derive(Debug, Clone, PartialEq)]
pub struct PosteriorSample {
    omega: DMatrix<f64>,
    centre: DVector<f64>,
    columns: InputColumns,
    weights: DVector<f64>,
    offset: f64,
    /// Test rows per chunk of [`Self::evaluate`] (the fitted model's `chunk_rows`).
    chunk_rows: usize,
}

impl PosteriorSample {
    /// Evaluates the sampled function at `x` (n*×D), in chunks of test rows as
    /// [`FittedSsgp::predict`] does, so memory is O(chunk·m) beside the n* values.
    ///
    /// # Errors
    /// [`crate::error::Error::EmptyData`] for no rows (as `predict`),
    /// [`crate::error::Error::DimensionMismatch`] for a wrong D,
    /// [`crate::error::Error::NonFinite`] for a NaN or infinity,
    /// [`crate::error::Error::Scale`] for a row whose phases f64 cannot resolve (as
    /// [`FittedSsgp::predict`]), [`crate::error::Error::Numerical`] where the value is not
    /// finite; [`crate::error::Error::Allocation`] as [`FittedSsgp::predict`].
    pub fn evaluate(&self, x: &DMatrix<f64>) -> Result<DVector<f64>> {
        let rows = Rows {
            columns: &self.columns,
            y_mean: self.offset,
            observer: None,
            means: "sampled function",
        };
        let (mut phi, mut centred) = (DMatrix::zeros(0, 0), DMatrix::zeros(0, 0));
        let chunk =
            |x: &DMatrix<f64>, start: usize, len: usize, f: &mut [f64], _: Option<&mut [f64]>| {
                linalg::try_resize(&mut phi, len, self.weights.len(), CHUNK_BUFFERS)?;
                linalg::try_resize(&mut centred, len, x.ncols(), CHUNK_BUFFERS)?;
                design_matrix_into(
                    linalg::rows_view(x, start, len),
                    &self.centre,
                    &self.omega,
                    &mut phi,
                    &mut centred,
                    Par::Seq,
                );
                features::check_phases(&centred, &self.omega, start)?;
                f.copy_from_slice((&phi * &self.weights).as_slice());
                Ok(())
            };
        mean_in_chunks(x, rows, self.chunk_rows, chunk)
    }

    /// The 2m weights (cosines first, then sines).
    pub fn weights(&self) -> &DVector<f64> {
        &self.weights
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// Chunked evaluation gives the bits of the whole design matrix at once (the evaluation
    /// before chunking), on one chunk and on several.
    #[test]
    fn chunked_evaluation_has_the_bits_of_the_one_piece_formula() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        let (m, dim) = (7, 3);
        let mut normal = |r: usize, c: usize| {
            DMatrix::from_fn(r, c, |_, _| rng.sample::<f64, _>(StandardNormal))
        };
        let sample = PosteriorSample {
            omega: normal(m, dim),
            centre: normal(dim, 1).column(0).into_owned(),
            columns: InputColumns::all(dim),
            weights: normal(2 * m, 1).column(0).into_owned(),
            offset: 0.3,
            chunk_rows: 4,
        };
        for n in [1, 3, 4, 5, 11] {
            let x = normal(n, dim);
            let (mut phi, mut centred) = (DMatrix::zeros(0, 0), DMatrix::zeros(0, 0));
            let whole = &sample.centre;
            design_matrix_into(
                view(&x),
                whole,
                &sample.omega,
                &mut phi,
                &mut centred,
                Par::Seq,
            );
            let one_piece = (phi * &sample.weights).add_scalar(sample.offset);
            let chunked = sample.evaluate(&x).unwrap();
            for (a, b) in chunked.iter().zip(one_piece.iter()) {
                assert_eq!(a.to_bits(), b.to_bits(), "{n} rows");
            }
            assert_eq!(chunked.len(), n);
        }
    }
}
