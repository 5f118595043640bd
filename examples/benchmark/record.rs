//! The benchmark's records: one fit's figures (or its error) as a JSON object and as a line of
//! `runs.csv`, and `runs.csv` read back.
//!
//! `runs.csv` has a header naming its columns: the 13 of the first version (`method` …
//! `evaluations`), then `error`, `termination` and `diagnosis` (the fit's
//! `TrainingSummary::diagnosis`: its LOO and held-out calibration and its flags). Reading goes by
//! the header's names, so files of earlier versions (13 or 15 columns) still read. Text fields holding a
//! comma, a quote or a line break are quoted, with quotes doubled (RFC 4180).

use super::support::{size_for, Run};
use std::error::Error;
use std::fmt::Display;
use std::str::FromStr;

/// The columns of `runs.csv`, in the order written.
const COLUMNS: [&str; 16] = [
    "method",
    "basis",
    "m",
    "seed",
    "n_train",
    "n_test",
    "nmse",
    "mnlp",
    "nlml",
    "train_seconds",
    "predict_seconds",
    "iterations",
    "evaluations",
    "error",
    "termination",
    "diagnosis",
];

/// How many of [`COLUMNS`] every `runs.csv` has: the first version's.
const REQUIRED: usize = 13;

/// One field's value.
enum Value {
    /// A name or a message: quoted in JSON, and in CSV when it needs it.
    Text(String),
    /// A number, as written.
    Number(String),
    /// Nothing: `null` in JSON, an empty CSV field.
    Absent,
}

impl Run {
    /// The row of a fit of `method` at `basis` with `seed` that failed with `error`.
    pub fn failed(
        method: &str,
        basis: usize,
        seed: u64,
        (n_train, n_test): (usize, usize),
        error: &dyn Error,
    ) -> Self {
        let m = size_for(method, basis);
        Self {
            method: method.to_string(),
            basis: m.map(|_| basis),
            m,
            seed,
            n_train,
            n_test,
            nmse: f64::NAN,
            mnlp: f64::NAN,
            nlml: f64::NAN,
            train_seconds: f64::NAN,
            predict_seconds: f64::NAN,
            iterations: 0,
            evaluations: 0,
            termination: String::new(),
            diagnostic: String::new(),
            error: Some(error.to_string()),
        }
    }

    /// The value of every column of [`COLUMNS`], in order; an error row has no figures.
    fn values(&self) -> [Value; 16] {
        let ok = self.error.is_none();
        let size = |v: Option<usize>| v.map_or(Value::Absent, |v| Value::Number(v.to_string()));
        let float = |v: f64, text: String| {
            if ok && v.is_finite() {
                Value::Number(text)
            } else {
                Value::Absent
            }
        };
        let count = |v: String| if ok { Value::Number(v) } else { Value::Absent };
        [
            Value::Text(self.method.clone()),
            size(self.basis),
            size(self.m),
            Value::Number(self.seed.to_string()),
            Value::Number(self.n_train.to_string()),
            Value::Number(self.n_test.to_string()),
            float(self.nmse, self.nmse.to_string()),
            float(self.mnlp, self.mnlp.to_string()),
            float(self.nlml, self.nlml.to_string()),
            float(self.train_seconds, format!("{:.3}", self.train_seconds)),
            float(self.predict_seconds, format!("{:.3}", self.predict_seconds)),
            count(self.iterations.to_string()),
            count(self.evaluations.to_string()),
            self.error.clone().map_or(Value::Absent, Value::Text),
            if ok {
                Value::Text(self.termination.clone())
            } else {
                Value::Absent
            },
            if ok && !self.diagnostic.is_empty() {
                Value::Text(self.diagnostic.clone())
            } else {
                Value::Absent
            },
        ]
    }

    /// The run as one JSON object with the keys of `runs.csv`'s columns; absent values are `null`
    /// (written by serde_json).
    pub fn json(&self) -> String {
        let object: serde_json::Map<String, serde_json::Value> = COLUMNS
            .iter()
            .zip(self.values())
            .map(|(k, v)| {
                let v = match v {
                    Value::Text(t) => serde_json::Value::String(t),
                    Value::Number(n) => serde_json::from_str(&n).unwrap_or(serde_json::Value::Null),
                    Value::Absent => serde_json::Value::Null,
                };
                (k.to_string(), v)
            })
            .collect();
        serde_json::Value::Object(object).to_string()
    }
}

