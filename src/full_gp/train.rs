//! Training the full GP: its evidence, hyperparameter learning (on all the data or a seeded
//! subset) and the conditioning on all the data (one Cholesky factorisation of K + σn²I).

use super::evidence::{condition, Conditioned, FullGpEvidence};
use super::params::ValidFullGpParams;
use super::posterior::FittedFullGp;
use crate::data::{Dataset, InputColumns};
use crate::error::{Error, Result};
use crate::hyperparameters::{self, Hyperparameters};
use crate::init::LengthscaleInit;
use crate::kernel::{self, Covariance};
use crate::linalg::{self};
use crate::optim::OptimReport;
#[cfg(doc)]
use crate::optim::Phase;
use crate::params::TrainingSettings;
use crate::predictive::Predictive;
use crate::termination::{Termination, TrainingSummary};
use nalgebra::DVector;
use std::sync::Arc;

/// The factors of the half ranges a full GP trained from them is trained from again, in turn,
/// while its fit calls more than half of the targets' variance noise
/// ([`ValidFullGpParams::learn`]).
pub const SHORTER_STARTS: [f64; 2] = [0.1, 0.01];

/// The median scaled squared distance r² from a training row to its nearest other row (at a
/// fit's lengthscales) above which the fit's kernel connects no rows — each row its own
/// island, exp(−r²/2) < 0.1 for the squared exponential — and a full GP trained from half
/// ranges is trained again from √D times them ([`ValidFullGpParams::learn`]): 2 ln 10.
pub const DISCONNECTED_R2: f64 = 4.605_170_185_988_092;

/// Hyperparameters learned by [`ValidFullGpParams::learn`].
#[derive(Debug, Clone, PartialEq)]
pub struct LearnedHyperparameters {
    /// The optimiser's report; its θ is for the used `columns` (layout in
    /// [`crate::hyperparameters`]).
    pub report: OptimReport,
    /// The input columns learned from (those not constant on the points used).
    pub columns: InputColumns,
}

impl LearnedHyperparameters {
    /// The learned lengthscales for all D inputs, infinite for the ignored columns.
    pub fn lengthscales(&self) -> DVector<f64> {
        let used = self.columns.used().len();
        self.columns.expand(
            &self.report.theta.rows(0, used).map(f64::exp),
            f64::INFINITY,
        )
    }
}

impl ValidFullGpParams {
    /// The evidence of this configuration on `data` (all of it, whatever the subset setting),
    /// with the noise floor resolved on var(y) of `data`, as SSGP's, FITC's and VFE's.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming `noise_floor` for a floor above
    /// [`MAX_NOISE_FLOOR_RATIO`](crate::params::MAX_NOISE_FLOOR_RATIO)·var(y), as `fit`.
    pub fn evidence(&self, data: &Dataset) -> Result<FullGpEvidence> {
        Ok(self
            .resolved_for(data.y_variance())?
            .evidence_unchecked(data))
    }

    /// [`Self::evidence`] without the floor's check: on settings already checked (and resolved)
    /// on all rows, for a subset of them or for a loaded model.
    fn evidence_unchecked(&self, data: &Dataset) -> FullGpEvidence {
        let mut this = self.clone();
        this.training = self.training.resolved(data.y_variance());
        FullGpEvidence::new(data, &this)
    }

    /// Learns θ by maximising the evidence (on the subset, if one is set), then conditions on all
    /// of `data` ([`Self::condition`]).
    ///
    /// The returned model's [`FittedFullGp::training`] describes the optimisation (on the subset,
    /// if any), its [`FittedFullGp::neg_log_evidence`] is on all of `data`.
    ///
    /// Input columns constant on the points the hyperparameters are learned from are left out (as
    /// if their lengthscale were infinite) and named in the training summary.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a subset larger than the data, or naming `noise_floor` for a
    /// floor above [`MAX_NOISE_FLOOR_RATIO`](crate::params::MAX_NOISE_FLOOR_RATIO)·var(y);
    /// [`Error::DimensionMismatch`] if the initial lengthscales have not one entry per used input;
    /// [`Error::EmptyData`] if every input column is constant, [`Error::ConstantTargets`];
    /// [`Error::Scale`] for targets whose spread f64 cannot fit; the evidence's errors at the
    /// initial θ; [`Error::TrainingFailed`] if training failed (unless best effort was asked
    /// for); as [`Self::condition`].
    pub fn fit(&self, data: &Dataset) -> Result<FittedFullGp> {
        let this = self.resolved_for(data.y_variance())?;
        let learned = this.learn(data)?;
        let training =
            TrainingSummary::new(&learned.report, &learned.columns).on_inputs(data.x())?;
        let mut fitted =
            this.condition_on(data, &learned.report.theta, learned.columns, Some(training))?;
        fitted.record.training.diagnostic = fitted.loo_diagnostic();
        if this.held_out_check {
            let (training, hyper) = (fitted.record.training.clone(), &fitted.hyperparameters);
            fitted.record.training = training.judged_by_refit(
                fitted.data.as_ref(),
                this.training.seed,
                |fit, held| self.refit((fit, held), hyper),
            )?;
        }
        Ok(fitted)
    }

