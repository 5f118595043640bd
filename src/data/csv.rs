//! CSV loading with file:line errors.

use super::Dataset;
use crate::error::{Error, Result};
use nalgebra::DMatrix;
use std::path::Path;

impl Dataset {
    /// Loads a comma-separated file with no header, one point per line, the target in the **last**
    /// column. Blank lines are skipped.
    ///
    /// # Errors
    /// [`Error::Io`] if the file cannot be read; [`Error::Csv`] naming the file and line of a
    /// non-number or a line whose number of columns differs from the first line's; then as [`Dataset::new`].
    pub fn from_csv(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse_csv(&text, path)
    }

    /// Parses CSV text (as [`Dataset::from_csv`]); `path` is only used in error messages.
    ///
    /// # Errors
    /// As [`Dataset::from_csv`].
    pub fn parse_csv(text: &str, path: &Path) -> Result<Self> {
        let csv_err = |line: usize, reason: String| Error::Csv {
            path: path.to_path_buf(),
            line,
            reason,
        };
        let mut values: Vec<f64> = Vec::new();
        let mut cols = 0usize;
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() {
                continue;
            }
            let start = values.len();
            for (j, field) in line.split(',').enumerate() {
                let field = field.trim();
                let v: f64 = field.parse().map_err(|_| {
                    csv_err(
                        i + 1,
                        format!("column {}: `{field}` is not a number", j + 1),
                    )
                })?;
                values.push(v);
            }
            let found = values.len() - start;
            if cols == 0 {
                if found < 2 {
                    return Err(csv_err(
                        i + 1,
                        format!("{found} column(s): need at least one input and a target"),
                    ));
                }
                cols = found;
            } else if found != cols {
                return Err(csv_err(
                    i + 1,
                    format!("{found} columns, but the first line has {cols}"),
                ));
            }
        }
        if cols == 0 {
            return Err(Error::EmptyData {
                what: "the CSV file has no data lines",
            });
        }
        let n = values.len() / cols;
        let all = DMatrix::from_row_slice(n, cols, &values);
        let x = all.columns(0, cols - 1).into_owned();
        let y = all.column(cols - 1).into_owned();
        Self::new(x, y)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_errors_name_file_and_line() {
        let p = Path::new("f.csv");
        let ok = Dataset::parse_csv("1,2,3\n\n4,5,6\n", p).unwrap();
        assert_eq!((ok.len(), ok.dim()), (2, 2));
        assert_eq!(ok.y()[1], 6.0);
        let e = Dataset::parse_csv("1,2,3\n4,x,6\n", p)
            .unwrap_err()
            .to_string();
        assert!(e.contains("f.csv:2") && e.contains("`x`"), "{e}");
        let e = Dataset::parse_csv("1,2,3\n4,5\n", p)
            .unwrap_err()
            .to_string();
        assert!(e.contains("f.csv:2") && e.contains("2 columns"), "{e}");
        assert!(matches!(
            Dataset::parse_csv("", p),
            Err(Error::EmptyData { .. })
        ));
        assert!(matches!(
            Dataset::parse_csv("1,nan\n", p),
            Err(Error::NonFinite { .. })
        ));
    }
}
