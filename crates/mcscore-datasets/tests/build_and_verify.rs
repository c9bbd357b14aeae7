//! Every builder on its real source; the committed files are reproduced byte
//! for byte; `verify` passes on them and catches each kind of corruption.

use std::path::{Path, PathBuf};

use mcscore_datasets::{
    build, build_with_shots, find, load_items, verify_entry, verify_tasks, DatasetError, Manifest, Scaffold, ShotError, Source,
    VerifyFault, BENCHMARKS,
};
use mcscore_format::{write_tasks, Task, TaskFile};

fn sources_root() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/sources");
    assert!(
        root.is_dir(),
        "{} is missing: these tests read the real sources in ../shared/data/sources beside the checkout",
        root.display()
    );
    root
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn local_source(name: &str) -> Vec<Source> {
    let benchmark = find(name).unwrap();
    let relative = benchmark.local.unwrap();
    vec![Source::local(&sources_root().join(relative), relative)]
}

#[test]
fn every_local_benchmark_rebuilds_the_committed_file() {
    let manifest = Manifest::load(&repo_root().join("manifest.json")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let local: Vec<_> = BENCHMARKS.iter().filter(|b| b.local.is_some()).collect();
    let zero_shot = manifest.datasets.iter().filter(|e| e.shots.is_none()).count();
    assert_eq!(zero_shot, local.len(), "manifest.json lists every buildable benchmark");
    for benchmark in local {
        let entry = build(benchmark, &local_source(benchmark.name), dir.path(), "x.bin", &mut |_| {}).unwrap();
        let committed = manifest.entry(benchmark.name).unwrap_or_else(|| panic!("{} missing from manifest.json", benchmark.name));
        assert_eq!(entry.sha256, committed.sha256, "{}: rebuilt file differs from the committed one", benchmark.name);
        assert_eq!(entry.source, committed.source, "{}", benchmark.name);
        let committed_bytes = std::fs::read(repo_root().join(&committed.file)).unwrap();
        assert_eq!(mcscore_format::sha256_hex(&committed_bytes), committed.sha256, "{}: datasets/ file vs manifest", benchmark.name);
        let path = dir.path().join(benchmark.file_name());
        let bytes = std::fs::read(&path).unwrap();
        let tasks = match benchmark.scaffold {
            Scaffold::Blank => mcscore_format::read_winogrande(&bytes, &path).unwrap(),
            _ => mcscore_format::read_lenient(&bytes, &path).unwrap(),
        };
        assert_eq!(verify_tasks(benchmark, tasks.iter().cloned(), &local_source(benchmark.name), &mut |_| {}).unwrap(), vec![]);
    }
}

/// llama.cpp's winogrande-debiased-eval.csv, re-derived: its first row is the
/// one perplexity.cpp quotes, every row reads back, and a moved answer is caught.
#[test]
fn winogrande_csv_is_llama_cpps_and_verifies() {
    let name = "winogrande-debiased-eval";
    let path = repo_root().join("datasets").join(find(name).unwrap().file_name());
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.starts_with("0,Sarah was a much better surgeon than Maria so _ always got the easier cases.,Sarah,Maria,2\n"));
    let mut tasks = mcscore_format::read_winogrande(text.as_bytes(), &path).unwrap();
    assert_eq!(tasks.len(), 1267);
    assert_eq!(verify_tasks(find(name).unwrap(), tasks.iter().cloned(), &local_source(name), &mut |_| {}).unwrap(), vec![]);
    tasks[5] = Task::new(tasks[5].question, tasks[5].options().to_vec(), 1 - tasks[5].gold().unwrap());
    let found = verify_tasks(find(name).unwrap(), tasks.iter().cloned(), &local_source(name), &mut |_| {}).unwrap();
    assert!(matches!(found[..], [VerifyFault::Gold { task: 5, .. }]), "{found:?}");

    // Every task moved one place: each differs, the first MAX_LISTED are
    // kept, the rest counted; progress ends at the file's task count.
    tasks.rotate_left(1);
    let mut last = 0;
    let found = verify_tasks(find(name).unwrap(), tasks.iter().cloned(), &local_source(name), &mut |done| last = done).unwrap();
    assert_eq!(found.len(), mcscore_datasets::MAX_LISTED + 1);
    assert!(matches!(found.last(), Some(VerifyFault::Unlisted { .. })), "{:?}", found.last());
    assert!(VerifyFault::count(&found) >= 1267, "{}", VerifyFault::count(&found));
    assert_eq!(last, 1267);
}

