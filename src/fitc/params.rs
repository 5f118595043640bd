//! The FITC configuration: a builder, its validation, training and conditioning.

use super::objective::{self, check_pseudo_shape, factorize, pack, FitcObjective, Hyper};
use super::FittedFitc;
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::linalg::par;
use crate::model::{
    initial_hyperparameters, FittedRegressor, NoiseParam, Regressor, TrainingSummary,
};
use crate::optim::{minimize, OptimConfig, Termination};
use nalgebra::{DMatrix, DVector};
use rand::SeedableRng;

/// A configured FITC model (Snelson & Ghahramani's sparse pseudo-input GP), built by
/// [`super::Fitc::params`] and fitted with [`FitcParams::fit`].
///
/// Defaults: seed 0, [`OptimConfig::default`], all cores, no noise floor, jitter
/// [`objective::DEFAULT_JITTER`] = 1e-6, pseudo-inputs a random subset of the training inputs and
/// learned, lengthscales starting at half the range of each input.
#[derive(Debug, Clone)]
pub struct FitcParams {
    m: usize,
    seed: u64,
    optim: OptimConfig,
    threads: usize,
    noise_floor: f64,
    jitter: f64,
    pseudo_inputs: Option<DMatrix<f64>>,
    fixed_pseudo_inputs: bool,
    initial_lengthscales: Option<DVector<f64>>,
    lengthscales_from_full_gp: Option<usize>,
}

impl FitcParams {
    pub(super) fn new(m: usize) -> Self {
        Self {
            m,
            seed: 0,
            optim: OptimConfig::default(),
            threads: 0,
            noise_floor: 0.0,
            jitter: objective::DEFAULT_JITTER,
            pseudo_inputs: None,
            fixed_pseudo_inputs: false,
            initial_lengthscales: None,
            lengthscales_from_full_gp: None,
        }
    }

    /// The seed of the random choice of initial pseudo-inputs (default 0).
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// The optimiser's budget and stopping rule (default [`OptimConfig::default`]).
    pub fn optim(mut self, optim: OptimConfig) -> Self {
        self.optim = optim;
        self
    }

    /// The maximum number of optimiser iterations (line searches); 0 evaluates θ₀ only.
    pub fn max_iterations(mut self, max_iterations: u64) -> Self {
        self.optim.max_iterations = max_iterations;
        self
    }

    /// The maximum number of objective evaluations.
    pub fn max_evaluations(mut self, max_evaluations: usize) -> Self {
        self.optim.max_evaluations = max_evaluations;
        self
    }

    /// Threads for the linear algebra (0 = all cores, the default; 1 = sequential).
    pub fn threads(mut self, threads: usize) -> Self {
        self.threads = threads;
        self
    }

    /// A lower bound on the noise variance: σn² = floor + e^{2p} (default 0).
    pub fn noise_floor(mut self, floor: f64) -> Self {
        self.noise_floor = floor;
        self
    }

    /// The jitter δ added to the diagonal of $K_{uu}$ (absolute, default 1e-6 as in Snelson's code).
    pub fn jitter(mut self, jitter: f64) -> Self {
        self.jitter = jitter;
        self
    }

    /// Starting pseudo-inputs X̄ (m×D, one per row) instead of a random subset of the training inputs.
    pub fn pseudo_inputs(mut self, pseudo_inputs: DMatrix<f64>) -> Self {
        self.pseudo_inputs = Some(pseudo_inputs);
        self
    }

    /// Keeps the pseudo-inputs at their starting values and learns only the D + 2 hyperparameters.
    pub fn fixed_pseudo_inputs(mut self, fixed: bool) -> Self {
        self.fixed_pseudo_inputs = fixed;
        self
    }

    /// Starting lengthscales learned by a full GP on a seeded random subset of `subset` training
    /// points (all if fewer), as the paper does for Pumadyn-32nm (§5.2). Ignored when lengthscales
    /// are given.
    pub fn initial_lengthscales_from_full_gp(mut self, subset: usize) -> Self {
        self.lengthscales_from_full_gp = Some(subset);
        self
    }

