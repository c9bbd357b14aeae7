//! `mcscore plan` writes scripts and manifests that other programs run: no
//! study value may add a shell line, a YAML key or a broken `#SBATCH` line.
//! The attacks first, then a study full of hostile-but-legal characters run
//! through `bash -n`, bash itself (with a stand-in mcscore that records its
//! arguments) and a YAML parser.

mod common;

use std::os::unix::fs::PermissionsExt;

use common::{path_str, run, stderr, stdout, tempdir};

fn plan(study: &std::path::Path, what: &str) -> std::process::Output {
    run(&["plan", path_str(study), what])
}

#[test]
fn study_values_that_would_change_the_generated_scripts_are_refused() {
    let dir = tempdir();
    let study = dir.path().join("study.json");
    let base = serde_json::json!({"models": ["/data/m.gguf"], "files": ["/data/f.bin"], "shards": 2, "out": "/data/out"});
    let cases: Vec<(serde_json::Value, &str)> = vec![
        (serde_json::json!({"out": "/data/out\ntouch /tmp/owned"}), "control character"),
        (serde_json::json!({"models": ["/data/m.gguf\n; touch x"]}), "control character"),
        (serde_json::json!({"slurm": {"time": "01:00:00\ntouch /tmp/owned"}}), "slurm.time"),
        (serde_json::json!({"slurm": {"partition": "gpu\n#SBATCH --uid=0"}}), "slurm.partition"),
        (serde_json::json!({"slurm": {"mem": "8G --wrap=x"}}), "slurm.mem"),
        (serde_json::json!({"slurm": {"max_running": 0}}), "slurm.max_running is 0"),
        (
            serde_json::json!({"kubernetes": {"name": "x\nnamespace: kube-system", "image": "i", "volume_claim": "c", "mount": "/data", "parallelism": 1, "cpus": 1, "memory": "1Gi", "gpus": 0}}),
            "DNS label",
        ),
        (
            serde_json::json!({"kubernetes": {"name": "x", "image": "i\n    securityContext: {privileged: true}", "volume_claim": "c", "mount": "/data", "parallelism": 1, "cpus": 1, "memory": "1Gi", "gpus": 0}}),
            "control character",
        ),
        (serde_json::json!({"out": ""}), "out is empty"),
        (serde_json::json!({"shards": 9223372036854775808u64}), "shards is 9223372036854775808"),
        (
            serde_json::json!({"models": ["/data/a.gguf", "/data/b.gguf"], "shards": 100000, "files": (0..20).map(|i| format!("/data/f{i}.bin")).collect::<Vec<_>>()}),
            "array tasks",
        ),
        (serde_json::json!({"settings": {"x": ["-o", "out.json"]}}), "`mcscore score` would refuse them"),
        (serde_json::json!({"settings": {"x": ["-mfoo.gguf"]}}), "-mfoo.gguf is set by the plan"),
        (serde_json::json!({"settings": {"x": ["-np", "0"]}}), "`mcscore score` would refuse them"),
        (serde_json::json!({"out": "/data/out\u{2028}touch x"}), "control character"),
        (
            serde_json::json!({"kubernetes": {"name": "on", "image": "i", "volume_claim": "c", "mount": "/data", "parallelism": 1, "cpus": 1, "memory": "1Gi", "gpus": 0}}),
            "YAML 1.1",
        ),
        (
            serde_json::json!({"kubernetes": {"name": "x", "image": "yes", "volume_claim": "c", "mount": "/data", "parallelism": 1, "cpus": 1, "memory": "1Gi", "gpus": 0}}),
            "YAML 1.1",
        ),
    ];
    // Values YAML 1.1 (kubectl) reads as numbers, dates or merge keys.
    let mut cases = cases;
    for image in ["1_000", "12:30", "<<", "2001-01-01", ".inf"] {
        let kubernetes = serde_json::json!({"name": "x", "image": image, "volume_claim": "c", "mount": "/data", "parallelism": 1, "cpus": 1, "memory": "1Gi", "gpus": 0});
        cases.push((serde_json::json!({ "kubernetes": kubernetes }), "YAML 1.1"));
    }
    for (change, expected) in cases {
        let mut text = base.clone();
        for (key, value) in change.as_object().unwrap() {
            text[key] = value.clone();
        }
        std::fs::write(&study, text.to_string()).unwrap();
        for what in ["--slurm", "--kubernetes"] {
            let out = plan(&study, what);
            assert_eq!(out.status.code(), Some(1), "{change} {what}: {}", stderr(&out));
            assert!(stderr(&out).contains(expected), "{change} {what}: {}", stderr(&out));
            assert!(stdout(&out).is_empty(), "nothing is printed for a refused study");
        }
    }
}

