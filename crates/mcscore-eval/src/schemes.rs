//! The scoring schemes of "Check the Scoreboard" (Balepur et al., 2026) as
//! the paper runs them: each a response mode the model is asked for in
//! words (inspect_ai's multiple-choice prompt, adapted per mode) and a rule
//! that scores what it answered ([`mcscore_metrics::schemes`]).
//!
//! A response is generated greedily under the mode's grammar, so that every
//! response parses; with `reasoning`, the model first writes freely (the
//! chain-of-thought prompt), and only where that text holds no answer is
//! `ANSWER:` then asked for under the grammar. AUC is turns: after each
//! wrong answer a user turn names the wrong choices so far, up to k − 1
//! attempts, each constrained to the letters not yet tried. Beside each
//! prompted score stands the log-probability version of the same rule,
//! derived from the options' log-likelihoods on the same tasks.

pub mod parse;
pub mod report;

use std::io::Write;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use mcscore_engine::{Engine, Finish, GenerationRequest, Settings};
use mcscore_format::TaskFile;
use mcscore_metrics::schemes::{Response, Scheme, TaskProbs};
use mcscore_metrics::Normalisation;
use serde::{Deserialize, Serialize};

use crate::chat::{ChatSpec, Message, Template};
use crate::error::SchemesError;
use crate::shard::{partition, Shard};
use crate::{Cancel, EvalError, ScoreJob, ScoreSpec};
use parse::{letter, Parse};

/// The log's version.
pub const LOG_VERSION: u32 = 1;

/// A response mode of the paper: what the model is asked to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Mode {
    /// Number right: pick one letter.
    #[serde(rename = "NR")]
    Nr,
    /// NR reworded: the prompt-sensitivity control.
    #[serde(rename = "NR-Var")]
    NrVar,
    /// Negative marking: a letter or ABSTAIN.
    #[serde(rename = "NM")]
    Nm,
    /// Elimination: the letters of the options believed wrong.
    #[serde(rename = "Elim")]
    Elim,
    /// Elimination with a penalty for eliminating the key.
    #[serde(rename = "Elim-NM")]
    ElimNm,
    /// Confidence-based marking: a letter and a level 1–3.
    #[serde(rename = "CBM")]
    Cbm,
    /// Point allocation: a probability for every option.
    #[serde(rename = "PPA")]
    Ppa,
    /// Answer until correct: turns, up to k − 1 attempts.
    #[serde(rename = "AUC")]
    Auc,
}

impl Mode {
    /// The eight, in the paper's order.
    pub const ALL: [Mode; 8] = [Mode::Nr, Mode::NrVar, Mode::Nm, Mode::Elim, Mode::ElimNm, Mode::Cbm, Mode::Ppa, Mode::Auc];

