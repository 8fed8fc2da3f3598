//! The `--html` report renders in a real headless Chromium, offline, with no console
//! errors, and its script runs to the end. Needs `chromium` (Debian package) on PATH,
//! or `$CHROMIUM`; a missing browser fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{chromium, fixtures, late_start_report};

/// One directory per test under cargo's target/tmp, emptied at the start: the screenshot
/// stays there for a look, and runs do not pile up browser profiles in /tmp.
fn tmpdir(tag: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("latency-html-{tag}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Run headless Chromium on `page`; returns (stderr log, DOM after scripts).
fn render(page: &Path, screenshot: &Path, dir: &Path) -> (String, String) {
    let browser = chromium();
    let profile = dir.join("profile");
    let common = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--no-first-run",
        "--enable-logging=stderr",
        "--v=0",
        "--window-size=1280,2000",
    ];
    let url = format!("file://{}", page.display());
    let shot = Command::new(&browser)
        .args(common)
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--screenshot={}", screenshot.display()))
        .arg(&url)
        .output()
        .unwrap();
    assert!(shot.status.success(), "chromium failed: {shot:?}");
    let dom = Command::new(&browser)
        .args(common)
        .arg(format!(
            "--user-data-dir={}",
            dir.join("profile2").display()
        ))
        .arg("--dump-dom")
        .arg(&url)
        .output()
        .unwrap();
    assert!(dom.status.success(), "chromium --dump-dom failed");
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&shot.stderr),
        String::from_utf8_lossy(&dom.stderr)
    );
    (log, String::from_utf8_lossy(&dom.stdout).into_owned())
}

/// Console messages of the page (Chromium logs them as `CONSOLE(line)] "..."`).
fn console_errors(log: &str) -> Vec<String> {
    log.lines()
        .filter(|l| l.contains("CONSOLE") || l.contains("Uncaught"))
        .map(str::to_string)
        .collect()
}

#[test]
fn html_report_renders_offline_without_console_errors() {
    let page = late_start_report(&fixtures().join("i_late_start"));
    // Self-contained: nothing is fetched.
    for bad in ["http://", "https://", "<link", "src=\"", "@import", "url("] {
        assert!(!page.contains(bad), "report references {bad}");
    }
    for want in [
        "id=\"boxplot\"",
        "id=\"timeplot\"",
        "class=\"plot hist\"",
        "rt/chatter",
    ] {
        assert!(page.contains(want), "report lacks {want}");
    }
    let tmp = tmpdir("ok");
    let file = tmp.join("report.html");
    std::fs::write(&file, &page).unwrap();
    let png = tmp.join("report.png");
    let (log, dom) = render(&file, &png, &tmp);
    let errors = console_errors(&log);
    assert!(errors.is_empty(), "console messages: {errors:#?}");
    assert!(
        dom.contains("data-ready=\"1\""),
        "the report's script did not run to the end"
    );
    let meta = std::fs::metadata(&png).unwrap();
    assert!(
        meta.len() > 20_000,
        "screenshot too small: {} bytes",
        meta.len()
    );
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(bytes.get(..8), Some(&b"\x89PNG\r\n\x1a\n"[..]));
    eprintln!("screenshot: {}", png.display());
}

/// The console check itself catches a broken page (so a silent browser cannot pass).
#[test]
fn console_check_catches_a_script_error() {
    let tmp = tmpdir("bad");
    let file = tmp.join("bad.html");
    std::fs::write(
        &file,
        "<!DOCTYPE html><html><body><p>x</p><script>undefinedFunction();</script></body></html>",
    )
    .unwrap();
    let (log, _) = render(&file, &tmp.join("bad.png"), &tmp);
    assert!(
        !console_errors(&log).is_empty(),
        "a script error went unnoticed:\n{log}"
    );
}
