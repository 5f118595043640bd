//! A generated, seeded suite of small and wide regression problems for checking that a model's
//! error bars are calibrated ([`calibration_suite`], issue 17): n from 50 to 1 000 training
//! points, D from 1 to 2n inputs of which only some are relevant, smooth and rough functions,
//! and noise from 10⁻³ to 1 of the signal's standard deviation. `examples/calibration.rs` runs
//! every problem; the test suite runs a few.

use super::{Dataset, MultiDataset};
use crate::error::{Error, Result};
use nalgebra::{DMatrix, DVector};
use rand::Rng;
use rand_distr::{Distribution, Normal, StandardNormal};

/// How rough a generated function is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Roughness {
    /// A sum of 30 random cosines of the relevant inputs with frequencies N(0, 1/ℓ²), ℓ = 1
    /// (a draw from a squared-exponential GP by random features).
    Smooth,
    /// A sum of 10 sharp ridges tanh(6(wᵀx + c)) of the relevant inputs (kinks a stationary
    /// smooth kernel can only approximate).
    Rough,
}

/// One generated problem: inputs uniform in [−2, 2]^D, targets f(x) + N(0, (noise·sd f)²) with
/// f depending on the first `relevant` inputs only.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    /// Training points n.
    pub n: usize,
    /// Inputs D.
    pub dim: usize,
    /// How many inputs f depends on (the first ones; the others are irrelevant).
    pub relevant: usize,
    /// The function's kind.
    pub roughness: Roughness,
    /// The noise's standard deviation relative to the function's (on the training inputs).
    pub noise: f64,
    /// The seed of the function, the inputs and the noise.
    pub seed: u64,
}

impl Problem {
    /// A short name: `n200-D400-r3-rough-0.3`.
    pub fn name(&self) -> String {
        format!(
            "n{}-D{}-r{}-{}-{}",
            self.n,
            self.dim,
            self.relevant,
            match self.roughness {
                Roughness::Smooth => "smooth",
                Roughness::Rough => "rough",
            },
            self.noise
        )
    }

    /// The training set (n points) and a test set of `n_test` points from the same function
    /// and noise.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for no points, no inputs, more relevant inputs than inputs or
    /// a noise that is not finite and ≥ 0; [`Error::Allocation`] for more rows or inputs than
    /// memory holds.
    pub fn generate(&self, n_test: usize) -> Result<(Dataset, Dataset)> {
        self.check(n_test)?;
        let mut rng = crate::random::seeded(self.seed);
        let f = RandomFunction::draw(self.relevant, self.roughness, &mut rng);
        let mut draw = |rows: usize| {
            let x = DMatrix::from_fn(rows, self.dim, |_, _| rng.random_range(-2.0..2.0));
            let fx = DVector::from_fn(rows, |i, _| f.value(&x, i));
            (x, fx)
        };
        let (x, fx) = draw(self.n);
        let (x_test, fx_test) = draw(n_test);
        let (y, y_test) = self.noisy((fx, fx_test), &mut rng)?;
        Ok((Dataset::new(x, y)?, Dataset::new(x_test, y_test)?))
    }

    /// [`Self::generate`]'s checks of the problem's settings.
    fn check(&self, n_test: usize) -> Result<()> {
        if self.n == 0 || n_test == 0 || self.dim == 0 || !(1..=self.dim).contains(&self.relevant) {
            return Err(Error::InvalidParameter {
                name: "problem",
                reason: format!(
                    "{}: needs n, n_test, D ≥ 1 and 1 ≤ relevant ≤ D",
                    self.name()
                ),
            });
        }
        if !(self.noise.is_finite() && self.noise >= 0.0) {
            return Err(Error::InvalidParameter {
                name: "noise",
                reason: format!("{} is not finite and ≥ 0", self.noise),
            });
        }
        // The inputs (D columns), function values and targets of both sets, 8 bytes each.
        let bytes = self
            .n
            .checked_add(n_test)
            .and_then(|rows| rows.checked_mul(self.dim.checked_add(4)?))
            .and_then(|values| values.checked_mul(8));
        crate::linalg::check_allocation(
            bytes.unwrap_or(usize::MAX),
            "the generated problem's inputs and targets",
        )
    }

    /// The function values at the training and the test inputs with Gaussian noise of sd
    /// `noise` times the function's on the training inputs, drawn from `rng`.
    fn noisy(
        &self,
        (fx, fx_test): (DVector<f64>, DVector<f64>),
        rng: &mut impl Rng,
    ) -> Result<(DVector<f64>, DVector<f64>)> {
        let mean = fx.mean();
        let sd = (fx.map(|v| (v - mean).powi(2)).sum() / fx.len() as f64).sqrt();
        let noise = Normal::new(0.0, self.noise * sd).map_err(|e| Error::InvalidParameter {
            name: "noise",
            reason: e.to_string(),
        })?;
        let y = fx.map(|v| v + noise.sample(rng));
        let y_test = fx_test.map(|v| v + noise.sample(rng));
        Ok((y, y_test))
    }
}

