//! `mcscore report`: what accuracy alone hides, from sample logs. Every
//! normalisation and scoring scheme with seeded bootstrap intervals, behaviour
//! rates and calibration per model; with several models, each scheme's
//! ranking and its agreement with NR's.

use std::path::PathBuf;

use mcscore_metrics::calibration::{Calibration, ECE_BINS};
use mcscore_metrics::schemes::{Behaviour, Scheme, TaskProbs};
use mcscore_metrics::stats::{kendall, spearman, std_dev, Bootstrap, Estimate};
use mcscore_metrics::{ranks_desc, Normalisation, Ties};
use serde::Serialize;

use crate::results::{group_accuracies, ByName, GroupAccuracies};
use crate::LogsError;

use crate::groups::Groups;
use crate::log;
use crate::run::Run;
use crate::EvalError;

/// How a report is computed.
#[derive(Debug, Clone, Copy)]
pub struct ReportOptions {
    /// The normalisation whose softmax gives the option probabilities p.
    pub normalisation: Normalisation,
    /// NM's abstention threshold τ (default 1/k).
    pub tau: Option<f64>,
    /// Elim's elimination threshold ε (default 1/k).
    pub epsilon: Option<f64>,
    /// Bootstrap resamples of the tasks, for the intervals of the estimates, the ranks and the rank correlations.
    pub resamples: u32,
    /// The seed the bootstrap draws from: every model and column gets the same draws.
    pub seed: u64,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions { normalisation: Normalisation::AccNorm, tau: None, epsilon: None, resamples: 1000, seed: 1 }
    }
}

/// One model's (one log's) figures.
#[derive(Debug, Serialize)]
#[non_exhaustive]
pub struct ModelReport {
    /// The model's file stem; where several runs are of one model, followed by what tells them apart in brackets
    /// (the settings they do not share, the chat template).
    pub label: String,
    /// Where its records came from (the log's path), as text.
    pub log: String,
    /// The model's sha256, as hex (empty where the run did not hash it).
    pub model_sha256: String,
    /// What the run scored with that changes a number, space-separated: the kernel settings, then
    /// the mode (other than multiple choice), `lenient` and `pmi` where they hold.
    pub settings: String,
    /// Tasks in the run (the same in every run of the report).
    pub tasks: usize,
    /// Accuracy (a fraction) of each normalisation the log holds, with its bootstrap interval.
    pub normalisations: ByName<Estimate>,
    /// Mean score of each scheme.
    pub schemes: ByName<Estimate>,
    /// What the schemes' scores hide: abstentions, eliminations, confidence levels, attempts (rates as fractions).
    pub behaviour: Behaviour,
    /// How well the top option's probability matches how often the pick is right (ECE, Brier score and its bins).
    pub calibration: Calibration,
    /// Accuracy per group (MMLU's subject) and category, where the file's groups are known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub groups: Option<GroupAccuracies>,
}

/// One scheme's ranking of the models.
#[derive(Debug, Serialize)]
#[non_exhaustive]
pub struct Ranking {
    /// The scheme's short name (`NR`, `Elim-NM`, …).
    pub scheme: String,
    /// Rank of each model (1 = best, ties sharing the mean rank), in model order.
    pub ranks: Vec<f64>,
    /// Each model's 95 % bootstrap interval of its rank: a rank of 1 against
    /// 2 on a difference within the noise has [1, 2] for both.
    pub rank_intervals: Vec<(f64, f64)>,
    /// Every model has the same mean score: there is no ranking.
    pub tied: bool,
    /// Spearman's ρ with NR's ranking; none where either ranking is all ties
    /// (a correlation with a constant is undefined).
    pub spearman_vs_nr: Option<f64>,
    /// The standard deviation of ρ over the bootstrap's resamples; none where ρ or it is undefined.
    pub spearman_se: Option<f64>,
    /// Kendall's τ-b with NR's ranking; none where undefined, as ρ.
    pub kendall_vs_nr: Option<f64>,
    /// The standard deviation of τ-b over the bootstrap's resamples; none where τ-b or it is undefined.
    pub kendall_se: Option<f64>,
}

