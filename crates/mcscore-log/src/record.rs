//! A task line: one scored task's figures and picks, the accuracy of a run's
//! records, and the check that a line holds together.

use mcscore_metrics::{Normalisation, OptionScore};
use serde::{Deserialize, Serialize};

use crate::error::LogFault;
use crate::header::{Header, TaskKind};

/// The prediction of each normalisation, or whether it was right.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PerNormalisation<T> {
    /// [`Normalisation::Acc`]'s.
    pub acc: T,
    /// [`Normalisation::AccNorm`]'s.
    pub acc_norm: T,
    /// [`Normalisation::AccChar`]'s.
    pub acc_char: T,
    /// [`Normalisation::AccByte`]'s.
    pub acc_byte: T,
    /// Only in logs of `score --pmi`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acc_pmi: Option<T>,
}

impl<T: Copy> PerNormalisation<T> {
    pub(crate) fn from_fn(with_pmi: bool, f: impl Fn(Normalisation) -> T) -> Self {
        PerNormalisation {
            acc: f(Normalisation::Acc),
            acc_norm: f(Normalisation::AccNorm),
            acc_char: f(Normalisation::AccChar),
            acc_byte: f(Normalisation::AccByte),
            acc_pmi: with_pmi.then(|| f(Normalisation::AccPmi)),
        }
    }

    /// Panics for acc_pmi in a log without it: ask `has_pmi` first.
    pub fn get(&self, norm: Normalisation) -> T {
        match norm {
            Normalisation::Acc => self.acc,
            Normalisation::AccNorm => self.acc_norm,
            Normalisation::AccChar => self.acc_char,
            Normalisation::AccByte => self.acc_byte,
            Normalisation::AccPmi => self.acc_pmi.expect("acc_pmi is logged only by a run with the PMI pass"),
        }
    }
}

/// The share of `records` that `norm` got right.
pub fn accuracy(records: &[TaskRecord], norm: Normalisation) -> mcscore_metrics::Proportion {
    mcscore_metrics::Proportion { successes: records.iter().filter(|r| r.correct.get(norm)).count(), n: records.len() }
}

/// One scored task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskRecord {
    /// Index of the task in its file.
    pub task: usize,
    /// Each option's figures, in option order.
    pub options: Vec<OptionScore>,
    /// First option whose label is 1 (`null` only for lenient runs).
    pub gold: Option<usize>,
    /// Per option: whether its label is 1.
    pub labels: Vec<bool>,
    /// The option each normalisation picks.
    pub pred: PerNormalisation<usize>,
    /// Whether each normalisation's pick is right (its label is 1).
    pub correct: PerNormalisation<bool>,
    /// The sha256 (hex) of each image the task's context held, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<String>,
}

/// The normalisations every record of a run has.
pub fn normalisations(records: &[TaskRecord]) -> &'static [Normalisation] {
    if !records.is_empty() && records.iter().all(|r| r.pred.acc_pmi.is_some()) {
        &Normalisation::WITH_PMI
    } else {
        &Normalisation::ALL
    }
}

impl TaskRecord {
    /// The record of task `task` from its options' figures and labels (one
    /// label per option): gold, picks and right or wrong follow from them,
    /// `acc_pmi`'s where every option has an unconditional sum.
    pub fn new(task: usize, options: Vec<OptionScore>, labels: Vec<bool>) -> TaskRecord {
        let with_pmi = options.iter().all(|o| o.uncond_logprob_sum.is_some());
        let pred = PerNormalisation::from_fn(with_pmi, |n| n.predict(&options));
        // pred holds acc_pmi exactly when with_pmi asks for it; a pick is an option's index, and callers give a label per option
        let correct = PerNormalisation::from_fn(with_pmi, |n| labels[pred.get(n)]);
        TaskRecord { task, gold: labels.iter().position(|&l| l), options, labels, pred, correct, images: Vec::new() }
    }
}

/// The lowest log-probability a token has from a row of finite f32 logits:
/// its logit less the row's largest (at worst −2 × `f32::MAX`), less the log
/// of a sum of at most 2³² terms of at most 1. Below it a log was edited, and
/// the figures derived from it (KL, softmax gaps) could overflow.
pub const MIN_TOKEN_LOGPROB: f64 = -2.0 * f32::MAX as f64 - 23.0;

