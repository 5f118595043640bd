//! Code shared by the `kin40k` and `benchmark` examples: building each method at a number of
//! basis functions, timing a fit and its predictions, progress on stderr, and the plots.

#![allow(dead_code)]

use plotters::prelude::*;
use ssgp::fitc::Fitc;
use ssgp::full_gp::FullGp;
use ssgp::metrics::{mnlp, nmse};
use ssgp::optim::{Observer, Progress};
use ssgp::ssgp::Ssgp;
use ssgp::{Dataset, Regressor};
use std::error::Error;
use std::sync::Arc;
use std::time::Instant;

/// The methods of the paper's comparison (§5.2).
pub const METHODS: [&str; 4] = ["ssgp", "ssgp-fixed", "fitc", "full"];

/// Settings shared by every fit of a run.
#[derive(Clone, Debug)]
pub struct Settings {
    /// argmin iterations (line searches) per fit.
    pub iterations: u64,
    /// Objective evaluations per fit.
    pub evaluations: usize,
    /// Lower bound on σn² (0 for none).
    pub noise_floor: f64,
    /// Points the full GP learns its hyperparameters on (it then conditions on all).
    pub full_subset: usize,
    /// Threads (0 = all cores).
    pub threads: usize,
    /// Print optimiser progress to stderr.
    pub progress: bool,
}

impl Default for Settings {
    /// The original code's budget (1000 evaluations, about 500 line searches), no noise floor,
    /// the full GP's hyperparameters from 2000 points, all cores, progress shown.
    fn default() -> Self {
        Self {
            iterations: 500,
            evaluations: 1000,
            noise_floor: 0.0,
            full_subset: 2000,
            threads: 0,
            progress: true,
        }
    }
}

/// One fitted model's figures.
#[derive(Clone, Debug, Default)]
pub struct Run {
    pub method: String,
    pub basis: Option<usize>,
    pub m: Option<usize>,
    pub seed: u64,
    pub n_train: usize,
    pub n_test: usize,
    pub nmse: f64,
    pub mnlp: f64,
    pub nlml: f64,
    pub train_seconds: f64,
    pub predict_seconds: f64,
    pub iterations: u64,
    pub evaluations: usize,
}

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

/// An observer printing iteration, evaluations and evidence to stderr every 10 iterations.
pub fn progress_printer(label: String) -> Observer {
    let start = Instant::now();
    Arc::new(move |p: &Progress| {
        if p.iteration == 1 || p.iteration % 10 == 0 {
            eprintln!(
                "  {label:<22} iter {:>4}  evals {:>4}  −log p(y|θ) {:>12.3}  |∇| {:>10.3e}  {:>6.1}s",
                p.iteration,
                p.evaluations,
                p.best_value,
                p.gradient_norm,
                start.elapsed().as_secs_f64()
            );
        }
    })
}

/// Number of spectral points (SSGP) or pseudo-inputs (FITC) for a number of basis functions.
pub fn size_for(method: &str, basis: usize) -> Option<usize> {
    match method {
        "ssgp" | "ssgp-fixed" => Some((basis / 2).max(1)),
        "fitc" => Some(basis),
        _ => None,
    }
}

/// The configured model for `method` at `basis` basis functions.
pub fn build(
    method: &str,
    basis: usize,
    seed: u64,
    s: &Settings,
) -> Result<Box<dyn Regressor>, Box<dyn Error>> {
    let label = match size_for(method, basis) {
        Some(m) => format!("{method} m={m}"),
        None => method.to_string(),
    };
    let observer = s.progress.then(|| progress_printer(label));
    let model: Box<dyn Regressor> = match method {
        "ssgp" | "ssgp-fixed" => {
            let mut p = Ssgp::params((basis / 2).max(1))
                .seed(seed)
                .fixed_spectral_points(method == "ssgp-fixed")
                .max_iterations(s.iterations)
                .max_evaluations(s.evaluations)
                .noise_floor(s.noise_floor)
                .threads(s.threads);
            if let Some(o) = observer {
                p = p.observer(o);
            }
            Box::new(p)
        }
        "fitc" => {
            let mut p = Fitc::params(basis)
                .seed(seed)
                .max_iterations(s.iterations)
                .max_evaluations(s.evaluations)
                .noise_floor(s.noise_floor)
                .threads(s.threads);
            if let Some(o) = observer {
                p = p.optim(ssgp::OptimConfig {
                    max_iterations: s.iterations,
                    max_evaluations: s.evaluations,
                    observer: Some(o),
                    ..Default::default()
                });
            }
            Box::new(p)
        }
        "full" => {
            let mut p = FullGp::params()
                .seed(seed)
                .max_iterations(s.iterations)
                .max_evaluations(s.evaluations)
                .noise_floor(s.noise_floor)
                .threads(s.threads)
                .hyperparameter_subset(Some(s.full_subset));
            if let Some(o) = observer {
                p = p.optim(ssgp::OptimConfig {
                    max_iterations: s.iterations,
                    max_evaluations: s.evaluations,
                    observer: Some(o),
                    ..Default::default()
                });
            }
            Box::new(p)
        }
        other => {
            return Err(format!("unknown method `{other}` (expected one of {METHODS:?})").into())
        }
    };
    Ok(model)
}

