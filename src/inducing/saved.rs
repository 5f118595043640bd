//! A fitted FITC or VFE model as saved (feature `serde`): θ (inducing inputs included), the
//! jitter δ on K_uu, the factor L_A, the weights β, the centre, the thread count, and VFE's
//! trace tr(K_ff − Q_ff); ℓ, σ0², σn² and the inducing inputs are decoded from θ on load by the
//! code that decoded them when fitting, and L_u is factorised again from them (the same bits).
//! A saved L_u could not be checked against θ, and one that is not the factor of K_uu breaks
//! σ²_f* ≥ 0; recomputed, it is exact. The two saved forms differ in the names of two fields and
//! VFE's trace, so their conversions are one macro ([`saved_methods`]).

use super::{pseudo_covariance, Fitted};
use crate::error::Result;
use crate::kernel::Covariance;
use crate::linalg;
use crate::linalg::Par;
use crate::schema::{bounded, FactorNorms};
use nalgebra::DMatrix;

/// The words of the messages of loading a model's saved form: m's field and the model's name
/// with β, L_A's rows and columns, c, θ, ȳ, the objective and the jitter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SavedWords {
    pub m: &'static str,
    pub weights: &'static str,
    pub factor: (&'static str, &'static str),
    pub centre: &'static str,
    pub theta: &'static str,
    pub y_mean: &'static str,
    pub objective: &'static str,
    pub jitter: &'static str,
}

/// $L_u$, the lower Cholesky factor of $K_{uu} = k(X̄, X̄) + δI$ for a known jitter δ
/// (`jitter`, as [`super::factorize`] added it): the same bits as its factor.
///
/// # Errors
/// [`crate::Error::NotPositiveDefinite`] if $K_{uu}$ does not factor.
fn pseudo_factor(
    kernel: &Covariance<'_>,
    pseudo: &DMatrix<f64>,
    jitter: f64,
    par: Par,
) -> Result<DMatrix<f64>> {
    let (mut l_u, _) = pseudo_covariance(kernel, pseudo, par);
    for j in 0..l_u.nrows() {
        l_u[(j, j)] += jitter;
    }
    linalg::cholesky_in_place_lower(&mut l_u, "K_uu (pseudo-input covariance + jitter)", par)?;
    Ok(l_u)
}

impl Fitted {
    /// L_u refactorised from the loaded θ, and the bounds on the predictions: with the kernel's
    /// values in [0, σ0²], |μ| ≤ σ0² Σ|β_i| + |ȳ|, and with L_u K_uu's own factor,
    /// ‖L_u⁻¹k*‖ ≤ σ0, so 𝕍 f* ≤ σ0² + ‖L_A⁻¹L_u⁻¹k*‖² is bounded through L_A's norms.
    ///
    /// # Errors
    /// [`crate::Error::NotPositiveDefinite`] if K_uu does not factor;
    /// [`crate::Error::InvalidParameter`] for predictions that could overflow or a bad L_A.
    pub(crate) fn refactorise(&mut self) -> Result<crate::schema::Bounds> {
        let s0 = self.hyper.signal_variance;
        let par = linalg::par(self.record.threads);
        self.l_u = pseudo_factor(&self.covariance(), &self.inducing, self.jitter, par)?;
        // L_u is K_uu's own factor, so ‖L_u⁻¹k*‖² = Q** ≤ k** = σ0² (doubled against round-off).
        let through_u = 2.0 * s0.sqrt();
        let norms = FactorNorms::of(&self.l_a, "factor_a")?;
        let through_a = norms.solve_bound(through_u, "factor_a")?;
        let weights: f64 = self.weights.iter().map(|w| w.abs()).sum();
        Ok(crate::schema::Bounds {
            mean: bounded(
                s0 * weights + self.record.y_mean.abs(),
                "weights",
                "the predictive mean",
            )?,
            variance: bounded(
                self.hyper.noise_variance + s0 + through_a * through_a,
                "factor_a",
                "the predictive variance",
            )?,
        })
    }
}

