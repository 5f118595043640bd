//! Sparse Spectrum Gaussian Process regression (Lázaro-Gredilla et al., JMLR 2010).
//!
//! The model (eq. 5): f(x) = Σ_r a_r cos(2π s_rᵀx) + b_r sin(2π s_rᵀx) with a_r, b_r ~ N(0, σ0²/m),
//! i.e. a GP with the stationary covariance k(x, x') = (σ0²/m) Σ_r cos(2π s_rᵀ(x − x')) (eq. 6),
//! a Monte Carlo approximation of the SE-ARD kernel when the spectral points s_r are drawn from
//! its spectral density (eq. 12). Training maximises the evidence (eq. 8) over the spectral
//! points, the lengthscales, σ0² and σn² jointly (§4.2); prediction is eq. 7.
//!
//! - [`features`]: the spectral points and the design matrix Φ;
//! - [`objective`]: −log p(y|θ) and its gradient, a pure function of (data, θ);
//! - [`params`]: the validated configuration;
//! - this module: training ([`SsgpParams::fit`]), the fitted model and its predictions.
//!
//! ```
//! use ssgp::{data::sinc_data, metrics, ssgp::Ssgp};
//! use rand::{rngs::StdRng, SeedableRng};
//!
//! let mut rng = StdRng::seed_from_u64(0);
//! let train = sinc_data(100, false, 0.05, &mut rng)?;
//! let test = sinc_data(200, true, 0.05, &mut rng)?;
//! let fitted = Ssgp::params(10).seed(1).fit(&train)?;
//! let pred = fitted.predict(test.x())?;
//! let nmse = metrics::nmse(test.y(), &pred, train.y_mean())?;
//! assert!(nmse < 0.05);
//! # Ok::<(), ssgp::Error>(())
//! ```

pub mod features;
pub mod objective;
pub mod params;
mod trig;

pub use objective::{SsgpHyperparameters, SsgpObjective};
pub use params::{NoiseBound, SsgpParams};

use crate::data::{check_inputs, Dataset};
use crate::error::{Error, Result};
use crate::linalg::{self, view, view_mut};
use crate::model::{initial_hyperparameters, FittedRegressor, Regressor, TrainingSummary};
use crate::optim::minimize;
use crate::predictive::Predictive;
use faer::{MatRef, Par};
use features::design_matrix_into;
use nalgebra::{DMatrix, DVector};
use objective::WeightPosterior;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::StandardNormal;

/// Entry point: `Ssgp::params(m)` starts the configuration of an SSGP with m spectral points
/// (2m basis functions).
#[derive(Debug, Clone, Copy)]
pub struct Ssgp;

impl Ssgp {
    /// The default configuration for `m` spectral points; see [`SsgpParams`].
    pub fn params(m: usize) -> SsgpParams {
        SsgpParams::new(m)
    }
}

