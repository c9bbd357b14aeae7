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
    /// A line every 30 seconds and at each tenth of the work, however short
    /// (`auto` in a log prints lines only for work of more than a few seconds,
    /// a second apart at least).
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

/// Work shorter than this prints no lines: a line is for work one waits on.
const QUIET: Duration = Duration::from_secs(5);

/// Seconds between two progress lines at least (the last excepted): units
/// that arrive together (every task of one fill) print one line, not ten.
const LINE_GAP: Duration = Duration::from_secs(1);

/// An estimate of the time left needs the rate measured over this long
/// after the first unit was done (before it, the time is the set-up's and
/// the first fill's, and says nothing of the rest).
const MEASURED: Duration = Duration::from_secs(1);

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
    /// The units the last line printed showed, if one was printed.
    printed: Option<usize>,
    /// `auto` in a log: lines only after [`QUIET`], [`LINE_GAP`] apart.
    quiet: bool,
    /// When the first unit of this display was done, and the units done then:
    /// where the rate behind an estimate of the time left is measured from.
    first_done: Option<(Instant, usize)>,
    /// The next tenth of the work that prints a line.
    next_tenth: usize,
}

impl Meter {
    /// A meter over `total` units (where known), `done` of them done already.
    pub(crate) fn new(mode: ProgressMode, what: &str, unit: &'static str, total: Option<usize>, done: usize) -> Meter {
        let Some(lines) = mode.lines() else { return Meter::Hidden };
        if lines {
            return Meter::Lines(Lines::new(what, unit, total, done, mode == ProgressMode::Auto));
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

    /// The units done, where shown as lines.
    #[cfg(test)]
    pub(crate) fn done(&self) -> Option<usize> {
        match self {
            Meter::Lines(lines) => Some(lines.done),
            Meter::Bar(_) | Meter::Hidden => None,
        }
    }

    /// The units done so far held `n` more tokens (shown as tokens/s in lines).
    pub(crate) fn tokens(&mut self, n: usize) {
        if let Meter::Lines(lines) = self {
            lines.tokens += n;
        }
    }

    /// The work ended: the bar cleared, or a last line where the work took
    /// long enough for lines and the last printed did not say it all.
    pub(crate) fn finish(self) {
        match self {
            Meter::Bar(bar) => bar.finish_and_clear(),
            Meter::Lines(mut lines)
                if lines.done > lines.first && lines.said_less() && !(lines.quiet && lines.started.elapsed() < QUIET) =>
            {
                lines.print()
            }
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
    /// Lines over `total` units (where known), `done` of them done already;
    /// `quiet` for `auto` in a log.
    fn new(what: &str, unit: &'static str, total: Option<usize>, done: usize, quiet: bool) -> Lines {
        let now = Instant::now();
        Lines {
            what: what.to_owned(),
            unit,
            total,
            done,
            tokens: 0,
            first: done,
            started: now,
            last_line: now,
            printed: None,
            quiet,
            first_done: None,
            next_tenth: total.map_or(usize::MAX, |total| tenths(done, total) + 1),
        }
    }

    fn advance_to(&mut self, done: usize) {
        let now = Instant::now();
        if self.first_done.is_none() && done > self.first {
            self.first_done = Some((now, done));
        }
        self.done = done;
        let reached = self.total.map_or(0, |total| tenths(done, total));
        let due = reached >= self.next_tenth || now.duration_since(self.last_line) >= LINE_EVERY;
        let spaced = self.printed.is_none() || now.duration_since(self.last_line) >= LINE_GAP;
        if due && (!self.quiet || (spaced && now.duration_since(self.started) >= QUIET)) {
            if self.total.is_some() {
                self.next_tenth = reached + 1;
            }
            self.print();
        }
    }

    /// Whether the last line printed (if any) showed fewer units than are done.
    fn said_less(&self) -> bool {
        self.printed.is_none_or(|shown| shown < self.done)
    }

    fn print(&mut self) {
        self.last_line = Instant::now();
        self.printed = Some(self.done);
        let measured = self.first_done.map(|(at, done)| (at.elapsed(), self.done.saturating_sub(done)));
        eprintln!("{}", self.line(self.started.elapsed(), measured));
    }

    /// The line after `elapsed` of work; `measured`: the time since the
    /// first unit was done and the units done since, which an estimate of
    /// the time left needs ([`MEASURED`] of it at least).
    fn line(&self, elapsed: Duration, measured: Option<(Duration, usize)>) -> String {
        let (done, unit) = (self.done, self.unit);
        let seconds = elapsed.as_secs_f64().max(1e-9);
        let rate = done.saturating_sub(self.first) as f64 / seconds;
        let tokens = if self.tokens > 0 { format!(", {:.0} tokens/s", self.tokens as f64 / seconds) } else { String::new() };
        let Some(total) = self.total else {
            return format!("mcscore: {}: {done} {unit}, {rate:.2} {unit}/s{tokens}", self.what);
        };
        let percent = if total == 0 { 100.0 } else { 100.0 * done as f64 / total as f64 };
        let eta = match measured {
            Some((since, units)) if since >= MEASURED && units > 0 && done < total => {
                // units > 0 over at least a second: a positive, finite rate
                let left = (total - done) as f64 * since.as_secs_f64() / units as f64;
                format!(", eta {}", clock(Duration::from_secs_f64(left)))
            }
            _ => String::new(),
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
        Lines::new("scoring", "tasks", Some(total), done, true)
    }

    #[test]
    fn a_line_says_done_total_rate_and_eta() {
        let mut l = lines(200, 0);
        l.done = 50;
        // The estimate is measured after the first unit: 40 in 20 s, 150 left.
        let measured = Some((Duration::from_secs(20), 40));
        assert_eq!(l.line(Duration::from_secs(25), measured), "mcscore: scoring: 50/200 tasks (25 %), 2.00 tasks/s, eta 0:01:15");
        // None before a second of it: units that came together say nothing of the rest.
        assert_eq!(l.line(Duration::from_secs(25), None), "mcscore: scoring: 50/200 tasks (25 %), 2.00 tasks/s");
        let burst = Some((Duration::from_millis(3), 49));
        assert_eq!(l.line(Duration::from_secs(25), burst), "mcscore: scoring: 50/200 tasks (25 %), 2.00 tasks/s");
        l.done = 200;
        assert_eq!(l.line(Duration::from_secs(100), measured), "mcscore: scoring: 200/200 tasks (100 %), 2.00 tasks/s");
        // A resume's tasks are not counted in the rate.
        let mut l = lines(200, 100);
        l.done = 150;
        let measured = Some((Duration::from_secs(8), 40));
        assert_eq!(l.line(Duration::from_secs(10), measured), "mcscore: scoring: 150/200 tasks (75 %), 5.00 tasks/s, eta 0:00:10");
        // Tokens where counted; no total, no share or eta.
        l.tokens = 4321;
        assert_eq!(
            l.line(Duration::from_secs(10), measured),
            "mcscore: scoring: 150/200 tasks (75 %), 5.00 tasks/s, 432 tokens/s, eta 0:00:10"
        );
        l.total = None;
        assert_eq!(l.line(Duration::from_secs(10), measured), "mcscore: scoring: 150 tasks, 5.00 tasks/s, 432 tokens/s");
    }

    /// Work of a few seconds prints nothing; a burst of units prints one line.
    #[test]
    fn short_work_is_quiet_and_a_burst_prints_once() {
        let mut l = lines(100, 0);
        for done in 1..=100 {
            l.advance_to(done);
        }
        assert!(l.printed.is_none(), "work under {QUIET:?} prints no line");
        let mut l = lines(100, 0);
        l.started -= QUIET * 2;
        l.last_line = l.started;
        for done in 1..=100 {
            l.advance_to(done);
        }
        assert_eq!(l.printed, Some(10), "one line, at the first tenth; the rest within {LINE_GAP:?} of it");
        assert!(l.said_less(), "finish prints the last line");
        // --progress lines asks for every tenth, however short the work.
        let mut l = lines(100, 0);
        l.quiet = false;
        for done in 1..=100 {
            l.advance_to(done);
        }
        assert_eq!(l.next_tenth, 11);
    }

    #[test]
    fn tenths_are_whole_and_total_zero_is_done() {
        assert_eq!((tenths(0, 37), tenths(3, 37), tenths(4, 37), tenths(37, 37), tenths(40, 37)), (0, 0, 1, 10, 10));
        assert_eq!(tenths(0, 0), 10);
        assert_eq!(tenths(usize::MAX, usize::MAX), 10);
        assert_eq!(clock(Duration::from_secs(3 * 3600 + 7 * 60 + 5)), "3:07:05");
    }
}
