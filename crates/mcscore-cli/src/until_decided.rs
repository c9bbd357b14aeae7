//! `mcscore compare --until-decided`: the models score side by side until
//! every OTHER is decided; the statistics and the loop are the library's
//! (`mcscore_eval::until_decided`), this prints them.

use std::fmt::Write as _;

use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};
use mcscore_eval::log::TaskRecord;
use mcscore_eval::until_decided::{self, Look, ModelPart, UntilDecided, UntilDecidedSpec};
use mcscore_eval::SequentialError;
use mcscore_eval::{EvalError, Progress};
use mcscore_metrics::sequential::Decision;

use crate::compare::Args;
use crate::progress::{Meter, ProgressMode};
use crate::run_text::{p_value, points};
use crate::table::{Cell, Table};
use crate::text::printable;
use crate::{Outcome, UsageError};

/// The bar: tasks of the order every model still needed has scored, and
/// each OTHER's interval. In a log: a line per look, and between looks a
/// line every 30 s of the order's tasks scored (`meter`), each counted once
/// however many models score it (no time left: the comparison may stop at
/// any look).
struct Looking {
    bar: Option<ProgressBar>,
    meter: Option<Meter>,
    /// The order's tasks scored by every model still compared, at the last look.
    at_look: usize,
    /// Tasks scored by any model since.
    since_look: usize,
    /// The models still scoring: BASE and the OTHERs not yet decided.
    active: usize,
}

impl Progress for Looking {
    fn tokens(&mut self, n: usize) {
        if let Some(meter) = &mut self.meter {
            meter.tokens(n);
        }
    }

    fn scored(&mut self, _record: &TaskRecord, _done: usize) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        self.count_score();
        Ok(())
    }
}

impl Looking {
    fn new(mode: ProgressMode, models: usize) -> Looking {
        let active = models.max(1);
        let Some(lines) = mode.lines() else { return Looking { bar: None, meter: None, at_look: 0, since_look: 0, active } };
        if lines {
            let meter = Meter::new(mode, "comparing: tasks scored by every model still compared", "tasks", None, 0);
            return Looking { bar: None, meter: Some(meter), at_look: 0, since_look: 0, active };
        }
        let bar = ProgressBar::new(0);
        bar.set_style(
            ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} tasks {msg}").expect("valid template"),
        );
        Looking { bar: Some(bar), meter: None, at_look: 0, since_look: 0, active }
    }

    /// One model scored one task.
    fn count_score(&mut self) {
        if let Some(bar) = &self.bar {
            bar.tick();
        }
        self.since_look += 1;
        if let Some(meter) = &mut self.meter {
            meter.set(self.at_look + self.since_look / self.active);
        }
    }

    fn finish(self) {
        if let Some(bar) = self.bar {
            bar.finish_and_clear();
        }
        if let Some(meter) = self.meter {
            meter.finish();
        }
    }

    fn look(&mut self, look: &Look) {
        self.at_look = look.tasks;
        self.since_look = 0;
        self.active = 1 + look.others.iter().filter(|o| o.decision == Decision::Undecided).count();
        let states: Vec<String> = look
            .others
            .iter()
            .map(|o| {
                let state = match o.decision {
                    Decision::Undecided => String::new(),
                    d => format!(" {}", decision_word(d)),
                };
                format!("{} [{:+.1}, {:+.1}]{state}", printable(&o.label), points(o.interval.0), points(o.interval.1))
            })
            .collect();
        let message = states.join("; ");
        if self.meter.is_some() {
            eprintln!("mcscore: {}/{} tasks: {message}", look.tasks, look.of);
        }
        if let Some(bar) = &self.bar {
            bar.set_length(look.of as u64);
            bar.set_position(look.tasks as u64);
            bar.set_message(message);
        }
    }
}

/// The job's progress and its looks both reach one [`Looking`].
struct Shared<'a>(&'a std::cell::RefCell<Looking>);

impl Progress for Shared<'_> {
    fn tokens(&mut self, n: usize) {
        self.0.borrow_mut().tokens(n);
    }

    fn scored(&mut self, record: &TaskRecord, done: usize) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        self.0.borrow_mut().scored(record, done)
    }
}

fn decision_word(decision: Decision) -> &'static str {
    match decision {
        Decision::Different => "different",
        Decision::Equivalent => "equivalent",
        Decision::Undecided => "undecided",
    }
}

