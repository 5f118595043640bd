//! Online updates of a fitted SSGP (Incremental SSGP, Gijsberts and Metta, Neural Networks 41,
//! 2013): the hyperparameters stay, the posterior over the weights absorbs new samples.
//!
//! The posterior N(α, σn²A⁻¹) depends on the data only through the **sufficient statistics**
//! A = ΦᵀΦ + λI = LLᵀ (λ = mσn²/σ0²) and B = Φᵀ(Y − 1ȳᵀ) (2m×P, one column per output). A new
//! sample (x, y) with features φ = φ(x − c) adds φφᵀ to A — a rank-one update of L, O(m²) — and
//! φ(y − ȳ)ᵀ to B; α = L⁻ᵀL⁻¹B then costs two triangular solves, once per call. With a forgetting
//! factor γ ∈ (0, 1] every sample first discounts what came before, A ← γA, B ← γB (L ← √γL),
//! the fitted batch's rows as every other sample — but not the prior: A = D + ρλI, with D the
//! discounted data's ΦᵀΦ, keeps its prior term between λ/2 and λ. Forgetting scales ρ by γ, and
//! once ρ falls below [`MIN_PRIOR_LEVEL`] = ½ the missing (1 − ρ)λI is added back (ρ = 1) by
//! refactorising A, O(m³) once every log 2 / log(1/γ) samples (69 at γ = 0.99). I-SSGP (and this
//! crate before 2026-11-27) let the prior decay with the data, A_k = γ^k A_0 + Σ_j γ^{k−j}
//! φ_jφ_jᵀ: on a stream that does not visit every direction of the 2m features (a robot's
//! trajectory) A then loses its smallest eigenvalues to round-off and the weights drift — at
//! γ = 0.99, m = 50, predictions of 10¹⁴ after 6 400 samples along a curve.
//!
//! The offset ȳ and the centre c of the inputs stay those of the batch the model was fitted on,
//! so after any number of updates the model equals conditioning on all the data at the same θ
//! with that offset. The statistics are O(m² + mP) whatever the number of samples: the model
//! keeps no data — whoever wants to re-learn the hyperparameters on the data seen so far keeps
//! it and fits again (`Ssgp::params(m).fit(&all)`, one call), warm-started if wanted by the
//! fitted unit frequencies of the **used** input columns,
//! `.initial_unit_frequencies(fitted.hyperparameters().unit_frequencies.clone())` — not
//! [`FittedSsgp::unit_frequencies`], which has a zero column for every input constant on the
//! batch ([`FittedSsgp::input_columns`]), where a fit expects one column per input it uses. The
//! used columns are the batch's as long as those inputs stay constant in `all`; one that varies
//! there is a column more to start from (a `DimensionMismatch`: fit without the warm start). The
//! warm start has seen the batch's rows, which the calibration check may hold out: its held-out
//! score of the learned fit is then optimistic.
//!
//! ```
//! use ssgp::nalgebra::{DMatrix, DVector};
//! use ssgp::{Dataset, Ssgp};
//!
//! // The second input is constant on the batch and on all the data: the model leaves it out.
//! let rows = |n: usize| DMatrix::from_fn(n, 2, |i, d| if d == 0 { i as f64 / 10.0 } else { 1.0 });
//! let targets = |x: &DMatrix<f64>| DVector::from_fn(x.nrows(), |i, _| x[(i, 0)].sin());
//! let (x, x_all) = (rows(60), rows(90));
//! let params = || Ssgp::params(5).seed(1).max_evaluations(40);
//! let mut fitted = params().fit(&Dataset::new(x.clone(), targets(&x))?)?;
//! let x_new = x_all.rows(60, 30).into_owned();
//! fitted.update(&x_new, &targets(&x_new))?;
//! assert_eq!(fitted.input_columns().used(), [0]);
//! let all = Dataset::new(x_all.clone(), targets(&x_all))?;
//! let warm = fitted.hyperparameters().unit_frequencies.clone(); // m×1: the used column
//! let refit = params().initial_unit_frequencies(warm).fit(&all)?;
//! assert_eq!(refit.unit_frequencies().ncols(), 2);
//! // All D columns (a zero one for the constant input) do not fit the used columns.
//! let all_columns = params().initial_unit_frequencies(fitted.unit_frequencies()).fit(&all);
//! assert!(matches!(all_columns, Err(ssgp::Error::DimensionMismatch { .. })));
//! # Ok::<(), ssgp::Error>(())
//! ```

