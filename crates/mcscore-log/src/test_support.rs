//! Logs for the unit tests: a header, and a log's text as this mcscore or an
//! older one wrote it.

use mcscore_metrics::OptionScore;

use crate::header::{Header, Sequential, TaskKind, LOG_VERSION};
use crate::read::Line;
use crate::record::TaskRecord;

pub(crate) fn header(sequential: bool) -> Header {
    Header {
        version: LOG_VERSION,
        mcscore: "test".into(),
        model: "m".into(),
        model_sha256: "m".into(),
        model_sha256_cached: false,
        model_bytes: 1,
        file: "f".into(),
        file_sha256: "f".into(),
        file_bytes: 1,
        tasks: 3,
        selection: None,
        limit: None,
        limit_per_group: false,
        mode: TaskKind::MultipleChoice,
        lenient: false,
        pmi: false,
        kernels: "c=auto".into(),
        shard: None,
        sequential: sequential.then(|| Sequential {
            order_rule: "rule".into(),
            seed: 1,
            order_sha256: "o".into(),
            file_tasks: 3,
            chunk: 1,
            alpha: 0.05,
            margin: 0.01,
            normalisation: "acc_norm".into(),
            base_sha256: "m".into(),
            other_sha256: vec!["n".into()],
        }),
        chat: None,
        projector: None,
        images_sha256: None,
    }
}

pub(crate) fn log_text(header: &Header, tasks: usize, footer: &str) -> Vec<u8> {
    let mut text = serde_json::to_string(&Line::Header(Box::new(header.clone()))).unwrap() + "\n";
    for task in 0..tasks {
        let options = vec![OptionScore::new(-1.0, 1, 1, 1); 2];
        text += &(serde_json::to_string(&Line::Task(TaskRecord::new(task, options, vec![true, false]))).unwrap() + "\n");
    }
    (text + footer + "\n").into_bytes()
}

/// `log` with its header written as a version-`version` (< 4) mcscore
/// wrote it: the settings as words of one string, a margin in points.
pub(crate) fn as_version(log: Vec<u8>, version: u32) -> Vec<u8> {
    let text = String::from_utf8(log).unwrap();
    let (first, rest) = text.split_once('\n').unwrap();
    let mut header: serde_json::Value = serde_json::from_str(first).unwrap();
    let fields = header.as_object_mut().unwrap();
    let mode = fields.shift_remove("mode").unwrap();
    let mut words = vec![fields.shift_remove("kernels").unwrap().as_str().unwrap().to_owned()];
    words.extend((mode != "multiple-choice").then(|| mode.as_str().unwrap().to_owned()));
    for flag in ["lenient", "pmi"] {
        words.extend((fields.shift_remove(flag).unwrap() == true).then(|| flag.to_owned()));
    }
    fields.insert("settings".into(), words.join(" ").into());
    fields.insert("version".into(), version.into());
    if let Some(margin) = fields.get_mut("sequential").and_then(|s| s.get_mut("margin")) {
        *margin = (100.0 * margin.as_f64().unwrap()).into();
    }
    format!("{header}\n{rest}").into_bytes()
}
