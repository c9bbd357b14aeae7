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
