//! The sinc toy of the paper's Figure 2: 100 noisy observations of sinc(x) on [−1, 5].
//!
//! Fits SSGP with 10 learned spectral points (20 basis functions), SSGP with the paper's 20 fixed
//! spectral points, FITC with 20 learned pseudo-inputs and the full GP, prints NMSE and MNLP on a
//! 1000-point noisy test grid, and draws three panels: the posterior mean, the 95% band of f*
//! (noise-free, as in the paper) and the data, with three posterior samples for SSGP and the
//! pseudo-inputs for FITC (after Figure 2).
//!
//! `cargo run --release --example sinc [-- --out FILE.svg]` (default `target/sinc.svg` in the
//! crate's directory, from wherever it runs; a relative `--out` is taken from the current
//! directory, and its directory must exist: it is checked before any fit; `--help` lists the
//! flags).

#[path = "cli/mod.rs"]
mod cli;
use plotters::prelude::*;
use rand::rngs::StdRng;
use rand::SeedableRng;
use ssgp::data::sinc_data;
use ssgp::metrics::{mnlp, nmse};
use ssgp::ssgp::{FittedSsgp, Ssgp};
use ssgp::{Dataset, Fitc, FittedFitc, FittedRegressor, FullGp, Predictive};
use std::error::Error;
use std::fs::OpenOptions;
use std::path::{Path, PathBuf};

const HELP: &str = "\
The sinc toy of the paper's Figure 2: SSGP, SSGP with fixed spectral points, FITC and the full GP
on 100 noisy points of sinc(x), their NMSE and MNLP, and the figure as SVG.

Usage: sinc [--out FILE.svg]

Options:
  --out FILE   where the SVG figure goes: a relative path is taken from the current
               directory, which must hold FILE's directory (default target/sinc.svg
               in the crate's directory)
  -h, --help   this text";

fn main() -> std::process::ExitCode {
    cli::main("sinc", run)
}

fn run() -> Result<(), Box<dyn Error>> {
    use lexopt::prelude::*;
    let mut out = None;
    let mut parser = lexopt::Parser::from_env();
    while let Some(arg) = parser.next()? {
        match arg {
            Long("out") => out = Some(PathBuf::from(parser.value()?)),
            Short('h') | Long("help") => {
                println!("{HELP}");
                return Ok(());
            }
            _ => return Err(cli::unexpected(arg, HELP)),
        }
    }
    let out = match out {
        Some(path) => path,
        None => {
            let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("target");
            std::fs::create_dir_all(&target)
                .map_err(|e| format!("cannot create {}: {e}", target.display()))?;
            target.join("sinc.svg")
        }
    };
    check_writable(&out)?;
    let mut rng = StdRng::seed_from_u64(1);
    let train = sinc_data(100, false, 0.05, &mut rng)?;
    let test = sinc_data(1000, true, 0.05, &mut rng)?;

    let ssgp = Ssgp::params(10).seed(1).fit(&train)?;
    report("SSGP, 10 learned spectral points", &ssgp, &train, &test)?;
    let fixed = Ssgp::params(20)
        .seed(1)
        .fixed_spectral_points(true)
        .fit(&train)?;
    report("SSGP, 20 fixed spectral points", &fixed, &train, &test)?;
    let fitc = Fitc::params(20).seed(1).fit(&train)?;
    report("FITC, 20 learned pseudo-inputs", &fitc, &train, &test)?;
    let full = FullGp::params().fit(&train)?;
    report("full GP", &full, &train, &test)?;

    let grid = sinc_data(400, true, 0.0, &mut rng)?;
    let root = SVGBackend::new(&out, (1500, 420)).into_drawing_area();
    root.fill(&WHITE)?;
    let panels = root.split_evenly((1, 3));
    draw_ssgp(
        &panels[0],
        "(a) SSGP, 10 learned spectral points",
        &ssgp,
        &train,
        &grid,
        &mut rng,
    )?;
    draw_fitc(
        &panels[1],
        "(b) FITC, 20 learned pseudo-inputs",
        &fitc,
        &train,
        &grid,
    )?;
    draw_ssgp(
        &panels[2],
        "SSGP, 20 fixed spectral points (as Fig. 2a)",
        &fixed,
        &train,
        &grid,
        &mut rng,
    )?;
    root.present()
        .map_err(|e| format!("cannot write {}: {e}", out.display()))?;
    println!("wrote {}", out.display());
    Ok(())
}

