//! SSGP's configuration: a builder whose values are checked before any work is done.

use crate::error::{Error, Result};
use crate::kernel::{SpectralDensity, SquaredExponential};
use crate::optim::{Observer, OptimConfig};
use crate::ssgp::objective::{DEFAULT_CACHE_BYTES, DEFAULT_CHUNK_ROWS};
use nalgebra::{DMatrix, DVector};
use std::sync::Arc;

/// A lower bound on σn² estimated from the data before training — a guard against SSGP's
/// overconfidence on small data sets (paper §5.4), where the learned noise collapses towards 0.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum NoiseBound {
    /// No bound beyond [`SsgpParams::noise_floor`].
    None,
    /// Fit SSGP with fixed spectral points first (same m, seed and budget; it barely overfits,
    /// §5.4) and bound σn² below by `fraction` times its noise variance.
    FixedSpectralPoints {
        /// Multiplier of the estimated noise variance (1 = the estimate itself).
        fraction: f64,
    },
}

/// Configuration of an SSGP fit; build it with [`super::Ssgp::params`] and train with
/// [`SsgpParams::fit`](super::SsgpParams::fit).
///
/// Defaults follow the paper (§4.2) and the original code: spectral points drawn from the
/// squared-exponential spectral density, the best of 100 draws as the starting point, then
/// nonlinear CG with a budget of 1000 evaluations (about 500 line searches).
#[derive(Clone, Debug)]
pub struct SsgpParams {
    pub(crate) m: usize,
    pub(crate) seed: u64,
    pub(crate) initial_draws: usize,
    pub(crate) fixed_spectral_points: bool,
    pub(crate) noise_floor: f64,
    pub(crate) noise_bound: NoiseBound,
    pub(crate) optim: OptimConfig,
    pub(crate) threads: usize,
    pub(crate) chunk_rows: usize,
    pub(crate) cache_bytes: usize,
    pub(crate) density: Arc<dyn SpectralDensity>,
    pub(crate) initial_lengthscales: Option<DVector<f64>>,
    pub(crate) lengthscales_from_full_gp: Option<usize>,
    pub(crate) initial_unit_frequencies: Option<DMatrix<f64>>,
}

impl SsgpParams {
    pub(crate) fn new(m: usize) -> Self {
        Self {
            m,
            seed: 0,
            initial_draws: 100,
            fixed_spectral_points: false,
            noise_floor: 0.0,
            noise_bound: NoiseBound::None,
            optim: OptimConfig::default(),
            threads: 0,
            chunk_rows: DEFAULT_CHUNK_ROWS,
            cache_bytes: DEFAULT_CACHE_BYTES,
            density: Arc::new(SquaredExponential),
            initial_lengthscales: None,
            lengthscales_from_full_gp: None,
            initial_unit_frequencies: None,
        }
    }

    /// Seed of the random draws of spectral points: the same seed gives the same fit.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// How many sets of spectral points to draw before training; training starts from the one
    /// with the best evidence (default 100, as the original code). Each draw costs one evaluation
    /// of the evidence without gradient.
    pub fn initial_draws(mut self, draws: usize) -> Self {
        self.initial_draws = draws;
        self
    }

    /// Keeps the spectral points at their initial draw and learns only ℓ, σ0², σn² (the paper's
    /// "SSGP fixed spectral points", §5.2): the frequencies still scale with the lengthscales.
    pub fn fixed_spectral_points(mut self, fixed: bool) -> Self {
        self.fixed_spectral_points = fixed;
        self
    }

    /// Lower bound on the noise variance σn² (§5.2; e.g. bin²/12 for targets quantised in bins).
    pub fn noise_floor(mut self, floor: f64) -> Self {
        self.noise_floor = floor;
        self
    }

    /// A lower bound on σn² estimated from the data (default [`NoiseBound::None`]); combined with
    /// [`SsgpParams::noise_floor`] by taking the larger.
    pub fn noise_bound(mut self, bound: NoiseBound) -> Self {
        self.noise_bound = bound;
        self
    }

    /// The optimiser's budget and stopping rule.
    pub fn optim(mut self, optim: OptimConfig) -> Self {
        self.optim = optim;
        self
    }

    /// Maximum optimiser iterations (line searches).
    pub fn max_iterations(mut self, iterations: u64) -> Self {
        self.optim.max_iterations = iterations;
        self
    }

    /// Maximum evaluations of the evidence and its gradient.
    pub fn max_evaluations(mut self, evaluations: usize) -> Self {
        self.optim.max_evaluations = evaluations;
        self
    }

    /// A callback that receives the optimiser's progress after every iteration.
    pub fn observer(mut self, observer: Observer) -> Self {
        self.optim.observer = Some(observer);
        self
    }

