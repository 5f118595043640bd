//! The predictive distributions returned by every model: the marginals ([`Predictive`]), the
//! joint Gaussian at a modest number of test points ([`JointPredictive`]) and joint draws from it
//! ([`JointSamples`]).
//!
//! Names say what includes the noise: `y_` is the noisy target y* = f* + ε (σn² included),
//! `f_` the latent function value f* (no noise).

use crate::error::{Error, Result};
use crate::linalg::Par;
use crate::linalg::{self, Jitter};
use nalgebra::{DMatrix, DVector};
use rand::Rng;

/// Gaussian predictive marginals at a batch of test inputs.
///
/// For test point j: $y_{*j} \sim \mathcal N(\mu_{*j}, \sigma^2_{*j})$ with `y_variance` = σ²_* (the
/// noise σn² included, as in paper eq. 2 and 7), and the latent
/// $f_{*j} \sim \mathcal N(\mu_{*j}, \sigma^2_{*j} - \sigma_n^2)$ with `f_variance`. Every value is
/// finite and every variance ≥ 0: a latent variance below zero by round-off only (down to
/// −[`ROUND_OFF`]·σ0²) is reported as 0, anything else is an error
/// ([`crate::error::Error::Numerical`]).
///
/// ```
/// use ssgp::rand::{rngs::StdRng, SeedableRng};
/// use ssgp::{data::sinc_data, metrics, FullGp};
///
/// let mut rng = StdRng::seed_from_u64(0);
/// let (train, test) = (sinc_data(60, false, 0.05, &mut rng)?, sinc_data(200, true, 0.05, &mut rng)?);
/// let pred = FullGp::params().fit(&train)?.predict(&test)?;
/// let (lo, hi) = pred.interval(0.95)?;           // y*'s 95 % interval
/// assert!(pred.y_std()[0] >= pred.f_std()[0]);    // y* = f* + noise
/// let c = metrics::calibration(test.y(), &pred)?;
/// println!("within 2 sd {:.2}, mean z² {:.2}, first interval [{:.2}, {:.2}]", c.within_two_sd, c.mean_squared_z, lo[0], hi[0]);
/// # Ok::<(), ssgp::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Predictive {
    /// Predictive means μ_*, one per test point (the training-target mean added back).
    pub mean: DVector<f64>,
    /// Variances of the noisy targets y_* = f_* + ε (σn² included), one per test point.
    pub y_variance: DVector<f64>,
    /// Variances of the latent function values f_* (no noise), one per test point.
    pub f_variance: DVector<f64>,
}

/// Gradients of the predictive with respect to the test inputs, at a batch of n* test inputs
/// (D inputs), with the predictive itself.
///
/// Row j of `mean` is ∂μ_*/∂x_* at test point j and row j of `variance` is ∂σ²_*/∂x_*, the
/// gradient of the predictive variance of y_* — the same as that of f_*, since σn² does not
/// depend on x_*. Columns of inputs the model ignores (constant on the training data) are 0.
///
/// ```
/// use ssgp::nalgebra::DMatrix;
/// use ssgp::rand::{rngs::StdRng, SeedableRng};
/// use ssgp::{data::sinc_data, Ssgp};
///
/// let train = sinc_data(60, false, 0.05, &mut StdRng::seed_from_u64(0))?;
/// let fitted = Ssgp::params(10).seed(1).max_evaluations(100).fit(&train)?;
/// let x = DMatrix::from_row_slice(3, 1, &[-1.0, 0.5, 2.0]);
/// let g = fitted.predict_gradients(&x)?;          // n*×D slopes beside the predictive
/// assert_eq!((g.mean.shape(), g.predictive.mean.len()), ((3, 1), 3));
/// // The slope of the mean at 0.5 against a central difference of the means.
/// let h = 1e-5;
/// let at = |v: f64| fitted.predict_mean(&DMatrix::from_element(1, 1, v)).map(|m| m[0]);
/// let difference = (at(0.5 + h)? - at(0.5 - h)?) / (2.0 * h);
/// assert!((g.mean[(1, 0)] - difference).abs() < 1e-5 * difference.abs().max(1.0));
/// # Ok::<(), ssgp::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct PredictiveGradients {
    /// The predictive distribution at the same test inputs (as `predict` returns it, within
    /// round-off: some models take another order of operations here).
    pub predictive: Predictive,
    /// ∂μ_*/∂x_*, n*×D.
    pub mean: DMatrix<f64>,
    /// ∂σ²_*/∂x_*, n*×D (of y_* and of f_* alike).
    pub variance: DMatrix<f64>,
}

