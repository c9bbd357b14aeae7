//! Reads the formats Hugging Face datasets come in into JSON records, one per
//! row, so that every builder maps one shape whatever the file was: Parquet
//! (what the hub publishes), Arrow IPC streams (`save_to_disk` and cache
//! files), JSON Lines, JSON (an array of records or an object of records) and
//! CSV/TSV.

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use arrow::array::RecordBatch;
use serde_json::{Map, Value};

use crate::DatasetError;

/// The format of a source file, from its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceFormat {
    Parquet,
    ArrowStream,
    JsonLines,
    Json,
    Csv,
    Tsv,
}

impl SourceFormat {
    pub fn of(path: &Path) -> Option<SourceFormat> {
        let name = path.file_name()?.to_str()?;
        let ext = name.rsplit('.').next()?;
        Some(match ext {
            "parquet" => SourceFormat::Parquet,
            "arrow" => SourceFormat::ArrowStream,
            "jsonl" => SourceFormat::JsonLines,
            "json" => SourceFormat::Json,
            "csv" => SourceFormat::Csv,
            "tsv" => SourceFormat::Tsv,
            _ => return None,
        })
    }
}

fn error(path: &Path, cause: impl Into<crate::Cause>) -> DatasetError {
    DatasetError::Source { path: path.to_owned(), source: cause.into() }
}

/// Every row of a source file, in file order. A `save_to_disk` folder is read
/// through its `data-*.arrow` files in name order.
pub fn read_records(path: &Path) -> Result<Vec<Value>, DatasetError> {
    if path.is_dir() {
        let mut shards: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(|e| error(path, e))?
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .filter(|p| SourceFormat::of(p) == Some(SourceFormat::ArrowStream))
            .collect();
        shards.sort();
        if shards.is_empty() {
            return Err(error(path, "folder holds no .arrow files (expected a datasets save_to_disk folder)"));
        }
        let mut rows = Vec::new();
        for shard in shards {
            rows.extend(read_records(&shard)?);
        }
        return Ok(rows);
    }
    let format = SourceFormat::of(path)
        .ok_or_else(|| error(path, "unknown source format (expected .parquet, .arrow, .jsonl, .json, .csv or .tsv)"))?;
    let open = || File::open(path).map_err(|e| error(path, e));
    match format {
        SourceFormat::Parquet => {
            let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(open()?)
                .and_then(|b| b.build())
                .map_err(|e| error(path, e))?;
            let batches = reader.collect::<Result<Vec<_>, _>>().map_err(|e| error(path, e))?;
            batches_to_json(path, &batches)
        }
        SourceFormat::ArrowStream => {
            let reader = arrow::ipc::reader::StreamReader::try_new(BufReader::new(open()?), None).map_err(|e| error(path, e))?;
            let batches = reader.collect::<Result<Vec<_>, _>>().map_err(|e| error(path, e))?;
            batches_to_json(path, &batches)
        }
        SourceFormat::JsonLines => {
            let text = std::fs::read_to_string(path).map_err(|e| error(path, e))?;
            text.lines()
                .enumerate()
                .filter(|(_, line)| !line.trim().is_empty())
                .map(|(n, line)| serde_json::from_str(line).map_err(|e| error(path, SourceLine { line: n + 1, source: e })))
                .collect()
        }
        SourceFormat::Json => {
            // `.json` files in the wild hold one array or object of records,
            // or are JSON Lines under another name (AQuA-RAT's are).
            let text = std::fs::read_to_string(path).map_err(|e| error(path, e))?;
            let values = serde_json::Deserializer::from_str(&text)
                .into_iter::<Value>()
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| error(path, e))?;
            match <[Value; 1]>::try_from(values) {
                Ok([Value::Array(rows)]) => Ok(rows),
                // An object of records keyed by id: keep the key as "_key".
                Ok([Value::Object(map)]) if map.values().all(Value::is_object) => Ok(map
                    .into_iter()
                    .map(|(key, mut row)| {
                        if let Value::Object(fields) = &mut row {
                            fields.insert("_key".into(), Value::String(key));
                        }
                        row
                    })
                    .collect()),
                Ok([single]) => Ok(vec![single]),
                Err(rows) => Ok(rows),
            }
        }
        SourceFormat::Csv | SourceFormat::Tsv => {
            let delimiter = if format == SourceFormat::Tsv { b'\t' } else { b',' };
            let mut reader = csv::ReaderBuilder::new().delimiter(delimiter).from_reader(open()?);
            let headers = reader.headers().map_err(|e| error(path, e))?.clone();
            reader
                .records()
                .map(|record| {
                    let record = record.map_err(|e| error(path, e))?;
                    Ok(Value::Object(
                        headers.iter().zip(record.iter()).map(|(h, v)| (h.to_owned(), Value::String(v.to_owned()))).collect::<Map<_, _>>(),
                    ))
                })
                .collect()
        }
    }
}

fn batches_to_json(path: &Path, batches: &[RecordBatch]) -> Result<Vec<Value>, DatasetError> {
    let mut writer = arrow::json::ArrayWriter::new(Vec::new());
    let refs: Vec<&RecordBatch> = batches.iter().collect();
    writer.write_batches(&refs).map_err(|e| error(path, e))?;
    writer.finish().map_err(|e| error(path, e))?;
    let bytes = writer.into_inner();
    if bytes.is_empty() {
        return Ok(Vec::new());
    }
    serde_json::from_slice(&bytes).map_err(|e| error(path, e))
}

/// A JSON Lines line that does not parse.
#[derive(Debug, thiserror::Error)]
#[error("line {line}: {source}")]
struct SourceLine {
    line: usize,
    #[source]
    source: serde_json::Error,
}
