//! Helpers shared by the command-line tests: the real binary, the real model
//! and the real reference files. A missing prerequisite fails the test with
//! the command that provides it.

#![allow(dead_code)] // each test binary uses a different part

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub mod invariance;
pub mod server;

/// Sends SIGINT (what Ctrl-C sends) to a running mcscore.
pub fn interrupt(child: &std::process::Child) {
    let status = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(status.success(), "kill -INT {}", child.id());
}

pub fn mcscore() -> Command {
    Command::new(env!("CARGO_BIN_EXE_mcscore"))
}

pub fn run(args: &[&str]) -> Output {
    mcscore().args(args).output().expect("mcscore runs")
}

/// Runs mcscore and samples its peak resident memory (Linux's VmHWM) while
/// it runs: the output, and the largest peak seen, in bytes.
pub fn run_measured(args: &[&str]) -> (Output, u64) {
    use std::process::Stdio;
    let child = mcscore().args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("mcscore runs");
    let status = format!("/proc/{}/status", child.id());
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watcher = {
        let done = done.clone();
        std::thread::spawn(move || {
            let mut peak = 0;
            while !done.load(std::sync::atomic::Ordering::SeqCst) {
                let hwm = std::fs::read_to_string(&status).ok().and_then(|s| {
                    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?.to_owned();
                    line.split_whitespace().nth(1)?.parse::<u64>().ok()
                });
                peak = peak.max(hwm.unwrap_or(0) * 1024);
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            peak
        })
    };
    let out = child.wait_with_output().expect("mcscore ends");
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    (out, watcher.join().unwrap())
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// What mcscore said on stderr; every message a test reads is checked for
/// Rust's debug text ("gold is Some(99)"), which no message may hold.
pub fn stderr(output: &Output) -> String {
    let text = String::from_utf8_lossy(&output.stderr).into_owned();
    for debug in ["Some(", "Ok(", "Err(", "PathBuf", "Error {", "Custom {", "kind: ", "..=", "invalid digit", "too large to fit"] {
        assert!(!text.contains(debug), "Rust debug text {debug:?} in a message:\n{text}");
    }
    text
}

/// `../shared/reference/NAME` beside the checkout.
pub fn reference(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/reference").join(name);
    assert!(path.exists(), "{} is missing: the tests read ../shared/reference beside the checkout", path.display());
    path.to_str().unwrap().to_owned()
}

/// A path inside the checkout.
pub fn repo(relative: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(relative).to_str().unwrap().to_owned()
}

/// `../shared/data/sources`: the real benchmark sources.
pub fn sources() -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/sources");
    assert!(root.is_dir(), "{} is missing: the tests read ../shared/data/sources", root.display());
    root.to_str().unwrap().to_owned()
}

/// The default model: $MCSCORE_MODEL, or where scripts/fetch-model caches it.
pub fn model() -> String {
    let path = std::env::var_os("MCSCORE_MODEL").map(PathBuf::from).unwrap_or_else(|| {
        let cache = std::env::var_os("MCSCORE_CACHE_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/mcscore"));
        cache.join("models/gemma-3-270m-q4_k_m.gguf")
    });
    assert!(path.is_file(), "the model is not at {}: run scripts/fetch-model first", path.display());
    path.to_str().unwrap().to_owned()
}

/// Task lines of a --log-samples file.
pub fn log_tasks(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["type"] == "task")
        .collect()
}

/// Every option's (logprob_sum, tokens) of each task of a log, in log order.
pub fn option_scores(log: &Path) -> Vec<Vec<(f64, u64)>> {
    log_tasks(log)
        .iter()
        .map(|t| {
            t["options"].as_array().unwrap().iter().map(|o| (o["logprob_sum"].as_f64().unwrap(), o["tokens"].as_u64().unwrap())).collect()
        })
        .collect()
}

/// The header line of a --log-samples file.
pub fn log_header(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap();
    serde_json::from_str(text.lines().next().unwrap()).unwrap()
}

pub fn log_footer(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap();
    serde_json::from_str(text.lines().last().unwrap()).unwrap()
}

/// Index of the first maximum: mcscore's and llama-perplexity's pick,
/// written out again so the tests do not check the code against itself.
pub fn first_max(values: &[f64]) -> usize {
    (1..values.len()).fold(0, |b, k| if values[k] > values[b] { k } else { b })
}

