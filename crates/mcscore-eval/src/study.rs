//! A study: models × task files × named settings, each run split into
//! shards, launched as one Slurm array job or one Kubernetes Indexed Job
//! (`mcscore plan`), then merged run by run into a layout `report` reads.
//!
//! Array index `i` is run `i / shards`, shard `i % shards`; runs are ordered
//! by file, then model, then settings. Shard logs go to
//! `OUT/shards/FILE/MODEL.SETTINGS.shard-K.jsonl`, merged logs to
//! `OUT/FILE/MODEL.SETTINGS.jsonl`, so `mcscore report OUT/FILE/*.jsonl`
//! compares every model and setting on one file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::log::write_complete;
use crate::shard::{merge, Merged};
use crate::EvalError;

/// A study file (JSON).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Study {
    /// GGUF models, as the jobs see them.
    pub models: Vec<String>,
    /// Task files (`.bin`), as the jobs see them.
    pub files: Vec<String>,
    /// Named lists of extra `mcscore score` flags; default: one, `default`, with none.
    #[serde(default = "default_settings")]
    pub settings: BTreeMap<String, Vec<String>>,
    /// Shards per run.
    pub shards: usize,
    /// Where logs go, as the jobs see it (a shared folder).
    pub out: String,
    /// The mcscore binary in the jobs.
    #[serde(default = "default_binary")]
    pub mcscore: String,
    #[serde(default)]
    pub slurm: SlurmOptions,
    #[serde(default)]
    pub kubernetes: KubernetesOptions,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlurmOptions {
    pub partition: Option<String>,
    pub cpus_per_task: Option<u32>,
    pub gpus_per_task: Option<u32>,
    pub mem: Option<String>,
    pub time: Option<String>,
    /// At most this many array tasks at once (`--array=0-N%LIMIT`).
    pub max_running: Option<u32>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KubernetesOptions {
    pub name: String,
    /// An image with mcscore in it.
    pub image: String,
    /// A PersistentVolumeClaim holding the models, task files and `out`, mounted at `mount`.
    pub volume_claim: String,
    pub mount: String,
    pub parallelism: u32,
    pub cpus: u32,
    pub memory: String,
    pub gpus: u32,
}

impl Default for KubernetesOptions {
    fn default() -> Self {
        KubernetesOptions {
            name: "mcscore-study".into(),
            image: "mcscore:latest".into(),
            volume_claim: "mcscore-data".into(),
            mount: "/data".into(),
            parallelism: 4,
            cpus: 4,
            memory: "8Gi".into(),
            gpus: 0,
        }
    }
}

fn default_settings() -> BTreeMap<String, Vec<String>> {
    BTreeMap::from([("default".to_owned(), Vec::new())])
}

fn default_binary() -> String {
    "mcscore".into()
}

/// One run of a study: a model on a file with named settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    pub model: String,
    pub file: String,
    pub settings_name: String,
    pub flags: Vec<String>,
}

/// A file's or model's name in the layout: its file stem.
fn stem(path: &str) -> String {
    Path::new(path).file_stem().map_or_else(|| path.to_owned(), |s| s.to_string_lossy().into_owned())
}

/// Flags a study cannot set per run: the plan sets them.
const PLANNED_FLAGS: [&str; 6] = ["--shard", "--shards", "--log-samples", "--resume", "-m", "--model"];

/// At most this many shards per run, and array tasks in all: far above what
/// a scheduler takes (Slurm's default MaxArraySize is 1,001), and small
/// enough that nothing a plan builds grows past memory.
pub const MAX_SHARDS: usize = 100_000;
pub const MAX_ARRAY_TASKS: usize = 1_000_000;

/// Plain words YAML 1.1 (kubectl's parser) reads as booleans or null: a
/// serializer that follows YAML 1.2 writes them unquoted.
const YAML_1_1_SCALARS: &[&str] = &[
    "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "true", "True", "TRUE", "false", "False", "FALSE", "on", "On", "ON", "off",
    "Off", "OFF", "null", "Null", "NULL", "~",
];

/// Whether a plain YAML 1.1 scalar `value` would read as something other
/// than a string: a boolean or null word, a number in any of 1.1's spellings
/// (`1_000`, `0x1f`, `1e3`, sexagesimal `12:30`), a date (`2001-01-01`),
/// `.inf`, or the merge and value keys `<<` and `=`.
fn reads_as_non_string_in_yaml_1_1(value: &str) -> bool {
    let numeric = value.starts_with(|c: char| c.is_ascii_digit() || "+-.".contains(c))
        && value.chars().all(|c| c.is_ascii_hexdigit() || "_:.+-xXoObB".contains(c));
    let special = [".inf", "-.inf", "+.inf", ".nan", "<<", "="].contains(&value.to_ascii_lowercase().as_str());
    YAML_1_1_SCALARS.contains(&value) || numeric || special
}

