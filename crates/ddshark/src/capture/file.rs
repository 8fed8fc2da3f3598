//! pcap and pcapng savefiles (or standard input) read in pure Rust with pcap-parser,
//! zero-copy: every frame borrows the reader's buffer until the next one is asked for.
//! pcapng's interfaces each keep their own link type and timestamp resolution
//! (`if_tsresol`, `if_tsoffset`), so a file captured on several interfaces of different
//! link types (Ethernet and loopback, as Wireshark writes it) reads as tshark reads it.
//! Live capture stays on libpcap (live.rs).

use std::io::Read;
use std::path::Path;

use pcap_parser::pcapng::Block;
use pcap_parser::traits::PcapReaderIterator;
use pcap_parser::{create_reader, PcapBlockOwned, PcapError};
use rtps_dissect::{Frame, LinkType};

use super::{CaptureError, PacketSource};

/// The reader's buffer; grown up to [`MAX_BUFFER`] for larger records.
const BUFFER: usize = 1 << 20;
/// The largest record read (libpcap's limit is 256 KiB of captured bytes per packet).
const MAX_BUFFER: usize = 64 << 20;

/// The path that means standard input (`-r -`, `stats -`, `dissect -`).
pub(crate) const STDIN: &str = "-";

/// What the frames of one interface need: their link type and timestamp units.
#[derive(Debug, Clone, Copy)]
struct Interface {
    link: LinkType,
    /// Timestamp units per second.
    units_per_s: u64,
    /// if_tsoffset: seconds added to every timestamp.
    offset_s: i64,
}

pub struct FileSource {
    reader: Box<dyn PcapReaderIterator + Send>,
    path: String,
    /// pcap: the one interface; pcapng: those of the current section, by id.
    interfaces: Vec<Interface>,
    /// Bytes of the block handed out last, consumed when the next one is asked for
    /// (the frame borrows the reader's buffer until then).
    pending: usize,
    frames: u64,
    /// Total size of the file, for progress (0 for standard input).
    pub(crate) file_size: u64,
    /// A pcap (not pcapng) file, and its byte order.
    legacy: Option<LegacyFormat>,
    /// pcapng: whether the current section is big-endian.
    section_big_endian: Option<bool>,
    retime: Retime,
    /// The host the capture was taken on, as a pcapng section header names it (`ddshark -w`
    /// writes the comment `host.name=NAME`); the first section's.
    host_name: Option<String>,
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

#[derive(Debug, Clone, Copy)]
struct LegacyFormat {
    big_endian: bool,
}

/// What one block means, read from it before the borrow of the buffer ends.
enum Step {
    Packet {
        len: usize,
        interface: usize,
        ts_ns: u64,
        /// Where the packet's bytes start, as an address inside the reader's buffer.
        data_at: usize,
        caplen: usize,
        orig_len: u32,
    },
    Interface {
        len: usize,
        interface: Interface,
    },
    /// A pcap file header (its one interface) or a pcapng section header (none yet).
    Start {
        len: usize,
        interface: Option<Interface>,
        legacy: Option<LegacyFormat>,
        host_name: Option<String>,
        /// pcapng: the section's byte order.
        section_big_endian: Option<bool>,
    },
    Skip {
        len: usize,
    },
    Refill,
    Grow,
    Fail(String),
    /// The file ends inside a record.
    CutShort,
    End,
}

fn link_of(dlt: i32) -> LinkType {
    LinkType::from_dlt(u32::try_from(dlt).unwrap_or(u32::MAX))
}

/// `units` ticks of `units_per_s` plus `offset_s` seconds, in ns since the epoch
/// (0 for timestamps before it).
fn ticks_ns(units: u64, units_per_s: u64, offset_s: i64) -> u64 {
    let per_s = u128::from(units_per_s.max(1));
    let ns = u128::from(units)
        .saturating_mul(1_000_000_000)
        .checked_div(per_s)
        .unwrap_or(0);
    let ns = i128::try_from(ns)
        .unwrap_or(i128::MAX)
        .saturating_add(i128::from(offset_s).saturating_mul(1_000_000_000));
    u64::try_from(ns.max(0)).unwrap_or(u64::MAX)
}

/// A block's bytes as an address, to find them in the reader's buffer once the block
/// is gone (no unsafe: the address is only compared with the buffer's).
fn address(data: &[u8]) -> usize {
    data.as_ptr() as usize
}

impl FileSource {
    pub fn open(path: &Path) -> Result<Self, CaptureError> {
        if path.as_os_str() == STDIN {
            return Self::from_reader(std::io::stdin(), "standard input".into(), 0, BUFFER);
        }
        let name = path.display().to_string();
        let open_error = |message: String| CaptureError::Open {
            path: name.clone(),
            message,
        };
        let file = std::fs::File::open(path).map_err(|e| open_error(e.to_string()))?;
        let meta = file.metadata().map_err(|e| open_error(e.to_string()))?;
        if meta.is_dir() {
            return Err(open_error(
                "it is a directory, not a capture file (give a pcap or pcapng file in it)".into(),
            ));
        }
        let file_size = meta.len();
        if let Some(why) = short_header(path, file_size) {
            return Err(open_error(why));
        }
        Self::from_reader(file, name, file_size, BUFFER)
    }

