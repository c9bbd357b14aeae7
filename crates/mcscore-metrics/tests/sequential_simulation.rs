//! Validity of the confidence sequence by simulation: finite files of paired
//! tasks with a known difference, drawn in random order without replacement
//! (as a sequential comparison would take a file's tasks), decisions checked
//! after every task.

use mcscore_metrics::sequential::{ConfidenceSequence, Decision};
use mcscore_metrics::stats::SplitMix64;

/// A file of `n` tasks as (base right, other right): `flips` right→wrong,
/// `flips + extra` wrong→right, the rest unchanged. Its true difference is
/// 100 · extra / n points.
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
    let decided = first_decisions(&tasks, 10_000, 0.05, 1.0, Decision::Different, 1);
    let rate = decided.iter().filter(|d| d.is_some()).count() as f64 / 10_000.0;
    eprintln!("\"different\" at a true difference of 0: {rate}");
    assert!(rate <= 0.05, "{rate}");
}

#[test]
fn at_the_margin_equivalent_is_ever_said_in_at_most_alpha_of_runs() {
    // A true difference of exactly −2 points: 40 more right→wrong than wrong→right in 2,000.
    let tasks = population(2000, 100, -40);
    let decided = first_decisions(&tasks, 10_000, 0.05, 2.0, Decision::Equivalent, 2);
    let rate = decided.iter().filter(|d| d.is_some()).count() as f64 / 10_000.0;
    eprintln!("\"equivalent within ±2\" at a true difference of −2: {rate}");
    assert!(rate <= 0.05, "{rate}");
}

/// A regression guard, not a tuned number: the median number of tasks to
/// "different" at a true difference of −3 points in a 14,000-task file, as
/// recorded when the method was written; a change of more than 10 % either
/// way means the method changed.
#[test]
fn a_three_point_difference_is_decided_in_the_recorded_median_number_of_tasks() {
    const RECORDED_MEDIAN: usize = 931;
    let tasks = population(14_000, 700, -420);
    let decided = first_decisions(&tasks, 1_000, 0.05, 1.0, Decision::Different, 3);
    let mut at: Vec<usize> = decided.iter().map(|d| d.unwrap_or(usize::MAX)).collect();
    at.sort_unstable();
    let median = at[at.len() / 2];
    eprintln!("median tasks to \"different\" at −3 points: {median}");
    assert!(median.abs_diff(RECORDED_MEDIAN) * 10 <= RECORDED_MEDIAN, "median {median}, recorded {RECORDED_MEDIAN}");
}
