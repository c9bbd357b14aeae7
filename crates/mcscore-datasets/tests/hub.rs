//! Hub loading cannot reach the hub here: its resolution is tested, and so is
//! its failure, which names the file and keeps the client's error as its
//! source (the command line adds how to build from a local copy instead).

use mcscore_datasets::{find, hub, DatasetError};
use mcscore_format::with_causes;

#[test]
fn pinned_benchmarks_resolve_to_files_at_their_revision() {
    let (repo, revision, files) = hub::resolve(find("arc-easy-validation").unwrap()).unwrap();
    assert_eq!(repo, "allenai/ai2_arc");
    assert_eq!(revision, "210d026faf9955653af8916fad021475a3f00453");
    assert_eq!(files, ["ARC-Easy/validation-00000-of-00001.parquet"]);
    assert_eq!(
        hub::url(repo, revision, files[0]),
        "hf://allenai/ai2_arc@210d026faf9955653af8916fad021475a3f00453/ARC-Easy/validation-00000-of-00001.parquet"
    );
}

#[test]
fn every_file_of_the_dataset_card_is_pinned_at_its_commit() {
    for (name, repo, revision) in [
        ("mmlu-test", "cais/mmlu", "c30699e8356da336a370243923dbaf21066bb9fe"),
        ("medqa-train", "GBaker/MedQA-USMLE-4-options", "0fb93dd23a7339b6dcd27e241cb9b5eca62d4d18"),
        ("careqa-es-test", "HPAI-BSC/CareQA", "1d976cc544ccb9dfc96e14439e6840e8a810cec5"),
        ("aqua-rat-train", "deepmind/aqua_rat", "33301c6a050c96af81f63cad5562cb5363e88971"),
        ("medconceptsqa-test", "ofir408/MedConceptsQA", "98c30d83762e51a397c9a7b0eeee6722e751da17"),
        ("boolq-train", "google/boolq", "35b264d03638db9f4ce671b711558bf7ff0f80d5"),
    ] {
        let resolved = hub::resolve(find(name).unwrap()).unwrap();
        assert_eq!((resolved.0, resolved.1), (repo, revision), "{name}");
    }
    assert_eq!(hub::resolve(find("careqa-es-test").unwrap()).unwrap().2, ["CareQA_es.json"]);
}

#[test]
fn a_path_not_confirmed_offline_says_so_when_its_download_fails() {
    std::env::set_var("HF_ENDPOINT", "http://127.0.0.1:9");
    let cache = tempfile::tempdir().unwrap();
    std::env::set_var("HF_HOME", cache.path());
    let benchmark = find("medconceptsqa-test").unwrap();
    assert!(!benchmark.hub.paths_confirmed);
    let message = with_causes(&hub::fetch(benchmark).unwrap_err());
    assert!(
        message.contains("hf://ofir408/MedConceptsQA@98c30d83762e51a397c9a7b0eeee6722e751da17/all/test-00000-of-00001.parquet"),
        "{message}"
    );
    assert!(message.contains("this path was not confirmed against the repository at that commit"), "{message}");
}

#[test]
fn unpinned_benchmarks_are_not_built_from_the_hub() {
    let error = hub::resolve(find("piqa-validation").unwrap()).unwrap_err();
    assert!(matches!(error, DatasetError::Unpinned { .. }));
    assert!(error.to_string().contains("build it from a local copy of its files"), "{error}");
}

#[test]
fn an_unreachable_hub_fails_with_a_way_out() {
    // A closed local port: refused at once, nothing leaves the machine.
    std::env::set_var("HF_ENDPOINT", "http://127.0.0.1:9");
    let cache = tempfile::tempdir().unwrap();
    std::env::set_var("HF_HOME", cache.path());
    let error = hub::fetch(find("boolq-validation").unwrap()).unwrap_err();
    let message = with_causes(&error);
    assert!(matches!(error, DatasetError::Hub { .. }), "{message}");
    assert!(
        message.contains("hf://google/boolq@35b264d03638db9f4ce671b711558bf7ff0f80d5/data/validation-00000-of-00001.parquet"),
        "{message}"
    );
    assert!(std::error::Error::source(&error).is_some(), "the client's error is kept");
}
