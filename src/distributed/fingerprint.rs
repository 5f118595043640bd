//! The settings of a distributed fit that change the model, compared across the ranks before
//! any other collective: ranks built with different settings would otherwise abort the job (a
//! different m or number of draws sends buffers of another length: `MPI_ERR_TRUNCATE`) or
//! return different models with the same −log p (a different noise floor or seed).
//!
//! Compared: m, the initial draws, the fixed spectral points and any initial frequencies, the
//! noise bound, the spectral density, the seed, the optimiser (its method, budgets and stopping
//! rule), the kernel, the noise floors (absolute and relative), the lengthscale start, best
//! effort, the calibration guard and the chunk size (it sets the order of each rank's sums, so
//! their bits). Not compared: threads, the cache size and the observer, which change neither
//! the model nor the collectives. The number of settings is compared first, so that ranks of
//! different builds are an error too.

use super::cluster::Cluster;
use crate::error::{Error, Result};
use crate::ssgp::ValidSsgpParams;

/// FNV-1a (64 bits) of `text`: stable across builds and machines, unlike `std`'s hasher.
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The settings that change the model, by name, each with its value written exactly (floats by
/// their bits).
fn settings(params: &ValidSsgpParams) -> Vec<(&'static str, String)> {
    let t = &params.training;
    let o = &t.optim;
    let w0 = params
        .initial_unit_frequencies
        .as_ref()
        .map(|w| {
            let bits: Vec<u64> = w.iter().map(|v| v.to_bits()).collect();
            format!("{}×{} {bits:?}", w.nrows(), w.ncols())
        })
        .unwrap_or_default();
    vec![
        ("m", params.m.to_string()),
        ("initial draws", params.initial_draws.to_string()),
        (
            "fixed spectral points",
            params.fixed_spectral_points.to_string(),
        ),
        ("initial unit frequencies", w0),
        ("noise bound", format!("{:?}", params.noise_bound)),
        ("spectral density", format!("{:?}", params.density)),
        ("seed", t.seed.to_string()),
        (
            "budgets",
            format!(
                "{} {} {:?}",
                o.max_iterations, o.max_evaluations, o.max_time
            ),
        ),
        (
            "stopping rule",
            format!(
                "{} {} {}",
                o.tolerance.to_bits(),
                o.window,
                o.gradient_tolerance.to_bits()
            ),
        ),
        ("optimiser", format!("{:?}", o.method.unwrap_or_default())),
        ("kernel", format!("{:?}", t.kernel)),
        ("noise floor", t.noise_floor.to_bits().to_string()),
        (
            "relative noise floor",
            t.relative_noise_floor.to_bits().to_string(),
        ),
        ("lengthscale start", format!("{:?}", t.lengthscales)),
        ("best effort", t.best_effort.to_string()),
        ("calibration guard", format!("{:?}", params.calibration)),
        ("chunk rows", params.chunk_rows.to_string()),
    ]
}

/// Collective: checks that every rank holds the same model-changing settings (one all-gather of
/// two numbers per setting: each setting's 64-bit fingerprint as two exact 32-bit halves).
///
/// # Errors
/// [`Error::Distributed`] on every rank when they differ, naming the settings and the ranks.
pub(crate) fn check_same_settings(params: &ValidSsgpParams, cluster: &Cluster) -> Result<()> {
    let named = settings(params);
    // The count of settings first: every rank reads the others' at this width.
    let count = [named.len() as f64];
    let counts = cluster.all_gather(&count)?;
    if counts.iter().any(|&c| c != count[0]) {
        return Err(Error::Distributed {
            what: format!(
                "the ranks compare different numbers of settings ({counts:?}): they run \
                 different builds of ssgp; build every rank from the same version"
            ),
        });
    }
    let local: Vec<f64> = named
        .iter()
        .flat_map(|(_, value)| {
            let h = fnv1a(value);
            [(h >> 32) as f64, (h & 0xffff_ffff) as f64]
        })
        .collect();
    let all = cluster.all_gather(&local)?;
    let width = local.len();
    let mut differing = Vec::new();
    for (k, (name, _)) in named.iter().enumerate() {
        let of = |rank: usize| &all[rank * width + 2 * k..rank * width + 2 * k + 2];
        let ranks: Vec<String> = (1..cluster.size())
            .filter(|&r| of(r) != of(0))
            .map(|r| r.to_string())
            .collect();
        if !ranks.is_empty() {
            differing.push(format!("{name} (rank {} against rank 0)", ranks.join(", ")));
        }
    }
    if differing.is_empty() {
        Ok(())
    } else {
        Err(Error::Distributed {
            what: format!(
                "the ranks were given different settings: {}; every setting that changes the \
                 model must be the same on every rank",
                differing.join("; ")
            ),
        })
    }
}
