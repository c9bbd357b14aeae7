//! mcscore as `llama-perplexity` (a link of that name first on PATH): a
//! script written for llama-perplexity runs unchanged in all three modes, and
//! its output has llama-perplexity's frame (the reference runs' stdout).

mod common;

use std::path::Path;
use std::process::Command;

use common::*;

/// stdout with every number replaced by `#`: the frame llama-perplexity prints.
fn frame(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .map(|line| {
            let mut out = String::new();
            for c in line.chars() {
                if c.is_ascii_digit() || c == '-' {
                    if !out.ends_with('#') {
                        out.push('#');
                    }
                } else if !(c == '.' && out.ends_with('#')) {
                    out.push(c);
                }
            }
            out
        })
        .collect()
}

/// The first `tasks` task lines of a reference stdout, framed, with what precedes and follows them.
fn reference_frame(name: &str, tasks: usize) -> Vec<String> {
    let all = frame(&std::fs::read_to_string(name).unwrap());
    let first = all.iter().position(|l| l.starts_with('#')).unwrap();
    let last = all.iter().rposition(|l| l.starts_with('#')).unwrap();
    [&all[..first + tasks], &all[last + 1..]].concat()
}

fn link_dir(dir: &Path) -> String {
    let bin = dir.join("bin");
    std::fs::create_dir(&bin).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_mcscore"), bin.join("llama-perplexity")).unwrap();
    format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default())
}

#[test]
fn an_existing_script_runs_unchanged_in_all_three_modes() {
    let dir = tempdir();
    let path = link_dir(dir.path());
    let script = r#"set -e
llama-perplexity -m "$MODEL" -bf "$MC" --multiple-choice -c 512 -np 16 -t 2 > mc.out 2> mc.err
llama-perplexity -m "$MODEL" -f "$HS" --hellaswag --hellaswag-tasks 20 -np 16 -t 2 --no-log-timestamps > hs.out 2> hs.err
llama-perplexity -m "$MODEL" -f "$WG" --winogrande --winogrande-tasks 20 -t 2 --seed 1 --temp 0 --mlock -kvu -ctk f16 > wg.out 2> wg.err
"#;
    let out = Command::new("bash")
        .args(["-c", script])
        .current_dir(dir.path())
        .env("PATH", &path)
        .env("MODEL", model())
        .env("MC", reference("mc_letter4.bin"))
        .env("HS", hellaswag_file(dir.path()))
        .env("WG", data("winogrande-201.csv"))
        .output()
        .unwrap();
    let read = |name: &str| std::fs::read_to_string(dir.path().join(name)).unwrap();
    assert!(out.status.success(), "{}\n{}\n{}\n{}", stderr(&out), read("mc.err"), read("hs.err"), read("wg.err"));

    // The multiple-choice run is the reference's whole command: its frame entire.
    assert_eq!(frame(&read("mc.out")), frame(&std::fs::read_to_string(reference("mc_letter4.llama-perplexity.stdout")).unwrap()));
    assert!(read("mc.err").contains("Final result: "), "{}", read("mc.err"));
    assert_eq!(frame(&read("hs.out")), reference_frame(path_str(&data("hellaswag-200.llama-perplexity.stdout")), 20));
    assert_eq!(frame(&read("wg.out")), reference_frame(path_str(&data("winogrande-201.llama-perplexity.stdout")), 20));
    // Below 100 tasks llama-perplexity prints no final Winogrande line either.
    assert!(!read("wg.err").contains("Final Winogrande"), "{}", read("wg.err"));
    // Flags that change no score: a note each, and the run as without them.
    assert!(read("wg.err").contains("llama-perplexity (mcscore): --seed 1: accepted; nothing is sampled"), "{}", read("wg.err"));
    assert!(read("wg.err").contains("llama-perplexity (mcscore): --mlock: accepted;"), "{}", read("wg.err"));
}

#[test]
fn what_llama_perplexity_does_and_mcscore_does_not_exits_2() {
    let dir = tempdir();
    let path = link_dir(dir.path());
    for (args, expected) in [
        (
            vec!["-m", "m.gguf", "-f", "wiki.test.raw"],
            "plain perplexity (no --multiple-choice, --hellaswag or --winogrande) is not supported",
        ),
        (vec!["-m", "m.gguf", "-f", "x", "--kl-divergence"], "--kl-divergence: not supported"),
        (vec!["-m", "m.gguf", "-f", "x", "--hellaswag", "--lora", "a.gguf"], "--lora: not supported: it would change the scores"),
        (vec!["-m", "m.gguf", "-f", "x", "--hellaswag", "--no-such-flag"], "--no-such-flag: not supported by mcscore's llama-perplexity"),
    ] {
        let out = Command::new("llama-perplexity").args(&args).env("PATH", &path).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(stderr(&out).contains(expected), "{args:?}: {}", stderr(&out));
    }
    let help = Command::new("llama-perplexity").arg("--help").env("PATH", &path).output().unwrap();
    assert!(help.status.success() && stdout(&help).contains("--hellaswag-tasks N"), "{}", stdout(&help));
    let version = Command::new("llama-perplexity").arg("--version").env("PATH", &path).output().unwrap();
    assert!(version.status.success() && stdout(&version).starts_with("llama-perplexity (mcscore "), "{}", stdout(&version));
}