use super::features::design_matrix_into;
use super::posterior::FittedSsgp;
use crate::data::InputColumns;
use crate::error::{Error, Result};
use crate::linalg::Par;
use crate::linalg::{self, view, view_mut};
use crate::termination::{HeldOutCalibration, Prequential};
use nalgebra::{DMatrix, DVector};

/// ‖L⁻¹φᵢ‖² = φᵢᵀA⁻¹φᵢ for each row of `phi` (n×2m) under the factor `l` (2m×2m): triangular
/// solves with up to [`LEVERAGE_ROWS`] right-hand sides at a time (n(2m)²/2 multiply-adds; a
/// 2m×[`LEVERAGE_ROWS`] buffer beyond the n leverages, whatever n).
pub(crate) fn leverages(l: &DMatrix<f64>, phi: &DMatrix<f64>) -> Vec<f64> {
    let n = phi.nrows();
    let mut out = Vec::with_capacity(n);
    let mut v = DMatrix::zeros(0, 0);
    for start in (0..n).step_by(LEVERAGE_ROWS) {
        let len = LEVERAGE_ROWS.min(n - start);
        linalg::resize(&mut v, phi.ncols(), len);
        phi.rows(start, len).transpose_to(&mut v);
        linalg::solve_lower(view(l), view_mut(&mut v), Par::Seq);
        out.extend(v.column_iter().map(|c| c.norm_squared()));
    }
    out
}

/// The least share ρ of its prior term λI that forgetting leaves in A = D + ρλI before the
/// missing part is added back ([`absorb`]).
pub(crate) const MIN_PRIOR_LEVEL: f64 = 0.5;

/// The samples of one call whose leverages [`leverages`] solves for at a time.
const LEVERAGE_ROWS: usize = 512;

/// Scores, for each output p, the predictive N(φᵢᵀα_p, σnp²(1 + hᵢ)) of a model with weights
/// `alpha` (2m×P), noise variances `noise` (P) and leverages hᵢ = φᵢᵀA⁻¹φᵢ (`leverages`, one per
/// row of `phi`, n×2m) against the centred targets `y` (n×P), adding each sample to `scores[p]`:
/// what `predict` of that model gives at those samples.
pub(crate) fn score(
    (alpha, noise): (&DMatrix<f64>, &DVector<f64>),
    phi: &DMatrix<f64>,
    (y, leverages): (&DMatrix<f64>, &[f64]),
    scores: &mut [Prequential],
) {
    let mean = phi * alpha;
    for (i, h) in leverages.iter().enumerate() {
        for (p, score) in scores.iter_mut().enumerate() {
            score.add(y[(i, p)], mean[(i, p)], noise[p] * (1.0 + h));
        }
    }
}

/// What an update changes: the factor L of A, the right-hand sides B, the weights α = A⁻¹B and
/// the outputs' prequential records.
pub(crate) struct Absorbed {
    pub l: DMatrix<f64>,
    pub rhs: DMatrix<f64>,
    pub alpha: DMatrix<f64>,
    pub scores: Vec<Prequential>,
    /// The prior's share ρ in A = D + ρλI after the call.
    pub prior_level: f64,
}

/// The prior term of A = D + ρλI: λ = mσn²/σ0² and the share ρ ∈ [[`MIN_PRIOR_LEVEL`], 1] of it
/// that A holds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Prior {
    pub lambda: f64,
    pub level: f64,
}

/// The model's state after the samples (features `phi` n×2m, centred targets `y` n×P), computed
/// without changing its factor `l`, right-hand sides `rhs` and prequential records `scores`, so
/// that a call that fails leaves the model as it was: the model before the call — `l`, weights
/// `alpha`, noise variances `noise` — scores the samples ([`score`]; a call of one sample takes
/// its leverage from the rank-one update itself, [`linalg::rank_one_update`], a call of several
/// from one triangular solve before it), [`absorb`] takes them in, writing the new factor into
/// `spare` (2m×2m, whatever it held: the model's [`linalg::SpareFactor`]), and α = A⁻¹B follows
/// ([`solve_weights`]). Beyond what absorbing the samples costs, O(mP) copies.
///
/// # Errors
/// [`Error::NonFinite`] naming the weights if α overflowed; as [`absorb`].
pub(crate) fn absorbed(
    (l, spare, rhs): (&DMatrix<f64>, DMatrix<f64>, DMatrix<f64>),
    (alpha, noise): (&DMatrix<f64>, &DVector<f64>),
    (phi, y): (&DMatrix<f64>, &DMatrix<f64>),
    (forgetting, prior): (f64, Prior),
    scores: &[Prequential],
) -> Result<Absorbed> {
    let (mut new, mut rhs, mut scores, mut prior) = (spare, rhs, scores.to_vec(), prior);
    let before = (phi.nrows() > 1).then(|| leverages(l, phi));
    let first = absorb((l, &mut new), &mut rhs, (phi, y), (forgetting, &mut prior))?;
    let leverages = before.unwrap_or_else(|| vec![first]);
    score((alpha, noise), phi, (y, &leverages), &mut scores);
    let alpha = solve_weights(&new, &rhs);
    crate::data::check_finite("weights after the update", &alpha)?;
    Ok(Absorbed {
        l: new,
        rhs,
        alpha,
        scores,
        prior_level: prior.level,
    })
}

