//! CSV loading: [`CsvOptions`] (delimiter, header, target column, row range, comment lines) and
//! a streaming parser whose errors name the file, the 1-based line and the column.
//!
//! Lines are read one at a time through a buffered reader, into one buffer grown fallibly (a
//! line longer than memory holds is an [`Error::Allocation`]). Values go straight into one growing
//! buffer holding blocks of [`BLOCK_ROWS`] rows, each block stored column by column; at the end
//! the blocks are rearranged in place into the column-major input matrix and the target column
//! is copied out. Peak memory is the data's own size, 8·n·(D+1) bytes, plus the targets' copy
//! (8·n bytes) and at most one partly filled block; no copy of the text is kept.

use super::Dataset;
use crate::error::{Error, Result};
use nalgebra::{DMatrix, DVector};
use std::fs::File;
use std::io::{BufRead, BufReader, ErrorKind, Read};
use std::ops::{Bound, RangeBounds};
use std::path::Path;

/// Rows per block of the load buffer: large enough that rearranging the blocks moves contiguous
/// runs (8 KiB per column), small enough that the last, partly filled block costs little.
const BLOCK_ROWS: usize = 1024;

/// Most values in one block (8 MiB): wide rows get fewer rows per block (down to one), so a line
/// of millions of fields never makes the loader reserve [`BLOCK_ROWS`] times its width up front.
const BLOCK_VALUES: usize = 1 << 20;

/// The UTF-8 byte-order mark some editors put at the start of a file.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Longest cell shown in an error message, in characters.
const SHOWN_CHARS: usize = 32;

/// Most column names an error message lists.
const SHOWN_NAMES: usize = 12;

/// Longest line the loader reads, in bytes: as long as a `Vec` may be. A longer line, or one
/// that memory cannot hold, is an [`Error::Allocation`] (tests give the loader a lower limit).
const LINE_LIMIT: usize = isize::MAX as usize;

/// What [`Error::EmptyCsv`] says of a source without a non-blank line.
const NO_LINES: &str = "the source is empty or holds only blank lines";

/// The usual mark of a comment line, which errors on a line starting with it name.
const COMMENT: u8 = b'#';

/// Whether the first non-blank line of a CSV source is a header of column names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Header {
    /// A header when none of its fields is a number (the default). A first line that mixes
    /// numbers and text (a data row with a typo, `1,2x,3`) is an [`Error::Csv`] naming the line,
    /// never a row dropped as a header: say [`Header::Present`] for a header with numbers in it.
    /// Nor is a line of missing-value marks and empty fields only (`NA,NA`, `?,?`, `,`) a
    /// header: it is a data row with missing values, refused as any such row.
    #[default]
    Detect,
    /// Always a header.
    Present,
    /// Never a header: the first non-blank line is data.
    Absent,
}

/// Which column of a CSV source holds the targets y; the other columns are the inputs, in file
/// order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Target {
    /// The last column (the default).
    #[default]
    Last,
    /// The column with this **zero-based** index.
    Column(usize),
    /// The column with this name in the header (which must be present or detected), matched
    /// exactly, case and spaces included (a quoted name keeps the spaces inside its quotes); an
    /// error on a name no column has names the columns that differ from it only in case, spaces
    /// or a leading `#`.
    Named(String),
}

impl Target {
    /// The column named `name` in the header: `Target::named("y")` is
    /// `Target::Named("y".to_string())`.
    pub fn named(name: impl Into<String>) -> Self {
        Self::Named(name.into())
    }
}

/// How to read a CSV source: the field delimiter, the header, the target column, the range of
/// data rows to load and the mark of comment lines.
///
/// Built with [`CsvOptions::new`] (or `default()`) and the builder methods; the defaults are a
/// comma, [`Header::Detect`], [`Target::Last`], every row and no comment lines.
///
/// ```
/// use ssgp::data::{CsvOptions, Header, Target};
/// let options = CsvOptions::new()
///     .delimiter(b';')
///     .header(Header::Present)
///     .target(Target::named("y"))
///     .rows(0..1000);
/// # let _ = options;
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CsvOptions {
    delimiter: u8,
    header: Header,
    target: Target,
    first_row: usize,
    end_row: Option<usize>,
    comment: Option<u8>,
}

impl Default for CsvOptions {
    fn default() -> Self {
        Self {
            delimiter: b',',
            header: Header::Detect,
            target: Target::Last,
            first_row: 0,
            end_row: None,
            comment: None,
        }
    }
}

impl CsvOptions {
    /// The defaults: comma-separated, header detected, target in the last column, every row, no
    /// comment lines.
    pub fn new() -> Self {
        Self::default()
    }

    /// The byte separating fields (`b','` by default; `b';'`, `b'\t'`, `b' '` …). Fields are
    /// trimmed of surrounding whitespace and of one pair of double quotes; a number is trimmed
    /// inside its quotes too (`" 1"` is 1, `" "` an empty field), a name keeps what is inside them.
    /// A quoted name in the header may hold the delimiter, a quoted number may not; a quoted field
    /// ends on its line (a quote left open is an error). With `b' '` a
    /// run of spaces is one separator and spaces at the start or end of a line are ignored, as in
    /// whitespace-aligned tables; with any other delimiter two in a row enclose an empty field.
    #[must_use]
    pub fn delimiter(mut self, delimiter: u8) -> Self {
        self.delimiter = delimiter;
        self
    }

    /// Whether the first non-blank line is a header ([`Header::Detect`] by default).
    #[must_use]
    pub fn header(mut self, header: Header) -> Self {
        self.header = header;
        self
    }

    /// Which column holds the targets ([`Target::Last`] by default).
    #[must_use]
    pub fn target(mut self, target: Target) -> Self {
        self.target = target;
        self
    }

