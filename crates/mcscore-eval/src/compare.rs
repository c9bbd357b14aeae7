//! `mcscore compare`: is OTHER worse than BASE on these tasks, by how much,
//! and is the difference real? Paired statistics over runs of the same tasks
//! (docs/compare.md): every task was scored by both runs, so the difference
//! is measured task by task, with far more power than two unpaired intervals.

use std::borrow::Cow;
use std::path::PathBuf;

use mcscore_metrics::paired::{
    acceleration, bca_interval, benjamini_hochberg, holm, js, kl, log_softmax, mcnemar, mean_acceleration, paired_difference,
    ClusterBootstrap, Flip, Flips, McNemar, PairedDifference, Pick, Spread, Verdict,
};
use mcscore_metrics::stats::Bootstrap;
use mcscore_metrics::Normalisation;
use serde::Serialize;

use crate::groups::Groups;
use crate::log::{self, TaskRecord};
use crate::run::Run;
use crate::EvalError;
use crate::{GroupsFault, LogsError};

/// How a comparison is computed.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct CompareOptions {
    /// The normalisation whose picks are right or wrong and whose softmax
    /// gives the choice distributions.
    pub normalisation: Normalisation,
    /// The equivalence margin: a difference of accuracies (fractions).
    pub margin: f64,
    /// The error rate of each verdict (split over several OTHERs).
    pub alpha: f64,
    /// Bootstrap resamples: of the tasks, of the groups, and of each group's tasks.
    pub resamples: u32,
    /// The seed every bootstrap draws from, so that a comparison repeats exactly.
    pub seed: u64,
}

impl Default for CompareOptions {
    fn default() -> Self {
        CompareOptions { normalisation: Normalisation::AccNorm, margin: 0.01, alpha: 0.05, resamples: 1000, seed: 1 }
    }
}

impl CompareOptions {
    /// Options with every field given (the struct is `#[non_exhaustive]`: no literal outside this crate).
    pub fn new(normalisation: Normalisation, margin: f64, alpha: f64, resamples: u32, seed: u64) -> Self {
        CompareOptions { normalisation, margin, alpha, resamples, seed }
    }
}

/// A statistic with its interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Interval {
    /// The statistic: its mean over the compared tasks.
    pub estimate: f64,
    /// The lower bound of its task-bootstrap BCa interval at the comparison's `interval_level`.
    pub low: f64,
    /// The upper bound of that interval.
    pub high: f64,
}

/// What the output says of one run.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct RunInfo {
    /// How the output names the run: its label, with its log's file stem added where two runs' labels are the same.
    pub label: String,
    /// Where its records came from (the log's path), as text.
    pub log: String,
    /// The model's path as its header records it.
    pub model: String,
    /// The model's sha256, as hex (empty where the run did not hash it).
    pub model_sha256: String,
    /// What the run scored with that changes a number, space-separated: the kernel settings, then
    /// the mode (other than multiple choice), `lenient` and `pmi` where they hold.
    pub settings: String,
    /// The chat template the run scored inside (`--chat-template`), if any.
    pub chat_template: Option<String>,
    /// Accuracy (a fraction) under the comparison's normalisation.
    pub accuracy: f64,
    /// Its 95 % Wilson interval.
    pub accuracy_interval: (f64, f64),
}

/// One group's change.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct GroupShift {
    /// The group's name, as the groups' source gives it.
    pub name: String,
    /// The group's tasks among those compared.
    pub tasks: usize,
    /// BASE's accuracy (a fraction) on the group's tasks.
    pub base_accuracy: f64,
    /// OTHER's accuracy (a fraction) on the group's tasks.
    pub other_accuracy: f64,
    /// OTHER − BASE.
    pub difference: f64,
    /// Its paired BCa interval over the group's tasks, as guarded as the
    /// comparison's ([`paired_difference`]); `None` below
    /// [`MIN_GROUP_FOR_INTERVAL`] tasks, where a bootstrap says nothing.
    pub interval: Option<(f64, f64)>,
    /// McNemar's exact two-sided p over the group's right→wrong and wrong→right tasks, unadjusted.
    pub mcnemar_p: f64,
    /// Benjamini–Hochberg's adjusted p over the groups.
    pub bh_q: f64,
    /// `bh_q` at most the comparison's α ([`Clustered::q_level`]): the
    /// share of false discoveries among the groups so marked is held at α.
    pub significant: bool,
}

