//! A streaming writer that can only produce strictly valid files, and only
//! under the final name once every announced task is written.

use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

use crate::parse::parse_task;
use crate::task::Task;
use crate::Error;

/// Writes tasks one by one to a temporary file beside the destination and
/// renames it into place in [`TaskWriter::finish`]. Dropping the writer before
/// then removes the temporary file, so a crash never leaves a partial file
/// under the final name.
pub struct TaskWriter {
    path: PathBuf,
    out: BufWriter<NamedTempFile>,
    /// The task count, where known at the start; `None` for
    /// [`TaskWriter::uncounted`], whose offset table is placed at the end.
    announced: Option<usize>,
    offsets: Vec<u32>,
    /// Bytes written after the offset table (after none, when uncounted).
    position: u64,
    scratch: Vec<u8>,
}

impl TaskWriter {
    /// Starts a file of exactly `n_tasks` tasks at `path`.
    pub fn create(path: impl AsRef<Path>, n_tasks: usize) -> Result<TaskWriter, Error> {
        let path = path.as_ref().to_owned();
        let io = |source| Error::Io { path: path.clone(), source };
        if n_tasks == 0 {
            return Err(Error::Invalid { path, faults: vec![crate::Fault::NoTasks] });
        }
        check_target(&path, Existing::Replace)?;
        let table_end = u32::try_from(n_tasks)
            .ok()
            .and_then(|n| n.checked_mul(4))
            .and_then(|n| n.checked_add(4))
            .ok_or_else(|| Error::TooLarge { path: path.clone() })?;
        let tmp = temp_file_beside(&path).map_err(io)?;
        let mut out = BufWriter::new(tmp);
        // The header is rewritten in `finish`; reserve its bytes now.
        out.write_all(&vec![0u8; table_end as usize]).map_err(io)?;
        Ok(TaskWriter {
            path,
            out,
            announced: Some(n_tasks),
            offsets: Vec::with_capacity(n_tasks),
            position: u64::from(table_end),
            scratch: Vec::new(),
        })
    }

    /// Starts a file at `path` whose task count is known only at the end (a
    /// source read as a stream): the tasks go to a temporary file, and
    /// [`TaskWriter::finish`] writes the offset table into a second one and
    /// copies them behind it. Memory stays the offset table's, 4 bytes a task.
    pub fn uncounted(path: impl AsRef<Path>) -> Result<TaskWriter, Error> {
        let path = path.as_ref().to_owned();
        check_target(&path, Existing::Replace)?;
        let tmp = temp_file_beside(&path).map_err(|source| Error::Io { path: path.clone(), source })?;
        Ok(TaskWriter { path, out: BufWriter::new(tmp), announced: None, offsets: Vec::new(), position: 0, scratch: Vec::new() })
    }

    /// Appends one task; refuses it (writing nothing) if it is not strictly valid.
    pub fn write(&mut self, task: &Task<'_>) -> Result<(), Error> {
        let index = self.offsets.len();
        if let Some(announced) = self.announced.filter(|&n| n == index) {
            return Err(Error::CountMismatch { path: self.path.clone(), announced, written: index + 1 });
        }
        self.scratch.clear();
        task.encode(&mut self.scratch);
        // Re-parse our own encoding: one rule set for reading and writing.
        let mut faults = Vec::new();
        let parsed = parse_task(&self.scratch, 0, index, &mut faults);
        if !faults.is_empty() || parsed.end != Some(self.scratch.len()) {
            return Err(Error::InvalidTask { path: self.path.clone(), task: index, faults });
        }
        let offset = u32::try_from(self.position).map_err(|_| Error::TooLarge { path: self.path.clone() })?;
        self.out.write_all(&self.scratch).map_err(|source| Error::Io { path: self.path.clone(), source })?;
        self.offsets.push(offset);
        self.position += self.scratch.len() as u64;
        Ok(())
    }

