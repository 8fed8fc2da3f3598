//! SIGTERM and SIGHUP end ddshark within a second whatever its mode, with what it was asked
//! to write written: a paced replay without the UI; `stats`, `dissect` and `latency` on an
//! input that never ends (a pipe left open). The TUI's cases are in tui_tmux.rs, a live
//! capture recording with -w in cli_live.rs (both system tier: a terminal, capturing). The bound
//! asserted is generous (5 s); the times taken are printed. A signal ignored on entry (`nohup`)
//! stays ignored.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::Write;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use common::fixture;
use common::signals::{ddshark_with_default_signals, send, wait_exit, wait_for_file};

fn scratch(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("ddshark-signals-{}-{name}", std::process::id()));
    let _ = std::fs::remove_file(&p);
    p
}

/// A paced replay without the UI (`--no-tui`): the signal ends it as the end of the file
/// would, exit 0 and --final-json written.
#[test]
fn sigterm_and_sighup_end_a_replay_and_write_its_final_json() {
    for signal in ["TERM", "HUP", "INT"] {
        let out = scratch(&format!("replay-{signal}.json"));
        let progress = scratch(&format!("replay-{signal}.out"));
        let mut child = ddshark_with_default_signals(env!("CARGO_BIN_EXE_ddshark"))
            .arg("-r")
            .arg(fixture("h_vlan_pcp/a.pcap"))
            .args([
                "--no-tui",
                "--speed",
                "0.05",
                "--interval",
                "100ms",
                "--final-json",
            ])
            .arg(&out)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&progress).expect("stdout file"))
            .stderr(Stdio::null())
            .spawn()
            .expect("ddshark");
        wait_for_file(&progress);
        send(&child, signal);
        let (status, took) = wait_exit(&mut child, &format!("SIG{signal}"));
        eprintln!("-r --no-tui, SIG{signal}: ended {took:?} after it, {status}");
        assert!(status.success(), "SIG{signal}: {status}");
        let json = std::fs::read_to_string(&out).expect("--final-json written");
        assert!(json.contains("\"topics\""), "{json}");
    }
}

/// `stats`, `dissect` and `latency` reading a pipe that stays open (a capture's header and
/// then nothing): each ends on the signal.
#[test]
fn sigterm_and_sighup_end_stats_dissect_and_latency() {
    let header = std::fs::read(fixture("h_vlan_pcp/a.pcap")).expect("fixture");
    let b = fixture("h_vlan_pcp/b.pcap");
    let b = b.to_str().expect("utf-8 path");
    let cases: [&[&str]; 3] = [&["stats", "-"], &["dissect", "-"], &["latency", "-", b]];
    for args in cases {
        for signal in ["TERM", "HUP"] {
            let mut child = ddshark_with_default_signals(env!("CARGO_BIN_EXE_ddshark"))
                .args(args)
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("ddshark");
            let mut stdin = child.stdin.take().expect("stdin");
            // The pcap file header and the first frames; the pipe stays open.
            stdin.write_all(&header[..4096]).expect("writing the pipe");
            stdin.flush().expect("flush");
            std::thread::sleep(Duration::from_millis(300));
            send(&child, signal);
            let (status, took) = wait_exit(&mut child, &format!("SIG{signal}"));
            eprintln!("{args:?}, SIG{signal}: ended {took:?} after it, {status}");
            drop(stdin);
        }
    }
}

/// Started as a script's `nohup ddshark … &` starts it (SIGHUP and SIGINT ignored), a replay or
/// capture outlives the terminal: SIGHUP stays ignored, SIGINT (`kill -INT $!`) still ends it
/// with its outputs written.
#[test]
fn a_sighup_ignored_on_entry_stays_ignored_sigint_still_ends_the_run() {
    let out = scratch("nohup.json");
    let progress = scratch("nohup.out");
    let mut child = std::process::Command::new("env")
        .args(["--default-signal=TERM", "--ignore-signal=HUP,INT"])
        .arg(env!("CARGO_BIN_EXE_ddshark"))
        .arg("-r")
        .arg(fixture("h_vlan_pcp/a.pcap"))
        .args([
            "--no-tui",
            "--speed",
            "0.05",
            "--interval",
            "100ms",
            "--final-json",
        ])
        .arg(&out)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&progress).expect("stdout file"))
        .stderr(Stdio::null())
        .spawn()
        .expect("ddshark");
    wait_for_file(&progress);
    send(&child, "HUP");
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        child.try_wait().expect("try_wait").is_none(),
        "SIGHUP ignored on entry ended the replay"
    );
    assert!(!out.exists(), "--final-json written before the end");
    send(&child, "INT");
    let (status, took) = wait_exit(&mut child, "SIGINT");
    eprintln!(
        "-r --no-tui under nohup in the background, SIGINT: ended {took:?} after it, {status}"
    );
    assert!(status.success(), "SIGINT: {status}");
    let json = std::fs::read_to_string(&out).expect("--final-json written");
    assert!(json.contains("\"topics\""), "{json}");
}
