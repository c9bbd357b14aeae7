//! Images in a task's context, through llama.cpp's multimodal library
//! (`mtmd`) and a vision projector (`--mmproj`) loaded beside the model.
//!
//! A task's context holds [`IMAGE_MARKER`] where each of its images goes.
//! The context up to the end of its last image (text and images) is the
//! task's *media prefix*: mtmd tokenises it, decodes each image as llama.cpp
//! decodes it (its own preprocessing is the reference), encodes it through
//! the projector and decodes the embeddings into the KV cache, once per task,
//! before the fill's own micro-batches decode the rest of the context and the
//! options after it. A fill holds tasks of one media prefix only, and starts
//! from its fresh decode (from an empty cache) or from the previous fill's
//! decode of the same prefix: what mtmd decodes then follows from the prefix
//! alone, and the rest from the batch rule, so scores do not move with the
//! batch. Under the offload rule every task is decoded alone, its media
//! prefix afresh.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::mtmd::{MtmdBitmap, MtmdContext, MtmdContextParams, MtmdInputChunks, MtmdInputText};

use crate::{Buffer, EngineError};

pub use mcscore_format::IMAGE_MARKER;

/// The most pixels an image may have: llama.cpp decodes an image whole (3
/// bytes a pixel) before resizing it to the projector's size, so this bounds
/// that allocation at 120 MB. An 8K frame (33 megapixels) is below it.
pub const MAX_IMAGE_PIXELS: u64 = 40_000_000;

/// Why an image would not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImageFault {
    /// Bytes of no image format llama.cpp reads with a header that gives its size.
    #[error("not an image llama.cpp reads (no PNG, JPEG, GIF, BMP, TGA, PSD, HDR or PNM header)")]
    NotAnImage,
    /// More pixels than [`MAX_IMAGE_PIXELS`].
    #[error("{width} x {height} pixels, more than the {} million mcscore decodes", MAX_IMAGE_PIXELS / 1_000_000)]
    TooLarge {
        /// Its width, from its header.
        width: u64,
        /// Its height.
        height: u64,
    },
    /// A header llama.cpp's image loader (stb_image) reads no image after:
    /// a format it does not read (WebP, AVIF, TIFF, ...), or a file corrupt or cut short.
    #[error("llama.cpp's image loader cannot decode it (a format it does not read, or corrupt or cut short)")]
    Undecodable,
}

/// The size of an image in a format llama.cpp's loader (stb_image) reads and
/// whose header gives its size (PNG, JPEG, GIF, BMP, PSD, HDR, PNM, TGA),
/// refused above [`MAX_IMAGE_PIXELS`]. Bytes of any other format are refused
/// here, before llama.cpp sees them: stb_image reads a few formats whose size
/// this cannot check (Softimage PIC), and mtmd hands what stb_image cannot read
/// (WebP) to its video path where that is built.
pub fn image_size(bytes: &[u8]) -> Result<(u64, u64), ImageFault> {
    use imagesize::ImageType;
    let read = matches!(
        imagesize::image_type(bytes),
        Ok(ImageType::Png
            | ImageType::Jpeg
            | ImageType::Gif
            | ImageType::Bmp
            | ImageType::Psd
            | ImageType::Hdr
            | ImageType::Pnm
            | ImageType::Tga)
    );
    let size = imagesize::blob_size(bytes).ok().filter(|_| read).ok_or(ImageFault::NotAnImage)?;
    let (width, height) = (size.width as u64, size.height as u64);
    if width.saturating_mul(height) > MAX_IMAGE_PIXELS {
        return Err(ImageFault::TooLarge { width, height });
    }
    Ok((width, height))
}