    /// A savefile already in memory (the fuzz target of the file reader), named `name` in messages.
    pub fn from_bytes(bytes: Vec<u8>, name: &str) -> Result<Self, CaptureError> {
        let size = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
        // No bigger a buffer than the bytes (grown like any other for a larger record).
        let buffer = bytes.len().clamp(1 << 12, BUFFER);
        Self::from_reader(std::io::Cursor::new(bytes), name.to_string(), size, buffer)
    }

    fn from_reader(
        input: impl Read + Send + 'static,
        path: String,
        file_size: u64,
        buffer: usize,
    ) -> Result<Self, CaptureError> {
        let reader = create_reader(buffer, input).map_err(|e| CaptureError::Open {
            path: path.clone(),
            message: match e {
                PcapError::Eof => "the file is empty (is it a pcap or pcapng file?)".into(),
                PcapError::ReadError => "read error".into(),
                _ => "unknown file format (is it a pcap or pcapng file?)".into(),
            },
        })?;
        let mut source = Self {
            reader,
            path,
            interfaces: Vec::new(),
            pending: 0,
            frames: 0,
            file_size,
            legacy: None,
            section_big_endian: None,
            retime: Retime::Off,
            host_name: None,
        };
        // The header blocks up to the first interface: its link type must be known
        // before any frame (a capture filter is compiled for it).
        while source.interfaces.is_empty() {
            match source.step()? {
                Step::End => break,
                Step::Packet { .. } => break,
                _ => {}
            }
        }
        if let Some(first) = source.interfaces.first() {
            super::supported_link(&source.path, first.link.to_dlt())?;
        }
        Ok(source)
    }

    /// Move every timestamp so that the first frame is at `first_frame_ns` (ns since the epoch),
    /// keeping the distances between frames to the nanosecond.
    /// The host the capture was taken on, when a pcapng section header names it
    /// (`host.name=NAME`, as `ddshark -w` writes).
    pub(crate) fn host_name(&self) -> Option<&str> {
        self.host_name.as_deref()
    }

    pub(crate) fn retime_to(&mut self, first_frame_ns: u64) {
        self.retime = Retime::FirstAt(first_frame_ns);
    }

    /// What the last, cut-short record lacks, in libpcap's words.
    fn cut_short(&self) -> String {
        const RECORD_HEADER: usize = 16;
        let rest = self.reader.data();
        let Some(format) = self.legacy else {
            return format!(
                "truncated pcapng file; the last block has only {} bytes",
                rest.len()
            );
        };
        let caplen = rest
            .get(8..12)
            .and_then(|b| <[u8; 4]>::try_from(b).ok())
            .map(|b| {
                if format.big_endian {
                    u32::from_be_bytes(b)
                } else {
                    u32::from_le_bytes(b)
                }
            });
        match caplen {
            Some(caplen) => format!(
                "truncated dump file; tried to read {caplen} captured bytes, only got {}",
                rest.len().saturating_sub(RECORD_HEADER)
            ),
            None => format!(
                "truncated dump file; tried to read {RECORD_HEADER} header bytes, only got {}",
                rest.len()
            ),
        }
    }

    /// The total length of the next pcapng block (not a section header) when it is less
    /// than the 12 bytes every block has.
    fn short_pcapng_block(&self) -> Option<u32> {
        const SECTION_HEADER: [u8; 4] = [0x0a, 0x0d, 0x0d, 0x0a];
        let big_endian = self.section_big_endian?;
        let head = self.reader.data().get(..8)?;
        if head.get(..4)? == SECTION_HEADER {
            return None;
        }
        let bytes = <[u8; 4]>::try_from(head.get(4..8)?).ok()?;
        let len = if big_endian {
            u32::from_be_bytes(bytes)
        } else {
            u32::from_le_bytes(bytes)
        };
        (len < 12).then_some(len)
    }