    /// Loads only the data rows with these zero-based indices (the header, blank lines and comment
    /// lines are not rows): `rows(0..1000)`, `rows(5000..)`. Rows before the range are skipped
    /// without parsing their numbers and reading stops at its end, so several processes (e.g. MPI
    /// ranks) can each load their share of one file; rows outside the range are not checked.
    /// Disjoint ranges that cover the file load, concatenated, the whole file.
    #[must_use]
    pub fn rows(mut self, range: impl RangeBounds<usize>) -> Self {
        self.first_row = match range.start_bound() {
            Bound::Included(&s) => s,
            Bound::Excluded(&s) => s.saturating_add(1),
            Bound::Unbounded => 0,
        };
        self.end_row = match range.end_bound() {
            Bound::Included(&e) => Some(e.saturating_add(1)),
            Bound::Excluded(&e) => Some(e),
            Bound::Unbounded => None,
        };
        self
    }

    /// Skips the lines whose first byte after any whitespace is `mark` (`b'#'`, `b'%'` …), as
    /// blank lines are skipped: they are no header and no rows, and their line numbers still
    /// count in errors. Whole lines only: a mark after a value is part of the field (an error).
    /// Without this option a line starting with `#` is an [`Error::Csv`] that says so (or, on
    /// the first line, a header if it reads as one, as numpy's `savetxt` writes `# x,y`).
    ///
    /// ```
    /// use ssgp::data::CsvOptions;
    /// use ssgp::Dataset;
    /// let text = "# logged 2024-05-01, sensor 3\nx,y\n1,2\n# paused\n3,4\n";
    /// let options = CsvOptions::new().comment(b'#');
    /// let data = Dataset::from_reader(text.as_bytes(), &options, "log.csv")?;
    /// assert_eq!(data.y().as_slice(), [2.0, 4.0]);
    /// assert!(Dataset::from_reader(text.as_bytes(), &CsvOptions::new(), "log.csv").is_err());
    /// # Ok::<(), ssgp::Error>(())
    /// ```
    #[must_use]
    pub fn comment(mut self, mark: u8) -> Self {
        self.comment = Some(mark);
        self
    }

    /// Checks the options that are wrong whatever the file holds.
    fn validate(&self) -> Result<()> {
        let d = self.delimiter;
        if !d.is_ascii() || d.is_ascii_alphanumeric() || b"+-.\"\r\n".contains(&d) {
            return Err(Error::InvalidParameter {
                name: "delimiter",
                reason: format!(
                    "{:?} cannot separate numbers: use ASCII punctuation or whitespace \
                     such as b',', b';' or b'\\t'",
                    char::from(d)
                ),
            });
        }
        if let Some(mark) = self
            .comment
            .filter(|&m| !m.is_ascii_punctuation() || b"+-.\"".contains(&m) || m == self.delimiter)
        {
            return Err(Error::InvalidParameter {
                name: "comment",
                reason: format!(
                    "{:?} cannot mark comment lines: use ASCII punctuation that is neither the \
                     delimiter nor part of a number, such as b'#' or b'%'",
                    char::from(mark)
                ),
            });
        }
        if self.end_row.is_some_and(|end| end <= self.first_row) {
            return Err(Error::InvalidParameter {
                name: "rows",
                reason: format!("the range {} holds no rows", self.range_text()),
            });
        }
        if let (Target::Named(name), Header::Absent) = (&self.target, self.header) {
            return Err(Error::InvalidParameter {
                name: "target",
                reason: format!("the target is named `{name}`, but the header is Header::Absent"),
            });
        }
        Ok(())
    }

    /// The row range as written in Rust, for messages.
    fn range_text(&self) -> String {
        match self.end_row {
            Some(end) => format!("{}..{end}", self.first_row),
            None => format!("{}..", self.first_row),
        }
    }
}

impl Dataset {
    /// Loads a CSV file with the default [`CsvOptions`]: comma-separated, a header detected
    /// (a first line none of whose fields is a number: [`Header::Detect`]), the target in the
    /// **last** column, one point per line. Blank lines are skipped; comment lines only when
    /// asked ([`CsvOptions::comment`]).
    ///
    /// # Errors
    /// As [`Dataset::from_csv_with`].
    pub fn from_csv(path: impl AsRef<Path>) -> Result<Self> {
        Self::from_csv_with(path, &CsvOptions::new())
    }

    /// Loads a CSV file read as `options` say (see [`Dataset::from_reader`]).
    ///
    /// # Errors
    /// [`Error::Io`] if the file cannot be opened or read, otherwise as
    /// [`Dataset::from_reader`].
    pub fn from_csv_with(path: impl AsRef<Path>, options: &CsvOptions) -> Result<Self> {
        let path = path.as_ref();
        Self::from_reader(open(path)?, options, path)
    }

    /// The number of data rows of a CSV file (what [`CsvOptions::rows`] indexes: the header, blank
    /// lines and comment lines are not rows), read without parsing their numbers: the total a set
    /// of processes splits into row ranges.
    ///
    /// # Errors
    /// [`Error::Io`] if the file cannot be read; [`Error::InvalidParameter`] for bad options.
    pub fn count_csv_rows(path: impl AsRef<Path>, options: &CsvOptions) -> Result<usize> {
        let path = path.as_ref();
        let options = options.clone().rows(usize::MAX..);
        options.validate()?;
        let (_, rows) = Loader::new(&options, path).scan(
            BufReader::with_capacity(1 << 16, open(path)?),
            &mut Blocks::default(),
        )?;
        Ok(rows)
    }