/// Row counts and a first task checked by hand against each source.
#[test]
fn builders_read_their_sources_as_documented() {
    let expect = |name: &str, tasks: usize, question: &str, options: &[&str], gold: usize| {
        let items = load_items(find(name).unwrap(), &local_source(name)).unwrap();
        assert_eq!(items.len(), tasks, "{name}");
        let (q, o) = find(name).unwrap().scaffold.render(&items[0]);
        assert_eq!(q, question, "{name}");
        assert_eq!(o, options, "{name}");
        assert_eq!(items[0].gold, gold, "{name}");
    };
    expect(
        "arc-easy-validation",
        570,
        "Question: \"Which technology was developed most recently?\" Answer:",
        &["cellular telephone", "television", "refrigerator", "airplane"],
        0,
    );
    expect(
        "mmlu-validation",
        1531,
        "Question: The cyclic subgroup of Z_24 generated by 18 has order\nA. 4\nB. 8\nC. 12\nD. 6\nAnswer:",
        &["A", "B", "C", "D"],
        0,
    );
    expect("aqua-rat-validation", 254, "Question: \"Three birds are flying at a fast rate of 900 kilometers per hour. What is their speed in miles per minute? [1km = 0.6 miles]\" Answer:", &["32400", "6000", "600", "60000", "10"], 0);
    expect("commonsense-qa-train", 9741, "Question: The sanctions against the school were a punishing blow, and they seemed to what the efforts the school had made to change?\nA. ignore\nB. enforce\nC. authoritarian\nD. yell at\nE. avoid\nAnswer:", &["A", "B", "C", "D", "E"], 0);
    expect("piqa-validation", 1838, "Question: \"How do I ready a guinea pig cage for it's new occupants?\" Answer:", &[
        "Provide the guinea pig with a cage full of a few inches of bedding made of ripped paper strips, you will also need to supply it with a water bottle and a food dish.",
        "Provide the guinea pig with a cage full of a few inches of bedding made of ripped jeans material, you will also need to supply it with a water bottle and a food dish."], 0);
    expect(
        "sciq-validation",
        1000,
        "Question: \"Who proposed the theory of evolution by natural selection?\" Answer:",
        &["Linnaeus", "shaw", "Scopes", "darwin"],
        3,
    );
    expect(
        "hellaswag-validation",
        10042,
        "Question: \"A man is sitting on a roof. he\" Answer:",
        &[
            "is using wrap to wrap a pair of skis.",
            "is ripping level tiles off.",
            "is holding a rubik's cube.",
            "starts pulling up roofing on a roof.",
        ],
        3,
    );
    let boolq = load_items(find("boolq-validation").unwrap(), &local_source("boolq-validation")).unwrap();
    assert_eq!(boolq.len(), 3270);
    assert_eq!((boolq[0].stem.as_str(), boolq[0].gold), ("does ethanol take more energy make that produces", 0));
    assert!(find("boolq-validation")
        .unwrap()
        .scaffold
        .render(&boolq[0])
        .0
        .ends_with("\nQuestion: \"does ethanol take more energy make that produces?\" Answer:"));
    let medqa = load_items(find("medqa-test").unwrap(), &local_source("medqa-test")).unwrap();
    assert_eq!((medqa.len(), medqa[0].gold), (1273, 1));
    // MedQA keeps its raw artifacts (doubled quotes): nothing is cleaned.
    assert!(medqa.iter().any(|i| i.stem.contains("\"\"")), "raw MedQA quoting kept");
    let truthful = load_items(find("truthfulqa-mc1").unwrap(), &local_source("truthfulqa-mc1")).unwrap();
    assert_eq!(truthful.len(), 817);
    assert!(truthful[0].options[0].starts_with("Nauru"));
}

// ---- mutations: each must make verify fail, naming the task and field ----

fn rewrite(src: &Path, dst: &Path, edit: impl FnOnce(&mut Vec<(String, Vec<String>, usize)>)) {
    let file = TaskFile::open(src).unwrap();
    let mut tasks: Vec<(String, Vec<String>, usize)> =
        file.tasks().map(|t| (t.question.to_owned(), t.options().iter().map(|o| o.to_string()).collect(), t.gold().unwrap())).collect();
    edit(&mut tasks);
    write_tasks(dst, tasks.iter().map(|(q, o, g)| Task::new(q, o.iter().map(String::as_str).collect(), *g))).unwrap();
}