    fn error(&self, message: String) -> CaptureError {
        CaptureError::Read {
            path: self.path.clone(),
            after_frame: self.frames,
            message,
        }
    }

    /// Reads the next block and deals with everything but a packet, which it leaves
    /// unconsumed in the buffer for the caller to hand out.
    fn step(&mut self) -> Result<Step, CaptureError> {
        if let Some(len) = self.short_pcapng_block() {
            // pcap-parser would subtract the 12 bytes of type and lengths from it.
            return Err(self.error(format!(
                "malformed block: total length {len}, less than the 12 bytes of its type and lengths"
            )));
        }
        let step = match self.reader.next() {
            Ok((len, block)) => classify(&self.interfaces, len, block),
            Err(PcapError::Eof) => Step::End,
            Err(PcapError::Incomplete(_)) => Step::Refill,
            Err(PcapError::BufferTooSmall) => Step::Grow,
            Err(PcapError::UnexpectedEof) => Step::CutShort,
            Err(PcapError::ReadError) => return Err(self.error("read error".into())),
            Err(e) => Step::Fail(format!("malformed block: {e:?}")),
        };
        match step {
            Step::Start {
                len,
                interface,
                legacy,
                ref host_name,
                section_big_endian,
            } => {
                if self.host_name.is_none() {
                    self.host_name.clone_from(host_name);
                }
                self.legacy = legacy;
                self.section_big_endian = section_big_endian;
                self.interfaces.clear();
                self.interfaces.extend(interface);
                self.reader.consume(len);
            }
            Step::Interface { len, interface } => {
                self.interfaces.push(interface);
                self.reader.consume(len);
            }
            Step::Skip { len } => self.reader.consume(len),
            Step::Refill => {
                if self.reader.refill().is_err() {
                    return Err(self.error("read error".into()));
                }
            }
            Step::Grow => {
                let size = self.reader.data().len().saturating_mul(2).max(BUFFER);
                if size > MAX_BUFFER || !self.reader.grow(size) {
                    return Err(
                        self.error(format!("a record larger than {} MiB", MAX_BUFFER >> 20))
                    );
                }
            }
            Step::Fail(message) => return Err(self.error(message)),
            Step::CutShort => {
                return Err(CaptureError::Truncated {
                    path: self.path.clone(),
                    after_frame: self.frames,
                    message: self.cut_short(),
                })
            }
            Step::Packet { .. } | Step::End => {}
        }
        Ok(step)
    }
}

/// What a block means to the reader, given the interfaces described so far.
fn classify(interfaces: &[Interface], len: usize, block: PcapBlockOwned<'_>) -> Step {
    match block {
        PcapBlockOwned::LegacyHeader(h) => Step::Start {
            len,
            interface: Some(Interface {
                link: link_of(h.network.0),
                units_per_s: if h.is_nanosecond_precision() {
                    1_000_000_000
                } else {
                    1_000_000
                },
                offset_s: 0,
            }),
            legacy: Some(LegacyFormat {
                big_endian: h.is_bigendian(),
            }),
            host_name: None,
            section_big_endian: None,
        },
        PcapBlockOwned::Legacy(b) => {
            let per_s = interfaces.first().map_or(1_000_000, |i| i.units_per_s);
            Step::Packet {
                len,
                interface: 0,
                ts_ns: u64::from(b.ts_sec)
                    .saturating_mul(1_000_000_000)
                    .saturating_add(ticks_ns(u64::from(b.ts_usec), per_s, 0)),
                data_at: address(b.data),
                caplen: b.data.len(),
                orig_len: b.origlen,
            }
        }
        PcapBlockOwned::NG(Block::SectionHeader(shb)) => Step::Start {
            len,
            interface: None,
            legacy: None,
            host_name: shb
                .options
                .iter()
                .filter(|o| o.code == pcap_parser::pcapng::OptionCode::Comment)
                .filter_map(|o| o.as_str().ok())
                .find_map(|c| c.trim_end_matches('\0').strip_prefix("host.name="))
                .map(str::to_owned)
                .filter(|h| !h.is_empty()),
            section_big_endian: Some(shb.big_endian()),
        },
        PcapBlockOwned::NG(Block::InterfaceDescription(idb)) => Step::Interface {
            len,
            interface: Interface {
                link: link_of(idb.linktype.0),
                // An unusable if_tsresol: the default, microseconds.
                units_per_s: idb.ts_resolution().unwrap_or(1_000_000),
                offset_s: idb.if_tsoffset,
            },
        },
        PcapBlockOwned::NG(Block::EnhancedPacket(epb)) => {
            let interface = usize::try_from(epb.if_id).unwrap_or(usize::MAX);
            let ts = (u64::from(epb.ts_high) << 32) | u64::from(epb.ts_low);
            let (per_s, offset_s) = interfaces
                .get(interface)
                .map_or((1_000_000, 0), |i| (i.units_per_s, i.offset_s));
            // The block's data is padded to 32 bits: caplen says how much is packet.
            let caplen = usize::try_from(epb.caplen)
                .unwrap_or(usize::MAX)
                .min(epb.data.len());
            Step::Packet {
                len,
                interface,
                ts_ns: ticks_ns(ts, per_s, offset_s),
                data_at: address(epb.data),
                caplen,
                orig_len: epb.origlen,
            }
        }
        PcapBlockOwned::NG(Block::SimplePacket(spb)) => {
            let caplen = usize::try_from(spb.origlen)
                .unwrap_or(usize::MAX)
                .min(spb.data.len());
            Step::Packet {
                len,
                interface: 0,
                ts_ns: 0,
                data_at: address(spb.data),
                caplen,
                orig_len: spb.origlen,
            }
        }
        _ => Step::Skip { len },
    }
}

impl PacketSource for FileSource {
    fn next_frame(&mut self) -> Result<Option<Frame<'_>>, CaptureError> {
        if self.pending > 0 {
            // Without the shift: `consume` moves the unread half of the buffer to its start
            // each time half of it has been read (half the file copied once more, 25 M
            // instructions of the capture thread on the small-frame replay); `refill`
            // shifts anyway, once a record no longer fits, and then only that record's
            // start is left to move.
            self.reader.consume_noshift(self.pending);
            self.pending = 0;
        }
        loop {
            let (len, interface, ts_ns, data_at, caplen, orig_len) = match self.step()? {
                Step::End => return Ok(None),
                Step::Packet {
                    len,
                    interface,
                    ts_ns,
                    data_at,
                    caplen,
                    orig_len,
                } => (len, interface, ts_ns, data_at, caplen, orig_len),
                _ => continue,
            };
            let Some(iface) = self.interfaces.get(interface).copied() else {
                self.reader.consume(len);
                return Err(self.error(format!(
                    "a packet of interface {interface}, which no interface block describes"
                )));
            };
            self.frames = self.frames.saturating_add(1);
            self.pending = len;
            let ts_ns = self.retime.apply(ts_ns);
            let buffer = self.reader.data();
            let start = data_at.saturating_sub(address(buffer));
            let data = buffer
                .get(start..start.saturating_add(caplen))
                .unwrap_or_default();
            return Ok(Some(Frame {
                number: self.frames,
                ts_ns,
                link: iface.link,
                data,
                orig_len,
            }));
        }
    }

