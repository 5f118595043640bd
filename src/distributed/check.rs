//! [`CalibrationGuard::Check`] across the ranks: the single-process check's proxy (its rule above
//! [`CalibrationGuard::HELD_OUT_MAX_ROWS`] rows), each rank holding out a seeded half of its own
//! rows, the held-out scores summed over the ranks.
//!
//! After the learned fit on every rank's rows, each rank splits its rows (whole groups of equal
//! inputs, seeded by the seed and the rank); the learned fit (with half the evaluations the fit
//! on all rows used) and the random-feature fit are trained on the ranks' training halves, from
//! the same start, and scored on the held-out halves: each fit's mean z² over every rank's
//! held-out rows gives its variance factor, its summed negative log predictive densities its
//! MNLP; the training mean of the training halves is scored as well, and kept unless the winner
//! beats it by more than one standard error. The verdict, the [`Remedy`] and the rescaling are
//! the single-process ones ([`crate::ssgp`]'s `remedy.rs`), so a distributed fit and a
//! single-process fit above 2 000 rows are checked by the same rule on differently drawn halves. Every number a decision rests
//! on is rank 0's (summed, then broadcast), so every rank takes the same branch.

use super::cluster::Cluster;
use super::statistics::GlobalStatistics;
use super::training::Share;
use crate::data::{groups_of_equal_inputs, split_leaving_targets_varying, Dataset, InputColumns};
use crate::error::Result;
use crate::hyperparameters::Hyperparameters;
use crate::metrics::nlp_and_mnlp;
use crate::predictive::Predictive;
use crate::ssgp::remedy::{
    few_inputs_fit, held_out_factor, held_out_target, mean_noise_variance, mean_wins,
    narrowed_to_the_measured_level, with_mean, Comparison, HeldOutScore,
};
#[cfg(doc)]
use crate::ssgp::CalibrationGuard;
use crate::ssgp::{FittedSsgp, ValidSsgpParams};
use crate::termination::{HeldOutCalibration, Remedy};
use nalgebra::DVector;

/// The fewest held-out rows, over all ranks, on which the distributed check compares the two
/// fits: those on which the single-process check scales a learned fit both ways
/// ([`CalibrationGuard::LEARNED_SCALE_MIN_HELD_OUT_ROWS`], as the proxy does). On fewer the fit
/// is flagged for too few inputs, as below [`CalibrationGuard::HELD_OUT_MIN_ROWS`] distinct
/// inputs in one process.
const MIN_HELD_OUT_ROWS: usize = crate::ssgp::CalibrationGuard::LEARNED_SCALE_MIN_HELD_OUT_ROWS;