/// `runs.csv`: the header and one line per run, ending in a line break.
pub fn to_csv(runs: &[Run]) -> String {
    let mut out = COLUMNS.join(",") + "\n";
    for run in runs {
        let fields: Vec<String> = run
            .values()
            .into_iter()
            .map(|v| match v {
                Value::Text(t) if t.contains([',', '"', '\n', '\r']) => {
                    format!("\"{}\"", t.replace('"', "\"\""))
                }
                Value::Text(t) | Value::Number(t) => t,
                Value::Absent => String::new(),
            })
            .collect();
        out += &fields.join(",");
        out.push('\n');
    }
    out
}

/// The runs of a `runs.csv` written by [`to_csv`] or by earlier versions (13 or 15 columns); `source`
/// names it in errors, which give the line.
///
/// # Errors
/// A header that lacks one of the first 13 columns or has an unknown or repeated one, a line with
/// another number of fields than the header, a field that does not parse, an unclosed quote.
pub fn from_csv(text: &str, source: &str) -> Result<Vec<Run>, Box<dyn Error>> {
    let records = records(text).map_err(|e| format!("{source}:{e}"))?;
    let Some(((_, header), rows)) = records.split_first() else {
        return Err(format!("{source}: no header line").into());
    };
    let mut index = [None; COLUMNS.len()];
    for (i, name) in header.iter().enumerate() {
        let name = name.trim();
        let Some(k) = COLUMNS.iter().position(|c| *c == name) else {
            return Err(format!(
                "{source}:1: unknown column `{name}` (expected the columns {COLUMNS:?})"
            )
            .into());
        };
        if index[k].replace(i).is_some() {
            return Err(format!("{source}:1: column `{name}` appears twice").into());
        }
    }
    if let Some(k) = index[..REQUIRED].iter().position(Option::is_none) {
        return Err(format!("{source}:1: no column `{}`", COLUMNS[k]).into());
    }
    rows.iter()
        .map(|(line, fields)| {
            if fields.len() != header.len() {
                return Err(format!(
                    "{source}:{line}: {} fields, but the header has {}",
                    fields.len(),
                    header.len()
                )
                .into());
            }
            parse_row(fields, &index).map_err(|e| format!("{source}:{line}: {e}").into())
        })
        .collect()
}

/// One run from its fields, `index[k]` being the field of `COLUMNS[k]` (the first 13 present).
/// An error row has no figures: its empty fields read as NaN, or 0 for the counts.
fn parse_row(fields: &[String], index: &[Option<usize>; COLUMNS.len()]) -> Result<Run, String> {
    let get = |k: usize| index[k].map_or("", |i| fields[i].as_str());
    let error = Some(get(13)).filter(|e| !e.is_empty()).map(str::to_string);
    let failed = error.is_some();
    let figure = |k: usize| parse(k, get(k), failed.then_some(f64::NAN));
    let size = |k: usize| {
        Some(get(k).trim())
            .filter(|s| !s.is_empty())
            .map(|s| parse(k, s, None))
            .transpose()
    };
    Ok(Run {
        method: get(0).trim().to_string(),
        basis: size(1)?,
        m: size(2)?,
        seed: parse(3, get(3), None)?,
        n_train: parse(4, get(4), None)?,
        n_test: parse(5, get(5), None)?,
        nmse: figure(6)?,
        mnlp: figure(7)?,
        nlml: figure(8)?,
        train_seconds: figure(9)?,
        predict_seconds: figure(10)?,
        iterations: parse(11, get(11), failed.then_some(0))?,
        evaluations: parse(12, get(12), failed.then_some(0))?,
        termination: get(14).to_string(),
        diagnostic: get(15).to_string(),
        error,
    })
}

/// The field `s` of column `COLUMNS[k]` as a `T`; an empty field is `absent` if that is given.
fn parse<T: FromStr>(k: usize, s: &str, absent: Option<T>) -> Result<T, String>
where
    T::Err: Display,
{
    match (s.trim(), absent) {
        ("", Some(v)) => Ok(v),
        (s, _) => s
            .parse()
            .map_err(|e| format!("column `{}`: `{s}`: {e}", COLUMNS[k])),
    }
}

