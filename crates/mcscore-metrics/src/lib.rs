//! Metrics over the per-option figures one scoring pass produces
//! (docs/methods.md). Pure functions: no I/O, no model.

#![warn(missing_docs)]

pub mod calibration;
pub mod debias;
pub mod paired;
pub mod robustness;
pub mod schemes;
pub mod sequential;
pub mod stats;

use serde::{Deserialize, Serialize};

/// One option's figures from one pass; every normalisation derives from them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct OptionScore {
    /// Σ log p(token) over the option's tokens after the common prefix.
    pub logprob_sum: f64,
    /// The tokens `logprob_sum` sums over.
    pub tokens: u32,
    /// Unicode scalar values in the option text.
    pub chars: u32,
    /// UTF-8 bytes in the option text.
    pub bytes: u32,
    /// Σ log p of the same tokens after the context "Answer:" (`score --pmi`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncond_logprob_sum: Option<f64>,
    /// Whether every one of those tokens was the model's greedy pick
    /// (lm-evaluation-harness's `is_greedy`); none in logs before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub greedy: Option<bool>,
    /// The same of the unconditional pass's tokens (`score --pmi`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncond_greedy: Option<bool>,
}

impl OptionScore {
    /// An option's figures from one pass, with no unconditional pass and no
    /// greedy flags.
    pub fn new(logprob_sum: f64, tokens: u32, chars: u32, bytes: u32) -> OptionScore {
        OptionScore { logprob_sum, tokens, chars, bytes, uncond_logprob_sum: None, greedy: None, uncond_greedy: None }
    }
}

/// How an option's summed log-probability is normalised before the argmax.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Normalisation {
    /// Σ log p (lm-evaluation-harness `acc`).
    Acc,
    /// Σ log p / tokens (llama-perplexity's `acc_norm`).
    AccNorm,
    /// Σ log p / characters (lm-evaluation-harness `acc_norm`).
    AccChar,
    /// Σ log p / UTF-8 bytes (OLMES per-byte).
    AccByte,
    /// Σ log p − Σ log p after "Answer:" alone (lm-evaluation-harness
    /// `acc_mutual_info`); needs the unconditional pass of `score --pmi`.
    AccPmi,
}

impl Normalisation {
    /// The normalisations every log has.
    pub const ALL: [Normalisation; 4] = [Normalisation::Acc, Normalisation::AccNorm, Normalisation::AccChar, Normalisation::AccByte];
    /// All of them, with acc_pmi, for logs of `score --pmi`.
    pub const WITH_PMI: [Normalisation; 5] =
        [Normalisation::Acc, Normalisation::AccNorm, Normalisation::AccChar, Normalisation::AccByte, Normalisation::AccPmi];

    /// The name logs, results and messages give it (`acc`, `acc_norm`, …),
    /// which is also its serialised form.
    pub fn name(self) -> &'static str {
        match self {
            Normalisation::Acc => "acc",
            Normalisation::AccNorm => "acc_norm",
            Normalisation::AccChar => "acc_char",
            Normalisation::AccByte => "acc_byte",
            Normalisation::AccPmi => "acc_pmi",
        }
    }

    /// The option's score, higher better: its summed log-probability, per
    /// token, character or byte (a count of 0 taken as 1), or less its
    /// unconditional sum (NaN for an option without one).
    pub fn score(self, option: &OptionScore) -> f64 {
        let by = |n: u32| option.logprob_sum / f64::from(n.max(1));
        match self {
            Normalisation::Acc => option.logprob_sum,
            Normalisation::AccNorm => by(option.tokens),
            Normalisation::AccChar => by(option.chars),
            Normalisation::AccByte => by(option.bytes),
            Normalisation::AccPmi => option.logprob_sum - option.uncond_logprob_sum.unwrap_or(f64::NAN),
        }
    }

    /// The predicted option: the first maximum, as llama-perplexity breaks ties.
    pub fn predict(self, options: &[OptionScore]) -> usize {
        first_max(options.iter().map(|o| self.score(o)))
    }
}

