//! `mcscore build` and `mcscore verify`: task files from real sources, and the
//! proof that a task file is exactly its source.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use mcscore_datasets::lm_eval::ExportSpec;
use mcscore_datasets::{
    build, build_with_shots, entry_benchmark, find, shot_name, Benchmark, DatasetError, Entry, Manifest, Scaffold, Source, Sources,
    VerifyFault, BENCHMARKS,
};
use mcscore_format::{read_winogrande, Task, TaskFile};

use crate::progress::{Meter, ProgressMode};
use crate::Outcome;

/// Where sources come from, shared by build and verify.
#[derive(clap::Args)]
pub(crate) struct SourceArgs {
    /// A source file or folder for the one benchmark named (Parquet, Arrow
    /// stream or save_to_disk folder, JSON Lines, JSON, CSV/TSV).
    #[arg(long, value_name = "PATH")]
    pub(crate) source: Option<PathBuf>,
    /// Root of local source copies: each benchmark's registered copy is read
    /// from under it. Without --source or --sources, files come from the
    /// Hugging Face hub at the pinned revision.
    #[arg(long, value_name = "DIR", env = "MCSCORE_SOURCES")]
    sources: Option<PathBuf>,
}

impl SourceArgs {
    /// The source files of `benchmark`, local or downloaded.
    pub(crate) fn resolve(&self, benchmark: &Benchmark) -> anyhow::Result<Vec<Source>> {
        let sources = match (&self.source, &self.sources) {
            (Some(path), _) => Sources::File(path),
            (None, Some(root)) => Sources::Root(root),
            (None, None) => Sources::Hub,
        };
        sources.resolve(benchmark).map_err(|e| {
            let hint = match &e {
                DatasetError::Hub { .. } | DatasetError::Unpinned { .. } => {
                    "offline, or no pinned revision? build from a local copy with --source PATH or --sources DIR"
                }
                DatasetError::NoLocalCopy { .. } => "--sources; pass --source PATH, or build from the hub",
                DatasetError::LocalCopyMissing { .. } => "--sources",
                _ => return e.into(),
            };
            anyhow::anyhow!("{} ({hint})", crate::with_causes(&e))
        })
    }
}

/// Build benchmark task files from their sources, atomically, and record each
/// in the manifest (sha256, counts, mode, chance, majority_class, provenance).
///
/// Sources are never cleaned: only a label kept inside an option's text (AQuA's
/// `A)21`) is stripped. `mcscore build --list` shows every benchmark.
#[derive(clap::Args)]
pub(crate) struct BuildArgs {
    /// Benchmarks to build, e.g. arc-easy-validation mmlu-test.
    #[arg(value_name = "NAME", required_unless_present_any = ["list", "all_local", "lm_eval"])]
    names: Vec<String>,
    /// Export lm-evaluation-harness tasks, groups or tags (comma-separated,
    /// as its --tasks) through lm-eval itself: each to NAME.bin, its requests
    /// exactly as lm-eval renders them (few-shot contexts, seeds, --limit,
    /// process_docs), its groups and results skeleton in the manifest. Score
    /// with `score --lm-eval` (or `--format lm-eval` for lm-eval's results
    /// JSON). Needs lm-eval in the Python of --python; tasks that are not
    /// multiple choice, or that a task file cannot hold exactly, are refused
    /// with the reason.
    #[arg(long, value_name = "TASKS", value_delimiter = ',', conflicts_with_all = ["names", "source", "all_local", "list"])]
    lm_eval: Vec<String>,
    /// With --lm-eval: a folder of task YAMLs lm-eval also reads (its
    /// --include_path), e.g. tasks whose dataset_path is `json` with local
    /// data_files, for an offline export.
    #[arg(long, value_name = "DIR", requires = "lm_eval")]
    include_path: Option<PathBuf>,
    /// With --lm-eval: documents per task (lm-eval's --limit; below 1, a share of each task's).
    #[arg(long, value_name = "N", requires = "lm_eval", value_parser = crate::numbers::real("a document count (below 1: a share of each task's)", crate::numbers::End::Open(0.0), crate::numbers::End::Closed(1e9), "100 or 0.1"))]
    limit: Option<f64>,
    /// With --lm-eval: the Python interpreter that has lm-eval installed.
    #[arg(long, value_name = "PATH", default_value = "python3", requires = "lm_eval")]
    python: PathBuf,
    #[command(flatten)]
    source: SourceArgs,
    /// Build every benchmark that has a registered local copy (needs --sources).
    #[arg(long, requires = "sources", conflicts_with_all = ["names", "source"])]
    all_local: bool,
    /// List the benchmarks and where their sources come from.
    #[arg(long)]
    list: bool,
    /// Folder for the .bin files.
    #[arg(short = 'o', long, value_name = "DIR", default_value = "datasets")]
    out: PathBuf,
    /// The manifest to record the files in (created where missing; entries of
    /// other files are kept).
    #[arg(long, value_name = "FILE", default_value = "manifest.json")]
    manifest: PathBuf,
    /// Build the K-shot variant, NAME-Kshot.bin: K solved examples from the
    /// benchmark's own dev or training split before each question (MMLU: its dev
    /// split's first K of the task's subject, after "The following are multiple
    /// choice questions (with answers) about SUBJECT."; CommonsenseQA: K drawn
    /// from its training split with --shot-seed, the same for every task).
    ///
    /// With --lm-eval: lm-eval's --num_fewshot for every task (0 allowed), in NAME.bin.
    #[arg(long, value_name = "K", value_parser = crate::numbers::whole(0u32, 64))]
    shots: Option<u32>,
    /// Seed of a seeded shot draw (default 1234, lm-evaluation-harness's).
    /// With --lm-eval: lm-eval's --fewshot_random_seed, for tasks whose YAML sets their shots too.
    #[arg(long, value_name = "S", value_parser = crate::numbers::at_least(0u64))]
    shot_seed: Option<u64>,
    /// Progress on stderr: a bar on a terminal, else a line every 30 s
    /// (tasks written, tasks/s: the count is known only at the end).
    #[arg(long, value_enum, value_name = "auto|bar|lines|none", default_value_t = ProgressMode::Auto)]
    progress: ProgressMode,
}

