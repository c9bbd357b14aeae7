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
    /// Known and refused, saying why; `true` when it takes a value.
    Refused(bool, &'static str),
}

/// Why flags of sampling and generation change no score.
const SAMPLED: &str = "nothing is sampled or generated when scoring";
/// Why flags that place threads or memory change no score.
const PLACED: &str = "it changes where work runs or memory lies, which changes speed, never a score (scores are batch-invariant)";
/// Why flags that change the model's numbers are refused.
const CHANGES_SCORES: &str = "it would change the scores, and mcscore does not offer it";
/// Why download flags are refused.
const DOWNLOADS: &str = "mcscore downloads no models: download the GGUF and pass -m FILE";
/// Why the multimodal flags are refused.
const IMAGES: &str = "llama-perplexity scores text; images are scored by `mcscore score --mmproj FILE -bf TASKS.tsv`";
/// Why the tensor-placement flags are refused.
const PLACEMENT: &str = "layers are placed by -ngl, -sm and -mg alone";

/// Every flag llama-perplexity takes (llama.cpp's common arguments and
/// its own), as llama.cpp spells them, with what mcscore does with it. The
/// unit test `every_llama_perplexity_flag_is_known` holds this list to the
/// llama.cpp source mcscore builds.
impl Flag {
    /// Whether llama.cpp's flag takes a value (`--log-colors` an optional one).
    fn takes_value(&self) -> bool {
        match self {
            Flag::Pass(_, taking) | Flag::Ignore(taking) | Flag::Noted(taking, _) | Flag::Refused(taking, _) => *taking,
            Flag::Map(_, values) => values.iter().all(|(from, _)| !from.is_empty()),
            Flag::IgnoreOptional(_) => true,
        }
    }
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
    (&["-sm", "--split-mode"], Flag::Pass("--split-mode", true)),
    (&["-mg", "--main-gpu"], Flag::Pass("--main-gpu", true)),
    (&["-fa", "--flash-attn"], Flag::Pass("--flash-attn", true)),
    (&["-ctk", "--cache-type-k"], Flag::Pass("--cache-type-k", true)),
    (&["--rope-scaling"], Flag::Pass("--rope-scaling", true)),
    (&["--rope-scale"], Flag::Pass("--rope-scale", true)),
    (&["--rope-freq-base"], Flag::Pass("--rope-freq-base", true)),
    (&["--rope-freq-scale"], Flag::Pass("--rope-freq-scale", true)),
    (&["--yarn-orig-ctx"], Flag::Pass("--yarn-orig-ctx", true)),
    (&["--yarn-ext-factor"], Flag::Pass("--yarn-ext-factor", true)),
    (&["--yarn-attn-factor"], Flag::Pass("--yarn-attn-factor", true)),
    (&["--yarn-beta-slow"], Flag::Pass("--yarn-beta-slow", true)),
    (&["--yarn-beta-fast"], Flag::Pass("--yarn-beta-fast", true)),
    (&["-ctv", "--cache-type-v"], Flag::Pass("--cache-type-v", true)),
    (&["--log-prefix", "--no-log-prefix", "--log-timestamps", "--no-log-timestamps", "--log-disable"], Flag::Ignore(false)),
    (&["--log-jsonl", "--no-log-jsonl", "-v", "--verbose", "--log-verbose"], Flag::Ignore(false)),
    (&["-lv", "--verbosity", "--log-verbosity"], Flag::Ignore(true)),
    (&["--log-colors"], Flag::IgnoreOptional(&["on", "off", "auto"])),
    (&["--log-file"], Flag::Noted(true, "mcscore writes its messages to stderr")),
    // llama.cpp's load modes: mlock and direct I/O are not offered.
    (&["-lm", "--load-mode"], Flag::Map("--mmap", &[("auto", "auto"), ("mmap", "on"), ("none", "off")])),
    // Older llama.cpp spellings, which scripts still pass.
    (&["--no-mmap"], Flag::Map("--mmap", &[("", "off")])),
    (&["--mmap"], Flag::Map("--mmap", &[("", "on")])),
    (&["--mlock"], Flag::Noted(false, "the weights are not locked in memory; a score is the same")),
    (
        &["-s", "--seed"],
        Flag::Noted(true, "nothing is sampled, and the task subsets are drawn with a fixed seed, as llama-perplexity draws them"),
    ),
    (&["--temp", "--temperature"], Flag::Noted(true, "nothing is sampled when scoring")),
    (
        &[
            "--samplers",
            "--sampler-seq",
            "--sampling-seq",
            "--top-k",
            "--top-p",
            "--min-p",
            "--top-nsigma",
            "--top-n-sigma",
            "--xtc-probability",
            "--xtc-threshold",
            "--typical",
            "--typical-p",
            "--repeat-last-n",
            "--repeat-penalty",
            "--presence-penalty",
            "--frequency-penalty",
            "--dry-multiplier",
            "--dry-base",
            "--dry-allowed-length",
            "--dry-penalty-last-n",
            "--dry-sequence-breaker",
            "--adaptive-target",
            "--adaptive-decay",
            "--dynatemp-range",
            "--dynatemp-exp",
            "--mirostat",
            "--mirostat-lr",
            "--mirostat-ent",
            "-l",
            "--logit-bias",
            "--grammar",
            "--grammar-file",
            "-j",
            "--json-schema",
            "-jf",
            "--json-schema-file",
            "-n",
            "--predict",
            "--n-predict",
            "--keep",
        ],
        Flag::Noted(true, SAMPLED),
    ),
    (&["--ignore-eos", "-bs", "--backend-sampling", "--context-shift", "--no-context-shift"], Flag::Noted(false, SAMPLED)),
    (
        &["--spec-draft-type-k", "-ctkd", "--cache-type-k-draft", "--spec-draft-type-v", "-ctvd", "--cache-type-v-draft"],
        Flag::Noted(true, "no draft model is used"),
    ),
    (
        &[
            "-C",
            "--cpu-mask",
            "-Cr",
            "--cpu-range",
            "--cpu-strict",
            "--prio",
            "--poll",
            "-Cb",
            "--cpu-mask-batch",
            "-Crb",
            "--cpu-range-batch",
        ],
        Flag::Noted(true, PLACED),
    ),
    (&["--cpu-strict-batch", "--prio-batch", "--poll-batch", "--numa", "-lzm", "--lazy-mode"], Flag::Noted(true, PLACED)),
    (&["--no-host", "--repack", "-kvo", "--kv-offload"], Flag::Noted(false, PLACED)),
    (
        &["-kvu", "--kv-unified", "-no-kvu", "--no-kv-unified"],
        Flag::Noted(false, "mcscore lays out its KV cache itself; a score is the same"),
    ),
    (&["--op-offload", "--no-op-offload"], Flag::Noted(false, "mcscore sets it by -ngl, so that numbers never move with the batch")),
    (
        &["-fit", "--fit", "-fitt", "--fit-target", "-fitc", "--fit-ctx"],
        Flag::Noted(true, "mcscore sizes the context to its fills and refuses what does not fit"),
    ),
    (&["--check-tensors"], Flag::Noted(false, "mcscore checks a model's values itself when it loads it")),
    (&["-dt", "--defrag-thold"], Flag::Noted(true, "every fill starts from an empty cache")),
    (&["--warmup", "--no-warmup"], Flag::Noted(false, "mcscore runs no warm-up decode")),
    (&["--perf", "--no-perf"], Flag::Noted(false, "mcscore score --timings says where the time went")),
    (&["-e", "--escape", "--no-escape", "--offline"], Flag::Noted(false, "no prompt is read and nothing is downloaded")),
    (&["-p", "--prompt"], Flag::Noted(true, "the tasks come from the task file")),
    (&["--chunks"], Flag::Noted(true, "it counts plain perplexity's chunks")),
    (
        &["-nr", "--no-repack"],
        Flag::Refused(false, "weights are repacked, as llama.cpp does by default, and other kernels would change the scores"),
    ),
    (
        &["-nkvo", "--no-kv-offload"],
        Flag::Refused(false, "the KV cache stays with its layers, llama.cpp's default; elsewhere it would change GPU scores"),
    ),
    (&["--swa-full"], Flag::Refused(false, CHANGES_SCORES)),
    (
        &["--lora", "--lora-scaled", "--control-vector", "--control-vector-scaled", "--control-vector-layer-range", "--override-kv"],
        Flag::Refused(true, CHANGES_SCORES),
    ),
    (
        &["-mu", "--model-url", "-dr", "--docker-repo", "-hf", "-hfr", "--hf-repo", "-hff", "--hf-file", "-hft", "--hf-token"],
        Flag::Refused(true, DOWNLOADS),
    ),
    (&["-cl", "--cache-list"], Flag::Refused(false, DOWNLOADS)),
    (
        &[
            "-mm",
            "--mmproj",
            "-mmu",
            "--mmproj-url",
            "-mmdev",
            "--mmproj-device",
            "--image-min-tokens",
            "--image-max-tokens",
            "--video-fps",
            "--video-timestamp-interval",
            "--video-ffmpeg-dir",
        ],
        Flag::Refused(true, IMAGES),
    ),
    (&["--mmproj-offload", "--no-mmproj-offload"], Flag::Refused(false, IMAGES)),
    (&["-ot", "--override-tensor", "-ncmoe", "--n-cpu-moe", "-ncffn", "--n-cpu-ffn"], Flag::Refused(true, PLACEMENT)),
    (
        &["-ts", "--tensor-split"],
        Flag::Refused(
            true,
            "llama-cpp-2, which mcscore calls llama.cpp through, cannot pass a split; -sm none -mg N puts the model on one GPU, \
             and CUDA_VISIBLE_DEVICES or GGML_VK_VISIBLE_DEVICES chooses the GPUs llama.cpp splits it over by free memory",
        ),
    ),
    (&["-cmoe", "--cpu-moe"], Flag::Refused(false, PLACEMENT)),
    (
        &["-dev", "--device"],
        Flag::Refused(true, "mcscore uses the GPU llama.cpp finds; choose one with CUDA_VISIBLE_DEVICES or GGML_VK_VISIBLE_DEVICES"),
    ),
    (&["--list-devices"], Flag::Refused(false, "`mcscore score --timings` names the device a run used")),
    (&["--rpc"], Flag::Refused(true, "remote backends are not offered")),
    (&["--completion-bash"], Flag::Refused(false, "not offered")),
];