/// Decodes `bytes` as llama.cpp's multimodal library decodes an image (its
/// stb_image loader, no model needed), after [`image_size`]'s checks; the
/// image's width and height. For checking a file of image tasks before any
/// model reads it.
#[allow(unsafe_code)]
pub fn check_image(bytes: &[u8]) -> Result<(u32, u32), ImageFault> {
    image_size(bytes)?;
    // mtmd's log goes where llama.cpp's does (installed with the backend).
    let _ = crate::backend();
    // SAFETY: `bytes` lives for the call and its length is passed with it;
    // the context may be null for bytes that are no audio file (checked
    // above: they have an image's header) and, with mtmd built without video
    // (this repository's .cargo/config.toml), nothing else reads it; a
    // placeholder bitmap keeps no pixels, and the one returned is freed here,
    // once.
    unsafe {
        let opt = llama_cpp_sys_2::mtmd_helper_init_opt_default();
        let wrapper = llama_cpp_sys_2::mtmd_helper_bitmap_init_from_buf(std::ptr::null(), bytes.as_ptr(), bytes.len(), true, opt);
        if wrapper.bitmap.is_null() {
            return Err(ImageFault::Undecodable);
        }
        let size = (llama_cpp_sys_2::mtmd_bitmap_get_nx(wrapper.bitmap), llama_cpp_sys_2::mtmd_bitmap_get_ny(wrapper.bitmap));
        llama_cpp_sys_2::mtmd_bitmap_free(wrapper.bitmap);
        Ok(size)
    }
}

/// A vision projector loaded beside a model.
pub(crate) struct Projector {
    /// mtmd's context; its calls are not thread-safe, and each takes
    /// milliseconds to seconds, so a lock costs nothing measurable.
    context: Mutex<MtmdContext>,
    path: PathBuf,
    /// The file's size at load.
    bytes: u64,
    /// The buffers mtmd logged as it loaded (its weights, its encoder's
    /// compute buffer), named `mmproj NAME`.
    buffers: Vec<Buffer>,
}

/// What a task's context holds up to the end of its last image: decoded
/// through mtmd before the rest of the task.
#[derive(Debug)]
pub(crate) struct MediaPrefix {
    /// The context's text up to the end of its last marker.
    text: String,
    /// The images' file bytes, in marker order.
    images: Vec<Arc<[u8]>>,
    /// KV-cache positions the text and images take.
    pub(crate) positions: usize,
}

impl MediaPrefix {
    /// Whether `other` is the same text and images, so that the cells one
    /// decodes are the other's: tasks with the same media prefix (the prompts
    /// of one image in a sweep) share one decode of it.
    pub(crate) fn same(&self, other: &MediaPrefix) -> bool {
        self.text == other.text
            && self.images.len() == other.images.len()
            && self.images.iter().zip(&other.images).all(|(a, b)| Arc::ptr_eq(a, b) || a[..] == b[..])
    }
}

/// Whether two tasks' media prefixes (`None`: none) are the same.
pub(crate) fn same_media(a: Option<&Arc<MediaPrefix>>, b: Option<&Arc<MediaPrefix>>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => Arc::ptr_eq(a, b) || a.same(b),
        _ => false,
    }
}

impl Projector {
    /// Loads `path` for `model`, refusing a projector whose images need what
    /// the engine's fills do not do yet: attention within an image across a
    /// whole micro-batch (Gemma 3's), or positions in two dimensions (Qwen2-VL's).
    pub(crate) fn load(model: &LlamaModel, path: &Path, threads: i32) -> Result<Projector, EngineError> {
        let refused = |reason: String| EngineError::ProjectorRefused { path: path.to_owned(), reason };
        let text = path.to_str().ok_or_else(|| refused("the path is not UTF-8".into()))?;
        // The GGUF check llama.cpp's model files get, before mtmd's reader sees it.
        mcscore_gguf::check_file(path).map_err(|e| refused(mcscore_format::with_causes(&e.kind)))?;
        let params = MtmdContextParams { use_gpu: false, print_timings: false, n_threads: threads.max(1), ..MtmdContextParams::default() };
        let bytes = std::fs::metadata(path).map_err(|e| refused(e.to_string()))?.len();
        crate::memory::take_errors();
        crate::memory::take_buffers();
        let context = MtmdContext::init_from_file(text, model, &params)
            .map_err(|_| refused(crate::memory::take_errors().unwrap_or_else(|| "llama.cpp refused it and logged no reason".into())))?;
        let buffers = crate::memory::take_buffers().into_iter().map(|b| Buffer { name: format!("mmproj {}", b.name), ..b }).collect();
        if !context.support_vision() {
            return Err(refused("it has no vision encoder".into()));
        }
        if context.decode_use_non_causal() {
            return Err(refused(
                "its images attend to themselves across the image (Gemma 3's kind), which mcscore does not decode yet".into(),
            ));
        }
        if context.decode_use_mrope() {
            return Err(refused("its images take two-dimensional positions (Qwen2-VL's kind), which mcscore does not decode yet".into()));
        }
        Ok(Projector { context: Mutex::new(context), path: path.to_owned(), bytes, buffers })
    }