/// Refuses a study value that holds a control character: a newline in a
/// path or an option would add a line to the script or manifest.
fn plain(field: &str, value: &str) -> Result<(), String> {
    match value.chars().find(|&c| c.is_control() || matches!(c, '\u{2028}' | '\u{2029}')) {
        Some(c) => Err(format!("{field} {value:?} holds the control character {c:?}; a study value is one line of plain text")),
        None => Ok(()),
    }
}

/// Refuses a scheduler option unless every character is one of `allowed`
/// (besides ASCII letters and digits): what Slurm and Kubernetes accept there.
fn option_value(field: &str, value: &str, allowed: &str, example: &str) -> Result<(), String> {
    if !value.is_empty() && value.chars().all(|c| c.is_ascii_alphanumeric() || allowed.contains(c)) {
        Ok(())
    } else {
        Err(format!("{field} {value:?} is not a valid value (for example {example})"))
    }
}

impl Study {
    /// Reads and checks a study file.
    pub fn load(path: &Path) -> Result<Study, EvalError> {
        let bytes = mcscore_format::read_input(path)?;
        let study: Study = serde_json::from_slice(&bytes).map_err(|source| EvalError::NotAStudy { path: path.to_owned(), source })?;
        study.check().map_err(|what| EvalError::BadStudy { path: path.to_owned(), what })?;
        Ok(study)
    }

