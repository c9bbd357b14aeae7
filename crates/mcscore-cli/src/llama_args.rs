//! llama.cpp spells some short flags with several letters (`-bf`, `-np`,
//! `-ngl`, `-tb`, `-ub`, `-fa`), which clap cannot express; pipelines pass them, so
//! they are rewritten to their llama.cpp long forms before parsing.

use std::ffi::OsString;

const ALIASES: [(&str, &str); 6] = [
    ("-fa", "--flash-attn"),
    ("-bf", "--binary-file"),
    ("-np", "--parallel"),
    ("-ngl", "--n-gpu-layers"),
    ("-tb", "--threads-batch"),
    ("-ub", "--ubatch-size"),
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

#[cfg(test)]
mod tests {
    use super::*;

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
