//! The multi-output SSGP's calibrated default: one output's calibration check
//! ([`CalibrationGuard`], [`super::remedy`]) run on the P outputs at once.
//!
//! The learned fit and the random-feature fit (W drawn at the start's lengthscales and held with
//! them; σ0p² and ρ trained) are both multi-output fits; each output's predictive on the
//! held-out rows is scored as one output's is, with the variance factor its own rows ask for
//! (σ0p² and so σnp² = ρσ0p² scaled, A and the means unchanged); the fits are compared by the
//! outputs' summed held-out MNLP (the one-standard-error rule on the rows' summed differences),
//! and every output keeps its own factor (for the learned fit on all rows, refitted or checked
//! by the proxy, one the rows did not widen takes the noise level they asked for, as for one
//! output). Each output's training mean is scored on the held-out rows too, and where the kept
//! fit does not beat it as one output's must ([`super::remedy`]'s `mean_wins`), that output's
//! model is its training mean, built as one output's (N(ȳ_p, var y_p) times its factor, under
//! the noise floor ρ₀·var y_p that the ratio floor ρ₀ puts on its noise at σ0p² = var y_p; its
//! predictions, updates and [`FittedMultiSsgp::output`] are that model's), and the other outputs
//! are checked again without it — their shared fit trained on them alone, from the first one's
//! start — since one noise ratio shared with an output that is noise alone costs the others
//! accuracy (a messy table's low-noise output beside pure noise: test NMSE 0.119 with it in the
//! shared fit, 0.017 without). Without the check the multi-output fit on small or wide data is
//! as overconfident as one output's: n = 100, D = 20, two outputs, m = 50 (seeds 1–4), test
//! coverage 0.06–0.28, mean z² 30–506.

use super::multi_posterior::FittedMultiSsgp;
use super::remedy::{
    few_inputs_fit, held_out, held_out_mean, held_out_target, mean_wins,
    narrowed_to_the_measured_level, standard_error_of_difference, with_mean, CalibrationGuard,
    Comparison, FewInputsCandidate, HeldOutScore, Verdict,
};
use super::{FittedSsgp, MultiSsgpEvidence, ValidSsgpParams};
use crate::data::{
    groups_of_equal_inputs, split_leaving_targets_varying, variance, varies_on, Dataset,
    InputColumns,
};
use crate::error::{Error, Result};
use crate::hyperparameters::Hyperparameters;
use crate::metrics::calibration_unchecked;
use crate::optim::Objective;
use crate::termination::{Remedy, TrainingSummary};
use nalgebra::{DMatrix, DVector};

/// The multi-output evidence as a function of its trailing entries alone, the leading `held`
/// entries of θ (the lengthscales) fixed: the random-feature fit's objective, (log σ0p, p_ρ).
struct TrailingEntries<'a, 'd> {
    evidence: &'a MultiSsgpEvidence<'d>,
    /// The full θ, of which the entries from `held` on are trained.
    theta: DVector<f64>,
    held: usize,
}

impl TrailingEntries<'_, '_> {
    /// The full θ with the trailing entries `v`.
    fn full(&self, v: &DVector<f64>) -> DVector<f64> {
        let mut theta = self.theta.clone();
        theta.rows_mut(self.held, v.len()).copy_from(v);
        theta
    }
}

impl Objective for TrailingEntries<'_, '_> {
    fn num_params(&self) -> usize {
        self.theta.len() - self.held
    }

    fn value_and_gradient(&self, v: &DVector<f64>) -> Result<(f64, DVector<f64>)> {
        let (value, gradient) = self.evidence.value_and_gradient(&self.full(v))?;
        Ok((value, gradient.rows(self.held, v.len()).into_owned()))
    }

    fn value_scale(&self) -> f64 {
        self.evidence.value_scale()
    }
}

/// Inputs (n×D) and targets (n×P) of some rows.
type Rows<'a> = (&'a DMatrix<f64>, &'a DMatrix<f64>);

/// Rows `rows` of `x` and `y`.
fn rows_of(x: &DMatrix<f64>, y: &DMatrix<f64>, rows: &[usize]) -> (DMatrix<f64>, DMatrix<f64>) {
    (x.select_rows(rows), y.select_rows(rows))
}

/// Each output's [`HeldOutScore`] of `model` on the rows `held`, factors within `range`.
fn scores(
    model: &FittedMultiSsgp,
    (x, y): Rows<'_>,
    range: (f64, f64),
) -> Result<Vec<HeldOutScore>> {
    (0..model.outputs())
        .map(|p| {
            let held = Dataset::new(x.clone(), y.column(p).into_owned())?;
            held_out(&model.output(p)?, &held, range)
        })
        .collect()
}