/// Fits `method` at `basis` on `train`, predicts `test`, and measures it.
pub fn run(
    method: &str,
    basis: usize,
    seed: u64,
    s: &Settings,
    train: &Dataset,
    test: &Dataset,
) -> Result<Run, Box<dyn Error>> {
    let model = build(method, basis, seed, s)?;
    let t0 = Instant::now();
    let fitted = model.fit_boxed(train)?;
    let train_seconds = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    let pred = fitted.predict(test.x())?;
    let predict_seconds = t1.elapsed().as_secs_f64();
    let summary = fitted.training();
    let m = size_for(method, basis);
    Ok(Run {
        method: method.to_string(),
        basis: m.map(|_| basis),
        m,
        seed,
        n_train: train.len(),
        n_test: test.len(),
        nmse: nmse(test.y(), &pred, train.y_mean())?,
        mnlp: mnlp(test.y(), &pred)?,
        nlml: fitted.neg_log_evidence(),
        train_seconds,
        predict_seconds,
        iterations: summary.iterations,
        evaluations: summary.evaluations,
    })
}

/// Mean of `value` over the runs of `method` at each number of basis functions, sorted by basis.
pub fn means(runs: &[Run], method: &str, value: fn(&Run) -> f64) -> Vec<(f64, f64)> {
    let mut bases: Vec<usize> = runs
        .iter()
        .filter(|r| r.method == method)
        .filter_map(|r| r.basis)
        .collect();
    bases.sort_unstable();
    bases.dedup();
    bases
        .into_iter()
        .map(|b| {
            let v: Vec<f64> = runs
                .iter()
                .filter(|r| r.method == method && r.basis == Some(b))
                .map(value)
                .collect();
            (b as f64, v.iter().sum::<f64>() / v.len() as f64)
        })
        .collect()
}

/// A plot in the paper's style: `value` against the number of basis functions (log x axis; log y
/// axis when `log_y`), one line per method (mean over repetitions), the full GP as a horizontal line.
pub fn plot(
    path: &str,
    title: &str,
    runs: &[Run],
    value: fn(&Run) -> f64,
    log_y: bool,
) -> Result<(), Box<dyn Error>> {
    let all: Vec<f64> = runs.iter().map(value).filter(|v| v.is_finite()).collect();
    let bases: Vec<f64> = runs
        .iter()
        .filter_map(|r| r.basis)
        .map(|b| b as f64)
        .collect();
    if all.is_empty() {
        return Ok(());
    }
    let (lo, hi) = all
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
            (a.min(v), b.max(v))
        });
    let (bx_lo, bx_hi) = if bases.is_empty() {
        (10.0, 1000.0)
    } else {
        let lo = bases.iter().cloned().fold(f64::INFINITY, f64::min);
        let hi = bases.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        (lo / 1.3, hi * 1.3)
    };
    let root = SVGBackend::new(path, (640, 480)).into_drawing_area();
    root.fill(&WHITE)?;
    let colors = [BLUE, RED, GREEN, BLACK];
    let x_range = (bx_lo..bx_hi).log_scale();
    if log_y {
        let y_range = (lo.max(1e-12) / 1.3..hi * 1.3).log_scale();
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(35)
            .y_label_area_size(60)
            .build_cartesian_2d(x_range, y_range)?;
        finish(&mut chart, title, runs, value, &colors, bx_lo, bx_hi)?;
    } else {
        let pad = 0.1 * (hi - lo).max(1e-3);
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(35)
            .y_label_area_size(60)
            .build_cartesian_2d(x_range, (lo - pad)..(hi + pad))?;
        finish(&mut chart, title, runs, value, &colors, bx_lo, bx_hi)?;
    }
    root.present()?;
    Ok(())
}

/// Axes, the lines and the legend of a plot.
fn finish<'a, DB: DrawingBackend + 'a, X, Y>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
    title: &str,
    runs: &[Run],
    value: fn(&Run) -> f64,
    colors: &[RGBColor],
    bx_lo: f64,
    bx_hi: f64,
) -> Result<(), Box<dyn Error>>
where
    DB::ErrorType: 'static,
    X: plotters::coord::ranged1d::Ranged<ValueType = f64>
        + plotters::coord::ranged1d::ValueFormatter<f64>,
    Y: plotters::coord::ranged1d::Ranged<ValueType = f64>
        + plotters::coord::ranged1d::ValueFormatter<f64>,
{
    chart
        .configure_mesh()
        .x_desc("number of basis functions")
        .y_desc(title)
        .x_label_formatter(&|v| format!("{v:.0}"))
        .y_label_formatter(&|v| format!("{v:.3}"))
        .draw()?;
    draw_lines(chart, runs, value, colors, bx_lo, bx_hi)?;
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerLeft)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}

fn draw_lines<DB: DrawingBackend, X, Y>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<X, Y>>,
    runs: &[Run],
    value: fn(&Run) -> f64,
    colors: &[RGBColor],
    bx_lo: f64,
    bx_hi: f64,
) -> Result<(), Box<dyn Error>>
where
    DB::ErrorType: 'static,
    X: plotters::coord::ranged1d::Ranged<ValueType = f64>,
    Y: plotters::coord::ranged1d::Ranged<ValueType = f64>,
{
    for (i, method) in METHODS.iter().enumerate() {
        let color = colors[i % colors.len()];
        if *method == "full" {
            let v: Vec<f64> = runs
                .iter()
                .filter(|r| r.method == "full")
                .map(value)
                .collect();
            if v.is_empty() {
                continue;
            }
            let mean = v.iter().sum::<f64>() / v.len() as f64;
            chart
                .draw_series(LineSeries::new(
                    vec![(bx_lo, mean), (bx_hi, mean)],
                    color.stroke_width(2),
                ))?
                .label("full GP")
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                });
            continue;
        }
        let pts = means(runs, method, value);
        if pts.is_empty() {
            continue;
        }
        chart
            .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))?
            .label(*method)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
        chart.draw_series(pts.into_iter().map(|p| Circle::new(p, 4, color.filled())))?;
    }
    Ok(())
}