    /// The refit of the held-out check ([`TrainingSummary::judged_by_refit`]): these settings
    /// (unresolved: the refit resolves its noise floor on its own rows) trained on all of `fit`
    /// (the fit's used columns) from the fit's hyperparameters `fitted` (ℓ of the columns that
    /// vary on `fit`; σn² re-encoded above the refit's floor), kept at their best point if
    /// training fails, the observer's reports in [`Phase::CalibrationCheck`]; its predictive at
    /// `held`'s inputs and its ȳ.
    fn refit(
        &self,
        (fit, held): (&Dataset, &Dataset),
        fitted: &Hyperparameters,
    ) -> Result<(Predictive, f64)> {
        let mut this = self.resolved_for(fit.y_variance())?;
        this.training = this.training.reporting_as_check();
        this.training.best_effort = true;
        let columns = InputColumns::varying(fit)?;
        let used = columns.used();
        let start = Hyperparameters {
            lengthscales: DVector::from_iterator(
                used.len(),
                used.iter().map(|&j| fitted.lengthscales[j]),
            ),
            ..fitted.clone()
        };
        let data = columns.select_data(fit)?;
        let evidence = this.evidence_unchecked(&data);
        let theta0 = hyperparameters::pack(&start, this.training.noise(), None);
        let report = this.training.minimize(&evidence, theta0)?;
        let model = this.condition_on(fit, &report.theta, columns, None)?;
        Ok((model.predict(held.x())?, model.record.y_mean))
    }

    /// Learns the hyperparameters only (on the configured subset, or all of `data`), without
    /// conditioning on all the data: what [`ValidFullGpParams::fit`] does before its final
    /// Cholesky. Input columns constant on the points learned from are left out.
    ///
    /// # Errors
    /// As [`ValidFullGpParams::fit`], but for the conditioning.
    pub fn learn(&self, data: &Dataset) -> Result<LearnedHyperparameters> {
        let this = self.resolved_for(data.y_variance())?;
        this.learn_resolved(data)
    }

    /// [`Self::learn`] with the noise floor resolved on all of `data`.
    fn learn_resolved(&self, data: &Dataset) -> Result<LearnedHyperparameters> {
        let subset;
        let train = match self.hyperparameter_subset {
            Some(size) if size > data.len() => {
                return Err(Error::InvalidParameter {
                    name: "hyperparameter_subset",
                    reason: format!("{size} points asked for, but the data has {}", data.len()),
                })
            }
            Some(size) if size < data.len() => {
                let mut rng = crate::random::seeded(self.training.seed);
                let mut rows = rand::seq::index::sample(&mut rng, data.len(), size).into_vec();
                rows.sort_unstable();
                keep_targets_varying(data.y(), &mut rows);
                subset = data.subset(&rows)?;
                &subset
            }
            _ => data,
        };
        let columns = InputColumns::varying(train)?;
        let train = columns.select_data(train)?;
        let start = super::start(&train, &self.training)?;
        let theta0 = hyperparameters::pack(&start, self.training.noise(), None);
        let evidence = self.evidence_unchecked(&train);
        let started = std::time::Instant::now();
        let mut report = self.training.minimize(&evidence, theta0)?;
        if self.training.lengthscales == LengthscaleInit::HalfRange {
            report = self.shorter_starts((&train, &evidence), &start, report, started)?;
            report = self.longer_start((&train, &evidence), &start, report, started)?;
        }
        Ok(LearnedHyperparameters { report, columns })
    }

