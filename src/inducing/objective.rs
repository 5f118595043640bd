//! The data and settings of an inducing-point objective (FITC's −log p(y|θ), VFE's −F): what
//! [`crate::fitc::FitcEvidence`] and [`crate::vfe::VfeEvidence`] both hold and do.

use super::{centred_rows, factorize, gradient, Approximation, Buffers, Factors};
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::hyperparameters::{self, Decoded, NoiseParam};
use crate::kernel::{self, Kernel};
use crate::linalg::{par, Jitter, Threads};
use crate::optim::Objective;
use crate::params::TrainingSettings;
use nalgebra::{DMatrix, DVector};

/// The training inputs X (n×D) and targets y (n), both **centred** (inputs by their column means
/// c: the inducing inputs in θ are relative to c too), the number m of inducing inputs, the
/// jitter policy for $K_{uu}$, the noise floor, the thread count and the approximation; with
/// fixed inducing inputs θ holds only the D + 2 hyperparameters.
#[derive(Debug, Clone)]
pub(crate) struct InducingObjective {
    /// X − 1cᵀ (n×D).
    x: DMatrix<f64>,
    /// The column medians of `x`, the centre of K_uf's distances (computed once).
    x_medians: DVector<f64>,
    /// The training inputs' column means c (D).
    centre: DVector<f64>,
    /// The standard deviation (1/n) of each input column: the optimiser's scale for the
    /// inducing inputs in that column.
    input_scales: DVector<f64>,
    y: DVector<f64>,
    m: usize,
    kernel: Kernel,
    jitter: Jitter,
    noise: NoiseParam,
    fixed: Option<DMatrix<f64>>,
    threads: usize,
    /// Who runs the blocks of an evaluation (from `threads`, built once).
    pool: Threads,
    /// The buffers kept between evaluations.
    buffers: Buffers,
    approx: Approximation,
    /// The name of θ in errors.
    what: &'static str,
}

impl InducingObjective {
    /// The objective of `approx` with m inducing inputs, `training`'s kernel, noise floor and
    /// threads and the jitter policy `jitter` on `data`, with the inducing inputs held at `fixed`
    /// (m×D, in the inputs' own coordinates, checked by the caller) when they are not learned.
    pub(crate) fn new(
        data: &Dataset,
        (m, training, jitter): (usize, &TrainingSettings, Jitter),
        fixed: Option<DMatrix<f64>>,
        approx: Approximation,
        what: &'static str,
    ) -> Self {
        let input_scales = DVector::from_iterator(
            data.dim(),
            data.x()
                .column_iter()
                .map(|c| crate::data::standard_deviation(c.as_slice(), c.mean()))
                .map(|s| if s > 0.0 { s } else { 1.0 }),
        );
        let (x, centre) = kernel::centre_columns(data.x());
        let fixed = fixed.map(|p| centred_rows(&p, &centre));
        Self {
            x_medians: kernel::column_medians(&x),
            x,
            centre,
            input_scales,
            y: data.y().add_scalar(-data.y_mean()),
            m,
            kernel: training.kernel,
            jitter,
            noise: training.noise(),
            fixed,
            threads: training.threads,
            pool: Threads::new(training.threads),
            buffers: Buffers::default(),
            approx,
            what,
        }
    }

    /// The input dimension D.
    pub(crate) fn dim(&self) -> usize {
        self.x.ncols()
    }

    /// The number n of training points.
    pub(crate) fn len(&self) -> usize {
        self.x.nrows()
    }

    /// The training inputs' column means c: θ holds the inducing inputs as X̄ − 1cᵀ.
    pub(crate) fn centre(&self) -> &DVector<f64> {
        &self.centre
    }

    /// Decodes θ in this objective's layout.
    pub(crate) fn decode(&self, theta: &DVector<f64>) -> Result<Decoded<'_>> {
        hyperparameters::unpack(
            theta,
            self.dim(),
            self.m,
            self.noise,
            self.fixed.as_ref(),
            self.what,
        )
    }

    /// Factorises at θ (the objective, and what prediction needs).
    ///
    /// # Errors
    /// θ's errors ([`hyperparameters::unpack`]), then [`factorize`]'s.
    pub(crate) fn factors(&self, theta: &DVector<f64>) -> Result<(Decoded<'_>, Factors)> {
        let decoded = self.decode(theta)?;
        let f = factorize(
            (&self.x, &self.x_medians),
            &self.y,
            &decoded,
            (self.kernel, &self.jitter),
            self.approx,
            (&self.pool, par(self.threads), &self.buffers),
        )?;
        if !f.neg_log_evidence.is_finite() {
            let what = match self.approx {
                Approximation::Fitc => "−log p(y|θ)",
                Approximation::Vfe => "−F(θ)",
            };
            return Err(Error::NonFiniteObjective {
                what: format!("{what} = {}", f.neg_log_evidence),
            });
        }
        Ok((decoded, f))
    }
}