    /// The paper's name (`NR`, `Elim-NM`, …).
    pub fn name(self) -> &'static str {
        match self {
            Mode::Nr => "NR",
            Mode::NrVar => "NR-Var",
            Mode::Nm => "NM",
            Mode::Elim => "Elim",
            Mode::ElimNm => "Elim-NM",
            Mode::Cbm => "CBM",
            Mode::Ppa => "PPA",
            Mode::Auc => "AUC",
        }
    }

    /// The mode named `name` (case-insensitive).
    pub fn parse(name: &str) -> Option<Mode> {
        Mode::ALL.into_iter().find(|m| m.name().eq_ignore_ascii_case(name))
    }

    /// The rule that scores it (NR-Var's is NR's), thresholds of the
    /// log-probability version at 1/k.
    pub fn rule(self) -> Scheme {
        match self {
            Mode::Nr | Mode::NrVar => Scheme::Nr,
            Mode::Nm => Scheme::Nm { tau: None },
            Mode::Elim => Scheme::Elim { epsilon: None },
            Mode::ElimNm => Scheme::ElimNm { epsilon: None },
            Mode::Cbm => Scheme::Cbm,
            Mode::Ppa => Scheme::Ppa,
            Mode::Auc => Scheme::Auc,
        }
    }

    /// The instruction before the question (docs/methods.md lists them):
    /// inspect_ai's, with each mode's task and answer format; `letters`
    /// those the answer may use.
    pub fn instruction(self, k: usize, letters: &str, reasoning: bool) -> String {
        let wrong = format!("1/{}", k - 1);
        let (task, format, what) = match self {
            Mode::Nr | Mode::Auc => (
                "Answer the following multiple choice question.".to_owned(),
                "'ANSWER: $LETTER' (without quotes)".to_owned(),
                format!("where LETTER is one of {letters}."),
            ),
            Mode::NrVar => (
                "Read the question below and choose the one correct option.".to_owned(),
                "'ANSWER: $LETTER' (without quotes)".to_owned(),
                format!("with LETTER the option's letter, one of {letters}."),
            ),
            Mode::Nm => (
                format!("Answer the following multiple choice question. A correct answer scores 1 point, a wrong answer loses {wrong} point, and no answer scores 0: if you are not sure, you may abstain."),
                "'ANSWER: $LETTER' (without quotes)".to_owned(),
                format!("where LETTER is one of {letters}, or ABSTAIN to give no answer."),
            ),
            Mode::Elim | Mode::ElimNm => {
                let key = if self == Mode::Elim {
                    "but if you eliminate the correct answer the question scores 0".to_owned()
                } else {
                    "and eliminating the correct answer loses 1 point".to_owned()
                };
                (
                    format!("The following multiple choice question has exactly one correct answer. Eliminate the options you believe are wrong: each wrong option you eliminate scores {wrong} point, {key}."),
                    "'ANSWER: $LETTERS' (without quotes)".to_owned(),
                    format!("where LETTERS is a comma-separated list of one or more of {letters}, the options you eliminate."),
                )
            }
            Mode::Cbm => (
                "Answer the following multiple choice question and say how confident you are: 1 (low), 2 (medium) or 3 (high). A correct answer scores 1, 2 or 3 points at confidence 1, 2 or 3; a wrong one scores 0, -2 or -6.".to_owned(),
                "'ANSWER: $LETTER' on one line and 'CONFIDENCE: $LEVEL' on the next (without quotes)".to_owned(),
                format!("where LETTER is one of {letters} and LEVEL one of 1,2,3."),
            ),
            Mode::Ppa => (
                "Give each option of the following multiple choice question the probability that it is the correct answer; the probabilities sum to 1. Your score is 1 minus half the Brier score of your probabilities.".to_owned(),
                format!("'ANSWER: {}' (without quotes)", (0..k).map(|i| format!("{}=$P", letter(i))).collect::<Vec<_>>().join(", ")),
                "where each P is a probability from 0 to 1 with at most two decimals.".to_owned(),
            ),
        };
        if reasoning {
            format!("{task} The last line of your response should be of the following format: {format} {what} Think step by step before answering.")
        } else {
            format!("{task} The entire content of your response should be of the following format: {format} {what}")
        }
    }

    /// The GBNF grammar of the answer: `ANSWER:` and what follows it, over
    /// the options `allowed` (AUC's untried ones; all others).
    pub fn grammar(self, k: usize, allowed: &[usize]) -> String {
        let letters = allowed.iter().map(|&i| format!("\"{}\"", letter(i))).collect::<Vec<_>>().join(" | ");
        let body = match self {
            Mode::Nr | Mode::NrVar | Mode::Auc => "letter".to_owned(),
            Mode::Nm => "(letter | \"ABSTAIN\")".to_owned(),
            Mode::Elim | Mode::ElimNm => format!("letter (\", \" letter){{0,{}}}", k - 1),
            Mode::Cbm => "letter \"\\nCONFIDENCE: \" [1-3]".to_owned(),
            Mode::Ppa => (0..k).map(|i| format!("\"{}{}=\" p", if i == 0 { "" } else { ", " }, letter(i))).collect::<Vec<_>>().join(" "),
        };
        format!("root ::= \"ANSWER: \" {body}\nletter ::= {letters}\np ::= \"0\" (\".\" [0-9] [0-9]?)? | \"1\" (\".0\" \"0\"?)?\n")
    }

    /// What a response says, read as this mode's rule needs it.
    pub fn read(self, completion: &str, k: usize) -> (Response, Parse) {
        match self {
            Mode::Nr | Mode::NrVar | Mode::Auc => match parse::answers(completion, k, false) {
                (found, how) if found.len() == 1 => (Response::Pick(found[0]), how),
                _ => (Response::Unparsed, Parse::Unparsed),
            },
            Mode::Nm => {
                if let Some(how) = parse::abstains(completion) {
                    return (Response::Abstain, how);
                }
                Mode::Nr.read(completion, k)
            }
            Mode::Elim | Mode::ElimNm => match parse::answers(completion, k, true) {
                (found, how) if !found.is_empty() => (Response::Eliminate(found), how),
                _ => (Response::Unparsed, Parse::Unparsed),
            },
            Mode::Cbm => match (Mode::Nr.read(completion, k), parse::confidence(completion)) {
                ((Response::Pick(pick), how), Some(level)) => (Response::Confident { pick, level }, how),
                _ => (Response::Unparsed, Parse::Unparsed),
            },
            Mode::Ppa => match parse::allocation(completion, k) {
                Some((p, how)) => (Response::Allocate(p), how),
                None => (Response::Unparsed, Parse::Unparsed),
            },
        }
    }
}

/// The question and choices as inspect_ai's template lays them out.
fn question_text(stem: &str, options: &[String]) -> String {
    let choices = options.iter().enumerate().map(|(i, o)| format!("{}) {o}", letter(i))).collect::<Vec<_>>().join("\n");
    format!("{stem}\n\n{choices}")
}

