//! The prompt-format family ("Unexplored flaws in multiple-choice VQA",
//! 2025; docs/formats.md): option-ID set × delimiter × separator, 48 formats,
//! and cyclic rotations of the options. The letter scaffold (docs/datasets.md)
//! is the uppercase / dot / newline member, and `Scaffold::Letter` renders
//! through it.

use mcscore_format::{IdSet, Task};

use crate::item::Item;

/// How an option's ID is joined to its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Delimiter {
    /// `A: x`
    Colon,
    /// `A. x`
    Dot,
    /// `A) x`
    Paren,
    /// `(A) x`
    Parens,
}

/// What separates one option from the next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Separator {
    /// One option per line.
    Newline,
    /// `, `
    Comma,
    /// `; `
    Semicolon,
}

/// One of the 48 formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PromptFormat {
    /// How options are named (A, a, 1, I).
    pub ids: IdSet,
    /// How an ID is joined to its option.
    pub delimiter: Delimiter,
    /// What separates the options.
    pub separator: Separator,
}

impl Delimiter {
    /// Every delimiter, in the order the formats list them.
    pub const ALL: [Delimiter; 4] = [Delimiter::Colon, Delimiter::Dot, Delimiter::Paren, Delimiter::Parens];

    /// `id` with this delimiter, as it precedes the option text.
    pub fn label(self, id: &str) -> String {
        match self {
            Delimiter::Colon => format!("{id}:"),
            Delimiter::Dot => format!("{id}."),
            Delimiter::Paren => format!("{id})"),
            Delimiter::Parens => format!("({id})"),
        }
    }
}

impl Separator {
    /// Every separator, in the order the formats list them.
    pub const ALL: [Separator; 3] = [Separator::Newline, Separator::Comma, Separator::Semicolon];

    /// The text between two options.
    pub fn text(self) -> &'static str {
        match self {
            Separator::Newline => "\n",
            Separator::Comma => ", ",
            Separator::Semicolon => "; ",
        }
    }
}

impl PromptFormat {
    /// The letter scaffold of the committed letter-mode files.
    pub const SCAFFOLD: PromptFormat = PromptFormat { ids: IdSet::Upper, delimiter: Delimiter::Dot, separator: Separator::Newline };

    /// All 48, ID set outermost, then delimiter, then separator.
    pub fn all() -> Vec<PromptFormat> {
        IdSet::ALL
            .iter()
            .flat_map(|&ids| {
                Delimiter::ALL
                    .iter()
                    .flat_map(move |&delimiter| Separator::ALL.iter().map(move |&separator| PromptFormat { ids, delimiter, separator }))
            })
            .collect()
    }

    /// A short stable name, e.g. `upper.dot.newline`.
    pub fn name(&self) -> String {
        let ids = match self.ids {
            IdSet::Upper => "upper",
            IdSet::Lower => "lower",
            IdSet::Digit => "digit",
            IdSet::Roman => "roman",
        };
        let delimiter = match self.delimiter {
            Delimiter::Colon => "colon",
            Delimiter::Dot => "dot",
            Delimiter::Paren => "paren",
            Delimiter::Parens => "parens",
        };
        let separator = match self.separator {
            Separator::Newline => "newline",
            Separator::Comma => "comma",
            Separator::Semicolon => "semicolon",
        };
        format!("{ids}.{delimiter}.{separator}")
    }

    pub(crate) fn ids(&self, k: usize) -> Option<Vec<String>> {
        (0..k).map(|i| self.ids.id(i)).collect()
    }

    /// The question and options of `item` with its options rotated left by
    /// `rotation` (the option at position `rotation` comes first), and the
    /// gold's new position. With `instruction`, a line after the options names
    /// the IDs.
    /// `None` when the ID set has no ID for some position (over 26 letters).
    pub fn render(&self, item: &Item, rotation: usize, instruction: bool) -> Option<(String, Vec<String>, usize)> {
        let k = item.options.len();
        let ids = self.ids(k)?;
        let rotation = rotation % k.max(1);
        // k >= 1: a converted item, or one parsed back from a task, has a gold among its options
        let options: Vec<&String> = (0..k).map(|i| &item.options[(i + rotation) % k]).collect();
        let gold = (item.gold + k - rotation) % k;
        let mut question = String::from("Question: ");
        question.push_str(&item.stem);
        question.push('\n');
        let listed: Vec<String> = ids.iter().zip(options).map(|(id, o)| format!("{} {o}", self.delimiter.label(id))).collect();
        question.push_str(&listed.join(self.separator.text()));
        if instruction {
            // After the options, as LLaVA-style prompts put it, so that every
            // format still shares the question stem's evaluation.
            let (last, rest) = ids.split_last()?;
            let named = if rest.is_empty() { last.clone() } else { format!("{} or {last}", rest.join(", ")) };
            question.push_str(&format!("\nAnswer with the option's label: {named}."));
        }
        question.push_str("\nAnswer:");
        Some((question, ids, gold))
    }
}

