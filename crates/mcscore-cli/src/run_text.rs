//! What the commands share of their printing for people: progress,
//! llama-perplexity's lines (computed by `mcscore_eval::llama`), the
//! accuracy table, notes on which tasks were scored, and numbers (p-values,
//! nats).

use std::io::Write;

use mcscore_eval::llama::{LlamaOutput, EPILOGUE};
use mcscore_eval::log::{accuracy, normalisations, TaskRecord};
use mcscore_eval::{Phase, Progress, Selection, TaskKind};
use mcscore_format::Baselines;
use mcscore_metrics::Normalisation;

use crate::progress::{Meter, ProgressMode};

/// Says on stderr when a subset request (`flag`) selects every task.
pub(crate) fn note_selection(selection: Selection, n_tasks: usize, flag: &str) {
    match selection {
        Selection::AllForZero => eprintln!("mcscore: {flag} 0: scoring all {n_tasks} tasks, as llama-perplexity does"),
        Selection::AllForMore { asked } => eprintln!("mcscore: {flag} {asked}: the file has {n_tasks} tasks; scoring all of them"),
        Selection::First(limit) if limit > n_tasks => {
            eprintln!("mcscore: {flag} {limit}: the file has {n_tasks} tasks; scoring all of them")
        }
        Selection::FirstPerGroup { limit, groups } => eprintln!(
            "mcscore: {flag} {limit}: the first {limit} tasks of each of the file's {groups} groups, as lm-eval's --limit counts \
             subtasks (--limit-total {limit} takes the file's first {limit})"
        ),
        Selection::All | Selection::Subset(_) | Selection::First(_) => {}
    }
}

/// A job's progress on stderr (a bar or lines per phase, `--progress`) and,
/// for `--format llama`, llama-perplexity's running lines on stdout. `score`
/// and `sweep` share it.
pub(crate) struct Shown {
    mode: ProgressMode,
    meter: Option<Meter>,
    /// llama-perplexity's running lines, where printed.
    llama: Option<LlamaOutput>,
}

impl Shown {
    /// Progress alone, shown as `mode` says.
    pub(crate) fn progress(mode: ProgressMode) -> Shown {
        Shown { mode, meter: None, llama: None }
    }

    /// llama-perplexity's lines of `kind` on stdout, where `llama` (they
    /// replace progress), else progress shown as `mode` says.
    pub(crate) fn new(mode: ProgressMode, llama: Option<TaskKind>) -> Shown {
        match llama {
            Some(kind) => Shown { mode: ProgressMode::None, meter: None, llama: Some(LlamaOutput::new(kind)) },
            None => Shown::progress(mode),
        }
    }

    /// Prints llama-perplexity's lines before the first task (see
    /// [`LlamaOutput::preamble`]), where they are printed.
    pub(crate) fn llama_preamble(&self, n_file: usize, n_scored: usize, subset: bool) -> anyhow::Result<()> {
        self.llama.as_ref().map_or(Ok(()), |llama| out!("{}", llama.preamble(n_file, n_scored, subset)))
    }

    /// Prints `record`'s running line, the `done`th of the run, where
    /// llama-perplexity's lines are printed.
    pub(crate) fn llama_line(&mut self, record: &TaskRecord, done: usize) -> anyhow::Result<()> {
        self.llama.as_mut().map_or(Ok(()), |llama| out!("{}", llama.line(record, done)))
    }

    /// What llama-perplexity prints after the last of `n` tasks: the end of
    /// its stdout, then its final lines on stderr.
    pub(crate) fn llama_end(&self, n: usize, total_options: usize) -> anyhow::Result<()> {
        let Some(llama) = &self.llama else { return Ok(()) };
        out!("{}", EPILOGUE)?;
        std::io::stdout().flush().map_err(crate::stdout_error)?;
        eprint!("{}", llama.final_lines(n, total_options));
        Ok(())
    }
}

impl Progress for Shown {
    fn start(&mut self, phase: Phase, total: usize, done: usize) {
        let (what, unit) = match phase {
            Phase::Unconditional => ("--pmi: options after \"Answer:\"", "tasks"),
            Phase::Prompts => ("sweep", "prompts"),
            Phase::Scoring => ("scoring", "tasks"),
        };
        self.meter = Some(Meter::new(self.mode, what, unit, Some(total), done));
    }

    fn tick(&mut self, _phase: Phase) {
        if let Some(meter) = &mut self.meter {
            meter.inc();
        }
    }

    fn tokens(&mut self, n: usize) {
        if let Some(meter) = &mut self.meter {
            meter.tokens(n);
        }
    }

