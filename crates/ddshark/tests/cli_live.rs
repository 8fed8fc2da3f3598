//! System tier (capturing needs root or CAP_NET_RAW): a live capture on a quiet
//! interface says at once what it captures and keeps printing its summaries although
//! nothing arrives.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Command;

#[test]
fn a_quiet_interface_still_gets_its_first_line_and_summaries() {
    // Loopback with a filter nothing on this machine sends to: quiet.
    let out = Command::new(env!("CARGO_BIN_EXE_ddshark"))
        .args([
            "-i",
            "lo",
            "--no-tui",
            "--interval",
            "500ms",
            "--duration",
            "3s",
            "udp",
            "port",
            "9",
        ])
        .output()
        .expect("running ddshark");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "ddshark -i lo failed (capturing needs root or CAP_NET_RAW):\n{err}"
    );
    let first = err.lines().next().unwrap_or_default();
    assert!(
        first.contains("capturing on lo") && first.contains("filter: udp port 9"),
        "{err}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let summaries = stdout.lines().filter(|l| l.starts_with("=== ")).count();
    assert!(
        summaries >= 3,
        "{summaries} summaries in 3 s of a quiet capture:\n{stdout}"
    );
    assert!(stdout.contains("lo: 0 frames"), "{stdout}");
}
