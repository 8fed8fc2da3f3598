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

use std::collections::BTreeMap;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use serde::{Deserialize, Serialize};

use crate::{feed_line, JoinSettings, JoinState, LineWriter, SpanJoin};
use time_span::TimeSpan;

const EXAMPLES: &str = "\
Examples:
  (run by Telegraf's outputs.execd, deploy/telegraf/telegraf.conf)
  ddshark-join --output unix:/run/ddshark/join.sock --period 10s
  ddshark-join < spans.lp                  join a file of spans, points on stdout
  ddshark-join --period 1s --settle-pushes 15 --output tcp:127.0.0.1:8094
  ddshark-join --output unix:/run/ddshark/join.sock --state /var/lib/telegraf/ddshark-join.state
";

/// Arguments of `ddshark-join` (and `ddshark join`).
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct JoinArgs {
    /// Where the points go: unix:PATH or tcp:HOST:PORT (a line-protocol listener such as
    /// Telegraf's socket_listener), or - for stdout
    #[arg(long, default_value = "-", value_name = "ADDRESS")]
    pub output: String,
    /// How often the join runs: 10s, 500ms, 1m
    #[arg(long, default_value = "10s", value_parser = parse_period)]
    pub period: Duration,
    /// Periods a sample waits at least after its first span arrived; then until every other
    /// host's capture passed it by the sample window plus --lost-grace (capture time)
    #[arg(long, default_value_t = 3)]
    pub settle_pushes: u64,
    /// Periods a sample waits at most for a host whose spans stopped (counted as forced)
    #[arg(long, default_value_t = 30)]
    pub max_wait_pushes: u64,
    /// Samples (and as many DATA_FRAGs) waiting at most; beyond, the oldest is joined early
    #[arg(long, default_value_t = 500_000)]
    pub max_pending: usize,
    /// Writers and hosts not seen for this many periods are forgotten
    #[arg(long, default_value_t = 360)]
    pub forget_pushes: u64,
    /// Participants whose host votes are kept
    #[arg(long, default_value_t = 10_000)]
    pub max_participants: usize,
    /// A host that cast no vote for a participant in this many periods is not its host
    #[arg(long, default_value_t = 6)]
    pub vote_pushes: u64,
    /// ddshark's --otlp-sample-window (the span schema's sample window)
    #[arg(long = "sample-window", value_name = "DURATION", default_value = "10s",
          value_parser = positive_span_ns)]
    pub sample_window_ns: i64,
    /// Another host receives a writer if it saw one of its samples this close to t_send
    #[arg(long = "receiver-window", value_name = "DURATION", default_value = "12s",
          value_parser = positive_span_ns)]
    pub receiver_window_ns: i64,
    /// A sample sent this close to the end of a host's capture is not called lost
    #[arg(long = "lost-grace", value_name = "DURATION", default_value = "1s", value_parser = span_ns)]
    pub lost_grace_ns: i64,
    /// Output held while --output cannot take it; beyond, points are dropped (counted)
    #[arg(long, default_value_t = 256 << 20, value_name = "BYTES")]
    pub max_output_bytes: usize,
    /// Keep the join across restarts (kill -9 included) in FILE: read at start, written at
    /// every push (the input between pushes in FILE.journal-N), at the end of the input and
    /// on SIGTERM (instead of joining what still waits)
    #[arg(long, value_name = "FILE")]
    pub state: Option<PathBuf>,
}

impl JoinArgs {
    pub fn settings(&self) -> JoinSettings {
        JoinSettings {
            settle_pushes: self.settle_pushes,
            max_wait_pushes: self.max_wait_pushes,
            max_pending: self.max_pending,
            forget_pushes: self.forget_pushes,
            max_participants: self.max_participants,
            vote_pushes: self.vote_pushes,
            sample_window_ns: self.sample_window_ns,
            receiver_window_ns: self.receiver_window_ns,
            lost_grace_ns: self.lost_grace_ns,
        }
    }
}

/// `10s`, `500ms`, `1m`, `2h`, `250us`, `1000ns`; a bare number is seconds. More than 0.
/// How often the join runs: a duration more than zero (`10s`, `500ms`).
pub fn parse_period(text: &str) -> Result<Duration, String> {
    TimeSpan::positive(text).map(TimeSpan::duration)
}

/// A duration (`10s`) in ns.
fn span_ns(text: &str) -> Result<i64, String> {
    let span: TimeSpan = text.parse()?;
    i64::try_from(span.ns()).map_err(|_| format!("{text:?} is too long"))
}

