//! Held-out splits of a training set's rows: whole groups of equal inputs in a seeded shuffle,
//! the first of them held out (SSGP's calibration check, and the held-out check of the full GP,
//! FITC and VFE).

use nalgebra::DVector;
use rand::seq::SliceRandom;
use std::ops::Range;

/// The rows in a seeded order whose first `held` are held out, from each row's group of equal
/// inputs and the groups' count ([`groups_of_equal_inputs`](super::groups_of_equal_inputs)): whole groups in a seeded shuffle,
/// taken until at least `target` rows
/// are held (at least one group is left to train on). Without repeated inputs the order is the
/// seeded shuffle of the rows and `held` = `target`. With repeats, a split of single rows
/// would score a fit on rows whose inputs it was trained on, noise apart, and find it accurate
/// and calibrated where it is neither: n = 315, D = 9, each input three times — the check kept
/// fits whose test coverage was 0.16–0.70, their held-out z² 1.0–1.5.
pub(crate) struct HeldOutSplit {
    pub(crate) order: Vec<usize>,
    pub(crate) held: usize,
    /// The distinct inputs (groups) among the held-out rows.
    pub(crate) held_inputs: usize,
}

/// How many seeds [`split_leaving_targets_varying`] tries.
const SPLIT_SEEDS: u64 = 16;

/// [`held_out_split`] with the seed `seed`, moved on by `step` (seed + step, …, at most
/// [`SPLIT_SEEDS`] seeds; across MPI ranks `step` is the ranks' count, and `varies` is collective)
/// while `varies` says the rows left to train on (`order[held..]`) have constant targets: targets constant but for a few rows (a spike, a rare event) held out left the fits
/// nothing to learn and the training mean a variance of 0, and the fit failed ("predictive
/// variance 0 is not positive", a quarter of the seeds on 40–300 rows with one spike). A table
/// whose first split leaves its targets varying is split as before.
pub(crate) fn split_leaving_targets_varying(
    groups: (&[usize], usize),
    target: usize,
    (seed, step): (u64, u64),
    mut varies: impl FnMut(&[usize]) -> bool,
) -> HeldOutSplit {
    let mut split = held_out_split(groups, target, seed);
    for k in 1..SPLIT_SEEDS {
        if varies(&split.order[split.held..]) {
            break;
        }
        split = held_out_split(groups, target, seed.wrapping_add(k.wrapping_mul(step)));
    }
    split
}

/// Whether `y` (n) takes more than one value on `rows`.
pub(crate) fn varies_on(y: &DVector<f64>, rows: &[usize]) -> bool {
    rows.first()
        .is_some_and(|&first| rows.iter().any(|&i| y[i] != y[first]))
}

pub(crate) fn held_out_split(
    (group_of, count): (&[usize], usize),
    target: usize,
    seed: u64,
) -> HeldOutSplit {
    let mut groups: Vec<usize> = (0..count).collect();
    groups.shuffle(&mut crate::random::seeded(seed));
    let mut size = vec![0; count];
    group_of.iter().for_each(|&g| size[g] += 1);
    let (mut held, mut taken) = (0, 0);
    while held < target && taken + 1 < count {
        held += size[groups[taken]];
        taken += 1;
    }
    // The rows, group after group in the shuffled order (each group's rows in index order): a
    // counting sort by the groups' places.
    let mut start = vec![0; count];
    let mut next = 0;
    for &g in &groups {
        start[g] = next;
        next += size[g];
    }
    let mut order = vec![0; group_of.len()];
    for (row, &g) in group_of.iter().enumerate() {
        order[start[g]] = row;
        start[g] += 1;
    }
    HeldOutSplit {
        order,
        held,
        held_inputs: taken,
    }
}

