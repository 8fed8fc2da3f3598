//! The output thread: the points, delivered to `--output`, held while it cannot take them.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use span_schema::measurement;

use crate::influxdb::{Bucket, Outcome, Writer};

use anyhow::{bail, Result};

/// Where the points go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Output {
    Stdout,
    Unix(String),
    Tcp(String),
}

impl Output {
    pub(super) fn parse(text: &str) -> Result<Output> {
        if text == "-" {
            Ok(Output::Stdout)
        } else if let Some(path) = text
            .strip_prefix("unix://")
            .or_else(|| text.strip_prefix("unix:"))
        {
            Ok(Output::Unix(path.to_owned()))
        } else if let Some(addr) = text
            .strip_prefix("tcp://")
            .or_else(|| text.strip_prefix("tcp:"))
        {
            Ok(Output::Tcp(addr.to_owned()))
        } else {
            bail!("--output {text:?}: expected unix:PATH, tcp:HOST:PORT or -")
        }
    }

    pub(super) fn connect(&self) -> io::Result<Box<dyn Write + Send>> {
        Ok(match self {
            Output::Stdout => Box::new(io::stdout()),
            Output::Unix(path) => Box::new(UnixStream::connect(path)?),
            Output::Tcp(addr) => Box::new(TcpStream::connect(addr)?),
        })
    }
}

/// One push's points on their way out.
pub(super) struct Batch {
    /// Its key in the undelivered batches (what a checkpoint saves as the outbox).
    pub(super) id: u64,
    pub(super) text: Arc<str>,
    pub(super) points: u64,
    /// The flush at the end of the input (when Telegraf stops, its listener may be gone
    /// already: few attempts, so the process ends soon).
    pub(super) last: bool,
}

/// Delivers batches to the output, reconnecting as needed; a batch it cannot deliver
/// within 30 tries a second apart (the last batch: 3) is dropped and its points counted.
/// Once `keep` is set (the join is stopping to save its state) a batch gets one more
/// try, and what it could not deliver is returned, to be saved.
pub(super) fn deliver(
    output: Output,
    influx: Option<Arc<Writer>>,
    batches: mpsc::Receiver<Batch>,
    undelivered: Arc<Undelivered>,
    held: Arc<AtomicUsize>,
    dropped: Arc<AtomicU64>,
    keep: Arc<AtomicBool>,
) -> Vec<Batch> {
    let mut conn: Option<Box<dyn Write + Send>> = None;
    let mut complained = false;
    let mut kept = Vec::new();
    while let Ok(batch) = batches.recv() {
        let mut delivered = false;
        let attempts = match &influx {
            Some(writer) => {
                delivered = write_influx(writer, &batch);
                0
            }
            None if batch.last => 3,
            None => 30,
        };
        for attempt in 0..attempts {
            if attempt > 0 {
                if keep.load(Ordering::Relaxed) {
                    break;
                }
                thread::sleep(Duration::from_secs(1));
            }
            if conn.is_none() {
                match output.connect() {
                    Ok(c) => conn = Some(c),
                    Err(e) => {
                        if !complained {
                            eprintln!("ddshark-join: cannot reach the output ({e}); retrying");
                            complained = true;
                        }
                        continue;
                    }
                }
            }
            if let Some(c) = conn.as_mut() {
                if c.write_all(batch.text.as_bytes())
                    .and_then(|()| c.flush())
                    .is_ok()
                {
                    delivered = true;
                    complained = false;
                    break;
                }
            }
            conn = None;
        }
        held.fetch_sub(batch.text.len(), Ordering::Relaxed);
        undelivered
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&batch.id);
        if !delivered {
            if keep.load(Ordering::Relaxed) {
                kept.push(batch);
            } else {
                dropped.fetch_add(batch.points, Ordering::Relaxed);
            }
        }
    }
    kept
}

/// A push's points to InfluxDB (`--influx-url`): the join's counters to the raw bucket (as
/// Telegraf put them), the rest to the long bucket; retried until written, the writer
/// stopped or (the last batch) 30 s passed. False when not all of it was written.
fn write_influx(writer: &Writer, batch: &Batch) -> bool {
    let (mut raw, mut long) = (String::new(), String::new());
    let (mut raw_points, mut long_points) = (0u64, 0u64);
    for line in batch.text.split_inclusive('\n') {
        let counters = line
            .strip_prefix(measurement::JOIN)
            .is_some_and(|rest| rest.starts_with([' ', ',']));
        let (text, points) = if counters {
            (&mut raw, &mut raw_points)
        } else {
            (&mut long, &mut long_points)
        };
        text.push_str(line);
        *points = points.saturating_add(1);
    }
    let deadline = batch.last.then(|| Instant::now() + Duration::from_secs(30));
    [
        (Bucket::Raw, raw, raw_points),
        (Bucket::Long, long, long_points),
    ]
    .into_iter()
    .filter(|(_, text, _)| !text.is_empty())
    .all(|(bucket, text, points)| {
        // (a rejection is final: counted by the writer, never retried)
        writer.write_blocking(bucket, text, points, deadline) != Outcome::Abandoned
    })
}

/// The batches handed to the output thread and not delivered (nor dropped) yet, by id.
pub(super) type Undelivered = Mutex<BTreeMap<u64, (Arc<str>, u64)>>;
