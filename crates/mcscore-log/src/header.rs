//! The header, a log's first line: what pins a run (inputs, mode, settings,
//! shard, sequential comparison, chat template), the format version, and the
//! one migration that reads a header of any version.

use serde::{Deserialize, Serialize};

/// Which of llama-perplexity's multiple-choice modes a job is: what its file
/// holds, how its tasks are picked and what of each option is scored.
/// Written by its [`TaskKind::name`], llama-perplexity's flag without its
/// dashes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TaskKind {
    /// A task file (`.bin`, `--multiple-choice`): `question + " " + option`,
    /// the option's tokens scored.
    #[default]
    MultipleChoice,
    /// HellaSwag's six-line text file (`--hellaswag`): scored as multiple
    /// choice, in llama-perplexity's shuffled order.
    #[serde(rename = "hellaswag")]
    HellaSwag,
    /// A Winogrande CSV (`--winogrande`): each option fills the sentence's
    /// `_`, and the sentence after it is scored.
    Winogrande,
    /// A task file `build --lm-eval` wrote (`--lm-eval`): `question + " " +
    /// option` as in multiple choice, but scored as lm-evaluation-harness
    /// scores a request: every token after the question's own tokens.
    LmEval,
}

impl TaskKind {
    /// The mode's name, as logs and results write it.
    pub fn name(self) -> &'static str {
        match self {
            TaskKind::MultipleChoice => "multiple-choice",
            TaskKind::HellaSwag => "hellaswag",
            TaskKind::Winogrande => "winogrande",
            TaskKind::LmEval => "lm-eval",
        }
    }
}

impl std::fmt::Display for TaskKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What a shard log's header says about its shard and the whole run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardHeader {
    /// This shard's index, from 0 (below `count`).
    pub index: usize,
    /// The shards the run is split into.
    pub count: usize,
    /// The name of the rule that split the run into shards.
    pub rule: String,
    /// Tasks of the whole run, and in its file (for llama-perplexity's output of a merged run).
    pub run_tasks: usize,
    /// Tasks in the run's task file.
    pub file_tasks: usize,
    /// sha256 of the whole run's task indices in run order, written as
    /// decimals joined by commas.
    pub run_sha256: String,
}

/// The log format this mcscore writes, and the newest it reads; a reader
/// refuses a newer one by name. Logs written before the field existed read
/// as version 1. Version 2 added a sequential comparison's `sequential`
/// header field and the footer's `stopped`; version 3 the `chat` header
/// field; version 4 writes the run's mode, `lenient`, `pmi` and kernel
/// settings as fields where earlier versions glued them into one `settings`
/// string, and a sequential comparison's margin as a fraction where earlier
/// versions wrote accuracy points. Older logs are read through one
/// migration ([`Header`]'s reader).
pub const LOG_VERSION: u32 = 4;

pub(crate) fn version_1() -> u32 {
    1
}