impl Ranking {
    /// The 95 % normal interval of Spearman's ρ with NR's ranking.
    pub fn spearman_interval(&self) -> Option<(f64, f64)> {
        interval(self.spearman_vs_nr?, self.spearman_se?)
    }

    /// The 95 % normal interval of Kendall's τ with NR's ranking.
    pub fn kendall_interval(&self) -> Option<(f64, f64)> {
        interval(self.kendall_vs_nr?, self.kendall_se?)
    }
}

fn interval(value: f64, se: f64) -> Option<(f64, f64)> {
    Some((value - 1.96 * se, value + 1.96 * se))
}

/// `x` where it is a number: NaN (a degenerate statistic) is none.
pub(crate) fn defined(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

/// A report over one or more logs of the same tasks.
#[derive(Debug, Serialize)]
#[non_exhaustive]
pub struct Report {
    /// The results JSON's version (`results::SCHEMA_VERSION`).
    pub schema_version: u32,
    /// The task file's path as the first log's header records it.
    pub file: String,
    /// The task file's sha256, as hex (every run's).
    pub file_sha256: String,
    /// The normalisation whose softmax gives the option probabilities (`acc`, `acc_norm`, …).
    pub normalisation: &'static str,
    /// Bootstrap resamples.
    pub resamples: u32,
    /// The seed the bootstrap drew from.
    pub seed: u64,
    /// One per run, in the order given.
    pub models: Vec<ModelReport>,
    /// One per scheme, NR first; none for a single run.
    pub rankings: Vec<Ranking>,
}

/// Checks that `runs` are of the same task file (by sha256) and tasks.
fn check_same_tasks(runs: &[Run]) -> Result<(), EvalError> {
    let Some(first) = runs.first() else { return Ok(()) };
    for run in &runs[1..] {
        let header = &run.header;
        if header.file_sha256 != first.header.file_sha256 {
            return Err(EvalError::Logs(LogsError::OtherDataset {
                path: run.source.clone(),
                scored: format!("{} (sha256 {})", header.file, header.file_sha256),
                first: first.source.clone(),
                first_scored: format!("{} (sha256 {})", first.header.file, first.header.file_sha256),
            }));
        }
        if !run.records.iter().map(|r| r.task).eq(first.records.iter().map(|r| r.task)) {
            return Err(EvalError::Logs(LogsError::OtherTasks { path: run.source.clone(), first: first.source.clone() }));
        }
    }
    Ok(())
}

/// Refuses one run given twice: two logs of one model with the same scores
/// on every task, which a report would rank against each other.
fn check_not_repeated(runs: &[Run]) -> Result<(), EvalError> {
    for (i, run) in runs.iter().enumerate() {
        if let Some(earlier) = runs[..i].iter().find(|o| o.header.model_sha256 == run.header.model_sha256 && o.records == run.records) {
            return Err(EvalError::Logs(LogsError::RepeatedRun {
                again: run.source.clone(),
                first: earlier.source.clone(),
                model_sha256: run.header.model_sha256.clone(),
            }));
        }
    }
    Ok(())
}

/// Model file names, made unique with the settings (and the chat template) where they repeat.
fn labels(runs: &[Run]) -> Vec<String> {
    let stem = |r: &Run| crate::log::label(&r.header.model);
    runs.iter()
        .map(|r| {
            let same_model: Vec<&Run> = runs.iter().filter(|o| stem(o) == stem(r)).collect();
            if same_model.len() == 1 {
                return stem(r);
            }
            // Runs of one model are told apart by what differs: the settings
            // words not every one of them shares, and the chat template.
            let differing: Vec<&str> = r
                .header
                .settings_words()
                .into_iter()
                .filter(|word| !same_model.iter().all(|o| o.header.settings_words().contains(word)))
                .collect();
            let mut what = differing.join(" ");
            let templates = |o: &&Run| o.header.chat.as_ref().map(|c| c.template.clone());
            if !same_model.iter().all(|o| templates(o) == templates(&r)) {
                let chat = r.header.chat.as_ref().map_or("no chat template".to_owned(), |c| format!("chat template {}", c.template));
                what = if what.is_empty() { chat } else { format!("{what}, {chat}") };
            }
            if what.is_empty() {
                // Nothing recorded differs (another copy of the same weights, a path apart).
                what = r.header.model.clone();
            }
            format!("{} [{what}]", stem(r))
        })
        .collect()
}

/// Builds the report of `logs`: complete logs of the same task file (by
/// sha256) and the same tasks, one per model or setting; one run given twice
/// is refused.
pub fn build(logs: &[PathBuf], options: &ReportOptions, groups: Option<&Groups>) -> Result<Report, EvalError> {
    of_runs(&read_runs(logs)?, options, groups)
}

/// The complete logs of `logs`, one run given twice refused: what [`build`]
/// reports, for a caller that looks at them first (their file's groups).
pub fn read_runs(logs: &[PathBuf]) -> Result<Vec<Run>, EvalError> {
    let runs = logs.iter().map(|path| Run::read(path)).collect::<Result<Vec<_>, _>>()?;
    check_not_repeated(&runs)?;
    Ok(runs)
}

/// The report of `runs` (read from logs or built in memory): runs of the
/// same task file and tasks; with `groups`, each run's accuracy per group
/// and category too.
pub fn of_runs(runs: &[Run], options: &ReportOptions, groups: Option<&Groups>) -> Result<Report, EvalError> {
    if runs.is_empty() {
        return Err(EvalError::NoLogs);
    }
    for run in runs {
        run.check()?;
        if run.records.is_empty() {
            return Err(EvalError::Logs(crate::LogsError::NoTasks { path: run.source.clone() }));
        }
    }
    check_same_tasks(runs)?;
    let norm = options.normalisation;
    let n = runs[0].records.len();
    let bootstrap = Bootstrap { n, resamples: options.resamples as usize, seed: options.seed };
    let labels = labels(runs);
    let schemes_used: Vec<Scheme> = Scheme::DEFAULTS
        .iter()
        .map(|&s| match s {
            Scheme::Nm { .. } => Scheme::Nm { tau: options.tau },
            Scheme::Elim { .. } => Scheme::Elim { epsilon: options.epsilon },
            Scheme::ElimNm { .. } => Scheme::ElimNm { epsilon: options.epsilon },
            other => other,
        })
        .collect();

    // Per model: each scheme's mean overall, and under each resample.
    let mut scheme_means: Vec<Vec<f64>> = Vec::new();
    let mut scheme_draws: Vec<Vec<Vec<f64>>> = Vec::new();
    let mut models = Vec::new();
    for (run, label) in runs.iter().zip(&labels) {
        if norm == Normalisation::AccPmi && !log::normalisations(&run.records).contains(&Normalisation::AccPmi) {
            return Err(EvalError::Logs(LogsError::NoPmi { path: run.source.clone() }));
        }
        let probs: Vec<TaskProbs> = run
            .records
            .iter()
            .map(|r| {
                let scores: Vec<f64> = r.options.iter().map(|o| norm.score(o)).collect();
                let key = r.gold.ok_or_else(|| EvalError::Logs(LogsError::NoGold { path: run.source.clone(), task: r.task }))?;
                Ok(TaskProbs::from_scores(&scores, key))
            })
            .collect::<Result<_, EvalError>>()?;
        let norms = log::normalisations(&run.records);
        let hits: Vec<Vec<f64>> =
            norms.iter().map(|&nm| run.records.iter().map(|r| f64::from(u8::from(r.correct.get(nm)))).collect()).collect();
        let per_scheme: Vec<Vec<f64>> = schemes_used.iter().map(|s| probs.iter().map(|t| s.score(t)).collect()).collect();
        let columns: Vec<&[f64]> = hits.iter().chain(&per_scheme).map(Vec::as_slice).collect();
        let (estimates, draws) = bootstrap.estimates(&columns);
        let n_norm = norms.len();
        let normalisations = ByName(norms.iter().zip(&estimates).map(|(nm, e)| (nm.name().to_owned(), *e)).collect());
        let schemes = ByName(
            schemes_used.iter().zip(&estimates[n_norm..]).map(|(s, e)| (s.name().to_owned(), *e)).collect::<Vec<(String, Estimate)>>(),
        );
        scheme_means.push(schemes.iter().map(|(_, e)| e.mean).collect());
        scheme_draws.push(draws.iter().map(|d| d[n_norm..].to_vec()).collect());
        models.push(ModelReport {
            label: label.clone(),
            log: run.source.display().to_string(),
            model_sha256: run.header.model_sha256.clone(),
            settings: run.header.settings(),
            tasks: n,
            normalisations,
            schemes,
            behaviour: Behaviour::of(&probs, options.tau, options.epsilon),
            calibration: Calibration::of(&probs, ECE_BINS),
            // acc_pmi of a log without it was refused above (NoPmi)
            groups: groups.map(|g| group_accuracies(&run.records, g, norm, &run.source)).transpose()?,
        });
    }

    let mut rankings = Vec::new();
    if runs.len() > 1 {
        let models = 0..runs.len();
        for (s, scheme) in schemes_used.iter().enumerate() {
            let means: Vec<f64> = models.clone().map(|m| scheme_means[m][s]).collect();
            let nr: Vec<f64> = models.clone().map(|m| scheme_means[m][0]).collect();
            let mut boot_ranks: Vec<Vec<f64>> = vec![Vec::with_capacity(bootstrap.resamples); runs.len()];
            let (boot_rho, boot_tau): (Vec<f64>, Vec<f64>) = (0..bootstrap.resamples)
                .map(|r| {
                    let a: Vec<f64> = models.clone().map(|m| scheme_draws[m][r][s]).collect();
                    let b: Vec<f64> = models.clone().map(|m| scheme_draws[m][r][0]).collect();
                    for (m, rank) in ranks_desc(&a, Ties::Mean).into_iter().enumerate() {
                        boot_ranks[m].push(rank);
                    }
                    (spearman(&a, &b), kendall(&a, &b))
                })
                .unzip();
            let ranks = ranks_desc(&means, Ties::Mean);
            let rank_intervals = boot_ranks
                .iter()
                .zip(&ranks)
                .map(
                    |(draws, &rank)| {
                        if draws.is_empty() {
                            (rank, rank)
                        } else {
                            mcscore_metrics::stats::percentile_interval(draws, 0.95)
                        }
                    },
                )
                .collect();
            let (rho, tau) = (defined(spearman(&means, &nr)), defined(kendall(&means, &nr)));
            rankings.push(Ranking {
                scheme: scheme.name().to_owned(),
                tied: means.iter().all(|&m| m == means[0]),
                ranks,
                rank_intervals,
                spearman_vs_nr: rho,
                spearman_se: rho.and_then(|_| defined(std_dev(&boot_rho))),
                kendall_vs_nr: tau,
                kendall_se: tau.and_then(|_| defined(std_dev(&boot_tau))),
            });
        }
    }

    let report = Report {
        schema_version: crate::results::SCHEMA_VERSION,
        file: runs[0].header.file.clone(),
        file_sha256: runs[0].header.file_sha256.clone(),
        normalisation: norm.name(),
        resamples: options.resamples,
        seed: options.seed,
        models,
        rankings,
    };
    Ok(report)
}
