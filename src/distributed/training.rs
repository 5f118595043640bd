//! SSGP's training (§4.2) across the ranks: start values from global statistics, the best of K
//! draws by the all-reduced evidence, then rank 0 runs the optimiser and every other rank
//! follows. Per evaluation rank 0 broadcasts a command [evaluate, θ] (8·(P + 1) bytes, P the
//! length of θ) and all ranks join the evidence's two all-reduces; at the end it broadcasts
//! [done], the outcome (θ and the training summary, or its error) and the factor and α of the
//! posterior, so every rank holds the same bits of the same [`FittedSsgp`].

use super::cluster::{Cluster, Traffic};
use super::evidence::DistributedEvidence;
use super::fingerprint::check_same_settings;
use super::statistics::GlobalStatistics;
use crate::data::{Dataset, InputColumns};
use crate::error::{Error, Result};
use crate::hyperparameters::Hyperparameters;
use crate::init;
#[cfg(doc)]
use crate::init::LengthscaleInit;
use crate::linalg;
use crate::optim::{Objective, OptimReport};
use crate::ssgp::remedy::{mean_hyperparameters, with_variances};
use crate::ssgp::{
    CalibrationGuard, FittedSsgp, NoiseBound, SsgpEvidence, SsgpHyperparameters, ValidSsgpParams,
};
use crate::termination::{LooDiagnostic, Remedy, Termination, TrainingSummary};
use nalgebra::{DMatrix, DVector};
use std::cell::Cell;
use std::time::Duration;

/// Rank 0's command: evaluate at the θ that follows.
const EVALUATE: f64 = 0.0;
/// Rank 0's command: training is over.
const DONE: f64 = 1.0;

/// A distributed fit as one rank sees it: the model (the same on every rank) and what this
/// rank spent on it.
pub struct DistributedFit {
    /// The fitted model, bit for bit the same on every rank; prediction needs no MPI.
    pub model: FittedSsgp,
    /// The number of ranks.
    pub ranks: usize,
    /// The rows over all ranks.
    pub rows: usize,
    /// Evaluations of the evidence (initial draws included) this rank took part in.
    pub evaluations: usize,
    /// Time this rank spent computing in them.
    pub compute: Duration,
    /// This rank's communication during the fit.
    pub traffic: Traffic,
}

