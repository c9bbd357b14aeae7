//! Paired statistics for two runs of the same tasks (docs/compare.md): the
//! flip table, McNemar's exact test, multiplicity corrections, divergences of
//! the choice distributions, the equivalence verdict and the cluster
//! bootstrap. Pure functions; the bootstrap over tasks is [`crate::stats::Bootstrap`].

use rayon::prelude::*;
use serde::Serialize;

use crate::stats::{nearest_rank, sorted, SplitMix64};

/// How the picks of two runs relate, task by task.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Flips {
    /// Right under BASE, wrong under OTHER (McNemar's b).
    pub right_to_wrong: usize,
    /// Wrong under BASE, right under OTHER (McNemar's c).
    pub wrong_to_right: usize,
    /// Wrong under both, with different picks.
    pub wrong_to_other_wrong: usize,
    /// Right under both.
    pub both_right: usize,
    /// Wrong under both, with the same pick.
    pub both_wrong: usize,
    /// Tasks where both runs picked the same option.
    pub same_pick: usize,
}

/// One task as one run scored it: whether the pick was right, and the pick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pick {
    /// Whether the picked option is right (its label is 1).
    pub right: bool,
    /// The picked option's index.
    pub option: usize,
}

/// Which cell of the flip table one task falls in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Flip {
    /// Right under both.
    BothRight,
    /// Right under BASE, wrong under OTHER.
    RightToWrong,
    /// Wrong under BASE, right under OTHER.
    WrongToRight,
    /// Wrong under both, with the same pick.
    BothWrong,
    /// Wrong under both, with different picks.
    WrongToOtherWrong,
}

impl Flip {
    /// Every cell, in the order of their codes (`flip as u8`).
    pub const ALL: [Flip; 5] = [Flip::BothRight, Flip::RightToWrong, Flip::WrongToRight, Flip::BothWrong, Flip::WrongToOtherWrong];

    /// The cell of a task that BASE scored as `base` and OTHER as `other`.
    pub fn of(base: Pick, other: Pick) -> Flip {
        match (base.right, other.right) {
            (true, false) => Flip::RightToWrong,
            (false, true) => Flip::WrongToRight,
            (true, true) => Flip::BothRight,
            (false, false) if base.option != other.option => Flip::WrongToOtherWrong,
            (false, false) => Flip::BothWrong,
        }
    }
}

impl Flips {
    /// The table of `base` against `other`, task by task (equal lengths).
    pub fn of(base: &[Pick], other: &[Pick]) -> Flips {
        let mut f = Flips::default();
        for (&b, &o) in base.iter().zip(other) {
            f.same_pick += usize::from(b.option == o.option);
            match Flip::of(b, o) {
                Flip::RightToWrong => f.right_to_wrong += 1,
                Flip::WrongToRight => f.wrong_to_right += 1,
                Flip::BothRight => f.both_right += 1,
                Flip::WrongToOtherWrong => f.wrong_to_other_wrong += 1,
                Flip::BothWrong => f.both_wrong += 1,
            }
        }
        f
    }

    /// The tasks counted: the sum of the five cells (`same_pick` overlaps them).
    pub fn tasks(&self) -> usize {
        self.right_to_wrong + self.wrong_to_right + self.wrong_to_other_wrong + self.both_right + self.both_wrong
    }

    /// The share of tasks where both runs picked the same option.
    pub fn agreement(&self) -> f64 {
        self.share(self.same_pick)
    }

    /// The share of the tasks that `count` of them are (0 for no tasks).
    pub fn share(&self, count: usize) -> f64 {
        count as f64 / self.tasks().max(1) as f64
    }
}

/// McNemar's exact test on the discordant pairs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct McNemar {
    /// Two-sided: min(1, 2 P(X ≤ min(b, c))), X ~ Bin(b + c, ½).
    pub p: f64,
    /// The mid-p: the two-sided p less P(X = min(b, c)).
    pub mid_p: f64,
}

