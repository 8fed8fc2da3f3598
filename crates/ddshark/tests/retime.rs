//! `ddshark -r FILE --retime WHEN`: the replay's first frame is at WHEN and every other frame
//! keeps its distance to it, to the nanosecond (what the stack demo relies on to put an old
//! two-host capture pair at "now" without changing a latency).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::fixture;

/// (first frame, last frame) in ns of `ddshark -r FILE --no-tui EXTRA… --final-json`.
fn replay_span(rel: &str, extra: &[&str]) -> (u64, u64) {
    static RUN: AtomicUsize = AtomicUsize::new(0);
    let out_json = std::env::temp_dir().join(format!(
        "ddshark-retime-{}-{}.json",
        std::process::id(),
        RUN.fetch_add(1, Ordering::Relaxed)
    ));
    let out = Command::new(env!("CARGO_BIN_EXE_ddshark"))
        .arg("-r")
        .arg(fixture(rel))
        .args(["--no-tui", "--interval", "1h", "--final-json"])
        .arg(&out_json)
        .args(extra)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&out_json).unwrap()).unwrap();
    let _ = std::fs::remove_file(&out_json);
    let s = &v["summary"];
    (
        s["first_ts_ns"].as_u64().unwrap(),
        s["capture_time_ns"].as_u64().unwrap(),
    )
}

#[test]
fn retime_puts_the_first_frame_at_the_given_instant() {
    let (first, last) = replay_span("i_late_start/a.pcap", &[]);
    let (new_first, new_last) =
        replay_span("i_late_start/a.pcap", &["--retime", "2000000000.000000123"]);
    assert_eq!(new_first, 2_000_000_000_000_000_123);
    assert_eq!(
        new_last - new_first,
        last - first,
        "distances kept to the ns"
    );
}

#[test]
fn retime_now_is_after_the_capture_and_refuses_garbage() {
    let (first, _) = replay_span("i_late_start/a.pcap", &[]);
    let (now_first, _) = replay_span("i_late_start/a.pcap", &["--retime", "now"]);
    assert!(
        now_first > first,
        "now ({now_first}) is after the recording ({first})"
    );
    for bad in ["yesterday", "1.2.3", "1e9", "1764100000.1234567891"] {
        let out = Command::new(env!("CARGO_BIN_EXE_ddshark"))
            .arg("-r")
            .arg(fixture("i_late_start/a.pcap"))
            .args(["--no-tui", "--retime", bad])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "--retime {bad} accepted");
        assert!(String::from_utf8_lossy(&out.stderr).contains("--retime"));
    }
    let out = Command::new(env!("CARGO_BIN_EXE_ddshark"))
        .args(["-i", "guide-no-such-if0", "--no-tui", "--retime", "now"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "--retime on a live capture accepted"
    );
}
