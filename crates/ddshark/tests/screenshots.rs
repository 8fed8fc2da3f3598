//! The README's pictures, made from real data: the TUI rendered over a replay of a bundled
//! capture (ratatui's TestBackend, the cells' colours turned into HTML) and the `--html`
//! latency report of a bundled two-host capture, both photographed by headless Chromium into
//! a temporary directory, then compared with the references in docs/img/: the expected size,
//! several times larger than a blank page of the same size (a picture of something), and at
//! most [`MAX_DIFFERENT_PIXELS`] of its pixels visibly different from the reference. After a
//! change meant to alter a picture, `DDSHARK_BLESS=1` writes the new one over the reference.
//! Needs `chromium` (or `$CHROMIUM`); a missing browser fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::tui::replay;
use common::{chromium, late_start_report, repo_root};
use ddshark::tui::{render, TopicColumn};
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::style::{Color, Modifier};
use ratatui::Terminal;

const TUI_COLS: u16 = 140;
const TUI_ROWS: u16 = 40;
/// DejaVu Sans Mono at 14 px: 8.43 px per column; 17 px per row.
const CELL_W: f64 = 8.43;
const CELL_H: u32 = 17;

/// Share of pixels allowed to differ from the reference: room for a font hinting or
/// antialiasing change between Chromium builds, far less than one changed word of a row.
const MAX_DIFFERENT_PIXELS: f64 = 0.002;
/// A channel differing by more than this is a visible difference, not antialiasing noise.
const CHANNEL_TOLERANCE: u8 = 48;

fn reference(name: &str) -> PathBuf {
    repo_root().join("docs/img").join(name)
}