impl ValidSsgpParams {
    /// Collective: the evidence of these settings over the rows of every rank, each rank passing
    /// its own rows `local` — inputs and targets centred by the global means, W fixed as
    /// [`ValidSsgpParams::evidence`] fixes it. At a fixed θ it equals the single-process
    /// evidence on all rows up to rounding.
    ///
    /// # Errors
    /// [`Error::Distributed`] if the ranks' data disagree on D or their model-changing settings
    /// differ; [`Error::DimensionMismatch`] for
    /// fixed frequencies without D columns (on every rank: the settings are the same);
    /// [`Error::Allocation`] on a rank that cannot allocate an evaluation's buffers for this m
    /// ([`Error::Distributed`] on the others).
    pub fn distributed_evidence<'a>(
        &self,
        local: &'a Dataset,
        cluster: &'a Cluster,
    ) -> Result<DistributedEvidence<'a>> {
        check_same_settings(self, cluster)?;
        let stats = GlobalStatistics::all_reduce(local, cluster)?;
        cluster.agree(self.check_buffers(local))?;
        self.resolved_for(stats.y_variance)?
            .distributed_evidence_at(local, cluster, stats)
    }

    /// [`Self::distributed_evidence`] with the global statistics, the noise floor resolved.
    fn distributed_evidence_at<'a>(
        &self,
        local: &'a Dataset,
        cluster: &'a Cluster,
        stats: GlobalStatistics,
    ) -> Result<DistributedEvidence<'a>> {
        let fixed = match (self.fixed_spectral_points, &self.initial_unit_frequencies) {
            (false, _) => None,
            (true, Some(w)) => Some(w.clone()),
            (true, None) => Some(self.density().sample_unit_frequencies(
                self.m,
                local.dim(),
                &mut crate::random::seeded(self.training.seed),
            )),
        };
        self.distributed_evidence_with(local, cluster, &stats, stats.mean.clone(), fixed)
    }

    /// The distributed evidence on `local` (the used columns), centred by `centre` and ȳ.
    fn distributed_evidence_with<'a>(
        &self,
        local: &'a Dataset,
        cluster: &'a Cluster,
        stats: &GlobalStatistics,
        centre: DVector<f64>,
        fixed: Option<DMatrix<f64>>,
    ) -> Result<DistributedEvidence<'a>> {
        if let Some(w) = &fixed {
            if w.shape() != (self.m, local.dim()) {
                return Err(Error::DimensionMismatch {
                    what: "fixed unit frequencies (m×D entries)",
                    expected: self.m * local.dim(),
                    found: w.len(),
                });
            }
        }
        let evidence = SsgpEvidence::with_centring(local, self, fixed, centre, stats.y_mean);
        Ok(DistributedEvidence::new(evidence, cluster, stats.n))
    }

    /// Collective: trains SSGP on the rows of every rank, each rank passing only its own rows
    /// `local` (nothing gathers the data). As [`ValidSsgpParams::fit`], except:
    /// - the start values come from all-reduced statistics (half ranges of the global column
    ///   ranges, σ0² = var y, σn² = σ0²/4; inputs and targets centred by the global means);
    ///   [`LengthscaleInit::FullGpSubset`]`(s)` gathers only a subset on every rank — each rank's
    ///   share of s rows (in proportion to its rows, rounded down, evenly spaced; 0 rows for a
    ///   rank of fewer than n/s rows) — and rank 0 trains the full GP on it and broadcasts ℓ; as
    ///   in one process, that full GP has the model's noise floor (resolved on the global var y)
    ///   and reports to rank 0's observer, an input constant on the subset starts at half its
    ///   range (over every rank's rows), and a subset of constant targets takes the first row
    ///   whose target differs (in rank order) in place of its last;
    /// - the optimiser (and any observer, time budget) runs on rank 0; the others follow its
    ///   broadcast θ;
    /// - [`NoiseBound::FixedSpectralPoints`] is not supported;
    /// - the calibration check ([`CalibrationGuard::Check`], the default) is the single-process
    ///   proxy at every size: after the learned fit on all rows, each rank holds out a seeded half
    ///   of its own rows (whole groups of equal inputs; the seed plus the rank), the learned fit
    ///   (with half the evaluations) and the random-feature fit are trained on the ranks' other
    ///   halves, from the same start, and scored on the held-out halves, their sums added over
    ///   the ranks; the learned fit on all rows is kept (its variances scaled by its factor)
    ///   unless the random-feature fit scores better, which is then trained on all rows, or
    ///   neither beats the training mean by one standard error, which is then the model — so
    ///   the check costs about a quarter of the learned fit's evaluations more, plus the
    ///   random-feature fits' few. Below 100 held-out rows over all ranks (about 200 rows) the
    ///   fit is as one process's below 40 distinct inputs: the learned fit judged by its LOO
    ///   diagnostic (the random-feature fit kept without it on fewer than 40 rows and no more
    ///   than m·D), flagged [`Remedy::FewInputs`] with the ranks' distinct inputs summed.
    ///   Replicated inputs are held out together within a rank, not across ranks.
    ///
    /// Every rank returns the same model, or an error (no rank is left waiting in a collective).
    /// For fixed data split, seed and number of ranks the fit is reproducible. The ranks may hold
    /// very different numbers of rows, but each holds at least one: a [`Dataset`] has rows, so a
    /// rank without any cannot join (run on fewer ranks; [`super::load_csv_share`] returns
    /// [`Error::EmptyCsv`] on every rank when a file has fewer rows than ranks).
    ///
    /// # Errors
    /// As [`ValidSsgpParams::fit`]; [`Error::Distributed`] on the other ranks when one rank
    /// fails, and on every rank when the ranks' settings that change the model differ (m, draws,
    /// seed, optimiser and budgets, kernel, noise floors and bound, fixed points, start,
    /// calibration guard, chunk size: compared before anything else); [`Error::InvalidParameter`]
    /// for a noise bound.
    pub fn fit_distributed(&self, local: &Dataset, cluster: &Cluster) -> Result<DistributedFit> {
        check_same_settings(self, cluster)?;
        if self.noise_bound != NoiseBound::None {
            return Err(Error::InvalidParameter {
                name: "noise_bound",
                reason: "a noise bound is not supported in a distributed fit".into(),
            });
        }
        let traffic0 = cluster.traffic();
        let stats = GlobalStatistics::all_reduce(local, cluster)?;
        crate::ssgp::check_ssgp_target_spread(
            stats.check_target_spread()?,
            "scale them on every rank by the same power of ten, and the predictions back",
        )?;
        self.resolved_for(stats.y_variance)?.fit_resolved(
            local,
            cluster,
            stats,
            (traffic0, self.training.noise_floor),
        )
    }

    /// [`Self::fit_distributed`] from the global statistics, the noise floor resolved;
    /// `absolute_floor` is the floor set as a variance ([`ValidSsgpParams::fit`]'s).
    fn fit_resolved(
        &self,
        local: &Dataset,
        cluster: &Cluster,
        stats: GlobalStatistics,
        (traffic0, absolute_floor): (Traffic, f64),
    ) -> Result<DistributedFit> {
        let columns = stats.varying_columns()?;
        let used = cluster.agree(columns.select_data(local))?;
        cluster.agree(self.check_buffers(&used))?;
        let start = self.distributed_start(&stats, &columns, &used, cluster)?;
        self.check_initial_frequencies(used.dim())?;
        let rows = stats.n;
        let share = Share {
            local: &used,
            cluster,
            centre: stats.used_means(&columns),
            stats,
            spent: Cell::new((0, Duration::ZERO)),
        };
        let model = match self.calibration {
            CalibrationGuard::Off => self.train_learned(&share, start, &columns)?,
            CalibrationGuard::RandomFeatures => {
                self.train_random_features(&share, &start, &columns, Remedy::RandomFeatures)?
            }
            CalibrationGuard::Check => {
                self.checked_across(&share, start, &columns, absolute_floor)?
            }
        };
        let (evaluations, compute) = share.spent.get();
        let traffic = cluster.traffic();
        Ok(DistributedFit {
            model,
            ranks: cluster.size(),
            rows,
            evaluations,
            compute,
            traffic: Traffic {
                collectives: traffic.collectives - traffic0.collectives,
                bytes: traffic.bytes - traffic0.bytes,
                time: traffic.time.saturating_sub(traffic0.time),
            },
        })
    }

    /// Collective: the learned fit (§4.2) on `share`'s rows from `start`: the best of the
    /// initial draws by the all-reduced evidence, then rank 0's optimiser, every other rank
    /// following.
    pub(super) fn train_learned(
        &self,
        share: &Share<'_>,
        start: Hyperparameters,
        columns: &InputColumns,
    ) -> Result<FittedSsgp> {
        let evidence_at =
            |w: &DMatrix<f64>| share.evidence(self, self.fixed_spectral_points.then(|| w.clone()));
        let w0 = self.start_unit_frequencies(
            share.local.dim(),
            // Not reported: a rank-0 observer's stop would leave the other ranks' draws behind.
            None,
            |w| {
                let evidence = evidence_at(w)?;
                let value = evidence.value(&evidence.pack_start(&SsgpHyperparameters {
                    hyper: start.clone(),
                    unit_frequencies: w.clone(),
                })?);
                share.count(&evidence);
                value
            },
        )?;
        let evidence = evidence_at(&w0)?;
        let theta0 = evidence.pack_start(&SsgpHyperparameters {
            hyper: start,
            unit_frequencies: w0,
        })?;
        let outcome = lead_or_follow(&evidence, theta0.len(), || {
            self.training.minimize(&Leader(&evidence), theta0.clone())
        });
        let (theta, training) = share_outcome(share.cluster, outcome, theta0.len(), columns)?;
        self.conditioned(share, &evidence, &theta, training, columns)
    }

    /// Collective: the random-feature fit on `share`'s rows: the unit frequencies of
    /// [`CalibrationGuard::RandomFeatures`] held fixed, ℓ at `start`'s, (log σ0, p_n) trained from
    /// `start`'s by rank 0's optimiser; `remedy` recorded in its summary.
    pub(super) fn train_random_features(
        &self,
        share: &Share<'_>,
        start: &Hyperparameters,
        columns: &InputColumns,
        remedy: Remedy,
    ) -> Result<FittedSsgp> {
        let (fixed, w) = self.with_random_features(share.local.dim());
        let evidence = share.evidence(&fixed, Some(w.clone()))?;
        let theta = evidence.pack_start(&SsgpHyperparameters {
            hyper: start.clone(),
            unit_frequencies: w,
        })?;
        let objective = Variances {
            leader: Leader(&evidence),
            theta: theta.clone(),
        };
        let outcome = lead_or_follow(&evidence, theta.len(), || {
            let d = theta.len() - 2;
            let mut report = fixed
                .training
                .minimize(&objective, theta.rows(d, 2).into_owned())?;
            report.theta = objective.full(&report.theta);
            Ok(report)
        });
        let (theta, mut training) = share_outcome(share.cluster, outcome, theta.len(), columns)?;
        training.remedy = Some(remedy);
        fixed.conditioned(share, &evidence, &theta, training, columns)
    }

    /// Collective: the training mean on `share`'s rows as an SSGP (the single-process check's):
    /// the random-feature fit's spectral points and `start`'s ℓ, σn² = var y over every rank's
    /// rows (just above the noise floor where it is not,
    /// [`mean_noise_variance`](crate::ssgp::remedy::mean_noise_variance)) and σ0² = 10⁻⁴⁰σn², so
    /// that every prediction is ȳ; not trained, `remedy` recorded.
    pub(super) fn train_mean(
        &self,
        share: &Share<'_>,
        start: &Hyperparameters,
        columns: &InputColumns,
        remedy: Remedy,
    ) -> Result<FittedSsgp> {
        let (fixed, w) = self.with_random_features(share.local.dim());
        let evidence = share.evidence(&fixed, Some(w.clone()))?;
        let theta = evidence.pack_start(&SsgpHyperparameters {
            hyper: mean_hyperparameters(start, share.stats.y_variance, self.training.noise_floor),
            unit_frequencies: w,
        })?;
        let value = share
            .cluster
            .root_result(evidence.value(&theta).map(|v| vec![v]), 1)?;
        let mut training = TrainingSummary::untrained(value[0]);
        training.ignored_inputs = columns.ignored();
        training.remedy = Some(remedy);
        fixed.conditioned(share, &evidence, &theta, training, columns)
    }

    /// Collective: the fitted model at θ on `share`'s rows — rank 0's factor and α on every
    /// rank, the same model whatever each CPU's rounding — with its LOO diagnostic over every
    /// rank's rows.
    fn conditioned(
        &self,
        share: &Share<'_>,
        evidence: &DistributedEvidence<'_>,
        theta: &DVector<f64>,
        training: TrainingSummary,
        columns: &InputColumns,
    ) -> Result<FittedSsgp> {
        let (value, mut posterior) = evidence.posterior(theta)?;
        let k = 2 * self.m;
        let mut mine = Vec::with_capacity(1 + k * k + k);
        mine.push(value);
        mine.extend_from_slice(posterior.l.as_slice());
        mine.extend_from_slice(posterior.alpha.as_slice());
        let shared = share.cluster.root_result(Ok(mine), 1 + k * k + k)?;
        posterior.l = DMatrix::from_column_slice(k, k, &shared[1..1 + k * k]);
        posterior.alpha = DVector::from_column_slice(&shared[1 + k * k..]);
        share.count(evidence);
        let hyper = evidence.unpack(theta)?;
        let record = self.training.record(
            theta.clone(),
            share.stats.y_mean,
            shared[0],
            training,
            columns.clone(),
        );
        let mut model = self.fitted(hyper, posterior, record);
        model.record.training.diagnostic = share.loo(&model)?;
        Ok(model)
    }

    /// Collective: the start values from the global statistics (see
    /// [`ValidSsgpParams::fit_distributed`]).
    fn distributed_start(
        &self,
        stats: &GlobalStatistics,
        columns: &InputColumns,
        used: &Dataset,
        cluster: &Cluster,
    ) -> Result<Hyperparameters> {
        let d = columns.used().len();
        let lengthscales = init::initial_lengthscales(
            &self.training.lengthscales,
            d,
            || Ok(stats.half_ranges(columns)),
            |size| {
                let subset = gather_start_subset(used, size.min(stats.n), stats, cluster)?;
                let learned = if cluster.is_root() {
                    crate::full_gp::lengthscales_on_gathered_rows(
                        &subset,
                        &stats.half_ranges(columns),
                        &self.training,
                    )
                    .map(|l| l.as_slice().to_vec())
                } else {
                    Ok(Vec::new())
                };
                Ok(DVector::from_vec(cluster.root_result(learned, d)?))
            },
        )?;
        init::hyperparameters(lengthscales, stats.y_mean, stats.y_variance)
    }
}