/// The fewest tasks a group needs for its own interval.
pub const MIN_GROUP_FOR_INTERVAL: usize = 10;

/// The fewest groups a cluster bootstrap needs: below, resampling a handful
/// of groups says nothing about their spread.
pub const MIN_GROUPS_FOR_CLUSTERS: usize = 10;

/// Statistics that respect the groups.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct Clustered {
    /// Groups that hold at least one of the compared tasks.
    pub groups: usize,
    /// The difference judged by the cluster bootstrap; `None` below
    /// [`MIN_GROUPS_FOR_CLUSTERS`] groups.
    pub difference: Option<PairedDifference>,
    /// Every group, the most significant change first.
    pub shifts: Vec<GroupShift>,
    /// The level a group's `bh_q` is judged at: each verdict's α.
    pub q_level: f64,
}

/// What a pairing's verdict rests on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VerdictBasis {
    /// The task bootstrap (`difference`).
    Tasks,
    /// The cluster bootstrap over groups, where enough are known (`clustered`).
    Groups,
}

impl VerdictBasis {
    /// The word JSON and CSV write.
    pub fn name(self) -> &'static str {
        match self {
            VerdictBasis::Tasks => "tasks",
            VerdictBasis::Groups => "groups",
        }
    }
}

impl Serialize for VerdictBasis {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

/// OTHER against BASE.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct Pairing {
    /// OTHER's run, its accuracy over the tasks compared.
    pub other: RunInfo,
    /// Tasks compared: BASE's, or fewer where both runs are of one
    /// sequential comparison that stopped OTHER earlier.
    pub tasks: usize,
    /// BASE's accuracy (a fraction) on those tasks.
    pub base_accuracy: f64,
    /// OTHER − BASE (a difference of fractions) with the intervals and verdict of the
    /// task bootstrap (`interval` at `interval_level`, `tost_interval` at `tost_level`).
    pub difference: PairedDifference,
    /// What the verdict rests on.
    pub verdict_basis: VerdictBasis,
    /// The verdict of the bootstrap `verdict_basis` names: the cluster bootstrap's where it ran, else `difference`'s.
    pub verdict: Verdict,
    /// "worse", "better", "equivalent within ±1 point", ….
    pub conclusion: String,
    /// McNemar's exact test over the tasks that changed from right to wrong or back.
    pub mcnemar: McNemar,
    /// McNemar's p after Holm's correction over the OTHERs.
    pub mcnemar_p_holm: f64,
    /// Tasks counted by what happened to them: right under BASE and wrong under OTHER, and so on.
    pub flips: Flips,
    /// The share of tasks where both picked the same option.
    pub agreement: f64,
    /// KL(base‖other) of the choice distributions per task, in nats.
    pub kl: Spread,
    /// The mean of that KL over the tasks, in nats, with its interval.
    pub kl_mean: Interval,
    /// Jensen–Shannon divergence per task, in nats.
    pub js: Spread,
    /// ln q(gold) − ln p(gold): negative when OTHER is less sure of the answer.
    pub gold_logprob_change: Interval,
    /// The statistics over the task groups; `None` when no groups are known.
    pub clustered: Option<Clustered>,
    /// Per task, for plots and pages (not in JSON: a 100,000-task file
    /// would make it huge).
    #[serde(skip)]
    pub kl_per_task: Vec<f64>,
    /// Per task, for pages: its cell of the flip table (not in JSON).
    #[serde(skip)]
    pub flip_per_task: Vec<Flip>,
}

