//! Every scheme against hand-computed values, then properties.

use mcscore_metrics::calibration::Calibration;
use mcscore_metrics::schemes::{brier, Behaviour, Response, Scheme, TaskProbs};
use mcscore_metrics::stats::{kendall, spearman, Bootstrap};
use mcscore_metrics::{Normalisation, OptionScore};
use proptest::prelude::*;

fn t(p: &[f64], key: usize) -> TaskProbs {
    TaskProbs { p: p.to_vec(), key }
}

const NM: Scheme = Scheme::Nm { tau: None };
const ELIM: Scheme = Scheme::Elim { epsilon: None };
const ELIM_NM: Scheme = Scheme::ElimNm { epsilon: None };

fn close(a: f64, b: f64) {
    assert!((a - b).abs() < 1e-12, "{a} != {b}");
}

/// Prompted responses, scored by the paper's rules, worked by hand for k = 4
/// with the key at C (index 2).
#[test]
fn prompted_responses_score_by_the_papers_rules() {
    let score = |scheme: Scheme, r: Response| scheme.score_response(&r, 2, 4);
    // NR: 1/0.
    close(score(Scheme::Nr, Response::Pick(2)), 1.0);
    close(score(Scheme::Nr, Response::Pick(0)), 0.0);
    // NM: +1, −1/(k−1), 0 for ABSTAIN.
    close(score(NM, Response::Pick(2)), 1.0);
    close(score(NM, Response::Pick(3)), -1.0 / 3.0);
    close(score(NM, Response::Abstain), 0.0);
    // Elim: a third per distractor eliminated; nothing once the key is.
    close(score(ELIM, Response::Eliminate(vec![0, 3])), 2.0 / 3.0);
    close(score(ELIM, Response::Eliminate(vec![0, 1, 3])), 1.0);
    close(score(ELIM, Response::Eliminate(vec![0, 2])), 0.0);
    close(score(ELIM, Response::Eliminate(vec![])), 0.0);
    // Elim-NM: eliminating the key costs k − 1 thirds.
    close(score(ELIM_NM, Response::Eliminate(vec![0, 2])), (1.0 - 3.0) / 3.0);
    close(score(ELIM_NM, Response::Eliminate(vec![0, 1, 2, 3])), 0.0);
    close(score(ELIM_NM, Response::Eliminate(vec![3])), 1.0 / 3.0);
    // CBM: +1/+2/+3 right, 0/−2/−6 wrong.
    for (level, right, wrong) in [(1, 1.0, 0.0), (2, 2.0, -2.0), (3, 3.0, -6.0)] {
        close(score(Scheme::Cbm, Response::Confident { pick: 2, level }), right);
        close(score(Scheme::Cbm, Response::Confident { pick: 1, level }), wrong);
    }
    // PPA: 1 − Brier/2; Brier of (0.1, 0.2, 0.6, 0.1) = 0.01 + 0.04 + 0.16 + 0.01.
    close(score(Scheme::Ppa, Response::Allocate(vec![0.1, 0.2, 0.6, 0.1])), 1.0 - 0.22 / 2.0);
    close(score(Scheme::Ppa, Response::Allocate(vec![0.0, 0.0, 1.0, 0.0])), 1.0);
    // AUC: (k − a)/(k − 1).
    for (a, expected) in [(1, 1.0), (2, 2.0 / 3.0), (3, 1.0 / 3.0), (4, 0.0)] {
        close(score(Scheme::Auc, Response::Attempts(a)), expected);
    }
    // Unparsed: the wrong answer that claims least.
    let unparsed =
        [(Scheme::Nr, 0.0), (NM, -1.0 / 3.0), (ELIM, 0.0), (ELIM_NM, -1.0), (Scheme::Cbm, 0.0), (Scheme::Ppa, 0.0), (Scheme::Auc, 0.0)];
    for (scheme, expected) in unparsed {
        close(score(scheme, Response::Unparsed), expected);
    }
}