impl ValidSsgpParams {
    /// Collective: the learned fit on `share`'s rows, checked across the ranks (module docs);
    /// `absolute_floor` is the noise floor set as a variance, below which no factor takes σn².
    pub(super) fn checked_across(
        &self,
        share: &Share<'_>,
        start: Hyperparameters,
        columns: &InputColumns,
        absolute_floor: f64,
    ) -> Result<FittedSsgp> {
        let (cluster, local) = (share.cluster, share.local);
        let (group_of, groups) = cluster.agree(groups_of_equal_inputs(local.x()))?;
        // Each rank's seed, moved on by the ranks' count while the rows left to train on have
        // constant targets over every rank (as one process's `split_leaving_targets_varying`).
        let seed = self.training.seed.wrapping_add(cluster.rank() as u64);
        let split = split_leaving_targets_varying(
            (&group_of, groups),
            held_out_target(local.len(), true),
            (seed, cluster.size() as u64),
            |fit| {
                // Collective: the least and largest target left to train on over every rank.
                let (low, high) = fit
                    .iter()
                    .map(|&i| local.y()[i])
                    .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| {
                        (l.min(v), h.max(v))
                    });
                // A gather that fails fails on every rank: the targets are then taken as
                // constant there, alike, and the seed moves on.
                let Ok(all) = cluster.all_gather(&[low, high]) else {
                    return false;
                };
                let low = all.iter().step_by(2).fold(f64::INFINITY, |l, &v| l.min(v));
                let high = all
                    .iter()
                    .skip(1)
                    .step_by(2)
                    .fold(f64::NEG_INFINITY, |h, &v| h.max(v));
                low < high
            },
        );
        let (held, fit) = split.order.split_at(split.held);
        let mut held_rows = [held.len() as f64, groups as f64];
        cluster.sum_as_root(&mut held_rows);
        if (held_rows[0] as usize) < MIN_HELD_OUT_ROWS {
            let inputs = held_rows[1] as usize;
            return self.few_inputs_across(share, start, columns, inputs);
        }
        let learned_on_all = self.train_learned(share, start.clone(), columns)?;
        let held = cluster.agree((!held.is_empty()).then(|| local.subset(held)).transpose())?;
        let fit = cluster.agree(local.subset(fit))?;
        let halves = Share::of(&fit, cluster, share.spent.get())?;
        let narrowest = self.narrowest_factor(absolute_floor);
        let quiet = self.reporting_as_check();
        let mut proxy = quiet.clone();
        proxy.training.optim.max_evaluations =
            (learned_on_all.record.training.evaluations / 2).max(1);
        let budget = proxy.training.optim.max_evaluations;
        let held_count = held_rows[0] as usize;
        let plan = Comparison::new((held_count, held_count), true, narrowest, budget);
        let all = InputColumns::all(local.dim());
        let learned_fit = proxy.train_learned(&halves, start.clone(), &all)?;
        let learned = held_out_across(&learned_fit, held.as_ref(), plan.learned_range, cluster)?;
        let forgiving = quiet.forgiving();
        let random_fit =
            forgiving.train_random_features(&halves, &start, &all, Remedy::RandomFeatures)?;
        let random = held_out_across(
            &random_fit,
            held.as_ref(),
            (narrowest, f64::INFINITY),
            cluster,
        )?;
        share.spent.set(halves.spent.get());
        let standard_error = standard_error_across(&learned, &random, cluster);
        let verdict = plan.verdict((learned.mnlp, random.mnlp), learned.scale > 1.0, || {
            standard_error
        });
        let kept = if verdict.keep_random {
            &random
        } else {
            &learned
        };
        let mean = mean_across(
            &halves.stats,
            held.as_ref(),
            ((narrowest, f64::INFINITY), self.training.noise_floor),
            cluster,
        )?;
        // Collective, so taken on every rank whether or not the rule asks for it.
        let mean_error = standard_error_across(kept, &mean, cluster);
        let mean_kept = mean_wins(kept, &mean, || mean_error);
        let mut remedy = with_mean(
            verdict.remedy(
                &plan,
                kept,
                (learned.mnlp, random.mnlp),
                budget,
                self.training
                    .lengthscales
                    .learned_from(share.stats.n, local.dim()),
            ),
            &mean,
            mean_kept,
        );
        let mut fitted = if mean_kept {
            self.train_mean(share, &start, columns, remedy)?
        } else if verdict.keep_random {
            let forgiving = self.forgiving();
            forgiving.train_random_features(share, &start, columns, remedy)?
        } else {
            let mut learned_on_all = learned_on_all;
            let noise = (
                learned_fit.noise_variance(),
                learned_on_all.noise_variance(),
            );
            // Its own z² on the held-out rows (its training rows, in all columns).
            let held_all = cluster.agree(
                held.as_ref()
                    .map(|h| Dataset::new(columns.expand_columns(h.x(), 0.0), h.y().clone()))
                    .transpose(),
            )?;
            // Not a prediction of the user's: the observer is not told of it.
            let observer = learned_on_all.record.observer.take();
            let own = held_out_across(&learned_on_all, held_all.as_ref(), (1.0, 1.0), cluster);
            learned_on_all.record.observer = observer;
            let own = own?;
            let lowest = plan.learned_range.0;
            remedy = narrowed_to_the_measured_level(remedy, noise, own.unscaled_z2, lowest);
            learned_on_all
        };
        fitted.record.training.remedy = Some(remedy);
        share.rescaled(self, fitted, columns)
    }

    /// Collective: the fit on too few rows for the check (fewer than [`MIN_HELD_OUT_ROWS`] held
    /// out over all ranks), as one process's on too few distinct inputs: flagged
    /// [`Remedy::FewInputs`] (`inputs`: the ranks' distinct inputs summed, an input on two ranks
    /// counted twice), the random-feature fit kept without the learned one where the rows are no
    /// more than m·D and fewer than [`CalibrationGuard::HELD_OUT_MIN_ROWS`], else the learned fit
    /// unless its LOO diagnostic fits its rows too well; either kept at its best point if its
    /// line search stalls.
    fn few_inputs_across(
        &self,
        share: &Share<'_>,
        start: Hyperparameters,
        columns: &InputColumns,
        inputs: usize,
    ) -> Result<FittedSsgp> {
        let forgiving = self.forgiving();
        few_inputs_fit(
            inputs,
            self.frequencies_outnumber(share.stats.n, share.local.dim()),
            || forgiving.train_learned(share, start.clone(), columns),
            |remedy| forgiving.train_random_features(share, &start, columns, remedy),
        )
    }
}

