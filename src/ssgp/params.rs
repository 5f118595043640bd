//! SSGP's configuration: a builder and its validated twin (training is `train.rs`).

use super::chunks::{DEFAULT_CACHE_BYTES, DEFAULT_CHUNK_ROWS};
use super::posterior::FittedSsgp;
use super::remedy::CalibrationGuard;
use crate::error::{Error, Result};
use crate::hyperparameters::check_block;
use crate::init::{self, LengthscaleInit};
use crate::kernel::SpectralDensity;
use crate::params::{check_at_least_one, impl_fit, training_builder, TrainingSettings};
use nalgebra::DMatrix;
use std::sync::Arc;

/// A lower bound on σn² estimated from the data before training — a guard against SSGP's
/// overconfidence on small data sets (paper §5.4), where the learned noise collapses towards 0.
///
/// ```
/// use ssgp::rand::{rngs::StdRng, SeedableRng};
/// use ssgp::ssgp::{CalibrationGuard, NoiseBound};
/// use ssgp::{data::sinc_data, Ssgp};
///
/// let train = sinc_data(60, false, 0.05, &mut StdRng::seed_from_u64(0))?;
/// let bounded = Ssgp::params(10)
///     .seed(1)
///     .max_evaluations(100)
///     .calibration(CalibrationGuard::Off)              // the bound instead of the check
///     .noise_bound(NoiseBound::FixedSpectralPoints { fraction: 0.5 })
///     .fit(&train)?;
/// println!("σn² {:.5} (the bound's fit first, then at least half its noise)", bounded.noise_variance());
/// # Ok::<(), ssgp::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum NoiseBound {
    /// No bound beyond the noise floor.
    None,
    /// Fit SSGP with fixed spectral points first (same m, seed and budget; it barely overfits,
    /// §5.4) and bound σn² below by `fraction` times its noise variance.
    FixedSpectralPoints {
        /// Multiplier of the estimated noise variance (1 = the estimate itself).
        fraction: f64,
    },
}

/// Validated SSGP settings (from [`SsgpParams`] by
/// [`ParamGuard::check`](crate::ParamGuard::check)): training and the evidence are implemented
/// here.
///
/// Defaults follow the paper (§4.2) and the original code where they can: spectral points drawn
/// from the kernel's spectral density (the squared exponential's unless set), the best of 100
/// draws as the starting point, then nonlinear CG with a budget of 1000 evaluations (about 500
/// line searches). Three defaults are the crate's: the lengthscales start from a full GP's on
/// up to 1 024 rows (not half the inputs' ranges), σn² has a floor of 10⁻⁴·var(y), and the fit is
/// checked ([`CalibrationGuard::Check`](crate::ssgp::CalibrationGuard::Check)): the model `fit`
/// returns may be the random-feature fit, the training mean, or a learned fit stopped early or
/// kept as trained on 3/4 of the rows, its variances scaled — `training().remedy` says which;
/// `.calibration(CalibrationGuard::Off)` gives the paper's fit alone.
///
/// ```
/// use ssgp::rand::{rngs::StdRng, SeedableRng};
/// use ssgp::ssgp::CalibrationGuard;
/// use ssgp::{data::sinc_data, ParamGuard, Ssgp};
///
/// let train = sinc_data(60, false, 0.05, &mut StdRng::seed_from_u64(0))?;
/// // Validated once (the paper's fit alone, so that the fitted θ is the evidence's).
/// let checked = Ssgp::params(10).seed(1).max_evaluations(100)
///     .calibration(CalibrationGuard::Off).check()?;
/// let fitted = checked.fit(&train)?;
/// let evidence = checked.evidence(&train)?;     // −log p(y|θ) and ∇θ at any θ (eq. 8)
/// let (value, gradient) = ssgp::optim::Objective::value_and_gradient(&evidence, fitted.parameters())?;
/// println!("−log p {value:.2} at the fitted θ ({} entries)", gradient.len());
/// assert!((value - fitted.neg_log_evidence()).abs() <= 1e-9 * value.abs()); // θ holds W
///
/// // With fixed spectral points θ leaves W out: the fitted model's evidence is the one at its
/// // own W (the fit took the best of 100 draws; `evidence` alone fixes the first).
/// let fixed = Ssgp::params(10).seed(1).max_evaluations(100)
///     .calibration(CalibrationGuard::Off).fixed_spectral_points(true);
/// let fitted = fixed.fit(&train)?;
/// let its_w = fitted.hyperparameters().unit_frequencies.clone(); // the used columns
/// let evidence = fixed.initial_unit_frequencies(its_w).check()?.evidence(&train)?;
/// let value = evidence.value(fitted.parameters())?;
/// assert!((value - fitted.neg_log_evidence()).abs() <= 1e-9 * value.abs());
/// assert!(Ssgp::params(0).check().is_err());      // m = 0: an error, before any data
/// # Ok::<(), ssgp::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct ValidSsgpParams {
    pub(crate) m: usize,
    pub(crate) training: TrainingSettings,
    pub(crate) initial_draws: usize,
    /// An explicit spectral density; `None` draws from the kernel's.
    pub(crate) density: Option<Arc<dyn SpectralDensity>>,
    pub(crate) initial_unit_frequencies: Option<DMatrix<f64>>,
    pub(crate) fixed_spectral_points: bool,
    pub(crate) noise_bound: NoiseBound,
    pub(crate) calibration: CalibrationGuard,
    pub(crate) chunk_rows: usize,
    pub(crate) cache_bytes: usize,
}