    /// Checks every value before it reaches a script or manifest.
    fn check(&self) -> Result<(), String> {
        let study = self;
        if study.models.is_empty() || study.files.is_empty() || study.settings.is_empty() {
            return Err("models, files and settings each need at least one entry".into());
        }
        if study.shards == 0 || study.shards > MAX_SHARDS {
            return Err(format!("shards is {}; give 1 to {MAX_SHARDS}", study.shards));
        }
        let runs = study.models.len() * study.files.len() * study.settings.len();
        match runs.checked_mul(study.shards) {
            Some(tasks) if tasks <= MAX_ARRAY_TASKS => {}
            _ => return Err(format!("{runs} runs × {} shards is more than {MAX_ARRAY_TASKS} array tasks", study.shards)),
        }
        if study.out.is_empty() {
            return Err("out is empty; give the folder the logs go to".into());
        }
        if study.mcscore.is_empty() {
            return Err("mcscore is empty; give the mcscore binary the jobs run (default: mcscore on PATH)".into());
        }
        for (field, values) in [("models", &study.models), ("files", &study.files)] {
            for value in values {
                plain(field, value)?;
                if value.is_empty() {
                    return Err(format!("{field} holds an empty path"));
                }
            }
        }
        plain("out", &study.out)?;
        plain("mcscore", &study.mcscore)?;
        let o = &study.slurm;
        if o.max_running == Some(0) {
            return Err("slurm.max_running is 0; give at least 1 (array tasks that may run at once)".into());
        }
        for (field, value, allowed, example) in
            [("slurm.partition", &o.partition, "_-.,", "gpu"), ("slurm.mem", &o.mem, "", "16G"), ("slurm.time", &o.time, ":-", "02:00:00")]
        {
            if let Some(value) = value {
                option_value(field, value, allowed, example)?;
            }
        }
        let k = &study.kubernetes;
        if k.name.is_empty()
            || k.name.len() > 63
            || !k.name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            || k.name.starts_with('-')
            || k.name.ends_with('-')
        {
            return Err(format!("kubernetes.name {:?} is not a DNS label (lower-case letters, digits and -, at most 63)", k.name));
        }
        option_value("kubernetes.memory", &k.memory, ".", "16Gi")?;
        for (field, value) in [
            ("kubernetes.name", &k.name),
            ("kubernetes.image", &k.image),
            ("kubernetes.volume_claim", &k.volume_claim),
            ("kubernetes.memory", &k.memory),
        ] {
            if reads_as_non_string_in_yaml_1_1(value) {
                return Err(format!(
                    "{field} {value:?} reads as a boolean, null, number or date in YAML 1.1, which kubectl's parser follows; choose another"
                ));
            }
        }
        option_value("kubernetes.volume_claim", &k.volume_claim, "-.", "mcscore-data")?;
        for (field, value) in [("kubernetes.image", &k.image), ("kubernetes.mount", &k.mount)] {
            plain(field, value)?;
            if value.is_empty() {
                return Err(format!("{field} is empty"));
            }
        }
        if k.parallelism == 0 || k.cpus == 0 {
            return Err("kubernetes.parallelism and kubernetes.cpus must be at least 1".into());
        }
        for (name, flags) in &study.settings {
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
                return Err(format!("settings name {name:?}: use letters, digits, - and _ (it names files)"));
            }
            for flag in flags {
                plain(&format!("settings {name:?}:"), flag)?;
            }
            if let Some(flag) = flags.iter().find(|f| PLANNED_FLAGS.contains(&f.split('=').next().unwrap_or(""))) {
                return Err(format!("settings {name:?}: {flag} is set by the plan"));
            }
        }
        for list in [&study.models, &study.files] {
            let mut stems: Vec<String> = list.iter().map(|p| stem(p)).collect();
            stems.sort();
            if let Some(w) = stems.windows(2).find(|w| w[0] == w[1]) {
                return Err(format!("two entries share the name {:?}, which names their logs", w[0]));
            }
        }
        Ok(())
    }

    /// Every path a Kubernetes job reads or writes must lie on the volume it
    /// mounts, or the pods fail one by one on the cluster.
    fn check_mounted(&self) -> Result<(), String> {
        let mount = Path::new(&self.kubernetes.mount);
        let on_volume = |p: &Path| {
            p.is_absolute() && p.starts_with(mount) && p != mount && !p.components().any(|c| matches!(c, std::path::Component::ParentDir))
        };
        if !mount.is_absolute() {
            return Err(format!("kubernetes.mount {:?} is not an absolute path", self.kubernetes.mount));
        }
        let paths = self.models.iter().map(|m| ("models", m)).chain(self.files.iter().map(|f| ("files", f))).chain([("out", &self.out)]);
        for (field, path) in paths {
            if !on_volume(Path::new(path)) {
                return Err(format!(
                    "{field}: {path} is not on the volume the job mounts at {} (kubernetes.mount): give absolute paths under it",
                    self.kubernetes.mount
                ));
            }
        }
        Ok(())
    }

    /// Every run, in array order: by file, then model, then settings.
    pub fn runs(&self) -> Vec<Run> {
        let mut runs = Vec::new();
        for file in &self.files {
            for model in &self.models {
                for (name, flags) in &self.settings {
                    runs.push(Run { model: model.clone(), file: file.clone(), settings_name: name.clone(), flags: flags.clone() });
                }
            }
        }
        runs
    }

    /// Array tasks in all: runs × shards.
    pub fn tasks(&self) -> usize {
        self.runs().len() * self.shards
    }

    /// A run's shard logs are this, the shard's number, then `.jsonl`.
    fn shard_prefix(&self, run: &Run) -> String {
        format!("{}/shards/{}/{}.{}.shard-", self.out, stem(&run.file), stem(&run.model), run.settings_name)
    }

    /// Where shard `k` of a run writes its log.
    pub fn shard_log(&self, run: &Run, k: usize) -> String {
        format!("{}{k}.jsonl", self.shard_prefix(run))
    }

    /// Where a run's merged log goes.
    pub fn merged_log(&self, run: &Run) -> String {
        format!("{}/{}/{}.{}.jsonl", self.out, stem(&run.file), stem(&run.model), run.settings_name)
    }

    /// The shell that runs array task `$INDEX` (a variable the scheduler
    /// sets): picks its run and shard and scores it, resuming its own log.
    fn task_script(&self, index_variable: &str) -> String {
        let mut s = String::new();
        s.push_str(&format!("index=${{{index_variable}:?{index_variable} is not set}}\n"));
        s.push_str(&format!("run=$((index / {})); shard=$((index % {}))\n", self.shards, self.shards));
        s.push_str("case $run in\n");
        for (r, run) in self.runs().iter().enumerate() {
            let flags: Vec<String> = run.flags.iter().map(|f| quote(f)).collect();
            s.push_str(&format!(
                "  {r}) model={}; file={}; prefix={}; flags=({});;\n",
                quote(&run.model),
                quote(&run.file),
                quote(&self.shard_prefix(run)),
                flags.join(" ")
            ));
        }
        s.push_str(&format!("  *) echo \"array index $index is beyond the study's {} tasks\" >&2; exit 2;;\nesac\n", self.tasks()));
        s.push_str("log=\"${prefix}${shard}.jsonl\"\nmkdir -p \"$(dirname \"$log\")\"\n");
        s.push_str(&format!(
            "exec {} score -m \"$model\" \"$file\" \"${{flags[@]}}\" --shard \"$shard/{}\" --log-samples \"$log\" --resume\n",
            quote(&self.mcscore),
            self.shards
        ));
        s
    }

    /// An sbatch script for the whole study: one array task per shard of every run.
    pub fn slurm_script(&self) -> String {
        let o = &self.slurm;
        let mut s = String::from("#!/usr/bin/env bash\n");
        s.push_str("#SBATCH --job-name=mcscore-study\n");
        let limit = o.max_running.map_or(String::new(), |m| format!("%{m}"));
        s.push_str(&format!("#SBATCH --array=0-{}{limit}\n", self.tasks() - 1));
        // `%` starts a Slurm filename pattern (%j, %A); `%%` is a plain one.
        s.push_str(&format!("#SBATCH --output={}\n", sbatch_word(&format!("{}/slurm/%A_%a.out", self.out.replace('%', "%%")))));
        for (flag, value) in [
            ("partition", o.partition.clone()),
            ("cpus-per-task", o.cpus_per_task.map(|c| c.to_string())),
            ("gpus-per-task", o.gpus_per_task.map(|c| c.to_string())),
            ("mem", o.mem.clone()),
            ("time", o.time.clone()),
        ] {
            if let Some(value) = value {
                s.push_str(&format!("#SBATCH --{flag}={}\n", sbatch_word(&value)));
            }
        }
        s.push_str(&format!(
            "# {} runs × {} shards. Rerun failed shards with: sbatch --array=LIST this-script (each resumes its log).\n",
            self.runs().len(),
            self.shards
        ));
        s.push_str(&format!("# Slurm opens --output before the job starts: create {} first.\n", quote(&format!("{}/slurm", self.out))));
        s.push_str("set -euo pipefail\n");
        s.push_str(&self.task_script("SLURM_ARRAY_TASK_ID"));
        s
    }

    /// A Kubernetes Indexed Job for the whole study: one completion index per
    /// shard of every run, on a shared volume that holds every path. Written
    /// by a YAML serializer, so no study value can add a key.
    pub fn kubernetes_manifest(&self, path: &Path) -> Result<String, EvalError> {
        self.check_mounted().map_err(|what| EvalError::BadStudy { path: path.to_owned(), what })?;
        let k = &self.kubernetes;
        let memory = k.memory.clone();
        let mut limits = BTreeMap::from([("memory".to_owned(), memory.clone())]);
        if k.gpus > 0 {
            limits.insert("nvidia.com/gpu".to_owned(), k.gpus.to_string());
        }
        let job = k8s::Job {
            api_version: "batch/v1",
            kind: "Job",
            metadata: k8s::Metadata { name: k.name.clone() },
            spec: k8s::JobSpec {
                completion_mode: "Indexed",
                completions: self.tasks(),
                parallelism: k.parallelism,
                backoff_limit_per_index: 2,
                max_failed_indexes: self.tasks(),
                template: k8s::Template {
                    spec: k8s::PodSpec {
                        restart_policy: "Never",
                        containers: vec![k8s::Container {
                            name: "mcscore",
                            image: k.image.clone(),
                            command: vec![
                                "bash".into(),
                                "-c".into(),
                                format!("set -euo pipefail\n{}", self.task_script("JOB_COMPLETION_INDEX")),
                            ],
                            resources: k8s::Resources {
                                requests: BTreeMap::from([("cpu".to_owned(), k.cpus.to_string()), ("memory".to_owned(), memory)]),
                                limits,
                            },
                            volume_mounts: vec![k8s::VolumeMount { name: "data", mount_path: k.mount.clone() }],
                        }],
                        volumes: vec![k8s::Volume {
                            name: "data",
                            persistent_volume_claim: k8s::Claim { claim_name: k.volume_claim.clone() },
                        }],
                    },
                },
            },
        };
        serde_norway::to_string(&job).map_err(|e| EvalError::BadStudy { path: path.to_owned(), what: format!("writing the manifest: {e}") })
    }

    /// Merges every run whose shards are all complete into its merged log
    /// (never over the study file `study`, a model or a task file); returns,
    /// per run, the merged run or why it could not be merged.
    pub fn merge_all(&self, study: &Path) -> Vec<(Run, Result<Merged, EvalError>)> {
        // Every run's inputs: one run's merged log may not replace another's.
        let inputs: Vec<&Path> = std::iter::once(study).chain(self.models.iter().chain(&self.files).map(Path::new)).collect();
        self.runs()
            .into_iter()
            .map(|run| {
                let logs: Vec<PathBuf> = (0..self.shards).map(|k| PathBuf::from(self.shard_log(&run, k))).collect();
                let merged = (|| {
                    if let Some(missing) = logs.iter().find(|l| !l.exists()) {
                        return Err(EvalError::Io {
                            path: missing.clone(),
                            source: std::io::Error::new(std::io::ErrorKind::NotFound, "shard log not written yet"),
                        });
                    }
                    let merged = merge(&logs)?;
                    let out = PathBuf::from(self.merged_log(&run));
                    if let Some(input) = inputs.iter().find(|i| mcscore_format::same_file(&out, i)) {
                        return Err(EvalError::WouldReplaceInput { path: out, input: input.to_path_buf() });
                    }
                    if let Some(dir) = out.parent() {
                        std::fs::create_dir_all(dir).map_err(EvalError::io(dir))?;
                    }
                    write_complete(&out, &merged.header, &merged.records, mcscore_format::Existing::Replace)?;
                    Ok(merged)
                })();
                (run, merged)
            })
            .collect()
    }
}