/// A generated function of the first `relevant` inputs ([`Roughness`]).
struct RandomFunction {
    roughness: Roughness,
    /// Frequencies (terms × relevant).
    w: DMatrix<f64>,
    phase: Vec<f64>,
    amplitude: Vec<f64>,
}

impl RandomFunction {
    /// The function's frequencies, phases and amplitudes drawn from `rng`.
    fn draw(relevant: usize, roughness: Roughness, rng: &mut impl Rng) -> Self {
        let (terms, scale) = match roughness {
            Roughness::Smooth => (30, 1.0),
            Roughness::Rough => (10, 1.0 / (relevant as f64).sqrt()),
        };
        let w = DMatrix::from_fn(terms, relevant, |_, _| {
            scale * rng.sample::<f64, _>(StandardNormal)
        });
        let phase = (0..terms)
            .map(|_| rng.random_range(-std::f64::consts::PI..std::f64::consts::PI))
            .collect();
        let amplitude = (0..terms)
            .map(|_| rng.sample::<f64, _>(StandardNormal))
            .collect();
        Self {
            roughness,
            w,
            phase,
            amplitude,
        }
    }

    /// The function at row `i` of `x`.
    fn value(&self, x: &DMatrix<f64>, i: usize) -> f64 {
        (0..self.w.nrows())
            .map(|k| {
                let t: f64 = (0..self.w.ncols())
                    .map(|d| self.w[(k, d)] * x[(i, d)])
                    .sum();
                self.amplitude[k]
                    * match self.roughness {
                        Roughness::Smooth => (t + self.phase[k]).cos(),
                        Roughness::Rough => (6.0 * (t + 0.3 * self.phase[k])).tanh(),
                    }
            })
            .sum()
    }
}

/// A [`Problem`] with several outputs of the same inputs, for the multi-output SSGP: output p is
/// a function of the same relevant inputs and roughness drawn with its own seed
/// (`problem.seed + 1000·p`; output 0 is the problem's own function), multiplied by 10^p (outputs
/// of different sizes), with the problem's relative noise.
#[derive(Debug, Clone, PartialEq)]
pub struct MultiOutputProblem {
    /// The inputs, output 0's function and the noise level.
    pub problem: Problem,
    /// The number of outputs P.
    pub outputs: usize,
}

impl MultiOutputProblem {
    /// The problem's name with the outputs: `n200-D400-r3-rough-0.3-P2`.
    pub fn name(&self) -> String {
        format!("{}-P{}", self.problem.name(), self.outputs)
    }

    /// The training set (n points, P targets) and a test set of `n_test` points; output 0 is
    /// the problem's own ([`Problem::generate`]'s targets).
    ///
    /// # Errors
    /// As [`Problem::generate`]; [`Error::InvalidParameter`] for no outputs,
    /// [`Error::Allocation`] for more outputs than memory holds.
    pub fn generate(&self, n_test: usize) -> Result<(MultiDataset, MultiDataset)> {
        if self.outputs == 0 {
            return Err(Error::InvalidParameter {
                name: "outputs",
                reason: format!("{}: needs at least one output", self.name()),
            });
        }
        let bytes = self
            .problem
            .n
            .checked_add(n_test)
            .and_then(|rows| rows.checked_mul(self.outputs))
            .and_then(|values| values.checked_mul(8));
        crate::linalg::check_allocation(
            bytes.unwrap_or(usize::MAX),
            "the generated problem's targets",
        )?;
        let (train, test) = self.problem.generate(n_test)?;
        let (n, p_all) = (train.len(), self.outputs);
        let (mut y, mut y_test) = (DMatrix::zeros(n, p_all), DMatrix::zeros(n_test, p_all));
        y.column_mut(0).copy_from(train.y());
        y_test.column_mut(0).copy_from(test.y());
        for p in 1..p_all {
            let seed = self
                .problem
                .seed
                .wrapping_add(1000u64.wrapping_mul(p as u64));
            let mut rng = crate::random::seeded(seed);
            let f = RandomFunction::draw(self.problem.relevant, self.problem.roughness, &mut rng);
            let fx = DVector::from_fn(n, |i, _| f.value(train.x(), i));
            let fx_test = DVector::from_fn(n_test, |i, _| f.value(test.x(), i));
            let (yp, yp_test) = self.problem.noisy((fx, fx_test), &mut rng)?;
            let size = 10f64.powi(p as i32);
            y.column_mut(p).copy_from(&(yp * size));
            y_test.column_mut(p).copy_from(&(yp_test * size));
        }
        Ok((
            MultiDataset::new(train.x().clone(), y)?,
            MultiDataset::new(test.x().clone(), y_test)?,
        ))
    }
}