pub(crate) fn run(args: Args) -> anyhow::Result<Outcome> {
    if let Some(log) = args.base.as_ref().or(args.others.first()) {
        return Err(UsageError(format!(
            "--until-decided scores the models (-m) itself and reads no logs, but {} was given; drop it, or drop --until-decided",
            log.display()
        ))
        .into());
    }
    let file = args.binary_file.clone().context("--until-decided needs the task file: -bf FILE")?;
    let file = crate::defaults::task_file(file, mcscore_eval::TaskKind::MultipleChoice)?;
    let [base, others @ ..] = args.models.as_slice() else {
        return Err(UsageError("--until-decided needs BASE and at least one OTHER: -m BASE.gguf -m OTHER.gguf".into()).into());
    };
    if others.is_empty() {
        return Err(UsageError(format!(
            "--until-decided needs BASE and at least one OTHER model; only -m {} was given: add -m OTHER.gguf",
            base.display()
        ))
        .into());
    }
    let settings = args.engine.settings()?;
    let mut spec = UntilDecidedSpec::new(base, others.to_vec(), &file);
    spec.settings = settings;
    spec.options = args.options();
    spec.order_seed = args.seed;
    spec.max_tasks = args.max_tasks.map(|n| n as usize);
    spec.chunk = args.chunk as usize;
    spec.log_dir = args.log_dir.clone();
    spec.resume = args.resume;
    spec.hash_cache = Some(crate::defaults::cache_dir());
    spec.chat = args.chat.spec(&file)?;
    if let (Some(dir), Some(logs)) = (&args.log_dir, spec.log_paths()) {
        crate::output::check_dir(dir, "--log-dir")?;
        std::fs::create_dir_all(dir).with_context(|| format!("{}: --log-dir", dir.display()))?;
        let inputs: Vec<&std::path::Path> = std::iter::once(file.as_path()).chain(args.models.iter().map(|m| m.as_path())).collect();
        for log in &logs {
            crate::output::check_log(log, "--log-dir", &inputs)?;
            if log.exists() && !args.resume {
                anyhow::bail!(
                    "{}: --log-dir holds this comparison's log already; pass --resume to continue it, or remove it",
                    log.display()
                );
            }
        }
    }
    let sha256 = mcscore_format::sha256_file(&file).map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
    let groups = crate::compare::groups(&args, &file, &sha256, None)?;
    let cancel = crate::signals::cancel_on_signal();
    let looking = std::cell::RefCell::new(Looking::new(args.progress, args.models.len()));
    let result =
        until_decided::until_decided(&spec, groups.as_ref(), &mut Shared(&looking), &mut |look| looking.borrow_mut().look(look), &cancel);
    looking.into_inner().finish();
    let result = result.map_err(|e| match e {
        EvalError::Sequential(SequentialError::Setting(setting)) => UsageError(setting.to_string()).into(),
        e => anyhow::Error::from(e),
    })?;
    for part in std::iter::once(&result.base).chain(result.others.iter().map(|o| &o.part)) {
        if let Some(beyond) = &part.beyond_training {
            eprintln!("mcscore: warning: {}: {beyond}", part.label);
        }
    }
    if args.json {
        crate::print_json(&result)?;
    } else if let Some(format) = args.format.table() {
        out!("{}", table(&result).render(format))?;
    } else {
        out!("{}", text(&result))?;
    }
    if result.interrupted {
        eprintln!(
            "mcscore: {}; {}",
            crate::signals::interrupted(),
            match &args.log_dir {
                Some(dir) => format!("the logs in {} are resumable: run the same command with --resume", dir.display()),
                None => "nothing was kept (give --log-dir DIR to keep logs that a resume continues)".to_owned(),
            }
        );
        return Ok(Outcome::Interrupted);
    }
    Ok(Outcome::Ok)
}

fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A model's part: its tasks, those scored by this process, and its log.
fn part_line(part: &ModelPart) -> String {
    format!(
        "{}: {} tasks ({} scored now, {:.1} s){}",
        printable(&part.label),
        thousands(part.tasks),
        thousands(part.scored),
        part.scoring_seconds,
        part.log.as_ref().map_or_else(String::new, |l| format!(", log {}", printable(l)))
    )
}

