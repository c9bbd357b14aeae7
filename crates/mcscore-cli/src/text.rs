//! Text that came from outside (a log's model path, a request's `model`)
//! printed safely: a newline could forge a log line, an escape sequence
//! could rewrite the terminal.

use std::borrow::Cow;

/// Characters written as escapes: control characters, the Unicode line and
/// paragraph separators (editors and `splitlines` break lines there) and the
/// bidirectional overrides (which reorder what a terminal shows).
fn unsafe_char(c: char) -> bool {
    c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` with every such character written as an escape (`\n`, `\u{1b}`,
/// `\u{2028}`), so that it prints as one inert line.
pub(crate) fn printable(text: &str) -> Cow<'_, str> {
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(text.chars().map(|c| if unsafe_char(c) { c.escape_unicode().to_string() } else { c.to_string() }).collect())
}

/// A run's accuracy per category and per group (MMLU's subjects), in percent
/// with 95 % Wilson intervals, as `score` and `report` print it.
pub(crate) fn groups_table(g: &mcscore_eval::results::GroupAccuracies) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let row = |out: &mut String, r: &mcscore_eval::results::GroupAccuracy| {
        let _ = writeln!(
            out,
            "    {:<36} {:>5} {:>7.2}  [{:.2}, {:.2}]",
            printable(&r.name),
            r.tasks,
            100.0 * r.accuracy,
            100.0 * r.low,
            100.0 * r.high
        );
    };
    let _ = writeln!(out, "  {} by group ({}; 95 % Wilson intervals)", g.normalisation, printable(&g.source));
    let _ = writeln!(out, "    {:<36} {:>5} {:>7}", "", "tasks", "acc (%)");
    for r in &g.categories {
        row(&mut out, r);
    }
    if !g.categories.is_empty() {
        let _ = writeln!(out);
    }
    for r in &g.groups {
        row(&mut out, r);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped_and_the_rest_kept() {
        assert_eq!(printable("models/a é.gguf"), "models/a é.gguf");
        assert_eq!(printable("a\nmcscore serve: #9 forged"), "a\\u{a}mcscore serve: #9 forged");
        assert_eq!(printable("\u{1b}[2J\u{1b}]0;title\u{7}"), "\\u{1b}[2J\\u{1b}]0;title\\u{7}");
        assert_eq!(printable("x\u{2028}y\u{202e}z"), "x\\u{2028}y\\u{202e}z");
    }
}
