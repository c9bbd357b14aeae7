//! The paper's tables from scheme runs: each scheme's mean with its 95 %
//! interval (prompted and log-probability versions side by side), its
//! task-level agreement with NR and with its own log-probability version
//! (Table 2's kind), median input and output tokens (Table 3), each
//! model's rank per scheme and Spearman's ρ against NR with bootstrap
//! standard errors (Table 4, Figure 1), parse outcomes, and the behaviour
//! behind the scores.

use std::collections::BTreeMap;

use mcscore_metrics::schemes::Response;
use mcscore_metrics::stats::{pearson, spearman, std_dev, Bootstrap, Estimate};
use mcscore_metrics::{ranks_desc, Ties};
use serde::Serialize;

use super::parse::Parse;
use super::{is_complete, Mode, SchemesRun};
use crate::error::SchemesError;
use crate::report::defined;
use crate::EvalError;

/// One mode's figures for one model.
#[derive(Debug, Clone, Serialize)]
pub struct ModeFigures {
    /// The mode.
    pub mode: Mode,
    /// The prompted scheme's mean score, with its 95 % bootstrap interval.
    pub prompted: Estimate,
    /// The log-probability version's.
    pub logprob: Estimate,
    /// Pearson's r between this mode's task scores and NR's (where NR ran
    /// and neither is constant).
    pub agreement_with_nr: Option<f64>,
    /// Pearson's r between the prompted and the log-probability task scores.
    pub agreement_with_logprob: Option<f64>,
    /// How the responses were read: strict, loose, forced, unparsed (AUC:
    /// its last turns).
    pub parses: BTreeMap<&'static str, usize>,
    /// The median prompt tokens per task (AUC: all its turns').
    pub median_input_tokens: f64,
    /// The median response tokens per task (AUC: all its turns').
    pub median_output_tokens: f64,
}

/// What the prompted responses did, behind their scores (each `None`
/// where its mode did not run).
#[derive(Debug, Clone, Default, Serialize)]
pub struct PromptedBehaviour {
    /// NM: the share of tasks abstained on.
    pub abstention_rate: Option<f64>,
    /// Elim: the mean options eliminated.
    pub mean_eliminated: Option<f64>,
    /// Elim: the share of tasks whose key was eliminated.
    pub key_eliminated_rate: Option<f64>,
    /// CBM: the share of tasks at confidence 1, 2 and 3.
    pub confidence_histogram: Option<[f64; 3]>,
    /// AUC: the mean attempts until the key.
    pub mean_attempts: Option<f64>,
}

/// One model's figures.
#[derive(Debug, Clone, Serialize)]
pub struct ModelSchemes {
    /// The model's file stem.
    pub label: String,
    /// The log read, if any.
    pub log: Option<String>,
    /// The model's sha256.
    pub model_sha256: String,
    /// Each mode's figures, in the runs' order.
    pub modes: Vec<ModeFigures>,
    /// The behaviour behind them.
    pub behaviour: PromptedBehaviour,
}

/// The models ranked by one scheme.
#[derive(Debug, Clone, Serialize)]
pub struct ModeRanking {
    /// The mode.
    pub mode: Mode,
    /// Each model's rank (1 best; ties share the mean rank), in the models' order.
    pub ranks: Vec<f64>,
    /// Spearman's ρ between this ranking and NR's.
    pub spearman_vs_nr: Option<f64>,
    /// Its bootstrap standard error.
    pub spearman_se: Option<f64>,
}

/// The report of one or more models' scheme runs on the same tasks.
#[derive(Debug, Clone, Serialize)]
pub struct SchemesReport {
    /// The results JSON's version (`results::SCHEMA_VERSION`; docs/schema/schemes.schema.json).
    pub schema_version: u32,
    /// The task file, as the first run names it.
    pub file: String,
    /// Its sha256.
    pub file_sha256: String,
    /// Tasks per run.
    pub tasks: usize,
    /// Free reasoning before the answers.
    pub reasoning: bool,
    /// Bootstrap resamples.
    pub resamples: usize,
    /// The bootstrap's seed.
    pub seed: u64,
    /// One per run.
    pub models: Vec<ModelSchemes>,
    /// One per mode; none for a single model or without NR.
    pub rankings: Vec<ModeRanking>,
}