/// The outputs' summed held-out MNLP (`f64::MAX` if any is not finite).
fn total_mnlp(scores: &[HeldOutScore]) -> f64 {
    if scores.iter().any(|s| s.mnlp == f64::MAX) {
        return f64::MAX;
    }
    scores.iter().map(|s| s.mnlp).sum()
}

/// The standard error of the held-out rows' mean difference of the two fits' negative log
/// predictive densities summed over the outputs.
fn summed_standard_error(a: &[HeldOutScore], b: &[HeldOutScore]) -> f64 {
    let summed = |scores: &[HeldOutScore]| {
        scores
            .iter()
            .fold(DVector::zeros(scores[0].row_nlp.len()), |acc, s| {
                acc + &s.row_nlp
            })
    };
    standard_error_of_difference(&summed(a), &summed(b))
}

impl FewInputsCandidate for FittedMultiSsgp {
    fn loo_fits_too_well(&self) -> bool {
        (0..self.outputs()).any(|p| self.output_training(p).is_ok_and(|t| t.loo_fits_too_well()))
    }

    fn with_remedy(mut self, remedy: Remedy) -> Self {
        self.set_remedies(vec![Some(remedy); self.outputs()]);
        self
    }
}

impl ValidSsgpParams {
    /// Trains the multi-output SSGP on `x` (n×D, the used columns) and `y` (n×P) from `start`
    /// as [`CalibrationGuard`] says, one output's check on all outputs at once (see the
    /// [module docs](self)); the model's columns are all of `x`'s.
    pub(super) fn fit_multi_calibrated(
        &self,
        x: &DMatrix<f64>,
        y: &DMatrix<f64>,
        start: &Hyperparameters,
    ) -> Result<FittedMultiSsgp> {
        let n = x.nrows();
        match self.calibration {
            CalibrationGuard::Off => Ok(self.fit_multi_stages(x, y, start, &[])?.0),
            CalibrationGuard::RandomFeatures => Ok(self
                .fit_multi_random_features(x, y, start)?
                .with_remedy(Remedy::RandomFeatures)),
            CalibrationGuard::Check => {
                let (group_of, inputs) = groups_of_equal_inputs(x)?;
                if inputs >= CalibrationGuard::HELD_OUT_MIN_ROWS {
                    let learned_on_all = (n > CalibrationGuard::HELD_OUT_MAX_ROWS)
                        .then(|| self.fit_multi_stages(x, y, start, &[]))
                        .transpose()?
                        .map(|(fitted, _)| fitted);
                    return self.multi_held_out_check(
                        (x, y, (&group_of, inputs)),
                        start,
                        learned_on_all,
                    );
                }
                // Forgiving as one output's fit on few inputs (`fit_calibrated`).
                let forgiving = self.forgiving();
                few_inputs_fit(
                    inputs,
                    self.frequencies_outnumber(n, x.ncols()),
                    || Ok(forgiving.fit_multi_stages(x, y, start, &[])?.0),
                    |remedy| {
                        let fitted = forgiving.fit_multi_random_features(x, y, start)?;
                        Ok(fitted.with_remedy(remedy))
                    },
                )
            }
        }
    }

