//! Default SSGP against the full GP on the generated suite of small and wide problems
//! (`ssgp::data::calibration_suite`, 36 problems, seeds committed): per problem the test NMSE of
//! both, SSGP's 95 % coverage, mean z² and MNLP on 1 000 test points, its leave-one-out
//! diagnostic and its calibration check's held-out rows (both computed on the training data
//! alone) with the summary's flag, and which fit the check kept. Prints a Markdown table (the README's) and the counts the criteria are
//! judged by.
//!
//! With `--suite messy`, the same on `ssgp::data::messy_suite` (18 tables shaped like a small
//! real one, clean and messy); with `--suite multi`, the multi-output SSGP (`fit_multi`) on
//! `ssgp::data::multi_output_suite` (the 36 problems with a second output), a row per output.
//! `cargo run --release --example calibration [-- --m 50] [--first K] [--seed S] [--variant V]
//! [--suite S]`; see `--help`.

#[path = "cli/mod.rs"]
mod cli;
use ssgp::data::{calibration_suite, messy_suite, multi_output_suite};
use ssgp::metrics::{calibration, mnlp, nmse};
use ssgp::ssgp::{CalibrationGuard, NoiseBound};
use ssgp::{Dataset, FullGp, Predictive, Remedy, Ssgp, TrainingSummary};
use std::error::Error;
use std::time::Instant;

const HELP: &str = "\
Default SSGP against the full GP on the 36 generated small and wide problems of
ssgp::data::calibration_suite: a Markdown table and the issue's counts.

Usage: calibration [OPTIONS]