    /// The column names of a CSV file's header, read as [`Dataset::from_csv_with`] reads it with
    /// `options` (their target aside): the first line neither blank nor a comment, split at the
    /// delimiter but not between double quotes, each name trimmed of surrounding whitespace, then
    /// of one pair of quotes (what is inside them kept as it is), a leading UTF-8 byte-order mark
    /// skipped; `None` when that line is data (every field a number under [`Header::Detect`]; any
    /// line under [`Header::Absent`]). For comparing the columns of two files, or finding a
    /// target's name, before loading either.
    ///
    /// ```
    /// use ssgp::data::CsvOptions;
    /// use ssgp::Dataset;
    /// let path = std::env::temp_dir().join("ssgp-csv-header-example.csv");
    /// std::fs::write(&path, "\"speed, m/s\",load,y\n1,2,3\n4,5,6\n")?;
    /// let names = Dataset::csv_header(&path, &CsvOptions::new())?;
    /// assert_eq!(names, Some(vec!["speed, m/s".into(), "load".into(), "y".into()]));
    /// std::fs::write(&path, "1,2,3\n4,5,6\n")?;
    /// assert_eq!(Dataset::csv_header(&path, &CsvOptions::new())?, None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`Dataset::from_csv_with`] on that line (under [`Header::Detect`], a line of numbers
    /// and text is an [`Error::Csv`]); [`Error::EmptyCsv`] if there is none.
    pub fn csv_header(path: impl AsRef<Path>, options: &CsvOptions) -> Result<Option<Vec<String>>> {
        let first = FirstLine::read(path.as_ref(), options)?;
        Ok(first.header.then(|| first.names()))
    }

    /// Parses CSV from any reader — a file, a socket, text in memory (`text.as_bytes()`) —
    /// read as `options` say; `source` names it in error messages. One point per line: D inputs
    /// and one target; lines end in `\n`, `\r\n` or a lone `\r` (old Mac files); a leading UTF-8
    /// byte-order mark and blank lines are skipped, and comment lines if
    /// [`CsvOptions::comment`] says so. The inputs are n×D in file order without the
    /// target column. A first line of missing values only (`NA`, `?`, empty fields …) is data,
    /// refused as a later row would be, never dropped as a header.
    ///
    /// Memory: the data's own size 8·n·(D+1) bytes plus 8·n, streamed without a copy of the
    /// text.
    ///
    /// # Errors
    /// - [`Error::InvalidParameter`] for options that cannot work (a delimiter or comment mark
    ///   that is part of a number, an empty row range, a named target with [`Header::Absent`]);
    /// - [`Error::Csv`] naming the source, the 1-based line and the 1-based column of a cell
    ///   that is empty, not a number, NaN or infinite, of a line whose number of fields differs
    ///   from the first line's, of a double quote not closed on its line (a quoted field cannot
    ///   span lines), of a first line with fewer than two fields or without the target column,
    ///   and of a header with an unnamed column (a row index, as pandas' and R's writers put
    ///   first, is refused rather than read as an input); a line starting with `#` that is not
    ///   skipped as a comment is refused as one;
    /// - [`Error::EmptyCsv`] naming the source when it has no data line (empty, blank lines, a
    ///   header alone) or none in the row range;
    /// - [`Error::Allocation`] for a line longer than memory can hold;
    /// - [`Error::Io`] if reading fails.
    pub fn from_reader(
        reader: impl Read,
        options: &CsvOptions,
        source: impl AsRef<Path>,
    ) -> Result<Self> {
        options.validate()?;
        let (x, y) = Loader::new(options, source.as_ref())
            .load(BufReader::with_capacity(1 << 16, reader))?;
        Self::new(x, y)
    }
}

