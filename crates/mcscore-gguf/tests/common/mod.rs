//! A small GGUF writer for the tests only: it lays files out as gguf-py's
//! GGUFWriter does (little-endian, tensor infos then the data section at the
//! aligned end of the header, every tensor padded to the alignment), and
//! records where each field went so a test can corrupt one and expect the
//! fault at exactly that offset.
#![allow(dead_code)]

use std::collections::BTreeMap;

/// A metadata value, by GGUF type.
#[derive(Clone, Debug)]
pub enum V {
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    F32(f32),
    Bool(bool),
    Str(Vec<u8>),
    U64(u64),
    I64(i64),
    F64(f64),
    /// Element type code and elements (all of that type).
    Arr(i32, Vec<V>),
}

impl V {
    pub fn str(s: &str) -> V {
        V::Str(s.as_bytes().to_vec())
    }

    pub fn code(&self) -> i32 {
        match self {
            V::U8(_) => 0,
            V::I8(_) => 1,
            V::U16(_) => 2,
            V::I16(_) => 3,
            V::U32(_) => 4,
            V::I32(_) => 5,
            V::F32(_) => 6,
            V::Bool(_) => 7,
            V::Str(_) => 8,
            V::Arr(..) => 9,
            V::U64(_) => 10,
            V::I64(_) => 11,
            V::F64(_) => 12,
        }
    }

    fn payload(&self, out: &mut Vec<u8>) {
        match self {
            V::U8(v) => out.extend(v.to_le_bytes()),
            V::I8(v) => out.extend(v.to_le_bytes()),
            V::U16(v) => out.extend(v.to_le_bytes()),
            V::I16(v) => out.extend(v.to_le_bytes()),
            V::U32(v) => out.extend(v.to_le_bytes()),
            V::I32(v) => out.extend(v.to_le_bytes()),
            V::F32(v) => out.extend(v.to_le_bytes()),
            V::Bool(v) => out.push(u8::from(*v)),
            V::Str(s) => {
                out.extend((s.len() as u64).to_le_bytes());
                out.extend(s);
            }
            V::U64(v) => out.extend(v.to_le_bytes()),
            V::I64(v) => out.extend(v.to_le_bytes()),
            V::F64(v) => out.extend(v.to_le_bytes()),
            V::Arr(..) => unreachable!("arrays are written by the writer"),
        }
    }
}

/// A tensor info; its data is made up (a byte pattern) of the right size.
#[derive(Clone, Debug)]
pub struct Tensor {
    pub name: Vec<u8>,
    pub dims: Vec<i64>,
    pub ty: i32,
    /// The data offset to write; by default the running padded size.
    pub offset: Option<u64>,
}

impl Tensor {
    pub fn new(name: &str, ty: i32, dims: &[i64]) -> Tensor {
        Tensor { name: name.as_bytes().to_vec(), dims: dims.to_vec(), ty, offset: None }
    }
}

pub const F32: i32 = 0;
pub const F16: i32 = 1;
pub const Q4_0: i32 = 2;
pub const Q8_0: i32 = 8;

/// (block size, block bytes) of the types the writer lays out.
fn block(ty: i32) -> (u64, u64) {
    match ty {
        F32 => (1, 4),
        F16 => (1, 2),
        Q4_0 => (32, 18),
        Q8_0 => (32, 34),
        _ => (1, 0),
    }
}

/// The bytes a tensor's data takes (`ggml_nbytes`).
pub fn nbytes(t: &Tensor) -> u64 {
    let (block, size) = block(t.ty);
    // Shapes that overflow are for faults the checker finds first.
    let elements = t.dims.iter().try_fold(1i64, |n, &d| n.checked_mul(d)).unwrap_or(0);
    (elements.max(0) as u64 / block).wrapping_mul(size)
}

/// A file to write.
#[derive(Clone, Debug)]
pub struct Gguf {
    pub version: u32,
    pub kvs: Vec<(Vec<u8>, V)>,
    pub tensors: Vec<Tensor>,
    /// The alignment to lay the data out with (match `general.alignment`).
    pub alignment: u64,
    /// Whether to write the padding after the last tensor (gguf-py does).
    pub pad_last: bool,
}