    fn name(&self) -> &str {
        &self.path
    }

    /// The first interface's (a pcapng's others may differ: each frame has its own).
    fn link_type(&self) -> Option<LinkType> {
        self.interfaces.first().map(|i| i.link)
    }
}

/// A file that starts like a pcap or pcapng file but ends inside its file header: said as
/// such (pcap-parser calls it an unknown format).
fn short_header(path: &Path, size: u64) -> Option<String> {
    /// A pcap file header; the smallest pcapng section header block.
    const PCAP_HEADER: u64 = 24;
    const PCAPNG_HEADER: u64 = 28;
    if size == 0 || size >= PCAPNG_HEADER {
        return None;
    }
    let mut magic = [0u8; 4];
    let mut f = std::fs::File::open(path).ok()?;
    std::io::Read::read_exact(&mut f, &mut magic).ok()?;
    let needs = match magic {
        [0xd4, 0xc3, 0xb2, 0xa1]
        | [0xa1, 0xb2, 0xc3, 0xd4]
        | [0x4d, 0x3c, 0xb2, 0xa1]
        | [0xa1, 0xb2, 0x3c, 0x4d] => PCAP_HEADER,
        [0x0a, 0x0d, 0x0d, 0x0a] => PCAPNG_HEADER,
        _ => return None,
    };
    (size < needs).then(|| {
        format!(
            "the file is cut short inside its file header ({size} bytes of the {needs} it needs): no frame to read"
        )
    })
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
