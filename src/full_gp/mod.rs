//! The exact ("full") Gaussian process with the SE-ARD covariance: the baseline of the paper's
//! experiments (§2, eq. 2–4).
//!
//! Training maximises the evidence p(y|θ) (eq. 4) over θ = [log ℓ, log σ0, p] (layout in
//! [`objective`]) with the crate's conjugate-gradient optimiser, from the paper's initial values
//! ([`crate::model::initial_hyperparameters`]). Targets are centred by their mean, which is added
//! back to the predictions. Every evaluation costs O(n³) time and 24·n² bytes; for large n,
//! [`FullGpParams::hyperparameter_subset`] learns θ on a random subset and then conditions on all
//! the data (one Cholesky factorisation, 8·n² bytes), which is how the paper's Kin-40k baseline is
//! run on 10 000 points.
//!
//! ```no_run
//! # fn main() -> ssgp::Result<()> {
//! use ssgp::{Dataset, FullGp};
//! # let data: Dataset = unimplemented!();
//! let fitted = FullGp::params().hyperparameter_subset(Some(2000)).fit(&data)?;
//! let pred = fitted.predict(data.x())?;
//! # Ok(()) }
//! ```

pub mod objective;

pub use objective::{Evaluation, Hyperparameters, NegLogEvidence};

use crate::data::{check_inputs, Dataset};
use crate::error::{Error, Result};
use crate::kernel;
use crate::linalg;
use crate::model::{
    initial_hyperparameters, FittedRegressor, NoiseParam, Regressor, TrainingSummary,
};
use crate::optim::{minimize, OptimConfig, Termination};
use crate::predictive::Predictive;
use faer::Par;
use nalgebra::{DMatrix, DVector};
use rand::SeedableRng;

/// Test points per prediction batch are chosen so that the n×batch cross-covariance holds about
/// this many entries (128 MB).
const PREDICT_BATCH_ENTRIES: usize = 1 << 24;

/// Lengthscales learned by a full GP on a seeded random subset of `subset` points of `data` (all
/// of them if fewer): the initialisation the paper uses for Pumadyn-32nm (§5.2), offered by SSGP
/// and FITC.
///
/// # Errors
/// As [`FullGpParams::learn`].
pub fn lengthscales_from_subset(
    data: &Dataset,
    subset: usize,
    seed: u64,
    threads: usize,
) -> Result<DVector<f64>> {
    let report = FullGp::params()
        .seed(seed)
        .threads(threads)
        .hyperparameter_subset(Some(subset.min(data.len())))
        .learn(data)?;
    Ok(report.theta.rows(0, data.dim()).map(f64::exp))
}

/// The full GP; start from [`FullGp::params`].
#[derive(Debug, Clone, Copy, Default)]
pub struct FullGp;

impl FullGp {
    /// Default settings: the default [`OptimConfig`], all cores, no noise floor, the paper's initial
    /// lengthscales, θ learned on all the data, seed 0.
    pub fn params() -> FullGpParams {
        FullGpParams::default()
    }
}

/// Settings of a full GP; [`FullGpParams::fit`] trains one, [`FullGpParams::condition`] builds one at
/// given hyperparameters.
#[derive(Debug, Clone, Default)]
pub struct FullGpParams {
    seed: u64,
    optim: OptimConfig,
    threads: usize,
    noise_floor: f64,
    initial_lengthscales: Option<DVector<f64>>,
    hyperparameter_subset: Option<usize>,
}

impl FullGpParams {
    /// Seed of the random subset drawn by [`Self::hyperparameter_subset`] (the only randomness).
    #[must_use]
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// The optimiser's budget and stopping rule.
    #[must_use]
    pub fn optim(mut self, optim: OptimConfig) -> Self {
        self.optim = optim;
        self
    }

    /// Maximum optimiser iterations (line searches); 0 evaluates the initial θ only.
    #[must_use]
    pub fn max_iterations(mut self, iterations: u64) -> Self {
        self.optim.max_iterations = iterations;
        self
    }

    /// Maximum objective evaluations (each O(n³)).
    #[must_use]
    pub fn max_evaluations(mut self, evaluations: usize) -> Self {
        self.optim.max_evaluations = evaluations;
        self
    }