/// [`calibration_suite`]'s 36 problems with two outputs each ([`MultiOutputProblem`]).
pub fn multi_output_suite() -> Vec<MultiOutputProblem> {
    calibration_suite()
        .into_iter()
        .map(|problem| MultiOutputProblem {
            problem,
            outputs: 2,
        })
        .collect()
}

/// The suite: 36 problems, n from 50 to 1 000, D from 1 to 2n (wide problems with D ≥ n for
/// n ≤ 200), smooth and rough, noise 10⁻³ to 1 of the signal, with irrelevant inputs in most;
/// problem k has seed k + 1.
pub fn calibration_suite() -> Vec<Problem> {
    use Roughness::{Rough, Smooth};
    let shapes: [(usize, usize, usize, Roughness, f64); 36] = [
        (50, 1, 1, Smooth, 0.1),
        (50, 2, 2, Rough, 0.01),
        (50, 5, 2, Smooth, 0.3),
        (50, 20, 3, Smooth, 0.1),
        (50, 50, 3, Rough, 0.3),
        (50, 100, 2, Smooth, 1.0),
        (100, 1, 1, Rough, 0.001),
        (100, 3, 3, Smooth, 0.01),
        (100, 9, 9, Smooth, 0.1),
        (100, 10, 3, Rough, 0.3),
        (100, 100, 3, Smooth, 0.1),
        (100, 200, 5, Rough, 1.0),
        (200, 1, 1, Smooth, 0.001),
        (200, 2, 2, Smooth, 0.1),
        (200, 8, 8, Rough, 0.1),
        (200, 20, 5, Smooth, 0.3),
        (200, 200, 3, Rough, 0.1),
        (200, 400, 3, Smooth, 0.3),
        (300, 9, 9, Smooth, 0.3),
        (300, 1, 1, Rough, 0.1),
        (300, 50, 3, Smooth, 1.0),
        (300, 300, 10, Smooth, 0.1),
        (500, 2, 2, Rough, 0.001),
        (500, 5, 5, Smooth, 0.01),
        (500, 10, 10, Smooth, 0.1),
        (500, 30, 5, Rough, 0.3),
        (500, 100, 3, Smooth, 1.0),
        (500, 20, 20, Smooth, 0.3),
        (1000, 1, 1, Smooth, 0.01),
        (1000, 3, 3, Rough, 0.1),
        (1000, 8, 8, Smooth, 0.001),
        (1000, 20, 5, Smooth, 0.1),
        (1000, 32, 10, Rough, 0.3),
        (1000, 100, 3, Smooth, 1.0),
        (75, 150, 1, Rough, 0.1),
        (150, 60, 6, Smooth, 0.01),
    ];
    shapes
        .iter()
        .enumerate()
        .map(|(k, &(n, dim, relevant, roughness, noise))| Problem {
            n,
            dim,
            relevant,
            roughness,
            noise,
            seed: k as u64 + 1,
        })
        .collect()
}

/// How a [`MessyTable`] departs from its clean [`Problem`]: what users' own tables bring.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Mess {
    /// The clean problem itself, for comparison.
    Clean,
    /// Inputs and targets on raw scales: input column j multiplied by 10⁻³ … 10⁵ and shifted
    /// by up to 10⁶ (a fixed list, cycled), targets × 10⁴ + 300.
    RawScales,
    /// Each of n/k inputs measured k times, each measurement with its own noise.
    Replicated(usize),
    /// The first three inputs rounded to integers (coarse measurements of what f depends on),
    /// the last but one a sparse 0/1 flag (5 % ones), the last constant; D ≥ 5.
    Coarse,
    /// Student-t noise with 3 degrees of freedom (outliers) instead of Gaussian, at the same
    /// scale, on the training and the test targets.
    HeavyTailedNoise,
    /// Only the first `rows` training points.
    FewRows(usize),
}

/// A clean [`Problem`] made messy by a [`Mess`]: the kind of table a user brings, on which a
/// model's error bars must hold as on the clean one.
#[derive(Debug, Clone, PartialEq)]
pub struct MessyTable {
    /// The clean problem (its n is the table's before [`Mess::FewRows`]).
    pub base: Problem,
    /// What is done to it.
    pub mess: Mess,
}

