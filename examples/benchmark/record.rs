//! The benchmark's records: one fitted model's figures as a CSV line or a JSON object, and back.

use super::support::Run;
use std::error::Error;

impl Run {
    /// Parses a line written by [`Run::csv`].
    pub fn from_csv(line: &str) -> Result<Self, Box<dyn Error>> {
        let f: Vec<&str> = line.trim().split(',').collect();
        if f.len() != 13 {
            return Err(format!("expected 13 fields in `{line}`").into());
        }
        let opt = |s: &str| -> Result<Option<usize>, Box<dyn Error>> {
            Ok(if s.is_empty() { None } else { Some(s.parse()?) })
        };
        Ok(Self {
            method: f[0].to_string(),
            basis: opt(f[1])?,
            m: opt(f[2])?,
            seed: f[3].parse()?,
            n_train: f[4].parse()?,
            n_test: f[5].parse()?,
            nmse: f[6].parse()?,
            mnlp: f[7].parse()?,
            nlml: f[8].parse()?,
            train_seconds: f[9].parse()?,
            predict_seconds: f[10].parse()?,
            iterations: f[11].parse()?,
            evaluations: f[12].parse()?,
        })
    }

    /// (name, value) of every field, in CSV column order; `none` stands for an absent size.
    fn fields(&self, none: &str) -> [(&'static str, String); 13] {
        let opt = |v: Option<usize>| v.map_or(none.to_string(), |v| v.to_string());
        [
            ("method", self.method.clone()),
            ("basis", opt(self.basis)),
            ("m", opt(self.m)),
            ("seed", self.seed.to_string()),
            ("n_train", self.n_train.to_string()),
            ("n_test", self.n_test.to_string()),
            ("nmse", self.nmse.to_string()),
            ("mnlp", self.mnlp.to_string()),
            ("nlml", self.nlml.to_string()),
            ("train_seconds", format!("{:.3}", self.train_seconds)),
            ("predict_seconds", format!("{:.3}", self.predict_seconds)),
            ("iterations", self.iterations.to_string()),
            ("evaluations", self.evaluations.to_string()),
        ]
    }

    /// The run as one JSON object (no external crate: the fields are numbers and plain names).
    pub fn json(&self) -> String {
        let body: Vec<String> = self
            .fields("null")
            .iter()
            .map(|(k, v)| match *k {
                "method" => format!("\"{k}\":\"{v}\""),
                _ => format!("\"{k}\":{v}"),
            })
            .collect();
        format!("{{{}}}", body.join(","))
    }

    /// CSV header matching [`Run::csv`].
    pub fn csv_header() -> String {
        Run::default()
            .fields("")
            .iter()
            .map(|(k, _)| *k)
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The run as a CSV line.
    pub fn csv(&self) -> String {
        self.fields("")
            .iter()
            .map(|(_, v)| v.as_str())
            .collect::<Vec<_>>()
            .join(",")
    }
}
