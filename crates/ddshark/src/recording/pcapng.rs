//! The few pcapng blocks a recording needs (section header, interface description,
//! enhanced packet), encoded little-endian into a byte buffer.
//! Lengths are checked: a value that does not fit its field is an error, never a
//! silently wrong block.

use thiserror::Error;

const BLOCK_SHB: u32 = 0x0A0D_0D0A;
const BLOCK_IDB: u32 = 0x0000_0001;
const BLOCK_EPB: u32 = 0x0000_0006;
const BYTE_ORDER_MAGIC: u32 = 0x1A2B_3C4D;

const OPT_END: u16 = 0;
const OPT_COMMENT: u16 = 1;
const SHB_HARDWARE: u16 = 2;
const SHB_OS: u16 = 3;
const SHB_USERAPPL: u16 = 4;
const IF_NAME: u16 = 2;
const IF_DESCRIPTION: u16 = 3;
const IF_TSRESOL: u16 = 9;
const IF_FILTER: u16 = 11;

/// if_tsresol = 9: timestamps count nanoseconds.
const TSRESOL_NS: u8 = 9;
/// if_filter's first byte: the filter is a libpcap filter string.
const FILTER_LIBPCAP: u8 = 0;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum PcapngError {
    #[error("pcapng: option {code} is {len} bytes (at most 65535)")]
    OptionTooLong { code: u16, len: usize },
    #[error("pcapng: block type {block_type:#x} would be {len} bytes (more than 4 GiB)")]
    BlockTooLong { block_type: u32, len: usize },
}

/// What the section header says about where the capture was taken.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Section {
    /// shb_hardware: the machine (`x86_64`).
    pub hardware: String,
    /// shb_os: the operating system (`Linux 6.1.0-18-amd64`).
    pub os: String,
    /// shb_userappl: the writing application (`ddshark 0.1.0`).
    pub application: String,
    /// opt_comment: free text; ddshark writes `host.name=NAME` here.
    pub comment: String,
}

/// One interface description block.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Interface {
    /// pcap link type (DLT/LINKTYPE number).
    pub link_type: u16,
    pub snaplen: u32,
    /// if_name.
    pub name: String,
    /// if_description.
    pub description: String,
    /// if_filter (a libpcap filter expression); empty: none.
    pub filter: String,
}

/// Bytes of an enhanced packet block holding `captured` bytes of packet data.
pub(crate) fn epb_len(captured: usize) -> usize {
    32usize.saturating_add(padded(captured))
}

fn padded(len: usize) -> usize {
    len.saturating_add(3) & !3
}

fn split_ts(ts_ns: u64) -> [u32; 2] {
    [(ts_ns >> 32) as u32, (ts_ns & 0xFFFF_FFFF) as u32]
}

/// A block being built: type and length are filled in by `finish`.
struct Block<'a> {
    out: &'a mut Vec<u8>,
    start: usize,
    block_type: u32,
}

