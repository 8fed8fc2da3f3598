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
    retime: Retime,
}

/// `--retime`: the first frame's timestamp is moved to a given instant, the others by as much.
#[derive(Debug, Clone, Copy)]
enum Retime {
    Off,
    /// Until the first frame: where it goes (ns since the epoch).
    FirstAt(u64),
    /// From the first frame on: ns added to every timestamp.
    Shift(i128),
}

impl Retime {
    fn apply(&mut self, ts_ns: u64) -> u64 {
        if let Self::FirstAt(at) = *self {
            *self = Self::Shift(i128::from(at) - i128::from(ts_ns));
        }
        match *self {
            Self::Shift(shift) => {
                u64::try_from((i128::from(ts_ns) + shift).max(0)).unwrap_or(u64::MAX)
            }
            Self::Off | Self::FirstAt(_) => ts_ns,
        }
    }
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
            retime: Retime::Off,
        })
    }

    /// Move every timestamp so that the first frame is at `first_frame_ns` (ns since the epoch),
    /// keeping the distances between frames to the nanosecond.
    pub fn retime_to(&mut self, first_frame_ns: u64) {
        self.retime = Retime::FirstAt(first_frame_ns);
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
                    ts_ns: self.retime.apply(timeval_ns(ts.tv_sec, ts.tv_usec)),
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

#[cfg(test)]
mod tests {
    use super::Retime;

    #[test]
    fn retime_moves_the_first_frame_and_keeps_distances() {
        let mut r = Retime::FirstAt(2_000_000_000_000_000_123);
        assert_eq!(
            r.apply(1_795_276_431_291_335_001),
            2_000_000_000_000_000_123
        );
        assert_eq!(
            r.apply(1_795_276_431_291_335_002),
            2_000_000_000_000_000_124
        );
        // A frame recorded before the first one (files are not always in order).
        assert_eq!(
            r.apply(1_795_276_431_291_335_000),
            2_000_000_000_000_000_122
        );
        let mut back = Retime::FirstAt(5);
        back.apply(100);
        assert_eq!(back.apply(50), 0, "clamped at the epoch");
        let mut off = Retime::Off;
        assert_eq!(off.apply(42), 42);
    }
}