/// The `k` folds of `order` (whole groups one after another, as [`held_out_split`] orders the
/// rows; `group_of` each row's group): contiguous ranges of `order`, the j-th ending at the
/// first boundary between groups at or after j·n/k rows — every row in one fold, no group in
/// two; fewer than `k` (none empty) where groups are larger than a fold.
pub(crate) fn folds(order: &[usize], group_of: &[usize], k: usize) -> Vec<Range<usize>> {
    let n = order.len();
    let mut folds = Vec::with_capacity(k);
    let mut start = 0;
    for j in 1..=k {
        let mut end = (j * n / k.max(1)).max(start);
        while end > 0 && end < n && group_of[order[end]] == group_of[order[end - 1]] {
            end += 1;
        }
        if end > start {
            folds.push(start..end);
        }
        start = end;
    }
    folds
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{groups_of_equal_inputs, Dataset};
    use nalgebra::DMatrix;

    /// Without repeated inputs the split is the seeded shuffle of the rows with n/4 held out, as
    /// before groups (the suite's fits are the same bits); with every input three times, no input
    /// is on both sides, and the held-out count is the target rounded up to whole groups.
    #[test]
    fn the_held_out_rows_never_share_an_input_with_the_rows_trained_on() {
        let n = 90;
        let x = DMatrix::from_fn(n, 2, |i, j| (i * 7 + j * 3) as f64 * 0.1);
        let y = DVector::from_fn(n, |i, _| (i as f64).sin());
        let distinct = Dataset::new(x.clone(), y.clone()).unwrap();
        let g = groups_of_equal_inputs(distinct.x()).unwrap();
        let split = held_out_split((&g.0, g.1), n / 4, 5);
        let mut rows: Vec<usize> = (0..n).collect();
        rows.shuffle(&mut crate::random::seeded(5));
        assert_eq!((split.order, split.held), (rows, n / 4));

        let repeated = DMatrix::from_fn(n, 2, |i, j| x[(i / 3, j)]);
        let data = Dataset::new(repeated, y).unwrap();
        let g = groups_of_equal_inputs(data.x()).unwrap();
        let split = held_out_split((&g.0, g.1), n / 4, 5);
        assert_eq!(split.held, 24, "22 rows rounded up to 8 groups of 3");
        let (held, fit) = split.order.split_at(split.held);
        let mut all: Vec<usize> = split.order.clone();
        all.sort_unstable();
        assert_eq!(all, (0..n).collect::<Vec<_>>());
        for &h in held {
            assert!(
                fit.iter().all(|&f| data.x().row(f) != data.x().row(h)),
                "row {h}"
            );
        }
    }

    /// One group of everything but one point: the split still leaves a group to train on.
    #[test]
    fn the_split_leaves_rows_to_train_on() {
        let x = DMatrix::from_fn(40, 1, |i, _| if i == 0 { 1.0 } else { 0.0 });
        let data = Dataset::new(x, DVector::from_fn(40, |i, _| i as f64)).unwrap();
        for seed in 0..8 {
            let g = groups_of_equal_inputs(data.x()).unwrap();
            let split = held_out_split((&g.0, g.1), 10, seed);
            assert!(
                split.held >= 1 && split.held < 40,
                "seed {seed}: {}",
                split.held
            );
        }
    }

    /// The held-out inputs the split counts: every row's own without repeats, the groups taken
    /// with them.
    #[test]
    fn the_split_counts_its_held_out_inputs() {
        let g: Vec<usize> = (0..120).map(|i| i / 3).collect();
        let split = held_out_split((&g, 40), 30, 3);
        assert_eq!((split.held, split.held_inputs), (30, 10));
        let mut held: Vec<usize> = split.order[..split.held].iter().map(|&r| g[r]).collect();
        held.dedup();
        assert_eq!(held.len(), 10);
        let distinct: Vec<usize> = (0..120).collect();
        let split = held_out_split((&distinct, 120), 30, 3);
        assert_eq!((split.held, split.held_inputs), (30, 30));
    }

    /// Four folds of whole groups cover every row once: 90 rows of 30 inputs three times each
    /// give folds of 24, 21, 24 and 21 rows (22.5 rounded to whole groups); without repeats,
    /// n/4 each; one group of all but a few rows leaves fewer folds.
    #[test]
    fn the_folds_cover_every_row_once_in_whole_groups() {
        let g: Vec<usize> = (0..90).map(|i| i / 3).collect();
        let split = held_out_split((&g, 30), 22, 5);
        let f = folds(&split.order, &g, 4);
        let sizes: Vec<usize> = f.iter().map(|r| r.len()).collect();
        assert_eq!(sizes, [24, 21, 24, 21]);
        for (a, b) in f.iter().zip(&f[1..]) {
            assert_eq!(a.end, b.start);
            assert_ne!(g[split.order[a.end - 1]], g[split.order[b.start]]);
        }
        assert_eq!((f[0].start, f[3].end), (0, 90));
        let distinct: Vec<usize> = (0..100).collect();
        let sizes: Vec<usize> = folds(&distinct, &distinct, 4)
            .iter()
            .map(|r| r.len())
            .collect();
        assert_eq!(sizes, [25, 25, 25, 25]);
        let big: Vec<usize> = (0..40).map(|i| usize::from(i >= 37)).collect();
        let order: Vec<usize> = (0..40).collect();
        assert_eq!(folds(&order, &big, 4), [0..37, 37..40]);
    }
}