/// Opens the file at `path` for reading.
///
/// # Errors
/// [`Error::Io`] naming the file if it cannot be opened.
fn open(path: &Path) -> Result<File> {
    File::open(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// The first non-blank line of a CSV file, read, split and detected as a header by the loader
/// itself: [`super::MultiDataset::from_csv_with`] finds its target columns in it, so they are
/// the columns [`Dataset::from_csv_with`] then loads.
pub(super) struct FirstLine {
    line: Vec<u8>,
    number: usize,
    columns: usize,
    header: bool,
    delimiter: u8,
}

impl FirstLine {
    /// Reads the first non-blank line of the file at `path` as `options` say (their target
    /// aside).
    ///
    /// # Errors
    /// As [`Dataset::from_csv_with`] on that line; [`Error::EmptyCsv`] if there is none.
    pub(super) fn read(path: &Path, options: &CsvOptions) -> Result<Self> {
        let options = options.clone().target(Target::Last);
        options.validate()?;
        Loader::new(&options, path).first_line(BufReader::with_capacity(1 << 16, open(path)?))
    }

    /// The line's number of fields.
    pub(super) fn columns(&self) -> usize {
        self.columns
    }

    /// The line's fields as text (a header's column names), trimmed and unquoted.
    fn names(&self) -> Vec<String> {
        QuotedFields::new(
            trimmed(&self.line, self.number, self.delimiter),
            self.delimiter,
        )
        .map(|field| String::from_utf8_lossy(field).into_owned())
        .collect()
    }

    /// The zero-based index of the column named `name` in the line, which must be a header.
    ///
    /// # Errors
    /// The reason, for an error, when the line is data or no column or two have that name.
    pub(super) fn named(&self, name: &str) -> std::result::Result<usize, String> {
        let fields = QuotedFields::new(
            trimmed(&self.line, self.number, self.delimiter),
            self.delimiter,
        );
        named_column(fields, name, self.header)
    }
}

/// What the first non-blank line fixes: the number of fields, the target's index, whether the
/// line is a header (its line number if so), and whether that header starts with `#`.
struct Layout {
    columns: usize,
    target: usize,
    header_line: Option<usize>,
    /// The header's line number when it starts with `#` (a comment read as a header?).
    commented_header: Option<usize>,
}

/// One load: the options, the source's name for messages and the longest line it reads.
struct Loader<'a> {
    options: &'a CsvOptions,
    source: &'a Path,
    line_limit: usize,
}

impl<'a> Loader<'a> {
    /// A load of `source` read as `options` say, its lines up to [`LINE_LIMIT`] bytes.
    fn new(options: &'a CsvOptions, source: &'a Path) -> Self {
        Self {
            options,
            source,
            line_limit: LINE_LIMIT,
        }
    }

    /// The lines of `reader`.
    fn lines<R: BufRead>(&self, reader: R) -> Lines<'a, R> {
        Lines {
            reader,
            line: Vec::new(),
            number: 0,
            after_cr: false,
            limit: self.line_limit,
            source: self.source,
            delimiter: self.options.delimiter,
            comment: self.options.comment,
        }
    }

    /// Reads lines of `reader` up to the first one neither blank nor a comment, and its layout.
    ///
    /// # Errors
    /// As [`Loader::layout`]; [`Error::EmptyCsv`] if every line is blank; as [`Lines::next`].
    fn first_line(&self, reader: impl BufRead) -> Result<FirstLine> {
        let mut lines = self.lines(reader);
        while let Some(number) = lines.next()? {
            let line = lines.current();
            if line.is_empty() {
                continue;
            }
            let layout = self.layout(line, number)?;
            return Ok(FirstLine {
                line: lines.line,
                number,
                columns: layout.columns,
                header: layout.header_line.is_some(),
                delimiter: self.options.delimiter,
            });
        }
        Err(self.empty(NO_LINES.into()))
    }

    /// Streams the lines of `reader` into blocks and returns the inputs (n×D) and targets (n).
    fn load(&self, reader: impl BufRead) -> Result<(DMatrix<f64>, DVector<f64>)> {
        let mut blocks = Blocks::default();
        let (layout, rows_seen) = self.scan(reader, &mut blocks)?;
        let Some(layout) = layout else {
            return Err(self.empty(NO_LINES.into()));
        };
        if blocks.rows == 0 {
            return Err(self.empty(match (rows_seen, layout.header_line) {
                (0, Some(line)) => format!("only a header (line {line}), no data lines"),
                _ => format!(
                    "no data rows in the range {} (the source has {rows_seen})",
                    self.options.range_text()
                ),
            }));
        }
        Ok(blocks.into_inputs_and_target(layout.target))
    }

    /// Reads the lines of `reader`, pushing the data rows in the options' range into `blocks`;
    /// returns the layout (if any line was not blank) and the data rows seen (all of them when
    /// the range is open-ended).
    fn scan(&self, reader: impl BufRead, blocks: &mut Blocks) -> Result<(Option<Layout>, usize)> {
        let mut lines = self.lines(reader);
        let mut layout: Option<Layout> = None;
        let mut rows_seen = 0;
        while let Some(number) = lines.next()? {
            let line = lines.current();
            if line.is_empty() {
                continue;
            }
            let columns = match &layout {
                Some(l) => l.columns,
                None => {
                    let l = layout.insert(self.layout(line, number)?);
                    if l.header_line.is_some() {
                        continue;
                    }
                    l.columns
                }
            };
            let row = rows_seen;
            if self.options.end_row.is_some_and(|end| row >= end) {
                break;
            }
            rows_seen += 1;
            if row < self.options.first_row {
                continue;
            }
            blocks.make_room(columns)?;
            blocks
                .push(line, columns, self.options.delimiter)
                .map_err(
                    |reason| match layout.as_ref().and_then(|l| l.commented_header) {
                        Some(h) if row == 0 && line.first() != Some(&COMMENT) => self.error(
                            number,
                            format!(
                                "{reason} (line {h}, read as the header, starts with `#`: if it \
                                 is a comment, say `CsvOptions::comment(b'#')`, or remove it)"
                            ),
                        ),
                        _ => self.refused(line, number, reason),
                    },
                )?;
        }
        Ok((layout, rows_seen))
    }

    /// Reads the first non-blank line (line `number`): its number of fields, whether it is a
    /// header, and the target's index. Detected, the line is a header when none of its fields
    /// is a number and one is text other than a missing-value marker; it is data when it holds
    /// numbers and no such text. Fields are judged trimmed inside their quotes, as numbers are
    /// read: a name of spaces is no name.
    ///
    /// # Errors
    /// [`Error::Csv`] for a double quote not closed on the line, fewer than two fields, a target
    /// that is not among them, and, detecting the header, a line that mixes numbers and text or
    /// holds only missing values.
    fn layout(&self, line: &[u8], number: usize) -> Result<Layout> {
        if let Some(reason) = unclosed_quote(line) {
            return Err(self.refused(line, number, reason));
        }
        let fields = || QuotedFields::new(line, self.options.delimiter);
        let values = || fields().map(<[u8]>::trim_ascii);
        let columns = fields().count();
        let header = match self.options.header {
            Header::Present => true,
            Header::Absent => false,
            Header::Detect => {
                let numbers = values().filter(|f| parse_number(f).is_some()).count();
                let text = values()
                    .find(|f| !f.is_empty() && !is_missing_marker(f) && parse_number(f).is_none());
                match (numbers, text) {
                    (0, Some(_)) => true,
                    (_, None) => {
                        if let (0, Some(first)) = (numbers, values().next()) {
                            return Err(self.refused(
                                line,
                                number,
                                format!(
                                    "{}; a first line of missing values is data, not a header: \
                                     say `Header::Present` if it is one",
                                    field_problem(0, first, false)
                                ),
                            ));
                        }
                        false
                    }
                    (_, Some(text)) => {
                        return Err(self.refused(
                            line,
                            number,
                            format!(
                                "the first line mixes numbers and text (`{}`): a header has no \
                                 numbers and a data row no text; fix the row, or say \
                                 `Header::Present` if the line is a header",
                                shown(text)
                            ),
                        ))
                    }
                }
            }
        };
        if let Some(k) = header
            .then(|| values().position(<[u8]>::is_empty))
            .flatten()
        {
            let index = if k == 0 {
                "; an unnamed first column is likely a row index (pandas' `to_csv()` writes one: \
                 write with `index=False`)"
            } else {
                ""
            };
            return Err(self.refused(
                line,
                number,
                format!(
                    "the header's column {} (zero-based {k}) has no name: a header names every \
                     column{index}; name it, or drop the column",
                    k + 1
                ),
            ));
        }
        if columns < 2 {
            let hint = [b';', b'\t', b'|', b',', b' ']
                .into_iter()
                .find(|&d| d != self.options.delimiter && line.contains(&d))
                .map(|d| {
                    let shown = if d == b'\t' {
                        "\\t".into()
                    } else {
                        (d as char).to_string()
                    };
                    format!(
                        " (the line holds `{shown}`: a file delimited by it needs \
                         `CsvOptions::delimiter(b'{shown}')`)"
                    )
                })
                .unwrap_or_default();
            return Err(self.refused(
                line,
                number,
                format!("{columns} column: need at least one input and a target{hint}"),
            ));
        }
        let target = match &self.options.target {
            Target::Last => columns - 1,
            &Target::Column(k) if k < columns => k,
            &Target::Column(k) => {
                return Err(self.error(
                    number,
                    format!("target column index {k} (zero-based), but {columns} columns"),
                ))
            }
            Target::Named(name) => {
                named_column(fields(), name, header).map_err(|reason| self.error(number, reason))?
            }
        };
        let header_line = header.then_some(number);
        Ok(Layout {
            columns,
            target,
            header_line,
            commented_header: header_line.filter(|_| line.first() == Some(&COMMENT)),
        })
    }

    /// An [`Error::Csv`] refusing line `number` for `reason`, or, if the line starts with `#`,
    /// saying it is likely a comment and what to do instead (what else it holds is beside the
    /// point).
    fn refused(&self, line: &[u8], number: usize, reason: String) -> Error {
        if line.first() != Some(&COMMENT) {
            return self.error(number, reason);
        }
        self.error(
            number,
            format!(
                "`{}` starts with `#`: a comment? comment lines are skipped only when asked: \
                 say `CsvOptions::comment(b'#')`, or remove them",
                shown(line)
            ),
        )
    }

    /// An [`Error::Csv`] at 1-based line `line` of the source.
    fn error(&self, line: usize, reason: String) -> Error {
        Error::Csv {
            path: self.source.to_path_buf(),
            line,
            reason,
        }
    }

    /// An [`Error::EmptyCsv`] for the source.
    fn empty(&self, reason: String) -> Error {
        Error::EmptyCsv {
            path: self.source.to_path_buf(),
            reason,
        }
    }
}

