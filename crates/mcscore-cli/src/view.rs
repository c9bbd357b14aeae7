//! `mcscore view`: one self-contained HTML page of runs, their comparison
//! and sweeps. The values come from `mcscore_eval::view`; this module only
//! lays them out: the page's data, plots, script and styles are inline, and
//! its Content-Security-Policy lets it load nothing and run no script but
//! its own.

use std::path::{Path, PathBuf};

use std::io::Write as _;

use anyhow::Context;
use base64::Engine as _;
use mcscore_eval::compare::CompareOptions;
use mcscore_eval::report::ReportOptions;
use mcscore_eval::run::Run;
use mcscore_eval::view::{self, Page, PageSpec};
use sha2::{Digest, Sha256};

use crate::normalisation::NormArg;
use crate::output::{self, Target};
use crate::{plots, Outcome};

const SCRIPT: &str = include_str!("view/view.js");
const STYLE: &str = include_str!("view/view.css");

/// Write one HTML page to read runs, their comparison and sweeps: the
/// scoreboard, the paired comparison with a flip matrix whose cells link to
/// their tasks, a task browser (search, filters, sort by margin or KL, j/k to
/// step, the URL fragment keeps the selection) and the sweep's heat map, rank
/// reversals and position bias.
///
/// The page is one file with everything inline; it makes no network request
/// and works from file:// offline. Task text is read from the task file the
/// logs name (or --task-file) and always shown as text.
#[derive(clap::Args)]
#[command(
    after_help = "Examples:\n  mcscore view q4_k_m.jsonl q8_0.jsonl q2_k.jsonl -o quants.html\n  mcscore view --base q4_k_m.jsonl q2_k.jsonl --sweep sweep.json -o page.html\n  mcscore view --sweep a.json b.json -o sweeps.html"
)]
#[command(group(clap::ArgGroup::new("input").required(true).multiple(true).args(["logs", "base", "sweep", "schemes"])))]
pub(crate) struct Args {
    /// --log-samples files of one task file, written by `mcscore score`; with
    /// two or more, the first is BASE and every other is compared with it.
    #[arg(value_name = "LOG.jsonl")]
    logs: Vec<PathBuf>,
    /// The BASE run the LOGs are compared with (instead of the first LOG).
    #[arg(long, value_name = "BASE.jsonl")]
    base: Option<PathBuf>,
    /// Sweeps saved by `mcscore sweep --save-json`, shown side by side.
    #[arg(long, value_name = "SWEEP.json", num_args = 1..)]
    sweep: Vec<PathBuf>,
    /// Complete logs of `mcscore schemes` (one per model, of the same tasks):
    /// the prompted schemes' tables and rankings.
    #[arg(long, value_name = "LOG", num_args = 1..)]
    schemes: Vec<PathBuf>,
    /// The page to write (HTML).
    #[arg(short = 'o', long = "out", value_name = "PAGE.html")]
    out: PathBuf,
    /// Replace PAGE.html if it exists (a regular file only).
    #[arg(long)]
    force: bool,
    /// The task file the logs scored, for the tasks' text (default: the path
    /// their header records). Checked by its sha256.
    #[arg(long, value_name = "FILE")]
    task_file: Option<PathBuf>,
    /// The normalisation whose picks are right or wrong, compared, and sorted by margin.
    #[arg(long, value_enum, default_value = "acc-norm")]
    normalisation: NormArg,
    /// The comparison's equivalence margin in accuracy points (as `compare --margin`).
    #[arg(long, value_name = "POINTS", default_value_t = 1.0, value_parser = crate::numbers::margin())]
    margin: f64,
    /// The error rate of each verdict (as `compare --alpha`).
    #[arg(long, value_name = "A", default_value_t = 0.05, value_parser = crate::numbers::alpha())]
    alpha: f64,
    /// Bootstrap resamples of the report and the comparison, 100 to 100,000.
    #[arg(long, value_name = "N", default_value_t = 1000, value_parser = crate::numbers::whole(100u32, 100_000))]
    resamples: u32,
    /// Bootstrap seed.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = crate::numbers::at_least(0u64))]
    seed: u64,
    /// The tasks' groups, one line per task of the task file (as `compare --groups`).
    #[arg(long, value_name = "FILE")]
    groups: Option<PathBuf>,
    /// The manifest to look the task file's groups up in (by sha256). Default:
    /// a manifest.json in the task file's folder or a folder above it, then
    /// the working directory's, then mcscore's bundled one.
    #[arg(long, value_name = "FILE", conflicts_with = "groups")]
    manifest: Option<PathBuf>,
}