/// Collective: `size` rows of the data of all ranks on every rank — each rank's share in
/// proportion to its rows (⌊size·N_{r+1}/n⌋ − ⌊size·N_r/n⌋ with N_r the rows of the ranks before
/// r), evenly spaced among them, in rank order. Two all-gathers: one count per rank, then
/// size·(D + 1) values.
///
/// # Errors
/// [`Error::Allocation`] on a rank that cannot hold the subset (its share, the gathered values
/// and their matrix: 3·size·(D + 1) numbers), [`Error::Distributed`] on the others, before any
/// is gathered; as [`Cluster::all_gather`].
fn gather_subset(local: &Dataset, size: usize, cluster: &Cluster) -> Result<Dataset> {
    gather_subset_counted(local, size, cluster).map(|(subset, _)| subset)
}

/// [`gather_subset`], with the number of rows of every rank (in rank order).
///
/// # Errors
/// As [`gather_subset`].
fn gather_subset_counted(
    local: &Dataset,
    size: usize,
    cluster: &Cluster,
) -> Result<(Dataset, Vec<f64>)> {
    let values = size.saturating_mul(local.dim() + 1);
    cluster.agree(linalg::check_allocation(
        values.saturating_mul(3 * std::mem::size_of::<f64>()),
        "the rows gathered from every rank (the start's subset); start on fewer rows",
    ))?;
    let counts = cluster.all_gather(&[local.len() as f64])?;
    let (_, share) = subset_share(size, &counts, cluster.rank());
    let (x, y, d) = (local.x(), local.y(), local.dim());
    let mut rows = Vec::with_capacity(share.len() * (d + 1));
    for &r in &share {
        rows.extend(x.row(r).iter());
        rows.push(y[r]);
    }
    let all = cluster.all_gather(&rows)?;
    let n = all.len() / (d + 1);
    let x = DMatrix::from_fn(n, d, |i, j| all[i * (d + 1) + j]);
    let y = DVector::from_fn(n, |i, _| all[i * (d + 1) + d]);
    Ok((Dataset::new(x, y)?, counts))
}