    /// `report`, a fit from half ranges, or a fit from lengthscales [`SHORTER_STARTS`] times
    /// theirs while `report` calls more than half of the targets' variance noise: from half
    /// ranges a signal that turns many times across its inputs' range (sin 3x on [0, 20], 400
    /// rows, noise 0.05) fits as noise, ℓ = 22 and σn² = 0.98·var y, test NMSE 1 — a long
    /// lengthscale's optimum that the optimiser does not leave. A shorter start is kept when its
    /// −log p is lower by more than one nat; a shorter start that fails is passed over. The
    /// report (and so the training summary) is the kept run's, but for its iterations and
    /// evaluations: those of every run that returned, kept or not, the cost of the fit.
    ///
    /// The runs share the fit's budgets: each retry has what the runs before it (since
    /// `started`) left of `max_evaluations`, `max_iterations` and `max_time`, and none runs after
    /// a run the observer stopped or the clock ended, nor under a noise floor of half the
    /// targets' variance or more (σn² cannot fall below it, so no retry could help).
    fn shorter_starts(
        &self,
        (data, evidence): (&Dataset, &FullGpEvidence),
        start: &hyperparameters::Hyperparameters,
        mut report: OptimReport,
        started: std::time::Instant,
    ) -> Result<OptimReport> {
        let variance = data.y_variance();
        let (mut iterations, mut evaluations) = (report.iterations, report.evaluations);
        let floor = self.training.noise().floor;
        let mut ended = floor >= 0.5 * variance;
        for factor in SHORTER_STARTS {
            ended |= matches!(
                report.termination,
                Termination::StoppedByObserver | Termination::TimeLimit
            );
            if ended || evidence.unpack(&report.theta)?.noise_variance <= 0.5 * variance {
                break;
            }
            let Some(left) = self.budget_left((iterations, evaluations), started) else {
                break;
            };
            let shorter = hyperparameters::Hyperparameters {
                lengthscales: &start.lengthscales * factor,
                ..start.clone()
            };
            let theta0 = hyperparameters::pack(&shorter, self.training.noise(), None);
            if let Ok(retry) = left.minimize(evidence, theta0) {
                ended = matches!(
                    retry.termination,
                    Termination::StoppedByObserver | Termination::TimeLimit
                );
                iterations += retry.iterations;
                evaluations += retry.evaluations;
                if retry.value < report.value - 1.0 {
                    report = retry;
                }
            }
        }
        report.iterations = iterations;
        report.evaluations = evaluations;
        Ok(report)
    }

    /// The training settings with what runs that took `(iterations, evaluations)` since
    /// `started` left of `max_iterations`, `max_evaluations` and `max_time`; `None` when any is
    /// spent.
    fn budget_left(
        &self,
        (iterations, evaluations): (u64, usize),
        started: std::time::Instant,
    ) -> Option<TrainingSettings> {
        let mut left = self.training.clone();
        let optim = &mut left.optim;
        optim.max_evaluations = optim.max_evaluations.saturating_sub(evaluations);
        optim.max_iterations = optim.max_iterations.saturating_sub(iterations);
        optim.max_time = optim.max_time.map(|t| t.saturating_sub(started.elapsed()));
        let spent = optim.max_evaluations == 0
            || optim.max_iterations == 0
            || optim.max_time.is_some_and(|t| t.is_zero());
        (!spent).then_some(left)
    }