#[test]
fn four_options_confident_and_right() {
    let task = t(&[0.7, 0.2, 0.06, 0.04], 0);
    close(Scheme::Nr.score(&task), 1.0);
    close(NM.score(&task), 1.0);
    // p < 1/4 eliminates options 1, 2, 3: three distractors of three.
    close(ELIM.score(&task), 1.0);
    close(ELIM_NM.score(&task), 1.0);
    close(Scheme::Cbm.score(&task), 2.0); // 2/3 <= 0.7 < 0.8
    close(brier(&task), 0.09 + 0.04 + 0.0036 + 0.0016);
    close(Scheme::Ppa.score(&task), 1.0 - 0.1352 / 2.0);
    close(Scheme::Auc.score(&task), 1.0);
}

#[test]
fn four_options_confident_and_wrong() {
    let task = t(&[0.85, 0.1, 0.03, 0.02], 1);
    close(Scheme::Nr.score(&task), 0.0);
    close(NM.score(&task), -1.0 / 3.0);
    // The key (0.1 < 0.25) is eliminated, with two distractors.
    close(ELIM.score(&task), 0.0);
    close(ELIM_NM.score(&task), (2.0 - 3.0) / 3.0);
    close(Scheme::Cbm.score(&task), -6.0);
    close(Scheme::Auc.score(&task), 2.0 / 3.0); // key tried second
}

#[test]
fn all_equal_scores_abstain_and_tie_to_the_first_option() {
    let task = TaskProbs::from_scores(&[-2.0, -2.0, -2.0], 2);
    assert_eq!(task.pick(), 0);
    close(NM.score(&task), 0.0); // p_max = 1/3 is not above τ = 1/3
    close(ELIM.score(&task), 0.0); // nothing is below 1/3
    close(Scheme::Cbm.score(&task), 0.0);
    close(Scheme::Auc.score(&task), 0.0); // ties in option order: the key is tried last
    let b = Behaviour::of(&[task], None, None);
    close(b.abstention_rate, 1.0);
    close(b.mean_attempts, 3.0);
}

#[test]
fn behaviour_rates_follow_the_thresholds_the_schemes_use() {
    // p = (0.5, 0.3, 0.2): above τ = 1/3, so NM answers; at τ = 0.9 it abstains.
    let task = t(&[0.5, 0.3, 0.2], 0);
    close(Behaviour::of(std::slice::from_ref(&task), None, None).abstention_rate, 0.0);
    let strict = Behaviour::of(std::slice::from_ref(&task), Some(0.9), Some(0.4));
    close(strict.abstention_rate, 1.0);
    close(Scheme::Nm { tau: Some(0.9) }.score(&task), 0.0);
    // ε = 0.4 eliminates 0.3 and 0.2, as Elim scores it.
    close(strict.mean_eliminated, 2.0);
    close(Scheme::Elim { epsilon: Some(0.4) }.score(&task), 1.0);
    close(strict.pick_not_eliminated_rate, 1.0);
    close(Behaviour::of(&[task], None, Some(0.6)).pick_not_eliminated_rate, 0.0);
}

#[test]
fn two_options() {
    let task = t(&[0.4, 0.6], 1);
    close(Scheme::Nr.score(&task), 1.0);
    close(NM.score(&task), 1.0);
    close(ELIM.score(&task), 1.0);
    close(Scheme::Cbm.score(&task), 1.0);
    close(Scheme::Auc.score(&task), 1.0);
    let wrong = t(&[0.4, 0.6], 0);
    close(NM.score(&wrong), -1.0);
    close(ELIM_NM.score(&wrong), -1.0);
}

#[test]
fn a_hundred_options() {
    let mut p = vec![0.005; 100];
    p[42] = 1.0 - 0.005 * 99.0;
    let task = t(&p, 42);
    close(Scheme::Nr.score(&task), 1.0);
    close(ELIM.score(&task), 1.0); // 0.005 < 0.01 eliminates all 99 distractors
    let mut flat = vec![0.01; 100];
    flat[0] = 0.0;
    flat[99] = 0.02;
    close(Scheme::Auc.score(&t(&flat, 1)), (100.0 - 2.0) / 99.0);
}