impl Objective for InducingObjective {
    /// D + 2, plus mD when the inducing inputs are free.
    fn num_params(&self) -> usize {
        hyperparameters::theta_len(self.dim(), if self.fixed.is_some() { 0 } else { self.m })
    }

    /// n, the number of data points.
    fn value_scale(&self) -> f64 {
        self.len() as f64
    }

    /// 1 for the hyperparameters; for the inducing inputs, √m times the standard deviation of
    /// their input column (see [`crate::fitc::FitcEvidence`]'s `parameter_scales`).
    fn parameter_scales(&self) -> Option<DVector<f64>> {
        let (dim, m) = (self.dim(), self.m);
        let block_scale = (m as f64).sqrt();
        Some(DVector::from_fn(self.num_params(), |i, _| {
            if i < dim + 2 {
                1.0
            } else {
                block_scale * self.input_scales[(i - dim - 2) / m]
            }
        }))
    }

    /// The objective and its gradient in one pass, on one of the evaluation's threads
    /// ([`Threads::install`]: its blocks and kernels are then handed out from inside the pool;
    /// FITC, two threads, the same bits: n = 300, m = 50 0.48 → 0.41 ms; n = 1 000, m = 50 1.15 →
    /// 1.05 ms; n = 10 000, m = 200 45 → 44 ms).
    ///
    /// # Errors
    /// As [`InducingObjective::factors`].
    fn value_and_gradient(&self, theta: &DVector<f64>) -> Result<(f64, DVector<f64>)> {
        let evaluate = || {
            let (decoded, f) = self.factors(theta)?;
            let value = f.neg_log_evidence;
            let free = self.fixed.is_none();
            let threads = (&self.pool, par(self.threads), &self.buffers);
            let g = gradient(&self.x, &decoded, f, self.approx, free, threads);
            Ok((value, g))
        };
        self.pool.install(evaluate)
    }
}

/// The public methods of FITC's or VFE's objective `$evidence` (a newtype of
/// [`InducingObjective`]) that the two write alike, and its [`Objective`] impl: `$what` is what
/// the model calls its inducing inputs (in the docs); the docs of the three methods whose docs
/// are the model's own come after their names.
macro_rules! evidence_methods {
    (
        $evidence:ident, $what:literal;
        value: $(#[$value_doc:meta])*
        parameter_scales: $(#[$scales_doc:meta])*
        value_and_gradient: $(#[$gradient_doc:meta])*
    ) => {
        impl $evidence {
            /// The input dimension D.
            pub fn dim(&self) -> usize {
                self.0.dim()
            }

            #[doc = concat!("The training inputs' column means c: θ holds the ", $what, " as")]
            /// X̄ − 1cᵀ.
            pub fn centre(&self) -> &nalgebra::DVector<f64> {
                self.0.centre()
            }

            $(#[$value_doc])*
            pub fn value(&self, theta: &nalgebra::DVector<f64>) -> $crate::error::Result<f64> {
                self.0.factors(theta).map(|(_, f)| f.neg_log_evidence)
            }
        }

        impl $crate::optim::Objective for $evidence {
            #[doc = concat!("D + 2, plus mD when the ", $what, " are free.")]
            fn num_params(&self) -> usize {
                self.0.num_params()
            }

            /// n, the number of data points.
            fn value_scale(&self) -> f64 {
                self.0.value_scale()
            }

            $(#[$scales_doc])*
            fn parameter_scales(&self) -> Option<nalgebra::DVector<f64>> {
                self.0.parameter_scales()
            }

            $(#[$gradient_doc])*
            fn value_and_gradient(
                &self,
                theta: &nalgebra::DVector<f64>,
            ) -> $crate::error::Result<(f64, nalgebra::DVector<f64>)> {
                self.0.value_and_gradient(theta)
            }
        }
    };
}

pub(crate) use evidence_methods;
