//! Importance matrices, as llama-imatrix writes them and llama-quantize
//! reads them (llama.cpp's `common/imatrix-loader.cpp` and
//! `tools/quantize`): a GGUF file of `NAME.in_sum2` and `NAME.counts` f32
//! tensors with `imatrix.*` metadata, or the legacy `.dat` layout. Read into
//! the values llama-quantize hands its quantizer: per matrix, each input
//! column's mean squared activation.

use std::path::{Path, PathBuf};

use crate::Header;

/// Why an importance matrix cannot be read: the file, the byte offset where
/// one is known, and what is wrong.
#[derive(Debug, thiserror::Error)]
#[error("{}: {}{what}", path.display(), offset.map(|o| format!("byte {o}: ")).unwrap_or_default())]
pub struct ImatrixError {
    /// The file.
    pub path: PathBuf,
    /// Where in it, where known.
    pub offset: Option<u64>,
    /// What is wrong.
    pub what: String,
}

/// An importance matrix: per weight matrix, by its tensor name, the values
/// llama-quantize passes on (sums over counts).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Imatrix {
    /// (tensor name, values), in name order.
    pub entries: Vec<(String, Vec<f32>)>,
    /// The chunks of text it was computed on, where recorded.
    pub chunks: Option<u32>,
    /// The texts it was computed on, where recorded.
    pub datasets: Vec<String>,
}

/// The keys a GGUF importance matrix must have (llama-quantize refuses one
/// without them: "missing imatrix metadata").
const METADATA: [&str; 3] = ["imatrix.datasets", "imatrix.chunk_count", "imatrix.chunk_size"];

/// Reads the importance matrix at `path`: GGUF where it starts with the GGUF
/// magic, else the legacy layout. A GGUF file's header is checked first (a
/// model given by mistake is refused before its data is read); then the
/// whole file is read, as llama.cpp reads it (a float per input column of
/// each matrix: megabytes).
pub fn read_imatrix(path: &Path) -> Result<Imatrix, ImatrixError> {
    let fail = |offset: Option<u64>, what: String| ImatrixError { path: path.to_owned(), offset, what };
    mcscore_format::check_input_io(path).map_err(|e| fail(None, e.to_string()))?;
    let mut magic = [0u8; 4];
    let read = std::io::Read::read(&mut std::fs::File::open(path).map_err(|e| fail(None, e.to_string()))?, &mut magic);
    if read.map_err(|e| fail(None, e.to_string()))? == 4 && &magic == b"GGUF" {
        let header = crate::check_file(path).map_err(|e| fail(None, e.kind.to_string()))?;
        if let Some(missing) = METADATA.iter().find(|k| header.get(k).is_none()) {
            return Err(fail(
                None,
                format!("no `{missing}`: not an importance matrix llama-imatrix wrote (llama-quantize refuses it too)"),
            ));
        }
        let bytes = std::fs::read(path).map_err(|e| fail(None, e.to_string()))?;
        gguf(&header, &bytes).map_err(|(offset, what)| fail(offset, what))
    } else {
        let bytes = std::fs::read(path).map_err(|e| fail(None, e.to_string()))?;
        legacy(&bytes).map_err(|(offset, what)| fail(Some(offset), what))
    }
}

/// A tensor's shape and f32 values.
type Floats = ([i64; 4], Vec<f32>);
/// Where (if known) and why a GGUF importance matrix cannot be read.
type Fail = (Option<u64>, String);

