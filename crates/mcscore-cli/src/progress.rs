//! Progress on stderr: a bar on a terminal, plain lines in a log (a Slurm
//! job's output file, a CI log), where a bar shows nothing until the end.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

/// How progress is shown (`--progress`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub(crate) enum ProgressMode {
    /// A bar where stderr is a terminal, lines elsewhere.
    #[default]
    Auto,
    /// A bar (shown only on a terminal).
    Bar,
    /// A line every 30 seconds and at each tenth of the work.
    Lines,
    /// Nothing.
    None,
}

impl ProgressMode {
    /// Whether progress shows as plain lines (`Some(true)`), a bar
    /// (`Some(false)`) or not at all (`None`): `auto` asks whether stderr
    /// is a terminal.
    pub(crate) fn lines(self) -> Option<bool> {
        match self {
            ProgressMode::Auto => Some(!std::io::stderr().is_terminal()),
            ProgressMode::Lines => Some(true),
            ProgressMode::Bar => Some(false),
            ProgressMode::None => None,
        }
    }
}

/// Seconds between two progress lines at most.
const LINE_EVERY: Duration = Duration::from_secs(30);

/// A display of units of work done: a bar, plain lines, or nothing.
pub(crate) enum Meter {
    Bar(ProgressBar),
    Lines(Lines),
    Hidden,
}

/// Plain progress lines: `mcscore: WHAT: DONE/TOTAL UNIT (P %), R UNIT/s,
/// T tokens/s, eta T` (`DONE UNIT, R UNIT/s` where the total is not known).
pub(crate) struct Lines {
    what: String,
    unit: &'static str,
    /// `None` while unknown (a build reading its source as a stream).
    total: Option<usize>,
    done: usize,
    /// Tokens of the units done since the display started, where counted.
    tokens: usize,
    /// Units done when the display started (a resume's), left out of the rate.
    first: usize,
    started: Instant,
    last_line: Instant,
    /// The next tenth of the work that prints a line.
    next_tenth: usize,
}

impl Meter {
    /// A meter over `total` units (where known), `done` of them done already.
    pub(crate) fn new(mode: ProgressMode, what: &str, unit: &'static str, total: Option<usize>, done: usize) -> Meter {
        let Some(lines) = mode.lines() else { return Meter::Hidden };
        if lines {
            let now = Instant::now();
            let next_tenth = total.map_or(usize::MAX, |total| tenths(done, total) + 1);
            let what = what.to_owned();
            return Meter::Lines(Lines { what, unit, total, done, tokens: 0, first: done, started: now, last_line: now, next_tenth });
        }
        let template = match total {
            Some(_) => format!("{{spinner}} [{{elapsed_precise}}] {{bar:40}} {{pos}}/{{len}} {unit} ({{per_sec}}, eta {{eta}}) {{msg}}"),
            None => format!("{{spinner}} [{{elapsed_precise}}] {{pos}} {unit} ({{per_sec}}) {{msg}}"),
        };
        let bar = match total {
            Some(total) => ProgressBar::new(total as u64),
            None => ProgressBar::new_spinner(),
        };
        let bar = bar.with_position(done as u64).with_message(what.to_owned());
        bar.set_style(ProgressStyle::with_template(&template).expect("valid template"));
        Meter::Bar(bar)
    }

    /// One more unit done.
    pub(crate) fn inc(&mut self) {
        match self {
            Meter::Bar(bar) => bar.inc(1),
            Meter::Lines(lines) => lines.advance_to(lines.done + 1),
            Meter::Hidden => {}
        }
    }

    /// `done` units are done now.
    pub(crate) fn set(&mut self, done: usize) {
        match self {
            Meter::Bar(bar) => bar.set_position(done as u64),
            Meter::Lines(lines) => lines.advance_to(done),
            Meter::Hidden => {}
        }
    }

    /// The units done so far held `n` more tokens (shown as tokens/s in lines).
    pub(crate) fn tokens(&mut self, n: usize) {
        if let Meter::Lines(lines) = self {
            lines.tokens += n;
        }
    }