fn work_dir(tag: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("screenshots-{tag}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Headless Chromium photographs `page` at `width`×`height` into `png`.
fn photograph(page: &Path, png: &Path, width: u32, height: u32, dir: &Path) {
    let out = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--disable-background-networking",
            "--disable-component-update",
            "--no-first-run",
            "--force-device-scale-factor=1",
        ])
        .arg(format!("--window-size={width},{height}"))
        .arg(format!("--user-data-dir={}", dir.join("profile").display()))
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "chromium failed on {}: {}",
        page.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A PNG's width, height and pixels as RGBA, 8 bits a channel.
fn decode_rgba(png: &Path) -> (u32, u32, Vec<u8>) {
    let mut decoder = png::Decoder::new(std::io::BufReader::new(
        std::fs::File::open(png).unwrap_or_else(|e| panic!("{}: {e}", png.display())),
    ));
    decoder.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = decoder
        .read_info()
        .unwrap_or_else(|e| panic!("{}: {e}", png.display()));
    let mut pixels = vec![0; reader.output_buffer_size()];
    let frame = reader.next_frame(&mut pixels).unwrap();
    pixels.truncate(frame.buffer_size());
    let rgba = match frame.color_type {
        png::ColorType::Rgba => pixels,
        png::ColorType::Rgb => pixels
            .chunks_exact(3)
            .flat_map(|p| [p[0], p[1], p[2], 255])
            .collect(),
        other => panic!("{}: unexpected colour type {other:?}", png.display()),
    };
    (frame.width, frame.height, rgba)
}

/// The share of pixels of `new` visibly different from `reference` (both the same size).
fn different_pixels(new: &[u8], reference: &[u8]) -> f64 {
    let differ = new
        .chunks_exact(4)
        .zip(reference.chunks_exact(4))
        .filter(|(a, b)| {
            a.iter()
                .zip(*b)
                .any(|(x, y)| x.abs_diff(*y) > CHANNEL_TOLERANCE)
        })
        .count();
    differ as f64 / (new.len() / 4).max(1) as f64
}

/// The new photograph `png` against its reference `docs/img/<name>`; `DDSHARK_BLESS=1`
/// makes it the reference instead.
fn compare_with_reference(png: &Path, name: &str) {
    let reference = reference(name);
    if std::env::var_os("DDSHARK_BLESS").is_some_and(|v| v == "1") {
        std::fs::copy(png, &reference).unwrap();
        eprintln!("{}: blessed from {}", reference.display(), png.display());
        return;
    }
    let (w, h, new) = decode_rgba(png);
    let (rw, rh, old) = decode_rgba(&reference);
    assert_eq!(
        (w, h),
        (rw, rh),
        "{} and its reference {} differ in size (DDSHARK_BLESS=1 after an intended change)",
        png.display(),
        reference.display()
    );
    let share = different_pixels(&new, &old);
    assert!(
        share <= MAX_DIFFERENT_PIXELS,
        "{} differs from its reference {} in {:.3} % of its pixels (at most {:.3} % allowed); \
         look at both, and after an intended change run the test with DDSHARK_BLESS=1",
        png.display(),
        reference.display(),
        share * 100.0,
        MAX_DIFFERENT_PIXELS * 100.0
    );
    eprintln!(
        "{name}: {:.3} % of pixels differ from the reference",
        share * 100.0
    );
}

/// `png` is a picture of something: the size asked for, and several times the bytes of a
/// blank page photographed at the same size (a flat PNG compresses to almost nothing).
fn check_picture(png: &Path, width: u32, height: u32, dir: &Path) {
    let bytes = std::fs::read(png).unwrap();
    let (w, h, _) = decode_rgba(png);
    assert_eq!((w, h), (width, height), "{}", png.display());
    let blank = dir.join("blank.html");
    std::fs::write(&blank, "<!DOCTYPE html><html><body></body></html>").unwrap();
    let blank_png = dir.join("blank.png");
    photograph(&blank, &blank_png, width, height, dir);
    let blank_len = std::fs::metadata(&blank_png).unwrap().len();
    let len = u64::try_from(bytes.len()).unwrap();
    assert!(
        len > 20_000 && len > 5 * blank_len,
        "{} looks empty: {len} bytes, a blank page {blank_len}",
        png.display()
    );
    eprintln!("{}: {width}x{height}, {len} bytes", png.display());
}

/// A terminal's colours (xterm's palette on a dark background).
fn css(color: Color, default: &str) -> String {
    let named = match color {
        Color::Reset => return default.to_string(),
        Color::Black => "#000000",
        Color::Red => "#cd3131",
        Color::Green => "#0dbc79",
        Color::Yellow => "#e5e510",
        Color::Blue => "#2472c8",
        Color::Magenta => "#bc3fbc",
        Color::Cyan => "#11a8cd",
        Color::Gray => "#bbbbbb",
        Color::DarkGray => "#767676",
        Color::LightRed => "#f14c4c",
        Color::LightGreen => "#23d18b",
        Color::LightYellow => "#f5f543",
        Color::LightBlue => "#3b8eea",
        Color::LightMagenta => "#d670d6",
        Color::LightCyan => "#29b8db",
        Color::White => "#e5e5e5",
        Color::Rgb(r, g, b) => return format!("#{r:02x}{g:02x}{b:02x}"),
        Color::Indexed(i) => return format!("hsl({} 60% 60%)", u16::from(i) * 360 / 256),
    };
    named.to_string()
}

/// The rendered cells as an HTML page: one `<span>` per run of equally styled cells.
fn buffer_html(buf: &Buffer) -> String {
    const FG: &str = "#d4d4d4";
    const BG: &str = "#1e1e1e";
    let mut body = String::new();
    let area = buf.area;
    for y in 0..area.height {
        let mut run_style = None;
        for x in 0..area.width {
            let cell = &buf[(x, y)];
            let reversed = cell.modifier.contains(Modifier::REVERSED);
            let (mut fg, mut bg) = (css(cell.fg, FG), css(cell.bg, BG));
            if reversed {
                std::mem::swap(&mut fg, &mut bg);
            }
            let bold = cell.modifier.contains(Modifier::BOLD);
            let style = format!(
                "color:{fg};background:{bg}{}",
                if bold { ";font-weight:bold" } else { "" }
            );
            if run_style.as_ref() != Some(&style) {
                if run_style.is_some() {
                    body.push_str("</span>");
                }
                write!(body, "<span style=\"{style}\">").unwrap();
                run_style = Some(style);
            }
            for c in cell.symbol().chars() {
                match c {
                    '<' => body.push_str("&lt;"),
                    '>' => body.push_str("&gt;"),
                    '&' => body.push_str("&amp;"),
                    c => body.push(c),
                }
            }
        }
        body.push_str("</span>\n");
    }
    format!(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><style>\
         html,body{{margin:0;background:#1e1e1e}}\
         pre{{margin:0;font:14px/{CELL_H}px 'DejaVu Sans Mono',monospace;white-space:pre}}\
         </style></head><body><pre>{body}</pre></body></html>"
    )
}

/// The Topics view over the VLAN capture (Autoware topics, a fragmented point cloud), the
/// point cloud's detail pane open.
#[test]
fn tui_screenshot() {
    let (mut ui, snap) = replay("h_vlan_pcp/a.pcap");
    ui.sort = TopicColumn::Bandwidth;
    ui.descending = true;
    ui.ros_names = true;
    let mut term = Terminal::new(TestBackend::new(TUI_COLS, TUI_ROWS)).unwrap();
    term.draw(|f| render(f, Some(&snap), &ui)).unwrap();
    let screen = term.backend().to_string();
    for want in ["/sensing/lidar/points", "Topics", "sample sizes"] {
        assert!(screen.contains(want), "the TUI lacks {want}:\n{screen}");
    }
    let dir = work_dir("tui");
    let page = dir.join("tui.html");
    std::fs::write(&page, buffer_html(term.backend().buffer())).unwrap();
    let width = (f64::from(TUI_COLS) * CELL_W).ceil() as u32;
    let height = u32::from(TUI_ROWS) * CELL_H;
    let png = dir.join("tui-topics.png");
    photograph(&page, &png, width, height, &dir);
    check_picture(&png, width, height, &dir);
    compare_with_reference(&png, "tui-topics.png");
}

/// The HTML report of the bundled late-start two-host capture.
#[test]
fn latency_report_screenshot() {
    // The report names its captures as given: as a user in the repository would.
    std::env::set_current_dir(repo_root()).unwrap();
    let page_text = late_start_report(Path::new("tests/pcaps/i_late_start"));
    assert!(
        page_text.contains("rt/chatter"),
        "the report lacks its topic"
    );
    let work = work_dir("latency");
    let page = work.join("report.html");
    std::fs::write(&page, page_text).unwrap();
    let png = work.join("latency-report.png");
    let (width, height) = (1200, 915);
    photograph(&page, &png, width, height, &work);
    check_picture(&png, width, height, &work);
    compare_with_reference(&png, "latency-report.png");
}
