//! Files that appear whole or not at all (ddshark's final JSON, latency reports, the discovery
//! cache; the join's state file): written to a temporary file beside the target, synced,
//! renamed over it, and the directory synced so the rename itself survives a power cut.
//! A reader (a dashboard, a script polling the file, a join resuming) never sees half a file,
//! and a crash leaves the previous version. A new file gets the mode the caller names (less
//! the umask); an existing file keeps its mode.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The mode `std::fs::write` gives a new file: for outputs anyone may read.
pub const READABLE: u32 = 0o644;
/// For files only their owner may read (the join's state holds the traffic's names).
pub const PRIVATE: u32 = 0o600;

/// The temporary file's name: `.NAME.tmp-PID` beside `path` (hidden, one per process).
fn temp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.tmp-{}", std::process::id()))
}

/// Writes `contents` to `path` atomically (see the crate docs); a new file gets `new_mode`.
pub fn write(path: &Path, contents: impl AsRef<[u8]>, new_mode: u32) -> io::Result<()> {
    write_with(path, new_mode, |w| w.write_all(contents.as_ref()))
}

/// Writes what `fill` writes to `path` atomically (see the crate docs), through a buffer, so a
/// large value is serialised straight into the file; a new file gets `new_mode`.
pub fn write_with(
    path: &Path,
    new_mode: u32,
    fill: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>,
) -> io::Result<()> {
    let tmp = temp_path(path);
    let mode = fs::metadata(path)
        .map(|m| m.permissions().mode() & 0o7777)
        .unwrap_or(new_mode);
    let result = (|| {
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(mode)
            .open(&tmp)?;
        let mut buffered = BufWriter::with_capacity(1 << 20, file);
        fill(&mut buffered)?;
        let file = buffered.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        fs::rename(&tmp, path)?;
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
        File::open(dir.unwrap_or(Path::new(".")))?.sync_all()
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("atomic-write-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn names(dir: &Path) -> Vec<std::ffi::OsString> {
        fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect()
    }

    #[test]
    fn replaces_whole_keeps_the_mode_and_leaves_no_temporary_file() {
        let dir = scratch("replace");
        let path = dir.join("final.json");
        write(&path, "first", READABLE).unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "first");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
        write(&path, "second", PRIVATE).unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "second");
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o640
        );
        assert_eq!(names(&dir), vec![std::ffi::OsString::from("final.json")]);
        // a directory that does not exist: an error, nothing left behind
        assert!(write(&dir.join("missing/x.json"), "x", READABLE).is_err());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_new_private_file_is_its_owners_only() {
        let dir = scratch("private");
        let path = dir.join("state.json");
        write_with(&path, PRIVATE, |w| w.write_all(b"{}")).unwrap();
        assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o077, 0);
        fs::remove_dir_all(&dir).unwrap();
    }

    /// A writer that fails half-way leaves the previous file as it was and no temporary file.
    #[test]
    fn a_failed_fill_leaves_the_previous_file() {
        let dir = scratch("fail");
        let path = dir.join("state.json");
        write(&path, "kept", PRIVATE).unwrap();
        let failed = write_with(&path, PRIVATE, |w| {
            w.write_all(b"half")?;
            Err(io::Error::other("the serialiser failed"))
        });
        assert_eq!(failed.unwrap_err().to_string(), "the serialiser failed");
        assert_eq!(fs::read_to_string(&path).unwrap(), "kept");
        assert_eq!(names(&dir), vec![std::ffi::OsString::from("state.json")]);
        fs::remove_dir_all(&dir).unwrap();
    }
}