/// What a log was written from; `--resume` requires all of it but the paths
/// to match. Inputs are identified by content (sha256 and size), so the same
/// model or file reached through another path, a copy or a link still matches.
/// A header of any version is read into this form (by one migration); it is written
/// as [`LOG_VERSION`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "wire::Header")]
pub struct Header {
    /// The log format version ([`LOG_VERSION`] for a log written now; an
    /// older log keeps its own).
    pub version: u32,
    /// The mcscore that wrote the log (`CARGO_PKG_VERSION`).
    pub mcscore: String,
    /// The model's path as given (for people; not compared).
    pub model: String,
    /// The model's sha256, as hex.
    pub model_sha256: String,
    /// Whether `model_sha256` came from the hash cache rather than a read of
    /// the model (for people; not compared).
    pub model_sha256_cached: bool,
    /// The model's size (0 in logs written before it was recorded).
    pub model_bytes: u64,
    /// The task file's path as given (for people; not compared).
    pub file: String,
    /// The task file's sha256, as hex.
    pub file_sha256: String,
    /// The task file's size (0 in logs written before it was recorded).
    pub file_bytes: u64,
    /// Tasks this run announced.
    pub tasks: usize,
    /// `--multiple-choice-tasks`, if a subset was scored.
    pub selection: Option<usize>,
    /// `--limit`, if the file's first tasks were scored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
    /// Whether `limit` counted each group's first tasks (lm-eval's meaning of
    /// `--limit`, for a file whose manifest records groups) rather than the file's.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub limit_per_group: bool,
    /// The mode scored.
    pub mode: TaskKind,
    /// Read as llama.cpp reads a file that fails validation (`--lenient`).
    pub lenient: bool,
    /// Each option also scored without its question (`--pmi`).
    pub pmi: bool,
    /// The engine's settings that decide which kernels run and so the
    /// numbers (flash attention, the batch rule), as space-separated
    /// `name=value` words; a log written before version 4 keeps whatever
    /// words its settings had besides the mode, `lenient` and `pmi`.
    pub kernels: String,
    /// Set in the log of one shard of a run (`--shard K/N`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardHeader>,
    /// Set in the logs of a sequential comparison (`compare --until-decided`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sequential: Option<Sequential>,
    /// Set where the run scored inside a chat template (`--chat-template`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chat: Option<ChatHeader>,
    /// The vision projector (`--mmproj`) the run read images with, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub projector: Option<ProjectorHeader>,
    /// For a file of image tasks: the sha256 of its images' sha256s, in file
    /// order (a JSON Lines file names image files that its own sha256 does not cover).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub images_sha256: Option<String>,
}

/// A run's vision projector: part of its identity by content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProjectorHeader {
    /// The file, as given (for people; not compared).
    pub path: String,
    /// Its sha256, as hex.
    pub sha256: String,
    /// Its size.
    pub bytes: u64,
}

/// A header line as any version of the log wrote it, and the one migration
/// that reads it into a [`Header`]: before version 4 the mode, `lenient`,
/// `pmi` and the kernel settings were words of one `settings` string, and a
/// sequential comparison's margin was in accuracy points.
mod wire {
    use super::{version_1, ChatHeader, ProjectorHeader, Sequential, ShardHeader, TaskKind};
    use serde::Deserialize;

    #[derive(Deserialize)]
    pub(super) struct Header {
        #[serde(default = "version_1")]
        version: u32,
        mcscore: String,
        model: String,
        model_sha256: String,
        #[serde(default)]
        model_sha256_cached: bool,
        #[serde(default)]
        model_bytes: u64,
        file: String,
        file_sha256: String,
        #[serde(default)]
        file_bytes: u64,
        tasks: usize,
        selection: Option<usize>,
        limit: Option<usize>,
        #[serde(default)]
        limit_per_group: bool,
        settings: Option<String>,
        mode: Option<TaskKind>,
        lenient: Option<bool>,
        pmi: Option<bool>,
        kernels: Option<String>,
        shard: Option<ShardHeader>,
        sequential: Option<Sequential>,
        chat: Option<ChatHeader>,
        projector: Option<ProjectorHeader>,
        images_sha256: Option<String>,
    }

    impl TryFrom<Header> for super::Header {
        type Error = String;