    /// Checks the count, writes the offset table, syncs and renames into place.
    pub fn finish(self) -> Result<(), Error> {
        let TaskWriter { path, out, announced, mut offsets, position, .. } = self;
        let io = |source| Error::Io { path: path.clone(), source };
        let mut body = out.into_inner().map_err(|e| io(e.into_error()))?;
        let n_tasks = offsets.len();
        let tmp = match announced {
            Some(announced) if announced != n_tasks => return Err(Error::CountMismatch { path, announced, written: n_tasks }),
            Some(_) if u32::try_from(position).is_err() => return Err(Error::TooLarge { path }),
            Some(_) => {
                body.as_file_mut().seek(SeekFrom::Start(0)).map_err(io)?;
                write_table(body.as_file_mut(), &offsets).map_err(io)?;
                body
            }
            None => {
                if n_tasks == 0 {
                    return Err(Error::Invalid { path, faults: vec![crate::Fault::NoTasks] });
                }
                // The offsets were counted from the body's start; the table
                // goes before it, into a second file the body is copied behind.
                let table_end = u32::try_from(n_tasks)
                    .ok()
                    .and_then(|n| n.checked_mul(4))
                    .and_then(|n| n.checked_add(4))
                    .ok_or_else(|| Error::TooLarge { path: path.clone() })?;
                for offset in &mut offsets {
                    *offset = offset.checked_add(table_end).ok_or_else(|| Error::TooLarge { path: path.clone() })?;
                }
                if u32::try_from(position + u64::from(table_end)).is_err() {
                    return Err(Error::TooLarge { path });
                }
                let mut whole = temp_file_beside(&path).map_err(io)?;
                write_table(whole.as_file_mut(), &offsets).map_err(io)?;
                body.as_file_mut().seek(SeekFrom::Start(0)).map_err(io)?;
                std::io::copy(body.as_file_mut(), whole.as_file_mut()).map_err(io)?;
                whole
            }
        };
        commit_temp(tmp, &path, Existing::Replace).map(drop)
    }
}

/// Writes the task count and `offsets` (the file's first bytes) to `file`
/// at its position, through a small buffer.
fn write_table(file: &mut std::fs::File, offsets: &[u32]) -> std::io::Result<()> {
    let mut out = BufWriter::new(file);
    // both callers checked that 4 + 4 * n_tasks fits a u32
    out.write_all(&(offsets.len() as u32).to_le_bytes())?;
    for offset in offsets {
        out.write_all(&offset.to_le_bytes())?;
    }
    out.flush()
}

/// A temporary file in `path`'s folder (so a rename onto `path` is atomic),
/// named `.mcscore-partial-*` and readable as a normal file would be (0644
/// less the umask) once renamed; it is deleted if dropped before `persist`.
pub(crate) fn temp_file_beside(path: &Path) -> std::io::Result<NamedTempFile> {
    let mut builder = tempfile::Builder::new();
    builder.prefix(".mcscore-partial-");
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o644));
    // The list is held while the file is made, so a signal's removal (on
    // the signal thread) waits for the file to be listed rather than
    // missing one made a moment before it.
    let mut partial = partial_files();
    let tmp = builder.tempfile_in(folder_of(path))?;
    partial.push(tmp.path().to_owned());
    Ok(tmp)
}

/// Every temporary file made by [`temp_file_beside`] and not yet renamed into
/// place: what a signal that ends the process must remove, since a process
/// ended by SIGTERM runs no destructor.
fn partial_files() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    static PARTIAL: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());
    // A poisoned list is still the list: a panic elsewhere does not change it.
    PARTIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Removes every output still being written (the temporary files beside
/// their targets), for a process about to exit on a signal, and returns how
/// many it removed. Final names are never touched: what was committed stays.
/// The list stays locked until the process ends, so no thread makes a file
/// after the removal that nothing would remove.
pub fn remove_partial_files() -> usize {
    let mut partial = partial_files();
    // One already renamed into place or dropped is gone from its temporary name.
    let removed = partial.iter().filter(|p| std::fs::remove_file(p).is_ok()).count();
    partial.clear();
    std::mem::forget(partial);
    removed
}

/// Whether `folder` can be written in: a listed temporary file made and
/// removed there, the one test that also covers read-only mounts and ACLs.
pub fn probe_folder(folder: &Path) -> std::io::Result<()> {
    temp_file_beside(&folder.join("probe")).map(drop)
}

/// The folder a file at `path` lives in (`.` for a bare file name).
fn folder_of(path: &Path) -> &Path {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    }
}