impl<'a> Block<'a> {
    fn new(out: &'a mut Vec<u8>, block_type: u32) -> Self {
        let start = out.len();
        out.extend_from_slice(&block_type.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        Self {
            out,
            start,
            block_type,
        }
    }

    fn u16(&mut self, v: u16) {
        self.out.extend_from_slice(&v.to_le_bytes());
    }
    fn u32(&mut self, v: u32) {
        self.out.extend_from_slice(&v.to_le_bytes());
    }
    fn bytes_padded(&mut self, b: &[u8]) {
        self.out.extend_from_slice(b);
        let pad = padded(b.len()).saturating_sub(b.len());
        self.out.extend(std::iter::repeat_n(0u8, pad));
    }

    fn option(&mut self, code: u16, value: &[u8]) -> Result<(), PcapngError> {
        let len = u16::try_from(value.len()).map_err(|_| PcapngError::OptionTooLong {
            code,
            len: value.len(),
        })?;
        self.u16(code);
        self.u16(len);
        self.bytes_padded(value);
        Ok(())
    }

    /// A text option, left out when empty.
    fn text(&mut self, code: u16, value: &str) -> Result<(), PcapngError> {
        if value.is_empty() {
            return Ok(());
        }
        self.option(code, value.as_bytes())
    }

    fn end_options(&mut self) {
        self.u16(OPT_END);
        self.u16(0);
    }

    /// Write the total length at both ends. On error the buffer is cut back to where the
    /// block began.
    fn finish(self) -> Result<usize, PcapngError> {
        let total = self.out.len().saturating_sub(self.start).saturating_add(4);
        let Ok(len) = u32::try_from(total) else {
            self.out.truncate(self.start);
            return Err(PcapngError::BlockTooLong {
                block_type: self.block_type,
                len: total,
            });
        };
        self.out.extend_from_slice(&len.to_le_bytes());
        let at = self.start.saturating_add(4);
        if let Some(field) = self.out.get_mut(at..at.saturating_add(4)) {
            field.copy_from_slice(&len.to_le_bytes());
        }
        Ok(total)
    }
}

/// Run `build` on a new block of `block_type`; on error nothing of it stays in `out`.
fn block(
    out: &mut Vec<u8>,
    block_type: u32,
    build: impl FnOnce(&mut Block<'_>) -> Result<(), PcapngError>,
) -> Result<usize, PcapngError> {
    let start = out.len();
    let mut b = Block::new(out, block_type);
    if let Err(e) = build(&mut b) {
        out.truncate(start);
        return Err(e);
    }
    b.finish()
}

/// Section header block (section length unknown: -1). Returns its length.
pub fn section_header(out: &mut Vec<u8>, s: &Section) -> Result<usize, PcapngError> {
    block(out, BLOCK_SHB, |b| {
        b.u32(BYTE_ORDER_MAGIC);
        b.u16(1);
        b.u16(0);
        b.out.extend_from_slice(&(-1i64).to_le_bytes());
        b.text(OPT_COMMENT, &s.comment)?;
        b.text(SHB_HARDWARE, &s.hardware)?;
        b.text(SHB_OS, &s.os)?;
        b.text(SHB_USERAPPL, &s.application)?;
        b.end_options();
        Ok(())
    })
}

/// Interface description block with nanosecond timestamps (if_tsresol = 9).
pub fn interface_description(out: &mut Vec<u8>, i: &Interface) -> Result<usize, PcapngError> {
    block(out, BLOCK_IDB, |b| {
        b.u16(i.link_type);
        b.u16(0);
        b.u32(i.snaplen);
        b.text(IF_NAME, &i.name)?;
        b.text(IF_DESCRIPTION, &i.description)?;
        b.option(IF_TSRESOL, &[TSRESOL_NS])?;
        if !i.filter.is_empty() {
            let mut v = Vec::with_capacity(i.filter.len().saturating_add(1));
            v.push(FILTER_LIBPCAP);
            v.extend_from_slice(i.filter.as_bytes());
            b.option(IF_FILTER, &v)?;
        }
        b.end_options();
        Ok(())
    })
}

/// Enhanced packet block: `data` as captured, `original_len` as it was on the wire.
/// The bytes around a packet's data in an enhanced packet block: the block is `head`, the
/// data, then `tail` (padding and the trailing length). The data is not copied, so the
/// writer hands it to its buffer directly.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EnhancedPacket {
    head: [u8; 28],
    tail: [u8; 7],
    tail_len: usize,
}

impl EnhancedPacket {
    pub fn new(
        interface_id: u32,
        ts_ns: u64,
        captured: usize,
        original_len: u32,
    ) -> Result<Self, PcapngError> {
        let too_long = || PcapngError::BlockTooLong {
            block_type: BLOCK_EPB,
            len: epb_len(captured),
        };
        let captured_u32 = u32::try_from(captured).map_err(|_| too_long())?;
        let total = u32::try_from(epb_len(captured)).map_err(|_| too_long())?;
        let [hi, lo] = split_ts(ts_ns);
        let mut head = [0u8; 28];
        for (i, v) in [
            BLOCK_EPB,
            total,
            interface_id,
            hi,
            lo,
            captured_u32,
            original_len.max(captured_u32),
        ]
        .into_iter()
        .enumerate()
        {
            if let Some(field) = head.get_mut(i * 4..i * 4 + 4) {
                field.copy_from_slice(&v.to_le_bytes());
            }
        }
        let pad = padded(captured).saturating_sub(captured);
        let mut tail = [0u8; 7];
        if let Some(field) = tail.get_mut(pad..pad + 4) {
            field.copy_from_slice(&total.to_le_bytes());
        }
        Ok(Self {
            head,
            tail,
            tail_len: pad + 4,
        })
    }

    pub(crate) fn head(&self) -> &[u8] {
        &self.head
    }

    pub(crate) fn tail(&self) -> &[u8] {
        self.tail.get(..self.tail_len).unwrap_or(&self.tail)
    }
}

/// Enhanced packet block: `data` as captured, `original_len` as it was on the wire.
pub fn enhanced_packet(
    out: &mut Vec<u8>,
    interface_id: u32,
    ts_ns: u64,
    data: &[u8],
    original_len: u32,
) -> Result<usize, PcapngError> {
    let framing = EnhancedPacket::new(interface_id, ts_ns, data.len(), original_len)?;
    out.extend_from_slice(framing.head());
    out.extend_from_slice(data);
    out.extend_from_slice(framing.tail());
    Ok(epb_len(data.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u32_at(b: &[u8], at: usize) -> u32 {
        let mut v = [0u8; 4];
        v.copy_from_slice(&b[at..at + 4]);
        u32::from_le_bytes(v)
    }

    #[test]
    fn every_block_has_its_length_at_both_ends_and_is_4_byte_aligned() {
        let mut out = Vec::new();
        let n = section_header(
            &mut out,
            &Section {
                hardware: "x86_64".into(),
                os: "Linux".into(),
                application: "ddshark".into(),
                comment: "host.name=a".into(),
            },
        )
        .unwrap();
        assert_eq!(n, out.len());
        interface_description(
            &mut out,
            &Interface {
                link_type: 1,
                snaplen: 262_144,
                name: "eth0".into(),
                description: "eth0 on a".into(),
                filter: "udp".into(),
            },
        )
        .unwrap();
        let packet = [0xAAu8; 61];
        let e = enhanced_packet(&mut out, 0, 1_700_000_000_123_456_789, &packet, 1500).unwrap();
        assert_eq!(e, epb_len(61));
        let mut at = 0;
        let mut types = Vec::new();
        while at < out.len() {
            let len = u32_at(&out, at + 4) as usize;
            assert_eq!(len % 4, 0);
            assert_eq!(u32_at(&out, at + len - 4) as usize, len);
            types.push(u32_at(&out, at));
            at += len;
        }
        assert_eq!(at, out.len());
        assert_eq!(types, [BLOCK_SHB, BLOCK_IDB, BLOCK_EPB]);
    }

    #[test]
    fn an_option_too_long_leaves_nothing_behind() {
        let mut out = vec![1, 2, 3, 4];
        let r = interface_description(
            &mut out,
            &Interface {
                name: "x".repeat(70_000),
                ..Interface::default()
            },
        );
        assert!(matches!(r, Err(PcapngError::OptionTooLong { .. })));
        assert_eq!(out, [1, 2, 3, 4]);
    }
}