/// The user's turn after a wrong AUC attempt.
fn feedback(wrong: &[usize], letters: &str, reasoning: bool) -> String {
    let lead = if reasoning { "The last line of your response should be" } else { "The entire content of your response should be" };
    let said = if wrong.is_empty() {
        // Only unread answers so far (an unparsed free response).
        "Your answer could not be read as one of the options.".to_owned()
    } else {
        format!("Incorrect. The wrong choices so far: {}.", wrong.iter().map(|&i| letter(i)).collect::<Vec<_>>().join(", "))
    };
    format!("{said} Try again. {lead} of the following format: 'ANSWER: $LETTER' (without quotes) where LETTER is one of {letters}.")
}

/// What a scheme run asks.
#[derive(Debug, Clone)]
pub struct SchemesSpec {
    /// The GGUF model (for [`run`], the path its engine was loaded from).
    pub model: PathBuf,
    /// A task file in the letter or the text scaffold.
    pub file: PathBuf,
    /// The response modes, in the order run.
    pub modes: Vec<Mode>,
    /// The file's first this many tasks; all where `None`.
    pub limit: Option<usize>,
    /// Prompts inside a chat template (a plain completion prompt without one).
    pub chat: ChatSpec,
    /// Free reasoning before the answer (the chain-of-thought prompt).
    pub reasoning: bool,
    /// The most tokens a free response takes (`--reasoning`).
    pub max_tokens: usize,
    /// llama.cpp's settings.
    pub settings: Settings,
    /// Sequences generated at once.
    pub parallel: usize,
    /// Run only this shard of the tasks (contiguous, balanced by their
    /// bytes, as `score --shard` cuts a run); `merge` joins the shards' logs.
    pub shard: Option<Shard>,
    /// The log to write, or to continue with `resume`.
    pub log: Option<PathBuf>,
    /// Continue the log's run.
    pub resume: bool,
}

/// The log's first line: what the run is of.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SchemesHeader {
    /// [`LOG_VERSION`].
    pub mcscore_schemes: u32,
    /// The model's path.
    pub model: String,
    /// The model's sha256.
    pub model_sha256: String,
    /// The task file's path and sha256.
    pub file: String,
    /// The task file's sha256.
    pub file_sha256: String,
    /// The run's tasks: the file's first this many.
    pub tasks: usize,
    /// The shard this log holds, if the run was split.
    pub shard: Option<ShardRecord>,
    /// The response modes.
    pub modes: Vec<Mode>,
    /// Free reasoning before the answer.
    pub reasoning: bool,
    /// The most tokens of a free response.
    pub max_tokens: usize,
    /// The chat template (`none` for plain prompts), as `--chat-template` named it.
    pub chat_template: String,
    /// The template's sha256 (a built-in's: of its name); `None` for plain prompts.
    pub chat_template_sha256: Option<String>,
    /// The system turn, if any.
    pub system: Option<String>,
    /// What of llama.cpp's settings changes a response: the attention
    /// kernel and the batch rule (and with layers on a GPU, `-ngl`).
    pub settings: String,
}

/// Which shard of a run a log holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardRecord {
    /// The shard, from 0.
    pub index: usize,
    /// The shards the run is split into.
    pub count: usize,
    /// Its tasks: `first..end` of the run's.
    pub first: usize,
    /// The task after its last.
    pub end: usize,
}

/// One turn of a mode on a task: the prompt, the response, how it was read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Turn {
    /// The user's message of this turn (the instruction and question, or
    /// AUC's feedback).
    pub user: String,
    /// The whole prompt, as the model read it (rendered in its template,
    /// after the turns before it).
    pub prompt: String,
    /// Its tokens.
    pub input_tokens: usize,
    /// The response's text.
    pub response: String,
    /// Its tokens (a forced answer's included).
    pub output_tokens: usize,
    /// Why the response ended.
    pub finish: Finish,
    /// How it was read.
    pub parse: Parse,
}

/// A mode's outcome on one task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModeRecord {
    /// The mode.
    pub mode: Mode,
    /// Its turns (AUC: one per attempt).
    pub turns: Vec<Turn>,
    /// What the rule read (AUC: the attempt at which the key was chosen).
    pub response: Response,
    /// How the answer was read (AUC: its last turn's).
    pub parse: Parse,
    /// The rule's score.
    pub score: f64,
    /// The log-probability version's score on the same task.
    pub logprob_score: f64,
}

/// One task's line of the log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskRecord {
    /// The task's index in the file.
    pub task: usize,
    /// Its options.
    pub k: usize,
    /// The key's index.
    pub key: usize,
    /// The options' probabilities from their log-likelihoods (acc_norm's
    /// softmax, as `report` takes them).
    pub p: Vec<f64>,
    /// Each mode's outcome, in the header's order.
    pub modes: Vec<ModeRecord>,
}

/// A model's run: its header and every task's record.
#[derive(Debug, Clone)]
pub struct SchemesRun {
    /// The log's header (written or not).
    pub header: SchemesHeader,
    /// Every task's record, in file order.
    pub records: Vec<TaskRecord>,
    /// Where it was read or written, if anywhere.
    pub log: Option<PathBuf>,
}

