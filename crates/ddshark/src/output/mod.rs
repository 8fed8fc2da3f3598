//! The reports, for people and scripts: `stats` (`stats.rs`), `dissect` (`dissect.rs`: one
//! line per submessage) and `latency` (`latency.rs`: text, TSV, JSON; `latency_html.rs`:
//! the HTML page). What the JSON of `stats` and `latency` holds is `contract/`'s types.

pub mod contract;
pub(crate) mod dissect;
pub mod latency;
pub mod latency_html;
pub mod stats;

use std::io::{self, Write};

/// Write, treating a closed pipe (`ddshark … | head`) as a normal end.
pub(crate) fn write_or_stop(out: &mut dyn Write, bytes: &[u8]) -> io::Result<bool> {
    match out.write_all(bytes) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(false),
        Err(e) => Err(e),
    }
}
