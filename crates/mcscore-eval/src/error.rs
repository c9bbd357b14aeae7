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
    /// A task file, or another input or output as a file, could not be read
    /// or written, or holds faults.
    #[error(transparent)]
    Format(#[from] mcscore_format::Error),

    /// A benchmark's source files could not be read into items, or a
    /// manifest could not be read.
    #[error(transparent)]
    Dataset(#[from] mcscore_datasets::DatasetError),

    /// A sample log could not be read, written or resumed.
    #[error(transparent)]
    Log(#[from] mcscore_log::LogError),

    /// A file of image tasks (VLMEvalKit's TSV) that could not be read
    /// (boxed: its fault names a row in full, and every result carries this type).
    #[error(transparent)]
    Vqa(Box<mcscore_datasets::vqa::VqaError>),

    /// A scheme run could not run, resume or report.
    #[error(transparent)]
    Schemes(#[from] SchemesError),

    /// lm-eval's results asked of a task file no `build --lm-eval` entry records.
    #[error("{}: no manifest entry of `mcscore build --lm-eval` records this file (looked in: {}); export it with `mcscore build --lm-eval TASK`, or name its manifest with --manifest", path.display(), if looked.is_empty() { "no manifest.json beside it or in the working directory".to_owned() } else { looked.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ") })]
    NotAnLmEvalExport {
        /// The task file.
        path: PathBuf,
        /// The manifests looked in.
        looked: Vec<PathBuf>,
    },

    /// The model did not load (the engine's message names the model).
    #[error(transparent)]
    Load(EngineError),

    /// Scoring failed; `path` is the task file, model or item set concerned.
    #[error("{}", path.display())]
    Engine {
        /// The task file, the model, or a sweep's item set (its task file as given, or its benchmark's name).
        path: PathBuf,
        /// The engine's error.
        #[source]
        source: EngineError,
    },

    /// The unconditional pass of acc_pmi (options after "Answer:") failed.
    #[error("{}: the unconditional pass (options after \"Answer:\")", path.display())]
    Unconditional {
        /// The task file.
        path: PathBuf,
        /// The engine's error.
        #[source]
        source: EngineError,
    },

    /// Scoring failed on one prompt of a sweep.
    #[error("{label}: task {task} in format {format}, rotation {rotation} (prompt {prompt})")]
    Prompt {
        /// The task file as given, or the benchmark's name.
        label: String,
        /// The task's index in the file or source, from 0.
        task: usize,
        /// The format's name (`upper.dot.newline`).
        format: String,
        /// How far the options are rotated left, from 0.
        rotation: usize,
        /// The prompt's index among the sweep's prompts, from 0.
        prompt: usize,
        /// The engine's error.
        #[source]
        source: Box<EngineError>,
    },

    /// Shard logs that do not tile one run.
    #[error(transparent)]
    Shard(#[from] ShardError),

    /// A sweep that cannot render, merge or compare.
    #[error(transparent)]
    Sweep(#[from] SweepError),

    /// Sample logs that a report or comparison cannot put side by side.
    #[error(transparent)]
    Logs(#[from] LogsError),

    /// A sequential comparison that cannot start or stop.
    #[error(transparent)]
    Sequential(#[from] SequentialError),

    /// A chat template that cannot wrap the tasks.
    #[error(transparent)]
    Chat(#[from] ChatError),

    /// A score job asked for something that cannot run.
    #[error(transparent)]
    Spec(#[from] SpecError),

    /// A log whose header matches the run but whose task lines are not its tasks.
    #[error("{}: cannot resume: task line {} is task {logged}, but the run's task there is {} (the log was edited, or written by another mcscore)", path.display(), position + 1, run.map_or("none (the run has fewer tasks)".to_owned(), |t| t.to_string()))]
    ResumeOtherTasks {
        /// The log.
        path: PathBuf,
        /// The first task line that differs, from 0 among the task lines (the message counts from 1).
        position: usize,
        /// The task that line holds: its index in the file.
        logged: usize,
        /// The run's task at that position, by its index in the file; `None` where the run has fewer tasks.
        run: Option<usize>,
    },

    /// An output whose path is one of the job's inputs (by inode).
    #[error("{}: writing it would replace {}, one of the inputs; choose another folder", path.display(), input.display())]
    WouldReplaceInput {
        /// The output.
        path: PathBuf,
        /// The input it is the same file as, as given.
        input: PathBuf,
    },

    /// Reading or writing a file or folder failed.
    #[error("{}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },

    /// A run that scored fewer tasks than it announced.
    #[error("{}: scored {scored} tasks but {announced} were announced", path.display())]
    Incomplete {
        /// The task file; in a sweep, the model.
        path: PathBuf,
        /// Tasks scored (in a sweep, prompts).
        scored: usize,
        /// Tasks the run set out to score (in a sweep, prompts).
        announced: usize,
    },

    /// No sample log (or saved sweep, or sweep shard) given where at least
    /// one is needed.
    #[error("a report needs at least one sample log")]
    NoLogs,

    /// A model whose token pieces do not spell an audit prompt back, so that
    /// how it tokenises the option IDs cannot be audited.
    #[error("{}: the model's token pieces do not spell the prompt back; cannot audit", path.display())]
    Unauditable {
        /// The model.
        path: PathBuf,
    },

    /// A progress or output callback of the front end failed.
    #[error(transparent)]
    Consumer(Box<dyn std::error::Error + Send + Sync>),
}

/// Shard logs that do not tile one run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ShardError {
    /// A shard whose index is not below its count, or a count of 0.
    #[error("shard {index} of {count}: a shard's index is below its count, and the count at least 1")]
    NoSuchShard {
        /// Which shard, from 0 (`K` of `--shard K/N`).
        index: usize,
        /// How many shards the run is split into (`N`).
        count: usize,
    },

    /// More shards than the run has tasks.
    #[error("{shards} shards for {tasks} tasks: at most one shard per task")]
    TooManyShards {
        /// The shard count asked for.
        shards: usize,
        /// The run's tasks.
        tasks: usize,
    },

    /// A whole run's log given where shard logs are merged.
    #[error("{}: not a shard log (its header has no shard; `score --shard K/N` writes them)", path.display())]
    NotAShard {
        /// The log.
        path: PathBuf,
    },

    /// A shard whose run did not end normally (the log crate says how).
    #[error("{}: shard {shard} is incomplete: {why}", path.display())]
    ShardIncomplete {
        /// The shard's log.
        path: PathBuf,
        /// The shard's index, from 0.
        shard: usize,
        /// How its run ended, as the log reads.
        why: mcscore_log::Unfinished,
    },

    /// A shard of another run than the first shard given: the two differ in
    /// more than their index and tasks.
    #[error("{}: shard {shard} is of another run than {}: its {field} differs\n  {}: {log}\n  this log: {now}", path.display(), first.display(), first.display())]
    OtherRun {
        /// The shard's log (or saved sweep shard).
        path: PathBuf,
        /// The shard's index, from 0.
        shard: usize,
        /// The first field that differs, as the message names it.
        field: &'static str,
        /// The first shard given, which the others are checked against.
        first: PathBuf,
        /// The field's value in `first`.
        log: String,
        /// The field's value in this shard.
        now: String,
    },

    /// One shard index in two files.
    #[error("shard {shard} is given twice: {} and {}", first.display(), second.display())]
    ShardTwice {
        /// The shard's index, from 0.
        shard: usize,
        /// The file given first with that index.
        first: PathBuf,
        /// The file that gives it again.
        second: PathBuf,
    },

    /// Shards of the run that were not given.
    #[error("{absent} of the run's {count} shards missing: {}{}", missing.iter().map(|k| k.to_string()).collect::<Vec<_>>().join(", "), if *absent > missing.len() { format!(" and {} more", absent - missing.len()) } else { String::new() })]
    ShardsMissing {
        /// The first missing shards' indices, from 0, in order: at most 20, however many are missing.
        missing: Vec<usize>,
        /// How many shards are missing in all.
        absent: usize,
        /// How many shards the run is split into.
        count: usize,
    },

    /// A task logged by two shards.
    #[error("task {task} is scored by two shards: {} and {}", first.display(), second.display())]
    TaskInTwoShards {
        /// The task's index in the file, from 0.
        task: usize,
        /// The shard log that holds it first.
        first: PathBuf,
        /// Another shard log that holds it.
        second: PathBuf,
    },

    /// Shards that, each sound and all present, do not hold the run's tasks
    /// (or a sweep run's prompts) once each, in order.
    #[error("the shards do not tile one run: {why}")]
    ShardsOtherTasks {
        /// How they fall short, with the shards concerned.
        why: String,
    },
}

/// A scheme run (`mcscore schemes`) that cannot run, resume or report.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SchemesError {
    /// A task that is in neither scaffold the prompts re-render.
    #[error("{}: task {task} is in neither the letter scaffold (\"Question: …\\nA. …\\nAnswer:\" with options A, B, …) nor the text scaffold (Question: \"…\" Answer: before the option texts); the schemes ask the question in their own words, so they need one of those layouts", path.display())]
    NotScaffolded {
        /// The task file.
        path: PathBuf,
        /// The task's index in the file, from 0.
        task: usize,
    },

    /// No response mode asked.
    #[error("no response mode given; give one or more of NR, NR-Var, NM, Elim, Elim-NM, CBM, PPA, AUC")]
    NoModes,

    /// Settings under which responses would depend on what is generated together.
    #[error("-fa off: on the CPU, responses are generated under the batch rule only with flash attention (-fa on or auto); without it a response would depend on -np")]
    NoBatchRule,

    /// A prompt the engine refused or could not generate after.
    #[error("{}: task {task}, {mode}, turn {turn}", path.display())]
    Request {
        /// The task file.
        path: PathBuf,
        /// The task's index in the file.
        task: usize,
        /// The response mode.
        mode: &'static str,
        /// The turn, from 1 (AUC's attempts).
        turn: usize,
        /// The engine's error.
        #[source]
        source: Box<EngineError>,
    },

    /// A cancel (Ctrl-C) stopped the run between two chunks of tasks.
    #[error("interrupted; the log keeps every whole chunk of tasks: run again with --resume to finish")]
    Interrupted,

    /// A log that exists, not resumed.
    #[error("{}: a log is there already; give --resume to continue its run, or another path", path.display())]
    LogExists {
        /// The log.
        path: PathBuf,
    },

    /// A log another process is writing.
    #[error("{}: another mcscore process is writing this log; wait for it, or give another --logs folder", path.display())]
    LogLocked {
        /// The log.
        path: PathBuf,
    },

    /// A log resumed with other inputs or settings.
    #[error("{}: a log of another run: its {what}", path.display())]
    OtherRun {
        /// The log.
        path: PathBuf,
        /// The first field that differs, with both values.
        what: String,
    },

    /// A line of a log that is not what it should be.
    #[error("{}: line {line}: {message}", path.display())]
    LogLine {
        /// The log.
        path: PathBuf,
        /// The line, from 1.
        line: usize,
        /// What is wrong.
        message: String,
    },

    /// A run reported before it finished.
    #[error("{run}: {done} of its {tasks} tasks; finish it with `mcscore schemes --resume` before reporting it")]
    Incomplete {
        /// The log or model.
        run: String,
        /// Tasks done.
        done: usize,
        /// Tasks announced.
        tasks: usize,
    },

    /// Shard logs that do not merge into one run.
    #[error("{}: {what}", path.display())]
    Merge {
        /// The log at fault.
        path: PathBuf,
        /// What is wrong.
        what: String,
    },

    /// Runs of other tasks, modes or settings reported together.
    #[error("{run}: not of the same task file, tasks, response modes and --reasoning as {first}")]
    OtherTasks {
        /// The run at fault.
        run: String,
        /// The first run.
        first: String,
    },
}

/// A sweep that cannot render, merge or compare.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SweepError {
    /// A file given as a sweep shard that is not the JSON of one.
    #[error("{}: not a saved sweep shard (`sweep --shard K/N --save-json` writes them)", path.display())]
    NotASweepShard {
        /// The file.
        path: PathBuf,
        /// The JSON parser's error.
        #[source]
        source: serde_json::Error,
    },

    /// A sweep shard of other items, formats, rotations, instruction line,
    /// PriDe share or chat template than the sweep merging it.
    #[error("{}: a shard of another sweep: its {what} differ from this sweep's (give the flags the shards were run with)", path.display())]
    ShardOfOtherSweep {
        /// The shard.
        path: PathBuf,
        /// The first thing that differs, as the message names it (`formats`, `instruction line`, …).
        what: &'static str,
    },

    /// A task of a letter-mode task file that does not parse back into an
    /// item.
    #[error("{label}: task {task} is not in the letter scaffold (\"Question: …\\nA. …\\nAnswer:\" with options A, B, …); a sweep re-renders items, so it needs that exact layout (or a benchmark's source)")]
    NotLetterScaffold {
        /// The task file as given.
        label: String,
        /// The task's index in the file, from 0.
        task: usize,
    },

    /// A benchmark item with a passage.
    #[error("{name}: item {row} comes with a passage, which the letter formats have no place for; a sweep takes question-and-options benchmarks")]
    PassageItem {
        /// The benchmark's name.
        name: String,
        /// The item's index among the benchmark's items, from 0.
        row: usize,
    },

    /// A sweep of no format.
    #[error("{label}: no prompt formats to sweep")]
    NoFormats {
        /// The task file as given, or the benchmark's name.
        label: String,
    },

    /// A task file or source of no task.
    #[error("{label}: no tasks to sweep")]
    NoItems {
        /// The task file as given, or the benchmark's name.
        label: String,
    },

    /// A task with more options than a format has IDs.
    #[error("{label}: task {task}: its {options} options have no {format} IDs")]
    NoIds {
        /// The task file as given, or the benchmark's name.
        label: String,
        /// The task's index in the file or source, from 0.
        task: usize,
        /// Its options.
        options: usize,
        /// The format's name.
        format: String,
    },

    /// PriDe asked of fewer than two tasks.
    #[error("{label}: PriDe needs at least two tasks: one to estimate the prior, one to debias")]
    PrideTooFewTasks {
        /// The task file as given, or the benchmark's name.
        label: String,
    },

    /// PriDe asked of tasks with different numbers of options.
    #[error("{label}: PriDe needs one number of options; task {task} has {options} where task {first} has {first_options}")]
    PrideMixedOptions {
        /// The task file as given, or the benchmark's name.
        label: String,
        /// The first swept task whose number of options differs from the first's: its index in the file or source, from 0.
        task: usize,
        /// Its options.
        options: usize,
        /// The first swept task: its index in the file or source, from 0.
        first: usize,
        /// The first swept task's options.
        first_options: usize,
    },

    /// A file given as a saved sweep that is not the JSON of one.
    #[error("{}: not a saved sweep (the JSON of mcscore sweep)", path.display())]
    NotASweep {
        /// The file.
        path: PathBuf,
        /// The JSON parser's error.
        #[source]
        source: serde_json::Error,
    },

    /// A saved sweep that parses but does not hold together.
    #[error("{}: not a sweep mcscore saved: {fault}", path.display())]
    BadSweep {
        /// The saved sweep or sweep shard.
        path: PathBuf,
        /// What does not hold together.
        fault: Box<SweepFault>,
    },

    /// Saved sweeps of other items, formats or settings than the first,
    /// given side by side.
    #[error("{}: swept other {what} than {}; only sweeps of the same items and formats compare", path.display(), first.display())]
    OtherSweep {
        /// The saved sweep.
        path: PathBuf,
        /// The first thing that differs, as the message names it (`formats`, `instruction line`, …).
        what: &'static str,
        /// The first saved sweep given.
        first: PathBuf,
    },
}

/// Why a saved sweep, or a sweep shard, is not one mcscore wrote: a sweep
/// read back is reported as it was saved, so an edited one would print an
/// accuracy of 150 % or picks that add up to 200 %.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SweepFault {
    /// A shard written by a newer mcscore.
    #[error("a sweep shard of format {version} (this mcscore reads up to {max}): written by a newer mcscore")]
    NewerShard {
        /// The shard's format version.
        version: u32,
        /// The newest this mcscore reads.
        max: u32,
    },

    /// A shard index at or past the shard count.
    #[error("shard index {index} of {count} shards; an index is below the count")]
    ShardIndex {
        /// The shard's index as saved.
        index: usize,
        /// The shard count as saved.
        count: usize,
    },

    /// A prompt's row of log-probabilities that the analysis cannot index.
    #[error("prompt {prompt}: {found} log-probabilities (finite and at most 0 each) for {ids} IDs")]
    PromptRow {
        /// The prompt's index among the sweep's prompts, from 0.
        prompt: usize,
        /// The log-probabilities its row holds.
        found: usize,
        /// The IDs the prompt has (0 for a prompt past the sweep's last): one log-probability each.
        ids: usize,
    },

    /// A sweep saved by a newer mcscore.
    #[error("results schema {version} (this mcscore reads up to {max}): saved by a newer mcscore")]
    NewerSchema {
        /// The sweep's `schema_version`.
        version: u64,
        /// The newest this mcscore reads.
        max: u32,
    },

    /// No format or no model.
    #[error("{formats} formats and {models} models; a sweep has at least one of each")]
    Empty {
        /// The formats the sweep lists.
        formats: usize,
        /// The models it holds results for.
        models: usize,
    },

    /// A model with results for another number of formats than the sweep lists.
    #[error("{model} has results for {found} formats, the sweep {formats}")]
    FormatCount {
        /// The model's path as saved.
        model: String,
        /// The formats it has results for.
        found: usize,
        /// The formats the sweep lists.
        formats: usize,
    },

    /// PriDe results where the sweep ran none, or none where it ran PriDe.
    #[error("{model}'s format {format} {} PriDe results, the sweep's pride_alpha is {}", if *has { "has" } else { "has no" }, mcscore_log::or_none(*alpha))]
    Pride {
        /// The model's path as saved.
        model: String,
        /// The format's name.
        format: String,
        /// Whether the format has PriDe results.
        has: bool,
        /// The sweep's PriDe calibration share α as saved; `None` for a sweep without PriDe.
        alpha: Option<f64>,
    },

    /// One saved sweep given twice.
    #[error("the same file as {}: give each saved sweep once", earlier.display())]
    Repeated {
        /// The path it was given by before.
        earlier: PathBuf,
    },

    /// A sweep of no tasks.
    #[error("0 tasks")]
    NoTasks,

    /// A format listed twice.
    #[error("format {0} is listed twice")]
    FormatTwice(String),

    /// No prompt scored, or a time that is not one.
    #[error("{model}: {prompts} prompts scored in {seconds} s")]
    Prompts {
        /// The model's path as saved.
        model: String,
        /// The prompts it scored.
        prompts: usize,
        /// Its scoring time as saved, in seconds: NaN or below 0 where this is the fault.
        seconds: f64,
    },

    /// A model's results out of the sweep's format order.
    #[error("{model}: results for format {found} where the sweep lists {listed}")]
    FormatOrder {
        /// The model's path as saved.
        model: String,
        /// The format its results name at the first place that differs.
        found: String,
        /// The format the sweep lists there.
        listed: String,
    },

    /// A share outside 0 to 1, or 0 to 100 in a sweep saved in points
    /// (`top`), a rounding's width allowed.
    #[error("{model}'s format {format}: {what} is {value}, not in 0 to {top}")]
    OutOfRange {
        /// The model's path as saved.
        model: String,
        /// The format's name.
        format: String,
        /// Which figure, as the message names it (`accuracy`, `rstd`, `PriDe's accuracy_after`, …).
        what: &'static str,
        /// The figure as saved: a fraction, or points in a sweep saved before schema 2.
        value: f64,
        /// A full share as the sweep writes it: 1, or 100 in a sweep saved before schema 2.
        top: f64,
    },

    /// An interval that does not hold its estimate.
    #[error("{model}'s format {format}: {what} [{low}, {high}] does not hold its accuracy")]
    Interval {
        /// The model's path as saved.
        model: String,
        /// The format's name.
        format: String,
        /// Which interval: `accuracy_interval` or `circular_interval`.
        what: &'static str,
        /// Its lower bound as saved: a fraction, or points in a sweep saved before schema 2.
        low: f64,
        /// Its upper bound, as `low`; below `low` where that is the fault.
        high: f64,
    },

    /// A PIA outside 0 to 1.
    #[error("{model}'s format {format}: pia is {value}, not a share in 0 to 1")]
    Pia {
        /// The model's path as saved.
        model: String,
        /// The format's name.
        format: String,
        /// The PIA as saved (a fraction in every schema).
        value: f64,
    },

    /// Picks that are not one per task (per rotation with --circular) over 2 to 100 positions.
    #[error("{model}'s format {format}: {picked} picks over {positions} positions (and {rotations} rotations) for {tasks} tasks{}", if *circular { " in every rotation" } else { "" })]
    Picks {
        /// The model's path as saved.
        model: String,
        /// The format's name.
        format: String,
        /// The picks counted over every position.
        picked: u128,
        /// The positions picks are counted for.
        positions: usize,
        /// The rotations with an accuracy of their own (more than `positions` is a fault too).
        rotations: usize,
        /// The tasks the sweep scored.
        tasks: usize,
        /// Whether the sweep scored every rotation (`--circular`).
        circular: bool,
    },

    /// A spread of circular accuracies where not every format has one.
    #[error("{model}: circular accuracies across formats, but not in every format")]
    CircularSpread {
        /// The model's path as saved.
        model: String,
    },

    /// A spread across formats that its formats' accuracies do not give.
    #[error("{model}: the spread across formats (mean, std, min, max) does not follow from the formats' accuracies")]
    Spread {
        /// The model's path as saved.
        model: String,
    },
}

/// Why groups (a `--groups` file, or a manifest's) do not give each task
/// of the task file one group.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GroupsFault {
    /// A groups file that is not UTF-8.
    #[error("not UTF-8 at byte {byte}")]
    NotUtf8 {
        /// The offset of the first byte that is not, from 0.
        byte: usize,
    },

    /// Another number of lines than the task file has tasks.
    #[error("{lines} lines, but the task file has {tasks} tasks: give one group per task, in file order")]
    LineCount {
        /// The groups file's lines.
        lines: usize,
        /// The task file's tasks.
        tasks: usize,
    },

    /// An empty line: a task without a group.
    #[error("line {line} is empty: every task needs a group")]
    EmptyLine {
        /// The first empty line, counting from 1.
        line: usize,
    },

    /// Groups for fewer tasks than a log holds.
    #[error("groups for {groups_for} tasks, but {} holds task {task}: give one group per task of the task file", log.display())]
    Reach {
        /// The tasks the groups cover.
        groups_for: usize,
        /// The log.
        log: PathBuf,
        /// The last task it holds, by its index in the file (from 0).
        task: usize,
    },

    /// A compared task with no group.
    #[error("no group for task {task}")]
    NoGroup {
        /// The task's index in the file, from 0.
        task: usize,
    },

    /// A manifest entry whose group runs do not add up to its tasks.
    #[error("{name}'s {field} groups cover {}, but the entry has {tasks}: rebuild the manifest", covered.map_or_else(|| "more than 2^64 tasks".to_owned(), |t| format!("{t} tasks")))]
    ManifestCount {
        /// The entry's name.
        name: String,
        /// The source field its groups come from.
        field: String,
        /// The tasks its runs of consecutive tasks add up to; `None` where the sum overflows.
        covered: Option<usize>,
        /// The entry's tasks.
        tasks: usize,
    },

    /// A manifest's group run without a name.
    #[error("{name}'s {field} group run {run} has no name: every task needs a group")]
    UnnamedRun {
        /// The entry's name.
        name: String,
        /// The source field its groups come from.
        field: String,
        /// Which of its runs of consecutive tasks, counting from 1.
        run: usize,
    },
}

/// Sample logs that a report or comparison cannot put side by side: other
/// tasks or files, a task file that is not theirs, groups that do not cover
/// their tasks, a normalisation they did not log.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LogsError {
    /// `scored` and `first_scored` read "FILE (sha256 HASH)".
    #[error("{}: scored {scored}, but {} scored {first_scored}: a report compares runs on the same dataset", path.display(), first.display())]
    OtherDataset {
        /// The log.
        path: PathBuf,
        /// The task file it scored.
        scored: String,
        /// The first log given.
        first: PathBuf,
        /// The task file the first log scored.
        first_scored: String,
    },

    /// Logs of one task file that hold other tasks, or the same in another
    /// order.
    #[error("{}: scored other tasks (or another order) than {}; score the same subset", path.display(), first.display())]
    OtherTasks {
        /// The log.
        path: PathBuf,
        /// The first log given.
        first: PathBuf,
    },

    /// Two logs that `compare` cannot pair task by task.
    #[error("{}: not the same tasks as {}: its {field} differs\n  {}: {base_value}\n  this log: {value}", path.display(), base.display(), base.display())]
    NotPaired {
        /// An OTHER's log.
        path: PathBuf,
        /// BASE's log.
        base: PathBuf,
        /// The first thing that differs, as the message names it (`task file`, `mode`, `task list`, `options of a task`).
        field: &'static str,
        /// What BASE's log holds there.
        base_value: String,
        /// What the OTHER's log holds there.
        value: String,
    },

    /// A log with no task line.
    #[error("{}: the log holds no tasks: there is no accuracy to report or compare", path.display())]
    NoTasks {
        /// The log.
        path: PathBuf,
    },

    /// A groups file that does not give each task of the file one group.
    #[error("{}: {fault}", path.display())]
    BadGroups {
        /// The groups file or manifest; for a task the groups miss, where they come from as the output names it
        /// (`MANIFEST: NAME's FIELD` for a manifest's).
        path: PathBuf,
        /// What is wrong with them.
        fault: GroupsFault,
    },

    /// Two runs of one model with the same scores on every task: one run
    /// given twice, which a report would rank against itself.
    #[error("{}: the same run as {} (model sha256 {model_sha256}, every task's scores the same): give each run once", again.display(), first.display())]
    RepeatedRun {
        /// The log given later.
        again: PathBuf,
        /// The log given first.
        first: PathBuf,
        /// The model's sha256, in hex.
        model_sha256: String,
    },

    /// The task file a log names is not where it names it.
    #[error("{}: the task file {} is not there; give the path of the task file the log scored", log.display(), path.display())]
    NoTaskFile {
        /// The task file: the path given, else the one the log names.
        path: PathBuf,
        /// The log.
        log: PathBuf,
    },

    /// A task a log holds that is past the end of the task file.
    #[error("{}: task {task} is not in {}, which has {tasks} tasks: not the task file the log scored", log.display(), path.display())]
    TaskNotInFile {
        /// The task file.
        path: PathBuf,
        /// The task's index in the file, as the log holds it (from 0).
        task: usize,
        /// The task file's tasks.
        tasks: usize,
        /// The log.
        log: PathBuf,
    },

    /// A task with another number of options in the task file than in a log.
    #[error("{}: task {task} has {logged} options, but {options} in {}: not the task file the log scored", log.display(), path.display())]
    OtherOptions {
        /// The task file.
        path: PathBuf,
        /// The task's index in the file, from 0.
        task: usize,
        /// Its options in the task file.
        options: usize,
        /// The log.
        log: PathBuf,
        /// Its options in the log.
        logged: usize,
    },

    /// A task file that is not the one a log scored.
    #[error("{}: not the task file {} scored: its sha256 is {sha256}, the log's {logged}", path.display(), log.display())]
    OtherTaskFile {
        /// The task file.
        path: PathBuf,
        /// Its sha256, in hex.
        sha256: String,
        /// The log.
        log: PathBuf,
        /// The sha256 of the task file the log scored, in hex.
        logged: String,
    },

    /// A task without a gold option, where a report or comparison needs one.
    #[error("{}: task {task} has no gold option (a lenient run)", path.display())]
    NoGold {
        /// The log.
        path: PathBuf,
        /// The task's index in the file, from 0.
        task: usize,
    },

    /// acc_pmi asked of a log that holds no unconditional pass.
    #[error("{}: the acc_pmi normalisation needs a log of `mcscore score --pmi`", path.display())]
    NoPmi {
        /// The log.
        path: PathBuf,
    },
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
    /// A task order that names a task the file lacks, or one task twice.
    #[error("{}: not an order of the file's tasks: {why}", path.display())]
    NotAnOrder {
        /// The task file.
        path: PathBuf,
        /// Which position is at fault, and how.
        why: String,
    },

    /// A run cancelled before it was asked to end as decided.
    #[error("{}: a run stopped by Ctrl-C cannot be ended as decided; finish it, and resume it later", path.display())]
    StopCancelled {
        /// The task file.
        path: PathBuf,
    },

    /// A sequential comparison asked for something it cannot do: a usage
    /// error, whatever the inputs.
    #[error(transparent)]
    Setting(#[from] SequentialSetting),

    /// The models of a sequential comparison, held at once, would not fit.
    #[error("{}: with the {before} model(s) before it, the comparison needs about {:.1} GiB ({what}), but {:.1} GiB of memory is available; compare fewer models at once", model.display(), *needed as f64 / GIB, *available as f64 / GIB)]
    ModelsDoNotFit {
        /// The model that would not fit: the next to load, or the one with the largest context.
        model: PathBuf,
        /// The models held with it: those loaded before it, or, for the largest context, every other model.
        before: usize,
        /// What `needed` counts, as the message names it.
        what: &'static str,
        /// The memory needed, in bytes.
        needed: u64,
        /// The memory available before any model was loaded, in bytes.
        available: u64,
    },

    /// A sequential comparison's log that its stopping rule does not explain.
    #[error("{}: {why}", path.display())]
    SequentialLog {
        /// The log (the model's path, where the comparison keeps no logs).
        path: PathBuf,
        /// Where the log and the stopping rule part.
        why: String,
    },
}

/// A chat template that cannot wrap the tasks.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ChatError {
    /// The model's own template asked for, where the GGUF has none.
    #[error("{}: the GGUF carries no chat template (tokenizer.chat_template); name one of llama.cpp's built-in templates or a Jinja file instead", model.display())]
    NoChatTemplate {
        /// The model.
        model: PathBuf,
    },

    /// A chat template that does not parse or render, or fails a guard.
    #[error("chat template {template}{}: {message}", line.map_or(String::new(), |l| format!(", line {l}")))]
    Template {
        /// The template as messages name it: its file, or the model's path with "(its tokenizer.chat_template)".
        template: String,
        /// The template's line at fault, counting from 1, where the Jinja engine says.
        line: Option<usize>,
        /// What is wrong.
        message: String,
    },

    /// llama.cpp could not render with one of its built-in templates (the
    /// engine's error names the template and keeps llama.cpp's cause).
    #[error(transparent)]
    Builtin(EngineError),

    /// A question that does not split into the solved examples asked for
    /// (shots as turns) and the question asked.
    #[error("{}: task {task}: its question does not split into {shots} solved examples (each ending \"Answer: X\" and a blank line) and a question ending \"Answer:\"", path.display())]
    ShotsNotSplit {
        /// The task file.
        path: PathBuf,
        /// The task's index in the file, from 0.
        task: usize,
        /// The solved examples asked for.
        shots: usize,
    },

    /// A system turn, or shots as turns, without a chat template to put them in.
    #[error("{}: a system turn, or shots as turns, needs a chat template", path.display())]
    ChatWithoutTemplate {
        /// The task file.
        path: PathBuf,
    },

    /// A chat template asked of a Winogrande file.
    #[error("{}: a chat template applies to multiple-choice and HellaSwag files; Winogrande's options fill a blank inside the sentence, so there is no question to put in the user's turn", path.display())]
    ChatWinogrande {
        /// The task file.
        path: PathBuf,
    },
}

/// A score job asked for something that cannot run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SpecError {
    /// acc_pmi's unconditional pass asked of a Winogrande file.
    #[error("{}: acc_pmi is not defined for Winogrande, whose options fill a blank rather than follow a context", path.display())]
    PmiWinogrande {
        /// The task file.
        path: PathBuf,
    },

    /// A chat template asked of a file scored as lm-eval scores it: lm-eval
    /// renders its chat templates into the requests it exports.
    #[error("{}: a chat template does not apply to a file scored as lm-eval scores it; lm-eval renders its own chat template into the requests (export with it applied)", path.display())]
    LmEvalChat {
        /// The task file.
        path: PathBuf,
    },

    /// A job lent an engine loaded from another model than its own.
    #[error("{}: a job was lent the engine of {}; lend a job the engine of its own model", model.display(), engine.display())]
    LentEngine {
        /// The job's model.
        model: PathBuf,
        /// The model the engine was loaded from.
        engine: PathBuf,
    },

    /// A job lent an engine whose projector is not the job's (`--mmproj`).
    #[error("{}: a job for projector {} was lent an engine with {}; attach the job's projector", model.display(), or_none_path(wanted.as_deref()), or_none_path(attached.as_deref()))]
    LentProjector {
        /// The job's model.
        model: PathBuf,
        /// The job's projector.
        wanted: Option<PathBuf>,
        /// The engine's.
        attached: Option<PathBuf>,
    },

    /// A file of image tasks and no projector to read its images.
    #[error("{}: a file of image tasks needs the model's vision projector: `mcscore score --mmproj FILE` or `mcscore sweep --mmproj FILE` (other commands do not take image files yet)", path.display())]
    ImagesWithoutProjector {
        /// The file.
        path: PathBuf,
    },

    /// A file of image tasks asked to score in a way image tasks do not take yet.
    #[error("{}: {flag} does not take a file of image tasks yet", path.display())]
    ImagesWith {
        /// The file.
        path: PathBuf,
        /// The flag.
        flag: &'static str,
    },

    /// A job with its own task order that also asks for a subset, a limit, a
    /// shard or acc_pmi's unconditional pass.
    #[error("{}: a job with its own task order takes no subset, shard or acc_pmi pass", path.display())]
    OrderedWith {
        /// The task file.
        path: PathBuf,
    },

    /// A limit and a subset asked together.
    #[error("{}: a limit (the first N tasks) and a subset (llama-perplexity's pick of N) cannot be combined", path.display())]
    LimitWithSubset {
        /// The task file.
        path: PathBuf,
    },

    /// A limit of 0 tasks.
    #[error("{}: a limit of 0 tasks scores nothing; give at least 1", path.display())]
    ZeroLimit {
        /// The task file.
        path: PathBuf,
    },

    /// A limit per group, with groups that do not reach every task.
    #[error("{}: a limit per group needs one group for each of the file's {tasks} tasks, but the groups are of {reach} tasks", path.display())]
    LimitGroupsShort {
        /// The task file.
        path: PathBuf,
        /// Tasks the groups reach.
        reach: usize,
        /// The file's tasks.
        tasks: usize,
    },
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
            EvalError::Schemes(SchemesError::Request { source, .. }) => Some(&**source),
            _ => None,
        }
    }
}

/// A path in a message, or "none".
fn or_none_path(path: Option<&std::path::Path>) -> String {
    path.map_or_else(|| "none".to_owned(), |p| p.display().to_string())
}

impl From<mcscore_datasets::vqa::VqaError> for EvalError {
    fn from(error: mcscore_datasets::vqa::VqaError) -> EvalError {
        EvalError::Vqa(Box::new(error))
    }
}
