//! Thumbnails of a VQA file's images for `mcscore view`'s page: small JPEGs
//! embedded as data: URIs. The page must stay offline and load quickly, and a
//! benchmark's images as they are (MMBench's dev set: thousands of photos)
//! would make it hundreds of megabytes; each distinct image is shown once,
//! however many tasks share it.

use std::collections::HashMap;
use std::io::Cursor;
use std::sync::Arc;

use base64::Engine as _;
use image::{ImageReader, Limits};
use mcscore_format::sha256_hex;
use rayon::prelude::*;
use serde::Serialize;

/// The longest side of a thumbnail, in pixels: legible shapes and text in a
/// task's detail at a few kilobytes each.
pub const THUMBNAIL_SIDE: u32 = 192;

/// JPEG quality of a thumbnail (libjpeg's scale, 1–100).
const QUALITY: u8 = 80;

/// The memory one decoded image may take: the engine's pixel bound (checked
/// from the header first) at 16 bytes a pixel (the
/// widest layout a decoder makes, f32 RGBA), so that a 16-bit PNG or an HDR
/// image within the bound still gets its thumbnail and the decoder never
/// allocates more, whatever the data claims.
const DECODE_BYTES: u64 = mcscore_engine::MAX_IMAGE_PIXELS * 16;

/// Images decoded at once: what bounds the page's memory to a few times
/// [`DECODE_BYTES`] whatever the machine's core count.
const DECODERS: usize = 4;

/// One distinct image of the page's tasks.
#[derive(Debug, Serialize)]
#[non_exhaustive]
pub struct PageImage {
    /// The sha256 of the image's file bytes, as the log records it.
    pub sha256: String,
    /// Its size in pixels as stored (width, height), where it decodes here.
    pub size: Option<(u32, u32)>,
    /// A JPEG thumbnail (longest side at most [`THUMBNAIL_SIDE`]; a smaller
    /// image at its own size) as a data:
    /// URI; `None` where this decoder cannot read the image (llama.cpp's can:
    /// a PSD), with the reason in `note`.
    pub thumbnail: Option<String>,
    /// Why there is no thumbnail.
    pub note: Option<String>,
}

/// The distinct images of `tasks` (each task's images in order) and, per
/// task, the index of each of its images among them.
pub(crate) fn thumbnails(tasks: &[&[Arc<[u8]>]]) -> (Vec<PageImage>, Vec<Vec<usize>>) {
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut distinct: Vec<(String, &Arc<[u8]>)> = Vec::new();
    let per_task = tasks
        .iter()
        .map(|images| {
            images
                .iter()
                .map(|bytes| {
                    let sha256 = sha256_hex(bytes);
                    *index.entry(sha256.clone()).or_insert_with(|| {
                        distinct.push((sha256, bytes));
                        distinct.len() - 1
                    })
                })
                .collect()
        })
        .collect();
    let page_image = |(sha256, bytes): (String, &Arc<[u8]>)| match thumbnail(bytes) {
        Ok((size, uri)) => PageImage { sha256, size: Some(size), thumbnail: Some(uri), note: None },
        Err(note) => PageImage { sha256, size: None, thumbnail: None, note: Some(note) },
    };
    let images = match rayon::ThreadPoolBuilder::new().num_threads(DECODERS).build() {
        Ok(pool) => pool.install(|| distinct.into_par_iter().map(page_image).collect()),
        // No threads to be had: one at a time.
        Err(_) => distinct.into_iter().map(page_image).collect(),
    };
    (images, per_task)
}

/// The image's size and its thumbnail as a data: URI, or why there is none:
/// its header checked first as scoring checks it (a format llama.cpp reads,
/// within its pixel bound).
fn thumbnail(bytes: &[u8]) -> Result<((u32, u32), String), String> {
    mcscore_engine::image_size(bytes).map_err(|e| e.to_string())?;
    let reader = ImageReader::new(Cursor::new(bytes)).with_guessed_format().map_err(|e| e.to_string())?;
    encode(reader).map_err(|e| e.to_string())
}

/// Decodes `reader`'s image within [`DECODE_BYTES`] and encodes its thumbnail.
fn encode(mut reader: ImageReader<Cursor<&[u8]>>) -> Result<((u32, u32), String), image::ImageError> {
    let mut limits = Limits::default();
    limits.max_alloc = Some(DECODE_BYTES);
    reader.limits(limits);
    let decoded = reader.decode()?;
    let size = (decoded.width(), decoded.height());
    // Smaller images are shown as they are (thumbnail() would enlarge them).
    let small = if size.0.max(size.1) > THUMBNAIL_SIDE { decoded.thumbnail(THUMBNAIL_SIDE, THUMBNAIL_SIDE) } else { decoded }.to_rgb8();
    let mut jpeg = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut jpeg, QUALITY).encode_image(&small)?;
    Ok((size, format!("data:image/jpeg;base64,{}", base64::engine::general_purpose::STANDARD.encode(&jpeg))))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png(width: u32, height: u32) -> Arc<[u8]> {
        let mut out = Vec::new();
        image::RgbImage::from_fn(width, height, |x, y| image::Rgb([x as u8, y as u8, 200]))
            .write_to(&mut Cursor::new(&mut out), image::ImageFormat::Png)
            .unwrap();
        out.into()
    }

    #[test]
    fn each_distinct_image_is_shown_once_and_small() {
        let (wide, one) = (png(600, 300), png(1, 1));
        let (images, per_task) = thumbnails(&[std::slice::from_ref(&wide), &[one.clone(), wide.clone()], &[]]);
        assert_eq!(per_task, vec![vec![0], vec![1, 0], vec![]]);
        assert_eq!(images.len(), 2);
        assert_eq!(images[0].size, Some((600, 300)));
        assert_eq!(images[1].size, Some((1, 1)));
        let uri = images[0].thumbnail.as_ref().unwrap();
        let jpeg = base64::engine::general_purpose::STANDARD.decode(uri.strip_prefix("data:image/jpeg;base64,").unwrap()).unwrap();
        let shown = image::load_from_memory(&jpeg).unwrap();
        assert_eq!((shown.width(), shown.height()), (THUMBNAIL_SIDE, THUMBNAIL_SIDE / 2));
        assert_eq!(images[0].sha256, sha256_hex(&wide));
        // A 1 × 1 image stays 1 × 1.
        let uri = images[1].thumbnail.as_ref().unwrap();
        let jpeg = base64::engine::general_purpose::STANDARD.decode(uri.strip_prefix("data:image/jpeg;base64,").unwrap()).unwrap();
        assert_eq!(image::load_from_memory(&jpeg).unwrap().width(), 1);
    }

    #[test]
    fn an_image_this_decoder_cannot_read_says_why() {
        let cut: Arc<[u8]> = png(50, 50)[..60].into();
        let (images, _) = thumbnails(&[&[cut]]);
        assert!(images[0].thumbnail.is_none());
        assert!(!images[0].note.as_ref().unwrap().is_empty());
    }

    #[test]
    fn an_image_over_the_pixel_bound_is_refused_from_its_header() {
        // 60 megapixels by its header, three bytes of data: nothing is decoded.
        let huge: Arc<[u8]> = b"P6\n8000 7500\n255\n\0\0\0".as_slice().into();
        let (images, _) = thumbnails(&[&[huge]]);
        assert!(images[0].thumbnail.is_none());
        assert!(images[0].note.as_ref().unwrap().contains("8000 x 7500 pixels, more than the 40 million"), "{:?}", images[0].note);
    }
}
