//! The response parser against inspect_ai's own (`parse_answers` of its
//! multiple-choice solver, 0.3.285, run in Python from its wheel's source by
//! crates/mcscore-cli/tests/python/schemes_reference.py): the same letters
//! from every response of a corpus of edge cases.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use mcscore_eval::schemes::parse::{answers, letter};
use serde_json::{json, Value};

fn repo(relative: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").join(relative)
}

/// inspect_ai's letters for each (completion, k, multiple).
fn inspect(cases: &[(String, usize, bool)]) -> Vec<Vec<String>> {
    let setup = Command::new(repo("scripts/setup-python-stats")).output().expect("scripts/setup-python-stats runs");
    assert!(setup.status.success(), "scripts/setup-python-stats failed: {}", String::from_utf8_lossy(&setup.stderr));
    let folder = PathBuf::from(String::from_utf8(setup.stdout).unwrap().trim()).join("inspect-ai-0.3.285");
    let mut child = Command::new("python3")
        .arg(repo("crates/mcscore-cli/tests/python/schemes_reference.py"))
        .arg(folder)
        .arg("parse")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let input: Vec<Value> = cases.iter().map(|(c, k, m)| json!({"completion": c, "k": k, "multiple": m})).collect();
    serde_json::to_writer(child.stdin.take().unwrap(), &input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "schemes_reference.py: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn every_response_gives_inspect_ais_letters() {
    let single = [
        "ANSWER: A",
        "ANSWER: b",
        "answer: C.",
        "ANSWER:D",
        "ANSWER : B",
        "  ANSWER: A",
        "The answer is B.\nANSWER: B",
        "ANSWER: A\nANSWER: C",
        "First I think ANSWER: A is wrong.\nANSWER: D",
        "I choose ANSWER: C because",
        "ANSWER: E",
        "ANSWER: A, B",
        "ANSWER: A,",
        "ANSWER: AB",
        "ANSWER: $B$",
        "ANSWER: $\\boxed{B}$",
        "ANSWER: **C**",
        "ANSWER: (D)",
        "ANSWER: (d).",
        "**ANSWER: A**",
        "ANSWER: A B",
        "ANSWER:",
        "ANSWER: \n",
        "no answer at all",
        "",
        "ANSWER: 1",
        "ANSWER: ABSTAIN",
        "ANSWER: A\nCONFIDENCE: 3",
        "ANSWER: A=0.5, B=0.5",
        "Answer: B\n\nExplanation: ANSWER: C is tempting",
        "ANSWER: é",
        "ANSWER:\tB",
        "ANSWER: B\r\n",
        "ANSWER: B; ANSWER: C",
        // Python's classes: a combining mark is no word character, U+001C a space.
        "ANSWER: B\u{301}",
        "ANSWER: B\u{1c}\n",
        "ANSWER:\u{1f}C",
        "ANSWER: \u{212a}",
        "ANSWER: \u{17f}",
        "ANSWER: ٣",
    ];
    let multiple = [
        "ANSWER: A, C",
        "ANSWER: C, A",
        "ANSWER: A and B",
        "ANSWER: ABD",
        "ANSWER: A, A",
        "ANSWER: A, E",
        "ANSWER: ,",
        "ANSWER: A,B,C,D",
        "ANSWER: b, d.",
        "ANSWER: (A), (B)",
        "ANSWER: A AND C",
        "nothing",
    ];
    let mut cases: Vec<(String, usize, bool)> = Vec::new();
    for k in [2, 4, 5] {
        cases.extend(single.iter().map(|c| (c.to_string(), k, false)));
        cases.extend(multiple.iter().map(|c| (c.to_string(), k, true)));
    }
    let theirs = inspect(&cases);
    for ((completion, k, multiple), theirs) in cases.iter().zip(theirs) {
        let mine: Vec<String> = answers(completion, *k, *multiple).0.into_iter().map(letter).collect();
        assert_eq!(mine, theirs, "{completion:?} with {k} options, multiple {multiple}");
    }
}
