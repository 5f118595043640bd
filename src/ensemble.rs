//! Restarts and mixtures: several independent fits of a model, kept as the best one or combined.
//!
//! SSGP optimises many parameters and can overfit (paper §5.4): on small data sets with many
//! spectral points its means stay good but its variances become overconfident, and separate runs
//! disagree. Two remedies:
//! - [`Combine::Best`]: keep the fit with the best evidence — cheap insurance against a bad local
//!   optimum; the predictive is that one model's, so it does not cure overconfidence.
//! - [`Combine::Mixture`]: an equal-weight mixture of all fits' predictive Gaussians (the "network
//!   mixing" of Lázaro-Gredilla's later work). Its mean averages the members and its variance adds
//!   their disagreement, 𝕍 = ⟨σ_k²⟩ + ⟨(μ_k − ⟨μ⟩)²⟩, so where the fits disagree the mixture says
//!   so. Use it when the data set is small relative to the number of parameters (m·D ≳ n/4) or
//!   whenever calibrated variances matter more than a single model's speed.
//!
//! [`FittedEnsemble::spread`] exposes the disagreement itself as a diagnostic of the §5.4 failure.
//! Fits run in parallel on rayon's threads.

use crate::data::Dataset;
use crate::data::{Inputs, TrainingData};
use crate::error::{check_shape, Error, Result};
use crate::model::{Fit, FittedRegressor, Regressor};
use crate::params::Reseed;
use crate::predictive::{
    standard_normals, JointPredictive, JointSamples, Predictive, PredictiveGradients,
};
use crate::termination::TrainingSummary;
use nalgebra::{DMatrix, DVector};
use rand::Rng;
use rayon::prelude::*;

/// How the members of an ensemble are combined (saved as `"best"` or `"mixture"`).
///
/// ```
/// use ssgp::ensemble::{Combine, Ensemble};
/// use ssgp::rand::{rngs::StdRng, SeedableRng};
/// use ssgp::{data::sinc_data, Ssgp};
///
/// let train = sinc_data(80, false, 0.05, &mut StdRng::seed_from_u64(0))?;
/// let restarts = |combine| Ensemble::restarts(&Ssgp::params(8).seed(1).max_evaluations(60), 3, combine);
/// let best = restarts(Combine::Best).fit(&train)?;       // the restart with the lowest −log p
/// let mixture = restarts(Combine::Mixture).fit(&train)?; // all three, equally weighted
/// let x = ssgp::nalgebra::DMatrix::from_element(1, 1, 8.0);
/// println!("σ at 8: best {:.3}, mixture {:.3}", best.predict(&x)?.y_std()[0],
///     mixture.predict(&x)?.y_std()[0]);
/// # Ok::<(), ssgp::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Combine {
    /// Keep the member with the lowest −log p(y|θ).
    Best,
    /// Equal-weight mixture of every member's predictive Gaussian.
    Mixture,
}

impl Combine {
    /// `best-of` or `mixture`.
    pub fn name(self) -> &'static str {
        match self {
            Combine::Best => "best-of",
            Combine::Mixture => "mixture",
        }
    }
}

#[cfg(feature = "serde")]
impl From<Combine> for crate::schema::CombineRepr {
    fn from(combine: Combine) -> Self {
        match combine {
            Combine::Best => Self::Best,
            Combine::Mixture => Self::Mixture,
        }
    }
}

#[cfg(feature = "serde")]
impl From<crate::schema::CombineRepr> for Combine {
    fn from(combine: crate::schema::CombineRepr) -> Self {
        match combine {
            crate::schema::CombineRepr::Best => Self::Best,
            crate::schema::CombineRepr::Mixture => Self::Mixture,
        }
    }
}

