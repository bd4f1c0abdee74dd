//! Change points of a series by E-divisive means (Matteson and James, "A
//! Nonparametric Approach for Multiple Change Point Analysis of
//! Multivariate Data", 2014), with the permutation test of significance, as
//! Apache Otava (formerly Hunter) computes them in its original form
//! (`compute_change_points_orig`): the series is split where the energy
//! distance between the two sides, weighted by their sizes (Q̂), is largest;
//! the split stands when its p-value (the share of the permutations within
//! the current segments that reach as large a Q̂, the observed split counted
//! among them) is at most `significance`; the segments are split
//! again until one does not. Then, as Otava's merge step, the change points
//! whose change of mean is smaller than `min_magnitude` are taken out one by
//! one, weakest first. Pure, and deterministic: the permutations come from a
//! seeded generator.

use super::rng::SplitMix64;

/// How change points are searched for and judged.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ChangeOptions {
    /// The largest permutation p-value a change point may have.
    pub significance: f64,
    /// The smallest change of the mean, relative (0.02 is 2 %), either way:
    /// the larger of after/before − 1 and before/after − 1, as Otava's.
    pub min_magnitude: f64,
    /// Permutations per test: the smallest p-value is 1 / (permutations + 1).
    pub permutations: usize,
    /// The permutations' seed: the same series and seed give the same answer.
    pub seed: u64,
    /// Search the ranks of the values (their order, ties sharing the mean
    /// rank): a step shows in the order whatever its scale, a fast segment's
    /// spread does not drown a slow one's, and an outlier weighs one rank,
    /// not its distance (on the values, or their logarithms, two values at
    /// half the level outweigh a 12 % step). `false` searches the values, as
    /// Otava does. The means and magnitudes are the values'.
    pub ranks: bool,
}

/// One change point of a series.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ChangePoint {
    /// The index of the first value after the change.
    pub index: usize,
    /// The size-weighted energy distance of the split that found it.
    pub qhat: f64,
    /// Its permutation p-value when it was found.
    pub p: f64,
    /// The mean of the segment before it and of the one after it (between
    /// its neighbouring change points).
    pub mean_before: f64,
    pub mean_after: f64,
}

impl ChangePoint {
    /// The change of the mean in % of the mean before.
    pub fn change_pct(&self) -> f64 {
        (self.mean_after - self.mean_before) / self.mean_before * 100.0
    }

    /// Otava's magnitude: the relative change, the larger of either way.
    pub fn magnitude(&self) -> f64 {
        magnitude(self.mean_before, self.mean_after)
    }
}

/// The rank of each value (0 for the smallest), equal values sharing the
/// mean of their ranks.
fn ranks(series: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..series.len()).collect();
    order.sort_by(|&a, &b| series[a].total_cmp(&series[b]));
    let mut ranked = vec![0.0; series.len()];
    let mut start = 0;
    while start < order.len() {
        let value = series[order[start]];
        let end = start + order[start..].partition_point(|&i| series[i] == value);
        let shared = (start + end - 1) as f64 / 2.0;
        for &i in &order[start..end] {
            ranked[i] = shared;
        }
        start = end;
    }
    ranked
}

fn magnitude(before: f64, after: f64) -> f64 {
    let forward = if before == 0.0 {
        0.0
    } else {
        after / before - 1.0
    };
    let backward = if after == 0.0 {
        0.0
    } else {
        before / after - 1.0
    };
    forward.abs().max(backward.abs())
}

/// The change points of `series`, in index order.
pub fn change_points(series: &[f64], options: &ChangeOptions) -> Vec<ChangePoint> {
    let mut rng = SplitMix64(options.seed);
    let ranked: Vec<f64>;
    let searched = match options.ranks {
        true => {
            ranked = ranks(series);
            &ranked[..]
        }
        false => series,
    };
    // Ranks lose the size of a gap, which places a step between a tight and
    // a spread segment an entry off: the ranks say whether a split stands,
    // the logarithms (the values, unless all are positive) where it is.
    let logs: Vec<f64> = match series.iter().all(|&x| x > 0.0) {
        true => series.iter().map(|x| x.ln()).collect(),
        false => series.to_vec(),
    };
    let mut found: Vec<(usize, f64, f64)> = Vec::new();
    loop {
        let cuts: Vec<usize> = found.iter().map(|&(index, _, _)| index).collect();
        let segments = segments(&cuts, series.len());
        let Some((index, qhat)) = best_split(searched, &segments) else {
            break;
        };
        let p = permutation_p(searched, &segments, qhat, options.permutations, &mut rng);
        if p > options.significance {
            break;
        }
        let index = match options.ranks {
            true => placed(&logs, &segments, index),
            false => index,
        };
        let at = found.partition_point(|&(i, _, _)| i < index);
        found.insert(at, (index, qhat, p));
    }
    drop_small(series, found, options.min_magnitude)
}