/// Checks, before any fit, that the figure can be written at `out`: a name, not a directory, in a
/// directory that exists, and writable — an existing file opened for writing without changing
/// it, a new one created and removed again.
///
/// # Errors
/// What stands in the way, naming `--out` and the remedy.
fn check_writable(out: &Path) -> Result<(), String> {
    if out.as_os_str().is_empty() {
        return Err("--out is empty: give a file name, e.g. --out sinc.svg".into());
    }
    let shown = std::path::absolute(out).unwrap_or_else(|_| out.to_path_buf());
    let flag = format!("--out {}", out.display());
    if out.is_dir() {
        return Err(format!(
            "{flag}: {} is a directory; give a file name, e.g. {}",
            shown.display(),
            out.join("sinc.svg").display()
        ));
    }
    let dir = match out.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        let shown = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
        let problem = if dir.exists() {
            format!("{} is not a directory", shown.display())
        } else {
            format!("the directory {} does not exist", shown.display())
        };
        return Err(format!(
            "{flag}: {problem} (a relative path is taken from the current directory); create \
             the directory first, or give a file in an existing one"
        ));
    }
    let cannot = |e: std::io::Error| {
        format!(
            "{flag}: cannot write {} ({e}); give a file in a directory you can write to",
            shown.display()
        )
    };
    if out.exists() {
        OpenOptions::new().write(true).open(out).map_err(cannot)?;
    } else {
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(out)
            .map_err(cannot)?;
        std::fs::remove_file(out).map_err(cannot)?;
    }
    Ok(())
}

fn report(
    name: &str,
    fitted: &dyn FittedRegressor,
    train: &Dataset,
    test: &Dataset,
) -> Result<(), Box<dyn Error>> {
    let pred = fitted.predict(test.x())?;
    let t = fitted.training();
    println!(
        "{name:<36} NMSE {:.4}  MNLP {:+.4}  −log p(y|θ) {:.2} → {:.2}  ({} iterations, {} evaluations: {})",
        nmse(test.y(), &pred, train.y_mean())?,
        mnlp(test.y(), &pred)?,
        t.initial_neg_log_evidence,
        t.neg_log_evidence,
        t.iterations,
        t.evaluations,
        t.termination
    );
    Ok(())
}

fn draw_ssgp<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    fitted: &FittedSsgp,
    train: &Dataset,
    grid: &Dataset,
    rng: &mut StdRng,
) -> Result<(), Box<dyn Error>>
where
    DB::ErrorType: 'static,
{
    let pred = fitted.predict(grid.x())?;
    let mut chart = base_chart(area, title, grid, &pred)?;
    for (i, color) in [RED, GREEN, MAGENTA].iter().enumerate() {
        let f = fitted.sample_posterior(rng).evaluate(grid.x())?;
        let series = chart.draw_series(LineSeries::new(
            grid.x().column(0).iter().copied().zip(f.iter().copied()),
            color.stroke_width(1),
        ))?;
        if i == 0 {
            series
                .label("posterior samples")
                .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], RED));
        }
    }
    draw_data(&mut chart, train)?;
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}

fn draw_fitc<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    fitted: &FittedFitc,
    train: &Dataset,
    grid: &Dataset,
) -> Result<(), Box<dyn Error>>
where
    DB::ErrorType: 'static,
{
    let pred = fitted.predict(grid.x())?;
    let mut chart = base_chart(area, title, grid, &pred)?;
    draw_data(&mut chart, train)?;
    chart
        .draw_series(
            fitted
                .pseudo_inputs()
                .column(0)
                .iter()
                .map(|&u| TriangleMarker::new((u, -0.7), 5, RED.filled())),
        )?
        .label("pseudo-inputs")
        .legend(|(x, y)| TriangleMarker::new((x + 10, y), 5, RED.filled()));
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}

type Chart<'a, DB> = ChartContext<
    'a,
    DB,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

fn base_chart<'a, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    grid: &Dataset,
    pred: &Predictive,
) -> Result<Chart<'a, DB>, Box<dyn Error>>
where
    DB::ErrorType: 'static,
{
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 18))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(40)
        .build_cartesian_2d(-1.0..5.0, -0.8..1.4)?;
    chart.configure_mesh().disable_mesh().draw()?;
    let xs: Vec<f64> = grid.x().column(0).iter().copied().collect();
    let half = pred.f_variance.map(|v| 2.0 * v.sqrt());
    let mut band: Vec<(f64, f64)> = xs
        .iter()
        .enumerate()
        .map(|(i, &x)| (x, pred.mean[i] + half[i]))
        .collect();
    band.extend(
        xs.iter()
            .enumerate()
            .rev()
            .map(|(i, &x)| (x, pred.mean[i] - half[i])),
    );
    chart
        .draw_series(std::iter::once(Polygon::new(band, BLUE.mix(0.15))))?
        .label("95% band of f*")
        .legend(|(x, y)| Rectangle::new([(x, y - 4), (x + 20, y + 4)], BLUE.mix(0.15).filled()));
    chart
        .draw_series(LineSeries::new(
            xs.iter().copied().zip(pred.mean.iter().copied()),
            BLUE.stroke_width(2),
        ))?
        .label("posterior mean")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLUE.stroke_width(2)));
    Ok(chart)
}

fn draw_data<DB: DrawingBackend>(
    chart: &mut Chart<'_, DB>,
    train: &Dataset,
) -> Result<(), Box<dyn Error>>
where
    DB::ErrorType: 'static,
{
    chart
        .draw_series(
            train
                .x()
                .column(0)
                .iter()
                .zip(train.y().iter())
                .map(|(&x, &y)| Cross::new((x, y), 3, BLACK.stroke_width(1))),
        )?
        .label("training data")
        .legend(|(x, y)| Cross::new((x + 10, y), 3, BLACK));
    Ok(())
}
