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

use mcscore_eval::log::write_complete;
use mcscore_eval::shard::{merge, Merged};
use mcscore_eval::EvalError;

/// A study file (JSON).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Study {
    /// GGUF models, as the jobs see them.
    pub(crate) models: Vec<String>,
    /// Task files (`.bin`), as the jobs see them.
    pub(crate) files: Vec<String>,
    /// Named lists of extra `mcscore score` flags; default: one, `default`, with none.
    #[serde(default = "default_settings")]
    pub(crate) settings: BTreeMap<String, Vec<String>>,
    /// Shards per run.
    pub(crate) shards: usize,
    /// Where logs go, as the jobs see it (a shared folder).
    pub(crate) out: String,
    /// The mcscore binary in the jobs.
    #[serde(default = "default_binary")]
    pub(crate) mcscore: String,
    #[serde(default)]
    pub(crate) slurm: SlurmOptions,
    #[serde(default)]
    pub(crate) kubernetes: KubernetesOptions,
    /// What each settings entry asks of a machine, read by the front end
    /// that parses `score`'s flags (`Study::load`).
    #[serde(skip)]
    needs: BTreeMap<String, Needs>,
}

/// What one settings entry asks of a machine, as `mcscore score` reads its
/// flags: only what the flags state, not their defaults.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Needs {
    /// `-t`.
    pub(crate) threads: Option<u32>,
    /// `-ngl`.
    pub(crate) gpu_layers: Option<u32>,
}

/// CPUs per array task where neither the scheduler options nor any
/// settings' `-t` say.
pub(crate) const DEFAULT_CPUS: u32 = 4;

/// What every array task gets, derived from the study.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Resources {
    cpus: u32,
    gpus: u32,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SlurmOptions {
    pub(crate) partition: Option<String>,
    /// Default: the largest `-t` of the settings, else `DEFAULT_CPUS`.
    pub(crate) cpus_per_task: Option<u32>,
    /// Default: none (then no settings may give `-ngl` above 0).
    pub(crate) gpus_per_task: Option<u32>,
    pub(crate) mem: Option<String>,
    pub(crate) time: Option<String>,
    /// At most this many array tasks at once (`--array=0-N%LIMIT`).
    pub(crate) max_running: Option<u32>,
    /// The study file as the merge job sees it; default: its absolute path
    /// where `plan` runs.
    pub(crate) study: Option<String>,
}

/// The Indexed Job's options. The image, the claim and its mount have no
/// default: a placeholder would only fail on the cluster.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct KubernetesOptions {
    /// The Job's name, a DNS label; default `mcscore-study`.
    pub(crate) name: Option<String>,
    /// An image with mcscore in it.
    pub(crate) image: Option<String>,
    /// A PersistentVolumeClaim holding the models, task files and `out`, mounted at `mount`.
    pub(crate) volume_claim: Option<String>,
    pub(crate) mount: Option<String>,
    /// Pods at once; default 4.
    pub(crate) parallelism: Option<u32>,
    /// CPUs per pod; default: the largest `-t` of the settings, else `DEFAULT_CPUS`.
    pub(crate) cpus: Option<u32>,
    /// Memory per pod; default `8Gi`.
    pub(crate) memory: Option<String>,
    /// GPUs per pod; default none (then no settings may give `-ngl` above 0).
    pub(crate) gpus: Option<u32>,
}

impl KubernetesOptions {
    fn name(&self) -> &str {
        self.name.as_deref().unwrap_or("mcscore-study")
    }

    fn memory(&self) -> &str {
        self.memory.as_deref().unwrap_or("8Gi")
    }

    /// The image, claim and mount, or which is missing.
    fn required(&self) -> Result<(&str, &str, &str), StudyFault> {
        fn field<'a>(value: &'a Option<String>, field: &'static str, example: &'static str) -> Result<&'a str, StudyFault> {
            value.as_deref().ok_or(StudyFault::KubernetesUnset { field, example })
        }
        Ok((
            field(&self.image, "image", "registry.example.org/mcscore:0.1.0")?,
            field(&self.volume_claim, "volume_claim", "mcscore-data")?,
            field(&self.mount, "mount", "/data")?,
        ))
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
pub(crate) struct PlannedRun {
    pub(crate) model: String,
    pub(crate) file: String,
    pub(crate) settings_name: String,
    pub(crate) flags: Vec<String>,
}

