//! `mcscore`: a thin command line over the mcscore library crates.

/// `writeln!` to standard output that returns an error (naming stdout) instead
/// of panicking like `println!` when stdout cannot be written (`> /dev/full`).
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($arg)*).map_err($crate::stdout_error)
    }};
}

/// `write!` to standard output, as [`outln!`].
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        write!(std::io::stdout().lock(), $($arg)*).map_err($crate::stdout_error)
    }};
}

mod chat_args;
mod compare;
mod datasets;
mod defaults;
mod engine_args;
mod flag_hints;
mod inspect;
mod llama_args;
mod llama_perplexity;
mod merge;
mod normalisation;
mod numbers;
mod output;
mod plan;
mod plots;
mod png;
mod progress;
mod quantize;
mod report;
mod run_text;
mod schemes;
mod score;
mod serve;
mod signals;
mod sweep;
mod table;
mod text;
mod tokens;
mod until_decided;
mod validate;
mod view;

use std::process::ExitCode;

/// The system allocator, counting what a chat template's rendering thread
/// allocates so that no template can take more than a bounded amount.
#[global_allocator]
static ALLOCATOR: mcscore_engine::budget::BoundedAlloc = mcscore_engine::budget::BoundedAlloc;

use clap::{Parser, Subcommand};

const EXIT_CODES: &str = "\
Exit status:
  0  success
  1  invalid input: a file that is missing, unreadable or invalid, a model that
     does not load, or a run that could not score every announced task
  2  usage error: an unknown flag or a bad flag value
  130 interrupted by Ctrl-C (SIGINT), 143 by SIGTERM, 129 by SIGHUP: a --log-samples
      file is kept, marked incomplete; an output being written is removed
  134 llama.cpp stopped the process on one of its internal checks (said on
      stderr); an output being written is removed";

/// Score GGUF models on multiple-choice benchmarks by log-likelihood, and build
/// and check the llama.cpp task files (.bin) they are scored on.
#[derive(Parser)]
#[command(name = "mcscore", version, after_help = EXIT_CODES)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    Score(score::Args),
    Merge(merge::Args),
    Plan(plan::Args),
    Inspect(inspect::Args),
    Validate(validate::Args),
    Report(report::Args),
    Compare(compare::Args),
    Quantize(quantize::Args),
    Sweep(sweep::Args),
    Schemes(schemes::Args),
    Serve(serve::Args),
    Tokens(tokens::Args),
    View(view::Args),
    Build(datasets::BuildArgs),
    Verify(datasets::VerifyArgs),
}

/// Work done, or input that was wrong; usage errors exit through clap.
pub(crate) enum Outcome {
    Ok,
    InvalidInput,
    /// Stopped by a signal after saving what was done.
    Interrupted,
}

