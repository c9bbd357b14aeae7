//! What makes logs parts of one run ([`RunIdentity`]), and how a message
//! names the first field in which two runs differ.

use crate::header::{or_none, ChatHeader, Header, Sequential, ShardHeader, TaskKind};
// Named only in doc links.
#[cfg(doc)]
use crate::header::LOG_VERSION;

/// The inputs a run read, by content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Input {
    /// The content's sha256, as hex.
    pub sha256: String,
    /// Its size.
    pub bytes: u64,
}

/// What makes logs parts of one run: the inputs by content, what was scored
/// and how, the chat template, the log format and mcscore's version, and the
/// shard. `--resume` and shard merges check it through one
/// [`RunIdentity::mismatch`], which names the first field that differs.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RunIdentity {
    /// The chat template and its guards ([`ChatHeader::identity`]): the path
    /// it was given by and the generation prompt, which follows from the
    /// rest, set aside.
    pub chat: Option<ChatHeader>,
    /// The log format ([`LOG_VERSION`]).
    pub version: u32,
    /// The model, by content.
    pub model: Input,
    /// The task file, by content.
    pub file: Input,
    /// Tasks announced (for a shard: its own).
    pub tasks: usize,
    /// `--multiple-choice-tasks`, if a subset was scored.
    pub selection: Option<usize>,
    /// `--limit`, if the file's first tasks were scored.
    pub limit: Option<usize>,
    /// Whether the limit counted each group's tasks.
    pub limit_per_group: bool,
    /// The mode scored.
    pub mode: TaskKind,
    /// Read as llama.cpp reads a file that fails validation (`--lenient`).
    pub lenient: bool,
    /// Each option also scored without its question (`--pmi`).
    pub pmi: bool,
    /// The engine's settings that decide which kernels run ([`Header::kernels`]).
    pub kernels: String,
    /// A sequential comparison's order and stopping rule.
    pub sequential: Option<Sequential>,
    /// The mcscore that wrote the log.
    pub mcscore: String,
    /// The shard, in a shard's log.
    pub shard: Option<ShardHeader>,
    /// The vision projector, by content, where images were read.
    pub projector: Option<Input>,
    /// The images of a file of image tasks, by content ([`Header::images_sha256`]).
    pub images: Option<String>,
}

/// The first field of two identities (a run's, a sweep's) that differs,
/// with both values as a message shows them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// The field, as a message names it.
    pub field: &'static str,
    /// Its value in the earlier identity (a log's, the first shard's).
    pub was: String,
    /// Its value now.
    pub now: String,
}

impl Mismatch {
    /// `field`'s mismatch where `was` and `now` differ, each shown by `show`
    /// (called only then).
    pub fn check<T: PartialEq + ?Sized>(field: &'static str, was: &T, now: &T, show: impl Fn(&T) -> String) -> Option<Mismatch> {
        (was != now).then(|| Mismatch { field, was: show(was), now: show(now) })
    }
}

impl RunIdentity {
    /// The identity a log's header gives its run.
    pub fn of(header: &Header) -> RunIdentity {
        RunIdentity {
            chat: header.chat.clone().map(|chat| ChatHeader { template: String::new(), generation_prompt: String::new(), ..chat }),
            version: header.version,
            model: Input { sha256: header.model_sha256.clone(), bytes: header.model_bytes },
            file: Input { sha256: header.file_sha256.clone(), bytes: header.file_bytes },
            tasks: header.tasks,
            selection: header.selection,
            limit: header.limit,
            limit_per_group: header.limit_per_group,
            mode: header.mode,
            lenient: header.lenient,
            pmi: header.pmi,
            kernels: header.kernels.clone(),
            sequential: header.sequential.clone(),
            mcscore: header.mcscore.clone(),
            shard: header.shard.clone(),
            projector: header.projector.as_ref().map(|p| Input { sha256: p.sha256.clone(), bytes: p.bytes }),
            images: header.images_sha256.clone(),
        }
    }

    /// The identity of the whole run a shard log is part of: what differs
    /// from shard to shard of one run (its task count and index) set aside.
    pub fn of_run(header: &Header) -> RunIdentity {
        let mut identity = RunIdentity::of(header);
        identity.tasks = 0;
        if let Some(shard) = identity.shard.as_mut() {
            shard.index = 0;
        }
        identity
    }