pub(crate) fn run(args: Args) -> anyhow::Result<Outcome> {
    let paths: Vec<&Path> = args.base.iter().chain(&args.logs).map(PathBuf::as_path).collect();
    let runs = paths.iter().map(|p| Run::read(p)).collect::<Result<Vec<_>, _>>()?;
    // Every file read, the task files the logs name among them: none may be
    // replaced by the page, --force or not.
    let named: Vec<PathBuf> = runs.iter().map(|r| PathBuf::from(&r.header.file)).collect();
    let found = named.first().map(|file| mcscore_eval::groups::found_manifests(file)).unwrap_or_default();
    let inputs: Vec<&Path> = paths
        .iter()
        .copied()
        .chain(args.sweep.iter().map(PathBuf::as_path))
        .chain(args.schemes.iter().map(PathBuf::as_path))
        .chain(args.task_file.as_deref())
        .chain(args.groups.as_deref())
        .chain(args.manifest.as_deref())
        .chain(named.iter().map(PathBuf::as_path))
        .chain(found.iter().map(PathBuf::as_path))
        .collect();
    output::check_file(&Target::new(&args.out, "-o", args.force), &inputs)?;
    let groups = match runs.first() {
        Some(base) => crate::compare::groups_from(
            args.groups.as_deref(),
            args.manifest.as_deref(),
            Path::new(&base.header.file),
            &base.header.file_sha256,
            base.header.file_tasks(),
        )?,
        None => None,
    };
    let sweep = (!args.sweep.is_empty()).then(|| mcscore_eval::sweep::merge_saved(&args.sweep)).transpose()?;
    let mut spec = PageSpec::new(&runs);
    spec.task_file = args.task_file.as_deref();
    spec.groups = groups.as_ref();
    spec.compare = CompareOptions::new(
        args.normalisation.into(),
        crate::numbers::points_as_fraction(args.margin),
        args.alpha,
        args.resamples,
        args.seed,
    );
    spec.report =
        ReportOptions { normalisation: args.normalisation.into(), resamples: args.resamples, seed: args.seed, ..ReportOptions::default() };
    spec.sweep = sweep;
    if !args.schemes.is_empty() {
        let runs = args.schemes.iter().map(|p| mcscore_eval::schemes::read_log(p)).collect::<Result<Vec<_>, _>>()?;
        spec.schemes = Some(mcscore_eval::schemes::report::build(&runs, args.resamples as usize, args.seed)?);
    }
    let page = view::build(spec)?;
    let html = html(&page)?;
    let existing = if args.force { mcscore_format::Existing::Replace } else { mcscore_format::Existing::Refuse };
    let mut file = mcscore_format::AtomicFile::with(&args.out, existing)?;
    file.write_all(html.as_bytes()).with_context(|| args.out.display().to_string())?;
    file.commit()?;
    let tasks = page.tasks.index.len();
    let runs = page.runs.len();
    outln!(
        "{}: {tasks} tasks, {runs} runs{}, {} bytes",
        args.out.display(),
        page.sweep.as_ref().map_or(String::new(), |s| format!(", a sweep of {} models", s.models.len())),
        html.len()
    )?;
    Ok(Outcome::Ok)
}

