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

    /// Read every frame of another source into memory.
    pub fn record(source: &mut dyn PacketSource) -> Result<Self, CaptureError> {
        let name = source.name().to_string();
        let mut frames = Vec::new();
        while let Some(f) = source.next_frame()? {
            frames.push(OwnedFrame {
                ts_ns: f.ts_ns,
                link: f.link,
                data: f.data.to_vec(),
                orig_len: f.orig_len,
            });
        }
        Ok(Self::new(&name, frames))
    }
}

impl PacketSource for MemorySource {
    fn next_frame(&mut self) -> Result<Option<Frame<'_>>, CaptureError> {
        let Some(f) = self.frames.get(self.next) else {
            return Ok(None);
        };
        self.next = self.next.saturating_add(1);
        Ok(Some(Frame {
            number: self.next as u64,
            ts_ns: f.ts_ns,
            link: f.link,
            data: &f.data,
            orig_len: f.orig_len,
        }))
    }

    fn name(&self) -> &str {
        &self.name
    }
}