/// A source read one line at a time into one reused buffer, grown fallibly by the pieces the
/// reader holds: lines end in `\n`, `\r\n` or a lone `\r`.
struct Lines<'a, R> {
    reader: R,
    line: Vec<u8>,
    /// The 1-based number of the line in the buffer (0 before the first).
    number: usize,
    /// Whether the last line ended in `\r`, so that a `\n` next ends no other line.
    after_cr: bool,
    /// The longest line read, in bytes.
    limit: usize,
    source: &'a Path,
    /// The field delimiter, which [`trimmed`] leaves at the ends of a line.
    delimiter: u8,
    /// The mark of comment lines, read as blank.
    comment: Option<u8>,
}

impl<R: BufRead> Lines<'_, R> {
    /// Reads the next line into the buffer and returns its 1-based number, or `None` at the end
    /// of the source.
    ///
    /// # Errors
    /// [`Error::Allocation`] for a line longer than the limit or than memory can hold;
    /// [`Error::Io`] if reading fails.
    fn next(&mut self) -> Result<Option<usize>> {
        self.line.clear();
        let mut read = false;
        loop {
            let piece = match self.reader.fill_buf() {
                Ok(piece) => piece,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(source) => {
                    return Err(Error::Io {
                        path: self.source.to_path_buf(),
                        source,
                    })
                }
            };
            let Some(&first) = piece.first() else { break };
            if std::mem::take(&mut self.after_cr) && first == b'\n' {
                self.reader.consume(1);
                continue;
            }
            let end = piece.iter().position(|&b| b == b'\n' || b == b'\r');
            let text = &piece[..end.unwrap_or(piece.len())];
            let bytes = self.line.len().saturating_add(text.len());
            if bytes > self.limit || self.line.try_reserve(text.len()).is_err() {
                return Err(Error::Allocation {
                    what: "a line of the CSV source",
                    bytes,
                });
            }
            self.line.extend_from_slice(text);
            read = true;
            let Some(end) = end else {
                let used = piece.len();
                self.reader.consume(used);
                continue;
            };
            self.after_cr = piece[end] == b'\r';
            self.reader.consume(end + 1);
            break;
        }
        if !read {
            return Ok(None);
        }
        self.number += 1;
        Ok(Some(self.number))
    }

    /// The line last read, as the loader parses it ([`trimmed`]); empty for a comment line.
    fn current(&self) -> &[u8] {
        let line = trimmed(&self.line, self.number, self.delimiter);
        match (line.first(), self.comment) {
            (Some(first), Some(mark)) if *first == mark => &[],
            _ => line,
        }
    }
}

/// Line `number` as the loader parses it: without surrounding whitespace nor, on line 1, a
/// leading byte-order mark — but a tab `delimiter` is kept, so that a tab-separated line
/// starting or ending with an empty field keeps it (runs of spaces separate fields, so the
/// space delimiter is trimmed as whitespace).
fn trimmed(line: &[u8], number: usize, delimiter: u8) -> &[u8] {
    let line = match number {
        1 => line.strip_prefix(BOM).unwrap_or(line),
        _ => line,
    };
    let trims = |b: &u8| b.is_ascii_whitespace() && (*b != delimiter || delimiter == b' ');
    let start = line.iter().position(|b| !trims(b)).unwrap_or(line.len());
    let end = line
        .iter()
        .rposition(|b| !trims(b))
        .map_or(start, |e| e + 1);
    &line[start..end]
}

