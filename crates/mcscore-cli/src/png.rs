//! PNG copies of the SVG plots, rendered by resvg: a figure that drops into
//! a paper or a slide where SVG does not.

use std::sync::{Arc, OnceLock};

use anyhow::{anyhow, Context};
use resvg::usvg;

/// The PNG's resolution: a paper's, 300 dots per inch.
pub(crate) const DPI: f32 = 300.0;

/// Pixels per SVG unit: an SVG unit is a CSS pixel, 1/96 inch, so a
/// 640-unit plot (6.7 inches) becomes 2,000 pixels wide.
pub(crate) const SCALE: f32 = DPI / 96.0;

/// Families tried, in order, for the plots' `sans-serif` text.
const SANS: [&str; 5] = ["DejaVu Sans", "Liberation Sans", "Noto Sans", "Arial", "Helvetica"];

/// The system's fonts, loaded once, with `sans-serif` mapped to one that is
/// there; an error where the system has none (text would silently vanish).
fn fonts() -> anyhow::Result<Arc<usvg::fontdb::Database>> {
    static FONTS: OnceLock<Result<Arc<usvg::fontdb::Database>, String>> = OnceLock::new();
    FONTS
        .get_or_init(|| {
            let mut db = usvg::fontdb::Database::new();
            db.load_system_fonts();
            let families: Vec<String> = db.faces().flat_map(|f| f.families.iter().map(|(name, _)| name.clone())).collect();
            let sans = SANS.iter().map(|s| s.to_string()).find(|s| families.contains(s)).or_else(|| families.first().cloned());
            match sans {
                Some(family) => {
                    db.set_sans_serif_family(family);
                    Ok(Arc::new(db))
                }
                None => {
                    Err("no font is installed, so a PNG's text cannot be drawn: install one (Debian: apt install fonts-dejavu-core)"
                        .to_owned())
                }
            }
        })
        .clone()
        .map_err(|e| anyhow!(e))
}

/// Renders an SVG document (a plot of ours) as a PNG.
pub(crate) fn of_svg(svg: &str) -> anyhow::Result<Vec<u8>> {
    let options = usvg::Options { fontdb: fonts()?, ..usvg::Options::default() };
    let tree = usvg::Tree::from_str(svg, &options).context("reading the SVG to render it as PNG")?;
    let size = tree.size().to_int_size().scale_by(SCALE).ok_or_else(|| anyhow!("the plot is too large to render as PNG"))?;
    let mut pixmap =
        resvg::tiny_skia::Pixmap::new(size.width(), size.height()).ok_or_else(|| anyhow!("the plot is too large to render as PNG"))?;
    pixmap.fill(resvg::tiny_skia::Color::WHITE);
    resvg::render(&tree, resvg::tiny_skia::Transform::from_scale(SCALE, SCALE), &mut pixmap.as_mut());
    // Written by the png crate (tiny-skia's own encoder records no
    // resolution), with the DPI in its pHYs chunk, so that a paper's tools
    // place it at its size. The background is opaque white: every pixel's
    // premultiplied RGBA is its plain RGBA.
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, pixmap.width(), pixmap.height());
    encoder.set_color(png::ColorType::Rgba);
    encoder.set_depth(png::BitDepth::Eight);
    let per_metre = (DPI / 0.0254).round() as u32;
    encoder.set_pixel_dims(Some(png::PixelDimensions { xppu: per_metre, yppu: per_metre, unit: png::Unit::Meter }));
    let mut writer = encoder.write_header().context("encoding the PNG")?;
    writer.write_image_data(pixmap.data()).context("encoding the PNG")?;
    writer.finish().context("encoding the PNG")?;
    Ok(out)
}