/// The configuration of an SSGP fit, built with [`super::Ssgp::params`]; [`SsgpParams::fit`]
/// validates it and trains (see [`ValidSsgpParams`] for the defaults).
///
/// ```
/// use ssgp::rand::{rngs::StdRng, SeedableRng};
/// use ssgp::{data::sinc_data, kernel::Kernel, Ssgp};
///
/// let train = sinc_data(80, false, 0.05, &mut StdRng::seed_from_u64(0))?;
/// let fitted = Ssgp::params(10)          // 10 spectral points, 20 basis functions
///     .kernel(Kernel::Matern52)          // spectral points from the Matérn 5/2 density
///     .initial_draws(20)                 // the best of 20 draws starts training (default 100)
///     .max_evaluations(300)
///     .seed(1)
///     .fit(&train)?;
/// assert!(fitted.training().termination.is_success());
/// # Ok::<(), ssgp::Error>(())
/// ```
#[derive(Clone, Debug)]
#[must_use]
pub struct SsgpParams(pub(crate) ValidSsgpParams);

training_builder!(SsgpParams);
impl_fit!(SsgpParams, ValidSsgpParams, FittedSsgp);

impl SsgpParams {
    pub(crate) fn new(m: usize) -> Self {
        Self(ValidSsgpParams {
            m,
            training: TrainingSettings {
                lengthscales: init::DEFAULT_START,
                ..TrainingSettings::default()
            },
            initial_draws: 100,
            density: None,
            initial_unit_frequencies: None,
            fixed_spectral_points: false,
            noise_bound: NoiseBound::None,
            calibration: CalibrationGuard::Check,
            chunk_rows: DEFAULT_CHUNK_ROWS,
            cache_bytes: DEFAULT_CACHE_BYTES,
        })
    }

