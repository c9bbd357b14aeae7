//! SIGTERM and SIGHUP (what Slurm, Kubernetes and a closed terminal send)
//! handled as Ctrl-C is, by every command that writes: partial outputs
//! removed, a log marked unfinished, exit 128 + the signal. A full file
//! system leaves no empty or half-written file under a final name, and
//! says the OS's reason. docs/reliability.md lists the cases.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn signal(child: &Child, name: &str) {
    assert!(Command::new("kill").args([&format!("-{name}"), &child.id().to_string()]).status().unwrap().success());
}

/// Waits until `ready` holds (or 60 s pass), polling.
fn wait_until(what: &str, mut ready: impl FnMut() -> bool) {
    let started = Instant::now();
    while !ready() {
        assert!(started.elapsed() < Duration::from_secs(60), "{what}: not within 60 s");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn partial_files(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).filter(|p| path_str(p).contains(".mcscore-partial-")).collect()
}

fn finish(child: Child) -> (Option<i32>, String) {
    let out = child.wait_with_output().unwrap();
    (out.status.code(), stderr(&out))
}

#[test]
fn a_signal_mid_score_keeps_the_log_marked_unfinished() {
    let dir = tempdir();
    let file = repo("datasets/arc-easy-validation.bin");
    for (name, code) in [("TERM", 143), ("HUP", 129)] {
        let log = dir.path().join(format!("{name}.jsonl"));
        let child = mcscore()
            .args(["score", "-m", &model(), "-bf", &file, "--log-samples", path_str(&log)])
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        wait_until("a scored task in the log", || std::fs::read_to_string(&log).is_ok_and(|t| t.contains("\"type\":\"task\"")));
        signal(&child, name);
        let (status, err) = finish(child);
        assert_eq!(status, Some(code), "{err}");
        assert!(err.contains(&format!("interrupted by SIG{name} after")) && err.contains("marked incomplete"), "{err}");
        assert_eq!(log_footer(&log)["complete"], false);
    }
}

#[test]
fn a_signal_mid_quantize_removes_the_partial_model() {
    let dir = tempdir();
    let out = dir.path().join("f32.gguf");
    let child = mcscore().args(["quantize", &model(), path_str(&out), "--type", "F32"]).stderr(Stdio::piped()).spawn().unwrap();
    // F32 writes about 1 GB: stopped once the first 50 MB are there.
    wait_until("a partial model", || partial_files(dir.path()).iter().any(|p| std::fs::metadata(p).is_ok_and(|m| m.len() > 50 << 20)));
    signal(&child, "TERM");
    let (status, err) = finish(child);
    assert_eq!(status, Some(143), "{err}");
    assert!(err.contains("stopped by SIGTERM; the output being written was removed"), "{err}");
    assert!(partial_files(dir.path()).is_empty() && !out.exists(), "{:?}", std::fs::read_dir(dir.path()).unwrap().collect::<Vec<_>>());
}

#[test]
fn a_signal_mid_build_leaves_no_partial_file() {
    let dir = tempdir();
    let manifest = dir.path().join("manifest.json");
    let child = mcscore()
        .args(["build", "mmlu-test", "--sources", &sources(), "--out", path_str(dir.path()), "--manifest", path_str(&manifest)])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    wait_until("a partial task file", || !partial_files(dir.path()).is_empty());
    signal(&child, "TERM");
    let (status, err) = finish(child);
    assert_eq!(status, Some(143), "{err}");
    assert!(partial_files(dir.path()).is_empty(), "{err}");
    assert!(!dir.path().join("mmlu-test.bin").exists(), "{err}");
    // A signal as a temporary file is being made (a build of every local
    // benchmark starts one at once) removes it too: the file is listed under
    // the lock the removal takes. The folder the build makes exists only
    // once its signal handlers are in place.
    for delay in (0..=90).step_by(10) {
        let dir = tempdir();
        let out = dir.path().join("out");
        let manifest = out.join("manifest.json");
        let child = mcscore()
            .args(["build", "--all-local", "--sources", &sources(), "--out", path_str(&out), "--manifest", path_str(&manifest)])
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        wait_until("the output folder", || out.is_dir());
        std::thread::sleep(std::time::Duration::from_millis(delay));
        signal(&child, "TERM");
        let (status, err) = finish(child);
        assert_eq!(status, Some(143), "after {delay} ms: {err}");
        let left: Vec<_> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .filter(|n| n.to_string_lossy().starts_with(".mcscore"))
            .collect();
        assert!(left.is_empty(), "after {delay} ms: {left:?} {err}");
    }
}

/// A 1 MiB tmpfs, filled, unmounted when dropped.
struct FullDisk(tempfile::TempDir);

impl FullDisk {
    fn mount() -> FullDisk {
        let dir = tempdir();
        let mounted = Command::new("mount").args(["-t", "tmpfs", "-o", "size=1m", "tmpfs", path_str(dir.path())]).status();
        assert!(
            mounted.is_ok_and(|s| s.success()),
            "mounting a 1 MiB tmpfs failed: these tests need root (or CAP_SYS_ADMIN), as scripts/test runs in CI"
        );
        // Filled to the last block.
        let _ = std::fs::write(dir.path().join("filler"), vec![0u8; 1 << 20]);
        FullDisk(dir)
    }

    fn path(&self) -> &Path {
        self.0.path()
    }
}

impl Drop for FullDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0.path()).status();
    }
}

#[test]
fn a_full_disk_leaves_no_empty_file_and_says_why() {
    let disk = FullDisk::mount();
    let file = repo("datasets/arc-easy-validation.bin");
    let log = disk.path().join("run.jsonl");
    let out = run(&["score", "-m", &model(), "-bf", &file, "--limit", "2", "--log-samples", path_str(&log)]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("run.jsonl") && stderr(&out).contains("No space left on device"), "{}", stderr(&out));
    assert!(!log.exists(), "an empty log under its final name would ask for --resume, which cannot read it");
    let quantized = disk.path().join("q8.gguf");
    let out = run(&["quantize", &model(), path_str(&quantized), "--type", "Q8_0"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("No space left on device (os error 28), writing into"), "{}", stderr(&out));
    assert!(!quantized.exists() && partial_files(disk.path()).is_empty());
}
