//! Each rank's own rows: data stay where they are, and a rank reads only its share.

use super::cluster::Cluster;
use crate::data::{CsvOptions, Dataset};
use crate::error::{Error, Result};
use std::ops::Range;
use std::path::Path;

/// The rows of `total` that rank `rank` of `ranks` holds: contiguous ranges of equal size (±1,
/// the longer first) that cover 0..total in rank order; empty (total..total) for a rank beyond
/// the last.
pub fn row_share(total: usize, rank: usize, ranks: usize) -> Range<usize> {
    let ranks = ranks.max(1);
    if rank >= ranks {
        return total..total;
    }
    let (size, extra) = (total / ranks, total % ranks);
    let start = rank * size + rank.min(extra);
    start..start + size + usize::from(rank < extra)
}

/// Collective: this rank's share ([`row_share`]) of the data rows of one CSV file, read as
/// `options` say (any row range in them is replaced). Rank 0 counts the file's data rows
/// ([`Dataset::count_csv_rows`], no numbers parsed) and broadcasts the count, so every rank
/// shares out the same total; each rank then parses only its own rows. No data are
/// communicated, so the file must be readable at the same path on every rank (a shared file
/// system). With one file per rank, load it with [`Dataset::from_csv_with`] instead. If any rank
/// fails to load, every rank returns an error (so none goes on to wait in a collective).
///
/// # Errors
/// As [`Dataset::from_csv_with`]; [`Error::Distributed`] on a rank whose copy of the file ends
/// before its share does (and on the others); [`Error::EmptyCsv`] on every rank if its share is empty (more ranks than rows),
/// naming the counts; [`Error::Distributed`] if another rank failed, or on ranks other than 0
/// if rank 0 could not count the rows.
pub fn load_csv_share(
    path: impl AsRef<Path>,
    options: &CsvOptions,
    cluster: &Cluster,
) -> Result<Dataset> {
    let path = path.as_ref();
    let counted = if cluster.is_root() {
        Dataset::count_csv_rows(path, options).map(|total| vec![total as f64])
    } else {
        Ok(Vec::new())
    };
    let total = cluster.root_result(counted, 1)?[0] as usize;
    if total < cluster.size() {
        return Err(Error::EmptyCsv {
            path: path.to_path_buf(),
            reason: format!(
                "{total} data rows for {} ranks leave a rank without rows; run on at most \
                 {total} ranks",
                cluster.size()
            ),
        });
    }
    let share = row_share(total, cluster.rank(), cluster.size());
    let local = Dataset::from_csv_with(path, &options.clone().rows(share.clone())).and_then(|d| {
        if d.len() == share.len() {
            return Ok(d);
        }
        Err(Error::Distributed {
            what: format!(
                "{} read {} of its rows {}..{}: its copy has fewer than the {total} data rows \
                 rank 0 counted; every rank must read the same file",
                path.display(),
                d.len(),
                share.start,
                share.end
            ),
        })
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
            assert_eq!(row_share(total, ranks, ranks), total..total);
        }
    }
}
