//! The command line never fails silently: every option that cannot do what was asked
//! says so, naming the flag or file, with a documented exit status (0 done, 1 failed,
//! 2 wrong command line). Parse-level checks use the binary's own `Cli`; the rest runs
//! the binary on bundled captures.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

mod common;

use std::path::PathBuf;
use std::process::{Command, Output};

use clap::error::ErrorKind;
use clap::Parser;
use ddshark::cli::{Cli, EXIT_FAILURE, EXIT_USAGE};

fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
    Cli::try_parse_from(std::iter::once("ddshark").chain(args.iter().copied()))
}

fn parse_error(args: &[&str]) -> clap::Error {
    match parse(args) {
        Ok(c) => panic!("{args:?} parsed: {c:?}"),
        Err(e) => e,
    }
}

fn ddshark(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ddshark"))
        .args(args)
        .output()
        .expect("running ddshark")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn small() -> String {
    common::fixture("a_small_reliable/a.pcap")
        .to_string_lossy()
        .into_owned()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ddshark-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir.join(name)
}

/// The final snapshot of `ddshark -r FILE --no-tui ARGS` (its `--final-json`).
fn final_json(name: &str, args: &[&str]) -> serde_json::Value {
    let out_path = scratch(name);
    let pcap = small();
    let path = out_path.to_string_lossy().into_owned();
    let mut all = vec![
        "-r",
        &pcap,
        "--no-tui",
        "--interval",
        "1h",
        "--final-json",
        &path,
    ];
    all.extend_from_slice(args);
    let out = ddshark(&all);
    assert!(out.status.success(), "{all:?}:\n{}", stderr(&out));
    let text = std::fs::read_to_string(&out_path).expect("final json");
    serde_json::from_str(&text).expect("final json parses")
}

fn frames(snap: &serde_json::Value) -> u64 {
    snap["health"]["dissector"]["frames"]
        .as_u64()
        .expect("health.dissector.frames")
}

#[test]
fn filter_words_stop_at_the_next_flag() {
    let cli = parse(&[
        "-i", "lo", "udp", "port", "7400", "--no-tui", "--format", "jsonl",
    ])
    .expect("parses");
    assert_eq!(cli.daemon.filter, ["udp", "port", "7400"]);
    assert!(cli.daemon.no_tui);
    assert_eq!(cli.daemon.format, ddshark::daemon::DaemonFormat::Jsonl);
    // Before the flags, as tcpdump takes them.
    let cli = parse(&["udp", "port", "7400", "-i", "lo", "--no-tui"]).expect("parses");
    assert_eq!(cli.daemon.filter, ["udp", "port", "7400"]);
    assert_eq!(cli.daemon.interfaces, ["lo"]);
    // -F FILE is tcpdump's filter file, not a format; with words too it is refused.
    let cli = parse(&["-r", "x.pcap", "-F", "f.bpf"]).expect("parses");
    assert_eq!(cli.daemon.filter_file, Some(PathBuf::from("f.bpf")));
    let e = parse_error(&["-r", "x.pcap", "-F", "f.bpf", "udp"]);
    assert_eq!(e.kind(), ErrorKind::ArgumentConflict, "{e}");
}

#[test]
fn zero_or_unitless_durations_are_refused() {
    for flag in ["--interval", "--window", "--duration"] {
        let e = parse_error(&["-r", "x.pcap", flag, "0s"]);
        assert!(e.to_string().contains(flag), "{e}");
        assert_eq!(e.exit_code(), i32::from(EXIT_USAGE));
        let e = parse_error(&["-r", "x.pcap", flag, "10"]);
        assert!(e.to_string().contains("no unit"), "{e}");
    }
    let cli = parse(&["-r", "x.pcap", "--interval", "250ms", "--window", "2m"]).expect("parses");
    assert_eq!(cli.daemon.interval.ns(), 250_000_000);
    assert_eq!(cli.daemon.window.ns(), 120_000_000_000);
    let e = parse_error(&["stats", "x.pcap", "--window", "0ms"]);
    assert!(e.to_string().contains("--window"), "{e}");
    let cli = parse(&["-r", "x.pcap", "--otlp", "--otlp-timeout", "500ms"]).expect("parses");
    assert_eq!(
        cli.daemon.otlp.otlp_timeout.map(|t| t.ns()),
        Some(500_000_000)
    );
}

#[test]
fn flags_that_do_not_apply_to_the_input_are_refused() {
    let e = parse_error(&["-i", "lo", "--speed", "2"]);
    assert_eq!(e.kind(), ErrorKind::ArgumentConflict);
    assert!(e.to_string().contains("--speed"), "{e}");
    for live_only in [
        &["-B", "8"][..],
        &["--rt-priority", "10"],
        &["--cpu", "1"],
        &["-p"],
        &["--immediate"],
        &["-s", "1500"],
        &["-j", "adapter"],
        &["-Z", "nobody"],
    ] {
        let mut args = vec!["-r", "x.pcap"];
        args.extend_from_slice(live_only);
        let e = parse_error(&args);
        assert_eq!(e.kind(), ErrorKind::ArgumentConflict, "{args:?}: {e}");
        assert_eq!(e.exit_code(), i32::from(EXIT_USAGE));
        // The message names the flag (clap names it by its long form).
        let long = match live_only[0] {
            "-B" => "--buffer-size",
            "-p" => "--no-promisc",
            "-s" => "--snaplen",
            "-j" => "--tstamp-type",
            "-Z" => "--relinquish-privileges",
            other => other,
        };
        assert!(e.to_string().contains(long), "{args:?}: {e}");
    }
    // The same flags with -i are fine.
    assert!(parse(&["-i", "lo", "-B", "8", "--immediate", "-p", "--cpu", "1"]).is_ok());
    assert!(parse(&["-i", "lo", "-Z", "nobody"]).is_ok());
    assert!(parse(&["-r", "x.pcap", "--speed", "2"]).is_ok());
    assert!(parse(&["-r", "x.pcap", "--speed", "-1"]).is_err());
}

#[test]
fn bare_ddshark_says_what_to_give() {
    let out = ddshark(&[]);
    assert_eq!(out.status.code(), Some(i32::from(EXIT_USAGE)));
    let err = stderr(&out);
    assert!(
        err.contains("-i IFACE") && err.contains("-r FILE") && err.contains("--help"),
        "{err}"
    );
    assert!(err.len() < 200, "a line, not the whole help: {err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn help_lists_the_users_commands_with_examples_and_exit_codes() {
    let out = ddshark(&["--help"]);
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    let commands = help
        .split("Commands:")
        .nth(1)
        .and_then(|s| s.split("\n\n").next())
        .expect("a Commands section");
    for c in ["stats", "dissect", "latency"] {
        assert!(commands.contains(c), "{c} missing from {commands}");
    }
    assert!(
        !commands.contains("join"),
        "the stack's join is not a user's command: {commands}"
    );
    assert!(help.contains("Exit status"), "{help}");
    for sub in ["stats", "dissect", "latency", "join"] {
        let out = ddshark(&[sub, "--help"]);
        assert!(out.status.success(), "{sub} --help");
        let help = String::from_utf8_lossy(&out.stdout);
        assert!(
            help.contains("Examples:"),
            "{sub} --help has no examples:\n{help}"
        );
    }
}

#[test]
fn a_capture_filter_applies_to_files() {
    let all = frames(&final_json("all.json", &[]));
    let udp = frames(&final_json("udp.json", &["udp"]));
    let none = frames(&final_json("none.json", &["udp", "port", "9"]));
    assert!(all > udp && udp > 0, "all {all}, udp {udp}");
    assert_eq!(none, 0);
    // Read from a file, tcpdump's -F.
    let filter_file = scratch("filter.bpf");
    std::fs::write(&filter_file, "# nothing RTPS uses\nudp port 9\n").expect("write filter");
    let from_file = final_json("file.json", &["-F", &filter_file.to_string_lossy()]);
    assert_eq!(frames(&from_file), 0);
}

#[test]
fn an_invalid_filter_is_an_error_naming_it() {
    let pcap = small();
    let out = ddshark(&["-r", &pcap, "--no-tui", "this", "is", "not", "bpf"]);
    assert_eq!(out.status.code(), Some(i32::from(EXIT_FAILURE)));
    let err = stderr(&out);
    assert!(
        err.contains("invalid capture filter \"this is not bpf\"") && err.contains(&pcap),
        "{err}"
    );
    assert!(out.stdout.is_empty(), "nothing was captured");
    let out = ddshark(&["-r", &pcap, "--no-tui", "-F", "/nonexistent/filter.bpf"]);
    assert_eq!(out.status.code(), Some(i32::from(EXIT_FAILURE)));
    assert!(stderr(&out).contains("/nonexistent/filter.bpf"));
}

#[test]
fn count_stops_after_that_many_frames() {
    assert_eq!(frames(&final_json("count.json", &["-c", "10"])), 10);
    // Counted after the filter, as tcpdump counts.
    let snap = final_json("count_udp.json", &["-c", "251", "udp"]);
    assert_eq!(frames(&snap), 251);
    assert_eq!(snap["health"]["dissector"]["skipped_not_udp"], 0);
    assert!(parse(&["-r", "x.pcap", "-c", "0"]).is_err());
}

/// A classic pcap file of three 64-byte frames of link type `dlt`.
fn capture_of_link_type(name: &str, dlt: u32) -> PathBuf {
    let path = scratch(name);
    let mut bytes = Vec::new();
    bytes.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    bytes.extend_from_slice(&2u16.to_le_bytes());
    bytes.extend_from_slice(&4u16.to_le_bytes());
    bytes.extend_from_slice(&[0; 8]);
    bytes.extend_from_slice(&65535u32.to_le_bytes());
    bytes.extend_from_slice(&dlt.to_le_bytes());
    for i in 0..3u32 {
        bytes.extend_from_slice(&(1_700_000_000 + i).to_le_bytes());
        bytes.extend_from_slice(&0u32.to_le_bytes());
        bytes.extend_from_slice(&64u32.to_le_bytes());
        bytes.extend_from_slice(&64u32.to_le_bytes());
        bytes.extend_from_slice(&[0u8; 64]);
    }
    std::fs::write(&path, bytes).expect("write capture");
    path
}

#[test]
fn unsupported_link_types_are_named() {
    let radiotap = capture_of_link_type("radiotap.pcap", 127);
    let usb = capture_of_link_type("usb.pcap", 220);
    for (file, name) in [(&radiotap, "802.11 plus radiotap"), (&usb, "USB")] {
        let f = file.to_string_lossy();
        for args in [
            vec!["-r", &f, "--no-tui"],
            vec!["stats", &f],
            vec!["dissect", &f],
        ] {
            let out = ddshark(&args);
            assert_eq!(out.status.code(), Some(i32::from(EXIT_FAILURE)), "{args:?}");
            let err = stderr(&out);
            assert!(
                err.contains(&*f) && err.contains(name) && err.contains("not supported"),
                "{args:?}: {err}"
            );
        }
    }
}

#[test]
fn an_export_that_failed_fails_the_run() {
    // A port nobody listens on: bound, then closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let endpoint = format!("http://127.0.0.1:{port}");
    let pcap = small();
    let out = ddshark(&[
        "-r",
        &pcap,
        "--no-tui",
        "--interval",
        "1h",
        "--otlp",
        &endpoint,
        "--otlp-flush-timeout",
        "5s",
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(i32::from(EXIT_FAILURE)), "{err}");
    assert!(
        err.contains(&format!("OTLP export to {endpoint} failed")) && err.contains("not delivered"),
        "{err}"
    );
}

/// A loopback OTLP/HTTP endpoint that accepts every trace export and refuses (400, not
/// retried) the metrics exports `refuse` picks by their number (0 = the first); its
/// address, and how many metrics exports it accepted once the run is over.
fn otlp_http_endpoint(
    refuse: impl Fn(usize) -> bool + Send + Sync + 'static,
) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let (metrics_seen, accepted) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let refuse = Arc::new(refuse);
    let accepted_out = accepted.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let (metrics_seen, accepted, refuse) =
                (metrics_seen.clone(), accepted.clone(), refuse.clone());
            std::thread::spawn(move || {
                let mut out = conn.try_clone().unwrap();
                let mut conn = BufReader::new(conn);
                loop {
                    let mut request = String::new();
                    if conn.read_line(&mut request).unwrap_or(0) == 0 {
                        return;
                    }
                    let mut length = 0usize;
                    loop {
                        let mut header = String::new();
                        if conn.read_line(&mut header).unwrap_or(0) == 0 {
                            return;
                        }
                        if header.trim().is_empty() {
                            break;
                        }
                        if let Some((k, v)) = header.split_once(':') {
                            if k.eq_ignore_ascii_case("content-length") {
                                length = v.trim().parse().unwrap();
                            }
                        }
                    }
                    let mut body = vec![0; length];
                    conn.read_exact(&mut body).unwrap();
                    let ok = !request.contains("/v1/metrics")
                        || !refuse(metrics_seen.fetch_add(1, Ordering::SeqCst));
                    if ok && request.contains("/v1/metrics") {
                        accepted.fetch_add(1, Ordering::SeqCst);
                    }
                    let status = if ok { "200 OK" } else { "400 Bad Request" };
                    let reply = format!("HTTP/1.1 {status}\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n");
                    if out.write_all(reply.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    (endpoint, accepted_out)
}

fn replay_to(endpoint: &str) -> Output {
    ddshark(&[
        "-r",
        &small(),
        "--no-tui",
        "--interval",
        "1s",
        "--otlp",
        endpoint,
        "--otlp-protocol",
        "http",
        "--otlp-retry",
        "30s",
    ])
}

#[test]
fn a_failed_metrics_export_a_later_one_superseded_does_not_fail_the_run() {
    // Metrics are cumulative: the exports after the refused one carried its totals.
    let (endpoint, accepted) = otlp_http_endpoint(|n| n == 0);
    let out = replay_to(&endpoint);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        accepted.load(std::sync::atomic::Ordering::SeqCst) > 0,
        "{err}"
    );
    assert!(
        err.contains("1 failed (all superseded: a later export carried their totals)"),
        "{err}"
    );
}

#[test]
fn a_final_metrics_export_that_never_got_through_fails_the_run() {
    let (endpoint, accepted) = otlp_http_endpoint(|_| true);
    let out = replay_to(&endpoint);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(i32::from(EXIT_FAILURE)), "{err}");
    assert_eq!(
        accepted.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "{err}"
    );
    assert!(
        err.contains(&format!("OTLP export to {endpoint}/v1/metrics failed"))
            && err.contains("0 of ")
            && err.contains("none got through"),
        "{err}"
    );
}

#[test]
fn a_replay_says_first_what_it_reads() {
    let pcap = small();
    let out = ddshark(&["-r", &pcap, "--no-tui", "--interval", "1h", "udp"]);
    assert!(out.status.success());
    let err = stderr(&out);
    let first = err.lines().next().unwrap_or_default();
    assert!(
        first.contains(&pcap) && first.contains("EN10MB") && first.contains("filter: udp"),
        "{err}"
    );
}

#[test]
fn format_is_a_long_option_with_one_vocabulary() {
    // --format jsonl: JSON lines, each one parses.
    let pcap = small();
    let out = ddshark(&[
        "-r",
        &pcap,
        "--no-tui",
        "--format",
        "jsonl",
        "--interval",
        "2s",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.lines().count() > 1);
    for line in text.lines() {
        serde_json::from_str::<serde_json::Value>(line).expect("a JSON line");
    }
    // stats --format json: one document.
    let out = ddshark(&["stats", &pcap, "--format", "json", "-q"]);
    assert!(out.status.success());
    serde_json::from_slice::<serde_json::Value>(&out.stdout).expect("one JSON document");
}

#[test]
fn bursts_of_discovery_are_not_extrapolated_to_rates() {
    // DCPSSubscription's 4 samples here come within 22 µs: no rate (a rate needs its
    // samples to span at least 100 ms), and no topic reads a burst as a rate.
    let out = ddshark(&["stats", &small(), "-q"]);
    assert!(out.status.success());
    let snap: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let topics = snap["topics"].as_array().expect("topics");
    let sub = topics
        .iter()
        .find(|t| t["name"] == "DCPSSubscription")
        .expect("DCPSSubscription");
    assert_eq!(sub["samples"], 4);
    assert!(sub["rate"]["hz"].is_null(), "{}", sub["rate"]);
    assert!(sub["rate"]["bandwidth_bps"].is_null(), "{}", sub["rate"]);
    for t in topics {
        let rate = t["rate"]["hz"].as_f64().unwrap_or(0.0);
        let bytes_per_s = t["rate"]["bandwidth_bps"].as_f64().unwrap_or(0.0) / 8.0;
        assert!(rate <= 100.0, "{}: {rate}/s", t["name"]);
        assert!(bytes_per_s < 10_000.0, "{}: {bytes_per_s} B/s", t["name"]);
    }
    // The steady topics keep their rate: rt/chatter publishes at 20 Hz.
    let chatter = topics
        .iter()
        .find(|t| t["name"] == "rt/chatter")
        .expect("chatter");
    let r = chatter["rate"]["hz"].as_f64().expect("a rate");
    assert!((r - 20.0).abs() < 0.5, "{r}");
}

#[test]
fn recording_flags_that_cannot_apply_are_refused() {
    // -w records a live capture; -C/-G/-W need -w; -W needs -C or -G; -G takes a unit.
    for args in [
        &["-r", "x.pcap", "-w", "out.pcapng"][..],
        &["-i", "lo", "-C", "10"],
        &["-i", "lo", "-G", "10s"],
        &["-i", "lo", "-w", "out.pcapng", "-W", "3"],
        &["-i", "lo", "-w", "out.pcapng", "-G", "10"],
        &["-i", "lo", "-w", "out.pcapng", "-C", "0"],
    ] {
        let e = parse_error(args);
        assert_ne!(e.kind(), ErrorKind::DisplayHelp, "{args:?}");
    }
    let ok = parse(&[
        "-i",
        "lo",
        "-w",
        "a.pcapng",
        "-C",
        "100",
        "-W",
        "5",
        "--host-name",
        "a",
    ]);
    assert!(ok.is_ok(), "{ok:?}");
    let ok = parse(&[
        "-i",
        "lo",
        "-w",
        "a-%Y%m%d%H%M%S.pcapng",
        "-G",
        "60s",
        "-W",
        "24",
    ]);
    assert!(ok.is_ok(), "{ok:?}");
}

#[test]
fn latency_refuses_inputs_that_cannot_give_latencies_before_writing_anything() {
    let pcaps = common::fixtures();
    let a = pcaps.join("k_fastdds/a.pcap").display().to_string();
    let other = pcaps.join("a_small_reliable/b.pcap").display().to_string();
    for (args, says) in [
        (vec!["latency", a.as_str(), a.as_str()], "same capture"),
        (
            vec!["latency", a.as_str(), other.as_str()],
            "do not overlap in time",
        ),
    ] {
        let o = ddshark(&args);
        assert!(!o.status.success(), "{args:?}: {o:?}");
        assert!(
            o.stdout.is_empty(),
            "{args:?}: wrote {:?}",
            String::from_utf8_lossy(&o.stdout)
        );
        let err = stderr(&o);
        assert!(
            err.contains(says) && err.contains("k_fastdds/a.pcap"),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn every_command_has_one_format_vocabulary() {
    let a = small();
    let b = common::fixture("a_small_reliable/b.pcap")
        .to_string_lossy()
        .into_owned();
    // json: one document.
    for args in [
        vec!["dissect", &a, "--format", "json", "-q"],
        vec!["latency", &a, &b, "--format", "json", "-q"],
        vec!["stats", &a, "--format", "json", "-q"],
    ] {
        let out = ddshark(&args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        let doc: serde_json::Value =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}"));
        assert!(doc.is_object() || doc.is_array(), "{args:?}");
    }
    // jsonl: one object per line.
    for args in [
        vec!["dissect", &a, "--format", "jsonl", "-q"],
        vec!["latency", &a, &b, "--format", "jsonl", "-q"],
    ] {
        let out = ddshark(&args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.lines().count() > 10, "{args:?}");
        for line in text.lines() {
            let v: serde_json::Value =
                serde_json::from_str(line).unwrap_or_else(|e| panic!("{args:?}: {e}: {line}"));
            assert!(v.is_object());
        }
    }
    // The same samples either way.
    let doc = ddshark(&["latency", &a, &b, "--format", "json", "-q"]);
    let doc: serde_json::Value = serde_json::from_slice(&doc.stdout).unwrap();
    let lines = ddshark(&["latency", &a, &b, "--format", "jsonl", "-q"]);
    let samples = String::from_utf8_lossy(&lines.stdout)
        .lines()
        .filter(|l| l.contains("\"kind\":\"sample\""))
        .count();
    assert_eq!(doc["samples"].as_array().map(Vec::len), Some(samples));
    // -F is tcpdump's filter file, never a format.
    for args in [
        &["stats", "x.pcap", "-F", "json"][..],
        &["dissect", "x.pcap", "-F", "jsonl"],
        &["latency", "a.pcap", "b.pcap", "-F", "tsv"],
    ] {
        assert_eq!(
            parse_error(args).kind(),
            ErrorKind::UnknownArgument,
            "{args:?}"
        );
    }
}

#[test]
fn durations_take_units_in_every_command() {
    let cli = parse(&[
        "latency",
        "a.pcap",
        "b.pcap",
        "--window",
        "200ms",
        "--lost-grace",
        "2s",
    ])
    .expect("parses");
    match cli.command {
        Some(ddshark::cli::Command::Latency(l)) => {
            assert_eq!(l.window_ns, 200_000_000);
            assert_eq!(l.lost_grace_ns, 2_000_000_000);
        }
        other => panic!("{other:?}"),
    }
    for bad in [
        &["latency", "a.pcap", "b.pcap", "--window", "10"][..],
        &["latency", "a.pcap", "b.pcap", "--window", "0s"],
        &["join", "--period", "10"],
        &["join", "--period", "0s"],
        &["join", "--sample-window", "10000000000"],
        &["stats", "x.pcap", "--loss-timeout", "10"],
        &["-r", "x.pcap", "--otlp", "--otlp-flush-timeout", "5"],
        &["-r", "x.pcap", "--otlp", "--otlp-timeout", "1000"],
    ] {
        let e = parse_error(bad);
        assert_eq!(e.kind(), ErrorKind::ValueValidation, "{bad:?}: {e}");
    }
    let cli = parse(&["join", "--period", "500ms", "--sample-window", "10s"]).expect("parses");
    match cli.command {
        Some(ddshark::cli::Command::Join(j)) => {
            assert_eq!(j.period, std::time::Duration::from_millis(500));
            assert_eq!(j.sample_window_ns, 10_000_000_000);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_unknown_user_for_z_is_named_before_any_interface_is_opened() {
    // The user is looked up first, so this needs no capture rights.
    let o = ddshark(&[
        "-i",
        "lo",
        "-Z",
        "no-such-user-ddshark",
        "--no-tui",
        "-c",
        "1",
    ]);
    assert_eq!(
        o.status.code(),
        Some(i32::from(EXIT_FAILURE)),
        "{}",
        stderr(&o)
    );
    let err = stderr(&o);
    assert!(
        err.contains("-Z no-such-user-ddshark: no such user"),
        "{err}"
    );
    assert!(!err.contains("capturing on"), "{err}");
}

/// `ddshark stats … | head` (a reader that goes away) is a normal end: exit 0, nothing on
/// stderr, for the JSON (serialised straight into the pipe) and the text report alike. The
/// JSON of b_large_frag is larger than a pipe's buffer, so the write does meet the closed end.
#[test]
fn a_closed_pipe_ends_stats_quietly() {
    use std::process::Stdio;
    let pcap = common::fixture("b_large_frag/a.pcap");
    for format in ["json", "text"] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_ddshark"))
            .args(["stats", "--format", format, pcap.to_str().unwrap()])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("running ddshark");
        drop(child.stdout.take());
        let out = child.wait_with_output().expect("waiting for ddshark");
        assert_eq!(out.status.code(), Some(0), "{format}: {}", stderr(&out));
        assert_eq!(stderr(&out), "", "{format}");
    }
}