/// What an output may do to a file that exists at its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Existing {
    /// Replace it, if it is a regular file.
    Replace,
    /// Refuse: the output must be new (checked again at the rename).
    Refuse,
}

/// What kind of file `metadata` describes, for messages ("a FIFO").
pub fn file_kind(metadata: &std::fs::Metadata) -> &'static str {
    let kind = metadata.file_type();
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "a FIFO";
        }
        if kind.is_char_device() {
            return "a character device";
        }
        if kind.is_block_device() {
            return "a block device";
        }
        if kind.is_socket() {
            return "a socket";
        }
    }
    if kind.is_dir() {
        "a directory"
    } else if kind.is_symlink() {
        "a symbolic link"
    } else if kind.is_file() {
        "a regular file"
    } else {
        "a special file"
    }
}

/// Checks that an output may be written at `path`: nothing is there, or a
/// regular file that `existing` allows replacing. A directory, a device, a
/// FIFO, a socket or a symbolic link is never replaced: renaming over it
/// would put a regular file where the system expects that node.
pub fn check_target(path: &Path, existing: Existing) -> Result<(), Error> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(Error::Io { path: path.to_owned(), source }),
        Ok(metadata) if !metadata.file_type().is_file() => Err(Error::NotRegular { path: path.to_owned(), kind: file_kind(&metadata) }),
        Ok(_) if existing == Existing::Refuse => Err(Error::Exists { path: path.to_owned() }),
        Ok(_) => Ok(()),
    }
}

/// Whether two paths name the same file (the same device and inode, so a
/// hard link or a symbolic link to it counts); false when either is missing.
pub fn same_file(a: &Path, b: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (std::fs::metadata(a), std::fs::metadata(b)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        }
    }
}

/// Refuses an input that is not a regular file before it is opened:
/// opening a FIFO to read waits for a writer, which may never come.
pub fn check_input(path: &Path) -> Result<(), Error> {
    match special_kind(path) {
        Some(kind) => Err(Error::NotRegular { path: path.to_owned(), kind }),
        None => Ok(()),
    }
}

/// What `path` is where it is neither a regular file nor a directory.
fn special_kind(path: &Path) -> Option<&'static str> {
    std::fs::metadata(path).ok().filter(|m| !m.is_file() && !m.is_dir()).map(|m| file_kind(&m))
}

/// [`check_input`] as an I/O error that leaves naming the path to the
/// caller (whose error type names it once).
pub fn check_input_io(path: &Path) -> std::io::Result<()> {
    match special_kind(path) {
        Some(kind) => Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("{kind}, not a regular file"))),
        None => Ok(()),
    }
}

/// Reads an input file whole, refusing what is not a regular file (a FIFO
/// would block, `/dev/zero` never ends) before reading a byte.
pub fn read_input(path: &Path) -> Result<Vec<u8>, Error> {
    use std::io::Read;
    let io = |source| Error::Io { path: path.to_owned(), source };
    check_input(path)?;
    let mut file = std::fs::File::open(path).map_err(io)?;
    let metadata = file.metadata().map_err(io)?;
    if !metadata.is_file() {
        return Err(Error::NotRegular { path: path.to_owned(), kind: file_kind(&metadata) });
    }
    let mut bytes = Vec::with_capacity(usize::try_from(metadata.len()).unwrap_or(0));
    file.read_to_end(&mut bytes).map_err(io)?;
    Ok(bytes)
}