/// A number as a message shows it: at most six significant digits, in
/// scientific notation outside 0.0001 to 999,999, so that a value a user gave
/// (`--margin 1e-300`) or a file holds (a log-probability of -1e308) never
/// prints as hundreds of digits.
pub fn shown(x: f64) -> String {
    if !x.is_finite() || x == 0.0 {
        return format!("{x}");
    }
    let magnitude = x.abs();
    let trim = |t: &str| if t.contains('.') { t.trim_end_matches('0').trim_end_matches('.').to_owned() } else { t.to_owned() };
    // Rounding can carry into a seventh digit (999,999.7); scientific then.
    if (1e-4..999_999.5).contains(&magnitude) {
        let decimals = (5 - magnitude.log10().floor() as i32).max(0) as usize;
        trim(&format!("{x:.decimals$}"))
    } else {
        let text = format!("{x:.5e}");
        let (mantissa, exponent) = text.split_once('e').unwrap_or((&text, "0"));
        format!("{}e{exponent}", trim(mantissa))
    }
}

/// Index of the first maximum: ties, and NaNs after the first score, go to the
/// earlier option, as llama-perplexity picks. 0 for no scores.
pub fn first_max(scores: impl IntoIterator<Item = f64>) -> usize {
    let mut scores = scores.into_iter().enumerate();
    let Some((_, mut top)) = scores.next() else { return 0 };
    let mut best = 0;
    for (i, score) in scores {
        if score > top {
            (best, top) = (i, score);
        }
    }
    best
}

/// Softmax of `x`, shifted by its maximum so that no exponent overflows.
/// The one softmax of mcscore: option probabilities, PriDe's priors.
pub fn softmax(x: &[f64]) -> Vec<f64> {
    let max = x.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let exp: Vec<f64> = x.iter().map(|v| (v - max).exp()).collect();
    let sum: f64 = exp.iter().sum();
    exp.iter().map(|e| e / sum).collect()
}

/// `log softmax(logits)[index]`, stable (shifted by the maximum) and summed in
/// f64: the log-probability of one token from a row of f32 logits. NaN or
/// infinite logits give a non-finite result, which the caller must refuse.
pub fn log_softmax_at(logits: &[f32], index: usize) -> f64 {
    LogSoftmax::of(logits).at(logits, index)
}

/// [`log_softmax_at`], and whether `index` is the row's greedy pick: its
/// first maximum, as torch's `argmax` and llama.cpp's greedy sampler take it
/// (lm-evaluation-harness's `is_greedy` asks it of every continuation token).
pub fn log_softmax_greedy(logits: &[f32], index: usize) -> (f64, bool) {
    let row = LogSoftmax::of(logits);
    // callers pass a token of the row's vocabulary, as for `at`
    let top = logits[index];
    (row.at(logits, index), top == row.max && !logits[..index].contains(&top))
}

/// The log-softmax of one row of logits, kept as its maximum and the log of
/// its shifted sum, so that many entries of a row cost one pass over it.
#[derive(Debug, Clone, Copy)]
pub struct LogSoftmax {
    max: f32,
    log_sum: f64,
}

/// Lanes of the vectorised loops: one AVX-512 register of f32.
const LANES: usize = 16;
/// Logits per block of [`LogSoftmax::with_top`]: 4 KiB, well inside L1.
const BLOCK: usize = 1024;

impl LogSoftmax {
    /// What a row that has no log-softmax (a NaN, +∞, only −∞) gives: NaN
    /// log-probabilities, which callers refuse.
    const INVALID: LogSoftmax = LogSoftmax { max: f32::NAN, log_sum: f64::NAN };

    /// The row is read once, in blocks small enough to stay in the L1
    /// cache: each block's maximum, then its sum of `e^(l − block max)` in
    /// f32 lanes ([`exp_nonpositive`], vectorised), combined across blocks in
    /// f64. A 262,144-entry row is 1 MB and a fill has hundreds, so memory
    /// traffic, not arithmetic, is the cost. Within 1e-6 of
    /// `f64::ln(Σ f64::exp)`. A row with a NaN or a +∞ logit, or only −∞,
    /// gives NaN log-probabilities, which callers refuse.
    pub fn of(logits: &[f32]) -> LogSoftmax {
        Self::with_top(logits, 0).0
    }