Options:
  --m M          spectral points (default 50)
  --first K      the first K problems only (default all)
  --seed S       the SSGP seed (default 1)
  --suite S      calibration (the 36 generated small and wide problems, default), messy
                 (ssgp::data::messy_suite: 18 tables of 315 rows and 9 inputs, clean and with
                 raw scales, replicated inputs, coarse and constant columns, Student-t noise,
                 60 rows) or multi (ssgp::data::multi_output_suite: the 36 problems with a
                 second output, fitted together by fit_multi; a row per output, its time the
                 fit's)
  --variant V    the SSGP settings: default (Ssgp::params(m).seed(S), the calibration check),
                 off (the learned fit alone, CalibrationGuard::Off), features (the random-feature
                 fit, CalibrationGuard::RandomFeatures), bound (off, with
                 NoiseBound::FixedSpectralPoints { fraction: 1 }) or fixed (off, with fixed
                 spectral points)
  -h, --help     this text";

fn run() -> Result<(), Box<dyn Error>> {
    use lexopt::prelude::*;
    let (mut m, mut first, mut variant) = (50, usize::MAX, "default".to_string());
    let mut seed = 1;
    let mut suite = "calibration".to_string();
    let mut parser = lexopt::Parser::from_env();
    while let Some(arg) = parser.next()? {
        match arg {
            Long("m") => m = parser.value()?.parse()?,
            Long("first") => first = parser.value()?.parse()?,
            Long("seed") => seed = parser.value()?.parse()?,
            Long("variant") => variant = parser.value()?.string()?,
            Long("suite") => suite = parser.value()?.string()?,
            Short('h') | Long("help") => {
                println!("{HELP}");
                return Ok(());
            }
            _ => return Err(cli::unexpected(arg, HELP)),
        }
    }
    let builder = match variant.as_str() {
        "default" => Ssgp::params(m).seed(seed),
        "off" => Ssgp::params(m)
            .seed(seed)
            .calibration(CalibrationGuard::Off),
        "features" => Ssgp::params(m)
            .seed(seed)
            .calibration(CalibrationGuard::RandomFeatures),
        "bound" => Ssgp::params(m)
            .seed(seed)
            .calibration(CalibrationGuard::Off)
            .noise_bound(NoiseBound::FixedSpectralPoints { fraction: 1.0 }),
        "fixed" => Ssgp::params(m)
            .seed(seed)
            .calibration(CalibrationGuard::Off)
            .fixed_spectral_points(true),
        _ => {
            return Err(format!(
                "--variant `{variant}`: expected default, off, features, bound or fixed"
            )
            .into())
        }
    };
    println!("| problem | full GP NMSE | SSGP NMSE | ratio | coverage | mean z² | MNLP | LOO z² | LOO NMSE | held-out z² | held-out NMSE | flagged | bad on test | kept | train [s] |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    let mut counts = Counts::default();
    if suite == "multi" {
        for problem in multi_output_suite().into_iter().take(first) {
            let (train, test) = problem.generate(1000)?;
            let t0 = Instant::now();
            let model = builder.clone().fit_multi(&train)?;
            let seconds = t0.elapsed().as_secs_f64();
            for p in 0..train.outputs() {
                let (train_p, test_p) = (train.output(p)?, test.output(p)?);
                let pred = model.predict_output(test.x(), p)?;
                let fit = Fit {
                    name: format!("{}-y{p}", problem.name()),
                    training: model.output_training(p)?,
                    seconds,
                };
                counts.row(&fit, (&train_p, &test_p), &pred)?;
            }
        }
        counts.print();
        return Ok(());
    }
    let tables: Vec<(String, ssgp::Result<(Dataset, Dataset)>)> = match suite.as_str() {
        "calibration" => calibration_suite()
            .iter()
            .map(|p| (p.name(), p.generate(1000)))
            .collect(),
        "messy" => messy_suite()
            .iter()
            .map(|t| (t.name(), t.generate(1000)))
            .collect(),
        _ => return Err(format!("--suite `{suite}`: expected calibration, messy or multi").into()),
    };
    for (name, data) in tables.into_iter().take(first) {
        let (train, test) = data?;
        let t0 = Instant::now();
        let model = builder.clone().fit(&train)?;
        let seconds = t0.elapsed().as_secs_f64();
        let pred = model.predict(test.x())?;
        let fit = Fit {
            name,
            training: model.training().clone(),
            seconds,
        };
        counts.row(&fit, (&train, &test), &pred)?;
    }
    counts.print();
    Ok(())
}

/// A fit's name, summary and training time, for its row.
struct Fit {
    name: String,
    training: TrainingSummary,
    seconds: f64,
}

/// The counts over the rows printed.
#[derive(Default)]
struct Counts {
    total: usize,
    good: usize,
    ratio_ok: usize,
    bad: usize,
    bad_flagged: usize,
    fine: usize,
    fine_flagged: usize,
}

impl Counts {
    /// Prints the table row of `fit`'s predictive `p` on `test` (trained on `train`), against
    /// the full GP (300 evaluations) on the same data, and counts it.
    fn row(
        &mut self,
        fit: &Fit,
        (train, test): (&Dataset, &Dataset),
        p: &Predictive,
    ) -> Result<(), Box<dyn Error>> {
        let full = FullGp::params().max_evaluations(300).fit(train)?;
        let full_nmse = nmse(test.y(), &full.predict(test.x())?, train.y_mean())?;
        let e = nmse(test.y(), p, train.y_mean())?;
        let c = calibration(test.y(), p)?;
        let (coverage, mean_z2) = (c.within_95, c.mean_squared_z);
        let summary = &fit.training;
        let flagged = summary.is_flagged();
        let (hz, he) = summary
            .held_out()
            .map_or((f64::NAN, f64::NAN), |h| (h.mean_z2, h.nmse));
        let is_bad = e > 1.0 || mean_z2 > 2.0;
        self.total += 1;
        self.good += usize::from((0.90..=0.98).contains(&coverage) && mean_z2 <= 1.5);
        self.ratio_ok += usize::from(e <= 1.1 * full_nmse);
        if is_bad {
            self.bad += 1;
            self.bad_flagged += usize::from(flagged);
        } else {
            self.fine += 1;
            self.fine_flagged += usize::from(flagged);
        }
        let kept = match summary.remedy {
            Some(r) if r.mean_kept() => format!("mean ×{:.3}", r.variance_scale()),
            Some(r) if r.random_features() => format!("features ×{:.3}", r.variance_scale()),
            Some(
                r @ Remedy::HeldOut {
                    learned_budget: Some(b),
                    ..
                },
            ) => format!("learned ({b} evaluations) ×{:.3}", r.variance_scale()),
            Some(r) => format!("learned ×{:.3}", r.variance_scale()),
            None => "learned".to_string(),
        };
        let (lz, le) = summary
            .diagnostic
            .map_or((f64::NAN, f64::NAN), |d| (d.mean_z2, d.nmse));
        println!(
            "| {} | {full_nmse:.4} | {e:.4} | {:.2} | {coverage:.3} | {mean_z2:.2} | {:.3} | {lz:.2} | {le:.4} | {hz:.2} | {he:.4} | {} | {} | {kept} | {:.1} |",
            fit.name,
            e / full_nmse,
            mnlp(test.y(), p)?,
            if flagged { "yes" } else { "no" },
            if is_bad { "yes" } else { "no" },
            fit.seconds,
        );
        Ok(())
    }

    /// The counts the criteria are judged by.
    fn print(&self) {
        let Self {
            total,
            good,
            ratio_ok,
            bad,
            bad_flagged,
            fine,
            fine_flagged,
        } = self;
        println!(
            "\n{good}/{total} calibrated (coverage in [0.90, 0.98] and mean z² ≤ 1.5); {ratio_ok}/{total} \
             with NMSE ≤ 1.1× the full GP's; flagged {bad_flagged}/{bad} of the fits bad on test \
             (NMSE > 1 or mean z² > 2) and {fine_flagged}/{fine} of the others"
        );
    }
}

fn main() -> std::process::ExitCode {
    cli::main("calibration", run)
}
