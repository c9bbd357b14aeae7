//! Checking a model file on disk: refuse what is not a regular file before
//! opening it, then check the bytes through a read-only memory map, of which
//! only the header's pages are ever touched.

use std::fs::{File, Metadata};
use std::path::{Path, PathBuf};

use memmap2::Mmap;

use crate::header::Header;
use crate::parse::parse;
use crate::{check_model, Fault, ModelFault};

/// The shortest possible GGUF file: magic, version and the two counts.
const MIN_FILE_LEN: u64 = 24;

/// Why a file is not a GGUF model llama.cpp would open: the path, and what
/// is wrong with it.
#[derive(Debug)]
pub struct GgufError {
    /// The file as given.
    pub path: PathBuf,
    /// What is wrong.
    pub kind: GgufErrorKind,
}

impl std::fmt::Display for GgufError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.kind)
    }
}

impl std::error::Error for GgufError {
    /// The I/O error under an `Io` kind (the kind's own text is already in
    /// this error's message, so it is not a source itself).
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        std::error::Error::source(&self.kind)
    }
}

/// What is wrong with a model file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GgufErrorKind {
    /// A directory, FIFO, socket or device: refused from its metadata before
    /// it is opened (opening a FIFO would block until a writer came).
    #[error("{file_type}, not a regular file")]
    NotRegularFile {
        /// What it is ("a directory", "a FIFO", ...).
        file_type: &'static str,
    },
    /// The file could not be inspected, opened or mapped.
    #[error("cannot {action}")]
    Io {
        /// What failed ("open it", ...).
        action: &'static str,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A file of 0 bytes.
    #[error("the file is empty (0 bytes), not a GGUF model")]
    Empty,
    /// A file shorter than the 24 bytes every GGUF file starts with.
    #[error("the file is only {len} bytes long, shorter than the {MIN_FILE_LEN} bytes every GGUF file starts with")]
    TooShort {
        /// Its length.
        len: u64,
    },
    /// A structural fault in the file's contents.
    #[error("not a GGUF file llama.cpp would load: {0}")]
    Malformed(Fault),
    /// A sound file whose values llama.cpp's model loader would abort on or
    /// silently replace.
    #[error("{0}")]
    Unloadable(ModelFault),
}

/// Checks the GGUF model at `path` the way llama.cpp's reader would, before
/// llama.cpp is given it, and returns its header.
///
/// Refuses a path that is not a regular file from its metadata, without
/// opening it; then maps the file read-only and checks its header and the
/// extent of its data (see [`parse`]). The tensor data is never read.
pub fn check_file(path: &Path) -> Result<Header<'static>, GgufError> {
    let fail = |kind| GgufError { path: path.to_owned(), kind };
    let io = |action| move |source| fail(GgufErrorKind::Io { action, source });

    refuse_special(&std::fs::metadata(path).map_err(io("read its metadata"))?).map_err(fail)?;
    let file = File::open(path).map_err(io("open it"))?;
    // Again from the open file: the path may have been replaced meanwhile.
    let metadata = file.metadata().map_err(io("read its metadata"))?;
    refuse_special(&metadata).map_err(fail)?;
    match metadata.len() {
        0 => return Err(fail(GgufErrorKind::Empty)),
        len if len < MIN_FILE_LEN => return Err(fail(GgufErrorKind::TooShort { len })),
        _ => {}
    }

    // SAFETY: the map is read-only and dropped before this function returns,
    // after the header's bytes have been copied out. memmap2 cannot stop
    // another process from truncating or rewriting the file meanwhile; model
    // files must not change while mcscore reads them, as every mmap-based
    // reader (llama.cpp included) assumes.
    #[allow(unsafe_code)]
    let map = unsafe { Mmap::map(&file) }.map_err(io("map it into memory"))?;
    let header = parse(&map).map_err(|fault| fail(GgufErrorKind::Malformed(fault)))?.into_owned();
    Ok(header)
}

/// [`check_file`], then [`check_model`]: whether llama.cpp would load the
/// file as a model, not only read it.
pub fn check_model_file(path: &Path) -> Result<Header<'static>, GgufError> {
    let header = check_file(path)?;
    check_model(&header).map_err(|fault| GgufError { path: path.to_owned(), kind: GgufErrorKind::Unloadable(fault) })?;
    Ok(header)
}

/// `NotRegularFile` for anything but a regular file.
fn refuse_special(metadata: &Metadata) -> Result<(), GgufErrorKind> {
    if metadata.is_file() {
        Ok(())
    } else {
        Err(GgufErrorKind::NotRegularFile { file_type: mcscore_format::file_kind(metadata) })
    }
}