    /// Threads (0 = all of rayon's, by default one per core; 1 = sequential). The evidence and
    /// gradient process row chunks in parallel, one single-threaded chunk job per thread, and add
    /// the partial sums in chunk order: a fit is reproducible for a given seed and thread count.
    pub fn threads(mut self, threads: usize) -> Self {
        self.threads = threads;
        self
    }

    /// Rows of the design matrix computed at a time (default 4096).
    pub fn chunk_rows(mut self, rows: usize) -> Self {
        self.chunk_rows = rows;
        self
    }

    /// Memory (bytes) allowed for keeping the n×2m design matrix between the value and the
    /// gradient pass (default 512 MiB): as many leading row chunks as fit are kept and the rest are
    /// computed twice per evaluation, so training memory is at most this plus O(chunk·m + m² + mD)
    /// beyond the data.
    pub fn cache_bytes(mut self, bytes: usize) -> Self {
        self.cache_bytes = bytes;
        self
    }

    /// The kernel whose spectral density the spectral points are drawn from (default
    /// [`SquaredExponential`]).
    pub fn spectral_density(mut self, density: Arc<dyn SpectralDensity>) -> Self {
        self.density = density;
        self
    }

    /// Initial lengthscales instead of half the input ranges (e.g. from a full GP on a subset,
    /// as the paper does for Pumadyn-32nm).
    pub fn initial_lengthscales(mut self, lengthscales: DVector<f64>) -> Self {
        self.initial_lengthscales = Some(lengthscales);
        self
    }

    /// Initial lengthscales learned by a full GP on a seeded random subset of `subset` training
    /// points (all of them if fewer), as the paper does for Pumadyn-32nm (§5.2) to avoid a bad
    /// local optimum on problems with irrelevant inputs. Ignored when lengthscales are given.
    pub fn initial_lengthscales_from_full_gp(mut self, subset: usize) -> Self {
        self.lengthscales_from_full_gp = Some(subset);
        self
    }

    /// Initial unit frequencies W (m×D; spectral points s_r = W_r ⊘ (2πℓ)) instead of random
    /// draws: a warm start, or values from elsewhere.
    pub fn initial_unit_frequencies(mut self, w: DMatrix<f64>) -> Self {
        self.initial_unit_frequencies = Some(w);
        self
    }

    /// The seed of the initial draws.
    pub fn seed_value(&self) -> u64 {
        self.seed
    }

    /// Number of spectral points m (2m basis functions).
    pub fn num_spectral_points(&self) -> usize {
        self.m
    }

    /// Checks everything that can be checked without data.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for m = 0, no initial draws, a zero chunk size, a negative or
    /// non-finite noise floor, non-positive initial lengthscales or a bad optimiser budget;
    /// [`Error::NonFinite`] / [`Error::DimensionMismatch`] for bad initial frequencies.
    pub fn check(&self) -> Result<()> {
        if self.m == 0 {
            return Err(Error::InvalidParameter {
                name: "m",
                reason: "the number of spectral points must be at least 1".into(),
            });
        }
        if self.initial_draws == 0 && self.initial_unit_frequencies.is_none() {
            return Err(Error::InvalidParameter {
                name: "initial_draws",
                reason: "at least one draw of spectral points is needed".into(),
            });
        }
        if self.lengthscales_from_full_gp == Some(0) {
            return Err(Error::InvalidParameter {
                name: "lengthscales_from_full_gp",
                reason: "the subset must hold at least one point".into(),
            });
        }
        if self.chunk_rows == 0 {
            return Err(Error::InvalidParameter {
                name: "chunk_rows",
                reason: "must be at least 1".into(),
            });
        }
        crate::model::NoiseParam {
            floor: self.noise_floor,
        }
        .validate()?;
        self.optim.validate()?;
        if let NoiseBound::FixedSpectralPoints { fraction } = self.noise_bound {
            if !(fraction > 0.0 && fraction.is_finite()) {
                return Err(Error::InvalidParameter {
                    name: "noise_bound",
                    reason: format!("fraction {fraction} is not positive and finite"),
                });
            }
        }
        if let Some(l) = &self.initial_lengthscales {
            if l.iter().any(|v| !(*v > 0.0 && v.is_finite())) {
                return Err(Error::InvalidParameter {
                    name: "initial_lengthscales",
                    reason: "every lengthscale must be positive and finite".into(),
                });
            }
        }
        if let Some(w) = &self.initial_unit_frequencies {
            if w.nrows() != self.m {
                return Err(Error::DimensionMismatch {
                    what: "initial unit frequencies (rows = m)",
                    expected: self.m,
                    found: w.nrows(),
                });
            }
            crate::data::check_finite("initial unit frequencies", w)?;
        }
        Ok(())
    }
}
