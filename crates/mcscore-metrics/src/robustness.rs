//! Does a model ranking survive a change of prompt format? (docs/methods.md,
//! "Prompt-format sensitivity"). Input: `accuracy[model][format]`.

use serde::Serialize;

use crate::stats::kendall;

/// Competition ranks, 1 = best: tied models share the better rank.
pub fn ranks(scores: &[f64]) -> Vec<usize> {
    crate::ranks_desc(scores, crate::Ties::Best).into_iter().map(|r| r as usize).collect()
}

/// Per model, over formats: how many formats put it at rank 1, 2, ….
pub fn rank_distribution(accuracy: &[Vec<f64>]) -> Vec<Vec<usize>> {
    let models = accuracy.len();
    let formats = accuracy.first().map_or(0, Vec::len);
    let mut counts = vec![vec![0; models]; models];
    for f in 0..formats {
        // every model's row has the same formats (sweep's models; merge_saved checks saved ones)
        let column: Vec<f64> = accuracy.iter().map(|m| m[f]).collect();
        for (m, rank) in ranks(&column).into_iter().enumerate() {
            counts[m][rank - 1] += 1;
        }
    }
    counts
}

/// How two models compare across formats.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PairRecord {
    /// The first model's index (its row of `accuracy`).
    pub a: usize,
    /// The second model's index, after `a`.
    pub b: usize,
    /// Formats where `a` scores higher.
    pub a_ahead: usize,
    /// Formats where `b` scores higher.
    pub b_ahead: usize,
    /// Formats where they tie, or where either accuracy is NaN.
    pub tied: usize,
}

impl PairRecord {
    /// Whether the choice of format decides which model wins.
    pub fn reverses(&self) -> bool {
        self.a_ahead > 0 && self.b_ahead > 0
    }
}

/// How each pair of models compares across formats: `a` before `b`, pairs
/// in order of `a`, then `b`.
pub fn pair_records(accuracy: &[Vec<f64>]) -> Vec<PairRecord> {
    let mut records = Vec::new();
    for a in 0..accuracy.len() {
        for b in a + 1..accuracy.len() {
            let mut record = PairRecord { a, b, a_ahead: 0, b_ahead: 0, tied: 0 };
            for (x, y) in accuracy[a].iter().zip(&accuracy[b]) {
                match x.partial_cmp(y) {
                    Some(std::cmp::Ordering::Greater) => record.a_ahead += 1,
                    Some(std::cmp::Ordering::Less) => record.b_ahead += 1,
                    _ => record.tied += 1,
                }
            }
            records.push(record);
        }
    }
    records
}

/// Share of (model pair, format pair) combinations whose order flips: one
/// format puts `a` strictly ahead, the other puts `b` strictly ahead.
pub fn reversal_rate(accuracy: &[Vec<f64>]) -> f64 {
    let formats = accuracy.first().map_or(0, Vec::len);
    let (mut flips, mut total) = (0usize, 0usize);
    for a in 0..accuracy.len() {
        for b in a + 1..accuracy.len() {
            // +1 where a is ahead, -1 where b is, 0 on a tie. Rows have the same formats (sweep; merge_saved checks saved ones).
            let lead: Vec<i8> = (0..formats)
                .map(|f| match accuracy[a][f].partial_cmp(&accuracy[b][f]) {
                    Some(std::cmp::Ordering::Greater) => 1,
                    Some(std::cmp::Ordering::Less) => -1,
                    _ => 0,
                })
                .collect();
            for f in 0..formats {
                for g in f + 1..formats {
                    total += 1;
                    flips += usize::from(lead[f] * lead[g] < 0);
                }
            }
        }
    }
    if total == 0 {
        0.0
    } else {
        flips as f64 / total as f64
    }
}

/// Kendall τ-b between the model rankings of every pair of formats (NaN for
/// a pair where either format ties every model).
pub fn kendall_between_formats(accuracy: &[Vec<f64>]) -> Vec<f64> {
    let formats = accuracy.first().map_or(0, Vec::len);
    // every model's row has the same formats (sweep's models; merge_saved checks saved ones)
    let column = |f: usize| -> Vec<f64> { accuracy.iter().map(|m| m[f]).collect() };
    let mut taus = Vec::new();
    for f in 0..formats {
        for g in f + 1..formats {
            taus.push(kendall(&column(f), &column(g)));
        }
    }
    taus
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_share_the_better_rank_on_ties() {
        assert_eq!(ranks(&[0.5, 0.7, 0.5, 0.1]), vec![2, 1, 2, 4]);
    }

    #[test]
    fn two_models_three_formats_by_hand() {
        // Model 0 wins formats 0 and 1, model 1 wins format 2.
        let accuracy = vec![vec![0.6, 0.5, 0.3], vec![0.4, 0.4, 0.5]];
        assert_eq!(rank_distribution(&accuracy), vec![vec![2, 1], vec![1, 2]]);
        let pairs = pair_records(&accuracy);
        assert_eq!(pairs, vec![PairRecord { a: 0, b: 1, a_ahead: 2, b_ahead: 1, tied: 0 }]);
        assert!(pairs[0].reverses());
        // Format pairs (0,1) agree, (0,2) and (1,2) flip.
        assert!((reversal_rate(&accuracy) - 2.0 / 3.0).abs() < 1e-12);
        let taus = kendall_between_formats(&accuracy);
        assert_eq!(taus.len(), 3);
        assert!((taus[0] - 1.0).abs() < 1e-12 && (taus[1] + 1.0).abs() < 1e-12 && (taus[2] + 1.0).abs() < 1e-12);
    }

    #[test]
    fn a_tie_is_not_a_reversal() {
        let accuracy = vec![vec![0.5, 0.6], vec![0.5, 0.4]];
        assert_eq!(reversal_rate(&accuracy), 0.0);
        assert!(!pair_records(&accuracy)[0].reverses());
    }
}
