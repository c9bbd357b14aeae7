//! Reading a response: inspect_ai's answer parser (`parse_answers` of its
//! multiple-choice solver, version 0.3.285), rule for rule, and the parts of
//! each response mode it does not read (ABSTAIN, a confidence level, one
//! probability per option).

use std::sync::LazyLock;

use fancy_regex::Regex;
use serde::{Deserialize, Serialize};

/// How a response was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Parse {
    /// By inspect_ai's strict rule: an `ANSWER:` line of its own.
    Strict,
    /// By its loose rule: `ANSWER:` anywhere.
    Loose,
    /// The free response held no answer; `ANSWER:` was then asked for under
    /// the mode's grammar (`--reasoning` only).
    Forced,
    /// Not at all: the response is scored as a wrong answer.
    Unparsed,
}

impl Parse {
    /// Every outcome, in the order reports list them.
    pub const ALL: [Parse; 4] = [Parse::Strict, Parse::Loose, Parse::Forced, Parse::Unparsed];

    /// The outcome's name, as logs and reports write it.
    pub fn name(self) -> &'static str {
        match self {
            Parse::Strict => "strict",
            Parse::Loose => "loose",
            Parse::Forced => "forced",
            Parse::Unparsed => "unparsed",
        }
    }
}

fn regex(pattern: &str) -> Regex {
    // the patterns below are constants, tested to compile
    Regex::new(pattern).expect("a valid constant pattern")
}

/// A pattern of Python's `re` with its classes as Python reads them on a
/// string: `\s` is what `str.isspace` takes (the Unicode spaces and the
/// separators U+001C–U+001F), `\w` what `str.isalnum` takes and `_`
/// (letters and numbers, no combining marks).
fn python(pattern: &str) -> Regex {
    regex(&pattern.replace(r"[^\w]", r"[^\p{L}\p{N}_]").replace(r"\s", r"[\s\x1c-\x1f]"))
}

/// inspect_ai's clean-ups before matching: `$B$` and `**B**` unwrapped, and
/// `(B)` after a line start, colon or comma.
static DOLLARS: LazyLock<Regex> = LazyLock::new(|| python(r"\x24\s*([A-Za-z\d][A-Za-z\d ,]*?)\s*\x24"));
static BOLD: LazyLock<Regex> = LazyLock::new(|| python(r"\*\*\s*([A-Za-z\d][A-Za-z\d ,]*?)\s*\*\*"));
static PARENS: LazyLock<Regex> = LazyLock::new(|| python(r"(?i)(^|[:,])(\s*)\(([A-Za-z\d])\)(?=\s*(?:,|\.|\n|\z))"));
/// Its strict rule (multi-line: `^` and `$` at each line) and its loose one.
static STRICT: LazyLock<Regex> = LazyLock::new(|| python(r"(?im)^ANSWER\s*:\s*([A-Za-z\d ,]+)\s*(?:$|\n|\.)"));
static LOOSE: LazyLock<Regex> = LazyLock::new(|| python(r"(?i)ANSWER\s*:\s*([A-Za-z\d ,]+)(?:[^\w]|\n|$|\.)"));
/// CBM's confidence line, and PPA's answer line and its pairs.
static CONFIDENCE: LazyLock<Regex> = LazyLock::new(|| regex(r"(?im)^CONFIDENCE\s*:\s*([123])\b"));
static PPA_STRICT: LazyLock<Regex> = LazyLock::new(|| regex(r"(?im)^ANSWER\s*:(.*)$"));
static PPA_LOOSE: LazyLock<Regex> = LazyLock::new(|| regex(r"(?i)ANSWER\s*:(.*)"));
static PAIR: LazyLock<Regex> = LazyLock::new(|| regex(r"([A-Za-z]|\d+)\s*[=:]\s*(\d*\.?\d+)"));

/// The text of the last match of `re`'s first group in `text`.
fn last_group(re: &Regex, text: &str) -> Option<String> {
    // fancy-regex reports a backtracking limit as an error: no match then.
    re.captures_iter(text).filter_map(Result::ok).last().and_then(|c| c.get(1).map(|m| m.as_str().to_owned()))
}

/// Python's `re.sub(pattern, replacement, text)` for replacements made of
/// group references.
fn substitute(re: &Regex, text: &str, groups: &[usize]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for captures in re.captures_iter(text).filter_map(Result::ok) {
        // group 0 always exists in a match
        let whole = captures.get(0).expect("group 0");
        out.push_str(&text[at..whole.start()]);
        for &g in groups {
            out.push_str(captures.get(g).map_or("", |m| m.as_str()));
        }
        at = whole.end();
    }
    out.push_str(&text[at..]);
    out
}

/// The answer text inspect_ai reads from `completion` (stripped, its
/// trailing full stops removed, upper-cased), and by which rule.
pub fn answer_text(completion: &str) -> Option<(String, Parse)> {
    let cleaned = substitute(&DOLLARS, completion, &[1]);
    let cleaned = substitute(&BOLD, &cleaned, &[1]);
    let cleaned = substitute(&PARENS, &cleaned, &[1, 2, 3]);
    let (matched, how) = match last_group(&STRICT, &cleaned) {
        Some(m) => (m, Parse::Strict),
        None => (last_group(&LOOSE, &cleaned)?, Parse::Loose),
    };
    // Python's str.strip(), rstrip('.') and upper() on what [A-Za-z\d ,] let through.
    Some((matched.trim().trim_end_matches('.').to_uppercase(), how))
}