/// A written file and where its fields are.
#[derive(Clone, Debug)]
pub struct Built {
    pub bytes: Vec<u8>,
    pub marks: BTreeMap<String, u64>,
}

impl Built {
    /// Where a field went: "version", "n_tensors", "n_kv", "kv3" (the key's
    /// length), "kv3.type", "kv3.elem", "kv3.count", "kv3.value", "t1" (the
    /// name's length), "t1.ndims", "t1.dim0", "t1.type", "t1.offset",
    /// "header_end", "data", "t1.data", "t1.data_end".
    pub fn at(&self, mark: &str) -> u64 {
        *self.marks.get(mark).unwrap_or_else(|| panic!("no mark {mark}"))
    }

    fn put(&mut self, mark: &str, bytes: &[u8]) {
        let at = self.at(mark) as usize;
        self.bytes[at..at + bytes.len()].copy_from_slice(bytes);
    }

    pub fn set_u32(&mut self, mark: &str, v: u32) -> &mut Self {
        self.put(mark, &v.to_le_bytes());
        self
    }

    pub fn set_i32(&mut self, mark: &str, v: i32) -> &mut Self {
        self.put(mark, &v.to_le_bytes());
        self
    }

    pub fn set_u64(&mut self, mark: &str, v: u64) -> &mut Self {
        self.put(mark, &v.to_le_bytes());
        self
    }

    pub fn set_i64(&mut self, mark: &str, v: i64) -> &mut Self {
        self.put(mark, &v.to_le_bytes());
        self
    }
}

fn pad(x: u64, alignment: u64) -> u64 {
    x.div_ceil(alignment).wrapping_mul(alignment)
}

/// Files whose data would pass this many bytes get none (their faults are
/// in the header).
const MAX_DATA: u64 = 1 << 20;

impl Gguf {
    /// An empty version-3 file: no metadata, no tensors.
    pub fn empty() -> Gguf {
        Gguf { version: 3, kvs: Vec::new(), tensors: Vec::new(), alignment: 32, pad_last: true }
    }

    /// The reference valid file: metadata of every type (arrays of numbers,
    /// strings and an empty one, a non-UTF-8 string), `general.alignment`
    /// 64, and four tensors of types Q8_0, Q4_0, F32 and F16.
    pub fn valid() -> Gguf {
        let kvs: Vec<(&str, V)> = vec![
            ("general.architecture", V::str("gemma3")),
            ("general.alignment", V::U32(64)),
            ("general.name", V::str("tiny test model")),
            ("gemma3.context_length", V::U32(2048)),
            ("gemma3.block_count", V::U64(1)),
            ("test.u8", V::U8(200)),
            ("test.i8", V::I8(-5)),
            ("test.u16", V::U16(60000)),
            ("test.i16", V::I16(-30000)),
            ("test.i32", V::I32(-7)),
            ("test.f32", V::F32(0.5)),
            ("test.bool", V::Bool(true)),
            ("test.i64", V::I64(-1 << 40)),
            ("test.f64", V::F64(-2.25)),
            ("test.bytes", V::Str(vec![0xff, 0xfe, b'x'])),
            ("tokenizer.ggml.tokens", V::Arr(8, vec![V::str("<pad>"), V::str("a"), V::str(""), V::str("▁the")])),
            ("tokenizer.ggml.scores", V::Arr(6, vec![V::F32(0.0), V::F32(-1.0), V::F32(-2.0), V::F32(-3.0)])),
            ("tokenizer.ggml.token_type", V::Arr(5, vec![V::I32(3), V::I32(1), V::I32(1), V::I32(1)])),
            ("test.empty_array", V::Arr(0, vec![])),
            ("tokenizer.chat_template", V::str("{% for m in messages %}{{ m.content }}{% endfor %}")),
        ];
        Gguf {
            version: 3,
            kvs: kvs.into_iter().map(|(k, v)| (k.as_bytes().to_vec(), v)).collect(),
            tensors: vec![
                Tensor::new("token_embd.weight", Q8_0, &[64, 3]),
                Tensor::new("blk.0.attn_q.weight", Q4_0, &[32, 2]),
                Tensor::new("blk.0.attn_norm.weight", F32, &[5]),
                Tensor::new("output_norm.weight", F16, &[3, 1, 1]),
            ],
            alignment: 64,
            pad_last: true,
        }
    }