/// A task as the prompts see it.
struct Question {
    task: usize,
    stem: String,
    options: Vec<String>,
    key: usize,
}

/// The tasks generated together, whose records reach the log together: as
/// many as fill two waves of `parallel` sequences with their first turns.
fn chunk_tasks(parallel: usize, modes: usize) -> usize {
    (2 * parallel.max(1)).div_ceil(modes.max(1))
}

/// Runs `spec` with `engine`, calling `progress(done, total)` after each
/// chunk of tasks; the run's records, logged as they are made where
/// `spec.log` says.
pub fn run(engine: &Engine, spec: &SchemesSpec, cancel: &Cancel, progress: &mut dyn FnMut(usize, usize)) -> Result<SchemesRun, EvalError> {
    let file = TaskFile::open(&spec.file)?;
    let n = spec.limit.map_or(file.len(), |l| l.min(file.len()));
    let mut questions = Vec::with_capacity(n);
    for (task, t) in file.tasks().enumerate().take(n) {
        let item = mcscore_datasets::parse_scaffolded_task(&t)
            .ok_or_else(|| EvalError::Schemes(SchemesError::NotScaffolded { path: spec.file.clone(), task }))?;
        questions.push(Question { task, stem: item.stem, options: item.options, key: item.gold });
    }
    if spec.modes.is_empty() {
        return Err(EvalError::Schemes(SchemesError::NoModes));
    }
    if spec.settings.batch_rule() == "none" {
        // Without the batch rule a response would follow -np and the chunks.
        return Err(EvalError::Schemes(SchemesError::NoBatchRule));
    }
    let shard = match spec.shard {
        Some(shard) => {
            let shard = shard.check()?;
            let costs: Vec<usize> =
                file.tasks().take(n).map(|t| t.question.len() + t.options().iter().map(|o| o.len()).sum::<usize>()).collect();
            let range = partition(&costs, shard.count)?.swap_remove(shard.index);
            Some(ShardRecord { index: shard.index, count: shard.count, first: range.start, end: range.end })
        }
        None => None,
    };
    let range = shard.map_or(0..n, |s| s.first..s.end);
    let questions = &questions[range.clone()];
    // The log-probability version: the options' log-likelihoods, as `score`
    // gives them, of the run's tasks up to the shard's last.
    let mut score_spec = ScoreSpec::new(&spec.model, &spec.file);
    score_spec.limit = Some(range.end).filter(|&l| l < file.len());
    score_spec.settings = spec.settings.clone();
    score_spec.hash_model = true;
    score_spec.chat = spec.chat.clone();
    let outcome = ScoreJob::with_engine(engine, score_spec)?.run(&mut crate::NoProgress, cancel)?;
    if cancel.is_cancelled() {
        return Err(EvalError::Schemes(SchemesError::Interrupted));
    }
    let probs: Vec<Vec<f64>> = outcome.records[range.clone()]
        .iter()
        .map(|r| TaskProbs::from_scores(&r.options.iter().map(|o| Normalisation::AccNorm.score(o)).collect::<Vec<_>>(), 0).p)
        .collect();
    let template = Template::resolve(&spec.chat.template, engine)?;
    let header = SchemesHeader {
        mcscore_schemes: LOG_VERSION,
        model: spec.model.display().to_string(),
        model_sha256: outcome.header.model_sha256.clone(),
        file: spec.file.display().to_string(),
        file_sha256: outcome.header.file_sha256.clone(),
        tasks: n,
        shard,
        modes: spec.modes.clone(),
        reasoning: spec.reasoning,
        max_tokens: spec.max_tokens,
        chat_template: spec.chat.template.name().unwrap_or_else(|| "none".into()),
        chat_template_sha256: template.as_ref().map(|t| t.sha256.clone()),
        system: spec.chat.system.clone(),
        settings: spec.settings.fingerprint(),
    };
    let (mut records, mut writer) = match &spec.log {
        Some(path) => {
            let (records, writer) = open_log(path, &header, spec.resume)?;
            (records, Some(writer))
        }
        None => (Vec::new(), None),
    };
    let generator = Generator { engine, spec, template: template.as_ref(), cancel };
    let n = questions.len();
    progress(records.len(), n);
    while records.len() < n {
        let start = records.len();
        let chunk = &questions[start..(start + chunk_tasks(spec.parallel, spec.modes.len())).min(n)];
        let made = generator.chunk(chunk, &probs[start..start + chunk.len()])?;
        if let (Some(writer), Some(path)) = (writer.as_mut(), &spec.log) {
            for record in &made {
                let line = serde_json::to_string(record).map_err(|e| EvalError::Io { path: path.clone(), source: e.into() })?;
                writeln!(writer, "{line}").map_err(EvalError::io(path))?;
            }
            writer.flush().map_err(EvalError::io(path))?;
        }
        records.extend(made);
        progress(records.len(), n);
    }
    Ok(SchemesRun { header, records, log: spec.log.clone() })
}