/// Flags a study cannot set per run: the plan sets them.
const PLANNED_FLAGS: [&str; 6] = ["--shard", "--shards", "--log-samples", "--resume", "-m", "--model"];

/// At most this many shards per run, and array tasks in all: far above what
/// a scheduler takes (Slurm's default MaxArraySize is 1,001), and small
/// enough that nothing a plan builds grows past memory.
pub(crate) const MAX_SHARDS: usize = 100_000;
pub(crate) const MAX_ARRAY_TASKS: usize = 1_000_000;

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
fn plain(field: &str, value: &str) -> Result<(), StudyFault> {
    match value.chars().find(|&c| c.is_control() || matches!(c, '\u{2028}' | '\u{2029}')) {
        Some(character) => Err(StudyFault::ControlCharacter { field: field.to_owned(), value: value.to_owned(), character }),
        None => Ok(()),
    }
}

/// Refuses a scheduler option unless every character is one of `allowed`
/// (besides ASCII letters and digits): what Slurm and Kubernetes accept there.
fn option_value(field: &'static str, value: &str, allowed: &str, example: &'static str) -> Result<(), StudyFault> {
    if !value.is_empty() && value.chars().all(|c| c.is_ascii_alphanumeric() || allowed.contains(c)) {
        Ok(())
    } else {
        Err(StudyFault::OptionValue { field, value: value.to_owned(), example })
    }
}

impl Study {
    /// Reads and checks a study file; `needs_of` reads one settings entry's
    /// flags as `mcscore score` would, or says why it would refuse them.
    pub(crate) fn load(path: &Path, needs_of: impl Fn(&[String]) -> Result<Needs, String>) -> Result<Study, StudyError> {
        let bad = |fault| StudyError::BadStudy { path: path.to_owned(), fault };
        let bytes = mcscore_format::read_input(path)?;
        let mut study: Study = serde_json::from_slice(&bytes).map_err(|source| StudyError::NotAStudy { path: path.to_owned(), source })?;
        study.check().map_err(bad)?;
        for (name, flags) in &study.settings {
            let needs = needs_of(flags).map_err(|why| bad(StudyFault::Refused { name: name.clone(), flags: flags.join(" "), why }))?;
            study.needs.insert(name.clone(), needs);
        }
        Ok(study)
    }