/// `to_repr` and `from_repr` of `$fitted` (its field `fit` holds the [`Fitted`] core, beside the
/// model's own `$extra` floats — finite and not negative, as VFE's trace tr(K_ff − Q_ff) —, named
/// `$what` in errors) with its saved form `$repr` and the words of its [`super::Kind`] `$kind`.
macro_rules! saved_methods {
    ($fitted:ident, $repr:ident, $kind:ident $(, $extra:ident: $what:literal)*) => {
        impl $fitted {
            /// The saved form.
            pub(crate) fn to_repr(&self) -> $crate::schema::$repr {
                let fit = &self.fit;
                $crate::schema::$repr {
                    input_columns: fit.record.columns.clone().into(),
                    kernel: fit.kernel,
                    m: fit.inducing.nrows(),
                    noise_floor: fit.record.noise_floor,
                    parameters: fit.record.theta.as_slice().to_vec(),
                    centre: fit.centre.as_slice().to_vec(),
                    jitter: fit.jitter,
                    factor_a: $crate::schema::rows(&fit.l_a),
                    weights: fit.weights.as_slice().to_vec(),
                    y_mean: fit.record.y_mean,
                    objective: fit.record.neg_log_evidence,
                    $($extra: self.$extra,)*
                    training: (&fit.record.training).into(),
                    threads: fit.record.threads,
                }
            }

            /// The model a saved form describes, checked, with bounds on its predictions
            /// ([`Fitted::refactorise`](crate::inducing::Fitted::refactorise)).
            ///
            /// # Errors
            /// [`Error::InvalidParameter`](crate::Error::InvalidParameter) for m = 0, bad
            /// columns, a bad noise floor, jitter or thread count, an L_A that is not lower
            /// triangular with a positive diagonal, or predictions that could overflow;
            /// [`Error::NotPositiveDefinite`](crate::Error::NotPositiveDefinite) if K_uu does not
            /// factor at θ; [`Error::DimensionMismatch`](crate::Error::DimensionMismatch) for
            /// weights, factors, the centre or θ of the wrong size;
            /// [`Error::NonFinite`](crate::Error::NonFinite) for a NaN or infinity; θ's errors as
            /// when fitting.
            pub(crate) fn from_repr(
                r: $crate::schema::$repr,
            ) -> $crate::error::Result<(Self, $crate::schema::Bounds)> {
                use $crate::schema::{finite, lower_factor, vector};
                let words = &$kind.saved;
                let columns = $crate::data::InputColumns::try_from(r.input_columns)?;
                let d = columns.used().len();
                let m = r.m;
                if m == 0 {
                    return Err($crate::error::Error::InvalidParameter {
                        name: words.m,
                        reason: $kind.too_few.into(),
                    });
                }
                // m is checked against the weights, present in the file, before anything else.
                let weights = vector(r.weights, m, words.weights)?;
                let l_a = lower_factor(&r.factor_a, m, words.factor, "factor_a")?;
                let centre = vector(r.centre, d, words.centre)?;
                let noise = $crate::hyperparameters::NoiseParam {
                    floor: r.noise_floor,
                };
                noise.validate()?;
                let theta = nalgebra::DVector::from_vec(r.parameters);
                let decoded =
                    $crate::hyperparameters::unpack(&theta, d, m, noise, None, words.theta)?;
                let y_mean = finite(r.y_mean, words.y_mean)?;
                let objective = finite(r.objective, words.objective)?;
                $(
                    let $extra = finite(r.$extra, $what)?;
                    if $extra < 0.0 {
                        return Err($crate::error::Error::InvalidParameter {
                            name: stringify!($extra),
                            reason: format!("{} is {}, below 0", $what, $extra),
                        });
                    }
                )*
                $crate::params::check_threads(r.threads)?;
                let training = r.training.into_summary(&columns)?;
                let jitter = finite(r.jitter, words.jitter)?;
                if jitter < 0.0 {
                    return Err($crate::error::Error::InvalidParameter {
                        name: "jitter",
                        reason: format!("the jitter on K_uu is {jitter}, below 0"),
                    });
                }
                let mut fit = $crate::inducing::Fitted {
                    kernel: r.kernel,
                    hyper: decoded.hyper,
                    inducing: decoded.block.into_owned(),
                    centre,
                    jitter,
                    l_u: nalgebra::DMatrix::zeros(0, 0),
                    l_a,
                    weights,
                    record: $crate::model::FitRecord::new(
                        theta,
                        (y_mean, objective),
                        training,
                        noise,
                        (r.threads, None),
                        columns,
                    ),
                };
                let bounds = fit.refactorise()?;
                Ok((Self { fit $(, $extra)* }, bounds))
            }
        }
    };
}

pub(crate) use saved_methods;