    /// [`LogSoftmax::of`], and the indices of the `k` largest logits, largest
    /// first (among equal logits the lower index first), in the same single
    /// read of the row. No indices for a row with no log-softmax.
    pub fn with_top(logits: &[f32], k: usize) -> (LogSoftmax, Vec<usize>) {
        let mut top: Vec<usize> = Vec::with_capacity(k.min(logits.len()) + 1);
        let mut threshold = f32::NEG_INFINITY;
        let mut blocks: Vec<(f32, f32)> = Vec::with_capacity(logits.len() / BLOCK + 1);
        for (b, block) in logits.chunks(BLOCK).enumerate() {
            // f32::max ignores NaN; a NaN shows in the sum below instead.
            let mut lanes = [f32::NEG_INFINITY; LANES];
            let chunks = block.chunks_exact(LANES);
            let rest = chunks.remainder();
            for chunk in chunks {
                for i in 0..LANES {
                    lanes[i] = lanes[i].max(chunk[i]);
                }
            }
            let max = lanes.iter().chain(rest).fold(f32::NEG_INFINITY, |m, &l| m.max(l));
            if max == f32::INFINITY {
                return (LogSoftmax::INVALID, Vec::new());
            }
            if max == f32::NEG_INFINITY {
                if block.iter().any(|l| l.is_nan()) {
                    return (LogSoftmax::INVALID, Vec::new());
                }
                continue;
            }
            let mut acc = [0.0f32; LANES];
            let chunks = block.chunks_exact(LANES);
            let rest = chunks.remainder();
            for chunk in chunks {
                for i in 0..LANES {
                    acc[i] += exp_nonpositive(chunk[i] - max);
                }
            }
            let sum = acc.iter().sum::<f32>() + rest.iter().map(|&l| exp_nonpositive(l - max)).sum::<f32>();
            if sum.is_nan() {
                return (LogSoftmax::INVALID, Vec::new());
            }
            blocks.push((max, sum));
            if k > 0 && (top.len() < k || max > threshold) {
                for (j, &l) in block.iter().enumerate() {
                    if top.len() == k && l <= threshold {
                        continue;
                    }
                    // Later indices go after equal logits already kept.
                    let at = top.partition_point(|&t| logits[t] >= l);
                    top.insert(at, b * BLOCK + j);
                    top.truncate(k);
                    if top.len() == k {
                        threshold = logits[top[k - 1]];
                    }
                }
            }
        }
        let max = blocks.iter().fold(f32::NEG_INFINITY, |m, b| m.max(b.0));
        if blocks.is_empty() {
            return (LogSoftmax::INVALID, Vec::new());
        }
        let sum: f64 = blocks.iter().map(|&(m, s)| f64::from(s) * f64::from(m - max).exp()).sum();
        (LogSoftmax { max, log_sum: sum.ln() }, top)
    }

    /// `log softmax(logits)[index]`, for the row this was made from.
    pub fn at(self, logits: &[f32], index: usize) -> f64 {
        // callers pass a token of the row's vocabulary (the tokenizer's, or checked < n_vocab) or a top index
        f64::from(logits[index] - self.max) - self.log_sum
    }
}

/// `e^x` for `x ≤ 0` in plain f32 arithmetic that the compiler vectorises
/// (Cephes' `expf`: `x = n·ln 2 + r`, a degree-6 polynomial for `e^r`, `2^n`
/// through the exponent bits), within 2 ulp; below −87.3, where `e^x` leaves
/// f32's normal range, it gives about 1e-38, which no sum of these notices.
#[inline(always)]
pub fn exp_nonpositive(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    // 1.5 × 2^23: adding it rounds to an integer kept in the low mantissa
    // bits, with no float-to-int conversion (which would stop vectorisation).
    const ROUND: f32 = 12_582_912.0;
    // Written so that a NaN passes through (f32::max would drop it).
    let x = if x < -87.3 { -87.3 } else { x };
    let t = x * LOG2E + ROUND;
    let n = t - ROUND;
    let r = x - n * LN2_HI - n * LN2_LO;
    let p = ((((1.987_569_1e-4 * r + 1.398_199_9e-3) * r + 8.333_452e-3) * r + 4.166_579_6e-2) * r + 1.666_666_5e-1) * r + 0.5;
    let e_r = p * r * r + r + 1.0;
    // n ≥ −126 here, so 2^n is a normal f32: its exponent field is n + 127.
    let two_n = t.to_bits().wrapping_sub(ROUND.to_bits()).wrapping_add(127) << 23;
    f32::from_bits(two_n) * e_r
}

