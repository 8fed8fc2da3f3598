//! The captures read side by side: each one's next frame as observations on the first
//! capture's clock, the writers' topics learnt from discovery captures, and the refusal of
//! one capture given twice.

use std::io;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use latency_core::OffsetEstimate;
use rtps_dissect::Dissector;

use super::extract::{clock, observations, ExtractStats, Obs};
use super::Level;
use crate::capture::file::FileSource;
use crate::capture::PacketSource;

/// Moves a capture's timestamps onto the first capture's clock.
#[derive(Debug, Clone, Copy)]
pub(super) enum Shift {
    Constant(i64),
    Estimated(OffsetEstimate),
}

impl Shift {
    fn at(&self, ts_ns: u64) -> i64 {
        match self {
            Shift::Constant(s) => *s,
            Shift::Estimated(e) => e.offset_at_y(i64::try_from(ts_ns).unwrap_or(i64::MAX)),
        }
    }
}

pub(super) struct Input {
    pub(super) source: FileSource,
    pub(super) dissector: Dissector,
    pub(super) shift: Shift,
    pub(super) stats: ExtractStats,
    pub(super) next: Option<(i64, Vec<Obs>)>,
    /// SPDP announcements in the frame of `next`: participant, its unicast addresses.
    pub(super) announced: Vec<([u8; 12], Vec<std::net::IpAddr>)>,
    pub(super) truncated: Option<String>,
}

impl Input {
    pub(super) fn refill(&mut self, level: Level) -> Result<()> {
        let Input {
            source,
            dissector,
            shift,
            stats,
            next,
            announced,
            truncated,
        } = self;
        *next = None;
        announced.clear();
        if truncated.is_some() {
            return Ok(());
        }
        let frame = match source.next_frame() {
            Ok(Some(f)) => f,
            Ok(None) => return Ok(()),
            Err(e) if e.is_truncation() => {
                *truncated = Some(e.to_string());
                return Ok(());
            }
            Err(e) => return Err(e.into()),
        };
        let shift = shift.at(frame.ts_ns);
        let ts = clock(frame.ts_ns, shift);
        let mut obs = Vec::new();
        dissector.process_with(&frame, |outcome| {
            for d in outcome.datagrams() {
                observations(d, level, shift, stats, &mut obs);
                for rec in &d.discovery {
                    if let rtps_dissect::DiscoveryRecord::Participant(p) = rec {
                        let addrs = p
                            .metatraffic_unicast
                            .iter()
                            .chain(&p.default_unicast)
                            .filter_map(|l| l.ip())
                            .collect();
                        announced.push((p.guid_prefix.0, addrs));
                    }
                }
            }
        });
        *next = Some((ts, obs));
        Ok(())
    }
}

/// Learn writer → topic from discovery captures, for every dissector.
pub(super) fn seed_topics(paths: &[PathBuf], inputs: &mut [Input]) -> Result<()> {
    for p in paths {
        let mut src = FileSource::open(p)?;
        let mut d = Dissector::default();
        loop {
            match src.next_frame() {
                Ok(Some(f)) => {
                    let _ = d.process(&f);
                }
                Ok(None) => break,
                Err(e) if e.is_truncation() => break,
                Err(e) => return Err(e.into()),
            }
        }
        for input in inputs.iter_mut() {
            let map = input.dissector.topics_mut();
            for (guid, info) in d.topics().iter() {
                if map.get(guid).is_none() {
                    map.insert(*guid, &info.topic, &info.type_name, info.kind);
                }
            }
        }
    }
    Ok(())
}

/// Refuse inputs that cannot give latencies: the same file twice.
pub(super) fn check_distinct(paths: &[&Path]) -> Result<()> {
    let mut seen: Vec<(PathBuf, u64, &Path)> = Vec::new();
    for p in paths {
        let canon = std::fs::canonicalize(p).with_context(|| format!("reading {}", p.display()))?;
        let len = std::fs::metadata(p)
            .with_context(|| format!("reading {}", p.display()))?
            .len();
        for (c, l, q) in &seen {
            if *c == canon || (*l == len && same_bytes(p, q)?) {
                bail!(
                    "{} and {} are the same capture: latency needs one capture per host",
                    q.display(),
                    p.display()
                );
            }
        }
        seen.push((canon, len, p));
    }
    Ok(())
}

fn same_bytes(a: &Path, b: &Path) -> Result<bool> {
    use std::io::Read;
    let open = |p: &Path| {
        std::fs::File::open(p)
            .map(io::BufReader::new)
            .with_context(|| format!("reading {}", p.display()))
    };
    let (mut fa, mut fb) = (open(a)?, open(b)?);
    let (mut ba, mut bb) = (vec![0u8; 1 << 16], vec![0u8; 1 << 16]);
    loop {
        let na = fa
            .read(&mut ba)
            .with_context(|| format!("reading {}", a.display()))?;
        let mut filled = 0;
        while filled < na {
            let n = fb
                .read(bb.get_mut(filled..na).unwrap_or_default())
                .with_context(|| format!("reading {}", b.display()))?;
            if n == 0 {
                return Ok(false);
            }
            filled += n;
        }
        if na == 0 {
            return Ok(true);
        }
        if ba.get(..na) != bb.get(..na) {
            return Ok(false);
        }
    }
}
