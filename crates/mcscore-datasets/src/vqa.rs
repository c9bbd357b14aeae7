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
}

/// Reads a VLMEvalKit multiple-choice TSV: every row a task, or the first
/// fault, named by line and byte.
pub fn read_vqa_tsv(path: &Path) -> Result<Vec<VqaTask>, VqaError> {
    let bytes = std::fs::read(path).map_err(|source| VqaError::Read { path: path.to_owned(), source })?;
    parse_vqa_tsv(&bytes, path)
}

/// [`read_vqa_tsv`] of bytes in memory (`path` names them in errors).
pub fn parse_vqa_tsv(bytes: &[u8], path: &Path) -> Result<Vec<VqaTask>, VqaError> {
    let mut reader = csv::ReaderBuilder::new().delimiter(b'\t').has_headers(true).from_reader(bytes);
    let syntax = |e: csv::Error| {
        let (line, byte) = e.position().map_or((0, 0), |p| (p.line(), p.byte()));
        VqaError::Syntax { path: path.to_owned(), line, byte, message: e.to_string() }
    };
    let header = reader.headers().map_err(syntax)?.clone();
    let column = |name: &'static str| header.iter().position(|h| h == name);
    let required = |name: &'static str| column(name).ok_or(VqaError::MissingColumn { path: path.to_owned(), column: name });
    let (index_col, question_col, answer_col, image_col) =
        (required("index")?, required("question")?, required("answer")?, required("image")?);
    let hint_col = column("hint");
    let option_cols: Vec<(&'static str, usize)> = LETTERS.iter().filter_map(|&l| column(l).map(|c| (l, c))).collect();
    let known: Vec<usize> = [Some(index_col), Some(question_col), Some(answer_col), Some(image_col), hint_col]
        .into_iter()
        .flatten()
        .chain(option_cols.iter().map(|&(_, c)| c))
        .collect();

    // Rows first, their image cells decoded once each; references resolved after.
    struct Row {
        line: u64,
        byte: u64,
        task: VqaTask,
        reference: Option<String>,
    }
    let mut rows: Vec<Row> = Vec::new();
    let mut by_index: BTreeMap<String, usize> = BTreeMap::new();
    for record in reader.records() {
        let record = record.map_err(syntax)?;
        let (line, byte) = record.position().map_or((0, 0), |p| (p.line(), p.byte()));
        let cell = |c: usize| record.get(c).unwrap_or("");
        let index = cell(index_col).to_owned();
        let fault = |fault: RowFault| VqaError::Row { path: path.to_owned(), line, byte, index: index.clone(), fault };
        if by_index.insert(index.clone(), rows.len()).is_some() {
            return Err(fault(RowFault::DuplicateIndex(index.clone())));
        }
        let question = cell(question_col);
        if question.trim().is_empty() {
            return Err(fault(RowFault::EmptyQuestion));
        }
        let options: Vec<(&'static str, &str)> = option_cols.iter().map(|&(l, c)| (l, cell(c))).filter(|(_, t)| !t.is_empty()).collect();
        if options.len() < 2 {
            return Err(fault(RowFault::TooFewOptions(options.len())));
        }
        let letters: Vec<&'static str> = options.iter().map(|(l, _)| *l).collect();
        let answer = cell(answer_col).trim();
        let gold = letters
            .iter()
            .position(|l| *l == answer)
            .ok_or_else(|| fault(RowFault::UnknownAnswer { answer: answer.to_owned(), letters: letters.clone() }))?;
        let image = cell(image_col).trim();
        let (images, reference) = if image.is_empty() {
            return Err(fault(RowFault::NoImage));
        } else if image.len() <= MAX_REFERENCE {
            (Vec::new(), Some(image.to_owned()))
        } else {
            (decode_images(image).map_err(fault)?, None)
        };
        let mut context = String::new();
        let hint = hint_col.map(cell).filter(|h| !h.is_empty());
        if let Some(hint) = hint {
            context.push_str(&format!("Hint: {hint}\n"));
        }
        context.push_str(&format!("Question: {question}\nOptions:\n"));
        for (letter, text) in &options {
            context.push_str(&format!("{letter}. {text}\n"));
        }
        context.push_str(INSTRUCTION);
        context.push_str("Answer:");
        let categories = header
            .iter()
            .enumerate()
            .filter(|(c, _)| !known.contains(c))
            .filter_map(|(c, name)| Some((name.to_owned(), record.get(c).filter(|v| !v.is_empty())?.to_owned())))
            .collect();
        let task = VqaTask {
            index,
            line,
            context,
            question: question.to_owned(),
            hint: hint.map(str::to_owned),
            options: options.iter().map(|(_, t)| (*t).to_owned()).collect(),
            letters,
            gold,
            images,
            categories,
        };
        rows.push(Row { line, byte, task, reference });
    }
    if rows.is_empty() {
        return Err(VqaError::Empty { path: path.to_owned() });
    }
    for i in 0..rows.len() {
        if let Some(reference) = rows[i].reference.clone() {
            let Some(images) = by_index.get(&reference).map(|&j| rows[j].task.images.clone()).filter(|images| !images.is_empty()) else {
                let row = &rows[i];
                return Err(VqaError::Row {
                    path: path.to_owned(),
                    line: row.line,
                    byte: row.byte,
                    index: row.task.index.clone(),
                    fault: RowFault::UnknownReference { reference },
                });
            };
            rows[i].task.images = images;
        }
    }
    Ok(rows
        .into_iter()
        .map(|mut row| {
            let markers: String = row.task.images.iter().map(|_| format!("{IMAGE_MARKER}\n")).collect();
            row.task.context.insert_str(0, &markers);
            row.task
        })
        .collect())
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
             1\tWhich one?\t\tred\tgreen\tblue\tyellow\tD\tcolours\t\t0\n\
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
}