#[test]
fn hostile_but_legal_characters_stay_inside_their_words() {
    let dir = tempdir();
    let base = path_str(dir.path()).to_owned();
    // Spaces, quotes, $, backticks, ;, # and globs: legal in paths and flags.
    // (And a non-ASCII letter: the merge job's command runs under sh, which
    // reads no $'…' quoting.)
    let odd = format!("{base}/it's a \"test\" $(touch owned) `id`; #x * %j é");
    let model = format!("{odd}/m.gguf");
    let file = format!("{odd}/f.bin");
    let out = format!("{odd}/out");
    let study_json = serde_json::json!({
        "models": [model], "files": [file], "shards": 2, "out": out,
        "settings": {"s": ["--multiple-choice-tasks", "5"]},
        "mcscore": dir.path().join("fake mcscore").to_str().unwrap(),
        "slurm": {"partition": "gpu", "time": "01:00:00"},
        "kubernetes": {"name": "study", "image": "registry/mcscore:1 ", "volume_claim": "data", "mount": base, "parallelism": 1, "cpus": 2, "memory": "4Gi", "gpus": 0}
    });
    let study = dir.path().join("study.json");
    std::fs::write(&study, study_json.to_string()).unwrap();

    let script = plan(&study, "--slurm");
    assert_eq!(script.status.code(), Some(0), "{}", stderr(&script));
    let script = stdout(&script);
    let path = dir.path().join("study.sbatch");
    std::fs::write(&path, &script).unwrap();
    let syntax = std::process::Command::new("bash").arg("-n").arg(&path).output().unwrap();
    assert!(syntax.status.success(), "bash -n: {}", String::from_utf8_lossy(&syntax.stderr));
    // sbatch reads a double-quoted word with `\` escaping the next character
    // (`#` escaped too, for Slurm before 18.08).
    let escaped = r#"/it's a \"test\" $(touch owned) `id`; \#x * %%j é/out/slurm/%A_%a.out"#;
    assert!(script.contains(&format!("#SBATCH --output=\"{base}{escaped}\"\n")), "{script}");

    // Run the array task itself, with a stand-in for mcscore that records its
    // arguments: they must be the study's values, word for word.
    let fake = dir.path().join("fake mcscore");
    let record = dir.path().join("args");
    std::fs::write(&fake, format!("#!/usr/bin/env bash\nprintf '%s\\0' \"$@\" > '{}'\n", record.display())).unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let ran = std::process::Command::new("bash").arg(&path).env("SLURM_ARRAY_TASK_ID", "1").current_dir(dir.path()).output().unwrap();
    assert!(ran.status.success(), "{}", String::from_utf8_lossy(&ran.stderr));
    assert!(!dir.path().join("owned").exists(), "a study value ran as a command");
    let args = std::fs::read(&record).unwrap();
    let args: Vec<String> = args.split(|&b| b == 0).filter(|a| !a.is_empty()).map(|a| String::from_utf8_lossy(a).into_owned()).collect();
    assert_eq!(&args[..4], ["score", "-m", &model, &file], "{args:?}");
    assert_eq!(&args[4..8], ["--multiple-choice-tasks", "5", "-t", "4"], "a run without -t gets the task's CPUs");
    assert_eq!(args[9], "1/2");
    assert_eq!(args[11], format!("{out}/shards/f/m.s.shard-1.jsonl"));
    assert!(std::path::Path::new(&format!("{out}/shards/f")).is_dir(), "the shard's folder, made by the script");

    // Run with bash outside a job, the script submits itself and the merge
    // job: a stand-in for sbatch records each submission.
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let submissions = dir.path().join("submissions");
    std::fs::write(
        bin.join("sbatch"),
        format!(
            "#!/usr/bin/env bash\nprintf '%s\\0' \"$@\" >> '{}'\nprintf '\\n' >> '{}'\necho 4242\n",
            submissions.display(),
            submissions.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(bin.join("sbatch"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let path_var = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let submitted =
        std::process::Command::new("bash").arg(&path).env("PATH", &path_var).env_remove("SLURM_ARRAY_TASK_ID").output().unwrap();
    assert!(submitted.status.success(), "{}", String::from_utf8_lossy(&submitted.stderr));
    assert!(String::from_utf8_lossy(&submitted.stdout).contains("submitted array job 4242 (2 tasks) and merge job 4242"));
    assert!(std::path::Path::new(&format!("{out}/slurm")).is_dir(), "the folder Slurm writes output to, made before submitting");
    let text = std::fs::read(&submissions).unwrap();
    let calls: Vec<Vec<String>> = text
        .split(|&b| b == b'\n')
        .filter(|c| !c.is_empty())
        .map(|c| c.split(|&b| b == 0).filter(|a| !a.is_empty()).map(|a| String::from_utf8_lossy(a).into_owned()).collect())
        .collect();
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_eq!(calls[0], ["--parsable", path_str(&path)]);
    let merge = &calls[1];
    assert!(merge.contains(&"--dependency=afterok:4242".to_owned()) && merge.contains(&"--partition=gpu".to_owned()), "{merge:?}");
    assert!(merge.contains(&format!("--output={}/slurm/merge-%j.out", out.replace('%', "%%"))), "{merge:?}");
    // The merge job's command, run by sh as sbatch --wrap does, names the study word for word.
    let wrap = merge.iter().find_map(|a| a.strip_prefix("--wrap=")).expect("a --wrap command");
    std::fs::remove_file(&record).unwrap();
    let ran = std::process::Command::new("sh").arg("-c").arg(wrap).output().unwrap();
    assert!(ran.status.success(), "{}", String::from_utf8_lossy(&ran.stderr));
    assert!(!dir.path().join("owned").exists(), "a study value ran as a command");
    let args = std::fs::read(&record).unwrap();
    let args: Vec<String> = args.split(|&b| b == 0).filter(|a| !a.is_empty()).map(|a| String::from_utf8_lossy(a).into_owned()).collect();
    assert_eq!(args, ["plan", path_str(&study), "--merge"]);

    let manifest = plan(&study, "--kubernetes");
    assert_eq!(manifest.status.code(), Some(0), "{}", stderr(&manifest));
    let yaml: serde_norway::Value = serde_norway::from_str(&stdout(&manifest)).expect("the manifest is YAML");
    let container = &yaml["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["image"].as_str(), Some("registry/mcscore:1 "));
    let keys =
        |v: &serde_norway::Value| -> Vec<String> { v.as_mapping().unwrap().keys().map(|k| k.as_str().unwrap().to_owned()).collect() };
    assert_eq!(keys(&yaml), ["apiVersion", "kind", "metadata", "spec"]);
    assert_eq!(keys(&yaml["metadata"]), ["name"]);
    assert_eq!(keys(container), ["name", "image", "command", "resources", "volumeMounts"]);
    let command = container["command"][2].as_str().unwrap();
    assert!(command.contains("exec '") && command.contains("fake mcscore'"), "{command}");
    std::fs::write(dir.path().join("pod.sh"), command).unwrap();
    let syntax = std::process::Command::new("bash").arg("-n").arg(dir.path().join("pod.sh")).output().unwrap();
    assert!(syntax.status.success(), "bash -n of the pod's script: {}", String::from_utf8_lossy(&syntax.stderr));
}
