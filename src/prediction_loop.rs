//! The prediction loop every model shares: test inputs checked once, then processed in chunks of
//! rows so memory stays bounded, each chunk's means (and, unless only means are wanted, latent
//! variances) filled by the model.

use crate::error::{Error, Result};
use crate::model::FitRecord;
use crate::optim::{Phase, Progress};
use crate::predictive::{round_off_variance, Predictive};
use nalgebra::{DMatrix, DVector};
use std::time::Instant;

/// The work of one chunk of test rows: `chunk(x_used, start, len, mean, latent)` writes the latent
/// means μ − ȳ of rows `start .. start + len` of `x_used` into `mean` and, when `latent` is
/// `Some`, their latent variances 𝕍 f* into it (both of length `len`; `None` skips the variance
/// work). Every closure of that signature is one.
pub(crate) trait Chunk:
    FnMut(&DMatrix<f64>, usize, usize, &mut [f64], Option<&mut [f64]>) -> Result<()>
{
}

impl<F: FnMut(&DMatrix<f64>, usize, usize, &mut [f64], Option<&mut [f64]>) -> Result<()>> Chunk
    for F
{
}

/// Runs `chunk` over the rows of `x` (checked and restricted to the used `columns`) in chunks of
/// `chunk_rows`, with or without `variances`; returns the means with ȳ = `y_mean` added (checked
/// finite) and the raw latent variances (zeros without `variances`).
///
/// # Errors
/// [`Error::EmptyData`] for no rows, [`Error::DimensionMismatch`] if `x` has not D columns,
/// [`Error::NonFinite`] for a NaN or infinity in `x`; [`Error::Numerical`] for a non-finite
/// mean; whatever `chunk` returns.
fn run_chunks(
    x: &DMatrix<f64>,
    record: &FitRecord,
    chunk_rows: usize,
    variances: bool,
    mut chunk: impl Chunk,
) -> Result<(DVector<f64>, DVector<f64>)> {
    let (columns, y_mean) = (&record.columns, record.y_mean);
    let started = Instant::now();
    if x.nrows() == 0 {
        return Err(Error::EmptyData {
            what: "no test inputs",
        });
    }
    let x = columns.select(x)?;
    let n = x.nrows();
    let mut mean = DVector::zeros(n);
    let mut latent = DVector::zeros(if variances { n } else { 0 });
    let mut start = 0;
    while start < n {
        let len = chunk_rows.max(1).min(n - start);
        let latent_part = variances.then(|| &mut latent.as_mut_slice()[start..start + len]);
        chunk(
            &x,
            start,
            len,
            &mut mean.as_mut_slice()[start..start + len],
            latent_part,
        )?;
        start += len;
        if let Some(observer) = &record.observer {
            let phase = Phase::Prediction {
                done: start,
                total: n,
            };
            // Reported, not stoppable: a prediction cannot stop half-way.
            let _ = observer(&Progress::of(phase, f64::NAN, f64::NAN, started.elapsed()));
        }
    }
    mean.add_scalar_mut(y_mean);
    if let Some(row) = mean.iter().position(|m| !m.is_finite()) {
        return Err(Error::Numerical {
            what: format!(
                "the predictive mean at test row {row} is {}: the inputs may be beyond what f64 \
                 can resolve",
                mean[row]
            ),
        });
    }
    Ok((mean, latent))
}

/// Predicts at `x` (n*×D) chunk by chunk: the inputs are checked and restricted to the model's
/// used `columns`, then `chunk(x_used, start, len, mean, latent)` fills the latent mean μ − ȳ of rows
/// `start .. start + len` of `x_used` into `mean` and, when `latent` is `Some`, their latent
/// variances 𝕍 f* into it (both of length `len`; `None` skips the variance work); ȳ = `y_mean` is added here, σn² = `noise_variance` makes the
/// noisy variance, and every value is checked: means finite, latent variances finite and ≥ 0 up
/// to round-off relative to the prior variance `prior_variance` ([`round_off_variance`]).
///
/// # Errors
/// [`Error::EmptyData`] for no rows, [`Error::DimensionMismatch`] if `x` has not D columns,
/// [`Error::NonFinite`] for a NaN or infinity in `x`; [`Error::Numerical`] for a non-finite
/// mean or an invalid variance; whatever `chunk` returns.
pub(crate) fn predict_in_chunks(
    x: &DMatrix<f64>,
    record: &FitRecord,
    chunk_rows: usize,
    (prior_variance, noise_variance): (f64, f64),
    chunk: impl Chunk,
) -> Result<Predictive> {
    let (mean, mut latent) = run_chunks(x, record, chunk_rows, true, chunk)?;
    for (row, v) in latent.iter_mut().enumerate() {
        *v = round_off_variance(*v, prior_variance, row)?;
    }
    Ok(Predictive::from_latent(mean, latent, noise_variance))
}

/// The means alone of [`predict_in_chunks`], bit for bit: the same chunks, with `chunk` told to
/// skip the variances.
///
/// # Errors
/// As [`predict_in_chunks`], variances aside.
pub(crate) fn mean_in_chunks(
    x: &DMatrix<f64>,
    record: &FitRecord,
    chunk_rows: usize,
    chunk: impl Chunk,
) -> Result<DVector<f64>> {
    Ok(run_chunks(x, record, chunk_rows, false, chunk)?.0)
}