/// How tied values share ranks in [`ranks_desc`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ties {
    /// Each tied value gets the mean of the ranks the ties span (1, 2.5, 2.5, 4):
    /// what rank correlations need.
    Mean,
    /// Each tied value gets the best rank the ties span (1, 2, 2, 4): tied
    /// models share the better place.
    Best,
}

/// Ranks of `values`, 1 for the largest. The one ranking of mcscore.
pub fn ranks_desc(values: &[f64], ties: Ties) -> Vec<f64> {
    values
        .iter()
        .map(|&v| {
            let better = values.iter().filter(|&&o| o > v).count() as f64;
            match ties {
                Ties::Mean => better + (values.iter().filter(|&&o| o == v).count() as f64 + 1.0) / 2.0,
                Ties::Best => better + 1.0,
            }
        })
        .collect()
}

/// A share of successes with its binomial standard error and Wilson
/// interval. Values are fractions; the `_percent` forms exist for text in
/// llama-perplexity's layout, which prints 100·p ± 100·sqrt(p(1−p)/(n−1)).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Proportion {
    /// Successes counted (tasks right, for an accuracy).
    pub successes: usize,
    /// Trials (tasks scored).
    pub n: usize,
}

impl Proportion {
    /// Successes ÷ n (0 for n = 0).
    pub fn fraction(self) -> f64 {
        self.successes as f64 / self.n.max(1) as f64
    }

    /// The standard error of [`Proportion::fraction`], √(p(1−p)/(n−1)); none for n < 2.
    pub fn stderr(self) -> Option<f64> {
        let p = self.fraction();
        (self.n >= 2).then(|| (p * (1.0 - p) / (self.n as f64 - 1.0)).sqrt())
    }

    /// [`Proportion::fraction`] in percent, for printed text.
    pub fn percent(self) -> f64 {
        100.0 * self.successes as f64 / self.n.max(1) as f64
    }

    /// Standard error in percentage points, for printed text (NaN for n < 2, as there is none).
    pub fn stderr_percent(self) -> f64 {
        let p = self.successes as f64 / self.n.max(1) as f64;
        100.0 * (p * (1.0 - p) / (self.n as f64 - 1.0)).sqrt()
    }

    /// The 95 % Wilson score interval in percent, computed as
    /// llama-perplexity computes it (NaN for n = 0), for its text.
    pub fn wilson_percent(self) -> (f64, f64) {
        self.wilson_scaled(100.0)
    }

    /// The 95 % Wilson score interval as fractions, holding the point: the
    /// formula's rounding at the edges (5 of 5 gives 1.0000000000000002, 6 of
    /// 6 an upper bound below 1) is cut to [0, p] and [p, 1]; (0, 1) for n = 0.
    pub fn wilson(self) -> (f64, f64) {
        let (low, high) = self.wilson_scaled(1.0);
        let p = self.fraction();
        let low = if self.successes == 0 { 0.0 } else { low.clamp(0.0, p) };
        let high = if self.successes >= self.n { 1.0 } else { high.clamp(p, 1.0) };
        (low, high)
    }

