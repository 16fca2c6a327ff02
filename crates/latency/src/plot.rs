//! Plots people look at, as SVG: a latency profile as in OSprof's figures (log2 buckets along
//! x labelled with times, counts on a log10 y axis, peaks marked), two profiles overlaid for a
//! diff, and a heat map of time slices. The SVG is plain (rectangles, lines, text in a
//! generic font family) and byte-for-byte deterministic, so any renderer draws it and tests
//! can compare it.

use std::fmt::Write as _;

use crate::histogram::Histogram;
use crate::peaks::{PeakOptions, peaks};
use crate::text::duration;

/// Size and colours of a plot.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PlotOptions {
    /// Width in pixels. Default is 640.
    pub width: u32,
    /// Height in pixels. Default is 360.
    pub height: u32,
    /// The title above the plot. Default is empty.
    pub title: String,
}

impl Default for PlotOptions {
    fn default() -> Self {
        PlotOptions {
            width: 640,
            height: 360,
            title: String::new(),
        }
    }
}

const COLOURS: [&str; 2] = ["#3465a4", "#cc0000"];
const MARGIN_LEFT: f64 = 56.0;
const MARGIN_RIGHT: f64 = 16.0;
const MARGIN_TOP: f64 = 40.0;
const MARGIN_BOTTOM: f64 = 56.0;
/// Least distance between two time labels of the x axis, in pixels.
const LABEL_SPACE: f64 = 48.0;

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

struct Frame {
    x0: f64,
    y0: f64,
    w: f64,
    h: f64,
    lo: u32,
    n: u32,
    /// Decades of the y axis: counts 1 to 10^decades.
    decades: u32,
}

impl Frame {
    fn new(opts: &PlotOptions, lo: u32, hi: u32, max: u64) -> Frame {
        let mut decades = 1;
        while 10u64.saturating_pow(decades) < max {
            decades += 1;
        }
        Frame {
            x0: MARGIN_LEFT,
            y0: MARGIN_TOP,
            w: f64::from(opts.width) - MARGIN_LEFT - MARGIN_RIGHT,
            h: f64::from(opts.height) - MARGIN_TOP - MARGIN_BOTTOM,
            lo,
            n: hi - lo + 1,
            decades,
        }
    }
    fn bar_w(&self) -> f64 {
        self.w / f64::from(self.n)
    }
    fn x(&self, b: u32) -> f64 {
        self.x0 + f64::from(b - self.lo) * self.bar_w()
    }
    /// The y of a count on the log axis; counts of 1 sit a little above the base so they show.
    fn y(&self, count: u64) -> f64 {
        let v = if count == 0 {
            0.0
        } else {
            ((count as f64).log10() + 0.15) / (f64::from(self.decades) + 0.15)
        };
        self.y0 + self.h * (1.0 - v.min(1.0))
    }
}

fn header(svg: &mut String, opts: &PlotOptions) {
    let _ = writeln!(
        svg,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" font-family=\"sans-serif\" font-size=\"11\">",
        w = opts.width,
        h = opts.height
    );
    let _ = writeln!(
        svg,
        "<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"#ffffff\"/>",
        opts.width, opts.height
    );
    if !opts.title.is_empty() {
        let _ = writeln!(
            svg,
            "<text x=\"{}\" y=\"20\" text-anchor=\"middle\" font-size=\"14\">{}</text>",
            f64::from(opts.width) / 2.0,
            escape(&opts.title)
        );
    }
}

/// Axes: log2 buckets along x (every bucket ticked, times labelled at whole powers of two),
/// counts along y at each decade.
fn axes(svg: &mut String, f: &Frame, h: &Histogram) {
    let r = h.resolution();
    let (x1, y1) = (f.x0 + f.w, f.y0 + f.h);
    let _ = writeln!(
        svg,
        "<path d=\"M{:.1} {:.1}V{y1:.1}H{x1:.1}\" fill=\"none\" stroke=\"#000000\"/>",
        f.x0, f.y0
    );
    // Labels at whole powers of two, at least LABEL_SPACE pixels apart (the widest, `16.8ms`,
    // takes about 40 at this font size).
    let per_power = f.bar_w() * f64::from(r.get());
    let every = ((LABEL_SPACE / per_power).ceil() as u32).max(1);
    for k in 0..f.n {
        let b = f.lo + k;
        let x = f.x(b);
        let _ = writeln!(svg, "<path d=\"M{x:.1} {y1:.1}v4\" stroke=\"#000000\"/>");
        if b.is_multiple_of(r.get()) && (b / r.get()).is_multiple_of(every) {
            let _ = writeln!(
                svg,
                "<text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
                y1 + 16.0,
                duration(r.lower_bound(b))
            );
        }
    }
    let _ = writeln!(
        svg,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">latency (log2 buckets, {} per power of two)</text>",
        f.x0 + f.w / 2.0,
        y1 + 36.0,
        r.get()
    );
    for d in 0..=f.decades {
        let y = f.y(10u64.pow(d));
        let _ = writeln!(
            svg,
            "<path d=\"M{:.1} {y:.1}h-4\" stroke=\"#000000\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            f.x0,
            f.x0 - 6.0,
            y + 4.0,
            10u64.pow(d)
        );
    }
    let _ = writeln!(
        svg,
        "<text x=\"14\" y=\"{:.1}\" text-anchor=\"middle\" transform=\"rotate(-90 14 {:.1})\">operations (log10)</text>",
        f.y0 + f.h / 2.0,
        f.y0 + f.h / 2.0
    );
}