/// Rank `rank`'s part of [`gather_subset`]'s `size` rows, `counts` the rows of every rank (in
/// rank order): the place of its first row in the subset, ⌊size·N_r/n⌋, and its own rows, the
/// ⌊size·N_{r+1}/n⌋ − ⌊size·N_r/n⌋ evenly spaced among them (none for a rank whose share rounds
/// to 0).
fn subset_share(size: usize, counts: &[f64], rank: usize) -> (usize, Vec<usize>) {
    let total: f64 = counts.iter().sum();
    let before: f64 = counts[..rank].iter().sum();
    let share_at = |rows: f64| (size as f64 * rows / total).floor() as usize;
    let first = share_at(before);
    let share = share_at(before + counts[rank]) - first;
    let len = counts[rank] as usize;
    (first, (0..share).map(|i| i * len / share).collect())
}

/// Collective: [`gather_subset`]'s `size` rows for the full-GP start, their targets kept varying
/// as one process's subset keeps them: where the subset's targets are constant and those of
/// every rank's rows (`stats`) are not, its last row is replaced by the first row, in rank
/// order, whose target differs, placed in rank order among the others. A subset misses the rows
/// of a rank whose share rounds to 0, and a few rows of other targets (a spike); the start then
/// failed on every rank on constant targets the data do not have. That case costs one
/// all-gather more, of D + 3 values per rank.
///
/// # Errors
/// As [`gather_subset`].
fn gather_start_subset(
    local: &Dataset,
    size: usize,
    stats: &GlobalStatistics,
    cluster: &Cluster,
) -> Result<Dataset> {
    let (subset, counts) = gather_subset_counted(local, size, cluster)?;
    // Every rank holds the same subset and statistics, so every rank takes the same branch.
    let value = subset.y()[0];
    if stats.y_min == stats.y_max || subset.y().iter().any(|&v| v != value) {
        return Ok(subset);
    }
    let d = local.dim();
    // [found, its place in the subset, x (D), y].
    let mut mine = vec![0.0; d + 3];
    if let Some(i) = local.y().iter().position(|&v| v != value) {
        let (first, share) = subset_share(size, &counts, cluster.rank());
        mine[0] = 1.0;
        mine[1] = (first + share.iter().filter(|&&r| r < i).count()) as f64;
        mine[2..2 + d].copy_from_slice(local.x().row(i).transpose().as_slice());
        mine[2 + d] = local.y()[i];
    }
    let found = cluster.all_gather(&mine)?;
    let Some(row) = found.chunks_exact(d + 3).find(|r| r[0] == 1.0) else {
        return Ok(subset);
    };
    // The last row dropped, the new one at its place among the others.
    let n = subset.len();
    let place = (row[1] as usize).min(n - 1);
    let from = |i: usize| match i.cmp(&place) {
        std::cmp::Ordering::Less => Some(i),
        std::cmp::Ordering::Equal => None,
        std::cmp::Ordering::Greater => Some(i - 1),
    };
    let x = DMatrix::from_fn(n, d, |i, j| {
        from(i).map_or(row[2 + j], |k| subset.x()[(k, j)])
    });
    let y = DVector::from_fn(n, |i, _| from(i).map_or(row[2 + d], |k| subset.y()[k]));
    Dataset::new(x, y)
}

