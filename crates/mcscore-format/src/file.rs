//! A task file opened by memory map and validated whole before any task is
//! handed out, so a consumer never sees half of a broken file.

use std::fs::File;
use std::path::{Path, PathBuf};

use memmap2::Mmap;

use crate::fault::Fault;
use crate::parse::{parse_header, parse_task, stored_offset, validate};
use crate::task::Task;
use crate::Error;

/// The bytes of a task file: a memory map, or nothing for an empty file
/// (mapping zero bytes is an error on some platforms).
enum Bytes {
    Mapped(Mmap),
    Empty,
}

/// A directory given where a task file was expected.
pub(crate) fn a_directory(path: &Path) -> Error {
    let source = std::io::Error::new(std::io::ErrorKind::IsADirectory, "a directory, not a task file");
    Error::Io { path: path.to_owned(), source }
}

impl Bytes {
    fn open(path: &Path) -> Result<Bytes, Error> {
        let io = |source| Error::Io { path: path.to_owned(), source };
        crate::writer::check_input(path)?;
        let file = File::open(path).map_err(io)?;
        let metadata = file.metadata().map_err(io)?;
        if metadata.is_dir() {
            return Err(a_directory(path));
        }
        // A FIFO or a device (`/dev/zero`) maps as nothing or never ends.
        if !metadata.is_file() {
            return Err(Error::NotRegular { path: path.to_owned(), kind: crate::writer::file_kind(&metadata) });
        }
        if metadata.len() == 0 {
            return Ok(Bytes::Empty);
        }
        // SAFETY: the map is read-only and lives as long as `TaskFile`. memmap2
        // cannot stop another process from truncating or rewriting the file while
        // it is mapped; we document that task files must not change while mcscore
        // reads them, as every mmap-based reader (llama.cpp included) assumes.
        #[allow(unsafe_code)]
        let map = unsafe { Mmap::map(&file) }.map_err(io)?;
        Ok(Bytes::Mapped(map))
    }

    fn as_slice(&self) -> &[u8] {
        match self {
            Bytes::Mapped(map) => map,
            Bytes::Empty => &[],
        }
    }
}

/// A strictly valid task file: offsets match where tasks start, tasks tile the
/// file, every string is UTF-8 and every task has exactly one gold option.
pub struct TaskFile {
    path: PathBuf,
    bytes: Bytes,
    n_tasks: usize,
}

impl TaskFile {
    /// Maps and validates `path`; any fault makes this fail with all of them.
    pub fn open(path: impl AsRef<Path>) -> Result<TaskFile, Error> {
        let path = path.as_ref().to_owned();
        let bytes = Bytes::open(&path)?;
        let faults = validate(bytes.as_slice());
        if !faults.is_empty() {
            return Err(Error::Invalid { path, faults });
        }
        let n_tasks = parse_header(bytes.as_slice(), &mut Vec::new()).expect("a valid file has a header").n_tasks;
        Ok(TaskFile { path, bytes, n_tasks })
    }

    /// The path it was opened at.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The whole file, for hashing.
    pub fn bytes(&self) -> &[u8] {
        self.bytes.as_slice()
    }

    /// How many tasks it holds.
    pub fn len(&self) -> usize {
        self.n_tasks
    }

    /// Whether it holds no tasks: never, as a valid file holds at least one.
    pub fn is_empty(&self) -> bool {
        self.n_tasks == 0
    }

    /// The byte offset where task `index` starts.
    pub fn offset(&self, index: usize) -> u64 {
        // a caller's bug, as for slice indexing: callers here pass index < len(), inside the validated table
        assert!(index < self.n_tasks, "task {index} of {}", self.n_tasks);
        stored_offset(self.bytes(), index)
    }

    /// The bytes task `index` takes in the file.
    pub fn task_len(&self, index: usize) -> u64 {
        let end = if index + 1 < self.n_tasks { self.offset(index + 1) } else { self.bytes().len() as u64 };
        // validate refused OffsetBackwards and OffsetOutOfBounds: offsets rise and stay below len
        end - self.offset(index)
    }

    /// A zero-copy view of task `index`.
    pub fn task(&self, index: usize) -> Task<'_> {
        let mut faults: Vec<Fault> = Vec::new();
        parse_task(self.bytes(), self.offset(index) as usize, index, &mut faults)
            .task
            .expect("task file was validated when opened and must not change while mapped")
    }

    /// All tasks in file order.
    pub fn tasks(&self) -> impl ExactSizeIterator<Item = Task<'_>> + '_ {
        (0..self.n_tasks).map(|i| self.task(i))
    }
}
