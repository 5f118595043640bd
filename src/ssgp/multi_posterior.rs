//! A trained multi-output SSGP ([`FittedMultiSsgp`]): one factor L of A shared by the P outputs,
//! a weight vector per output, predictions and gradients per output, online updates of all
//! outputs at once, and each output as a stand-alone [`FittedSsgp`] (samples, persistence).

use super::multi::{MultiPass, MultiSsgpHyperparameters};
use super::online::{absorbed, new_sample_features, Absorbed, Prior};
use super::posterior::{FittedSsgp, OutputView, WeightPosterior};
use super::{features, SsgpHyperparameters, ValidSsgpParams};
use crate::data::InputColumns;
use crate::data::Inputs;
use crate::error::{Error, Result};
use crate::hyperparameters::{self, Hyperparameters, NoiseParam};
use crate::linalg::{self, SpareFactor};
use crate::model::FitRecord;
use crate::prediction_loop::{gradients_in_chunks, predict_in_chunks, Rows};
use crate::predictive::{Predictive, PredictiveGradients};
use crate::termination::{HeldOutCalibration, LooDiagnostic, Prequential, Remedy, TrainingSummary};
use nalgebra::{DMatrix, DVector};

/// A trained SSGP with P outputs on shared spectral points ([`super::multi`]): the posterior of
/// output p is N(α_p, σnp²A⁻¹) with one A = LLᵀ for all outputs.
///
/// ```
/// use ssgp::nalgebra::DMatrix;
/// use ssgp::{data::MultiDataset, Ssgp};
///
/// // Two outputs of one input (n = 80): sin x and 2 cos x, each with a little noise.
/// let x = DMatrix::from_fn(80, 1, |i, _| i as f64 / 10.0);
/// let y = DMatrix::from_fn(80, 2, |i, p| {
///     let (v, wiggle) = (x[(i, 0)], 0.01 * ((7 * i + p) % 5) as f64);
///     if p == 0 { v.sin() + wiggle } else { 2.0 * v.cos() + wiggle }
/// });
/// let data = MultiDataset::new(x, y)?;
/// let mut fitted = Ssgp::params(10).seed(1).max_evaluations(100).fit_multi(&data)?;
/// let at = DMatrix::from_row_slice(2, 1, &[0.5, 2.0]);
/// let each = fitted.predict(&at)?;                   // one Predictive per output
/// assert_eq!((each.len(), each[1].mean.len()), (2, 2));
/// assert_eq!(fitted.predict_output(&at, 1)?, each[1]); // one output alone: the same numbers
/// println!("output 1: {}", fitted.output_training(1)?.diagnosis());
/// // Online: new samples of both outputs, at fixed hyperparameters.
/// fitted.update(&DMatrix::from_element(1, 1, 8.5), &DMatrix::from_row_slice(1, 2, &[0.8, -1.2]))?;
/// assert_eq!(fitted.num_updates(), 1);
/// # Ok::<(), ssgp::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct FittedMultiSsgp {
    hyper: MultiSsgpHyperparameters,
    /// L (2m×2m, lower), shared.
    l: DMatrix<f64>,
    /// The buffer [`Self::update`] writes the next L into.
    spare: SpareFactor,
    /// The share ρ of the prior term λI in A = D + ρλI (1 but after forgetting; see
    /// [`super::online`]).
    prior_level: f64,
    /// α (2m×P).
    alpha: DMatrix<f64>,
    /// B = Φᵀ(Y − 1ȳᵀ) (2m×P), kept for updates.
    rhs: DMatrix<f64>,
    omega: DMatrix<f64>,
    centre: DVector<f64>,
    /// ȳ_p (P), added back to each output's predictions.
    y_means: DVector<f64>,
    theta: DVector<f64>,
    /// The floor ρ_f of the noise ratio ρ = ρ_f + e^{2p_ρ} that θ's p_ρ is decoded with.
    ratio_floor: f64,
    neg_log_evidence: f64,
    per_output: DVector<f64>,
    /// How training went, with the diagnostic and calibration check of the first flagged output
    /// (output 0's when none is): see [`Self::training`].
    training: TrainingSummary,
    /// Each output's LOO diagnostic on the rows the model was trained on (P).
    diagnostics: Vec<Option<LooDiagnostic>>,
    /// What the calibration check did, per output (P; `None` without the check).
    remedies: Vec<Option<Remedy>>,
    columns: InputColumns,
    fixed: bool,
    chunk_rows: usize,
    threads: usize,
    updates: usize,
    /// Per output, how the samples [`Self::update`] added were predicted before they were
    /// added ([`Self::prequential`]).
    prequential: Vec<Prequential>,
    /// Per output, the training mean as one output's model where the calibration check kept it
    /// ([`Remedy::mean_kept`]): that output's predictions, updates and [`Self::output`] are its.
    means: Vec<Option<FittedSsgp>>,
}