fn bars(svg: &mut String, f: &Frame, h: &Histogram, colour: &str, outline: bool) {
    for (b, bucket) in h.buckets() {
        if bucket.count == 0 {
            continue;
        }
        let y = f.y(bucket.count);
        let style = if outline {
            format!("fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\"")
        } else {
            format!("fill=\"{colour}\" fill-opacity=\"0.75\"")
        };
        let _ = writeln!(
            svg,
            "<rect x=\"{:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{:.1}\" {style}/>",
            f.x(b) + 1.0,
            (f.bar_w() - 2.0).max(1.0),
            f.y0 + f.h - y
        );
    }
}

/// Marks each peak with a triangle above its highest bucket and its mean latency and share.
fn peak_marks(svg: &mut String, f: &Frame, h: &Histogram, colour: &str) {
    for p in peaks(h, &PeakOptions::default()) {
        let x = f.x(p.mode) + f.bar_w() / 2.0;
        let y = f.y(h.count_in(p.mode)) - 4.0;
        let _ = writeln!(
            svg,
            "<path d=\"M{x:.1} {y:.1}l-5 -8h10z\" fill=\"{colour}\"/><text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{} ({:.0}%)</text>",
            y - 11.0,
            duration(p.mean_ns()),
            p.share(h) * 100.0
        );
    }
}

fn span(hs: &[&Histogram]) -> Option<(u32, u32, u64)> {
    let mut out: Option<(u32, u32, u64)> = None;
    for h in hs {
        let Some((lo, hi)) = h.span() else { continue };
        let max = h.buckets().map(|(_, b)| b.count).max().unwrap_or(1);
        out = Some(match out {
            None => (lo, hi, max),
            Some((a, b, m)) => (a.min(lo), b.max(hi), m.max(max)),
        });
    }
    // A little room on both sides, as the paper's figures have.
    out.map(|(lo, hi, m)| (lo.saturating_sub(1), hi + 1, m))
}

/// A latency profile as an SVG picture: bars per bucket, log counts, peaks marked with their
/// mean latency and share of operations.
pub fn profile_svg(h: &Histogram, opts: &PlotOptions) -> String {
    let mut svg = String::new();
    header(&mut svg, opts);
    if let Some((lo, hi, max)) = span(&[h]) {
        let f = Frame::new(opts, lo, hi, max);
        axes(&mut svg, &f, h);
        bars(&mut svg, &f, h, COLOURS[0], false);
        peak_marks(&mut svg, &f, h, "#000000");
    }
    svg.push_str("</svg>\n");
    svg
}

/// Two profiles overlaid, as OSprof's comparison figures: `a` in filled bars, `b` in
/// outlines, with a legend naming them. Both must have the same resolution (`b` is drawn
/// on `a`'s axis).
pub fn diff_svg(a: &Histogram, b: &Histogram, names: (&str, &str), opts: &PlotOptions) -> String {
    let mut svg = String::new();
    header(&mut svg, opts);
    if let Some((lo, hi, max)) = span(&[a, b]) {
        let f = Frame::new(opts, lo, hi, max);
        axes(&mut svg, &f, a);
        bars(&mut svg, &f, a, COLOURS[0], false);
        bars(&mut svg, &f, b, COLOURS[1], true);
        for (i, (name, colour)) in [names.0, names.1].iter().zip(COLOURS).enumerate() {
            let y = MARGIN_TOP + 4.0 + 16.0 * i as f64;
            let x = f.x0 + f.w - 150.0;
            let _ = writeln!(
                svg,
                "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"12\" height=\"10\" fill=\"{colour}\"/><text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
                x + 16.0,
                y + 9.0,
                escape(name)
            );
        }
    }
    svg.push_str("</svg>\n");
    svg
}