    /// The projector's file.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The projector file's size at load.
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Its buffers (weights, compute), as [`crate::MemoryReport`] lists them.
    pub(crate) fn buffers(&self) -> &[Buffer] {
        &self.buffers
    }

    /// `text` (up to and with its last marker) and `images` tokenised: each
    /// image decoded from its file bytes and preprocessed as llama.cpp does.
    fn chunks(&self, task: usize, text: &str, images: &[Arc<[u8]>]) -> Result<MtmdInputChunks, EngineError> {
        let context = self.context.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let bitmaps = images
            .iter()
            .enumerate()
            .map(|(image, bytes)| {
                match image_size(bytes) {
                    Err(ImageFault::TooLarge { width, height }) => return Err(EngineError::ImageTooLarge { task, image, width, height }),
                    Err(_) => return Err(EngineError::ImageUnreadable { task, image }),
                    Ok(_) => {}
                }
                MtmdBitmap::from_buffer(&context, bytes, false).map_err(|_| EngineError::ImageUnreadable { task, image })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let refs: Vec<&MtmdBitmap> = bitmaps.iter().collect();
        // BOS as the model adds it; special text not parsed, as llama-perplexity tokenises.
        let input = MtmdInputText { text: text.to_owned(), add_special: true, parse_special: false };
        context.tokenize(input, &refs).map_err(|e| EngineError::Decode { task, what: "tokenising the task's images", source: Box::new(e) })
    }

    /// The media prefix of a task whose context is `question`, with
    /// `images` at its markers: `None` where it has none.
    pub(crate) fn media_prefix(
        &self,
        task: usize,
        question: &str,
        images: &[Arc<[u8]>],
    ) -> Result<Option<(MediaPrefix, usize)>, EngineError> {
        let markers = question.matches(IMAGE_MARKER).count();
        if markers != images.len() {
            return Err(EngineError::ImageCount { task, markers, images: images.len() });
        }
        let Some(end) = media_end(question) else { return Ok(None) };
        let text = question[..end].to_owned();
        let chunks = self.chunks(task, &text, images)?;
        let positions = (0..chunks.len()).filter_map(|i| chunks.get(i)).map(|c| c.n_positions().max(0) as usize).sum();
        Ok(Some((MediaPrefix { text, images: images.to_vec(), positions }, end)))
    }

    /// Decodes `media` into sequence 0 of `ctx` from position 0, in batches
    /// of at most `n_batch` tokens (the fills' micro-batch), no logits read.
    pub(crate) fn decode(&self, ctx: &mut LlamaContext<'_>, task: usize, media: &MediaPrefix, n_batch: u32) -> Result<(), EngineError> {
        let chunks = self.chunks(task, &media.text, &media.images)?;
        let mut context = self.context.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let end = chunks.eval_chunks(&mut context, ctx, 0, 0, n_batch as i32, false).map_err(|e| EngineError::Decode {
            task,
            what: "decoding the task's images",
            source: Box::new(e),
        })?;
        // The positions counted when the task was prepared are the ones decoded.
        debug_assert_eq!(end as usize, media.positions);
        Ok(())
    }
}

/// Where a context's media prefix ends: after its last [`IMAGE_MARKER`]
/// (`None` without one). mtmd tokenises the text between images itself and
/// the engine tokenises what follows, so a token never spans this point.
pub(crate) fn media_end(context: &str) -> Option<usize> {
    context.rfind(IMAGE_MARKER).map(|last| last + IMAGE_MARKER.len())
}
