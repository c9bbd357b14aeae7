//! Multiple-choice visual question answering files in VLMEvalKit's TSV
//! layout, the form MMBench, SEED-Bench, AI2D, ScienceQA-IMG, MMStar,
//! A-OKVQA and others are distributed in: a header row, then per row
//! `index`, `question`, an optional `hint`, the options in columns `A`, `B`,
//! … (an empty cell: no such option), `answer` (a letter), the image as
//! base64 in `image`, and any other columns (`category`, `l2-category`,
//! `split`, `source`, …), kept as the row's categories. Cells are quoted as
//! pandas writes them (double quotes, doubled inside).
//!
//! An `image` cell of at most 64 characters names another row's `index`,
//! whose image it shares (MMBench's circular copies do this); one holding a
//! Python list of base64 strings (`['…', '…']`) gives several images.
//!
//! Each row becomes a task as VLMEvalKit's `ImageMCQDataset.build_prompt`
//! words it, scored by log-likelihood of the option letters: the images
//! first (each an image marker and a line break), then `Hint: …` where there
//! is one, `Question: …`, `Options:` with a line `A. …` per option, VLMEvalKit's
//! instruction, and `Answer:`; each option is its letter (` A` after it).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use base64::Engine as _;

use mcscore_format::IMAGE_MARKER;

/// VLMEvalKit's instruction after the options.
const INSTRUCTION: &str = "Please select the correct answer from the options above. \n";

/// The option letters VLMEvalKit reads, in order.
const LETTERS: [&str; 26] =
    ["A", "B", "C", "D", "E", "F", "G", "H", "I", "J", "K", "L", "M", "N", "O", "P", "Q", "R", "S", "T", "U", "V", "W", "X", "Y", "Z"];

/// An `image` cell this long or shorter names another row's image.
const MAX_REFERENCE: usize = 64;

/// One row, rendered as a task.
#[derive(Debug, Clone)]
pub struct VqaTask {
    /// The row's `index` cell.
    pub index: String,
    /// The line the row starts on, from 1 (the header is line 1).
    pub line: u64,
    /// The task's context, images at [`IMAGE_MARKER`]s.
    pub context: String,
    /// The row's question.
    pub question: String,
    /// The row's hint, where it has one.
    pub hint: Option<String>,
    /// The options' texts, in letter order (those with text).
    pub options: Vec<String>,
    /// The option letters (those with text), in order.
    pub letters: Vec<&'static str>,
    /// The correct option's position in `letters`.
    pub gold: usize,
    /// The images' file bytes, in marker order (shared between rows that share them).
    pub images: Vec<Arc<[u8]>>,
    /// The other columns' cells, by column name (empty cells left out).
    pub categories: BTreeMap<String, String>,
}

/// What is wrong with a VQA file, and where.
#[derive(Debug, thiserror::Error)]
pub enum VqaError {
    /// A file that could not be read.
    #[error("{}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A row the TSV reader cannot split (bad quoting, another cell count).
    #[error("{}: line {line} (byte {byte}): {message}", path.display())]
    Syntax {
        /// The file.
        path: PathBuf,
        /// The line, from 1.
        line: u64,
        /// The byte offset where the row starts.
        byte: u64,
        /// The reader's message.
        message: String,
    },
    /// A column every row needs, missing from the header.
    #[error("{}: no {column:?} column in the header (VLMEvalKit's layout: index, question, [hint,] A, B, ..., answer, image)", path.display())]
    MissingColumn {
        /// The file.
        path: PathBuf,
        /// The column.
        column: &'static str,
    },
    /// A row whose cells do not make a task.
    #[error("{}: line {line} (byte {byte}), index {index:?}: {fault}", path.display())]
    Row {
        /// The file.
        path: PathBuf,
        /// The line, from 1.
        line: u64,
        /// The byte offset where the row starts.
        byte: u64,
        /// The row's `index` cell.
        index: String,
        /// What is wrong.
        fault: RowFault,
    },
    /// A file with a header and no rows.
    #[error("{}: no rows after the header", path.display())]
    Empty {
        /// The file.
        path: PathBuf,
    },
}

