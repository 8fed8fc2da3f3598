//! Packet sources: every frame the program sees enters through [`PacketSource`],
//! so the whole pipeline runs in tests from files or in-memory frames.

pub mod file;
pub mod filter;
pub(crate) mod live;
pub mod memory;

use rtps_dissect::Frame;
use thiserror::Error;

/// Kernel/libpcap counters of a live capture.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KernelStats {
    pub(crate) received: u64,
    pub(crate) dropped: u64,
    pub(crate) if_dropped: u64,
}

#[derive(Debug, Error)]
pub enum CaptureError {
    #[error("{path}: cannot open capture: {message}")]
    Open { path: String, message: String },
    #[error("{path}: file is cut short after frame {after_frame}: {message}")]
    Truncated {
        path: String,
        after_frame: u64,
        message: String,
    },
    #[error("{path}: read error after frame {after_frame}: {message}")]
    Read {
        path: String,
        after_frame: u64,
        message: String,
    },
    /// A live capture's read timeout expired with no packet (not an error: poll again).
    #[error("{0}: no packet before the read timeout")]
    Timeout(String),
    #[error("{0}")]
    Live(#[from] live::LiveError),
    #[error(
        "{name}: link type {dlt} ({link_name}) is not supported: ddshark reads Ethernet, Linux cooked \
         (SLL, SLL2), raw IP and BSD loopback captures"
    )]
    UnsupportedLink {
        name: String,
        dlt: u32,
        link_name: String,
    },
}

impl CaptureError {
    /// A truncated last record is reported, not fatal: what came before it stands.
    pub(crate) fn is_truncation(&self) -> bool {
        matches!(self, CaptureError::Truncated { .. })
    }

    /// No packet yet on a live capture; try again.
    pub(crate) fn is_timeout(&self) -> bool {
        matches!(self, CaptureError::Timeout(_))
    }
}

/// The link type of a capture, or an error naming it when the dissector cannot read it
/// (802.11 radiotap, USB, …: every frame would count as malformed).
pub(crate) fn supported_link(name: &str, dlt: u32) -> Result<rtps_dissect::LinkType, CaptureError> {
    let link = rtps_dissect::LinkType::from_dlt(dlt);
    if let rtps_dissect::LinkType::Other(_) = link {
        let lt = pcap::Linktype(i32::try_from(dlt).unwrap_or(i32::MAX));
        let link_name = match (lt.get_name(), lt.get_description()) {
            (Ok(n), Ok(d)) => format!("{n}: {d}"),
            (Ok(n), Err(_)) => n,
            _ => "unknown".to_string(),
        };
        return Err(CaptureError::UnsupportedLink {
            name: name.to_string(),
            dlt,
            link_name,
        });
    }
    Ok(link)
}

/// Anything that yields captured frames in order.
pub trait PacketSource {
    /// The next frame, `None` at the end of the input.
    fn next_frame(&mut self) -> Result<Option<Frame<'_>>, CaptureError>;

    /// Name of the file or interface, for messages.
    fn name(&self) -> &str;

    /// The link type of the frames to come, where the source knows it before them
    /// (a capture filter is compiled for it).
    fn link_type(&self) -> Option<rtps_dissect::LinkType> {
        None
    }

    /// libpcap kernel statistics where the source has them.
    fn kernel_stats(&mut self) -> Option<KernelStats> {
        None
    }
}
