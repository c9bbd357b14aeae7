//! Text that came from outside (a log's model path, a request's `model`)
//! printed safely: a newline could forge a log line, an escape sequence
//! could rewrite the terminal.

use std::borrow::Cow;

/// `text` with every control character written as an escape (`\n`,
/// `\u{1b}`), so that it prints as one inert line.
pub(crate) fn printable(text: &str) -> Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(text.chars().map(|c| if c.is_control() { c.escape_debug().to_string() } else { c.to_string() }).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped_and_the_rest_kept() {
        assert_eq!(printable("models/a é.gguf"), "models/a é.gguf");
        assert_eq!(printable("a\nmcscore serve: #9 forged"), "a\\nmcscore serve: #9 forged");
        assert_eq!(printable("\u{1b}[2J\u{1b}]0;title\u{7}"), "\\u{1b}[2J\\u{1b}]0;title\\u{7}");
    }
}