/// What is wrong with one row.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RowFault {
    /// An empty question.
    #[error("the question is empty")]
    EmptyQuestion,
    /// Fewer than two options with text.
    #[error("{0} options with text; a task needs two or more")]
    TooFewOptions(usize),
    /// An answer that is not one of the letters with text.
    #[error("answer {answer:?} is not one of the options {}", letters.join(", "))]
    UnknownAnswer {
        /// The answer cell.
        answer: String,
        /// The options' letters.
        letters: Vec<&'static str>,
    },
    /// An empty image cell.
    #[error("no image")]
    NoImage,
    /// An image cell that is not base64.
    #[error("image {image} is not base64 (at byte {byte} of it): {message}")]
    Base64 {
        /// The image, from 0.
        image: usize,
        /// The offset in the cell where decoding failed.
        byte: usize,
        /// The decoder's message.
        message: String,
    },
    /// A short image cell naming no row with an image of its own.
    #[error("image {reference:?} names no row with an image")]
    UnknownReference {
        /// The cell.
        reference: String,
    },
    /// The same index in two rows.
    #[error("index {0:?} is also an earlier row's")]
    DuplicateIndex(String),
    /// A cell holding the image marker, which only images may take.
    #[error("{0} holds {IMAGE_MARKER:?}, which marks where an image goes")]
    Marker(String),
    /// A JSON line without a key every row needs.
    #[error("no {0:?} key")]
    MissingKey(&'static str),
    /// An image file a JSON line names that cannot be read.
    #[error("image file {file:?}: {message}")]
    ImageFile {
        /// The path, as the line gives it.
        file: String,
        /// Why.
        message: String,
    },
}

/// Whether `path` names a file of image tasks, by its extension: VLMEvalKit's
/// TSV (`.tsv`) or the JSON Lines form (`.jsonl`).
pub fn is_vqa_file(path: &Path) -> bool {
    path.extension().is_some_and(|e| e.eq_ignore_ascii_case("tsv") || e.eq_ignore_ascii_case("jsonl"))
}

/// Reads a file of image tasks: VLMEvalKit's TSV, or with the extension
/// `.jsonl` the JSON Lines form ([`parse_vqa_jsonl`]); every row a task, or
/// the first fault, named by line and byte.
pub fn read_vqa(path: &Path) -> Result<Vec<VqaTask>, VqaError> {
    let bytes = std::fs::read(path).map_err(|source| VqaError::Read { path: path.to_owned(), source })?;
    parse_vqa(&bytes, path)
}

/// [`read_vqa`] of bytes in memory, read as `path`'s extension says.
pub fn parse_vqa(bytes: &[u8], path: &Path) -> Result<Vec<VqaTask>, VqaError> {
    if path.extension().is_some_and(|e| e.eq_ignore_ascii_case("jsonl")) {
        parse_vqa_jsonl(bytes, path)
    } else {
        parse_vqa_tsv(bytes, path)
    }
}

/// A row's image cell: base64 (or a reference, or a list), or the files a
/// JSON line names, read.
enum ImageCell {
    Base64(String),
    Files(Vec<Arc<[u8]>>),
}

/// A row, read, before references to other rows' images are resolved.
struct Row {
    line: u64,
    byte: u64,
    task: VqaTask,
    reference: Option<String>,
}

/// What pandas' `read_csv` reads as a missing value (its default `na_values`),
/// as VLMEvalKit reads a TSV: an option or hint cell holding one is no option or hint.
const PANDAS_NA: [&str; 19] = [
    "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None",
    "n/a", "nan", "null", "",
];