fn main() -> ExitCode {
    // Like other Unix tools, end quietly when a pipe reader (`| head`) goes away
    // instead of panicking on the next print.
    #[cfg(unix)]
    #[allow(unsafe_code)]
    // SAFETY: called first thing in main, before any thread exists; restoring
    // the default disposition of SIGPIPE has no other effect on this process.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if llama_perplexity::invoked_as(args.first()) {
        if args.iter().skip(1).any(|a| a == "-h" || a == "--help" || a == "--usage") {
            print!("{}", llama_perplexity::help());
            return ExitCode::SUCCESS;
        }
        if args.iter().skip(1).any(|a| a == "--version") {
            println!("{} (mcscore {})", llama_perplexity::NAME, env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        args = match llama_perplexity::translate(&args) {
            Ok((args, notes)) => {
                for note in notes {
                    eprintln!("{} (mcscore): {note}", llama_perplexity::NAME);
                }
                args
            }
            Err(error) => {
                eprintln!("{} (mcscore): error: {error}", llama_perplexity::NAME);
                return ExitCode::from(2);
            }
        };
    }
    let (args, warnings) = llama_args::renamed(llama_args::rewrite(args));
    for warning in warnings {
        eprintln!("mcscore: warning: {warning}");
    }
    let cli = Cli::parse_from(args);
    let asked = flag_hints::Asked::of(&cli.command);
    // serve drains its requests on SIGINT, SIGTERM and SIGHUP itself.
    if !matches!(cli.command, Command::Serve(_)) {
        if let Err(error) = signals::install() {
            flag_hints::report(asked, &error);
            return ExitCode::from(1);
        }
    }
    let result = match cli.command {
        Command::Score(args) => score::run(args),
        Command::Merge(args) => merge::run(args),
        Command::Plan(args) => plan::run(args),
        Command::Inspect(args) => inspect::run(args),
        Command::Validate(args) => validate::run(args),
        Command::Report(args) => report::run(args),
        Command::Compare(args) if args.until_decided => until_decided::run(args),
        Command::Compare(args) => compare::run(args),
        Command::Quantize(args) => quantize::run(args),
        Command::Sweep(args) => sweep::run(args),
        Command::Schemes(args) => schemes::run_command(args),
        Command::Serve(args) => serve::run(args),
        Command::Tokens(args) => tokens::run(args),
        Command::View(args) => view::run(args),
        Command::Build(args) => datasets::run_build(args),
        Command::Verify(args) => datasets::run_verify(args),
    };
    // stdout is line-buffered and flushed at exit without a word on failure:
    // flush it here, so a full disk behind `>` is an error, not a short file.
    let flushed = std::io::Write::flush(&mut std::io::stdout()).map_err(stdout_error);
    let result = result.and_then(|outcome| flushed.map(|()| outcome));
    match result {
        Ok(Outcome::Ok) => ExitCode::SUCCESS,
        Ok(Outcome::InvalidInput) => ExitCode::from(1),
        Ok(Outcome::Interrupted) => ExitCode::from(signals::exit_status()),
        Err(error) => {
            flag_hints::report(asked, &error);
            ExitCode::from(if error.is::<UsageError>() { 2 } else { 1 })
        }
    }
}

/// A command line that parses but asks for something impossible, found after
/// parsing: exits 2, as clap's usage errors do.
#[derive(Debug)]
pub(crate) struct UsageError(pub(crate) String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

pub(crate) use mcscore_eval::with_causes;

/// What a failed write to standard output says. (A closed pipe never gets
/// here: SIGPIPE ends the process quietly, as for other Unix tools.)
pub(crate) fn stdout_error(error: std::io::Error) -> anyhow::Error {
    anyhow::anyhow!("writing to standard output: {error}")
}

/// Checks `score`'s flags (as a study gives them) the way `mcscore score`
/// parses them, without running anything: the first problem clap finds.
pub(crate) fn parse_score_flags(flags: &[&str]) -> Result<plan::Needs, String> {
    use clap::{CommandFactory, FromArgMatches};
    let line = ["mcscore", "score"].into_iter().chain(flags.iter().copied()).map(std::ffi::OsString::from);
    let first_line = |e: clap::Error| e.to_string().lines().next().unwrap_or_default().trim_start_matches("error: ").to_owned();
    let matches = Cli::command().try_get_matches_from(llama_args::rewrite(line)).map_err(first_line)?;
    // Flags clap accepts but the settings refuse (a removed flag).
    if let Command::Score(args) = Cli::from_arg_matches(&matches).map_err(first_line)?.command {
        args.refuse_removed().map_err(|e| e.to_string())?;
    }
    let Some(score) = matches.subcommand_matches("score") else { return Ok(Default::default()) };
    // What the flags state, not the defaults: a study derives its resources from them.
    let stated = |id: &str| score.value_source(id) == Some(clap::parser::ValueSource::CommandLine);
    Ok(plan::Needs {
        threads: score.get_one::<i32>("threads").filter(|_| stated("threads")).map(|&t| t.unsigned_abs()),
        gpu_layers: score.get_one::<u32>("n_gpu_layers").filter(|_| stated("n_gpu_layers")).copied(),
    })
}

/// Prints `value` as pretty JSON on stdout.
pub(crate) fn print_json(value: &impl serde::Serialize) -> anyhow::Result<()> {
    outln!("{}", serde_json::to_string_pretty(value)?)?;
    Ok(())
}
#[cfg(test)]
mod flags {
    use std::collections::{BTreeMap, BTreeSet};

    use clap::CommandFactory;

    /// What the command line says of one long flag, over every command.
    #[derive(Debug, Default, PartialEq)]
    struct Flag {
        short: BTreeSet<char>,
        values: BTreeSet<String>,
        commands: BTreeSet<String>,
    }

    fn command_line() -> BTreeMap<String, Flag> {
        let mut flags: BTreeMap<String, Flag> = BTreeMap::new();
        for command in super::Cli::command().get_subcommands() {
            for arg in command.get_arguments().filter(|a| !a.is_positional()) {
                // A visible alias is a name too: it is listed as its own row.
                let names = arg.get_long().into_iter().chain(arg.get_visible_aliases().into_iter().flatten());
                for (i, long) in names.enumerate() {
                    let flag = flags.entry(format!("--{long}")).or_default();
                    if i == 0 {
                        flag.short.extend(arg.get_short());
                    }
                    if arg.get_action().takes_values() {
                        flag.values.extend(arg.get_value_names().into_iter().flatten().map(|v| v.to_string()));
                    }
                    flag.commands.insert(command.get_name().to_owned());
                }
            }
        }
        flags
    }

    /// docs/flags.md's table, read as the command line is.
    fn table() -> BTreeMap<String, (Flag, String)> {
        let text = include_str!("../../../docs/flags.md");
        // `\|` is a `|` inside a cell.
        let cell = |c: &str| c.trim().trim_matches('`').replace('\u{1}', "|");
        text.lines()
            .filter(|l| l.starts_with("| `--"))
            .map(|line| {
                let line = line.replace("\\|", "\u{1}");
                let cells: Vec<&str> = line.trim().trim_matches('|').split('|').collect();
                assert_eq!(cells.len(), 5, "docs/flags.md: {line}");
                let flag = Flag {
                    short: cell(cells[1]).strip_prefix('-').and_then(|s| s.chars().next()).into_iter().collect(),
                    values: cells[2].split(", ").map(cell).filter(|v| !v.is_empty()).collect(),
                    commands: cells[4].split(", ").map(|c| c.trim().to_owned()).collect(),
                };
                (cell(cells[0]), (flag, cells[3].trim().to_owned()))
            })
            .collect()
    }

    /// docs/flags.md lists every flag, each with a meaning, the short form,
    /// value names and commands the command line gives it; a flag has one
    /// short form, and a short letter one flag.
    #[test]
    fn flags_table_is_the_command_line() {
        let (cli, doc) = (command_line(), table());
        for (name, flag) in &cli {
            let Some((documented, meaning)) = doc.get(name) else { panic!("{name} is not in docs/flags.md: {flag:?}") };
            assert_eq!(flag, documented, "{name}: the command line (left) and docs/flags.md (right) differ");
            assert!(flag.short.len() <= 1, "{name} has several short forms: {:?}", flag.short);
            assert!(!meaning.is_empty(), "{name} has no meaning in docs/flags.md");
        }
        for name in doc.keys() {
            assert!(cli.contains_key(name), "docs/flags.md lists {name}, which no command takes");
        }
        let mut letters: BTreeMap<char, &str> = BTreeMap::new();
        for (name, flag) in &cli {
            for &letter in &flag.short {
                if let Some(other) = letters.insert(letter, name) {
                    panic!("-{letter} is both {other} and {name}");
                }
            }
        }
    }
}