/// Rank 0's objective: each evaluation first broadcasts [evaluate, θ] to the followers.
struct Leader<'e, 'a>(&'e DistributedEvidence<'a>);

impl Objective for Leader<'_, '_> {
    fn num_params(&self) -> usize {
        self.0.num_params()
    }

    fn value_scale(&self) -> f64 {
        self.0.value_scale()
    }

    fn parameter_scales(&self) -> Option<DVector<f64>> {
        self.0.parameter_scales()
    }

    fn value_and_gradient(&self, theta: &DVector<f64>) -> Result<(f64, DVector<f64>)> {
        let mut command = Vec::with_capacity(theta.len() + 1);
        command.push(EVALUATE);
        command.extend_from_slice(theta.as_slice());
        self.0.cluster().broadcast(&mut command);
        self.0.value_and_gradient(theta)
    }
}

/// A follower's side of training: evaluate at every θ rank 0 broadcasts until it says done.
fn follow(evidence: &DistributedEvidence<'_>, params: usize) {
    loop {
        let mut command = vec![0.0; params + 1];
        evidence.cluster().broadcast(&mut command);
        if command[0] != EVALUATE {
            return;
        }
        // Rank 0 sees the same outcome (failures are all-reduced with the sums) and decides.
        let _outcome = evidence.value_and_gradient(&DVector::from_column_slice(&command[1..]));
    }
}

