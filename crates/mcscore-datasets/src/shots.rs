//! k-shot task files: solved examples from a benchmark's own dev or training
//! split, written into each task's question, so every tool that reads the
//! task-file format scores them. Tasks that share their examples share the
//! preamble's tokens, which the engine decodes once for all of them.

use std::collections::HashMap;
use std::rc::Rc;

use rand_mt::Mt64;
use serde_json::Value;

use crate::benchmarks::{find, Benchmark};
use crate::render::{Item, Scaffold};
use crate::{load_items, read_records, DatasetError, Source};

/// Where a benchmark's shots come from.
#[derive(Debug, Clone, Copy)]
pub struct Shots {
    /// The registered benchmark split the examples are drawn from.
    pub from: &'static str,
    pub draw: Draw,
}

/// How the examples of a task are chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Draw {
    /// The first K examples of the task's own group (the `field` of the source
    /// rows: MMLU's subject) in source order, after `header` with the group's
    /// name (`_` read as a space) in place of `{}`.
    PerGroup { field: &'static str, header: &'static str },
    /// K examples drawn once from the split (mt19937-64 seeded with the shot
    /// seed, a partial Fisher–Yates shuffle), the same for every task.
    Seeded,
}

/// The shot seed when none is given (lm-evaluation-harness's few-shot seed).
pub const DEFAULT_SEED: u64 = 1234;

