//! A user's guide: which model, how many basis functions, what can go wrong and what to do, what
//! is reproducible, and where the calls of other GP libraries are here.
//!
//! # SSGP, FITC, VFE or the full GP?
//!
//! | n (training points) | first choice | why |
//! |---|---|---|
//! | ≤ 5 000 | [`FullGp`](crate::FullGp) | exact; O(n³) per evaluation is seconds; the reference to judge the others by |
//! | 5 000 – 10⁶ | [`Ssgp`](crate::ssgp::Ssgp) | O(nm²) per evaluation in dense BLAS-3 products; on Kin-40k, 100 spectral points (200 basis functions) reach an NMSE of about 0.009 where FITC with 200 pseudo-inputs reaches about 0.07 |
//! | 5 000 – 10⁶, calibrated variances on a small or smooth data set | a mixture of SSGP restarts, or FITC or VFE | see overconfidence below |
//! | > 10⁶ or data on several machines | SSGP, streamed (`chunk_rows`, `cache_bytes`) | memory O(m² + chunk·m), not O(nm) |
//!
//! FITC ([`Fitc`](crate::Fitc)) is the established sparse baseline: its variances grow away from
//! its pseudo-inputs, so it is rarely overconfident, but per basis function it is less accurate
//! than SSGP on most data (paper §5.2), and its gradient costs O(nmD) more.
//!
//! VFE ([`Vfe`](crate::Vfe), Titsias 2009) is the sparse GP today's libraries offer by default
//! (GPflow's and GPyTorch's SGPR). It costs what FITC costs (the same factorisation, with σn²I
//! in place of FITC's diagonal) but maximises a lower bound F ≤ log p(y|θ) on the exact GP's
//! evidence, so it approximates the full GP rather than defining a model of its own: more
//! inducing inputs never make it worse, and it cannot overfit them the way FITC can (Bauer, van
//! der Wilk & Rasmussen 2016), but with too few it tends to overestimate σn² and to be less
//! accurate than FITC. Its [`trace`](crate::FittedVfe::trace) tr(K_ff − Q_ff) says how much of
//! the prior variance the inducing inputs leave unexplained: when it is not small against nσn²,
//! add inducing inputs. On Kin-40k (1000 evaluations, seeds 1–3, its default L-BFGS) VFE with
//! 100 inducing inputs reaches an NMSE of about 0.078 (FITC 0.085, SSGP with 100 basis functions
//! 0.019) and an MNLP of +0.20 (FITC +0.01); with 200, 0.056 and an MNLP below the +0.05 it had
//! under conjugate gradients (README, Kin-40k).
//!
//! # Choosing m
//!
//! SSGP with m spectral points has 2m basis functions and costs about 12nm² flops per evaluation
//! of the evidence and its gradient (the n×2m design matrix's Gram matrix in the first pass, the
//! gradient's products with it in the second; the (2m)³/3 of the Cholesky is small beside them). Start with m = 50–100 (100–200 basis functions, the paper's range):
//! on 10⁴ points and 8 inputs an evaluation takes 4–10 ms on 2 cores (`benches/objectives.rs`). Double m while the test NMSE
//! improves and the data set is large compared with the m·D frequencies learned — keep
//! m·D ≲ n/4, or fix the spectral points (`fixed_spectral_points(true)`), which learns only D + 2
//! parameters and cannot overfit that way. FITC needs more pseudo-inputs than SSGP spectral points
//! for the same accuracy; the full GP has no m.
//!
//! # Overconfidence (paper §5.4) and its remedies
//!
//! With many learned frequencies on few points, SSGP can fit the data with a tiny noise and report
//! variances far too small: test NMSE stays good while MNLP blows up. Signs: a learned σn² much
//! below the data's noise, or restarts with different seeds that disagree far more than their
//! variances say ([`ensemble::FittedEnsemble::spread`](crate::ensemble::FittedEnsemble::spread)).
//! Remedies, in the order to try them:
//! - a mixture of restarts ([`ensemble::Ensemble::restarts`](crate::ensemble::Ensemble::restarts) with
//!   [`Combine::Mixture`](crate::ensemble::Combine::Mixture)): its variance adds the restarts'
//!   disagreement;
//! - a noise bound estimated from the data
//!   ([`NoiseBound::FixedSpectralPoints`](crate::ssgp::NoiseBound::FixedSpectralPoints)), or a
//!   noise floor you know (`noise_floor`, §5.2);
//! - fewer spectral points, or fixed ones.
//!
//! `tests/suite/overfitting.rs` reproduces the failure and checks each remedy's calibration. A
//! mixture on a small table, and its calibration checked on held-out points:
//!
//! ```
//! use ssgp::ensemble::{Combine, Ensemble};
//! use ssgp::rand::{rngs::StdRng, SeedableRng};
//! use ssgp::{data::sinc_data, metrics, Ssgp};
//!
//! let mut rng = StdRng::seed_from_u64(3);
//! let (train, test) = (sinc_data(40, false, 0.05, &mut rng)?, sinc_data(300, true, 0.05, &mut rng)?);
//! let params = Ssgp::params(12).seed(1).initial_draws(10).max_evaluations(300);
//! let mixture = Ensemble::restarts(&params, 4, Combine::Mixture).fit(&train)?;
//! let pred = mixture.predict(&test)?;
//! let c = metrics::calibration(test.y(), &pred)?;
//! println!("mean z² {:.2} (1 when calibrated), within 2 sd {:.2}", c.mean_squared_z, c.within_two_sd);
//! # Ok::<(), ssgp::Error>(())
//! ```
//!
//! # Telling a poor fit from a good one: the leave-one-out diagnostic
//!
//! Every fit's [`TrainingSummary::diagnostic`](crate::TrainingSummary) is its exact
//! leave-one-out calibration on the training data, at the fitted hyperparameters
//! ([`LooDiagnostic`](crate::LooDiagnostic): mean z², MNLP, NMSE), saved with the model. Its
//! cost: SSGP O(nm²), about one evaluation of the evidence (the hat matrix's diagonal; for
//! n ≤ 4m the n×n form, O(n²m + n³/3)); FITC and VFE nm² flops on top of their factorisation
//! (one triangular solve; VFE's adds the variance σ0² − Q_ii its predictive has); the full GP an
//! extra n³/3 flops and 8n² bytes (the inverse factor), skipped (`None`) when they cannot be
//! allocated. It flags a fit that predicts held-out points hardly better than the mean (LOO
//! NMSE > 0.95: it explains less than 5 % of the targets' variance, and on new data it is as
//! likely a little worse than the mean as a little better), an overconfident one (LOO mean
//! z² > 1.5), and one that fits its training points too well (LOO mean z² < 0.5).
//!
//! The last flag is the one that matters for SSGP with learned spectral points. The LOO keeps
//! the hyperparameters, so with more learned frequencies than the data pin down (mD against n)
//! the frequencies have adapted to every training point and the LOO residuals come out tiny.
//! On the generated suite of small and wide problems (`examples/calibration.rs`, default SSGP
//! with m = 50) the flags caught 21 of the 28 fits that were bad on test data (test NMSE > 1 or
//! mean z² > 2; their LOO mean z² 0.00–0.24), and missed 7 whose LOO mean z² was 0.71–1.00
//! although their test mean z² was 2.0–167; they also flagged 3 of the 8 good fits (test mean
//! z² 0.06–0.85, underconfident rather than over). So: a flag means a poor fit; no flag does
//! not yet mean a calibrated one on small or wide data. A flagged fit:
//! try the remedies above, compare with the full GP or FITC (judged by their held-out check,
//! below), or standardise and use fewer spectral points. (These counts are of the
//! learned fits, `CalibrationGuard::Off`, with the flag at LOO NMSE > 1; the default check
//! below replaces most of them.)
//!
//! VFE's LOO is honest about its inducing inputs (variational parameters, fitted to no single
//! point): a low LOO mean z² flags its error bars as too wide, as VFE's overestimated σn² makes
//! them (Kin-40k, 100 inducing inputs: LOO 0.46, test 0.52, coverage 0.984). Up to 2 000 rows
//! the full GP's, FITC's and VFE's fits are judged by their held-out check instead (below).
//!
//! A fit SSGP's default check judged on held-out rows is flagged by
//! [`TrainingSummary::flags`](crate::TrainingSummary::flags) differently: its error bars by the
//! kept candidate's mean z² on the rows it was not trained on, after the check's variance factor
//! ([`HeldOutCalibration`](crate::HeldOutCalibration): overconfident above 1.5, too wide below
//! 0.5, each only beyond chance, 2·√(2/rows) from 1), since the LOO holds the learned spectral
//! points fixed and a widened fit's LOO mean z² falls by its factor; its accuracy by the larger
//! of the LOO NMSE and the held-out NMSE (a learned fit's LOO NMSE is optimistic, and any fit's
//! where inputs repeat). `summary.diagnosis()` prints both and the flags (the examples print it
//! under each fit). On the generated suite this flagged 8 of the 10 default fits bad on test data
//! (all 10 with the start's flag below) and 6 of the other 26 (against 9 and 9 by the LOO
//! alone, before a learned fit could be widened
//! below 2 000 rows): 5 predict about the mean (LOO NMSE above 0.95, test NMSE 0.9992–1.0000, on
//! the good side of 1 by chance) and one learned fit has error bars too wide on its held-out rows
//! (n = 100, D = 1, near noise-free; coverage 1.000 on test); the 3 fits the LOO alone flagged as fitting
//! too well although their test error bars hold (a random-feature fit widened ×2.2, two learned
//! fits at n = 500) are no longer flagged. Two fits bad on test data were missed that way: n = 50
//! with D = 50, whose full-GP start's lengthscales overfit all rows, held-out ones included
//! (test mean z² 31, held-out 1.49 on 12 rows), and n = 50 with D = 100, a learned fit
//! predicting the mean (test NMSE 1.08, calibrated) with a held-out NMSE of 0.945 on 12 rows.
//! Both start from a full GP that learned D + 2 hyperparameters on fewer than two rows each,
//! the held-out rows among them, so the check cannot vouch for their error bars: the summary
//! flags that too ([`Remedy::start_overfits`](crate::Remedy::start_overfits); saved with the
//! model). On the suite with seeds 0–5, 48 of the 216 fits have so few rows per hyperparameter
//! (n ≤ 300, D > n/2 − 2); each was flagged already or bad on test data, and the flag catches the
//! ten of them that were bad and unflagged (n = 50, D = 50 on every seed, overconfident; four
//! worse than the mean). (Starting the comparison's fits from the 3/4 rows
//! alone, so that no start sees the held-out rows, widened the first ×7.5, test mean z² 4.1,
//! but moved three near noise-free or learned fits out of calibration: 31 of 36 calibrated.)
//!
//! Rows that repeat a few inputs (a designed experiment: k settings, each measured many times)
//! are held out a whole input at a time, so with few distinct inputs the check would
//! judge the error bars by one to four of them: on 80 rows of two settings it widened them
//! ×2.6–4.1 (coverage 0.995–1.000 of new measurements at the settings), on others ×2·10⁴.
//! Such a fit is judged by its LOO instead (coverage 0.92–0.96 at the settings, two and four of
//! them, seeds 0–3) and flagged for it
//! ([`Remedy::FewInputs`](crate::Remedy::FewInputs), "too few distinct inputs to check the
//! error bars between them"; saved with the model, format 9): between two settings no model
//! can tell the curvature, and the fit covered 0.13–0.17 of new inputs there.
//!
//! The same holds for small tables: below 40 distinct inputs (fewer than 10 to hold out) there
//! is no held-out check and the fit is flagged so
//! ([`CalibrationGuard::HELD_OUT_MIN_ROWS`](crate::ssgp::CalibrationGuard::HELD_OUT_MIN_ROWS)).
//! On generated tables of 6–39 rows (D = 1–5, smooth and rough, noise 0.01–0.3; 24 per size,
//! `Ssgp::params(50)`) the check on 5–9 held-out rows had left 4–10 of 24 fits bad on test data
//! (NMSE > 1 or mean z² > 2) unflagged at each size from 20 to 39, and below 20 rows the learned
//! fit the LOO passed 17–21 of 24, with test mean z² up to 102: the LOO cannot see frequencies
//! fitted to the rows it leaves out. Where the learned fit has at least as many frequencies
//! (m·D) as there are rows, the random-feature fit is now kept without it: calibrated on the
//! same number of tables or more at every size from 6 to 25 (15 against 10 of 96 below 20
//! rows; 20 against 15 at 20–25) and one fewer at 30–39, within 1.1× the full GP's NMSE on 66
//! of 96 against 49 below 20 rows. The flag also marks good fits there (2–20 of 24 per size):
//! the data cannot tell them from the bad ones. The full GP, FITC and VFE are flagged so too
//! ([`Remedy::MIN_CHECKED_INPUTS`](crate::Remedy::MIN_CHECKED_INPUTS)): on the same tables
//! their LOO had passed 78 of the full GP's 85 bad fits, 94 of FITC's 108 and 25 of VFE's 26.
//!
//! # The held-out check of the full GP, FITC and VFE
//!
//! A LOO at hyperparameters learned on the rows it leaves out is optimistic where they can fit
//! single rows: the full GP's D + 2 on a wide table (400 rows of 100 inputs: LOO mean z² 0.90,
//! test 2.50), FITC's m·D pseudo-inputs on a small one (50 of them on 100 rows of 9 inputs:
//! 0.73 and 3.18, coverage 0.76). So from 40 distinct inputs up to
//! [`Remedy::HELD_OUT_CHECK_MAX_ROWS`](crate::Remedy::HELD_OUT_CHECK_MAX_ROWS) (2 000) rows
//! these models judge their fit by refits: the rows are cut into four folds of whole groups of
//! equal inputs, the model as configured is trained on three of them (the full GP from its
//! fit's θ; FITC and VFE from the fit's lengthscales, σ0², σn² and the inducing inputs from
//! their start, so that none sits on a held-out row) and scored on the fourth, in turn until 400
//! rows are scored (four refits up to 533 rows, one from 1 600), and every scored row's z² and
//! squared error go into one held-out mean z² and NMSE ([`Remedy::HeldOutRefit`](crate::Remedy::HeldOutRefit), saved
//! with the model, format 15). The flags are then those of a fit SSGP's check judged on
//! held-out rows: overconfident or too wide by the held-out mean z², beyond chance; the accuracy
//! by the larger of the LOO and held-out NMSE. The model itself is the fit on all rows,
//! unchanged (the same bits with `held_out_check(false)`, which judges it by its LOO alone, as
//! before). Above 2 000 rows the LOO alone judges: there a LOO has many rows per
//! hyperparameter unless the table has hundreds of inputs.
//!
//! Measured on the calibration suite (36 problems), the messy tables (18) and eight wide ones
//! (n = 200–800, D = 20–100, 3–5 relevant), seed 1, FITC and VFE with min(50, n/2) inducing
//! inputs, against 2 000 test points each. Fits bad on test data (NMSE > 1 or mean z² > 2)
//! flagged, LOO alone → with the check: the full GP 1 → 11 of 11, FITC 1 → 16 of 16, VFE
//! 3 → 6 of 7 (the miss: 60 rows, test NMSE 1.08 where the refits' was 0.73). Of the other
//! fits (not counting those that predict about the mean, flagged for it either way) the check
//! flags the full GP's 12 of 43, FITC's 22 of 38 and VFE's 3 of 43 — mostly fits whose error bars
//! are too narrow without a test mean z² above 2 (test coverage 0.85–0.91: 7 of the full GP's 12,
//! 14 of FITC's 22, 1 of VFE's 3) or too wide (coverage 1.000 on near noise-free data: one fit of
//! each model, two of FITC's; the LOO had flagged those too, the full GP's and FITC's as fitting
//! their training points too well); the rest, at test coverage 0.91–0.96 (the full GP 4, FITC 6,
//! VFE 1), are the check's false alarms, refits on 3/4 of the rows less sure than the fit on all
//! of them. One fold (a quarter of the rows held out once, as SSGP's check does) caught 8 of the
//! full GP's 11 bad fits and flagged 16 of its 43 others. The check's cost: one to four more
//! trainings on 3/4 of the rows; on the calibration suite and the messy tables (54 tables of
//! 24–1 000 rows) the full GP trained in 1.97× the time, FITC in 1.96×, VFE in 1.33×.
//!
//! # The calibration check (SSGP's default)
//!
//! By default ([`CalibrationGuard::Check`](crate::ssgp::CalibrationGuard::Check)) an SSGP fit is
//! checked against a second fit that cannot overfit: the *random-feature fit*, m spectral points
//! drawn once (the seed's draw) from the kernel's spectral density at the start's lengthscales (the
//! full GP's on a subset of ≤ 1024 rows, which SSGP starts from anyway) and held fixed with
//! them, training only σ0² and σn² — a random-feature approximation of that full GP, whose noise
//! absorbs what m features miss. With 40 to 2 000 training points (and at least 40 distinct
//! inputs) both fits are trained on a
//! seeded 3/4 of the rows and scored by their MNLP on the other 1/4 (rows with equal inputs held
//! out together: split row by row, a table with every input three times was scored on inputs
//! the fits had been trained on, and fits with test coverage 0.16–0.70 were kept unflagged),
//! each with its predictive
//! variances multiplied by the factor s those rows ask for: their mean z² (the maximum-likelihood
//! scale of N(μ, s·v)), where it differs from 1 by more than two standard errors (2·√(2/rows)),
//! else 1. The one with the lower MNLP is refitted on all rows and its σ0² and σn² multiplied by
//! its s, which multiplies every predictive variance by s and leaves the mean as it is (A
//! depends on σn²/σ0² alone). A random-feature fit the rows widen is widened least, by
//! s = mean z²/(1 + 2·√(2/rows)), which leaves their mean z² at the edge of chance: its refit on
//! 4/3 of the rows overfits less than the fit measured, and a factor applied because it lies
//! beyond chance is biased upwards. Widened by the full mean z², 10 of 216 such fits on the
//! generated suite (seeds 0–5) were underconfident on test data (coverage 0.984–1.000); widened
//! least, 7 of them are calibrated, one of the fits calibrated before falls to coverage 0.843
//! (n = 50, D = 20, seed 4), and over seeds 0–5 the suite goes from 176 to 182 calibrated fits of
//! 216 (the messy tables from 64 to 63 of 108). A learned fit's refit on all rows is another
//! fit than the 3/4 fit s was measured on (it overfits less), so its factor does not carry
//! over: on fewer than 55
//! held-out rows (n < 220) the learned fit is not scaled at all, and on fewer than 100 (n < 400)
//! it is widened, and narrowed only where those rows hold 55 distinct inputs (its refit then
//! takes the noise level they asked for) — narrowed on 25 held-out rows
//! (n = 100, D = 1, noise 10⁻³, seeds 1–8) its refit came out overconfident for 3 seeds of 8
//! (mean z² 1.84–8.2, unflagged); unscaled, those seeds keep the random-feature fit or a learned
//! one flagged "error bars too wide" (coverage 1.000), and none is overconfident; narrowed on
//! 79 rows, two messy tables (n = 315) came out at coverage 0.86–0.90 — and from 100 a learned
//! fit the rows widen, if it wins, is kept as it was measured —
//! the 3/4 fit, not refitted, its variances × s (`Remedy::HeldOut`'s `on_comparison_rows`). On
//! the generated suite that keeps an accurate learned fit where the random-feature fit with
//! m = 50 was calibrated but poor: n = 1 000, D = 20 with 5 relevant inputs, test NMSE 0.37 →
//! 0.027 (the full GP's 0.055), coverage 0.940 → 0.945; D = 8 with 8 relevant, 0.98 → 0.80. The
//! widened learned fit refitted on all rows came out underconfident there (coverage 1.000 and
//! 0.995), and on 12–50 held-out rows even the 3/4 fit's widening did not carry over to test data
//! (coverage 0.896–1.000 or mean z² 1.56 on four small or wide problems). (Four folds pooled for
//! 100 ≤ n < 400, so that a learned fit's factor rests on n rows, were tried and not kept: the
//! widened learned fit kept as its first fold's fit is calibrated but trained on 3/4 of the
//! rows, which cost sinc with 100 points its accuracy (NMSE 0.030, MNLP −1.36); refitted on all
//! rows it is more accurate but underconfident (7 of the 18 messy tables below calibrated); and
//! with inputs repeated, whole-group folds left one decisive gap: 20 inputs × 5, NMSE 0.14
//! against 0.026.) A narrowing may take σn² below the relative
//! noise floor (default 10⁻⁴·var(y), a guard for training) but never below a floor set as a
//! variance (`noise_floor`) or a `NoiseBound`. Below 40 points or distinct inputs the
//! random-feature fit replaces a learned fit whose LOO fits its training points too well, or is
//! kept without one where the rows are no more than its m·D frequencies, and the fit is flagged
//! ([`Remedy::FewInputs`](crate::Remedy::FewInputs), above).
//!
//! **Early stopping.** The learned fit's overfitting grows with its evaluations, and its early
//! iterates are often more accurate than its last, and calibrated (n = 315, D = 9, 5 relevant
//! inputs, smooth, noise 0.05: test NMSE 0.028 and mean z² 0.15 after 60 evaluations, 0.017 and
//! 2.10 after 500; n = 200, D = 20: 0.529 and 1.53 after 30, 0.723 and 282 after 1 000). So from 55
//! held-out rows (n ≥ 220; 75 until the twenty-first session, below,
//! [`CalibrationGuard::EARLY_STOPPING_MIN_HELD_OUT_ROWS`](crate::ssgp::CalibrationGuard::EARLY_STOPPING_MIN_HELD_OUT_ROWS))
//! the check scores the learned fit on the 3/4 of the rows as it stood after 1/32, 1/16, …, 1 of
//! `max_evaluations` (one run: the optimiser's path before its budget ends does not depend on it,
//! so each stage is the fit with that budget, bit for bit, tested); the stage with the best
//! held-out MNLP is the learned candidate, and if it wins it is refitted on all rows with its
//! budget (`Remedy::HeldOut`'s `learned_budget`; the fit's termination is then the exhausted
//! budget, by design). On the messy tables below this took the default from 3 to 14 of 18 within
//! 1.1× the full GP's NMSE (n = 315, smooth, noise 0.05: 0.639 → 0.019, the full GP's 0.151; noise
//! 0.3: 0.732 → 0.266, the full GP's 0.359), and on the generated suite from 26 to 29 of 36 (n =
//! 500–1 000: D = 30, 0.449 → 0.225; D = 8, 0.80 → 0.56, the full GP's 0.71). On fewer held-out
//! rows the choice among six stages is itself fitted to the few rows: n = 50–60 kept learned fits
//! with test coverage 0.65–0.83, n = 200 with D = 20 one with 0.888; there the learned fit runs its
//! whole budget, as before.
//!
//! **Widened from 75 rows, by a clear lead.** From the same 75 held-out rows (55 since the
//! twenty-first session, below) a learned fit may be widened (narrowing waited for 100): its stage is chosen unscaled, as before, then scaled up if
//! the rows ask for it, and if it wins it is refitted on all rows with its budget and widened. A
//! widened learned fit must beat the random-feature fit by more than one standard error of the
//! row-by-row difference of their negative log predictive densities — the one-standard-error
//! rule of cross-validation (Breiman et al. 1984; Hastie, Tibshirani and Friedman, §7.10), which
//! prefers the simpler fit when the other's lead is within the noise of the held-out rows
//! (`Remedy::HeldOut`'s `random_features_by_margin`). On the messy tables (79 held-out rows) the
//! smooth function's replicated and coarse tables, whose learned fits were overconfident
//! unscaled (coverage 0.835 and 0.871, flagged), are widened ×1.6–1.7 and cover 0.918 and 0.949;
//! two tables that kept the random-feature fit at 2.1–2.3× the full GP's NMSE keep a learned fit
//! widened ×2.2–5.2 at 1.10–1.25×, a little underconfident (coverage 0.984–0.988): 12 of 18
//! calibrated (11 before), none overconfident but at 60 rows. Choosing the stage after widening
//! favoured later, more overfitted stages (n = 318, D = 9, every input three times: 125
//! evaluations widened ×11, test NMSE 0.34 against 0.25), and keeping the widened fit as measured
//! on 3/4 of the rows, as from 100, cost accuracy at n = 300 (the same table: 0.43). Without the
//! rule, two wide problems of the generated suite, whose learned fits interpolate their rows
//! (n = 300, D = 50 and 300, LOO NMSE 0.002–0.01), were widened ×2.4–4.8 and won by a hair, less
//! accurate than the mean on test data (NMSE 1.105); with it the suite's fits are those before on
//! seeds 1 and 3, and on seed 2 n = 300, D = 50 still wins by more (coverage 0.898, NMSE 1.17×
//! the full GP's, where the random-feature fit had 0.98×).
//!
//! **From 55 rows, narrowed on distinct inputs** (twenty-first session). With the thresholds
//! above at 75 rows, tables of 220–299 rows (55–74 held-out rows) kept the random-feature fit
//! where a learned fit stopped early was far more accurate. Now early stopping, the widening by a
//! clear lead and the training mean's one-standard-error rule start at 55 held-out rows, and
//! where those rows hold 55 distinct inputs a learned fit may be narrowed too: its refit on all
//! rows takes the noise level they asked for (`narrowed_to_the_measured_level`, as from 100 rows;
//! without it, the learned fits stopped early were mostly too wide, coverage up to 0.999, since
//! the refit on 4/3 of the rows is more accurate than the fit the rows scored). Measured on 24
//! generated tables of 230 and 270 rows (12 shapes: D = 1–50, smooth and rough, noise 0.01–0.3)
//! with SSGP seeds 1–3: test NMSE 1.52–1.59 → 0.82–0.95 times the full GP's (geometric means),
//! within 1.1× of it on 57 of 72 fits against 20, mean MNLP 1.61–1.63 → 1.30–1.39 (the full GP's
//! 1.31); calibrated 65 → 56 of 72 (the full GP: 20 of 24) — the misses a little too wide
//! (coverage 0.98–0.99) or a little overconfident (0.85–0.90, mean z² 1.5–2.0: 8 fits above
//! 1.5 against 5; the full GP 4 of 24). On tables with every input three times (79 held-out
//! rows, 27 distinct inputs) a narrowing counted by rows left a learned fit at coverage 0.82,
//! mean z² 2.14 (messy tables, seed 0): so the narrowing counts distinct inputs. The messy tables
//! (seeds 0–3) and the generated suite keep their counts; on the messy tables 15 of 72 learned
//! fits are narrowed ×0.58–0.99, their test MNLP lower on 12 (by up to 0.20), the same on one
//! and higher by 0.002 and 0.007 on two. A learned fit those rows widen is refitted on all rows
//! (below 100 held-out rows its factor does not carry over as measured), and on distinct inputs
//! it now takes the least widening the rows ask for, mean z²/(1 + 2√(2/rows)), as a
//! random-feature refit does: widened by the full factor, such refits on the messy tables covered
//! up to 0.989 of their test targets, and the messy tables (seeds 0–3) are calibrated on 53 of 72
//! against 47 (one fit overconfident that was not: coverage 0.927 → 0.895), the probe's tables
//! above on 58 of 72 against 56. With repeated inputs a learned refit keeps the full widening:
//! the least one left replicated tables' refits overconfident (coverage 0.870–0.884, README).
//!
//! **No factor narrows from few repeated inputs** (twenty-seventh session). Rows held out at one
//! input share its error, so their mean z² varies as over the distinct inputs, not the rows:
//! 50 inputs measured 12 times each held out 156 rows of about 13 inputs, and a narrowing those
//! rows asked for (×0.71, within chance of 13 inputs) left the random-feature fit at test
//! coverage 0.785 (mean z² 2.27, unflagged). Now a learned fit narrows only where the held-out
//! rows hold 55 distinct inputs (rows alone, from 100, no longer suffice), and the
//! random-feature fit and the training mean only where no held-out input repeats or as many are
//! held out. On 16 such tables (50 × 12 and 60 × 6 rows, noise 0.1 and 0.3, SSGP seeds 0–7) two
//! fits changed, both for the better (coverage 0.785 → 0.882 and 0.855 → 0.939); the messy
//! tables (seeds 0–3) keep their counts (one replicated table's mean kept unscaled: coverage
//! 0.917 → 0.959), and tables that repeat no input are untouched by construction.
//!
//! **What the check cannot see on replicated tables.** Held out a whole input at a time, such a
//! table shows the check about a quarter of its distinct inputs (13 of 50), and the error bars
//! between inputs are judged only as well as 13 inputs allow: on the 16 tables above, three
//! fits stay overconfident at new inputs and unflagged (test mean z² 1.56, 1.84 and 2.12,
//! coverage 0.82–0.89), within the chance of 13 inputs, as the n = 50 tables that repeat no
//! input are (`n50-D2` in the README's suite). Counting the chance by inputs instead widened
//! less, and flagging every table checked on fewer inputs would flag the n = 50 tables' good
//! fits too (tenth and twenty-seventh sessions). With a designed experiment, more settings
//! (distinct inputs) buy better-checked error bars than more replicates of the same ones.
//!
//! Above 2 000 points the learned fit is trained on all rows first and checked through a cheaper
//! proxy: both fits trained on a seeded half of the rows, the learned one with half the
//! evaluations the fit on all rows used, and scored on the other half as above — except that
//! the learned fit's factor may also widen it. If the learned proxy wins, the fit on all rows is
//! kept (its mean bit for bit) with its variances × s; else the random-feature fit is trained on
//! all rows and scaled. The exact LOO alone cannot do this: it holds the spectral points fixed,
//! so it counts 2m weights and not the mD frequencies fitted to the same rows, and as training
//! goes on the frequencies absorb noise — σn² falls while the error on unseen rows stays put (a
//! learned fit on 1 200 rows of an n = 2 400, D = 8 problem: held-out MSE 0.72–0.76 after 300,
//! 500 and 1 000 evaluations, σn² 0.68, 0.42, 0.26). Before the proxy, such a fit with an
//! honest-looking LOO was kept unchecked. Measured (m = 50, smooth, noise 0.1, n = 2 400): D = 30
//! with 10 relevant inputs, test NMSE 2.54 and mean z² 18.4 with a LOO mean z² of 1.01 → the
//! random-feature fit, NMSE 1.00, z² 1.09, flagged (the full GP: NMSE 0.90); D = 50 with 10
//! relevant, NMSE 2.76 and z² 46 → NMSE 1.00, z² 1.01; D = 50 with 3 relevant and D = 8, test z²
//! 2.21 and 2.12 (coverage 0.82, 0.83) → the learned fits widened ×2.08 and ×1.72, z² 1.06 and
//! 1.23, coverage 0.95 and 0.92, NMSE unchanged (0.0145, 0.0456). The proxy's halved rows make
//! it overfit more and its halved evaluations less, which roughly balance there; with 3/4 of the
//! rows and all the evaluations it widened D = 8 by 2.59 (coverage 0.97), with half the
//! evaluations but 3/4 of the rows by 1.69, and with 40 % of them by 1.34 (coverage 0.88).
//!
//! [`TrainingSummary::remedy`](crate::TrainingSummary) says
//! which fit was kept, why, and its factor ([`Remedy`](crate::Remedy), saved with the model from
//! format 4 on); `CalibrationGuard::Off` is the paper's fit alone,
//! `CalibrationGuard::RandomFeatures` the random-feature fit alone.
//!
//! Its cost: up to 2 000 points, a learned fit and a random-feature fit on 3/4 of the rows before
//! the kept fit (the random-feature fit trains two parameters: its design matrix does not change, so
//! it costs three passes over the rows — its sums, its conditioning, its LOO — and O(m³) per
//! evaluation; from n = 220 early stopping's six
//! stages are one run and six conditionings), so at most about 2× the learned fit's time and often less, when the
//! random-feature fit is kept or the learned fit stops early (on the generated suite below the
//! training took 105 s in all against 82 s for the learned fits alone; with early stopping, whose
//! refit of a winner runs its chosen budget only, 71 s on the idle VM, and 84 s with the stages
//! trained one by one); above, the proxy: a learned fit on half the rows with half the evaluations
//! (a quarter of the learned fit's evaluation work) and the random-feature fit's three passes. Kin-40k
//! (SSGP-200, seeds 1–3) trained 1.20× as long in interleaved runs on a loaded VM (1.15–1.26× per
//! seed); its fits are the learned ones, their means bit for bit (NMSE 0.0084/0.0086/0.0081) and
//! their variances widened ×1.25/×1.36/×1.22 (MNLP −0.974/−0.964/−0.990, against
//! −0.970/−0.966/−0.992 unwidened). With the crate's own linear algebra (the learned fits' paths
//! move with round-off): NMSE 0.0087/0.0090/0.0083, MNLP −0.955/−0.930/−0.987, 32–35 s of training
//! each on the idle VM (seed 1: 1.40× the time of the code before the check, two interleaved
//! pairs); the same fits in 24.5–25.1 s on 2026-11-26, with SSGP's evaluation 3–10 % faster (and
//! the VM faster that day).
//!
//! Measured on the generated suite of small and wide problems (`examples/calibration.rs`, 36
//! problems, m = 50, the README has the table): 33 of 36 fits calibrated (coverage in
//! [0.90, 0.98], mean z² ≤ 1.5) against 6 of 36 with `CalibrationGuard::Off`, and 29 of 36 with a
//! test NMSE within 1.1× the full GP's (14 of 36 off). **Not yet met (issue 17):** the issue asks
//! for every NMSE within 1.1× the full GP's. The misses: where the full GP itself resolves the
//! function (low noise, 100 ≤ n < 300, 3–5 relevant inputs) the random-feature fit with m = 50 is
//! calibrated but up to 3.5× less accurate (the held-out check still prefers it, the learned fit
//! being overconfident there and too few rows held out to widen or stop it); on n = 50 with D = 50
//! the full GP's lengthscales overfit and the random-feature fit inherits them (test mean z² 31);
//! and n = 100, D = 1, near noise-free, keeps a learned fit whose error bars are too wide (coverage
//! 1.000, flagged so). On the messy tables of [`crate::data::messy_suite`] (315 rows, 9 inputs,
//! with raw scales, replicated inputs, coarse columns, Student-t noise or 60 rows; `--suite
//! messy`): 11 of 18 calibrated and 14 of 18 within 1.1× the full GP's NMSE (13 and 3 before early
//! stopping); the misses are two learned fits a little underconfident (coverage 0.983–0.986), the
//! smooth function's replicated and coarse tables (overconfident, flagged), the rough one's
//! replicated table (coverage 0.894, flagged) and two of the 60-row tables.
//!
//! **The training mean** is scored on the held-out rows too: N(ȳ, var y) of the rows the fits
//! were trained on, scaled as they are. Unless the kept fit's held-out MNLP is lower than the
//! mean's — from 55 held-out rows, lower by more than one standard error of their row-by-row
//! difference (the one-standard-error rule, which also guards a widened learned fit) — the model
//! is the training mean on all rows ([`Remedy::mean_kept`](crate::Remedy::mean_kept)): every
//! prediction ȳ to the bit, every variance var y (× its factor), an SSGP whose σ0² is 10⁻⁴⁰ of
//! its σn². Such a model explains nothing by construction, so it is not flagged for that (nor
//! for a start fitted to the held-out rows, on which the mean does not depend); its error bars
//! are judged on the held-out rows, and `diagnosis()` says "predicts the training mean". Before
//! (2026-11-27), such fits predicted about the mean, as likely a little worse than it as a little
//! better, and were flagged for explaining little: on the generated suite, seeds 0–5, 67 fits
//! were bad on test data (61 flagged) and 29 of the 149 others were flagged; with the mean, 38
//! are bad (32 flagged) and 6 of the 178 others are flagged, with the same NMSE ratios and one
//! more fit calibrated. The cost: one more score of the held-out rows.
//!
//! # Failures are errors
//!
//! ```
//! use ssgp::{error::Error, Dataset, FullGp};
//!
//! // Noise-free targets fit (the default noise floor, 1e-4·var y); the summary says the noise
//! // sits at its floor. A constant target is an error that says why.
//! let rows: Vec<Vec<f64>> = (0..30).map(|i| vec![i as f64 / 10.0]).collect();
//! let smooth: Vec<f64> = rows.iter().map(|r| r[0].sin()).collect();
//! let fitted = FullGp::params().fit(&Dataset::from_rows(&rows, &smooth)?)?;
//! assert!(fitted.training().noise_at_floor);
//! let flat = Dataset::from_rows(&rows, &vec![1.0; 30])?;
//! assert!(matches!(FullGp::params().fit(&flat), Err(Error::ConstantTargets { .. })));
//! # Ok::<(), ssgp::Error>(())
//! ```
//!
//! Every bad input (empty data, shapes, NaN/∞, m = 0, a malformed CSV line) is a typed
//! [`Error`](crate::error::Error). A training that fails (a line search that cannot go on, an evaluation
//! that cannot be computed) is [`Error::TrainingFailed`](crate::error::Error::TrainingFailed) with the
//! best θ found, unless `best_effort(true)`; every fitted model says how its training ended
//! ([`TrainingSummary::termination`](crate::TrainingSummary)). A prediction that is not finite,
//! e.g. at inputs beyond what f64 resolves, is [`Error::Numerical`](crate::error::Error::Numerical), never
//! a NaN returned as a number.
//!
//! Sizes that come from you (m, n, test rows, draws, `chunk_rows`) are checked before anything of
//! their size is allocated: what memory cannot hold is
//! [`Error::Allocation`](crate::error::Error::Allocation), not an aborted process. One reserve is
//! not the crate's: on x86-64 with AVX2 the packed matrix product (`private-gemm-x86`) reserves
//! two buffers the size of the L3 cache on each thread that runs it (64 MB on a 32 MB L3; 520 MB
//! on a VM reporting 260 MB), whatever the product's size. It is address space, mostly never
//! touched, so only a limit on address space (`ulimit -v`) sees it: allow for it there.
//!
//! # Reproducibility
//!
//! A seed fixes every random draw (ChaCha12). On one machine a fit has the same bits on any
//! number of threads: the row chunks and the order of every reduction depend on the data and
//! settings only. Across CPUs results agree within round-off only (the SIMD paths differ), and a
//! long training may then end elsewhere; save the fitted model (feature `serde`,
//! `persist::save_json`) to reuse it exactly.
//!
//! # Gradients, several outputs, learning online
//!
//! **Gradients.** [`FittedRegressor::predict_gradients`](crate::FittedRegressor::predict_gradients)
//! gives ∂μ*/∂x* and ∂σ²*/∂x* (n*×D each) with the predictive, on every model: what Bayesian
//! optimisation (an acquisition's gradient), sensitivity analysis and model-based control need.
//! SSGP's cost is O(mD) per point for the mean and O(m² + mD) for the variance, about twice
//! `predict`. The Matérn ½ kernel is not differentiable at a training input; there its term is
//! dropped, which is the limit of the central difference.
//!
//! **Several outputs.** When the outputs are functions of the same inputs on similar scales of
//! variation (the torques of a robot's joints), [`SsgpParams::fit_multi`](crate::SsgpParams::fit_multi)
//! learns them on shared spectral points, lengthscales and noise-to-signal ratio with a signal
//! variance per output: one factorisation for all, and each output's data informs the others'
//! frequencies. Outputs with unrelated lengthscales are better fitted one by one. The fit is
//! checked as one output's is (the default [`CalibrationGuard::Check`](crate::ssgp::CalibrationGuard::Check)):
//! each output's LOO diagnostic, held-out calibration and variance factor are in
//! [`FittedMultiSsgp::output_training`](crate::ssgp::FittedMultiSsgp::output_training), and
//! `training().is_flagged()` says whether any output is flagged. An output that no fit explains
//! better than its training mean on the held-out rows predicts by that mean (N(ȳ_p, var y_p),
//! times its factor), as one output's fit would, and the others are fitted again without it
//! (a shared noise ratio with pure noise costs them accuracy).
//!
//! **Online.** `update` adds samples at fixed θ: SSGP by rank-one updates (O(m²) per sample, its
//! memory constant — the model keeps sufficient statistics, not data; keep the data yourself if
//! you will re-learn θ, which is one call, `Ssgp::params(m).fit(&all)`), the full GP by extending
//! its factor (O(n²) per sample; it keeps the data). Both keep the batch's target offset ȳ, so
//! they equal conditioning on all the data at θ with that offset. With drifting data, SSGP's
//! `update_forgetting(x, y, γ)` discounts older samples by γ per sample (the prior on the weights
//! is discounted too but restored whole whenever its share falls below ½, so it never drops
//! under half and directions the stream no longer visits fall back to it); re-learn
//! θ when the stream has left the batch's range far behind. The model tells you when: every
//! `update` records how it predicted the samples it adds before adding them
//! ([`FittedSsgp::prequential`](crate::FittedSsgp::prequential), and the full GP's: mean z² and
//! NMSE of the stream's one-step-ahead predictions); a mean z² above 1.5 and above 1 beyond
//! chance (`overconfident()`)
//! means the error bars have grown too narrow for the stream — with θ fixed, a finite-rank
//! posterior keeps tightening while its error does not (the robot arm example: z² 4.9 over
//! 20 000 samples). Multiply the predictive variances by `online_variance_factor()` (the recent
//! one-step-ahead mean z², never below 1) for error bars that hold on the stream (there:
//! coverage 0.93–0.95), and re-learn θ when it stays far above 1.
//!
//! ```
//! use ssgp::nalgebra::DMatrix;
//! use ssgp::{data::sinc_data, FittedRegressor, FullGp, ssgp::Ssgp};
//! use ssgp::rand::{rngs::StdRng, SeedableRng};
//!
//! let mut rng = StdRng::seed_from_u64(0);
//! let batch = sinc_data(60, false, 0.05, &mut rng)?;
//! let mut ssgp = Ssgp::params(10).seed(1).fit(&batch)?;
//! let mut full = FullGp::params().fit(&batch)?;
//! let more = sinc_data(20, false, 0.05, &mut rng)?;
//! ssgp.update(more.x(), more.y())?;                   // O(m²) per sample, θ kept
//! full.update(more.x(), more.y())?;                   // O(n²) per sample
//! let at = DMatrix::from_row_slice(2, 1, &[0.5, 2.0]);
//! for model in [&ssgp as &dyn FittedRegressor, &full] {
//!     let g = model.predict_gradients(&at)?;          // ∂μ/∂x, ∂σ²/∂x: 2×1 each
//!     assert_eq!(g.mean.shape(), (2, 1));
//! }
//! assert_eq!((ssgp.num_updates(), full.len()), (20, 80));
//! # Ok::<(), ssgp::Error>(())
//! ```
//!
//! # From scikit-learn, GPyTorch or GPflow
//!
//! | there | here |
//! |---|---|
//! | `GaussianProcessRegressor(kernel=RBF(ℓ) * C(σ0²) + WhiteKernel(σn²))` | [`FullGp::params()`](crate::FullGp::params) (SE-ARD with σ0², σn², one ℓ per input) |
//! | `gpr.fit(X, y)` | `params.fit(&Dataset::from_rows(&rows, &y)?)?` |
//! | `gpr.predict(X, return_std=True)` | `fitted.predict(&x)?` → `mean`, `y_variance` (y*, noise included), `f_variance` (f*) |
//! | `gpr.log_marginal_likelihood_value_` | `-fitted.neg_log_evidence()` |
//! | `gpr.sample_y(X, k)` | [`FittedSsgp::sample_posterior`](crate::FittedSsgp::sample_posterior) (functions you evaluate anywhere) |
//! | `n_restarts_optimizer=k` | [`Ensemble::restarts(&params, k, Combine::Best)`](crate::ensemble::Ensemble::restarts) |
//! | `normalize_y=True` | [`standardize::Standardized::new(params)`](crate::standardize::Standardized::new) |
//! | GPyTorch `ExactGP` | [`FullGp`](crate::FullGp) |
//! | GPyTorch `RFFKernel`, GPflux random Fourier features | [`Ssgp`](crate::ssgp::Ssgp) with `fixed_spectral_points(true)`; learned frequencies are SSGP's addition |
//! | GPflow `SGPR`, GPyTorch `InducingPointKernel` (SGPR) | [`Vfe`](crate::Vfe) (learned inducing inputs, the collapsed bound; `bound()` is GPflow's `elbo()`) |
//! | GPflow `GPRFITC` | [`Fitc`](crate::Fitc) (learned pseudo-inputs) |
//! | `torch.save` / `gpflow.utilities.freeze` | `persist::save_json(&fitted, path)` (feature `serde`) |
