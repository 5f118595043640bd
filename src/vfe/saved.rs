//! A fitted VFE model as saved (feature `serde`): FITC's saved form (θ, the jitter δ on K_uu, the
//! factor L_A, the weights β, the centre, the thread count; L_u factorised again from θ on
//! load, the same bits) plus the trace tr(K_ff − Q_ff) the summary reports.

use super::posterior::FittedVfe;
use crate::data::InputColumns;
use crate::error::{Error, Result};
use crate::hyperparameters::{self, NoiseParam};
use crate::inducing::pseudo_factor;
use crate::kernel::Covariance;
use crate::linalg::par;
use crate::model::FitRecord;
use crate::params::check_threads;
use crate::schema::{bounded, finite, lower_factor, rows, vector, Bounds, FactorNorms, VfeRepr};
use nalgebra::DVector;

impl FittedVfe {
    /// The saved form.
    pub(crate) fn to_repr(&self) -> VfeRepr {
        VfeRepr {
            input_columns: self.record.columns.clone().into(),
            kernel: self.kernel,
            num_inducing_inputs: self.num_inducing_inputs(),
            noise_floor: self.record.noise_floor,
            parameters: self.record.theta.as_slice().to_vec(),
            centre: self.centre.as_slice().to_vec(),
            jitter: self.jitter,
            factor_a: rows(&self.l_a),
            weights: self.weights.as_slice().to_vec(),
            y_mean: self.record.y_mean,
            neg_bound: self.record.neg_log_evidence,
            trace: self.trace,
            training: (&self.record.training).into(),
            threads: self.record.threads,
        }
    }

    /// The model a saved form describes, checked, with FITC's bounds on its predictions: with
    /// the kernel's values in [0, σ0²], |μ| ≤ σ0² Σ|β_i| + |ȳ|, and with L_u refactorised from θ,
    /// ‖L_u⁻¹k*‖ ≤ σ0, so 𝕍 f* ≤ σ0² + ‖L_A⁻¹L_u⁻¹k*‖² is bounded through L_A's norms.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for m = 0, bad columns, a bad noise floor, jitter or thread
    /// count, an L_A that is not lower triangular with a positive diagonal, or predictions that
    /// could overflow; [`Error::NotPositiveDefinite`] if K_uu does not factor at θ;
    /// [`Error::DimensionMismatch`] for weights, factors, the centre or θ of the wrong size;
    /// [`Error::NonFinite`] for a NaN or infinity; θ's errors as when fitting.
    pub(crate) fn from_repr(r: VfeRepr) -> Result<(Self, Bounds)> {
        let columns = InputColumns::try_from(r.input_columns)?;
        let d = columns.used().len();
        let m = r.num_inducing_inputs;
        if m == 0 {
            return Err(Error::InvalidParameter {
                name: "num_inducing_inputs",
                reason: "VFE needs at least one inducing input".into(),
            });
        }
        // m is checked against the weights, present in the file, before anything else.
        let weights = vector(r.weights, m, "VFE weights (entries, m)")?;
        let l_a = lower_factor(
            &r.factor_a,
            m,
            ("VFE factor_a (rows, m)", "VFE factor_a (columns, m)"),
            "factor_a",
        )?;
        let centre = vector(r.centre, d, "VFE centre (entries, D)")?;
        let noise = NoiseParam {
            floor: r.noise_floor,
        };
        noise.validate()?;
        let theta = DVector::from_vec(r.parameters);
        let decoded = hyperparameters::unpack(&theta, d, m, noise, None, "VFE parameters θ")?;
        let y_mean = finite(r.y_mean, "VFE y_mean")?;
        let neg_bound = finite(r.neg_bound, "VFE −F")?;
        let trace = finite(r.trace, "VFE tr(K_ff − Q_ff)")?;
        check_threads(r.threads)?;
        let training = r.training.into_summary(&columns)?;
        let (s0, sn2) = (decoded.hyper.signal_variance, decoded.hyper.noise_variance);
        let jitter = finite(r.jitter, "VFE jitter")?;
        if jitter < 0.0 {
            return Err(Error::InvalidParameter {
                name: "jitter",
                reason: format!("the jitter on K_uu is {jitter}, below 0"),
            });
        }
        let inducing = decoded.block.into_owned();
        let kernel = Covariance {
            kernel: r.kernel,
            lengthscales: &decoded.hyper.lengthscales,
            signal_variance: s0,
        };
        let l_u = pseudo_factor(&kernel, &inducing, jitter, par(r.threads))?;
        // L_u is K_uu's own factor, so ‖L_u⁻¹k*‖² = Q** ≤ k** = σ0² (doubled against round-off).
        let through_u = 2.0 * s0.sqrt();
        let through_a = FactorNorms::of(&l_a, "factor_a")?.solve_bound(through_u, "factor_a")?;
        let bounds = Bounds {
            mean: bounded(
                s0 * weights.iter().map(|w| w.abs()).sum::<f64>() + y_mean.abs(),
                "weights",
                "the predictive mean",
            )?,
            variance: bounded(
                sn2 + s0 + through_a * through_a,
                "factor_a",
                "the predictive variance",
            )?,
        };
        let model = FittedVfe {
            lengthscales: decoded.hyper.lengthscales,
            signal_variance: s0,
            noise_variance: sn2,
            inducing,
            centre,
            kernel: r.kernel,
            jitter,
            l_u,
            l_a,
            weights,
            trace,
            record: FitRecord::new(
                theta,
                (y_mean, neg_bound),
                training,
                noise,
                (r.threads, None),
                columns,
            ),
        };
        Ok((model, bounds))
    }
}