    fn scored(&mut self, record: &TaskRecord, done: usize) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        self.tick(Phase::Scoring);
        self.llama_line(record, done)?;
        Ok(())
    }

    fn finish(&mut self, _phase: Phase) {
        if let Some(meter) = self.meter.take() {
            meter.finish();
        }
    }
}

/// The accuracy table of a run of `kind`, against chance and the majority class.
pub(crate) fn print_accuracies(records: &[TaskRecord], kind: TaskKind, baselines: &Baselines) -> anyhow::Result<()> {
    outln!("  {:<16}{:>9}  {:>7}", "", "accuracy", "± s.e.")?;
    for &norm in normalisations(records) {
        let a = accuracy(records, norm);
        // Winogrande's number breaks ties towards the second option, acc_norm towards the first.
        let note = match (kind, norm) {
            (TaskKind::LmEval, Normalisation::Acc) => "  (lm-eval's acc)",
            (TaskKind::LmEval, Normalisation::AccChar) => "  (lm-eval's acc_norm)",
            (TaskKind::LmEval, Normalisation::AccByte) => "  (lm-eval's acc_bytes)",
            (TaskKind::LmEval | TaskKind::Winogrande, _) => "",
            (_, Normalisation::AccNorm) => "  (llama-perplexity's number)",
            _ => "",
        };
        outln!("  {:<16}{:>8.2}%  {:>7.2}{note}", norm.name(), a.percent(), a.stderr_percent())?;
    }
    outln!("  {:<16}{:>8.2}%", "chance", points(baselines.chance))?;
    let majority = points(baselines.majority_class);
    outln!("  {:<16}{:>8.2}%  (always answer {})", "majority_class", majority, option_name(baselines.majority_position))?;
    Ok(())
}

/// How a run used its chat template, in a line (`score` and `sweep`).
pub(crate) fn chat_line(chat: &mcscore_eval::chat::ChatHeader) -> String {
    let bos = match chat.bos.as_str() {
        "none" => "no BOS (the model takes none)".to_owned(),
        from => format!("BOS from the {from}"),
    };
    format!(
        "inside chat template {} ({}, sha256 {}): {bos}, thinking {}, generation prompt {:?}, then the option{}{}",
        chat.template,
        chat.renderer,
        chat.sha256.get(..12).unwrap_or(&chat.sha256),
        chat.thinking,
        chat.generation_prompt,
        chat.system.as_ref().map_or(String::new(), |s| format!("; system {s:?}")),
        chat.shots_as_turns.map_or(String::new(), |k| format!("; {k} shots as turns")),
    )
}

/// llama-perplexity's flag for a mode (`--hellaswag`).
pub(crate) fn flag(kind: TaskKind) -> String {
    format!("--{}", kind.name())
}

/// A fraction (an accuracy, a difference of accuracies, a share) in percent
/// or accuracy points: the library holds fractions, text prints points.
/// The product is rounded to 1e-9 points: × 100 leaves noise in the last
/// bits (0.25125 × 100 is 25.125000000000004) that would otherwise decide
/// which way a printed half rounds, and no figure means anything that fine.
pub(crate) fn points(fraction: f64) -> f64 {
    let points = 100.0 * fraction;
    if points.abs() < 1e6 {
        (points * 1e9).round() / 1e9
    } else {
        points
    }
}

/// Nats to 4 decimals; from a million on (absurd, but a log may hold such
/// log-probabilities) in scientific notation rather than in 300 digits.
pub(crate) fn nats(x: f64, signed: bool) -> String {
    match (x.abs() < 1e6, signed) {
        (true, false) => format!("{x:.4}"),
        (true, true) => format!("{x:+.4}"),
        (false, false) => format!("{x:.4e}"),
        (false, true) => format!("{x:+.4e}"),
    }
}

/// An option by its position from 0, as people name it: "option D", or
/// "option 27" past Z.
pub(crate) fn option_name(position: usize) -> String {
    format!("option {}", option_label(position))
}

/// An option's letter from its position from 0 ("D"), or its number from 1
/// past Z ("27"): a task may have up to 100 options.
pub(crate) fn option_label(position: usize) -> String {
    match u8::try_from(position) {
        Ok(p) if p < 26 => char::from(b'A' + p).to_string(),
        _ => (position + 1).to_string(),
    }
}

/// A p-value as people read it: fixed down to 0.001, then scientific.
pub(crate) fn p_value(p: f64) -> String {
    if p >= 0.001 {
        format!("{p:.3}")
    } else {
        format!("{p:.1e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_named_as_people_count_them() {
        assert_eq!(option_name(3), "option D");
        assert_eq!(option_label(25), "Z");
        assert_eq!(option_label(26), "27");
    }
}