    /// The held-out comparison of [`CalibrationGuard::Check`] on P outputs, as one output's
    /// (`held_out_check` in [`super::remedy`]): the fits on a seeded 3/4 of the rows (whole
    /// groups of equal inputs held out, `groups`), the learned one stopped early from
    /// [`CalibrationGuard::EARLY_STOPPING_MIN_HELD_OUT_ROWS`] held-out rows, compared by the
    /// summed held-out MNLP, the winner refitted on all rows (or kept as measured, or, with
    /// `learned_on_all`, the proxy on half the rows) and each output's variances scaled by its
    /// own factor — for the learned fit on all rows, the noise level its held-out rows asked for
    /// where they did not widen it (`narrowed_to_the_measured_level`, as for one output).
    fn multi_held_out_check(
        &self,
        (x, y, groups): (&DMatrix<f64>, &DMatrix<f64>, (&[usize], usize)),
        start: &Hyperparameters,
        learned_on_all: Option<FittedMultiSsgp>,
    ) -> Result<FittedMultiSsgp> {
        let (n, outputs) = (x.nrows(), y.ncols());
        let (start_hyperparameters, start_rows) =
            self.training.lengthscales.learned_from(n, x.ncols());
        let proxy = learned_on_all.is_some();
        let columns: Vec<DVector<f64>> = y.column_iter().map(|c| c.into_owned()).collect();
        let split = split_leaving_targets_varying(
            groups,
            held_out_target(n, proxy),
            (self.training.seed, 1),
            |fit| columns.iter().all(|c| varies_on(c, fit)),
        );
        let (held_rows, fit_rows) = split.order.split_at(split.held);
        let (held_x, held_y) = rows_of(x, y, held_rows);
        let (fit_x, fit_y) = rows_of(x, y, fit_rows);
        let held = (&held_x, &held_y);
        let quiet = self.reporting_as_check();
        let mut proxy_params = quiet.clone();
        if let Some(fitted) = &learned_on_all {
            proxy_params.training.optim.max_evaluations =
                (fitted.training().evaluations / 2).max(1);
        }
        // The noise floor bounds the ratio ρ, which a factor on σ0p² and σnp² leaves alone: no
        // factor is too narrow.
        let plan = Comparison::new(
            (held_rows.len(), split.held_inputs),
            proxy,
            0.0,
            proxy_params.training.optim.max_evaluations,
        );
        let (_, stages) = proxy_params.fit_multi_stages(&fit_x, &fit_y, start, &plan.budgets)?;
        let mut best: Option<(usize, FittedMultiSsgp, Vec<HeldOutScore>)> = None;
        for (&budget, candidate) in plan.budgets.iter().zip(stages) {
            let score = scores(&candidate, held, plan.choice_range)?;
            if best
                .as_ref()
                .is_none_or(|(_, _, b)| total_mnlp(&score) < total_mnlp(b))
            {
                best = Some((budget, candidate, score));
            }
        }
        let (learned_budget, learned_fit, mut learned) =
            best.ok_or_else(|| Error::InvalidParameter {
                name: "max_evaluations",
                reason: "the calibration check trained no learned fit".into(),
            })?;
        if plan.choice_range != plan.learned_range {
            learned = scores(&learned_fit, held, plan.learned_range)?;
        }
        let forgiving = quiet.forgiving();
        let random_fit = forgiving.fit_multi_random_features(&fit_x, &fit_y, start)?;
        let random = scores(&random_fit, held, plan.free_range)?;
        let (learned_mnlp, random_mnlp) = (total_mnlp(&learned), total_mnlp(&random));
        let widened = learned.iter().any(|s| s.scale > 1.0);
        let verdict = plan.verdict((learned_mnlp, random_mnlp), widened, || {
            summed_standard_error(&learned, &random)
        });
        let Verdict {
            keep_random,
            on_comparison_rows,
            ..
        } = verdict;
        let kept = if keep_random { &random } else { &learned };
        let kept_mnlp = total_mnlp(kept);
        // Each output's training mean, scored and kept as one output's is, under the floor the
        // ratio floor puts on that output's noise (`output_mean_settings`); a factor leaves the
        // ratio alone, so none is too narrow, as for the shared fit.
        let mean_settings: Vec<ValidSsgpParams> = (0..outputs)
            .map(|p| self.output_mean_settings(variance(&y.column(p).into_owned())))
            .collect();
        let mut remedies = Vec::with_capacity(outputs);
        for (p, score) in kept.iter().enumerate() {
            let floor = mean_settings[p].training.noise_floor;
            let held_p = Dataset::new(held_x.clone(), held_y.column(p).into_owned())?;
            let trained = fit_y.column(p).into_owned();
            let mut mean = held_out_mean(&trained, &held_p, plan.free_range, floor)?;
            let mean_kept = mean_wins(score, &mean, || {
                standard_error_of_difference(&score.row_nlp, &mean.row_nlp)
            });
            // Recorded beside the fits' summed MNLPs: the sum with this output's mean in place
            // of its fit (the same difference the rule judged).
            mean.mnlp = if [kept_mnlp, score.mnlp, mean.mnlp].contains(&f64::MAX) {
                f64::MAX
            } else {
                kept_mnlp - score.mnlp + mean.mnlp
            };
            let remedy = verdict.remedy(
                &plan,
                score,
                (learned_mnlp, random_mnlp),
                learned_budget,
                (start_hyperparameters, start_rows),
            );
            remedies.push(with_mean(remedy, &mean, mean_kept));
        }
        let means_kept = remedies.iter().filter(|r| r.mean_kept()).count();
        if means_kept > 0 && means_kept < outputs {
            // The other outputs' fit is checked again without them: a shared fit (one noise
            // ratio) trained with an output that is noise alone is worse on the others.
            let means = self.kept_means((x, y), start, &remedies, &mean_settings)?;
            let others: Vec<usize> = (0..outputs).filter(|&p| means[p].is_none()).collect();
            let others_y = y.select_columns(&others);
            let others_start = if others[0] == 0 {
                start.clone()
            } else {
                let first = Dataset::new(x.clone(), others_y.column(0).into_owned())?;
                crate::full_gp::start(&first, &self.training)?
            };
            let shared = self.fit_multi_calibrated(x, &others_y, &others_start)?;
            return Ok(FittedMultiSsgp::with_mean_outputs(shared, means));
        }
        if means_kept == outputs && learned_on_all.is_none() {
            // Every output predicts by its training mean, so no prediction uses the shared fit:
            // the kept comparison fit's θ is conditioned on all rows (one pass over them, for
            // the model's shared factor and online updates) instead of trained again there.
            let kept_fit = if keep_random {
                &random_fit
            } else {
                &learned_fit
            };
            let mut fitted =
                self.conditioned_at(kept_fit, kept_fit.parameters().clone(), (x, y))?;
            let means = self.kept_means((x, y), start, &remedies, &mean_settings)?;
            fitted.set_remedies(remedies.into_iter().map(Some).collect());
            fitted.keep_means(means);
            return Ok(fitted);
        }
        // The learned fit on all rows: the one the proxy checked, or the refit.
        let learned_on_all_rows = !keep_random && (proxy || !on_comparison_rows);
        let measured_noise = learned_fit.noise_variances();
        let (fitted, (tx, ty)) = match (keep_random, learned_on_all) {
            (true, _) => {
                let forgiving = self.forgiving();
                (forgiving.fit_multi_random_features(x, y, start)?, (x, y))
            }
            (false, Some(fitted)) => (fitted, (x, y)),
            (false, None) if on_comparison_rows => (learned_fit, (&fit_x, &fit_y)),
            (false, None) => {
                let mut stopped = self.clone();
                stopped.training.optim.max_evaluations = learned_budget;
                (stopped.fit_multi_stages(x, y, start, &[])?.0, (x, y))
            }
        };
        if learned_on_all_rows {
            let all_noise = fitted.noise_variances();
            let own = fitted.predict(&held_x)?;
            for (p, remedy) in remedies.iter_mut().enumerate() {
                if remedy.mean_kept() {
                    continue;
                }
                let truth = held_y.column(p).into_owned();
                let own_z2 = calibration_unchecked(&truth, &own[p])?.mean_squared_z;
                *remedy = narrowed_to_the_measured_level(
                    *remedy,
                    (measured_noise[p], all_noise[p]),
                    own_z2,
                    plan.learned_range.0,
                );
            }
        }
        // An output whose mean is kept predicts by it; the shared fit keeps its σ0p².
        let scales: Vec<f64> = remedies
            .iter()
            .map(|r| {
                if r.mean_kept() {
                    1.0
                } else {
                    r.variance_scale()
                }
            })
            .collect();
        let mut fitted = self.multi_rescaled(fitted, (tx, ty), &scales)?;
        let means = self.kept_means((x, y), start, &remedies, &mean_settings)?;
        fitted.set_remedies(remedies.into_iter().map(Some).collect());
        fitted.keep_means(means);
        Ok(fitted)
    }

