//! Live capture in network namespaces (tests/live/live_capture.sh): tcpdump and
//! `ddshark -i` capture the same real Cyclone DDS traffic; the counts must agree.
//! Needs root, tcpdump, tshark and the Cyclone DDS venv, so it is `#[ignore]`d in a
//! plain `cargo test`; CI runs it with `--ignored`, and then a missing tool fails it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::Command;

#[test]
#[ignore = "needs root, network namespaces, tcpdump, tshark, /opt/dds-venv: cargo test -p ddshark --test live -- --ignored"]
fn live_capture_matches_tcpdump() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/live/live_capture.sh");
    let out = Command::new("bash")
        .arg(&script)
        .arg(env!("CARGO_BIN_EXE_ddshark"))
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "live test failed:\n{text}");
    assert!(text.contains("live test passed"), "{text}");
}