/// A row's task from its cells: `get` gives a column's cell ("" where empty
/// or absent), `others` the cells of the columns that are not the task's.
fn row(get: &dyn Fn(&str) -> String, others: BTreeMap<String, String>, image: ImageCell, line: u64, byte: u64) -> Result<Row, RowFault> {
    let index = get("index");
    let question = get("question");
    if question.trim().is_empty() {
        return Err(RowFault::EmptyQuestion);
    }
    let present = |cell: String| Some(cell).filter(|c| !PANDAS_NA.contains(&c.as_str()));
    let options: Vec<(&'static str, String)> = LETTERS.iter().filter_map(|&l| Some((l, present(get(l))?))).collect();
    // The marker in a row's text would take the place of an image.
    if let Some(column) = ["question", "hint"].into_iter().chain(LETTERS).find(|c| get(c).contains(IMAGE_MARKER)) {
        return Err(RowFault::Marker(column.to_owned()));
    }
    if options.len() < 2 {
        return Err(RowFault::TooFewOptions(options.len()));
    }
    let letters: Vec<&'static str> = options.iter().map(|(l, _)| *l).collect();
    let answer = get("answer").trim().to_owned();
    let gold = letters.iter().position(|l| *l == answer).ok_or_else(|| RowFault::UnknownAnswer { answer, letters: letters.clone() })?;
    let (images, reference) = match image {
        ImageCell::Files(images) => (images, None),
        ImageCell::Base64(cell) if cell.trim().is_empty() => return Err(RowFault::NoImage),
        ImageCell::Base64(cell) if cell.trim().len() <= MAX_REFERENCE => (Vec::new(), Some(cell.trim().to_owned())),
        ImageCell::Base64(cell) => (decode_images(cell.trim())?, None),
    };
    let hint = present(get("hint"));
    // The images' lines go before the hint once references are resolved.
    let mut context = preamble(0, hint.as_deref());
    context.push_str(&format!("Question: {question}\nOptions:\n"));
    for (letter, text) in &options {
        context.push_str(&format!("{letter}. {text}\n"));
    }
    context.push_str(INSTRUCTION);
    context.push_str("Answer:");
    let task = VqaTask {
        index,
        line,
        context,
        question,
        hint,
        options: options.into_iter().map(|(_, t)| t).collect(),
        letters,
        gold,
        images,
        categories: others.into_iter().filter(|(_, v)| !v.is_empty()).collect(),
    };
    Ok(Row { line, byte, task, reference })
}

/// The columns a row's task is made of; the rest are its categories.
const TASK_COLUMNS: [&str; 5] = ["index", "question", "hint", "answer", "image"];

/// [`read_vqa`] of a TSV in memory (`path` names it in errors).
pub fn parse_vqa_tsv(bytes: &[u8], path: &Path) -> Result<Vec<VqaTask>, VqaError> {
    let mut reader = csv::ReaderBuilder::new().delimiter(b'\t').has_headers(true).from_reader(bytes);
    let syntax = |e: csv::Error| {
        let (line, byte) = e.position().map_or((0, 0), |p| (p.line(), p.byte()));
        VqaError::Syntax { path: path.to_owned(), line, byte, message: e.to_string() }
    };
    let header = reader.headers().map_err(syntax)?.clone();
    for column in ["index", "question", "answer", "image"] {
        if !header.iter().any(|h| h == column) {
            return Err(VqaError::MissingColumn { path: path.to_owned(), column });
        }
    }
    let mut rows = Vec::new();
    for record in reader.records() {
        let record = record.map_err(syntax)?;
        let (line, byte) = record.position().map_or((0, 0), |p| (p.line(), p.byte()));
        let get = |name: &str| header.iter().position(|h| h == name).and_then(|c| record.get(c)).unwrap_or("").to_owned();
        let others = header
            .iter()
            .zip(record.iter())
            .filter(|(h, _)| !TASK_COLUMNS.contains(h) && !LETTERS.contains(h))
            .map(|(h, v)| (h.to_owned(), v.to_owned()))
            .collect();
        let task = row(&get, others, ImageCell::Base64(get("image")), line, byte).map_err(|fault| VqaError::Row {
            path: path.to_owned(),
            line,
            byte,
            index: get("index"),
            fault,
        })?;
        rows.push(task);
    }
    resolve(rows, path)
}

/// [`read_vqa`] of the JSON Lines form in memory (`path` names it in errors,
/// and image paths are relative to its folder): one object a line with the
/// TSV's columns as keys (`index`, `question`, `hint`, `A`, `B`, ...,
/// `answer`, and any others), strings or numbers, and either `image` (base64,
/// as in the TSV) or `image_path`, a file or a list of files. Blank lines are
/// skipped.
pub fn parse_vqa_jsonl(bytes: &[u8], path: &Path) -> Result<Vec<VqaTask>, VqaError> {
    let folder = path.parent().unwrap_or(Path::new(""));
    let mut rows = Vec::new();
    let mut byte = 0u64;
    for (number, line) in bytes.split(|&b| b == b'\n').enumerate() {
        let (line_number, start) = (number as u64 + 1, byte);
        byte += line.len() as u64 + 1;
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let syntax = |message: String| VqaError::Syntax { path: path.to_owned(), line: line_number, byte: start, message };
        let object: serde_json::Map<String, serde_json::Value> = serde_json::from_slice(line).map_err(|e| syntax(e.to_string()))?;
        let text = |v: &serde_json::Value| match v {
            serde_json::Value::String(s) => Some(s.clone()),
            serde_json::Value::Number(n) => Some(n.to_string()),
            serde_json::Value::Null => Some(String::new()),
            _ => None,
        };
        let get = |name: &str| object.get(name).and_then(text).unwrap_or_default();
        let fault = |fault: RowFault| VqaError::Row { path: path.to_owned(), line: line_number, byte: start, index: get("index"), fault };
        for key in ["index", "question", "answer"] {
            if !object.contains_key(key) {
                return Err(fault(RowFault::MissingKey(key)));
            }
        }
        let image = match (object.get("image"), object.get("image_path")) {
            (_, Some(paths)) => {
                let paths: Vec<String> = match paths {
                    serde_json::Value::Array(list) => list.iter().filter_map(text).collect(),
                    other => text(other).into_iter().collect(),
                };
                if paths.is_empty() || paths.iter().any(String::is_empty) {
                    return Err(fault(RowFault::NoImage));
                }
                let read = |p: &String| {
                    std::fs::read(folder.join(p))
                        .map(Arc::from)
                        .map_err(|e| RowFault::ImageFile { file: p.clone(), message: e.to_string() })
                };
                ImageCell::Files(paths.iter().map(read).collect::<Result<_, _>>().map_err(fault)?)
            }
            (Some(cell), None) => ImageCell::Base64(text(cell).unwrap_or_default()),
            (None, None) => return Err(fault(RowFault::MissingKey("image_path"))),
        };
        let others = object
            .iter()
            .filter(|(k, _)| !TASK_COLUMNS.contains(&k.as_str()) && k.as_str() != "image_path" && !LETTERS.contains(&k.as_str()))
            .filter_map(|(k, v)| Some((k.clone(), text(v)?)))
            .collect();
        rows.push(row(&get, others, image, line_number, start).map_err(fault)?);
    }
    resolve(rows, path)
}

/// The rows' tasks, each reference to another row's image resolved; a file
/// without rows, or an index given twice, refused.
fn resolve(mut rows: Vec<Row>, path: &Path) -> Result<Vec<VqaTask>, VqaError> {
    if rows.is_empty() {
        return Err(VqaError::Empty { path: path.to_owned() });
    }
    let fault = |row: &Row, fault: RowFault| VqaError::Row {
        path: path.to_owned(),
        line: row.line,
        byte: row.byte,
        index: row.task.index.clone(),
        fault,
    };
    let mut by_index: BTreeMap<String, usize> = BTreeMap::new();
    for (i, row) in rows.iter().enumerate() {
        if by_index.insert(row.task.index.clone(), i).is_some() {
            return Err(fault(row, RowFault::DuplicateIndex(row.task.index.clone())));
        }
    }
    for i in 0..rows.len() {
        if let Some(reference) = rows[i].reference.clone() {
            let Some(images) = by_index.get(&reference).map(|&j| rows[j].task.images.clone()).filter(|images| !images.is_empty()) else {
                return Err(fault(&rows[i], RowFault::UnknownReference { reference }));
            };
            rows[i].task.images = images;
        }
    }
    Ok(rows
        .into_iter()
        .map(|mut row| {
            row.task.context.insert_str(0, &preamble(row.task.images.len(), None));
            row.task
        })
        .collect())
}

/// What goes before a row's question: `images` markers, each on a line of
/// its own, then its hint, as VLMEvalKit lays them out (the prompt of every
/// VQA task, and of every format a sweep renders).
pub fn preamble(images: usize, hint: Option<&str>) -> String {
    let mut text = format!("{IMAGE_MARKER}\n").repeat(images);
    if let Some(hint) = hint {
        text.push_str(&format!("Hint: {hint}\n"));
    }
    text
}

/// An image cell's images: one base64 string, or a Python list of them.
fn decode_images(cell: &str) -> Result<Vec<Arc<[u8]>>, RowFault> {
    let parts: Vec<&str> = match cell.strip_prefix('[').and_then(|c| c.strip_suffix(']')) {
        Some(list) => list.split(',').map(|p| p.trim().trim_matches(|c| c == '\'' || c == '"')).collect(),
        None => vec![cell],
    };
    parts
        .iter()
        .enumerate()
        .map(|(image, part)| {
            base64::engine::general_purpose::STANDARD.decode(part).map(Arc::from).map_err(|e| {
                let byte = match e {
                    base64::DecodeError::InvalidByte(at, _) | base64::DecodeError::InvalidLastSymbol(at, _) => at,
                    _ => part.len(),
                };
                RowFault::Base64 { image, byte, message: e.to_string() }
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b64(bytes: &[u8]) -> String {
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    fn parse(text: &str) -> Result<Vec<VqaTask>, VqaError> {
        parse_vqa_tsv(text.as_bytes(), Path::new("set.tsv"))
    }

    /// Bytes standing for an image (the reader does not decode images: the engine does).
    fn image(n: u8) -> Vec<u8> {
        (0..100).map(|i| i ^ n).collect()
    }

    #[test]
    fn rows_in_vlmevalkits_layout_become_its_prompts() {
        let (one, two) = (b64(&image(1)), b64(&image(2)));
        let text = format!(
            "index\tquestion\thint\tA\tB\tC\tD\tanswer\tcategory\tl2-category\timage\n\
             0\tWhat is shown?\tA \"quoted\" hint\tcat\tdog\t\t\tB\tanimals\tperception\t{one}\n\
             1\tWhich one?\tNaN\tred\tgreen\tblue\tyellow\tD\tcolours\t\t0\n\
             2\t\"Two\tlines,\nquoted\"\t\tx\ty\t\tz\tD\tmisc\t\t['{one}', '{two}']\n"
        );
        let tasks = parse(&text).unwrap();
        assert_eq!(tasks.len(), 3);
        let t = &tasks[0];
        assert_eq!(
            t.context,
            "<__media__>\nHint: A \"quoted\" hint\nQuestion: What is shown?\nOptions:\nA. cat\nB. dog\n\
             Please select the correct answer from the options above. \nAnswer:"
        );
        assert_eq!((t.letters.clone(), t.gold), (vec!["A", "B"], 1));
        assert_eq!(t.images, vec![Arc::from(image(1))]);
        assert_eq!(t.categories, BTreeMap::from([("category".into(), "animals".into()), ("l2-category".into(), "perception".into())]));
        // No hint; an image shared by index; an option column left empty is no option.
        assert!(tasks[1].context.starts_with("<__media__>\nQuestion: Which one?\n"), "{}", tasks[1].context);
        assert!(Arc::ptr_eq(&tasks[1].images[0], &tasks[0].images[0]));
        assert_eq!((tasks[2].letters.clone(), tasks[2].gold), (vec!["A", "B", "D"], 2));
        assert!(tasks[2].context.starts_with("<__media__>\n<__media__>\nQuestion: Two\tlines,\nquoted\n"), "{}", tasks[2].context);
        assert_eq!(tasks[2].images.len(), 2);
    }

    #[test]
    fn every_fault_names_its_line_and_byte() {
        let img = b64(&image(1));
        let head = "index\tquestion\tA\tB\tanswer\timage\n";
        let fault = |body: &str| match parse(&format!("{head}{body}")).unwrap_err() {
            VqaError::Row { line, byte, fault, .. } => (line, byte, fault),
            other => panic!("{other}"),
        };
        let ok = format!("0\tq\ta\tb\tA\t{img}\n");
        assert_eq!(
            fault(&format!("{ok}1\tq\ta\tb\tC\t{img}\n")),
            (3, (head.len() + ok.len()) as u64, RowFault::UnknownAnswer { answer: "C".into(), letters: vec!["A", "B"] })
        );
        assert_eq!(fault(&format!("0\t \ta\tb\tA\t{img}\n")).2, RowFault::EmptyQuestion);
        assert_eq!(fault(&format!("0\tq\ta\t\tA\t{img}\n")).2, RowFault::TooFewOptions(1));
        // pandas reads "None" (and its other missing values) as no option, as VLMEvalKit does.
        assert_eq!(fault(&format!("0\tq\ta\tNone\tA\t{img}\n")).2, RowFault::TooFewOptions(1));
        assert_eq!(fault(&format!("0\tsee <__media__>\ta\tb\tA\t{img}\n")).2, RowFault::Marker("question".into()));
        assert_eq!(fault("0\tq\ta\tb\tA\t\n").2, RowFault::NoImage);
        assert_eq!(fault("0\tq\ta\tb\tA\t7\n").2, RowFault::UnknownReference { reference: "7".into() });
        assert_eq!(fault(&format!("{ok}0\tq\ta\tb\tA\t{img}\n")).2, RowFault::DuplicateIndex("0".into()));
        let corrupt = format!("{}!{}", &img[..70], &img[71..]);
        assert!(matches!(fault(&format!("0\tq\ta\tb\tA\t{corrupt}\n")).2, RowFault::Base64 { image: 0, byte: 70, .. }));
        // The header and the TSV's own syntax.
        assert!(matches!(
            parse("index\tquestion\tA\tB\tanswer\n0\tq\ta\tb\tA\n").unwrap_err(),
            VqaError::MissingColumn { column: "image", .. }
        ));
        assert!(matches!(parse(head).unwrap_err(), VqaError::Empty { .. }));
        let error = parse(&format!("{head}0\tq\ta\tb\n")).unwrap_err();
        assert!(matches!(error, VqaError::Syntax { line: 2, .. }), "{error}");
    }

    #[test]
    fn the_json_lines_form_names_image_files_beside_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("img")).unwrap();
        std::fs::write(dir.path().join("img/a.png"), image(1)).unwrap();
        std::fs::write(dir.path().join("img/b.png"), image(2)).unwrap();
        let path = dir.path().join("set.jsonl");
        let coded = format!(r#"{{"index": 2, "question": "Coded?", "A": "x", "B": "y", "answer": "A", "image": "{}"}}"#, b64(&image(3)));
        let text = [
            r#"{"index": 0, "question": "What?", "A": "x", "B": "y", "answer": "B", "image_path": "img/a.png", "category": "c1"}"#,
            "",
            r#"{"index": "1", "question": "Both?", "hint": "h", "A": "x", "B": "y", "C": null, "answer": "A", "image_path": ["img/a.png", "img/b.png"]}"#,
            &coded,
        ]
        .join("\n");
        std::fs::write(&path, &text).unwrap();
        let tasks = read_vqa(&path).unwrap();
        assert_eq!(tasks.len(), 3);
        assert_eq!((tasks[0].index.as_str(), tasks[0].gold, tasks[0].images.clone()), ("0", 1, vec![Arc::from(image(1))]));
        assert_eq!(tasks[0].categories, BTreeMap::from([("category".into(), "c1".into())]));
        assert_eq!((tasks[1].line, tasks[1].images.len(), tasks[1].letters.clone()), (3, 2, vec!["A", "B"]));
        assert!(tasks[1].context.starts_with("<__media__>\n<__media__>\nHint: h\nQuestion: Both?\n"), "{}", tasks[1].context);
        assert_eq!(tasks[2].images, vec![Arc::from(image(3))]);
        // A file that is not there, a key missing, a line that is no JSON: each by line and byte.
        let fault = |line: &str| {
            std::fs::write(&path, format!("{line}\n")).unwrap();
            read_vqa(&path).unwrap_err()
        };
        let error = fault(r#"{"index": 0, "question": "q", "A": "x", "B": "y", "answer": "A", "image_path": "img/none.png"}"#);
        assert!(
            matches!(&error, VqaError::Row { line: 1, byte: 0, fault: RowFault::ImageFile { file, .. }, .. } if file == "img/none.png"),
            "{error}"
        );
        let error = fault(r#"{"index": 0, "A": "x", "B": "y", "answer": "A", "image_path": "img/a.png"}"#);
        assert!(matches!(error, VqaError::Row { fault: RowFault::MissingKey("question"), .. }), "{error}");
        assert!(matches!(fault("{not json"), VqaError::Syntax { line: 1, byte: 0, .. }));
    }
}