    /// The work ended: the bar cleared, or a last line where lines were
    /// printed and the last did not say it all.
    pub(crate) fn finish(self) {
        match self {
            Meter::Bar(bar) => bar.finish_and_clear(),
            Meter::Lines(mut lines) if lines.done > lines.first && (lines.total.is_none() || lines.next_tenth <= 10) => lines.print(),
            Meter::Lines(_) | Meter::Hidden => {}
        }
    }
}

/// Whole tenths of `total` that `done` reaches.
fn tenths(done: usize, total: usize) -> usize {
    if total == 0 {
        10
    } else {
        (done.min(total) as u128 * 10 / total as u128) as usize
    }
}

impl Lines {
    fn advance_to(&mut self, done: usize) {
        self.done = done;
        let reached = self.total.map_or(0, |total| tenths(done, total));
        if reached >= self.next_tenth || self.last_line.elapsed() >= LINE_EVERY {
            if self.total.is_some() {
                self.next_tenth = reached + 1;
            }
            self.print();
        }
    }

    fn print(&mut self) {
        self.last_line = Instant::now();
        eprintln!("{}", self.line(self.started.elapsed()));
    }

    /// The line after `elapsed` of work.
    fn line(&self, elapsed: Duration) -> String {
        let (done, unit) = (self.done, self.unit);
        let seconds = elapsed.as_secs_f64().max(1e-9);
        let rate = done.saturating_sub(self.first) as f64 / seconds;
        let tokens = if self.tokens > 0 { format!(", {:.0} tokens/s", self.tokens as f64 / seconds) } else { String::new() };
        let Some(total) = self.total else {
            return format!("mcscore: {}: {done} {unit}, {rate:.2} {unit}/s{tokens}", self.what);
        };
        let percent = if total == 0 { 100.0 } else { 100.0 * done as f64 / total as f64 };
        let eta = if rate > 0.0 && done < total {
            // done < total and rate >= 1/elapsed: positive, finite, at most (total - done) × elapsed seconds
            format!(", eta {}", clock(Duration::from_secs_f64((total - done) as f64 / rate)))
        } else {
            String::new()
        };
        format!("mcscore: {}: {done}/{total} {unit} ({percent:.0} %), {rate:.2} {unit}/s{tokens}{eta}", self.what)
    }
}

/// `H:MM:SS`.
fn clock(d: Duration) -> String {
    let s = d.as_secs();
    format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(total: usize, done: usize) -> Lines {
        let now = Instant::now();
        Lines {
            what: "scoring".into(),
            unit: "tasks",
            total: Some(total),
            done,
            tokens: 0,
            first: done,
            started: now,
            last_line: now,
            next_tenth: tenths(done, total) + 1,
        }
    }

    #[test]
    fn a_line_says_done_total_rate_and_eta() {
        let mut l = lines(200, 0);
        l.done = 50;
        assert_eq!(l.line(Duration::from_secs(25)), "mcscore: scoring: 50/200 tasks (25 %), 2.00 tasks/s, eta 0:01:15");
        l.done = 200;
        assert_eq!(l.line(Duration::from_secs(100)), "mcscore: scoring: 200/200 tasks (100 %), 2.00 tasks/s");
        // A resume's tasks are not counted in the rate.
        let mut l = lines(200, 100);
        l.done = 150;
        assert_eq!(l.line(Duration::from_secs(10)), "mcscore: scoring: 150/200 tasks (75 %), 5.00 tasks/s, eta 0:00:10");
        // Tokens where counted; no total, no share or eta.
        l.tokens = 4321;
        assert_eq!(l.line(Duration::from_secs(10)), "mcscore: scoring: 150/200 tasks (75 %), 5.00 tasks/s, 432 tokens/s, eta 0:00:10");
        l.total = None;
        assert_eq!(l.line(Duration::from_secs(10)), "mcscore: scoring: 150 tasks, 5.00 tasks/s, 432 tokens/s");
    }

    #[test]
    fn tenths_are_whole_and_total_zero_is_done() {
        assert_eq!((tenths(0, 37), tenths(3, 37), tenths(4, 37), tenths(37, 37), tenths(40, 37)), (0, 0, 1, 10, 10));
        assert_eq!(tenths(0, 0), 10);
        assert_eq!(tenths(usize::MAX, usize::MAX), 10);
        assert_eq!(clock(Duration::from_secs(3 * 3600 + 7 * 60 + 5)), "3:07:05");
    }
}
