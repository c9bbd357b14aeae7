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

impl Study {
    /// Reads and checks a study file.
    pub fn load(path: &Path) -> Result<Study, EvalError> {
        let text = std::fs::read_to_string(path).map_err(EvalError::io(path))?;
        let study: Study = serde_json::from_str(&text).map_err(|source| EvalError::NotAStudy { path: path.to_owned(), source })?;
        let bad = |what: String| Err(EvalError::BadStudy { path: path.to_owned(), what });
        if study.models.is_empty() || study.files.is_empty() || study.settings.is_empty() {
            return bad("models, files and settings each need at least one entry".into());
        }
        if study.shards == 0 {
            return bad("shards must be at least 1".into());
        }
        for (name, flags) in &study.settings {
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
                return bad(format!("settings name {name:?}: use letters, digits, - and _ (it names files)"));
            }
            if let Some(flag) = flags.iter().find(|f| PLANNED_FLAGS.contains(&f.split('=').next().unwrap_or(""))) {
                return bad(format!("settings {name:?}: {flag} is set by the plan"));
            }
        }
        for list in [&study.models, &study.files] {
            let mut stems: Vec<String> = list.iter().map(|p| stem(p)).collect();
            stems.sort();
            if let Some(w) = stems.windows(2).find(|w| w[0] == w[1]) {
                return bad(format!("two entries share the name {:?}, which names their logs", w[0]));
            }
        }
        Ok(study)
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
        s.push_str(&format!("#SBATCH --output={}/slurm/%A_%a.out\n", self.out));
        for (flag, value) in [
            ("partition", o.partition.clone()),
            ("cpus-per-task", o.cpus_per_task.map(|c| c.to_string())),
            ("gpus-per-task", o.gpus_per_task.map(|c| c.to_string())),
            ("mem", o.mem.clone()),
            ("time", o.time.clone()),
        ] {
            if let Some(value) = value {
                s.push_str(&format!("#SBATCH --{flag}={value}\n"));
            }
        }
        s.push_str(&format!(
            "# {} runs × {} shards. Rerun failed shards with: sbatch --array=LIST this-script (each resumes its log).\n",
            self.runs().len(),
            self.shards
        ));
        s.push_str(&format!("# Slurm opens --output before the job starts: create {}/slurm first.\n", self.out));
        s.push_str("set -euo pipefail\n");
        s.push_str(&self.task_script("SLURM_ARRAY_TASK_ID"));
        s
    }

    /// A Kubernetes Indexed Job for the whole study: one completion index per
    /// shard of every run, on a shared volume.
    pub fn kubernetes_manifest(&self) -> String {
        let k = &self.kubernetes;
        let script = self.task_script("JOB_COMPLETION_INDEX");
        let indented: String = script.lines().map(|l| format!("              {l}\n")).collect();
        let gpus = if k.gpus > 0 { format!("              nvidia.com/gpu: {}\n", k.gpus) } else { String::new() };
        format!(
            "apiVersion: batch/v1
kind: Job
metadata:
  name: {name}
spec:
  completionMode: Indexed
  completions: {completions}
  parallelism: {parallelism}
  backoffLimitPerIndex: 2
  maxFailedIndexes: {completions}
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: mcscore
          image: {image}
          command:
            - bash
            - -c
            - |
              set -euo pipefail
{indented}          resources:
            requests:
              cpu: \"{cpus}\"
              memory: {memory}
            limits:
              memory: {memory}
{gpu_limits}          volumeMounts:
            - name: data
              mountPath: {mount}
      volumes:
        - name: data
          persistentVolumeClaim:
            claimName: {claim}
",
            name = k.name,
            completions = self.tasks(),
            parallelism = k.parallelism,
            image = k.image,
            cpus = k.cpus,
            memory = k.memory,
            gpu_limits = gpus,
            mount = k.mount,
            claim = k.volume_claim,
        )
    }

    /// Merges every run whose shards are all complete into its merged log;
    /// returns, per run, the merged run or why it could not be merged.
    pub fn merge_all(&self) -> Vec<(Run, Result<Merged, EvalError>)> {
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
    }
}
