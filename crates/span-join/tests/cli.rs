//! `ddshark-join` as Telegraf runs it: spans on stdin, points to stdout or a unix socket,
//! everything still waiting joined at the end of the input; bad flags named in the error.
//! (The join against `ddshark latency` on real captures, through the real Telegraf:
//! tests/flux/run.py.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{Read, Write};
use std::os::unix::net::UnixListener;
use std::process::{Command, Output, Stdio};

const WRITER: &str = "0110aaaaaaaaaaaaaaaaaaaa000003c2";

fn sample(host: &str, start: i64, end: i64) -> String {
    format!(
        "spans,host.name={host},slot=0,span.name=SAMPLE,topic_name=rt/chatter,writer_id={WRITER} \
         end_time_unix_nano={end}i,sn=1i,start_ns={start}i,fragments_missing=0i,sample_size=100i,\
         repairs=0i,submessages=1i {start}\n"
    )
}

fn join(args: &[&str], input: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ddshark-join"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ddshark-join starts");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(input.as_bytes()).expect("write spans");
    drop(stdin);
    child.wait_with_output().expect("ddshark-join ends")
}

#[test]
fn the_end_of_the_input_joins_what_waits_and_writes_it_to_stdout() {
    let input =
        sample("b", 1_000_500, 1_002_000) + &sample("a", 1_000_000, 1_000_100) + "not a span\n";
    let out = join(&["--period", "1h"], &input);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!(
            "dds_latency,receiver=b,sender=a,slot=0,topic_name=rt/chatter,writer_id={WRITER} \
             latency_ns=2000i,t_recv_ns=1002000i,sn=1i 1000000\n"
        )),
        "{text}"
    );
    assert!(
        text.contains("ddshark_join spans=3i,rejected=1i,samples=1i"),
        "{text}"
    );
}

#[test]
fn points_go_to_a_unix_socket() {
    let dir = std::env::temp_dir().join(format!("ddshark-join-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("join.sock");
    let _ = std::fs::remove_file(&path);
    let listener = UnixListener::bind(&path).expect("listen");
    let reader = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().expect("the join connects");
        let mut text = String::new();
        conn.read_to_string(&mut text).expect("read points");
        text
    });
    let output = format!("unix:{}", path.display());
    let out = join(
        &["--output", &output, "--period", "1h"],
        &(sample("a", 10, 20) + &sample("b", 30, 40)),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stdout.is_empty());
    let text = reader.join().expect("reader");
    assert!(text.contains("dds_latency,receiver=b,sender=a"), "{text}");
    assert!(text.contains("ddshark_join spans=2i"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_flags_are_named() {
    for (args, flag) in [
        (&["--output", "http://x"][..], "--output"),
        (&["--period", "0s"][..], "--period"),
        (&["--period", "10 parsecs"][..], "--period"),
    ] {
        let out = join(args, "");
        assert!(!out.status.success(), "{args:?} accepted");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(flag), "{args:?}: {err}");
    }
}
