//! `ddshark-join` (also `ddshark join`): the live latency join's process around
//! [`SpanJoin`] (whose docs hold the definitions). It reads the hosts' SAMPLE and DATA_FRAG spans as InfluxDB line protocol on stdin
//! (Telegraf's stock `outputs.execd` hands them over as they stream to InfluxDB,
//! deploy/telegraf/telegraf.conf) and writes, every `--period`, the points of the samples
//! that are due (the join's docs) as line protocol to `--output` (Telegraf's
//! `inputs.socket_listener`, which writes them to the long bucket), with one
//! `ddshark_join` point of counters per period.
//!
//! The periods are wall-clock time, the only clock here: arrival bounds when a sample is
//! joined (`--settle-pushes` to `--max-wait-pushes` periods), capture time decides it and
//! every value. Stdin is read on its own thread and the points
//! are written on another, so a slow reader or a missing listener never delays a push.
//! Output that cannot be delivered is held up to `--max-output-bytes`, then dropped and
//! counted. At the end of the input everything waiting is joined, unless `--state` names
//! a file: then the join stops where it is (on the end of the input or SIGTERM/SIGINT),
//! writes its state and the points it could not deliver to that file (atomically: a
//! temporary file renamed), and the next `ddshark-join --state` of the file goes on from
//! there, sending those points first. With `--state` it also writes that file at every
//! push and appends what it reads between pushes to a journal beside it
//! (`FILE.journal-N`, named in the state), which the next start reads after the state: a
//! restart of Telegraf (which ends the input, and stops its socket listener before that)
//! or of the join, kill -9 included, thus loses no span the join had read and no point it
//! had made (points delivered after the last push's state may be sent again: InfluxDB
//! keeps one point per series and time).

mod args;
mod checkpoint;
mod claim;
mod input;
mod otlp;
mod output;

use std::io::{self, BufReader};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::influxdb::Writer;
use crate::{LineWriter, SpanJoin};
use checkpoint::{resume, Checkpoint};
use input::{feed_block, read_blocks};
use output::{deliver, Batch, Output, Undelivered};

pub use args::{parse_period, JoinArgs, OtlpArgs};

/// What the run loop takes in: a block of line protocol from stdin, or an OTLP export.
enum Input {
    Lines(Vec<u8>),
    Export(otlp::Export),
}

/// `FILE` with `.SUFFIX` appended to its file name (the state's journals and shard files).
fn with_suffix(file: &Path, suffix: &str) -> PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(".");
    name.push(suffix);
    PathBuf::from(name)
}

/// Runs the join until the end of stdin (with `--otlp-*`: until SIGTERM/SIGINT).
pub fn run(args: &JoinArgs) -> Result<()> {
    if !args.shard_auto {
        return run_as(args);
    }
    let Some(state) = &args.state else {
        anyhow::bail!("--shard-auto needs --state FILE");
    };
    // (held until the join ends: no other join takes this shard meanwhile)
    let claimed = claim::claim(state)?;
    eprintln!(
        "ddshark-join: --shard-auto: shard {} (state {})",
        claimed.shard,
        claimed.state.display()
    );
    let mut own = args.clone();
    own.shard = Some(claimed.shard);
    own.state = Some(claimed.state.clone());
    own.shard_auto = false;
    let result = run_as(&own);
    drop(claimed);
    result
}