/// A duration more than zero, in ns.
fn positive_span_ns(text: &str) -> Result<i64, String> {
    TimeSpan::positive(text)?;
    span_ns(text)
}

/// Where the points go.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Output {
    Stdout,
    Unix(String),
    Tcp(String),
}

impl Output {
    fn parse(text: &str) -> Result<Output> {
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

    fn connect(&self) -> io::Result<Box<dyn Write + Send>> {
        Ok(match self {
            Output::Stdout => Box::new(io::stdout()),
            Output::Unix(path) => Box::new(UnixStream::connect(path)?),
            Output::Tcp(addr) => Box::new(TcpStream::connect(addr)?),
        })
    }
}

/// One push's points on their way out.
struct Batch {
    /// Its key in the undelivered batches (what a checkpoint saves as the outbox).
    id: u64,
    text: Arc<str>,
    points: u64,
    /// The flush at the end of the input (when Telegraf stops, its listener may be gone
    /// already: few attempts, so the process ends soon).
    last: bool,
}

/// Delivers batches to the output, reconnecting as needed; a batch it cannot deliver
/// within 30 tries a second apart (the last batch: 3) is dropped and its points counted.
/// Once `keep` is set (the join is stopping to save its state) a batch gets one more
/// try, and what it could not deliver is returned, to be saved.
fn deliver(
    output: Output,
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
        let attempts = if batch.last { 3 } else { 30 };
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

/// The batches handed to the output thread and not delivered (nor dropped) yet, by id.
type Undelivered = Mutex<BTreeMap<u64, (Arc<str>, u64)>>;

/// What `--state` keeps: the join's state and the points not delivered yet.
#[derive(Serialize, Deserialize)]
struct SavedJoin {
    join: JoinState,
    /// (line protocol, points in it)
    outbox: Vec<(String, u64)>,
    /// The journal that goes on from this state (`STATE.journal-N`: the input read after it).
    #[serde(default)]
    journal: u64,
}

/// [`SavedJoin`] of a running join (the same serde form), for its checkpoints.
#[derive(Serialize)]
struct SavedView<'a, J: Serialize> {
    join: J,
    outbox: Vec<(&'a str, u64)>,
    journal: u64,
}

/// With `--state`: the input read since the last checkpoint, appended to `STATE.journal-N`
/// before the join takes it, and the state written (atomically) at every push, naming the
/// journal that goes on from it. A kill -9 thus loses nothing the join had read: the next
/// start reads the state and the journal after it. (The journal is not synced: it survives
/// the process, not the machine; the state is synced.)
struct Checkpoint {
    path: PathBuf,
    journal: u64,
    file: Option<std::fs::File>,
    /// (said once: the join goes on without a journal)
    complained: bool,
}

impl Checkpoint {
    fn journal_path(path: &Path, generation: u64) -> PathBuf {
        let mut name = path.as_os_str().to_owned();
        name.push(format!(".journal-{generation}"));
        PathBuf::from(name)
    }

    /// The journals of `path` other than `keep`'s (left by a kill between a checkpoint and
    /// the removal of the journal before it).
    fn stale_journals(path: &Path, keep: u64) -> Vec<PathBuf> {
        let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
            return Vec::new();
        };
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        let prefix = format!("{}.journal-", name.to_string_lossy());
        let Ok(entries) = std::fs::read_dir(dir) else {
            return Vec::new();
        };
        entries
            .filter_map(|e| e.ok())
            .filter(|e| {
                e.file_name()
                    .to_str()
                    .and_then(|n| n.strip_prefix(&prefix))
                    .is_some_and(|generation| generation != keep.to_string())
            })
            .map(|e| e.path())
            .collect()
    }

    /// Appends what the join is about to read.
    fn record(&mut self, block: &[u8]) {
        let Some(file) = self.file.as_mut() else {
            return;
        };
        if let Err(e) = file.write_all(block) {
            if !self.complained {
                eprintln!(
                    "ddshark-join: cannot write the journal {} ({e}): a kill -9 loses what was read since the last push",
                    Self::journal_path(&self.path, self.journal).display()
                );
                self.complained = true;
            }
        }
    }

    /// Writes `join` and the points not delivered yet, with a new journal after them;
    /// removes the previous journal.
    fn save(&mut self, join: &SpanJoin, outbox: &[(Arc<str>, u64)]) -> Result<()> {
        let next = self.journal.saturating_add(1);
        let next_path = Self::journal_path(&self.path, next);
        let file = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&next_path)
            .with_context(|| format!("creating the journal {}", next_path.display()))?;
        // (a journal of this number left by a kill before its state was written: empty it)
        file.set_len(0)
            .with_context(|| format!("emptying the journal {}", next_path.display()))?;
        let view = SavedView {
            join: join.state_view(),
            outbox: outbox.iter().map(|(t, p)| (&**t, *p)).collect(),
            journal: next,
        };
        save_state(&self.path, &view)?;
        let previous = Self::journal_path(&self.path, self.journal);
        self.journal = next;
        self.file = Some(file);
        if let Err(e) = std::fs::remove_file(&previous) {
            if e.kind() != io::ErrorKind::NotFound {
                eprintln!(
                    "ddshark-join: cannot remove the journal {} ({e})",
                    previous.display()
                );
            }
        }
        Ok(())
    }
}

