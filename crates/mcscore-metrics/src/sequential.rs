//! Anytime-valid confidence sequences for a paired difference in accuracy:
//! intervals that hold at every number of tasks at once, so that scoring may
//! stop as soon as one decides, without the inflated error of stopping at the
//! first small p-value.
//!
//! The method is the predictable plug-in empirical-Bernstein confidence
//! sequence of Waudby-Smith & Ramdas, "Estimating means of bounded random
//! variables by betting", JRSS-B 86(1), 2024, Theorem 2 (PrPl-EB), applied to
//! X_i = (D_i + 1)/2 ∈ [0, 1] with D_i ∈ {−1, 0, +1} the change in
//! rightness of task i, and the running intersection of its intervals.

use serde::Serialize;

/// The truncation of the bets λ_i (the paper's c; ½ is its suggestion).
const MAX_BET: f64 = 0.5;

/// The confidence sequence of a mean difference, fed one task at a time.
#[derive(Debug, Clone)]
pub struct ConfidenceSequence {
    /// ln(2/α).
    log_term: f64,
    tasks: usize,
    /// Σ X_i and Σ (X_i − μ̂_i)², for the plug-in mean and variance.
    sum_x: f64,
    sum_sq: f64,
    /// Σ λ_i, Σ λ_i X_i and Σ v_i ψ_E(λ_i).
    sum_bets: f64,
    sum_bet_x: f64,
    sum_penalty: f64,
    /// The running intersection, as fractions: (low, high).
    interval: (f64, f64),
}

/// What a confidence sequence says at some number of tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// The interval excludes 0.
    Different,
    /// The interval lies inside (−margin, +margin).
    Equivalent,
    /// Neither, so far.
    Undecided,
}

impl ConfidenceSequence {
    /// A sequence at level 1 − `alpha` (0 < α < 1).
    pub fn new(alpha: f64) -> ConfidenceSequence {
        ConfidenceSequence {
            log_term: (2.0 / alpha).ln(),
            tasks: 0,
            sum_x: 0.0,
            sum_sq: 0.0,
            sum_bets: 0.0,
            sum_bet_x: 0.0,
            sum_penalty: 0.0,
            interval: (-1.0, 1.0),
        }
    }

    /// Adds one task: `base_right` and `other_right` under the two runs.
    pub fn push(&mut self, base_right: bool, other_right: bool) {
        let d = f64::from(u8::from(other_right)) - f64::from(u8::from(base_right));
        let x = (d + 1.0) / 2.0;
        let t = self.tasks as f64 + 1.0;
        // μ̂_{t−1} and σ̂²_{t−1}, with the prior ½ and ¼ counted as one task.
        let mean_before = (0.5 + self.sum_x) / t;
        let var_before = (0.25 + self.sum_sq) / t;
        let bet = (2.0 * self.log_term / (var_before * t * (1.0 + t).ln())).sqrt().min(MAX_BET);
        let v = 4.0 * (x - mean_before).powi(2);
        let psi = (-(1.0 - bet).ln() - bet) / 4.0;
        self.sum_bets += bet;
        self.sum_bet_x += bet * x;
        self.sum_penalty += v * psi;
        self.sum_x += x;
        self.tasks += 1;
        let mean_now = (0.5 + self.sum_x) / (t + 1.0);
        self.sum_sq += (x - mean_now).powi(2);
        let centre = self.sum_bet_x / self.sum_bets;
        let half = (self.log_term + self.sum_penalty) / self.sum_bets;
        // Back from the mean of X to the difference: μ = 2m − 1.
        let (low, high) = (2.0 * (centre - half) - 1.0, 2.0 * (centre + half) - 1.0);
        self.interval = (self.interval.0.max(low), self.interval.1.min(high));
    }

    /// The interval (a difference of fractions) after the tasks pushed so far.
    pub fn interval(&self) -> (f64, f64) {
        self.interval
    }

    /// Tasks pushed so far.
    pub fn tasks(&self) -> usize {
        self.tasks
    }

    /// The decision at `margin` (a fraction) now.
    pub fn decision(&self, margin: f64) -> Decision {
        let (low, high) = self.interval;
        if low > 0.0 || high < 0.0 {
            Decision::Different
        } else if -margin < low && high < margin {
            Decision::Equivalent
        } else {
            Decision::Undecided
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_runs_narrow_towards_zero_and_become_equivalent() {
        let mut cs = ConfidenceSequence::new(0.05);
        for i in 0..2000 {
            cs.push(i % 3 == 0, i % 3 == 0);
        }
        let (low, high) = cs.interval();
        assert!(low < 0.0 && 0.0 < high && high - low < 0.02, "{low} {high}");
        assert_eq!(cs.decision(0.01), Decision::Equivalent);
    }

    #[test]
    fn a_run_that_is_always_worse_is_different_early() {
        let mut cs = ConfidenceSequence::new(0.05);
        let mut at = None;
        for i in 0..1000 {
            cs.push(true, i % 2 == 0);
            if at.is_none() && cs.decision(0.01) == Decision::Different {
                at = Some(i + 1);
            }
        }
        assert!(at.is_some_and(|t| t < 100), "{at:?}");
        assert!(cs.interval().1 < 0.0);
    }
}