/// A comparison of runs of one task file against a base run.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct Comparison {
    /// The results JSON's version ([`crate::results::SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// The task file's path as BASE's header records it.
    pub file: String,
    /// The task file's sha256, as hex.
    pub file_sha256: String,
    /// The mode the runs scored.
    pub mode: crate::log::TaskKind,
    /// BASE's tasks (an OTHER stopped earlier by a sequential comparison is compared on fewer: its `tasks`).
    pub tasks: usize,
    /// Accuracy (a fraction) of a uniform random pick: the mean of 1/k.
    pub chance: f64,
    /// The normalisation compared (`acc`, `acc_norm`, …).
    pub normalisation: &'static str,
    /// The equivalence margin: a difference of accuracies (a fraction).
    pub margin: f64,
    /// The error rate asked for, before it is split over the OTHERs.
    pub alpha: f64,
    /// 1 − α/k for k OTHERs (Bonferroni): the level of `difference`.
    pub interval_level: f64,
    /// 1 − 2α/k: the level of `tost_interval`.
    pub tost_level: f64,
    /// Bootstrap resamples.
    pub resamples: u32,
    /// The seed the bootstraps drew from.
    pub seed: u64,
    /// BASE's run, its accuracy over all its tasks.
    pub base: RunInfo,
    /// Where the task groups came from; `None` when none are known.
    pub groups: Option<String>,
    /// Each OTHER against BASE, in the order given.
    pub others: Vec<Pairing>,
}

/// The two runs as compared: a sequential comparison stops its runs at
/// different tasks of one order, so two of its logs compare on the tasks
/// both scored; any other runs as they are.
fn common_prefix<'a>(base: &'a Run, run: &'a Run) -> (Cow<'a, Run>, Cow<'a, Run>) {
    let same_order = match (&base.header.sequential, &run.header.sequential) {
        (Some(b), Some(r)) => b.order_sha256 == r.order_sha256 && b.seed == r.seed,
        _ => false,
    };
    let n = base.records.len().min(run.records.len());
    let cut = |r: &'a Run| {
        if r.records.len() == n {
            Cow::Borrowed(r)
        } else {
            Cow::Owned(Run { records: r.records[..n].to_vec(), ..r.clone() })
        }
    };
    if same_order {
        (cut(base), cut(run))
    } else {
        (Cow::Borrowed(base), Cow::Borrowed(run))
    }
}

/// Why `run` cannot be paired with `base` task by task: the first field
/// that differs.
fn unpaired(base: &Run, run: &Run) -> Option<(&'static str, String, String)> {
    let (b, r) = (&base.header, &run.header);
    if b.file_sha256 != r.file_sha256 {
        return Some(("task file", format!("{} (sha256 {})", b.file, b.file_sha256), format!("{} (sha256 {})", r.file, r.file_sha256)));
    }
    if b.mode != r.mode {
        return Some(("mode", b.mode.name().to_owned(), r.mode.name().to_owned()));
    }
    let describe = |records: &[TaskRecord], at: usize| match records.get(at) {
        Some(t) => format!("{} tasks, task line {} is task {}", records.len(), at + 1, t.task),
        None => format!("{} tasks (none at task line {})", records.len(), at + 1),
    };
    if let Some(at) =
        (0..base.records.len().max(run.records.len())).find(|&i| base.records.get(i).map(|t| t.task) != run.records.get(i).map(|t| t.task))
    {
        return Some(("task list", describe(&base.records, at), describe(&run.records, at)));
    }
    let options_of = |t: &TaskRecord| {
        let right: Vec<usize> = t.labels.iter().enumerate().filter(|(_, &l)| l).map(|(k, _)| k).collect();
        format!("task {}: {} options, right option(s) {right:?}", t.task, t.options.len())
    };
    if let Some((a, b)) = base.records.iter().zip(&run.records).find(|(a, b)| a.options.len() != b.options.len() || a.labels != b.labels) {
        return Some(("options of a task", options_of(a), options_of(b)));
    }
    None
}

/// The per-task values of one run under `norm`.
struct Scored {
    picks: Vec<Pick>,
    ln_p: Vec<Vec<f64>>,
    gold: Vec<usize>,
}

