//! In-memory frames: the packet source of tests and of recorded input.

use rtps_dissect::{Frame, LinkType};

use super::{CaptureError, PacketSource};

/// One owned frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedFrame {
    pub ts_ns: u64,
    pub link: LinkType,
    pub data: Vec<u8>,
    pub orig_len: u32,
}

pub struct MemorySource {
    frames: Vec<OwnedFrame>,
    next: usize,
    name: String,
}

impl MemorySource {
    pub fn new(name: &str, frames: Vec<OwnedFrame>) -> Self {
        Self {
            frames,
            next: 0,
            name: name.to_string(),
        }
    }
}

impl OwnedFrame {
    /// The frame as the dissector takes it, with its number in the capture (from 1).
    pub fn as_frame(&self, number: u64) -> Frame<'_> {
        Frame {
            number,
            ts_ns: self.ts_ns,
            link: self.link,
            data: &self.data,
            orig_len: self.orig_len,
        }
    }
}

/// Every frame of another source, read into memory (tests and benchmarks replay them).
pub fn read_all(source: &mut dyn PacketSource) -> Result<Vec<OwnedFrame>, CaptureError> {
    let mut frames = Vec::new();
    while let Some(f) = source.next_frame()? {
        frames.push(OwnedFrame {
            ts_ns: f.ts_ns,
            link: f.link,
            data: f.data.to_vec(),
            orig_len: f.orig_len,
        });
    }
    Ok(frames)
}

impl PacketSource for MemorySource {
    fn next_frame(&mut self) -> Result<Option<Frame<'_>>, CaptureError> {
        let Some(f) = self.frames.get(self.next) else {
            return Ok(None);
        };
        self.next = self.next.saturating_add(1);
        Ok(Some(f.as_frame(self.next as u64)))
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn link_type(&self) -> Option<LinkType> {
        self.frames.first().map(|f| f.link)
    }
}
