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
use crate::hyperparameters::Hyperparameters;
use crate::kernel::SpectralDensity;
use crate::optim::{Observer, Phase, Progress};
use crate::random::seeded;
use nalgebra::{DMatrix, DVector};
use rand::Rng;
use std::time::Instant;

/// The lengthscale start of SSGP and FITC by default: a full GP on 1024 points
/// ([`LengthscaleInit::FullGpSubset`]).
///
/// Measured (seeds 1–3, 1000 evaluations): on 50 inputs of which 3 matter (n = 500) SSGP with 50
/// spectral points reaches a test NMSE of 0.018–0.024 from it against 1.1–1.6 from half ranges,
/// which overfit the irrelevant inputs; on Kin-40k (200 basis functions) 0.0088–0.0101 against
/// 0.0083–0.0087; on the sinc toy both reach the same. A full GP on 1024 points costs 1–5 s on
/// a 2-core machine, whatever n (it stops at [`crate::full_gp::START_TOLERANCE`]). The full GP
/// itself starts from half ranges.
pub const DEFAULT_START: LengthscaleInit = LengthscaleInit::FullGpSubset(1024);

/// How the lengthscales start.
///
/// ```
/// use ssgp::nalgebra::DVector;
/// use ssgp::rand::{rngs::StdRng, SeedableRng};
/// use ssgp::{data::sinc_data, LengthscaleInit, Ssgp};
///
/// let train = sinc_data(100, false, 0.05, &mut StdRng::seed_from_u64(0))?;
/// for start in [
///     LengthscaleInit::HalfRange,                          // the paper's
///     LengthscaleInit::FullGpSubset(64),                   // a full GP on 64 rows (the default: 1 024)
///     LengthscaleInit::Given(DVector::from_element(1, 1.5)), // yours, one per input
/// ] {
///     let fitted = Ssgp::params(10).seed(1).max_evaluations(50).lengthscale_init(start).fit(&train)?;
///     println!("ℓ = {:.3}", fitted.lengthscales()[0]);
/// }
/// # Ok::<(), ssgp::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
pub enum LengthscaleInit {
    /// ℓ_d = half the range of input d (the paper's choice, §4.2; the full GP's default). A full
    /// GP trained from it that calls more than half of the targets' variance noise is trained
    /// again from [`crate::full_gp::SHORTER_STARTS`] times these lengthscales, and the lower
    /// −log p (by more than a nat) is kept: up to two more trainings, on such tables only.
    #[default]
    HalfRange,
    /// The given lengthscales, one per used input column (constant columns left out).
    Given(DVector<f64>),
    /// The lengthscales a full GP learns on a seeded random subset of this many training points
    /// (all of them if fewer), from half ranges, with the default optimiser settings but a looser
    /// stopping tolerance ([`crate::full_gp::START_TOLERANCE`]) (§5.2;
    /// SSGP's and FITC's default, [`DEFAULT_START`]).
    FullGpSubset(usize),
}

impl LengthscaleInit {
    /// What this start learns from `rows` training rows with `dim` inputs: the number of
    /// hyperparameters fitted (D + 2 for the full GP of [`LengthscaleInit::FullGpSubset`]) and
    /// the rows they are fitted on; (0, 0) for a start that learns nothing from the data.
    pub(crate) fn learned_from(&self, rows: usize, dim: usize) -> (usize, usize) {
        match self {
            Self::FullGpSubset(subset) => (dim + 2, (*subset).min(rows)),
            Self::HalfRange | Self::Given(_) => (0, 0),
        }
    }

