//! `ddshark dissect FILE`: one line or JSON object per RTPS submessage.

use std::io::{self, BufWriter, Write};
use std::path::Path;

use anyhow::{Context, Result};
use rtps_dissect::Dissector;

use crate::capture::file::FileSource;
use crate::capture::PacketSource;
use crate::output::{dissect as dissect_out, write_or_stop};
use crate::record::SubmessageRecord;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DissectFormat {
    /// One line per submessage.
    Text,
    /// One JSON document: an array of the submessages.
    Json,
    /// JSON lines: one object per submessage.
    Jsonl,
}

/// What a whole dissect run saw, printed to stderr at the end.
pub struct DissectSummary {
    pub stats: rtps_dissect::DissectorStats,
    pub truncated: Option<String>,
}

/// Run the dissector over `source`, calling `sink` for every submessage record.
/// Returns the summary; a truncated last record ends the input without an error.
pub fn dissect_source(
    source: &mut dyn PacketSource,
    mut sink: impl FnMut(&SubmessageRecord) -> Result<bool>,
) -> Result<DissectSummary> {
    let mut dissector = Dissector::default();
    let mut truncated = None;
    loop {
        let frame = match source.next_frame() {
            Ok(Some(f)) => f,
            Ok(None) => break,
            Err(e) if e.is_truncation() => {
                truncated = Some(e.to_string());
                break;
            }
            Err(e) => return Err(e.into()),
        };
        let go_on = dissector.process_with(&frame, |outcome| -> Result<bool> {
            for d in outcome.datagrams() {
                for r in SubmessageRecord::all(d) {
                    if !sink(&r)? {
                        return Ok(false);
                    }
                }
            }
            Ok(true)
        })?;
        if !go_on {
            return Ok(DissectSummary {
                stats: dissector.stats(),
                truncated,
            });
        }
    }
    dissector.finish();
    Ok(DissectSummary {
        stats: dissector.stats(),
        truncated,
    })
}

pub fn run(file: &Path, format: DissectFormat, quiet: bool) -> Result<()> {
    let mut source = FileSource::open(file)?;
    let stdout = io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    let mut line = Vec::with_capacity(1024);
    let mut open = true;
    if format == DissectFormat::Json {
        open = write_or_stop(&mut out, b"[")?;
    }
    let mut records = 0u64;
    let summary = dissect_source(&mut source, |r| {
        line.clear();
        match format {
            DissectFormat::Json => {
                if records > 0 {
                    line.push(b',');
                }
                line.push(b'\n');
                serde_json::to_writer(&mut line, r)?;
            }
            DissectFormat::Jsonl => {
                serde_json::to_writer(&mut line, r)?;
                line.push(b'\n');
            }
            DissectFormat::Text => {
                line.extend_from_slice(dissect_out::submessage_line(r).as_bytes())
            }
        }
        records = records.saturating_add(1);
        open = open && write_or_stop(&mut out, &line)?;
        Ok(open)
    })?;
    if format == DissectFormat::Json && open {
        write_or_stop(&mut out, b"\n]\n")?;
    }
    match out.flush() {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => {
            return Err(e).context("writing to standard output")
        }
        _ => {}
    }
    if let Some(t) = &summary.truncated {
        eprintln!("ddshark: warning: {t}; dissected what came before it");
    }
    if !quiet {
        let s = summary.stats;
        eprintln!(
            "ddshark: {}: {} frames, {} RTPS datagrams, {} submessages ({} undecodable), {} discovery records; skipped {} non-IP, {} non-UDP, {} non-RTPS UDP, {} ICMP quoting RTPS, {} RTI pings; {} malformed; IP fragments {} (reassembled {}, incomplete {})",
            file.display(),
            s.frames,
            s.rtps_datagrams,
            s.submessages,
            s.submessage_errors,
            s.discovery_records,
            s.skipped_not_ip,
            s.skipped_not_udp,
            s.skipped_not_rtps,
            s.skipped_icmp_quoted_rtps,
            s.rti_pings,
            s.malformed,
            s.ip.fragments,
            s.ip.reassembled,
            s.ip.evicted_idle.saturating_add(s.ip.evicted_capacity).saturating_add(s.ip.inconsistent),
        );
        if !s.tcp.is_zero() {
            let t = s.tcp;
            eprintln!(
                "ddshark: RTPS over TCP: {} messages in {} streams; {} segments ({} out of order, {} retransmitted, {} gaps of {} bytes, {} resyncs)",
                t.rtps_messages(),
                t.streams_opened,
                t.segments,
                t.out_of_order,
                t.retransmitted,
                t.gaps,
                t.gap_bytes,
                t.resyncs,
            );
        }
    }
    Ok(())
}
