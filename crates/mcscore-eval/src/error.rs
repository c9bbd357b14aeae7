//! What can go wrong in a job: [`EvalError`], with the faults of each area
//! (shards, sweeps, studies, logs side by side, sequential comparisons, chat
//! templates, a job's spec) in an enum of their own behind it; every error
//! keeps its cause. Messages name files, tasks and lines; a front end adds
//! the flag that changes the outcome (a few name a flag themselves: the
//! command that writes an input they expect, or a refused setting of a
//! sequential comparison). A message leaves its cause out (the cause is its
//! `source()`): [`with_causes`] writes the whole chain once, `path: what: why`.

use std::path::PathBuf;

pub use mcscore_format::with_causes;

use mcscore_engine::EngineError;

const GIB: f64 = (1u64 << 30) as f64;

/// Why a job could not run or finish.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EvalError {
    #[error(transparent)]
    Format(#[from] mcscore_format::Error),

    #[error(transparent)]
    Dataset(#[from] mcscore_datasets::DatasetError),

    /// A sample log could not be read, written or resumed.
    #[error(transparent)]
    Log(#[from] mcscore_log::LogError),

    /// The model did not load (the engine's message names the model).
    #[error(transparent)]
    Load(EngineError),

    /// Scoring failed; `path` is the task file, model or item set concerned.
    #[error("{}", path.display())]
    Engine {
        path: PathBuf,
        #[source]
        source: EngineError,
    },

    /// The unconditional pass of acc_pmi (options after "Answer:") failed.
    #[error("{}: the unconditional pass (options after \"Answer:\")", path.display())]
    Unconditional {
        path: PathBuf,
        #[source]
        source: EngineError,
    },

    /// Scoring failed on one prompt of a sweep.
    #[error("{label}: task {task} in format {format}, rotation {rotation} (prompt {prompt})")]
    Prompt {
        label: String,
        task: usize,
        format: String,
        rotation: usize,
        prompt: usize,
        #[source]
        source: Box<EngineError>,
    },

    #[error(transparent)]
    Shard(#[from] ShardError),

    #[error(transparent)]
    Sweep(#[from] SweepError),

    #[error(transparent)]
    Study(#[from] StudyError),

    #[error(transparent)]
    Logs(#[from] LogsError),

    #[error(transparent)]
    Sequential(#[from] SequentialError),

    #[error(transparent)]
    Chat(#[from] ChatError),

    #[error(transparent)]
    Spec(#[from] SpecError),

    /// A log whose header matches the run but whose task lines are not its tasks.
    #[error("{}: cannot resume: task line {} is task {logged}, but the run's task there is {} (the log was edited, or written by another mcscore)", path.display(), position + 1, run.map_or("none (the run has fewer tasks)".to_owned(), |t| t.to_string()))]
    ResumeOtherTasks { path: PathBuf, position: usize, logged: usize, run: Option<usize> },

    /// An output whose path is one of the job's inputs (by inode).
    #[error("{}: writing it would replace {}, one of the inputs; choose another folder", path.display(), input.display())]
    WouldReplaceInput { path: PathBuf, input: PathBuf },

    #[error("{}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// A run that scored fewer tasks than it announced.
    #[error("{}: scored {scored} tasks but {announced} were announced", path.display())]
    Incomplete { path: PathBuf, scored: usize, announced: usize },

    #[error("a report needs at least one sample log")]
    NoLogs,

    #[error("{}: the model's token pieces do not spell the prompt back; cannot audit", path.display())]
    Unauditable { path: PathBuf },

    /// A progress or output callback of the front end failed.
    #[error(transparent)]
    Consumer(Box<dyn std::error::Error + Send + Sync>),
}

/// Shard logs that do not tile one run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ShardError {
    #[error("shard {index} of {count}: a shard's index is below its count, and the count at least 1")]
    NoSuchShard { index: usize, count: usize },

    #[error("{shards} shards for {tasks} tasks: at most one shard per task")]
    TooManyShards { shards: usize, tasks: usize },

    #[error("{}: not a shard log (its header has no shard; `score --shard K/N` writes them)", path.display())]
    NotAShard { path: PathBuf },

    /// A shard whose run did not end normally (the log crate says how).
    #[error("{}: shard {shard} is incomplete: {why}", path.display())]
    ShardIncomplete { path: PathBuf, shard: usize, why: String },

    #[error("{}: shard {shard} is of another run than {}: its {field} differs\n  {}: {log}\n  this log: {now}", path.display(), first.display(), first.display())]
    OtherRun { path: PathBuf, shard: usize, field: &'static str, first: PathBuf, log: String, now: String },

    #[error("shard {shard} is given twice: {} and {}", first.display(), second.display())]
    ShardTwice { shard: usize, first: PathBuf, second: PathBuf },

    #[error("{absent} of the run's {count} shards missing: {}{}", missing.iter().map(|k| k.to_string()).collect::<Vec<_>>().join(", "), if *absent > missing.len() { format!(" and {} more", absent - missing.len()) } else { String::new() })]
    ShardsMissing { missing: Vec<usize>, absent: usize, count: usize },

    #[error("task {task} is scored by two shards: {} and {}", first.display(), second.display())]
    TaskInTwoShards { task: usize, first: PathBuf, second: PathBuf },

    #[error("the shards do not tile one run: {why}")]
    ShardsOtherTasks { why: String },
}

/// A sweep that cannot render, merge or compare.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SweepError {
    #[error("{}: not a saved sweep shard (`sweep --shard K/N --save-json` writes them)", path.display())]
    NotASweepShard {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },

    #[error("{}: a shard of another sweep: its {what} differ from this sweep's (give the flags the shards were run with)", path.display())]
    ShardOfOtherSweep { path: PathBuf, what: &'static str },

    #[error("{label}: task {task} is not in the letter scaffold (\"Question: …\\nA. …\\nAnswer:\" with options A, B, …); a sweep re-renders items, so it needs that exact layout (or a benchmark's source)")]
    NotLetterScaffold { label: String, task: usize },

    #[error("{name}: item {row} comes with a passage, which the letter formats have no place for; a sweep takes question-and-options benchmarks")]
    PassageItem { name: String, row: usize },

    #[error("{label}: no prompt formats to sweep")]
    NoFormats { label: String },

    #[error("{label}: no tasks to sweep")]
    NoItems { label: String },

    #[error("{label}: task {task}: its {options} options have no {format} IDs")]
    NoIds { label: String, task: usize, options: usize, format: String },

    #[error("{label}: PriDe needs at least two tasks: one to estimate the prior, one to debias")]
    PrideTooFewTasks { label: String },

    #[error("{label}: PriDe needs one number of options; task {task} has {options} where task {first} has {first_options}")]
    PrideMixedOptions { label: String, task: usize, options: usize, first: usize, first_options: usize },

    #[error("{}: not a saved sweep (the JSON of mcscore sweep)", path.display())]
    NotASweep {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },

    /// A saved sweep that parses but does not hold together.
    #[error("{}: not a sweep mcscore saved: {fault}", path.display())]
    BadSweep { path: PathBuf, fault: Box<SweepFault> },

    #[error("{}: swept other {what} than {}; only sweeps of the same items and formats compare", path.display(), first.display())]
    OtherSweep { path: PathBuf, what: &'static str, first: PathBuf },
}

/// Why a saved sweep, or a sweep shard, is not one mcscore wrote: a sweep
/// read back is reported as it was saved, so an edited one would print an
/// accuracy of 150 % or picks that add up to 200 %.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SweepFault {
    /// A shard written by a newer mcscore.
    #[error("a sweep shard of format {version} (this mcscore reads up to {max}): written by a newer mcscore")]
    NewerShard { version: u32, max: u32 },

    /// A shard index at or past the shard count.
    #[error("shard index {index} of {count} shards; an index is below the count")]
    ShardIndex { index: usize, count: usize },

    /// A prompt's row of log-probabilities that the analysis cannot index.
    #[error("prompt {prompt}: {found} log-probabilities (finite and at most 0 each) for {ids} IDs")]
    PromptRow { prompt: usize, found: usize, ids: usize },

    /// A sweep saved by a newer mcscore.
    #[error("results schema {version} (this mcscore reads up to {max}): saved by a newer mcscore")]
    NewerSchema { version: u64, max: u32 },

    /// No format or no model.
    #[error("{formats} formats and {models} models; a sweep has at least one of each")]
    Empty { formats: usize, models: usize },

    /// A model with results for another number of formats than the sweep lists.
    #[error("{model} has results for {found} formats, the sweep {formats}")]
    FormatCount { model: String, found: usize, formats: usize },

    /// PriDe results where the sweep ran none, or none where it ran PriDe.
    #[error("{model}'s format {format} {} PriDe results, the sweep's pride_alpha is {}", if *has { "has" } else { "has no" }, mcscore_log::or_none(*alpha))]
    Pride { model: String, format: String, has: bool, alpha: Option<f64> },

    /// One saved sweep given twice.
    #[error("the same file as {}: give each saved sweep once", earlier.display())]
    Repeated { earlier: PathBuf },

    /// A sweep of no tasks.
    #[error("0 tasks")]
    NoTasks,

    /// A format listed twice.
    #[error("format {0} is listed twice")]
    FormatTwice(String),

    /// No prompt scored, or a time that is not one.
    #[error("{model}: {prompts} prompts scored in {seconds} s")]
    Prompts { model: String, prompts: usize, seconds: f64 },

    /// A model's results out of the sweep's format order.
    #[error("{model}: results for format {found} where the sweep lists {listed}")]
    FormatOrder { model: String, found: String, listed: String },

    /// A share outside 0 to 1, or 0 to 100 in a sweep saved in points
    /// (`top`), a rounding's width allowed.
    #[error("{model}'s format {format}: {what} is {value}, not in 0 to {top}")]
    OutOfRange { model: String, format: String, what: &'static str, value: f64, top: f64 },

    /// An interval that does not hold its estimate.
    #[error("{model}'s format {format}: {what} [{low}, {high}] does not hold its accuracy")]
    Interval { model: String, format: String, what: &'static str, low: f64, high: f64 },

    /// A PIA outside 0 to 1.
    #[error("{model}'s format {format}: pia is {value}, not a share in 0 to 1")]
    Pia { model: String, format: String, value: f64 },

    /// Picks that are not one per task (per rotation with --circular) over 2 to 100 positions.
    #[error("{model}'s format {format}: {picked} picks over {positions} positions (and {rotations} rotations) for {tasks} tasks{}", if *circular { " in every rotation" } else { "" })]
    Picks { model: String, format: String, picked: u128, positions: usize, rotations: usize, tasks: usize, circular: bool },

    /// A spread of circular accuracies where not every format has one.
    #[error("{model}: circular accuracies across formats, but not in every format")]
    CircularSpread { model: String },

    /// A spread across formats that its formats' accuracies do not give.
    #[error("{model}: the spread across formats (mean, std, min, max) does not follow from the formats' accuracies")]
    Spread { model: String },
}

/// Why groups (a `--groups` file, or a manifest's) do not give each task
/// of the task file one group.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GroupsFault {
    /// A groups file that is not UTF-8.
    #[error("not UTF-8 at byte {byte}")]
    NotUtf8 { byte: usize },

    /// Another number of lines than the task file has tasks.
    #[error("{lines} lines, but the task file has {tasks} tasks: give one group per task, in file order")]
    LineCount { lines: usize, tasks: usize },

    /// An empty line: a task without a group.
    #[error("line {line} is empty: every task needs a group")]
    EmptyLine { line: usize },

    /// Groups for fewer tasks than a log holds.
    #[error("groups for {groups_for} tasks, but {} holds task {task}: give one group per task of the task file", log.display())]
    Reach { groups_for: usize, log: PathBuf, task: usize },

    /// A compared task with no group.
    #[error("no group for task {task}")]
    NoGroup { task: usize },

    /// A manifest entry whose group runs do not add up to its tasks.
    #[error("{name}'s {field} groups cover {}, but the entry has {tasks}: rebuild the manifest", covered.map_or_else(|| "more than 2^64 tasks".to_owned(), |t| format!("{t} tasks")))]
    ManifestCount { name: String, field: String, covered: Option<usize>, tasks: usize },

    /// A manifest's group run without a name.
    #[error("{name}'s {field} group run {run} has no name: every task needs a group")]
    UnnamedRun { name: String, field: String, run: usize },
}

/// A study file that cannot be planned.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StudyError {
    #[error("{}: not a study file", path.display())]
    NotAStudy {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },

    /// A study whose values cannot be planned, or written as a script or
    /// manifest.
    #[error("{}: {fault}", path.display())]
    BadStudy {
        /// The study file.
        path: PathBuf,
        /// What is wrong with it.
        fault: StudyFault,
    },
}

/// What is wrong with a study: one variant per value a plan refuses.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StudyFault {
    /// No model, file or settings entry.
    #[error("models, files and settings each need at least one entry")]
    Empty,

    /// A shard count outside 1 to the most a plan builds.
    #[error("shards is {shards}; give 1 to {max}")]
    Shards { shards: usize, max: usize },

    /// More array tasks than a plan builds.
    #[error("{models} models × {files} files × {settings} settings × {shards} shards is more than {max} array tasks")]
    TooManyTasks { models: usize, files: usize, settings: usize, shards: usize, max: usize },

    /// No output folder.
    #[error("out is empty; give the folder the logs go to")]
    NoOut,

    /// An output folder with a backslash, which sbatch reads as an escape.
    #[error("out {out:?} holds a backslash, which sbatch's output file patterns read as an escape; choose a folder without one")]
    OutBackslash { out: String },

    /// No mcscore binary to run.
    #[error("mcscore is empty; give the mcscore binary the jobs run (default: mcscore on PATH)")]
    NoBinary,

    /// An empty model or file path.
    #[error("{field} holds an empty path")]
    EmptyPath { field: &'static str },

    /// A control character, which would add a line to a script or manifest.
    #[error("{field} {value:?} holds the control character {character:?}; a study value is one line of plain text")]
    ControlCharacter { field: String, value: String, character: char },

    /// A study path for the merge job that is not absolute.
    #[error("slurm.study {path:?} is not an absolute path (the merge job runs in another folder)")]
    StudyPathRelative { path: String },

    /// The study file's own path, which a Slurm script names, is not UTF-8.
    #[error("the study's path is not UTF-8: give slurm.study, as the jobs see it")]
    StudyPathNotUtf8,

    /// No array task may run.
    #[error("slurm.max_running is 0; give at least 1 (array tasks that may run at once)")]
    MaxRunningZero,

    /// A Slurm task of no CPU.
    #[error("slurm.cpus_per_task is 0; give at least 1")]
    CpusPerTaskZero,

    /// A Kubernetes job of no pod, or pods of no CPU.
    #[error("kubernetes.parallelism and kubernetes.cpus must be at least 1")]
    KubernetesZero,

    /// A scheduler option with characters the scheduler does not take there.
    #[error("{field} {value:?} is not a valid value (for example {example})")]
    OptionValue { field: &'static str, value: String, example: &'static str },

    /// A Kubernetes job name that is not a DNS label.
    #[error("kubernetes.name {name:?} is not a DNS label (lower-case letters, digits and -, at most 63)")]
    NotDnsLabel { name: String },

    /// A value kubectl's YAML 1.1 parser would read as something other than a string.
    #[error("{field} {value:?} reads as a boolean, null, number or date in YAML 1.1, which kubectl's parser follows; choose another")]
    Yaml11 { field: &'static str, value: String },

    /// An empty Kubernetes image or mount.
    #[error("{field} is empty")]
    EmptyField { field: &'static str },

    /// A Kubernetes value --kubernetes needs, not given.
    #[error(
        "kubernetes.{field} is not set; --kubernetes needs the image, volume_claim and mount of your cluster (for example \"{field}\": \"{example}\")"
    )]
    KubernetesUnset { field: &'static str, example: &'static str },

    /// A Kubernetes mount that is not an absolute path.
    #[error("kubernetes.mount {mount:?} is not an absolute path")]
    MountRelative { mount: String },

    /// A path the pods would not see.
    #[error("{field}: {path} is not on the volume the job mounts at {mount} (kubernetes.mount): give absolute paths under it")]
    NotMounted { field: &'static str, path: String, mount: String },

    /// A settings name that cannot name files.
    #[error("settings name {name:?}: use letters, digits, - and _ (it names files)")]
    SettingsName { name: String },

    /// A flag the plan sets itself.
    #[error("settings {name:?}: {flag} is set by the plan")]
    PlannedFlag { name: String, flag: String },

    /// Flags `mcscore score` would refuse.
    #[error("settings {name:?} ({flags}): `mcscore score` would refuse them: {why}")]
    Refused { name: String, flags: String, why: String },

    /// Two models or files whose logs would have one name.
    #[error("two entries share the name {name:?}, which names their logs")]
    SharedName { name: String },

    /// A run's threads above the CPUs each task gets.
    #[error("settings {name:?} run -t {threads} threads, but each task gets {cpus} CPUs ({field}): raise {field} or lower -t")]
    Threads { name: String, threads: u32, cpus: u32, field: &'static str },

    /// Layers offloaded to a GPU the study does not request.
    #[error("settings {name:?} offload layers to a GPU (-ngl {layers}), but the study requests none: set {field}, or give -ngl 0")]
    NoGpu { name: String, layers: u32, field: &'static str },

    /// GPUs requested for a run that keeps every layer on the CPU.
    #[error(
        "the study requests {gpus} GPU(s) per task ({field}), but settings {name:?} keep every layer on the CPU (-ngl 0): plan CPU and GPU settings as two studies"
    )]
    CpuOnly { gpus: u32, field: &'static str, name: String },

    /// The Kubernetes manifest could not be written.
    #[error("writing the manifest")]
    Manifest(#[source] serde_norway::Error),
}

/// Sample logs that a report or comparison cannot put side by side: other
/// tasks or files, a task file that is not theirs, groups that do not cover
/// their tasks, a normalisation they did not log.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LogsError {
    /// `scored` and `first_scored` read "FILE (sha256 HASH)".
    #[error("{}: scored {scored}, but {} scored {first_scored}: a report compares runs on the same dataset", path.display(), first.display())]
    OtherDataset { path: PathBuf, scored: String, first: PathBuf, first_scored: String },

    #[error("{}: scored other tasks (or another order) than {}; score the same subset", path.display(), first.display())]
    OtherTasks { path: PathBuf, first: PathBuf },

    /// Two logs that `compare` cannot pair task by task.
    #[error("{}: not the same tasks as {}: its {field} differs\n  {}: {base_value}\n  this log: {value}", path.display(), base.display(), base.display())]
    NotPaired { path: PathBuf, base: PathBuf, field: &'static str, base_value: String, value: String },

    #[error("{}: the log holds no tasks: there is no accuracy to report or compare", path.display())]
    NoTasks { path: PathBuf },

    /// A groups file that does not give each task of the file one group.
    #[error("{}: {fault}", path.display())]
    BadGroups { path: PathBuf, fault: GroupsFault },

    /// Two runs of one model with the same scores on every task: one run
    /// given twice, which a report would rank against itself.
    #[error("{}: the same run as {} (model sha256 {model_sha256}, every task's scores the same): give each run once", again.display(), first.display())]
    RepeatedRun { again: PathBuf, first: PathBuf, model_sha256: String },

    /// The task file a log names is not where it names it.
    #[error("{}: the task file {} is not there; give the path of the task file the log scored", log.display(), path.display())]
    NoTaskFile { path: PathBuf, log: PathBuf },

    #[error("{}: task {task} is not in {}, which has {tasks} tasks: not the task file the log scored", log.display(), path.display())]
    TaskNotInFile { path: PathBuf, task: usize, tasks: usize, log: PathBuf },

    #[error("{}: task {task} has {logged} options, but {options} in {}: not the task file the log scored", log.display(), path.display())]
    OtherOptions { path: PathBuf, task: usize, options: usize, log: PathBuf, logged: usize },

    /// A task file that is not the one a log scored.
    #[error("{}: not the task file {} scored: its sha256 is {sha256}, the log's {logged}", path.display(), log.display())]
    OtherTaskFile { path: PathBuf, sha256: String, log: PathBuf, logged: String },

    #[error("{}: task {task} has no gold option (a lenient run)", path.display())]
    NoGold { path: PathBuf, task: usize },

    #[error("{}: the acc_pmi normalisation needs a log of `mcscore score --pmi`", path.display())]
    NoPmi { path: PathBuf },
}

/// A setting a sequential comparison cannot run with.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SequentialSetting {
    /// acc_pmi, which needs an unconditional pass it does not score.
    #[error("--normalisation acc-pmi needs the unconditional pass of `score --pmi`, which a sequential comparison does not score")]
    AccPmi,

    /// No OTHER model.
    #[error("a sequential comparison needs BASE and at least one OTHER model")]
    NoOther,

    /// A margin outside (0, 1].
    #[error("the margin is {0}; it is a difference of accuracies as fractions, above 0 and at most 1")]
    Margin(f64),

    /// An α outside (0, 0.5).
    #[error("alpha is {0}; it is an error rate above 0 and below 0.5")]
    Alpha(f64),

    /// A chunk or a task cap of 0.
    #[error("a chunk, and --max-tasks, are at least one task")]
    NoTasks,

    /// A resume without the log folder it continues.
    #[error("a resume continues the logs of a log folder; give the folder")]
    ResumeWithoutLogs,
}

/// A sequential comparison (`until_decided`) that cannot start or stop.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SequentialError {
    #[error("{}: not an order of the file's tasks: {why}", path.display())]
    NotAnOrder { path: PathBuf, why: String },

    #[error("{}: a run stopped by Ctrl-C cannot be ended as decided; finish it, and resume it later", path.display())]
    StopCancelled { path: PathBuf },

    /// A sequential comparison asked for something it cannot do: a usage
    /// error, whatever the inputs.
    #[error(transparent)]
    Setting(#[from] SequentialSetting),

    /// The models of a sequential comparison, held at once, would not fit.
    #[error("{}: with the {before} model(s) before it, the comparison needs about {:.1} GiB ({what}), but {:.1} GiB of memory is available; compare fewer models at once", model.display(), *needed as f64 / GIB, *available as f64 / GIB)]
    ModelsDoNotFit { model: PathBuf, before: usize, what: &'static str, needed: u64, available: u64 },

    /// A sequential comparison's log that its stopping rule does not explain.
    #[error("{}: {why}", path.display())]
    SequentialLog { path: PathBuf, why: String },
}

/// A chat template that cannot wrap the tasks.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ChatError {
    #[error("{}: the GGUF carries no chat template (tokenizer.chat_template); name one of llama.cpp's built-in templates or a Jinja file instead", model.display())]
    NoChatTemplate { model: PathBuf },

    /// A chat template that does not parse or render, or fails a guard.
    #[error("chat template {template}{}: {message}", line.map_or(String::new(), |l| format!(", line {l}")))]
    Template { template: String, line: Option<usize>, message: String },

    /// llama.cpp could not render with one of its built-in templates (the
    /// engine's error names the template and keeps llama.cpp's cause).
    #[error(transparent)]
    Builtin(EngineError),

    #[error("{}: task {task}: its question does not split into {shots} solved examples (each ending \"Answer: X\" and a blank line) and a question ending \"Answer:\"", path.display())]
    ShotsNotSplit { path: PathBuf, task: usize, shots: usize },

    #[error("{}: a system turn, or shots as turns, needs a chat template", path.display())]
    ChatWithoutTemplate { path: PathBuf },

    #[error("{}: a chat template applies to multiple-choice and HellaSwag files; Winogrande's options fill a blank inside the sentence, so there is no question to put in the user's turn", path.display())]
    ChatWinogrande { path: PathBuf },
}

/// A score job asked for something that cannot run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SpecError {
    #[error("{}: acc_pmi is not defined for Winogrande, whose options fill a blank rather than follow a context", path.display())]
    PmiWinogrande { path: PathBuf },

    #[error("{}: a job was lent the engine of {}; lend a job the engine of its own model", model.display(), engine.display())]
    LentEngine { model: PathBuf, engine: PathBuf },

    #[error("{}: a job with its own task order takes no subset, shard or acc_pmi pass", path.display())]
    OrderedWith { path: PathBuf },

    #[error("{}: a limit (the first N tasks) and a subset (llama-perplexity's pick of N) cannot be combined", path.display())]
    LimitWithSubset { path: PathBuf },

    #[error("{}: a limit of 0 tasks scores nothing; give at least 1", path.display())]
    ZeroLimit { path: PathBuf },
}

impl EvalError {
    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> EvalError {
        let path = path.into();
        move |source| EvalError::Io { path, source }
    }

    pub(crate) fn engine(path: impl Into<PathBuf>) -> impl Fn(EngineError) -> EvalError {
        let path = path.into();
        move |source| EvalError::Engine { path: path.clone(), source }
    }

    /// The engine error behind this one, if any (a front end adds flag hints).
    pub fn engine_error(&self) -> Option<&EngineError> {
        match self {
            EvalError::Engine { source, .. } | EvalError::Unconditional { source, .. } | EvalError::Load(source) => Some(source),
            EvalError::Prompt { source, .. } => Some(source),
            _ => None,
        }
    }
}