/// Runs the join with its shard and state settled.
fn run_as(args: &JoinArgs) -> Result<()> {
    let output = Output::parse(&args.output)?;
    let influx = match args.influx.config()? {
        Some(cfg) => {
            if output != Output::Stdout {
                anyhow::bail!(
                    "--output {} and --influx-url: the points go to one of them",
                    args.output
                );
            }
            eprintln!(
                "ddshark-join: writing InfluxDB at {} (org {}, raw bucket {}, long bucket {})",
                cfg.url, cfg.org, cfg.raw_bucket, cfg.long_bucket
            );
            Some(Arc::new(Writer::start(cfg)?))
        }
        None => None,
    };
    let (mut join, outbox, mut checkpoint) = match &args.state {
        Some(path) => {
            let (join, outbox, checkpoint) = resume(path, args.settings())?;
            (join, outbox, Some(checkpoint))
        }
        None => (SpanJoin::new(args.settings()), Vec::new(), None),
    };
    // SIGTERM/SIGINT: stop and save as at the end of the input (with --state; with the
    // OTLP intake, whose input has no end, it is the end).
    let stop = Arc::new(AtomicBool::new(false));
    if args.state.is_some() || args.otlp.enabled() {
        let stop = stop.clone();
        ctrlc::set_handler(move || stop.store(true, Ordering::Relaxed))
            .context("installing the SIGTERM handler")?;
        if let Some(path) = &args.state {
            eprintln!(
                "ddshark-join: state kept in {} at every push (the input between pushes in its journal), at the end of the input and on SIGTERM",
                path.display()
            );
        }
    }
    let (block_tx, block_rx) = mpsc::sync_channel::<Input>(16);
    let refused_before = join.counters.otlp_refused;
    let (reader, servers) = if args.otlp.enabled() {
        (
            None,
            Some(otlp::start(&args.otlp, block_tx, influx.clone())?),
        )
    } else {
        // (stdin is read on its own thread so that a push is never late for want of input)
        let reader = thread::Builder::new()
            .name("join-input".into())
            .spawn(move || read_blocks(BufReader::with_capacity(1 << 20, io::stdin()), block_tx))
            .context("starting the input thread")?;
        (Some(reader), None)
    };
    let refused = servers.as_ref().map(|s| s.refused.clone());
    let telemetry = servers.as_ref().map(|s| s.telemetry.clone());
    let influx_before = join.counters;
    let count_refused = |join: &mut SpanJoin| {
        if let Some(refused) = &refused {
            join.counters.otlp_refused =
                refused_before.saturating_add(refused.load(Ordering::Relaxed));
        }
        if let Some(w) = &influx {
            let (c, b) = (&mut join.counters, &influx_before);
            let n = |a: &AtomicU64| a.load(Ordering::Relaxed);
            c.influx_points_written = b
                .influx_points_written
                .saturating_add(n(&w.counters.written));
            c.influx_retries = b.influx_retries.saturating_add(n(&w.counters.retries));
            c.influx_points_rejected = b
                .influx_points_rejected
                .saturating_add(n(&w.counters.rejected));
            c.influx_points_abandoned = b
                .influx_points_abandoned
                .saturating_add(n(&w.counters.abandoned));
            c.influx_queued_points = n(&w.counters.queued);
            if let Some(t) = &telemetry {
                c.telemetry_points = b.telemetry_points.saturating_add(n(&t.points));
                c.telemetry_rejected = b.telemetry_rejected.saturating_add(n(&t.rejected));
            }
        }
    };
    let (batch_tx, batch_rx) = mpsc::channel::<Batch>();
    let undelivered: Arc<Undelivered> = Arc::default();
    let held = Arc::new(AtomicUsize::new(0));
    let dropped = Arc::new(AtomicU64::new(0));
    let keep = Arc::new(AtomicBool::new(false));
    let writer = {
        let (undelivered, held, dropped, keep, influx) = (
            undelivered.clone(),
            held.clone(),
            dropped.clone(),
            keep.clone(),
            influx.clone(),
        );
        thread::Builder::new()
            .name("join-output".into())
            .spawn(move || deliver(output, influx, batch_rx, undelivered, held, dropped, keep))
            .context("starting the output thread")?
    };
    let mut next_id = 0u64;
    let mut send = |text: String, points: u64, last: bool| {
        let len = text.len();
        if held.load(Ordering::Relaxed).saturating_add(len) > args.max_output_bytes {
            dropped.fetch_add(points, Ordering::Relaxed);
            return;
        }
        held.fetch_add(len, Ordering::Relaxed);
        let (id, text) = (next_id, Arc::<str>::from(text));
        next_id = next_id.wrapping_add(1);
        undelivered
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id, (text.clone(), points));
        if batch_tx
            .send(Batch {
                id,
                text,
                points,
                last,
            })
            .is_err()
        {
            dropped.fetch_add(points, Ordering::Relaxed);
        }
    };
    for (text, points) in outbox {
        send(text, points, false);
    }
    let undelivered_now = || -> Vec<(Arc<str>, u64)> {
        undelivered
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .cloned()
            .collect()
    };
    if let Some(cp) = checkpoint.as_mut() {
        // (what was read back is on disk as a state again before anything new is read)
        cp.save(&join, &undelivered_now())?;
    }
    let mut layout = otlp::RawLayout::default();
    let mut take =
        |join: &mut SpanJoin, checkpoint: &mut Option<Checkpoint>, input: Input| match input {
            Input::Lines(block) => {
                if let Some(cp) = checkpoint.as_mut() {
                    cp.record(&block);
                }
                feed_block(join, &block);
            }
            Input::Export(export) => {
                otlp::take(join, checkpoint, influx.as_deref(), &mut layout, export)
            }
        };
    let mut next_push = Instant::now() + args.period;
    let mut input_ended = false;
    loop {
        if stop.load(Ordering::Relaxed) {
            // (what the reader has read, and what is still in the pipe, is taken in)
            loop {
                match block_rx.recv_timeout(Duration::from_millis(100)) {
                    Ok(block) => take(&mut join, &mut checkpoint, block),
                    Err(RecvTimeoutError::Timeout) => break,
                    Err(RecvTimeoutError::Disconnected) => {
                        input_ended = true;
                        break;
                    }
                }
            }
            break;
        }
        let wait = next_push
            .saturating_duration_since(Instant::now())
            .min(Duration::from_millis(200));
        match block_rx.recv_timeout(wait) {
            Ok(block) => take(&mut join, &mut checkpoint, block),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                input_ended = true;
                break;
            }
        }
        let now = Instant::now();
        if now >= next_push {
            // (late pushes are not caught up in a burst: that would join samples before
            // the other hosts' spans could arrive)
            next_push = (next_push + args.period).max(now + args.period / 2);
            let mut out = LineWriter::default();
            join.counters.points_dropped = dropped.load(Ordering::Relaxed);
            count_refused(&mut join);
            let points = join.push(&mut out);
            send(out.buf, points.saturating_add(1), false);
            if let Some(cp) = checkpoint.as_mut() {
                if let Err(e) = cp.save(&join, &undelivered_now()) {
                    eprintln!("ddshark-join: {e:#} (the previous state and its journal stay)");
                }
            }
        }
    }
    // (no more exports are taken: those in flight are answered "busy", to be sent again)
    drop(block_rx);
    if let Some(servers) = servers {
        servers.shutdown();
    }
    count_refused(&mut join);
    let Some(mut checkpoint) = checkpoint else {
        let mut out = LineWriter::default();
        join.counters.points_dropped = dropped.load(Ordering::Relaxed);
        let points = join.flush(&mut out);
        send(out.buf, points.saturating_add(1), true);
        drop(batch_tx);
        if let Some(reader) = reader {
            let _ = reader.join();
        }
        let _ = writer.join();
        return Ok(());
    };
    // Stopping with a state: nothing more is joined; what the output cannot take at once
    // (Telegraf stops its listener before it ends our input) is kept with the state.
    keep.store(true, Ordering::Relaxed);
    if let Some(w) = &influx {
        // (what InfluxDB cannot take now is kept with the state)
        w.stop();
    }
    drop(batch_tx);
    let kept = writer
        .join()
        .map_err(|_| anyhow::anyhow!("the output thread panicked"))?;
    join.counters.points_dropped = dropped.load(Ordering::Relaxed);
    let kept: Vec<(Arc<str>, u64)> = kept.into_iter().map(|b| (b.text, b.points)).collect();
    checkpoint.save(&join, &kept)?;
    eprintln!(
        "ddshark-join: saved to {}: {} samples and {} DATA_FRAGs waiting, {} points to send",
        checkpoint.path.display(),
        join.pending_samples(),
        join.pending_frags(),
        kept.iter().map(|(_, p)| p).sum::<u64>()
    );
    if let (true, Some(reader)) = (input_ended, reader) {
        let _ = reader.join();
    }
    Ok(())
}
