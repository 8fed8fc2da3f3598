//! `--state`: the state file and the journal of what was read since it.

use std::io::{self, BufReader, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::input::feed_block;
use crate::{JoinSettings, JoinState, SpanJoin};

/// What `--state` keeps: the join's state and the points not delivered yet.
#[derive(Serialize, Deserialize)]
pub(super) struct SavedJoin {
    join: JoinState,
    /// (line protocol, points in it)
    outbox: Vec<(String, u64)>,
    /// The journal that goes on from this state (`STATE.journal-N`: the input read after it).
    #[serde(default)]
    journal: u64,
}

/// [`SavedJoin`] of a running join (the same serde form), for its checkpoints.
#[derive(Serialize)]
pub(super) struct SavedView<'a, J: Serialize> {
    join: J,
    outbox: Vec<(&'a str, u64)>,
    journal: u64,
}

/// With `--state`: the input read since the last checkpoint, appended to `STATE.journal-N`
/// before the join takes it, and the state written (atomically) at every push, naming the
/// journal that goes on from it. A kill -9 thus loses nothing the join had read: the next
/// start reads the state and the journal after it. (The journal is not synced: it survives
/// the process, not the machine; the state is synced.)
pub(super) struct Checkpoint {
    pub(super) path: PathBuf,
    journal: u64,
    file: Option<std::fs::File>,
    /// (said once: the join goes on without a journal)
    complained: bool,
}

impl Checkpoint {
    fn journal_path(path: &Path, generation: u64) -> PathBuf {
        super::with_suffix(path, &format!("journal-{generation}"))
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
    pub(super) fn record(&mut self, block: &[u8]) {
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
    pub(super) fn save(&mut self, join: &SpanJoin, outbox: &[(Arc<str>, u64)]) -> Result<()> {
        let next = self.journal.saturating_add(1);
        let next_path = Self::journal_path(&self.path, next);
        let file = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .truncate(false)
            .mode(atomic_write::PRIVATE)
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
pub(super) fn load_state(path: &Path) -> Result<Option<SavedJoin>> {
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

/// Writes `saved` to `path` whole or not at all (the atomic-write crate; a new state file is
/// its owner's only: it holds the traffic's names).
pub(super) fn save_state(path: &Path, saved: &impl Serialize) -> Result<()> {
    atomic_write::write_with(path, atomic_write::PRIVATE, |w| {
        serde_json::to_writer(w, saved).map_err(io::Error::from)
    })
    .with_context(|| format!("writing the join's state to {}", path.display()))
}

/// The join, the points it has to send first (line protocol, points in it), its checkpoint.
pub(super) type Resumed = (SpanJoin, Vec<(String, u64)>, Checkpoint);

/// With `--state`: the saved join (if any) and the journal after it, taken in; the
/// checkpoint that goes on from there.
pub(super) fn resume(path: &Path, settings: JoinSettings) -> Result<Resumed> {
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
