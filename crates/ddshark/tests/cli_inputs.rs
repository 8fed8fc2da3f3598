//! Inputs a user gets wrong, for every command: each message names the input and what is
//! wrong with it (a directory, an empty file, a file cut short, standard input where it cannot
//! be read twice, a zero duration), with the documented exit status.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn ddshark(args: &[&str]) -> Output {
    ddshark_with_stdin(args, None)
}

fn ddshark_with_stdin(args: &[&str], stdin: Option<&Path>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ddshark"))
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(p) = stdin {
        let bytes = std::fs::read(p).unwrap();
        let mut pipe = child.stdin.take().unwrap();
        // Written from a thread: the child may fill its stdout before reading all of it.
        std::thread::spawn(move || {
            let _ = pipe.write_all(&bytes);
        });
    }
    child.wait_with_output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn fixture(rel: &str) -> String {
    common::fixture(rel).to_string_lossy().into_owned()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ddshark-cli-inputs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// Every command that reads a capture, with `input` as (one of) its captures.
fn commands(input: &str) -> Vec<Vec<String>> {
    let a = fixture("a_small_reliable/a.pcap");
    let b = fixture("a_small_reliable/b.pcap");
    let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    vec![
        v(&["stats", input]),
        v(&["dissect", input]),
        v(&["-r", input, "--no-tui"]),
        v(&["latency", input, &b]),
        v(&["latency", &a, input]),
    ]
}

fn run(cmd: &[String]) -> Output {
    ddshark(&cmd.iter().map(String::as_str).collect::<Vec<_>>())
}

/// Before: `cat a.pcap | ddshark latency - b.pcap` said "reading -: No such file or
/// directory". Standard input is spooled (latency reads its captures twice) and gives the
/// same latencies as the file.
#[test]
fn latency_reads_one_capture_from_standard_input() {
    let a = fixture("a_small_reliable/a.pcap");
    let b = fixture("a_small_reliable/b.pcap");
    let from_file = ddshark(&["latency", &a, &b, "--format", "jsonl", "-q"]);
    assert!(from_file.status.success(), "{}", stderr(&from_file));
    let piped = ddshark_with_stdin(
        &["latency", "-", &b, "--format", "jsonl", "-q"],
        Some(Path::new(&a)),
    );
    assert!(piped.status.success(), "{}", stderr(&piped));
    let lines = |o: &Output| -> Vec<String> {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter(|l| !l.contains("\"kind\":\"stats\""))
            .map(str::to_owned)
            .collect()
    };
    assert!(lines(&piped).len() > 100);
    assert_eq!(lines(&piped), lines(&from_file));
    let stats = String::from_utf8_lossy(&piped.stdout)
        .lines()
        .find(|l| l.contains("\"kind\":\"stats\""))
        .map(str::to_owned)
        .unwrap();
    assert!(stats.contains("- (standard input)"), "{stats}");

    // The receiver from standard input too.
    let piped_b = ddshark_with_stdin(&["latency", &a, "-", "-q"], Some(Path::new(&b)));
    assert!(piped_b.status.success(), "{}", stderr(&piped_b));

    // Twice is a wrong command line; nothing piped in is said.
    let twice = ddshark(&["latency", "-", "-"]);
    assert_eq!(twice.status.code(), Some(2), "{}", stderr(&twice));
    assert!(stderr(&twice).contains("- (standard input) is given 2 times"));
    let text = scratch("stdin.txt");
    std::fs::write(&text, "not a capture\n").unwrap();
    let garbage = ddshark_with_stdin(&["latency", "-", &b], Some(&text));
    assert_eq!(garbage.status.code(), Some(1));
    assert!(
        stderr(&garbage).contains("- (standard input): cannot open capture: unknown file format"),
        "{}",
        stderr(&garbage)
    );
    let empty = ddshark(&["latency", "-", &b]);
    assert_eq!(empty.status.code(), Some(1));
    assert!(
        stderr(&empty).contains("- (standard input) is empty"),
        "{}",
        stderr(&empty)
    );
}

/// Before: `ddshark stats DIR` said "DIR: cannot open capture: read error".
#[test]
fn a_directory_is_named_as_a_directory_by_every_command() {
    let dir = fixture("a_small_reliable");
    for cmd in commands(&dir) {
        let out = run(&cmd);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{cmd:?}: {err}");
        assert!(
            err.contains(&format!("{dir}: cannot open capture: it is a directory")),
            "{cmd:?}: {err}"
        );
    }
}

/// Before: `--interval 0` said to write "0s", which is refused too.
#[test]
fn a_zero_duration_suggests_a_valid_value_and_the_range() {
    let a = fixture("a_small_reliable/a.pcap");
    let b = fixture("a_small_reliable/b.pcap");
    for cmd in [
        vec!["-r", &a, "--no-tui", "--interval", "0"],
        vec!["-r", &a, "--no-tui", "--interval", "0s"],
        vec!["latency", &a, &b, "--window", "0"],
    ] {
        let out = ddshark(&cmd);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{cmd:?}: {err}");
        assert!(
            err.contains("must be more than 0: give e.g. 10s or 250ms (allowed: 1ns or more"),
            "{cmd:?}: {err}"
        );
        assert!(!err.contains("write e.g. 0s"), "{cmd:?}: {err}");
    }
}

/// Missing, empty, not a capture, cut short in its header, cut short before its first frame:
/// every command names the file and what is wrong.
#[test]
fn bad_files_are_named_with_what_is_wrong_by_every_command() {
    let a = std::fs::read(fixture("a_small_reliable/a.pcap")).unwrap();
    let write = |name: &str, bytes: &[u8]| {
        let p = scratch(name);
        std::fs::write(&p, bytes).unwrap();
        p.to_string_lossy().into_owned()
    };
    let missing = scratch("missing.pcap").to_string_lossy().into_owned();
    let cases = [
        (missing, "No such file or directory"),
        (write("empty.pcap", b""), "the file is empty"),
        (
            write("text.pcap", b"hello, not a capture\n"),
            "unknown file format",
        ),
        (
            write("header.pcap", &a[..20]),
            "cut short inside its file header (20 bytes of the 24 it needs)",
        ),
    ];
    for (path, what) in &cases {
        for cmd in commands(path) {
            let out = run(&cmd);
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(1), "{cmd:?}: {err}");
            assert!(
                err.contains(&format!("{path}: cannot open capture: ")) && err.contains(what),
                "{cmd:?}: {err}"
            );
        }
    }
    // The file header and part of the first record: every command says the file is cut
    // short; stats, dissect and a replay go on with nothing (exit 0; before, a replay said
    // nothing about it), latency has no latency to measure.
    let cut = write("cut.pcap", &a[..100]);
    for cmd in commands(&cut) {
        let out = run(&cmd);
        let err = stderr(&out);
        assert!(
            err.contains(&format!("{cut}: file is cut short after frame 0")),
            "{cmd:?}: {err}"
        );
        if cmd[0] == "latency" {
            assert_eq!(out.status.code(), Some(1), "{cmd:?}: {err}");
            assert!(
                err.contains(&format!("{cut} holds no frame")),
                "{cmd:?}: {err}"
            );
        } else {
            assert_eq!(out.status.code(), Some(0), "{cmd:?}: {err}");
        }
    }
}

/// An unknown `--format` lists the valid ones for every command (clap), exit 2.
#[test]
fn an_unknown_format_lists_the_valid_ones() {
    let a = fixture("a_small_reliable/a.pcap");
    let b = fixture("a_small_reliable/b.pcap");
    for (cmd, valid) in [
        (vec!["stats", &a], "json, text"),
        (vec!["dissect", &a], "text, json, jsonl"),
        (vec!["latency", &a, &b], "text, tsv, json, jsonl"),
        (vec!["-r", &a, "--no-tui"], "text, jsonl"),
    ] {
        let mut cmd = cmd.clone();
        cmd.extend(["--format", "xml"]);
        let out = ddshark(&cmd);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{cmd:?}: {err}");
        assert!(
            err.contains("invalid value 'xml' for '--format")
                && err.contains(&format!("[possible values: {valid}]")),
            "{cmd:?}: {err}"
        );
    }
}