impl SsgpParams {
    /// The objective of this configuration on `data` (noise floor, threads and chunking applied).
    ///
    /// # Errors
    /// As [`SsgpParams::check`].
    pub fn objective<'a>(&self, data: &'a Dataset) -> Result<SsgpObjective<'a>> {
        self.check()?;
        Ok(SsgpObjective::new(data, self.m)?
            .noise_floor(self.noise_floor)?
            .threads(self.threads)
            .chunk_rows(self.chunk_rows)
            .cache_bytes(self.cache_bytes))
    }

    fn objective_for<'a>(&self, data: &'a Dataset, w: &DMatrix<f64>) -> Result<SsgpObjective<'a>> {
        let objective = self.objective(data)?;
        if self.fixed_spectral_points {
            objective.fixed_frequencies(w.clone())
        } else {
            Ok(objective)
        }
    }

    /// Trains SSGP on `data` (§4.2): targets centred; ℓ = half the input ranges (or the given
    /// ones), σ0² = var(y), σn² = σ0²/4; the best of the initial draws of spectral points by
    /// evidence; then nonlinear CG on −log p(y|θ) until convergence or the budget.
    ///
    /// # Errors
    /// As [`SsgpParams::check`]; [`Error::ConstantInput`] / [`Error::ConstantTargets`] when the
    /// initial hyperparameters would be degenerate; [`Error::DimensionMismatch`] if given initial
    /// lengthscales or frequencies do not have D entries/columns; [`Error::NotPositiveDefinite`]
    /// if A cannot be factored at the starting point.
    pub fn fit(&self, data: &Dataset) -> Result<FittedSsgp> {
        self.check()?;
        if let (Some(subset), None) = (self.lengthscales_from_full_gp, &self.initial_lengthscales) {
            let lengthscales =
                crate::full_gp::lengthscales_from_subset(data, subset, self.seed, self.threads)?;
            let mut params = self.clone().initial_lengthscales(lengthscales);
            params.lengthscales_from_full_gp = None;
            return params.fit(data);
        }
        if let NoiseBound::FixedSpectralPoints { fraction } = self.noise_bound {
            let estimate = self
                .clone()
                .fixed_spectral_points(true)
                .noise_bound(NoiseBound::None)
                .fit(data)?
                .noise_variance();
            return self
                .clone()
                .noise_bound(NoiseBound::None)
                .noise_floor(self.noise_floor.max(fraction * estimate))
                .fit(data);
        }
        let d = data.dim();
        let mut init = initial_hyperparameters(data)?;
        if let Some(l) = &self.initial_lengthscales {
            if l.len() != d {
                return Err(Error::DimensionMismatch {
                    what: "initial lengthscales",
                    expected: d,
                    found: l.len(),
                });
            }
            init.lengthscales = l.clone();
        }
        let candidates: Vec<DMatrix<f64>> = match &self.initial_unit_frequencies {
            Some(w) => vec![w.clone()],
            None => {
                let mut rng = StdRng::seed_from_u64(self.seed);
                (0..self.initial_draws)
                    .map(|_| self.density.sample_unit_frequencies(self.m, d, &mut rng))
                    .collect()
            }
        };
        let mut best: Option<(f64, DMatrix<f64>)> = None;
        for w in candidates {
            let hyper = SsgpHyperparameters {
                lengthscales: init.lengthscales.clone(),
                signal_variance: init.signal_variance,
                noise_variance: init.noise_variance,
                unit_frequencies: w,
            };
            let objective = self.objective_for(data, &hyper.unit_frequencies)?;
            let value = objective.value(&objective.pack(&hyper)?)?;
            if best.as_ref().is_none_or(|(b, _)| value < *b) {
                best = Some((value, hyper.unit_frequencies));
            }
        }
        let (_, w0) = best.ok_or(Error::InvalidParameter {
            name: "initial_draws",
            reason: "no spectral points were drawn".into(),
        })?;
        let objective = self.objective_for(data, &w0)?;
        let theta0 = objective.pack(&SsgpHyperparameters {
            lengthscales: init.lengthscales,
            signal_variance: init.signal_variance,
            noise_variance: init.noise_variance,
            unit_frequencies: w0,
        })?;
        let report = minimize(&objective, theta0, &self.optim)?;
        let training = TrainingSummary::from(&report);
        self.build(data, &objective, &report.theta, training)
    }

    /// A fitted model at given hyperparameters and spectral points, without training: a warm
    /// start, or values from elsewhere. The evidence is evaluated at them.
    ///
    /// # Errors
    /// As [`SsgpParams::check`] and [`SsgpObjective::pack`]; [`Error::NotPositiveDefinite`] if A
    /// cannot be factored.
    pub fn condition(&self, data: &Dataset, hyper: &SsgpHyperparameters) -> Result<FittedSsgp> {
        let objective = self.objective_for(data, &hyper.unit_frequencies)?;
        let theta = objective.pack(hyper)?;
        let value = objective.value(&theta)?;
        let training = TrainingSummary {
            initial_neg_log_evidence: value,
            neg_log_evidence: value,
            iterations: 0,
            evaluations: 0,
            termination: crate::optim::Termination::NotStarted,
        };
        self.build(data, &objective, &theta, training)
    }

    fn build(
        &self,
        data: &Dataset,
        objective: &SsgpObjective<'_>,
        theta: &DVector<f64>,
        training: TrainingSummary,
    ) -> Result<FittedSsgp> {
        let hyper = objective.unpack(theta)?;
        let (value, posterior) = objective.posterior(theta)?;
        Ok(FittedSsgp {
            hyper,
            posterior,
            theta: theta.clone(),
            y_mean: data.y_mean(),
            neg_log_evidence: value,
            training,
            fixed: self.fixed_spectral_points,
            noise_floor: self.noise_floor,
            threads: self.threads,
            chunk_rows: self.chunk_rows,
        })
    }
}