    /// The 95 % Wilson score interval times `scale`, unclamped (NaN for n = 0).
    pub(crate) fn wilson_scaled(self, scale: f64) -> (f64, f64) {
        const Z: f64 = 1.95996398454;
        let n = self.n as f64;
        let freq = self.successes as f64 / n;
        let z = Z * Z / n;
        let half = z * (n * (4.0 * freq * (1.0 - freq) + z)).sqrt() / (Z + Z);
        // In llama-perplexity's order of operations, to its last bit.
        ((freq + z * 0.5 - half) / (1.0 + z) * scale, (freq + z * 0.5 + half) / (1.0 + z) * scale)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn numbers_are_shown_with_six_significant_digits_at_most() {
        for (x, text) in [
            (1e-300, "1e-300"),
            (-1e308, "-1e308"),
            (2.5, "2.5"),
            (1.0, "1"),
            (100.0, "100"),
            (0.05, "0.05"),
            (1.0 / 3.0, "0.333333"),
            (123456.7, "123457"),
            (999_999.7, "1e6"),
            (1234567.0, "1.23457e6"),
            (0.0001234567, "0.000123457"),
            (0.0, "0"),
            (f64::NAN, "NaN"),
            (f64::NEG_INFINITY, "-inf"),
        ] {
            assert_eq!(super::shown(x), text, "{x:e}");
        }
    }

    #[test]
    fn wilson_fractions_hold_the_point_and_stay_in_0_1() {
        for n in 1..=300usize {
            for successes in 0..=n {
                let p = Proportion { successes, n };
                let (low, high) = p.wilson();
                assert!(0.0 <= low && low <= p.fraction() && p.fraction() <= high && high <= 1.0, "{successes}/{n}: [{low}, {high}]");
            }
        }
        assert_eq!(Proportion { successes: 5, n: 5 }.wilson().1, 1.0);
        assert_eq!(Proportion { successes: 0, n: 17 }.wilson().0, 0.0);
    }
    use super::*;

    fn option(logprob_sum: f64, tokens: u32, chars: u32, bytes: u32) -> OptionScore {
        OptionScore::new(logprob_sum, tokens, chars, bytes)
    }

    #[test]
    fn softmax_and_log_softmax_are_stable() {
        let p = softmax(&[1000.0, 1000.0, 1000.0, 1000.0]);
        assert!(p.iter().all(|&x| (x - 0.25).abs() < 1e-12), "{p:?}");
        assert!((log_softmax_at(&[1000.0, 1000.0, 1000.0, 1000.0], 2) - 0.25f64.ln()).abs() < 1e-9);
        assert!((log_softmax_at(&[0.0, 3.0f32.ln()], 1) - 0.75f64.ln()).abs() < 1e-6);
    }

    #[test]
    fn the_vectorised_log_softmax_matches_f64_exp() {
        // A row as wide as Gemma's vocabulary, with a spread of logits.
        let row: Vec<f32> = (0..262_147).map(|i| ((i * 7919) % 10_007) as f32 / 400.0 - 12.0).collect();
        let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let exact = row.iter().map(|&l| f64::from(l - max).exp()).sum::<f64>().ln();
        let parts = LogSoftmax::of(&row);
        for i in [0, 1, 4242, 262_146] {
            let want = f64::from(row[i] - max) - exact;
            assert!((parts.at(&row, i) - want).abs() < 1e-6, "{i}: {} vs {want}", parts.at(&row, i));
        }
        for x in [0.0f32, -1e-3, -0.5, -1.0, -10.0, -50.0, -87.0] {
            let (fast, exact) = (exp_nonpositive(x), x.exp());
            assert!(((fast - exact) / exact).abs() < 3e-7, "e^{x}: {fast} vs {exact}");
        }
        assert!(exp_nonpositive(f32::NEG_INFINITY) < 1e-37);
        assert!(LogSoftmax::of(&[0.0, f32::NEG_INFINITY, 1.0]).at(&[0.0, f32::NEG_INFINITY, 1.0], 2).is_finite());
        assert!(LogSoftmax::of(&[f32::NEG_INFINITY; 3]).at(&[f32::NEG_INFINITY; 3], 0).is_nan());
    }

    fn top(logits: &[f32], k: usize) -> Vec<usize> {
        LogSoftmax::with_top(logits, k).1
    }

    #[test]
    fn the_top_tokens_are_ordered_and_keep_the_first_of_ties() {
        let row = [0.5, 2.0, f32::NEG_INFINITY, 2.0, -1.0, 3.0];
        assert_eq!(top(&row, 3), vec![5, 1, 3]);
        assert_eq!(top(&row, 1), vec![5]);
        assert_eq!(top(&row, 0), Vec::<usize>::new());
        assert_eq!(top(&row, 10), vec![5, 1, 3, 0, 4, 2]);
        assert_eq!(top(&[1.0, f32::NAN], 1), Vec::<usize>::new());
        // Across blocks: the maximum late in a wide row, ties kept in index order.
        let mut wide = vec![0.0f32; 5000];
        wide[4321] = 9.0;
        wide[17] = 5.0;
        wide[3000] = 5.0;
        assert_eq!(top(&wide, 3), vec![4321, 17, 3000]);
        let parts = LogSoftmax::of(&[0.0, 3.0f32.ln()]);
        assert!((parts.at(&[0.0, 3.0f32.ln()], 1) - 0.75f64.ln()).abs() < 1e-6);
    }

    #[test]
    fn ranks_share_ties_by_the_rule_asked() {
        let values = [0.5, 0.7, 0.5, 0.1];
        assert_eq!(ranks_desc(&values, Ties::Mean), vec![2.5, 1.0, 2.5, 4.0]);
        assert_eq!(ranks_desc(&values, Ties::Best), vec![2.0, 1.0, 2.0, 4.0]);
    }

    #[test]
    fn normalisations_can_disagree() {
        // A long likely answer against a short less likely one.
        let options = [option(-6.0, 3, 12, 12), option(-4.0, 1, 2, 4)];
        assert_eq!(Normalisation::Acc.predict(&options), 1);
        assert_eq!(Normalisation::AccNorm.predict(&options), 0); // -2 vs -4
        assert_eq!(Normalisation::AccChar.predict(&options), 0); // -0.5 vs -2
        assert_eq!(Normalisation::AccByte.predict(&options), 0); // -0.5 vs -1
    }

    #[test]
    fn pmi_subtracts_the_unconditional_pass() {
        let mut a = option(-3.0, 1, 1, 1);
        let mut b = option(-2.0, 1, 1, 1);
        a.uncond_logprob_sum = Some(-6.0); // a is much likelier given the question
        b.uncond_logprob_sum = Some(-2.5);
        assert_eq!(Normalisation::Acc.predict(&[a, b]), 1);
        assert_eq!(Normalisation::AccPmi.predict(&[a, b]), 0);
    }

    #[test]
    fn ties_go_to_the_first_option() {
        let options = [option(-1.0, 1, 1, 1), option(-1.0, 1, 1, 1), option(-2.0, 1, 1, 1)];
        for norm in Normalisation::ALL {
            assert_eq!(norm.predict(&options), 0);
        }
    }

    #[test]
    fn first_max_keeps_the_earliest_of_equal_scores() {
        assert_eq!(first_max([1.0, 3.0, 3.0, 2.0]), 1);
        assert_eq!(first_max([f64::NAN, 3.0]), 0, "nothing beats a leading NaN, as in llama-perplexity's loop");
        assert_eq!(first_max([1.0, f64::NAN, 2.0]), 2);
        assert_eq!(first_max(std::iter::empty()), 0);
    }

    #[test]
    fn proportion_matches_llama_perplexity() {
        // mc_text5: "Final result: 85.0000 +/- 3.5887" over 100 tasks.
        let p = Proportion { successes: 85, n: 100 };
        assert_eq!(format!("{:.4} +/- {:.4}", p.percent(), p.stderr_percent()), "85.0000 +/- 3.5887");
    }

    #[test]
    fn the_greedy_pick_is_the_first_maximum() {
        assert!(log_softmax_greedy(&[0.0, 2.0, 1.0], 1).1);
        assert!(!log_softmax_greedy(&[0.0, 2.0, 1.0], 2).1);
        // A tie goes to the first maximum, as torch's argmax gives it.
        assert!(log_softmax_greedy(&[2.0, 0.0, 2.0], 0).1);
        assert!(!log_softmax_greedy(&[2.0, 0.0, 2.0], 2).1);
        assert_eq!(log_softmax_greedy(&[0.0, 2.0, 1.0], 2).0, log_softmax_at(&[0.0, 2.0, 1.0], 2));
    }
}
