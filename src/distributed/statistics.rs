//! The global statistics of data spread over the ranks, all-reduced from each rank's rows: what
//! the start values (§4.2) and the centring of inputs and targets need, without gathering data.

use super::cluster::Cluster;
use crate::data::{Dataset, InputColumns};
use crate::error::{Error, Result};
use nalgebra::DVector;

/// n, the column minima, maxima and means of x (D each), ȳ, var y = (1/n) Σ (y_i − ȳ)², the
/// targets' extremes and spread over the rows of every rank. Four collectives — maxima of 2 and
/// 2D + 2 values, sums of 2 + D and of 1 value — and a fifth, a sum of 1 value, only where the
/// squares of the targets' deviations overflow or underflow f64.
#[derive(Debug, Clone, PartialEq)]
pub struct GlobalStatistics {
    /// The number of rows over all ranks.
    pub n: usize,
    /// Column minima of x (D).
    pub min: DVector<f64>,
    /// Column maxima of x (D).
    pub max: DVector<f64>,
    /// Column means of x (D).
    pub mean: DVector<f64>,
    /// ȳ.
    pub y_mean: f64,
    /// var y (the 1/n variance).
    pub y_variance: f64,
    /// The smallest target.
    pub y_min: f64,
    /// The largest target.
    pub y_max: f64,
    /// The targets' spread √var y, taken relative to their largest deviation from ȳ where the
    /// plain squares overflow or underflow (as one process's fit takes it).
    pub y_spread: f64,
}

impl GlobalStatistics {
    /// Collective: the statistics of the rows of every rank's `local` data.
    ///
    /// # Errors
    /// [`Error::Distributed`] on every rank if the ranks' data disagree on D.
    pub fn all_reduce(local: &Dataset, cluster: &Cluster) -> Result<Self> {
        let (x, y) = (local.x(), local.y());
        let d = x.ncols();
        // D agrees when max D = −max(−D); checked first, in buffers of the same length on every
        // rank, before any buffer whose length depends on D.
        let mut dims = [d as f64, -(d as f64)];
        cluster.max(&mut dims);
        let (d_max, d_min) = (dims[0], -dims[1]);
        if d_max != d_min {
            return Err(Error::Distributed {
                what: format!(
                    "the ranks' data have between {d_min} and {d_max} input columns (this rank: {d})"
                ),
            });
        }
        // Maxima of [max x_d, −min x_d, max y, −min y].
        let mut reduced = Vec::with_capacity(2 * d + 2);
        reduced.extend(x.column_iter().map(|c| c.max()));
        reduced.extend(x.column_iter().map(|c| -c.min()));
        reduced.push(y.max());
        reduced.push(-y.min());
        cluster.max(&mut reduced);
        let max = DVector::from_column_slice(&reduced[..d]);
        let min = DVector::from_iterator(d, reduced[d..2 * d].iter().map(|v| -v));
        let (y_max, y_min) = (reduced[2 * d], -reduced[2 * d + 1]);
        // Sums of [n, Σ x_d, Σ y].
        let mut sums = Vec::with_capacity(2 + d);
        sums.push(x.nrows() as f64);
        sums.extend(x.column_iter().map(|c| c.sum()));
        sums.push(y.sum());
        cluster.sum(&mut sums);
        let n_total = sums[0];
        let mean = DVector::from_iterator(d, sums[1..1 + d].iter().map(|s| s / n_total));
        let y_mean = sums[1 + d] / n_total;
        let mut squares = [y.iter().map(|v| (v - y_mean).powi(2)).sum::<f64>()];
        cluster.sum(&mut squares);
        let y_variance = squares[0] / n_total;
        // Every rank holds the same sums, so every rank takes the same branch (and collective).
        let mut y_spread = y_variance.sqrt();
        let largest = (y_max - y_mean).max(y_mean - y_min);
        if !crate::data::plain_spread_holds(y_spread) && largest.is_finite() && largest > 0.0 {
            let mut relative = [y
                .iter()
                .map(|v| ((v - y_mean) / largest).powi(2))
                .sum::<f64>()];
            cluster.sum(&mut relative);
            y_spread = largest * (relative[0] / n_total).sqrt();
        }
        Ok(Self {
            n: n_total as usize,
            min,
            max,
            mean,
            y_mean,
            y_variance,
            y_min,
            y_max,
            y_spread,
        })
    }

    /// One process's [`Dataset`] target checks on the rows of every rank: the targets' spread.
    ///
    /// # Errors
    /// [`Error::ConstantTargets`] if every target on every rank is the same number (their
    /// all-reduced mean may differ from it by round-off); [`Error::Scale`] naming the spread and
    /// the remedy for a spread outside
    /// [`SMALLEST_TARGET_SPREAD`](crate::data::SMALLEST_TARGET_SPREAD)..=[`LARGEST_TARGET_SPREAD`](crate::data::LARGEST_TARGET_SPREAD).
    pub fn check_target_spread(&self) -> Result<f64> {
        if self.y_min == self.y_max {
            return Err(Error::ConstantTargets { value: self.y_min });
        }
        crate::data::check_spread_value(self.y_spread)
    }

    /// The input columns that vary over all ranks (largest value above the smallest).
    ///
    /// # Errors
    /// [`Error::EmptyData`] if every column is constant (the same on every rank).
    pub fn varying_columns(&self) -> Result<InputColumns> {
        let used: Vec<usize> = (0..self.min.len())
            .filter(|&d| self.max[d] > self.min[d])
            .collect();
        InputColumns::from_used(self.min.len(), used)
    }

    /// ℓ_d = half the range of each used column (the paper's start, §4.2).
    pub(crate) fn half_ranges(&self, columns: &InputColumns) -> DVector<f64> {
        DVector::from_iterator(
            columns.used().len(),
            columns
                .used()
                .iter()
                .map(|&d| 0.5 * (self.max[d] - self.min[d])),
        )
    }

    /// The column means of the used columns.
    pub(crate) fn used_means(&self, columns: &InputColumns) -> DVector<f64> {
        DVector::from_iterator(
            columns.used().len(),
            columns.used().iter().map(|&d| self.mean[d]),
        )
    }
}