impl Regressor for SsgpParams {
    fn name(&self) -> &'static str {
        if self.fixed_spectral_points {
            "ssgp-fixed"
        } else {
            "ssgp"
        }
    }

    fn fit_boxed(&self, data: &Dataset) -> Result<Box<dyn FittedRegressor>> {
        Ok(Box::new(self.fit(data)?))
    }
}

/// A trained SSGP: the hyperparameters and the Gaussian posterior over the 2m weights,
/// N(α, σn²A⁻¹), from which predictions (eq. 7) cost O(m) (mean) and O(m²) (variance) per point.
///
/// With the `serde` feature it can be saved and loaded; use a format that round-trips floats
/// exactly (a binary one, or serde_json with its `float_roundtrip` feature) and predictions after
/// loading are bit-identical.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct FittedSsgp {
    hyper: SsgpHyperparameters,
    posterior: WeightPosterior,
    theta: DVector<f64>,
    y_mean: f64,
    neg_log_evidence: f64,
    training: TrainingSummary,
    fixed: bool,
    noise_floor: f64,
    threads: usize,
    chunk_rows: usize,
}

impl FittedSsgp {
    /// Predictive distribution at `x` (n*×D), eq. 7 via Appendix A:
    /// 𝔼 y* = φ(x*)ᵀα + ȳ, 𝕍 f* = σn² ‖L⁻¹φ(x*)‖², 𝕍 y* = σn² + 𝕍 f*. Test points are processed
    /// in chunks, so memory is O(chunk·m).
    ///
    /// # Errors
    /// [`Error::EmptyData`] for no rows, [`Error::DimensionMismatch`] for a wrong D,
    /// [`Error::NonFinite`] for a NaN or infinity.
    pub fn predict(&self, x: &DMatrix<f64>) -> Result<Predictive> {
        if x.nrows() == 0 {
            return Err(Error::EmptyData {
                what: "no test inputs",
            });
        }
        check_inputs(x, self.dim())?;
        let n = x.nrows();
        let k = 2 * self.num_spectral_points();
        let alpha = MatRef::from_column_major_slice(self.posterior.alpha.as_slice(), k, 1);
        let mut mean = DVector::zeros(n);
        let mut latent = DVector::zeros(n);
        let mut phi = DMatrix::zeros(0, 0);
        let par = linalg::par(self.threads);
        let mut start = 0;
        while start < n {
            let len = self.chunk_rows.min(n - start);
            design_matrix_into(
                linalg::rows_view(x, start, len),
                &self.posterior.omega,
                &mut phi,
                par,
            );
            let mut mu = DMatrix::zeros(len, 1);
            linalg::gemm(view_mut(&mut mu), false, view(&phi), alpha, 1.0, par);
            linalg::solve_lower(
                view(&self.posterior.l),
                view_mut(&mut phi).transpose_mut(),
                par,
            );
            for i in 0..len {
                mean[start + i] = mu[i] + self.y_mean;
                latent[start + i] = self.hyper.noise_variance * phi.row(i).norm_squared();
            }
            start += len;
        }
        Ok(Predictive::from_latent(
            mean,
            latent,
            self.hyper.noise_variance,
        ))
    }