/// A set of configured models fitted independently (e.g. one SSGP per seed).
///
/// ```
/// use ssgp::ensemble::{Combine, Ensemble};
/// use ssgp::rand::{rngs::StdRng, SeedableRng};
/// use ssgp::{data::sinc_data, Fitc, Ssgp};
///
/// let train = sinc_data(60, false, 0.05, &mut StdRng::seed_from_u64(0))?;
/// // Any models, boxed: one SSGP and one FITC, combined as a mixture.
/// let mixed = Ensemble::new(
///     vec![
///         Box::new(Ssgp::params(6).seed(1).initial_draws(5).max_evaluations(100)),
///         Box::new(Fitc::params(6).seed(1).max_evaluations(100)),
///     ],
///     Combine::Mixture,
/// )
/// .fit(&train)?;
/// let spread = mixed.spread(train.x())?;     // how far the members disagree (§5.4)
/// println!("disagreement / own variance: {:.3}", spread.ratio());
/// # Ok::<(), ssgp::Error>(())
/// ```
pub struct Ensemble {
    members: Members,
    combine: Combine,
}

/// The configurations of an [`Ensemble`]: given, or restarts of one made when it is fitted.
enum Members {
    Given(Vec<Box<dyn Regressor>>),
    /// `count` restarts `make(0)`, `make(1)`, … of `bytes` each: the count comes from the
    /// caller, so they are made only once their memory is known to be there.
    Restarts {
        count: usize,
        bytes: usize,
        make: Box<dyn Fn(usize) -> Box<dyn Regressor> + Send + Sync>,
    },
}

impl Ensemble {
    /// An ensemble of the given configurations.
    pub fn new(members: Vec<Box<dyn Regressor>>, combine: Combine) -> Self {
        Self {
            members: Members::Given(members),
            combine,
        }
    }

    /// `restarts` copies of any seeded configuration (every builder of the crate, or a
    /// standardised one) with seeds s, s+1, … (s its own seed; the seeds wrap around after
    /// 2⁶⁴ − 1), each one's progress reported with its restart index ([`Reseed::restart`]).
    ///
    /// ```
    /// use ssgp::ensemble::{Combine, Ensemble};
    /// use ssgp::rand::{rngs::StdRng, SeedableRng};
    /// use ssgp::{data::sinc_data, FittedRegressor, Ssgp};
    ///
    /// let train = sinc_data(60, false, 0.05, &mut StdRng::seed_from_u64(0))?;
    /// // Four SSGP fits (seeds 1, 2, 3, 4), combined as an equal-weight mixture.
    /// let params = Ssgp::params(8).seed(1).initial_draws(5).max_evaluations(100);
    /// let mixture = Ensemble::restarts(&params, 4, Combine::Mixture).fit(&train)?;
    /// assert_eq!(mixture.members().len(), 4);
    /// let pred = mixture.predict(train.x())?;
    /// assert!(pred.y_variance.iter().all(|v| *v > 0.0));
    /// # Ok::<(), ssgp::error::Error>(())
    /// ```
    pub fn restarts<P: Fit + Reseed + 'static>(
        params: &P,
        restarts: usize,
        combine: Combine,
    ) -> Self {
        // The same configuration and seed, owned: its restart i is the given one's.
        let base = params.reseeded(params.current_seed());
        Self {
            members: Members::Restarts {
                count: restarts,
                bytes: std::mem::size_of::<P>(),
                make: Box::new(move |i| Box::new(base.restart(i, restarts)) as Box<dyn Regressor>),
            },
            combine,
        }
    }

    /// `f` on the configurations to fit: the given ones, or the restarts made now.
    ///
    /// # Errors
    /// [`Error::Allocation`] if the restarts (their configurations and the fitted models'
    /// handles) cannot be allocated; `f`'s errors.
    fn with_configurations<R>(
        &self,
        f: impl FnOnce(&[Box<dyn Regressor>]) -> Result<R>,
    ) -> Result<R> {
        match &self.members {
            Members::Given(members) => f(members),
            Members::Restarts { count, bytes, make } => {
                let handles = 2 * std::mem::size_of::<Box<dyn Regressor>>();
                crate::linalg::check_allocation(
                    count.saturating_mul(bytes.saturating_add(handles)),
                    "the ensemble's restarts (their configurations and fitted models' handles); use fewer restarts",
                )?;
                let made: Vec<Box<dyn Regressor>> = (0..*count).map(make).collect();
                f(&made)
            }
        }
    }

    /// Fits every member (in parallel) and combines them.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for an empty ensemble; [`Error::Allocation`] for more restarts
    /// than memory holds; the first failing member's error (in member order) if any fit fails.
    pub fn fit<T: TrainingData + ?Sized>(&self, data: &T) -> Result<FittedEnsemble> {
        let data = &*data.to_dataset()?;
        let fitted: Vec<Box<dyn FittedRegressor>> = self.with_configurations(|members| {
            if members.is_empty() {
                return Err(Error::InvalidParameter {
                    name: "members",
                    reason: "an ensemble needs at least one model".into(),
                });
            }
            // Every fit's result, then the first error in member order (rayon's collect into a
            // Result keeps whichever failing member it meets first).
            let results: Vec<Result<Box<dyn FittedRegressor>>> =
                members.par_iter().map(|m| m.fit_boxed(data)).collect();
            results.into_iter().collect()
        })?;
        let best = fitted
            .iter()
            .enumerate()
            .min_by(|a, b| a.1.neg_log_evidence().total_cmp(&b.1.neg_log_evidence()))
            .map_or(0, |(i, _)| i);
        let mut training = fitted[best].training().clone();
        training.iterations = fitted
            .iter()
            .fold(0u64, |a, f| a.saturating_add(f.training().iterations));
        training.evaluations = fitted
            .iter()
            .fold(0usize, |a, f| a.saturating_add(f.training().evaluations));
        Ok(FittedEnsemble {
            members: fitted,
            best,
            combine: self.combine,
            training,
        })
    }
}