    /// Threads for the dense kernels: 0 (the default) = all cores, 1 = sequential.
    #[must_use]
    pub fn threads(mut self, threads: usize) -> Self {
        self.threads = threads;
        self
    }

    /// A lower bound on the noise variance, σn² = floor + e^{2p} (§5.2); 0 (the default) for none.
    #[must_use]
    pub fn noise_floor(mut self, floor: f64) -> Self {
        self.noise_floor = floor;
        self
    }

    /// Initial lengthscales ℓ (D) instead of the paper's half input ranges.
    #[must_use]
    pub fn initial_lengthscales(mut self, lengthscales: DVector<f64>) -> Self {
        self.initial_lengthscales = Some(lengthscales);
        self
    }

    /// Learn θ on a random subset of this many points (drawn with [`Self::seed`]), then condition
    /// on all the data; `None` (the default) learns on all of it.
    #[must_use]
    pub fn hyperparameter_subset(mut self, size: Option<usize>) -> Self {
        self.hyperparameter_subset = size;
        self
    }

    fn noise(&self) -> NoiseParam {
        NoiseParam {
            floor: self.noise_floor,
        }
    }

    /// Checks the settings that do not depend on the data.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a bad optimiser budget or tolerance, a negative or
    /// non-finite noise floor, an empty or non-positive or non-finite initial lengthscale, or a
    /// subset of size 0.
    pub fn check(&self) -> Result<()> {
        self.optim.validate()?;
        self.noise().validate()?;
        if let Some(ell) = &self.initial_lengthscales {
            if ell.is_empty() || !ell.iter().all(|&l| l > 0.0 && l.is_finite()) {
                return Err(Error::InvalidParameter {
                    name: "initial_lengthscales",
                    reason: format!(
                        "{:?} must be a non-empty list of finite positive numbers",
                        ell.as_slice()
                    ),
                });
            }
        }
        if self.hyperparameter_subset == Some(0) {
            return Err(Error::InvalidParameter {
                name: "hyperparameter_subset",
                reason: "a subset needs at least one point".into(),
            });
        }
        Ok(())
    }

    /// Learns θ by maximising the evidence (on the subset, if one is set), then conditions on all
    /// of `data` ([`Self::condition`]).
    ///
    /// The returned model's [`FittedFullGp::training`] describes the optimisation (on the subset,
    /// if any), its [`FittedFullGp::neg_log_evidence`] is on all of `data`.
    ///
    /// # Errors
    /// As [`Self::check`]; [`Error::InvalidParameter`] for a subset larger than the data;
    /// [`Error::DimensionMismatch`] if the initial lengthscales have not D entries;
    /// [`Error::ConstantInput`] / [`Error::ConstantTargets`] from the initial hyperparameters
    /// (even with given lengthscales: a constant input column carries no information, remove it);
    /// the objective's errors at the initial θ; as [`Self::condition`].
    pub fn fit(&self, data: &Dataset) -> Result<FittedFullGp> {
        let report = self.learn(data)?;
        let mut fitted = self.condition(data, &report.theta)?;
        fitted.training = TrainingSummary::from(&report);
        Ok(fitted)
    }

    /// Learns the hyperparameters only (on the configured subset, or all of `data`), without
    /// conditioning on all the data: what [`FullGpParams::fit`] does before its final Cholesky.
    /// The returned report's `theta` is in the layout of [`objective`].
    ///
    /// # Errors
    /// As [`FullGpParams::fit`], but for the conditioning.
    pub fn learn(&self, data: &Dataset) -> Result<crate::optim::OptimReport> {
        self.check()?;
        let subset;
        let train = match self.hyperparameter_subset {
            Some(size) if size > data.len() => {
                return Err(Error::InvalidParameter {
                    name: "hyperparameter_subset",
                    reason: format!("{size} points asked for, but the data has {}", data.len()),
                })
            }
            Some(size) if size < data.len() => {
                let mut rng = rand::rngs::StdRng::seed_from_u64(self.seed);
                let mut rows = rand::seq::index::sample(&mut rng, data.len(), size).into_vec();
                rows.sort_unstable();
                subset = data.subset(&rows)?;
                &subset
            }
            _ => data,
        };
        let init = initial_hyperparameters(train)?;
        let lengthscales = match &self.initial_lengthscales {
            Some(ell) if ell.len() != data.dim() => {
                return Err(Error::DimensionMismatch {
                    what: "initial lengthscales",
                    expected: data.dim(),
                    found: ell.len(),
                })
            }
            Some(ell) => ell.clone(),
            None => init.lengthscales,
        };
        let theta0 = Hyperparameters {
            lengthscales,
            signal_variance: init.signal_variance,
            noise_variance: init.noise_variance,
        }
        .to_theta(self.noise());
        let objective = NegLogEvidence::new(train, self.noise(), self.threads)?;
        minimize(&objective, theta0, &self.optim)
    }