/// Absorbs the rows of `phi` (len×2m design matrix) with centred targets `y` (len×P) into the
/// factor `from` (2m×2m), written to `l` (2m×2m, its lower triangle overwritten: the first
/// sample reads `from`, the others update `l` in place), and the right-hand sides `rhs` (2m×P),
/// one sample at a time: with γ = `forgetting`, L ← √γL, B ← γB and ρ ← γρ (skipped for
/// γ = 1); where ρ is now below [`MIN_PRIOR_LEVEL`], A ← A + (1 − ρ)λI refactorised and ρ ← 1
/// (the `prior`'s λ and ρ), so the rank-one update that follows never meets a factor whose
/// prior has faded; then the rank-one update of L by φ_i and B += φ_i y_iᵀ. O(m² + mP) per
/// sample, and O(m³) per restored prior. Returns the first sample's leverage φ₀ᵀA⁻¹φ₀ under the
/// factor before the call: from its rank-one update, γ(det ratio − 1), the update being of γA;
/// by a triangular solve with `from` where the prior was restored first (0 for no samples, `l`
/// then a copy of `from`).
///
/// # Errors
/// [`Error::NotPositiveDefinite`] if A + (1 − ρ)λI cannot be factorised (ρλ or L not finite).
pub(crate) fn absorb(
    (from, l): (&DMatrix<f64>, &mut DMatrix<f64>),
    rhs: &mut DMatrix<f64>,
    (phi, y): (&DMatrix<f64>, &DMatrix<f64>),
    (forgetting, prior): (f64, &mut Prior),
) -> Result<f64> {
    if phi.nrows() == 0 {
        l.copy_from(from);
        return Ok(0.0);
    }
    let mut work = vec![0.0; phi.ncols()];
    let root = forgetting.sqrt();
    let scaled = forgetting != 1.0;
    let mut first = None;
    for i in 0..phi.nrows() {
        if scaled {
            if i == 0 {
                linalg::scale_lower_from(from, l, root);
            } else {
                linalg::scale_lower(l, root);
            }
            *rhs *= forgetting;
            prior.level *= forgetting;
        }
        if prior.level < MIN_PRIOR_LEVEL {
            if i == 0 {
                first = leverages(from, &phi.rows(0, 1).into_owned()).pop();
            }
            let missing = (1.0 - prior.level) * prior.lambda;
            linalg::add_to_diagonal(l, missing, "A + (1 − ρ)λI (the prior restored)")?;
            prior.level = 1.0;
        }
        for (w, v) in work.iter_mut().zip(phi.row(i).iter()) {
            *w = *v;
        }
        for p in 0..rhs.ncols() {
            let yp = y[(i, p)];
            for (b, v) in rhs.column_mut(p).iter_mut().zip(work.iter()) {
                *b += v * yp;
            }
        }
        let ratio = if i == 0 && !scaled {
            linalg::rank_one_update_from(from, l, &mut work)
        } else {
            linalg::rank_one_update(l, &mut work)
        };
        if i == 0 && first.is_none() {
            first = Some(forgetting * (ratio - 1.0));
        }
    }
    Ok(first.unwrap_or(0.0))
}

/// α = A⁻¹B = L⁻ᵀL⁻¹B (2m×P) by two triangular solves.
pub(crate) fn solve_weights(l: &DMatrix<f64>, rhs: &DMatrix<f64>) -> DMatrix<f64> {
    let mut alpha = rhs.clone();
    linalg::cholesky_solve_in_place(l, view_mut(&mut alpha), Par::Seq);
    alpha
}

