//! `-` (standard input) as one capture of `ddshark latency`. The captures are read more than
//! once (the evidence pass, the joining pass), which a pipe cannot do: standard input is
//! first spooled to a temporary file, bounded, and removed when the run ends.

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::cli::UsageError;

/// The name of standard input on the command line.
const STDIN: &str = "-";
/// Most bytes spooled from standard input (a larger capture is better given as a file).
const MAX_SPOOL_BYTES: u64 = 4 << 30;

/// Standard input copied to a temporary file, removed when dropped.
#[derive(Debug)]
pub(super) struct Spool {
    dir: PathBuf,
    path: PathBuf,
}

impl Drop for Spool {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
        let _ = std::fs::remove_dir(&self.dir);
    }
}

pub(super) fn is_stdin(p: &Path) -> bool {
    p.as_os_str() == STDIN
}

/// Replaces `-` among `paths` by a spool of standard input (at most one `-`).
pub(super) fn spool_stdin(paths: &mut [PathBuf]) -> Result<Option<Spool>> {
    let n = paths.iter().filter(|p| is_stdin(p)).count();
    if n == 0 {
        return Ok(None);
    }
    if n > 1 {
        return Err(UsageError(format!(
            "- (standard input) is given {n} times: at most one capture of ddshark latency can come from standard input"
        ))
        .into());
    }
    let spool = spool(std::io::stdin().lock(), MAX_SPOOL_BYTES)?;
    // Not a capture: said of standard input, not of the temporary file.
    if let Err(e) = crate::capture::file::FileSource::open(&spool.path) {
        let temp = spool.path.display().to_string();
        bail!("{}", e.to_string().replace(&temp, "- (standard input)"));
    }
    for p in paths.iter_mut().filter(|p| is_stdin(p)) {
        p.clone_from(&spool.path);
    }
    Ok(Some(spool))
}

fn spool(input: impl Read, limit: u64) -> Result<Spool> {
    let dir = std::env::temp_dir().join(format!("ddshark-latency-{}", std::process::id()));
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("spooling standard input: creating {}", dir.display()))?;
    // Made before the file: whatever fails below, the drop removes what was written.
    let spool = Spool {
        path: dir.join("standard-input"),
        dir,
    };
    let mut file = std::fs::File::create(&spool.path)
        .with_context(|| format!("spooling standard input to {}", spool.path.display()))?;
    let copied = std::io::copy(&mut input.take(limit.saturating_add(1)), &mut file)
        .with_context(|| format!("spooling standard input to {}", spool.path.display()))?;
    if copied > limit {
        bail!(
            "- (standard input) is larger than {} GiB, the most ddshark latency copies to a temporary file to read it twice: write the capture to a file and give its path",
            limit >> 30
        );
    }
    if copied == 0 {
        bail!("- (standard input) is empty: no capture to read (is anything piped in?)");
    }
    Ok(spool)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spool_holds_the_input_and_goes_away() {
        let s = spool(&b"0123456789"[..], 10).unwrap();
        assert_eq!(std::fs::read(&s.path).unwrap(), b"0123456789");
        let path = s.path.clone();
        drop(s);
        assert!(!path.exists());
    }

    #[test]
    fn too_much_or_nothing_is_refused_by_name() {
        let err = format!("{:#}", spool(&b"0123456789"[..], 9).unwrap_err());
        assert!(
            err.contains("standard input") && err.contains("larger"),
            "{err}"
        );
        let err = format!("{:#}", spool(&b""[..], 9).unwrap_err());
        assert!(
            err.contains("standard input") && err.contains("empty"),
            "{err}"
        );
        let mut two = [PathBuf::from("-"), PathBuf::from("-")];
        let err = spool_stdin(&mut two).unwrap_err();
        assert!(err.downcast_ref::<UsageError>().is_some(), "{err}");
    }
}