/// The text between delimiters of a line trimmed of surrounding whitespace; with the space
/// delimiter, the empty text between two spaces of a run is none (runs of spaces separate).
fn pieces(line: &[u8], delimiter: u8) -> impl Iterator<Item = &[u8]> {
    line.split(move |&b| b == delimiter)
        .filter(move |piece| delimiter != b' ' || !piece.is_empty())
}

/// The fields of a line, each trimmed of whitespace and of one pair of surrounding quotes, then
/// of whitespace inside them (`" 1"` is read as ` 1` is). A data line's fields are numbers, so a
/// delimiter between quotes is not looked for: see [`QuotedFields`] for the first line.
fn split(line: &[u8], delimiter: u8) -> impl Iterator<Item = &[u8]> {
    pieces(line, delimiter).map(|piece| unquoted(piece).trim_ascii())
}

/// The fields of the first line, as [`split`] but with no split at a delimiter between double
/// quotes: a header's names may hold one (`"temperature, °C"`). Lazy, so that a line of
/// millions of fields needs no list of them. The line's quotes must be closed
/// ([`unclosed_quote`]), or the rest of the line after an open one is one field.
#[derive(Clone)]
struct QuotedFields<'l> {
    /// The rest of the line, `None` after its last field.
    rest: Option<&'l [u8]>,
    delimiter: u8,
}

impl<'l> QuotedFields<'l> {
    /// The fields of `line` (trimmed of surrounding whitespace).
    fn new(line: &'l [u8], delimiter: u8) -> Self {
        Self {
            rest: Some(line),
            delimiter,
        }
    }
}

impl<'l> Iterator for QuotedFields<'l> {
    type Item = &'l [u8];

    fn next(&mut self) -> Option<&'l [u8]> {
        loop {
            let rest = self.rest?;
            let mut quoted = false;
            let end = rest.iter().position(|&b| {
                quoted ^= b == b'"';
                b == self.delimiter && !quoted
            });
            let (piece, after) = match end {
                Some(i) => (&rest[..i], Some(&rest[i + 1..])),
                None => (rest, None),
            };
            self.rest = after;
            if self.delimiter != b' ' || !piece.is_empty() {
                return Some(unquoted(piece));
            }
        }
    }
}

/// Why a line with a double quote that no later one on the line closes (an odd number of them,
/// as [`QuotedFields`] pairs them) is refused, quoting the line from that quote; `None` if
/// every quote is closed.
fn unclosed_quote(line: &[u8]) -> Option<String> {
    let mut open = None;
    for (i, &b) in line.iter().enumerate() {
        if b == b'"' {
            open = match open {
                None => Some(i),
                Some(_) => None,
            };
        }
    }
    open.map(|i| {
        format!(
            "a double quote is not closed on its line (`{}`): close it, or remove it (a quoted \
             field cannot span lines)",
            shown(&line[i..])
        )
    })
}

/// The zero-based index of the column named `name` among the `fields` of a first line, which
/// must be a `header`. Names match exactly, case and spaces included.
///
/// # Errors
/// The reason, for an error, when the line is data or no column or two have that name (naming
/// the columns whose names differ from it only in case, spaces or a leading `#`).
fn named_column<'f>(
    fields: impl Iterator<Item = &'f [u8]> + Clone,
    name: &str,
    header: bool,
) -> std::result::Result<usize, String> {
    if !header {
        return Err(format!(
            "the target is named `{name}`, but this line is data, not a header"
        ));
    }
    let mut found = fields
        .clone()
        .enumerate()
        .filter(|(_, f)| *f == name.as_bytes())
        .map(|(j, _)| j);
    match (found.next(), found.next()) {
        (Some(j), None) => Ok(j),
        (Some(a), Some(b)) => Err(format!(
            "two columns are named `{name}`: {} and {}",
            a + 1,
            b + 1
        )),
        (None, _) => Err(format!(
            "no column named `{name}` in ({}){}",
            listed(fields.clone()),
            near_misses(fields, name)
        )),
    }
}

/// What a message on a target `name` that no column has adds: the columns whose names differ
/// from it only in case, surrounding whitespace or a leading `#` (as numpy's `savetxt` writes a
/// header), up to [`SHOWN_NAMES`] of them, and the remedy; empty if none.
fn near_misses<'f>(fields: impl Iterator<Item = &'f [u8]>, name: &str) -> String {
    let loosely = |text: &str| text.trim().trim_start_matches('#').trim().to_lowercase();
    let wanted = loosely(name);
    if wanted.is_empty() {
        return String::new();
    }
    let near: Vec<String> = fields
        .enumerate()
        .filter(|(_, f)| loosely(&String::from_utf8_lossy(f)) == wanted)
        .take(SHOWN_NAMES)
        .map(|(j, f)| format!("`{}` (column {})", shown(f), j + 1))
        .collect();
    let verb = match near.len() {
        0 => return String::new(),
        1 => "differs",
        _ => "differ",
    };
    format!(
        "; {} {verb} only in case, spaces or a leading `#`: names match exactly, so write the \
         name as the header does",
        near.join(", ")
    )
}

/// Column names for a message: the first [`SHOWN_NAMES`] of them, and how many there are if
/// more.
fn listed<'f>(fields: impl Iterator<Item = &'f [u8]>) -> String {
    let mut text = String::new();
    let mut count = 0;
    for field in fields {
        if count < SHOWN_NAMES {
            if count > 0 {
                text.push_str(", ");
            }
            text.push_str(&shown(field));
        }
        count += 1;
    }
    if count > SHOWN_NAMES {
        text.push_str(&format!(", … ({count} columns)"));
    }
    text
}

/// A field trimmed of whitespace and of one pair of surrounding quotes.
fn unquoted(field: &[u8]) -> &[u8] {
    let field = field.trim_ascii();
    match field {
        [b'"', inner @ .., b'"'] => inner,
        _ => field,
    }
}