/// The letter of option `i` (A, B, …; inspect_ai's `answer_character`).
pub fn letter(i: usize) -> String {
    if i < 26 {
        char::from(b'A' + i as u8).to_string()
    } else {
        (i - 25).to_string()
    }
}

/// The options inspect_ai reads from `completion` for a question of `k`
/// options, one (`multiple` false) or several, as indices in ascending
/// order, and by which rule; an empty list where it reads none.
pub fn answers(completion: &str, k: usize, multiple: bool) -> (Vec<usize>, Parse) {
    let Some((matched, how)) = answer_text(completion) else { return (Vec::new(), Parse::Unparsed) };
    let (found, how) = read_letters(&matched, k, multiple).map_or((Vec::new(), Parse::Unparsed), |f| (f, how));
    (found, how)
}

/// The options an answer text names, by inspect_ai's rules.
fn read_letters(matched: &str, k: usize, multiple: bool) -> Option<Vec<usize>> {
    let index = |token: &str| (0..k).find(|&i| letter(i) == token);
    if multiple {
        let joined = matched.replace(" AND ", ",").replace(' ', "");
        let by_comma: Option<Vec<usize>> = joined.split(',').filter(|t| !t.is_empty()).map(index).collect();
        if let Some(mut found) = by_comma {
            found.sort_unstable();
            found.dedup();
            return Some(found);
        }
        let by_char: Option<Vec<usize>> = joined.chars().map(|c| index(&c.to_string())).collect();
        let mut found = by_char?;
        found.sort_unstable();
        found.dedup();
        Some(found)
    } else {
        let tokens: Vec<&str> = matched.split(',').filter(|t| !t.is_empty()).collect();
        match tokens[..] {
            [one] => index(one).map(|i| vec![i]),
            _ => None,
        }
    }
}

/// NM's answer: a letter, or `Abstain` for `ANSWER: ABSTAIN`.
pub(crate) fn abstains(completion: &str) -> Option<Parse> {
    answer_text(completion).and_then(|(text, how)| (text == "ABSTAIN").then_some(how))
}

/// CBM's confidence level: the last `CONFIDENCE: n` line.
pub(crate) fn confidence(completion: &str) -> Option<u8> {
    last_group(&CONFIDENCE, completion).and_then(|level| level.parse().ok())
}

/// PPA's probabilities: `ANSWER: A=0.2, B=0.7, …` (`=` or `:`; options
/// past the 26th by number, as inspect_ai names them), normalised to sum to
/// 1; an option not named gets 0, and where all are 0 each gets 1/k (no
/// belief stated). A pair that names no option of the question is passed
/// over; `None` where none names one, or one is named twice.
pub(crate) fn allocation(completion: &str, k: usize) -> Option<(Vec<f64>, Parse)> {
    let (line, how) = match last_group(&PPA_STRICT, completion) {
        Some(line) => (line, Parse::Strict),
        None => (last_group(&PPA_LOOSE, completion)?, Parse::Loose),
    };
    let mut p: Vec<Option<f64>> = vec![None; k];
    for captures in PAIR.captures_iter(&line).filter_map(Result::ok) {
        let (Some(id), Some(value)) = (captures.get(1), captures.get(2)) else { continue };
        let Some(i) = (0..k).find(|&i| letter(i) == id.as_str().to_uppercase()) else { continue };
        let value: f64 = value.as_str().parse().ok()?;
        if p[i].replace(value).is_some() {
            return None;
        }
    }
    if p.iter().all(Option::is_none) {
        return None;
    }
    let total: f64 = p.iter().flatten().sum();
    if !total.is_finite() {
        return None;
    }
    if total == 0.0 {
        return Some((vec![1.0 / k as f64; k], how));
    }
    Some((p.into_iter().map(|v| v.unwrap_or(0.0) / total).collect(), how))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inspects_rules_read_letters() {
        assert_eq!(answers("ANSWER: B", 4, false), (vec![1], Parse::Strict));
        assert_eq!(answers("Let me think.\nANSWER: c.", 4, false), (vec![2], Parse::Strict));
        assert_eq!(answers("The answer is ANSWER: D.", 4, false), (vec![3], Parse::Loose));
        assert_eq!(answers("ANSWER: E", 4, false), (vec![], Parse::Unparsed));
        assert_eq!(answers("ANSWER: (B)", 4, false), (vec![1], Parse::Strict));
        assert_eq!(answers("ANSWER: A, C", 4, true), (vec![0, 2], Parse::Strict));
        assert_eq!(answers("ANSWER: CA", 4, true), (vec![0, 2], Parse::Strict));
        assert_eq!(answers("ANSWER: A and B", 4, true), (vec![0, 1], Parse::Strict));
        assert_eq!(answers("no answer here", 4, false), (vec![], Parse::Unparsed));
        assert_eq!(abstains("ANSWER: ABSTAIN"), Some(Parse::Strict));
        assert_eq!(confidence("ANSWER: A\nCONFIDENCE: 3"), Some(3));
        let (p, how) = allocation("ANSWER: A=0.2, B=0.6, C=0.2, D=0", 4).unwrap();
        assert_eq!((p, how), (vec![0.2, 0.6, 0.2, 0.0], Parse::Strict));
        assert_eq!(allocation("ANSWER: A=1, A=0", 2), None);
        assert_eq!(allocation("ANSWER: A=0, B=0", 2), Some((vec![0.5, 0.5], Parse::Strict)));
        assert_eq!(allocation("ANSWER: A=1 (total: 1.0)", 2), Some((vec![1.0, 0.0], Parse::Strict)));
        assert_eq!(allocation("ANSWER: nothing", 2), None);
    }
}
