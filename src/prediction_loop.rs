//! The prediction loop every model shares: test inputs checked once, then processed in chunks of
//! rows so memory stays bounded, each chunk's means (and, unless only means are wanted, latent
//! variances) filled by the model.

use crate::data::InputColumns;
use crate::error::{Error, Result};
use crate::linalg;
use crate::model::FitRecord;
use crate::optim::{Observer, Phase, Progress};
use crate::predictive::{round_off_variance, Predictive, PredictiveGradients};
use nalgebra::{DMatrix, DVector};
use std::time::Instant;

/// What the loop needs of a fitted model: the input columns it uses, ȳ (added to every mean),
/// the observer its chunks are reported to (a [`FitRecord`] gives these three) and what the means
/// are, for the messages (a [`FitRecord`]'s are [`PREDICTIVE_MEAN`]s).
#[derive(Clone, Copy)]
pub(crate) struct Rows<'a> {
    pub(crate) columns: &'a InputColumns,
    pub(crate) y_mean: f64,
    pub(crate) observer: Option<&'a Observer>,
    pub(crate) means: &'static str,
}

/// What a model's means are, in [`Rows::means`].
pub(crate) const PREDICTIVE_MEAN: &str = "predictive mean";

impl<'a> From<&'a FitRecord> for Rows<'a> {
    fn from(record: &'a FitRecord) -> Self {
        Self {
            columns: &record.columns,
            y_mean: record.y_mean,
            observer: record.observer.as_ref(),
            means: PREDICTIVE_MEAN,
        }
    }
}

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
    model: Rows<'_>,
    chunk_rows: usize,
    variances: bool,
    mut chunk: impl Chunk,
) -> Result<(DVector<f64>, DVector<f64>)> {
    let (columns, y_mean) = (model.columns, model.y_mean);
    let started = Instant::now();
    if x.nrows() == 0 {
        return Err(Error::EmptyData {
            what: "no test inputs",
        });
    }
    let x = columns.select(x)?;
    let n = x.nrows();
    let mut mean = linalg::try_zeros_vector(n, "the predictive means")?;
    let mut latent =
        linalg::try_zeros_vector(if variances { n } else { 0 }, "the latent variances")?;
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
        if let Some(observer) = model.observer {
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
                "the {} at test row {row} is {}: the inputs may be beyond what f64 can resolve",
                model.means, mean[row]
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
pub(crate) fn predict_in_chunks<'a>(
    x: &DMatrix<f64>,
    model: impl Into<Rows<'a>>,
    chunk_rows: usize,
    (prior_variance, noise_variance): (f64, f64),
    chunk: impl Chunk,
) -> Result<Predictive> {
    let (mean, mut latent) = run_chunks(x, model.into(), chunk_rows, true, chunk)?;
    for (row, v) in latent.iter_mut().enumerate() {
        *v = round_off_variance(*v, prior_variance, row)?;
    }
    Predictive::from_latent(mean, latent, noise_variance)
}

/// The means alone of [`predict_in_chunks`], bit for bit: the same chunks, with `chunk` told to
/// skip the variances.
///
/// # Errors
/// As [`predict_in_chunks`], variances aside.
pub(crate) fn mean_in_chunks<'a>(
    x: &DMatrix<f64>,
    model: impl Into<Rows<'a>>,
    chunk_rows: usize,
    chunk: impl Chunk,
) -> Result<DVector<f64>> {
    Ok(run_chunks(x, model.into(), chunk_rows, false, chunk)?.0)
}