/// McNemar's exact test for `b` right→wrong and `c` wrong→right tasks.
///
/// The binomial tail is summed outward from its largest term, which is
/// computed once with `lgamma`: accurate to about 1e−10 relative at b + c = 10⁵ (the
/// rounding of `lgamma` of large arguments), with no overflow and no long
/// chain of roundings.
pub fn mcnemar(b: u64, c: u64) -> McNemar {
    let n = b + c;
    if n == 0 {
        return McNemar { p: 1.0, mid_p: 1.0 };
    }
    let k = b.min(c);
    let (tail, at_k) = binomial_half_lower_tail(n, k);
    let p = (2.0 * tail).min(1.0);
    McNemar { p, mid_p: (2.0 * tail - at_k).clamp(0.0, 1.0) }
}

/// (P(X ≤ k), P(X = k)) for X ~ Bin(n, ½) and k ≤ n/2.
fn binomial_half_lower_tail(n: u64, k: u64) -> (f64, f64) {
    let (nf, kf) = (n as f64, k as f64);
    let ln_at_k = libm::lgamma(nf + 1.0) - libm::lgamma(kf + 1.0) - libm::lgamma(nf - kf + 1.0) - nf * std::f64::consts::LN_2;
    // Terms below k relative to the one at k: t(i-1)/t(i) = i / (n - i + 1) < 1.
    let (mut sum, mut term) = (1.0f64, 1.0f64);
    let mut i = k;
    while i > 0 {
        term *= i as f64 / (n - i + 1) as f64;
        sum += term;
        if term < sum * 1e-18 {
            break;
        }
        i -= 1;
    }
    let at_k = ln_at_k.exp();
    ((ln_at_k + sum.ln()).exp().min(1.0), at_k)
}

/// Holm's step-down adjustment: family-wise error control over several tests.
pub fn holm(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| p[a].total_cmp(&p[b]));
    let mut adjusted = vec![0.0; m];
    let mut running = 0.0f64;
    for (rank, &i) in order.iter().enumerate() {
        running = running.max(((m - rank) as f64 * p[i]).min(1.0));
        adjusted[i] = running;
    }
    adjusted
}

/// Benjamini–Hochberg's step-up adjustment: false-discovery-rate control.
pub fn benjamini_hochberg(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| p[a].total_cmp(&p[b]));
    let mut adjusted = vec![0.0; m];
    let mut running = 1.0f64;
    for (rank, &i) in order.iter().enumerate().rev() {
        running = running.min(p[i] * m as f64 / (rank + 1) as f64).min(1.0);
        adjusted[i] = running;
    }
    adjusted
}

/// `ln softmax(scores)`, by log-sum-exp: finite for any finite scores.
pub fn log_softmax(scores: &[f64]) -> Vec<f64> {
    let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let ln_sum = scores.iter().map(|s| (s - max).exp()).sum::<f64>().ln() + max;
    scores.iter().map(|s| s - ln_sum).collect()
}

/// KL(p‖q) in nats from log-probabilities (`ln p`, `ln q` of one task).
pub fn kl(ln_p: &[f64], ln_q: &[f64]) -> f64 {
    // A term with p = 0 is 0 whatever q is; clamping at 0 drops the last ulp
    // of rounding that could make a sum of equal distributions negative.
    ln_p.iter().zip(ln_q).map(|(&lp, &lq)| if lp == f64::NEG_INFINITY { 0.0 } else { lp.exp() * (lp - lq) }).sum::<f64>().max(0.0)
}

/// Jensen–Shannon divergence in nats (at most ln 2) from log-probabilities.
pub fn js(ln_p: &[f64], ln_q: &[f64]) -> f64 {
    let ln_m: Vec<f64> = ln_p
        .iter()
        .zip(ln_q)
        .map(|(&lp, &lq)| {
            let hi = lp.max(lq);
            // Equal terms give M's term exactly (ln 2 − ln 2 may leave an ulp).
            if lp == lq || hi == f64::NEG_INFINITY {
                hi
            } else {
                hi + ((lp - hi).exp() + (lq - hi).exp()).ln() - std::f64::consts::LN_2
            }
        })
        .collect();
    (0.5 * kl(ln_p, &ln_m) + 0.5 * kl(ln_q, &ln_m)).clamp(0.0, std::f64::consts::LN_2)
}