/// B = Aα = L(Lᵀα) (2m×P): the right-hand sides of a model that does not keep them (fitted or
/// loaded), recovered from its factor and weights in O(m²P).
pub(crate) fn recover_rhs(l: &DMatrix<f64>, alpha: &DMatrix<f64>) -> DMatrix<f64> {
    let lower = l.lower_triangle();
    &lower * (lower.tr_mul(alpha))
}

/// The design matrix Φ (n×2m, about the inputs' centre `centre` (D) with the scaled frequencies
/// `omega` (m×D)) of new samples `x` (n×D) with targets `y` (n×P, P = the outputs' offsets ȳ
/// in `offsets`) on the model's `columns`, once the forgetting factor and the samples are
/// checked; `None` for no samples.
///
/// # Errors
/// As [`check_forgetting`] and [`crate::data::check_new_samples`]; [`Error::Allocation`] before
/// any work if the samples' buffers cannot be allocated; [`Error::NonFinite`] for features
/// that overflowed.
pub(crate) fn new_sample_features(
    columns: &InputColumns,
    (centre, omega): (&DVector<f64>, &DMatrix<f64>),
    x: &DMatrix<f64>,
    y: &DMatrix<f64>,
    offsets: &[f64],
    forgetting: f64,
) -> Result<Option<DMatrix<f64>>> {
    check_forgetting(forgetting)?;
    // Φ (2m columns), the centred inputs (D), the centred targets and their copies (2P), the
    // leverages and scores (2), 8 bytes each per sample.
    let per_sample = omega
        .nrows()
        .saturating_mul(2)
        .saturating_add(x.ncols())
        .saturating_add(offsets.len().saturating_mul(2))
        .saturating_add(2);
    linalg::check_allocation(
        x.nrows().saturating_mul(per_sample).saturating_mul(8),
        "the new samples' design matrix; add them in smaller batches",
    )?;
    let xu = crate::data::check_new_samples(columns, x, y, offsets)?;
    if xu.nrows() == 0 {
        return Ok(None);
    }
    let (mut phi, mut centred) = (DMatrix::zeros(0, 0), DMatrix::zeros(0, 0));
    design_matrix_into(view(&xu), centre, omega, &mut phi, &mut centred, Par::Seq);
    super::features::check_phases(&centred, omega, 0)?;
    crate::data::check_finite("features of the new samples", &phi)?;
    Ok(Some(phi))
}

/// Checks a forgetting factor γ ∈ (0, 1].
///
/// # Errors
/// [`Error::InvalidParameter`] otherwise.
fn check_forgetting(forgetting: f64) -> Result<()> {
    if forgetting > 0.0 && forgetting <= 1.0 {
        Ok(())
    } else {
        Err(Error::InvalidParameter {
            name: "forgetting",
            reason: format!("{forgetting} is not in (0, 1]"),
        })
    }
}

impl FittedSsgp {
    /// Adds the samples (`x` n×D, `y` n) to the posterior without changing θ: per sample one
    /// rank-one update of the factor of A = ΦᵀΦ + (mσn²/σ0²)I and of b = Φᵀ(y − ȳ) (O(m²)),
    /// then α = A⁻¹b once per call (Incremental SSGP, Gijsberts and Metta 2013). ȳ and the inputs' centre stay
    /// the fit's; [`Self::neg_log_evidence`] stays the fit's. The model keeps no data.
    ///
    /// θ and the choice the calibration check made stay the fit's too: a model fitted on a few
    /// rows (below [`CalibrationGuard::HELD_OUT_MIN_ROWS`](crate::ssgp::CalibrationGuard::HELD_OUT_MIN_ROWS)
    /// distinct inputs: the random-feature fit, flagged [`Remedy::FewInputs`](crate::Remedy::FewInputs);
    /// or the training mean, [`Remedy::mean_kept`](crate::Remedy::mean_kept)) keeps its
    /// lengthscales and its flag however many samples it absorbs — refit once the data has
    /// grown, and watch [`Self::prequential`] meanwhile.
    ///
    /// # Errors
    /// As [`Self::update_forgetting`].
    pub fn update(&mut self, x: &DMatrix<f64>, y: &DVector<f64>) -> Result<()> {
        self.update_forgetting(x, y, 1.0)
    }