    /// Starting lengthscales ℓ (D) instead of half the range of each input.
    pub fn initial_lengthscales(mut self, lengthscales: DVector<f64>) -> Self {
        self.initial_lengthscales = Some(lengthscales);
        self
    }

    /// The number of pseudo-inputs m.
    pub fn m(&self) -> usize {
        self.m
    }

    /// Validates the configuration (the parts that do not depend on the data).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for m = 0, a negative or non-finite noise floor or jitter, a bad
    /// optimiser budget, user pseudo-inputs without m rows, or non-positive initial lengthscales;
    /// [`Error::NonFinite`] for a NaN or infinity in the user pseudo-inputs.
    pub fn check(&self) -> Result<()> {
        if self.lengthscales_from_full_gp == Some(0) {
            return Err(Error::InvalidParameter {
                name: "lengthscales_from_full_gp",
                reason: "the subset must hold at least one point".into(),
            });
        }
        if self.m == 0 {
            return Err(Error::InvalidParameter {
                name: "m",
                reason: "FITC needs at least one pseudo-input".into(),
            });
        }
        NoiseParam {
            floor: self.noise_floor,
        }
        .validate()?;
        objective::validate_jitter(self.jitter)?;
        self.optim.validate()?;
        if let Some(p) = &self.pseudo_inputs {
            check_pseudo_shape(p, self.m, p.ncols())?;
        }
        if let Some(l) = &self.initial_lengthscales {
            if let Some(bad) = l.iter().find(|v| !(**v > 0.0 && v.is_finite())) {
                return Err(Error::InvalidParameter {
                    name: "initial_lengthscales",
                    reason: format!("{bad} is not a finite positive lengthscale"),
                });
            }
        }
        Ok(())
    }

    /// Learns θ on `data` by minimising −log p(y|θ) (targets centred by their mean) from the
    /// initial values: ℓ = half the range of each input (or the given lengthscales), σ0² = var(y),
    /// σn² = σ0²/4, pseudo-inputs a seeded random subset of m distinct training inputs (or the given
    /// ones). The returned model never has a worse evidence than θ₀.
    ///
    /// # Errors
    /// As [`FitcParams::check`]; [`Error::DimensionMismatch`] if the given pseudo-inputs or
    /// lengthscales do not have D columns/entries; [`Error::InvalidParameter`] if m > n and no
    /// pseudo-inputs are given; [`Error::ConstantInput`] for a constant input column (unless
    /// lengthscales are given), [`Error::ConstantTargets`]; [`Error::NotPositiveDefinite`] if the
    /// initial θ cannot be factored.
    pub fn fit(&self, data: &Dataset) -> Result<FittedFitc> {
        self.check()?;
        if let (Some(subset), None) = (self.lengthscales_from_full_gp, &self.initial_lengthscales) {
            let lengthscales =
                crate::full_gp::lengthscales_from_subset(data, subset, self.seed, self.threads)?;
            let mut params = self.clone().initial_lengthscales(lengthscales);
            params.lengthscales_from_full_gp = None;
            return params.fit(data);
        }
        let (n, dim) = (data.len(), data.dim());
        let pseudo = match &self.pseudo_inputs {
            Some(p) => {
                check_pseudo_shape(p, self.m, dim)?;
                p.clone()
            }
            None => {
                if self.m > n {
                    return Err(Error::InvalidParameter {
                        name: "m",
                        reason: format!(
                            "{} pseudo-inputs cannot be drawn from {n} training points",
                            self.m
                        ),
                    });
                }
                let mut rng = rand::rngs::StdRng::seed_from_u64(self.seed);
                let rows = rand::seq::index::sample(&mut rng, n, self.m).into_vec();
                data.x().select_rows(&rows)
            }
        };
        let (lengthscales, signal_variance, noise_variance) = self.initial_values(data)?;
        let noise = NoiseParam {
            floor: self.noise_floor,
        };
        let y = centred(data);
        let mut objective = FitcObjective::new(data.x(), &y, self.m)?
            .jitter(self.jitter)?
            .noise_floor(self.noise_floor)?
            .threads(self.threads);
        if self.fixed_pseudo_inputs {
            objective = objective.fixed_pseudo_inputs(&pseudo)?;
        }
        let theta0 = pack(
            &lengthscales,
            signal_variance,
            noise.param(noise_variance),
            (!self.fixed_pseudo_inputs).then_some(&pseudo),
        );
        let report = minimize(&objective, theta0, &self.optim)?;
        let theta = if self.fixed_pseudo_inputs {
            let mut full = DVector::zeros(dim + 2 + pseudo.len());
            full.rows_mut(0, dim + 2).copy_from(&report.theta);
            full.as_mut_slice()[dim + 2..].copy_from_slice(pseudo.as_slice());
            full
        } else {
            report.theta.clone()
        };
        self.build(data, &y, theta, Some(TrainingSummary::from(&report)))
    }