/// A histogram of log10 of per-task divergences in nats: they span orders
/// of magnitude, so equal bins of the logarithm show them; everything at or
/// below [`LogHistogram::FLOOR`] (no visible change, 0 included) is in the
/// first bin, and an infinite value in the last.
#[derive(Debug, Clone, PartialEq)]
pub struct LogHistogram {
    /// The upper edge of the last bin: the largest finite log10 value,
    /// rounded up (at least `FLOOR + 1`).
    pub top: f64,
    /// Tasks per bin, from `FLOOR` to `top` in equal steps.
    pub counts: Vec<usize>,
}

impl LogHistogram {
    /// The lower edge of the first bin: 1e-6 nats.
    pub const FLOOR: f64 = -6.0;

    /// `values` in `bins` (at least 1) bins.
    pub fn of(values: &[f64], bins: usize) -> LogHistogram {
        let bins = bins.max(1);
        let logs: Vec<f64> = values.iter().map(|&v| if v > 0.0 { v.log10().max(Self::FLOOR) } else { Self::FLOOR }).collect();
        let top = logs.iter().copied().filter(|l| l.is_finite()).fold(Self::FLOOR + 1.0, f64::max).ceil();
        let width = (top - Self::FLOOR) / bins as f64;
        let mut counts = vec![0usize; bins];
        for &l in &logs {
            counts[(((l - Self::FLOOR) / width) as usize).min(bins - 1)] += 1;
        }
        LogHistogram { top, counts }
    }

    /// The width of a bin, in log10 units.
    pub fn width(&self) -> f64 {
        (self.top - Self::FLOOR) / self.counts.len() as f64
    }
}

/// How a per-task quantity is spread over the tasks.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Spread {
    /// The mean (0 for no values).
    pub mean: f64,
    /// The median (NaN for no values, as are the other quantiles and the maximum).
    pub median: f64,
    /// The 90th percentile.
    pub p90: f64,
    /// The 99th percentile.
    pub p99: f64,
    /// The largest value.
    pub max: f64,
}

impl Spread {
    /// Quantiles by linear interpolation between order statistics (numpy's
    /// default), so that an independent check can reproduce them exactly.
    pub fn of(values: &[f64]) -> Spread {
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let q = |p: f64| {
            if sorted.is_empty() {
                return f64::NAN;
            }
            let at = p * (sorted.len() - 1) as f64;
            let (lo, frac) = (at.floor() as usize, at - at.floor());
            let hi = (lo + 1).min(sorted.len() - 1);
            sorted[lo] + frac * (sorted[hi] - sorted[lo])
        };
        Spread {
            mean: values.iter().sum::<f64>() / values.len().max(1) as f64,
            median: q(0.5),
            p90: q(0.9),
            p99: q(0.99),
            max: sorted.last().copied().unwrap_or(f64::NAN),
        }
    }
}

/// What a paired interval says about a difference against a margin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The (1 − 2α) interval lies inside (−m, +m) and the (1 − α) one contains 0.
    Equivalent,
    /// The (1 − α) interval excludes 0 and the (1 − 2α) one reaches ±m.
    Different,
    /// Both: a real difference, smaller than the margin.
    DifferentWithinMargin,
    /// Neither equivalent nor different.
    Undecided,
}

impl Verdict {
    /// The verdict of TOST at margin `margin` (the (1 − 2α) interval
    /// `narrow`) and of the two-sided test (the (1 − α) interval `wide`,
    /// which says "different" only where McNemar's exact test, `significant`,
    /// agrees).
    pub fn of(narrow: (f64, f64), wide: (f64, f64), margin: f64, significant: bool) -> Verdict {
        let equivalent = -margin < narrow.0 && narrow.1 < margin;
        let different = significant && (wide.0 > 0.0 || wide.1 < 0.0);
        match (equivalent, different) {
            (true, true) => Verdict::DifferentWithinMargin,
            (true, false) => Verdict::Equivalent,
            (false, true) => Verdict::Different,
            (false, false) => Verdict::Undecided,
        }
    }