    /// Draws a function from the posterior (as in the paper's Figure 2a): weights
    /// w ~ N(α, σn²A⁻¹), i.e. w = α + σn L⁻ᵀz with z ~ N(0, I); the function can then be
    /// evaluated anywhere.
    pub fn sample_posterior<R: Rng + ?Sized>(&self, rng: &mut R) -> PosteriorSample {
        let k = 2 * self.num_spectral_points();
        let mut z = DMatrix::from_fn(k, 1, |_, _| rng.sample::<f64, _>(StandardNormal));
        linalg::solve_lower_transpose(view(&self.posterior.l), view_mut(&mut z), Par::Seq);
        let weights = &self.posterior.alpha + z.column(0) * self.hyper.noise_variance.sqrt();
        PosteriorSample {
            omega: self.posterior.omega.clone(),
            weights,
            offset: self.y_mean,
        }
    }

    /// Spectral points s_r (m×D), as in φ(x) = [cos(2π s_rᵀx), sin(2π s_rᵀx)].
    pub fn spectral_points(&self) -> DMatrix<f64> {
        features::spectral_points(&self.posterior.omega)
    }

    /// Unit frequencies W (m×D), s_r = W_r ⊘ (2πℓ).
    pub fn unit_frequencies(&self) -> &DMatrix<f64> {
        &self.hyper.unit_frequencies
    }

    /// Lengthscales ℓ (D).
    pub fn lengthscales(&self) -> &DVector<f64> {
        &self.hyper.lengthscales
    }

    /// Signal variance σ0².
    pub fn signal_variance(&self) -> f64 {
        self.hyper.signal_variance
    }

    /// Noise variance σn².
    pub fn noise_variance(&self) -> f64 {
        self.hyper.noise_variance
    }

    /// The lower bound σn² was trained under (the configured floor, or the data-estimated bound).
    pub fn noise_floor(&self) -> f64 {
        self.noise_floor
    }

    /// All hyperparameters in natural units.
    pub fn hyperparameters(&self) -> &SsgpHyperparameters {
        &self.hyper
    }

    /// The parameter vector θ in the objective's layout (see [`SsgpObjective`]).
    pub fn parameters(&self) -> &DVector<f64> {
        &self.theta
    }

    /// Number of spectral points m.
    pub fn num_spectral_points(&self) -> usize {
        self.posterior.omega.nrows()
    }

    /// Input dimension D.
    pub fn dim(&self) -> usize {
        self.posterior.omega.ncols()
    }

    /// Whether the spectral points were held fixed during training.
    pub fn fixed_spectral_points(&self) -> bool {
        self.fixed
    }

    /// Mean of the training targets ȳ (added back to predictions).
    pub fn y_mean(&self) -> f64 {
        self.y_mean
    }

    /// −log p(y|θ) of the (centred) training targets at the fitted θ.
    pub fn neg_log_evidence(&self) -> f64 {
        self.neg_log_evidence
    }

    /// How training went: evidence before and after, iterations, evaluations, termination.
    pub fn training(&self) -> &TrainingSummary {
        &self.training
    }
}

impl FittedRegressor for FittedSsgp {
    fn name(&self) -> &'static str {
        if self.fixed {
            "ssgp-fixed"
        } else {
            "ssgp"
        }
    }

    fn predict(&self, x: &DMatrix<f64>) -> Result<Predictive> {
        FittedSsgp::predict(self, x)
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

/// One function drawn from an SSGP posterior: f(x) = φ(x)ᵀw + ȳ with fixed weights w.
#[derive(Debug, Clone, PartialEq)]
pub struct PosteriorSample {
    omega: DMatrix<f64>,
    weights: DVector<f64>,
    offset: f64,
}

impl PosteriorSample {
    /// Evaluates the sampled function at `x` (n*×D).
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] for a wrong D, [`Error::NonFinite`] for a NaN or infinity.
    pub fn evaluate(&self, x: &DMatrix<f64>) -> Result<DVector<f64>> {
        check_inputs(x, self.omega.ncols())?;
        let phi = features::design_matrix(x, &self.omega, Par::Seq);
        Ok((phi * &self.weights).add_scalar(self.offset))
    }

    /// The 2m weights (cosines first, then sines).
    pub fn weights(&self) -> &DVector<f64> {
        &self.weights
    }
}