/// Parses a task written in the letter scaffold back into its item; `None`
/// unless re-rendering the item gives the task back exactly.
pub fn parse_letter_task(task: &Task<'_>) -> Option<Item> {
    let k = task.options().len();
    let gold = task.gold()?;
    let ids = PromptFormat::SCAFFOLD.ids(k)?;
    if task.options() != ids.iter().map(String::as_str).collect::<Vec<_>>() {
        return None;
    }
    let body = task.question.strip_prefix("Question: ")?.strip_suffix("\nAnswer:")?;
    // Option lines are found from the end, so the stem may hold newlines.
    let mut end = body.len();
    let mut options = vec![String::new(); k];
    for i in (0..k).rev() {
        let marker = format!("\n{}. ", ids[i]);
        let at = body[..end].rfind(&marker)?;
        options[i] = body[at + marker.len()..end].to_owned();
        end = at;
    }
    let item = Item { passage: None, stem: body[..end].to_owned(), options, gold };
    let (question, _, _) = PromptFormat::SCAFFOLD.render(&item, 0, false)?;
    (question == task.question).then_some(item)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item() -> Item {
        Item { passage: None, stem: "2+2?".into(), options: ["3", "4", "5", "6"].map(String::from).to_vec(), gold: 1 }
    }

    #[test]
    fn forty_eight_distinct_formats() {
        let all = PromptFormat::all();
        assert_eq!(all.len(), 48);
        let names: std::collections::HashSet<String> = all.iter().map(PromptFormat::name).collect();
        assert_eq!(names.len(), 48);
    }

    #[test]
    fn the_scaffold_member_is_task_format_md_letter_mode() {
        let (q, o, g) = PromptFormat::SCAFFOLD.render(&item(), 0, false).unwrap();
        assert_eq!(q, "Question: 2+2?\nA. 3\nB. 4\nC. 5\nD. 6\nAnswer:");
        assert_eq!((o, g), (vec!["A".into(), "B".into(), "C".into(), "D".into()], 1));
    }

    #[test]
    fn every_format_renders_exactly() {
        let f = PromptFormat { ids: IdSet::Roman, delimiter: Delimiter::Parens, separator: Separator::Semicolon };
        let (q, o, _) = f.render(&item(), 0, true).unwrap();
        assert_eq!(q, "Question: 2+2?\n(I) 3; (II) 4; (III) 5; (IV) 6\nAnswer with the option's label: I, II, III or IV.\nAnswer:");
        assert_eq!(o, ["I", "II", "III", "IV"]);
        let f = PromptFormat { ids: IdSet::Lower, delimiter: Delimiter::Colon, separator: Separator::Comma };
        assert_eq!(f.render(&item(), 0, false).unwrap().0, "Question: 2+2?\na: 3, b: 4, c: 5, d: 6\nAnswer:");
        let f = PromptFormat { ids: IdSet::Digit, delimiter: Delimiter::Paren, separator: Separator::Newline };
        assert_eq!(f.render(&item(), 0, false).unwrap().0, "Question: 2+2?\n1) 3\n2) 4\n3) 5\n4) 6\nAnswer:");
    }

    #[test]
    fn rotation_keeps_the_gold_option() {
        for format in PromptFormat::all() {
            for rotation in 0..4 {
                let (q, ids, gold) = format.render(&item(), rotation, false).unwrap();
                let expected = format!("{} 4", format.delimiter.label(&ids[gold]));
                assert!(q.contains(&expected), "{} rotation {rotation}: {q}", format.name());
            }
        }
        // Rotation 1 puts the old second option first.
        let (q, _, gold) = PromptFormat::SCAFFOLD.render(&item(), 1, false).unwrap();
        assert_eq!((q.as_str(), gold), ("Question: 2+2?\nA. 4\nB. 5\nC. 6\nD. 3\nAnswer:", 0));
    }

    #[test]
    fn letter_tasks_parse_back_and_others_are_refused() {
        let multi_line = Item { stem: "Read this.\nB. is not an option\nWhich?".into(), ..item() };
        let (q, o, g) = PromptFormat::SCAFFOLD.render(&multi_line, 0, false).unwrap();
        let task = Task::new(&q, o.iter().map(String::as_str).collect(), g);
        assert_eq!(parse_letter_task(&task), Some(multi_line));
        let text = Task::new("Question: \"2+2?\" Answer:", vec!["3", "4"], 1);
        assert_eq!(parse_letter_task(&text), None);
        let other = Task::new("Question: 2+2?\nA) 3\nB) 4\nAnswer:", vec!["A", "B"], 1);
        assert_eq!(parse_letter_task(&other), None);
    }
}
