//! Borrowed views of one task: the strings point into the file's bytes.

/// An option list with its parallel label array (the layout of mc1 and mc2).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Choices<'a> {
    /// The options, in file order.
    pub options: Vec<&'a str>,
    /// One per option: 1 for a correct one, else 0 (a lenient read keeps
    /// whatever the file holds).
    pub labels: Vec<i32>,
}

impl<'a> Choices<'a> {
    /// Options with exactly one gold answer, as every valid mc1 has.
    pub(crate) fn with_gold(options: Vec<&'a str>, gold: usize) -> Self {
        let labels = (0..options.len()).map(|k| i32::from(k == gold)).collect();
        Choices { options, labels }
    }
}

/// Where an image goes in a task's context (llama.cpp's multimodal
/// library's default marker): the engine decodes the task's images there,
/// and a reader of image benchmarks writes it there.
pub const IMAGE_MARKER: &str = "<__media__>";

/// One multiple-choice task: the prompt scaffold lives in `question`, the
/// options are bare continuations of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Task<'a> {
    /// The prompt, scaffold included, that every option continues.
    pub question: &'a str,
    /// The options llama.cpp scores, with their labels.
    pub mc1: Choices<'a>,
    /// Ignored by llama.cpp; kept so that read → write is byte-identical.
    pub mc2: Choices<'a>,
}

impl<'a> Task<'a> {
    /// A task with the given gold option and an empty mc2, as mcscore writes them.
    pub fn new(question: &'a str, options: Vec<&'a str>, gold: usize) -> Self {
        Task { question, mc1: Choices::with_gold(options, gold), mc2: Choices::default() }
    }

    /// The options scored (mc1's), in file order.
    pub fn options(&self) -> &[&'a str] {
        &self.mc1.options
    }

    /// The first option whose label is 1. Strictly valid tasks have exactly one.
    pub fn gold(&self) -> Option<usize> {
        self.mc1.labels.iter().position(|&l| l == 1)
    }

    /// Whether option `k` counts as correct, by llama.cpp's rule (its label is 1).
    pub fn is_correct(&self, k: usize) -> bool {
        self.mc1.labels.get(k) == Some(&1)
    }

    /// The bytes this task takes in a file.
    pub fn encoded_len(&self) -> usize {
        let choices = |c: &Choices<'_>| 4 + c.options.iter().map(|o| 4 + o.len()).sum::<usize>() + 4 * c.labels.len();
        4 + self.question.len() + choices(&self.mc1) + choices(&self.mc2)
    }

    /// Appends the task's on-disk encoding to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        use byteorder::{WriteBytesExt, LE};
        // Writes to a Vec cannot fail.
        fn string(out: &mut Vec<u8>, s: &str) {
            // wraps past 4 GiB, but TaskWriter never commits that: the file would pass 4 GiB, which finish refuses
            out.write_u32::<LE>(s.len() as u32).expect("write to Vec");
            out.extend_from_slice(s.as_bytes());
        }
        fn choices(out: &mut Vec<u8>, c: &Choices<'_>) {
            // wraps past u32::MAX options, but TaskWriter never commits that: the file would pass 4 GiB
            out.write_u32::<LE>(c.options.len() as u32).expect("write to Vec");
            for option in &c.options {
                string(out, option);
            }
            for label in &c.labels {
                out.write_i32::<LE>(*label).expect("write to Vec");
            }
        }
        string(out, self.question);
        choices(out, &self.mc1);
        choices(out, &self.mc2);
    }
}

/// The option-ID families a letter-mode file may use (docs/methods.md, prompt formats).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IdSet {
    /// A, B, C, …
    Upper,
    /// a, b, c, …
    Lower,
    /// 1, 2, 3, …
    Digit,
    /// I, II, III, …
    Roman,
}

impl IdSet {
    /// Every family, in declaration order.
    pub const ALL: [IdSet; 4] = [IdSet::Upper, IdSet::Lower, IdSet::Digit, IdSet::Roman];

    /// The ID of position `k` (0-based), if the family has one.
    pub fn id(self, k: usize) -> Option<String> {
        match self {
            IdSet::Upper => (k < 26).then(|| char::from(b'A' + k as u8).to_string()),
            IdSet::Lower => (k < 26).then(|| char::from(b'a' + k as u8).to_string()),
            IdSet::Digit => Some((k + 1).to_string()),
            IdSet::Roman => roman(k + 1),
        }
    }

    /// Whether `options` are exactly this family's first IDs, in order.
    pub fn matches(self, options: &[&str]) -> bool {
        options.iter().enumerate().all(|(k, o)| self.id(k).as_deref() == Some(*o))
    }
}

fn roman(mut n: usize) -> Option<String> {
    if n == 0 || n > 3999 {
        return None;
    }
    const DIGITS: [(usize, &str); 13] = [
        (1000, "M"),
        (900, "CM"),
        (500, "D"),
        (400, "CD"),
        (100, "C"),
        (90, "XC"),
        (50, "L"),
        (40, "XL"),
        (10, "X"),
        (9, "IX"),
        (5, "V"),
        (4, "IV"),
        (1, "I"),
    ];
    let mut out = String::new();
    for (value, digits) in DIGITS {
        while n >= value {
            out.push_str(digits);
            n -= value;
        }
    }
    Some(out)
}

/// How a file's options relate to its prompts (docs/formats.md, `mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Options are bare IDs (A, B, C, …) listed in the question.
    Letter,
    /// Options are the answer texts themselves.
    Text,
}

impl Mode {
    /// Letter when the task's options are the bare IDs of one family, in order.
    pub fn of_task(task: &Task<'_>) -> Mode {
        if IdSet::ALL.iter().any(|set| set.matches(task.options())) {
            Mode::Letter
        } else {
            Mode::Text
        }
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Mode::Letter => "letter",
            Mode::Text => "text",
        })
    }
}