/// Flags of llama-perplexity's other modes, refused by name.
const OTHER_MODES: &[&str] =
    &["--kl-divergence", "--kl-divergence-base", "--save-all-logits", "--ppl-stride", "--ppl-output-type", "--all-logits"];

/// What `llama-perplexity --help` prints here.
pub(crate) fn help() -> String {
    let mut text = String::from(
        "llama-perplexity (mcscore): llama-perplexity's multiple-choice modes, scored by mcscore\n\n\
         usage: llama-perplexity -m MODEL (-bf FILE --multiple-choice | -f FILE --hellaswag | -f FILE --winogrande) [flags]\n\n\
         flags, as llama-perplexity takes them:\n",
    );
    let (mut noted, mut refused) = (Vec::new(), Vec::new());
    for (names, flag) in FLAGS {
        let (value, note) = match flag {
            Flag::Pass(_, true) => (" N".to_owned(), ""),
            Flag::Pass(_, false) => (String::new(), ""),
            Flag::IgnoreOptional(_) => (" [on|off|auto]".to_owned(), "   (accepted; mcscore formats its own log)"),
            Flag::Map(_, [("", _)]) => (String::new(), ""),
            Flag::Map(_, _) => (" auto|mmap|none".to_owned(), ""),
            Flag::Ignore(_) | Flag::Noted(..) => {
                noted.extend(names.iter().copied());
                continue;
            }
            Flag::Refused(..) => {
                refused.extend(names.iter().copied());
                continue;
            }
        };
        text.push_str(&format!("  {}{value}{note}\n", names.join(", ")));
    }
    for (heading, names) in [
        ("accepted, changing no score (sampling, logging, thread and memory placement; a one-line note says why)", noted),
        ("refused, saying why (they would change the scores, download, or take images)", refused),
    ] {
        text.push_str(&format!("\n{heading}:\n"));
        let mut line = String::from(" ");
        for name in names {
            if line.len() + name.len() > 100 {
                text.push_str(&format!("{line}\n"));
                line = String::from(" ");
            }
            line.push_str(&format!(" {name}"));
        }
        text.push_str(&format!("{line}\n"));
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
        if let Flag::Refused(_, why) = flag {
            return Err(UsageError(format!("{name}: not supported: {why}")));
        }
        let value = match (flag.takes_value(), inline) {
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
            Flag::Ignore(_) | Flag::IgnoreOptional(_) | Flag::Refused(..) => {}
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
        let args: Vec<OsString> =
            ["llama-perplexity", "--winogrande", "--seed", "1", "--mlock", "--temp=0", "-kvu", "--no-warmup", "-ctk", "f16"]
                .iter()
                .map(OsString::from)
                .collect();
        let (out, notes) = translate(&args).unwrap();
        assert_eq!(out[4..], ["--winogrande", "--cache-type-k", "f16", "--ctx-size", "512"].map(OsString::from));
        assert_eq!(notes.len(), 5, "{notes:?}");
        assert_eq!(
            notes[0],
            "--seed 1: accepted; nothing is sampled, and the task subsets are drawn with a fixed seed, as llama-perplexity draws them"
        );
        assert!(notes[2].starts_with("--temp 0: accepted"), "{notes:?}");
        // How layers are spread over GPUs is passed on (and checked by score).
        let out = words(&["llama-perplexity", "--winogrande", "-sm", "row", "--main-gpu", "1"]).unwrap();
        assert!(out.join(" ").contains("--split-mode row --main-gpu 1"), "{out:?}");
        let error = words(&["llama-perplexity", "--winogrande", "-ts", "3,1"]).unwrap_err();
        assert!(error.starts_with("-ts: not supported: llama-cpp-2"), "{error}");
        // Flags that change the numbers and are not offered, by name and why.
        let error = words(&["llama-perplexity", "--winogrande", "--lora", "a.gguf"]).unwrap_err();
        assert_eq!(error, "--lora: not supported: it would change the scores, and mcscore does not offer it");
        // RoPE's overrides are passed on.
        let out = words(&["llama-perplexity", "--winogrande", "--rope-freq-base", "10000", "--yarn-orig-ctx", "4096"]).unwrap();
        assert!(out.join(" ").contains("--rope-freq-base 10000 --yarn-orig-ctx 4096"), "{out:?}");
        let error = words(&["llama-perplexity", "--winogrande", "-hf", "org/model"]).unwrap_err();
        assert!(error.starts_with("-hf: not supported: mcscore downloads no models"), "{error}");
    }

    /// The flags llama.cpp's `common/arg.cpp` (of the llama.cpp mcscore is
    /// built with, from cargo's registry) gives llama-perplexity: each
    /// `add_opt(common_arg(...))` for every example or for perplexity, with
    /// its spellings (negated ones too) and whether it takes a value.
    fn llama_cpp_flags() -> Vec<(String, bool)> {
        let version = include_str!("../../../Cargo.toml")
            .lines()
            .find_map(|l| l.strip_prefix("llama-cpp-sys-2 = { version = \"=")?.split('"').next())
            .expect("the workspace pins llama-cpp-sys-2");
        let home = std::env::var_os("CARGO_HOME")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| std::path::PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cargo"));
        let source = std::fs::read_dir(home.join("registry/src"))
            .expect("cargo's registry: run `cargo fetch`")
            .filter_map(|d| d.ok())
            .map(|d| d.path().join(format!("llama-cpp-sys-2-{version}/llama.cpp/common/arg.cpp")))
            .find(|p| p.is_file())
            .unwrap_or_else(|| panic!("llama-cpp-sys-2 {version}'s source is not in {}: run `cargo fetch`", home.display()));
        let text = std::fs::read_to_string(source).unwrap();
        let bytes = text.as_bytes();
        // The end of the string or character literal opening at `i`.
        let literal_end = |mut i: usize| {
            let quote = bytes[i];
            i += 1;
            while bytes[i] != quote {
                i += if bytes[i] == b'\\' { 2 } else { 1 };
            }
            i + 1
        };
        let mut flags = Vec::new();
        let mut at = 0;
        while let Some(found) = text[at..].find("add_opt(common_arg(") {
            // The call, to its closing parenthesis, comments left out.
            let start = at + found + "add_opt".len();
            let (mut i, mut depth, mut call) = (start, 0, String::new());
            loop {
                match bytes[i] {
                    b'"' | b'\'' => {
                        let end = literal_end(i);
                        call.push_str(&text[i..end]);
                        i = end;
                        continue;
                    }
                    b'/' if bytes[i + 1] == b'/' => {
                        i += text[i..].find('\n').unwrap();
                        continue;
                    }
                    b'(' => depth += 1,
                    b')' => depth -= 1,
                    _ => {}
                }
                call.push(bytes[i] as char);
                i += 1;
                if depth == 0 {
                    break;
                }
            }
            at = i;
            let examples = |method: &str| call.split(method).nth(1).map(|rest| rest[..rest.find('}').unwrap()].to_owned());
            let included = examples(".set_examples({")
                .is_none_or(|e| e.contains("LLAMA_EXAMPLE_PERPLEXITY") || e.contains("LLAMA_EXAMPLE_COMMON"))
                && !examples(".set_excludes({").is_some_and(|e| e.contains("LLAMA_EXAMPLE_PERPLEXITY"));
            if !included {
                continue;
            }
            // The leading lists of spellings: the flag's, then its negations'.
            let mut rest = call["(common_arg(".len()..].trim_start();
            let mut lists = Vec::new();
            while let Some(list) = rest.strip_prefix('{') {
                let end = list.find('}').unwrap();
                lists.push(list[..end].split(',').map(|n| n.trim().trim_matches('"').to_owned()).collect::<Vec<_>>());
                rest = list[end + 1..].trim_start().trim_start_matches(',').trim_start();
            }
            // A handler given the value after the params takes one, unless
            // the flag has negations (its handler gets which was given).
            let handler = rest.split("[](common_params &").nth(1).unwrap_or("");
            let takes_value = lists.len() == 1
                && handler.trim_start().trim_start_matches(|c: char| c.is_alphanumeric() || c == '_').trim_start().starts_with(',');
            for name in lists.concat() {
                flags.push((name, takes_value));
            }
        }
        flags
    }

    /// Every flag llama-perplexity takes is known here: passed on, accepted
    /// with a note, or refused saying why (never "not supported" unnamed),
    /// taking a value exactly where llama.cpp's does.
    #[test]
    fn every_llama_perplexity_flag_is_known() {
        let flags = llama_cpp_flags();
        assert!(flags.len() > 150, "{} flags read from llama.cpp: the reader broke", flags.len());
        let handled_first = ["-h", "--help", "--usage", "--version"];
        for (name, takes_value) in flags.iter().filter(|(n, _)| !handled_first.contains(&n.as_str())) {
            let known = FLAGS.iter().find(|(names, _)| names.contains(&name.as_str()));
            if known.is_none() {
                assert!(
                    OTHER_MODES.contains(&name.as_str()),
                    "{name}: llama-perplexity takes it and mcscore's entry point does not know it"
                );
                continue;
            }
            assert_eq!(
                known.unwrap().1.takes_value(),
                *takes_value,
                "{name}: llama.cpp and the entry point disagree on whether it takes a value"
            );
        }
        // A flag no llama.cpp has is still refused as unknown.
        let error = words(&["llama-perplexity", "--multiple-choice", "--no-such-flag"]).unwrap_err();
        assert!(error.contains("not supported by mcscore's llama-perplexity"), "{error}");
    }

    #[test]
    fn the_entry_point_is_chosen_by_program_name() {
        assert!(invoked_as(Some(&OsString::from("/usr/local/bin/llama-perplexity"))));
        assert!(invoked_as(Some(&OsString::from("llama-perplexity.exe"))));
        assert!(!invoked_as(Some(&OsString::from("mcscore"))));
        assert!(!invoked_as(None));
    }
}