/// The log at `path` ready to append to: created with `header`, or with
/// `resume` its records so far (a torn last line dropped).
fn open_log(path: &Path, header: &SchemesHeader, resume: bool) -> Result<(Vec<TaskRecord>, std::fs::File), EvalError> {
    let exists = path.exists();
    if exists && !resume {
        return Err(EvalError::Schemes(SchemesError::LogExists { path: path.to_owned() }));
    }
    // Held until the run ends: a second run of the same log is refused,
    // not interleaved with this one.
    let lock = |file: &std::fs::File| match file.try_lock() {
        Ok(()) => Ok(()),
        Err(std::fs::TryLockError::WouldBlock) => Err(EvalError::Schemes(SchemesError::LogLocked { path: path.to_owned() })),
        Err(std::fs::TryLockError::Error(e)) => Err(EvalError::Io { path: path.to_owned(), source: e }),
    };
    if !exists {
        let mut file = std::fs::OpenOptions::new().create_new(true).append(true).open(path).map_err(EvalError::io(path))?;
        lock(&file)?;
        let line = serde_json::to_string(header).map_err(|e| EvalError::Io { path: path.to_owned(), source: e.into() })?;
        writeln!(file, "{line}").and_then(|()| file.flush()).map_err(EvalError::io(path))?;
        return Ok((Vec::new(), file));
    }
    let file = std::fs::OpenOptions::new().append(true).open(path).map_err(EvalError::io(path))?;
    lock(&file)?;
    let run = read_log(path)?;
    if run.header != *header {
        return Err(EvalError::Schemes(SchemesError::OtherRun { path: path.to_owned(), what: differs(&run.header, header) }));
    }
    // Cut a torn last line: what is kept ends at a whole record.
    let text = std::fs::read_to_string(path).map_err(EvalError::io(path))?;
    let keep: usize = text.split_inclusive('\n').take(1 + run.records.len()).filter(|l| l.ends_with('\n')).map(str::len).sum();
    file.set_len(keep as u64).map_err(EvalError::io(path))?;
    Ok((run.records, file))
}

/// The first header field two runs differ in.
fn differs(a: &SchemesHeader, b: &SchemesHeader) -> String {
    let a = serde_json::to_value(a).unwrap_or_default();
    let b = serde_json::to_value(b).unwrap_or_default();
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else { return "header".into() };
    a.iter()
        .find(|(k, v)| b.get(*k) != Some(v))
        .map_or_else(|| "header".into(), |(k, v)| format!("{k} (the log's {v}, this run's {})", b.get(k).cloned().unwrap_or_default()))
}

/// Reads a scheme log: its header and every whole record, checked (a torn
/// last line, which an interrupted run leaves, is dropped).
pub fn read_log(path: &Path) -> Result<SchemesRun, EvalError> {
    let text = std::fs::read_to_string(path).map_err(EvalError::io(path))?;
    let mut lines = text.split_inclusive('\n').enumerate();
    let bad = |line: usize, message: String| EvalError::Schemes(SchemesError::LogLine { path: path.to_owned(), line: line + 1, message });
    let (_, first) = lines.next().ok_or_else(|| bad(0, "empty: not a log of `mcscore schemes`".into()))?;
    let header: SchemesHeader =
        serde_json::from_str(first).map_err(|e| bad(0, format!("not the header of a log of `mcscore schemes`: {e}")))?;
    if header.mcscore_schemes != LOG_VERSION {
        return Err(bad(0, format!("log version {}; this mcscore reads version {LOG_VERSION}", header.mcscore_schemes)));
    }
    if header.tasks == 0 || header.modes.is_empty() {
        return Err(bad(0, "a header of no tasks or no response modes".into()));
    }
    if let Some(s) = header.shard {
        if s.count == 0 || s.index >= s.count || s.first >= s.end || s.end > header.tasks || s.count > header.tasks {
            return Err(bad(
                0,
                format!("shard {}/{} of tasks {}..{} of {}: not a shard of the run", s.index, s.count, s.first, s.end, header.tasks),
            ));
        }
    }
    let mut records: Vec<TaskRecord> = Vec::new();
    for (i, line) in lines {
        if !line.ends_with('\n') {
            break;
        }
        let record: TaskRecord = serde_json::from_str(line).map_err(|e| bad(i, e.to_string()))?;
        let expected = records.last().map_or(header.shard.map_or(0, |s| s.first), |r| r.task + 1);
        if record.task != expected || record.modes.iter().map(|m| m.mode).ne(header.modes.iter().copied()) || record.key >= record.k {
            return Err(bad(i, format!("task {}: not the next task of this run (task {expected}, modes {:?})", record.task, header.modes)));
        }
        records.push(record);
    }
    let announced = expected_records(&header);
    if records.len() > announced {
        return Err(bad(announced + 1, format!("more records than the {announced} tasks its header announces")));
    }
    Ok(SchemesRun { header, records, log: Some(path.to_owned()) })
}

