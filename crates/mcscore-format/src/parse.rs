//! The one parser behind strict validation, the lenient reader, task views and
//! the writer's self-check, so that all four agree on what a task is.

use byteorder::{ByteOrder, LittleEndian};

use crate::fault::{Fault, Field};
use crate::task::{Choices, Task};
use crate::MAX_OPTIONS;

/// What parsing one task at a known start produced.
pub(crate) struct ParsedTask<'a> {
    /// Where the task ends, if its structure could be followed to the end.
    pub end: Option<usize>,
    /// The task, if its structure was followed and every string is UTF-8.
    pub task: Option<Task<'a>>,
    /// How far parsing read, whether or not it reached the end.
    pub reached: usize,
}

/// Reads length-prefixed fields of one task, recording faults as it goes.
struct Cursor<'a, 'f> {
    bytes: &'a [u8],
    pos: usize,
    task: usize,
    faults: &'f mut Vec<Fault>,
    /// Set when a string is not UTF-8: the structure is still followed, but no
    /// `Task` can be handed out.
    bad_text: bool,
}

/// The structure ran past the end of the file; the fault is already recorded.
struct PastEnd;

impl<'a> Cursor<'a, '_> {
    fn len(&self) -> u64 {
        self.bytes.len() as u64
    }

    fn word(&mut self, field: Field) -> Result<&'a [u8], PastEnd> {
        let at = self.pos;
        match at.checked_add(4).and_then(|end| self.bytes.get(at..end)) {
            Some(word) => {
                self.pos = at + 4;
                Ok(word)
            }
            None => {
                self.faults.push(Fault::CountPastEnd { task: self.task, field, at: at as u64, len: self.len() });
                Err(PastEnd)
            }
        }
    }

    fn u32(&mut self, field: Field) -> Result<u32, PastEnd> {
        self.word(field).map(LittleEndian::read_u32)
    }

    fn i32(&mut self, field: Field) -> Result<i32, PastEnd> {
        self.word(field).map(LittleEndian::read_i32)
    }

    /// A `u32` length then that many bytes of UTF-8. Returns the string (empty
    /// when it is not UTF-8, with a fault recorded) and the offset of its length.
    fn string(&mut self, field: Field) -> Result<(&'a str, u64), PastEnd> {
        let at = self.pos as u64;
        let claimed = self.u32(field)? as usize;
        let start = self.pos;
        let Some(raw) = start.checked_add(claimed).and_then(|end| self.bytes.get(start..end)) else {
            self.faults.push(Fault::StringPastEnd { task: self.task, field, at, claimed: claimed as u64, len: self.len() });
            return Err(PastEnd);
        };
        self.pos = start + claimed;
        match std::str::from_utf8(raw) {
            Ok(text) => Ok((text, at)),
            Err(e) => {
                self.faults.push(Fault::InvalidUtf8 { task: self.task, field, at: (start + e.valid_up_to()) as u64 });
                self.bad_text = true;
                Ok(("", at))
            }
        }
    }

    /// An option count, its strings and its labels (the layout mc1 and mc2 share).
    fn choices(&mut self, mc2: bool) -> Result<Choices<'a>, PastEnd> {
        let (count_field, option_field, label_field) = if mc2 {
            (Field::Mc2OptionCount, Field::Mc2Option as fn(usize) -> Field, Field::Mc2Label as fn(usize) -> Field)
        } else {
            (Field::OptionCount, Field::Option as fn(usize) -> Field, Field::Label as fn(usize) -> Field)
        };
        let count_at = self.pos as u64;
        let count = self.u32(count_field)?;
        if count as usize > MAX_OPTIONS {
            let fault = if mc2 {
                Fault::Mc2TooManyOptions { task: self.task, at: count_at, count }
            } else {
                Fault::TooManyOptions { task: self.task, at: count_at, count }
            };
            self.faults.push(fault);
        } else if count == 0 && !mc2 {
            self.faults.push(Fault::NoOptions { task: self.task, at: count_at });
        } else if count == 1 && !mc2 {
            self.faults.push(Fault::OneOption { task: self.task, at: count_at });
        }
        // Never trust `count` for an allocation: each option needs 4 bytes at least.
        let capacity = (count as usize).min(self.bytes.len().saturating_sub(self.pos) / 4);
        let mut options = Vec::with_capacity(capacity);
        for k in 0..count as usize {
            let (text, at) = self.string(option_field(k))?;
            if text.is_empty() && !self.bad_text {
                if mc2 {
                    self.faults.push(Fault::Mc2EmptyOption { task: self.task, option: k, at });
                } else {
                    self.faults.push(Fault::EmptyOption { task: self.task, option: k, at });
                }
            }
            options.push(text);
        }
        let labels_at = self.pos as u64;
        let mut labels = Vec::with_capacity(capacity);
        let mut all_binary = true;
        for k in 0..count as usize {
            let at = self.pos as u64;
            let value = self.i32(label_field(k))?;
            if value != 0 && value != 1 {
                all_binary = false;
                self.faults.push(if mc2 {
                    Fault::Mc2BadLabel { task: self.task, label: k, at, value }
                } else {
                    Fault::BadLabel { task: self.task, field: label_field(k), at, value }
                });
            }
            labels.push(value);
        }
        if !mc2 && count > 0 && all_binary {
            let gold = labels.iter().filter(|&&l| l == 1).count();
            if gold == 0 {
                self.faults.push(Fault::NoGoldLabel { task: self.task, at: labels_at });
            } else if gold > 1 {
                self.faults.push(Fault::SeveralGoldLabels { task: self.task, at: labels_at, count: gold });
            }
        }
        Ok(Choices { options, labels })
    }
}

