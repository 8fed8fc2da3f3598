//! `-w`: the recording started from the daemon's options, and its line at the end.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::{Context, Result};

use super::DaemonArgs;
use crate::recording::{RecordInterface, RecordOptions, RecordTap, Recorder, RecordingHealth};
use crate::units::TimeSpan;

/// Check `-w/-C/-G/-W`, create the first file and start the writer thread.
pub(super) fn start_recording(
    args: &DaemonArgs,
    path: &std::path::Path,
    interfaces: Vec<RecordInterface>,
    stop: &Arc<AtomicBool>,
) -> Result<RecordTap> {
    let rotate_ns = args.rotate.map(TimeSpan::ns);
    let host_name = args
        .otlp
        .host_name
        .clone()
        .unwrap_or_else(|| crate::otlp::system_host_name(|k| std::env::var(k).ok()));
    let opts = RecordOptions {
        path: path.to_path_buf(),
        rotate_bytes: args
            .file_size
            .map(|mb| mb.saturating_mul(crate::recording::ROTATE_SIZE_UNIT)),
        rotate_ns,
        max_files: args.file_count,
        host_name,
        interfaces,
    };
    let now_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    let recorder = Recorder::create(&opts, now_ns)?;
    let queue_bytes = args.write_queue.saturating_mul(1 << 20);
    RecordTap::start(recorder, path, queue_bytes, stop.clone())
        .with_context(|| format!("{}: cannot start the recording thread", path.display()))
}

/// One line on stderr at the end of a recording: what was written, what was not.
pub(super) fn report_recording(h: &RecordingHealth) {
    let mut line = format!(
        "ddshark: recorded {} frames ({}) in {} file{} ({})",
        h.frames_written,
        crate::units::bytes(h.bytes_written as f64),
        h.files_closed,
        if h.files_closed == 1 { "" } else { "s" },
        h.path
    );
    if h.not_written() > 0 {
        line.push_str(&format!(
            "; {} frames NOT written ({} on a full queue)",
            h.not_written(),
            h.queue_dropped
        ));
    }
    eprintln!("{line}");
}