    pub fn kv(mut self, key: &str, v: V) -> Gguf {
        self.kvs.push((key.as_bytes().to_vec(), v));
        self
    }

    pub fn tensor(mut self, t: Tensor) -> Gguf {
        self.tensors.push(t);
        self
    }

    pub fn build(&self) -> Built {
        let mut marks = BTreeMap::new();
        let mut out = Vec::new();
        let mut mark = |name: String, out: &Vec<u8>| {
            marks.insert(name, out.len() as u64);
        };
        out.extend(b"GGUF");
        mark("version".into(), &out);
        out.extend(self.version.to_le_bytes());
        mark("n_tensors".into(), &out);
        out.extend((self.tensors.len() as u64).to_le_bytes());
        mark("n_kv".into(), &out);
        out.extend((self.kvs.len() as u64).to_le_bytes());
        for (i, (key, v)) in self.kvs.iter().enumerate() {
            mark(format!("kv{i}"), &out);
            out.extend((key.len() as u64).to_le_bytes());
            out.extend(key);
            mark(format!("kv{i}.type"), &out);
            out.extend(v.code().to_le_bytes());
            if let V::Arr(elem, items) = v {
                mark(format!("kv{i}.elem"), &out);
                out.extend(elem.to_le_bytes());
                mark(format!("kv{i}.count"), &out);
                out.extend((items.len() as u64).to_le_bytes());
                mark(format!("kv{i}.value"), &out);
                for item in items {
                    item.payload(&mut out);
                }
            } else {
                mark(format!("kv{i}.value"), &out);
                v.payload(&mut out);
            }
        }
        let mut offset = 0;
        let mut offsets = Vec::new();
        for (i, t) in self.tensors.iter().enumerate() {
            mark(format!("t{i}"), &out);
            out.extend((t.name.len() as u64).to_le_bytes());
            out.extend(&t.name);
            mark(format!("t{i}.ndims"), &out);
            out.extend((t.dims.len() as u32).to_le_bytes());
            for (j, d) in t.dims.iter().enumerate() {
                mark(format!("t{i}.dim{j}"), &out);
                out.extend(d.to_le_bytes());
            }
            mark(format!("t{i}.type"), &out);
            out.extend(t.ty.to_le_bytes());
            mark(format!("t{i}.offset"), &out);
            out.extend(t.offset.unwrap_or(offset).to_le_bytes());
            offsets.push(offset);
            offset = offset.wrapping_add(pad(nbytes(t), self.alignment));
        }
        mark("header_end".into(), &out);
        if !self.tensors.is_empty() {
            let data = pad(out.len() as u64, self.alignment);
            out.resize(data as usize, 0);
        }
        mark("data".into(), &out);
        let data = out.len();
        if offset > MAX_DATA || self.tensors.iter().any(|t| nbytes(t) > MAX_DATA) {
            return Built { bytes: out, marks };
        }
        for (i, t) in self.tensors.iter().enumerate() {
            let start = data + offsets[i] as usize;
            out.resize(start, 0);
            mark(format!("t{i}.data"), &out);
            out.extend((0..nbytes(t)).map(|b| (b as u8).wrapping_mul(31).wrapping_add(i as u8)));
            mark(format!("t{i}.data_end"), &out);
        }
        if self.pad_last {
            let end = pad((out.len() - data) as u64, self.alignment) as usize;
            out.resize(data + end, 0);
        }
        Built { bytes: out, marks }
    }
}