/// Parses the task that starts at `start`, pushing every fault found onto `faults`.
pub(crate) fn parse_task<'a>(bytes: &'a [u8], start: usize, task: usize, faults: &mut Vec<Fault>) -> ParsedTask<'a> {
    let mut cursor = Cursor { bytes, pos: start, task, faults, bad_text: false };
    let parsed = (|| {
        let (question, at) = cursor.string(Field::Question)?;
        if question.is_empty() && !cursor.bad_text {
            cursor.faults.push(Fault::EmptyQuestion { task, at });
        }
        let mc1 = cursor.choices(false)?;
        // What the engine tokenises: question + " " + option.
        let longest = mc1.options.iter().map(|o| o.len()).max().unwrap_or(0);
        let bytes = question.len() + 1 + longest;
        if bytes > crate::MAX_TEXT_BYTES {
            cursor.faults.push(Fault::TextTooLong { task, at, bytes: bytes as u64 });
        }
        let mc2 = cursor.choices(true)?;
        Ok::<_, PastEnd>(Task { question, mc1, mc2 })
    })();
    match parsed {
        Ok(parsed) => ParsedTask { end: Some(cursor.pos), task: (!cursor.bad_text).then_some(parsed), reached: cursor.pos },
        Err(PastEnd) => ParsedTask { end: None, task: None, reached: cursor.pos },
    }
}

/// The validated header: the task count and where the offset table ends.
pub(crate) struct Header {
    pub n_tasks: usize,
    pub table_end: usize,
}

/// Checks the task count and that the offset table fits in the file.
pub(crate) fn parse_header(bytes: &[u8], faults: &mut Vec<Fault>) -> Option<Header> {
    let len = bytes.len() as u64;
    let Some(count) = bytes.get(0..4) else {
        faults.push(Fault::ShortHeader { len });
        return None;
    };
    let n_tasks = LittleEndian::read_u32(count);
    if n_tasks == 0 {
        faults.push(Fault::NoTasks);
        return None;
    }
    // u64 arithmetic: 4 + 4 * u32::MAX cannot overflow it.
    let needed = 4 + 4 * u64::from(n_tasks);
    if needed > len {
        faults.push(Fault::OffsetTableTruncated { n_tasks, needed, len });
        return None;
    }
    Some(Header { n_tasks: n_tasks as usize, table_end: needed as usize })
}

/// The offset stored for task `index` (the header must have been checked).
pub(crate) fn stored_offset(bytes: &[u8], index: usize) -> u64 {
    let at = 4 + 4 * index;
    u64::from(LittleEndian::read_u32(&bytes[at..at + 4]))
}

/// Strict validation of a whole file: every fault it can find, in file order.
pub fn validate(bytes: &[u8]) -> Vec<Fault> {
    let mut faults = Vec::new();
    let Some(header) = parse_header(bytes, &mut faults) else {
        return faults;
    };
    let len = bytes.len() as u64;
    let first = stored_offset(bytes, 0);
    if first != header.table_end as u64 {
        faults.push(Fault::FirstOffset { expected: header.table_end as u64, found: first });
    }
    // Where the previous task ended, when its structure could be followed.
    let mut previous_end = Some(header.table_end as u64);
    let mut previous_offset: Option<u64> = None;
    // Bytes up to here were parsed as part of some task. A task that starts
    // before it is reported but not parsed again, so that validation reads
    // each byte once: a table of equal offsets would otherwise re-parse the
    // same bytes once per task (quadratic in the file).
    let mut parsed_up_to = header.table_end as u64;
    for task in 0..header.n_tasks {
        let at = 4 + 4 * task as u64;
        let offset = stored_offset(bytes, task);
        if offset >= len {
            faults.push(Fault::OffsetOutOfBounds { task, at, offset, len });
            previous_end = None;
            continue;
        }
        match (previous_offset, previous_end) {
            (Some(previous), _) if offset < previous => {
                faults.push(Fault::OffsetBackwards { task, at, offset, previous });
            }
            (Some(_), Some(end)) if offset > end => {
                faults.push(Fault::Gap { task, offset, previous_end: end });
            }
            (Some(_), Some(end)) if offset < end => {
                faults.push(Fault::Overlap { task, offset, previous_end: end });
            }
            _ => {}
        }
        previous_offset = Some(offset);
        if offset < parsed_up_to && task > 0 {
            // Already read as (part of) an earlier task.
            previous_end = Some(parsed_up_to);
            continue;
        }
        let parsed = parse_task(bytes, offset as usize, task, &mut faults);
        previous_end = parsed.end.map(|e| e as u64);
        parsed_up_to = parsed_up_to.max(parsed.reached as u64);
    }
    if let Some(end) = previous_end {
        if end < len {
            faults.push(Fault::TrailingBytes { at: end, count: len - end });
        }
    }
    faults
}