fn verify_mutant(name: &str, edit: impl FnOnce(&mut Vec<(String, Vec<String>, usize)>)) -> Vec<VerifyFault> {
    let dir = tempfile::tempdir().unwrap();
    let mutant = dir.path().join("mutant.bin");
    rewrite(&repo_root().join(format!("datasets/{name}.bin")), &mutant, edit);
    verify_tasks(find(name).unwrap(), TaskFile::open(&mutant).unwrap().tasks(), &local_source(name), &mut |_| {}).unwrap()
}

#[test]
fn verify_catches_a_moved_label() {
    let found = verify_mutant("arc-easy-validation", |t| t[100].2 = (t[100].2 + 1) % t[100].1.len());
    assert!(matches!(found[..], [VerifyFault::Gold { task: 100, .. }]), "{found:?}");
}

#[test]
fn verify_catches_one_changed_byte_in_an_option() {
    let found = verify_mutant("arc-easy-validation", |t| {
        let option = &mut t[7].1[2];
        let first = option.remove(0);
        option.insert(0, if first == 'x' { 'y' } else { 'x' });
    });
    assert!(matches!(found[..], [VerifyFault::Options { task: 7, .. }]), "{found:?}");
}

#[test]
fn verify_catches_two_swapped_tasks() {
    let found = verify_mutant("mmlu-validation", |t| t.swap(10, 11));
    let tasks: Vec<usize> = found.iter().filter_map(|m| if let VerifyFault::Question { task } = m { Some(*task) } else { None }).collect();
    assert_eq!(tasks, [10, 11], "{found:?}");
}

#[test]
fn verify_catches_a_dropped_task() {
    let found = verify_mutant("arc-challenge-validation", |t| {
        t.remove(50);
    });
    assert!(found.contains(&VerifyFault::TaskCount { expected: 299, found: 298 }), "{found:?}");
    assert!(found.contains(&VerifyFault::Question { task: 50 }), "{found:?}");
}

#[test]
fn verify_catches_reordered_letter_options() {
    let found = verify_mutant("mmlu-validation", |t| t[3].1.swap(0, 1));
    assert!(matches!(&found[..], [VerifyFault::LetterOptions { task: 3, found }, ..] if found[0] == "B"), "{found:?}");
}

#[test]
fn verify_catches_a_source_of_another_revision() {
    // Another revision of the source: one answer key changed in a copy.
    let name = "arc-easy-validation";
    let original = sources_root().join(find(name).unwrap().local.unwrap());
    let text = std::fs::read_to_string(&original).unwrap();
    let changed = text.replacen("\"answerKey\":\"A\"", "\"answerKey\":\"B\"", 1);
    assert_ne!(text, changed);
    let dir = tempfile::tempdir().unwrap();
    let other = dir.path().join("ARC-Easy_validation.jsonl");
    std::fs::write(&other, changed).unwrap();
    let sources = vec![Source::local(&other, find(name).unwrap().local.unwrap())];
    let file = TaskFile::open(repo_root().join(format!("datasets/{name}.bin"))).unwrap();
    let found = verify_tasks(find(name).unwrap(), file.tasks(), &sources, &mut |_| {}).unwrap();
    assert!(matches!(found[..], [VerifyFault::Gold { task: 0, expected: 1, found: Some(0) }]), "{found:?}");
    let recorded = Manifest::load(&repo_root().join("manifest.json")).unwrap();
    let recorded = &recorded.entry(name).unwrap().source.files[0].sha256;
    assert_ne!(&mcscore_datasets::source_sha256(&other).unwrap(), recorded, "the manifest's source sha256 tells the revisions apart");
}

#[test]
fn committed_letter_files_parse_back_to_their_source_items() {
    use mcscore_datasets::formats::parse_letter_task;
    for name in ["mmlu-validation", "commonsense-qa-validation", "medqa-test", "careqa-en-test"] {
        let file = TaskFile::open(repo_root().join(format!("datasets/{name}.bin"))).unwrap();
        let items = load_items(find(name).unwrap(), &local_source(name)).unwrap();
        for (i, (task, item)) in file.tasks().zip(&items).enumerate() {
            assert_eq!(parse_letter_task(&task).as_ref(), Some(item), "{name} task {i}");
        }
    }
    // A text-mode file is refused.
    let text = TaskFile::open(repo_root().join("datasets/arc-easy-validation.bin")).unwrap();
    assert!(parse_letter_task(&text.task(0)).is_none());
}