impl Fit for Ensemble {
    type Fitted = FittedEnsemble;

    fn name(&self) -> &'static str {
        self.combine.name()
    }

    fn fit(&self, data: &Dataset) -> Result<FittedEnsemble> {
        Ensemble::fit(self, data)
    }
}

/// The fitted members of an [`Ensemble`]: by default boxed models of any kind
/// (`Box<dyn FittedRegressor>`); a loaded one holds `persist::SavedModel`s (feature `serde`).
#[derive(Debug, Clone)]
pub struct FittedEnsemble<M = Box<dyn FittedRegressor>> {
    pub(crate) members: Vec<M>,
    pub(crate) best: usize,
    pub(crate) combine: Combine,
    pub(crate) training: TrainingSummary,
}

/// Disagreement between the members' predictions, per test point (§5.4 diagnostic).
#[derive(Debug, Clone, PartialEq)]
pub struct Spread {
    /// Variance of the members' predictive means, ⟨(μ_k − ⟨μ⟩)²⟩.
    pub between: DVector<f64>,
    /// Mean of the members' predictive variances of y*, ⟨σ_k²⟩.
    pub within: DVector<f64>,
}

impl Spread {
    /// Mean of between/within over the test points: ≪ 1 when the members agree within their own
    /// error bars; ≳ 1 flags the overconfident, disagreeing fits of §5.4.
    pub fn ratio(&self) -> f64 {
        let n = self.between.len().max(1) as f64;
        self.between
            .iter()
            .zip(self.within.iter())
            .map(|(b, w)| b / w)
            .sum::<f64>()
            / n
    }
}

impl<M: FittedRegressor> FittedEnsemble<M> {
    /// The fitted members, in the order given.
    pub fn members(&self) -> &[M] {
        &self.members
    }

    /// Index of the member with the best evidence.
    pub fn best_index(&self) -> usize {
        self.best
    }

    /// How the members are combined.
    pub fn combine(&self) -> Combine {
        self.combine
    }

    /// Predictive distribution: the best member's, or the moments of the equal-weight mixture
    /// (mean ⟨μ_k⟩, variance ⟨σ_k²⟩ + ⟨(μ_k − ⟨μ⟩)²⟩, likewise for f*).
    ///
    /// # Errors
    /// As the members' `predict`; [`Error::Numerical`] if the mixture's moments overflow.
    pub fn predict<X: Inputs + ?Sized>(&self, x: &X) -> Result<Predictive> {
        let x = &*x.to_matrix()?;
        match self.combine {
            Combine::Best => self.members[self.best].predict(x),
            Combine::Mixture => self.predict_from(x.nrows(), &self.member_predictions(x)?),
        }
    }