    /// Checks what can be checked without data.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for non-positive or non-finite given lengthscales, or a subset
    /// of fewer than 2 points.
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
            Self::FullGpSubset(size @ (0 | 1)) => Err(Error::InvalidParameter {
                name: "initial_lengthscales_from_full_gp",
                reason: format!(
                    "a subset of {size} point(s) (`LengthscaleInit::FullGpSubset`) has nothing \
                     to learn lengthscales from (no input varies on it); give at least 2 points"
                ),
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

/// The initial lengthscales (D = `dim`) by `init`: `half_range()` for
/// [`LengthscaleInit::HalfRange`], the given ones checked against D, or `full_gp(size)` for
/// [`LengthscaleInit::FullGpSubset`] — the start the model that wants it passes in (the full GP's
/// own, `crate::full_gp::lengthscales_from_subset`, lives with the full GP).
///
/// # Errors
/// [`Error::DimensionMismatch`] if given lengthscales do not have D entries; whatever
/// `half_range` or `full_gp` return.
pub(crate) fn initial_lengthscales(
    init: &LengthscaleInit,
    dim: usize,
    half_range: impl FnOnce() -> Result<DVector<f64>>,
    full_gp: impl FnOnce(usize) -> Result<DVector<f64>>,
) -> Result<DVector<f64>> {
    match init {
        LengthscaleInit::HalfRange => half_range(),
        LengthscaleInit::Given(l) => {
            if l.len() != dim {
                return Err(Error::DimensionMismatch {
                    what: "initial lengthscales",
                    expected: dim,
                    found: l.len(),
                });
            }
            Ok(l.clone())
        }
        LengthscaleInit::FullGpSubset(subset) => full_gp(*subset),
    }
}

/// The starting hyperparameters from the initial lengthscales and the targets' mean and (1/n)
/// variance: σ0² = var(y), σn² = σ0²/4 (§4.2).
///
/// # Errors
/// [`Error::ConstantTargets`] if var(y) = 0.
pub(crate) fn hyperparameters(
    lengthscales: DVector<f64>,
    y_mean: f64,
    y_variance: f64,
) -> Result<Hyperparameters> {
    if y_variance <= 0.0 {
        return Err(Error::ConstantTargets { value: y_mean });
    }
    Ok(Hyperparameters {
        lengthscales,
        signal_variance: y_variance,
        noise_variance: y_variance / 4.0,
    })
}

/// The starting hyperparameters on `data`: ℓ by `init` ([`initial_lengthscales`], with
/// `full_gp(size)` for [`LengthscaleInit::FullGpSubset`]), σ0² = var(y), σn² = σ0²/4
/// ([`hyperparameters`]).
///
/// # Errors
/// [`Error::ConstantInput`] for a constant column when half ranges are needed, as
/// [`initial_lengthscales`] and [`hyperparameters`]; [`Error::Scale`] for targets whose
/// variance would overflow ([`Dataset::check_target_spread`]).
pub(crate) fn start(
    data: &Dataset,
    init: &LengthscaleInit,
    full_gp: impl FnOnce(usize) -> Result<DVector<f64>>,
) -> Result<Hyperparameters> {
    data.check_target_spread()?;
    let lengthscales = initial_lengthscales(init, data.dim(), || half_ranges(data), full_gp)?;
    hyperparameters(lengthscales, data.y_mean(), data.y_variance())
}

/// SSGP's initial unit frequencies W (m×D): the given ones, or the best of `draws` draws from
/// `density` (seeded with `seed`) by `neg_log_evidence` — the first of equal values wins. Each
/// draw is reported to `observer` ([`Phase::SpectralDraws`]); a `Break` keeps the best so far.
///
/// # Errors
/// Whatever `neg_log_evidence` returns; [`Error::InvalidParameter`] if nothing was drawn.
pub(crate) fn unit_frequencies(
    given: Option<&DMatrix<f64>>,
    density: &dyn SpectralDensity,
    (m, dim): (usize, usize),
    (draws, seed): (usize, u64),
    observer: Option<&Observer>,
    neg_log_evidence: impl Fn(&DMatrix<f64>) -> Result<f64>,
) -> Result<DMatrix<f64>> {
    // One draw at a time (the evaluations use no random numbers, so the draws are those of
    // drawing all first): memory for two m×D matrices, never `draws` of them.
    let mut rng = seeded(seed);
    let candidates: Box<dyn Iterator<Item = DMatrix<f64>>> = match given {
        Some(w) => Box::new(std::iter::once(w.clone())),
        None => {
            Box::new((0..draws).map(move |_| density.sample_unit_frequencies(m, dim, &mut rng)))
        }
    };
    let total = if given.is_some() { 1 } else { draws };
    let started = Instant::now();
    let mut best: Option<(f64, DMatrix<f64>)> = None;
    for (i, w) in candidates.into_iter().enumerate() {
        let value = neg_log_evidence(&w)?;
        if best.as_ref().is_none_or(|(b, _)| value < *b) {
            best = Some((value, w));
        }
        if let (Some(observer), Some((b, _))) = (observer, &best) {
            let phase = Phase::SpectralDraws { done: i + 1, total };
            if observer(&Progress::of(phase, value, *b, started.elapsed())).is_break() {
                break;
            }
        }
    }
    best.map(|(_, w)| w).ok_or(Error::InvalidParameter {
        name: "initial_draws",
        reason: "no spectral points were drawn".into(),
    })
}

/// FITC's initial pseudo-inputs (m×D): m **distinct** training inputs drawn at random with
/// `seed` (replicated rows are one input); when there are fewer distinct inputs than m, all of
/// them plus points drawn uniformly in the inputs' bounding box.
///
/// # Errors
/// [`Error::InvalidParameter`] if m > n; [`Error::Allocation`] if the index of equal inputs
/// cannot be allocated.
pub(crate) fn pseudo_inputs(data: &Dataset, m: usize, seed: u64) -> Result<DMatrix<f64>> {
    let (n, dim) = (data.len(), data.dim());
    if m > n {
        return Err(Error::InvalidParameter {
            name: "m",
            reason: format!(
                "{m} pseudo-inputs cannot be drawn from {n} training points: use m ≤ {n}, or \
                 the exact GP (`FullGp`), which costs no more with as many pseudo-inputs as points"
            ),
        });
    }
    let x = data.x();
    let mut rng = seeded(seed);
    let (group_of, groups) = crate::data::groups_of_equal_inputs(x)?;
    let mut seen = vec![false; groups];
    let mut rows = Vec::with_capacity(m);
    for i in rand::seq::index::sample(&mut rng, n, n) {
        if !std::mem::replace(&mut seen[group_of[i]], true) {
            rows.push(i);
            if rows.len() == m {
                break;
            }
        }
    }
    let mut pseudo = DMatrix::zeros(m, dim);
    for (j, &i) in rows.iter().enumerate() {
        pseudo.set_row(j, &x.row(i));
    }
    in_bounding_box(&mut pseudo, rows.len()..m, x, &mut rng);
    Ok(pseudo)
}

/// Rows `rows` of `points` drawn uniformly in the bounding box of the rows of `x` (one uniform
/// per entry, row after row, with `rng`): the inducing inputs a start wants beyond the distinct
/// training inputs there are.
pub(crate) fn in_bounding_box(
    points: &mut DMatrix<f64>,
    rows: impl IntoIterator<Item = usize>,
    x: &DMatrix<f64>,
    rng: &mut impl Rng,
) {
    for j in rows {
        for d in 0..x.ncols() {
            let (lo, hi) = (x.column(d).min(), x.column(d).max());
            points[(j, d)] = lo + (hi - lo) * rng.random::<f64>();
        }
    }
}