/// `text` as one word of an `#SBATCH` line. sbatch's directive parser takes
/// a word in double quotes (a space and `#` inside are plain) and reads a
/// backslash as escaping the next character there; outside quotes a
/// backslash does not keep a space (checked with Slurm 22.05).
fn sbatch_word(text: &str) -> String {
    if text.chars().all(|c| c.is_ascii_alphanumeric() || "/._-=+:,@%".contains(c)) {
        return text.to_owned();
    }
    let mut word = String::from('"');
    for c in text.chars() {
        // `#` too: Slurm before 18.08 ended a directive at any unescaped `#`.
        if c == '"' || c == '\\' || c == '#' {
            word.push('\\');
        }
        word.push(c);
    }
    word.push('"');
    word
}

/// The Indexed Job's shape, as Kubernetes names its fields.
mod k8s {
    use std::collections::BTreeMap;

    use serde::Serialize;

    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct Job {
        pub api_version: &'static str,
        pub kind: &'static str,
        pub metadata: Metadata,
        pub spec: JobSpec,
    }

    #[derive(Serialize)]
    pub(super) struct Metadata {
        pub name: String,
    }

    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct JobSpec {
        pub completion_mode: &'static str,
        pub completions: usize,
        pub parallelism: u32,
        pub backoff_limit_per_index: u32,
        pub max_failed_indexes: usize,
        pub template: Template,
    }