    /// The mixture's moments from the members' predictives `preds` at `n` test points.
    fn predict_from(&self, n: usize, preds: &[Predictive]) -> Result<Predictive> {
        for p in preds {
            p.check_lengths(Some(n))?;
        }
        let (mean, between) = mean_and_spread(preds);
        let average = |var: fn(&Predictive) -> &DVector<f64>| {
            preds.iter().fold(DVector::zeros(n), |a, p| a + var(p)) / preds.len() as f64
        };
        Predictive {
            y_variance: average(|p| &p.y_variance) + &between,
            f_variance: average(|p| &p.f_variance) + &between,
            mean,
        }
        .finite()
    }

    /// The predictive means alone at `x` (n*×D): [`Self::predict`]'s means bit for bit, through
    /// the members' mean-only paths.
    ///
    /// # Errors
    /// As [`Self::predict`].
    pub fn predict_mean<X: Inputs + ?Sized>(&self, x: &X) -> Result<DVector<f64>> {
        let x = &*x.to_matrix()?;
        match self.combine {
            Combine::Best => self.members[self.best].predict_mean(x),
            Combine::Mixture => {
                let means = self
                    .members
                    .iter()
                    .map(|m| {
                        let mean = m.predict_mean(x)?;
                        const WHAT: &str = "a member's predictive means";
                        check_shape((mean.len(), 1), (x.nrows(), WHAT), (1, WHAT))?;
                        Ok(mean)
                    })
                    .collect::<Result<Vec<_>>>()?;
                let mean =
                    means.iter().fold(DVector::zeros(x.nrows()), |a, m| a + m) / means.len() as f64;
                match mean.iter().position(|m| !m.is_finite()) {
                    Some(row) => Err(Error::Numerical {
                        what: format!("the mixture's mean at test row {row} is {}", mean[row]),
                    }),
                    None => Ok(mean),
                }
            }
        }
    }

    /// The joint predictive at `x` (n*×D): the best member's, or the moments of the mixture,
    /// Σ_f = ⟨Σ_k⟩ + ⟨(μ_k − μ)(μ_k − μ)ᵀ⟩ with μ = ⟨μ_k⟩ (the average of the covariances plus
    /// the covariance of the means; its diagonal is [`Self::predict`]'s `f_variance`), and σn²
    /// the members' average. Members are evaluated one at a time (memory O(n*²)).
    ///
    /// # Errors
    /// As the members' `predict_covariance`; [`Error::Numerical`] if the moments overflow.
    pub fn predict_covariance<X: Inputs + ?Sized>(&self, x: &X) -> Result<JointPredictive> {
        let x = &*x.to_matrix()?;
        if self.combine == Combine::Best {
            return self.members[self.best].predict_covariance(x);
        }
        crate::predictive::check_joint_size(x.nrows())?;
        let p = self.predict(x)?;
        let (n, k) = (p.len(), self.members.len() as f64);
        let mut cov = crate::linalg::try_zeros(n, n, "joint predictive covariance")?;
        for m in &self.members {
            let joint = m.predict_covariance(x)?;
            const MEANS: &str = "a member's joint means";
            const COVARIANCE: &str = "a member's joint covariance";
            check_shape((joint.mean.len(), 1), (n, MEANS), (1, MEANS))?;
            check_shape(joint.f_covariance.shape(), (n, COVARIANCE), (n, COVARIANCE))?;
            let d = &joint.mean - &p.mean;
            cov += joint.f_covariance / k;
            cov.ger(1.0 / k, &d, &d, 1.0);
        }
        JointPredictive::assemble(p, cov, self.noise_variance())
    }