impl MessyTable {
    /// The base's name with the mess: `n315-D9-r5-smooth-0.3-replicated3`.
    pub fn name(&self) -> String {
        let mess = match self.mess {
            Mess::Clean => "clean".to_string(),
            Mess::RawScales => "raw-scales".to_string(),
            Mess::Replicated(k) => format!("replicated{k}"),
            Mess::Coarse => "coarse".to_string(),
            Mess::HeavyTailedNoise => "t3-noise".to_string(),
            Mess::FewRows(rows) => format!("first{rows}"),
        };
        format!("{}-{mess}", self.base.name())
    }

    /// The training set and a test set of `n_test` points, the test set messed as the training
    /// set where the mess concerns the inputs' or targets' scale, columns or noise (not
    /// [`Mess::Replicated`] or [`Mess::FewRows`], which concern the training rows alone).
    ///
    /// # Errors
    /// As [`Problem::generate`]; [`Error::InvalidParameter`] for a replication of 0 or more
    /// than n, no rows, more rows than n, or [`Mess::Coarse`] on fewer than 5 inputs.
    pub fn generate(&self, n_test: usize) -> Result<(Dataset, Dataset)> {
        let base = &self.base;
        let invalid = |reason: String| Error::InvalidParameter {
            name: "mess",
            reason: format!("{}: {reason}", self.name()),
        };
        match self.mess {
            Mess::Clean => base.generate(n_test),
            Mess::RawScales => {
                let (train, test) = base.generate(n_test)?;
                const COLUMNS: [(f64, f64); 9] = [
                    (1e-3, 0.0),
                    (1.0, 0.0),
                    (1e3, 5e3),
                    (1e5, 0.0),
                    (2.0, -1e4),
                    (0.01, 7.0),
                    (1e4, 1e6),
                    (1.0, 300.0),
                    (50.0, 0.0),
                ];
                let raw = |d: &Dataset| {
                    let mut x = d.x().clone();
                    for (j, mut column) in x.column_iter_mut().enumerate() {
                        let (a, b) = COLUMNS[j % COLUMNS.len()];
                        column.apply(|v| *v = a * *v + b);
                    }
                    Dataset::new(x, d.y().map(|v| 1e4 * v + 300.0))
                };
                Ok((raw(&train)?, raw(&test)?))
            }
            Mess::Replicated(k) => {
                if k == 0 || k > base.n {
                    return Err(invalid(format!("{k} measurements of {} points", base.n)));
                }
                let unique = Problem {
                    n: base.n / k,
                    noise: 0.0,
                    ..base.clone()
                };
                let (clean, test) = unique.generate(n_test)?;
                let sd = base.noise * clean.y_spread();
                let rows: Vec<usize> = (0..clean.len() * k).map(|i| i / k).collect();
                let train = clean.subset(&rows)?;
                let mut rng = crate::random::seeded(base.seed.wrapping_add(1 << 32));
                let mut noisy = |d: &Dataset| {
                    let y = d.y().map(|v| v + sd * rng.sample::<f64, _>(StandardNormal));
                    Dataset::new(d.x().clone(), y)
                };
                Ok((noisy(&train)?, noisy(&test)?))
            }
            Mess::Coarse => {
                if base.dim < 5 {
                    return Err(invalid(format!("{} inputs, at least 5 needed", base.dim)));
                }
                let (train, test) = base.generate(n_test)?;
                let mut rng = crate::random::seeded(base.seed.wrapping_add(2 << 32));
                let mut coarse = |d: &Dataset| {
                    let mut x = d.x().clone();
                    let dim = x.ncols();
                    for i in 0..x.nrows() {
                        for j in 0..3 {
                            x[(i, j)] = x[(i, j)].round();
                        }
                        x[(i, dim - 2)] = f64::from(u8::from(rng.random::<f64>() < 0.05));
                        x[(i, dim - 1)] = 3.0;
                    }
                    Dataset::new(x, d.y().clone())
                };
                Ok((coarse(&train)?, coarse(&test)?))
            }
            Mess::HeavyTailedNoise => {
                let clean = Problem {
                    noise: 0.0,
                    ..base.clone()
                };
                let (train, test) = clean.generate(n_test)?;
                // Student-t(3) = z / √(u/3), u ~ χ²(3) = the sum of three squared normals;
                // its standard deviation is √3, so divided by √3 it has the Gaussian noise's.
                let sd = base.noise * train.y_spread() / 3f64.sqrt();
                let mut rng = crate::random::seeded(base.seed.wrapping_add(3 << 32));
                let mut noisy = |d: &Dataset| {
                    let y = d.y().map(|v| {
                        let z: f64 = rng.sample(StandardNormal);
                        let u: f64 = (0..3)
                            .map(|_| rng.sample::<f64, _>(StandardNormal).powi(2))
                            .sum();
                        v + sd * z / (u / 3.0).sqrt()
                    });
                    Dataset::new(d.x().clone(), y)
                };
                Ok((noisy(&train)?, noisy(&test)?))
            }
            Mess::FewRows(rows) => {
                if rows == 0 || rows > base.n {
                    return Err(invalid(format!("{rows} rows of {}", base.n)));
                }
                let (train, test) = base.generate(n_test)?;
                Ok((train.subset(&(0..rows).collect::<Vec<_>>())?, test))
            }
        }
    }
}

