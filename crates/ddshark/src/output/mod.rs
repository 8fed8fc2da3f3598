//! Sinks that format records for people and scripts.

pub mod stats;
pub(crate) mod text;

use std::io::{self, Write};

/// Write, treating a closed pipe (`ddshark … | head`) as a normal end.
pub(crate) fn write_or_stop(out: &mut dyn Write, bytes: &[u8]) -> io::Result<bool> {
    match out.write_all(bytes) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(false),
        Err(e) => Err(e),
    }
}