/// Takes out, weakest first, the change points whose magnitude is below
/// `min_magnitude` (the neighbours' means then span the merged segment), and
/// gives the rest with their means.
fn drop_small(series: &[f64], mut found: Vec<(usize, f64, f64)>, min: f64) -> Vec<ChangePoint> {
    loop {
        let points = with_means(series, &found);
        let weakest = points
            .iter()
            .enumerate()
            .filter(|(_, point)| point.magnitude() < min)
            .min_by(|(_, a), (_, b)| a.magnitude().total_cmp(&b.magnitude()));
        match weakest {
            Some((at, _)) => {
                found.remove(at);
            }
            None => return points,
        }
    }
}

fn with_means(series: &[f64], found: &[(usize, f64, f64)]) -> Vec<ChangePoint> {
    let cuts: Vec<usize> = found.iter().map(|&(index, _, _)| index).collect();
    let segments = segments(&cuts, series.len());
    let mean = |(start, end): (usize, usize)| {
        series[start..end].iter().sum::<f64>() / (end - start) as f64
    };
    found
        .iter()
        .enumerate()
        .map(|(i, &(index, qhat, p))| ChangePoint {
            index,
            qhat,
            p,
            mean_before: mean(segments[i]),
            mean_after: mean(segments[i + 1]),
        })
        .collect()
}

/// The segments `[start, end)` between the sorted `cuts` of a series of `len`.
fn segments(cuts: &[usize], len: usize) -> Vec<(usize, usize)> {
    let mut bounds = vec![0];
    bounds.extend(cuts.iter().copied());
    bounds.push(len);
    bounds.windows(2).map(|w| (w[0], w[1])).collect()
}

/// The best split over every segment: its index in the series and its Q̂.
fn best_split(series: &[f64], segments: &[(usize, usize)]) -> Option<(usize, f64)> {
    let mut scratch = Vec::new();
    let mut best: Option<(usize, f64)> = None;
    for &(start, end) in segments {
        if let Some((tau, qhat)) = best_in(&series[start..end], &mut scratch) {
            if best.is_none_or(|(_, q)| qhat > q) {
                best = Some((start + tau, qhat));
            }
        }
    }
    best
}

/// Where a split found at `index` is, within one entry of it: the place
/// whose Q̂ (the segment's rest as the second side) is largest on `x`.
fn placed(x: &[f64], segments: &[(usize, usize)], index: usize) -> usize {
    let Some(&(start, end)) = segments.iter().find(|&&(s, e)| s < index && index < e) else {
        return index;
    };
    let segment = &x[start..end];
    let candidates = (index - 1).max(start + 1)..=(index + 1).min(end - 1);
    let mut best = (index, f64::NEG_INFINITY);
    for at in candidates {
        let q = qhat_of(segment, at - start);
        // The first largest, or the one found where they tie.
        if q > best.1 || (q == best.1 && at == index) {
            best = (at, q);
        }
    }
    best.0
}

/// Q̂ of `x` split into `x[..tau]` and `x[tau..]`, by its definition.
fn qhat_of(x: &[f64], tau: usize) -> f64 {
    let (a, b) = x.split_at(tau);
    let (n, m) = (a.len() as f64, b.len() as f64);
    let sum = |p: &[f64], q: &[f64]| -> f64 {
        p.iter()
            .map(|u| q.iter().map(|v| (u - v).abs()).sum::<f64>())
            .sum()
    };
    let within = |p: &[f64], k: f64, count: f64| match count > 1.0 {
        true => 2.0 * k / ((m + n) * (count - 1.0)) * sum(p, p) / 2.0,
        false => 0.0,
    };
    2.0 / (m + n) * sum(a, b) - within(a, m, n) - within(b, n, m)
}

/// The p-value of a split whose Q̂ is `qhat`: the share of `permutations`
/// (values shuffled within each segment) whose best split reaches it, the
/// observed one counted among them.
fn permutation_p(
    series: &[f64],
    segments: &[(usize, usize)],
    qhat: f64,
    permutations: usize,
    rng: &mut SplitMix64,
) -> f64 {
    let mut shuffled = series.to_vec();
    let mut reached = 0usize;
    for _ in 0..permutations {
        shuffled.copy_from_slice(series);
        for &(start, end) in segments {
            rng.shuffle(&mut shuffled[start..end]);
        }
        if best_split(&shuffled, segments).is_some_and(|(_, q)| q >= qhat) {
            reached += 1;
        }
    }
    (reached + 1) as f64 / (permutations + 1) as f64
}