/// Reads a saved join, or None when there is none. A file that cannot be read as one is
/// an error naming it (it is left in place).
fn load_state(path: &Path) -> Result<Option<SavedJoin>> {
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("--state {}", path.display())),
    };
    let saved: SavedJoin = serde_json::from_reader(BufReader::with_capacity(1 << 20, file))
        .with_context(|| {
            format!(
                "--state {}: not a join state this ddshark reads (move it away to start empty)",
                path.display()
            )
        })?;
    Ok(Some(saved))
}

/// Writes `saved` to `path` whole or not at all: a temporary file (mode 0600) beside it,
/// synced, renamed over it.
fn save_state(path: &Path, saved: &impl Serialize) -> Result<()> {
    let tmp = path.with_extension("tmp");
    let write = || -> io::Result<()> {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)?;
        let mut w = io::BufWriter::with_capacity(1 << 20, file);
        serde_json::to_writer(&mut w, saved)?;
        let file = w.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)?;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::File::open(dir)?.sync_all()?;
        }
        Ok(())
    };
    write().with_context(|| format!("writing the join's state to {}", path.display()))
}

/// Longest line read (a span is < 2 KiB); a longer one is replaced by a line the join
/// rejects (counted).
const MAX_LINE: usize = 64 << 10;

/// Reads whole lines from `input` in blocks (so one channel message carries many spans).
fn read_blocks<R: Read>(mut input: BufReader<R>, blocks: mpsc::SyncSender<Vec<u8>>) {
    const BLOCK: usize = 256 << 10;
    let mut skipping = false;
    loop {
        let mut block = Vec::with_capacity(BLOCK.saturating_add(MAX_LINE));
        while block.len() < BLOCK {
            let line_start = block.len();
            match (&mut input)
                .take(MAX_LINE as u64)
                .read_until(b'\n', &mut block)
            {
                Ok(0) => {
                    if !block.is_empty() {
                        let _ = blocks.send(block);
                    }
                    return;
                }
                Ok(_) => {
                    let complete = block.last() == Some(&b'\n');
                    if skipping || (!complete && block.len().saturating_sub(line_start) >= MAX_LINE)
                    {
                        // (the rest of an overlong line, up to its newline: one bad line)
                        block.truncate(line_start);
                        if !skipping {
                            block.extend_from_slice(b"\xff\n");
                        }
                        skipping = !complete;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    eprintln!("ddshark-join: reading the input: {e}");
                    let _ = blocks.send(block);
                    return;
                }
            }
            // (a block ends early when no more input is buffered, so spans do not sit in
            // a half-full block while the join pushes)
            if input.buffer().is_empty() {
                break;
            }
        }
        if blocks.send(block).is_err() {
            return;
        }
    }
}

/// Feeds a block of lines to the join.
fn feed_block(join: &mut SpanJoin, block: &[u8]) {
    for text in block.split(|&b| b == b'\n') {
        match std::str::from_utf8(text) {
            Ok(text) => feed_line(join, text),
            Err(_) => join.reject(),
        }
    }
}

/// The join, the points it has to send first (line protocol, points in it), its checkpoint.
type Resumed = (SpanJoin, Vec<(String, u64)>, Checkpoint);

/// With `--state`: the saved join (if any) and the journal after it, taken in; the
/// checkpoint that goes on from there.
fn resume(path: &Path, settings: JoinSettings) -> Result<Resumed> {
    let saved = load_state(path)?;
    let journal = saved.as_ref().map_or(0, |s| s.journal);
    let (mut join, outbox) = match saved {
        Some(saved) => (
            SpanJoin::from_state(settings, saved.join)
                .with_context(|| format!("--state {}", path.display()))?,
            saved.outbox,
        ),
        None => (SpanJoin::new(settings), Vec::new()),
    };
    let journal_path = Checkpoint::journal_path(path, journal);
    let replayed = match std::fs::read(&journal_path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
        Err(e) => {
            return Err(e).with_context(|| format!("--state: reading {}", journal_path.display()))
        }
    };
    let spans_before = join.counters.spans;
    feed_block(&mut join, &replayed);
    for stale in Checkpoint::stale_journals(path, journal) {
        let _ = std::fs::remove_file(stale);
    }
    if journal > 0 || !replayed.is_empty() {
        eprintln!(
            "ddshark-join: went on from {}: {} samples and {} DATA_FRAGs waiting ({} spans of them from its journal), {} points to send",
            path.display(),
            join.pending_samples(),
            join.pending_frags(),
            join.counters.spans.saturating_sub(spans_before),
            outbox.iter().map(|(_, p)| p).sum::<u64>()
        );
    }
    let checkpoint = Checkpoint {
        path: path.to_path_buf(),
        journal,
        file: None,
        complained: false,
    };
    Ok((join, outbox, checkpoint))
}

/// Runs the join until the end of stdin.
pub fn run(args: &JoinArgs) -> Result<()> {
    let output = Output::parse(&args.output)?;
    let (mut join, outbox, mut checkpoint) = match &args.state {
        Some(path) => {
            let (join, outbox, checkpoint) = resume(path, args.settings())?;
            (join, outbox, Some(checkpoint))
        }
        None => (SpanJoin::new(args.settings()), Vec::new(), None),
    };
    // SIGTERM/SIGINT: stop and save as at the end of the input (with --state).
    let stop = Arc::new(AtomicBool::new(false));
    if args.state.is_some() {
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
    let (block_tx, block_rx) = mpsc::sync_channel::<Vec<u8>>(16);
    // (stdin is read on its own thread so that a push is never late for want of input)
    let reader = thread::Builder::new()
        .name("join-input".into())
        .spawn(move || read_blocks(BufReader::with_capacity(1 << 20, io::stdin()), block_tx))
        .context("starting the input thread")?;
    let (batch_tx, batch_rx) = mpsc::channel::<Batch>();
    let undelivered: Arc<Undelivered> = Arc::default();
    let held = Arc::new(AtomicUsize::new(0));
    let dropped = Arc::new(AtomicU64::new(0));
    let keep = Arc::new(AtomicBool::new(false));
    let writer = {
        let (undelivered, held, dropped, keep) = (
            undelivered.clone(),
            held.clone(),
            dropped.clone(),
            keep.clone(),
        );
        thread::Builder::new()
            .name("join-output".into())
            .spawn(move || deliver(output, batch_rx, undelivered, held, dropped, keep))
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
    let take = |join: &mut SpanJoin, checkpoint: &mut Option<Checkpoint>, block: Vec<u8>| {
        if let Some(cp) = checkpoint.as_mut() {
            cp.record(&block);
        }
        feed_block(join, &block);
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
            let points = join.push(&mut out);
            send(out.buf, points.saturating_add(1), false);
            if let Some(cp) = checkpoint.as_mut() {
                if let Err(e) = cp.save(&join, &undelivered_now()) {
                    eprintln!("ddshark-join: {e:#} (the previous state and its journal stay)");
                }
            }
        }
    }
    let Some(mut checkpoint) = checkpoint else {
        let mut out = LineWriter::default();
        join.counters.points_dropped = dropped.load(Ordering::Relaxed);
        let points = join.flush(&mut out);
        send(out.buf, points.saturating_add(1), true);
        drop(batch_tx);
        let _ = reader.join();
        let _ = writer.join();
        return Ok(());
    };
    // Stopping with a state: nothing more is joined; what the output cannot take at once
    // (Telegraf stops its listener before it ends our input) is kept with the state.
    keep.store(true, Ordering::Relaxed);
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
    if input_ended {
        let _ = reader.join();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        j: super::JoinArgs,
    }

    #[test]
    fn the_sample_window_default_is_the_span_schemas() {
        let t = T::try_parse_from(["join"]).map(|t| t.j.sample_window_ns);
        assert_eq!(t.ok(), Some(span_schema::SAMPLE_WINDOW_NS));
    }
}