    crate::params::setters! {
        /// How the fit guards its error bars against overfitted spectral points (default
        /// [`CalibrationGuard::Check`]; [`CalibrationGuard::Off`] for the paper's fit alone).
        calibration(calibration: CalibrationGuard) => calibration;
        /// How many sets of spectral points to draw before training; training starts from the one
        /// with the best evidence (default 100, as the original code). Each draw costs one
        /// evaluation of the evidence without gradient.
        initial_draws(draws: usize) => initial_draws;
        /// Keeps the spectral points at their initial draw and learns only ℓ, σ0², σn² (the paper's
        /// "SSGP fixed spectral points", §5.2): the frequencies still scale with the lengthscales.
        fixed_spectral_points(fixed: bool) => fixed_spectral_points;
        /// A lower bound on σn² estimated from the data (default [`NoiseBound::None`]); combined
        /// with the noise floor by taking the larger.
        noise_bound(bound: NoiseBound) => noise_bound;
        /// Rows of the design matrix computed at a time (default 4096), in training and in
        /// predictions: a chunk's buffers (chunk_rows×2m and chunk_rows×D) are checked before they
        /// are allocated, so a value too large for memory is `Error::Allocation`, not an abort.
        chunk_rows(rows: usize) => chunk_rows;
        /// Memory (bytes) allowed for keeping the n×2m design matrix between the value and the
        /// gradient pass (default 512 MiB): as many leading row chunks as fit are kept and the rest
        /// are computed twice per evaluation, so training memory is at most this plus O(chunk·m +
        /// m² + mD) beyond the data; 0 streams it.
        cache_bytes(bytes: usize) => cache_bytes;
        /// A spectral density to draw the spectral points from instead of the kernel's (set with
        /// `kernel`; the default is the squared exponential's, N(0, I)).
        spectral_density(density: Arc<dyn SpectralDensity>) => density = Some;
        /// Initial unit frequencies W (m×D, one column per **used** input: columns constant on
        /// the training data are left out first; spectral points s_r = W_r ⊘ (2πℓ)) instead of
        /// random draws: a warm start, or values from elsewhere. They start the learned fit (and
        /// are the fixed spectral points with
        /// [`fixed_spectral_points`](Self::fixed_spectral_points)); the random-feature fit of
        /// the calibration check ([`CalibrationGuard`]) always draws its own from the spectral
        /// density with the seed. Frequencies learned on rows the check then holds out (a refit
        /// on data that include the first fit's) have seen those rows: the learned fit's
        /// held-out score is then optimistic.
        initial_unit_frequencies(w: DMatrix<f64>) => initial_unit_frequencies = Some;
    }

    /// Initial lengthscales learned by a full GP on a seeded random subset of `subset` training
    /// points (all of them if fewer), as the paper does for Pumadyn-32nm (§5.2) to avoid a bad
    /// local optimum on problems with irrelevant inputs.
    pub fn initial_lengthscales_from_full_gp(self, subset: usize) -> Self {
        self.lengthscale_init(LengthscaleInit::FullGpSubset(subset))
    }
}

impl ValidSsgpParams {
    /// Checks everything that can be checked without data.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for m = 0, no initial draws, a zero chunk size, a negative or
    /// non-finite noise floor, bad initial lengthscales or a bad optimiser budget;
    /// [`Error::NonFinite`] / [`Error::DimensionMismatch`] for bad initial frequencies.
    fn validate(&self) -> Result<()> {
        check_at_least_one(
            "m",
            self.m,
            "the number of spectral points must be at least 1",
        )?;
        if self.initial_draws == 0 && self.initial_unit_frequencies.is_none() {
            return Err(Error::InvalidParameter {
                name: "initial_draws",
                reason: "at least one draw of spectral points is needed".into(),
            });
        }
        check_at_least_one("chunk_rows", self.chunk_rows, "must be at least 1")?;
        self.training.validate()?;
        if let NoiseBound::FixedSpectralPoints { fraction } = self.noise_bound {
            if !(fraction > 0.0 && fraction.is_finite()) {
                return Err(Error::InvalidParameter {
                    name: "noise_bound",
                    reason: format!("fraction {fraction} is not positive and finite"),
                });
            }
        }
        if let Some(w) = &self.initial_unit_frequencies {
            check_block(
                w,
                (self.m, "initial unit frequencies (rows, m)"),
                (w.ncols(), "initial unit frequencies (columns, D)"),
                "initial unit frequencies",
            )?;
        }
        Ok(())
    }

    /// `ssgp`, or `ssgp-fixed` with fixed spectral points.
    pub fn name(&self) -> &'static str {
        if self.fixed_spectral_points {
            "ssgp-fixed"
        } else {
            "ssgp"
        }
    }

    /// Number of spectral points m (2m basis functions).
    pub fn num_spectral_points(&self) -> usize {
        self.m
    }

    /// The settings shared with the other models (seed, optimiser, threads, noise floor, ℓ start).
    pub fn training(&self) -> &TrainingSettings {
        &self.training
    }

    /// The spectral density the spectral points are drawn from: the one given, or the kernel's.
    pub fn density(&self) -> Arc<dyn SpectralDensity> {
        self.density
            .clone()
            .unwrap_or_else(|| self.training.kernel.spectral_density())
    }
}