    /// The posterior of a full GP on all of `data` at hyperparameters θ (layout in [`objective`]),
    /// without training: one Cholesky factorisation of K + σn² I (n³/3 flops, 8·n² bytes), with
    /// the jitter ladder of [`NegLogEvidence::evaluate`] if needed ([`FittedFullGp::jitter`]).
    ///
    /// The [`FittedFullGp::training`] summary reports no iteration ([`Termination::NotStarted`])
    /// and the evidence at θ.
    ///
    /// # Errors
    /// As [`Self::check`]; as [`Hyperparameters::from_theta`] for a θ without D + 2 finite
    /// entries or with extreme values; [`Error::NotPositiveDefinite`] if K + σn² I cannot be
    /// factorised even with jitter.
    pub fn condition(&self, data: &Dataset, theta: &DVector<f64>) -> Result<FittedFullGp> {
        self.check()?;
        let noise = self.noise();
        let h = Hyperparameters::from_theta(theta, data.dim(), noise)?;
        let par = linalg::par(self.threads);
        let n = data.len();
        let (centred, input_means) = objective::centre_columns(data.x());
        let z = kernel::scale_inputs(&centred, &h.lengthscales);
        let y_mean = data.y_mean();
        let y = data.y().add_scalar(-y_mean);
        let mut factor = DMatrix::zeros(n, n);
        let jitter = objective::factorise_with_jitter(
            &mut factor,
            |k| objective::se_ard_lower(&z, h.signal_variance, k, par),
            h.noise_variance,
            h.signal_variance,
            par,
        )?;
        let alpha = objective::cholesky_solve_vector(&factor, &y, par);
        let neg_log_evidence = 0.5 * linalg::log_det_from_cholesky(&factor)
            + 0.5 * y.dot(&alpha)
            + 0.5 * n as f64 * (2.0 * std::f64::consts::PI).ln();
        Ok(FittedFullGp {
            z,
            input_means,
            y_mean,
            alpha,
            factor,
            theta: theta.clone(),
            hyperparameters: h,
            jitter,
            neg_log_evidence,
            training: TrainingSummary {
                initial_neg_log_evidence: neg_log_evidence,
                neg_log_evidence,
                iterations: 0,
                evaluations: 0,
                termination: Termination::NotStarted,
            },
            par,
        })
    }
}

impl Regressor for FullGpParams {
    fn name(&self) -> &'static str {
        "full"
    }

    fn fit_boxed(&self, data: &Dataset) -> Result<Box<dyn FittedRegressor>> {
        Ok(Box::new(self.fit(data)?))
    }
}

/// A full GP conditioned on its training data (n points, D inputs).
///
/// Holds the Cholesky factor L of K + σn² I (8·n² bytes), α = (K + σn² I)⁻¹(y − ȳ) and the scaled
/// training inputs.
#[derive(Debug, Clone)]
pub struct FittedFullGp {
    /// Training inputs, centred and divided by ℓ (n×D).
    z: DMatrix<f64>,
    /// Column means of the training inputs (D).
    input_means: DVector<f64>,
    y_mean: f64,
    alpha: DVector<f64>,
    /// L (n×n, lower).
    factor: DMatrix<f64>,
    theta: DVector<f64>,
    hyperparameters: Hyperparameters,
    jitter: f64,
    neg_log_evidence: f64,
    training: TrainingSummary,
    par: Par,
}