    /// Checks every value before it reaches a script or manifest.
    fn check(&self) -> Result<(), StudyFault> {
        let study = self;
        if study.models.is_empty() || study.files.is_empty() || study.settings.is_empty() {
            return Err(StudyFault::Empty);
        }
        if study.shards == 0 || study.shards > MAX_SHARDS {
            return Err(StudyFault::Shards { shards: study.shards, max: MAX_SHARDS });
        }
        let (m, f, s) = (study.models.len(), study.files.len(), study.settings.len());
        match m.checked_mul(f).and_then(|r| r.checked_mul(s)).and_then(|r| r.checked_mul(study.shards)) {
            Some(tasks) if tasks <= MAX_ARRAY_TASKS => {}
            _ => {
                return Err(StudyFault::TooManyTasks { models: m, files: f, settings: s, shards: study.shards, max: MAX_ARRAY_TASKS });
            }
        }
        if study.out.is_empty() {
            return Err(StudyFault::NoOut);
        }
        if study.out.contains('\\') {
            // sbatch reads `\` in --output as turning its %A/%a patterns off.
            return Err(StudyFault::OutBackslash { out: study.out.clone() });
        }
        if study.mcscore.is_empty() {
            return Err(StudyFault::NoBinary);
        }
        for (field, values) in [("models", &study.models), ("files", &study.files)] {
            for value in values {
                plain(field, value)?;
                if value.is_empty() {
                    return Err(StudyFault::EmptyPath { field });
                }
            }
        }
        plain("out", &study.out)?;
        plain("mcscore", &study.mcscore)?;
        if let Some(path) = &study.slurm.study {
            plain("slurm.study", path)?;
            if !Path::new(path).is_absolute() {
                return Err(StudyFault::StudyPathRelative { path: path.clone() });
            }
        }
        let o = &study.slurm;
        if o.max_running == Some(0) {
            return Err(StudyFault::MaxRunningZero);
        }
        for (field, value, allowed, example) in
            [("slurm.partition", &o.partition, "_-.,", "gpu"), ("slurm.mem", &o.mem, "", "16G"), ("slurm.time", &o.time, ":-", "02:00:00")]
        {
            if let Some(value) = value {
                option_value(field, value, allowed, example)?;
            }
        }
        if o.cpus_per_task == Some(0) {
            return Err(StudyFault::CpusPerTaskZero);
        }
        let k = &study.kubernetes;
        let name = k.name();
        if name.is_empty()
            || name.len() > 63
            || !name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            || name.starts_with('-')
            || name.ends_with('-')
        {
            return Err(StudyFault::NotDnsLabel { name: name.to_owned() });
        }
        option_value("kubernetes.memory", k.memory(), ".", "16Gi")?;
        for (field, value) in [
            ("kubernetes.name", Some(name)),
            ("kubernetes.image", k.image.as_deref()),
            ("kubernetes.volume_claim", k.volume_claim.as_deref()),
            ("kubernetes.memory", Some(k.memory())),
        ] {
            if let Some(value) = value.filter(|v| reads_as_non_string_in_yaml_1_1(v)) {
                return Err(StudyFault::Yaml11 { field, value: value.to_owned() });
            }
        }
        if let Some(claim) = &k.volume_claim {
            option_value("kubernetes.volume_claim", claim, "-.", "mcscore-data")?;
        }
        for (field, value) in [("kubernetes.image", &k.image), ("kubernetes.mount", &k.mount)] {
            if let Some(value) = value {
                plain(field, value)?;
                if value.is_empty() {
                    return Err(StudyFault::EmptyField { field });
                }
            }
        }
        if k.parallelism == Some(0) || k.cpus == Some(0) {
            return Err(StudyFault::KubernetesZero);
        }
        for (name, flags) in &study.settings {
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
                return Err(StudyFault::SettingsName { name: name.clone() });
            }
            for flag in flags {
                plain(&format!("settings {name:?}:"), flag)?;
            }
            // `-mfoo.gguf` is `-m foo.gguf`: a short flag takes its value glued.
            let planned =
                |f: &&String| PLANNED_FLAGS.contains(&f.split('=').next().unwrap_or("")) || (f.starts_with("-m") && !f.starts_with("--"));
            if let Some(flag) = flags.iter().find(planned) {
                return Err(StudyFault::PlannedFlag { name: name.clone(), flag: flag.clone() });
            }
        }
        for list in [&study.models, &study.files] {
            let mut stems: Vec<String> = list.iter().map(|p| mcscore_eval::log::label(p)).collect();
            stems.sort();
            if let Some(w) = stems.windows(2).find(|w| w[0] == w[1]) {
                return Err(StudyFault::SharedName { name: w[0].clone() });
            }
        }
        Ok(())
    }

    /// Every path a Kubernetes job reads or writes must lie on the volume it
    /// mounts at `mount`, or the pods fail one by one on the cluster.
    fn check_mounted(&self, mount: &str) -> Result<(), StudyFault> {
        let mount_path = Path::new(mount);
        let on_volume = |p: &Path| {
            p.is_absolute()
                && p.starts_with(mount_path)
                && p != mount_path
                && !p.components().any(|c| matches!(c, std::path::Component::ParentDir))
        };
        if !mount_path.is_absolute() {
            return Err(StudyFault::MountRelative { mount: mount.to_owned() });
        }
        let paths = self.models.iter().map(|m| ("models", m)).chain(self.files.iter().map(|f| ("files", f))).chain([("out", &self.out)]);
        for (field, path) in paths {
            if !on_volume(Path::new(path)) {
                return Err(StudyFault::NotMounted { field, path: path.clone(), mount: mount.to_owned() });
            }
        }
        Ok(())
    }

    /// The CPUs and GPUs each array task gets: the scheduler options where
    /// given, else what the settings ask; refused where a run's `-t` or
    /// `-ngl` would not fit them.
    fn resources(
        &self,
        (cpus_field, cpus): (&'static str, Option<u32>),
        (gpus_field, gpus): (&'static str, Option<u32>),
    ) -> Result<Resources, StudyFault> {
        let cpus = cpus.or_else(|| self.needs.values().filter_map(|n| n.threads).max()).unwrap_or(DEFAULT_CPUS);
        let gpus = gpus.unwrap_or(0);
        for (name, needs) in &self.needs {
            if let Some(threads) = needs.threads.filter(|&t| t > cpus) {
                return Err(StudyFault::Threads { name: name.clone(), threads, cpus, field: cpus_field });
            }
            match needs.gpu_layers {
                Some(layers) if layers > 0 && gpus == 0 => return Err(StudyFault::NoGpu { name: name.clone(), layers, field: gpus_field }),
                Some(0) if gpus > 0 => return Err(StudyFault::CpuOnly { gpus, field: gpus_field, name: name.clone() }),
                _ => {}
            }
        }
        Ok(Resources { cpus, gpus })
    }

    /// Every run, in array order: by file, then model, then settings.
    pub(crate) fn runs(&self) -> Vec<PlannedRun> {
        let mut runs = Vec::new();
        for file in &self.files {
            for model in &self.models {
                for (name, flags) in &self.settings {
                    runs.push(PlannedRun { model: model.clone(), file: file.clone(), settings_name: name.clone(), flags: flags.clone() });
                }
            }
        }
        runs
    }

    /// Array tasks in all: runs × shards.
    pub(crate) fn tasks(&self) -> usize {
        self.runs().len() * self.shards
    }

    /// A run's shard logs are this, the shard's number, then `.jsonl`.
    fn shard_prefix(&self, run: &PlannedRun) -> String {
        format!(
            "{}/shards/{}/{}.{}.shard-",
            self.out,
            mcscore_eval::log::label(&run.file),
            mcscore_eval::log::label(&run.model),
            run.settings_name
        )
    }

    /// Where shard `k` of a run writes its log.
    pub(crate) fn shard_log(&self, run: &PlannedRun, k: usize) -> String {
        format!("{}{k}.jsonl", self.shard_prefix(run))
    }

    /// Where a run's merged log goes.
    pub(crate) fn merged_log(&self, run: &PlannedRun) -> String {
        format!("{}/{}/{}.{}.jsonl", self.out, mcscore_eval::log::label(&run.file), mcscore_eval::log::label(&run.model), run.settings_name)
    }

    /// The shell that runs array task `$INDEX` (a variable the scheduler
    /// sets): picks its run and shard and scores it, resuming its own log.
    /// A run whose settings give no `-t` gets `-t $threads`, which the
    /// caller's `threads` line sets to the CPUs the task was given.
    fn task_script(&self, index_variable: &str, threads: &str) -> String {
        let mut s = String::new();
        s.push_str(&format!("index=${{{index_variable}:?{index_variable} is not set}}\n{threads}\n"));
        s.push_str(&format!("run=$((index / {})); shard=$((index % {}))\n", self.shards, self.shards));
        s.push_str("case $run in\n");
        for (r, run) in self.runs().iter().enumerate() {
            let mut flags: Vec<String> = run.flags.iter().map(|f| quote(f)).collect();
            if self.needs.get(&run.settings_name).is_none_or(|n| n.threads.is_none()) {
                flags.extend(["-t".to_owned(), "\"$threads\"".to_owned()]);
            }
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

    /// An sbatch script for the whole study: one array task per shard of
    /// every run. Run with `bash`, it submits itself: it creates the folder
    /// Slurm writes the tasks' output to, submits the array, and a job that
    /// merges the study (`mcscore plan STUDY --merge`) once every task has
    /// succeeded. `study` is the study file's absolute path here, which the
    /// merge job uses unless `slurm.study` says how the jobs see it.
    pub(crate) fn slurm_script(&self, study: &Path) -> Result<String, StudyError> {
        let bad = |fault| StudyError::BadStudy { path: study.to_owned(), fault };
        // A study built or edited in memory is checked as a loaded one is.
        self.check().map_err(bad)?;
        let o = &self.slurm;
        let resources = self.resources(("slurm.cpus_per_task", o.cpus_per_task), ("slurm.gpus_per_task", o.gpus_per_task)).map_err(bad)?;
        let study_text = match &o.study {
            Some(path) => path.as_str(),
            None => study.to_str().ok_or_else(|| bad(StudyFault::StudyPathNotUtf8))?,
        };
        plain("the study's path", study_text).map_err(bad)?;
        let logs = format!("{}/slurm", self.out);
        // `%` starts a Slurm filename pattern (%j, %A); `%%` is a plain one.
        let log_pattern = |name: &str| format!("{}/{name}", logs.replace('%', "%%"));
        let mut s = String::from("#!/usr/bin/env bash\n");
        s.push_str("#SBATCH --job-name=mcscore-study\n");
        let limit = o.max_running.map_or(String::new(), |m| format!("%{m}"));
        s.push_str(&format!("#SBATCH --array=0-{}{limit}\n", self.tasks() - 1)); // check() above: at least one task
        s.push_str(&format!("#SBATCH --output={}\n", sbatch_word(&log_pattern("%A_%a.out"))));
        // Options the merge job shares: where it may run and for how long.
        let shared = [("partition", o.partition.clone()), ("mem", o.mem.clone()), ("time", o.time.clone())];
        let gpus = (resources.gpus > 0).then(|| resources.gpus.to_string());
        for (flag, value) in
            [("cpus-per-task", Some(resources.cpus.to_string())), ("gpus-per-task", gpus)].into_iter().chain(shared.clone())
        {
            if let Some(value) = value {
                s.push_str(&format!("#SBATCH --{flag}={}\n", sbatch_word(&value)));
            }
        }
        s.push_str(&format!(
            "# {} runs × {} shards, one array task per shard; a run without -t gets the task's CPUs.\n\
             # `bash THIS` submits the study: it creates {logs_word} (Slurm opens --output before a\n\
             # task starts), the array, and a job that runs `mcscore plan STUDY --merge` once every\n\
             # task has succeeded (afterok). `sbatch THIS` submits the array alone.\n\
             # Rerun failed tasks with: sbatch --array=LIST THIS (each resumes its log; `plan --merge` names LIST).\n",
            self.runs().len(),
            self.shards,
            logs_word = quote(&logs),
        ));
        s.push_str("set -euo pipefail\n");
        s.push_str("if [[ -z ${SLURM_ARRAY_TASK_ID:-} ]]; then\n");
        s.push_str(&format!("    mkdir -p {}\n", quote(&logs)));
        s.push_str("    array=$(sbatch --parsable \"${BASH_SOURCE[0]}\")\n    array=${array%%;*}\n");
        let mut merge_options = vec![
            "--job-name=mcscore-merge".to_owned(),
            "--dependency=afterok:\"$array\"".to_owned(),
            "--kill-on-invalid-dep=yes".to_owned(),
            quote(&format!("--output={}", log_pattern("merge-%j.out"))),
        ];
        merge_options.extend(shared.iter().filter_map(|(flag, value)| value.as_ref().map(|v| quote(&format!("--{flag}={v}")))));
        // Quoted here for sh (sbatch --wrap runs `#!/bin/sh`), not with bash's
        // printf %q, whose $'…' for a non-ASCII path dash reads literally.
        let merge_command = format!("exec {} plan {} --merge", quote(&self.mcscore), quote(study_text));
        s.push_str(&format!("    merge=$(sbatch --parsable {} {})\n", merge_options.join(" "), quote(&format!("--wrap={merge_command}"))));
        s.push_str(&format!(
            "    echo \"submitted array job $array ({} tasks) and merge job ${{merge%%;*}} (runs once every task has succeeded)\"\n    exit 0\nfi\n",
            self.tasks()
        ));
        s.push_str(&self.task_script("SLURM_ARRAY_TASK_ID", &format!("threads=${{SLURM_CPUS_PER_TASK:-{}}}", resources.cpus)));
        Ok(s)
    }

    /// A Kubernetes Indexed Job for the whole study: one completion index per
    /// shard of every run, on a shared volume that holds every path. Written
    /// by a YAML serializer, so no study value can add a key.
    pub(crate) fn kubernetes_manifest(&self, path: &Path) -> Result<String, StudyError> {
        let bad = |fault| StudyError::BadStudy { path: path.to_owned(), fault };
        self.check().map_err(bad)?;
        let k = &self.kubernetes;
        let (image, claim, mount) = k.required().map_err(bad)?;
        self.check_mounted(mount).map_err(bad)?;
        let resources = self.resources(("kubernetes.cpus", k.cpus), ("kubernetes.gpus", k.gpus)).map_err(bad)?;
        let memory = k.memory().to_owned();
        let mut limits = BTreeMap::from([("memory".to_owned(), memory.clone())]);
        if resources.gpus > 0 {
            limits.insert("nvidia.com/gpu".to_owned(), resources.gpus.to_string());
        }
        let job = k8s::Job {
            api_version: "batch/v1",
            kind: "Job",
            metadata: k8s::Metadata { name: k.name().to_owned() },
            spec: k8s::JobSpec {
                completion_mode: "Indexed",
                completions: self.tasks(),
                parallelism: k.parallelism.unwrap_or(4),
                backoff_limit_per_index: 2,
                max_failed_indexes: self.tasks(),
                template: k8s::Template {
                    spec: k8s::PodSpec {
                        restart_policy: "Never",
                        containers: vec![k8s::Container {
                            name: "mcscore",
                            image: image.to_owned(),
                            command: vec![
                                "bash".into(),
                                "-c".into(),
                                format!(
                                    "set -euo pipefail\n{}",
                                    self.task_script("JOB_COMPLETION_INDEX", &format!("threads={}", resources.cpus))
                                ),
                            ],
                            resources: k8s::Resources {
                                requests: BTreeMap::from([("cpu".to_owned(), resources.cpus.to_string()), ("memory".to_owned(), memory)]),
                                limits,
                            },
                            volume_mounts: vec![k8s::VolumeMount { name: "data", mount_path: mount.to_owned() }],
                        }],
                        volumes: vec![k8s::Volume { name: "data", persistent_volume_claim: k8s::Claim { claim_name: claim.to_owned() } }],
                    },
                },
            },
        };
        serde_norway::to_string(&job).map_err(|e| bad(StudyFault::Manifest(e)))
    }

    /// Merges every run whose shards are all complete into its merged log
    /// (never over the study file `study`, a model or a task file); returns,
    /// per run, the merged run or why it could not be merged, with the array
    /// indices of its shards that have not finished.
    pub(crate) fn merge_all(&self, study: &Path) -> Vec<RunMerge> {
        // Every run's inputs: one run's merged log may not replace another's.
        let inputs: Vec<&Path> = std::iter::once(study).chain(self.models.iter().chain(&self.files).map(Path::new)).collect();
        self.runs()
            .into_iter()
            .enumerate()
            .map(|(r, run)| {
                let logs: Vec<PathBuf> = (0..self.shards).map(|k| PathBuf::from(self.shard_log(&run, k))).collect();
                // A log that is missing, unreadable or cut short: its task has
                // not finished, and resubmitting it resumes the log.
                let unfinished: Vec<usize> = logs
                    .iter()
                    .enumerate()
                    .filter(|(_, log)| mcscore_eval::log::read(log).map_or(true, |contents| contents.unfinished().is_some()))
                    .map(|(k, _)| r * self.shards + k)
                    .collect();
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
                        std::fs::create_dir_all(dir).map_err(|source| EvalError::Io { path: dir.to_owned(), source })?;
                    }
                    write_complete(&out, &merged.header, &merged.records, mcscore_format::Existing::Replace)?;
                    Ok(merged)
                })();
                RunMerge { run, unfinished, merged }
            })
            .collect()
    }
}