impl FittedMultiSsgp {
    pub(crate) fn new(
        params: &ValidSsgpParams,
        pass: MultiPass,
        centre: DVector<f64>,
        (theta, y_means, training, columns): (
            DVector<f64>,
            DVector<f64>,
            TrainingSummary,
            InputColumns,
        ),
    ) -> Self {
        let outputs = pass.alpha.ncols();
        Self {
            hyper: pass.hyper,
            l: pass.l,
            spare: SpareFactor::default(),
            prior_level: 1.0,
            alpha: pass.alpha,
            rhs: pass.rhs,
            omega: pass.omega,
            centre,
            y_means,
            theta,
            ratio_floor: params.training.ratio_noise().floor,
            neg_log_evidence: pass.value,
            per_output: pass.per_output,
            training,
            diagnostics: vec![None; outputs],
            remedies: vec![None; outputs],
            columns,
            fixed: params.fixed_spectral_points,
            chunk_rows: params.chunk_rows,
            threads: params.training.threads,
            updates: 0,
            prequential: vec![Prequential::default(); outputs],
            means: vec![None; outputs],
        }
    }

    /// The number of outputs P.
    pub fn outputs(&self) -> usize {
        self.alpha.ncols()
    }

    /// Whether the spectral points were held fixed (not learned).
    pub fn fixed_spectral_points(&self) -> bool {
        self.fixed
    }

    /// The number of spectral points m.
    pub fn num_spectral_points(&self) -> usize {
        self.omega.nrows()
    }

    /// The hyperparameters in natural units, for the used input columns (an output whose
    /// training mean the calibration check kept predicts by that model, [`Self::output`]; its
    /// σ0p² here is that model's, 10⁻⁴⁰ of its σn²).
    pub fn hyperparameters(&self) -> &MultiSsgpHyperparameters {
        &self.hyper
    }

    /// θ in the multi-output layout ([`super::multi`]), for the used input columns.
    pub fn parameters(&self) -> &DVector<f64> {
        &self.theta
    }

    /// The noise variances σnp² = ρσ0p² (P), or, for an output whose training mean the
    /// calibration check kept, that model's σn² (var y_p times its factor).
    pub fn noise_variances(&self) -> DVector<f64> {
        let mut noise = self.hyper.noise_variances();
        for (p, mean) in self.means.iter().enumerate() {
            if let Some(mean) = mean {
                noise[p] = mean.noise_variance();
            }
        }
        noise
    }

    /// The training targets' means ȳ_p (P).
    pub fn y_means(&self) -> &DVector<f64> {
        &self.y_means
    }

    /// −log p(Y|θ), summed over the outputs, at the fitted θ.
    pub fn neg_log_evidence(&self) -> f64 {
        self.neg_log_evidence
    }

    /// How training went (the optimiser's record, shared by the outputs), with the diagnostic
    /// and calibration check of the first output whose [`TrainingSummary::flags`] are set
    /// (output 0's when none is), so that `training().is_flagged()` says whether any output is
    /// flagged. Each output's own: [`Self::output_training`].
    pub fn training(&self) -> &TrainingSummary {
        &self.training
    }

