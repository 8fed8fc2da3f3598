//! The daemon's inputs: a file (`-r`) or interfaces (`-i`) opened with the capture filter.

use anyhow::{bail, Result};

use super::DaemonArgs;
use crate::capture::file::FileSource;
use crate::capture::filter::FrameFilter;
use crate::capture::live::{LiveOptions, LiveSource, DEFAULT_FILTER};
use crate::capture::PacketSource;
use crate::pipeline::CaptureInput;
use crate::recording::RecordInterface;

/// The opened inputs, the start line's words for them, and the interfaces a `-w` recording
/// names.
pub(super) struct Opened {
    pub(super) inputs: Vec<CaptureInput>,
    pub(super) started: String,
    pub(super) recorded: Vec<RecordInterface>,
}

/// Open `-r FILE` or every `-i IFACE`, each with the user's capture filter (on interfaces,
/// the default filter without one).
pub(super) fn open(args: &DaemonArgs) -> Result<Opened> {
    let mut inputs = Vec::new();
    let user_filter = args.user_filter()?;
    let started;
    let mut recorded = Vec::new();
    if let Some(path) = &args.read {
        let mut src = FileSource::open(path)?;
        if let Some(at) = args.retime {
            src.retime_to(at.resolve()?);
        }
        let size = src.file_size;
        let filter = match &user_filter {
            Some(f) => Some(FrameFilter::compile(f, src.link_type(), src.name())?),
            None => None,
        };
        started = format!("reading {}", describe_source(&src, user_filter.as_deref()));
        inputs.push(CaptureInput {
            source: Box::new(src),
            live: false,
            size_hint: Some(size),
            filter,
        });
    } else if !args.interfaces.is_empty() {
        let opts = LiveOptions {
            snaplen: args.snaplen,
            buffer_size: args.buffer_size.saturating_mul(1 << 20),
            immediate: args.immediate,
            promisc: !args.no_promisc,
            tstamp_type: args.tstamp_type.clone(),
            filter: user_filter
                .clone()
                .unwrap_or_else(|| DEFAULT_FILTER.to_string()),
            timeout_ms: 100,
        };
        let mut names = Vec::new();
        for iface in &args.interfaces {
            let src = LiveSource::open(iface, &opts)?;
            names.push(describe_source(&src, None));
            recorded.push(RecordInterface {
                name: iface.clone(),
                link_type: src.link_type().to_dlt(),
                snaplen: u32::try_from(args.snaplen).unwrap_or(0),
                filter: src.filter().to_string(),
            });
            inputs.push(CaptureInput {
                source: Box::new(src),
                live: true,
                size_hint: None,
                filter: None,
            });
        }
        started = format!(
            "capturing on {}, filter: {}",
            names.join(", "),
            user_filter
                .as_deref()
                .unwrap_or("UDP, TCP and IP fragments (the default)")
        );
    } else {
        bail!("nothing to capture: give -i IFACE or -r FILE (see --help)");
    }
    Ok(Opened {
        inputs,
        started,
        recorded,
    })
}

/// `lo (link type EN10MB)` or `a.pcap (link type LINUX_SLL), filter: udp port 7400`.
fn describe_source(src: &dyn PacketSource, filter: Option<&str>) -> String {
    let link = src
        .link_type()
        .map(|l| {
            let dlt = pcap::Linktype(i32::try_from(l.to_dlt()).unwrap_or(i32::MAX));
            dlt.get_name().unwrap_or_else(|_| l.to_dlt().to_string())
        })
        .unwrap_or_else(|| "unknown".into());
    match filter {
        Some(f) => format!("{} (link type {link}), filter: {f}", src.name()),
        None => format!("{} (link type {link})", src.name()),
    }
}
