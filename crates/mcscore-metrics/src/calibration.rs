//! Calibration of the top-label confidence p_max: expected calibration error
//! over equal-width bins, Brier score, and the binned Murphy decomposition.

use serde::Serialize;

use crate::schemes::{brier, TaskProbs};

/// One bin of a reliability diagram.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Bin {
    /// The lower edge of the bin's range of p_max (included).
    pub low: f64,
    /// The upper edge (excluded, but for the last bin, which holds p_max = 1).
    pub high: f64,
    /// Tasks whose p_max falls in the bin.
    pub count: usize,
    /// The mean p_max of those tasks (0 for an empty bin).
    pub mean_confidence: f64,
    /// The share of those tasks whose pick is the key, as a fraction (0 for
    /// an empty bin).
    pub accuracy: f64,
    /// The 95 % Wilson interval of `accuracy` (NaN for an empty bin).
    pub accuracy_interval: (f64, f64),
}

/// How well a run's top-label confidence p_max matches the share of its
/// picks that are right, over equal-width bins of p_max.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Calibration {
    /// Σ_b (n_b/N) |accuracy_b − confidence_b|.
    pub ece: f64,
    /// Mean multi-class Brier score Σ_i (p_i − y_i)², in [0, 2].
    pub brier: f64,
    /// Top-label Brier decomposition over the bins: reliability − resolution + uncertainty.
    /// Reliability, Σ_b (n_b/N)(confidence_b − accuracy_b)², is lower the
    /// better the confidences match.
    pub reliability: f64,
    /// Resolution: Σ_b (n_b/N)(accuracy_b − accuracy)², how far the bins'
    /// accuracies lie from the overall one; higher is better.
    pub resolution: f64,
    /// Uncertainty: accuracy × (1 − accuracy), of the overall accuracy; no
    /// confidence changes it.
    pub uncertainty: f64,
    /// The bins, lowest p_max first, empty ones included.
    pub bins: Vec<Bin>,
}

/// The bins a report divides [0, 1] into: 15 of equal width.
pub const ECE_BINS: usize = 15;

impl Calibration {
    /// The calibration of `tasks` over `n_bins` (at least 1) equal-width bins
    /// of p_max; with no tasks, ECE, Brier and the decomposition are 0.
    pub fn of(tasks: &[TaskProbs], n_bins: usize) -> Calibration {
        let n = tasks.len().max(1) as f64;
        let mut sums = vec![(0usize, 0.0f64, 0.0f64); n_bins];
        for t in tasks {
            let c = t.p_max();
            // callers pass ECE_BINS (15)
            let b = ((c * n_bins as f64) as usize).min(n_bins - 1);
            sums[b].0 += 1;
            sums[b].1 += c;
            sums[b].2 += f64::from(u8::from(t.pick() == t.key));
        }
        let accuracy = sums.iter().map(|s| s.2).sum::<f64>() / n;
        let bins: Vec<Bin> = sums
            .iter()
            .enumerate()
            .map(|(b, &(count, conf, hits))| Bin {
                low: b as f64 / n_bins as f64,
                high: (b + 1) as f64 / n_bins as f64,
                count,
                mean_confidence: if count > 0 { conf / count as f64 } else { 0.0 },
                accuracy: if count > 0 { hits / count as f64 } else { 0.0 },
                accuracy_interval: crate::Proportion { successes: hits as usize, n: count }.wilson_scaled(1.0),
            })
            .collect();
        let weighted = |f: &dyn Fn(&Bin) -> f64| bins.iter().map(|b| b.count as f64 / n * f(b)).sum::<f64>();
        Calibration {
            ece: weighted(&|b| (b.accuracy - b.mean_confidence).abs()),
            brier: tasks.iter().map(brier).sum::<f64>() / n,
            reliability: weighted(&|b| (b.mean_confidence - b.accuracy).powi(2)),
            resolution: weighted(&|b| (b.accuracy - accuracy).powi(2)),
            uncertainty: accuracy * (1.0 - accuracy),
            bins,
        }
    }
}