    /// [`Self::update`] with a forgetting factor γ ∈ (0, 1]: before each sample, A ← γA and
    /// b ← γb, so a sample k updates ago — the fitted batch's rows too — weighs γ^k; the prior
    /// term λI of A = ΦᵀΦ + λI is kept: forgetting scales it too, and once it is below λ/2 the
    /// rest is added back by refactorising A (O(m³), once every log 2 / log(1/γ) samples: 69 at
    /// γ = 0.99), so it stays between λ/2 and λ. Directions of the features a stream does not
    /// visit then keep their prior instead of drifting.
    ///
    /// ```
    /// use nalgebra::{DMatrix, DVector};
    /// use ssgp::ssgp::Ssgp;
    /// let x = DMatrix::from_fn(60, 1, |i, _| i as f64 / 10.0);
    /// let y = x.map(|v| v.sin()).column(0).into_owned();
    /// let mut model = Ssgp::params(10).seed(1).fit(&ssgp::Dataset::new(x, y)?)?;
    /// // A drifting stream, each sample weighing 0.99 of the one after it.
    /// for k in 0..500 {
    ///     let t = 3.0 + (k % 50) as f64 / 100.0;
    ///     let (xs, ys) = (DMatrix::from_element(1, 1, t), DVector::from_element(1, t.sin() + 0.5));
    ///     model.update_forgetting(&xs, &ys, 0.99)?;
    /// }
    /// let p = model.predict(&DMatrix::from_element(1, 1, 3.2))?;
    /// assert!((p.mean[0] - (3.2f64.sin() + 0.5)).abs() < 0.1);
    /// # Ok::<(), ssgp::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for γ outside (0, 1]; [`Error::LengthMismatch`] when `x` and
    /// `y` disagree on n; [`Error::DimensionMismatch`] for a wrong D; [`Error::NonFinite`] for a
    /// NaN or infinity in the samples; [`Error::Scale`] for a target so far from the fit's ȳ that
    /// its square overflows, or an input so far from the training inputs that f64 cannot
    /// resolve its phases (as [`Self::predict`]); [`Error::NonFinite`] naming the weights if they
    /// overflowed after absorbing the samples, [`Error::NotPositiveDefinite`] if the prior's
    /// restoration could not be factorised; [`Error::Allocation`] before any work if the
    /// samples' design matrix (8·n·2m bytes) cannot be allocated (add them in smaller batches).
    /// The model is unchanged on an error.
    pub fn update_forgetting(
        &mut self,
        x: &DMatrix<f64>,
        y: &DVector<f64>,
        forgetting: f64,
    ) -> Result<()> {
        let y = DMatrix::from_column_slice(y.len(), 1, y.as_slice());
        let post = &self.posterior;
        let features = (&post.centre, &post.omega);
        let offsets = [self.record.y_mean];
        let Some(phi) =
            new_sample_features(&self.record.columns, features, x, &y, &offsets, forgetting)?
        else {
            return Ok(());
        };
        let alpha = DMatrix::from_column_slice(post.alpha.len(), 1, post.alpha.as_slice());
        let rhs = match &self.rhs {
            Some(b) => b.clone(),
            None => recover_rhs(&post.l, &alpha),
        };
        let yc = y.add_scalar(-self.record.y_mean);
        let noise = DVector::from_element(1, self.noise_variance());
        let spare = self.spare.take(post.l.nrows());
        let prior = Prior {
            lambda: self.num_spectral_points() as f64 * self.noise_variance()
                / self.signal_variance(),
            level: self.prior_level,
        };
        let Absorbed {
            l,
            rhs,
            alpha,
            mut scores,
            prior_level,
        } = absorbed(
            (&post.l, spare, rhs),
            (&alpha, &noise),
            (&phi, &yc),
            (forgetting, prior),
            std::slice::from_ref(&self.prequential),
        )?;
        let old = std::mem::replace(&mut self.posterior.l, l);
        self.spare.keep(old);
        self.posterior.alpha.copy_from_slice(alpha.as_slice());
        self.rhs = Some(rhs);
        self.prequential = scores.remove(0);
        self.prior_level = prior_level;
        self.updates = self.updates.saturating_add(phi.nrows());
        Ok(())
    }

    /// The number of samples added by [`Self::update`] since the fit (0 for a model never
    /// updated; saved with the model).
    pub fn num_updates(&self) -> usize {
        self.updates
    }

