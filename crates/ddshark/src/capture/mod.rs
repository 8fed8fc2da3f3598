//! Packet sources: every frame the program sees enters through [`PacketSource`],
//! so the whole pipeline runs in tests from files or in-memory frames.

pub mod file;
pub mod live;
pub mod memory;

use rtps_dissect::Frame;
use thiserror::Error;

/// Kernel/libpcap counters of a live capture.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct KernelStats {
    pub received: u64,
    pub dropped: u64,
    pub if_dropped: u64,
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
}

impl CaptureError {
    /// A truncated last record is reported, not fatal: what came before it stands.
    pub fn is_truncation(&self) -> bool {
        matches!(self, CaptureError::Truncated { .. })
    }

    /// No packet yet on a live capture; try again.
    pub fn is_timeout(&self) -> bool {
        matches!(self, CaptureError::Timeout(_))
    }
}

/// Anything that yields captured frames in order.
pub trait PacketSource {
    /// The next frame, `None` at the end of the input.
    fn next_frame(&mut self) -> Result<Option<Frame<'_>>, CaptureError>;

    /// Name of the file or interface, for messages.
    fn name(&self) -> &str;

    /// libpcap kernel statistics where the source has them.
    fn kernel_stats(&mut self) -> Option<KernelStats> {
        None
    }
}