/// The split of `x` into `x[..τ]` and `x[τ..κ]` (κ ≤ len) whose Q̂ is
/// largest, over every τ and κ, as Otava's `PairDistanceCalculator`:
///
/// Q̂ = 2/(m+n) Σ|Xᵢ−Yⱼ| − 2m/((m+n)(n−1)) Σᵢ<ₖ|Xᵢ−Xₖ| − 2n/((m+n)(m−1)) Σⱼ<ₖ|Yⱼ−Yₖ|
///
/// with n = τ and m = κ − τ (a side of one value has no within term). The
/// first largest wins. `O(len²)` with column sums of the distances
/// (`scratch` keeps them between calls).
fn best_in(x: &[f64], scratch: &mut Vec<f64>) -> Option<(usize, f64)> {
    let len = x.len();
    if len < 2 {
        return None;
    }
    // sums[k * (len + 1) + i]: Σ_{j<i} |x_j − x_k|.
    let width = len + 1;
    scratch.clear();
    scratch.resize(len * width, 0.0);
    for k in 0..len {
        let row = &mut scratch[k * width..(k + 1) * width];
        for j in 0..len {
            row[j + 1] = row[j] + (x[j] - x[k]).abs();
        }
    }
    let sums = |k: usize, i: usize| scratch[k * width + i];
    let mut best: Option<(usize, f64)> = None;
    let mut within_x = 0.0;
    for tau in 1..len {
        // Σ over pairs of x[..tau].
        within_x += sums(tau - 1, tau - 1);
        let n = tau as f64;
        let (mut cross, mut within_y) = (0.0, 0.0);
        for kappa in tau + 1..=len {
            let last = kappa - 1;
            cross += sums(last, tau);
            within_y += sums(last, last) - sums(last, tau);
            let m = (kappa - tau) as f64;
            let mut q = 2.0 / (m + n) * cross;
            if tau > 1 {
                q -= 2.0 * m / ((m + n) * (n - 1.0)) * within_x;
            }
            if kappa - tau > 1 {
                q -= 2.0 * n / ((m + n) * (m - 1.0)) * within_y;
            }
            if best.is_none_or(|(_, b)| q > b) {
                best = Some((tau, q));
            }
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::normal::Normal;

    const OPTIONS: ChangeOptions = ChangeOptions {
        significance: 0.01,
        min_magnitude: 0.02,
        permutations: 199,
        seed: 1,
        ranks: false,
    };

    /// `levels` as (mean, count) with `noise` relative normal noise.
    fn series(levels: &[(f64, usize)], noise: f64, seed: u64) -> Vec<f64> {
        let mut normal = Normal(seed);
        levels
            .iter()
            .flat_map(|&(mean, count)| vec![mean; count])
            .map(|mean| mean * (1.0 + noise * normal.next()))
            .collect()
    }

    /// Q̂ by its definition, pair by pair.
    fn qhat_naive(x: &[f64], y: &[f64]) -> f64 {
        let (n, m) = (x.len() as f64, y.len() as f64);
        let cross: f64 = x
            .iter()
            .flat_map(|a| y.iter().map(move |b| (a - b).abs()))
            .sum();
        let within = |v: &[f64]| -> f64 {
            let mut sum = 0.0;
            for i in 0..v.len() {
                for k in i + 1..v.len() {
                    sum += (v[i] - v[k]).abs();
                }
            }
            sum
        };
        let mut q = 2.0 / (m + n) * cross;
        if x.len() > 1 {
            q -= 2.0 * m / ((m + n) * (n - 1.0)) * within(x);
        }
        if y.len() > 1 {
            q -= 2.0 * n / ((m + n) * (m - 1.0)) * within(y);
        }
        q
    }

    #[test]
    fn the_fast_qhat_is_the_definition() {
        let x = series(&[(10.0, 7), (13.0, 6)], 0.05, 3);
        let mut naive: Option<(usize, f64)> = None;
        for tau in 1..x.len() {
            for kappa in tau + 1..=x.len() {
                let q = qhat_naive(&x[..tau], &x[tau..kappa]);
                if naive.is_none_or(|(_, b)| q > b) {
                    naive = Some((tau, q));
                }
            }
        }
        let (tau, q) = best_in(&x, &mut Vec::new()).unwrap();
        let (naive_tau, naive_q) = naive.unwrap();
        assert_eq!(tau, naive_tau);
        assert!((q - naive_q).abs() < 1e-9 * naive_q.abs().max(1.0));
    }

    #[test]
    fn a_step_is_found_where_it_is_and_a_flat_series_has_none() {
        for seed in 1..=5 {
            let step = series(&[(100.0, 20), (90.0, 20)], 0.03, seed);
            let found = change_points(&step, &OPTIONS);
            assert_eq!(found.len(), 1, "seed {seed}: {found:?}");
            assert!(found[0].index.abs_diff(20) <= 1, "seed {seed}: {found:?}");
            assert!((found[0].change_pct() + 10.0).abs() < 3.0, "{found:?}");
            let flat = series(&[(100.0, 40)], 0.03, seed + 100);
            assert_eq!(change_points(&flat, &OPTIONS), [], "seed {seed}");
        }
    }

    #[test]
    fn two_steps_are_two_change_points() {
        let x = series(&[(50.0, 15), (60.0, 15), (45.0, 15)], 0.02, 9);
        let found: Vec<usize> = change_points(&x, &OPTIONS)
            .iter()
            .map(|c| c.index)
            .collect();
        assert_eq!(found, [15, 30]);
    }

    #[test]
    fn the_same_series_and_seed_give_the_same_answer() {
        let x = series(&[(100.0, 12), (97.0, 12)], 0.02, 4);
        let once = change_points(&x, &OPTIONS);
        assert_eq!(once, change_points(&x, &OPTIONS));
    }

    #[test]
    fn a_change_below_the_minimum_magnitude_is_dropped() {
        let x = series(&[(100.0, 30), (98.0, 30)], 0.002, 5);
        let loose = ChangeOptions {
            min_magnitude: 0.0,
            ..OPTIONS
        };
        assert_eq!(change_points(&x, &loose).len(), 1);
        let strict = ChangeOptions {
            min_magnitude: 0.05,
            ..OPTIONS
        };
        assert_eq!(change_points(&x, &strict), []);
    }

    /// A slow, tight segment before a fast, spread one (an emulated kernel's
    /// breakpoint rates): the values' energy distance is drowned by the
    /// fast segment's spread; their ranks' is not.
    #[test]
    fn ranks_find_a_ratio_that_a_wide_spread_hides() {
        let x = [
            50.0, 60.3, 52.0, 36.8, 36.6, 41.9, 102.7, 132.9, 385.4, 187.1, 115.3, 203.4, 186.4,
            398.2, 132.6, 117.6, 152.1, 111.9,
        ];
        let found = change_points(&x, &RANKS);
        assert_eq!(
            found.iter().map(|c| c.index).collect::<Vec<_>>(),
            [6],
            "{found:?}"
        );
        assert!(
            found[0].mean_after > 3.0 * found[0].mean_before,
            "the values' means"
        );
        assert_eq!(
            change_points(&x, &OPTIONS),
            [],
            "the values alone: p > 0.01"
        );
        let step = series(&[(100.0, 20), (90.0, 20)], 0.03, 1);
        assert_eq!(indices(&step, &RANKS), indices(&step, &OPTIONS));
    }

    fn indices(x: &[f64], options: &ChangeOptions) -> Vec<usize> {
        change_points(x, options).iter().map(|c| c.index).collect()
    }

    /// Issue 55's case: a -12 % step at 15 and a +7 % one at 35, and two
    /// values at half the level. Their distance outweighs the step's on the
    /// values and on the logarithms; one rank each does not.
    #[test]
    fn two_low_outliers_do_not_hide_a_step_from_the_ranks() {
        let mut x = series(&[(100.0, 15), (88.0, 20), (94.16, 15)], 0.03, 1);
        x[7] *= 0.5;
        x[26] *= 0.55;
        assert!(
            indices(&x, &RANKS).contains(&15),
            "{:?}",
            indices(&x, &RANKS)
        );
        let logs: Vec<f64> = x.iter().map(|v| v.ln()).collect();
        assert!(!indices(&logs, &OPTIONS).contains(&15));
    }

    const RANKS: ChangeOptions = ChangeOptions {
        ranks: true,
        ..OPTIONS
    };

    #[test]
    fn ties_share_their_mean_rank() {
        assert_eq!(ranks(&[3.0, 1.0, 3.0, 2.0]), [2.5, 0.0, 2.5, 1.0]);
    }

    #[test]
    fn short_and_constant_series_have_no_change() {
        assert_eq!(change_points(&[], &OPTIONS), []);
        assert_eq!(change_points(&[1.0], &OPTIONS), []);
        assert_eq!(change_points(&[5.0; 30], &OPTIONS), []);
    }
}
