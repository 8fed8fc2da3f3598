//! `ddshark-join` as Telegraf runs it: spans on stdin, points to stdout or a unix socket,
//! everything still waiting joined at the end of the input; bad flags named in the error;
//! with `--state`, a restart (the end of the input, SIGTERM, or kill -9) loses no span the
//! join had read and no point.
//! (The join against `ddshark latency` on real captures, through the real Telegraf:
//! tests/flux/run.sh.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

const WRITER: &str = "0110aaaaaaaaaaaaaaaaaaaa000003c2";

fn sample(host: &str, start: i64, end: i64) -> String {
    format!(
        "spans,host.name={host},slot=0,span.name=SAMPLE,topic_name=rt/chatter,writer_id={WRITER} \
         end_time_unix_nano={end}i,sn=1i,start_ns={start}i,fragments_missing=0i,sample_size=100i,\
         repairs=0i,submessages=1i {start}\n"
    )
}

/// `ddshark-join ARGS` with stdin, stdout and stderr piped.
fn spawn_join(args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_ddshark-join"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ddshark-join starts")
}

fn join(args: &[&str], input: &str) -> Output {
    let mut child = spawn_join(args);
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

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ddshark-join-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// A running `ddshark-join`, its stdout and stderr read line by line as they come.
struct Running {
    child: Child,
    stdin: Option<std::process::ChildStdin>,
    lines: mpsc::Receiver<String>,
    seen: String,
}

impl Running {
    fn start(args: &[&str]) -> Running {
        let mut child = spawn_join(args);
        let (tx, lines) = mpsc::channel();
        let out = child.stdout.take().expect("stdout");
        let err = child.stderr.take().expect("stderr");
        for stream in [Box::new(out) as Box<dyn Read + Send>, Box::new(err)] {
            let tx = tx.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines().map_while(Result::ok) {
                    let _ = tx.send(line);
                }
            });
        }
        Running {
            stdin: child.stdin.take(),
            child,
            lines,
            seen: String::new(),
        }
    }

    fn write(&mut self, text: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(text.as_bytes()).expect("write spans");
        stdin.flush().expect("flush");
    }

    /// Waits for a line containing `what` (a minute at most: then fails, showing all seen).
    fn wait_for(&mut self, what: &str) {
        while !self.seen.contains(what) {
            match self.lines.recv_timeout(Duration::from_secs(60)) {
                Ok(line) => {
                    self.seen.push_str(&line);
                    self.seen.push('\n');
                }
                Err(_) => panic!("no {what:?} from ddshark-join; it wrote:\n{}", self.seen),
            }
        }
    }

    /// Ends the input (as Telegraf does when it stops), waits for the exit; all it wrote.
    fn end_input(mut self) -> String {
        drop(self.stdin.take());
        self.finish()
    }

    fn sigterm(self) -> String {
        let pid = self.child.id().to_string();
        let st = Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("kill");
        assert!(st.success());
        self.finish()
    }

    /// SIGKILL, as `kill -9`: no chance to save anything.
    fn kill9(mut self) {
        self.child.kill().expect("kill -9");
        let _ = self.child.wait();
    }

    fn finish(mut self) -> String {
        let status = self.child.wait().expect("ddshark join ends");
        while let Ok(line) = self.lines.recv_timeout(Duration::from_millis(500)) {
            self.seen.push_str(&line);
            self.seen.push('\n');
        }
        assert!(status.success(), "ddshark join failed:\n{}", self.seen);
        self.seen
    }
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p)
        .expect("state file")
        .permissions()
        .mode()
        & 0o777
}

const LATENCY_B: &str = "dds_latency,receiver=b,sender=a,slot=0,topic_name=rt/chatter,writer_id=0110aaaaaaaaaaaaaaaaaaaa000003c2 latency_ns=2000i,t_recv_ns=1002000i,sn=1i 1000000";