/// A file of tests/data/llama-perplexity: llama-perplexity's own outputs.
pub fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/llama-perplexity").join(name)
}

/// The real hellaswag_val_full.txt, decompressed from its source into `dir`.
pub fn hellaswag_file(dir: &Path) -> PathBuf {
    use std::io::Read;
    let source = Path::new(&sources()).join("llamacpp_validation/klosax_hellaswag_text_data_1105d37/hellaswag_val_full.txt.bz2");
    let mut text = Vec::new();
    bzip2::read::BzDecoder::new(std::fs::File::open(&source).unwrap()).read_to_end(&mut text).unwrap();
    let path = dir.join("hellaswag_val_full.txt");
    std::fs::write(&path, text).unwrap();
    path
}

pub fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

/// make-model downloads and unpacks llama.cpp's source tree into the cache
/// once: the tests of one binary, threads of one process, take turns.
pub static MAKE_MODEL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A random model written by scripts/make-model with `args` (its shape,
/// weight type, tokenizer), as DIR/NAME.gguf.
pub fn random_model(dir: &Path, name: &str, args: &[&str]) -> PathBuf {
    let _turn = MAKE_MODEL.lock().unwrap_or_else(|e| e.into_inner());
    let out = dir.join(format!("{name}.gguf"));
    let made = Command::new(repo("scripts/make-model"))
        .args(args)
        .args(["-o", path_str(&out)])
        .output()
        .expect("scripts/make-model runs (python3)");
    assert!(made.status.success(), "scripts/make-model failed (needs python3 and PyPI once): {}", String::from_utf8_lossy(&made.stderr));
    out
}

/// A tiny random model (1 layer, 64 wide) with llama.cpp's `vocab` tokenizer
/// and, if given, a chat template as its tokenizer.chat_template.
pub fn tiny_model(dir: &Path, name: &str, vocab: &str, add_bos: bool, chat_template: Option<&str>) -> PathBuf {
    let mut args =
        vec!["--dim", "64", "--layers", "1", "--heads", "2", "--kv-heads", "1", "--ff", "128", "--type", "f16", "--vocab", vocab];
    args.extend(["--add-bos", if add_bos { "yes" } else { "no" }]);
    if let Some(t) = chat_template {
        args.extend(["--chat-template", t]);
    }
    random_model(dir, name, &args)
}

/// llama.cpp's real chat templates, from the source tree make-model unpacks.
pub fn llama_cpp_template(name: &str) -> PathBuf {
    let cache = std::env::var_os("MCSCORE_CACHE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache/mcscore"));
    let path =
        cache.join("bench/llama-cpp-python-0.3.36/llama_cpp_python-0.3.36/vendor/llama.cpp/models/templates").join(format!("{name}.jinja"));
    if !path.is_file() {
        // The first make-model of a machine unpacks the tree.
        tiny_model(tempdir().path(), "unpack", "llama-spm", true, None);
    }
    assert!(path.is_file(), "{}: missing after scripts/make-model unpacked llama.cpp's source tree", path.display());
    path
}

pub fn path_str(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The folder of Python's independent references (scipy, numpy, jinja2,
/// jsonschema from PyPI), installed by scripts/setup-python-stats on first use.
pub fn python_stats() -> PathBuf {
    let setup = Command::new(repo("scripts/setup-python-stats")).output().expect("scripts/setup-python-stats runs");
    assert!(setup.status.success(), "scripts/setup-python-stats failed: {}", String::from_utf8_lossy(&setup.stderr));
    PathBuf::from(String::from_utf8(setup.stdout).unwrap().trim())
}

/// Where scripts/setup-lm-eval installs lm-evaluation-harness (PyPI).
pub fn lm_eval_path() -> String {
    let cache = std::env::var_os("MCSCORE_CACHE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/mcscore"));
    let path = cache.join("python-lm-eval");
    assert!(path.join("lm_eval").is_dir(), "lm-eval is not installed at {}: run scripts/setup-lm-eval", path.display());
    path.to_str().unwrap().to_owned()
}

