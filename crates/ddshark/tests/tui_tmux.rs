//! The real binary in a real terminal: tmux runs `ddshark -r FIXTURE`, the test
//! types keys, reads the screen with `capture-pane -p`, and checks that the
//! process exits 0 and leaves the terminal restored (main screen, cursor shown,
//! cooked mode with echo). tmux is required: without it this test fails.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use common::fixture;

/// A private tmux server (its own socket) with one session; killed on drop.
struct Tmux {
    socket: String,
    session: String,
}

impl Tmux {
    /// `name` keeps the servers of tests running in parallel apart.
    fn start(name: &str, width: u16, height: u16, shell_command: &str) -> Self {
        match Command::new("tmux").arg("-V").output() {
            Ok(o) if o.status.success() => {}
            other => panic!(
                "tmux is required for the TUI test (apt-get install tmux; scripts/setup.sh --test installs it): {other:?}"
            ),
        }
        let t = Self {
            socket: format!("ddshark-tui-test-{}-{name}", std::process::id()),
            session: "tui".into(),
        };
        let out = t.run(&[
            "new-session",
            "-d",
            "-x",
            &width.to_string(),
            "-y",
            &height.to_string(),
            "-s",
            &t.session,
            shell_command,
        ]);
        assert!(
            out.status.success(),
            "tmux new-session failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        t
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            // The pane's TERM comes from tmux; a CI without TERM still gets a server.
            .env("TERM", "xterm-256color")
            .output()
            .expect("running tmux")
    }

    fn screen(&self) -> String {
        let out = self.run(&["capture-pane", "-p", "-t", &self.session]);
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", self.session.as_str()];
        args.extend_from_slice(keys);
        let out = self.run(&args);
        assert!(out.status.success(), "send-keys {keys:?} failed");
    }

    /// Type literal text (no key-name lookup).
    fn text(&self, s: &str) {
        let out = self.run(&["send-keys", "-t", &self.session, "-l", s]);
        assert!(out.status.success(), "send-keys -l {s:?} failed");
    }

    fn format(&self, f: &str) -> String {
        let out = self.run(&["display-message", "-p", "-t", &self.session, f]);
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// Poll the screen until `pred` holds (20 s at most).
    fn wait_for(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if pred(&s) {
                return s;
            }
            if start.elapsed() > Duration::from_secs(20) {
                panic!("timed out waiting for {what}; the screen is:\n{s}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn wait_text(&self, text: &str) -> String {
        self.wait_for(text, |s| s.contains(text))
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.run(&["kill-server"]);
    }
}

/// The shell line that prints the terminal modes after ddshark exits.
const TTY_MODES: &str = "echo \"tty:[$(stty -a | tr ' ;' '\\n\\n' | grep -xE -- '-?(icanon|echo|isig)' | tr '\\n' ' ')]\"";

/// Cooked mode with echo again (raw mode was left).
fn assert_tty_restored(t: &Tmux, screen: &str) {
    let tty = screen
        .lines()
        .find(|l| l.starts_with("tty:["))
        .unwrap_or_default()
        .to_string();
    for mode in ["icanon", "echo", "isig"] {
        assert!(
            tty.split([' ', '[', ']']).any(|w| w == mode),
            "terminal mode {mode} not restored: {tty}"
        );
    }
    assert!(!tty.contains("-icanon") && !tty.contains("-echo"), "{tty}");
    assert_eq!(t.format("#{alternate_on}"), "0", "alternate screen left");
    assert_eq!(t.format("#{cursor_flag}"), "1", "cursor shown again");
}

fn status_line(screen: &str) -> String {
    screen.lines().next().unwrap_or("").to_string()
}

#[test]
fn tui_in_tmux_keys_views_filter_help_pacing_quit() {
    let bin = env!("CARGO_BIN_EXE_ddshark");
    let pcap = fixture("h_vlan_pcp/a.pcap");
    // After ddshark: its exit code and the terminal modes, read back from the screen.
    let cmd = format!(
        "'{bin}' -r '{}' --speed 0.25; echo \"ddshark-exit=$?\"; {TTY_MODES}; sleep 600",
        pcap.display()
    );
    let t = Tmux::start("keys", 100, 30, &cmd);

    // Topics view with the VLAN fixture's topics and PCPs.
    let s = t.wait_text("rt/sensing/lidar/points");
    assert!(s.contains("1 Topics"), "{s}");
    assert!(s.contains("PCP"), "{s}");
    assert_eq!(
        t.format("#{alternate_on}"),
        "1",
        "the TUI uses the alternate screen"
    );

    // Pause the replay: the capture clock stops.
    t.keys(&["Space"]);
    t.wait_for("paused", |s| status_line(s).contains('⏸'));
    std::thread::sleep(Duration::from_millis(700));
    let a = status_line(&t.screen());
    std::thread::sleep(Duration::from_millis(1200));
    let b = status_line(&t.screen());
    assert_eq!(a, b, "paused replay must not advance");
    t.keys(&["Space"]);
    t.wait_for("resumed", |s| !status_line(s).contains('⏸'));

    // Views: numbers and Tab.
    t.keys(&["2"]);
    let s = t.wait_text("GUID prefix");
    assert!(s.contains("Cyclone DDS"), "{s}");
    t.keys(&["Tab"]);
    t.wait_text("HEARTBEATs");
    t.keys(&["Tab"]);
    t.wait_text("NackSN");
    t.keys(&["5"]);
    let s = t.wait_text("frames/s");
    assert!(s.contains("Evictions"), "{s}");
    t.keys(&["1"]);
    t.wait_text("Frag");

    // Filter by typing.
    t.keys(&["/"]);
    t.wait_text("filter:");
    t.text("lidar");
    t.keys(&["Enter"]);
    let s = t.wait_text("[/lidar]");
    assert!(s.contains("1 topics"), "{s}");
    assert!(!s.contains("velocity_status"), "{s}");
    assert!(
        s.contains("PointCloud2_"),
        "detail pane of the selected topic:\n{s}"
    );
    t.keys(&["Escape"]);
    t.wait_text("velocity_status");

    // ROS 2 names on `d`.
    t.keys(&["d"]);
    t.wait_text("/sensing/lidar/points");

    // Help on `?`, closed by any key.
    t.keys(&["?"]);
    let s = t.wait_text("Keys");
    assert!(s.contains("quit"), "{s}");
    t.keys(&["Escape"]);
    t.wait_for("help closed", |s| !s.contains("this help"));

    // Speed keys: up to "as fast as possible"; the replay ends and the UI stays.
    for _ in 0..12 {
        t.keys(&["+"]);
    }
    t.wait_for("max speed", |s| status_line(s).contains("max"));
    t.wait_for("end of replay", |s| status_line(s).contains("end"));

    // Quit: exit 0, main screen, cursor visible, cooked mode with echo.
    t.keys(&["q"]);
    let s = t.wait_text("tty:[");
    assert!(s.contains("ddshark-exit=0"), "{s}");
    assert_tty_restored(&t, &s);
}

/// examples/tui_panic (built by `cargo test` with the other examples): the real UI
/// with a renderer that panics.
fn tui_panic_example() -> std::path::PathBuf {
    let exe = std::env::current_exe().unwrap();
    // target/<profile>/deps/tui_tmux-<hash> → target/<profile>/examples/tui_panic
    let profile_dir = exe.parent().and_then(|d| d.parent()).unwrap();
    let example = profile_dir.join("examples").join("tui_panic");
    assert!(
        example.exists(),
        "{} is missing: `cargo test -p ddshark` builds it (or `cargo build -p ddshark --example tui_panic`)",
        example.display()
    );
    example
}

#[test]
fn tui_in_tmux_panic_restores_the_terminal() {
    let bin = tui_panic_example();
    let pcap = fixture("a_small_reliable/a.pcap");
    // The renderer panics in the UI thread on the first frame that shows a snapshot.
    let cmd = format!(
        "'{}' '{}'; echo \"ddshark-exit=$?\"; {TTY_MODES}; sleep 600",
        bin.display(),
        pcap.display()
    );
    let t = Tmux::start("panic", 100, 30, &cmd);
    let s = t.wait_text("tty:[");
    assert!(s.contains("ddshark-exit=1"), "a panic is a failure:\n{s}");
    assert!(
        s.contains("the renderer failed on purpose"),
        "the panic message is readable:\n{s}"
    );
    assert!(s.contains("the terminal UI panicked"), "{s}");
    assert_tty_restored(&t, &s);
}

#[test]
fn tui_in_tmux_ctrl_c_quits_mid_replay() {
    let bin = env!("CARGO_BIN_EXE_ddshark");
    let pcap = fixture("a_small_reliable/a.pcap");
    let cmd = format!(
        "'{bin}' -r '{}' --speed 0.1; echo \"ddshark-exit=$?\"; {TTY_MODES}; sleep 600",
        pcap.display()
    );
    let t = Tmux::start("ctrlc", 80, 24, &cmd);
    t.wait_text("rt/");
    t.keys(&["C-c"]);
    let s = t.wait_text("tty:[");
    assert!(s.contains("ddshark-exit=0"), "{s}");
    assert_tty_restored(&t, &s);
}

/// An export to a closed port while the UI is up: its reports go to the log line, the
/// title bar stays where it is, and once the user quits they are on stderr and the
/// exit status is 1 (spans failed).
#[test]
fn tui_in_tmux_messages_go_to_the_log_line() {
    let bin = env!("CARGO_BIN_EXE_ddshark");
    let pcap = fixture("a_small_reliable/a.pcap");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let cmd = format!(
        "'{bin}' -r '{}' --speed 0 --otlp http://127.0.0.1:{port} --otlp-flush-timeout 1s; \
         echo \"ddshark-exit=$?\"; {TTY_MODES}; sleep 600",
        pcap.display()
    );
    let t = Tmux::start("log", 120, 30, &cmd);
    // The replay ends at once; the exporter's final report comes while the UI waits.
    let s = t.wait_text("spans: 0 sent");
    assert!(
        status_line(&s).starts_with("ddshark 1 Topics"),
        "the title bar moved:\n{s}"
    );
    let log_line = s
        .lines()
        .find(|l| l.contains("spans: 0 sent"))
        .unwrap_or_default()
        .to_string();
    assert!(
        log_line.contains("messages, all printed at exit"),
        "not on the log line: {log_line}\n{s}"
    );
    t.keys(&["q"]);
    let s = t.wait_text("tty:[");
    assert!(s.contains("ddshark-exit=1"), "{s}");
    assert!(
        s.contains("OTLP export to http://127.0.0.1:")
            && s.contains("422 of 422 spans not delivered"),
        "the messages were not written to stderr at exit:\n{s}"
    );
    assert_tty_restored(&t, &s);
}

/// Is process `pid` gone (exited and reaped, or a zombie)?
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(s) => s
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// Wait (5 s at most) for `pid` to end; the time it took, for the report.
fn wait_gone(pid: u32, what: &str) -> Duration {
    let start = Instant::now();
    while !gone(pid) {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "ddshark still running 5 s after {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    start.elapsed()
}

/// A fresh path for a test's --final-json.
fn scratch(name: &str) -> std::path::PathBuf {
    let p = std::env::temp_dir().join(format!(
        "ddshark-tui-test-{}-{name}.json",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&p);
    p
}

/// A replay slow enough to still run when the test acts: `exec`, so the pane's process is
/// ddshark itself and its pid is the pane's.
fn slow_replay_in_tmux(name: &str, out: &std::path::Path) -> (Tmux, u32) {
    let bin = env!("CARGO_BIN_EXE_ddshark");
    let pcap = fixture("h_vlan_pcp/a.pcap");
    let cmd = format!(
        "exec '{bin}' -r '{}' --speed 0.05 --final-json '{}'",
        pcap.display(),
        out.display()
    );
    let t = Tmux::start(name, 100, 30, &cmd);
    // The title bar: the UI is up (the first snapshot comes 10 s later at this speed).
    t.wait_for("the title bar", |s| status_line(s).starts_with("ddshark"));
    let pid: u32 = t.format("#{pane_pid}").parse().expect("the pane's pid");
    (t, pid)
}

/// The terminal goes away under a running replay (its tmux server killed, as when the ssh
/// session to a robot drops): ddshark ends as `q` would, its --final-json written. Before,
/// the UI thread spun on the hung-up terminal's end-of-file and the run never ended.
#[test]
fn tui_in_tmux_a_lost_terminal_ends_the_run_and_writes_the_outputs() {
    let out = scratch("lost");
    let (t, pid) = slow_replay_in_tmux("lost", &out);
    let _ = t.run(&["kill-server"]);
    let took = wait_gone(pid, "its terminal went away");
    eprintln!("lost terminal: ddshark ended {took:?} after the tmux server was killed");
    let json = std::fs::read_to_string(&out).expect("--final-json written");
    assert!(json.contains("\"topics\""), "{json}");
}

/// SIGTERM and SIGHUP end the TUI mid-replay as `q` does: the UI closes (it used to wait
/// for `q` after the signal stopped the input), the outputs are written.
#[test]
fn tui_in_tmux_sigterm_and_sighup_end_the_run_and_write_the_outputs() {
    for signal in ["TERM", "HUP"] {
        let out = scratch(&format!("sig{signal}"));
        let (_t, pid) = slow_replay_in_tmux(&format!("sig{signal}"), &out);
        let sent = Command::new("kill")
            .args([format!("-{signal}"), pid.to_string()])
            .status()
            .expect("kill");
        assert!(sent.success());
        let took = wait_gone(pid, &format!("SIG{signal}"));
        eprintln!("SIG{signal}: the TUI ended {took:?} after it");
        let json = std::fs::read_to_string(&out).expect("--final-json written");
        assert!(json.contains("\"topics\""), "SIG{signal}: {json}");
    }
}
