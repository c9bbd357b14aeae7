//! One run as the comparisons and reports read it: a sample log's header and
//! task records, from a file or built in memory.

use std::path::{Path, PathBuf};

use crate::log::{self, Header, TaskRecord};
use crate::EvalError;

/// One run: a sample log's header and task records, read from a file or
/// built in memory.
#[derive(Debug, Clone)]
pub struct Run {
    /// How the run is named in the output (the model's file stem by default).
    pub label: String,
    /// Where the records came from (a log's path), for messages.
    pub source: PathBuf,
    /// The sample log's header: model, task file, settings.
    pub header: Header,
    /// One record per task scored, in the log's order.
    pub records: Vec<TaskRecord>,
}

impl Run {
    /// Checks every record against itself and the header as the log reader
    /// does (`check_record`): a run built in memory is held to what a file is.
    pub fn check(&self) -> Result<(), EvalError> {
        for (i, record) in self.records.iter().enumerate() {
            // A log's line 1 is its header; task records follow.
            log::check_record(&self.header, record).map_err(|fault| crate::log::LogError::Line {
                path: self.source.clone(),
                line: i + 2,
                fault,
            })?;
        }
        Ok(())
    }

    /// Reads a complete sample log (an unfinished one is refused: its tasks
    /// would not pair with a finished run's).
    pub fn read(path: &Path) -> Result<Run, EvalError> {
        let contents = log::read(path)?;
        contents.require_complete(path)?;
        let log::Contents { header, records, .. } = contents;
        let mut label = log::label(&header.model);
        if let Some(chat) = &header.chat {
            // Base against chat is the same model twice: the template tells them apart.
            label.push_str(&format!(" [chat template {}]", chat.template));
        }
        Ok(Run { label, source: path.to_owned(), header, records })
    }
}
