//! Start values of training: one place for every model's initial θ.
//!
//! - **Lengthscales**, by a [`LengthscaleInit`] strategy: half the range of each input (the
//!   paper's §4.2, step 1), given values, or those a full GP learns on a random subset (the
//!   paper's choice for Pumadyn-32nm, §5.2, where most inputs are irrelevant).
//! - **Variances**: σ0² = var(y) (the 1/n variance) and σn² = σ0²/4 (§4.2).
//! - **SSGP's spectral points**: the best, by evidence, of K draws from the kernel's spectral
//!   density (§4.2, step 2; the original code's `ssgpr_ui` draws 100).
//! - **FITC's pseudo-inputs**: a seeded random subset of the training inputs (Snelson's choice).

use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::full_gp::FullGp;
use crate::hyperparameters::Hyperparameters;
use crate::kernel::SpectralDensity;
use crate::params::{ParamGuard, TrainingSettings};
use nalgebra::{DMatrix, DVector};
use rand::rngs::StdRng;
use rand::SeedableRng;

/// How the lengthscales start.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum LengthscaleInit {
    /// ℓ_d = half the range of input d (the paper's default, §4.2).
    #[default]
    HalfRange,
    /// The given lengthscales (D).
    Given(DVector<f64>),
    /// The lengthscales a full GP learns on a seeded random subset of this many training points
    /// (all of them if fewer), from half ranges, with the default optimiser settings (§5.2).
    FullGpSubset(usize),
}

impl LengthscaleInit {
    /// Checks what can be checked without data.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for non-positive or non-finite given lengthscales, or an empty
    /// subset.
    pub fn validate(&self) -> Result<()> {
        match self {
            Self::HalfRange => Ok(()),
            Self::Given(l) => match l.iter().find(|v| !(**v > 0.0 && v.is_finite())) {
                Some(bad) => Err(Error::InvalidParameter {
                    name: "initial_lengthscales",
                    reason: format!("{bad} is not a finite positive lengthscale"),
                }),
                None if l.is_empty() => Err(Error::InvalidParameter {
                    name: "initial_lengthscales",
                    reason: "no lengthscales given".into(),
                }),
                None => Ok(()),
            },
            Self::FullGpSubset(0) => Err(Error::InvalidParameter {
                name: "lengthscales_from_full_gp",
                reason: "the subset must hold at least one point".into(),
            }),
            Self::FullGpSubset(_) => Ok(()),
        }
    }
}

/// ℓ_d = half the range of input column d.
///
/// # Errors
/// [`Error::ConstantInput`] for a column with zero range (ℓ_d would be 0).
pub fn half_ranges(data: &Dataset) -> Result<DVector<f64>> {
    let x = data.x();
    let mut lengthscales = DVector::zeros(x.ncols());
    for (d, col) in x.column_iter().enumerate() {
        let (lo, hi) = (col.min(), col.max());
        if hi - lo <= 0.0 {
            return Err(Error::ConstantInput {
                column: d,
                value: lo,
            });
        }
        lengthscales[d] = 0.5 * (hi - lo);
    }
    Ok(lengthscales)
}

/// The lengthscales a full GP learns (from half ranges, with the default optimiser settings) on
/// a random subset of `subset` points of `data` (all of them if fewer), drawn with `seed`: the
/// start the paper uses for Pumadyn-32nm (§5.2), [`LengthscaleInit::FullGpSubset`].
///
/// # Errors
/// As [`crate::full_gp::ValidFullGpParams::learn`].
pub fn full_gp_lengthscales(
    data: &Dataset,
    subset: usize,
    seed: u64,
    threads: usize,
) -> Result<DVector<f64>> {
    let report = FullGp::params()
        .seed(seed)
        .threads(threads)
        .hyperparameter_subset(Some(subset.min(data.len())))
        .check()?
        .learn(data)?;
    Ok(report.theta.rows(0, data.dim()).map(f64::exp))
}

/// The starting hyperparameters of a model trained with `settings` on `data`: ℓ by the settings'
/// [`LengthscaleInit`], σ0² = var(y), σn² = σ0²/4.
///
/// # Errors
/// [`Error::ConstantInput`] for a constant column when half ranges are needed,
/// [`Error::DimensionMismatch`] if given lengthscales do not have D entries,
/// [`Error::ConstantTargets`] if var(y) = 0; the full GP's errors for [`LengthscaleInit::FullGpSubset`].
pub(crate) fn start(data: &Dataset, settings: &TrainingSettings) -> Result<Hyperparameters> {
    let lengthscales = match &settings.lengthscales {
        LengthscaleInit::HalfRange => half_ranges(data)?,
        LengthscaleInit::Given(l) => {
            if l.len() != data.dim() {
                return Err(Error::DimensionMismatch {
                    what: "initial lengthscales",
                    expected: data.dim(),
                    found: l.len(),
                });
            }
            l.clone()
        }
        LengthscaleInit::FullGpSubset(subset) => {
            full_gp_lengthscales(data, *subset, settings.seed, settings.threads)?
        }
    };
    let mean = data.y_mean();
    let var = data.y().map(|v| (v - mean).powi(2)).mean();
    if var <= 0.0 {
        return Err(Error::ConstantTargets { value: mean });
    }
    Ok(Hyperparameters {
        lengthscales,
        signal_variance: var,
        noise_variance: var / 4.0,
    })
}

/// SSGP's initial unit frequencies W (m×D): the given ones, or the best of `draws` draws from
/// `density` (seeded with `seed`) by `neg_log_evidence` — the first of equal values wins.
///
/// # Errors
/// Whatever `neg_log_evidence` returns; [`Error::InvalidParameter`] if nothing was drawn.
pub(crate) fn unit_frequencies(
    given: Option<&DMatrix<f64>>,
    density: &dyn SpectralDensity,
    (m, dim): (usize, usize),
    draws: usize,
    seed: u64,
    neg_log_evidence: impl Fn(&DMatrix<f64>) -> Result<f64>,
) -> Result<DMatrix<f64>> {
    let candidates: Vec<DMatrix<f64>> = match given {
        Some(w) => vec![w.clone()],
        None => {
            let mut rng = StdRng::seed_from_u64(seed);
            (0..draws)
                .map(|_| density.sample_unit_frequencies(m, dim, &mut rng))
                .collect()
        }
    };
    let mut best: Option<(f64, DMatrix<f64>)> = None;
    for w in candidates {
        let value = neg_log_evidence(&w)?;
        if best.as_ref().is_none_or(|(b, _)| value < *b) {
            best = Some((value, w));
        }
    }
    best.map(|(_, w)| w).ok_or(Error::InvalidParameter {
        name: "initial_draws",
        reason: "no spectral points were drawn".into(),
    })
}

/// FITC's initial pseudo-inputs (m×D): the given ones, or m rows of the training inputs drawn
/// without replacement with `seed`.
///
/// # Errors
/// [`Error::InvalidParameter`] if m > n and no pseudo-inputs are given.
pub(crate) fn pseudo_inputs(
    given: Option<&DMatrix<f64>>,
    data: &Dataset,
    m: usize,
    seed: u64,
) -> Result<DMatrix<f64>> {
    if let Some(p) = given {
        return Ok(p.clone());
    }
    let n = data.len();
    if m > n {
        return Err(Error::InvalidParameter {
            name: "m",
            reason: format!("{m} pseudo-inputs cannot be drawn from {n} training points"),
        });
    }
    let mut rng = StdRng::seed_from_u64(seed);
    let rows = rand::seq::index::sample(&mut rng, n, m).into_vec();
    Ok(data.x().select_rows(&rows))
}
