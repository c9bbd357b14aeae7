//! Calibration of the top-label confidence p_max: expected calibration error
//! over equal-width bins, Brier score, and the binned Murphy decomposition.

use serde::Serialize;

use crate::schemes::{brier, TaskProbs};

/// One bin of a reliability diagram.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Bin {
    pub low: f64,
    pub high: f64,
    pub count: usize,
    pub mean_confidence: f64,
    pub accuracy: f64,
    /// The 95 % Wilson interval of `accuracy` (NaN for an empty bin).
    pub accuracy_interval: (f64, f64),
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Calibration {
    /// Σ_b (n_b/N) |accuracy_b − confidence_b|.
    pub ece: f64,
    /// Mean multi-class Brier score Σ_i (p_i − y_i)², in [0, 2].
    pub brier: f64,
    /// Top-label Brier decomposition over the bins: reliability − resolution + uncertainty.
    pub reliability: f64,
    pub resolution: f64,
    pub uncertainty: f64,
    pub bins: Vec<Bin>,
}

pub const ECE_BINS: usize = 15;

impl Calibration {
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