/// Why a k-shot file cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShotError {
    #[error("{name} has no split to draw shots from (k-shot files: {with})")]
    NoSplit { name: String, with: String },
    #[error("{name}: 0 shots; a k-shot file needs at least 1 (without --shots the file is 0-shot)")]
    Zero { name: String },
    #[error("{name}: its shots are the first K per {field} of {from}, in source order; a shot seed does not apply")]
    SeedNotApplicable { name: String, field: &'static str, from: &'static str },
    #[error("{name}: task {task} is about {group:?}, of which {from} holds {available} examples; {k} asked")]
    TooFewInGroup { name: String, task: usize, group: String, from: &'static str, available: usize, k: usize },
    #[error("{from} holds {available} examples; {k} shots asked")]
    TooFew { from: &'static str, available: usize, k: usize },
    #[error("{}: row {row}: field {field:?} missing or not a string", file.display())]
    NoGroup { file: std::path::PathBuf, row: usize, field: &'static str },
}

/// The name of `benchmark`'s k-shot file (its stem, and its manifest entry).
pub fn shot_name(benchmark: &str, k: usize) -> String {
    format!("{benchmark}-{k}shot")
}

/// A solved example: the scaffolded question and its gold continuation.
fn solved(scaffold: Scaffold, item: &Item) -> String {
    let (question, options) = scaffold.render(item);
    format!("{question} {}\n\n", options[item.gold])
}

/// The `field` of every row of `sources`, in order.
pub(crate) fn groups(sources: &[Source], field: &'static str) -> Result<Vec<String>, DatasetError> {
    let mut out = Vec::new();
    for source in sources {
        for (row, record) in read_records(&source.path)?.iter().enumerate() {
            let group = record.get(field).and_then(Value::as_str);
            out.push(group.ok_or_else(|| ShotError::NoGroup { file: source.path.clone(), row, field })?.to_owned());
        }
    }
    Ok(out)
}

/// `k` distinct indices below `n`, in draw order.
fn seeded_draw(seed: u64, n: usize, k: usize) -> Vec<usize> {
    let mut rng = Mt64::new(seed);
    let mut order: Vec<usize> = (0..n).collect();
    for i in 0..k {
        let j = i + (rng.next_u64() % (n - i) as u64) as usize;
        order.swap(i, j);
    }
    order.truncate(k);
    order
}

/// Every task of `benchmark` (question, options, gold) with `k` solved
/// examples before its question, and the seed used (for a seeded draw).
/// `sources` are the benchmark's, `shot_sources` those of the split its
/// shots come from.
pub fn render_with_shots(
    benchmark: &Benchmark,
    sources: &[Source],
    shot_sources: &[Source],
    k: usize,
    seed: Option<u64>,
) -> Result<(Vec<crate::Rendered>, Option<u64>), DatasetError> {
    let name = benchmark.name.to_owned();
    let shots = benchmark.shots.ok_or_else(|| {
        let with: Vec<&str> = crate::BENCHMARKS.iter().filter(|b| b.shots.is_some()).map(|b| b.name).collect();
        ShotError::NoSplit { name: name.clone(), with: with.join(", ") }
    })?;
    if k == 0 {
        return Err(ShotError::Zero { name }.into());
    }
    let split = find(shots.from).expect("shot splits are registered benchmarks");
    let items = load_items(benchmark, sources)?;
    let examples = load_items(split, shot_sources)?;
    let scaffold = benchmark.scaffold;
    let preambles: Vec<Rc<String>> = match shots.draw {
        Draw::PerGroup { field, header } => {
            if seed.is_some() {
                return Err(ShotError::SeedNotApplicable { name, field, from: shots.from }.into());
            }
            let mut by_group: HashMap<String, Vec<usize>> = HashMap::new();
            for (i, group) in groups(shot_sources, field)?.into_iter().enumerate() {
                by_group.entry(group).or_default().push(i);
            }
            let mut built: HashMap<String, Rc<String>> = HashMap::new();
            groups(sources, field)?
                .into_iter()
                .enumerate()
                .map(|(task, group)| {
                    if let Some(preamble) = built.get(&group) {
                        return Ok(preamble.clone());
                    }
                    let members = by_group.get(&group).map_or(&[][..], Vec::as_slice);
                    if members.len() < k {
                        let available = members.len();
                        return Err(ShotError::TooFewInGroup { name: name.clone(), task, group, from: shots.from, available, k });
                    }
                    let mut preamble = header.replace("{}", &group.replace('_', " "));
                    preamble.push_str("\n\n");
                    preamble.extend(members[..k].iter().map(|&i| solved(scaffold, &examples[i])));
                    let preamble = Rc::new(preamble);
                    built.insert(group, preamble.clone());
                    Ok(preamble)
                })
                .collect::<Result<_, _>>()?
        }
        Draw::Seeded => {
            if examples.len() < k {
                return Err(ShotError::TooFew { from: shots.from, available: examples.len(), k }.into());
            }
            let seed = seed.unwrap_or(DEFAULT_SEED);
            let preamble: String = seeded_draw(seed, examples.len(), k).iter().map(|&i| solved(scaffold, &examples[i])).collect();
            let preamble = Rc::new(preamble);
            (0..items.len()).map(|_| Rc::clone(&preamble)).collect()
        }
    };
    let seed = match shots.draw {
        Draw::PerGroup { .. } => None,
        Draw::Seeded => Some(seed.unwrap_or(DEFAULT_SEED)),
    };
    let rendered = items
        .iter()
        .zip(preambles)
        .map(|(item, preamble)| {
            let (question, options) = scaffold.render(item);
            (format!("{preamble}{question}"), options, item.gold)
        })
        .collect();
    Ok((rendered, seed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_draws_are_distinct_and_repeatable() {
        let draw = seeded_draw(DEFAULT_SEED, 100, 5);
        assert_eq!(draw, seeded_draw(DEFAULT_SEED, 100, 5));
        assert_ne!(draw, seeded_draw(7, 100, 5));
        let mut sorted = draw.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 5);
        assert_eq!(seeded_draw(1, 3, 3).len(), 3);
    }

    #[test]
    fn a_solved_example_ends_with_its_gold_continuation() {
        let item = Item { passage: None, stem: "2+2?".into(), options: vec!["3".into(), "4".into()], gold: 1 };
        assert_eq!(solved(Scaffold::Letter, &item), "Question: 2+2?\nA. 3\nB. 4\nAnswer: B\n\n");
        assert_eq!(solved(Scaffold::Text, &item), "Question: \"2+2?\" Answer: 4\n\n");
    }
}
