//! Least privilege for live capture: once the capture devices are open, ddshark keeps no
//! capability (only CAP_SYS_NICE when `--rt-priority` needs it) and, with `-Z USER`, runs as
//! USER (as tcpdump -Z). Everything opened afterwards (recordings, the discovery cache,
//! `--final-json`) is opened with those rights.
//!
//! Capabilities are per thread: this runs before ddshark starts any thread, so every thread
//! started later inherits the reduced sets.

use anyhow::{anyhow, Context, Result};
use caps::{CapSet, Capability, CapsHashSet};
use nix::unistd::{setgid, setgroups, setuid, User};

/// The account `-Z USER` switches to, looked up before any device is opened so that an
/// unknown name fails without capturing anything.
#[derive(Debug, Clone)]
pub(crate) struct RunAs {
    name: String,
    user: User,
}

impl RunAs {
    pub(crate) fn lookup(name: &str) -> Result<Self> {
        let user = User::from_name(name)
            .with_context(|| format!("-Z {name}: cannot look the user up"))?
            .ok_or_else(|| anyhow!("-Z {name}: no such user"))?;
        Ok(Self {
            name: name.to_string(),
            user,
        })
    }
}

/// Switch to `run_as` (if given) and reduce the capability sets to what the capture still
/// needs: nothing, or CAP_SYS_NICE with `--rt-priority` (the capture thread's SCHED_FIFO).
pub(crate) fn drop_privileges(run_as: Option<&RunAs>, keep_sys_nice: bool) -> Result<()> {
    let mut keep = CapsHashSet::new();
    if keep_sys_nice {
        keep.insert(Capability::CAP_SYS_NICE);
    }
    if let Some(r) = run_as {
        let name = &r.name;
        let (uid, gid) = (r.user.uid, r.user.gid);
        if !keep.is_empty() {
            // Without it, setuid away from root empties the permitted set too.
            nix::sys::prctl::set_keepcaps(true)
                .with_context(|| format!("-Z {name}: cannot keep CAP_SYS_NICE"))?;
        }
        setgroups(&[gid]).with_context(|| {
            format!("-Z {name}: cannot set the supplementary groups (only root can switch users)")
        })?;
        setgid(gid).with_context(|| format!("-Z {name}: cannot switch to group {gid}"))?;
        setuid(uid).with_context(|| format!("-Z {name}: cannot switch to user {uid}"))?;
        if !keep.is_empty() {
            nix::sys::prctl::set_keepcaps(false)
                .with_context(|| format!("-Z {name}: cannot reset keepcaps"))?;
        }
    }
    // A process without the capability (not root, no setcap) cannot gain it: keep what is.
    let permitted =
        caps::read(None, CapSet::Permitted).map_err(|e| anyhow!("reading capabilities: {e}"))?;
    let keep: CapsHashSet = keep.intersection(&permitted).copied().collect();
    // The effective set first: it must stay within the permitted set at each step.
    for (set, wanted) in [
        (CapSet::Effective, &keep),
        (CapSet::Permitted, &keep),
        (CapSet::Inheritable, &CapsHashSet::new()),
    ] {
        caps::set(None, set, wanted)
            .map_err(|e| anyhow!("dropping capabilities ({set:?} set): {e}"))?;
    }
    Ok(())
}