    /// `draws` joint samples of f* at `x` (n*×D), seeded: the best member's, or from the
    /// mixture itself — each draw picks a member uniformly, then draws from that member's
    /// N(μ_k, Σ_k) by Cholesky ([`JointPredictive::sample`]); the jitter reported is the largest
    /// any member needed.
    ///
    /// # Errors
    /// As the members' `predict_covariance` and [`JointPredictive::sample`].
    pub fn sample_joint<X: Inputs + ?Sized>(
        &self,
        x: &X,
        draws: usize,
        seed: u64,
    ) -> Result<JointSamples> {
        let x = &*x.to_matrix()?;
        if self.combine == Combine::Best {
            return self.members[self.best].sample_joint(x, draws, seed);
        }
        crate::predictive::check_joint_size(x.nrows())?;
        // Every buffer whose size is `draws` (or a member's share of them) is allocated fallibly.
        let mut values = crate::linalg::try_zeros(x.nrows(), draws, "joint posterior samples")?;
        let mut which = Vec::new();
        which
            .try_reserve_exact(draws)
            .map_err(|_| Error::Allocation {
                what: "the mixture member of each joint sample",
                bytes: draws.saturating_mul(std::mem::size_of::<usize>()),
            })?;
        let mut rng = crate::random::seeded(seed);
        which.extend((0..draws).map(|_| rng.random_range(0..self.members.len())));
        let z = standard_normals(x.nrows(), draws, &mut rng)?;
        let mut jitter = 0.0f64;
        for (k, m) in self.members.iter().enumerate() {
            let count = which.iter().filter(|&&w| w == k).count();
            if count == 0 {
                continue;
            }
            let mut cols = Vec::new();
            cols.try_reserve_exact(count)
                .map_err(|_| Error::Allocation {
                    what: "the joint samples of one mixture member",
                    bytes: count.saturating_mul(std::mem::size_of::<usize>()),
                })?;
            cols.extend((0..draws).filter(|&s| which[s] == k));
            let joint = m.predict_covariance(x)?;
            const MEANS: &str = "a member's joint means";
            check_shape((joint.mean.len(), 1), (x.nrows(), MEANS), (1, MEANS))?;
            let (l, added) = joint.factor()?;
            jitter = jitter.max(added);
            let mut member_z =
                crate::linalg::try_zeros(x.nrows(), cols.len(), "joint posterior samples")?;
            for (c, &s) in cols.iter().enumerate() {
                member_z.set_column(c, &z.column(s));
            }
            let v = joint.draws(&l, &member_z)?;
            for (c, &s) in cols.iter().enumerate() {
                values.set_column(s, &v.column(c));
            }
        }
        Ok(JointSamples { values, jitter })
    }

    /// The predictive at `x` (n*×D) with its gradients with respect to the test inputs: the
    /// best member's, or those of the mixture's moments by the chain rule, with μ = ⟨μ_k⟩ and
    /// σ² = ⟨σ_k²⟩ + ⟨(μ_k − μ)²⟩:
    /// $$∂μ = ⟨∂μ_k⟩,\qquad ∂σ^2 = ⟨∂σ_k^2⟩ + 2⟨(μ_k - μ)\,∂μ_k⟩$$
    /// (the term in ∂μ vanishes since ⟨μ_k − μ⟩ = 0).
    ///
    /// # Errors
    /// As the members' `predict_gradients`; [`Error::Numerical`] if the moments overflow.
    pub fn predict_gradients<X: Inputs + ?Sized>(&self, x: &X) -> Result<PredictiveGradients> {
        let x = &*x.to_matrix()?;
        if self.combine == Combine::Best {
            return self.members[self.best].predict_gradients(x);
        }
        let grads = self
            .members
            .iter()
            .map(|m| m.predict_gradients(x))
            .collect::<Result<Vec<_>>>()?;
        let k = grads.len() as f64;
        let preds: Vec<Predictive> = grads.iter().map(|g| g.predictive.clone()).collect();
        let predictive = self.predict_from(x.nrows(), &preds)?;
        let (n, d) = x.shape();
        for g in &grads {
            const MEANS: &str = "a member's gradients of the means";
            const VARIANCES: &str = "a member's gradients of the variances";
            check_shape(g.mean.shape(), (n, MEANS), (d, MEANS))?;
            check_shape(g.variance.shape(), (n, VARIANCES), (d, VARIANCES))?;
        }
        let (mut mean, mut variance) = (DMatrix::zeros(n, d), DMatrix::zeros(n, d));
        for g in &grads {
            mean += &g.mean / k;
            variance += &g.variance / k;
            for j in 0..n {
                let w = 2.0 * (g.predictive.mean[j] - predictive.mean[j]) / k;
                for c in 0..d {
                    variance[(j, c)] += w * g.mean[(j, c)];
                }
            }
        }
        PredictiveGradients {
            predictive,
            mean,
            variance,
        }
        .finite()
    }

