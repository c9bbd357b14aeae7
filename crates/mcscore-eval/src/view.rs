//! What `mcscore view`'s page shows, computed once here: the reports and the
//! comparison of runs of one task file, every task's text and each run's
//! probabilities, picks and flips, and saved sweeps. A front end turns a
//! [`Page`] into HTML; its script filters and sorts these values, and
//! computes none of them.

use std::path::{Path, PathBuf};

use mcscore_format::{sha256_hex, Baselines};
use mcscore_metrics::paired::Flip;
use mcscore_metrics::Normalisation;
use serde::Serialize;

use crate::compare::{self, CompareOptions, Comparison};
use crate::groups::Groups;
use crate::job::OpenedFile;
use crate::log;
use crate::report::{self, Report, ReportOptions};
use crate::run::Run;
use crate::schemes::report::SchemesReport;
use crate::sweep::SweepReport;
use crate::thumbnails::{thumbnails, PageImage};
use crate::EvalError;
use crate::LogsError;

/// What a page is built from.
#[non_exhaustive]
pub struct PageSpec<'a> {
    /// Runs of one task file, BASE first: compared with BASE where there are
    /// two or more.
    pub runs: &'a [Run],
    /// The task file the runs scored, for the tasks' text; by default the
    /// file their log headers name. Checked by its sha256.
    pub task_file: Option<&'a Path>,
    /// The task file's groups, for the comparison's and reports' per-group figures and the task table's column.
    pub groups: Option<&'a Groups>,
    /// How the runs are compared; its normalisation is also the page's (its margins and default view).
    pub compare: CompareOptions,
    /// How each report is computed.
    pub report: ReportOptions,
    /// Saved sweeps, side by side (see [`crate::sweep::merge_saved`]).
    pub sweep: Option<SweepReport>,
    /// Prompted scheme runs' tables (see [`crate::schemes::report::build`]).
    pub schemes: Option<SchemesReport>,
}