/// The sources of the split `benchmark`'s shots come from (none for a 0-shot file).
fn shot_sources(benchmark: &Benchmark, args: &SourceArgs, shots: bool) -> anyhow::Result<Vec<Source>> {
    if !shots {
        return Ok(Vec::new());
    }
    let Some(shot) = benchmark.shots else { return Ok(Vec::new()) };
    if args.source.is_some() {
        bail!("--source names one file; a k-shot file also reads {}: pass --sources DIR (or build from the hub)", shot.from);
    }
    args.resolve(self::benchmark(shot.from)?)
}

fn benchmark(name: &str) -> anyhow::Result<&'static Benchmark> {
    find(name).with_context(|| {
        let names: Vec<&str> = BENCHMARKS.iter().map(|b| b.name).collect();
        format!("unknown benchmark {name:?}; known: {}", names.join(", "))
    })
}

/// How the manifest refers to `path`: relative to the manifest's folder.
fn relative_to_manifest(manifest: &Path, path: &Path) -> String {
    let base = manifest.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    path.strip_prefix(base).unwrap_or(path).display().to_string()
}

pub(crate) fn run_build(args: BuildArgs) -> anyhow::Result<Outcome> {
    if args.list {
        for b in BENCHMARKS {
            let revision = b.hub.revision.unwrap_or("(no pinned revision)");
            let local = b.local.unwrap_or("(no local copy)");
            let files = b.hub.files.join(", ");
            let unconfirmed = if b.hub.paths_confirmed { "" } else { " (path not confirmed offline)" };
            outln!(
                "{:<28} {:<7} {}@{} [{}]\n{:<28} hub files: {files}{unconfirmed}\n{:<28} local: {local}",
                b.name,
                b.scaffold.mode(),
                b.hub.repo,
                revision,
                b.hub.split,
                "",
                ""
            )?;
        }
        return Ok(Outcome::Ok);
    }
    if !args.lm_eval.is_empty() {
        return build_lm_eval(&args);
    }
    // Outside --lm-eval, a k-shot file has 1 to 64 shots and a seed goes with them.
    if args.shots == Some(0) {
        return Err(crate::UsageError("--shots 0 is the benchmark's own file: build it without --shots (0 is for --lm-eval)".into()).into());
    }
    if args.shot_seed.is_some() && args.shots.is_none() {
        return Err(crate::UsageError("--shot-seed goes with --shots K (or --lm-eval)".into()).into());
    }
    let names: Vec<&str> = if args.all_local {
        BENCHMARKS.iter().filter(|b| b.local.is_some()).map(|b| b.name).collect()
    } else {
        args.names.iter().map(String::as_str).collect()
    };
    if args.source.source.is_some() && names.len() != 1 {
        bail!("--source names one benchmark's source; {} benchmarks were given", names.len());
    }
    crate::output::check_dir(&args.out, "--out")?;
    std::fs::create_dir_all(&args.out).with_context(|| args.out.display().to_string())?;
    let mut manifest = Manifest::load(&args.manifest)?;
    for name in names {
        let benchmark = benchmark(name)?;
        let sources = args.source.resolve(benchmark)?;
        let mut meter = Meter::new(args.progress, &format!("building {name}"), "tasks", None, 0);
        let progress = &mut |done| meter.set(done);
        let entry = match args.shots {
            Some(k) => {
                let shot_sources = shot_sources(benchmark, &args.source, true)?;
                let file_name = relative_to_manifest(&args.manifest, &args.out.join(format!("{}.bin", shot_name(name, k as usize))));
                build_with_shots(benchmark, &sources, &shot_sources, k as usize, args.shot_seed, &args.out, &file_name, progress)?
            }
            None => {
                let file_name = relative_to_manifest(&args.manifest, &args.out.join(benchmark.file_name()));
                build(benchmark, &sources, &args.out, &file_name, progress)?
            }
        };
        meter.finish();
        outln!(
            "{}: {} tasks, {} mode, chance {:.2} %, majority_class {:.2} %, sha256 {}",
            entry.file,
            entry.tasks,
            entry.mode,
            entry.chance,
            entry.majority_class,
            entry.sha256
        )?;
        manifest.upsert(entry);
        // Saved after each file, so an error later loses no finished work.
        manifest.save(&args.manifest)?;
    }
    Ok(Outcome::Ok)
}