impl FittedFullGp {
    /// Predictive distribution at test inputs `x` (n*×D), paper eq. 2:
    /// μ_* = k_*ᵀ α + ȳ and latent variance σ0² − ‖L⁻¹ k_*‖² (σn² added in
    /// [`Predictive::variance`]), with k_* the covariances between x_* and the training inputs.
    /// Test points are processed in batches through one gemm and one blocked triangular solve each
    /// (n² flops per test point).
    ///
    /// # Errors
    /// [`Error::EmptyData`] for no rows, [`Error::DimensionMismatch`] if `x` has not D columns,
    /// [`Error::NonFinite`] for a NaN or infinity.
    pub fn predict(&self, x: &DMatrix<f64>) -> Result<Predictive> {
        check_inputs(x, self.z.ncols())?;
        if x.nrows() == 0 {
            return Err(Error::EmptyData {
                what: "no test inputs",
            });
        }
        let n = self.z.nrows();
        let n_test = x.nrows();
        let batch = (PREDICT_BATCH_ENTRIES / n).max(1);
        let sf2 = self.hyperparameters.signal_variance;
        let mut mean = DVector::zeros(n_test);
        let mut latent = DVector::zeros(n_test);
        let mut start = 0;
        while start < n_test {
            let len = batch.min(n_test - start);
            let mut zt = x.rows(start, len).into_owned();
            for (d, mut col) in zt.column_iter_mut().enumerate() {
                col.add_scalar_mut(-self.input_means[d]);
                col /= self.hyperparameters.lengthscales[d];
            }
            let mut cross = kernel::squared_distances(&self.z, &zt, self.par);
            cross.apply(|v| *v = sf2 * (-0.5 * *v).exp());
            let mut mu = DVector::zeros(len);
            linalg::gemm(
                objective::vector_view_mut(&mut mu),
                false,
                linalg::view(&cross).transpose(),
                objective::vector_view(&self.alpha),
                1.0,
                self.par,
            );
            linalg::solve_lower(
                linalg::view(&self.factor),
                linalg::view_mut(&mut cross),
                self.par,
            );
            for j in 0..len {
                mean[start + j] = mu[j] + self.y_mean;
                latent[start + j] = sf2 - cross.column(j).norm_squared();
            }
            start += len;
        }
        Ok(Predictive::from_latent(
            mean,
            latent,
            self.hyperparameters.noise_variance,
        ))
    }

    /// The lengthscales ℓ (D).
    pub fn lengthscales(&self) -> &DVector<f64> {
        &self.hyperparameters.lengthscales
    }

    /// The signal variance σ0².
    pub fn signal_variance(&self) -> f64 {
        self.hyperparameters.signal_variance
    }

    /// The noise variance σn² (the floor included; the [`Self::jitter`] excluded).
    pub fn noise_variance(&self) -> f64 {
        self.hyperparameters.noise_variance
    }

    /// The hyperparameters θ (D + 2, layout in [`objective`]).
    pub fn parameters(&self) -> &DVector<f64> {
        &self.theta
    }

    /// The diagonal jitter the final factorisation needed on top of σn² (0 normally).
    pub fn jitter(&self) -> f64 {
        self.jitter
    }

    /// −log p(y|θ) of all the conditioned data (targets centred) at the fitted θ.
    pub fn neg_log_evidence(&self) -> f64 {
        self.neg_log_evidence
    }

    /// How training went (on the hyperparameter subset, if one was used).
    pub fn training(&self) -> &TrainingSummary {
        &self.training
    }

    /// Number of conditioned training points n.
    pub fn len(&self) -> usize {
        self.z.nrows()
    }

    /// Always false: a fitted model has at least one training point.
    pub fn is_empty(&self) -> bool {
        false
    }
}

impl FittedRegressor for FittedFullGp {
    fn name(&self) -> &'static str {
        "full"
    }

    fn predict(&self, x: &DMatrix<f64>) -> Result<Predictive> {
        FittedFullGp::predict(self, x)
    }

    fn noise_variance(&self) -> f64 {
        self.noise_variance()
    }

    fn neg_log_evidence(&self) -> f64 {
        self.neg_log_evidence
    }

    fn training(&self) -> &TrainingSummary {
        &self.training
    }
}