impl<'a> PageSpec<'a> {
    /// A page of `runs` (BASE first) with the default options, its task file the one their logs name, no groups, sweep or schemes.
    pub fn new(runs: &'a [Run]) -> PageSpec<'a> {
        PageSpec {
            runs,
            task_file: None,
            groups: None,
            compare: CompareOptions::default(),
            report: ReportOptions::default(),
            sweep: None,
            schemes: None,
        }
    }
}

/// Probabilities and margins are in units of 1/10,000 (integers keep a
/// 14,042-task page small).
pub(crate) const PROBABILITY_SCALE: f64 = 10_000.0;

/// Everything one page shows.
#[derive(Serialize)]
#[non_exhaustive]
pub struct Page {
    /// The version of mcscore that built the page.
    pub mcscore: &'static str,
    /// The normalisation of the comparison, the margins and the default view.
    pub normalisation: &'static str,
    /// The order of the per-normalisation arrays of each run.
    pub normalisations: Vec<&'static str>,
    /// The codes of `PageRun::flips` (a flip's code is its index here).
    pub flip_kinds: Vec<Flip>,
    /// What the runs' `probabilities` and `margin` are counted in: 10,000 for units of 1/10,000 (5,000 is 0.5).
    pub probability_scale: f64,
    /// The task file's name, sha256 and mode, where there are runs.
    pub file: Option<String>,
    /// The task file's sha256, as hex, where there are runs.
    pub file_sha256: Option<String>,
    /// The mode the runs scored, where there are runs.
    pub mode: Option<crate::log::TaskKind>,
    /// Chance and majority class over the page's tasks.
    pub baselines: Option<Baselines>,
    /// One report of every run, or one per run where their task lists differ
    /// (the runs of a sequential comparison stop at different tasks).
    pub reports: Vec<Report>,
    /// Every run after BASE compared with BASE; `None` for fewer than two runs.
    pub comparison: Option<Comparison>,
    /// BASE's tasks: their text, answers and groups (empty without runs).
    pub tasks: TaskTable,
    /// Each run's values per task, BASE first.
    pub runs: Vec<PageRun>,
    /// The saved sweeps of the spec, side by side.
    pub sweep: Option<SweepReport>,
    /// The prompted schemes' tables.
    pub schemes: Option<SchemesReport>,
}

/// The tasks, in BASE's order: columns of equal length.
#[derive(Debug, Default, Serialize)]
#[non_exhaustive]
pub struct TaskTable {
    /// The task's index in its file.
    pub index: Vec<usize>,
    /// The context the options follow, as scored.
    pub question: Vec<String>,
    /// The task's options' text, in option order.
    pub options: Vec<Vec<String>>,
    /// The first right option (`null` only in lenient runs).
    pub gold: Vec<Option<usize>>,
    /// Every option labelled right (more than one in some lenient runs).
    pub answers: Vec<Vec<usize>>,
    /// Where the groups come from, and their names.
    pub groups_source: Option<String>,
    /// The names of the groups of the table's tasks, in order of first appearance.
    pub groups: Vec<String>,
    /// Per task: an index into `groups`.
    pub group: Vec<Option<usize>>,
    /// The distinct images of a file of image tasks, with thumbnails (empty for text).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<PageImage>,
    /// Per task of a file of image tasks: an index into `images` for each of its
    /// images, in the order of its markers (empty for text).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub task_images: Vec<Vec<usize>>,
}

/// One run's values per task: arrays over the first `tasks` rows of the
/// task table (a sequential comparison's run may stop before BASE's).
#[derive(Debug, Serialize)]
#[non_exhaustive]
pub struct PageRun {
    /// How the page names the run: the comparison's label where runs are compared, else its report's.
    pub label: String,
    /// Where its records came from (the log's path), as text.
    pub log: String,
    /// The model's path as its header records it.
    pub model: String,
    /// What the run scored with that changes a number, space-separated: the kernel settings, then
    /// the mode (other than multiple choice), `lenient` and `pmi` where they hold.
    pub settings: String,
    /// Rows of the task table its arrays cover: its tasks, at most BASE's.
    pub tasks: usize,
    /// Per task, per option: tokens scored.
    pub tokens: Vec<Vec<u32>>,
    /// Per normalisation, per task: the option picked.
    pub picks: Vec<Vec<usize>>,
    /// Per task: bit `n` is set where the pick of normalisation `n` is
    /// right (the log's own verdict).
    pub correct: Vec<u8>,
    /// Per normalisation, per task, per option: the softmax probability.
    pub probabilities: Vec<Vec<Vec<u16>>>,
    /// Per task, under the page's normalisation: the largest probability
    /// less the second largest.
    pub margin: Vec<u16>,
    /// Against BASE (absent for BASE): per task, the flip code and
    /// KL(BASE‖this run) in nats, over the tasks compared, to 7 significant
    /// digits (an f32 would read a finite 1e300 as infinite).
    pub flips: Option<Vec<u8>>,
    /// Per task compared: KL(BASE‖this run) of the choice distributions, in nats, to 7 significant digits;
    /// absent for BASE.
    pub kl: Option<Vec<f64>>,
}

/// Builds the page of `spec`.
pub fn build(spec: PageSpec<'_>) -> Result<Page, EvalError> {
    let PageSpec { runs, task_file, groups, compare: compare_options, report: report_options, sweep, schemes } = spec;
    if runs.is_empty() && sweep.is_none() && schemes.is_none() {
        return Err(EvalError::NoLogs);
    }
    let norm = compare_options.normalisation;
    let mut page = Page {
        mcscore: env!("CARGO_PKG_VERSION"),
        normalisation: norm.name(),
        normalisations: Vec::new(),
        flip_kinds: Flip::ALL.to_vec(),
        probability_scale: PROBABILITY_SCALE,
        file: None,
        file_sha256: None,
        mode: None,
        baselines: None,
        reports: Vec::new(),
        comparison: None,
        tasks: TaskTable::default(),
        runs: Vec::new(),
        sweep,
        schemes,
    };
    let Some(base) = runs.first() else { return Ok(page) };

    let comparison = (runs.len() > 1).then(|| compare::compare(base, &runs[1..], groups, &compare_options)).transpose()?;
    let same_tasks = runs.iter().all(|r| r.records.iter().map(|t| t.task).eq(base.records.iter().map(|t| t.task)));
    page.reports = if same_tasks {
        vec![report::of_runs(runs, &report_options, groups)?]
    } else {
        let mut reports: Vec<Report> =
            runs.iter().map(|r| report::of_runs(std::slice::from_ref(r), &report_options, groups)).collect::<Result<_, _>>()?;
        // Each report of one run names it by its file; the comparison's
        // labels tell two runs of one model apart.
        if let Some(c) = &comparison {
            let labels = std::iter::once(&c.base.label).chain(c.others.iter().map(|p| &p.other.label));
            for (report, label) in reports.iter_mut().zip(labels) {
                report.models[0].label.clone_from(label);
            }
        }
        reports
    };
    let norms: &[Normalisation] = if runs.iter().all(|r| log::normalisations(&r.records).contains(&Normalisation::AccPmi)) {
        &Normalisation::WITH_PMI
    } else {
        &Normalisation::ALL
    };
    page.normalisations = norms.iter().map(|n| n.name()).collect();
    page.tasks = task_table(base, task_file, groups)?;
    page.baselines = Some(Baselines::from_tasks(base.records.iter().map(|r| (r.options.len(), r.gold))));

    let labels: Vec<String> = match &comparison {
        Some(c) => std::iter::once(c.base.label.clone()).chain(c.others.iter().map(|p| p.other.label.clone())).collect(),
        // one run: same_tasks held, so reports is the one report of it
        None => page.reports[0].models.iter().map(|m| m.label.clone()).collect(),
    };
    for (r, (run, label)) in runs.iter().zip(labels).enumerate() {
        // compare pairs every run after BASE, in order
        let pairing = comparison.as_ref().and_then(|c| r.checked_sub(1).map(|o| &c.others[o]));
        page.runs.push(page_run(run, label, norms, norm, pairing, base.records.len()));
    }
    page.file = Some(base.header.file.clone());
    page.file_sha256 = Some(base.header.file_sha256.clone());
    page.mode = Some(base.header.mode);
    page.comparison = comparison;
    Ok(page)
}

fn scaled(p: f64) -> u16 {
    (p * PROBABILITY_SCALE).round().clamp(0.0, PROBABILITY_SCALE) as u16
}

fn page_run(
    run: &Run,
    label: String,
    norms: &[Normalisation],
    norm: Normalisation,
    pairing: Option<&compare::Pairing>,
    rows: usize,
) -> PageRun {
    let records = &run.records[..run.records.len().min(rows)];
    let probabilities = |n: Normalisation| -> Vec<Vec<f64>> {
        records.iter().map(|r| mcscore_metrics::softmax(&r.options.iter().map(|o| n.score(o)).collect::<Vec<_>>())).collect()
    };
    // Each normalisation's probabilities, computed once for the page and
    // for the margins.
    let by_norm: Vec<Vec<Vec<f64>>> = norms.iter().map(|&n| probabilities(n)).collect();
    let own;
    let shown = match norms.iter().position(|&n| n == norm) {
        Some(i) => &by_norm[i],
        None => {
            own = probabilities(norm);
            &own
        }
    };
    let margin = shown
        .iter()
        .map(|p| {
            let mut sorted = p.clone();
            sorted.sort_by(|a, b| b.total_cmp(a));
            // every task has at least 2 options (check_record; the engine scores no fewer)
            scaled(sorted[0] - sorted.get(1).copied().unwrap_or(0.0))
        })
        .collect();
    PageRun {
        label,
        log: run.source.display().to_string(),
        model: run.header.model.clone(),
        settings: run.header.settings(),
        tasks: records.len(),
        tokens: records.iter().map(|r| r.options.iter().map(|o| o.tokens).collect()).collect(),
        picks: norms.iter().map(|&n| records.iter().map(|r| r.pred.get(n)).collect()).collect(),
        correct: records.iter().map(|r| norms.iter().enumerate().map(|(i, &n)| u8::from(r.correct.get(n)) << i).sum()).collect(),
        probabilities: by_norm.iter().map(|tasks| tasks.iter().map(|p| p.iter().map(|&x| scaled(x)).collect()).collect()).collect(),
        margin,
        flips: pairing.map(|p| p.flip_per_task.iter().map(|&f| f as u8).collect()),
        // Rust parses back every float it formats, NaN and infinities included
        kl: pairing.map(|p| p.kl_per_task.iter().map(|&k| format!("{k:.6e}").parse().unwrap_or(k)).collect()),
    }
}

/// The text of BASE's tasks, from `path` or the file BASE's header names,
/// checked against the sha256 the log recorded.
fn task_table(base: &Run, path: Option<&Path>, groups: Option<&Groups>) -> Result<TaskTable, EvalError> {
    let header = &base.header;
    let path: PathBuf = path.map_or_else(|| PathBuf::from(&header.file), Path::to_owned);
    // Only a missing file is "not there"; a link loop or a refused read says so.
    if std::fs::metadata(&path).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound) {
        return Err(EvalError::Logs(LogsError::NoTaskFile { path, log: base.source.clone() }));
    }
    let input = OpenedFile::open(&path, header.mode, true)?;
    let sha256 = sha256_hex(input.bytes());
    if sha256 != header.file_sha256 {
        return Err(EvalError::Logs(LogsError::OtherTaskFile {
            path,
            sha256,
            log: base.source.clone(),
            logged: header.file_sha256.clone(),
        }));
    }
    let tasks = input.tasks(&path)?;
    let mut table = TaskTable { groups_source: groups.map(|g| g.source.clone()), ..TaskTable::default() };
    let mut group_index: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for record in &base.records {
        let task = tasks.get(record.task).ok_or_else(|| {
            EvalError::Logs(LogsError::TaskNotInFile {
                path: path.clone(),
                task: record.task,
                tasks: tasks.len(),
                log: base.source.clone(),
            })
        })?;
        if task.options().len() != record.options.len() {
            return Err(EvalError::Logs(LogsError::OtherOptions {
                path: path.clone(),
                task: record.task,
                options: task.options().len(),
                log: base.source.clone(),
                logged: record.options.len(),
            }));
        }
        table.index.push(record.task);
        table.question.push(task.question.to_owned());
        table.options.push(task.options().iter().map(|o| (*o).to_owned()).collect());
        table.gold.push(record.gold);
        table.answers.push(record.labels.iter().enumerate().filter(|(_, &right)| right).map(|(k, _)| k).collect());
        let group = groups.and_then(|g| g.name_of(record.task)).map(|name| {
            let next = group_index.len();
            *group_index.entry(name.to_owned()).or_insert_with(|| {
                table.groups.push(name.to_owned());
                next
            })
        });
        table.group.push(group);
    }
    if let OpenedFile::Images { tasks: rows, .. } = &input {
        let images: Vec<&[std::sync::Arc<[u8]>]> = table.index.iter().map(|&task| &rows[task].images[..]).collect();
        (table.images, table.task_images) = thumbnails(&images);
    }
    Ok(table)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::tests::run;