    /// `report`, a fit from half ranges (after [`Self::shorter_starts`]), or a fit from √D
    /// times them where neither the half ranges' kernel nor `report`'s connects the training
    /// rows (the median squared distance from a row to its nearest other row, scaled by the
    /// lengthscales, above [`DISCONNECTED_R2`]; rows sampled evenly, at most [`NEAREST_ROWS`])
    /// and there are at least [`LONGER_START_ROWS_PER_HYPERPARAMETER`] rows per hyperparameter.
    /// From half ranges,
    /// two rows of D uniform inputs are r² ≈ 2D/3 apart, so on wide tables every row starts as
    /// its own island and the optimiser stays there: 400 rows of 100 inputs, 3 of them relevant,
    /// fitted the signal as noise and a kernel explaining each row alone (test NMSE 1.000,
    /// smooth and rough, noise 0.01 and 0.1), where the fit from √D times the half ranges (r² ≈
    /// 2/3) has −log p lower by 570–1 350 nats and test NMSE 0.0003–0.037. The longer start is
    /// kept when its −log p is lower by more than one nat, with the budgets and the count of
    /// iterations and evaluations shared as in [`Self::shorter_starts`]. Below the rows per
    /// hyperparameter the longer start's evidence overfits (50 rows of 100 inputs: test NMSE
    /// 1.6–1.9 where half ranges gave 1.0; 150 rows of 60 inputs: 1.21).
    fn longer_start(
        &self,
        (data, evidence): (&Dataset, &FullGpEvidence),
        start: &hyperparameters::Hyperparameters,
        mut report: OptimReport,
        started: std::time::Instant,
    ) -> Result<OptimReport> {
        let (n, dim) = (data.len(), data.dim());
        let stopped = matches!(
            report.termination,
            Termination::StoppedByObserver | Termination::TimeLimit
        );
        if stopped || n < LONGER_START_ROWS_PER_HYPERPARAMETER * (dim + 2) {
            return Ok(report);
        }
        let fitted = evidence.unpack(&report.theta)?;
        let disconnected =
            |ell: &DVector<f64>| nearest_squared_distance(data.x(), ell) > DISCONNECTED_R2;
        if !(disconnected(&start.lengthscales) && disconnected(&fitted.lengthscales)) {
            return Ok(report);
        }
        let spent = (report.iterations, report.evaluations);
        let Some(left) = self.budget_left(spent, started) else {
            return Ok(report);
        };
        let longer = hyperparameters::Hyperparameters {
            lengthscales: &start.lengthscales * (dim as f64).sqrt(),
            ..start.clone()
        };
        let theta0 = hyperparameters::pack(&longer, self.training.noise(), None);
        if let Ok(retry) = left.minimize(evidence, theta0) {
            let (iterations, evaluations) = (
                report.iterations + retry.iterations,
                report.evaluations + retry.evaluations,
            );
            if retry.value < report.value - 1.0 {
                report = retry;
            }
            report.iterations = iterations;
            report.evaluations = evaluations;
        }
        Ok(report)
    }

    /// The posterior of a full GP on all of `data` at hyperparameters θ (layout in
    /// [`crate::hyperparameters`]), without training: one Cholesky factorisation of K + σn² I
    /// (n³/3 flops, 8·n² bytes), with the jitter ladder if needed ([`FittedFullGp::jitter`]).
    /// The [`FittedFullGp::training`] summary is [`TrainingSummary::untrained`].
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] for a θ without D + 2 entries, [`Error::NonFinite`] for a NaN
    /// or infinity in it, [`Error::InvalidParameter`] for extreme values;
    /// [`Error::NotPositiveDefinite`] if K + σn² I cannot be factorised even with jitter;
    /// [`Error::Allocation`] if its 8·n² bytes cannot be allocated.
    pub fn condition(&self, data: &Dataset, theta: &DVector<f64>) -> Result<FittedFullGp> {
        let mut fitted = self.resolved_for(data.y_variance())?.condition_on(
            data,
            theta,
            InputColumns::all(data.dim()),
            None,
        )?;
        fitted.record.training.diagnostic = fitted.loo_diagnostic();
        Ok(fitted)
    }

    /// The posterior on `data`'s used `columns` at θ (for those columns), with the summary of
    /// its training (the untrained one if `None`).
    fn condition_on(
        &self,
        data: &Dataset,
        theta: &DVector<f64>,
        columns: InputColumns,
        training: Option<TrainingSummary>,
    ) -> Result<FittedFullGp> {
        let data = Arc::new(columns.select_data(data)?.into_owned());
        self.condition_used(data, theta, columns, training)
    }

    /// The posterior on `data`, already restricted to the used `columns`, at θ: the one code path
    /// of fitting's conditioning and of loading a saved model, so both give the same factor.
    ///
    /// # Errors
    /// As [`Self::condition`].
    pub(crate) fn condition_used(
        &self,
        data: Arc<Dataset>,
        theta: &DVector<f64>,
        columns: InputColumns,
        training: Option<TrainingSummary>,
    ) -> Result<FittedFullGp> {
        let h = self.evidence_unchecked(&data).unpack(theta)?;
        let par = linalg::par(self.training.threads);
        let n = data.len();
        let (centred, input_means) = kernel::centre_columns(data.x());
        let z = kernel::scale_inputs(&centred, &h.lengthscales);
        let y_mean = data.y_mean();
        let y = data.y().add_scalar(-y_mean);
        let mut factor = linalg::try_zeros(n, n, "the n×n Cholesky factor of K + σn²I")?;
        let kernel = Covariance {
            kernel: self.training.kernel,
            lengthscales: &h.lengthscales,
            signal_variance: h.signal_variance,
        };
        let Conditioned {
            jitter,
            alpha,
            neg_log_evidence,
        } = condition(
            &mut factor,
            |k| kernel.lower_scaled(&z, k, par),
            &y,
            &h,
            &self.jitter,
            par,
        )?;
        Ok(FittedFullGp {
            data,
            z,
            input_means,
            alpha,
            factor: Arc::new(factor),
            hyperparameters: h,
            jitter,
            kernel: self.training.kernel,
            jitter_policy: self.jitter,
            record: self.training.record(
                theta.clone(),
                y_mean,
                neg_log_evidence,
                training.unwrap_or_else(|| TrainingSummary::untrained(neg_log_evidence)),
                columns,
            ),
            prequential: Default::default(),
            blocks: Vec::new(),
        })
    }
}

