//! System tier (capturing needs root or CAP_NET_RAW): a live capture on a quiet
//! interface says at once what it captures and keeps printing its summaries although
//! nothing arrives; SIGTERM and SIGHUP end a live capture recording with -w, its file
//! closed whole.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::PathBuf;
use std::process::{Command, Stdio};

use common::signals::{ddshark_with_default_signals, send, wait_exit, wait_for_file};

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

/// The (Uid, Gid, CapEff, CapPrm) lines of /proc/PID/status, once Uid no longer reads `0`.
fn status_after_the_drop(pid: u32) -> String {
    // Bounded wait for the child to open lo and switch users (no timing is asserted).
    for _ in 0..300 {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        if status
            .lines()
            .any(|l| l.starts_with("Uid:") && !l.contains("\t0\t"))
        {
            return status;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    panic!("ddshark -Z nobody never left uid 0 (pid {pid})");
}

fn status_field<'a>(status: &'a str, key: &str) -> Vec<&'a str> {
    let line = status
        .lines()
        .find(|l| l.starts_with(key))
        .unwrap_or_else(|| panic!("{key} missing from /proc status:\n{status}"));
    line.split_whitespace().skip(1).collect()
}

#[test]
fn z_runs_the_capture_as_the_user_without_capabilities() {
    let nobody = nix::unistd::User::from_name("nobody")
        .expect("reading the user database")
        .expect("this test needs the user nobody (Debian has it)");
    let (uid, gid) = (nobody.uid.to_string(), nobody.gid.to_string());
    // Traffic to a port only this test uses, so other loopback traffic does not count.
    let sink = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = sink.local_addr().unwrap().port().to_string();
    let mut child = Command::new(env!("CARGO_BIN_EXE_ddshark"))
        .args(["-i", "lo", "-Z", "nobody", "--no-tui", "-c", "3"])
        .args(["--duration", "60s", "udp", "port", &port])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("running ddshark");
    let status = status_after_the_drop(child.id());
    assert_eq!(status_field(&status, "Uid:"), [uid.as_str(); 4], "{status}");
    assert_eq!(status_field(&status, "Gid:"), [gid.as_str(); 4], "{status}");
    assert_eq!(status_field(&status, "Groups:"), [gid.as_str()], "{status}");
    assert_eq!(
        status_field(&status, "CapEff:"),
        ["0000000000000000"],
        "{status}"
    );
    assert_eq!(
        status_field(&status, "CapPrm:"),
        ["0000000000000000"],
        "{status}"
    );
    // It still captures: send until it has counted its 3 frames and stopped.
    let sender = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut sent = 0;
    while child.try_wait().unwrap().is_none() && sent < 600 {
        sender
            .send_to(b"ddshark -Z test", sink.local_addr().unwrap())
            .unwrap();
        sent += 1;
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{err}\n{stdout}");
    assert!(
        stdout.contains("lo: 3 frames"),
        "{sent} sent:\n{stdout}\n{err}"
    );
}

fn scratch(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("ddshark-cli-live-{}-{name}", std::process::id()));
    let _ = std::fs::remove_file(&p);
    p
}

/// A live capture recording with -w: the signal ends it as the end of the capture would,
/// exit 0, the pcapng closed and readable.
#[test]
fn sigterm_and_sighup_end_a_live_capture_and_close_its_recording() {
    for signal in ["TERM", "HUP"] {
        let rec = scratch(&format!("live-{signal}.pcapng"));
        let progress = scratch(&format!("live-{signal}.out"));
        let mut child = ddshark_with_default_signals(env!("CARGO_BIN_EXE_ddshark"))
            .args(["-i", "lo", "--no-tui", "--interval", "100ms", "-w"])
            .arg(&rec)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&progress).expect("stdout file"))
            .stderr(Stdio::null())
            .spawn()
            .expect("ddshark");
        wait_for_file(&progress);
        send(&child, signal);
        let (status, took) = wait_exit(&mut child, &format!("SIG{signal}"));
        eprintln!("-i lo -w, SIG{signal}: ended {took:?} after it, {status}");
        assert!(
            status.success(),
            "SIG{signal}: {status} (capturing needs root or CAP_NET_RAW)"
        );
        let read = Command::new(env!("CARGO_BIN_EXE_ddshark"))
            .arg("stats")
            .arg(&rec)
            .output()
            .expect("ddshark stats");
        assert!(
            read.status.success(),
            "the recording does not read back: {}",
            String::from_utf8_lossy(&read.stderr)
        );
    }
}