    /// The verdict's name, as results and messages write it
    /// (`different_within_margin`, …), which is also its serialised form.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Equivalent => "equivalent",
            Verdict::Different => "different",
            Verdict::DifferentWithinMargin => "different_within_margin",
            Verdict::Undecided => "undecided",
        }
    }
}

/// A paired difference of accuracies (fractions) with its intervals and verdict.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PairedDifference {
    /// The estimated difference, OTHER's accuracy less BASE's (a fraction).
    pub estimate: f64,
    /// At 1 − α: "different" when it excludes 0 (and McNemar agrees).
    pub interval: (f64, f64),
    /// At 1 − 2α: "equivalent" when it lies inside ±margin (TOST).
    pub tost_interval: (f64, f64),
    /// What the two intervals, and McNemar's test, say against the margin.
    pub verdict: Verdict,
}

/// The paired difference of `tasks` tasks, `estimate` (a difference of
/// fractions), from its
/// resampled means `draws` (a task or a cluster bootstrap) and their BCa
/// `acceleration`, with `b` right→wrong and `c` wrong→right tasks, judged at
/// `margin` (a fraction) and level `alpha`.
///
/// A bootstrap sees only the flips it is given: with none it gives an
/// interval of width 0, with three it can exclude 0 although McNemar's p is
/// 0.25. Two guards keep the verdict's error rates (checked by simulation):
/// each interval is at least as wide as the exact bound on a change no task
/// showed (Clopper–Pearson for 0 of `tasks`: ±(1 − (α_side)^(1/n))),
/// and "different" needs McNemar's exact p ≤ α as well.
#[allow(clippy::too_many_arguments)]
pub fn paired_difference(
    estimate: f64,
    draws: &[f64],
    acceleration: f64,
    tasks: usize,
    b: u64,
    c: u64,
    margin: f64,
    alpha: f64,
) -> PairedDifference {
    let floored = |level: f64| {
        let (low, high) = bca_interval(draws, estimate, acceleration, level);
        let floor = 1.0 - ((1.0 - level) / 2.0).powf(1.0 / tasks.max(1) as f64);
        (low.min(estimate - floor).max(-1.0), high.max(estimate + floor).min(1.0))
    };
    let (interval, tost_interval) = (floored(1.0 - alpha), floored(1.0 - 2.0 * alpha));
    let significant = mcnemar(b, c).p <= alpha;
    PairedDifference { estimate, interval, tost_interval, verdict: Verdict::of(tost_interval, interval, margin, significant) }
}

/// The central `level` BCa interval (Efron 1987) of a statistic estimated as
/// `estimate`, from its resampled values `draws` and its `acceleration`
/// ([`acceleration`]). Percentile intervals of a skewed difference are
/// first-order accurate only: with 300 tasks TOST at the margin said
/// "equivalent" in 5.6 % of simulated runs at α = 5 %; BCa corrects for the
/// bias and the skew to second order. Ties with the estimate (common: a
/// difference of accuracies is discrete) count half below it.
pub fn bca_interval(draws: &[f64], estimate: f64, acceleration: f64, level: f64) -> (f64, f64) {
    if draws.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let below = draws.iter().filter(|&&d| d < estimate).count() as f64;
    let equal = draws.iter().filter(|&&d| d == estimate).count() as f64;
    let share = ((below + 0.5 * equal) / draws.len() as f64).clamp(0.5 / draws.len() as f64, 1.0 - 0.5 / draws.len() as f64);
    let z0 = normal_quantile(share);
    let adjusted = |q: f64| {
        let z = z0 + normal_quantile(q);
        let denominator = 1.0 - acceleration * z;
        if denominator <= 0.0 {
            return if z > 0.0 { 1.0 } else { 0.0 };
        }
        normal_cdf(z0 + z / denominator)
    };
    let tail = (1.0 - level) / 2.0;
    let sorted = sorted(draws);
    (nearest_rank(&sorted, adjusted(tail)), nearest_rank(&sorted, adjusted(1.0 - tail)))
}

