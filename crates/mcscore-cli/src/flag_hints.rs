//! The flags that change an outcome, by error, in one table: the library's
//! messages name files, tasks and lines; the command line adds its flags.

use mcscore_engine::EngineError;
use mcscore_eval::{EvalError, LogError, LogsError, ShardError, SweepError};

/// The command that failed, where one error calls for another flag in each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Asked {
    Score,
    Sweep,
    Report,
    View,
    Serve,
    Other,
}

impl Asked {
    pub(crate) fn of(command: &crate::Command) -> Asked {
        match command {
            crate::Command::Score(_) => Asked::Score,
            crate::Command::Sweep(_) => Asked::Sweep,
            crate::Command::Report(_) => Asked::Report,
            crate::Command::View(_) => Asked::View,
            crate::Command::Serve(_) => Asked::Serve,
            _ => Asked::Other,
        }
    }
}

/// The flag advice for `error` from `command`, if a flag changes it.
pub(crate) fn flag_hint(command: Asked, error: &EvalError) -> Option<&'static str> {
    if let Some(engine) = error.engine_error() {
        return engine_hint(command, engine);
    }
    Some(match (command, error) {
        (Asked::Score, EvalError::Log(LogError::Exists { .. })) => "--resume continues it",
        (Asked::Score, EvalError::Format(mcscore_format::Error::Io { source, .. })) if source.kind() == std::io::ErrorKind::NotFound => {
            "-bf NAME scores a bundled dataset by name (the names `mcscore build --list` gives, and their k-shot files): \
             arc-easy-validation is compiled in, the others are looked for in $MCSCORE_DATASETS, ./datasets, the checkout \
             mcscore was built from and the cache's datasets/ ($MCSCORE_CACHE_DIR, default ~/.cache/mcscore); \
             `mcscore build NAME` writes one"
        }
        (_, EvalError::Log(LogError::Unfinished { why, .. }) | EvalError::Shard(ShardError::ShardIncomplete { why, .. })) => {
            match why.resumable() {
                Some(false) => "finish the run with `mcscore score ... --resume`",
                Some(true) => "finish the comparison with `mcscore compare --until-decided ... --resume`",
                None => return None,
            }
        }
        (Asked::Report, EvalError::Logs(LogsError::OtherTasks { .. })) => "use the same --multiple-choice-tasks",
        (
            Asked::View,
            EvalError::Logs(
                LogsError::NoTaskFile { .. }
                | LogsError::OtherTaskFile { .. }
                | LogsError::TaskNotInFile { .. }
                | LogsError::OtherOptions { .. },
            ),
        ) => "pass the task file the logs scored with --task-file FILE",
        (Asked::Sweep, EvalError::Sweep(SweepError::PrideTooFewTasks { .. })) => {
            "give at least 2 tasks (--tasks), or sweep without --pride"
        }
        (Asked::Sweep, EvalError::Sweep(SweepError::PrideMixedOptions { .. })) => {
            "sweep tasks of one number of options, or sweep without --pride"
        }
        _ => return None,
    })
}

/// The flag advice for an engine's `error` from `command`.
fn engine_hint(command: Asked, error: &EngineError) -> Option<&'static str> {
    match (command, error) {
        (Asked::Serve, EngineError::ContextOverflow { .. } | EngineError::ContextTooLarge { .. } | EngineError::Context { .. }) => {
            Some("lower -c")
        }
        (_, EngineError::ContextOverflow { .. } | EngineError::ContextTooLarge { .. }) => {
            Some("lower -c or -np, or pass -c auto to size the context to the longest task (it is at least one fill: lower -b too)")
        }
        (_, EngineError::TaskTooLong { .. } | EngineError::TaskTooLongByBytes { .. }) => {
            Some("raise -c, or pass -c auto to size the context to the longest task")
        }
        _ => None,
    }
}

/// `error` with its causes on one line, and the flags that change it where
/// a flag does (a job's error, or the engine's met outside a job): how every
/// failed command is reported.
pub(crate) fn describe(command: Asked, error: &anyhow::Error) -> String {
    let message = crate::with_causes(error.as_ref());
    let hint = match error.downcast_ref::<EvalError>() {
        Some(e) => flag_hint(command, e),
        None => error.downcast_ref::<EngineError>().and_then(|e| engine_hint(command, e)),
    };
    match hint {
        Some(hint) => format!("{message}; {hint}"),
        None => message,
    }
}

/// Prints `error` on stderr as every command says a failure: one line,
/// `mcscore: error: ` and the error with its causes and its flag hint.
pub(crate) fn report(command: Asked, error: &anyhow::Error) {
    eprintln!("mcscore: error: {}", describe(command, error));
}

/// The flag advice for a `--shard auto` that found no shard to take.
pub(crate) fn shard_env_hint(error: &mcscore_eval::shard::ShardEnvError) -> &'static str {
    use mcscore_eval::shard::ShardEnvError;
    match error {
        ShardEnvError::NoKubernetesCount => ": give the number of shards with --shards N",
        ShardEnvError::OtherCount { .. } => " (--shards)",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hint_follows_the_error_and_the_command_whether_or_not_a_job_wraps_it() {
        let too_large = || EngineError::ContextTooLarge { n_ctx: 1 << 20, per_token: 1 << 10, needed: 1 << 30, available: 1 << 29 };
        let bare = anyhow::Error::from(too_large());
        assert!(describe(Asked::Serve, &bare).ends_with("is available; lower -c"), "{}", describe(Asked::Serve, &bare));
        let in_a_job = anyhow::Error::from(EvalError::Load(too_large())).context("scoring");
        assert!(describe(Asked::Score, &in_a_job).ends_with(
            "; lower -c or -np, or pass -c auto to size the context to the longest task (it is at least one fill: lower -b too)"
        ));
        let other = anyhow::Error::from(EngineError::OneOption { task: 3 });
        assert_eq!(describe(Asked::Serve, &other), "task 3: one option; a task needs at least 2 options to be scored");
    }

    #[test]
    fn an_unfinished_log_says_how_to_finish_it_where_resuming_can() {
        use mcscore_eval::log::Unfinished;
        let unfinished = |why| anyhow::Error::from(EvalError::Log(LogError::Unfinished { path: "a.jsonl".into(), why }));
        let killed = unfinished(Unfinished::Killed { logged: 3, announced: 10, sequential: false });
        assert_eq!(
            describe(Asked::Report, &killed),
            "a.jsonl: 3 of 10 tasks logged and no footer: the run was interrupted or killed; finish the run with `mcscore score ... --resume`"
        );
        let sequential = unfinished(Unfinished::Interrupted { logged: 3, announced: 10, sequential: true });
        assert!(describe(Asked::View, &sequential).ends_with("; finish the comparison with `mcscore compare --until-decided ... --resume`"));
        let untrusted = unfinished(Unfinished::NoFooter { announced: 10 });
        assert!(describe(Asked::Report, &untrusted).ends_with("so its results are not to be trusted; score it again"));
    }
}