    /// How much the members disagree at `x`, against their own predictive variances.
    ///
    /// # Errors
    /// As the members' `predict`.
    pub fn spread<X: Inputs + ?Sized>(&self, x: &X) -> Result<Spread> {
        let x = &*x.to_matrix()?;
        let preds = self.member_predictions(x)?;
        let k = preds.len() as f64;
        let (_, between) = mean_and_spread(&preds);
        let within = preds
            .iter()
            .fold(DVector::zeros(x.nrows()), |a, p| a + &p.y_variance)
            / k;
        Ok(Spread { between, within })
    }

    fn member_predictions(&self, x: &DMatrix<f64>) -> Result<Vec<Predictive>> {
        self.members
            .iter()
            .map(|m| {
                let p = m.predict(x)?;
                p.check_lengths(Some(x.nrows()))?;
                if let Some(v) = p.y_variance.iter().find(|v| !(**v > 0.0 && v.is_finite())) {
                    return Err(Error::InvalidParameter {
                        name: "members",
                        reason: format!(
                            "member `{}` predicted a variance of {v}, not positive and finite",
                            m.name()
                        ),
                    });
                }
                Ok(p)
            })
            .collect()
    }
}

/// The members' average mean ⟨μ_k⟩ and the variance of their means ⟨(μ_k − ⟨μ⟩)²⟩, per test point
/// (a sum of squares: never negative, unlike ⟨μ_k²⟩ − ⟨μ_k⟩²).
fn mean_and_spread(preds: &[Predictive]) -> (DVector<f64>, DVector<f64>) {
    let (k, n) = (preds.len() as f64, preds[0].len());
    let mean = preds.iter().fold(DVector::zeros(n), |a, p| a + &p.mean) / k;
    let between = preds.iter().fold(DVector::zeros(n), |a, p| {
        let d = &p.mean - &mean;
        a + d.component_mul(&d)
    }) / k;
    (mean, between)
}

impl<M: FittedRegressor> FittedRegressor for FittedEnsemble<M> {
    fn name(&self) -> &'static str {
        self.combine.name()
    }

    crate::model::fitted_regressor!(@predictions this => this);

    fn sample_joint(&self, x: &DMatrix<f64>, draws: usize, seed: u64) -> Result<JointSamples> {
        FittedEnsemble::sample_joint(self, x, draws, seed)
    }

    /// The best member's σn², or the mixture's mean σn² (the mixture's noise is that average).
    fn noise_variance(&self) -> f64 {
        match self.combine {
            Combine::Best => self.members[self.best].noise_variance(),
            Combine::Mixture => {
                self.members.iter().map(|m| m.noise_variance()).sum::<f64>()
                    / self.members.len() as f64
            }
        }
    }

    /// The best member's −log p(y|θ) (a mixture has no single evidence).
    fn neg_log_evidence(&self) -> f64 {
        self.members[self.best].neg_log_evidence()
    }

    /// The best member's summary, with iterations and evaluations summed over all members.
    fn training(&self) -> &TrainingSummary {
        &self.training
    }

    /// The ensemble with each member saved; an error if one cannot be.
    #[cfg(feature = "serde")]
    fn saved_form(&self) -> Result<crate::schema::SavedForm> {
        use crate::schema::{EnsembleRepr, ModelRepr, SavedForm};
        let members = self
            .members
            .iter()
            .map(|m| m.saved_form().map(|s| s.0))
            .collect::<Result<_>>()?;
        Ok(SavedForm(ModelRepr::Ensemble(EnsembleRepr {
            combine: self.combine.into(),
            members,
        })))
    }
}