/// One row per OTHER: its decision, the tasks it took, and the confidence sequence.
fn table(r: &UntilDecided) -> Table {
    let mut t = Table::with_detail([
        ("base", true),
        ("other", true),
        ("decision", true),
        ("tasks_used", true),
        ("order_tasks", true),
        ("difference", true),
        ("cs_low", true),
        ("cs_high", true),
        ("conclusion", false),
        ("tasks_tokenised_differently", false),
    ]);
    for o in &r.others {
        t.row(vec![
            Cell::text(&*r.base.label),
            Cell::text(&*o.part.label),
            Cell::text(decision_word(o.decision)),
            Cell::Count(o.tasks_used as u64),
            Cell::Count(r.order_tasks as u64),
            Cell::Fraction(o.difference),
            Cell::Fraction(o.interval.0),
            Cell::Fraction(o.interval.1),
            Cell::text(&*o.conclusion),
            Cell::Count(o.tasks_tokenised_differently as u64),
        ]);
    }
    t
}

fn text(r: &UntilDecided) -> String {
    let mut out = String::new();
    let level = format!("{:.4}", 100.0 * (1.0 - r.alpha_each)).trim_end_matches('0').trim_end_matches('.').to_owned();
    for o in &r.others {
        let when = match o.decision {
            Decision::Undecided => format!("after {} of {} tasks", thousands(o.tasks_used), thousands(r.order_tasks)),
            d => format!("{} after {} of {} tasks", decision_word(d), thousands(o.tasks_used), thousands(r.order_tasks)),
        };
        let _ = writeln!(
            out,
            "{} vs {}: {} ({when}): {:+.2} points, {level} % confidence sequence [{:+.2}, {:+.2}]",
            printable(&o.part.label),
            printable(&r.base.label),
            o.conclusion,
            points(o.difference),
            points(o.interval.0),
            points(o.interval.1)
        );
    }
    let _ = writeln!(
        out,
        "\n{}: {} tasks; order {} seed {}{}, looked at every {} tasks; {}, α = {} over {} OTHER{} (each sequence at 1 − α/{})",
        printable(&r.file),
        thousands(r.file_tasks),
        r.order_rule,
        r.order_seed,
        if r.order_tasks < r.file_tasks { format!(", first {} tasks", thousands(r.order_tasks)) } else { String::new() },
        r.chunk,
        r.normalisation,
        r.alpha,
        r.others.len(),
        if r.others.len() == 1 { "" } else { "s" },
        r.others.len()
    );
    let _ = writeln!(out, "BASE {}", part_line(&r.base));
    for o in &r.others {
        let _ = writeln!(out, "\n{}", part_line(&o.part));
        let Some(p) = &o.fixed_sample else { continue };
        let d = &p.difference;
        let _ = writeln!(
            out,
            "  on the {} tasks used, as `compare` sees them (descriptive: the count was chosen by looking): {:.2} % vs {:.2} %, \
             {:+.2} points [{:+.2}, {:+.2}], McNemar p = {}, {} right→wrong, {} wrong→right",
            thousands(o.tasks_used),
            points(p.other.accuracy),
            points(p.base_accuracy),
            points(d.estimate),
            points(d.interval.0),
            points(d.interval.1),
            p_value(p.mcnemar.p),
            p.flips.right_to_wrong,
            p.flips.wrong_to_right
        );
        if o.tasks_tokenised_differently > 0 {
            let _ = writeln!(
                out,
                "  tokens differ: the two models tokenise {} of the tasks used differently; they are compared task by task",
                thousands(o.tasks_tokenised_differently)
            );
        }
    }
    let _ = write!(out, "\nwall {:.1} s", r.wall_seconds);
    if let (Some(whole), Some(speed_up)) = (r.whole_order_seconds, r.speed_up()) {
        let _ = write!(
            out,
            "; scoring every model on all {} tasks would take about {:.0} s (from this run's seconds per task), {speed_up:.1}× this run",
            thousands(r.order_tasks),
            whole,
        );
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lines count the order's tasks once, not once per model, and
    /// only the models still compared once a look has decided some.
    #[test]
    fn progress_counts_tasks_not_scores() {
        let mut looking = Looking::new(ProgressMode::Lines, 3);
        for _ in 0..7 {
            looking.count_score();
        }
        assert_eq!(looking.meter.as_ref().and_then(Meter::done), Some(2));
        (looking.at_look, looking.since_look, looking.active) = (30, 0, 2);
        for _ in 0..7 {
            looking.count_score();
        }
        assert_eq!(looking.meter.as_ref().and_then(Meter::done), Some(33));
    }
}
