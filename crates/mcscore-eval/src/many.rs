//! Several runs of `score` (`-m A -m B -bf x.bin,y.bin`, `--quantize`):
//! the table of models × task files, each run's results, and the quants'
//! comparisons with the model they were made from.

use mcscore_metrics::Normalisation;

use crate::compare::Comparison;
use crate::results::{Accuracy, ByName, RunSummary};

/// What `score --json` prints of several runs (`-m A -m B -bf x.bin,y.bin`):
/// the models × benchmarks table, then each run as one run's summary.
#[derive(Debug, Clone, serde::Serialize)]
#[non_exhaustive]
pub struct RunsSummary<'a> {
    /// The results JSON's version ([`crate::results::SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// One normalisation's accuracy of each model on each benchmark.
    pub table: Grid,
    /// Each run, models in the order given and each model's files in the order given.
    pub runs: Vec<RunSummary<'a>>,
    /// With `--quantize`: each file's comparison of the quants with the model
    /// they were made from (absent otherwise).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub comparisons: Vec<Comparison>,
}

impl<'a> RunsSummary<'a> {
    /// The table of `runs` under `normalisation`.
    pub fn new(runs: Vec<RunSummary<'a>>, normalisation: Normalisation) -> RunsSummary<'a> {
        let table = Grid::new(runs.iter().map(|r| (r.model, r.file, &r.metrics)), normalisation);
        RunsSummary { schema_version: crate::results::SCHEMA_VERSION, table, runs, comparisons: Vec::new() }
    }
}

/// Models × benchmarks: one normalisation's accuracy of each model on each
/// task file, as a paper's table holds it. Rows and columns are labelled by
/// the file stems of the models and task files, in the order first met.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[non_exhaustive]
pub struct Grid {
    /// The normalisation every cell holds (`acc_norm`, …).
    pub normalisation: &'static str,
    /// The rows: each model's label (its file stem).
    pub models: Vec<String>,
    /// The columns: each task file's label (its file stem).
    pub benchmarks: Vec<String>,
    /// `cells[model][benchmark]`; `null` where that run was not scored or
    /// lacks the normalisation (acc_pmi without --pmi).
    pub cells: Vec<Vec<Option<Accuracy>>>,
    /// Each model's unweighted mean over the benchmarks (each benchmark
    /// counts once, whatever its tasks, as lm-eval averages groups); `null`
    /// where a cell is missing.
    pub mean: Vec<Option<f64>>,
}

impl Grid {
    /// The table of runs given as (model path, task file path, metrics).
    /// Runs with the same model label and file label: the last one counts
    /// (callers refuse two different paths under one label first).
    pub fn new<'r>(runs: impl IntoIterator<Item = (&'r str, &'r str, &'r ByName<Accuracy>)>, normalisation: Normalisation) -> Grid {
        let mut models: Vec<String> = Vec::new();
        let mut benchmarks: Vec<String> = Vec::new();
        let mut found: Vec<(usize, usize, Option<Accuracy>)> = Vec::new();
        let index = |labels: &mut Vec<String>, label: String| match labels.iter().position(|l| *l == label) {
            Some(k) => k,
            None => {
                labels.push(label);
                labels.len() - 1
            }
        };
        for (model, file, metrics) in runs {
            let m = index(&mut models, crate::log::label(model));
            let b = index(&mut benchmarks, crate::log::label(file));
            found.push((m, b, metrics.get(normalisation.name()).cloned()));
        }
        let mut cells = vec![vec![None; benchmarks.len()]; models.len()];
        for (m, b, accuracy) in found {
            cells[m][b] = accuracy;
        }
        let mean = cells
            .iter()
            .map(|row| {
                let values: Option<Vec<f64>> = row.iter().map(|c| c.as_ref().map(|a| a.accuracy)).collect();
                values.filter(|v| !v.is_empty()).map(|v| v.iter().sum::<f64>() / v.len() as f64)
            })
            .collect();
        Grid { normalisation: normalisation.name(), models, benchmarks, cells, mean }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metrics(acc_norm: f64) -> ByName<Accuracy> {
        ByName(vec![
            ("acc".to_owned(), Accuracy { accuracy: 0.5, stderr: Some(0.1), correct: 5 }),
            ("acc_norm".to_owned(), Accuracy { accuracy: acc_norm, stderr: Some(0.1), correct: 0 }),
        ])
    }

    #[test]
    fn a_grid_puts_each_run_in_its_models_row_and_files_column() {
        let (a, b, c) = (metrics(0.25), metrics(0.5), metrics(1.0));
        let runs = [("m/q4.gguf", "d/arc.bin", &a), ("m/q4.gguf", "d/mmlu.bin", &b), ("n/q8.gguf", "d/mmlu.bin", &c)];
        let grid = Grid::new(runs, Normalisation::AccNorm);
        assert_eq!((&grid.models[..], &grid.benchmarks[..]), (&["q4", "q8"].map(String::from)[..], &["arc", "mmlu"].map(String::from)[..]));
        let cell = |m: usize, b: usize| grid.cells[m][b].map(|a| a.accuracy);
        assert_eq!([cell(0, 0), cell(0, 1), cell(1, 0), cell(1, 1)], [Some(0.25), Some(0.5), None, Some(1.0)]);
        // Each file once; no mean where a file is missing.
        assert_eq!(grid.mean, [Some(0.375), None]);
        // A normalisation a run lacks is an empty cell.
        assert!(Grid::new(runs, Normalisation::AccPmi).cells.iter().flatten().all(Option::is_none));
    }
}
