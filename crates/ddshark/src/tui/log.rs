//! Messages while the TUI is up: what the program writes to stderr (exporter reports,
//! warnings) would be drawn over the screen, so stderr goes into a pipe whose lines the
//! UI shows on its log line. When the UI ends, stderr is restored and the messages are
//! written to it, so none is lost.

use std::collections::VecDeque;
use std::io::{self, BufRead, BufReader, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// Most messages kept (the oldest go first, counted).
const KEPT: usize = 1000;

#[derive(Debug, Default)]
struct Lines {
    lines: VecDeque<String>,
    /// Bumped on every message: the UI redraws when it changes.
    version: u64,
    dropped: u64,
}

/// The messages the UI shows; shared between the capture of stderr and the UI.
#[derive(Debug, Clone, Default)]
pub struct MessageLog {
    inner: Arc<Mutex<Lines>>,
}

impl MessageLog {
    pub fn push(&self, line: String) {
        if let Ok(mut l) = self.inner.lock() {
            if l.lines.len() >= KEPT {
                l.lines.pop_front();
                l.dropped = l.dropped.saturating_add(1);
            }
            l.lines.push_back(line);
            l.version = l.version.wrapping_add(1);
        }
    }

    pub(crate) fn version(&self) -> u64 {
        self.inner.lock().map_or(0, |l| l.version)
    }

    /// The last `n` messages, oldest first, and how many there were in all.
    pub(crate) fn last(&self, n: usize) -> (Vec<String>, u64) {
        self.inner.lock().map_or_else(
            |_| (Vec::new(), 0),
            |l| {
                let total = (l.lines.len() as u64).saturating_add(l.dropped);
                let skip = l.lines.len().saturating_sub(n);
                (l.lines.iter().skip(skip).cloned().collect(), total)
            },
        )
    }

    fn take_all(&self) -> (Vec<String>, u64) {
        self.inner.lock().map_or_else(
            |_| (Vec::new(), 0),
            |mut l| (l.lines.drain(..).collect(), l.dropped),
        )
    }
}

/// stderr redirected into a [`MessageLog`] until [`StderrCapture::restore`].
pub(crate) struct StderrCapture {
    saved: OwnedFd,
    reader: Option<JoinHandle<()>>,
    log: MessageLog,
}

impl StderrCapture {
    pub(crate) fn start(log: MessageLog) -> io::Result<Self> {
        let saved = io::stderr().as_fd().try_clone_to_owned()?;
        let (read_end, write_end) = io::pipe()?;
        nix::unistd::dup2_stderr(&write_end).map_err(io::Error::from)?;
        // fd 2 now holds the only write end: restoring it ends the reader.
        drop(write_end);
        let sink = log.clone();
        let reader = std::thread::Builder::new()
            .name("stderr-log".into())
            .spawn(move || {
                for line in BufReader::new(read_end).lines() {
                    match line {
                        Ok(l) => sink.push(l),
                        Err(_) => break,
                    }
                }
            })?;
        Ok(Self {
            saved,
            reader: Some(reader),
            log,
        })
    }

    /// Puts stderr back and writes the messages the UI held to it.
    pub(crate) fn restore(mut self) -> io::Result<()> {
        self.put_back()
    }

    fn put_back(&mut self) -> io::Result<()> {
        let Some(reader) = self.reader.take() else {
            return Ok(());
        };
        nix::unistd::dup2_stderr(&self.saved).map_err(io::Error::from)?;
        let _ = reader.join();
        let (lines, dropped) = self.log.take_all();
        let mut err = io::stderr().lock();
        if dropped > 0 {
            writeln!(err, "ddshark: ({dropped} earlier messages not kept)")?;
        }
        for l in lines {
            writeln!(err, "{l}")?;
        }
        Ok(())
    }
}

impl Drop for StderrCapture {
    fn drop(&mut self) {
        let _ = self.put_back();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_keeps_the_last_messages() {
        let log = MessageLog::default();
        for i in 0..(KEPT + 5) {
            log.push(format!("m{i}"));
        }
        let (last, total) = log.last(2);
        assert_eq!(last, [format!("m{}", KEPT + 3), format!("m{}", KEPT + 4)]);
        assert_eq!(total, (KEPT + 5) as u64);
    }
}