#[test]
fn calibration_by_hand() {
    // Two tasks at confidence 0.9 (one right), one at 0.5 (right).
    let tasks = [t(&[0.9, 0.1], 0), t(&[0.9, 0.1], 1), t(&[0.5, 0.5], 0)];
    let c = Calibration::of(&tasks, 15);
    // bins: 0.9 → bin 13, accuracy 0.5; 0.5 → bin 7, accuracy 1.
    close(c.ece, 2.0 / 3.0 * 0.4 + 1.0 / 3.0 * 0.5);
    close(c.brier, (0.02 + 1.62 + 0.5) / 3.0);
    close(c.uncertainty, 2.0 / 3.0 * 1.0 / 3.0);
    close(c.reliability, 2.0 / 3.0 * 0.16 + 1.0 / 3.0 * 0.25);
}

#[test]
fn rank_correlations() {
    close(spearman(&[1.0, 2.0, 3.0], &[10.0, 20.0, 30.0]), 1.0);
    close(spearman(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]), -1.0);
    close(kendall(&[1.0, 2.0, 3.0, 4.0], &[1.0, 3.0, 2.0, 4.0]), 4.0 / 6.0);
}

#[test]
fn bootstrap_is_seeded_and_brackets_the_mean() {
    let values: Vec<f64> = (0..200).map(|i| f64::from(i % 3 == 0)).collect();
    let doubled: Vec<f64> = values.iter().map(|v| 2.0 * v).collect();
    let boot = Bootstrap { n: 200, resamples: 1000, seed: 7 };
    let (a, draws) = boot.estimates(&[&values, &doubled]);
    assert_eq!(boot.estimates(&[&values, &doubled]).0, a, "seeded");
    assert!(a[0].low < a[0].mean && a[0].mean < a[0].high, "{a:?}");
    close(a[0].mean, 67.0 / 200.0);
    // Same draws for every column.
    assert!(draws.iter().all(|d| (d[1] - 2.0 * d[0]).abs() < 1e-12));
    // A 95 % interval of a proportion of 1/3 over 200 tasks is about ±0.065.
    assert!((a[0].high - a[0].low - 0.13).abs() < 0.03, "{a:?}");
}

fn task_strategy() -> impl Strategy<Value = (Vec<f64>, usize)> {
    prop::collection::vec(-20.0f64..0.0, 2..12).prop_flat_map(|s| {
        let n = s.len();
        (Just(s), 0..n)
    })
}

proptest! {
    #[test]
    fn nr_is_the_engines_acc_norm((sums, key) in task_strategy()) {
        let options: Vec<OptionScore> = sums.iter().map(|&s| OptionScore::new(s, 3, 5, 5)).collect();
        let norm: Vec<f64> = options.iter().map(|o| Normalisation::AccNorm.score(o)).collect();
        let task = TaskProbs::from_scores(&norm, key);
        prop_assert_eq!(Scheme::Nr.score(&task) == 1.0, Normalisation::AccNorm.predict(&options) == key);
    }

    #[test]
    fn schemes_do_not_depend_on_option_order((scores, key) in task_strategy(), rotation in 0usize..12) {
        // Distinct scores: with ties the first-wins rule depends on order by design.
        let mut distinct = scores.clone();
        distinct.sort_by(f64::total_cmp);
        distinct.dedup();
        prop_assume!(distinct.len() == scores.len());
        let n = scores.len();
        let r = rotation % n;
        let rotated: Vec<f64> = (0..n).map(|i| scores[(i + r) % n]).collect();
        let a = TaskProbs::from_scores(&scores, key);
        let b = TaskProbs::from_scores(&rotated, (key + n - r) % n);
        for scheme in Scheme::DEFAULTS {
            prop_assert!((scheme.score(&a) - scheme.score(&b)).abs() < 1e-9, "{}", scheme.name());
        }
    }

    #[test]
    fn brier_is_within_0_and_2((scores, key) in task_strategy()) {
        let b = brier(&TaskProbs::from_scores(&scores, key));
        prop_assert!((0.0..=2.0).contains(&b));
    }
}
