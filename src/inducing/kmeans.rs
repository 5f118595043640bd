//! Lloyd's k-means, the other usual start of inducing inputs (GPflow's and GPyTorch's examples
//! start SGPR from k-means centres or a random subset).

use crate::kernel;
use crate::linalg::Par;
use nalgebra::DMatrix;

/// Lloyd's k-means on the rows of `x` (n×D) from the centres `start` (m×D, e.g. a seeded subset
/// of the rows), at most `iterations` rounds: each point is assigned to its nearest centre in
/// inputs scaled by their column standard deviations (lowest index on ties), then each centre
/// moves to the mean of its points (a centre left without points stays). Stops early when no
/// assignment changes. Deterministic: O(nmD) per round, sequential.
pub(crate) fn kmeans(x: &DMatrix<f64>, start: DMatrix<f64>, iterations: usize) -> DMatrix<f64> {
    let (n, dim) = x.shape();
    let m = start.nrows();
    let scales: Vec<f64> = x
        .column_iter()
        .map(|c| c.variance().sqrt())
        .map(|s| if s > 0.0 { s } else { 1.0 })
        .collect();
    let scaled = |a: &DMatrix<f64>| {
        let mut z = a.clone();
        for (d, mut col) in z.column_iter_mut().enumerate() {
            col /= scales[d];
        }
        z
    };
    let zx = scaled(x);
    let mut centres = start;
    let mut assignment = vec![usize::MAX; n];
    for _ in 0..iterations {
        let d2 = kernel::squared_distances(&zx, &scaled(&centres), Par::Seq);
        let mut changed = false;
        for (i, slot) in assignment.iter_mut().enumerate() {
            let mut best = 0;
            for j in 1..m {
                if d2[(i, j)] < d2[(i, best)] {
                    best = j;
                }
            }
            changed |= *slot != best;
            *slot = best;
        }
        if !changed {
            break;
        }
        let mut sums = DMatrix::<f64>::zeros(m, dim);
        let mut counts = vec![0usize; m];
        for (i, &j) in assignment.iter().enumerate() {
            counts[j] += 1;
            for d in 0..dim {
                sums[(j, d)] += x[(i, d)];
            }
        }
        for (j, &count) in counts.iter().enumerate() {
            if count > 0 {
                for d in 0..dim {
                    centres[(j, d)] = sums[(j, d)] / count as f64;
                }
            }
        }
    }
    centres
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_clusters_are_found_from_a_poor_start() {
        let x = DMatrix::from_fn(40, 2, |i, d| {
            let base = if i < 20 { -5.0 } else { 5.0 };
            base + 0.1 * ((i * 7 + d * 3) % 5) as f64
        });
        let start = DMatrix::from_row_slice(2, 2, &[-5.0, -5.0, -4.9, -4.9]);
        let c = kmeans(&x, start, 50);
        let mean = |r: std::ops::Range<usize>, d: usize| {
            r.clone().map(|i| x[(i, d)]).sum::<f64>() / r.len() as f64
        };
        for d in 0..2 {
            assert!((c[(0, d)] - mean(0..20, d)).abs() < 1e-12);
            assert!((c[(1, d)] - mean(20..40, d)).abs() < 1e-12);
        }
    }
}