/// BCa's acceleration from a statistic's jackknife values (the statistic
/// with each task, or each group, left out in turn).
pub fn acceleration(jackknife: &[f64]) -> f64 {
    let mean = jackknife.iter().sum::<f64>() / jackknife.len().max(1) as f64;
    skew_ratio(jackknife.iter().map(|j| mean - j))
}

/// The acceleration of a mean of `values`: its jackknife in closed form
/// (mean − θ₍ᵢ₎ = (xᵢ − x̄)/(n − 1), and the scale cancels).
pub fn mean_acceleration(values: &[f64]) -> f64 {
    let mean = values.iter().sum::<f64>() / values.len().max(1) as f64;
    skew_ratio(values.iter().map(|v| v - mean))
}

/// Σd³ / (6 (Σd²)^1.5), 0 when every deviation is 0.
fn skew_ratio(deviations: impl Iterator<Item = f64>) -> f64 {
    let (cubes, squares) = deviations.fold((0.0, 0.0), |(c, s), d| (c + d * d * d, s + d * d));
    if squares == 0.0 {
        0.0
    } else {
        cubes / (6.0 * squares.powf(1.5))
    }
}

/// Φ(x), the standard normal distribution function.
pub(crate) fn normal_cdf(x: f64) -> f64 {
    0.5 * libm::erfc(-x / std::f64::consts::SQRT_2)
}

/// Φ⁻¹(p) for 0 < p < 1: Acklam's rational approximation (relative error
/// 1.2e−9), refined by one Halley step on `erfc` to full precision.
pub(crate) fn normal_quantile(p: f64) -> f64 {
    if p <= 0.0 {
        return f64::NEG_INFINITY;
    }
    if p >= 1.0 {
        return f64::INFINITY;
    }
    const A: [f64; 6] =
        [-3.969683028665376e1, 2.209460984245205e2, -2.759285104469687e2, 1.383_577_518_672_69e2, -3.066479806614716e1, 2.506628277459239];
    const B: [f64; 5] = [-5.447609879822406e1, 1.615858368580409e2, -1.556989798598866e2, 6.680131188771972e1, -1.328068155288572e1];
    const C: [f64; 6] =
        [-7.784894002430293e-3, -3.223964580411365e-1, -2.400758277161838, -2.549732539343734, 4.374664141464968, 2.938163982698783];
    const D: [f64; 4] = [7.784695709041462e-3, 3.224671290700398e-1, 2.445134137142996, 3.754408661907416];
    let tail = |q: f64| {
        let r = (-2.0 * q.ln()).sqrt();
        (((((C[0] * r + C[1]) * r + C[2]) * r + C[3]) * r + C[4]) * r + C[5]) / ((((D[0] * r + D[1]) * r + D[2]) * r + D[3]) * r + 1.0)
    };
    let x = if p < 0.02425 {
        tail(p)
    } else if p > 1.0 - 0.02425 {
        -tail(1.0 - p)
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    };
    let e = normal_cdf(x) - p;
    let u = e * (2.0 * std::f64::consts::PI).sqrt() * (x * x / 2.0).exp();
    x - u / (1.0 + x * u / 2.0)
}

/// Seeded bootstrap over groups of tasks: each resample draws whole groups
/// with replacement, as many as there are, and a column's statistic is the
/// mean over the tasks of the drawn groups. Tasks within a group (an MMLU
/// subject, questions on one passage) are correlated, and an interval that
/// resamples them one by one is too narrow.
#[derive(Debug, Clone, Copy)]
pub struct ClusterBootstrap<'a> {
    /// The group index of each task, in `0..groups`.
    pub group_of: &'a [usize],
    /// The number of groups.
    pub groups: usize,
    /// Resamples drawn.
    pub resamples: usize,
    /// Seeds each resample's generator (with the resample's index), so that
    /// a report is reproducible.
    pub seed: u64,
}