/// Where the subset `rows` (ascending) of `y`'s rows has constant targets and `y` has not, its
/// last row replaced by the first row of `y` whose target differs (`rows` kept ascending): a
/// subset drawn from targets constant but for a few rows (a spike, a rare event) missed them —
/// half the seeds with one spike in 2 400 rows and a subset of 1 024 — and learning failed on
/// targets the data does not have ("the training targets are constant"). Any other subset is
/// left as drawn.
fn keep_targets_varying(y: &DVector<f64>, rows: &mut Vec<usize>) {
    let Some(&first) = rows.first() else {
        return;
    };
    if rows.iter().any(|&i| y[i] != y[first]) {
        return;
    }
    if let Some(other) = (0..y.len()).find(|&i| y[i] != y[first]) {
        rows.pop();
        rows.push(other);
        rows.sort_unstable();
    }
}

/// The fewest rows per hyperparameter (D + 2) on which a full GP whose kernel connects no rows
/// is trained again from longer lengthscales ([`ValidFullGpParams::learn`]): on the calibration
/// suite's 150 rows of 60 inputs (2.5 per hyperparameter) the longer start's better evidence
/// overfitted (test NMSE 1.00 → 1.21), on 400–1 000 rows of 100 inputs (3.9–9.8) it learned
/// what half ranges had called noise.
pub const LONGER_START_ROWS_PER_HYPERPARAMETER: usize = 3;

/// The most rows [`nearest_squared_distance`] compares (evenly spaced): 256² pairs of D terms.
const NEAREST_ROWS: usize = 256;

/// The median, over up to [`NEAREST_ROWS`] evenly spaced rows of `x`, of the squared distance
/// scaled by `ell`, Σ_d ((x_id − x_jd)/ℓ_d)², from the row to its nearest other one among them
/// (∞ for a single row).
fn nearest_squared_distance(x: &nalgebra::DMatrix<f64>, ell: &DVector<f64>) -> f64 {
    let n = x.nrows();
    let count = n.min(NEAREST_ROWS);
    let rows: Vec<usize> = (0..count).map(|k| k * n / count).collect();
    let mut nearest: Vec<f64> = rows
        .iter()
        .map(|&i| {
            rows.iter()
                .filter(|&&j| j != i)
                .map(|&j| {
                    (0..x.ncols())
                        .map(|d| ((x[(i, d)] - x[(j, d)]) / ell[d]).powi(2))
                        .sum::<f64>()
                })
                .fold(f64::INFINITY, f64::min)
        })
        .collect();
    nearest.sort_by(f64::total_cmp);
    nearest
        .get(nearest.len() / 2)
        .copied()
        .unwrap_or(f64::INFINITY)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A subset whose targets are constant takes a row whose target differs; one whose targets
    /// vary, or of targets that are all equal, is left as it was.
    #[test]
    fn a_subset_of_constant_targets_takes_a_row_that_differs() {
        let y = DVector::from_fn(10, |i, _| if i == 6 { 1.0 } else { 0.0 });
        let mut rows = vec![0, 2, 4, 8];
        keep_targets_varying(&y, &mut rows);
        assert_eq!(rows, vec![0, 2, 4, 6]);
        let mut varied = vec![1, 6, 9];
        keep_targets_varying(&y, &mut varied);
        assert_eq!(varied, vec![1, 6, 9]);
        let flat = DVector::zeros(10);
        let mut same = vec![0, 2, 4];
        keep_targets_varying(&flat, &mut same);
        assert_eq!(same, vec![0, 2, 4]);
    }
}
