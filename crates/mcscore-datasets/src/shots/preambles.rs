//! The k-shot preambles, drawn from a benchmark's shot split as its tasks
//! are built or verified (the `sources` feature).

use std::collections::HashMap;
use std::rc::Rc;

use rand_mt::Mt64;

use super::ShotError;
use crate::benchmarks::{find, Benchmark, Draw};
use crate::item::Item;
use crate::render::Scaffold;
use crate::{for_each_item, load_items, DatasetError, Row, Source};

/// The shot seed when none is given (lm-evaluation-harness's few-shot seed).
pub const DEFAULT_SHOT_SEED: u64 = 1234;

/// A solved example: the scaffolded question and its gold continuation.
fn solved(scaffold: Scaffold, item: &Item) -> String {
    let (question, options) = scaffold.render(item);
    // render gives one option per item option, and the converters refuse a gold past them
    format!("{question} {}\n\n", options[item.gold])
}

/// `k` distinct indices below `n`, in draw order.
fn seeded_draw(seed: u64, n: usize, k: usize) -> Vec<usize> {
    let mut rng = Mt64::new(seed);
    let mut order: Vec<usize> = (0..n).collect();
    for i in 0..k {
        // i < k <= n (the caller refuses fewer examples than shots), so n - i >= 1
        let j = i + (rng.next_u64() % (n - i) as u64) as usize;
        order.swap(i, j);
    }
    order.truncate(k);
    order
}

/// The k-shot preamble of each task of a benchmark, built once per group
/// (or once, for a seeded draw) and handed out as tasks stream past.
pub(crate) struct Preambles {
    name: String,
    /// The split the shots come from.
    split: &'static Benchmark,
    k: usize,
    draw: Drawn,
}

enum Drawn {
    /// One preamble for every task.
    Seeded(Rc<String>),
    /// The first `k` examples of the task's group, after its header.
    PerGroup {
        field: &'static str,
        header: &'static str,
        scaffold: Scaffold,
        examples: Vec<Item>,
        by_group: HashMap<String, Vec<usize>>,
        built: HashMap<String, Rc<String>>,
    },
}

impl Preambles {
    /// The preambles of `benchmark`'s tasks with `k` solved examples from
    /// `shot_sources` (the split its shots come from), and the seed used
    /// (for a seeded draw).
    pub(crate) fn new(
        benchmark: &Benchmark,
        shot_sources: &[Source],
        k: usize,
        seed: Option<u64>,
    ) -> Result<(Preambles, Option<u64>), DatasetError> {
        let name = benchmark.name.to_owned();
        let shots = benchmark.shots.ok_or_else(|| {
            let with: Vec<&str> = crate::BENCHMARKS.iter().filter(|b| b.shots.is_some()).map(|b| b.name).collect();
            ShotError::NoSplit { name: name.clone(), with: with.join(", ") }
        })?;
        if k == 0 {
            return Err(ShotError::Zero { name }.into());
        }
        let split = find(shots.from).expect("a benchmark's shot split is a registered benchmark (benchmarks.rs's tests check it)");
        let scaffold = benchmark.scaffold;
        let (draw, seed) = match shots.draw {
            Draw::PerGroup { field, header } => {
                if seed.is_some() {
                    return Err(ShotError::SeedNotApplicable { name, field, from: shots.from }.into());
                }
                let (mut examples, mut by_group) = (Vec::new(), HashMap::<String, Vec<usize>>::new());
                for_each_item(split, shot_sources, &mut |item, row| {
                    by_group.entry(row.group(field)?).or_default().push(examples.len());
                    examples.push(item);
                    Ok(())
                })?;
                (Drawn::PerGroup { field, header, scaffold, examples, by_group, built: HashMap::new() }, None)
            }
            Draw::Seeded => {
                let examples = load_items(split, shot_sources)?;
                if examples.len() < k {
                    return Err(ShotError::TooFew { from: shots.from, available: examples.len(), k }.into());
                }
                let seed = seed.unwrap_or(DEFAULT_SHOT_SEED);
                let preamble: String = seeded_draw(seed, examples.len(), k).iter().map(|&i| solved(scaffold, &examples[i])).collect();
                (Drawn::Seeded(Rc::new(preamble)), Some(seed))
            }
        };
        Ok((Preambles { name, split, k, draw }, seed))
    }

    /// The benchmark the shots come from.
    pub(crate) fn split(&self) -> &'static Benchmark {
        self.split
    }

    /// The preamble of task `task`, read from `row`.
    pub(crate) fn of(&mut self, task: usize, row: &Row<'_>) -> Result<Rc<String>, DatasetError> {
        let Preambles { name, split, k, draw } = self;
        let (field, header, scaffold, examples, by_group, built) = match draw {
            Drawn::Seeded(preamble) => return Ok(Rc::clone(preamble)),
            Drawn::PerGroup { field, header, scaffold, examples, by_group, built } => (field, header, scaffold, examples, by_group, built),
        };
        let group = row.group(field)?;
        if let Some(preamble) = built.get(&group) {
            return Ok(Rc::clone(preamble));
        }
        let members = by_group.get(&group).map_or(&[][..], Vec::as_slice);
        if members.len() < *k {
            let (name, from, available, k) = (name.clone(), split.name, members.len(), *k);
            return Err(ShotError::TooFewInGroup { name, task, group, from, available, k }.into());
        }
        let mut preamble = header.replace("{}", &group.replace('_', " "));
        preamble.push_str("\n\n");
        preamble.extend(members[..*k].iter().map(|&i| solved(*scaffold, &examples[i])));
        let preamble = Rc::new(preamble);
        built.insert(group, Rc::clone(&preamble));
        Ok(preamble)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_draws_are_distinct_and_repeatable() {
        let draw = seeded_draw(DEFAULT_SHOT_SEED, 100, 5);
        assert_eq!(draw, seeded_draw(DEFAULT_SHOT_SEED, 100, 5));
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
