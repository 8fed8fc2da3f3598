//! `--no-tui`: every snapshot printed on stdout, as text or JSON lines.

use std::io::{self, Write};
use std::sync::Arc;

use super::DaemonFormat;
use crate::output::contract::stats::SummaryLine;
use crate::output::stats::{text_report, ReportOptions};
use crate::pipeline::{Sink, SourceCtx};
use crate::state::snapshot::Snapshot;

/// Prints every snapshot on stdout.
pub(crate) struct ReportSink {
    format: DaemonFormat,
    report: ReportOptions,
    out: io::Stdout,
    /// stdout was closed (`| head`): stop writing.
    closed: bool,
}

impl ReportSink {
    pub fn new(format: DaemonFormat, ros: bool) -> Self {
        Self {
            format,
            report: ReportOptions {
                ros,
                builtin: false,
                writers: false,
            },
            out: io::stdout(),
            closed: false,
        }
    }

    fn print(&mut self, s: &Snapshot, last: bool) {
        if self.closed {
            return;
        }
        let mut buf = Vec::new();
        match self.format {
            DaemonFormat::Jsonl => {
                if serde_json::to_writer(&mut buf, &SummaryLine::of(s)).is_err() {
                    return;
                }
                buf.push(b'\n');
            }
            DaemonFormat::Text => {
                let opts = ReportOptions {
                    writers: last,
                    ..self.report
                };
                buf.extend_from_slice(
                    format!(
                        "=== {} ===\n{}",
                        crate::units::timestamp(s.summary.capture_time_ns),
                        text_report(s, &opts)
                    )
                    .as_bytes(),
                );
                buf.push(b'\n');
            }
        }
        let mut out = self.out.lock();
        if out.write_all(&buf).and_then(|()| out.flush()).is_err() {
            self.closed = true;
        }
    }
}

impl Sink for ReportSink {
    fn on_datagram(&mut self, _d: &rtps_dissect::Datagram<'_>, _ctx: &SourceCtx<'_>) {}
    fn on_snapshot(&mut self, s: &Arc<Snapshot>) {
        self.print(s, false);
    }
    fn finish(&mut self, s: &Arc<Snapshot>) {
        self.print(s, true);
    }
}