/// The committed k-shot file rebuilds byte for byte from its two sources, its
/// preamble is MMLU's (header, then the subject's dev examples in order), and
/// verify re-derives it and catches a changed example.
#[test]
fn five_shot_mmlu_rebuilds_and_verifies() {
    let manifest = Manifest::load(&repo_root().join("manifest.json")).unwrap();
    let committed = manifest.entry("mmlu-validation-5shot").expect("mmlu-validation-5shot in manifest.json");
    let shots = committed.shots.as_ref().unwrap();
    assert_eq!((shots.of.as_str(), shots.k, shots.seed, shots.from.split.as_str()), ("mmlu-validation", 5, None, "dev"));
    let dir = tempfile::tempdir().unwrap();
    let benchmark = find("mmlu-validation").unwrap();
    let (sources, dev) = (local_source("mmlu-validation"), local_source("mmlu-dev"));
    let entry = build_with_shots(benchmark, &sources, &dev, 5, None, dir.path(), &committed.file, &mut |_| {}).unwrap();
    assert_eq!(&entry, committed);

    let bytes = std::fs::read(repo_root().join(&committed.file)).unwrap();
    let file = TaskFile::open(repo_root().join(&committed.file)).unwrap();
    let mut tasks: Vec<Task<'_>> = file.tasks().collect();
    let dev_items = load_items(find("mmlu-dev").unwrap(), &dev).unwrap();
    let first = &tasks[0].question;
    assert!(first.starts_with("The following are multiple choice questions (with answers) about abstract algebra.\n\nQuestion: "));
    assert!(first.contains(&format!("Question: {}\n", dev_items[4].stem)) && !first.contains(&dev_items[5].stem));
    assert_eq!(first.matches("\nAnswer: ").count(), 5, "five solved examples");
    assert_eq!(verify_entry(committed, &bytes, tasks.iter().cloned(), &sources, &dev, &mut |_| {}).unwrap(), vec![]);

    // One example's answer changed in one task: that task's question differs.
    let changed = tasks[3].question.replacen("Answer: B", "Answer: C", 1);
    tasks[3] = Task::new(&changed, tasks[3].options().to_vec(), tasks[3].gold().unwrap());
    let found = verify_entry(committed, &bytes, tasks.iter().cloned(), &sources, &dev, &mut |_| {}).unwrap();
    assert!(matches!(found[..], [VerifyFault::Question { task: 3 }]), "{found:?}");
}

#[test]
fn seeded_shots_are_shared_by_every_task_and_bad_requests_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let benchmark = find("commonsense-qa-validation").unwrap();
    let (sources, train) = (local_source("commonsense-qa-validation"), local_source("commonsense-qa-train"));
    let entry = build_with_shots(benchmark, &sources, &train, 3, Some(9), dir.path(), "x.bin", &mut |_| {}).unwrap();
    assert_eq!((entry.name.as_str(), entry.shots.as_ref().unwrap().seed), ("commonsense-qa-validation-3shot", Some(9)));
    let file = TaskFile::open(dir.path().join("commonsense-qa-validation-3shot.bin")).unwrap();
    let preamble = |q: &str| q[..q.rfind("Question: ").unwrap()].to_owned();
    let tasks: Vec<Task<'_>> = file.tasks().collect();
    assert_eq!(preamble(tasks[0].question).matches("\nAnswer: ").count(), 3);
    assert!(tasks.iter().all(|t| preamble(t.question) == preamble(tasks[0].question)), "one draw for every task");
    let other = build_with_shots(benchmark, &sources, &train, 3, Some(10), dir.path(), "x.bin", &mut |_| {}).unwrap();
    assert_ne!(other.sha256, entry.sha256, "another seed, other shots");

    let refused = |name: &str, k: usize, seed: Option<u64>| match build_with_shots(
        find(name).unwrap(),
        &local_source(name),
        &train,
        k,
        seed,
        dir.path(),
        "y.bin",
        &mut |_| {},
    ) {
        Err(DatasetError::Shots(e)) => e,
        other => panic!("{name}: {other:?}"),
    };
    assert!(matches!(refused("arc-easy-validation", 5, None), ShotError::NoSplit { .. }));
    assert!(matches!(refused("commonsense-qa-validation", 0, None), ShotError::Zero { .. }));
    let mmlu = |k, seed| {
        build_with_shots(
            find("mmlu-validation").unwrap(),
            &local_source("mmlu-validation"),
            &local_source("mmlu-dev"),
            k,
            seed,
            dir.path(),
            "z.bin",
            &mut |_| {},
        )
    };
    assert!(matches!(mmlu(6, None), Err(DatasetError::Shots(ShotError::TooFewInGroup { task: 0, available: 5, k: 6, .. }))));
    assert!(matches!(mmlu(5, Some(1)), Err(DatasetError::Shots(ShotError::SeedNotApplicable { .. }))));
}