    /// How the model predicted the samples [`Self::update`] added, each predicted before the
    /// call that added it (prequential: the stream's next samples are the test set a model
    /// learning online has not seen): their number, mean z² (1 for calibrated error bars;
    /// [`HeldOutCalibration::overconfident`] beyond chance) and NMSE against the fit's ȳ.
    /// `None` before any update; counted, as [`Self::num_updates`], from the fit, and saved with
    /// the model (so [`Self::online_variance_factor`] survives a save and load).
    /// A call of one sample takes its leverage from the update itself (no extra cost); a call of
    /// several costs one more triangular solve with them as right-hand sides.
    ///
    /// # Example
    /// ```
    /// use nalgebra::{DMatrix, DVector};
    /// use ssgp::{Dataset, Ssgp};
    /// let x = DMatrix::from_fn(60, 1, |i, _| i as f64 / 10.0);
    /// let y = x.column(0).map(f64::sin);
    /// let mut model = Ssgp::params(10).seed(1).max_evaluations(50).fit(&Dataset::new(x, y)?)?;
    /// assert!(model.prequential().is_none());
    /// for i in 0..20 {
    ///     let xi = DMatrix::from_element(1, 1, 6.0 + i as f64 / 10.0);
    ///     let yi = DVector::from_element(1, xi[(0, 0)].sin());
    ///     model.update(&xi, &yi)?;
    /// }
    /// let online = model.prequential().expect("20 samples were added");
    /// assert_eq!(online.rows, 20);
    /// println!("one step ahead: mean z² {:.2}, NMSE {:.4}", online.mean_z2, online.nmse);
    /// # Ok::<(), ssgp::Error>(())
    /// ```
    pub fn prequential(&self) -> Option<HeldOutCalibration> {
        self.prequential.calibration()
    }

    /// The factor by which the stream's latest one-step-ahead predictions say this model's
    /// predictive variances are too narrow: the mean z² of the samples [`Self::update`] added,
    /// each weighted 0.99 per later sample (about the last 200), where it is above 1; 1 before
    /// any update and never below 1. `predict` does not apply it (the posterior stays exactly
    /// conditioning on the data at θ); multiply `y_variance` by it for error bars that hold on
    /// the stream. With θ fixed, a finite-rank posterior keeps tightening as samples come while
    /// its error does not: on the robot arm example's stream (seeds 1–3) the widened variances
    /// covered 0.930–0.946 of the next samples (mean z² 1.01–1.04), the model's own 0.49–0.72
    /// (3.9–24). A factor well above 1 also says θ wants re-learning on the data seen.
    ///
    /// # Example
    /// ```
    /// use nalgebra::{DMatrix, DVector};
    /// use ssgp::{Dataset, Ssgp};
    /// let x = DMatrix::from_fn(60, 1, |i, _| i as f64 / 10.0);
    /// let y = x.column(0).map(f64::sin);
    /// let mut model = Ssgp::params(10).seed(1).max_evaluations(50).fit(&Dataset::new(x, y)?)?;
    /// assert_eq!(model.online_variance_factor(), 1.0);
    /// for i in 0..20 {
    ///     let xi = DMatrix::from_element(1, 1, 6.0 + i as f64 / 10.0);
    ///     let mut p = model.predict(&xi)?;
    ///     p.y_variance *= model.online_variance_factor(); // error bars for the stream
    ///     model.update(&xi, &DVector::from_element(1, xi[(0, 0)].sin()))?;
    /// }
    /// assert!(model.online_variance_factor() >= 1.0);
    /// # Ok::<(), ssgp::Error>(())
    /// ```
    pub fn online_variance_factor(&self) -> f64 {
        self.prequential.variance_factor()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The leverages over several chunks of rows are φᵢᵀA⁻¹φᵢ row by row.
    #[test]
    fn leverages_over_chunks_are_each_rows_quadratic_form() {
        let k = 6;
        let a = crate::linalg::spd(k);
        let l = a.clone().cholesky().unwrap().l();
        let a_inv = a.try_inverse().unwrap();
        let n = 2 * LEVERAGE_ROWS + 37;
        let phi = DMatrix::from_fn(n, k, |i, j| ((i * 7 + j * 11) as f64 * 0.13).cos());
        let h = leverages(&l, &phi);
        assert_eq!(h.len(), n);
        for (i, hi) in h.iter().enumerate() {
            let row = phi.row(i).transpose();
            approx::assert_relative_eq!(*hi, (&a_inv * &row).dot(&row), max_relative = 1e-10);
        }
    }
}