fn scored(run: &Run, norm: Normalisation) -> Result<Scored, EvalError> {
    if norm == Normalisation::AccPmi && !log::normalisations(&run.records).contains(&Normalisation::AccPmi) {
        return Err(EvalError::Logs(LogsError::NoPmi { path: run.source.clone() }));
    }
    let mut s = Scored { picks: Vec::new(), ln_p: Vec::new(), gold: Vec::new() };
    for r in &run.records {
        let gold = r.gold.ok_or_else(|| EvalError::Logs(LogsError::NoGold { path: run.source.clone(), task: r.task }))?;
        s.picks.push(Pick { right: r.correct.get(norm), option: r.pred.get(norm) });
        s.ln_p.push(log_softmax(&r.options.iter().map(|o| norm.score(o)).collect::<Vec<_>>()));
        s.gold.push(gold);
    }
    Ok(s)
}

fn info(run: &Run, scored: &Scored) -> RunInfo {
    let right = scored.picks.iter().filter(|p| p.right).count();
    RunInfo {
        label: run.label.clone(),
        log: run.source.display().to_string(),
        model: run.header.model.clone(),
        model_sha256: run.header.model_sha256.clone(),
        settings: run.header.settings(),
        chat_template: run.header.chat.as_ref().map(|c| c.template.clone()),
        accuracy: right as f64 / scored.picks.len().max(1) as f64,
        accuracy_interval: mcscore_metrics::Proportion { successes: right, n: scored.picks.len() }.wilson(),
    }
}

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len().max(1) as f64
}

