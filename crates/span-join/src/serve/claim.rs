//! `--shard-auto`: replicas started alike (`docker compose up --scale join=N`, which gives a
//! replica no number of its own) each claim the lowest shard number no other join with the
//! same `--state` holds, by an exclusive lock on `STATE.K.lock` held while the process runs.
//! The shard is then K and the state `STATE.K`: a distinct `shard` tag per running replica,
//! and a replica that restarts (or is recreated under another name) takes over a free slot's
//! state, so no state is left behind and no two joins write one (docs/fleet.md).

use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

use rustix::fs::{flock, FlockOperation};

use super::with_suffix;

/// Shard numbers tried at most (the routing tier's shards of one deployment).
pub const MAX_AUTO_SHARDS: u16 = 1024;

/// Why no shard could be claimed.
#[derive(Debug, thiserror::Error)]
pub enum ClaimError {
    #[error("--shard-auto: cannot open or lock {}: {source}", path.display())]
    Lock { path: PathBuf, source: io::Error },
    #[error("--shard-auto: every shard 0..{MAX_AUTO_SHARDS} of {} is held by another join", state.display())]
    AllHeld { state: PathBuf },
}

/// A claimed shard: its number and state file, held until this is dropped (or the process
/// ends, kill -9 included: the kernel releases the lock).
#[derive(Debug)]
pub struct ShardClaim {
    pub shard: u16,
    pub state: PathBuf,
    _lock: File,
}

/// Claims the lowest shard K whose `STATE.K.lock` no other process holds locked.
pub fn claim(state: &Path) -> Result<ShardClaim, ClaimError> {
    for shard in 0..MAX_AUTO_SHARDS {
        let path = with_suffix(state, &format!("{shard}.lock"));
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|source| ClaimError::Lock {
                path: path.clone(),
                source,
            })?;
        match flock(&file, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {
                return Ok(ShardClaim {
                    shard,
                    state: with_suffix(state, &shard.to_string()),
                    _lock: file,
                })
            }
            Err(e) if e == rustix::io::Errno::WOULDBLOCK => continue,
            Err(e) => {
                return Err(ClaimError::Lock {
                    path,
                    source: e.into(),
                })
            }
        }
    }
    Err(ClaimError::AllHeld {
        state: state.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replicas_take_distinct_shards_and_a_freed_one_is_taken_again() {
        let dir = std::env::temp_dir().join(format!("span-join-claim-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let state = dir.join("join.state");
        let first = claim(&state).unwrap();
        let second = claim(&state).unwrap();
        assert_eq!((first.shard, second.shard), (0, 1));
        assert_eq!(second.state, dir.join("join.state.1"));
        drop(first);
        let again = claim(&state).unwrap();
        assert_eq!(again.shard, 0, "the freed shard 0 is claimed again");
        assert_eq!(again.state, dir.join("join.state.0"));
        drop((second, again));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