fn median(mut values: Vec<f64>) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// The report of `runs`: complete runs of the same tasks and modes.
pub fn build(runs: &[SchemesRun], resamples: usize, seed: u64) -> Result<SchemesReport, EvalError> {
    let Some(first) = runs.first() else { return Err(EvalError::NoLogs) };
    let name = |run: &SchemesRun| run.log.as_ref().map_or_else(|| run.header.model.clone(), |p| p.display().to_string());
    for run in runs {
        if let Some(shard) = run.header.shard {
            let what =
                format!("the log of shard {}/{} of a run: merge the run's shards with `mcscore merge` first", shard.index, shard.count);
            return Err(EvalError::Schemes(SchemesError::Merge { path: run.log.clone().unwrap_or_default(), what }));
        }
        if !is_complete(run) {
            let tasks = super::expected_records(&run.header);
            return Err(EvalError::Schemes(SchemesError::Incomplete { run: name(run), done: run.records.len(), tasks }));
        }
        let same = run.header.file_sha256 == first.header.file_sha256
            && run.header.modes == first.header.modes
            && run.header.reasoning == first.header.reasoning
            && run.records.iter().map(|r| r.task).eq(first.records.iter().map(|r| r.task));
        if !same {
            return Err(EvalError::Schemes(SchemesError::OtherTasks { run: name(run), first: name(first) }));
        }
    }
    let modes = first.header.modes.clone();
    let n = first.records.len();
    let bootstrap = Bootstrap { n, resamples, seed };
    let nr = modes.iter().position(|&m| m == Mode::Nr);
    let mut means: Vec<Vec<f64>> = Vec::new();
    let mut draws_of: Vec<Vec<Vec<f64>>> = Vec::new();
    let mut models = Vec::new();
    for run in runs {
        let prompted: Vec<Vec<f64>> = (0..modes.len()).map(|m| run.records.iter().map(|r| r.modes[m].score).collect()).collect();
        let logprob: Vec<Vec<f64>> = (0..modes.len()).map(|m| run.records.iter().map(|r| r.modes[m].logprob_score).collect()).collect();
        let columns: Vec<&[f64]> = prompted.iter().chain(&logprob).map(Vec::as_slice).collect();
        let (estimates, draws) = bootstrap.estimates(&columns);
        means.push(estimates[..modes.len()].iter().map(|e| e.mean).collect());
        draws_of.push(draws.iter().map(|d| d[..modes.len()].to_vec()).collect());
        let figures = modes
            .iter()
            .enumerate()
            .map(|(m, &mode)| {
                let mut parses: BTreeMap<&'static str, usize> = Parse::ALL.iter().map(|p| (p.name(), 0)).collect();
                for r in &run.records {
                    *parses.entry(r.modes[m].parse.name()).or_default() += 1;
                }
                let tokens = |f: &dyn Fn(&super::Turn) -> usize| {
                    median(run.records.iter().map(|r| r.modes[m].turns.iter().map(f).sum::<usize>() as f64).collect())
                };
                ModeFigures {
                    mode,
                    prompted: estimates[m],
                    logprob: estimates[modes.len() + m],
                    agreement_with_nr: nr.and_then(|j| defined(pearson(&prompted[m], &prompted[j]))),
                    agreement_with_logprob: defined(pearson(&prompted[m], &logprob[m])),
                    parses,
                    median_input_tokens: tokens(&|t| t.input_tokens),
                    median_output_tokens: tokens(&|t| t.output_tokens),
                }
            })
            .collect();
        models.push(ModelSchemes {
            label: std::path::Path::new(&run.header.model)
                .file_stem()
                .map_or_else(|| run.header.model.clone(), |s| s.to_string_lossy().into_owned()),
            log: run.log.as_ref().map(|p| p.display().to_string()),
            model_sha256: run.header.model_sha256.clone(),
            modes: figures,
            behaviour: behaviour(run, &modes),
        });
    }
    let mut rankings = Vec::new();
    if let (Some(j), true) = (nr, runs.len() > 1) {
        for (m, &mode) in modes.iter().enumerate() {
            let of = |model: usize| means[model][m];
            let scheme: Vec<f64> = (0..runs.len()).map(of).collect();
            let base: Vec<f64> = (0..runs.len()).map(|model| means[model][j]).collect();
            let boot: Vec<f64> = (0..resamples)
                .map(|r| {
                    let a: Vec<f64> = (0..runs.len()).map(|model| draws_of[model][r][m]).collect();
                    let b: Vec<f64> = (0..runs.len()).map(|model| draws_of[model][r][j]).collect();
                    spearman(&a, &b)
                })
                .filter(|x| x.is_finite())
                .collect();
            let rho = defined(spearman(&scheme, &base));
            rankings.push(ModeRanking {
                mode,
                ranks: ranks_desc(&scheme, Ties::Mean),
                spearman_vs_nr: rho,
                spearman_se: rho.and_then(|_| (boot.len() > 1).then(|| std_dev(&boot))),
            });
        }
    }
    Ok(SchemesReport {
        schema_version: crate::results::SCHEMA_VERSION,
        file: first.header.file.clone(),
        file_sha256: first.header.file_sha256.clone(),
        tasks: n,
        reasoning: first.header.reasoning,
        resamples,
        seed,
        models,
        rankings,
    })
}

/// The behaviour behind a run's prompted scores.
fn behaviour(run: &SchemesRun, modes: &[Mode]) -> PromptedBehaviour {
    let n = run.records.len().max(1) as f64;
    let responses = |mode: Mode| {
        modes.iter().position(|&m| m == mode).map(|m| run.records.iter().map(move |r| (&r.modes[m].response, r.key)).collect::<Vec<_>>())
    };
    let mut out = PromptedBehaviour::default();
    if let Some(rs) = responses(Mode::Nm) {
        out.abstention_rate = Some(rs.iter().filter(|(r, _)| matches!(r, Response::Abstain)).count() as f64 / n);
    }
    if let Some(rs) = responses(Mode::Elim) {
        let out_of = |r: &Response| match r {
            Response::Eliminate(v) => v.clone(),
            _ => Vec::new(),
        };
        out.mean_eliminated = Some(rs.iter().map(|(r, _)| out_of(r).len()).sum::<usize>() as f64 / n);
        out.key_eliminated_rate = Some(rs.iter().filter(|(r, key)| out_of(r).contains(key)).count() as f64 / n);
    }
    if let Some(rs) = responses(Mode::Cbm) {
        let mut histogram = [0.0; 3];
        for (r, _) in &rs {
            if let Response::Confident { level, .. } = r {
                histogram[usize::from(level.clamp(&1, &3) - 1)] += 1.0 / n;
            }
        }
        out.confidence_histogram = Some(histogram);
    }
    if let Some(rs) = responses(Mode::Auc) {
        out.mean_attempts = Some(rs.iter().map(|(r, _)| if let Response::Attempts(a) = r { *a as f64 } else { 0.0 }).sum::<f64>() / n);
    }
    out
}