/// The one way mcscore writes an output file: into a temporary file beside
/// `path`, then [`AtomicFile::commit`] syncs it, renames it over `path` and
/// syncs the folder. A crash, a full disk or a dropped `AtomicFile` leaves
/// whatever was at `path` before, never a half-written file under its name.
/// Only a regular file is ever replaced ([`check_target`]), checked when the
/// file is created and again just before the rename.
pub struct AtomicFile {
    path: PathBuf,
    existing: Existing,
    out: BufWriter<NamedTempFile>,
}

impl AtomicFile {
    /// An output that replaces a regular file at `path`.
    pub fn create(path: impl AsRef<Path>) -> Result<AtomicFile, Error> {
        Self::with(path.as_ref(), Existing::Replace)
    }

    /// An output that must be new: refused if `path` exists now or when it
    /// is renamed into place.
    pub fn create_new(path: impl AsRef<Path>) -> Result<AtomicFile, Error> {
        Self::with(path.as_ref(), Existing::Refuse)
    }

    /// An output at `path` with the given rule for a file already there.
    pub fn with(path: &Path, existing: Existing) -> Result<AtomicFile, Error> {
        check_target(path, existing)?;
        let tmp = temp_file_beside(path).map_err(|source| Error::Io { path: path.to_owned(), source })?;
        Ok(AtomicFile { path: path.to_owned(), existing, out: BufWriter::new(tmp) })
    }

    /// The file the content will be renamed to.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The temporary file, for a writer that can only write by name
    /// (llama.cpp's quantizer): write there, then [`AtomicFile::commit`].
    pub fn temp_path(&self) -> &Path {
        self.out.get_ref().path()
    }

    /// Makes the content durable under its final name.
    pub fn commit(self) -> Result<std::fs::File, Error> {
        let AtomicFile { path, existing, out } = self;
        let io = |source| Error::Io { path: path.clone(), source };
        let tmp = out.into_inner().map_err(|e| io(e.into_error()))?;
        commit_temp(tmp, &path, existing)
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.out.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// Syncs a temporary file made by [`temp_file_beside`], renames it to `path`
/// (without replacing anything for [`Existing::Refuse`]) and syncs the
/// folder, so the rename itself survives a power cut.
fn commit_temp(tmp: NamedTempFile, path: &Path, existing: Existing) -> Result<std::fs::File, Error> {
    let io = |source| Error::Io { path: path.to_owned(), source };
    tmp.as_file().sync_all().map_err(io)?;
    check_target(path, existing)?;
    let temp = tmp.path().to_owned();
    let file = match existing {
        Existing::Replace => tmp.persist(path).map_err(|e| io(e.error))?,
        Existing::Refuse => tmp.persist_noclobber(path).map_err(|e| match e.error.kind() {
            std::io::ErrorKind::AlreadyExists => Error::Exists { path: path.to_owned() },
            _ => io(e.error),
        })?,
    };
    partial_files().retain(|p| *p != temp);
    #[cfg(unix)]
    std::fs::File::open(folder_of(path)).and_then(|dir| dir.sync_all()).map_err(io)?;
    Ok(file)
}

/// Writes `bytes` to `path` atomically (see [`AtomicFile`]).
pub fn write_atomic(path: impl AsRef<Path>, bytes: &[u8]) -> Result<(), Error> {
    let mut file = AtomicFile::create(path)?;
    file.write_all(bytes).map_err(|source| Error::Io { path: file.path().to_owned(), source })?;
    file.commit().map(drop)
}

/// Writes `tasks` to `path` atomically.
pub fn write_tasks<'a>(path: impl AsRef<Path>, tasks: impl ExactSizeIterator<Item = Task<'a>>) -> Result<(), Error> {
    let mut writer = TaskWriter::create(path, tasks.len())?;
    for task in tasks {
        writer.write(&task)?;
    }
    writer.finish()
}
