//! Greedy conditional-variance selection of inducing inputs (Burt, Rasmussen & van der Wilk,
//! JMLR 2020, §3): a pivoted Cholesky factorisation of $K_{ff}$ that stops after m pivots.

use crate::init;
use crate::kernel::{self, Covariance};
use nalgebra::{DMatrix, DVector};

/// Residual variances below this fraction of the prior variance k(x, x) count as zero: a pivot
/// there would divide rounding errors by their own square root.
const MIN_RESIDUAL: f64 = 1e-12;

/// The rows of `x` (n×D) chosen one at a time, each the row whose prior variance the rows chosen
/// before it explain least: with $Z$ the rows chosen so far, the next is
/// $$\arg\max_i \; d_i, \qquad d_i = k(x_i, x_i) - Q_{ii}, \quad
///   Q_{ii} = k(x_i, Z)\,K_{ZZ}^{-1}\,k(Z, x_i),$$
/// lowest index on ties, never a row already chosen. The residuals are updated as a pivoted
/// Cholesky factor $L$ (n×m) of $K_{ff}$ grows: with pivot p,
/// $e = (k(X, x_p) - L_{:,<j}L_{p,<j}^⊤)/\sqrt{d_p}$ becomes column j of L and $d ← d - e∘e$:
/// O(nm² + nmD) flops, O(nm) memory. A pivot whose residual is not positive (a row that repeats
/// a chosen one, or m beyond what the kernel can tell apart) is taken without a column of its own
/// (it leaves every residual as it is); so is one whose residual is below [`MIN_RESIDUAL`]·k(x, x),
/// which rounding alone could produce.
///
/// Returns the m indices in the order chosen and the residuals d (n) after the last one (0 at the
/// chosen rows). Needs m ≤ n.
pub(crate) fn greedy_variance(
    x: &DMatrix<f64>,
    m: usize,
    covariance: &Covariance<'_>,
) -> (Vec<usize>, DVector<f64>) {
    let n = x.nrows();
    let z = kernel::scale_inputs(x, covariance.lengthscales);
    let prior = covariance.of_squared_distance(0.0);
    let mut d = DVector::from_element(n, prior);
    let mut chosen = vec![false; n];
    let mut l = DMatrix::<f64>::zeros(n, m);
    let mut columns = 0;
    let mut order = Vec::with_capacity(m);
    for _ in 0..m.min(n) {
        let Some(p) = (0..n)
            .filter(|&i| !chosen[i])
            .reduce(|best, i| if d[i] > d[best] { i } else { best })
        else {
            break;
        };
        chosen[p] = true;
        order.push(p);
        let dp = d[p];
        d[p] = 0.0;
        if dp.is_nan() || dp <= MIN_RESIDUAL * prior {
            continue;
        }
        let zp = z.row(p);
        let mut e = DVector::from_fn(n, |i, _| {
            covariance.of_squared_distance((z.row(i) - zp).norm_squared())
        });
        if columns > 0 {
            let past = l.columns(0, columns);
            e.gemv(-1.0, &past, &past.row(p).transpose(), 1.0);
        }
        e /= dp.sqrt();
        for i in 0..n {
            d[i] = if chosen[i] { 0.0 } else { d[i] - e[i] * e[i] };
        }
        l.set_column(columns, &e);
        columns += 1;
    }
    (order, d)
}