    /// The settings of one output's training mean ([`Self::fit_mean`]) for targets of (1/n)
    /// variance `variance`: these with the noise floor, a variance, that the ratio floor
    /// ρ₀ = max(noise floor, relative floor) puts on σnp² = ρσ0p² at the output's start
    /// σ0p² = var y_p ([`Self::multi_start`]), ρ₀·var y_p — never the ratio floor itself, which
    /// is no variance (with the defaults, 10⁻⁴·var y_p: one output's relative floor).
    fn output_mean_settings(&self, variance: f64) -> ValidSsgpParams {
        let mut this = self.clone();
        this.training.noise_floor = self.training.ratio_noise().floor * variance;
        this.training.relative_noise_floor = 0.0;
        this
    }

    /// Each output's training mean on all rows `x`, `y` where its remedy keeps it (one output's
    /// [`Self::fit_mean`], rescaled by its factor, with that output's `settings`), else `None`.
    fn kept_means(
        &self,
        (x, y): Rows<'_>,
        start: &Hyperparameters,
        remedies: &[Remedy],
        settings: &[ValidSsgpParams],
    ) -> Result<Vec<Option<FittedSsgp>>> {
        let columns = InputColumns::all(x.ncols());
        (0..y.ncols())
            .map(|p| {
                if !remedies[p].mean_kept() {
                    return Ok(None);
                }
                let this = &settings[p];
                let all = Dataset::new(x.clone(), y.column(p).into_owned())?;
                let mean = this.fit_mean(&all, start, &columns, remedies[p])?;
                this.rescaled(&all, mean, &columns).map(Some)
            })
            .collect()
    }

