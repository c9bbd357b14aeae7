//! Property tests: valid task sets round-trip byte-identically, and no
//! truncation or single-byte change of a valid file makes the reader panic or
//! accept bytes it would not write back identically.

mod common;

use common::*;
use mcscore_format::{validate, write_tasks, Choices, Task, TaskFile};
use proptest::prelude::*;

#[derive(Debug, Clone)]
struct OwnedTask {
    question: String,
    options: Vec<String>,
    gold: usize,
    mc2: Vec<(String, bool)>,
}

impl OwnedTask {
    fn view(&self) -> Task<'_> {
        let mut task = Task::new(&self.question, self.options.iter().map(String::as_str).collect(), self.gold);
        task.mc2 = Choices {
            options: self.mc2.iter().map(|(o, _)| o.as_str()).collect(),
            labels: self.mc2.iter().map(|&(_, l)| i32::from(l)).collect(),
        };
        task
    }
}

fn task() -> impl Strategy<Value = OwnedTask> {
    (
        "\\PC{1,40}",
        prop::collection::vec("\\PC{1,12}", 2..8),
        prop::collection::vec(("\\PC{1,6}", any::<bool>()), 0..3),
        any::<prop::sample::Index>(),
    )
        .prop_map(|(question, options, mc2, gold)| OwnedTask { gold: gold.index(options.len()), question, options, mc2 })
}

fn tasks() -> impl Strategy<Value = Vec<OwnedTask>> {
    prop::collection::vec(task(), 1..12)
}

/// If `bytes` validate, opening them gives tasks that re-encode to `bytes`.
fn check_consistent(bytes: &[u8]) -> Result<(), TestCaseError> {
    if validate(bytes).is_empty() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.bin");
        std::fs::write(&path, bytes).unwrap();
        let file = TaskFile::open(&path).expect("validate() said valid");
        let views: Vec<Task<'_>> = file.tasks().collect();
        prop_assert_eq!(file_bytes(&views), bytes.to_vec());
    } else {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.bin");
        std::fs::write(&path, bytes).unwrap();
        prop_assert!(TaskFile::open(&path).is_err());
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn valid_task_sets_round_trip(tasks in tasks()) {
        let views: Vec<Task<'_>> = tasks.iter().map(OwnedTask::view).collect();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.bin");
        write_tasks(&path, views.clone().into_iter()).unwrap();
        let written = std::fs::read(&path).unwrap();
        prop_assert_eq!(&written, &file_bytes(&views));
        let file = TaskFile::open(&path).unwrap();
        let read: Vec<Task<'_>> = file.tasks().collect();
        prop_assert_eq!(&read, &views);
        let again = dir.path().join("u.bin");
        write_tasks(&again, file.tasks()).unwrap();
        prop_assert_eq!(std::fs::read(&again).unwrap(), written);
    }

    #[test]
    fn every_truncation_is_rejected(tasks in tasks()) {
        let views: Vec<Task<'_>> = tasks.iter().map(OwnedTask::view).collect();
        let bytes = file_bytes(&views);
        for cut in 0..bytes.len() {
            prop_assert!(!validate(&bytes[..cut]).is_empty(), "truncation to {} bytes accepted", cut);
        }
    }

    #[test]
    fn single_byte_mutations_never_panic(tasks in tasks(), at in any::<prop::sample::Index>(), value in any::<u8>()) {
        let views: Vec<Task<'_>> = tasks.iter().map(OwnedTask::view).collect();
        let mut bytes = file_bytes(&views);
        let at = at.index(bytes.len());
        bytes[at] = value;
        check_consistent(&bytes)?;
    }
}
