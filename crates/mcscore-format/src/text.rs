//! llama-perplexity's two text inputs: HellaSwag's six-line file
//! (`--hellaswag`) and the Winogrande CSV (`--winogrande`), read strictly
//! into zero-copy [`Task`]s. llama-perplexity skips a malformed Winogrande line
//! with a log line, drops the CSV's last line, and reads a HellaSwag label
//! with `std::stoi`; these readers stop at the first fault instead, naming its
//! line and byte offset, and read every line.

use std::path::Path;

use crate::task::Task;
use crate::Error;

/// HellaSwag tasks have this many endings, one gold.
pub const HELLASWAG_ENDINGS: usize = 4;
const HELLASWAG_LINES: usize = 2 + HELLASWAG_ENDINGS;

/// The header line a Winogrande CSV may start with (llama.cpp's files have none).
pub const WINOGRANDE_HEADER: &str = "index,sentence,option1,option2,answer";

/// What is wrong with a line of a text task file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TextFault {
    /// A file that holds no task (nothing, or a Winogrande header alone).
    #[error("no tasks")]
    Empty,
    /// Bytes that are not UTF-8.
    #[error("not UTF-8")]
    InvalidUtf8,
    /// A carriage return, which llama-perplexity would keep in the text.
    #[error("a carriage return (Windows line ending); llama-perplexity would keep it in the text")]
    CarriageReturn,
    /// A byte-order mark at the start of the file.
    #[error(
        "a byte-order mark (U+FEFF) starts the file; llama-perplexity would read it as text of the first task: save the file without it"
    )]
    ByteOrderMark,
    /// An empty line in a Winogrande CSV.
    #[error("an empty line; expected index,sentence,option1,option2,answer")]
    EmptyLine,
    /// A HellaSwag file that ends inside a task's six lines.
    #[error("the file ends inside a task: {lines} line(s) of the {HELLASWAG_LINES} a HellaSwag task has (context, gold label, 4 endings)")]
    HellaswagIncomplete {
        /// The task's lines that are there.
        lines: usize,
    },
    /// A HellaSwag gold label other than 0, 1, 2 or 3.
    #[error("the gold label is {0:?}; expected 0, 1, 2 or 3 (the second line of each task)")]
    HellaswagLabel(String),
    /// An empty context, ending or option (the field named).
    #[error("an empty {0}")]
    EmptyField(&'static str),
    /// A Winogrande line without exactly five fields.
    #[error("{fields} comma-separated field(s); expected 5: index,sentence,option1,option2,answer")]
    WinograndeFields {
        /// How many fields the line has.
        fields: usize,
    },
    /// A Winogrande index that is not a whole number.
    #[error("the index {0:?} is not a whole number")]
    WinograndeIndex(String),
    /// A Winogrande answer other than 1 or 2.
    #[error("the answer is {0:?}; expected 1 or 2")]
    WinograndeAnswer(String),
    /// A Winogrande sentence with no `_`.
    #[error("the sentence has no `_` for the options to fill")]
    NoBlank,
    /// A Winogrande sentence with more than one `_`.
    #[error("the sentence has {0} `_`; expected one blank")]
    SeveralBlanks(usize),
    /// A quoted sentence whose quote does not close.
    #[error("a quote that does not close")]
    OpenQuote,
    /// A quote other than one around the whole sentence.
    #[error("a quote inside a field (only the sentence may be quoted, as a whole, and llama-perplexity does not undouble \"\")")]
    StrayQuote,
}

/// Reads HellaSwag's six-line format: the context, the gold ending's index,
/// then the four endings, for each task.
pub fn read_hellaswag<'a>(bytes: &'a [u8], path: &Path) -> Result<Vec<Task<'a>>, Error> {
    let lines = lines(bytes, path)?;
    if lines.is_empty() {
        return Err(fault(path, 1, 0, TextFault::Empty));
    }
    let mut tasks = Vec::with_capacity(lines.len() / HELLASWAG_LINES);
    for block in lines.chunks(HELLASWAG_LINES) {
        // chunks never yields an empty slice
        let (number, offset, _) = block[0];
        if block.len() < HELLASWAG_LINES {
            return Err(fault(path, number, offset, TextFault::HellaswagIncomplete { lines: block.len() }));
        }
        // a short block returned above, so every index and block[2..] below is in range
        let (label_number, label_offset, label) = block[1];
        let gold = match label {
            "0" | "1" | "2" | "3" => label.parse::<usize>().expect("a digit"),
            _ => return Err(fault(path, label_number, label_offset, TextFault::HellaswagLabel(label.to_owned()))),
        };
        for &(number, offset, text) in block.iter().take(1).chain(&block[2..]) {
            if text.is_empty() {
                let what = if number == block[0].0 { "context" } else { "ending" };
                return Err(fault(path, number, offset, TextFault::EmptyField(what)));
            }
        }
        tasks.push(Task::new(block[0].2, block[2..].iter().map(|l| l.2).collect(), gold));
    }
    Ok(tasks)
}