/// Compares `others` against `base`: runs of the same task file, mode and
/// task list (anything else is refused, naming the first field that differs).
pub fn compare(base: &Run, others: &[Run], groups: Option<&Groups>, options: &CompareOptions) -> Result<Comparison, EvalError> {
    if base.records.is_empty() {
        return Err(EvalError::Logs(LogsError::NoTasks { path: base.source.clone() }));
    }
    for run in std::iter::once(base).chain(others) {
        run.check()?;
    }
    let pairs: Vec<(Cow<'_, Run>, Cow<'_, Run>)> = others.iter().map(|run| common_prefix(base, run)).collect();
    for (base, run) in &pairs {
        if let Some((field, base_value, value)) = unpaired(base, run) {
            return Err(EvalError::Logs(LogsError::NotPaired {
                path: run.source.clone(),
                base: base.source.clone(),
                field,
                base_value,
                value,
            }));
        }
    }
    if let Some(groups) = groups {
        groups.check_reach(&base.records, &base.source)?;
    }
    let norm = options.normalisation;
    let k = others.len().max(1) as f64;
    let interval_level = 1.0 - options.alpha / k;
    let tost_level = 1.0 - 2.0 * options.alpha / k;
    let labels = unique_labels(base, others);

    let mut pairings = Vec::new();
    for ((paired_base, run), label) in pairs.iter().zip(&labels[1..]) {
        let base_scored = scored(paired_base, norm)?;
        let other = scored(run, norm)?;
        let n = other.picks.len();
        // Per task: OTHER's rightness less BASE's, −1, 0 or +1.
        let changes: Vec<f64> =
            base_scored.picks.iter().zip(&other.picks).map(|(b, o)| f64::from(u8::from(o.right)) - f64::from(u8::from(b.right))).collect();
        let (mut kls, mut jss, mut gold) = (Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n));
        for i in 0..n {
            // unpaired refused other task lists: both runs hold n tasks
            let (p, q) = (&base_scored.ln_p[i], &other.ln_p[i]);
            kls.push(kl(p, q));
            jss.push(js(p, q));
            // gold is the index of a label, one per option (check_record, TaskRecord::new); unpaired refused other option counts
            let g = base_scored.gold[i];
            gold.push(q[g] - p[g]);
        }
        let flips = Flips::of(&base_scored.picks, &other.picks);
        let flip_per_task = base_scored.picks.iter().zip(&other.picks).map(|(&b, &o)| Flip::of(b, o)).collect();
        let (b, c) = (flips.right_to_wrong as u64, flips.wrong_to_right as u64);
        let columns: [&[f64]; 3] = [&changes, &kls, &gold];
        let bootstrap = Bootstrap { n, resamples: options.resamples as usize, seed: options.seed };
        let draws = bootstrap.resample_means(&columns);
        let column = |j: usize| -> Vec<f64> { draws.iter().map(|d| d[j]).collect() };
        let interval = |j: usize| {
            let estimate = mean(columns[j]);
            let (low, high) = bca_interval(&column(j), estimate, mean_acceleration(columns[j]), interval_level);
            Interval { estimate, low, high }
        };
        let alpha = options.alpha / k;
        let difference = paired_difference(mean(&changes), &column(0), mean_acceleration(&changes), n, b, c, options.margin, alpha);
        let clustered = groups.map(|g| clustered(g, paired_base, &base_scored, &other, &changes, options, alpha)).transpose()?;
        let (verdict, basis, estimate) = match clustered.as_ref().and_then(|k| k.difference) {
            Some(d) => (d.verdict, VerdictBasis::Groups, d.estimate),
            None => (difference.verdict, VerdictBasis::Tasks, difference.estimate),
        };
        let mut info = info(run, &other);
        info.label = label.clone();
        pairings.push(Pairing {
            other: info,
            tasks: n,
            base_accuracy: base_scored.picks.iter().filter(|p| p.right).count() as f64 / n.max(1) as f64,
            difference,
            verdict_basis: basis,
            verdict,
            conclusion: conclusion(verdict, estimate, options.margin),
            mcnemar: mcnemar(b, c),
            mcnemar_p_holm: f64::NAN,
            agreement: flips.agreement(),
            flips,
            kl: Spread::of(&kls),
            kl_mean: interval(1),
            js: Spread::of(&jss),
            gold_logprob_change: interval(2),
            clustered,
            kl_per_task: kls,
            flip_per_task,
        });
    }
    let adjusted = holm(&pairings.iter().map(|p| p.mcnemar.p).collect::<Vec<_>>());
    for (p, a) in pairings.iter_mut().zip(adjusted) {
        p.mcnemar_p_holm = a;
    }
    let mut base_info = info(base, &scored(base, norm)?);
    base_info.label = labels[0].clone();
    Ok(Comparison {
        schema_version: crate::results::SCHEMA_VERSION,
        file: base.header.file.clone(),
        file_sha256: base.header.file_sha256.clone(),
        mode: base.header.mode,
        tasks: base.records.len(),
        chance: mean(&base.records.iter().map(|r| 1.0 / r.options.len().max(1) as f64).collect::<Vec<_>>()),
        normalisation: norm.name(),
        margin: options.margin,
        alpha: options.alpha,
        interval_level,
        tost_level,
        resamples: options.resamples,
        seed: options.seed,
        base: base_info,
        groups: groups.map(|g| g.source.clone()),
        others: pairings,
    })
}

/// The answer in words, from the verdict and the sign of the difference.
fn conclusion(verdict: Verdict, difference: f64, margin: f64) -> String {
    let direction = if difference < 0.0 { "worse" } else { "better" };
    match verdict {
        Verdict::Equivalent => format!("equivalent {}", within(margin)),
        Verdict::Different => direction.to_owned(),
        Verdict::DifferentWithinMargin => format!("{direction}, but {}", within(margin)),
        Verdict::Undecided => format!("undecided at {}: more tasks needed", plus_minus(margin)),
    }
}

/// A margin (a fraction) as a conclusion says it: "within ±1 point".
pub(crate) fn within(margin: f64) -> String {
    format!("within {} point{}", plus_minus(margin), if 100.0 * margin == 1.0 { "" } else { "s" })
}

/// A margin (a fraction) in accuracy points: "±2.5".
pub(crate) fn plus_minus(margin: f64) -> String {
    format!("±{}", mcscore_metrics::shown(100.0 * margin))
}