        fn try_from(h: Header) -> Result<super::Header, String> {
            let version = h.version;
            let typed = h.mode.is_some() || h.lenient.is_some() || h.pmi.is_some() || h.kernels.is_some();
            let (mode, lenient, pmi, kernels, points) = if version >= 4 {
                if h.settings.is_some() {
                    return Err(format!("a version-{version} header has no `settings`: its mode, lenient, pmi and kernels are fields"));
                }
                match (h.mode, h.lenient, h.pmi, h.kernels) {
                    (Some(mode), Some(lenient), Some(pmi), Some(kernels)) => (mode, lenient, pmi, kernels, false),
                    _ => return Err(format!("a version-{version} header needs `mode`, `lenient`, `pmi` and `kernels`")),
                }
            } else {
                if typed {
                    return Err(format!("a version-{version} header holds its settings in `settings`, not in the fields of version 4"));
                }
                let settings = h.settings.ok_or_else(|| format!("a version-{version} header needs `settings`"))?;
                let (mut mode, mut lenient, mut pmi, mut kernels) = (None, false, false, Vec::new());
                for word in settings.split_whitespace() {
                    let named = match word {
                        "hellaswag" => Some(TaskKind::HellaSwag),
                        "winogrande" => Some(TaskKind::Winogrande),
                        _ => None,
                    };
                    match (word, named) {
                        (_, Some(kind)) if mode.is_some_and(|m| m != kind) => {
                            return Err(format!("the header's settings {settings:?} name two modes"));
                        }
                        (_, Some(kind)) => mode = Some(kind),
                        ("lenient", None) => lenient = true,
                        ("pmi", None) => pmi = true,
                        (other, None) => kernels.push(other),
                    }
                }
                (mode.unwrap_or_default(), lenient, pmi, kernels.join(" "), true)
            };
            let sequential = h.sequential.map(|s| Sequential { margin: if points { s.margin / 100.0 } else { s.margin }, ..s });
            Ok(super::Header {
                version,
                mcscore: h.mcscore,
                model: h.model,
                model_sha256: h.model_sha256,
                model_sha256_cached: h.model_sha256_cached,
                model_bytes: h.model_bytes,
                file: h.file,
                file_sha256: h.file_sha256,
                file_bytes: h.file_bytes,
                tasks: h.tasks,
                selection: h.selection,
                limit: h.limit,
                limit_per_group: h.limit_per_group,
                mode,
                lenient,
                pmi,
                kernels,
                shard: h.shard,
                sequential,
                chat: h.chat,
                projector: h.projector,
                images_sha256: h.images_sha256,
            })
        }
    }
}

/// A run's chat template and its guards, as the log's header records them:
/// part of the run's identity, so `--resume` and `merge` refuse a run that
/// scored another way.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatHeader {
    /// `auto`, a built-in name or the file given (for people; not compared).
    pub template: String,
    /// Where it came from: `gguf`, `builtin` or `file`.
    pub origin: String,
    /// sha256 of the template's text (of the name, for a built-in one).
    pub sha256: String,
    /// The engine that rendered it.
    pub renderer: String,
    /// The system turn before each question (`--system`), if there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// Solved examples scored as turns, if the file's shots were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shots_as_turns: Option<usize>,
    /// Where the one BOS comes from: `template`, `tokenizer` or `none`.
    pub bos: String,
    /// `disabled` (rendering with `enable_thinking` true gives another prompt;
    /// it is rendered false) or `not in template`.
    pub thinking: String,
    /// The text the template adds to open the assistant's turn.
    pub generation_prompt: String,
    /// Between the generation prompt and the option: always empty, the
    /// option starts the answer (lm-evaluation-harness puts a `" "` there).
    pub delimiter: String,
    /// The rendered prompt of the run's first task, up to the option.
    pub first_task_prompt: String,
}

impl ChatHeader {
    /// What tells two runs' use of a template apart (the path given aside).
    pub fn identity(&self) -> String {
        format!(
            "{} template sha256 {} rendered by {}, system {}, shots as turns {}, BOS from {}, thinking {}, delimiter {:?}, first prompt sha256 {}",
            self.origin,
            self.sha256,
            self.renderer,
            or_none(self.system.as_ref().map(|s| format!("{s:?}"))),
            or_none(self.shots_as_turns),
            self.bos,
            self.thinking,
            self.delimiter,
            mcscore_format::sha256_hex(self.first_task_prompt.as_bytes())
        )
    }
}

/// What a sequential comparison's logs say of it: the order its tasks were
/// taken in and the rule that stops it. A resume requires all of it to match,
/// so that it continues the same order and reaches the same decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sequential {
    /// The name of the rule that draws the order from the seed.
    pub order_rule: String,
    /// The seed the order is drawn from.
    pub seed: u64,
    /// sha256 of the order's task indices ([`ShardHeader::run_sha256`]'s rule).
    pub order_sha256: String,
    /// Tasks in the file (the order takes at most `--max-tasks` of them).
    pub file_tasks: usize,
    /// Tasks scored between two looks at the confidence sequences.
    pub chunk: usize,
    /// The error rate of each decision, before it is split between the OTHERs.
    pub alpha: f64,
    /// The equivalence margin: a difference of accuracies, as a fraction
    /// (written in accuracy points before log version 4).
    pub margin: f64,
    /// The normalisation whose right or wrong the sequences follow.
    pub normalisation: String,
    /// The sha256 of BASE's model.
    pub base_sha256: String,
    /// The sha256 of each OTHER's model, in the comparison's order.
    pub other_sha256: Vec<String>,
}