    /// Output p's summary: [`Self::training`] with output p's exact LOO diagnostic on the
    /// training rows (its residuals and variances; as one output's,
    /// [`FittedSsgp::training`]) and what the calibration check did for it
    /// ([`crate::ssgp::CalibrationGuard`]: the comparison is made on the outputs' summed held-out
    /// MNLP, and each output's variances are scaled by the factor its own held-out rows ask for).
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] for p ≥ P.
    pub fn output_training(&self, p: usize) -> Result<TrainingSummary> {
        self.check_output(p)?;
        Ok(self.summary_of(p))
    }

    /// The shared summary with output p's diagnostic and remedy (p < P).
    fn summary_of(&self, p: usize) -> TrainingSummary {
        TrainingSummary {
            diagnostic: self.diagnostics[p],
            remedy: self.remedies[p],
            ..self.training.clone()
        }
    }

    /// Each output's LOO diagnostic on `x` (n×D, the used columns) and `y` (n×P), the rows the
    /// model was trained on: P passes of one output's ([`FittedSsgp`]'s, O(nm²) each). A
    /// diagnostic that cannot be computed (a factor that fails) is left out.
    pub(super) fn diagnose(&mut self, x: &DMatrix<f64>, y: &DMatrix<f64>) {
        for p in 0..self.outputs() {
            self.diagnostics[p] = self
                .output(p)
                .and_then(|single| {
                    let data = crate::data::Dataset::new(x.clone(), y.column(p).into_owned())?;
                    single.loo_diagnostic(&data)
                })
                .ok()
                .flatten();
        }
        self.summarise();
    }

    /// Records what the calibration check did for each output (P).
    pub(super) fn set_remedies(&mut self, remedies: Vec<Option<Remedy>>) {
        self.remedies = remedies;
        self.summarise();
    }

    /// Each output's training mean where the calibration check kept it (P; one output's model
    /// on the same rows and columns, its remedy [`Remedy::mean_kept`]): that output then predicts
    /// and updates by it, its weights (α and B columns) are 0, its σ0p², ȳ_p, −log p(y_p) (in the
    /// sum), LOO diagnostic and remedy are the mean model's.
    pub(super) fn keep_means(&mut self, means: Vec<Option<FittedSsgp>>) {
        let d = self.hyper.lengthscales.len();
        for (p, mean) in means.into_iter().enumerate() {
            let Some(mut mean) = mean else {
                continue;
            };
            mean.record.observer = None;
            self.hyper.signal_variances[p] = mean.signal_variance();
            self.theta[d + p] = 0.5 * mean.signal_variance().ln();
            self.alpha.column_mut(p).fill(0.0);
            self.rhs.column_mut(p).fill(0.0);
            self.y_means[p] = mean.record.y_mean;
            self.neg_log_evidence += mean.record.neg_log_evidence - self.per_output[p];
            self.per_output[p] = mean.record.neg_log_evidence;
            self.diagnostics[p] = mean.record.training.diagnostic;
            self.remedies[p] = mean.record.training.remedy;
            self.means[p] = Some(mean);
        }
        self.summarise();
    }

    /// The model of P = `means.len()` outputs whose outputs p with `means[p]` keep that training
    /// mean ([`Self::keep_means`]) and whose others, in order, are `shared`'s: a multi-output fit
    /// on those outputs alone, on the same rows and columns.
    pub(super) fn with_mean_outputs(shared: Self, means: Vec<Option<FittedSsgp>>) -> Self {
        let outputs = means.len();
        let others: Vec<usize> = (0..outputs).filter(|&p| means[p].is_none()).collect();
        let columns = |m: &DMatrix<f64>| {
            let mut all = DMatrix::zeros(m.nrows(), outputs);
            for (q, &p) in others.iter().enumerate() {
                all.set_column(p, &m.column(q));
            }
            all
        };
        let entries = |v: &[f64]| {
            let mut all = DVector::zeros(outputs);
            for (q, &p) in others.iter().enumerate() {
                all[p] = v[q];
            }
            all
        };
        let d = shared.hyper.lengthscales.len();
        let theta = shared.theta.as_slice();
        let mut all_theta = theta[..d].to_vec();
        all_theta.extend(entries(&theta[d..d + others.len()]).iter());
        all_theta.extend_from_slice(&theta[d + others.len()..]);
        let mut model = Self {
            hyper: MultiSsgpHyperparameters {
                signal_variances: entries(shared.hyper.signal_variances.as_slice()),
                ..shared.hyper.clone()
            },
            alpha: columns(&shared.alpha),
            rhs: columns(&shared.rhs),
            y_means: entries(shared.y_means.as_slice()),
            theta: DVector::from_vec(all_theta),
            per_output: entries(shared.per_output.as_slice()),
            diagnostics: spread(&shared.diagnostics, &others, outputs),
            remedies: spread(&shared.remedies, &others, outputs),
            prequential: vec![Prequential::default(); outputs],
            means: spread(&shared.means, &others, outputs),
            ..shared
        };
        model.keep_means(means);
        model
    }

    /// The model on `columns` of the caller's inputs (it was trained on the used ones).
    pub(super) fn use_columns(&mut self, columns: InputColumns) {
        self.training.ignored_inputs = columns.ignored();
        for mean in self.means.iter_mut().flatten() {
            mean.record.training.ignored_inputs = columns.ignored();
            mean.record.columns = columns.clone();
        }
        self.columns = columns;
    }

    /// [`Self::training`]'s diagnostic and remedy: the first flagged output's, else output 0's.
    fn summarise(&mut self) {
        let shown = (0..self.outputs())
            .find(|&p| self.summary_of(p).is_flagged())
            .unwrap_or(0);
        self.training.diagnostic = self.diagnostics[shown];
        self.training.remedy = self.remedies[shown];
    }

    /// The input columns the model uses.
    pub fn input_columns(&self) -> &InputColumns {
        &self.columns
    }

    /// Spectral points s_r (m×D); 0 in the ignored input columns.
    pub fn spectral_points(&self) -> DMatrix<f64> {
        self.columns
            .expand_columns(&features::spectral_points(&self.omega), 0.0)
    }

    fn check_output(&self, p: usize) -> Result<()> {
        if p < self.outputs() {
            Ok(())
        } else {
            Err(Error::DimensionMismatch {
                what: "output index (outputs, P)",
                expected: self.outputs(),
                found: p,
            })
        }
    }

    fn view(&self, p: usize) -> OutputView<'_> {
        let k = self.l.nrows();
        OutputView {
            l: &self.l,
            alpha: &self.alpha.as_slice()[p * k..(p + 1) * k],
            omega: &self.omega,
            centre: &self.centre,
            noise_variance: self.hyper.signal_variances[p] * self.hyper.noise_ratio,
            par: linalg::par(self.threads),
        }
    }

    /// Output p's predictive at `x` (n*×D), eq. 7: φ(x*)ᵀα_p + ȳ_p and σnp²(1 + ‖L⁻¹φ(x*)‖²),
    /// as [`FittedSsgp::predict`] (or its training mean's, where the check kept it:
    /// [`Self::output`]).
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] for p ≥ P; as [`FittedSsgp::predict`].
    pub fn predict_output<X: Inputs + ?Sized>(&self, x: &X, p: usize) -> Result<Predictive> {
        let x = &*x.to_matrix()?;
        self.check_output(p)?;
        if let Some(mean) = &self.means[p] {
            return mean.predict(x);
        }
        let v = self.view(p);
        let rows = Rows {
            columns: &self.columns,
            y_mean: self.y_means[p],
            observer: None,
            means: crate::prediction_loop::PREDICTIVE_MEAN,
        };
        predict_in_chunks(
            x,
            rows,
            self.chunk_rows,
            (self.hyper.signal_variances[p], v.noise_variance),
            v.chunk(),
        )
    }

    /// Every output's predictive at `x` (n*×D), one [`Predictive`] per output (each builds the
    /// test design matrix: P times the work of one output).
    ///
    /// # Errors
    /// As [`FittedSsgp::predict`].
    pub fn predict<X: Inputs + ?Sized>(&self, x: &X) -> Result<Vec<Predictive>> {
        self.every_output(x, |x, p| self.predict_output(x, p))
    }

    /// Output p's predictive with its gradients with respect to the test inputs, as
    /// [`FittedSsgp::predict_gradients`].
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] for p ≥ P; as [`FittedSsgp::predict`].
    pub fn predict_gradients_output(
        &self,
        x: &DMatrix<f64>,
        p: usize,
    ) -> Result<PredictiveGradients> {
        self.check_output(p)?;
        if let Some(mean) = &self.means[p] {
            return mean.predict_gradients(x);
        }
        let v = self.view(p);
        gradients_in_chunks(
            x,
            &self.columns,
            self.chunk_rows.min(super::posterior::GRADIENT_CHUNK_ROWS),
            (
                self.y_means[p],
                self.hyper.signal_variances[p],
                v.noise_variance,
            ),
            v.gradient_chunk(),
        )
    }

    /// Every output's predictive with its gradients (one per output): row j of output p's
    /// `mean` is row p of the Jacobian ∂μ_*/∂x_* at test point j.
    ///
    /// # Errors
    /// As [`FittedSsgp::predict_gradients`]; [`Error::Allocation`] before any work if the P
    /// results (8·P·n*·(2D + 3) bytes) cannot be allocated.
    pub fn predict_gradients<X: Inputs + ?Sized>(&self, x: &X) -> Result<Vec<PredictiveGradients>> {
        let x = &*x.to_matrix()?;
        let bytes = self
            .outputs()
            .saturating_mul(x.nrows())
            .saturating_mul(x.ncols().saturating_mul(2).saturating_add(3))
            .saturating_mul(std::mem::size_of::<f64>());
        linalg::check_allocation(bytes, "every output's predictive and gradients")?;
        (0..self.outputs())
            .map(|p| self.predict_gradients_output(x, p))
            .collect()
    }

    /// `output(x, p)` for every output p in turn at the rows of `x` (n*×D).
    fn every_output<X: Inputs + ?Sized, T>(
        &self,
        x: &X,
        output: impl Fn(&DMatrix<f64>, usize) -> Result<T>,
    ) -> Result<Vec<T>> {
        let x = &*x.to_matrix()?;
        (0..self.outputs()).map(|p| output(x, p)).collect()
    }

    /// Output p as a stand-alone single-output [`FittedSsgp`] with the same posterior (a copy of
    /// the factor, O(m²)): for joint samples, posterior function samples, `FittedRegressor`, and
    /// saving (feature `serde`) one output. Its θ is the single-output layout
    /// [log ℓ, log σ0p, p_n, W] with the noise floor σ0p²ρ_f (ρ_f the ratio's floor) and
    /// σnp² = σ0p²ρ_f + e^{2p_n}, so its noise sits at its floor where the ratio sits at its own
    /// (saved and loaded too); its evidence output p's term. Where the
    /// calibration check kept output p's training mean (its remedy's
    /// [`Remedy::mean_kept`]), that model, as one output's check builds it.
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] for p ≥ P; [`Error::InvalidParameter`] if a variance under-
    /// or overflows in the single-output layout.
    pub fn output(&self, p: usize) -> Result<FittedSsgp> {
        self.check_output(p)?;
        if let Some(mean) = &self.means[p] {
            let mut mean = mean.clone();
            mean.record.training = self.summary_of(p);
            return Ok(mean);
        }
        let h = &self.hyper;
        // σn² = σ0p²ρ = σ0p²ρ_f + e^{2(p_ρ + log σ0p)}: the floor σ0p²ρ_f and the parameter
        // p_ρ + log σ0p, so that σn² sits at its floor where ρ sits at its own, in the summary
        // and in a saved model's (a floor of 0 lost it on loading).
        let d = h.lengthscales.len();
        let noise = NoiseParam {
            floor: h.signal_variances[p] * self.ratio_floor,
        };
        let single = Hyperparameters {
            lengthscales: h.lengthscales.clone(),
            signal_variance: h.signal_variances[p],
            noise_variance: h.signal_variances[p] * h.noise_ratio,
        };
        let block = (!self.fixed).then_some(&h.unit_frequencies);
        let mut theta = hyperparameters::pack(&single, noise, block);
        theta[d + 1] = self.theta[d + self.outputs()] + 0.5 * h.signal_variances[p].ln();
        let decoded = hyperparameters::unpack(
            &theta,
            h.lengthscales.len(),
            self.num_spectral_points(),
            noise,
            self.fixed.then_some(&h.unit_frequencies),
            "SSGP parameter vector",
        )?;
        let k = self.l.nrows();
        Ok(FittedSsgp {
            hyper: SsgpHyperparameters {
                hyper: decoded.hyper,
                unit_frequencies: h.unit_frequencies.clone(),
            },
            posterior: WeightPosterior {
                l: self.l.clone(),
                alpha: self.alpha.column(p).into_owned(),
                omega: self.omega.clone(),
                centre: self.centre.clone(),
            },
            spare: SpareFactor::default(),
            prior_level: self.prior_level,
            fixed: self.fixed,
            chunk_rows: self.chunk_rows,
            record: FitRecord {
                theta,
                y_mean: self.y_means[p],
                neg_log_evidence: self.per_output[p],
                training: self.output_training(p)?,
                noise_floor: noise.floor,
                threads: self.threads,
                columns: self.columns.clone(),
                observer: None,
            },
            rhs: Some(DMatrix::from_column_slice(
                k,
                1,
                self.rhs.column(p).as_slice(),
            )),
            updates: self.updates,
            prequential: self.prequential[p].clone(),
        })
    }

    /// Adds the samples (`x` n×D, `y` n×P) to every output's posterior without changing θ: one
    /// rank-one update of the shared factor per sample (O(m²)) and B += φ(y − ȳ)ᵀ (O(mP)), then
    /// α = A⁻¹B once per call (see [`FittedSsgp::update`]; the model keeps no data).
    ///
    /// # Errors
    /// As [`Self::update_forgetting`].
    pub fn update(&mut self, x: &DMatrix<f64>, y: &DMatrix<f64>) -> Result<()> {
        self.update_forgetting(x, y, 1.0)
    }

    /// [`Self::update`] with a forgetting factor γ ∈ (0, 1] ([`FittedSsgp::update_forgetting`]).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for γ outside (0, 1]; [`Error::LengthMismatch`],
    /// [`Error::DimensionMismatch`] or [`Error::NonFinite`] for bad samples; [`Error::Scale`] for
    /// a target so far from its output's ȳ that its square overflows; [`Error::NonFinite`] naming
    /// the weights if they overflowed; [`Error::NotPositiveDefinite`] if the prior's restoration could
    /// not be factorised; [`Error::Allocation`] before any work if the samples' design matrix
    /// cannot be allocated. The model is unchanged on an error.
    pub fn update_forgetting(
        &mut self,
        x: &DMatrix<f64>,
        y: &DMatrix<f64>,
        forgetting: f64,
    ) -> Result<()> {
        let features = (&self.centre, &self.omega);
        let offsets = self.y_means.as_slice();
        let Some(phi) = new_sample_features(&self.columns, features, x, y, offsets, forgetting)?
        else {
            return Ok(());
        };
        let means = &self.y_means;
        let yc = DMatrix::from_fn(y.nrows(), y.ncols(), |i, p| y[(i, p)] - means[p]);
        let noise = self.noise_variances();
        let prior = Prior {
            lambda: self.omega.nrows() as f64 * self.hyper.noise_ratio,
            level: self.prior_level,
        };
        let Absorbed {
            l,
            rhs,
            alpha,
            scores,
            prior_level,
        } = absorbed(
            (&self.l, self.spare.take(self.l.nrows()), self.rhs.clone()),
            (&self.alpha, &noise),
            (&phi, &yc),
            (forgetting, prior),
            &self.prequential,
        )?;
        // An output whose training mean was kept takes the samples into that model (the samples
        // are valid: checked above), on a copy until every part has succeeded.
        let mut mean_outputs = self.means.clone();
        for (p, mean) in mean_outputs.iter_mut().enumerate() {
            if let Some(mean) = mean {
                mean.update_forgetting(x, &y.column(p).into_owned(), forgetting)?;
            }
        }
        let old = std::mem::replace(&mut self.l, l);
        self.spare.keep(old);
        self.rhs = rhs;
        self.alpha = alpha;
        self.prequential = scores;
        self.prior_level = prior_level;
        self.means = mean_outputs;
        self.updates = self.updates.saturating_add(phi.nrows());
        Ok(())
    }

    /// The number of samples added by [`Self::update`] since the fit.
    pub fn num_updates(&self) -> usize {
        self.updates
    }

    /// Output p's [`FittedSsgp::prequential`]: how the samples [`Self::update`] added were
    /// predicted before the call that added them (mean z², NMSE against the fit's ȳ_p); `None`
    /// before any update.
    ///
    /// # Errors
    /// As [`Self::output`] for p ≥ P.
    pub fn prequential(&self, p: usize) -> Result<Option<HeldOutCalibration>> {
        self.check_output(p)?;
        Ok(match &self.means[p] {
            Some(mean) => mean.prequential(),
            None => self.prequential[p].calibration(),
        })
    }

    /// Output p's [`FittedSsgp::online_variance_factor`]: the recent one-step-ahead mean z² of
    /// the stream where it is above 1 (1 before any update); `predict` does not apply it.
    ///
    /// # Errors
    /// As [`Self::output`] for p ≥ P.
    pub fn online_variance_factor(&self, p: usize) -> Result<f64> {
        self.check_output(p)?;
        Ok(match &self.means[p] {
            Some(mean) => mean.online_variance_factor(),
            None => self.prequential[p].variance_factor(),
        })
    }
}

/// `values` of the outputs `others` (in order) in their places among `outputs`, `None` elsewhere.
fn spread<T: Clone>(values: &[Option<T>], others: &[usize], outputs: usize) -> Vec<Option<T>> {
    let mut all = vec![None; outputs];
    for (value, &p) in values.iter().zip(others) {
        all[p] = value.clone();
    }
    all
}
