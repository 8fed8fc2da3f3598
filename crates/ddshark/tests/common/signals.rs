//! Ending a running ddshark with a signal and waiting for it (tests/signals.rs, cli_live.rs).

use std::path::Path;
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

/// ddshark (`bin`) started with SIGHUP, SIGTERM and SIGINT handled by default, as a shell gives
/// it: the test runner may have inherited an ignored SIGHUP (`nohup`, some CI runners), and an
/// ignored signal stays ignored across exec. `env` execs ddshark, so the child's pid is ddshark's.
pub fn ddshark_with_default_signals(bin: &str) -> Command {
    let mut command = Command::new("env");
    command.args(["--default-signal=HUP,TERM,INT", bin]);
    command
}

/// `kill -SIGNAL` to the child (`signal` as kill names it: TERM, HUP, INT).
pub fn send(child: &Child, signal: &str) {
    let ok = Command::new("kill")
        .args([format!("-{signal}"), child.id().to_string()])
        .status()
        .expect("kill")
        .success();
    assert!(ok, "kill -{signal}");
}

/// Wait (5 s at most) for the child to exit; its exit status and the time it took.
pub fn wait_exit(child: &mut Child, what: &str) -> (ExitStatus, Duration) {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return (status, start.elapsed());
        }
        if start.elapsed() > Duration::from_secs(5) {
            let _ = child.kill();
            panic!("ddshark still running 5 s after {what}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Until `path` holds something (the run is under way): 20 s at most.
pub fn wait_for_file(path: &Path) {
    let start = Instant::now();
    while std::fs::metadata(path).map_or(true, |m| m.len() == 0) {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{} never written",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