/// A GGUF importance matrix's values (its metadata checked by the caller):
/// for each name with `.in_sum2` and `.counts` tensors (f32), each row of
/// the sums (one per matrix of the tensor: an expert's) divided by its
/// count (1 where the count is 0), as llama-quantize computes them.
fn gguf(header: &Header<'_>, bytes: &[u8]) -> Result<Imatrix, Fail> {
    let floats = |name: &[u8]| -> Result<Option<Floats>, Fail> {
        let Some(t) = header.tensors().find(|t| t.name == name) else { return Ok(None) };
        let shown = String::from_utf8_lossy(name);
        if t.ggml_type != 0 {
            return Err((Some(t.data.0), format!("the data of tensor '{shown}' is of ggml type {}, not f32", t.ggml_type)));
        }
        let data =
            usize::try_from(t.data.0).ok().zip(usize::try_from(t.data.1).ok()).and_then(|(start, end)| bytes.get(start..end)).ok_or_else(
                || (Some(t.data.0), format!("the data of tensor '{shown}' lies past the file's end (it changed while read)")),
            )?;
        Ok(Some((t.shape, data.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())))
    };
    let stem = |t: crate::TensorView<'_>, suffix: &[u8]| t.name.strip_suffix(suffix).map(<[u8]>::to_vec);
    let mut names: Vec<Vec<u8>> = header.tensors().filter_map(|t| stem(t, b".in_sum2")).collect();
    names.sort();
    // As llama.cpp's loader: counts without their sums are a broken file.
    if let Some(orphan) = header.tensors().filter_map(|t| stem(t, b".counts")).find(|n| !names.contains(n)) {
        return Err((None, format!("'{}' has counts but no `.in_sum2`", String::from_utf8_lossy(&orphan))));
    }
    let mut entries = Vec::new();
    for name in names {
        let shown = String::from_utf8_lossy(&name).into_owned();
        let (shape, sums) = floats(&[&name[..], b".in_sum2"].concat())?.unwrap_or_default();
        let (_, counts) =
            floats(&[&name[..], b".counts"].concat())?.ok_or_else(|| (None, format!("'{shown}' has sums but no `.counts`")))?;
        // A row of sums per matrix (ne[0] values), a count per matrix.
        let width = usize::try_from(shape[0]).unwrap_or(0);
        if width == 0 || sums.len() != width * counts.len() {
            return Err((None, format!("'{shown}': {} sums are not {} rows of {width}, one per count", sums.len(), counts.len())));
        }
        let values = sums
            .chunks_exact(width)
            .zip(&counts)
            .flat_map(|(row, &count)| {
                // llama.cpp's loader reads each count as the nearest whole number.
                let count = count.round();
                row.iter().map(move |&s| if count > 0.0 { s / count } else { 1.0 })
            })
            .collect();
        entries.push((shown, values));
    }
    if entries.is_empty() {
        return Err((None, "no `NAME.in_sum2` tensors: not an importance matrix".to_owned()));
    }
    let datasets = header
        .strings("imatrix.datasets")
        .map(|names| names.map(|(_, name)| String::from_utf8_lossy(name).into_owned()).collect())
        .unwrap_or_default();
    let chunks = header.get_u64("imatrix.chunk_count").and_then(|n| u32::try_from(n).ok());
    Ok(Imatrix { entries, chunks, datasets })
}