/// The records of CSV text, each with the (1-based) line it starts on; blank lines are skipped.
/// Fields may be quoted (RFC 4180: quotes doubled inside, commas and line breaks allowed).
///
/// # Errors
/// `LINE: reason` for a quote inside an unquoted field, text after a closing quote, or a quoted
/// field left open.
fn records(text: &str) -> Result<Vec<(usize, Vec<String>)>, String> {
    let mut out = Vec::new();
    let mut fields = Vec::new();
    let mut field = String::new();
    let (mut quoted, mut was_quoted) = (false, false);
    let (mut line, mut start) = (1, 1);
    let mut chars = text.chars().peekable();
    let mut end_record = |fields: &mut Vec<String>, was_quoted: bool, start: usize| {
        let blank = fields.len() == 1 && !was_quoted && fields[0].trim().is_empty();
        if !blank {
            out.push((start, std::mem::take(fields)));
        }
        fields.clear();
    };
    while let Some(c) = chars.next() {
        if quoted {
            match c {
                '"' if chars.peek() == Some(&'"') => {
                    chars.next();
                    field.push('"');
                }
                '"' => quoted = false,
                c => {
                    if c == '\n' {
                        line += 1;
                    }
                    field.push(c);
                }
            }
            continue;
        }
        match c {
            ',' => {
                fields.push(std::mem::take(&mut field));
                was_quoted = false;
            }
            '\r' if chars.peek() == Some(&'\n') => {}
            '\n' => {
                fields.push(std::mem::take(&mut field));
                end_record(&mut fields, was_quoted, start);
                was_quoted = false;
                line += 1;
                start = line;
            }
            c if was_quoted && !c.is_whitespace() => {
                return Err(format!("{line}: text after a closing quote"));
            }
            _ if was_quoted => {}
            '"' if field.trim().is_empty() => {
                field.clear();
                quoted = true;
                was_quoted = true;
            }
            '"' => return Err(format!("{line}: a quote inside an unquoted field")),
            c => field.push(c),
        }
    }
    if quoted {
        return Err(format!("{start}: a quoted field is not closed"));
    }
    if !fields.is_empty() || !field.is_empty() || was_quoted {
        fields.push(field);
        end_record(&mut fields, was_quoted, start);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The head of `docs/kin40k/runs.csv`, written by the first version: 13 columns.
    const OLD: &str = "\
method,basis,m,seed,n_train,n_test,nmse,mnlp,nlml,train_seconds,predict_seconds,iterations,evaluations
ssgp,50,25,1,10000,30000,0.04590873107166003,-0.12451257840502292,-1453.0648491167121,8.890,0.017,500,943

full,,,1,10000,30000,0.013735716634386232,-0.7985800211848081,-5431.13,26.170,55.201,36,90
";

    fn run(method: &str, termination: &str) -> Run {
        Run {
            method: method.into(),
            basis: Some(100),
            m: size_for(method, 100),
            seed: 3,
            n_train: 300,
            n_test: 200,
            nmse: 0.012_345_678_901_234_5,
            mnlp: -0.75,
            nlml: -123.5,
            train_seconds: 1.25,
            predict_seconds: 0.5,
            iterations: 40,
            evaluations: 99,
            termination: termination.into(),
            diagnostic: String::new(),
            error: None,
        }
    }

    #[test]
    fn reads_the_first_versions_13_columns() {
        let runs = from_csv(OLD, "old.csv").unwrap();
        assert_eq!(runs.len(), 2);
        let (s, f) = (&runs[0], &runs[1]);
        assert_eq!(
            (s.method.as_str(), s.basis, s.m, s.seed),
            ("ssgp", Some(50), Some(25), 1)
        );
        assert_eq!((s.n_train, s.n_test), (10000, 30000));
        assert_eq!(s.nmse, 0.04590873107166003);
        assert_eq!(s.nlml, -1453.0648491167121);
        assert_eq!((s.iterations, s.evaluations), (500, 943));
        assert_eq!((s.termination.as_str(), &s.error), ("", &None));
        assert_eq!((f.method.as_str(), f.basis, f.m), ("full", None, None));
        assert_eq!(f.predict_seconds, 55.201);
    }

    #[test]
    fn writes_and_reads_back_terminations_and_error_rows() {
        let io = std::io::Error::other("bad \"pivot\", line 1\nand a second line");
        let mut diagnosed = run("ssgp", "evaluation budget spent");
        diagnosed.diagnostic =
            "LOO mean z² 0.957, MNLP -0.750, NMSE 0.0163; held out (20 rows): mean z² 1.508".into();
        let runs = vec![
            diagnosed,
            run(
                "ssgp-mix",
                "failed: line search: no step, \"σ = 0.1\", tried 20",
            ),
            run("full", "converged (flat objective)"),
            Run::failed("fitc", 100_000, 2, (300, 200), &io),
        ];
        let text = to_csv(&runs);
        assert!(text.starts_with(&(COLUMNS.join(",") + "\n")));
        assert!(text.contains(",\"failed: line search: no step, \"\"σ = 0.1\"\", tried 20\",\n"));
        let back = from_csv(&text, "new.csv").unwrap();
        assert_eq!(back.len(), runs.len());
        assert_eq!(to_csv(&back), text, "written again, the same text");
        assert_eq!(back[0].nmse, runs[0].nmse, "numbers round-trip exactly");
        assert_eq!(back[1].termination, runs[1].termination);
        assert_eq!(
            back[0].diagnostic, runs[0].diagnostic,
            "the diagnosis is kept"
        );
        // A file of the version before the diagnosis (15 columns) still reads.
        let fifteen: String = to_csv(&runs[1..3])
            .lines()
            .map(|l| {
                l.trim_end_matches(",diagnosis")
                    .trim_end_matches(',')
                    .to_string()
                    + "\n"
            })
            .collect();
        let earlier = from_csv(&fifteen, "15.csv").unwrap();
        assert_eq!(earlier[0].termination, runs[1].termination);
        assert!(earlier[0].diagnostic.is_empty());
        assert_eq!(back[1].m, Some(50));
        let e = &back[3];
        assert_eq!(
            e.error.as_deref(),
            Some("bad \"pivot\", line 1\nand a second line")
        );
        assert_eq!((e.basis, e.m, e.seed), (Some(100_000), Some(100_000), 2));
        assert!(e.nmse.is_nan() && e.mnlp.is_nan() && e.termination.is_empty());
    }

    #[test]
    fn json_objects_parse_with_every_column() {
        let io = std::io::Error::other("tab\there, \"quoted\" \\ and\nnewline");
        for r in [
            run("ssgp", "failed: evaluation: \"x\""),
            Run::failed("fitc", 50, 1, (10, 5), &io),
        ] {
            let v: serde_json::Value = serde_json::from_str(&r.json()).unwrap();
            let mut keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
            let mut expected = COLUMNS.to_vec();
            keys.sort_unstable();
            expected.sort_unstable();
            assert_eq!(keys, expected);
            assert_eq!(v["method"], r.method.as_str());
            match &r.error {
                Some(e) => {
                    assert_eq!(v["error"], e.as_str());
                    assert!(v["nmse"].is_null() && v["termination"].is_null());
                }
                None => {
                    assert_eq!(v["termination"], r.termination.as_str());
                    assert_eq!(v["nmse"].as_f64(), Some(r.nmse));
                    assert!(v["error"].is_null());
                }
            }
        }
    }

    #[test]
    fn malformed_files_are_errors_naming_the_line() {
        let header = COLUMNS[..REQUIRED].join(",");
        let cases = [
            ("", "x.csv: no header line"),
            ("method,basis\nssgp,50\n", "x.csv:1: no column `m`"),
            (
                &format!("{header},colour\n"),
                "x.csv:1: unknown column `colour`",
            ),
            (
                &format!("{header},error,error\n"),
                "x.csv:1: column `error` appears twice",
            ),
            (
                &format!("{header}\n\nssgp,50,25,1\n"),
                "x.csv:3: 4 fields, but the header has 13",
            ),
            (
                &format!("{header}\nssgp,50,25,1,10,5,abc,0,0,0,0,1,1\n"),
                "x.csv:2: column `nmse`: `abc`: invalid float literal",
            ),
            (
                &format!("{header}\nssgp,50,25,1,10,5,,0,0,0,0,1,1\n"),
                "x.csv:2: column `nmse`: ``: cannot parse float from empty string",
            ),
            (
                &format!("{header},error\nssgp,50,25,1,10,5,1,0,0,0,0,1,1,\"open\n"),
                "x.csv:2: a quoted field is not closed",
            ),
            (
                &format!("{header},error\nssgp,50,25,1,10,5,1,0,0,0,0,1,1,a\"b\n"),
                "x.csv:2: a quote inside an unquoted field",
            ),
        ];
        for (text, message) in cases {
            let e = from_csv(text, "x.csv").unwrap_err().to_string();
            assert!(
                e.starts_with(message),
                "`{e}` should start with `{message}`"
            );
        }
    }
}