/// Collective: `model`'s score on every rank's held-out rows (this rank's `held`, if any), as
/// the single-process check's `held_out` scores one process's: the factor from the mean z² over
/// all of them, within `range`; the MNLP and NMSE (by the model's ȳ) at the scaled variances
/// from the ranks' summed densities and squared errors; the row-by-row densities this rank's.
fn held_out_across(
    model: &FittedSsgp,
    held: Option<&Dataset>,
    range: (f64, f64),
    cluster: &Cluster,
) -> Result<HeldOutScore> {
    let predictive = cluster.agree(held.map(|h| model.predict(h.x())).transpose())?;
    score_across(predictive, held, model.y_mean(), range, cluster)
}

/// Collective: the training mean's score on every rank's held-out rows, as [`held_out_across`]
/// scores a fit: N(ȳ, var y) of the rows `trained` describes (every rank's training halves;
/// var y at the noise floor `floor` where it is not above it, [`mean_noise_variance`], as the
/// mean's model carries it).
fn mean_across(
    trained: &GlobalStatistics,
    held: Option<&Dataset>,
    (range, floor): ((f64, f64), f64),
    cluster: &Cluster,
) -> Result<HeldOutScore> {
    let variance = mean_noise_variance(trained.y_variance, floor);
    let predictive = held.map(|h| Predictive {
        mean: DVector::from_element(h.len(), trained.y_mean),
        y_variance: DVector::from_element(h.len(), variance),
        f_variance: DVector::zeros(h.len()),
    });
    score_across(predictive, held, trained.y_mean, range, cluster)
}

/// Collective: [`held_out_across`]'s score of this rank's predictive at its held-out rows (none
/// without them), NMSE by `y_mean`.
fn score_across(
    predictive: Option<Predictive>,
    held: Option<&Dataset>,
    y_mean: f64,
    range: (f64, f64),
    cluster: &Cluster,
) -> Result<HeldOutScore> {
    let mut first = [0.0; 2];
    if let (Some(h), Some(p)) = (held, &predictive) {
        first[0] = h.len() as f64;
        first[1] = h
            .y()
            .iter()
            .zip(p.mean.iter().zip(p.y_variance.iter()))
            .map(|(y, (mu, v))| (y - mu).powi(2) / v)
            .sum();
    }
    cluster.sum_as_root(&mut first);
    let [rows, z2_sum] = first;
    let z2 = z2_sum / rows;
    let scale = held_out_factor(z2, rows as usize, range);
    let local = match (held, predictive) {
        (Some(h), Some(mut p)) => {
            p.y_variance *= scale;
            let (squared, spread) = h
                .y()
                .iter()
                .zip(p.mean.iter())
                .fold((0.0, 0.0), |(e, s), (y, mu)| {
                    (e + (y - mu).powi(2), s + (y - y_mean).powi(2))
                });
            nlp_and_mnlp(h.y(), &p).map(|(nlp, _)| (nlp, squared, spread))
        }
        _ => Ok((DVector::zeros(0), 0.0, 0.0)),
    };
    // Only ranks with held-out rows can fail here: every rank learns of it before the sums.
    let (row_nlp, squared, spread) = cluster.agree(local)?;
    let mut sums = [row_nlp.sum(), squared, spread];
    cluster.sum_as_root(&mut sums);
    let [nlp, squared, spread] = sums;
    let mnlp = nlp / rows;
    let nmse = squared / spread;
    let calibration = HeldOutCalibration {
        rows: rows as usize,
        mean_z2: z2 / scale,
        nmse,
    };
    Ok(HeldOutScore {
        mnlp: if mnlp.is_finite() { mnlp } else { f64::MAX },
        scale,
        calibration: (calibration.mean_z2.is_finite() && nmse.is_finite()).then_some(calibration),
        row_nlp,
        unscaled_z2: z2,
        rows: rows as usize,
    })
}

/// Collective: the standard error of the mean, over every rank's held-out rows, of the
/// row-by-row difference of two fits' negative log predictive densities (the single-process
/// check's `standard_error_of_difference`, from the ranks' sums of dᵢ and dᵢ²).
fn standard_error_across(a: &HeldOutScore, b: &HeldOutScore, cluster: &Cluster) -> f64 {
    let d = &a.row_nlp - &b.row_nlp;
    let mut sums = [d.sum(), d.iter().map(|x| x * x).sum()];
    cluster.sum_as_root(&mut sums);
    let rows = a.rows as f64;
    if rows < 2.0 {
        return 0.0;
    }
    let mean = sums[0] / rows;
    let variance = (sums[1] - rows * mean * mean).max(0.0) / (rows - 1.0);
    (variance / rows).sqrt()
}