/// What a message on a missing value adds.
const MISSING: &str = " (a missing value? drop the row or fill it in)";

/// Whether a field is a usual mark of a missing value (`NA`, `N/A`, `null`, `None`, `?`, `-`,
/// `.`, any case).
fn is_missing_marker(field: &[u8]) -> bool {
    const MARKERS: [&[u8]; 8] = [
        b"na", b"n/a", b"null", b"none", b"?", b"-", b".", b"missing",
    ];
    MARKERS.iter().any(|m| field.eq_ignore_ascii_case(m))
}

/// Why field `j` (zero-based) of a data line, which is not a finite number, is refused, with a
/// hint at the likely cause; `ends_line` when it is the empty last field of a line that ends with
/// the delimiter.
fn field_problem(j: usize, field: &[u8], ends_line: bool) -> String {
    let column = j + 1;
    let (problem, hint) = match parse_number(field) {
        Some(v) if v.is_nan() => ("is not a finite number", MISSING),
        Some(_) => ("is not a finite number", ""),
        None if ends_line => {
            return format!(
                "column {column}: the line ends with a delimiter (an empty last field): remove \
                 it, or fill in the missing value"
            )
        }
        None if field.is_empty() => return format!("column {column}: empty field{MISSING}"),
        None if is_missing_marker(field) => ("is not a number", MISSING),
        None if decimal_comma(field) => {
            ("is not a number", " (a decimal comma? write it as a point)")
        }
        None => ("is not a number", ""),
    };
    format!("column {column}: `{}` {problem}{hint}", shown(field))
}

/// Whether a field is a number written with a decimal comma (`1,5` where the delimiter is not a
/// comma).
fn decimal_comma(field: &[u8]) -> bool {
    field.iter().filter(|&&b| b == b',').count() == 1
        && parse_number(
            &field
                .iter()
                .map(|&b| if b == b',' { b'.' } else { b })
                .collect::<Vec<_>>(),
        )
        .is_some()
}

/// The number in a field, if it is one (NaN and infinities included).
fn parse_number(field: &[u8]) -> Option<f64> {
    std::str::from_utf8(field).ok()?.parse().ok()
}

/// A field as text for a message, cut to [`SHOWN_CHARS`] characters.
fn shown(field: &[u8]) -> String {
    let text = String::from_utf8_lossy(field);
    match text.char_indices().nth(SHOWN_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.into_owned(),
    }
}

/// The rows loaded so far, in blocks of `block_rows` rows (at most [`BLOCK_ROWS`], and at most
/// [`BLOCK_VALUES`] values) stored column by column in one buffer: block b's column j starts at
/// `(b·columns + j)·block_rows`.
#[derive(Default)]
struct Blocks {
    values: Vec<f64>,
    columns: usize,
    rows: usize,
    block_rows: usize,
}

impl Blocks {
    /// Makes room for one more row of `columns` values: a new block when the last one is full,
    /// allocated fallibly (the block size is fixed by the first row's width).
    ///
    /// # Errors
    /// [`Error::Allocation`] if the buffer cannot grow by a block.
    fn make_room(&mut self, columns: usize) -> Result<()> {
        if self.block_rows == 0 {
            self.block_rows = (BLOCK_VALUES / columns.max(1)).clamp(1, BLOCK_ROWS);
        }
        if !self.rows.is_multiple_of(self.block_rows) {
            return Ok(());
        }
        let block = self.block_rows.saturating_mul(columns);
        let bytes = self
            .values
            .len()
            .saturating_add(block)
            .saturating_mul(std::mem::size_of::<f64>());
        let too_big = || Error::Allocation {
            what: "the CSV load buffer",
            bytes,
        };
        let wanted = self.values.len().checked_add(block).ok_or_else(too_big)?;
        if wanted > self.values.capacity() {
            // Grow geometrically, as `Vec` would, but fallibly; fall back to the exact size.
            let doubled = self.values.capacity().saturating_mul(2).max(wanted);
            if self
                .values
                .try_reserve_exact(doubled - self.values.len())
                .is_err()
            {
                self.values
                    .try_reserve_exact(block)
                    .map_err(|_| too_big())?;
            }
        }
        self.values.resize(wanted, 0.0);
        Ok(())
    }

    /// Parses one data line of `columns` fields into the next row.
    ///
    /// # Errors
    /// The reason, for an [`Error::Csv`], when the line has another number of fields or a field
    /// that is empty, not a number or not finite; first, if so, that a double quote is not closed
    /// on the line (which always makes one of those errors: a field with a quote left in it is no
    /// number).
    fn push(
        &mut self,
        line: &[u8],
        columns: usize,
        delimiter: u8,
    ) -> std::result::Result<(), String> {
        let found = pieces(line, delimiter).count();
        let trailing = line.last() == Some(&delimiter);
        if found != columns {
            if let Some(reason) = unclosed_quote(line) {
                return Err(reason);
            }
            let hint = if trailing && found == columns + 1 {
                " (the line ends with a delimiter: remove it)"
            } else if line.contains(&b'"') {
                " (a delimiter between quotes splits a data line too: numbers need no quotes)"
            } else {
                ""
            };
            let plural = if found == 1 { "" } else { "s" };
            return Err(format!(
                "{found} column{plural}, but the first line has {columns}{hint}"
            ));
        }
        self.columns = columns;
        let run = self.block_rows;
        let r = self.rows % run;
        let base = self.values.len() - run * columns;
        for (j, field) in split(line, delimiter).enumerate() {
            match parse_number(field) {
                Some(v) if v.is_finite() => self.values[base + j * run + r] = v,
                _ => {
                    if let Some(reason) = unclosed_quote(line) {
                        return Err(reason);
                    }
                    let ends_line = trailing && j + 1 == columns && field.is_empty();
                    return Err(field_problem(j, field, ends_line));
                }
            }
        }
        self.rows += 1;
        Ok(())
    }

