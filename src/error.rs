//! The crate's single error type.

use std::path::PathBuf;

/// Everything that can go wrong in `ssgp`: bad input, bad configuration, numerical failure, I/O.
///
/// Library code never panics on user input; every problem surfaces as one of these variants, and
/// its message names what was wrong and where. `Debug` prints that message too (with the
/// variant's name), so `?` in a `main` that returns `Result<(), Box<dyn std::error::Error>>`
/// explains itself:
///
/// ```
/// use ssgp::{error::Error, Dataset};
/// use ssgp::nalgebra::{DMatrix, DVector};
///
/// let err = Dataset::new(DMatrix::zeros(3, 1), DVector::zeros(2)).unwrap_err();
/// assert!(matches!(err, Error::LengthMismatch { x_rows: 3, y_len: 2 }));
/// assert_eq!(
///     format!("{err:?}"),
///     "LengthMismatch: length mismatch: x has 3 rows but y has 2 entries"
/// );
/// ```
#[derive(thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A data set (or a prediction request) with no rows or no input columns.
    #[error("empty data: {what}")]
    EmptyData {
        /// What was empty (e.g. "training inputs have no rows").
        what: &'static str,
    },
    /// The inputs and targets disagree on the number of points.
    #[error("length mismatch: x has {x_rows} rows but y has {y_len} entries")]
    LengthMismatch {
        /// Rows of the input matrix.
        x_rows: usize,
        /// Entries of the target vector.
        y_len: usize,
    },
    /// An object has the wrong size: a vector the wrong number of entries, or a matrix the wrong
    /// number of rows or columns (e.g. test inputs with another D than training).
    #[error("dimension mismatch in {what}: expected {expected}, found {found}")]
    DimensionMismatch {
        /// Which object had the wrong size, and what was counted when it is not the number of
        /// entries (e.g. "test inputs (columns)").
        what: &'static str,
        /// The expected count.
        expected: usize,
        /// The count found.
        found: usize,
    },
    /// Input rows of different lengths (a ragged list of rows).
    #[error("ragged rows: row {row} has {found} values, but row 0 has {expected}")]
    RaggedRows {
        /// Zero-based index of the first row whose length differs from row 0's.
        row: usize,
        /// The length of row 0.
        expected: usize,
        /// The length of row `row`.
        found: usize,
    },
    /// A NaN or an infinity in the data or in a parameter.
    #[error("non-finite value ({value}) in {what} at row {row}, column {col}")]
    NonFinite {
        /// Where the value was found.
        what: &'static str,
        /// Zero-based row.
        row: usize,
        /// Zero-based column.
        col: usize,
        /// The offending value.
        value: f64,
    },
    /// A lengthscale asked to start at half the range of a constant input column (the models
    /// themselves ignore constant columns, see [`crate::data::InputColumns`]).
    #[error(
        "input column {column} is constant (every value is {}): it has no range",
        compact(*.value)
    )]
    ConstantInput {
        /// Zero-based column index.
        column: usize,
        /// The constant value.
        value: f64,
    },
    /// All training targets are equal, so the initial signal variance would be 0.
    #[error(
        "the training targets are constant (every value is {}); there is nothing to regress",
        compact(*.value)
    )]
    ConstantTargets {
        /// The constant value.
        value: f64,
    },
    /// A configuration or parameter value outside its domain (m = 0, a negative variance, …).
    #[error("invalid parameter `{name}`: {reason}")]
    InvalidParameter {
        /// The parameter's name.
        name: &'static str,
        /// Why it is invalid.
        reason: String,
    },
    /// The data's scale is beyond what a model can compute with in f64 (e.g. targets whose
    /// variance overflows, or whose spread is below what SSGP's gradient resolves); the message
    /// names the scale and the remedy.
    #[error("{what}")]
    Scale {
        /// What is out of range, by how much, and what to do.
        what: String,
    },
    /// A Cholesky factorisation failed even after the allowed jitter.
    #[error("Cholesky factorisation of {what} ({dim}×{dim}) failed: not positive definite at pivot {pivot} (jitter tried up to {max_jitter:e})")]
    NotPositiveDefinite {
        /// Which matrix.
        what: &'static str,
        /// Its dimension.
        dim: usize,
        /// The zero-based pivot where the factorisation broke down.
        pivot: usize,
        /// The largest diagonal jitter tried (0 if none was allowed).
        max_jitter: f64,
    },
    /// A computation lost its meaning: a NaN, an infinity or a clearly negative variance in a
    /// result (e.g. predictions at inputs beyond the range f64 can resolve).
    #[error("numerical failure: {what}")]
    Numerical {
        /// What went wrong, and where.
        what: String,
    },
    /// An objective evaluated to a non-finite value.
    #[error("the objective is not finite at the current parameters: {what}")]
    NonFiniteObjective {
        /// What was not finite.
        what: String,
    },
    /// A malformed line in a CSV file: a cell that is not a finite number, a wrong number of
    /// columns, a header that does not name the target.
    #[error("{}:{line}: {reason}", path.display())]
    Csv {
        /// The file.
        path: PathBuf,
        /// One-based line number.
        line: usize,
        /// What was wrong with it.
        reason: String,
    },
    /// A CSV source with no data lines in it (empty, only blank lines or a header, or none in the
    /// requested row range).
    #[error("{}: no data: {reason}", path.display())]
    EmptyCsv {
        /// The file (or the name given for the source).
        path: PathBuf,
        /// What was found instead.
        reason: String,
    },
    /// Training ended by a failure (see [`crate::termination::Termination::is_success`]) and best-effort
    /// training was not asked for; the best parameters found are in the report.
    #[error("{0}")]
    TrainingFailed(Box<crate::termination::FailedTraining>),
    /// A buffer the computation needs could not be allocated (e.g. the n×n factor of a full GP
    /// on too many points).
    #[error("cannot allocate {bytes} bytes for {what}")]
    Allocation {
        /// What the buffer was for.
        what: &'static str,
        /// Its size in bytes (`usize::MAX` if that overflows).
        bytes: usize,
    },
    /// A saved model written in another version of the file format (see
    /// `persist::FORMAT_VERSION`, feature `serde`).
    #[error(
        "the saved model has format version {found}, but this build of ssgp writes version \
         {supported} and reads it and the older versions it migrates"
    )]
    FormatVersion {
        /// The version written in the file.
        found: u64,
        /// The version this build reads and writes.
        supported: u32,
    },
    /// A saved model whose text or structure is not that of the format: bad JSON, a missing,
    /// unknown or mistyped field (the reason says which, with the line and column).
    #[error("malformed saved model: {reason}")]
    MalformedModel {
        /// What was wrong, from the parser.
        reason: String,
    },
    /// A saved model of another kind than the one asked for (e.g. a FITC model loaded as an
    /// SSGP).
    #[error("the saved model is a `{found}` model, not a `{expected}` one")]
    WrongModelKind {
        /// The kind asked for.
        expected: &'static str,
        /// The kind in the file.
        found: &'static str,
    },
    /// A fitted model that cannot be saved: one implemented outside this crate (e.g. a member of
    /// an ensemble).
    #[error("model `{name}` cannot be saved: only this crate's models (SSGP, FITC, VFE, the full GP, and standardised models and ensembles of them) can")]
    NotPersistable {
        /// The model's name ([`crate::FittedRegressor::name`]).
        name: &'static str,
    },
    /// A fitted model that gives no gradients of its predictions: one implemented outside this
    /// crate ([`crate::FittedRegressor::predict_gradients`]'s default).
    #[error("model `{name}` gives no gradients of its predictions")]
    NotDifferentiable {
        /// The model's name ([`crate::FittedRegressor::name`]).
        name: &'static str,
    },
    /// An error from linfa (feature `linfa`), e.g. a dataset linfa itself refused.
    #[cfg(feature = "linfa")]
    #[error("linfa: {0}")]
    Linfa(#[from] ::linfa::Error),
    /// A distributed computation (feature `mpi`) failed on some rank, or the ranks disagree (on
    /// D, on the settings); every rank returns an error, so none is left waiting in a collective.
    #[error("distributed computation failed: {what}")]
    Distributed {
        /// What failed, and on which rank.
        what: String,
    },
    /// Reading a file failed.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// Writing a file failed.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
}

