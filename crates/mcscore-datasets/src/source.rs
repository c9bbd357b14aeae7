//! Reads the formats Hugging Face datasets come in into JSON records, one per
//! row, so that every builder maps one shape whatever the file was: Parquet
//! (what the hub publishes), Arrow IPC streams (`save_to_disk` and cache
//! files), JSON Lines, JSON (an array of records or an object of records) and
//! CSV/TSV. Parquet and Arrow need the `sources` feature (arrow and parquet);
//! without it they are refused with an error that says so.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

#[cfg(feature = "sources")]
use arrow::array::RecordBatch;
use serde_json::{Map, Value};

use crate::json::Unique;
use crate::DatasetError;

/// The format of a source file, from its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceFormat {
    /// `.parquet`
    Parquet,
    /// `.arrow`: an Arrow IPC stream (`save_to_disk` shards, cache files).
    ArrowStream,
    /// `.jsonl`
    JsonLines,
    /// `.json`: an array or object of records, or JSON Lines.
    Json,
    /// `.csv`
    Csv,
    /// `.tsv`
    Tsv,
}

impl SourceFormat {
    /// The format `path`'s extension names, if any.
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

/// Every row of a source file, in file order (see [`for_each_record`]).
pub fn read_records(path: &Path) -> Result<Vec<Value>, DatasetError> {
    let mut rows = Vec::new();
    for_each_record(path, &mut |row| {
        rows.push(row);
        Ok(())
    })?;
    Ok(rows)
}

/// Hands every row of a source file to `each`, in file order, holding one
/// record batch (Parquet, Arrow) or one line (JSON Lines, CSV/TSV) at a time,
/// so a build's memory does not grow with the source. A JSON file is one
/// document and is read whole. A `save_to_disk` folder is read through its
/// `data-*.arrow` files in name order. The first error of `each` stops the
/// reading and is returned. Without the `sources` feature, Parquet and
/// Arrow files (so `save_to_disk` folders too) are refused.
pub fn for_each_record(path: &Path, each: &mut dyn FnMut(Value) -> Result<(), DatasetError>) -> Result<(), DatasetError> {
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
        for shard in shards {
            for_each_record(&shard, each)?;
        }
        return Ok(());
    }
    let format = SourceFormat::of(path)
        .ok_or_else(|| error(path, "unknown source format (expected .parquet, .arrow, .jsonl, .json, .csv or .tsv)"))?;
    let open = || File::open(path).map_err(|e| error(path, e));
    match format {
        #[cfg(not(feature = "sources"))]
        SourceFormat::Parquet | SourceFormat::ArrowStream => {
            Err(error(path, "reading Parquet and Arrow files needs mcscore-datasets' `sources` feature, which this build leaves out"))
        }
        #[cfg(feature = "sources")]
        SourceFormat::Parquet => {
            let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(open()?)
                .and_then(|b| b.build())
                .map_err(|e| error(path, e))?;
            for batch in reader {
                batch_to_json(path, &batch.map_err(|e| error(path, e))?, each)?;
            }
            Ok(())
        }
        #[cfg(feature = "sources")]
        SourceFormat::ArrowStream => {
            let reader = arrow::ipc::reader::StreamReader::try_new(BufReader::new(open()?), None).map_err(|e| error(path, e))?;
            for batch in reader {
                batch_to_json(path, &batch.map_err(|e| error(path, e))?, each)?;
            }
            Ok(())
        }
        SourceFormat::JsonLines => {
            let mut reader = BufReader::new(open()?);
            let mut line = String::new();
            for n in 1.. {
                line.clear();
                if reader.read_line(&mut line).map_err(|e| error(path, SourceLine { line: n, source: e.into() }))? == 0 {
                    break;
                }
                if !line.trim().is_empty() {
                    each(
                        serde_json::from_str(&line)
                            .map(|Unique(row)| row)
                            .map_err(|e| error(path, SourceLine { line: n, source: e.into() }))?,
                    )?;
                }
            }
            Ok(())
        }
        SourceFormat::Json => {
            // `.json` files in the wild hold one array or object of records,
            // or are JSON Lines under another name (AQuA-RAT's are).
            let text = std::fs::read_to_string(path).map_err(|e| error(path, e))?;
            let values = serde_json::Deserializer::from_str(&text)
                .into_iter::<Unique>()
                .map(|value| value.map(|Unique(v)| v))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| error(path, e))?;
            let rows = match <[Value; 1]>::try_from(values) {
                Ok([Value::Array(rows)]) => rows,
                // An object of records keyed by id: keep the key as "_key".
                Ok([Value::Object(map)]) if map.values().all(Value::is_object) => map
                    .into_iter()
                    .map(|(key, mut row)| {
                        if let Value::Object(fields) = &mut row {
                            fields.insert("_key".into(), Value::String(key));
                        }
                        row
                    })
                    .collect(),
                Ok([single]) => vec![single],
                Err(rows) => rows,
            };
            rows.into_iter().try_for_each(each)
        }
        SourceFormat::Csv | SourceFormat::Tsv => {
            let delimiter = if format == SourceFormat::Tsv { b'\t' } else { b',' };
            let mut reader = csv::ReaderBuilder::new().delimiter(delimiter).from_reader(BufReader::new(open()?));
            let headers = reader.headers().map_err(|e| error(path, e))?.clone();
            if let Some(column) =
                headers.iter().enumerate().find_map(|(i, h)| headers.iter().take(i).any(|earlier| earlier == h).then_some(h))
            {
                return Err(error(path, format!("the header names the column {column:?} twice: name each column once")));
            }
            for record in reader.records() {
                let record = record.map_err(|e| error(path, e))?;
                each(Value::Object(
                    headers.iter().zip(record.iter()).map(|(h, v)| (h.to_owned(), Value::String(v.to_owned()))).collect::<Map<_, _>>(),
                ))?;
            }
            Ok(())
        }
    }
}

/// Hands each row of one record batch to `each` as a JSON object.
#[cfg(feature = "sources")]
fn batch_to_json(path: &Path, batch: &RecordBatch, each: &mut dyn FnMut(Value) -> Result<(), DatasetError>) -> Result<(), DatasetError> {
    let mut writer = arrow::json::ArrayWriter::new(Vec::new());
    writer.write_batches(&[batch]).map_err(|e| error(path, e))?;
    writer.finish().map_err(|e| error(path, e))?;
    let bytes = writer.into_inner();
    if bytes.is_empty() {
        return Ok(());
    }
    // Unique: a schema may name a column twice, and its rows would then give
    // the key twice.
    let rows = match serde_json::from_slice(&bytes).map_err(|e| error(path, e))? {
        Unique(Value::Array(rows)) => rows,
        _ => return Err(error(path, "a record batch did not convert to an array of rows")),
    };
    rows.into_iter().try_for_each(each)
}

/// A JSON Lines line that does not parse.
#[derive(Debug, thiserror::Error)]
#[error("line {line}")]
struct SourceLine {
    line: usize,
    #[source]
    source: crate::Cause,
}

#[cfg(all(test, not(feature = "sources")))]
mod tests {
    use super::*;

    #[test]
    fn without_the_sources_feature_parquet_and_arrow_are_refused_by_name() {
        for name in ["validation-00000-of-00001.parquet", "data-00000-of-00001.arrow"] {
            let error = for_each_record(Path::new(name), &mut |_| Ok(())).unwrap_err();
            let message = mcscore_format::with_causes(&error);
            assert!(message.contains(name) && message.contains("`sources` feature"), "{message}");
        }
    }
}
