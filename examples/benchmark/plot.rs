//! The benchmark's plots in the paper's style (Figure 3): a measure against the number of basis
//! functions, one line per method, the full GP as a horizontal line; error rows are left out.

use super::support::{Run, METHODS};
use plotters::prelude::*;
use std::error::Error;

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
/// axis when `log_y`), one line per method (mean over repetitions), the full GP as a horizontal
/// line. Runs that ended in an error are left out; nothing is drawn if none is left.
pub fn plot(
    path: &str,
    title: &str,
    runs: &[Run],
    value: fn(&Run) -> f64,
    log_y: bool,
) -> Result<(), Box<dyn Error>> {
    let runs: Vec<Run> = runs.iter().filter(|r| r.error.is_none()).cloned().collect();
    let runs = runs.as_slice();
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
    // One colour per method of METHODS, in its order.
    let colors: [RGBColor; METHODS.len()] = [
        BLUE,
        RED,
        GREEN,
        BLACK,
        MAGENTA,
        RGBColor(230, 140, 0),
        CYAN,
    ];
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