/// Reads a Winogrande CSV: `index,sentence,option1,option2,answer` per line,
/// the sentence optionally in double quotes (it holds commas), one `_` in it,
/// the answer 1 or 2. An optional header line is skipped.
pub fn read_winogrande<'a>(bytes: &'a [u8], path: &Path) -> Result<Vec<Task<'a>>, Error> {
    let mut lines = lines(bytes, path)?;
    if lines.first().is_some_and(|l| l.2 == WINOGRANDE_HEADER) {
        lines.remove(0);
    }
    if lines.is_empty() {
        return Err(fault(path, 1, 0, TextFault::Empty));
    }
    lines
        .into_iter()
        .map(|(number, offset, line)| {
            if line.is_empty() {
                return Err(fault(path, number, offset, TextFault::EmptyLine));
            }
            let (fields, column) = split_fields(line).map_err(|(column, f)| fault(path, number, offset + column, f))?;
            let at = |field: usize| offset + column[field];
            let [index, sentence, option1, option2, answer] = fields;
            if index.is_empty() || !index.bytes().all(|b| b.is_ascii_digit()) {
                return Err(fault(path, number, at(0), TextFault::WinograndeIndex(index.to_owned())));
            }
            match sentence.matches('_').count() {
                0 => return Err(fault(path, number, at(1), TextFault::NoBlank)),
                1 => {}
                n => return Err(fault(path, number, at(1), TextFault::SeveralBlanks(n))),
            }
            for (field, (text, what)) in [(option1, "option1"), (option2, "option2")].into_iter().enumerate() {
                if text.is_empty() {
                    return Err(fault(path, number, at(2 + field), TextFault::EmptyField(what)));
                }
            }
            let gold = match answer {
                "1" => 0,
                "2" => 1,
                _ => return Err(fault(path, number, at(4), TextFault::WinograndeAnswer(answer.to_owned()))),
            };
            Ok(Task::new(sentence, vec![option1, option2], gold))
        })
        .collect()
}

/// One CSV line of a Winogrande task, as llama.cpp's files spell it: the
/// sentence quoted when it holds a comma. `None` where a field cannot be
/// written so that llama-perplexity reads it back (a quote, a line break, a
/// comma outside the sentence).
pub fn winogrande_line(index: usize, sentence: &str, options: [&str; 2], answer: usize) -> Option<String> {
    let plain = |s: &str| !s.contains(['"', '\n', '\r']);
    if !plain(sentence) || !options.iter().all(|o| plain(o) && !o.contains(',')) || !(1..=2).contains(&answer) {
        return None;
    }
    let sentence = if sentence.contains(',') { format!("\"{sentence}\"") } else { sentence.to_owned() };
    Some(format!("{index},{sentence},{},{},{answer}\n", options[0], options[1]))
}

/// A CSV line's five fields and the column each starts at (for messages).
type Fields<'a> = ([&'a str; 5], [usize; 5]);

/// Splits a CSV line into its five fields as llama-perplexity does (only the
/// sentence may be quoted); a fault comes with its column.
fn split_fields(line: &str) -> Result<Fields<'_>, (usize, TextFault)> {
    let mut fields = Vec::with_capacity(5);
    let mut columns = Vec::with_capacity(5);
    let mut rest = line;
    let mut column = 0;
    loop {
        let quoted = fields.len() == 1 && rest.starts_with('"');
        // quotes and commas are ASCII, so every slice below is at a char boundary (a quoted rest opens with one)
        let (field, next) = if quoted {
            let close = rest[1..].find('"').ok_or((column, TextFault::OpenQuote))? + 1;
            let after = &rest[close + 1..];
            if !(after.is_empty() || after.starts_with(',')) {
                return Err((column + close, TextFault::StrayQuote));
            }
            (&rest[1..close], after.strip_prefix(',').map(|a| (a, close + 2)))
        } else {
            match rest.find(',') {
                Some(comma) => (&rest[..comma], Some((&rest[comma + 1..], comma + 1))),
                None => (rest, None),
            }
        };
        let start = column + usize::from(quoted);
        if let Some(quote) = field.find('"') {
            return Err((start + quote, TextFault::StrayQuote));
        }
        fields.push(field);
        columns.push(start);
        match next {
            Some((after, used)) => {
                rest = after;
                column += used;
            }
            None => break,
        }
    }
    let n = fields.len();
    match (<[&str; 5]>::try_from(fields), <[usize; 5]>::try_from(columns)) {
        (Ok(fields), Ok(columns)) => Ok((fields, columns)),
        _ => Err((0, TextFault::WinograndeFields { fields: n })),
    }
}