/// One run of `Study::merge_all`.
#[derive(Debug)]
pub(crate) struct RunMerge {
    pub(crate) run: PlannedRun,
    /// Array indices of the run's shards whose logs are missing or unfinished.
    pub(crate) unfinished: Vec<usize>,
    pub(crate) merged: Result<Merged, EvalError>,
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
        pub(crate) api_version: &'static str,
        pub(crate) kind: &'static str,
        pub(crate) metadata: Metadata,
        pub(crate) spec: JobSpec,
    }

    #[derive(Serialize)]
    pub(super) struct Metadata {
        pub(crate) name: String,
    }

    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct JobSpec {
        pub(crate) completion_mode: &'static str,
        pub(crate) completions: usize,
        pub(crate) parallelism: u32,
        pub(crate) backoff_limit_per_index: u32,
        pub(crate) max_failed_indexes: usize,
        pub(crate) template: Template,
    }

    #[derive(Serialize)]
    pub(super) struct Template {
        pub(crate) spec: PodSpec,
    }

    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct PodSpec {
        pub(crate) restart_policy: &'static str,
        pub(crate) containers: Vec<Container>,
        pub(crate) volumes: Vec<Volume>,
    }

    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct Container {
        pub(crate) name: &'static str,
        pub(crate) image: String,
        pub(crate) command: Vec<String>,
        pub(crate) resources: Resources,
        pub(crate) volume_mounts: Vec<VolumeMount>,
    }

    #[derive(Serialize)]
    pub(super) struct Resources {
        pub(crate) requests: BTreeMap<String, String>,
        pub(crate) limits: BTreeMap<String, String>,
    }

    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct VolumeMount {
        pub(crate) name: &'static str,
        pub(crate) mount_path: String,
    }

    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct Volume {
        pub(crate) name: &'static str,
        pub(crate) persistent_volume_claim: Claim,
    }

    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct Claim {
        pub(crate) claim_name: String,
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

/// A study file that cannot be planned.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StudyError {
    /// The study file cannot be read (the format crate names the file and why).
    #[error(transparent)]
    Read(#[from] mcscore_format::Error),

    /// A study file that is not the JSON of a study.
    #[error("{}: not a study file", path.display())]
    NotAStudy {
        /// The study file.
        path: PathBuf,
        /// The JSON parser's error (an unknown key included).
        #[source]
        source: serde_json::Error,
    },

    /// A study whose values cannot be planned, or written as a script or
    /// manifest.
    #[error("{}: {fault}", path.display())]
    BadStudy {
        /// The study file.
        path: PathBuf,
        /// What is wrong with it.
        fault: StudyFault,
    },
}

/// What is wrong with a study: one variant per value a plan refuses.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StudyFault {
    /// No model, file or settings entry.
    #[error("models, files and settings each need at least one entry")]
    Empty,

    /// A shard count outside 1 to the most a plan builds.
    #[error("shards is {shards}; give 1 to {max}")]
    Shards {
        /// The study's shards per run.
        shards: usize,
        /// The most a plan builds.
        max: usize,
    },

    /// More array tasks than a plan builds.
    #[error("{models} models × {files} files × {settings} settings × {shards} shards is more than {max} array tasks")]
    TooManyTasks {
        /// The study's models.
        models: usize,
        /// Its task files.
        files: usize,
        /// Its settings entries.
        settings: usize,
        /// Its shards per run.
        shards: usize,
        /// The most array tasks a plan builds.
        max: usize,
    },

    /// No output folder.
    #[error("out is empty; give the folder the logs go to")]
    NoOut,

    /// An output folder with a backslash, which sbatch reads as an escape.
    #[error("out {out:?} holds a backslash, which sbatch's output file patterns read as an escape; choose a folder without one")]
    OutBackslash {
        /// The study's `out`, as written.
        out: String,
    },

    /// No mcscore binary to run.
    #[error("mcscore is empty; give the mcscore binary the jobs run (default: mcscore on PATH)")]
    NoBinary,

    /// An empty model or file path.
    #[error("{field} holds an empty path")]
    EmptyPath {
        /// The list that holds it: `models` or `files`.
        field: &'static str,
    },

    /// A control character, which would add a line to a script or manifest.
    #[error("{field} {value:?} holds the control character {character:?}; a study value is one line of plain text")]
    ControlCharacter {
        /// Where the value is, as the message names it (`out`, `slurm.study`, `settings "NAME":`, …).
        field: String,
        /// The value, as written.
        value: String,
        /// The first control character in it (a line or paragraph separator counts as one).
        character: char,
    },

    /// A study path for the merge job that is not absolute.
    #[error("slurm.study {path:?} is not an absolute path (the merge job runs in another folder)")]
    StudyPathRelative {
        /// `slurm.study`, as written.
        path: String,
    },

    /// The study file's own path, which a Slurm script names, is not UTF-8.
    #[error("the study's path is not UTF-8: give slurm.study, as the jobs see it")]
    StudyPathNotUtf8,

    /// No array task may run.
    #[error("slurm.max_running is 0; give at least 1 (array tasks that may run at once)")]
    MaxRunningZero,

    /// A Slurm task of no CPU.
    #[error("slurm.cpus_per_task is 0; give at least 1")]
    CpusPerTaskZero,

    /// A Kubernetes job of no pod, or pods of no CPU.
    #[error("kubernetes.parallelism and kubernetes.cpus must be at least 1")]
    KubernetesZero,

    /// A scheduler option with characters the scheduler does not take there.
    #[error("{field} {value:?} is not a valid value (for example {example})")]
    OptionValue {
        /// The option (`slurm.partition`, `slurm.mem`, `slurm.time`, `kubernetes.memory`, `kubernetes.volume_claim`).
        field: &'static str,
        /// Its value, as written (or the default).
        value: String,
        /// A value it takes.
        example: &'static str,
    },

    /// A Kubernetes job name that is not a DNS label.
    #[error("kubernetes.name {name:?} is not a DNS label (lower-case letters, digits and -, at most 63)")]
    NotDnsLabel {
        /// `kubernetes.name`, as written.
        name: String,
    },

    /// A value kubectl's YAML 1.1 parser would read as something other than a string.
    #[error("{field} {value:?} reads as a boolean, null, number or date in YAML 1.1, which kubectl's parser follows; choose another")]
    Yaml11 {
        /// The option (`kubernetes.name`, `kubernetes.image`, `kubernetes.volume_claim` or `kubernetes.memory`).
        field: &'static str,
        /// Its value, as written (or the default).
        value: String,
    },

    /// An empty Kubernetes image or mount.
    #[error("{field} is empty")]
    EmptyField {
        /// The option: `kubernetes.image` or `kubernetes.mount`.
        field: &'static str,
    },

    /// A Kubernetes value --kubernetes needs, not given.
    #[error(
        "kubernetes.{field} is not set; --kubernetes needs the image, volume_claim and mount of your cluster (for example \"{field}\": \"{example}\")"
    )]
    KubernetesUnset {
        /// The option under `kubernetes`: `image`, `volume_claim` or `mount`.
        field: &'static str,
        /// A value of the kind it takes.
        example: &'static str,
    },

    /// A Kubernetes mount that is not an absolute path.
    #[error("kubernetes.mount {mount:?} is not an absolute path")]
    MountRelative {
        /// `kubernetes.mount`, as written.
        mount: String,
    },

    /// A path the pods would not see.
    #[error("{field}: {path} is not on the volume the job mounts at {mount} (kubernetes.mount): give absolute paths under it")]
    NotMounted {
        /// The list or option that holds it: `models`, `files` or `out`.
        field: &'static str,
        /// The path, as written.
        path: String,
        /// `kubernetes.mount`, as written.
        mount: String,
    },

    /// A settings name that cannot name files.
    #[error("settings name {name:?}: use letters, digits, - and _ (it names files)")]
    SettingsName {
        /// The settings entry's name.
        name: String,
    },

    /// A flag the plan sets itself.
    #[error("settings {name:?}: {flag} is set by the plan")]
    PlannedFlag {
        /// The settings entry's name.
        name: String,
        /// The flag, as written (with any `=VALUE`).
        flag: String,
    },

    /// Flags `mcscore score` would refuse.
    #[error("settings {name:?} ({flags}): `mcscore score` would refuse them: {why}")]
    Refused {
        /// The settings entry's name.
        name: String,
        /// Its flags, joined by spaces.
        flags: String,
        /// Why `mcscore score` would refuse them, as the front end says it.
        why: String,
    },

    /// Two models or files whose logs would have one name.
    #[error("two entries share the name {name:?}, which names their logs")]
    SharedName {
        /// The file name they share, without its extension.
        name: String,
    },

    /// A run's threads above the CPUs each task gets.
    #[error("settings {name:?} run -t {threads} threads, but each task gets {cpus} CPUs ({field}): raise {field} or lower -t")]
    Threads {
        /// The settings entry's name.
        name: String,
        /// Its `-t`.
        threads: u32,
        /// The CPUs each array task gets.
        cpus: u32,
        /// The option that sets them: `slurm.cpus_per_task` or `kubernetes.cpus`.
        field: &'static str,
    },

    /// Layers offloaded to a GPU the study does not request.
    #[error("settings {name:?} offload layers to a GPU (-ngl {layers}), but the study requests none: set {field}, or give -ngl 0")]
    NoGpu {
        /// The settings entry's name.
        name: String,
        /// Its `-ngl`.
        layers: u32,
        /// The option that requests GPUs: `slurm.gpus_per_task` or `kubernetes.gpus`.
        field: &'static str,
    },

    /// GPUs requested for a run that keeps every layer on the CPU.
    #[error(
        "the study requests {gpus} GPU(s) per task ({field}), but settings {name:?} keep every layer on the CPU (-ngl 0): plan CPU and GPU settings as two studies"
    )]
    CpuOnly {
        /// The GPUs requested per array task.
        gpus: u32,
        /// The option that requests them: `slurm.gpus_per_task` or `kubernetes.gpus`.
        field: &'static str,
        /// The settings entry with `-ngl 0`.
        name: String,
    },

    /// The Kubernetes manifest could not be written.
    #[error("writing the manifest")]
    Manifest(#[source] serde_norway::Error),
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
