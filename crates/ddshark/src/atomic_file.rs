//! Files ddshark writes (the final JSON, latency reports, the discovery cache) appear whole
//! or not at all: written to a temporary file beside the target, synced, renamed over it.
//! A reader (a dashboard, a script polling the file) never sees half a file, and a crash
//! leaves the previous version. New files get mode 0644 less the umask, as `std::fs::write`
//! gives them; an existing file keeps its mode.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The temporary file's name: `.NAME.tmp-PID` beside `path` (hidden, one per process).
fn temp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.tmp-{}", std::process::id()))
}

/// Writes `contents` to `path` atomically (see the module docs).
pub(crate) fn write(path: &Path, contents: impl AsRef<[u8]>) -> io::Result<()> {
    let tmp = temp_path(path);
    let mode = fs::metadata(path)
        .map(|m| m.permissions().mode() & 0o7777)
        .unwrap_or(0o644);
    let result = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(mode)
            .open(&tmp)?;
        file.write_all(contents.as_ref())?;
        file.sync_all()?;
        fs::rename(&tmp, path)
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

    #[test]
    fn replaces_whole_keeps_the_mode_and_leaves_no_temporary_file() {
        let dir = std::env::temp_dir().join(format!("ddshark-atomic-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("final.json");
        write(&path, "first").unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "first");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
        write(&path, "second").unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "second");
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let names: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("final.json")]);
        // a directory that does not exist: an error, nothing left behind
        assert!(write(&dir.join("missing/x.json"), "x").is_err());
        fs::remove_dir_all(&dir).unwrap();
    }
}