/// Collective: rank 0 runs `lead` (whose objective broadcasts each θ, [`Leader`]) and then
/// tells the others it is done; every other rank follows its evaluations of `evidence` (θ of
/// `params` entries) and returns an error that [`share_outcome`] replaces by rank 0's outcome.
fn lead_or_follow(
    evidence: &DistributedEvidence<'_>,
    params: usize,
    lead: impl FnOnce() -> Result<OptimReport>,
) -> Result<OptimReport> {
    if evidence.cluster().is_root() {
        let report = lead();
        let mut done = vec![0.0; params + 1];
        done[0] = DONE;
        evidence.cluster().broadcast(&mut done);
        report
    } else {
        follow(evidence, params);
        Err(Error::Distributed {
            what: "only rank 0 runs the optimiser".into(),
        })
    }
}

/// The random-feature fit's objective on rank 0: −log p(y|θ) as a function of (log σ0, p_n)
/// alone, ℓ held at `theta`'s and the spectral points fixed in the evidence; each evaluation is
/// [`Leader`]'s over every rank's rows.
struct Variances<'e, 'a> {
    leader: Leader<'e, 'a>,
    /// The full θ = [log ℓ (D), log σ0, p_n], of which the last two entries are trained.
    theta: DVector<f64>,
}

impl Variances<'_, '_> {
    /// The full θ with (log σ0, p_n) = `v`.
    fn full(&self, v: &DVector<f64>) -> DVector<f64> {
        with_variances(&self.theta, v)
    }
}