    /// `fitted` (trained on `x`, `y`) with each output's σ0p² multiplied by its factor in
    /// `scales`, and so σnp² = ρσ0p²: A = ΦᵀΦ + mρI and the means are unchanged, output p's
    /// predictive variances are multiplied by its factor; θ, −log p(Y|θ) and the LOO diagnostics
    /// are those of the scaled model.
    fn multi_rescaled(
        &self,
        fitted: FittedMultiSsgp,
        (x, y): (&DMatrix<f64>, &DMatrix<f64>),
        scales: &[f64],
    ) -> Result<FittedMultiSsgp> {
        if scales.iter().all(|&s| s == 1.0) {
            return Ok(fitted);
        }
        let d = x.ncols();
        let mut theta = fitted.parameters().clone();
        for (p, s) in scales.iter().enumerate() {
            theta[d + p] += 0.5 * s.ln();
        }
        self.conditioned_at(&fitted, theta, (x, y))
    }

    /// The model of `fitted`'s spectral points (learned or fixed, as they were) and summary at
    /// `theta` (its layout), conditioned on `x`, `y`: one pass over the rows, no training.
    fn conditioned_at(
        &self,
        fitted: &FittedMultiSsgp,
        theta: DVector<f64>,
        (x, y): (&DMatrix<f64>, &DMatrix<f64>),
    ) -> Result<FittedMultiSsgp> {
        let mut this = self.clone();
        this.fixed_spectral_points = fitted.fixed_spectral_points();
        let w = fitted.hyperparameters().unit_frequencies.clone();
        let evidence = this.multi_evidence(x, y, Some(&w))?;
        this.multi_fitted(&evidence, (theta, fitted.training().clone()), y)
    }

