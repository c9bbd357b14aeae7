//! `mcscore plan`: a study (models × task files × settings, each run in
//! shards) as one Slurm array job or one Kubernetes Indexed Job, and the
//! merge of its shards afterwards.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use mcscore_format::AtomicFile;

use crate::output::{self, Target};
use crate::Outcome;

mod study;

pub(crate) use study::{Needs, Study};

const EXAMPLES: &str = "\
Examples:
  mcscore plan study.json --slurm -o study.sbatch && bash study.sbatch
                                             submits the array, and a merge job after it
  mcscore plan study.json --kubernetes | kubectl apply -f -
  mcscore plan study.json --merge            after the jobs: one log per run (names the
                                             array indices to resubmit if some did not finish)
  mcscore report OUT/FILE/*.jsonl            every model and setting on one file

A study file (JSON):
  {\"models\": [\"/data/models/a.gguf\", \"/data/models/b.gguf\"],
   \"files\": [\"/data/datasets/mmlu-test.bin\"],
   \"settings\": {\"default\": [\"-c\", \"512\"], \"fa-off\": [\"-fa\", \"off\"]},
   \"shards\": 8, \"out\": \"/data/results\",
   \"mcscore\": \"/opt/mcscore/bin/mcscore\",
   \"slurm\": {\"partition\": \"gpu\", \"gpus_per_task\": 1, \"cpus_per_task\": 8, \"time\": \"02:00:00\"},
   \"kubernetes\": {\"image\": \"registry/mcscore:1\", \"volume_claim\": \"mcscore-data\", \"mount\": \"/data\", \"gpus\": 1}}
Keys: models, files, shards, out (required); settings (named lists of score flags;
default: one, \"default\", with none); mcscore (the binary the jobs run; default: mcscore
on PATH); slurm: partition, cpus_per_task, gpus_per_task, mem, time, max_running (tasks at
once), study (this file as the merge job sees it; default: its absolute path here);
kubernetes: image, volume_claim, mount (required for --kubernetes; every path must lie
under mount), name, parallelism, cpus, memory, gpus.
Resources follow the settings: CPUs per task default to the largest -t of the settings
(else 4), and a run without -t gets -t of its task's CPUs; a -t above the CPUs, -ngl above
0 with no GPU requested, or -ngl 0 with GPUs requested is refused.
Array index i scores run i / shards, shard i % shards; runs go by file, model, settings.
Shard logs: OUT/shards/FILE/MODEL.SETTINGS.shard-K.jsonl; merged: OUT/FILE/MODEL.SETTINGS.jsonl.";

/// Plan a study (models × task files × settings) for Slurm or Kubernetes, then merge it.
///
/// Prints (or writes) one Slurm array job or one Kubernetes Indexed Job that
/// scores every model on every task file with every named setting, each run in
/// shards; afterwards, `--merge` joins each run's shards into one log. Each
/// array task resumes its own log, so a failed one is rerun by resubmitting its
/// index. The Slurm script, run with `bash`, submits itself and a merge job
/// that waits for every task to succeed.
#[derive(clap::Args)]
#[command(after_help = EXAMPLES)]
pub(crate) struct Args {
    /// The study file (JSON; see below).
    #[arg(value_name = "STUDY.json")]
    study: PathBuf,
    /// Print the sbatch script of the study.
    #[arg(long, group = "what")]
    slurm: bool,
    /// Print the Kubernetes Indexed Job manifest of the study.
    #[arg(long, group = "what")]
    kubernetes: bool,
    /// Merge each run whose shards are complete into OUT/FILE/MODEL.SETTINGS.jsonl.
    #[arg(long, group = "what")]
    merge: bool,
    /// Write the script or manifest to FILE instead of stdout; an existing file only
    /// with --force, and never the study file.
    #[arg(short = 'o', long = "out", value_name = "FILE", conflicts_with = "merge")]
    out: Option<PathBuf>,
    /// Replace the -o file if it exists (a regular file that is not the study).
    #[arg(long, requires = "out")]
    force: bool,
}

pub(crate) fn run(args: Args) -> anyhow::Result<Outcome> {
    let target = args.out.as_deref().map(|out| Target::new(out, "-o", args.force));
    if let Some(target) = &target {
        output::check_file(target, &[&args.study])?;
    }
    // Every run's flags parse as `score` will parse them on the cluster, so a
    // typo fails here rather than in every array task.
    let study = Study::load(&args.study, |flags| {
        let planned = ["-m", "MODEL.gguf", "FILE.bin", "--shard", "0/1", "--log-samples", "LOG.jsonl", "--resume"];
        let line: Vec<&str> = flags.iter().map(String::as_str).chain(planned).collect();
        crate::parse_score_flags(&line)
    })?;
    let text = if args.slurm {
        // The merge job names the study as this machine does: the cluster's
        // shared file system is assumed to show it at the same path.
        let path = std::path::absolute(&args.study).with_context(|| args.study.display().to_string())?;
        study.slurm_script(&path)?
    } else if args.kubernetes {
        study.kubernetes_manifest(&args.study)?
    } else if args.merge {
        let mut failed = 0;
        let mut resubmit = Vec::new();
        for run in study.merge_all(&args.study) {
            match run.merged {
                Ok(merged) => outln!(
                    "{}: {} tasks from {} shards, acc_norm {:.2} %",
                    study.merged_log(&run.run),
                    merged.records.len(),
                    merged.shards,
                    merged.accuracy(mcscore_metrics::Normalisation::AccNorm).percent()
                )?,
                Err(error) => {
                    failed += 1;
                    let r = &run.run;
                    eprintln!("mcscore: {} on {} ({}): not merged: {}", r.model, r.file, r.settings_name, crate::with_causes(&error));
                    resubmit.extend(run.unfinished);
                }
            }
        }
        if failed > 0 {
            let list = resubmit.iter().map(usize::to_string).collect::<Vec<_>>().join(",");
            match resubmit.len() {
                0 => eprintln!("mcscore: {failed} run(s) not merged (see above); then run --merge again"),
                n => eprintln!(
                    "mcscore: {failed} run(s) not merged; {}: resubmit {} (sbatch --array={list} STUDY.sbatch, \
                     or delete the Kubernetes Job and apply it again; each resumes its log), then run --merge again",
                    if n == 1 { format!("array index {list} has not finished") } else { format!("array indices {list} have not finished") },
                    if n == 1 { "it" } else { "them" },
                ),
            }
            return Ok(Outcome::InvalidInput);
        }
        return Ok(Outcome::Ok);
    } else {
        return Err(crate::UsageError("say what to plan: --slurm, --kubernetes or --merge".into()).into());
    };
    match &target {
        Some(target) => {
            let path = target.path;
            let mut file = AtomicFile::with(path, target.existing)?;
            file.write_all(text.as_bytes()).with_context(|| path.display().to_string())?;
            file.commit()?;
            eprintln!(
                "mcscore: {} array tasks ({} runs × {} shards) planned in {}",
                study.tasks(),
                study.runs().len(),
                study.shards,
                path.display()
            );
        }
        None => out!("{text}")?,
    }
    Ok(Outcome::Ok)
}
