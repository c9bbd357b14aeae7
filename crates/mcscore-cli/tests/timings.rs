//! `score --timings`: where a run's time went, phase by phase, on stderr and
//! in --json; the phases add up to the run's wall time.

mod common;

use common::*;

#[test]
fn timings_account_for_the_run() {
    let model = model();
    let file = reference("mc_letter4.bin");
    let out = run(&["score", "-m", &model, &file, "--multiple-choice-tasks", "30", "-t", "2", "--timings", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    for phase in ["load model", "tokenise", "create context", "decode", "logits, log-softmax", "total", "tokens/s of decode time"] {
        assert!(err.contains(phase), "{phase} missing: {err}");
    }
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let t = &json["timings"];
    let s = &t["scoring"];
    let parts: f64 =
        ["read", "load", "tokenise", "plan", "hash", "log", "unconditional"].iter().map(|k| t[k].as_f64().unwrap()).sum::<f64>()
            + ["context", "batching", "decode", "logits", "consumer"].iter().map(|k| s[k].as_f64().unwrap()).sum::<f64>();
    let total = t["total"].as_f64().unwrap();
    assert!(parts <= total * 1.001 && parts >= total * 0.9, "phases {parts} s of {total} s");
    assert!(s["decode"].as_f64().unwrap() > 0.0 && s["decodes"].as_u64().unwrap() >= 1);
    assert_eq!(s["fills"].as_u64(), json["decodes"].as_u64(), "one fill per planned decode here");
    // Without --timings, no profile.
    let plain = run(&["score", "-m", &model, &file, "--multiple-choice-tasks", "5", "-t", "2", "--json"]);
    let json: serde_json::Value = serde_json::from_str(&stdout(&plain)).unwrap();
    assert!(json["timings"].is_null() && !stderr(&plain).contains("timings ("));
}