    /// The first field that differs from `now`'s, with both values; the chat
    /// template first (it once raised the version).
    pub fn mismatch(&self, now: &RunIdentity) -> Option<Mismatch> {
        let shown = |value: &dyn std::fmt::Display| value.to_string();
        Mismatch::check("chat template", &self.chat, &now.chat, |c| chat_identity(c.as_ref()))
            .or_else(|| Mismatch::check("version", &self.version, &now.version, |v| shown(v)))
            .or_else(|| Mismatch::check("model_sha256", &self.model.sha256, &now.model.sha256, String::clone))
            .or_else(|| Mismatch::check("model_bytes", &self.model.bytes, &now.model.bytes, |v| shown(v)))
            .or_else(|| Mismatch::check("projector_sha256", &self.projector, &now.projector, |p| or_none(p.as_ref().map(|p| &p.sha256))))
            .or_else(|| Mismatch::check("file_sha256", &self.file.sha256, &now.file.sha256, String::clone))
            .or_else(|| Mismatch::check("file_bytes", &self.file.bytes, &now.file.bytes, |v| shown(v)))
            .or_else(|| Mismatch::check("images_sha256", &self.images, &now.images, |v| or_none(v.as_ref())))
            .or_else(|| Mismatch::check("tasks", &self.tasks, &now.tasks, |v| shown(v)))
            .or_else(|| Mismatch::check("selection", &self.selection, &now.selection, |v| or_none(v.as_ref())))
            .or_else(|| Mismatch::check("limit", &self.limit, &now.limit, |v| or_none(v.as_ref())))
            .or_else(|| Mismatch::check("limit per group", &self.limit_per_group, &now.limit_per_group, |v| v.to_string()))
            .or_else(|| Mismatch::check("mode", &self.mode, &now.mode, |v| shown(v)))
            .or_else(|| Mismatch::check("lenient", &self.lenient, &now.lenient, |v| shown(v)))
            .or_else(|| Mismatch::check("pmi", &self.pmi, &now.pmi, |v| shown(v)))
            .or_else(|| Mismatch::check("settings", &self.kernels, &now.kernels, String::clone))
            .or_else(|| Mismatch::check("sequential comparison", &self.sequential, &now.sequential, |s| describe_sequential(s.as_ref())))
            .or_else(|| Mismatch::check("mcscore", &self.mcscore, &now.mcscore, String::clone))
            // A shard's fields, or "none" for each in the log of a whole run.
            .or_else(|| shard_field("shard index", &self.shard, &now.shard, |s| s.index.to_string()))
            .or_else(|| shard_field("shard count", &self.shard, &now.shard, |s| s.count.to_string()))
            .or_else(|| shard_field("partition rule", &self.shard, &now.shard, |s| s.rule.clone()))
            .or_else(|| shard_field("run tasks", &self.shard, &now.shard, |s| s.run_tasks.to_string()))
            .or_else(|| shard_field("run task list (run_sha256)", &self.shard, &now.shard, |s| s.run_sha256.clone()))
    }
}

/// How an input (a model, a task file) is named in text, tables, plots and
/// file names, by every command: its file stem (`gemma-3-270m-q4_k_m` for
/// `models/gemma-3-270m-q4_k_m.gguf`), or the whole path where it has none.
pub fn label(path: &str) -> String {
    std::path::Path::new(path).file_stem().map_or_else(|| path.to_owned(), |s| s.to_string_lossy().into_owned())
}

/// A run's chat template and its guards ([`ChatHeader::identity`]), or
/// "none", for a refusal that names what differs.
pub fn chat_identity(chat: Option<&ChatHeader>) -> String {
    chat.map_or_else(|| "none".to_owned(), ChatHeader::identity)
}

/// One field of two runs' shards ("none" for the log of a whole run).
fn shard_field(
    field: &'static str,
    was: &Option<ShardHeader>,
    now: &Option<ShardHeader>,
    get: fn(&ShardHeader) -> String,
) -> Option<Mismatch> {
    Mismatch::check(field, &was.as_ref().map(get), &now.as_ref().map(get), |v| or_none(v.as_ref()))
}

/// A sequential comparison's order and stopping rule, for a resume's refusal.
fn describe_sequential(sequential: Option<&Sequential>) -> String {
    match sequential {
        None => "none".to_owned(),
        Some(s) => format!(
            "order {} seed {} (sha256 {}), chunks of {}, alpha {}, margin ±{} points, {}, base {}, others {}",
            s.order_rule,
            s.seed,
            s.order_sha256,
            s.chunk,
            s.alpha,
            mcscore_metrics::shown(100.0 * s.margin),
            s.normalisation,
            s.base_sha256,
            s.other_sha256.join(" ")
        ),
    }
}