/// Labels, made unique with the log's file name where models repeat.
fn unique_labels(base: &Run, others: &[Run]) -> Vec<String> {
    let runs: Vec<&Run> = std::iter::once(base).chain(others).collect();
    runs.iter()
        .map(|r| {
            if runs.iter().filter(|o| o.label == r.label).count() > 1 {
                let stem = r.source.file_stem().map_or_else(|| r.source.display().to_string(), |s| s.to_string_lossy().into_owned());
                format!("{} ({stem})", r.label)
            } else {
                r.label.clone()
            }
        })
        .collect()
}

fn clustered(
    groups: &Groups,
    base_run: &Run,
    base: &Scored,
    other: &Scored,
    changes: &[f64],
    options: &CompareOptions,
    alpha: f64,
) -> Result<Clustered, EvalError> {
    // The groups present among the compared tasks, numbered densely, and
    // each group's tasks.
    let mut dense = vec![usize::MAX; groups.names.len()];
    let mut members: Vec<(usize, Vec<usize>)> = Vec::new();
    let mut group_of = Vec::with_capacity(changes.len());
    for (i, r) in base_run.records.iter().enumerate() {
        let g = groups.group(r.task).ok_or_else(|| {
            EvalError::Logs(LogsError::BadGroups { path: PathBuf::from(&groups.source), fault: GroupsFault::NoGroup { task: r.task } })
        })?;
        // group() returns an index into names, and dense has a slot per name (members one per slot set)
        if dense[g] == usize::MAX {
            dense[g] = members.len();
            members.push((g, Vec::new()));
        }
        members[dense[g]].1.push(i);
        group_of.push(dense[g]);
    }
    let count = members.len();
    let n = changes.len();
    let estimate = mean(changes);
    let difference = (count >= MIN_GROUPS_FOR_CLUSTERS).then(|| {
        let cluster = ClusterBootstrap { group_of: &group_of, groups: count, resamples: options.resamples as usize, seed: options.seed };
        let draws: Vec<f64> = cluster.resample_means(&[changes]).iter().map(|d| d[0]).collect();
        let sums: Vec<f64> = members.iter().map(|(_, tasks)| tasks.iter().map(|&i| changes[i]).sum()).collect();
        let total: f64 = sums.iter().sum();
        // Leave one group out: a ratio of sums, so its jackknife is closed-form.
        let jackknife: Vec<f64> = members
            .iter()
            .zip(&sums)
            .filter(|((_, tasks), _)| tasks.len() < n)
            // the filter above kept groups of fewer than n tasks
            .map(|((_, tasks), sum)| (total - sum) / (n - tasks.len()) as f64)
            .collect();
        let (b, c) = (changes.iter().filter(|&&d| d < 0.0).count() as u64, changes.iter().filter(|&&d| d > 0.0).count() as u64);
        paired_difference(estimate, &draws, acceleration(&jackknife), n, b, c, options.margin, alpha)
    });

    let mut shifts = Vec::with_capacity(count);
    for (name, tasks) in &members {
        let column: Vec<f64> = tasks.iter().map(|&i| changes[i]).collect();
        let flips = Flips::of(
            &tasks.iter().map(|&i| base.picks[i]).collect::<Vec<_>>(),
            &tasks.iter().map(|&i| other.picks[i]).collect::<Vec<_>>(),
        );
        let accuracy = |s: &Scored| tasks.iter().filter(|&&i| s.picks[i].right).count() as f64 / tasks.len() as f64;
        shifts.push(GroupShift {
            name: groups.names[*name].clone(),
            tasks: tasks.len(),
            base_accuracy: accuracy(base),
            other_accuracy: accuracy(other),
            difference: mean(&column),
            interval: (tasks.len() >= MIN_GROUP_FOR_INTERVAL).then(|| {
                let bootstrap = Bootstrap { n: column.len(), resamples: options.resamples as usize, seed: options.seed };
                let draws: Vec<f64> = bootstrap.resample_means(&[&column]).iter().map(|d| d[0]).collect();
                let (b, c) = (flips.right_to_wrong as u64, flips.wrong_to_right as u64);
                paired_difference(mean(&column), &draws, mean_acceleration(&column), column.len(), b, c, options.margin, alpha).interval
            }),
            mcnemar_p: mcnemar(flips.right_to_wrong as u64, flips.wrong_to_right as u64).p,
            bh_q: f64::NAN,
            significant: false,
        });
    }
    let q = benjamini_hochberg(&shifts.iter().map(|s| s.mcnemar_p).collect::<Vec<_>>());
    for (s, q) in shifts.iter_mut().zip(q) {
        s.bh_q = q;
        s.significant = q <= alpha;
    }
    shifts.sort_by(|a, b| {
        a.bh_q.total_cmp(&b.bh_q).then(a.mcnemar_p.total_cmp(&b.mcnemar_p)).then(b.difference.abs().total_cmp(&a.difference.abs()))
    });
    Ok(Clustered { groups: count, difference, shifts, q_level: alpha })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::log::Header;
    use mcscore_metrics::OptionScore;
    use std::path::Path;

    pub(crate) fn header(model: &str) -> Header {
        Header {
            version: crate::log::LOG_VERSION,
            mcscore: "test".into(),
            model: model.into(),
            model_sha256: String::new(),
            model_sha256_cached: false,
            model_bytes: 0,
            file: "f.bin".into(),
            file_sha256: "ab".into(),
            file_bytes: 0,
            tasks: 4,
            selection: None,
            limit: None,
            limit_per_group: false,
            mode: crate::log::TaskKind::MultipleChoice,
            lenient: false,
            pmi: false,
            kernels: "fa=Auto batch=micro60-out12".into(),
            shard: None,
            sequential: None,
            chat: None,
            projector: None,
            images_sha256: None,
        }
    }

    /// A record whose pick is `pick` (its log-probability the highest), gold 0.
    pub(crate) fn record(task: usize, pick: usize) -> TaskRecord {
        let options = (0..3).map(|k| OptionScore::new(if k == pick { -0.5 } else { -2.0 }, 1, 1, 1)).collect();
        TaskRecord::new(task, options, vec![true, false, false])
    }

    /// A run of tasks 0.. whose gold is option 0 of 3, picking `picks`.
    pub(crate) fn run(model: &str, picks: &[usize]) -> Run {
        Run {
            label: model.into(),
            source: PathBuf::from(format!("{model}.jsonl")),
            header: header(model),
            records: picks.iter().enumerate().map(|(t, &p)| record(t, p)).collect(),
        }
    }

    #[test]
    fn a_verdict_basis_is_written_as_its_name() {
        for basis in [VerdictBasis::Tasks, VerdictBasis::Groups] {
            assert_eq!(serde_json::to_value(basis).unwrap(), basis.name());
        }
    }

    #[test]
    fn records_in_memory_compare_without_files() {
        let base = run("base", &[0, 0, 1, 2]);
        let other = run("other", &[0, 1, 0, 1]);
        let c = compare(&base, &[other], None, &CompareOptions::default()).unwrap();
        let p = &c.others[0];
        assert_eq!((p.flips.right_to_wrong, p.flips.wrong_to_right, p.flips.wrong_to_other_wrong, p.flips.both_right), (1, 1, 1, 1));
        assert_eq!((c.base.accuracy, p.other.accuracy), (0.5, 0.5));
        assert_eq!(p.difference.estimate, 0.0);
        assert_eq!(p.mcnemar.p, 1.0);
        assert!(c.groups.is_none() && p.clustered.is_none());
    }

    #[test]
    fn groups_cover_the_compared_tasks_or_are_refused() {
        let base = run("base", &[0, 0, 1, 2]);
        let other = run("other", &[0, 1, 0, 1]);
        let groups = Groups::from_runs("two", &[("a".into(), 2), ("b".into(), 2)]);
        let c = compare(&base, std::slice::from_ref(&other), Some(&groups), &CompareOptions::default()).unwrap();
        let k = c.others[0].clustered.as_ref().unwrap();
        assert_eq!(k.groups, 2);
        assert_eq!(k.shifts.iter().map(|s| s.tasks).sum::<usize>(), 4);
        let short = Groups::from_runs("short", &[("a".into(), 3)]);
        assert!(matches!(
            compare(&base, &[other], Some(&short), &CompareOptions::default()),
            Err(EvalError::Logs(LogsError::BadGroups { .. }))
        ));
    }

    /// A group is marked significant where Benjamini–Hochberg's q is at
    /// most each verdict's α (`--alpha` over the OTHERs), the boundary
    /// included.
    #[test]
    fn a_group_is_significant_at_each_verdicts_alpha() {
        // Group a: 5 of 20 tasks right→wrong (McNemar p = 2/32); group b: none.
        let mut base = run("base", &[0; 40]);
        let picks: Vec<usize> = (0..40).map(|t| usize::from(t < 5)).collect();
        let mut other = run("other", &picks);
        (base.header.tasks, other.header.tasks) = (40, 40);
        let groups = Groups::from_runs("two", &[("a".into(), 20), ("b".into(), 20)]);
        let at = |alpha: f64, others: &[Run]| {
            let options = CompareOptions { alpha, ..CompareOptions::default() };
            let c = compare(&base, others, Some(&groups), &options).unwrap();
            let k = c.others[0].clustered.clone().unwrap();
            let marked: Vec<(String, bool)> = k.shifts.iter().map(|s| (s.name.clone(), s.significant)).collect();
            (k.q_level, k.shifts[0].bh_q, marked)
        };
        // q of group a: 2/32 × 2 groups = 0.125.
        let (level, q, marked) = at(0.125, std::slice::from_ref(&other));
        assert_eq!((level, q), (0.125, 0.125));
        assert_eq!(marked, [("a".to_owned(), true), ("b".to_owned(), false)]);
        let (_, _, marked) = at(0.124, std::slice::from_ref(&other));
        assert_eq!(marked, [("a".to_owned(), false), ("b".to_owned(), false)]);
        // Two OTHERs: each verdict's α is half.
        let (level, _, marked) = at(0.2, &[other.clone(), other]);
        assert_eq!(level, 0.1);
        assert_eq!(marked, [("a".to_owned(), false), ("b".to_owned(), false)]);
    }

    #[test]
    fn manifest_groups_must_cover_the_entrys_tasks() {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../manifest.json");
        let real: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(repo).unwrap()).unwrap();
        let mut entry = real["datasets"].as_array().unwrap().iter().find(|e| e["name"] == "mmlu-dev").unwrap().clone();
        let sha = entry["sha256"].as_str().unwrap().to_owned();
        let dir = std::env::temp_dir().join(format!("mcscore-groups-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let manifest = dir.join("manifest.json");
        let mut write = |runs: serde_json::Value| {
            entry["groups"]["runs"] = runs;
            std::fs::write(&manifest, serde_json::json!({ "datasets": [entry.clone()] }).to_string()).unwrap();
        };
        write(serde_json::json!([["a", 280], ["b", 5]]));
        assert_eq!(Groups::from_manifest(&manifest, &sha).unwrap().unwrap().tasks(), 285);
        for runs in [serde_json::json!([["a", 3]]), serde_json::json!([["a", u64::MAX], ["b", 2]])] {
            write(runs.clone());
            assert!(matches!(Groups::from_manifest(&manifest, &sha), Err(EvalError::Logs(LogsError::BadGroups { .. }))), "{runs}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_empty_run_and_another_file_are_refused() {
        let empty = run("base", &[]);
        assert!(matches!(compare(&empty, &[], None, &CompareOptions::default()), Err(EvalError::Logs(LogsError::NoTasks { .. }))));
        let base = run("base", &[0, 0, 1, 2]);
        let mut other = run("other", &[0, 1, 0, 1]);
        other.header.file_sha256 = "cd".into();
        match compare(&base, &[other], None, &CompareOptions::default()) {
            Err(EvalError::Logs(LogsError::NotPaired { field, .. })) => assert_eq!(field, "task file"),
            other => panic!("{other:?}"),
        }
    }
}