/// An SVG as an image the page can show (an `<img>` runs no script).
fn data_uri(svg: &str) -> String {
    format!("data:image/svg+xml;base64,{}", base64::engine::general_purpose::STANDARD.encode(svg))
}

/// The page's plots, grouped as its script shows them.
#[derive(serde::Serialize)]
struct PagePlots {
    /// Per report: a reliability diagram per model (and the rank heat map).
    reliability: Vec<Vec<String>>,
    /// Per OTHER: its flip matrix, KL histogram and group differences.
    pairs: Vec<Vec<String>>,
    /// Every OTHER's differences and accuracies.
    comparison: Vec<String>,
    sweep: Vec<String>,
}

fn page_plots(page: &Page) -> anyhow::Result<PagePlots> {
    let uris = |plots: plots::Plots| plots.iter().map(|(_, svg)| data_uri(svg)).collect::<Vec<_>>();
    let mut out = PagePlots { reliability: Vec::new(), pairs: Vec::new(), comparison: Vec::new(), sweep: Vec::new() };
    for report in &page.reports {
        out.reliability.push(uris(plots::report(report)?));
    }
    if let Some(c) = &page.comparison {
        for i in 0..c.others.len() {
            out.pairs.push(uris(plots::pair(c, i)?));
        }
        out.comparison = uris(plots::overall(c)?);
    }
    if let Some(sweep) = &page.sweep {
        out.sweep = uris(plots::sweep(sweep)?);
    }
    Ok(out)
}

/// JSON that may sit inside a `<script>` element: no `<`, `>` or `&` is
/// left for the HTML parser to read (`</script>` in a task's text stays text).
fn script_json(value: &impl serde::Serialize) -> anyhow::Result<String> {
    let json = serde_json::to_string(value)?;
    Ok(json.replace('<', "\\u003c").replace('>', "\\u003e").replace('&', "\\u0026"))
}

fn csp_hash(text: &str) -> String {
    format!("'sha256-{}'", base64::engine::general_purpose::STANDARD.encode(Sha256::digest(text.as_bytes())))
}

fn escape_html(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// The page: data, plots, script and styles inline; the policy allows only
/// this script and these styles to run, and images only from data: URIs.
fn html(page: &Page) -> anyhow::Result<String> {
    let data = script_json(page)?;
    let plots = script_json(&page_plots(page)?)?;
    let title = format!("mcscore view: {}", page.file.as_deref().or(page.schemes.as_ref().map(|s| s.file.as_str())).unwrap_or("sweep"));
    Ok(format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src {script_hash}; style-src {style_hash}; img-src data:; base-uri 'none'; form-action 'none'\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{title}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n\
         <header><h1 id=\"title\"></h1><div id=\"answer\"></div><nav id=\"nav\"></nav></header>\n\
         <main>\n<section id=\"scores\" hidden></section>\n<section id=\"compare\" hidden></section>\n\
         <section id=\"tasks\" hidden><div id=\"controls\"></div><div id=\"browser\"><ol id=\"task-list\"></ol><div id=\"task-detail\"></div></div></section>\n\
         <section id=\"sweep\" hidden></section>\n<section id=\"schemes\" hidden></section>\n</main>\n\
         <script id=\"mcscore-data\" type=\"application/json\">{data}</script>\n\
         <script id=\"mcscore-plots\" type=\"application/json\">{plots}</script>\n\
         <script>{SCRIPT}</script>\n</body>\n</html>\n",
        script_hash = csp_hash(SCRIPT),
        style_hash = csp_hash(STYLE),
        title = escape_html(&title),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_in_a_script_element_cannot_close_it() {
        let json = script_json(&"</script><script>alert(1)</script> & <!--").unwrap();
        assert!(!json.contains('<') && !json.contains('>') && !json.contains('&'), "{json}");
        let back: String = serde_json::from_str(&json).unwrap();
        assert_eq!(back, "</script><script>alert(1)</script> & <!--");
    }
}
