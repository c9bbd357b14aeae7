//! Fetching a benchmark's files from the Hugging Face hub at its pinned
//! revision (hf-hub, cached in the usual hub cache). Unreachable hosts and
//! unpinned entries fail with a message that says how to build from a local
//! copy instead.

use std::path::PathBuf;

use hf_hub::{Repo, RepoType};

use crate::benchmarks::Benchmark;
use crate::DatasetError;

/// What a hub build would download: `(repo, revision, files)`.
pub fn resolve(benchmark: &Benchmark) -> Result<(&'static str, &'static str, &'static [&'static str]), DatasetError> {
    let revision = benchmark
        .hub
        .revision
        .ok_or_else(|| DatasetError::Unpinned { name: benchmark.name.to_owned(), repo: benchmark.hub.repo.to_owned() })?;
    Ok((benchmark.hub.repo, revision, benchmark.hub.files))
}

/// `hf://REPO@REVISION/PATH`, as the manifest records hub files.
pub fn url(repo: &str, revision: &str, file: &str) -> String {
    format!("hf://{repo}@{revision}/{file}")
}

/// Downloads (or finds in the hub cache) every file of `benchmark`.
pub fn fetch(benchmark: &Benchmark) -> Result<Vec<(String, PathBuf)>, DatasetError> {
    let (repo, revision, files) = resolve(benchmark)?;
    let api = hf_hub::api::sync::ApiBuilder::from_env().with_progress(false).build().map_err(|source| DatasetError::Hub {
        name: benchmark.name.to_owned(),
        url: format!("hf://{repo}@{revision}"),
        unconfirmed: false,
        source: Box::new(source),
    })?;
    let repo_api = api.repo(Repo::with_revision(repo.to_owned(), RepoType::Dataset, revision.to_owned()));
    files
        .iter()
        .map(|file| {
            repo_api.get(file).map(|path| (url(repo, revision, file), path)).map_err(|source| DatasetError::Hub {
                name: benchmark.name.to_owned(),
                url: url(repo, revision, file),
                unconfirmed: !benchmark.hub.paths_confirmed,
                source: Box::new(source),
            })
        })
        .collect()
}