impl Objective for Variances<'_, '_> {
    fn num_params(&self) -> usize {
        2
    }

    fn value_scale(&self) -> f64 {
        self.leader.value_scale()
    }

    fn value_and_gradient(&self, v: &DVector<f64>) -> Result<(f64, DVector<f64>)> {
        let (value, gradient) = self.leader.value_and_gradient(&self.full(v))?;
        let d = gradient.len() - 2;
        Ok((value, gradient.rows(d, 2).into_owned()))
    }
}

/// The rows one distributed training run sees: this rank's own (`local`, the used columns), the
/// statistics over every rank's, the centre of the inputs, and what this rank spent computing
/// (evaluations, time).
pub(super) struct Share<'a> {
    pub(super) local: &'a Dataset,
    pub(super) cluster: &'a Cluster,
    pub(super) stats: GlobalStatistics,
    pub(super) centre: DVector<f64>,
    pub(super) spent: Cell<(usize, Duration)>,
}

impl<'a> Share<'a> {
    /// Collective: `local` (this rank's rows, the used columns) of every rank, centred by its
    /// own means; `spent` counts on from `spent`.
    pub(super) fn of(
        local: &'a Dataset,
        cluster: &'a Cluster,
        spent: (usize, Duration),
    ) -> Result<Self> {
        let stats = GlobalStatistics::all_reduce(local, cluster)?;
        Ok(Self {
            local,
            cluster,
            centre: stats.mean.clone(),
            stats,
            spent: Cell::new(spent),
        })
    }

    /// The distributed evidence of `params` on these rows (W fixed at `fixed` if given).
    fn evidence(
        &self,
        params: &ValidSsgpParams,
        fixed: Option<DMatrix<f64>>,
    ) -> Result<DistributedEvidence<'a>> {
        params.distributed_evidence_with(
            self.local,
            self.cluster,
            &self.stats,
            self.centre.clone(),
            fixed,
        )
    }

    /// Adds what `evidence` computed to `spent`.
    fn count(&self, evidence: &DistributedEvidence<'_>) {
        let ((e, c), (e0, c0)) = (evidence.compute(), self.spent.get());
        self.spent.set((e0 + e, c0 + c));
    }

    /// Collective: `model`'s LOO diagnostic over every rank's rows, as one process's
    /// ([`FittedSsgp::loo_diagnostic`]): above 4m rows by the hat matrix's diagonal (each rank's
    /// sums, added up), at most 4m rows, where that form cancels, by the n×n form on rank 0 of
    /// every rank's rows (gathered: at most 4m·(D + 1) numbers); rank 0's bits on every rank.
    /// None on every rank where it cannot be computed (the model is kept, as in one process).
    ///
    /// # Errors
    /// As [`gather_subset`] for the rows of at most 4m.
    pub(super) fn loo(&self, model: &FittedSsgp) -> Result<Option<LooDiagnostic>> {
        if self.stats.n <= 4 * model.num_spectral_points() {
            let all = gather_subset(self.local, self.stats.n, self.cluster)?;
            let local = if self.cluster.is_root() {
                let diagnostic = model.loo_diagnostic(&all).ok().flatten();
                Ok(diagnostic.map_or(vec![0.0; 4], |d| vec![1.0, d.mean_z2, d.mnlp, d.nmse]))
            } else {
                Ok(Vec::new())
            };
            let got = self.cluster.root_result(local, 4)?;
            return Ok((got[0] == 1.0).then_some(LooDiagnostic {
                mean_z2: got[1],
                mnlp: got[2],
                nmse: got[3],
                honest: false,
            }));
        }
        match self.cluster.agree(model.loo_sums(self.local)) {
            Ok(mut sums) => {
                self.cluster.sum_as_root(&mut sums);
                Ok(LooDiagnostic::from_sums(sums))
            }
            Err(_) => Ok(None),
        }
    }

    /// Collective: [`ValidSsgpParams::rescaled`] across the ranks: `fitted` with σ0² and σn²
    /// multiplied by its remedy's factor, −log p(y|θ) and the LOO diagnostic over every rank's
    /// rows.
    pub(super) fn rescaled(
        &self,
        params: &ValidSsgpParams,
        mut fitted: FittedSsgp,
        columns: &InputColumns,
    ) -> Result<FittedSsgp> {
        let Some((this, theta)) = params.rescaling(&fitted) else {
            return Ok(fitted);
        };
        let fixed = fitted.fixed.then(|| fitted.hyper.unit_frequencies.clone());
        let evidence = self.evidence(&this, fixed)?;
        fitted.hyper = evidence.unpack(&theta)?;
        let value = self
            .cluster
            .root_result(evidence.value(&theta).map(|v| vec![v]), 1)?;
        self.count(&evidence);
        let trained_at_floor = fitted.record.training.noise_at_floor;
        fitted.record = this.training.record(
            theta,
            fitted.record.y_mean,
            value[0],
            fitted.record.training.clone(),
            columns.clone(),
        );
        // As one process's: the flag says where training ended, not where a widening moved σn².
        fitted.record.training.noise_at_floor |= trained_at_floor;
        fitted.record.training.diagnostic = self.loo(&fitted)?;
        Ok(fitted)
    }
}

