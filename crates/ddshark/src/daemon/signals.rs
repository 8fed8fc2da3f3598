//! SIGINT, SIGTERM and SIGHUP end a run as `q` does; SIGHUP not when the parent left it ignored.
//! `nohup` ignores SIGHUP, so `nohup ddshark -i eth0 -w x.pcapng &` outlives the terminal it was
//! started from (tcpdump cooperates with nohup the same way). SIGINT is watched even when
//! ignored on entry: a shell without job control ignores it for every `cmd &`, and scripts end
//! such a capture with `kill -INT $!` as they end tcpdump.

use std::io;

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

/// Calls `on_signal` on a thread of its own for SIGINT, SIGTERM, and SIGHUP unless SIGHUP was
/// ignored on entry.
pub(super) fn on_termination(mut on_signal: impl FnMut() + Send + 'static) -> io::Result<()> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    let watched: &[i32] = if sighup_ignored_on_entry(&status) {
        &[SIGINT, SIGTERM]
    } else {
        &[SIGINT, SIGTERM, SIGHUP]
    };
    let mut signals = Signals::new(watched)?;
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            for _ in signals.forever() {
                on_signal();
            }
        })?;
    Ok(())
}

/// Whether SIGHUP is in the `SigIgn` mask of `/proc/self/status` (bit n−1 = signal n).
fn sighup_ignored_on_entry(status: &str) -> bool {
    let mask = status
        .lines()
        .find_map(|line| line.strip_prefix("SigIgn:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .unwrap_or(0);
    let sighup_bit = 1u64 << (SIGHUP - 1);
    mask & sighup_bit != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_sighup_from_the_status_mask() {
        // SIGHUP (1) and SIGQUIT (3) ignored, as under `nohup` in a shell that ignores SIGQUIT.
        let status = "Name:\tddshark\nSigBlk:\t0000000000000000\nSigIgn:\t0000000000000005\n";
        assert!(sighup_ignored_on_entry(status));
        // SIGINT (2) alone: a background command of a shell without job control.
        assert!(!sighup_ignored_on_entry("SigIgn:\t0000000000000002\n"));
        assert!(!sighup_ignored_on_entry("SigIgn:\t0000000000000000\n"));
        assert!(!sighup_ignored_on_entry("no mask here"));
    }
}