/// A legacy `.dat` importance matrix: an i32 entry count, then per entry an
/// i32 name length, the name, an i32 call count, an i32 value count and the
/// values (f32); then, optionally, an i32 chunk count and the dataset's name.
/// Values are sums over the call count (left as they are for 0 calls).
fn legacy(bytes: &[u8]) -> Result<Imatrix, (u64, String)> {
    let mut r = Cursor { bytes, at: 0 };
    let count = r.i32("the entry count")?;
    if count < 1 {
        return Err((0, format!("an entry count of {count}: not an importance matrix")));
    }
    let mut entries: Vec<(String, Vec<f32>)> = Vec::new();
    for i in 0..count {
        let len_at = r.at();
        let len = r.i32(&format!("entry {i}'s name length"))?;
        let len = usize::try_from(len).map_err(|_| (len_at, format!("entry {i}: a name length of {len}")))?;
        let name_at = r.at();
        let raw = r.take(len, &format!("entry {i}'s name"))?;
        if raw.contains(&0) {
            return Err((name_at, format!("entry {i}: a NUL byte in its name")));
        }
        let name = String::from_utf8_lossy(raw).into_owned();
        // llama.cpp's loader and llama-quantize disagree on which of two
        // entries of one name counts.
        if entries.iter().any(|(n, _)| *n == name) {
            return Err((name_at, format!("entry {i}: '{name}' a second time")));
        }
        let calls = r.i32(&format!("entry {i}'s call count"))?;
        let n_at = r.at();
        let n = r.i32(&format!("entry {i}'s value count"))?;
        let n = usize::try_from(n).ok().filter(|&n| n >= 1).ok_or_else(|| (n_at, format!("entry {i} ('{name}'): {n} values")))?;
        let raw = r.take(n.saturating_mul(4), &format!("entry {i}'s values"))?;
        let values = raw
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .map(|s| if calls > 0 { s / calls as f32 } else { s })
            .collect();
        entries.push((name, values));
    }
    // The optional trailer: the chunk count, then the dataset's name.
    let (mut chunks, mut datasets) = (None, Vec::new());
    if r.at < bytes.len() {
        let chunks_at = r.at();
        let n = r.i32("the chunk count after the entries")?;
        chunks = Some(u32::try_from(n).map_err(|_| (chunks_at, format!("a chunk count of {n}")))?);
        let len_at = r.at();
        let len = r.i32("the dataset name's length")?;
        let len = usize::try_from(len).map_err(|_| (len_at, format!("a dataset name length of {len}")))?;
        datasets.push(String::from_utf8_lossy(r.take(len, "the dataset's name")?).into_owned());
    }
    if r.at < bytes.len() {
        return Err((r.at(), format!("{} bytes after the dataset's name", bytes.len() - r.at)));
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(Imatrix { entries, chunks, datasets })
}

/// Reads a legacy importance matrix front to back, each read checked.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn at(&self) -> u64 {
        self.at as u64
    }

    /// The next `n` bytes, or where and why they are missing.
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], (u64, String)> {
        let start = self.at;
        let left = self.bytes.len() - start;
        if n > left {
            return Err((start as u64, format!("{what}: {n} bytes needed, {left} left (not an importance matrix, or cut short)")));
        }
        self.at += n;
        Ok(&self.bytes[start..self.at])
    }

    fn i32(&mut self, what: &str) -> Result<i32, (u64, String)> {
        let b = self.take(4, what)?;
        Ok(i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn legacy_file(entries: &[(&str, i32, &[f32])], trailer: bool) -> Vec<u8> {
        let mut b = (entries.len() as i32).to_le_bytes().to_vec();
        for (name, calls, values) in entries {
            b.extend((name.len() as i32).to_le_bytes());
            b.extend(name.as_bytes());
            b.extend(calls.to_le_bytes());
            b.extend((values.len() as i32).to_le_bytes());
            values.iter().for_each(|v| b.extend(v.to_le_bytes()));
        }
        if trailer {
            b.extend(7i32.to_le_bytes());
            b.extend(4i32.to_le_bytes());
            b.extend(b"wiki");
        }
        b
    }

    /// A GGUF file with `keys` (u32 values, or a string array for the
    /// datasets) and f32 tensors (name, shape, values), as gguf.cpp lays it out.
    fn gguf_file(datasets: bool, tensors: &[(&str, [i64; 2], &[f32])], ggml_type: i32) -> Vec<u8> {
        let string = |b: &mut Vec<u8>, s: &str| {
            b.extend((s.len() as u64).to_le_bytes());
            b.extend(s.as_bytes());
        };
        let mut b = b"GGUF".to_vec();
        b.extend(3u32.to_le_bytes());
        b.extend((tensors.len() as u64).to_le_bytes());
        b.extend((2 + u64::from(datasets)).to_le_bytes());
        if datasets {
            string(&mut b, "imatrix.datasets");
            b.extend(9i32.to_le_bytes());
            b.extend(8i32.to_le_bytes());
            b.extend(1u64.to_le_bytes());
            string(&mut b, "wiki.train.raw");
        }
        for (key, value) in [("imatrix.chunk_count", 12u32), ("imatrix.chunk_size", 512)] {
            string(&mut b, key);
            b.extend(4i32.to_le_bytes());
            b.extend(value.to_le_bytes());
        }
        let mut offset = 0u64;
        for (name, shape, values) in tensors {
            string(&mut b, name);
            b.extend(2u32.to_le_bytes());
            shape.iter().for_each(|d| b.extend(d.to_le_bytes()));
            b.extend(ggml_type.to_le_bytes());
            b.extend(offset.to_le_bytes());
            offset += (values.len() as u64 * 4).div_ceil(32) * 32;
        }
        b.resize(b.len().div_ceil(32) * 32, 0);
        for (_, _, values) in tensors {
            let start = b.len();
            values.iter().for_each(|v| b.extend(v.to_le_bytes()));
            b.resize(start + (values.len() * 4).div_ceil(32) * 32, 0);
        }
        b
    }

    #[test]
    fn the_gguf_layout_gives_each_rows_sums_over_its_count() {
        let sums: &[f32] = &[2.0, 4.0, 6.0, 8.0, 5.0, 5.0, 5.0, 5.0];
        let tensors = [("blk.0.ffn_down.weight.in_sum2", [4, 2], sums), ("blk.0.ffn_down.weight.counts", [1, 2], &[2.0, 0.0][..])];
        let bytes = gguf_file(true, &tensors, 0);
        let m = gguf(&crate::parse(&bytes).unwrap(), &bytes).unwrap();
        assert_eq!(m.entries, [("blk.0.ffn_down.weight".to_owned(), vec![1.0, 2.0, 3.0, 4.0, 1.0, 1.0, 1.0, 1.0])]);
        assert_eq!((m.chunks, m.datasets), (Some(12), vec!["wiki.train.raw".to_owned()]));
        // llama-quantize's refusals: no metadata (by read_imatrix), sums that
        // are not f32, sums without counts and counts without sums, rows
        // that do not match the counts.
        let dir = std::env::temp_dir().join(format!("mcscore-imatrix-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("no-metadata.gguf");
        std::fs::write(&path, gguf_file(false, &tensors, 0)).unwrap();
        let error = read_imatrix(&path).unwrap_err().to_string();
        assert!(
            error.ends_with("no `imatrix.datasets`: not an importance matrix llama-imatrix wrote (llama-quantize refuses it too)"),
            "{error}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
        let bytes = gguf_file(true, &[tensors[1]], 0);
        assert_eq!(gguf(&crate::parse(&bytes).unwrap(), &bytes).unwrap_err().1, "'blk.0.ffn_down.weight' has counts but no `.in_sum2`");
        let bytes = gguf_file(true, &[("x.in_sum2", [4, 2], sums), ("x.counts", [1, 1], &[2.0][..])], 0);
        assert_eq!(gguf(&crate::parse(&bytes).unwrap(), &bytes).unwrap_err().1, "'x': 8 sums are not 1 rows of 4, one per count");
        let bytes = gguf_file(true, &tensors, 1);
        let (offset, what) = gguf(&crate::parse(&bytes).unwrap(), &bytes).unwrap_err();
        assert!(offset.is_some() && what.contains("is of ggml type 1, not f32"), "{what}");
        let bytes = gguf_file(true, &tensors[..1], 0);
        assert_eq!(gguf(&crate::parse(&bytes).unwrap(), &bytes).unwrap_err().1, "'blk.0.ffn_down.weight' has sums but no `.counts`");
    }

    #[test]
    fn the_legacy_layout_gives_sums_over_calls() {
        let bytes = legacy_file(&[("blk.0.ffn_up.weight", 4, &[8.0, 2.0]), ("blk.0.attn_q.weight", 0, &[3.0])], true);
        let m = legacy(&bytes).unwrap();
        assert_eq!(m.entries, [("blk.0.attn_q.weight".to_owned(), vec![3.0]), ("blk.0.ffn_up.weight".to_owned(), vec![2.0, 0.5])]);
        assert_eq!((m.chunks, m.datasets.clone()), (Some(7), vec!["wiki".to_owned()]));
        assert_eq!(legacy(&legacy_file(&[("a", 1, &[1.0])], false)).unwrap().chunks, None);
    }

    #[test]
    fn a_cut_or_foreign_legacy_file_is_refused_at_its_offset() {
        let twice = legacy_file(&[("a", 1, &[1.0]), ("a", 1, &[2.0])], false);
        assert_eq!(legacy(&twice).unwrap_err(), (25, "entry 1: 'a' a second time".to_owned()));
        let mut long = legacy_file(&[("a", 1, &[1.0])], true);
        long.push(0);
        assert_eq!(legacy(&long).unwrap_err(), (33, "1 bytes after the dataset's name".to_owned()));
        let mut cut = legacy_file(&[("a", 1, &[1.0])], true);
        cut.truncate(cut.len() - 1);
        assert!(legacy(&cut).unwrap_err().1.starts_with("the dataset's name: 4 bytes needed, 3 left"));
        let bytes = legacy_file(&[("blk.0.ffn_up.weight", 4, &[8.0, 2.0])], false);
        let (offset, what) = legacy(&bytes[..bytes.len() - 2]).unwrap_err();
        assert_eq!(offset, bytes.len() as u64 - 8);
        assert!(what.starts_with("entry 0's values: 8 bytes needed, 6 left"), "{what}");
        assert_eq!(legacy(&0i32.to_le_bytes()).unwrap_err(), (0, "an entry count of 0: not an importance matrix".to_owned()));
        assert!(legacy(b"{}").unwrap_err().1.starts_with("the entry count: 4 bytes needed, 2 left"));
        let mut huge = 1i32.to_le_bytes().to_vec();
        huge.extend(i32::MAX.to_le_bytes());
        assert!(legacy(&huge).unwrap_err().1.starts_with("entry 0's name: 2147483647 bytes needed"));
    }
}
