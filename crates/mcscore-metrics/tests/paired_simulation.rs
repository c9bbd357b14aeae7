//! Error rates of the paired interval and of the equivalence verdict, by
//! seeded simulation: synthetic paired tasks with a known difference in
//! accuracy, no model.

use mcscore_metrics::paired::{bca_interval, mean_acceleration, Verdict};
use mcscore_metrics::stats::{Bootstrap, SplitMix64};

/// `n` paired differences D ∈ {−1, 0, +1} (in points: ×100) with
/// P(D = −1) = `flip`, P(D = +1) = `flip` + `mu`: mean `mu` × 100.
fn tasks(rng: &mut SplitMix64, n: usize, flip: f64, mu: f64) -> Vec<f64> {
    (0..n)
        .map(|_| {
            let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
            if u < flip {
                -100.0
            } else if u < 2.0 * flip + mu {
                100.0
            } else {
                0.0
            }
        })
        .collect()
}

/// Runs `runs` studies of `n` tasks; returns how many times the 95 %
/// interval covered the truth, and how many times TOST at `margin` points
/// said "equivalent" (either verdict that includes it).
fn simulate(runs: usize, n: usize, flip: f64, mu: f64, margin: f64, seed: u64) -> (usize, usize) {
    let mut rng = SplitMix64::new(seed);
    let (mut covered, mut equivalent) = (0, 0);
    for run in 0..runs {
        let d = tasks(&mut rng, n, flip, mu);
        let bootstrap = Bootstrap { n, resamples: 1000, seed: run as u64 };
        let draws: Vec<f64> = bootstrap.resample_means(&[&d]).iter().map(|r| r[0]).collect();
        let (mean, a) = (d.iter().sum::<f64>() / n as f64, mean_acceleration(&d));
        let wide = bca_interval(&draws, mean, a, 0.95);
        let narrow = bca_interval(&draws, mean, a, 0.90);
        covered += usize::from(wide.0 <= 100.0 * mu && 100.0 * mu <= wide.1);
        let verdict = Verdict::of(narrow, wide, margin);
        equivalent += usize::from(matches!(verdict, Verdict::Equivalent | Verdict::DifferentWithinMargin));
    }
    (covered, equivalent)
}

#[test]
fn the_paired_95_interval_covers_the_true_difference_in_94_to_96_percent() {
    let (covered, _) = simulate(2000, 400, 0.08, 0.02, 1.0, 11);
    let rate = covered as f64 / 2000.0;
    eprintln!("coverage of the 95 % BCa interval: {rate}");
    assert!((0.94..=0.96).contains(&rate), "coverage {rate}");
}

/// At a true difference of exactly ±m the rate of "equivalent" should be at
/// most α = 5 %. Measured here: 4.85 % with BCa intervals; percentile
/// intervals gave 5.56 % on these 300-task runs (and 4.8–4.9 % on 1,000-task
/// runs), which is why compare uses BCa. A simulation has Monte Carlo error
/// (0.22 % over these 10,000 runs), so the check fails when the rate is above
/// 5 % by more than two of its standard errors.
#[test]
fn tost_says_equivalent_at_most_5_percent_of_the_time_at_the_margin() {
    let runs = 5000;
    let mut equivalent = 0;
    for (mu, seed) in [(-0.06, 21), (0.06, 22)] {
        equivalent += simulate(runs, 300, 0.06, mu, 6.0, seed).1;
    }
    let rate = equivalent as f64 / (2 * runs) as f64;
    let se = (0.05f64 * 0.95 / (2 * runs) as f64).sqrt();
    eprintln!("equivalent at the margin: {rate} (Monte Carlo SE {se:.4})");
    assert!(rate <= 0.05 + 2.0 * se, "equivalent in {rate} of runs at a true difference of ±m");
}

#[test]
fn tost_says_equivalent_when_nothing_changed_and_the_sample_is_large() {
    let (_, equivalent) = simulate(200, 2000, 0.02, 0.0, 2.0, 31);
    assert!(equivalent >= 190, "equivalent in {equivalent} of 200");
}

#[test]
#[ignore]
fn measure_tost_rate() {
    for (mu, seed) in [(-0.03, 121), (0.03, 122)] {
        let (_, equivalent) = simulate(20000, 1000, 0.06, mu, 3.0, seed);
        eprintln!("mu {mu}: {}", equivalent as f64 / 20000.0);
    }
}
