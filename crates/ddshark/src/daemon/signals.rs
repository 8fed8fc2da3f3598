//! SIGINT, SIGTERM and SIGHUP end a run as `q` does; SIGHUP not when the parent left it ignored.
//! `nohup` ignores SIGHUP, so `nohup ddshark -i eth0 -w x.pcapng &` outlives the terminal it was
//! started from (tcpdump cooperates with nohup the same way). SIGINT is watched even when
//! ignored on entry: a shell without job control ignores it for every `cmd &`, and scripts end
//! such a capture with `kill -INT $!` as they end tcpdump.

use std::io;

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

const TERMINATION_SIGNALS: [i32; 3] = [SIGINT, SIGTERM, SIGHUP];

/// Calls `on_signal` on a thread of its own for SIGINT, SIGTERM, and SIGHUP unless ignored on
/// entry.
pub(super) fn on_termination(mut on_signal: impl FnMut() + Send + 'static) -> io::Result<()> {
    let ignored = ignored_on_entry(&std::fs::read_to_string("/proc/self/status")?);
    let watched: Vec<i32> = TERMINATION_SIGNALS
        .into_iter()
        .filter(|&signal| signal != SIGHUP || !ignored.contains(&signal))
        .collect();
    let mut signals = Signals::new(&watched)?;
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            for _ in signals.forever() {
                on_signal();
            }
        })?;
    Ok(())
}

/// The termination signals in the `SigIgn` mask of `/proc/self/status` (bit n−1 = signal n).
fn ignored_on_entry(status: &str) -> Vec<i32> {
    let mask = status
        .lines()
        .find_map(|line| line.strip_prefix("SigIgn:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .unwrap_or(0);
    TERMINATION_SIGNALS
        .into_iter()
        .filter(|&signal| {
            signal
                .checked_sub(1)
                .and_then(|bit| u32::try_from(bit).ok())
                .and_then(|bit| mask.checked_shr(bit))
                .is_some_and(|shifted| shifted & 1 == 1)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_ignored_signals_from_the_status_mask() {
        // SIGHUP (1) and SIGQUIT (3) ignored, as under `nohup` in a shell that ignores SIGQUIT.
        let status = "Name:\tddshark\nSigBlk:\t0000000000000000\nSigIgn:\t0000000000000005\n";
        assert_eq!(ignored_on_entry(status), vec![SIGHUP]);
        // SIGINT (2) as well: a background command of a shell without job control.
        let status = "SigIgn:\t0000000000000007\n";
        assert_eq!(ignored_on_entry(status), vec![SIGINT, SIGHUP]);
        assert!(ignored_on_entry("SigIgn:\t0000000000000000\n").is_empty());
        assert!(ignored_on_entry("no mask here").is_empty());
    }
}