/// The rows of `x` (n×D) that [`greedy_variance`] chooses, in order (m×D) — but a row that
/// repeats one chosen before it (chosen once the distinct rows run out, at zero residual) is
/// replaced by a point drawn uniformly in the inputs' bounding box with `seed`, as the subset
/// start fills its shortfall ([`init::pseudo_inputs`]): m inputs with fewer than m distinct rows
/// were repeats, a K_uu singular but for its jitter and inducing inputs that stayed together.
///
/// # Errors
/// [`crate::error::Error::Allocation`] if the index of equal inputs cannot be allocated.
pub(crate) fn greedy_inputs(
    x: &DMatrix<f64>,
    m: usize,
    covariance: &Covariance<'_>,
    seed: u64,
) -> crate::error::Result<DMatrix<f64>> {
    let (order, _) = greedy_variance(x, m, covariance);
    let mut inputs = DMatrix::from_fn(order.len(), x.ncols(), |j, d| x[(order[j], d)]);
    let (group_of, groups) = crate::data::groups_of_equal_inputs(&inputs)?;
    let mut seen = vec![false; groups];
    let repeats: Vec<usize> = (0..order.len())
        .filter(|&j| std::mem::replace(&mut seen[group_of[j]], true))
        .collect();
    init::in_bounding_box(&mut inputs, repeats, x, &mut crate::random::seeded(seed));
    Ok(inputs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::Kernel;
    use rand::{Rng, SeedableRng};

    /// k(a_i, b_j) with r² = Σ_d (a_id − b_jd)²/ℓ_d² summed term by term (no cancellation).
    fn gram(a: &DMatrix<f64>, b: &DMatrix<f64>, cov: &Covariance<'_>) -> DMatrix<f64> {
        DMatrix::from_fn(a.nrows(), b.nrows(), |i, j| {
            let r2 = (0..a.ncols())
                .map(|d| ((a[(i, d)] - b[(j, d)]) / cov.lengthscales[d]).powi(2))
                .sum();
            cov.of_squared_distance(r2)
        })
    }

    /// diag(K_ff − K_fZ K_ZZ⁻¹ K_Zf) by a dense Cholesky of K_ZZ (no pivoting): the definition.
    fn dense_residuals(x: &DMatrix<f64>, rows: &[usize], cov: &Covariance<'_>) -> DVector<f64> {
        let k_ff_diag = cov.of_squared_distance(0.0);
        if rows.is_empty() {
            return DVector::from_element(x.nrows(), k_ff_diag);
        }
        let z = DMatrix::from_fn(rows.len(), x.ncols(), |j, d| x[(rows[j], d)]);
        let k_zz = gram(&z, &z, cov);
        let k_zf = gram(&z, x, cov);
        let chol = k_zz.cholesky().expect("K_ZZ of distinct points");
        let v = chol.l().solve_lower_triangular(&k_zf).expect("solve");
        DVector::from_fn(x.nrows(), |i, _| k_ff_diag - v.column(i).norm_squared())
    }

    fn problem(n: usize, dim: usize, seed: u64) -> DMatrix<f64> {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        DMatrix::from_fn(n, dim, |_, _| rng.random_range(-2.0..2.0))
    }

    /// Every choice is the argmax of the dense residual variance given the rows chosen before
    /// it, and the residuals returned are the dense ones after the last choice.
    #[test]
    fn each_pivot_maximises_the_dense_residual_variance() {
        let x = problem(60, 3, 4);
        let ell = DVector::from_vec(vec![0.8, 1.5, 0.6]);
        for kernel in Kernel::ALL {
            let cov = Covariance {
                kernel,
                lengthscales: &ell,
                signal_variance: 1.7,
            };
            let m = 12;
            let (order, d) = greedy_variance(&x, m, &cov);
            assert_eq!(order.len(), m);
            for j in 0..m {
                let dense = dense_residuals(&x, &order[..j], &cov);
                let best = dense.max();
                assert!(
                    dense[order[j]] >= best - 1e-10,
                    "{kernel:?} pivot {j}: residual {} against the largest {best}",
                    dense[order[j]]
                );
            }
            let dense = dense_residuals(&x, &order, &cov);
            for i in 0..x.nrows() {
                assert!(
                    (d[i] - dense[i]).abs() < 1e-10,
                    "{kernel:?} row {i}: {} against dense {}",
                    d[i],
                    dense[i]
                );
            }
        }
    }

    #[test]
    fn chosen_rows_are_distinct_and_deterministic() {
        let mut x = problem(40, 2, 9);
        for i in 20..40 {
            let row = x.row(i - 20).into_owned();
            x.set_row(i, &row);
        }
        let ell = DVector::from_vec(vec![3.0, 3.0]);
        let cov = Covariance {
            kernel: Kernel::SquaredExponential,
            lengthscales: &ell,
            signal_variance: 1.0,
        };
        let (order, _) = greedy_variance(&x, 30, &cov);
        let mut sorted = order.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 30, "distinct indices");
        assert_eq!(greedy_variance(&x, 30, &cov).0, order);
        // 20 distinct inputs, each twice: the 20 distinct ones are chosen first, and the 10
        // picks that repeat one of them are points of the bounding box instead.
        let inputs = greedy_inputs(&x, 30, &cov, 0).unwrap();
        for (j, &i) in order.iter().enumerate() {
            let repeat = order[..j].iter().any(|&k| x.row(k) == x.row(i));
            assert_eq!(repeat, j >= 20, "pick {j}");
            if repeat {
                assert!((0..40).all(|k| x.row(k) != inputs.row(j)), "pick {j}");
                for d in 0..2 {
                    let c = x.column(d);
                    assert!((c.min()..=c.max()).contains(&inputs[(j, d)]), "pick {j}");
                }
            } else {
                assert_eq!(inputs.row(j), x.row(i));
            }
        }
        assert_eq!(greedy_inputs(&x, 30, &cov, 0).unwrap(), inputs);
    }
}