    /// The multi-output random-feature fit on `x` (n×D, the used columns) and `y` (n×P): m unit
    /// frequencies (a draw of the seed from the spectral density, given initial ones or not)
    /// held fixed, ℓ held at `start`'s, and (log σ0p, p_ρ) trained from [`Self::multi_start`]'s
    /// by the configured optimiser.
    fn fit_multi_random_features(
        &self,
        x: &DMatrix<f64>,
        y: &DMatrix<f64>,
        start: &Hyperparameters,
    ) -> Result<FittedMultiSsgp> {
        let mut fixed = self.clone();
        fixed.fixed_spectral_points = true;
        let w = self.random_feature_frequencies(x.ncols());
        let evidence = fixed.multi_evidence(x, y, Some(&w))?;
        let theta = evidence.pack_start(&fixed.multi_start(y, start, w))?;
        let objective = TrailingEntries {
            evidence: &evidence,
            theta,
            held: x.ncols(),
        };
        let v0 = objective.theta.rows(x.ncols(), y.ncols() + 1).into_owned();
        let report = fixed.training.minimize(&objective, v0)?;
        let training = TrainingSummary::new(&report, &InputColumns::all(x.ncols()));
        fixed.multi_fitted(&evidence, (objective.full(&report.theta), training), y)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::ParamGuard;
    use crate::ssgp::Ssgp;
    use rand::{Rng, SeedableRng};

    /// A start of unit lengthscales, σ0² = 1, σn² = 0.1 (the check's fits start from it, with
    /// no full GP).
    fn unit_start(dim: usize) -> Hyperparameters {
        Hyperparameters {
            lengthscales: DVector::from_element(dim, 1.0),
            signal_variance: 1.0,
            noise_variance: 0.1,
        }
    }

    /// The settings of the checked fits below: m spectral points, seed 4, 64 evaluations, one
    /// thread.
    fn checked_params(m: usize) -> ValidSsgpParams {
        Ssgp::params(m)
            .seed(4)
            .max_evaluations(64)
            .threads(1)
            .check()
            .unwrap()
    }

    /// The check's record for each output is what its own held-out rows say about the kept
    /// candidate, recomputed here from the public predictive: on n = 440 rows (110 held out, so
    /// a learned fit's factor applies both ways and its budget is chosen among six), outputs of
    /// very different noise (hence different factors), the kept candidate retrained with the
    /// recorded budget on the split's rows gives each output's held-out mean z² (the factor where
    /// it lies beyond chance), the summed MNLP with those factors, and, kept as measured, the
    /// model's variances at the held-out rows are that candidate's times its factor.
    #[test]
    fn each_output_keeps_the_factor_its_held_out_rows_ask_for() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let (n, dim, m) = (440, 2, 8);
        let x = DMatrix::from_fn(n, dim, |_, _| rng.random_range(-2.0..2.0));
        let noise = [0.02, 0.5];
        let y = DMatrix::from_fn(n, 2, |i, p| {
            (1.3 * x[(i, 0)] + p as f64).sin() * (0.7 * x[(i, 1)]).cos()
                + noise[p] * rng.random_range(-1.7..1.7)
        });
        let params = checked_params(m);
        let start = unit_start(dim);
        let fitted = params.fit_multi_calibrated(&x, &y, &start).unwrap();
        let (group_of, inputs) = groups_of_equal_inputs(&x).unwrap();
        let columns: Vec<DVector<f64>> = y.column_iter().map(|c| c.into_owned()).collect();
        let split = split_leaving_targets_varying(
            (&group_of, inputs),
            n / 4,
            (params.training.seed, 1),
            |fit| columns.iter().all(|c| varies_on(c, fit)),
        );
        let (held_rows, fit_rows) = split.order.split_at(split.held);
        let (held_x, held_y) = rows_of(&x, &y, held_rows);
        let (fit_x, fit_y) = rows_of(&x, &y, fit_rows);
        let remedy = |p: usize| fitted.output_training(p).unwrap().remedy.unwrap();
        let Remedy::HeldOut {
            learned_mnlp,
            random_features_mnlp,
            learned_budget,
            on_comparison_rows,
            ..
        } = remedy(0)
        else {
            panic!("no held-out check: {:?}", remedy(0));
        };
        let keep_random = remedy(0).random_features();
        let candidate = if keep_random {
            params
                .fit_multi_random_features(&fit_x, &fit_y, &start)
                .unwrap()
        } else {
            let mut stopped = params.clone();
            stopped.training.optim.max_evaluations = learned_budget.unwrap();
            stopped
                .fit_multi_stages(&fit_x, &fit_y, &start, &[])
                .unwrap()
                .0
        };
        let rows = held_rows.len() as f64;
        let mut total = 0.0;
        let mut factors = Vec::new();
        for p in 0..2 {
            let truth = held_y.column(p).into_owned();
            let mut pred = candidate.predict_output(&held_x, p).unwrap();
            let z2 = crate::metrics::calibration_unchecked(&truth, &pred)
                .unwrap()
                .mean_squared_z;
            let factor = if (z2 - 1.0).abs() > 2.0 * (2.0 / rows).sqrt() {
                z2
            } else {
                1.0
            };
            let recorded = remedy(p);
            if !keep_random {
                assert_eq!(recorded.variance_scale(), factor, "output {p}");
            }
            pred.y_variance *= factor;
            total += crate::metrics::mnlp(&truth, &pred).unwrap();
            factors.push(factor);
            if on_comparison_rows {
                let kept = fitted.predict_output(&held_x, p).unwrap();
                let unscaled = candidate.predict_output(&held_x, p).unwrap();
                approx::assert_relative_eq!(
                    kept.y_variance,
                    unscaled.y_variance * factor,
                    max_relative = 1e-12
                );
            }
        }
        println!(
            "kept {}, budget {learned_budget:?}, factors {factors:?}, as measured {on_comparison_rows}",
            if keep_random { "random features" } else { "learned" }
        );
        assert!(factors[0] != factors[1]);
        let kept_mnlp = if keep_random {
            random_features_mnlp
        } else {
            learned_mnlp
        };
        approx::assert_relative_eq!(kept_mnlp, total, max_relative = 1e-12);
    }