impl PredictiveGradients {
    /// Number of test points.
    pub fn len(&self) -> usize {
        self.predictive.len()
    }

    /// True when there are no test points.
    pub fn is_empty(&self) -> bool {
        self.predictive.is_empty()
    }

    /// Itself when every gradient is finite (the predictive is checked by its maker).
    ///
    /// # Errors
    /// [`Error::Numerical`] naming the first non-finite gradient and its test point.
    pub(crate) fn finite(self) -> Result<Self> {
        for (what, values) in [("mean", &self.mean), ("variance", &self.variance)] {
            if let Some(pos) = values.iter().position(|v| !v.is_finite()) {
                let row = pos % values.nrows().max(1);
                return Err(Error::Numerical {
                    what: format!(
                        "the gradient of the predictive {what} at test row {row} is not finite: \
                         the inputs may be beyond what f64 can resolve"
                    ),
                });
            }
        }
        Ok(self)
    }
}

/// How far below zero a computed variance may fall by round-off, relative to the prior variance σ0²
/// it is computed from (e.g. σ0² − ‖L⁻¹k‖²): such a value is reported as 0.
pub const ROUND_OFF: f64 = 1e-10;

/// A variance computed at row `row` as a difference of terms of size `scale` (the prior σ0²):
/// itself when ≥ 0, 0 when below zero by round-off only (≥ −[`ROUND_OFF`]·scale).
///
/// # Errors
/// [`Error::Numerical`] for a NaN, an infinity or a clearly negative value: the computation lost
/// its meaning, e.g. at test inputs so large that their squared distances overflow.
pub(crate) fn round_off_variance(v: f64, scale: f64, row: usize) -> Result<f64> {
    if v >= 0.0 && v.is_finite() {
        Ok(v)
    } else if v >= -ROUND_OFF * scale {
        Ok(0.0)
    } else {
        Err(Error::Numerical {
            what: format!(
                "the predictive variance at test row {row} is {v} (prior variance {scale}): \
                 the inputs may be beyond what f64 can resolve"
            ),
        })
    }
}

impl Predictive {
    /// Assembles a predictive from means and latent variances (checked by the caller, e.g. with
    /// [`round_off_variance`]) and the noise variance σn²: `y_variance` = `f_variance` + σn².
    ///
    /// # Errors
    /// [`Error::Allocation`] if `y_variance` cannot be allocated.
    pub(crate) fn from_latent(
        mean: DVector<f64>,
        f_variance: DVector<f64>,
        noise_variance: f64,
    ) -> Result<Self> {
        let mut y_variance =
            linalg::try_zeros_vector(f_variance.len(), "the predictive variances")?;
        y_variance.zip_apply(&f_variance, |y, f| *y = f + noise_variance);
        Ok(Self {
            mean,
            y_variance,
            f_variance,
        })
    }