/// Validates `document` against docs/schema/`schema` with jsonschema's
/// Draft 2020-12 validator; returns its complaints (none when valid).
pub fn schema_complaints(schema: &str, document: &serde_json::Value) -> Vec<String> {
    let script = r#"
import json, sys
from jsonschema import Draft202012Validator
schema = json.load(open(sys.argv[1]))
Draft202012Validator.check_schema(schema)
document = json.load(sys.stdin)
for error in Draft202012Validator(schema).iter_errors(document):
    print("/".join(map(str, error.absolute_path)) + ": " + error.message)
"#;
    let mut child = Command::new("python3")
        .args(["-c", script, &repo(&format!("docs/schema/{schema}"))])
        .env("PYTHONPATH", python_stats())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("python3 runs");
    use std::io::Write;
    child.stdin.take().unwrap().write_all(document.to_string().as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "the validator failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().lines().map(str::to_owned).collect()
}

/// The Selenium folder `scripts/setup-browser` installs, once Chromium is there.
pub fn setup_browser() -> PathBuf {
    let cache = std::env::var_os("MCSCORE_CACHE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/mcscore"));
    let dir = cache.join("python-browser");
    assert!(
        dir.join("selenium").is_dir() && Path::new("/usr/bin/chromedriver").exists(),
        "Selenium or Chromium is missing: run scripts/setup-browser first"
    );
    dir
}

pub fn view_browser(selenium: &Path, args: &[&str]) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/view_browser.py");
    let out = Command::new("python3").arg(script).args(args).env("PYTHONPATH", selenium).output().expect("python3 runs");
    assert!(
        out.status.success(),
        "view_browser.py {}: {}{}",
        args[0],
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("view_browser.py {}: {}", args[0], String::from_utf8_lossy(&out.stdout));
}

/// Python's jinja2 (PyPI, scripts/setup-python-stats) on each request.
pub fn jinja2(requests: &[serde_json::Value]) -> Vec<serde_json::Value> {
    let target = python_stats();
    let mut child = Command::new("python3")
        .arg(repo("crates/mcscore-cli/tests/python/chat_reference.py"))
        .env("PYTHONPATH", target)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    serde_json::to_writer(child.stdin.take().unwrap(), &requests).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "chat_reference.py: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Every text of the SVG plot at `path` is legible where a page or a
/// paper's column shows the plot (520 px wide, or its own width if less: at
/// least 9 px) and lies inside the picture, its extent estimated at 0.6 em
/// a character (plots.rs sizes its label areas by the same estimate) from
/// its anchor. Rotated text is held to its height only.
pub fn check_plot_text(path: &Path) {
    let svg = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let attribute = |tag: &str, name: &str| -> Option<String> {
        let start = tag.find(&format!(" {name}=\""))? + name.len() + 3;
        Some(tag[start..].split('"').next()?.to_owned())
    };
    let head = &svg[..svg.find('>').unwrap()];
    let number = |tag: &str, name: &str| attribute(tag, name).and_then(|v| v.parse::<f64>().ok());
    let (width, height) = (number(head, "width").unwrap(), number(head, "height").unwrap());
    let shown = (520.0 / width).min(1.0);
    let mut texts = 0;
    for piece in svg.split("<text").skip(1) {
        let (tag, rest) = piece.split_once('>').unwrap();
        let content = rest.split("</text>").next().unwrap();
        let content = content.trim().replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&").replace("&quot;", "\"");
        if content.trim().is_empty() {
            continue;
        }
        texts += 1;
        let size = number(tag, "font-size").unwrap_or_else(|| panic!("{}: no font-size in <text{tag}>", path.display()));
        assert!(size * shown >= 9.0, "{}: {content:?} is {size:.1} px, {:.1} px where the plot is shown", path.display(), size * shown);
        let (x, y) = (number(tag, "x").unwrap(), number(tag, "y").unwrap());
        assert!((-1.0..=height + 1.0).contains(&y), "{}: {content:?} at y = {y} outside 0..{height}", path.display());
        if attribute(tag, "transform").is_some() {
            continue;
        }
        let extent = 0.6 * size * content.chars().count() as f64;
        let (left, right) = match attribute(tag, "text-anchor").as_deref() {
            Some("middle") => (x - extent / 2.0, x + extent / 2.0),
            Some("end") => (x - extent, x),
            _ => (x, x + extent),
        };
        assert!(left >= -1.0 && right <= width + 1.0, "{}: {content:?} spans {left:.0}..{right:.0}, outside 0..{width}", path.display());
    }
    assert!(texts > 0, "{}: no text", path.display());
    // A label cut short is given in full under the plot.
    assert!(!svg.contains('…') || svg.contains(">Labels in full:<"), "{}: a label is cut and no key gives it in full", path.display());
}