/// The messy tables: three clean problems shaped like a small real table (n = 315, D = 9, 5
/// relevant inputs; smooth with noise 0.3, rough with 0.1, smooth with 0.05 of the signal; seeds
/// 100–102), each clean and in five messes ([`Mess`]): raw scales, every input measured three
/// times, coarse and constant columns, Student-t noise, and its first 60 rows.
pub fn messy_suite() -> Vec<MessyTable> {
    use Roughness::{Rough, Smooth};
    let bases = [(Smooth, 0.3), (Rough, 0.1), (Smooth, 0.05)];
    let messes = [
        Mess::Clean,
        Mess::RawScales,
        Mess::Replicated(3),
        Mess::Coarse,
        Mess::HeavyTailedNoise,
        Mess::FewRows(60),
    ];
    bases
        .iter()
        .enumerate()
        .flat_map(|(k, &(roughness, noise))| {
            let base = Problem {
                n: 315,
                dim: 9,
                relevant: 5,
                roughness,
                noise,
                seed: 100 + k as u64,
            };
            messes.iter().map(move |&mess| MessyTable {
                base: base.clone(),
                mess,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sizes beyond memory, or whose products overflow, are an allocation error before anything
    /// is drawn (their products wrapped in release builds, and nalgebra wrote past the buffer).
    #[test]
    fn sizes_beyond_memory_are_an_error() {
        let base = calibration_suite()[0].clone();
        for (n, dim) in [(1 << 32, 1 << 32), (1 << 40, 1), (usize::MAX, 2)] {
            let huge = Problem {
                n,
                dim,
                ..base.clone()
            };
            assert!(
                matches!(huge.generate(1), Err(Error::Allocation { .. })),
                "{n}×{dim}"
            );
        }
        let multi = MultiOutputProblem {
            problem: base.clone(),
            outputs: 1 << 58,
        };
        assert!(matches!(multi.generate(1), Err(Error::Allocation { .. })));
        let seeded = MultiOutputProblem {
            problem: Problem {
                seed: u64::MAX,
                ..base
            },
            outputs: 2,
        };
        assert_eq!(seeded.generate(3).unwrap().0.outputs(), 2);
    }

    /// A multi-output problem's output 0 and inputs are its problem's, bit for bit; output 1 is
    /// another function of the same inputs, ten times the size, with the same relative noise.
    #[test]
    fn a_multi_output_problem_extends_its_problem() {
        let problem = calibration_suite()[13].clone();
        let (train, test) = problem.generate(50).unwrap();
        let multi = MultiOutputProblem {
            problem: problem.clone(),
            outputs: 2,
        };
        let (mtrain, mtest) = multi.generate(50).unwrap();
        assert_eq!(mtrain.x(), train.x());
        assert_eq!(mtest.x(), test.x());
        assert_eq!(mtrain.y().column(0), train.y().column(0));
        assert_eq!(mtest.y().column(0), test.y().column(0));
        let sd = |v: DVector<f64>| {
            let mean = v.mean();
            (v.map(|x| (x - mean).powi(2)).sum() / v.len() as f64).sqrt()
        };
        let (y0, y1) = (
            mtrain.y().column(0).into_owned(),
            mtrain.y().column(1).into_owned(),
        );
        let ratio = sd(y1.clone()) / sd(y0.clone());
        assert!((3.0..30.0).contains(&ratio), "sd ratio {ratio}");
        let correlation = y0.add_scalar(-y0.mean()).dot(&y1.add_scalar(-y1.mean()))
            / (sd(y0.clone()) * sd(y1.clone()) * y0.len() as f64);
        assert!(correlation.abs() < 0.9, "correlation {correlation}");
        assert_eq!(multi.name(), format!("{}-P2", problem.name()));
        assert!(MultiOutputProblem {
            problem,
            outputs: 0
        }
        .generate(5)
        .is_err());
    }
}
