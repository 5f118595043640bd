//! The one seeded generator of the crate and its standard normals. A leaf: it imports nothing
//! else from the crate, so every floor that draws (start values, predictive samples, ensembles)
//! takes its randomness from here.

use nalgebra::DMatrix;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha12Rng;
use rand_distr::StandardNormal;

/// The generator of every seeded draw of the crate: ChaCha12 seeded from a `u64`. Its stream is
/// fixed by the `rand_chacha` crate (rand's `StdRng`, today the same generator, may change between
/// releases), so a seed gives the same draws on any machine and version.
pub(crate) fn seeded(seed: u64) -> ChaCha12Rng {
    ChaCha12Rng::seed_from_u64(seed)
}

/// Fills `z` with independent N(0, 1) draws from `rng`, in column-major order.
pub(crate) fn fill_standard_normals<R: Rng + ?Sized>(z: &mut DMatrix<f64>, rng: &mut R) {
    z.iter_mut().for_each(|v| *v = rng.sample(StandardNormal));
}