    /// The inputs (n×D, column-major, every column but `target`) and the targets (n), built in
    /// the load buffer itself: the blocks are rearranged into whole columns, the target column is
    /// copied out and the input columns are moved together.
    fn into_inputs_and_target(self, target: usize) -> (DMatrix<f64>, DVector<f64>) {
        let Self {
            mut values,
            columns,
            rows: n,
            block_rows,
        } = self;
        let blocks = n.div_ceil(block_rows);
        transpose_blocks(&mut values, blocks, columns, block_rows);
        let padded = blocks * block_rows;
        let y = DVector::from_column_slice(&values[target * padded..target * padded + n]);
        for (k, j) in (0..columns).filter(|&j| j != target).enumerate() {
            values.copy_within(j * padded..j * padded + n, k * n);
        }
        values.truncate((columns - 1) * n);
        values.shrink_to_fit();
        (DMatrix::from_vec(n, columns - 1, values), y)
    }
}

/// Rearranges in place `values`, a `blocks`×`columns` grid of runs of `run` values stored run
/// after run row by row, into the same grid stored column by column: run (b, j) moves from
/// `(b·columns + j)·run` to `(j·blocks + b)·run`. With runs of a block's rows, this turns blocks
/// stored column by column into whole columns. Follows the permutation's cycles, moving each run
/// once; the extra memory is one run and one flag per run.
fn transpose_blocks(values: &mut [f64], blocks: usize, columns: usize, run: usize) {
    let runs = blocks * columns;
    let mut done = vec![false; runs];
    let mut carried = vec![0.0; run];
    for start in 0..runs {
        if done[start] {
            continue;
        }
        carried.copy_from_slice(&values[start * run..(start + 1) * run]);
        let mut to = start;
        loop {
            done[to] = true;
            // Run `to` of the column-by-column order is (b, j) = (to % blocks, to / blocks),
            // which sits at b·columns + j in the row-by-row order.
            let from = (to % blocks) * columns + to / blocks;
            if from == start {
                values[to * run..(to + 1) * run].copy_from_slice(&carried);
                break;
            }
            values.copy_within(from * run..(from + 1) * run, to * run);
            to = from;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{rngs::StdRng, Rng, SeedableRng};

    /// Loads `text` with the default options, read in pieces of `capacity` bytes, its lines up to
    /// `limit` bytes.
    fn load(text: &[u8], capacity: usize, limit: usize) -> Result<(DMatrix<f64>, DVector<f64>)> {
        let options = CsvOptions::new();
        let loader = Loader {
            line_limit: limit,
            ..Loader::new(&options, Path::new("t"))
        };
        loader.load(BufReader::with_capacity(capacity, text))
    }

    /// A line longer than the loader may hold (a number without end, a data line or a first line
    /// of delimiters) is an allocation error, whether the line is the first (the multi-output
    /// loader's header) or a later one, and whatever pieces it is read in; one at the limit loads.
    #[test]
    fn a_line_beyond_the_limit_is_an_allocation_error() {
        let digits = vec![b'1'; 1000];
        let row = [b"1,2\n".as_slice(), &[b','; 1000]].concat();
        let commas = vec![b','; 1000];
        for text in [&digits, &row, &commas] {
            for capacity in [1, 7, 64, 4096] {
                let e = load(text, capacity, 100).unwrap_err();
                assert!(
                    matches!(e, Error::Allocation { what: "a line of the CSV source", bytes }
                        if bytes > 100),
                    "{e:?}"
                );
            }
            assert!(matches!(load(text, 64, LINE_LIMIT), Err(Error::Csv { .. })));
        }
        let options = CsvOptions::new();
        let loader = Loader {
            line_limit: 100,
            ..Loader::new(&options, Path::new("t"))
        };
        let header = loader.first_line(BufReader::with_capacity(7, &commas[..]));
        assert!(matches!(header, Err(Error::Allocation { .. })));
        let at_limit = format!("1,{}\n3,4\n", "0".repeat(98));
        assert_eq!(
            load(at_limit.as_bytes(), 7, 100).unwrap().1.as_slice(),
            [0.0, 4.0]
        );
    }

    /// Line ends (`\n`, `\r\n`, a lone `\r`) split between the reader's pieces end one line each.
    #[test]
    fn line_ends_split_between_reads_end_one_line() {
        let good = b"x,y\r\n1,2\r\r\n3,4\n\r5,6\r";
        let bad = b"x,y\r\n1,2\r\r\n3,z\n";
        for capacity in 1..=9 {
            let (x, y) = load(good, capacity, LINE_LIMIT).unwrap();
            assert_eq!(
                (x.as_slice(), y.as_slice()),
                ([1.0, 3.0, 5.0].as_slice(), [2.0, 4.0, 6.0].as_slice())
            );
            let e = load(bad, capacity, LINE_LIMIT).unwrap_err();
            assert!(matches!(e, Error::Csv { line: 4, .. }), "{capacity}: {e}");
        }
    }

    #[test]
    fn transposing_blocks_matches_the_index_formula() {
        let mut rng = StdRng::seed_from_u64(3);
        for _ in 0..200 {
            let (blocks, columns, run) = (
                rng.random_range(1..9),
                rng.random_range(1..7),
                rng.random_range(1..5),
            );
            let len = blocks * columns * run;
            let mut values: Vec<f64> = (0..len).map(|i| i as f64).collect();
            transpose_blocks(&mut values, blocks, columns, run);
            for b in 0..blocks {
                for j in 0..columns {
                    for i in 0..run {
                        let before = (b * columns + j) * run + i;
                        let after = (j * blocks + b) * run + i;
                        assert_eq!(values[after], before as f64, "{blocks}×{columns}×{run}");
                    }
                }
            }
        }
    }
}