/// Collective: rank 0's training outcome on every rank — θ and the summary, or its error.
fn share_outcome(
    cluster: &Cluster,
    outcome: Result<OptimReport>,
    params: usize,
    columns: &InputColumns,
) -> Result<(DVector<f64>, TrainingSummary)> {
    let (numbers, message) = match &outcome {
        Ok(r) => {
            let (code, message) = encode_termination(&r.termination);
            let mut v = r.theta.as_slice().to_vec();
            v.extend([
                r.value,
                r.initial_value,
                r.iterations as f64,
                r.evaluations as f64,
                code,
            ]);
            (Ok(v), message)
        }
        Err(_) => (Ok(Vec::new()), String::new()),
    };
    let numbers = match outcome {
        Err(e) => Err(e),
        Ok(_) => numbers,
    };
    let v = cluster.root_result(numbers, params + 5)?;
    let message = cluster.broadcast_text(&message);
    let training = TrainingSummary {
        initial_neg_log_evidence: v[params + 1],
        neg_log_evidence: v[params],
        iterations: v[params + 2] as u64,
        evaluations: v[params + 3] as usize,
        termination: decode_termination(v[params + 4], message),
        ignored_inputs: columns.ignored(),
        noise_at_floor: false,
        diagnostic: None,
        remedy: None,
    };
    Ok((DVector::from_column_slice(&v[..params]), training))
}

/// A termination as a code and its message (empty for the variants without one).
fn encode_termination(t: &Termination) -> (f64, String) {
    match t {
        Termination::Converged => (0.0, String::new()),
        Termination::SmallGradient => (1.0, String::new()),
        Termination::MaxIterations => (2.0, String::new()),
        Termination::MaxEvaluations => (3.0, String::new()),
        Termination::TimeLimit => (4.0, String::new()),
        Termination::StoppedByObserver => (5.0, String::new()),
        Termination::NotStarted => (6.0, String::new()),
        Termination::LineSearchFailed(m) => (7.0, m.clone()),
        Termination::EvaluationFailed(m) => (8.0, m.clone()),
        Termination::OptimiserError(m) => (9.0, m.clone()),
    }
}

/// The termination of [`encode_termination`]'s code and message.
fn decode_termination(code: f64, message: String) -> Termination {
    match code as u8 {
        0 => Termination::Converged,
        1 => Termination::SmallGradient,
        2 => Termination::MaxIterations,
        3 => Termination::MaxEvaluations,
        4 => Termination::TimeLimit,
        5 => Termination::StoppedByObserver,
        6 => Termination::NotStarted,
        7 => Termination::LineSearchFailed(message),
        8 => Termination::EvaluationFailed(message),
        _ => Termination::OptimiserError(message),
    }
}