impl ClusterBootstrap<'_> {
    /// For each resample, the mean of every column (each as long as `group_of`).
    pub fn resample_means(&self, columns: &[&[f64]]) -> Vec<Vec<f64>> {
        let m = columns.len();
        let mut sums = vec![0.0f64; self.groups * m];
        let mut sizes = vec![0usize; self.groups];
        // compare numbers groups densely below groups, and its one column has a value per entry of group_of
        for (task, &g) in self.group_of.iter().enumerate() {
            sizes[g] += 1;
            for (j, c) in columns.iter().enumerate() {
                sums[g * m + j] += c[task];
            }
        }
        (0..self.resamples)
            .into_par_iter()
            .map(|r| {
                let mut rng = SplitMix64::new(self.seed ^ (r as u64).wrapping_mul(0xA24B_AED4_963E_E407));
                let (mut total, mut count) = (vec![0.0; m], 0usize);
                for _ in 0..self.groups {
                    let g = rng.below(self.groups);
                    count += sizes[g];
                    for (t, s) in total.iter_mut().zip(&sums[g * m..][..m]) {
                        *t += s;
                    }
                }
                total.iter().map(|t| t / count.max(1) as f64).collect()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::percentile_interval;

    #[test]
    fn mcnemar_by_hand() {
        // b = 0, c = 5: p = 2 / 32.
        let t = mcnemar(0, 5);
        assert!((t.p - 2.0 / 32.0).abs() < 1e-15, "{t:?}");
        assert!((t.mid_p - 1.0 / 32.0).abs() < 1e-15, "{t:?}");
        // b = 2, c = 8: P(X ≤ 2) = (1 + 10 + 45) / 1024.
        let t = mcnemar(2, 8);
        assert!((t.p - 112.0 / 1024.0).abs() < 1e-15, "{t:?}");
        assert!((t.mid_p - (112.0 - 45.0) / 1024.0).abs() < 1e-15, "{t:?}");
        assert_eq!(mcnemar(0, 0), McNemar { p: 1.0, mid_p: 1.0 });
        assert_eq!(mcnemar(7, 7).p, 1.0);
        assert_eq!(mcnemar(3, 9), mcnemar(9, 3));
        // Large and lopsided: finite, tiny, no underflow to a negative or NaN.
        let t = mcnemar(100, 100_000);
        assert!(t.p > 0.0 || t.p == 0.0 && t.mid_p == 0.0);
        assert!(mcnemar(49_000, 51_000).p < 1e-8);
    }

    #[test]
    fn holm_and_bh_by_hand() {
        let p = [0.01, 0.04, 0.03, 0.2];
        let h = holm(&p);
        let want = [0.04, 0.09, 0.09, 0.2];
        for (a, b) in h.iter().zip(want) {
            assert!((a - b).abs() < 1e-12, "{h:?}");
        }
        let bh = benjamini_hochberg(&p);
        let want = [0.04, 0.0533333333333333, 0.0533333333333333, 0.2];
        for (a, b) in bh.iter().zip(want) {
            assert!((a - b).abs() < 1e-12, "{bh:?}");
        }
    }

    #[test]
    fn divergences_of_equal_and_of_disjoint_distributions() {
        let p = log_softmax(&[-1.0, -2.0, -3.0]);
        assert_eq!(kl(&p, &p), 0.0);
        assert_eq!(js(&p, &p), 0.0);
        let a = [0.0, f64::NEG_INFINITY];
        let b = [f64::NEG_INFINITY, 0.0];
        assert!((js(&a, &b) - std::f64::consts::LN_2).abs() < 1e-15);
        // Shifting every score changes nothing.
        let q = log_softmax(&[9.0, 8.0, 7.0]);
        assert!(kl(&p, &q) < 1e-15);
    }

    #[test]
    fn the_normal_quantile_inverts_the_distribution_function() {
        for p in [1e-12, 0.001, 0.025, 0.05, 0.3, 0.5, 0.8, 0.975, 0.999_999] {
            let x = normal_quantile(p);
            assert!((normal_cdf(x) - p).abs() <= 1e-14 * p.max(1e-3), "{p} {x}");
        }
        assert!((normal_quantile(0.975) - 1.959_963_984_540_054).abs() < 1e-13);
    }

    #[test]
    fn verdicts() {
        assert_eq!(Verdict::of((-0.5, 0.5), (-0.6, 0.6), 1.0, true), Verdict::Equivalent);
        assert_eq!(Verdict::of((-3.0, -2.0), (-3.2, -1.8), 1.0, true), Verdict::Different);
        assert_eq!(Verdict::of((-3.0, -2.0), (-3.2, -1.8), 1.0, false), Verdict::Undecided);
        assert_eq!(Verdict::of((-0.8, -0.2), (-0.9, -0.1), 1.0, true), Verdict::DifferentWithinMargin);
        assert_eq!(Verdict::of((-1.5, 0.5), (-1.7, 0.7), 1.0, true), Verdict::Undecided);
    }

    #[test]
    fn no_flips_in_few_tasks_decide_nothing() {
        // One task, or 100, with nothing changed: the exact bound on what
        // no task showed is far wider than a 1-point margin.
        for n in [1, 100] {
            let d = paired_difference(0.0, &[0.0; 1000], 0.0, n, 0, 0, 0.01, 0.05);
            assert_eq!(d.verdict, Verdict::Undecided, "{n}: {d:?}");
        }
        let d = paired_difference(0.0, &[0.0; 1000], 0.0, 2000, 0, 0, 0.01, 0.05);
        assert_eq!(d.verdict, Verdict::Equivalent, "{d:?}");
    }

    #[test]
    fn log_histogram_bins_by_order_of_magnitude() {
        // 0 and 1e-7 at the floor, 1e-3 in the middle, 10 and ∞ in the last bin.
        let h = LogHistogram::of(&[0.0, 1e-7, 1e-3, 10.0, f64::INFINITY], 7);
        assert_eq!((h.top, h.width()), (1.0, 1.0));
        assert_eq!(h.counts, [2, 0, 0, 1, 0, 0, 2]);
        assert_eq!(LogHistogram::of(&[], 0).counts, [0]);
    }

    #[test]
    fn spread_matches_numpys_linear_quantiles() {
        let s = Spread::of(&[4.0, 1.0, 3.0, 2.0]);
        assert_eq!((s.mean, s.median, s.max), (2.5, 2.5, 4.0));
        assert!((s.p90 - 3.7).abs() < 1e-12 && (s.p99 - 3.97).abs() < 1e-12, "{s:?}");
    }

    #[test]
    fn flips_by_hand() {
        let pick = |right, option| Pick { right, option };
        let base = [pick(true, 0), pick(true, 1), pick(false, 2), pick(false, 2), pick(false, 3)];
        let other = [pick(true, 0), pick(false, 2), pick(true, 1), pick(false, 3), pick(false, 3)];
        let f = Flips::of(&base, &other);
        assert_eq!(f, Flips { right_to_wrong: 1, wrong_to_right: 1, wrong_to_other_wrong: 1, both_right: 1, both_wrong: 1, same_pick: 2 });
        assert_eq!(f.tasks(), 5);
    }

    #[test]
    fn one_group_per_task_is_the_task_bootstrap_in_distribution() {
        // With every task its own group, the cluster bootstrap is the plain
        // one: same size of draws, same spread.
        let values: Vec<f64> = (0..400).map(|i| f64::from(u8::from(i % 3 == 0))).collect();
        let groups: Vec<usize> = (0..400).collect();
        let cb = ClusterBootstrap { group_of: &groups, groups: 400, resamples: 2000, seed: 7 };
        let draws: Vec<f64> = cb.resample_means(&[&values]).iter().map(|d| d[0]).collect();
        let (lo, hi) = percentile_interval(&draws, 0.95);
        let se = (values.iter().sum::<f64>() / 400.0 * (2.0 / 3.0) / 400.0).sqrt();
        assert!(((hi - lo) / (2.0 * 1.96 * se) - 1.0).abs() < 0.1, "{lo} {hi} {se}");
    }
}