/// The work of one chunk of test rows for [`gradients_in_chunks`]:
/// `chunk(x_used, start, len, out)` fills `out` for rows `start .. start + len` of `x_used`.
pub(crate) trait GradientChunk:
    FnMut(&DMatrix<f64>, usize, usize, ChunkGradients<'_>) -> Result<()>
{
}

impl<F: FnMut(&DMatrix<f64>, usize, usize, ChunkGradients<'_>) -> Result<()>> GradientChunk for F {}

/// What a [`GradientChunk`] fills for its `len` test rows: the latent means μ − ȳ and latent
/// variances 𝕍 f* (length `len` each), and their gradients with respect to the used inputs
/// (len×D_used each, zeroed on entry).
pub(crate) struct ChunkGradients<'a> {
    pub(crate) mean: &'a mut [f64],
    pub(crate) latent: &'a mut [f64],
    pub(crate) d_mean: &'a mut DMatrix<f64>,
    pub(crate) d_variance: &'a mut DMatrix<f64>,
}

/// [`predict_in_chunks`] with the gradients of the means and variances with respect to the test
/// inputs: the inputs checked and restricted to the used `columns`, `chunk` run over chunks of
/// `chunk_rows` rows, ȳ = `y_mean` added, the variances checked as in [`predict_in_chunks`]
/// (against `prior_variance`, σn² = `noise_variance` added), and the gradients written back into
/// n*×D matrices with 0 in the ignored columns and checked finite.
///
/// # Errors
/// As [`predict_in_chunks`]; [`Error::Allocation`] before any work if the result (8·n*·(2D + 3)
/// bytes) cannot be allocated; [`Error::Numerical`] for a non-finite gradient.
pub(crate) fn gradients_in_chunks(
    x: &DMatrix<f64>,
    columns: &InputColumns,
    chunk_rows: usize,
    (y_mean, prior_variance, noise_variance): (f64, f64, f64),
    mut chunk: impl GradientChunk,
) -> Result<PredictiveGradients> {
    if x.nrows() == 0 {
        return Err(Error::EmptyData {
            what: "no test inputs",
        });
    }
    let xu = columns.select(x)?;
    let (n, d) = xu.shape();
    // The result: two n*×D gradients and the predictive's three n*-vectors.
    let bytes = n
        .saturating_mul(x.ncols().saturating_mul(2).saturating_add(3))
        .saturating_mul(std::mem::size_of::<f64>());
    linalg::check_allocation(bytes, "the predictive and its gradients")?;
    let mut mean = linalg::try_zeros_vector(n, "the predictive means")?;
    let mut latent = linalg::try_zeros_vector(n, "the latent variances")?;
    // Written at their places among all D columns, 0 in the ignored ones.
    let mut d_mean = linalg::try_zeros(n, x.ncols(), "gradients of the predictive means")?;
    let mut d_variance = linalg::try_zeros(n, x.ncols(), "gradients of the predictive variances")?;
    let (mut part_mean, mut part_variance) = (DMatrix::zeros(0, 0), DMatrix::zeros(0, 0));
    let mut start = 0;
    while start < n {
        let len = chunk_rows.max(1).min(n - start);
        for part in [&mut part_mean, &mut part_variance] {
            linalg::resize(part, len, d);
            part.fill(0.0);
        }
        chunk(
            &xu,
            start,
            len,
            ChunkGradients {
                mean: &mut mean.as_mut_slice()[start..start + len],
                latent: &mut latent.as_mut_slice()[start..start + len],
                d_mean: &mut part_mean,
                d_variance: &mut part_variance,
            },
        )?;
        for (k, &column) in columns.used().iter().enumerate() {
            d_mean
                .view_mut((start, column), (len, 1))
                .copy_from(&part_mean.column(k));
            d_variance
                .view_mut((start, column), (len, 1))
                .copy_from(&part_variance.column(k));
        }
        start += len;
    }
    mean.add_scalar_mut(y_mean);
    for (row, v) in latent.iter_mut().enumerate() {
        *v = round_off_variance(*v, prior_variance, row)?;
    }
    PredictiveGradients {
        predictive: Predictive::from_latent(mean, latent, noise_variance)?.finite()?,
        mean: d_mean,
        variance: d_variance,
    }
    .finite()
}
