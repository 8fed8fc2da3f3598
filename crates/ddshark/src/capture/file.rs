//! pcap and pcapng savefiles through libpcap, with nanosecond timestamps.

use std::path::Path;

use pcap::{Capture, Offline, Precision};
use rtps_dissect::{Frame, LinkType};

use super::{CaptureError, PacketSource};

pub struct FileSource {
    capture: Capture<Offline>,
    path: String,
    link: LinkType,
    frames: u64,
    /// Total size of the file, for progress.
    pub file_size: u64,
}

impl FileSource {
    pub fn open(path: &Path) -> Result<Self, CaptureError> {
        let name = path.display().to_string();
        let file_size = std::fs::metadata(path)
            .map_err(|e| CaptureError::Open {
                path: name.clone(),
                message: e.to_string(),
            })?
            .len();
        let capture = Capture::from_file_with_precision(path, Precision::Nano).map_err(|e| {
            CaptureError::Open {
                path: name.clone(),
                message: format!("{e} (is it a pcap or pcapng file?)"),
            }
        })?;
        let dlt = u32::try_from(capture.get_datalink().0).unwrap_or(u32::MAX);
        let link = super::supported_link(&name, dlt)?;
        Ok(Self {
            capture,
            path: name,
            link,
            frames: 0,
            file_size,
        })
    }
}

/// libpcap timeval (seconds, nanoseconds with Precision::Nano) → ns since the epoch.
pub fn timeval_ns(sec: i64, nsec: i64) -> u64 {
    let sec = u64::try_from(sec).unwrap_or(0);
    let nsec = u64::try_from(nsec).unwrap_or(0);
    sec.saturating_mul(1_000_000_000).saturating_add(nsec)
}

impl PacketSource for FileSource {
    fn next_frame(&mut self) -> Result<Option<Frame<'_>>, CaptureError> {
        match self.capture.next_packet() {
            Ok(packet) => {
                self.frames = self.frames.saturating_add(1);
                let ts = packet.header.ts;
                Ok(Some(Frame {
                    number: self.frames,
                    ts_ns: timeval_ns(ts.tv_sec, ts.tv_usec),
                    link: self.link,
                    data: packet.data,
                    orig_len: packet.header.len,
                }))
            }
            Err(pcap::Error::NoMorePackets) => Ok(None),
            Err(e) => {
                let message = e.to_string();
                if message.contains("truncated") {
                    Err(CaptureError::Truncated {
                        path: self.path.clone(),
                        after_frame: self.frames,
                        message,
                    })
                } else {
                    Err(CaptureError::Read {
                        path: self.path.clone(),
                        after_frame: self.frames,
                        message,
                    })
                }
            }
        }
    }

    fn name(&self) -> &str {
        &self.path
    }

    fn link_type(&self) -> Option<LinkType> {
        Some(self.link)
    }
}