    /// A fitted model at given parameters, without training: conditions on `data` (targets
    /// centred by their mean) at θ in the **full** layout of [`super::objective`]
    /// (`[log ℓ, log σ0, p_noise, vec(X̄)]`, length D + 2 + mD, whatever
    /// [`FitcParams::fixed_pseudo_inputs`] says), using this configuration's jitter, noise floor
    /// and threads. The training summary reports no iterations and no evaluations, with
    /// [`Termination::NotStarted`] and the evidence at θ as both initial and final value.
    ///
    /// # Errors
    /// As [`FitcParams::check`]; [`Error::DimensionMismatch`] for a θ of the wrong length,
    /// [`Error::NonFinite`] for a NaN or infinity in θ, [`Error::NotPositiveDefinite`] if θ cannot
    /// be factored.
    pub fn condition(&self, data: &Dataset, theta: &DVector<f64>) -> Result<FittedFitc> {
        self.check()?;
        let expected = data.dim() + 2 + self.m * data.dim();
        if theta.len() != expected {
            return Err(Error::DimensionMismatch {
                what: "FITC parameter vector",
                expected,
                found: theta.len(),
            });
        }
        crate::data::check_finite_vector("FITC parameters", theta)?;
        self.build(data, &centred(data), theta.clone(), None)
    }

    /// Factorises at the full θ and caches what prediction needs; without a training summary, one
    /// saying "not trained" is made.
    fn build(
        &self,
        data: &Dataset,
        y: &DVector<f64>,
        theta: DVector<f64>,
        training: Option<TrainingSummary>,
    ) -> Result<FittedFitc> {
        let noise = NoiseParam {
            floor: self.noise_floor,
        };
        let hyper = Hyper::unpack(&theta, data.dim(), self.m, noise, None);
        let f = factorize(data.x(), y, &hyper, self.jitter, par(self.threads))?;
        let training = training.unwrap_or(TrainingSummary {
            initial_neg_log_evidence: f.neg_log_evidence,
            neg_log_evidence: f.neg_log_evidence,
            iterations: 0,
            evaluations: 0,
            termination: Termination::NotStarted,
        });
        Ok(FittedFitc::from_factors(
            theta,
            &hyper,
            f,
            data.y_mean(),
            training,
            self.threads,
        ))
    }

    /// (ℓ, σ0², σn²) to start from.
    fn initial_values(&self, data: &Dataset) -> Result<(DVector<f64>, f64, f64)> {
        match &self.initial_lengthscales {
            None => {
                let h = initial_hyperparameters(data)?;
                Ok((h.lengthscales, h.signal_variance, h.noise_variance))
            }
            Some(l) => {
                if l.len() != data.dim() {
                    return Err(Error::DimensionMismatch {
                        what: "initial lengthscales",
                        expected: data.dim(),
                        found: l.len(),
                    });
                }
                let mean = data.y_mean();
                let var = data.y().map(|v| (v - mean).powi(2)).mean();
                if var <= 0.0 {
                    return Err(Error::ConstantTargets { value: mean });
                }
                Ok((l.clone(), var, var / 4.0))
            }
        }
    }
}

/// y − ȳ.
fn centred(data: &Dataset) -> DVector<f64> {
    data.y().add_scalar(-data.y_mean())
}

impl Regressor for FitcParams {
    fn name(&self) -> &'static str {
        "fitc"
    }

    fn fit_boxed(&self, data: &Dataset) -> Result<Box<dyn FittedRegressor>> {
        Ok(Box::new(self.fit(data)?))
    }
}