/// Whether `path` starts as a log of `mcscore schemes` does (its header's
/// first key), as `merge` tells them from sample logs.
pub fn is_log(path: &Path) -> bool {
    use std::io::Read;
    let mut start = [0u8; 20];
    std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut start)).is_ok() && start.starts_with(b"{\"mcscore_schemes\":")
}

/// The records a complete log of `header` holds: its shard's tasks, or the run's.
pub fn expected_records(header: &SchemesHeader) -> usize {
    header.shard.map_or(header.tasks, |s| s.end - s.first)
}

/// Whether a run read from a log has every task its header announces.
pub fn is_complete(run: &SchemesRun) -> bool {
    run.records.len() == expected_records(&run.header)
}

/// The logs of a run's shards (`schemes --shard K/N`), each complete, every
/// shard once, joined into the run's: its records are those an unsharded
/// run writes (the batch rule), so the merged log is byte for byte its log.
pub fn merge(logs: &[PathBuf]) -> Result<SchemesRun, EvalError> {
    let runs = logs.iter().map(|p| read_log(p)).collect::<Result<Vec<_>, _>>()?;
    let Some(first) = runs.first() else { return Err(EvalError::NoLogs) };
    let bad = |path: &Path, what: String| EvalError::Schemes(SchemesError::Merge { path: path.to_owned(), what });
    let count = first.header.shard.map_or(1, |s| s.count);
    if count > runs.len() {
        return Err(bad(&logs[0], format!("a run of {count} shards; only {} of their logs given", runs.len())));
    }
    let mut slots: Vec<Option<&SchemesRun>> = vec![None; count];
    for (run, path) in runs.iter().zip(logs) {
        let Some(shard) = run.header.shard else { return Err(bad(path, "not a shard's log (`schemes --shard K/N` writes them)".into())) };
        let unsharded = |h: &SchemesHeader| SchemesHeader { shard: None, ..h.clone() };
        if unsharded(&run.header) != unsharded(&first.header) || shard.count != count {
            return Err(bad(
                path,
                format!("a shard of another run than {}: its {}", logs[0].display(), differs(&run.header, &first.header)),
            ));
        }
        if !is_complete(run) {
            return Err(bad(
                path,
                format!("{} of its {} tasks; finish it with --resume", run.records.len(), expected_records(&run.header)),
            ));
        }
        if slots[shard.index].replace(run).is_some() {
            return Err(bad(path, format!("shard {}/{count} is given twice", shard.index)));
        }
    }
    let mut records = Vec::new();
    for (index, slot) in slots.iter().enumerate() {
        let run = slot.ok_or_else(|| bad(&logs[0], format!("shard {index}/{count} is missing")))?;
        records.extend(run.records.iter().cloned());
    }
    if records.len() != first.header.tasks || records.iter().enumerate().any(|(i, r)| r.task != i) {
        return Err(bad(&logs[0], "the shards do not cover the run's tasks once each, in order".into()));
    }
    Ok(SchemesRun { header: SchemesHeader { shard: None, ..first.header.clone() }, records, log: None })
}

/// A run's log: its header and records, one JSON line each.
pub fn log_text(run: &SchemesRun) -> String {
    let mut text = String::new();
    // The types serialise to JSON without fail: no maps with non-string keys.
    text.push_str(&serde_json::to_string(&run.header).unwrap_or_default());
    text.push('\n');
    for record in &run.records {
        text.push_str(&serde_json::to_string(record).unwrap_or_default());
        text.push('\n');
    }
    text
}

/// What generates a chunk's responses.
struct Generator<'a> {
    engine: &'a Engine,
    spec: &'a SchemesSpec,
    template: Option<&'a Template>,
    cancel: &'a Cancel,
}

