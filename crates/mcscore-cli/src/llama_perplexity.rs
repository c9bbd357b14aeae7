//! mcscore invoked as `llama-perplexity` (a link or a copy of that name):
//! llama-perplexity's command line for its three multiple-choice modes,
//! rewritten to `mcscore score --format llama`, so a script that calls it
//! works unchanged with mcscore first on `PATH`. What mcscore does not
//! implement is refused with exit 2, never run as something else.

use std::ffi::OsString;
use std::path::Path;

use crate::UsageError;

/// The name that selects this entry point.
pub(crate) const NAME: &str = "llama-perplexity";

/// Whether `argv0` names this entry point (`llama-perplexity`, with any
/// folder or `.exe`).
pub(crate) fn invoked_as(argv0: Option<&OsString>) -> bool {
    argv0.and_then(|a| Path::new(a).file_stem()).is_some_and(|stem| stem == NAME)
}

enum Flag {
    /// Passed on under mcscore's name; `true` when it takes a value.
    Pass(&'static str, bool),
    /// Accepted with no effect (llama.cpp's log formatting); `true` when it takes a value.
    Ignore(bool),
    /// Accepted with no effect, with an optional value from this list
    /// (`--log-colors [on|off|auto]`): anything else is the next flag.
    IgnoreOptional(&'static [&'static str]),
    /// Passed on as mcscore's flag with the value paired with llama.cpp's;
    /// llama.cpp's values not listed are refused. A flag without a value
    /// (`--no-mmap`) has one pair, whose first value is "".
    Map(&'static str, &'static [(&'static str, &'static str)]),
    /// Accepted with no effect on a score, with a one-line note saying why;
    /// `true` when it takes a value.
    Noted(bool, &'static str),
    /// Accepted with the values that are what mcscore does (llama.cpp's
    /// default), which the note names; any other would change the scores
    /// and is refused.
    Only(&'static [&'static str], &'static str),
}

const FLAGS: &[(&[&str], Flag)] = &[
    (&["-m", "--model"], Flag::Pass("--model", true)),
    (&["-f", "--file"], Flag::Pass("--binary-file", true)),
    (&["-bf", "--binary-file"], Flag::Pass("--binary-file", true)),
    (&["--multiple-choice"], Flag::Pass("--multiple-choice", false)),
    (&["--multiple-choice-tasks"], Flag::Pass("--multiple-choice-tasks", true)),
    (&["--hellaswag"], Flag::Pass("--hellaswag", false)),
    (&["--hellaswag-tasks"], Flag::Pass("--hellaswag-tasks", true)),
    (&["--winogrande"], Flag::Pass("--winogrande", false)),
    (&["--winogrande-tasks"], Flag::Pass("--winogrande-tasks", true)),
    (&["-c", "--ctx-size"], Flag::Pass("--ctx-size", true)),
    (&["-np", "--parallel"], Flag::Pass("--parallel", true)),
    (&["-b", "--batch-size"], Flag::Pass("--batch-size", true)),
    (&["-ub", "--ubatch-size"], Flag::Pass("--ubatch-size", true)),
    (&["-t", "--threads"], Flag::Pass("--threads", true)),
    (&["-tb", "--threads-batch"], Flag::Pass("--threads-batch", true)),
    (&["-ngl", "--gpu-layers", "--n-gpu-layers"], Flag::Pass("--n-gpu-layers", true)),
    (&["-fa", "--flash-attn"], Flag::Pass("--flash-attn", true)),
    (&["--log-prefix", "--no-log-prefix", "--log-timestamps", "--no-log-timestamps", "--log-disable"], Flag::Ignore(false)),
    (&["--log-colors"], Flag::IgnoreOptional(&["on", "off", "auto"])),
    // llama.cpp's load modes: mlock and direct I/O are not offered.
    (&["-lm", "--load-mode"], Flag::Map("--mmap", &[("auto", "auto"), ("mmap", "on"), ("none", "off")])),
    (&["--no-mmap"], Flag::Map("--mmap", &[("", "off")])),
    (&["--mmap"], Flag::Map("--mmap", &[("", "on")])),
    (
        &["-s", "--seed"],
        Flag::Noted(true, "nothing is sampled, and the task subsets are drawn with a fixed seed, as llama-perplexity draws them"),
    ),
    (&["--temp"], Flag::Noted(true, "nothing is sampled when scoring")),
    (&["--mlock"], Flag::Noted(false, "the weights are not locked in memory; a score is the same")),
    (&["--no-warmup"], Flag::Noted(false, "mcscore runs no warm-up decode")),
    (&["-kvu", "--kv-unified"], Flag::Noted(false, "mcscore's KV cache is always one unified cache")),
    (&["-sm", "--split-mode"], Flag::Only(&["layer"], "a model is split across GPUs by layer, llama.cpp's default")),
    (&["-ctk", "--cache-type-k"], Flag::Only(&["f16"], "the KV cache is kept in f16, llama.cpp's default")),
    (&["-ctv", "--cache-type-v"], Flag::Only(&["f16"], "the KV cache is kept in f16, llama.cpp's default")),
];

/// Flags of llama-perplexity's other modes, refused by name.
const OTHER_MODES: &[&str] = &["--kl-divergence", "--kl-divergence-base", "--ppl-stride", "--ppl-output-type", "--all-logits"];

/// What `llama-perplexity --help` prints here.
pub(crate) fn help() -> String {
    let mut text = String::from(
        "llama-perplexity (mcscore): llama-perplexity's multiple-choice modes, scored by mcscore\n\n\
         usage: llama-perplexity -m MODEL (-bf FILE --multiple-choice | -f FILE --hellaswag | -f FILE --winogrande) [flags]\n\n\
         flags, as llama-perplexity takes them:\n",
    );
    for (names, flag) in FLAGS {
        let (value, note) = match flag {
            Flag::Pass(_, true) => (" N".to_owned(), ""),
            Flag::Pass(_, false) => (String::new(), ""),
            Flag::Ignore(taking) => ((if *taking { " X" } else { "" }).to_owned(), "   (accepted; mcscore formats its own log)"),
            Flag::IgnoreOptional(_) => (" [on|off|auto]".to_owned(), "   (accepted; mcscore formats its own log)"),
            Flag::Map(_, [("", _)]) => (String::new(), ""),
            Flag::Map(_, _) => (" auto|mmap|none".to_owned(), ""),
            Flag::Noted(taking, _) => ((if *taking { " X" } else { "" }).to_owned(), "   (accepted; changes no score)"),
            Flag::Only(values, _) => (format!(" {}", values.join("|")), "   (the only value: another would change the scores)"),
        };
        text.push_str(&format!("  {}{value}{note}\n", names.join(", ")));
    }
    text.push_str(
        "\nDefaults are llama-perplexity's (-c 512, --hellaswag-tasks 400). Plain perplexity over a text file and\n\
         --kl-divergence are not supported: they exit 2. Every Winogrande line is scored (llama-perplexity drops\n\
         the file's last one). For everything else mcscore offers: mcscore score --help.\n",
    );
    text
}

/// Rewrites llama-perplexity's arguments (`args[0]` is the program) to
/// `mcscore score --format llama ...`, with a note for each flag accepted
/// without effect, or says why they cannot be.
pub(crate) fn translate(args: &[OsString]) -> Result<(Vec<OsString>, Vec<String>), UsageError> {
    let mut notes = Vec::new();
    let mut out: Vec<OsString> = ["mcscore", "score", "--format", "llama"].map(OsString::from).to_vec();
    let (mut mode, mut context) = (false, false);
    let mut rest = args.iter().skip(1);
    while let Some(arg) = rest.next() {
        let text = arg.to_str().ok_or_else(|| UsageError(format!("{}: not valid UTF-8", arg.to_string_lossy())))?;
        let (name, inline) = match text.split_once('=') {
            Some((name, value)) if name.starts_with('-') => (name, Some(value)),
            _ => (text, None),
        };
        if OTHER_MODES.contains(&name) {
            return Err(UsageError(format!("{name}: not supported (mcscore implements llama-perplexity's multiple-choice modes only)")));
        }
        let Some((_, flag)) = FLAGS.iter().find(|(names, _)| names.contains(&name)) else {
            return Err(UsageError(if name.starts_with('-') {
                format!("{name}: not supported by mcscore's llama-perplexity (llama-perplexity --help lists what is)")
            } else {
                format!("{name}: unexpected argument (llama-perplexity takes flags only)")
            }));
        };
        if let Flag::IgnoreOptional(values) = flag {
            match inline {
                Some(v) if !values.contains(&v) => return Err(UsageError(format!("{name}={v}: expected one of {}", values.join(", ")))),
                Some(_) => {}
                None => {
                    if rest.clone().next().and_then(|a| a.to_str()).is_some_and(|a| values.contains(&a)) {
                        rest.next();
                    }
                }
            }
            continue;
        }
        let takes_value = match flag {
            Flag::Pass(_, taking) | Flag::Ignore(taking) | Flag::Noted(taking, _) => *taking,
            Flag::Map(_, values) => values.iter().all(|(from, _)| !from.is_empty()),
            Flag::IgnoreOptional(_) => false,
            Flag::Only(..) => true,
        };
        let value = match (takes_value, inline) {
            (true, Some(value)) => Some(OsString::from(value)),
            (true, None) => Some(rest.next().cloned().ok_or_else(|| UsageError(format!("{name}: a value is required")))?),
            (false, Some(_)) => return Err(UsageError(format!("{name}: takes no value"))),
            (false, None) => None,
        };
        match flag {
            Flag::Pass(long, _) => {
                mode |= matches!(*long, "--multiple-choice" | "--hellaswag" | "--winogrande");
                context |= *long == "--ctx-size";
                out.push(OsString::from(long));
                out.extend(value);
            }
            Flag::Map(long, values) => {
                let given = value.as_ref().map_or("", |v| v.to_str().unwrap_or("\u{FFFD}"));
                let Some((_, ours)) = values.iter().find(|(from, _)| *from == given) else {
                    let allowed: Vec<&str> = values.iter().map(|v| v.0).collect();
                    return Err(UsageError(format!(
                        "{name} {given}: not supported by mcscore's llama-perplexity (it takes {})",
                        allowed.join(", ")
                    )));
                };
                out.extend([OsString::from(long), OsString::from(ours)]);
            }
            Flag::Noted(_, why) => {
                let given = value.as_ref().map(|v| format!(" {}", v.to_string_lossy())).unwrap_or_default();
                notes.push(format!("{name}{given}: accepted; {why}"));
            }
            Flag::Only(allowed, why) => {
                let given = value.as_ref().map_or_else(String::new, |v| v.to_string_lossy().into_owned());
                if !allowed.contains(&given.as_str()) {
                    return Err(UsageError(format!(
                        "{name} {given}: not supported: {why}, and another value would change the scores (give {} or leave it out)",
                        allowed.join(" or ")
                    )));
                }
            }
            Flag::Ignore(_) | Flag::IgnoreOptional(_) => {}
        }
    }
    if !mode {
        return Err(UsageError(
            "plain perplexity (no --multiple-choice, --hellaswag or --winogrande) is not supported: mcscore scores the multiple-choice modes only"
                .to_owned(),
        ));
    }
    if !context {
        // llama-perplexity's default context per sequence.
        out.extend(["--ctx-size", "512"].map(OsString::from));
    }
    Ok((out, notes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(args: &[&str]) -> Result<Vec<String>, String> {
        let args: Vec<OsString> = args.iter().map(OsString::from).collect();
        translate(&args).map(|(out, _)| out.into_iter().map(|a| a.into_string().unwrap()).collect()).map_err(|e| e.0)
    }

    #[test]
    fn llama_perplexity_lines_become_score_lines() {
        let out = words(&["llama-perplexity", "-m", "m.gguf", "-bf", "x.bin", "--multiple-choice", "-np", "16", "-t=2", "--log-prefix"]);
        assert_eq!(
            out.unwrap(),
            [
                "mcscore",
                "score",
                "--format",
                "llama",
                "--model",
                "m.gguf",
                "--binary-file",
                "x.bin",
                "--multiple-choice",
                "--parallel",
                "16",
                "--threads",
                "2",
                "--ctx-size",
                "512"
            ]
        );
        let out = words(&["llama-perplexity", "-f", "h.txt", "--hellaswag", "--hellaswag-tasks", "10", "-c", "1024"]).unwrap();
        assert_eq!(&out[4..], ["--binary-file", "h.txt", "--hellaswag", "--hellaswag-tasks", "10", "--ctx-size", "1024"]);
    }

    #[test]
    fn load_modes_become_mmap_settings() {
        let tail = |args: &[&str]| words(&[&["llama-perplexity", "--winogrande"], args].concat()).map(|out| out[5..7].to_vec());
        assert_eq!(tail(&["-lm", "none"]).unwrap(), ["--mmap", "off"]);
        assert_eq!(tail(&["--load-mode=mmap"]).unwrap(), ["--mmap", "on"]);
        assert_eq!(tail(&["--no-mmap"]).unwrap(), ["--mmap", "off"]);
        assert_eq!(tail(&["--mmap"]).unwrap(), ["--mmap", "on"]);
        assert!(tail(&["-lm", "mlock"])
            .unwrap_err()
            .starts_with("-lm mlock: not supported by mcscore's llama-perplexity (it takes auto, mmap, none)"));
        assert!(tail(&["--no-mmap=1"]).unwrap_err().starts_with("--no-mmap: takes no value"));
    }

    #[test]
    fn log_colors_takes_its_own_values_only() {
        let out = words(&["llama-perplexity", "--winogrande", "--log-colors", "-t", "1"]).unwrap();
        assert!(out.ends_with(&["--threads".to_owned(), "1".to_owned(), "--ctx-size".to_owned(), "512".to_owned()]), "{out:?}");
        let out = words(&["llama-perplexity", "--winogrande", "--log-colors", "off", "-t", "1"]).unwrap();
        assert!(!out.contains(&"off".to_owned()) && out.contains(&"--threads".to_owned()), "{out:?}");
        assert!(words(&["llama-perplexity", "--winogrande", "--log-colors=maybe"]).is_err());
    }

    #[test]
    fn what_is_not_implemented_is_refused_by_name() {
        assert!(words(&["llama-perplexity", "-m", "m", "-f", "wiki.txt"]).unwrap_err().starts_with("plain perplexity"));
        assert!(words(&["llama-perplexity", "-m", "m", "--kl-divergence", "--multiple-choice"])
            .unwrap_err()
            .starts_with("--kl-divergence: not supported"));
        assert!(words(&["llama-perplexity", "--winogrande", "--lora", "a.gguf"]).unwrap_err().starts_with("--lora: not supported"));
        assert!(words(&["llama-perplexity", "--winogrande", "-c"]).unwrap_err().starts_with("-c: a value is required"));
        assert!(words(&["llama-perplexity", "--winogrande=1"]).unwrap_err().starts_with("--winogrande: takes no value"));
        assert!(words(&["llama-perplexity", "--winogrande", "stray"]).unwrap_err().starts_with("stray: unexpected argument"));
    }

    #[test]
    fn flags_that_change_no_score_are_accepted_with_a_note_and_defaults_alone() {
        let args: Vec<OsString> = [
            "llama-perplexity",
            "--winogrande",
            "--seed",
            "1",
            "--mlock",
            "--temp=0",
            "-kvu",
            "--no-warmup",
            "-sm",
            "layer",
            "-ctk",
            "f16",
        ]
        .iter()
        .map(OsString::from)
        .collect();
        let (out, notes) = translate(&args).unwrap();
        assert_eq!(out[4..], ["--winogrande", "--ctx-size", "512"].map(OsString::from));
        assert_eq!(notes.len(), 5, "{notes:?}");
        assert_eq!(
            notes[0],
            "--seed 1: accepted; nothing is sampled, and the task subsets are drawn with a fixed seed, as llama-perplexity draws them"
        );
        assert!(notes[2].starts_with("--temp 0: accepted"), "{notes:?}");
        for (flag, value) in [("-ctk", "q8_0"), ("--cache-type-v", "q4_0"), ("-sm", "row")] {
            let error = words(&["llama-perplexity", "--winogrande", flag, value]).unwrap_err();
            assert!(error.starts_with(&format!("{flag} {value}: not supported: ")), "{error}");
            assert!(
                error.ends_with("would change the scores (give f16 or leave it out)") || error.ends_with("(give layer or leave it out)"),
                "{error}"
            );
        }
    }

    #[test]
    fn the_entry_point_is_chosen_by_program_name() {
        assert!(invoked_as(Some(&OsString::from("/usr/local/bin/llama-perplexity"))));
        assert!(invoked_as(Some(&OsString::from("llama-perplexity.exe"))));
        assert!(!invoked_as(Some(&OsString::from("mcscore"))));
        assert!(!invoked_as(None));
    }
}
