//! Position bias: PriDe (Zheng et al., ICLR 2024) and its measures, RStd and
//! PIA (docs/methods.md, "Position bias"). Positions are option slots
//! (ID 0 = A, …); inputs are log-probabilities of each ID.

use crate::softmax;

/// One task's prior over ID positions from all k cyclic rotations:
/// `rotations[r][i]` is log P(ID i) under rotation r. Softmax over positions
/// of the mean over rotations (each option visits every position, so what
/// remains is the preference for the position itself).
pub fn task_prior(rotations: &[Vec<f64>]) -> Vec<f64> {
    // sweep renders every rotation of a calibration item, and merge_shards checks each row's width against its IDs
    let k = rotations[0].len();
    let mean: Vec<f64> = (0..k).map(|i| rotations.iter().map(|r| r[i]).sum::<f64>() / rotations.len() as f64).collect();
    softmax(&mean)
}

/// The prior PriDe applies: the mean of the calibration tasks' priors.
pub fn prior(task_priors: &[Vec<f64>]) -> Vec<f64> {
    // sweep passes one prior per calibration item (at least one), each k long
    let k = task_priors[0].len();
    (0..k).map(|i| task_priors.iter().map(|p| p[i]).sum::<f64>() / task_priors.len() as f64).collect()
}

/// PriDe's prediction: argmax_i log P(ID i) − log prior_i (first maximum).
pub fn debiased_pick(log_probs: &[f64], prior: &[f64]) -> usize {
    crate::first_max(log_probs.iter().zip(prior).map(|(l, p)| l - p.ln()))
}

/// Recall standard deviation across positions (recalls as fractions): the population
/// standard deviation of per-position recall, over positions that hold a gold.
pub fn rstd(picks: &[usize], golds: &[usize], k: usize) -> f64 {
    let recalls: Vec<f64> = (0..k)
        .filter_map(|i| {
            let gold_here = golds.iter().filter(|&&g| g == i).count();
            let hit = picks.iter().zip(golds).filter(|&(&p, &g)| g == i && p == i).count();
            (gold_here > 0).then(|| hit as f64 / gold_here as f64)
        })
        .collect();
    let mean = recalls.iter().sum::<f64>() / recalls.len().max(1) as f64;
    (recalls.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / recalls.len().max(1) as f64).sqrt()
}

/// PIA = (1/M) Σ_i (C_i / Pr_i)(C_i / N): C_i correct picks of position i,
/// Pr_i all picks of position i, N tasks, M positions (a fixed k). Positions
/// never picked contribute 0.
pub fn pia(picks: &[usize], golds: &[usize], k: usize) -> f64 {
    let n = picks.len() as f64;
    (0..k)
        .map(|i| {
            let picked = picks.iter().filter(|&&p| p == i).count() as f64;
            let correct = picks.iter().zip(golds).filter(|&(&p, &g)| p == i && g == i).count() as f64;
            if picked == 0.0 {
                0.0
            } else {
                (correct / picked) * (correct / n)
            }
        })
        .sum::<f64>()
        / k as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) {
        assert!((a - b).abs() < 1e-12, "{a} != {b}");
    }

    #[test]
    fn pride_on_a_toy_case_by_hand() {
        // Two options. The model likes position A by ln 2 whatever sits there.
        let ln2 = 2f64.ln();
        // Rotation 0: option X at A, Y at B; rotation 1: Y at A, X at B.
        // Content scores: X = 0, Y = -1. Position bonus: A +ln 2.
        let rotations = vec![vec![0.0 + ln2, -1.0], vec![-1.0 + ln2, 0.0]];
        // Mean per position: A = ln2 - 0.5, B = -0.5 → softmax = [2/3, 1/3].
        let p = task_prior(&rotations);
        close(p[0], 2.0 / 3.0);
        close(p[1], 1.0 / 3.0);
        let prior = prior(&[p.clone(), vec![0.5, 0.5]]);
        close(prior[0], (2.0 / 3.0 + 0.5) / 2.0);
        // A task where B is better by 0.2 but A gets the position bonus:
        // raw argmax is A; debiased by the task's own prior it is B.
        let log_probs = [-1.0 + ln2, -0.8];
        assert_eq!((1..2).fold(0, |b, i| if log_probs[i] > log_probs[b] { i } else { b }), 0);
        assert_eq!(debiased_pick(&log_probs, &p), 1);
    }

    #[test]
    fn rstd_and_pia_by_hand() {
        // Golds A, A, B, B; an A-always picker: recall A 1, B 0 → RStd 0.5.
        let golds = [0, 0, 1, 1];
        close(rstd(&[0, 0, 0, 0], &golds, 2), 0.5);
        close(rstd(&golds, &golds, 2), 0.0);
        // PIA: C_A = 2, Pr_A = 4, N = 4 → (2/4)(2/4) = 0.25; B never picked → 0; /2.
        close(pia(&[0, 0, 0, 0], &golds, 2), 0.125);
        // A perfect picker: (2/2)(2/4) + (2/2)(2/4) = 1, /2 = 0.5.
        close(pia(&golds, &golds, 2), 0.5);
    }
}
