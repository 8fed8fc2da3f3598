//! `ddshark latency CAPTURE_A CAPTURE_B`: one-way latency of every DDS sample (or DATA_FRAG
//! submessage) between captures taken on different hosts.
//!
//! The captures are read side by side in capture-time order; every DATA/DATA_FRAG
//! becomes an observation keyed by (writer GUID, SN[, fragment starting number]) and
//! meets the other captures' observations in a bounded [`join::Join`]. The captures are
//! read twice: the first pass gathers the evidence for each writer's host and for the
//! clock offset between each pair of hosts (`latency_core`: the host from the order of
//! events, not from the clocks; the offset from minimum one-way delays), the second joins
//! with those hosts (and, with `--offset auto`, the receivers' clocks moved onto the
//! sender's by the estimate when its bound excludes 0). Clocks too far apart to pair samples
//! within the window are first aligned coarsely by the samples both captures saw. Both directions of a capture pair come out of one run, and
//! a multicast sample yields one row per receiving capture.

mod args;
pub mod clocks;
mod coarse;
pub mod extract;
mod input;
pub mod join;
mod passes;
mod plan;
mod run_summary;
pub(crate) mod stats;
mod stdin;

use std::io::{self, BufWriter, Write};

use anyhow::{Context, Result};

use crate::output::{latency as latency_out, latency_html};
pub use args::{LatencyArgs, LatencyFormat, Level, OffsetMode};
pub use clocks::Correction;
pub use coarse::CoarseOffset;
pub use passes::join_captures;
pub use plan::{plan, Plan};
pub(crate) use run_summary::direction_in;
pub use run_summary::{clock_warnings, direction, label, PairOffset, RunSummary};

pub fn run(args: &LatencyArgs) -> Result<()> {
    let stdout = io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    let mut open = true;
    let mut line = String::with_capacity(512);
    let rows_wanted = !(args.summary && args.format == LatencyFormat::Text);
    // Inputs that cannot give latencies are refused before anything is written; the header
    // says what was done to the clocks.
    let plan = plan(args)?;
    let mut header_due = rows_wanted;
    let mut h = String::new();
    latency_out::header(
        args.format,
        args.level,
        &plan.labels,
        &plan.corrections,
        &mut h,
    );
    let header = |out: &mut BufWriter<_>, due: &mut bool| -> Result<bool> {
        if !std::mem::take(due) {
            return Ok(true);
        }
        Ok(crate::output::write_or_stop(out, h.as_bytes())?)
    };
    let mut rows = 0u64;
    let labels = plan.labels.clone();
    let run = plan.join(args, |r| {
        if !open || !rows_wanted {
            return Ok(());
        }
        open = header(&mut out, &mut header_due)?;
        line.clear();
        if args.format == LatencyFormat::Json && rows > 0 {
            line.push(',');
        }
        rows = rows.saturating_add(1);
        latency_out::row(args.format, args.level, r, &labels, &mut line);
        open = open && crate::output::write_or_stop(&mut out, line.as_bytes())?;
        Ok(())
    })?;
    if open {
        open = header(&mut out, &mut header_due)?;
    }
    if open {
        let mut tail = String::new();
        latency_out::trailer(args.format, &run, &mut tail);
        crate::output::write_or_stop(&mut out, tail.as_bytes())?;
    }
    match out.flush() {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => {
            return Err(e).context("writing to standard output")
        }
        _ => {}
    }
    for t in &run.truncated {
        eprintln!("ddshark: warning: {t}; used what came before it");
    }
    for w in clock_warnings(args, &run) {
        eprintln!("ddshark: warning: {w}");
    }
    if let Some(path) = &args.html {
        let page = latency_html::report(&run);
        atomic_write::write(path, page, atomic_write::READABLE)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if !args.quiet {
        let mut s = String::new();
        if args.format != LatencyFormat::Text {
            latency_out::summary_text(&run, &mut s, false);
        }
        latency_out::stats_text(&run, &mut s);
        eprint!("{s}");
    }
    Ok(())
}