    /// Checks that `y_variance` and `f_variance` have one entry per mean and, given the number
    /// of test targets `targets`, that there is one mean per target: the fields are public, so a
    /// predictive built by hand may disagree with itself. What `interval` and every metric
    /// check first.
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] naming the field (or the test targets) whose length differs
    /// from `mean`'s.
    pub(crate) fn check_lengths(&self, targets: Option<usize>) -> Result<()> {
        let expected = self.mean.len();
        let lengths = [
            (
                "the predictive's `y_variance` (one entry per entry of `mean`)",
                Some(self.y_variance.len()),
            ),
            (
                "the predictive's `f_variance` (one entry per entry of `mean`)",
                Some(self.f_variance.len()),
            ),
            ("test targets (one per predictive mean)", targets),
        ];
        for (what, found) in lengths {
            match found {
                Some(found) if found != expected => {
                    return Err(Error::DimensionMismatch {
                        what,
                        expected,
                        found,
                    })
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// The predictive standard deviations of the noisy targets y_*: √`y_variance` (n*).
    ///
    /// ```
    /// use ssgp::rand::{rngs::StdRng, SeedableRng};
    /// use ssgp::{data::sinc_data, FullGp};
    ///
    /// let train = sinc_data(80, false, 0.05, &mut StdRng::seed_from_u64(0))?;
    /// let pred = FullGp::params().fit(&train)?.predict(train.x())?;
    /// let sd = pred.y_std();
    /// assert!(sd.iter().zip(pred.f_std().iter()).all(|(y, f)| y > f)); // noise included
    /// # Ok::<(), ssgp::Error>(())
    /// ```
    pub fn y_std(&self) -> DVector<f64> {
        self.y_variance.map(f64::sqrt)
    }

    /// The predictive standard deviations of the latent values f_*: √`f_variance` (n*).
    pub fn f_std(&self) -> DVector<f64> {
        self.f_variance.map(f64::sqrt)
    }

    /// The central `level` predictive interval of each noisy target y_*: (μ − z·σ, μ + z·σ) with
    /// σ = √`y_variance` and z = Φ⁻¹((1 + level)/2) the standard normal quantile (1.959964 for
    /// 0.95), as two vectors of n* lower and upper bounds.
    ///
    /// ```
    /// use ssgp::rand::{rngs::StdRng, SeedableRng};
    /// use ssgp::{data::sinc_data, FullGp};
    ///
    /// let mut rng = StdRng::seed_from_u64(0);
    /// let train = sinc_data(80, false, 0.05, &mut rng)?;
    /// let test = sinc_data(400, false, 0.05, &mut rng)?;
    /// let pred = FullGp::params().fit(&train)?.predict(test.x())?;
    /// let (lo, hi) = pred.interval(0.95)?;
    /// let inside = (0..test.len()).filter(|&i| lo[i] <= test.y()[i] && test.y()[i] <= hi[i]);
    /// assert!(inside.count() as f64 / test.len() as f64 > 0.9);
    /// # Ok::<(), ssgp::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming `level` for a level outside (0, 1), naming
    /// `y_variance` for a variance that is negative or not finite;
    /// [`Error::DimensionMismatch`] if the fields' lengths disagree; [`Error::NonFinite`] for a
    /// NaN or infinite mean (these two, of a predictive built by hand).
    pub fn interval(&self, level: f64) -> Result<(DVector<f64>, DVector<f64>)> {
        self.check_lengths(None)?;
        crate::data::check_finite_vector("the predictive's `mean`", &self.mean)?;
        if let Some(v) = self
            .y_variance
            .iter()
            .find(|v| !(**v >= 0.0 && v.is_finite()))
        {
            return Err(Error::InvalidParameter {
                name: "y_variance",
                reason: format!("a predictive variance {v} is not finite and ≥ 0"),
            });
        }
        if !(level > 0.0 && level < 1.0) {
            return Err(Error::InvalidParameter {
                name: "level",
                reason: format!(
                    "{level} is not a probability strictly between 0 and 1 (e.g. 0.95 for the \
                     central 95 % interval)"
                ),
            });
        }
        // From the tail probability (1 − level)/2: 0.5 + 0.5·level rounds to 1 for a level
        // within 2⁻⁵³ of 1, whose quantile is ∞ (NaN bounds).
        let z = -standard_normal_quantile(0.5 * (1.0 - level));
        let half = self.y_std() * z;
        Ok((&self.mean - &half, &self.mean + &half))
    }

    /// The predictive itself if every mean and variance is finite.
    ///
    /// A model whose arithmetic overflows at a test input — e.g. an SSGP asked about a point so
    /// far from its training data that a phase Ω_rᵀ(x* − c) exceeds the largest `f64` — would
    /// otherwise return NaN or ±∞ as if it were a prediction.
    ///
    /// # Errors
    /// [`Error::Numerical`] naming the first non-finite mean, variance or latent variance and its
    /// test point (the row).
    pub(crate) fn finite(self) -> Result<Self> {
        for (what, values) in [
            ("predictive mean", &self.mean),
            ("predictive variance of y*", &self.y_variance),
            ("predictive variance of f*", &self.f_variance),
        ] {
            if let Some((row, &value)) = values.iter().enumerate().find(|(_, v)| !v.is_finite()) {
                return Err(Error::Numerical {
                    what: format!(
                        "the {what} at test row {row} is {value}: the inputs may be beyond what \
                         f64 can resolve"
                    ),
                });
            }
        }
        Ok(self)
    }

    /// Number of test points.
    pub fn len(&self) -> usize {
        self.mean.len()
    }

    /// True when there are no test points.
    pub fn is_empty(&self) -> bool {
        self.mean.is_empty()
    }
}

/// The most test points [`JointPredictive`] accepts: its n*×n* covariance then takes 512 MiB
/// (and sampling needs as much again for the Cholesky factor).
pub const MAX_JOINT_POINTS: usize = 8192;

/// [`Error::InvalidParameter`] when `n` test points exceed [`MAX_JOINT_POINTS`].
///
/// # Errors
/// As described.
pub(crate) fn check_joint_size(n: usize) -> Result<()> {
    if n > MAX_JOINT_POINTS {
        return Err(Error::InvalidParameter {
            name: "x",
            reason: format!(
                "a joint predictive covariance of {n} test points ({n}×{n}) is above the limit of \
                 {MAX_JOINT_POINTS} points; use `predict` for the marginals"
            ),
        });
    }
    Ok(())
}

/// The joint Gaussian predictive at n* test inputs: $f_* \sim \mathcal N(μ_*, Σ_f)$ and
/// $y_* = f_* + ε \sim \mathcal N(μ_*, Σ_f + σ_n^2 I)$.
///
/// `f_covariance` is the latent covariance (n*×n*, symmetric), whose diagonal is
/// [`Predictive::f_variance`] of the same inputs bit for bit and whose mean is
/// [`Predictive::mean`] bit for bit; [`JointPredictive::y_covariance`] adds the noise. Each model
/// documents its formula (e.g. [`crate::ssgp::FittedSsgp::predict_covariance`]).
///
/// ```
/// use ssgp::nalgebra::DMatrix;
/// use ssgp::rand::{rngs::StdRng, SeedableRng};
/// use ssgp::{data::sinc_data, FullGp};
///
/// let train = sinc_data(60, false, 0.05, &mut StdRng::seed_from_u64(0))?;
/// let fitted = FullGp::params().max_evaluations(60).fit(&train)?;
/// let x = DMatrix::from_row_slice(3, 1, &[0.0, 0.1, 5.0]);
/// let joint = fitted.predict_covariance(&x)?;      // μ_* (3) and Σ_f (3×3)
/// let marginal = fitted.predict(&x)?;
/// assert_eq!(joint.f_covariance.diagonal(), marginal.f_variance);
/// // Near inputs are strongly correlated, far ones hardly.
/// let corr = |i: usize, j: usize| {
///     joint.f_covariance[(i, j)] / (joint.f_covariance[(i, i)] * joint.f_covariance[(j, j)]).sqrt()
/// };
/// assert!(corr(0, 1) > 0.9 && corr(0, 2).abs() < 0.5);
/// let draws = joint.sample(100, 7)?;              // 3×100 seeded joint draws of f_*
/// assert_eq!(draws.values.shape(), (3, 100));
/// # Ok::<(), ssgp::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct JointPredictive {
    /// Predictive means μ_* (n*).
    pub mean: DVector<f64>,
    /// Covariance Σ_f of the latent values f_* (n*×n*, no noise).
    pub f_covariance: DMatrix<f64>,
    /// The noise variance σn² that [`JointPredictive::y_covariance`] adds to the diagonal.
    pub noise_variance: f64,
}

/// Joint draws of the latent values f_* at n* test inputs, one draw per column.
///
/// ```
/// use ssgp::nalgebra::DMatrix;
/// use ssgp::rand::{rngs::StdRng, SeedableRng};
/// use ssgp::{data::sinc_data, Ssgp};
///
/// let train = sinc_data(60, false, 0.05, &mut StdRng::seed_from_u64(0))?;
/// let fitted = Ssgp::params(10).seed(1).max_evaluations(100).fit(&train)?;
/// let grid = DMatrix::from_fn(50, 1, |i, _| -5.0 + i as f64 / 5.0);
/// let s = fitted.sample_joint(&grid, 20, 3)?;      // 20 smooth curves over the grid, seed 3
/// assert_eq!(s.values.shape(), (50, 20));
/// assert_eq!(s, fitted.sample_joint(&grid, 20, 3)?); // the same draws on any machine
/// println!("jitter added to Σ_f: {:e}", s.jitter);
/// # Ok::<(), ssgp::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct JointSamples {
    /// The draws f_*^{(s)} = μ_* + L z^{(s)}, z^{(s)} ~ N(0, I): n*×draws.
    pub values: DMatrix<f64>,
    /// The jitter δ the factorisation Σ_f + δI = LLᵀ needed (0 when Σ_f was positive definite;
    /// up to 1e-6·max diag Σ_f when it was only semi-definite, e.g. repeated test inputs or an
    /// SSGP's covariance of rank ≤ 2m); the largest member's for a mixture.
    pub jitter: f64,
}

impl JointPredictive {
    /// Assembles the joint predictive from the marginals `p` of the same inputs and the lower
    /// triangle of the latent covariance `lower` (n*×n*; its strict upper triangle and diagonal
    /// are overwritten): the diagonal is set to `p.f_variance`, the upper triangle mirrors the
    /// lower one.
    ///
    /// # Errors
    /// [`Error::Numerical`] for a non-finite covariance.
    pub(crate) fn assemble(
        p: Predictive,
        mut lower: DMatrix<f64>,
        noise_variance: f64,
    ) -> Result<Self> {
        let n = p.len();
        for j in 0..n {
            lower[(j, j)] = p.f_variance[j];
            for i in (j + 1)..n {
                let v = lower[(i, j)];
                if !v.is_finite() {
                    return Err(Error::Numerical {
                        what: format!(
                            "the predictive covariance of test rows {i} and {j} is {v}: the \
                             inputs may be beyond what f64 can resolve"
                        ),
                    });
                }
                lower[(j, i)] = v;
            }
        }
        Ok(Self {
            mean: p.mean,
            f_covariance: lower,
            noise_variance,
        })
    }

    /// The joint predictive itself if every mean and covariance entry is finite.
    ///
    /// # Errors
    /// [`Error::Numerical`] naming the first non-finite mean or covariance entry.
    pub(crate) fn finite(self) -> Result<Self> {
        if let Some((row, m)) = self.mean.iter().enumerate().find(|(_, m)| !m.is_finite()) {
            return Err(Error::Numerical {
                what: format!("the predictive mean at test row {row} is {m}"),
            });
        }
        if let Some((k, c)) = self
            .f_covariance
            .iter()
            .enumerate()
            .find(|(_, c)| !c.is_finite())
        {
            let n = self.len();
            return Err(Error::Numerical {
                what: format!(
                    "the predictive covariance of test rows {} and {} is {c}",
                    k % n,
                    k / n
                ),
            });
        }
        Ok(self)
    }

    /// The covariance of the noisy targets y_*: Σ_f + σn² I (n*×n*).
    pub fn y_covariance(&self) -> DMatrix<f64> {
        let mut c = self.f_covariance.clone();
        for i in 0..c.nrows().min(c.ncols()) {
            c[(i, i)] += self.noise_variance;
        }
        c
    }

    /// Number of test points n*.
    pub fn len(&self) -> usize {
        self.mean.len()
    }

    /// True when there are no test points.
    pub fn is_empty(&self) -> bool {
        self.mean.is_empty()
    }

    /// `draws` joint samples of the latent values f_* ~ N(μ_*, Σ_f), seeded (ChaCha12 from `seed`,
    /// the same draws on any machine): f^{(s)} = μ_* + L z^{(s)} with Σ_f + δI = LLᵀ by Cholesky
    /// (δ = 0 first, then the relative ladder 1e-10 … 1e-6 × max diag Σ_f if Σ_f is only
    /// semi-definite; δ is reported in [`JointSamples::jitter`]). For draws of y_* add
    /// independent N(0, σn²) noise. The factorisation and the product run on one thread:
    /// n*³/3 + n*²·`draws` flops (0.04 s for 1000 draws at n* = 1000 on a 2-core VM).
    ///
    /// # Errors
    /// [`Error::NotPositiveDefinite`] if Σ_f + 1e-6·max diag Σ_f·I still does not factorise, or
    /// Σ_f is not 0 but has no positive variance on its diagonal;
    /// [`Error::Allocation`] if the factor or the n*×draws draws cannot be allocated;
    /// [`Error::DimensionMismatch`] if `f_covariance` (set by hand) is not n*×n*;
    /// [`Error::NonFinite`] for a NaN or infinity in `mean` or `f_covariance`.
    pub fn sample(&self, draws: usize, seed: u64) -> Result<JointSamples> {
        let (l, jitter) = self.factor()?;
        let z = standard_normals(self.len(), draws, &mut crate::random::seeded(seed))?;
        Ok(JointSamples {
            values: self.draws(&l, &z)?,
            jitter,
        })
    }

    /// L and δ with Σ_f + δI = LLᵀ (see [`JointPredictive::sample`]); L = 0 when Σ_f = 0, the
    /// fields checked first (they are public: a joint predictive built by hand may be no
    /// distribution).
    ///
    /// # Errors
    /// As [`JointPredictive::sample`].
    pub(crate) fn factor(&self) -> Result<(DMatrix<f64>, f64)> {
        let n = self.len();
        // The fields are public: a joint predictive built by hand may disagree with itself.
        crate::error::check_shape(
            self.f_covariance.shape(),
            (
                n,
                "the joint predictive's `f_covariance` (rows, one per mean)",
            ),
            (
                n,
                "the joint predictive's `f_covariance` (columns, one per mean)",
            ),
        )?;
        crate::data::check_finite_vector("the joint predictive's `mean`", &self.mean)?;
        crate::data::check_finite("the joint predictive's `f_covariance`", &self.f_covariance)?;
        let scale = self.f_covariance.diagonal().max();
        let mut l = linalg::try_zeros(n, n, "Cholesky factor of a joint predictive covariance")?;
        // Σ_f = 0 draws the mean; a diagonal of zeros and negatives with anything else in Σ_f
        // is not a covariance (it sampled the mean, L = 0, with no word).
        if scale <= 0.0 && self.f_covariance.iter().all(|&v| v == 0.0) {
            return Ok((l, 0.0));
        }
        if scale <= 0.0 {
            let pivot = (0..n)
                .find(|&i| self.f_covariance[(i, i)] < 0.0)
                .unwrap_or(0);
            return Err(Error::NotPositiveDefinite {
                what: "the joint predictive covariance (no positive variance on its diagonal)",
                dim: n,
                pivot,
                max_jitter: 0.0,
            });
        }
        let jitter = linalg::factorize_with_jitter(
            &mut l,
            |f| f.copy_from(&self.f_covariance),
            0.0,
            &Jitter::ladder(),
            scale,
            "the joint predictive covariance",
            Par::Seq,
        )?;
        Ok((l, jitter))
    }

    /// The draws μ_* + L Z for standard normals `z` (n*×s): n*×s, one gemm.
    ///
    /// # Errors
    /// [`Error::Allocation`] if the n*×s draws cannot be allocated.
    pub(crate) fn draws(&self, l: &DMatrix<f64>, z: &DMatrix<f64>) -> Result<DMatrix<f64>> {
        let mut values = linalg::try_zeros(z.nrows(), z.ncols(), "joint posterior samples")?;
        for mut column in values.column_iter_mut() {
            column.copy_from(&self.mean);
        }
        linalg::gemm(
            linalg::view_mut(&mut values),
            true,
            linalg::view(l),
            linalg::view(z),
            1.0,
            Par::Seq,
        );
        Ok(values)
    }
}

/// `rows`×`cols` standard normals from `rng`, column by column.
///
/// # Errors
/// [`Error::Allocation`] if the matrix cannot be allocated.
pub(crate) fn standard_normals<R: Rng + ?Sized>(
    rows: usize,
    cols: usize,
    rng: &mut R,
) -> Result<DMatrix<f64>> {
    let mut z = linalg::try_zeros(rows, cols, "joint posterior samples")?;
    crate::random::fill_standard_normals(&mut z, rng);
    Ok(z)
}

/// Φ⁻¹(p), the standard normal quantile for p ∈ (0, 1): Wichura's algorithm AS 241 (PPND16,
/// Applied Statistics 37, 1988), relative error about 1e-16.
pub(crate) fn standard_normal_quantile(p: f64) -> f64 {
    let q = p - 0.5;
    if q.abs() <= 0.425 {
        let r = 0.180625 - q * q;
        return q * poly(&A, r) / poly(&B, r);
    }
    let r = if q < 0.0 { p } else { 1.0 - p };
    let r = (-r.ln()).sqrt();
    let x = if r <= 5.0 {
        let r = r - 1.6;
        poly(&C, r) / poly(&D, r)
    } else {
        let r = r - 5.0;
        poly(&E, r) / poly(&F, r)
    };
    if q < 0.0 {
        -x
    } else {
        x
    }
}

/// c₀ + c₁r + … + c₇r⁷ by Horner's rule.
fn poly(c: &[f64; 8], r: f64) -> f64 {
    c.iter().rev().fold(0.0, |acc, &ci| acc * r + ci)
}

const A: [f64; 8] = [
    3.3871328727963665,
    133.14166789178438,
    1971.5909503065513,
    13731.69376550946,
    45921.95393154987,
    67265.7709270087,
    33430.57558358813,
    2509.0809287301227,
];
const B: [f64; 8] = [
    1.0,
    42.31333070160091,
    687.1870074920579,
    5394.196021424751,
    21213.794301586597,
    39307.89580009271,
    28729.085735721943,
    5226.495278852545,
];
const C: [f64; 8] = [
    1.4234371107496835,
    4.630337846156546,
    5.769497221460691,
    3.6478483247632045,
    1.2704582524523684,
    0.2417807251774506,
    0.022723844989269184,
    0.0007745450142783414,
];
const D: [f64; 8] = [
    1.0,
    2.053191626637759,
    1.6763848301838038,
    0.6897673349851,
    0.14810397642748008,
    0.015198666563616457,
    0.0005475938084995345,
    1.0507500716444169e-09,
];
const E: [f64; 8] = [
    6.657904643501103,
    5.463784911164114,
    1.7848265399172913,
    0.2965605718285049,
    0.026532189526576124,
    0.0012426609473880784,
    2.7115555687434876e-05,
    2.0103343992922881e-07,
];
const F: [f64; 8] = [
    1.0,
    0.599832206555888,
    0.1369298809227358,
    0.014875361290850615,
    0.0007868691311456133,
    1.8463183175100548e-05,
    1.421511758316446e-07,
    2.0442631033899397e-15,
];

#[cfg(test)]
mod tests {
    use super::*;

    /// Φ⁻¹ at the f64 values of these p, in every branch of AS 241 (references solved to 20 digits
    /// with mpmath's normal CDF).
    #[test]
    fn the_normal_quantile_matches_known_values() {
        for (p, z) in [
            (0.5, 0.0),
            (0.975, 1.959_963_984_540_053_9),
            (0.025, -1.959_963_984_540_054_2),
            (0.841_344_746_068_542_9, 1.0),
            (0.995, 2.575_829_303_548_900_5),
            (0.999_999_9, 5.199_337_582_290_661),
            (1e-10, -6.361_340_902_404_056),
            (1e-300, -37.047_096_299_361_2),
        ] {
            let got = standard_normal_quantile(p);
            assert!(
                (got - z).abs() <= 2e-15 * z.abs().max(1.0),
                "Φ⁻¹({p}) = {got}, expected {z}"
            );
        }
    }

    /// A predictive built by hand whose variances have not one entry per mean is a dimension
    /// mismatch naming the field in `interval`, not a panic.
    #[test]
    fn mismatched_fields_are_dimension_mismatches() {
        let ragged = Predictive {
            mean: DVector::zeros(3),
            y_variance: DVector::from_element(1, 1.0),
            f_variance: DVector::zeros(3),
        };
        let short_f = Predictive {
            f_variance: DVector::zeros(0),
            y_variance: DVector::from_element(3, 1.0),
            ..ragged.clone()
        };
        for (p, field) in [(&ragged, "`y_variance`"), (&short_f, "`f_variance`")] {
            match p.interval(0.9) {
                Err(e @ Error::DimensionMismatch { expected: 3, .. }) => {
                    assert!(e.to_string().contains(field), "{e}");
                }
                other => panic!("{field}: {other:?}"),
            }
        }
    }

    /// A joint predictive built by hand with a covariance of the wrong shape is an error when
    /// sampled (its factor panicked copying it), and its noisy covariance does not panic.
    #[test]
    fn a_hand_built_joint_predictive_of_the_wrong_shape_is_an_error() {
        for (rows, cols) in [(2, 3), (3, 2), (2, 2)] {
            let joint = JointPredictive {
                mean: DVector::zeros(3),
                f_covariance: DMatrix::identity(rows, cols),
                noise_variance: 0.1,
            };
            assert!(
                matches!(
                    joint.sample(4, 1),
                    Err(Error::DimensionMismatch { expected: 3, .. })
                ),
                "{rows}×{cols}"
            );
            assert_eq!(joint.y_covariance().shape(), (rows, cols));
        }
    }

    #[test]
    fn intervals_are_symmetric_and_checked() {
        let p = Predictive::from_latent(
            DVector::from_vec(vec![1.0, -2.0]),
            DVector::from_vec(vec![3.0, 0.0]),
            1.0,
        )
        .unwrap();
        assert_eq!(p.y_std(), DVector::from_vec(vec![2.0, 1.0]));
        assert_eq!(p.f_std(), DVector::from_vec(vec![3f64.sqrt(), 0.0]));
        let (lo, hi) = p.interval(0.95).unwrap();
        let z = 1.959_963_984_540_054;
        assert!((hi[0] - 1.0 - 2.0 * z).abs() < 1e-14 && (1.0 - lo[0] - 2.0 * z).abs() < 1e-14);
        assert!((hi[1] + 2.0 - z).abs() < 1e-14);
        // Levels within 2⁻⁵³ of 1 (the largest f64 below 1) and of 0 give finite, ordered
        // bounds (the largest gave NaN: its 0.5 + 0.5·level rounded to 1): Φ⁻¹(1 − 2⁻⁵⁴) ≈ 8.29.
        let (_, top) = p.interval(1.0 - f64::EPSILON / 2.0).unwrap();
        let (_, high) = p.interval(0.9999).unwrap();
        let (_, least) = p.interval(f64::MIN_POSITIVE).unwrap();
        assert!(top[1] + 2.0 > 8.2 && top[1] + 2.0 < 8.3, "{top}");
        assert!(top[1] > high[1] && least[1] == -2.0, "{top} {high} {least}");
        // A predictive built by hand with a negative variance or a NaN mean is an error (both
        // gave NaN bounds), as is a joint one whose Σ_f has no positive variance but is not 0
        // (it sampled the mean) or holds a NaN.
        let mut negative = p.clone();
        negative.y_variance[1] = -1.0;
        assert!(matches!(
            negative.interval(0.9),
            Err(Error::InvalidParameter {
                name: "y_variance",
                ..
            })
        ));
        let mut nan = p.clone();
        nan.mean[0] = f64::NAN;
        assert!(matches!(nan.interval(0.9), Err(Error::NonFinite { .. })));
        let joint = |mean: [f64; 2], cov: [f64; 4]| JointPredictive {
            mean: DVector::from_row_slice(&mean),
            f_covariance: DMatrix::from_row_slice(2, 2, &cov),
            noise_variance: 0.1,
        };
        let indefinite = joint([0.0, 0.0], [-1.0, 5.0, 5.0, -1.0]).sample(3, 0);
        assert!(
            matches!(indefinite, Err(Error::NotPositiveDefinite { .. })),
            "{indefinite:?}"
        );
        let unknown = joint([f64::NAN, 0.0], [1.0, 0.0, 0.0, 1.0]).sample(3, 0);
        assert!(
            matches!(unknown, Err(Error::NonFinite { .. })),
            "{unknown:?}"
        );
        let zero = joint([1.0, 2.0], [0.0; 4]).sample(3, 0).unwrap();
        assert_eq!(
            zero.values,
            DMatrix::from_row_slice(2, 3, &[1.0, 1.0, 1.0, 2.0, 2.0, 2.0])
        );
        for bad in [0.0, 1.0, -0.5, 1.5, f64::NAN] {
            assert!(
                matches!(
                    p.interval(bad),
                    Err(Error::InvalidParameter { name: "level", .. })
                ),
                "{bad}"
            );
        }
    }
}