/// Checks a task line against itself and its header: what a scorer writes
/// holds together (labels, gold, predictions and right/wrong follow from the
/// option scores), so a damaged or edited line is refused by name rather than
/// reported as a result.
pub fn check_record(header: &Header, record: &TaskRecord) -> Result<(), LogFault> {
    let fault = |what: String| LogFault::Record { task: record.task, what };
    let k = record.options.len();
    if k < 2 {
        return Err(fault(format!("{k} option(s); a scored task has at least 2")));
    }
    if let Some(file_tasks) = header.file_tasks().filter(|&n| record.task >= n) {
        return Err(fault(format!("its index is past the task file's {file_tasks} tasks")));
    }
    if k > mcscore_format::MAX_OPTIONS {
        return Err(fault(format!("{k} options; a task file holds at most {}", mcscore_format::MAX_OPTIONS)));
    }
    if header.mode == TaskKind::Winogrande && k != 2 {
        return Err(fault(format!("{k} options; a Winogrande task has exactly 2")));
    }
    if record.labels.len() != k {
        return Err(fault(format!("{} labels for {k} options", record.labels.len())));
    }
    for (i, option) in record.options.iter().enumerate() {
        if option.tokens == 0 {
            return Err(fault(format!("option {i} has 0 scored tokens")));
        }
        // Options are non-empty text; UTF-8 takes 1 to 4 bytes a character.
        if option.chars == 0 || option.bytes < option.chars || u64::from(option.bytes) > 4 * u64::from(option.chars) {
            return Err(fault(format!("option {i} has {} characters in {} bytes, which no text has", option.chars, option.bytes)));
        }
        if !option.logprob_sum.is_finite() || option.uncond_logprob_sum.is_some_and(|u| !u.is_finite()) {
            return Err(fault(format!("option {i} has a log-probability that is not finite")));
        }
        // A log-softmax subtracts the row's maximum and a log of a sum of at least 1.
        if let Some(above) = [Some(option.logprob_sum), option.uncond_logprob_sum].into_iter().flatten().find(|&l| l > 0.0) {
            return Err(fault(format!(
                "option {i} has a log-probability of {}, above 0, which no probability has",
                mcscore_metrics::shown(above)
            )));
        }
        // The unconditional pass tokenises the option alone: its tokens are not
        // counted, but none is shorter than a byte.
        let tokens = f64::from(option.tokens) + f64::from(option.bytes);
        if let Some(below) =
            [Some(option.logprob_sum), option.uncond_logprob_sum].into_iter().flatten().find(|&l| l < MIN_TOKEN_LOGPROB * tokens)
        {
            return Err(fault(format!(
                "option {i} has a log-probability of {below:e}, below {MIN_TOKEN_LOGPROB:.1e} nats a token, which no row of f32 logits gives"
            )));
        }
    }
    let with_pmi = record.options.iter().all(|o| o.uncond_logprob_sum.is_some());
    let any_pmi = record.options.iter().any(|o| o.uncond_logprob_sum.is_some());
    if with_pmi != any_pmi || record.pred.acc_pmi.is_some() != with_pmi || record.correct.acc_pmi.is_some() != with_pmi {
        return Err(fault("acc_pmi is logged for some of the options, predictions and right/wrong flags but not all".into()));
    }
    let gold = record.labels.iter().position(|&l| l);
    if record.gold != gold {
        let option = |g: Option<usize>| g.map_or_else(|| "none".to_owned(), |g| format!("option {g}"));
        return Err(fault(format!("gold is {}, but the labels' first 1 is {}", option(record.gold), option(gold))));
    }
    if !header.lenient && record.labels.iter().filter(|&&l| l).count() != 1 {
        return Err(fault("the labels are not exactly one 1 (only a lenient run logs such a task)".into()));
    }
    let norms: &[Normalisation] = if with_pmi { &Normalisation::WITH_PMI } else { &Normalisation::ALL };
    for &norm in norms {
        let pick = norm.predict(&record.options);
        // acc_pmi is present in both, or in neither (checked above).
        let (logged, right) = (record.pred.get(norm), record.correct.get(norm));
        // predict picks one of the k >= 2 options, and there are k labels (both checked above)
        if logged != pick || right != record.labels[pick] {
            return Err(fault(format!(
                "{} is logged as option {logged} ({}), but the option scores pick option {pick} ({}): the line was edited or damaged",
                norm.name(),
                if right { "right" } else { "wrong" },
                if record.labels[pick] { "right" } else { "wrong" }
            )));
        }
    }
    Ok(())
}
