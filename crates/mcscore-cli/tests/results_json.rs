//! The results JSON (`score`, `merge`, `report --json`) against its
//! published schemas (docs/schema, checked by Python's jsonschema from PyPI):
//! fractions, objects keyed by metric name, the version, and no f32 noise.

mod common;

use std::path::Path;

use common::{model, path_str, reference, repo, run, schema_complaints, stderr, stdout, tempdir};
use serde_json::{json, Value};

fn json_of(args: &[&str]) -> Value {
    let out = run(args);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    serde_json::from_str(&stdout(&out)).unwrap()
}

/// Whether `x` is what an f32 reads as, written shortest: no f32 rounding
/// noise (0.20000000298023224) past its digits.
fn clean(x: f64) -> bool {
    format!("{}", x as f32).parse::<f64>().ok() == Some(x)
}

#[test]
fn results_json_follows_its_schema() {
    let dir = tempdir();
    let (model, file) = (model(), reference("mc_text5.bin"));
    let log = dir.path().join("run.jsonl");
    let base = ["score", "-m", &model, &file, "--limit", "10", "--pmi", "--progress", "none"];
    let score = json_of(&[&base[..], &["--json", "--timings", "--log-samples", path_str(&log)]].concat());
    assert_eq!(schema_complaints("score.schema.json", &score), Vec::<String>::new(), "{score:#}");
    assert_eq!(score["schema_version"], 3);
    // Fractions, from counts: 5 options everywhere is a chance of exactly 0.2.
    assert_eq!(score["chance"], json!(0.2));
    for (name, m) in score["metrics"].as_object().unwrap() {
        assert_eq!(m["accuracy"].as_f64().unwrap(), m["correct"].as_f64().unwrap() / 10.0, "{name}");
    }

    // A random pick of tasks records its size as the selection.
    let picked = json_of(&["score", "-m", &model, &file, "--multiple-choice-tasks", "6", "--json", "--progress", "none"]);
    assert_eq!(picked["selection"], 6);
    assert_eq!(schema_complaints("score.schema.json", &picked), Vec::<String>::new(), "{picked:#}");

    // Shards merged: the same shape, with the shard count and the log.
    let shards: Vec<_> = (0..2).map(|k| dir.path().join(format!("s{k}.jsonl"))).collect();
    for (k, shard) in shards.iter().enumerate() {
        let out = run(&[&base[..], &["--shard", &format!("{k}/2"), "--log-samples", path_str(shard)]].concat());
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let merged = json_of(&["merge", path_str(&shards[0]), path_str(&shards[1]), "--json"]);
    assert_eq!(schema_complaints("score.schema.json", &merged), Vec::<String>::new(), "{merged:#}");
    assert_eq!(merged["metrics"], score["metrics"]);

    let report = json_of(&["report", path_str(&log), "--json", "--resamples", "200"]);
    assert_eq!(schema_complaints("report.schema.json", &report), Vec::<String>::new(), "{report:#}");
    let m = &report["models"][0];
    assert_eq!(m["normalisations"]["acc_norm"]["mean"], score["metrics"]["acc_norm"]["accuracy"]);
    for group in ["normalisations", "schemes"] {
        for (name, e) in m[group].as_object().unwrap() {
            for bound in ["low", "high"] {
                let x = e[bound].as_f64().unwrap();
                assert!(clean(x), "{group}.{name}.{bound} = {x} carries f32 noise");
            }
        }
    }

    // The schemas can fail: version 1's shapes are refused.
    let mut old = score.clone();
    old["metrics"]["acc"]["accuracy"] = json!(40.0);
    old["chance"] = json!(20.0);
    let said = schema_complaints("score.schema.json", &old);
    assert!(said.iter().any(|c| c.starts_with("metrics/acc/accuracy:")) && said.iter().any(|c| c.starts_with("chance:")), "{said:?}");
    let mut old = report.clone();
    old["models"][0]["normalisations"] = json!([["acc", {"mean": 40.0, "low": 10.0, "high": 70.0}]]);
    assert!(!schema_complaints("report.schema.json", &old).is_empty());
    let mut unknown = score;
    unknown["accuracy_percent"] = json!(50.0);
    assert!(schema_complaints("score.schema.json", &unknown).iter().any(|c| c.contains("accuracy_percent")));
    assert!(Path::new(&repo("docs/formats.md")).exists());
}
