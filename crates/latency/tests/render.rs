//! The plots as a real renderer draws them: every picture is rendered by `rsvg-convert`
//! (librsvg, installed by `.ci/run`) and compared with its reference picture in
//! `fixtures/plots/` (`PKGPROF_BLESS=1` rewrites them), with this crate's own PNG renderer
//! (resvg), and with what the SVG says: each bar's pixels are its colour, the gaps are white.

#![cfg(feature = "png")]
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use latency::plot::{PlotOptions, diff_svg, heatmap_svg, png, profile_svg};
use latency::{Histogram, Resolution};
use resvg::tiny_skia::Pixmap;

/// Calls of 1.5 us (900), 3 ms (90) and one of 40 ns: two peaks and a stray call.
fn two_peaks(r: Resolution) -> Histogram {
    let mut h = Histogram::new(r);
    for i in 0..900 {
        h.add(1_400 + i % 200);
    }
    for i in 0..90 {
        h.add(3_000_000 + i * 1_000);
    }
    h.add(40);
    h
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("latency-render-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Renders `svg` with rsvg-convert.
fn rsvg(svg: &str, dir: &Path, name: &str) -> Pixmap {
    let input = dir.join(format!("{name}.svg"));
    let output = dir.join(format!("{name}.png"));
    std::fs::write(&input, svg).unwrap();
    let status = Command::new("rsvg-convert")
        .arg("-o")
        .arg(&output)
        .arg(&input)
        .status()
        .expect("rsvg-convert runs (apt-get install librsvg2-bin; .ci/run installs it)");
    assert!(
        status.success(),
        "rsvg-convert failed on {}",
        input.display()
    );
    Pixmap::load_png(&output).unwrap()
}

/// The share of pixels whose colour differs by more than a faint anti-aliasing edge.
fn differing(a: &Pixmap, b: &Pixmap) -> f64 {
    assert_eq!((a.width(), a.height()), (b.width(), b.height()));
    let n = a
        .pixels()
        .iter()
        .zip(b.pixels())
        .filter(|(p, q)| {
            let (p, q) = (p.demultiply(), q.demultiply());
            [
                (p.red(), q.red()),
                (p.green(), q.green()),
                (p.blue(), q.blue()),
                (p.alpha(), q.alpha()),
            ]
            .iter()
            .any(|&(x, y)| x.abs_diff(y) > 64)
        })
        .count();
    n as f64 / a.pixels().len() as f64
}

/// rsvg-convert's picture against the reference, and against ours.
fn check(svg: &str, name: &str) -> Pixmap {
    let dir = scratch(name);
    let drawn = rsvg(svg, &dir, name);
    let reference = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/plots")
        .join(format!("{name}.png"));
    if std::env::var_os("PKGPROF_BLESS").is_some() {
        std::fs::copy(dir.join(format!("{name}.png")), &reference).unwrap();
    }
    let expected = Pixmap::load_png(&reference).unwrap();
    let off = differing(&drawn, &expected);
    assert!(
        off < 0.01,
        "{name}: {:.2}% of the pixels differ from {} (rendered: {})",
        off * 100.0,
        reference.display(),
        dir.display()
    );
    // Our PNG renderer draws the same picture; text is shaped a little differently.
    let ours = Pixmap::decode_png(&png(svg).unwrap()).unwrap();
    let off = differing(&drawn, &ours);
    assert!(
        off < 0.03,
        "{name}: resvg and rsvg-convert differ on {:.2}% of the pixels (kept in {})",
        off * 100.0,
        dir.display()
    );
    std::fs::remove_dir_all(&dir).unwrap();
    drawn
}

/// `[x, y, width, height]` of each `<rect …/>` line of `svg` containing `attr`.
fn rects(svg: &str, attr: &str) -> Vec<[f32; 4]> {
    let num = |line: &str, key: &str| -> f32 {
        let start = line.find(&format!(" {key}=\"")).unwrap() + key.len() + 3;
        let len = line[start..].find('"').unwrap();
        line[start..start + len].parse().unwrap()
    };
    svg.lines()
        .filter(|l| l.starts_with("<rect") && l.contains(attr))
        .map(|l| [num(l, "x"), num(l, "y"), num(l, "width"), num(l, "height")])
        .collect()
}

fn rgb(p: &Pixmap, x: f32, y: f32) -> (u8, u8, u8) {
    let c = p.pixel(x as u32, y as u32).unwrap().demultiply();
    (c.red(), c.green(), c.blue())
}

#[test]
fn a_profile_is_drawn_with_its_bars_where_the_svg_puts_them() {
    let h = two_peaks(Resolution::ONE);
    let mut opts = PlotOptions::default();
    opts.title = "read: 991 calls".into();
    let svg = profile_svg(&h, &opts);
    let drawn = check(&svg, "profile");
    let bars = rects(&svg, "fill-opacity");
    assert_eq!(bars.len(), 3, "three buckets hold calls");
    for [x, y, w, hgt] in &bars {
        // #3465a4 at 75% on white.
        let (r, g, b) = rgb(&drawn, x + w / 2.0, y + hgt - 2.0);
        assert!(
            r.abs_diff(103) < 8 && g.abs_diff(140) < 8 && b.abs_diff(187) < 8,
            "bar at x {x}: ({r}, {g}, {b})"
        );
    }
    // Between the 1.5 us and 3 ms peaks the buckets are empty: white.
    let [x1, y1, w1, h1] = bars[1];
    let x2 = bars[2][0];
    assert!(x2 - (x1 + w1) > 20.0);
    assert_eq!(
        rgb(&drawn, (x1 + w1 + x2) / 2.0, y1 + h1 - 2.0),
        (255, 255, 255)
    );
}

#[test]
fn a_diff_overlays_two_profiles_and_a_heat_map_shades_time_slices() {
    let a = two_peaks(Resolution::new(2).unwrap());
    let mut b = Histogram::new(Resolution::new(2).unwrap());
    for _ in 0..500 {
        b.add(1_500);
    }
    let svg = diff_svg(&a, &b, ("A before", "B after"), &PlotOptions::default());
    let drawn = check(&svg, "diff");
    let outlines = rects(&svg, "stroke-width=\"2\"");
    assert_eq!(outlines.len(), 1);
    let [x, y, _, _] = outlines[0];
    // The outline's stroke is red (#cc0000) at its top edge, above the filled bar.
    let (r, g, bl) = rgb(&drawn, x + 3.0, y);
    assert!(r > 150 && g < 90 && bl < 90, "outline ({r}, {g}, {bl})");

    let slices: Vec<Histogram> = (0..6)
        .map(|i| {
            let mut h = Histogram::new(Resolution::ONE);
            for _ in 0..(10 * (i + 1)) {
                h.add(1_000 << i);
            }
            h
        })
        .collect();
    let svg = heatmap_svg(&slices, 250_000_000, &PlotOptions::default());
    let drawn = check(&svg, "heatmap");
    // The background, then one cell per slice; the fullest is the darkest.
    let cells = rects(&svg, "fill=\"#");
    let cells = &cells[1..];
    assert_eq!(cells.len(), 6);
    let shade = |c: &[f32; 4]| rgb(&drawn, c[0] + c[2] / 2.0, c[1] + c[3] / 2.0);
    assert_eq!(shade(&cells[5]), (0, 0, 255));
    let darker = cells.windows(2).all(|w| shade(&w[0]).0 > shade(&w[1]).0);
    assert!(darker, "shades get darker with more calls");
}

#[test]
fn the_readme_plots_are_drawn_with_their_bars_where_the_svg_puts_them() {
    // README's pictures (benches/readme-latency.sh draws them from real runs): rsvg-convert
    // draws every filled bar in the bar colour and every outline in red.
    let img = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/img");
    for name in [
        "latency-fcntl-contended",
        "latency-fcntl-alone-vs-contended",
    ] {
        let svg = std::fs::read_to_string(img.join(format!("{name}.svg"))).unwrap();
        let dir = scratch(name);
        let drawn = rsvg(&svg, &dir, name);
        let bars = rects(&svg, "fill-opacity");
        assert!(bars.len() >= 2, "{name}: {} bars", bars.len());
        for [x, y, w, hgt] in &bars {
            let (r, g, b) = rgb(&drawn, x + w / 2.0, y + hgt - 2.0_f32.min(hgt / 2.0));
            assert!(
                r.abs_diff(103) < 8 && g.abs_diff(140) < 8 && b.abs_diff(187) < 8,
                "{name}: bar at x {x}: ({r}, {g}, {b})"
            );
        }
        for [x, y, _, _] in rects(&svg, "stroke-width=\"2\"") {
            let (r, g, b) = rgb(&drawn, x + 3.0, y);
            assert!(
                r > 150 && g < 90 && b < 90,
                "{name}: outline ({r}, {g}, {b})"
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
