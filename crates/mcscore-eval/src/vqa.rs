//! What a file of image tasks (VLMEvalKit's multiple-choice TSV) holds, and
//! whether every image in it decodes as llama.cpp decodes it: `validate`'s
//! and `inspect`'s values for such a file, before any model reads it.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use mcscore_datasets::vqa::{parse_vqa, VqaTask};
use mcscore_engine::check_image;
use mcscore_format::sha256_hex;

use crate::EvalError;

/// An image that would not be read, with its row.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ImageFaultAt {
    /// The row's line, from 1.
    pub line: u64,
    /// The row's `index` cell.
    pub index: String,
    /// The task (the row, from 0).
    pub task: usize,
    /// The image, from 0 in the row.
    pub image: usize,
    /// What is wrong.
    pub message: String,
}

/// A file of image tasks, summarised and checked.
#[derive(Debug, Clone, serde::Serialize)]
pub struct VqaSummary {
    /// The file, as given.
    pub file: String,
    /// Its sha256.
    pub sha256: String,
    /// Tasks (rows).
    pub tasks: usize,
    /// Images, counting a shared one once per row.
    pub images: usize,
    /// Distinct images (by content).
    pub distinct_images: usize,
    /// Rows with a hint.
    pub hints: usize,
    /// Tasks by their number of options.
    pub options: BTreeMap<usize, usize>,
    /// The gold option's letter, and how many tasks have it.
    pub answers: BTreeMap<String, usize>,
    /// The mean chance of a uniform guess (1/options), as a fraction.
    pub chance: f64,
    /// The share of the commonest answer letter (always answering it), as a fraction.
    pub majority_class: f64,
    /// Per other column (`category`, `l2-category`, ...), tasks per value.
    pub categories: BTreeMap<String, BTreeMap<String, usize>>,
    /// Images llama.cpp's loader would not read, by row (empty: every one decodes).
    pub image_faults: Vec<ImageFaultAt>,
}

impl VqaSummary {
    /// Whether every image decodes (the rows' structure was checked when read).
    pub fn valid(&self) -> bool {
        self.image_faults.is_empty()
    }
}

/// Reads `path` (every row checked, the first structural fault an error),
/// decodes each distinct image once as llama.cpp would, and summarises it.
pub fn summarise(path: &Path) -> Result<(VqaSummary, Vec<VqaTask>), EvalError> {
    // Read once: the rows and the sha256 are of the same bytes.
    let bytes = std::fs::read(path).map_err(EvalError::io(path))?;
    let tasks = parse_vqa(&bytes, path)?;
    let mut checked: HashMap<*const u8, Result<(u32, u32), String>> = HashMap::new();
    let mut distinct: HashSet<String> = HashSet::new();
    let mut image_faults = Vec::new();
    let (mut options, mut answers, mut categories) = (BTreeMap::new(), BTreeMap::new(), BTreeMap::<String, BTreeMap<String, usize>>::new());
    for (task, t) in tasks.iter().enumerate() {
        *options.entry(t.letters.len()).or_insert(0) += 1;
        *answers.entry(t.letters[t.gold].to_owned()).or_insert(0) += 1;
        for (column, value) in &t.categories {
            *categories.entry(column.clone()).or_default().entry(value.clone()).or_insert(0) += 1;
        }
        for (image, data) in t.images.iter().enumerate() {
            // Rows that share an image share its bytes: each is decoded once.
            let result = checked.entry(Arc::as_ptr(data).cast::<u8>()).or_insert_with(|| {
                distinct.insert(sha256_hex(data));
                check_image(data).map_err(|e| e.to_string())
            });
            if let Err(message) = result {
                image_faults.push(ImageFaultAt { line: t.line, index: t.index.clone(), task, image, message: message.clone() });
            }
        }
    }
    let n = tasks.len() as f64;
    let summary = VqaSummary {
        file: path.display().to_string(),
        sha256: sha256_hex(&bytes),
        tasks: tasks.len(),
        images: tasks.iter().map(|t| t.images.len()).sum(),
        distinct_images: distinct.len(),
        hints: tasks.iter().filter(|t| t.hint.is_some()).count(),
        chance: tasks.iter().map(|t| 1.0 / t.letters.len() as f64).sum::<f64>() / n,
        majority_class: answers.values().copied().max().unwrap_or(0) as f64 / n,
        options,
        answers,
        categories,
        image_faults,
    };
    Ok((summary, tasks))
}
