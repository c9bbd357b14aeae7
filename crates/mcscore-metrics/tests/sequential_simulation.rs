//! Validity of the confidence sequence by simulation: finite files of paired
//! tasks with a known difference, drawn in random order without replacement
//! (as a sequential comparison would take a file's tasks), decisions checked
//! after every task.

use mcscore_metrics::sequential::{ConfidenceSequence, Decision};
use mcscore_metrics::stats::SplitMix64;

/// A file of `n` tasks as (base right, other right): `flips` right→wrong,
/// `flips + extra` wrong→right, the rest unchanged. Its true difference is
/// extra / n.
fn population(n: usize, flips: usize, extra: isize) -> Vec<(bool, bool)> {
    let up = (flips as isize + extra) as usize;
    let mut tasks = vec![(true, false); flips];
    tasks.extend(std::iter::repeat_n((false, true), up));
    let rest = n - tasks.len();
    tasks.extend((0..rest).map(|i| (i % 2 == 0, i % 2 == 0)));
    tasks
}

/// For each of `runs` random orders: the first task count at which the
/// sequence decided `wanted` (at `margin`), if it ever did.
fn first_decisions(tasks: &[(bool, bool)], runs: usize, alpha: f64, margin: f64, wanted: Decision, seed: u64) -> Vec<Option<usize>> {
    let mut rng = SplitMix64::new(seed);
    let mut order: Vec<usize> = (0..tasks.len()).collect();
    (0..runs)
        .map(|_| {
            for i in (1..order.len()).rev() {
                order.swap(i, rng.below(i + 1));
            }
            let mut cs = ConfidenceSequence::new(alpha);
            order.iter().enumerate().find_map(|(t, &i)| {
                cs.push(tasks[i].0, tasks[i].1);
                (cs.decision(margin) == wanted).then_some(t + 1)
            })
        })
        .collect()
}

#[test]
fn with_no_difference_different_is_ever_said_in_at_most_alpha_of_runs() {
    let tasks = population(2000, 150, 0);
    let decided = first_decisions(&tasks, 10_000, 0.05, 0.01, Decision::Different, 1);
    let rate = decided.iter().filter(|d| d.is_some()).count() as f64 / 10_000.0;
    eprintln!("\"different\" at a true difference of 0: {rate}");
    assert!(rate <= 0.05, "{rate}");
}

#[test]
fn at_the_margin_equivalent_is_ever_said_in_at_most_alpha_of_runs() {
    // A true difference of exactly −2 points: 40 more right→wrong than wrong→right in 2,000.
    let tasks = population(2000, 100, -40);
    let decided = first_decisions(&tasks, 10_000, 0.05, 0.02, Decision::Equivalent, 2);
    let rate = decided.iter().filter(|d| d.is_some()).count() as f64 / 10_000.0;
    eprintln!("\"equivalent within ±2\" at a true difference of −2: {rate}");
    assert!(rate <= 0.05, "{rate}");
}

/// Power, from what the method promises rather than from recorded output: at
/// a true difference of −3 points in a 14,000-task file, every one of 1,000
/// random orders says "different" before the file ends, and none says
/// "equivalent" at ±1 point on the way.
#[test]
fn a_three_point_difference_is_found_in_every_order_before_the_file_ends() {
    let tasks = population(14_000, 700, -420);
    let different = first_decisions(&tasks, 1_000, 0.05, 0.01, Decision::Different, 3);
    assert!(different.iter().all(Option::is_some), "{} of 1000 orders never decided", different.iter().filter(|d| d.is_none()).count());
    let mut at: Vec<usize> = different.iter().flatten().copied().collect();
    at.sort_unstable();
    eprintln!("median tasks to \"different\" at −3 points: {}", at[at.len() / 2]);
    let equivalent = first_decisions(&tasks, 1_000, 0.05, 0.01, Decision::Equivalent, 3);
    assert!(equivalent.iter().all(Option::is_none));
}

/// The sequence against the paper's definition written out afresh (Waudby-Smith
/// & Ramdas 2024, Theorem 2, PrPl-EB with c = ½ and the running
/// intersection): every plug-in mean and variance recomputed from the whole
/// prefix at each step rather than kept as running sums, on random tasks with
/// every kind of change, compared after every task.
#[test]
fn the_sequence_is_the_papers_prpl_eb_interval_at_every_task() {
    fn by_definition(xs: &[f64], alpha: f64) -> Vec<(f64, f64)> {
        let log_term = (2.0 / alpha).ln();
        // μ̂_i and σ̂²_i over X_1..X_i, with the prior ½ and ¼ as one task.
        let mean = |i: usize| (0.5 + xs[..i].iter().sum::<f64>()) / (i as f64 + 1.0);
        let variance = |i: usize| (0.25 + (1..=i).map(|j| (xs[j - 1] - mean(j)).powi(2)).sum::<f64>()) / (i as f64 + 1.0);
        let (mut low, mut high) = (-1.0f64, 1.0f64);
        let mut out = Vec::new();
        for t in 1..=xs.len() {
            let (mut bets, mut bet_x, mut penalty) = (0.0, 0.0, 0.0);
            for i in 1..=t {
                let lambda = (2.0 * log_term / (variance(i - 1) * i as f64 * (1.0 + i as f64).ln())).sqrt().min(0.5);
                let psi = (-(1.0 - lambda).ln() - lambda) / 4.0;
                bets += lambda;
                bet_x += lambda * xs[i - 1];
                penalty += 4.0 * (xs[i - 1] - mean(i - 1)).powi(2) * psi;
            }
            let (centre, half) = (bet_x / bets, (log_term + penalty) / bets);
            low = low.max(2.0 * (centre - half) - 1.0);
            high = high.min(2.0 * (centre + half) - 1.0);
            out.push((low, high));
        }
        out
    }
    let mut rng = SplitMix64::new(9);
    for alpha in [0.05, 0.01, 0.2] {
        let tasks: Vec<(bool, bool)> = (0..300).map(|_| (rng.below(3) > 0, rng.below(2) > 0)).collect();
        let xs: Vec<f64> = tasks.iter().map(|&(b, o)| (f64::from(u8::from(o)) - f64::from(u8::from(b)) + 1.0) / 2.0).collect();
        let expected = by_definition(&xs, alpha);
        let mut cs = ConfidenceSequence::new(alpha);
        for (t, &(b, o)) in tasks.iter().enumerate() {
            cs.push(b, o);
            let ((low, high), (want_low, want_high)) = (cs.interval(), expected[t]);
            assert!(
                (low - want_low).abs() <= 1e-12 && (high - want_high).abs() <= 1e-12,
                "α {alpha}, task {}: ({low}, {high}) against ({want_low}, {want_high})",
                t + 1
            );
        }
    }
}