/// A conversation so far: the user's and the model's turns.
type Conversation = Vec<(&'static str, String)>;

/// A turn to generate: its prompt, and what to ask of the response.
struct Ask {
    /// The task's index in the file.
    task: usize,
    conversation: Conversation,
    grammar: String,
}

impl Generator<'_> {
    /// What failed on an ask: the engine's error, with the task and mode.
    fn failed(&self, ask: &(Mode, usize, Ask), source: mcscore_engine::EngineError) -> EvalError {
        let (mode, _, ask) = ask;
        let turn = ask.conversation.len().div_ceil(2);
        EvalError::Schemes(SchemesError::Request {
            path: self.spec.file.clone(),
            task: ask.task,
            mode: mode.name(),
            turn,
            source: Box::new(source),
        })
    }

    /// The prompt of a conversation, rendered and tokenised.
    fn prompt(&self, ask: &(Mode, usize, Ask)) -> Result<(String, Vec<u32>), EvalError> {
        let conversation = &ask.2.conversation;
        let text = match self.template {
            Some(template) => {
                let mut messages: Vec<Message<'_>> = Vec::new();
                if let Some(system) = &self.spec.chat.system {
                    messages.push(Message { role: "system", content: system });
                }
                messages.extend(conversation.iter().map(|(role, content)| Message { role, content }));
                template.render(self.engine, &messages, true, false)?
            }
            // A base model: the turns one after another, each response after a blank line.
            None => conversation.iter().map(|(_, c)| c.as_str()).collect::<Vec<_>>().join("\n\n") + "\n\n",
        };
        let tokens = self.engine.tokenize_prompt(&text, self.template.is_some()).map_err(|e| self.failed(ask, e))?;
        Ok((text, tokens))
    }

    /// Generates one response to each ask (under its grammar, or free then
    /// forced with `reasoning`), each read as `mode` reads it.
    fn answer(&self, asks: &[(Mode, usize, Ask)]) -> Result<Vec<(Turn, Response)>, EvalError> {
        let prompts: Vec<(String, Vec<u32>)> = asks.iter().map(|a| self.prompt(a)).collect::<Result<_, _>>()?;
        let answer_budget = |k: usize| 32 + 12 * k;
        let requests: Vec<GenerationRequest> = asks
            .iter()
            .zip(&prompts)
            .map(|((_, k, ask), (_, tokens))| GenerationRequest {
                tokens: tokens.clone(),
                grammar: (!self.spec.reasoning).then(|| ask.grammar.clone()),
                max_tokens: if self.spec.reasoning { self.spec.max_tokens } else { answer_budget(*k) },
            })
            .collect();
        let first = self.generate(&requests, &|r| &asks[r])?;
        let mut turns: Vec<(Turn, Response)> = Vec::with_capacity(asks.len());
        let mut forced: Vec<(usize, GenerationRequest)> = Vec::new();
        for (i, (((mode, k, ask), (prompt, tokens)), generated)) in asks.iter().zip(&prompts).zip(&first).enumerate() {
            let text = String::from_utf8_lossy(&self.engine.detokenize(&generated.tokens)).into_owned();
            let (response, parse) = mode.read(&text, *k);
            if self.spec.reasoning && parse == Parse::Unparsed {
                // Ask for the answer line after what the model wrote.
                let mut tokens = tokens.clone();
                tokens.extend(&generated.tokens);
                tokens.extend(self.engine.newline());
                forced.push((i, GenerationRequest { tokens, grammar: Some(ask.grammar.clone()), max_tokens: answer_budget(*k) }));
            }
            let user = ask.conversation.last().map(|(_, text)| text.clone()).unwrap_or_default();
            let turn = Turn {
                user,
                prompt: prompt.clone(),
                input_tokens: tokens.len(),
                response: text,
                output_tokens: generated.tokens.len(),
                finish: generated.finish,
                parse,
            };
            turns.push((turn, response));
        }
        let requests: Vec<GenerationRequest> = forced.iter().map(|(_, r)| r.clone()).collect();
        for ((i, _), generated) in forced.iter().zip(self.generate(&requests, &|r| &asks[forced[r].0])?) {
            let (mode, k, _) = &asks[*i];
            let (turn, response) = &mut turns[*i];
            let newline = self.engine.newline();
            turn.response.push_str(&String::from_utf8_lossy(&self.engine.detokenize(&newline)));
            turn.response.push_str(&String::from_utf8_lossy(&self.engine.detokenize(&generated.tokens)));
            turn.output_tokens += newline.len() + generated.tokens.len();
            turn.finish = generated.finish;
            let (read, parse) = mode.read(&turn.response, *k);
            *response = read;
            turn.parse = if parse == Parse::Unparsed { Parse::Unparsed } else { Parse::Forced };
        }
        Ok(turns)
    }

    /// Generates `requests`, the ask of each given by `ask_of`.
    fn generate<'a>(
        &self,
        requests: &[GenerationRequest],
        ask_of: &dyn Fn(usize) -> &'a (Mode, usize, Ask),
    ) -> Result<Vec<mcscore_engine::Generation>, EvalError> {
        let mut out = Vec::with_capacity(requests.len());
        let cancel = || self.cancel.is_cancelled();
        let completion = self
            .engine
            .generate(requests, &self.spec.settings, self.spec.parallel, &cancel, |_, g| {
                out.push(g);
                ControlFlow::Continue(())
            })
            .map_err(|e| match e {
                mcscore_engine::EngineError::InvalidPrompt { prompt, .. } | mcscore_engine::EngineError::NonFinitePrompt { prompt, .. }
                    if prompt < requests.len() =>
                {
                    self.failed(ask_of(prompt), e)
                }
                e => EvalError::engine(&self.spec.file)(e),
            })?;
        if completion != mcscore_engine::Completion::Finished {
            return Err(EvalError::Schemes(SchemesError::Interrupted));
        }
        Ok(out)
    }

    /// Every mode's outcome on each of `questions`.
    fn chunk(&self, questions: &[Question], probs: &[Vec<f64>]) -> Result<Vec<TaskRecord>, EvalError> {
        let reasoning = self.spec.reasoning;
        let user = |q: &Question, mode: Mode, allowed: &[usize]| {
            let letters = allowed.iter().map(|&i| letter(i)).collect::<Vec<_>>().join(",");
            format!("{}\n\n{}", mode.instruction(q.options.len(), &letters, reasoning), question_text(&q.stem, &q.options))
        };
        let all = |q: &Question| (0..q.options.len()).collect::<Vec<usize>>();
        // Every mode's first turn, for every question at once, mode by
        // mode: a wave of one mode's responses ends together.
        let mut asks: Vec<(Mode, usize, Ask)> = Vec::new();
        for &mode in &self.spec.modes {
            for q in questions {
                let k = q.options.len();
                asks.push((
                    mode,
                    k,
                    Ask { task: q.task, conversation: vec![("user", user(q, mode, &all(q)))], grammar: mode.grammar(k, &all(q)) },
                ));
            }
        }
        let answered = self.answer(&asks)?;
        let mut outcomes: Vec<Vec<Option<(Turn, Response)>>> = vec![vec![None; self.spec.modes.len()]; questions.len()];
        for (i, outcome) in answered.into_iter().enumerate() {
            outcomes[i % questions.len()][i / questions.len()] = Some(outcome);
        }
        let mut records: Vec<TaskRecord> = Vec::with_capacity(questions.len());
        let mut auc: Vec<(usize, usize, Conversation, Vec<usize>)> = Vec::new();
        for (qi, ((q, p), outcomes)) in questions.iter().zip(probs).zip(outcomes).enumerate() {
            let k = q.options.len();
            let t = TaskProbs { p: p.clone(), key: q.key };
            let mut modes = Vec::new();
            for (mi, (&mode, outcome)) in self.spec.modes.iter().zip(outcomes).enumerate() {
                // answer() gives one outcome per ask
                let Some((turn, response)) = outcome else { continue };
                if mode == Mode::Auc {
                    let tried = match response {
                        Response::Pick(i) => vec![i],
                        _ => vec![usize::MAX],
                    };
                    if tried != [q.key] && k > 2 {
                        let conversation = vec![("user", user(q, mode, &all(q))), ("assistant", turn.response.clone())];
                        auc.push((qi, mi, conversation, tried));
                    }
                }
                let parse = turn.parse;
                modes.push(ModeRecord { mode, turns: vec![turn], response, parse, score: 0.0, logprob_score: mode.rule().score(&t) });
            }
            records.push(TaskRecord { task: q.task, k, key: q.key, p: p.clone(), modes });
        }
        // AUC's later turns: each round asks every task still without the key.
        let mut attempt = 1;
        while !auc.is_empty() {
            attempt += 1;
            let mut asks = Vec::new();
            for (qi, _, conversation, tried) in &mut auc {
                let q = &questions[*qi];
                let k = q.options.len();
                // A wrong attempt that named no untried option counts as one.
                let wrong: Vec<usize> = tried.iter().copied().filter(|&i| i < k && i != q.key).collect();
                let untried: Vec<usize> = (0..k).filter(|i| !wrong.contains(i)).collect();
                let letters = untried.iter().map(|&i| letter(i)).collect::<Vec<_>>().join(",");
                conversation.push(("user", feedback(&wrong, &letters, reasoning)));
                asks.push((
                    Mode::Auc,
                    k,
                    Ask { task: q.task, conversation: conversation.clone(), grammar: Mode::Auc.grammar(k, &untried) },
                ));
            }
            let answered = self.answer(&asks)?;
            let mut still = Vec::new();
            for ((qi, mi, mut conversation, mut tried), (turn, response)) in auc.into_iter().zip(answered) {
                let q = &questions[qi];
                let k = q.options.len();
                let record = &mut records[qi].modes[mi];
                conversation.push(("assistant", turn.response.clone()));
                record.parse = turn.parse;
                record.turns.push(turn);
                let chosen = match response {
                    Response::Pick(i) => Some(i),
                    _ => None,
                };
                if chosen == Some(q.key) {
                    continue;
                }
                tried.push(chosen.unwrap_or(usize::MAX));
                if attempt < k - 1 {
                    still.push((qi, mi, conversation, tried));
                }
            }
            auc = still;
        }
        for record in &mut records {
            let (k, key) = (record.k, record.key);
            for m in &mut record.modes {
                if m.mode == Mode::Auc {
                    let picks: Vec<Option<usize>> = m
                        .turns
                        .iter()
                        .map(|t| match Mode::Auc.read(&t.response, k).0 {
                            Response::Pick(i) => Some(i),
                            _ => None,
                        })
                        .collect();
                    // The attempt that chose the key; k where none of the k − 1 did.
                    m.response = Response::Attempts(picks.iter().position(|&p| p == Some(key)).map_or(k, |a| a + 1));
                }
                m.score = m.mode.rule().score_response(&m.response, key, k);
            }
        }
        Ok(records)
    }
}