impl Header {
    /// What the run scored with that changes a number, for people: the
    /// kernel settings, then the mode (other than multiple choice),
    /// `lenient` and `pmi` where they hold.
    pub fn settings_words(&self) -> Vec<&str> {
        let mut words: Vec<&str> = self.kernels.split_whitespace().collect();
        words.extend((self.mode != TaskKind::MultipleChoice).then_some(self.mode.name()));
        words.extend(self.lenient.then_some("lenient"));
        words.extend(self.pmi.then_some("pmi"));
        words
    }

    /// [`Header::settings_words`] as one line.
    pub fn settings(&self) -> String {
        self.settings_words().join(" ")
    }

    /// The task file's task count, where the header tells it: a shard's or
    /// a sequential comparison's record of it, or a run of the whole file.
    pub fn file_tasks(&self) -> Option<usize> {
        match (&self.shard, &self.sequential) {
            (Some(shard), _) => Some(shard.file_tasks),
            (None, Some(sequential)) => Some(sequential.file_tasks),
            (None, None) => (self.selection.is_none() && self.limit.is_none()).then_some(self.tasks),
        }
    }
}

/// A value said in a message, or "none" where it is absent.
pub fn or_none<T: std::fmt::Display>(value: Option<T>) -> String {
    value.map_or_else(|| "none".to_owned(), |v| v.to_string())
}

/// Why a sequential comparison stopped scoring a model: a complete log of
/// fewer tasks than its header announces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stop {
    /// This OTHER's confidence sequence excluded 0.
    Different,
    /// This OTHER's confidence sequence lay inside ±margin.
    Equivalent,
    /// BASE: every OTHER was decided.
    EveryOtherDecided,
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::path::Path;

    use crate::read::parse;
    use crate::test_support::{as_version, header, log_text};
    use mcscore_format::with_causes;

    #[test]
    fn modes_are_written_by_their_names() {
        for kind in [TaskKind::MultipleChoice, TaskKind::HellaSwag, TaskKind::Winogrande] {
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.name());
        }
    }

    #[test]
    fn a_log_of_any_version_reads_into_one_header() {
        let path = Path::new("run.jsonl");
        let footer = r#"{"type":"footer","complete":true,"scored":3}"#;
        let mut lenient = header(false);
        (lenient.mode, lenient.lenient, lenient.pmi) = (TaskKind::HellaSwag, true, false);
        for now in [header(false), lenient, header(true)] {
            let log = log_text(&now, 3, footer);
            for version in [2, 3] {
                let old = parse(&as_version(log.clone(), version), path).unwrap().header;
                assert_eq!(Header { version: LOG_VERSION, ..old }, now, "version {version}");
            }
            assert_eq!(parse(&log, path).unwrap().header, now);
        }
        // Each form in its own versions only, and two modes are refused.
        let log = log_text(&header(false), 3, footer);
        let typed_but_old = String::from_utf8(log.clone()).unwrap().replacen("\"version\":4", "\"version\":3", 1);
        let settings_but_new = String::from_utf8(as_version(log.clone(), 3)).unwrap().replacen("\"version\":3", "\"version\":4", 1);
        let two_modes = String::from_utf8(as_version(log, 3)).unwrap().replacen("c=auto", "c=auto hellaswag winogrande", 1);
        for (text, expected) in
            [(typed_but_old, "not in the fields of version 4"), (settings_but_new, "has no `settings`"), (two_modes, "name two modes")]
        {
            let error = with_causes(&parse(text.as_bytes(), path).unwrap_err());
            assert!(error.contains(expected) && error.contains("line 1"), "{error}");
        }
    }
}
