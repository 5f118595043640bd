//! Each rank's own rows: data stay where they are, and a rank reads only its share.

use super::cluster::Cluster;
use crate::data::{CsvOptions, Dataset};
use crate::error::Result;
use std::ops::Range;
use std::path::Path;

/// The rows of `total` that rank `rank` of `ranks` holds: contiguous ranges of equal size (±1,
/// the longer first) that cover 0..total in rank order.
pub fn row_share(total: usize, rank: usize, ranks: usize) -> Range<usize> {
    let ranks = ranks.max(1);
    let (size, extra) = (total / ranks, total % ranks);
    let start = rank * size + rank.min(extra);
    start..start + size + usize::from(rank < extra)
}

/// Collective: this rank's share ([`row_share`]) of the data rows of one CSV file, read as
/// `options` say (any row range in them is replaced). Every rank counts the file's data rows
/// itself ([`Dataset::count_csv_rows`], no numbers parsed) and then parses only its own; no data
/// are communicated, so the file must be readable at the same path on every rank (a shared file
/// system). With one file per rank, load it with [`Dataset::from_csv_with`] instead. If any rank
/// fails to load, every rank returns an error (so none goes on to wait in a collective).
///
/// # Errors
/// As [`Dataset::from_csv_with`]; [`crate::error::Error::EmptyCsv`] if this rank's share is empty
/// (more ranks than rows); [`crate::error::Error::Distributed`] if another rank failed.
pub fn load_csv_share(
    path: impl AsRef<Path>,
    options: &CsvOptions,
    cluster: &Cluster,
) -> Result<Dataset> {
    let path = path.as_ref();
    let local = Dataset::count_csv_rows(path, options).and_then(|total| {
        let share = row_share(total, cluster.rank(), cluster.size());
        Dataset::from_csv_with(path, &options.clone().rows(share))
    });
    cluster.agree(local)
}

#[cfg(test)]
mod tests {
    use super::row_share;

    #[test]
    fn shares_cover_the_rows_once_in_rank_order() {
        for (total, ranks) in [(10, 3), (10_000, 4), (5, 8), (0, 2), (7, 1)] {
            let mut next = 0;
            for rank in 0..ranks {
                let share = row_share(total, rank, ranks);
                assert_eq!(share.start, next);
                assert!(share.len() == total / ranks || share.len() == total / ranks + 1);
                next = share.end;
            }
            assert_eq!(next, total);
        }
    }
}
