//! The sample log (`score --log-samples`): one JSON line per task, between a
//! header that pins the inputs and a footer that says whether the run
//! completed. The footer is what tells a finished log from an interrupted
//! one, and the header is what a resume checks before it trusts the lines in
//! between. Every line is checked when read ([`check_record`]), so a damaged
//! or edited log is refused by name, never reported as a result; the reader
//! has a fuzz target (`fuzz/fuzz_targets/read_log.rs`). Its own crate, without
//! the engine, so that fuzzing it builds no llama.cpp. The layout is in
//! docs/formats.md.

#![warn(missing_docs)]

mod error;
mod header;
mod identity;
mod read;
mod record;
#[cfg(test)]
mod test_support;
mod write;

pub use error::{LogError, LogFault, Unfinished};
pub use header::{or_none, ChatHeader, Header, ProjectorHeader, Sequential, ShardHeader, Stop, TaskKind, LOG_VERSION};
pub use identity::{chat_identity, label, Input, Mismatch, RunIdentity};
pub use read::{parse, read, Contents, Footer};
pub use record::{accuracy, check_record, normalisations, PerNormalisation, TaskRecord, MIN_TOKEN_LOGPROB};
pub use write::{write_complete, Opened, SampleLog};
