//! Bootstrap confidence intervals and rank correlations, seeded so that a
//! report is reproducible.

use rayon::prelude::*;
use serde::Serialize;

/// A small, fast, seedable generator (SplitMix64): bootstrap resampling needs
/// reproducibility, not cryptographic quality.
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator started from `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in 0..n (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        ((self.next_u64() as u128 * n as u128) >> 64) as usize
    }
}

/// A mean with its percentile bootstrap interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Estimate {
    /// The column's mean.
    pub mean: f64,
    /// The interval's lower bound, at most `mean`.
    pub low: f64,
    /// The interval's upper bound, at least `mean`.
    pub high: f64,
}

/// Seeded bootstrap resampling of tasks. Resample `r` draws the same task
/// indices for every column and every model, so intervals and rank
/// correlations come from the same draws; indices are generated on the fly,
/// never stored (1,000 × 100,000 of them would take 800 MB).
#[derive(Debug, Clone, Copy)]
pub struct Bootstrap {
    /// Tasks: the length of every column, and the draws of each resample.
    pub n: usize,
    /// Resamples drawn.
    pub resamples: usize,
    /// Seeds each resample's generator (with the resample's index), so that
    /// the same seed draws the same tasks.
    pub seed: u64,
}

impl Bootstrap {
    /// For each resample, the mean of every column (each `n` long): one pass
    /// over the drawn indices per resample, resamples spread over the cores.
    pub fn resample_means(&self, columns: &[&[f64]]) -> Vec<Vec<f64>> {
        // Row-major copy: a task's values for all columns share one cache
        // line, and random draws are bound by cache misses, so the rows are
        // f32 wherever every value fits one (a value beyond f32's range, from
        // absurd but finite log-probabilities, would read as infinite).
        // every column holds n values, one per task: report's runs have the same tasks, compare's are paired
        let rows = |i: usize| columns.iter().map(move |c| c[i]);
        if fits_f32(columns) {
            self.resample(&(0..self.n).flat_map(|i| rows(i).map(|v| v as f32)).collect::<Vec<f32>>(), columns.len())
        } else {
            self.resample(&(0..self.n).flat_map(rows).collect::<Vec<f64>>(), columns.len())
        }
    }

    /// [`Bootstrap::resample_means`] over `m` columns stored row by row; sums stay f64.
    fn resample<T: Copy + Into<f64> + Sync>(&self, rows: &[T], m: usize) -> Vec<Vec<f64>> {
        (0..self.resamples)
            .into_par_iter()
            .map(|r| {
                let mut rng = SplitMix64::new(self.seed ^ (r as u64).wrapping_mul(0xA24B_AED4_963E_E407));
                let mut sums = vec![0.0; m];
                for _ in 0..self.n {
                    let row = &rows[rng.below(self.n) * m..][..m];
                    for (s, &v) in sums.iter_mut().zip(row) {
                        *s += v.into();
                    }
                }
                sums.iter().map(|s| s / self.n.max(1) as f64).collect()
            })
            .collect()
    }

    /// Mean of every column with its 95 % percentile interval.
    pub fn estimates(&self, columns: &[&[f64]]) -> (Vec<Estimate>, Vec<Vec<f64>>) {
        let draws = self.resample_means(columns);
        let rounded = fits_f32(columns);
        let estimates = columns
            .iter()
            .enumerate()
            .map(|(j, column)| {
                let mean = column.iter().sum::<f64>() / column.len().max(1) as f64;
                let means: Vec<f64> = draws.iter().map(|d| d[j]).collect();
                let (low, high) = if means.is_empty() {
                    (mean, mean)
                } else {
                    // Rounded, a bound may cross the full-precision mean (a
                    // column of 1/3s): it is kept on its side.
                    let (low, high) = percentile_interval(&means, 0.95);
                    let digits = |x: f64| if rounded { f32_digits(x) } else { x };
                    (digits(low).min(mean), digits(high).max(mean))
                };
                Estimate { mean, low, high }
            })
            .collect();
        (estimates, draws)
    }
}

/// Whether every value of `columns` has an f32 of its magnitude.
fn fits_f32(columns: &[&[f64]]) -> bool {
    // NaN compares false, and is NaN as an f32 too.
    columns.iter().all(|c| c.iter().all(|v| v.is_nan() || v.abs() <= f64::from(f32::MAX)))
}

/// `x` to the digits its f32 inputs carry: a resampled mean sums the
/// columns as f32, so past 7 digits it holds their rounding (0.2 read as
/// 0.20000000298023224), not data.
fn f32_digits(x: f64) -> f64 {
    // The shortest decimal that reads back as the same f32, read as f64.
    (x as f32).to_string().parse().unwrap_or(x)
}

/// Pearson's correlation of two columns of one length (NaN where either is constant).
pub fn pearson(a: &[f64], b: &[f64]) -> f64 {
    let n = a.len() as f64;
    let (ma, mb) = (a.iter().sum::<f64>() / n, b.iter().sum::<f64>() / n);
    let cov: f64 = a.iter().zip(b).map(|(x, y)| (x - ma) * (y - mb)).sum();
    let va: f64 = a.iter().map(|x| (x - ma).powi(2)).sum();
    let vb: f64 = b.iter().map(|y| (y - mb).powi(2)).sum();
    cov / (va * vb).sqrt()
}

/// Spearman's ρ (Pearson on ranks, ties sharing the mean rank); NaN when
/// either side is constant.
pub fn spearman(a: &[f64], b: &[f64]) -> f64 {
    pearson(&crate::ranks_desc(a, crate::Ties::Mean), &crate::ranks_desc(b, crate::Ties::Mean))
}

/// Kendall's τ-b.
pub fn kendall(a: &[f64], b: &[f64]) -> f64 {
    let (mut concordant, mut discordant, mut ties_a, mut ties_b) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
    for i in 0..a.len() {
        for j in i + 1..a.len() {
            let (da, db) = (a[i] - a[j], b[i] - b[j]);
            match (da == 0.0, db == 0.0) {
                (true, true) => {}
                (true, false) => ties_a += 1.0,
                (false, true) => ties_b += 1.0,
                _ if da.signum() == db.signum() => concordant += 1.0,
                _ => discordant += 1.0,
            }
        }
    }
    (concordant - discordant) / ((concordant + discordant + ties_a) * (concordant + discordant + ties_b)).sqrt()
}

/// Standard deviation of the finite values (NaN when fewer than two).
pub fn std_dev(values: &[f64]) -> f64 {
    let v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.len() < 2 {
        return f64::NAN;
    }
    let m = v.iter().sum::<f64>() / v.len() as f64;
    (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len() as f64 - 1.0)).sqrt()
}

/// The central `level` percentile interval of `values` (resampled
/// statistics): the order statistics at (1 ∓ level)/2, rounded to the
/// nearest rank as [`Bootstrap::estimates`] does.
pub fn percentile_interval(values: &[f64], level: f64) -> (f64, f64) {
    let sorted = sorted(values);
    let tail = (1.0 - level) / 2.0;
    (nearest_rank(&sorted, tail), nearest_rank(&sorted, 1.0 - tail))
}

pub(crate) fn sorted(values: &[f64]) -> Vec<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted
}

/// The order statistic at quantile `q` of `sorted`, rounded to the nearest
/// rank; NaN when there is none.
pub(crate) fn nearest_rank(sorted: &[f64], q: f64) -> f64 {
    sorted.get(((sorted.len() as f64 - 1.0) * q).round() as usize).copied().unwrap_or(f64::NAN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounded_bounds_stay_on_their_side_of_the_mean() {
        // A column of 1/3s: every draw's mean rounds to 0.33333334 as f32 digits.
        let third = vec![1.0 / 3.0; 7];
        let (estimates, _) = Bootstrap { n: 7, resamples: 50, seed: 1 }.estimates(&[&third]);
        let e = estimates[0];
        assert!(e.low <= e.mean && e.mean <= e.high, "{e:?}");
        // 0.2 as 0.2, not its f32 0.20000000298023224.
        let fifths = vec![0.2; 5];
        assert_eq!(Bootstrap { n: 5, resamples: 20, seed: 1 }.estimates(&[&fifths]).0[0].high, 0.2);
    }

    #[test]
    fn values_beyond_f32_resample_as_themselves() {
        // Finite, but infinite as f32: a log holding absurd log-probabilities.
        let huge = vec![-1e300; 6];
        let bootstrap = Bootstrap { n: 6, resamples: 30, seed: 2 };
        assert!(bootstrap.resample_means(&[&huge, &[0.5; 6]]).iter().all(|d| d == &[-1e300, 0.5]));
        let e = bootstrap.estimates(&[&huge]).0[0];
        assert_eq!((e.low, e.mean, e.high), (-1e300, -1e300, -1e300));
        // One such value in a column makes its means huge, never infinite.
        let mixed = [1.0, -3e38, -3e38, 2.0];
        let draws = Bootstrap { n: 4, resamples: 200, seed: 3 }.resample_means(&[&mixed]);
        assert!(draws.iter().all(|d| d[0].is_finite()));
        assert!(draws.iter().any(|d| d[0] < -1e38), "some draw takes the large values more than once");
    }
}