/// `build --lm-eval`: every name exported through lm-eval, then written.
fn build_lm_eval(args: &BuildArgs) -> anyhow::Result<Outcome> {
    crate::output::check_dir(&args.out, "--out")?;
    std::fs::create_dir_all(&args.out).with_context(|| args.out.display().to_string())?;
    let mut manifest = Manifest::load(&args.manifest)?;
    let spec = ExportSpec {
        names: args.lm_eval.clone(),
        include_path: args.include_path.clone(),
        limit: args.limit,
        num_fewshot: args.shots,
        fewshot_seed: args.shot_seed.unwrap_or(mcscore_datasets::shots::DEFAULT_SHOT_SEED),
        python: args.python.clone(),
    };
    eprintln!("build: lm-eval is loading {} and rendering every request (its log is kept, and shown if it fails)", args.lm_eval.join(", "));
    let entries = mcscore_datasets::lm_eval::export(&spec, &args.out, &|path| relative_to_manifest(&args.manifest, path))?;
    for entry in entries {
        let record = entry.lm_eval.as_deref().expect("an export's entries carry their record");
        outln!(
            "{}: {} tasks of lm-eval {} ({} task{}), {} mode, chance {:.2} %, sha256 {}",
            entry.file,
            entry.tasks,
            record.lm_eval_version,
            record.tasks.len(),
            if record.tasks.len() == 1 { "" } else { "s" },
            entry.mode,
            entry.chance,
            entry.sha256
        )?;
        for task in record.tasks.iter().filter(|t| !t.dropped.is_empty()) {
            eprintln!("build: {}: not computed by mcscore, so not in its results: {}", task.name, task.dropped.join(", "));
        }
        manifest.upsert(entry);
    }
    manifest.save(&args.manifest)?;
    Ok(Outcome::Ok)
}

/// Prove task files are exactly their sources: sha256 against the manifest,
/// strict validation, then every task re-derived from the source and compared
/// (question, options, gold). Lists each mismatch with its task index and
/// field; exits 1 on any.
#[derive(clap::Args)]
pub(crate) struct VerifyArgs {
    /// Task files to verify (default: every file in the manifest); a VQA file
    /// (.tsv, .jsonl: its own source) has every row read and every image
    /// decoded as llama.cpp decodes it, with no manifest.
    #[arg(value_name = "FILE")]
    files: Vec<PathBuf>,
    /// The manifest whose entries the files are checked against (by name and sha256).
    #[arg(long, value_name = "FILE", default_value = "manifest.json")]
    manifest: PathBuf,
    #[command(flatten)]
    source: SourceArgs,
    /// Progress on stderr: a bar on a terminal, else a line every 30 s and
    /// at each tenth of a file's tasks.
    #[arg(long, value_enum, value_name = "auto|bar|lines|none", default_value_t = ProgressMode::Auto)]
    progress: ProgressMode,
    /// For files `build --lm-eval` wrote: the Python interpreter that has
    /// lm-eval installed, which renders their requests again.
    #[arg(long, value_name = "PATH", default_value = "python3")]
    python: PathBuf,
}

