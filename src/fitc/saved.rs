//! A fitted FITC model as saved (feature `serde`): θ (pseudo-inputs included), the jitter δ on
//! K_uu, the factor L_A, the weights β, the centre, and the thread count; ℓ, σ0², σn² and the
//! pseudo-inputs are decoded from θ on load by the code that decoded them when fitting, and
//! L_u is factorised again from them (the same bits). A saved L_u could not be checked against
//! θ, and one that is not the factor of K_uu breaks σ²_f* ≥ 0; recomputed, it is exact.

use super::evidence::pseudo_factor;
use super::posterior::FittedFitc;
use crate::data::InputColumns;
use crate::error::{Error, Result};
use crate::hyperparameters::{self, NoiseParam};
use crate::kernel::Covariance;
use crate::linalg::par;
use crate::model::FitRecord;
use crate::params::check_threads;
use crate::schema::{bounded, finite, lower_factor, rows, vector, Bounds, FactorNorms, FitcRepr};
use nalgebra::DVector;

impl FittedFitc {
    /// The saved form.
    pub(crate) fn to_repr(&self) -> FitcRepr {
        FitcRepr {
            input_columns: self.record.columns.clone().into(),
            kernel: self.kernel,
            num_pseudo_inputs: self.num_pseudo_inputs(),
            noise_floor: self.record.noise_floor,
            parameters: self.record.theta.as_slice().to_vec(),
            centre: self.centre.as_slice().to_vec(),
            jitter: self.jitter,
            factor_a: rows(&self.l_a),
            weights: self.weights.as_slice().to_vec(),
            y_mean: self.record.y_mean,
            neg_log_evidence: self.record.neg_log_evidence,
            training: (&self.record.training).into(),
            threads: self.record.threads,
        }
    }

    /// The model a saved form describes, checked, with bounds on its predictions: with the
    /// kernel's values in [0, σ0²], |μ| ≤ σ0² Σ|β_i| + |ȳ|, and with L_u refactorised from θ,
    /// ‖L_u⁻¹k*‖ ≤ σ0, so 𝕍 f* ≤ σ0² + ‖L_A⁻¹L_u⁻¹k*‖² is bounded through L_A's norms.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for m = 0, bad columns, a bad noise floor, jitter or thread
    /// count, an L_A that is not lower triangular with a positive diagonal, or predictions that
    /// could overflow; [`Error::NotPositiveDefinite`] if K_uu does not factor at θ; [`Error::DimensionMismatch`] for weights, factors, the centre or θ of the wrong
    /// size; [`Error::NonFinite`] for a NaN or infinity; θ's errors as when fitting.
    pub(crate) fn from_repr(r: FitcRepr) -> Result<(Self, Bounds)> {
        let columns = InputColumns::try_from(r.input_columns)?;
        let d = columns.used().len();
        let m = r.num_pseudo_inputs;
        if m == 0 {
            return Err(Error::InvalidParameter {
                name: "num_pseudo_inputs",
                reason: "FITC needs at least one pseudo-input".into(),
            });
        }
        // m is checked against the weights, present in the file, before anything else.
        let weights = vector(r.weights, m, "FITC weights (entries, m)")?;
        let l_a = lower_factor(
            &r.factor_a,
            m,
            ("FITC factor_a (rows, m)", "FITC factor_a (columns, m)"),
            "factor_a",
        )?;
        let centre = vector(r.centre, d, "FITC centre (entries, D)")?;
        let noise = NoiseParam {
            floor: r.noise_floor,
        };
        noise.validate()?;
        let theta = DVector::from_vec(r.parameters);
        let decoded = hyperparameters::unpack(&theta, d, m, noise, None, "FITC parameters θ")?;
        let y_mean = finite(r.y_mean, "FITC y_mean")?;
        let neg_log_evidence = finite(r.neg_log_evidence, "FITC −log p(y|θ)")?;
        check_threads(r.threads)?;
        let training = r.training.into_summary(&columns)?;
        let (s0, sn2) = (decoded.hyper.signal_variance, decoded.hyper.noise_variance);
        let jitter = finite(r.jitter, "FITC jitter")?;
        if jitter < 0.0 {
            return Err(Error::InvalidParameter {
                name: "jitter",
                reason: format!("the jitter on K_uu is {jitter}, below 0"),
            });
        }
        let pseudo = decoded.block.into_owned();
        let kernel = Covariance {
            kernel: r.kernel,
            lengthscales: &decoded.hyper.lengthscales,
            signal_variance: s0,
        };
        let l_u = pseudo_factor(&kernel, &pseudo, jitter, par(r.threads))?;
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
        let model = FittedFitc {
            lengthscales: decoded.hyper.lengthscales,
            signal_variance: s0,
            noise_variance: sn2,
            pseudo,
            centre,
            kernel: r.kernel,
            jitter,
            l_u,
            l_a,
            weights,
            record: FitRecord::new(
                theta,
                (y_mean, neg_log_evidence),
                training,
                noise,
                (r.threads, None),
                columns,
            ),
        };
        Ok((model, bounds))
    }
}
