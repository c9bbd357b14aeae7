//! Arguments rewritten before parsing. llama.cpp spells some short flags
//! with several letters (`-bf`, `-np`, `-ngl`, `-tb`, `-ub`, `-fa`, `-ctk`,
//! `-ctv`, `-sm`, `-mg`), which clap cannot express; pipelines pass them, so they become their llama.cpp
//! long forms. Renamed flags' old names become the new ones, with a warning.

use std::ffi::OsString;

const ALIASES: [(&str, &str); 10] = [
    ("-fa", "--flash-attn"),
    ("-ctk", "--cache-type-k"),
    ("-ctv", "--cache-type-v"),
    ("-bf", "--binary-file"),
    ("-np", "--parallel"),
    ("-ngl", "--n-gpu-layers"),
    ("-tb", "--threads-batch"),
    ("-ub", "--ubatch-size"),
    ("-sm", "--split-mode"),
    ("-mg", "--main-gpu"),
];

/// Rewrites `-np 16` and `-np=16` to `--parallel 16` and `--parallel=16`.
pub(crate) fn rewrite(args: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    args.into_iter()
        .map(|arg| {
            let Some(text) = arg.to_str() else { return arg };
            for (short, long) in ALIASES {
                if text == short {
                    return OsString::from(long);
                }
                if let Some(value) = text.strip_prefix(short).and_then(|rest| rest.strip_prefix('=')) {
                    return OsString::from(format!("{long}={value}"));
                }
            }
            arg
        })
        .collect()
}

/// Flags renamed so that one name means one thing in every command
/// (docs/flags.md): (commands, old name, new name). Scripts may hold the old
/// names, so they are taken, with a warning, for one version. A new name
/// with a space is a flag and its value (`--csv` is `--format csv`).
const RENAMED: [(&[&str], &str, &str); 4] = [
    (&["score", "merge"], "--output", "--format"),
    (&["view"], "--output", "--out"),
    (&["view"], "--compare", "--base"),
    (&["compare", "report"], "--csv", "--format csv"),
];

/// Rewrites the old names of renamed flags (`--output llama` in `score` is
/// `--format llama`), with a warning for each.
pub(crate) fn renamed(args: Vec<OsString>) -> (Vec<OsString>, Vec<String>) {
    let command = args.iter().skip(1).find_map(|a| a.to_str().filter(|a| !a.starts_with('-'))).map(str::to_owned);
    let Some(command) = command else { return (args, Vec::new()) };
    let mut warnings = Vec::new();
    let args = args
        .into_iter()
        .flat_map(|arg| {
            let Some(text) = arg.to_str() else { return vec![arg] };
            for (commands, old, new) in RENAMED {
                if !commands.contains(&command.as_str()) {
                    continue;
                }
                let rest = if text == old { Some("") } else { text.strip_prefix(old).filter(|r| r.starts_with('=')) };
                if let Some(rest) = rest {
                    warnings.push(format!("{command} {old} is now {new}; the old name is taken until the next version"));
                    return match new.split_once(' ') {
                        // A switch became a flag and its value: `--csv=x` is no switch, so clap refuses it.
                        Some(_) if !rest.is_empty() => vec![arg],
                        Some((flag, value)) => vec![OsString::from(flag), OsString::from(value)],
                        None => vec![OsString::from(format!("{new}{rest}"))],
                    };
                }
            }
            vec![arg]
        })
        .collect();
    (args, warnings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_names_become_new_ones_in_their_commands_only() {
        let words = |args: &[&str]| {
            let (args, warnings) = renamed(args.iter().map(OsString::from).collect());
            (args.into_iter().map(|a| a.into_string().unwrap()).collect::<Vec<_>>(), warnings)
        };
        let (args, warnings) = words(&["mcscore", "score", "-bf", "f.bin", "--output", "llama"]);
        assert_eq!(args, ["mcscore", "score", "-bf", "f.bin", "--format", "llama"]);
        assert_eq!(warnings, ["score --output is now --format; the old name is taken until the next version"]);
        assert_eq!(words(&["mcscore", "merge", "a.jsonl", "--output=llama"]).0[3], "--format=llama");
        assert_eq!(words(&["mcscore", "view", "a.jsonl", "--output", "p.html"]).0[3], "--out");
        let (args, warnings) = words(&["mcscore", "compare", "a.jsonl", "b.jsonl", "--csv"]);
        assert_eq!(args[4..], ["--format", "csv"]);
        assert_eq!(warnings, ["compare --csv is now --format csv; the old name is taken until the next version"]);
        // Other commands, and longer names that start alike, are left alone.
        let (args, warnings) = words(&["mcscore", "sweep", "--output", "x", "--outputs"]);
        assert_eq!((args[2].as_str(), args[4].as_str(), warnings.len()), ("--output", "--outputs", 0));
    }

    #[test]
    fn rewrites_llama_short_flags_only() {
        let args = ["mcscore", "score", "-bf", "f.bin", "-np=16", "-c", "512", "-ngl", "0", "-t", "2", "-npx"];
        let rewritten: Vec<String> = rewrite(args.map(OsString::from)).into_iter().map(|a| a.into_string().unwrap()).collect();
        assert_eq!(
            rewritten,
            ["mcscore", "score", "--binary-file", "f.bin", "--parallel=16", "-c", "512", "--n-gpu-layers", "0", "-t", "2", "-npx"]
        );
    }
}