    #[derive(Serialize)]
    pub(super) struct Template {
        pub spec: PodSpec,
    }

    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct PodSpec {
        pub restart_policy: &'static str,
        pub containers: Vec<Container>,
        pub volumes: Vec<Volume>,
    }

    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct Container {
        pub name: &'static str,
        pub image: String,
        pub command: Vec<String>,
        pub resources: Resources,
        pub volume_mounts: Vec<VolumeMount>,
    }

    #[derive(Serialize)]
    pub(super) struct Resources {
        pub requests: BTreeMap<String, String>,
        pub limits: BTreeMap<String, String>,
    }

    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct VolumeMount {
        pub name: &'static str,
        pub mount_path: String,
    }

    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct Volume {
        pub name: &'static str,
        pub persistent_volume_claim: Claim,
    }

    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct Claim {
        pub claim_name: String,
    }
}

/// `text` as one shell word.
fn quote(text: &str) -> String {
    if !text.is_empty() && text.chars().all(|c| c.is_ascii_alphanumeric() || "/._-=+:,@".contains(c)) {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_quoted_for_the_shell() {
        assert_eq!(quote("models/a.gguf"), "models/a.gguf");
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("it's"), "'it'\\''s'");
        assert_eq!(quote(""), "''");
        assert_eq!(sbatch_word("/data/results/%A.out"), "/data/results/%A.out");
        assert_eq!(sbatch_word("/data/my results/%A.out"), "\"/data/my results/%A.out\"");
        assert_eq!(sbatch_word("a#b'c\"d\\e"), "\"a\\#b'c\\\"d\\\\e\"");
    }
}