pub(crate) fn run_verify(args: VerifyArgs) -> anyhow::Result<Outcome> {
    // A VQA file (docs/vqa.md) is its own source: nothing was derived from
    // one, so verifying it is reading every row and decoding every image,
    // with no manifest.
    let (vqa, files): (Vec<PathBuf>, Vec<PathBuf>) = args.files.iter().cloned().partition(|f| mcscore_datasets::vqa::is_vqa_file(f));
    if files.is_empty() && !vqa.is_empty() && args.source.source.is_some() {
        let message = "--source names the source a task file was built from; a VQA file is its own source (nothing to re-derive)";
        return Err(crate::UsageError(message.into()).into());
    }
    let mut failed = 0;
    for path in &vqa {
        match mcscore_eval::vqa::summarise(path) {
            Ok((summary, _)) => {
                crate::validate::print_vqa(&summary, "verified")?;
                failed += usize::from(!summary.valid());
            }
            Err(error) => {
                failed += 1;
                crate::flag_hints::report(crate::flag_hints::Asked::Other, &error.into());
            }
        }
    }
    if !vqa.is_empty() && files.is_empty() {
        return Ok(verdict(failed, vqa.len()));
    }
    if !args.manifest.is_file() {
        bail!("{}: no manifest there (pass --manifest FILE; `mcscore build` writes one)", args.manifest.display());
    }
    let manifest = Manifest::load(&args.manifest)?;
    if manifest.datasets.is_empty() {
        bail!("{}: no datasets in the manifest", args.manifest.display());
    }
    // Each file to verify with its manifest entry (by file stem).
    let entries: Vec<(&Entry, PathBuf)> = if files.is_empty() {
        manifest.datasets.iter().map(|e| (e, Manifest::file_path(&args.manifest, e))).collect()
    } else {
        files
            .iter()
            .map(|f| {
                let stem = f.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
                let entry = manifest
                    .entry(stem)
                    .with_context(|| format!("{}: no entry named {stem:?} in {}", f.display(), args.manifest.display()))?;
                Ok((entry, f.clone()))
            })
            .collect::<anyhow::Result<_>>()?
    };
    if args.source.source.is_some() && entries.len() != 1 {
        bail!("--source names one benchmark's source; {} files are being verified", entries.len());
    }
    // Every file is checked, whatever happened to the ones before it.
    let total = vqa.len() + entries.len();
    for (entry, path) in entries {
        let mismatches = match verify_entry(entry, &path, &args) {
            Ok(mismatches) => mismatches,
            Err(error) => {
                failed += 1;
                crate::flag_hints::report(crate::flag_hints::Asked::Other, &error);
                continue;
            }
        };
        if mismatches.is_empty() {
            outln!("{}: verified: {} tasks match {}", path.display(), entry.tasks, entry.source.repo)?;
        } else {
            failed += 1;
            let count = VerifyFault::count(&mismatches);
            outln!("{}: {count} MISMATCH{}", path.display(), if count == 1 { "" } else { "ES" })?;
            let shown: Vec<&VerifyFault> = mismatches.iter().filter(|m| !matches!(m, VerifyFault::Unlisted { .. })).take(50).collect();
            for m in &shown {
                outln!("  {m}")?;
            }
            if count > shown.len() {
                outln!("  ... and {} more", count - shown.len())?;
            }
        }
    }
    Ok(verdict(failed, total))
}

/// Verification's outcome: `failed` of `total` files.
fn verdict(failed: usize, total: usize) -> Outcome {
    if failed > 0 {
        eprintln!("mcscore: {failed} of {total} file(s) failed verification");
        return Outcome::InvalidInput;
    }
    Outcome::Ok
}

fn verify_entry(entry: &Entry, path: &Path, args: &VerifyArgs) -> anyhow::Result<Vec<VerifyFault>> {
    let (source_args, progress) = (&args.source, args.progress);
    if let Some(record) = &entry.lm_eval {
        // An lm-eval export is verified by exporting it again: lm-eval renders
        // its requests, so no other reader could re-derive them.
        let file = TaskFile::open(path)?;
        eprintln!("verify: {}: lm-eval renders {} again", path.display(), record.settings.name);
        return Ok(mcscore_datasets::lm_eval::verify(entry, &args.python, &file)?);
    }
    let benchmark = entry_benchmark(entry)?;
    // A task file strictly validated (its tasks read one at a time from the
    // mapped file), or Winogrande's CSV strictly read.
    let (file, csv, csv_tasks);
    let (bytes, tasks): (&[u8], Box<dyn ExactSizeIterator<Item = Task<'_>>>) = if benchmark.scaffold == Scaffold::Blank {
        csv = std::fs::read(path).with_context(|| path.display().to_string())?;
        csv_tasks = read_winogrande(&csv, path)?;
        (&csv, Box::new(csv_tasks.into_iter()))
    } else {
        file = TaskFile::open(path)?;
        (file.bytes(), Box::new(file.tasks()))
    };
    let sources = source_args.resolve(benchmark)?;
    let shot_sources = shot_sources(benchmark, source_args, entry.shots.is_some())?;
    let mut meter = Meter::new(progress, &format!("verifying {}", entry.name), "tasks", Some(tasks.len()), 0);
    let mismatches = mcscore_datasets::verify_entry(entry, bytes, tasks, &sources, &shot_sources, &mut |done| meter.set(done))?;
    meter.finish();
    Ok(mismatches)
}