/// The file's lines with their 1-based numbers and byte offsets; a final line
/// break ends the last line rather than starting an empty one.
fn lines<'a>(bytes: &'a [u8], path: &Path) -> Result<Vec<(usize, usize, &'a str)>, Error> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let offset = e.valid_up_to();
        let line = 1 + bytes[..offset].iter().filter(|&&b| b == b'\n').count();
        fault(path, line, offset, TextFault::InvalidUtf8)
    })?;
    if text.starts_with('\u{feff}') {
        return Err(fault(path, 1, 0, TextFault::ByteOrderMark));
    }
    let body = text.strip_suffix('\n').unwrap_or(text);
    if body.is_empty() {
        return Ok(Vec::new());
    }
    let mut offset = 0;
    body.split('\n')
        .enumerate()
        .map(|(i, line)| {
            let start = offset;
            offset += line.len() + 1;
            match line.find('\r') {
                Some(at) => Err(fault(path, i + 1, start + at, TextFault::CarriageReturn)),
                None => Ok((i + 1, start, line)),
            }
        })
        .collect()
}

fn fault(path: &Path, line: usize, offset: usize, fault: TextFault) -> Error {
    Error::Text { path: path.to_owned(), line, offset, fault }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Read = for<'a> fn(&'a [u8], &Path) -> Result<Vec<Task<'a>>, Error>;

    /// The tasks `read` finds in `text` (question, options, gold), or its error.
    fn tasks(read: Read, text: &str, path: &str) -> Result<Vec<(String, Vec<String>, usize)>, String> {
        read(text.as_bytes(), Path::new(path))
            .map(|tasks| {
                tasks
                    .iter()
                    .map(|t| (t.question.to_owned(), t.options().iter().map(|o| o.to_string()).collect(), t.gold().unwrap()))
                    .collect()
            })
            .map_err(|e| e.to_string())
    }

    fn hellaswag(text: &str) -> Result<Vec<(String, Vec<String>, usize)>, String> {
        tasks(read_hellaswag, text, "h.txt")
    }

    fn winogrande(text: &str) -> Result<Vec<(String, Vec<String>, usize)>, String> {
        tasks(read_winogrande, text, "w.csv")
    }

    const TASK: &str = "Ctx: a man\n2\nrides.\nsits.\nruns.\nfalls.\n";

    #[test]
    fn hellaswag_reads_six_line_tasks_with_or_without_the_last_line_break() {
        let two = format!("{TASK}{TASK}");
        let tasks = hellaswag(&two).unwrap();
        assert_eq!(tasks.len(), 2);
        assert_eq!(tasks[1], ("Ctx: a man".to_owned(), vec!["rides.".into(), "sits.".into(), "runs.".into(), "falls.".into()], 2));
        assert_eq!(hellaswag(two.trim_end()).unwrap(), tasks);
    }

    #[test]
    fn hellaswag_faults_name_line_and_offset() {
        let cases = [
            ("", "h.txt: line 1 (byte 0): no tasks"),
            ("Ctx\n1\na\nb\nc\n", "h.txt: line 1 (byte 0): the file ends inside a task: 5 line(s)"),
            ("Ctx\n4\na\nb\nc\nd\n", "h.txt: line 2 (byte 4): the gold label is \"4\"; expected 0, 1, 2 or 3"),
            ("Ctx\n 1\na\nb\nc\nd\n", "h.txt: line 2 (byte 4): the gold label is \" 1\""),
            ("\n1\na\nb\nc\nd\n", "h.txt: line 1 (byte 0): an empty context"),
            ("Ctx\n1\na\n\nc\nd\n", "h.txt: line 4 (byte 8): an empty ending"),
            ("Ctx\r\n1\na\nb\nc\nd\n", "h.txt: line 1 (byte 3): a carriage return"),
            ("\u{feff}Ctx\n1\na\nb\nc\nd\n", "h.txt: line 1 (byte 0): a byte-order mark"),
        ];
        for (text, expected) in cases {
            let error = hellaswag(text).unwrap_err();
            assert!(error.starts_with(expected), "{text:?}: {error}");
        }
        let bad_utf8 = [TASK.as_bytes(), b"Ct\xffx\n"].concat();
        let error = read_hellaswag(&bad_utf8, Path::new("h.txt")).unwrap_err().to_string();
        assert_eq!(error, format!("h.txt: line 7 (byte {}): not UTF-8", TASK.len() + 2));
    }

    #[test]
    fn winogrande_reads_quoted_sentences_and_a_header() {
        let text = "index,sentence,option1,option2,answer\n0,Sarah beat Maria so _ won.,Sarah,Maria,1\n1,\"Yes, _ did.\",Ann,Bo,2";
        let tasks = winogrande(text).unwrap();
        assert_eq!(tasks[0], ("Sarah beat Maria so _ won.".to_owned(), vec!["Sarah".into(), "Maria".into()], 0));
        assert_eq!(tasks[1], ("Yes, _ did.".to_owned(), vec!["Ann".into(), "Bo".into()], 1));
    }

    #[test]
    fn winogrande_faults_name_line_and_offset() {
        let cases = [
            ("", "w.csv: line 1 (byte 0): no tasks"),
            ("0,A _ b.,x,y\n", "w.csv: line 1 (byte 0): 4 comma-separated field(s); expected 5"),
            ("0,A _ b.,x,y,1,extra\n", "w.csv: line 1 (byte 0): 6 comma-separated field(s)"),
            ("0,A _ b.,x,y,3\n", "w.csv: line 1 (byte 13): the answer is \"3\"; expected 1 or 2"),
            ("0,A _ b.,x,y,\n", "w.csv: line 1 (byte 13): the answer is \"\""),
            ("0,A b.,x,y,1\n", "w.csv: line 1 (byte 2): the sentence has no `_`"),
            ("0,A _ b _.,x,y,1\n", "w.csv: line 1 (byte 2): the sentence has 2 `_`"),
            ("0,A _ b.,,y,1\n", "w.csv: line 1 (byte 9): an empty option1"),
            ("0,A _ b.,x,,1\n", "w.csv: line 1 (byte 11): an empty option2"),
            ("x,A _ b.,x,y,1\n", "w.csv: line 1 (byte 0): the index \"x\" is not a whole number"),
            ("0,\"A, _ b.,x,y,1\n", "w.csv: line 1 (byte 2): a quote that does not close"),
            ("0,\"A, \"\"_\"\" b.\",x,y,1\n", "w.csv: line 1 (byte 6): a quote inside a field"),
            ("0,A _ b.,\"x\",y,1\n", "w.csv: line 1 (byte 9): a quote inside a field"),
            ("0,A _ b.,x,y,1\n\n1,A _ b.,x,y,1\n", "w.csv: line 2 (byte 15): an empty line"),
            ("0,A _ b.,x,y,1\n\n", "w.csv: line 2 (byte 15): an empty line"),
            ("\u{feff}0,A _ b.,x,y,1\n", "w.csv: line 1 (byte 0): a byte-order mark"),
            ("0,A _ b.,x,y,1\r\n", "w.csv: line 1 (byte 14): a carriage return"),
        ];
        for (text, expected) in cases {
            let error = winogrande(text).unwrap_err();
            assert!(error.starts_with(expected), "{text:?}: {error}");
        }
    }

    #[test]
    fn winogrande_lines_read_back() {
        let text =
            [winogrande_line(0, "Yes, _ did.", ["Ann", "Bo"], 2).unwrap(), winogrande_line(1, "So _ did.", ["Ann", "Bo"], 1).unwrap()]
                .concat();
        assert_eq!(text, "0,\"Yes, _ did.\",Ann,Bo,2\n1,So _ did.,Ann,Bo,1\n");
        assert_eq!(winogrande(&text).unwrap().len(), 2);
        assert_eq!(winogrande_line(0, "A \"q\" _.", ["a", "b"], 1), None);
        assert_eq!(winogrande_line(0, "A _.", ["a,b", "b"], 1), None);
        assert_eq!(winogrande_line(0, "A _.", ["a", "b"], 3), None);
    }
}
