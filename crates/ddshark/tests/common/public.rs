//! Public captures made by other projects (RTI Connext, ROS 2 on macOS, Fast DDS on NXP
//! TSN hardware, …) may not be committed to this repository. The tests read them, with
//! their tshark oracles, from `../shared/pcaps/public/` beside the repository; this is the
//! only place the repository looks outside itself. When the folder is absent, the cases
//! that need it are left out and a test says so loudly, naming the folder and each case.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Case paths starting with this live in the public captures folder.
pub const PUBLIC_PREFIX: &str = "public/";

/// Where the public captures are expected: `shared/pcaps/public` next to the repository.
fn expected_dir() -> PathBuf {
    let repo = super::repo_root();
    let beside_repo = repo.parent().unwrap_or(&repo);
    beside_repo.join("shared/pcaps/public")
}

/// The public captures folder when it is there, resolved once per test binary.
pub fn public_dir() -> Option<&'static Path> {
    static DIR: OnceLock<Option<PathBuf>> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = expected_dir();
        dir.is_dir().then_some(dir)
    })
    .as_deref()
}

/// `public/<rest>` → the file in the public captures folder (which must exist: filter
/// the cases with [`checkable`] first).
pub fn public_path(rest: &str) -> PathBuf {
    let Some(dir) = public_dir() else {
        panic!(
            "public capture {rest} asked for, but {} is absent (filter with common::checkable)",
            expected_dir().display()
        );
    };
    dir.join(rest)
}

/// The cases of `test` that can run here: all of them when the public captures folder is
/// present, else those not under `public/`. Left-out cases are printed past the test
/// harness's output capture, so a passing run shows them too.
pub fn checkable<'a, T>(test: &str, cases: &'a [T], path: impl Fn(&T) -> &str) -> Vec<&'a T> {
    let (public, own): (Vec<&T>, Vec<&T>) = cases
        .iter()
        .partition(|c| path(c).starts_with(PUBLIC_PREFIX));
    if public_dir().is_some() {
        return cases.iter().collect();
    }
    if !public.is_empty() {
        let rule = "=".repeat(78);
        let mut msg = format!(
            "\n{rule}\nPUBLIC CAPTURES NOT CHECKED: {} is absent.\n\
             Public captures of other projects are never committed; put them beside the\n\
             repository as ../shared/pcaps/public/ to run these cases.\n\
             {test} did not check {} case(s):\n",
            expected_dir().display(),
            public.len()
        );
        for c in &public {
            msg.push_str("  ");
            msg.push_str(path(c));
            msg.push('\n');
        }
        msg.push_str(&rule);
        msg.push('\n');
        // Straight to the process's stderr: `eprintln!` would be captured by libtest.
        let _ = std::io::stderr().lock().write_all(msg.as_bytes());
    }
    own
}