    /// An output that no fit explains better than its training mean on the held-out rows keeps
    /// that mean, as one output's fit does, and leaves the shared fit: a signal and pure noise on
    /// n = 440 rows (110 held out), either output first. The noise output predicts ȳ with var y
    /// times its recorded factor, is judged only for its error bars, and is the model
    /// [`FittedMultiSsgp::output`] gives; the signal output is the check on it alone (from the
    /// start of its own full GP where the noise output was the first, whose start the fit took),
    /// bit for bit; both take updated samples as those models do (the signal's weights to
    /// round-off: solved with the other output's). (Before, the noise output kept
    /// the shared fit, flagged for explaining little, and the signal output shared its noise
    /// ratio.)
    #[test]
    fn an_output_no_fit_explains_keeps_its_training_mean() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(8);
        let (n, dim, m) = (440, 2, 8);
        let x: DMatrix<f64> = DMatrix::from_fn(n, dim, |_, _| rng.random_range(-2.0..2.0));
        let signal = DVector::from_fn(n, |i, _| {
            (1.3 * x[(i, 0)]).sin() * (0.7 * x[(i, 1)]).cos() + 0.05 * rng.random_range(-1.0..1.0)
        });
        let noise = DVector::from_fn(n, |_, _| 3.0 + rng.random_range(-1.0..1.0));
        let xt = DMatrix::from_fn(9, dim, |_, _| rng.random_range(-3.0..3.0));
        let (x_new, y_new) = (xt.rows(0, 4).into_owned(), DMatrix::from_element(4, 1, 0.5));
        let params = checked_params(m);
        for (s, e) in [(0, 1), (1, 0)] {
            let mut y = DMatrix::zeros(n, 2);
            y.set_column(s, &signal);
            y.set_column(e, &noise);
            let start = unit_start(dim);
            let mut fitted = params.fit_multi_calibrated(&x, &y, &start).unwrap();
            let summary = |p: usize| fitted.output_training(p).unwrap();
            assert!(!summary(s).remedy.unwrap().mean_kept(), "{:?}", summary(s));
            let remedy = summary(e).remedy.unwrap();
            assert!(remedy.mean_kept(), "{:?}", summary(e));
            for p in [s, e] {
                assert!(
                    !summary(p).flags().explains_little,
                    "{}",
                    summary(p).diagnosis()
                );
                // The mean's MNLP is recorded beside the fits' summed ones: their sum with
                // this output's mean in place of its fit.
                let Remedy::HeldOut {
                    learned_mnlp,
                    random_features_mnlp,
                    random_features_by_margin,
                    mean_mnlp: Some(mean_mnlp),
                    ..
                } = summary(p).remedy.unwrap()
                else {
                    panic!("{:?}", summary(p));
                };
                let fit = if random_features_by_margin || random_features_mnlp < learned_mnlp {
                    random_features_mnlp
                } else {
                    learned_mnlp
                };
                println!("output {p}: fits' MNLP {fit:.3}, with the mean {mean_mnlp:.3}");
                if p == e {
                    assert!((mean_mnlp - fit).abs() < 0.1, "{}", summary(p).diagnosis());
                } else {
                    assert!(mean_mnlp - fit > 1.0, "{}", summary(p).diagnosis());
                }
            }
            let pred = fitted.predict_output(&xt, e).unwrap();
            let expected_variance = variance(&noise) * remedy.variance_scale();
            for i in 0..xt.nrows() {
                approx::assert_relative_eq!(pred.mean[i], noise.mean(), max_relative = 1e-15);
                approx::assert_relative_eq!(
                    pred.y_variance[i],
                    expected_variance,
                    max_relative = 1e-12
                );
            }
            approx::assert_relative_eq!(
                fitted.noise_variances()[e],
                expected_variance,
                max_relative = 1e-12
            );
            let mut mean = fitted.output(e).unwrap();
            assert_eq!(mean.predict(&xt).unwrap(), pred);
            assert_eq!(mean.training().remedy, Some(remedy));
            let signal_y = DMatrix::from_column_slice(n, 1, signal.as_slice());
            let signal_start = if s == 0 {
                start
            } else {
                let data = Dataset::new(x.clone(), signal.clone()).unwrap();
                crate::full_gp::start(&data, &params.training).unwrap()
            };
            let mut alone = params
                .fit_multi_calibrated(&x, &signal_y, &signal_start)
                .unwrap();
            assert_eq!(
                fitted.predict_output(&xt, s).unwrap(),
                alone.predict_output(&xt, 0).unwrap()
            );
            assert_eq!(fitted.output_training(s).unwrap(), alone.training().clone());
            // Updates reach each output as they would reach its model alone.
            let mut both = DMatrix::zeros(4, 2);
            both.set_column(s, &y_new.column(0));
            fitted.update(&x_new, &both).unwrap();
            alone.update(&x_new, &y_new).unwrap();
            mean.update(&x_new, &both.column(e).into_owned()).unwrap();
            // The same factor; the weights solved for two right-hand sides at once, in their
            // last bits.
            let (a, b) = (
                fitted.predict_output(&xt, s).unwrap(),
                alone.predict_output(&xt, 0).unwrap(),
            );
            approx::assert_relative_eq!(a.mean, b.mean, max_relative = 1e-12);
            assert_eq!((a.y_variance, a.f_variance), (b.y_variance, b.f_variance));
            assert_eq!(
                fitted.predict_output(&xt, e).unwrap(),
                mean.predict(&xt).unwrap()
            );
            assert_eq!(fitted.prequential(e).unwrap(), mean.prequential());
        }
    }

    /// Three outputs with pure noise in the middle: the other two are the check on them alone,
    /// bit for bit, in their places (predictions, summaries, θ's signal entries, ȳ_p), and the
    /// middle one is its training mean, its entries the mean model's.
    #[test]
    fn a_kept_mean_between_two_outputs_leaves_them_in_their_places() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
        let (n, dim, m) = (440, 2, 8);
        let x: DMatrix<f64> = DMatrix::from_fn(n, dim, |_, _| rng.random_range(-2.0..2.0));
        let y = DMatrix::from_fn(n, 3, |i, p| {
            let noise = rng.random_range(-1.0..1.0);
            match p {
                1 => 3.0 + noise,
                _ => {
                    let f = (1.3 * x[(i, 0)] + p as f64).sin() * (0.7 * x[(i, 1)]).cos();
                    (p as f64 + 1.0) * f + 0.05 * noise
                }
            }
        });
        let params = checked_params(m);
        let start = unit_start(dim);
        let fitted = params.fit_multi_calibrated(&x, &y, &start).unwrap();
        let alone = params
            .fit_multi_calibrated(&x, &y.select_columns(&[0, 2]), &start)
            .unwrap();
        let mean = fitted.output(1).unwrap();
        assert!(mean.training().remedy.unwrap().mean_kept());
        let xt = DMatrix::from_fn(5, dim, |_, _| rng.random_range(-3.0..3.0));
        let theta = fitted.parameters();
        for (p, q) in [(0, 0), (2, 1)] {
            assert_eq!(
                fitted.predict_output(&xt, p).unwrap(),
                alone.predict_output(&xt, q).unwrap()
            );
            assert_eq!(
                fitted.output_training(p).unwrap(),
                alone.output_training(q).unwrap()
            );
            assert_eq!(theta[dim + p], alone.parameters()[dim + q]);
            assert_eq!(fitted.y_means()[p], alone.y_means()[q]);
        }
        assert_eq!(theta[dim + 1], 0.5 * mean.signal_variance().ln());
        assert_eq!(fitted.y_means()[1], mean.y_mean());
        assert_eq!(fitted.noise_variances()[1], mean.noise_variance());
        assert_eq!(theta.len(), alone.parameters().len() + 1);
        assert_eq!(
            theta.rows(dim + 3, theta.len() - dim - 3),
            alone.parameters().rows(dim + 2, theta.len() - dim - 3)
        );
    }

    /// Rescaling multiplies each output's predictive variances by its own factor and leaves the
    /// means (bit for bit), the noise ratio and every other output alone.
    #[test]
    fn each_output_is_rescaled_by_its_own_factor() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let (n, dim, m) = (60, 2, 8);
        let x = DMatrix::from_fn(n, dim, |_, _| rng.random_range(-2.0..2.0));
        let y = DMatrix::from_fn(n, 3, |i, p| {
            (p as f64 + 1.0) * (x[(i, 0)] + 0.3 * p as f64 * x[(i, 1)]).sin()
                + 0.1 * rng.random_range(-1.0..1.0)
        });
        let params = Ssgp::params(m)
            .seed(2)
            .max_evaluations(40)
            .calibration(CalibrationGuard::Off)
            .check()
            .unwrap();
        let start = unit_start(dim);
        let fitted = params.fit_multi_calibrated(&x, &y, &start).unwrap();
        let scales = [2.5, 1.0, 0.3];
        let scaled = params
            .multi_rescaled(fitted.clone(), (&x, &y), &scales)
            .unwrap();
        let xt = DMatrix::from_fn(7, dim, |_, _| rng.random_range(-3.0..3.0));
        for (p, s) in scales.iter().enumerate() {
            let (a, b) = (
                fitted.predict_output(&xt, p).unwrap(),
                scaled.predict_output(&xt, p).unwrap(),
            );
            assert_eq!(a.mean, b.mean);
            approx::assert_relative_eq!(b.y_variance, a.y_variance * *s, max_relative = 1e-12);
            approx::assert_relative_eq!(b.f_variance, a.f_variance * *s, max_relative = 1e-12);
        }
        approx::assert_relative_eq!(
            scaled.hyperparameters().noise_ratio,
            fitted.hyperparameters().noise_ratio,
            max_relative = 1e-15
        );
    }
}