/// Time slices as a heat map: one column per slice, one row per bucket (short latencies at
/// the bottom), darker for more operations (log scale).
pub fn heatmap_svg(slices: &[Histogram], slice_ns: u64, opts: &PlotOptions) -> String {
    let mut svg = String::new();
    header(&mut svg, opts);
    let refs: Vec<&Histogram> = slices.iter().collect();
    if let (Some((lo, hi, max)), Some(first)) = (span(&refs), slices.first()) {
        let r = first.resolution();
        let x0 = MARGIN_LEFT;
        let y0 = MARGIN_TOP;
        let w = f64::from(opts.width) - MARGIN_LEFT - MARGIN_RIGHT;
        let h = f64::from(opts.height) - MARGIN_TOP - MARGIN_BOTTOM;
        let cw = w / slices.len().max(1) as f64;
        let rh = h / f64::from(hi - lo + 1);
        let top = (max as f64).ln_1p();
        for (i, s) in slices.iter().enumerate() {
            for (b, bucket) in s.buckets() {
                let shade = (bucket.count as f64).ln_1p() / top;
                let level = (255.0 * (1.0 - shade)).round() as u8;
                let _ = writeln!(
                    svg,
                    "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{cw:.1}\" height=\"{rh:.1}\" fill=\"#{level:02x}{level:02x}ff\"/>",
                    x0 + cw * i as f64,
                    y0 + h - rh * f64::from(b - lo + 1)
                );
            }
        }
        let _ = writeln!(
            svg,
            "<path d=\"M{x0:.1} {y0:.1}V{:.1}H{:.1}\" fill=\"none\" stroke=\"#000000\"/>",
            y0 + h,
            x0 + w
        );
        let every = ((hi - lo + 1) / 8).max(1);
        for b in
            (lo..=hi).filter(|b| b.is_multiple_of(r.get()) && (b / r.get()).is_multiple_of(every))
        {
            let _ = writeln!(
                svg,
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
                x0 - 4.0,
                y0 + h - rh * f64::from(b - lo) - 2.0,
                duration(r.lower_bound(b))
            );
        }
        let _ = writeln!(
            svg,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">time ({} slices of {})</text>",
            x0 + w / 2.0,
            y0 + h + 20.0,
            slices.len(),
            duration(slice_ns)
        );
    }
    svg.push_str("</svg>\n");
    svg
}

/// Why [`png`] could not draw a picture.
#[cfg(feature = "png")]
#[derive(Debug)]
pub struct PngError(String);

#[cfg(feature = "png")]
impl std::fmt::Display for PngError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(feature = "png")]
impl std::error::Error for PngError {}

/// The families tried, in order, for the plots' `sans-serif` text.
#[cfg(feature = "png")]
const SANS_FAMILIES: [&str; 4] = ["DejaVu Sans", "Liberation Sans", "Noto Sans", "FreeSans"];

/// Renders one of this module's SVG pictures as PNG (resvg, with the system's fonts: without
/// any font installed the text is left out and the bars are still drawn).
///
/// Returns an error if `svg` is not SVG this renderer reads or the picture is empty.
#[cfg(feature = "png")]
pub fn png(svg: &str) -> Result<Vec<u8>, PngError> {
    use resvg::{tiny_skia, usvg};
    let mut opt = usvg::Options::default();
    let db = opt.fontdb_mut();
    db.load_system_fonts();
    if let Some(family) = SANS_FAMILIES.iter().find(|f| {
        db.faces()
            .any(|face| face.families.iter().any(|(n, _)| n == *f))
    }) {
        db.set_sans_serif_family(*family);
    }
    let tree = usvg::Tree::from_str(svg, &opt).map_err(|e| PngError(format!("bad svg: {e}")))?;
    let size = tree.size().to_int_size();
    let mut pixmap = tiny_skia::Pixmap::new(size.width(), size.height())
        .ok_or_else(|| PngError("the picture is empty".into()))?;
    resvg::render(&tree, tiny_skia::Transform::default(), &mut pixmap.as_mut());
    pixmap
        .encode_png()
        .map_err(|e| PngError(format!("cannot encode png: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::histogram::Resolution;

    fn two_peaks() -> Histogram {
        let mut h = Histogram::new(Resolution::ONE);
        for _ in 0..900 {
            h.add(1_500);
        }
        for _ in 0..90 {
            h.add(3_000_000);
        }
        h
    }

    #[test]
    fn profiles_are_deterministic_svg_with_peaks_marked() {
        let h = two_peaks();
        let svg = profile_svg(&h, &PlotOptions::default());
        assert_eq!(svg, profile_svg(&h, &PlotOptions::default()));
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(svg.ends_with("</svg>\n"));
        // Two bars, two peak marks with their means and shares.
        assert_eq!(svg.matches("fill-opacity").count(), 2);
        assert!(svg.contains(">1.5us (91%)<"), "{svg}");
        assert!(svg.contains(">3ms (9%)<"), "{svg}");
        let empty = profile_svg(&Histogram::new(Resolution::ONE), &PlotOptions::default());
        assert!(!empty.contains("<path"));
    }

    #[test]
    fn diffs_overlay_and_heat_maps_shade() {
        let a = two_peaks();
        let mut b = Histogram::new(Resolution::ONE);
        b.add(1_500);
        let svg = diff_svg(&a, &b, ("before <A>", "after"), &PlotOptions::default());
        assert!(svg.contains("before &lt;A&gt;"));
        assert_eq!(svg.matches("stroke-width=\"2\"").count(), 1);
        let heat = heatmap_svg(&[a, b], 1_000_000_000, &PlotOptions::default());
        assert!(heat.contains("time (2 slices of 1s)"));
        assert!(
            heat.contains("fill=\"#0000ff\""),
            "the fullest cell is the darkest"
        );
    }
}
