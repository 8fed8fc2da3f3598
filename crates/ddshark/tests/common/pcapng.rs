//! A pcapng captured on two interfaces of different link types, as Wireshark writes it
//! when it captures on several interfaces at once: made from a bundled Ethernet capture
//! by moving every other frame to a Linux cooked (SLL) interface with microsecond
//! timestamps (the Ethernet interface keeps nanoseconds).

use std::path::Path;

use ddshark::capture::file::FileSource;
use ddshark::capture::PacketSource;

const LINKTYPE_ETHERNET: u16 = 1;
const LINKTYPE_LINUX_SLL: u16 = 113;

fn block(kind: u32, body: &[u8]) -> Vec<u8> {
    let padded = body.len().div_ceil(4) * 4;
    let total = (12 + padded) as u32;
    let mut b = Vec::with_capacity(total as usize);
    b.extend(kind.to_le_bytes());
    b.extend(total.to_le_bytes());
    b.extend(body);
    b.resize(8 + padded, 0);
    b.extend(total.to_le_bytes());
    b
}

fn interface(link: u16, tsresol: Option<u8>) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend(link.to_le_bytes());
    body.extend(0u16.to_le_bytes());
    body.extend(262_144u32.to_le_bytes());
    if let Some(r) = tsresol {
        body.extend(9u16.to_le_bytes()); // if_tsresol
        body.extend(1u16.to_le_bytes());
        body.extend([r, 0, 0, 0]);
        body.extend([0u8; 4]); // opt_endofopt
    }
    block(1, &body)
}

/// An Ethernet frame as Linux cooked capture (SLL) shows it: the 16-byte SLL header
/// (packet type, ARPHRD_ETHER, the source address, the EtherType) instead of Ethernet's.
fn to_sll(eth: &[u8]) -> Vec<u8> {
    let mut f = Vec::with_capacity(eth.len() + 2);
    f.extend(0u16.to_be_bytes());
    f.extend(1u16.to_be_bytes());
    f.extend(6u16.to_be_bytes());
    f.extend(&eth[6..12]);
    f.extend([0, 0]);
    f.extend(&eth[12..14]);
    f.extend(&eth[14..]);
    f
}

fn packet(if_id: u32, ts: u64, data: &[u8], orig_len: u32) -> Vec<u8> {
    let mut body = Vec::with_capacity(20 + data.len());
    body.extend(if_id.to_le_bytes());
    body.extend(((ts >> 32) as u32).to_le_bytes());
    body.extend((ts as u32).to_le_bytes());
    body.extend((data.len() as u32).to_le_bytes());
    body.extend(orig_len.to_le_bytes());
    body.extend(data);
    block(6, &body)
}

/// Writes `out` from the Ethernet capture `src` (whose timestamps are whole µs).
/// Returns the number of frames.
pub fn write_two_link_types(src: &Path, out: &Path) -> u64 {
    let mut f = Vec::new();
    let mut shb = Vec::new();
    shb.extend(0x1a2b_3c4du32.to_le_bytes());
    shb.extend(1u16.to_le_bytes());
    shb.extend(0u16.to_le_bytes());
    shb.extend((-1i64).to_le_bytes());
    f.extend(block(0x0a0d_0d0a, &shb));
    f.extend(interface(LINKTYPE_ETHERNET, Some(9)));
    f.extend(interface(LINKTYPE_LINUX_SLL, None));
    let mut source = FileSource::open(src).expect("source capture");
    let mut n = 0u64;
    while let Some(frame) = source.next_frame().expect("frame") {
        assert_eq!(frame.ts_ns % 1000, 0, "the source has µs timestamps");
        let cooked = frame.number % 2 == 0 && frame.data.len() >= 14;
        f.extend(if cooked {
            let d = to_sll(frame.data);
            packet(1, frame.ts_ns / 1000, &d, frame.orig_len + 2)
        } else {
            packet(0, frame.ts_ns, frame.data, frame.orig_len)
        });
        n += 1;
    }
    std::fs::write(out, f).expect("write pcapng");
    n
}