impl std::fmt::Debug for Error {
    /// `Variant: message`, the message being [`Display`](std::fmt::Display)'s; `{:#?}` adds the
    /// chain of underlying errors (I/O, linfa).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {self}", self.variant())?;
        if f.alternate() {
            let mut source = std::error::Error::source(self);
            while let Some(cause) = source {
                write!(f, "\n  caused by: {cause}")?;
                source = cause.source();
            }
        }
        Ok(())
    }
}

/// [`Error::DimensionMismatch`] unless a matrix of shape `found` (rows, columns) has the shape
/// expected: `rows` and `cols` pair each expected count with the name the error gives (e.g.
/// `(m, "pseudo-inputs (rows, m)")`). The one shape check of blocks of θ, hand-built results and
/// ensemble members' results.
pub(crate) fn check_shape(
    found: (usize, usize),
    rows: (usize, &'static str),
    cols: (usize, &'static str),
) -> Result<()> {
    for ((expected, what), found) in [(rows, found.0), (cols, found.1)] {
        if expected != found {
            return Err(Error::DimensionMismatch {
                what,
                expected,
                found,
            });
        }
    }
    Ok(())
}

impl Error {
    /// The variant's name, e.g. `"TrainingFailed"`.
    pub fn variant(&self) -> &'static str {
        match self {
            Self::EmptyData { .. } => "EmptyData",
            Self::LengthMismatch { .. } => "LengthMismatch",
            Self::DimensionMismatch { .. } => "DimensionMismatch",
            Self::RaggedRows { .. } => "RaggedRows",
            Self::NonFinite { .. } => "NonFinite",
            Self::ConstantInput { .. } => "ConstantInput",
            Self::ConstantTargets { .. } => "ConstantTargets",
            Self::InvalidParameter { .. } => "InvalidParameter",
            Self::NotPositiveDefinite { .. } => "NotPositiveDefinite",
            Self::Numerical { .. } => "Numerical",
            Self::NonFiniteObjective { .. } => "NonFiniteObjective",
            Self::Csv { .. } => "Csv",
            Self::EmptyCsv { .. } => "EmptyCsv",
            Self::TrainingFailed(_) => "TrainingFailed",
            Self::Allocation { .. } => "Allocation",
            Self::FormatVersion { .. } => "FormatVersion",
            Self::MalformedModel { .. } => "MalformedModel",
            Self::WrongModelKind { .. } => "WrongModelKind",
            Self::NotPersistable { .. } => "NotPersistable",
            Self::NotDifferentiable { .. } => "NotDifferentiable",
            Self::Scale { .. } => "Scale",
            #[cfg(feature = "linfa")]
            Self::Linfa(_) => "Linfa",
            Self::Distributed { .. } => "Distributed",
            Self::Io { .. } => "Io",
            Self::Write { .. } => "Write",
        }
    }
}

/// `Result` with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

/// `value` as a message shows it: plain where that is short (0, and magnitudes from 1e-4 below
/// 1e16: `7`, `0.25`, `1000000`), in exponent form otherwise (`1e-300`, not 300 zeros).
fn compact(value: f64) -> String {
    let magnitude = value.abs();
    if magnitude == 0.0 || (1e-4..1e16).contains(&magnitude) || !value.is_finite() {
        format!("{value}")
    } else {
        format!("{value:e}")
    }
}