    /// Runs of a real task file of four tasks (gold: option 0 of 3).
    fn runs(dir: &Path, picks: &[&[usize]]) -> Vec<Run> {
        let path = dir.join("f.bin");
        let questions = ["<script>alert(1)</script>", "two", "three", "four"];
        mcscore_format::write_tasks(&path, questions.iter().map(|q| mcscore_format::Task::new(q, vec!["a", "b", "c"], 0))).unwrap();
        let sha256 = sha256_hex(&std::fs::read(&path).unwrap());
        picks
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let mut r = run(&format!("m{i}"), p);
                r.header.file = path.display().to_string();
                r.header.file_sha256 = sha256.clone();
                r
            })
            .collect()
    }

    #[test]
    fn a_page_carries_the_comparison_and_each_tasks_values() {
        let dir = tempfile::tempdir().unwrap();
        let runs = runs(dir.path(), &[&[0, 0, 1, 2], &[0, 1, 0, 1]]);
        let page = build(PageSpec::new(&runs)).unwrap();
        let c = page.comparison.as_ref().unwrap();
        let flips = page.runs[1].flips.as_ref().unwrap();
        // Each flip code counted equals the comparison's table.
        let count = |f: Flip| flips.iter().filter(|&&code| code == f as u8).count();
        assert_eq!(count(Flip::RightToWrong), c.others[0].flips.right_to_wrong);
        assert_eq!(count(Flip::WrongToRight), c.others[0].flips.wrong_to_right);
        assert_eq!(count(Flip::WrongToOtherWrong), c.others[0].flips.wrong_to_other_wrong);
        assert_eq!(page.flip_kinds[Flip::BothWrong as usize], Flip::BothWrong);
        assert_eq!(page.tasks.question[0], "<script>alert(1)</script>");
        assert_eq!(page.tasks.gold, vec![Some(0); 4]);
        let norm = page.normalisations.iter().position(|&n| n == "acc_norm").unwrap();
        assert_eq!(page.runs[0].picks[norm], vec![0, 0, 1, 2]);
        let right: Vec<bool> = page.runs[0].correct.iter().map(|bits| bits >> norm & 1 == 1).collect();
        assert_eq!(right, vec![true, true, false, false]);
        assert_eq!(page.tasks.answers[2], vec![0]);
        for p in &page.runs[0].probabilities[norm] {
            let sum: u32 = p.iter().map(|&x| u32::from(x)).sum();
            assert!((9_998..=10_002).contains(&sum), "{p:?}");
        }
        // Picked at −0.5 against two at −2: softmax 0.6914 against 0.1543 each.
        assert_eq!(page.runs[0].margin[0], 5_372);
        assert!(page.runs[0].flips.is_none());
        assert_eq!(page.reports.len(), 1);
        assert_eq!(page.reports[0].models.len(), 2);
    }

    #[test]
    fn another_task_file_and_a_missing_one_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut runs = runs(dir.path(), &[&[0, 0, 1, 2]]);
        let other = dir.path().join("other.bin");
        mcscore_format::write_tasks(&other, std::iter::once(mcscore_format::Task::new("q", vec!["a", "b"], 0))).unwrap();
        let mut spec = PageSpec::new(&runs);
        spec.task_file = Some(&other);
        assert!(matches!(build(spec), Err(EvalError::Logs(LogsError::OtherTaskFile { .. }))));
        runs[0].header.file = dir.path().join("gone.bin").display().to_string();
        assert!(matches!(build(PageSpec::new(&runs)), Err(EvalError::Logs(LogsError::NoTaskFile { .. }))));
    }
}