#[test]
fn a_restart_with_state_goes_on_with_the_samples_that_waited() {
    let dir = temp_dir("state");
    let state = dir.join("join.state");
    let state_arg = state.to_str().unwrap();
    // Host a's span arrives, then the join is stopped (SIGTERM) before host b's: kept.
    let mut first = Running::start(&["--state", state_arg, "--period", "1h"]);
    first.wait_for("state kept in");
    first.write(&sample("a", 1_000_000, 1_000_100));
    let said = first.sigterm();
    assert!(
        said.contains("1 samples and 0 DATA_FRAGs waiting"),
        "{said}"
    );
    assert!(
        !said.contains("dds_latency"),
        "joined before host b's span came: {said}"
    );
    assert_eq!(mode(&state), 0o600);
    // The next one reads it, gets host b's span and joins the two.
    went_on_and_joined_b(state_arg, "restart");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A join started on `state_arg` after host a's span was read went on from that state:
/// given host b's span it joins the two, counts both spans, and ends with nothing waiting.
fn went_on_and_joined_b(state_arg: &str, case: &str) {
    let mut second = Running::start(&[
        "--state",
        state_arg,
        "--period",
        "100ms",
        "--settle-pushes",
        "2",
    ]);
    second.wait_for("went on from");
    second.write(&sample("b", 1_000_500, 1_002_000));
    second.wait_for(LATENCY_B);
    // The counters went on too: both spans, one joined sample.
    second.wait_for("ddshark_join spans=2i,rejected=0i,samples=1i");
    let said = second.end_input();
    assert!(
        said.contains("0 samples and 0 DATA_FRAGs waiting"),
        "{case}: {said}"
    );
}

/// kill -9 after host a's span was read (only the journal has it; or after a push, whose
/// state has it): the next start joins it with host b's, and counts both spans.
#[test]
fn a_kill_9_loses_no_span_the_join_had_read() {
    for (case, period, journal) in [("journal", "1h", 1), ("pushed", "200ms", 3)] {
        let dir = temp_dir(&format!("kill9-{case}"));
        let state = dir.join("join.state");
        let state_arg = state.to_str().unwrap();
        let mut first = Running::start(&[
            "--state",
            state_arg,
            "--period",
            period,
            "--settle-pushes",
            "1000",
        ]);
        first.wait_for("state kept in");
        first.write(&sample("a", 1_000_000, 1_000_100));
        // (read once it is in the journal; with pushes, once a later push's state has it)
        let journal_path = dir.join(format!("join.state.journal-{journal}"));
        let t = std::time::Instant::now();
        while std::fs::metadata(&journal_path).map_or(true, |m| m.len() == 0 && journal == 1) {
            assert!(
                t.elapsed() < Duration::from_secs(60),
                "{case}: no {}",
                journal_path.display()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        first.kill9();
        went_on_and_joined_b(state_arg, case);
        let journals: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains("journal"))
            .collect();
        assert!(journals.len() <= 1, "{case}: journals left: {journals:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn points_the_output_did_not_take_are_sent_after_a_restart() {
    let dir = temp_dir("outbox");
    let state = dir.join("join.state");
    let state_arg = state.to_str().unwrap();
    // No listener at the output (Telegraf stopped its socket listener first).
    let gone = format!("unix:{}", dir.join("gone.sock").display());
    let mut first = Running::start(&[
        "--state",
        state_arg,
        "--output",
        &gone,
        "--period",
        "100ms",
        "--settle-pushes",
        "1",
    ]);
    first.write(&(sample("a", 1_000_000, 1_000_100) + &sample("b", 1_000_500, 1_002_000)));
    first.wait_for("cannot reach the output");
    // (pushes every 100 ms: both spans are joined, their points held, well within this)
    std::thread::sleep(Duration::from_secs(2));
    let said = first.end_input();
    assert!(
        said.contains("0 samples and 0 DATA_FRAGs waiting"),
        "{said}"
    );
    assert!(
        !said.contains("waiting, 0 points to send"),
        "nothing kept: {said}"
    );
    // The next one sends them first (here to stdout).
    let second = Running::start(&["--state", state_arg, "--period", "1h"]);
    let said = second.end_input();
    assert!(said.contains(LATENCY_B), "{said}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_state_it_cannot_read_is_named_and_left_alone() {
    let dir = temp_dir("bad-state");
    let state = dir.join("join.state");
    std::fs::write(&state, "{not json").unwrap();
    let out = join(&["--state", state.to_str().unwrap()], "");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--state") && err.contains("join.state"),
        "{err}"
    );
    assert!(state.exists());
    let _ = std::fs::remove_dir_all(&dir);
}
