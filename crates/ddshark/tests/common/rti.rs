//! A capture of RTI Connext's batch and session submessages, built byte by byte from
//! their documented layouts (RTI's libraries are proprietary: no real capture of them is
//! committed). One writer sends 26 samples: two DATA_BATCHes (little- and big-endian,
//! the second with offsetSNs), a DATA_SESSION, a HEARTBEAT_BATCH and a DATA_BATCH of 20
//! samples (more than tshark shows by default).

use std::path::Path;

/// The writer of every sample.
pub const WRITER: &str = "0102030405060708090a0b0c00000102";
/// (SN, size) of every sample, in order.
pub fn samples() -> Vec<(i64, u32)> {
    let mut v = vec![(1, 8), (2, 12), (3, 4), (4, 8), (5, 16), (6, 12)];
    v.extend((7..27).map(|sn| (sn, 4 + (sn as u32 % 3) * 4)));
    v
}

fn sn(v: i64, le: bool) -> Vec<u8> {
    let (high, low) = ((v >> 32) as i32, v as u32);
    if le {
        [high.to_le_bytes(), low.to_le_bytes()].concat()
    } else {
        [high.to_be_bytes(), low.to_be_bytes()].concat()
    }
}

fn u32b(v: u32, le: bool) -> [u8; 4] {
    if le {
        v.to_le_bytes()
    } else {
        v.to_be_bytes()
    }
}

fn u16b(v: u16, le: bool) -> [u8; 2] {
    if le {
        v.to_le_bytes()
    } else {
        v.to_be_bytes()
    }
}

fn submessage(id: u8, flags: u8, body: Vec<u8>, le: bool) -> Vec<u8> {
    let mut out = vec![id, flags | u8::from(le)];
    out.extend(u16b(body.len() as u16, le));
    out.extend(body);
    out
}

const IDS: [u8; 8] = [0, 0, 0, 0, 0, 0, 0x01, 0x02];

/// DATA_BATCH of samples `(sn, size)`; with `offsets`, every SampleInfo carries its
/// offsetSN (O flag), else the SNs must follow each other.
fn data_batch(samples: &[(i64, u32)], offsets: bool, le: bool) -> Vec<u8> {
    let first = samples[0].0;
    let mut infos = Vec::new();
    let mut data = Vec::new();
    for (i, &(s, size)) in samples.iter().enumerate() {
        let flags: u16 = 0x0008 | if offsets { 0x0004 } else { 0 };
        infos.extend(flags.to_be_bytes());
        infos.extend(u16b(0, le));
        infos.extend(u32b(size, le));
        if offsets {
            infos.extend(u32b((s - first) as u32, le));
        }
        data.extend(std::iter::repeat_n(0x40 + i as u8, size as usize));
    }
    let last = samples[samples.len() - 1].0;
    let mut body = Vec::new();
    body.extend(u16b(0, le));
    body.extend(u16b(32, le));
    body.extend(IDS);
    body.extend(sn(first, le));
    body.extend(sn(first, le));
    body.extend(u32b((last - first) as u32, le));
    body.extend(u32b(samples.len() as u32, le));
    body.extend(u32b(infos.len() as u32, le));
    body.extend(infos);
    body.extend([0, if le { 1 } else { 0 }, 0, 0]);
    body.extend(data);
    submessage(0x18, 0, body, le)
}

fn data_session(session_sn: i64, writer_sn: i64, size: u32) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend(0u16.to_le_bytes());
    body.extend(24u16.to_le_bytes());
    body.extend(IDS);
    body.extend(sn(session_sn, true));
    body.extend(sn(writer_sn, true));
    body.extend([0, 1, 0, 0]);
    body.extend(std::iter::repeat_n(0x61, size as usize - 4));
    submessage(0x14, 0x04, body, true)
}

fn heartbeat_batch(first: i64, last: i64, count: i32) -> Vec<u8> {
    let mut body = IDS.to_vec();
    body.extend(sn(1, true));
    body.extend(sn(3, true));
    body.extend(sn(first, true));
    body.extend(sn(last, true));
    body.extend(count.to_le_bytes());
    submessage(0x19, 0, body, true)
}

fn ones_complement(data: &[u8]) -> u16 {
    let mut sum: u32 = data
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// Ethernet/IPv4/UDP frame 10.0.0.1:40000 → 10.0.0.2:7411 carrying `rtps`.
fn frame(rtps: &[u8]) -> Vec<u8> {
    let udp_len = 8 + rtps.len();
    let mut ip = vec![
        0x45, 0, 0, 0, 0, 1, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
    ];
    ip[2..4].copy_from_slice(&((20 + udp_len) as u16).to_be_bytes());
    let sum = ones_complement(&ip);
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
    let mut f = vec![
        0, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 8, 0,
    ];
    f.extend(ip);
    f.extend(40000u16.to_be_bytes());
    f.extend(7411u16.to_be_bytes());
    f.extend((udp_len as u16).to_be_bytes());
    f.extend([0, 0]);
    f.extend(rtps);
    f
}

/// The RTPS messages of the capture, in order.
pub fn messages() -> Vec<Vec<u8>> {
    let s = samples();
    let header = |body: Vec<u8>| {
        let mut m =
            b"RTPS\x02\x01\x01\x01\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c".to_vec();
        m.extend(body);
        m
    };
    vec![
        header(data_batch(&s[0..3], false, true)),
        header(data_batch(&s[3..5], true, false)),
        header(data_session(1, s[5].0, s[5].1)),
        header(heartbeat_batch(1, 6, 1)),
        header(data_batch(&s[6..], false, true)),
    ]
}

/// Write the capture (pcap, µs) with its first frame at `start_s`, one frame per ms.
pub fn write_pcap(path: &Path, start_s: u32, delay_us: u32) {
    let frames: Vec<Vec<u8>> = messages().iter().map(|m| frame(m)).collect();
    write_frames(path, start_s, delay_us, &frames);
}

/// A pcap (µs, Ethernet) of `frames`, the first at `start_s`, one per ms, all `delay_us` later.
fn write_frames(path: &Path, start_s: u32, delay_us: u32, frames: &[Vec<u8>]) {
    let start_us = u64::from(start_s) * 1_000_000 + u64::from(delay_us);
    super::write_eth_pcap(
        path,
        65535,
        frames
            .iter()
            .enumerate()
            .map(|(i, f)| (start_us + i as u64 * 1000, f)),
    );
}

/// How [`write_tcp_pcap`] carries the RTPS messages on its TCP connection.
#[derive(Debug, Clone, Copy)]
pub enum TcpWrap {
    /// RTI Connext's TCP transport (Wireshark's packet-rtitcp.c): every message behind an
    /// 8-byte header (a big-endian word: two control bits and a 30-bit length for RTPS,
    /// a 16-bit length for control messages; the magic 0xDD54DD55), with `crc` 8 more
    /// bytes (`CRC2`, a CRC); the client binds its identity and asks for the server's
    /// logical port first, the server answers on its own direction, liveliness between.
    RtiTcp { crc: bool },
    /// A 4-byte big-endian length before each RTPS message, nothing else.
    LengthPrefixed,
}

/// The client's address and port, and the server's.
pub const TCP_CLIENT: ([u8; 4], u16) = ([10, 0, 0, 1], 40000);
pub const TCP_SERVER: ([u8; 4], u16) = ([10, 0, 0, 2], 7411);
/// Largest TCP payload per segment: every message spans several segments.
const SEGMENT: usize = 90;

/// Ethernet/IPv4/TCP frame `from` → `to` with sequence number `seq`, `flags`, `payload`.
fn tcp_frame(
    from: ([u8; 4], u16),
    to: ([u8; 4], u16),
    seq: u32,
    flags: u8,
    payload: &[u8],
) -> Vec<u8> {
    let mut ip = vec![0x45, 0, 0, 0, 0, 1, 0, 0, 64, 6, 0, 0];
    ip[2..4].copy_from_slice(&((40 + payload.len()) as u16).to_be_bytes());
    ip.extend(from.0);
    ip.extend(to.0);
    let sum = ones_complement(&ip);
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
    let mut f = vec![
        0, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 8, 0,
    ];
    f.extend(ip);
    f.extend(from.1.to_be_bytes());
    f.extend(to.1.to_be_bytes());
    f.extend(seq.to_be_bytes());
    f.extend(0u32.to_be_bytes());
    f.extend([5 << 4, flags]);
    f.extend(65535u16.to_be_bytes());
    f.extend([0, 0, 0, 0]);
    f.extend(payload);
    f
}

/// An RTI TCP message: header (+ CRC), then `body`.
pub fn rti_tcp_message(body: &[u8], crc: bool) -> Vec<u8> {
    let control_bits: u32 = if body.starts_with(b"RTPS") {
        0x4000_0000
    } else {
        0
    };
    let mut m = (body.len() as u32 | control_bits).to_be_bytes().to_vec();
    m.extend([0xDD, 0x54, 0xDD, 0x55]);
    if crc {
        m.extend(b"CRC2");
        m.extend(0x1234_5678u32.to_be_bytes());
    }
    m.extend(body);
    m
}

/// An RTI TCP control message of `kind` (0x0C.. requests, 0x0D.. responses) with a
/// locator port attribute (type 0x3D02), after the control cookie 0x2112A442 and a
/// 12-byte transaction id.
pub fn rti_tcp_control(kind: u16, transaction: u8, crc: bool) -> Vec<u8> {
    let mut c = kind.to_be_bytes().to_vec();
    c.extend(8u16.to_be_bytes());
    c.extend(0x2112_A442u32.to_be_bytes());
    c.extend([transaction; 12]);
    c.extend(0x3D02u16.to_be_bytes());
    c.extend(4u16.to_be_bytes());
    c.extend(u32::from(TCP_SERVER.1).to_be_bytes());
    rti_tcp_message(&c, crc)
}

/// The RTI TCP control messages [`write_tcp_pcap`] writes, by kind: identity bind, server
/// logical port and liveliness, each a request and a response.
pub const RTI_TCP_CONTROL: [(u16, u16); 3] = [(0x0C01, 0x0D01), (0x0C02, 0x0D02), (0x0C06, 0x0D06)];

/// Write [`messages`] as one TCP connection client → server framed by `wrap` (pcap, µs,
/// one frame per ms from `start_s`, all `delay_us` later), each direction's bytes cut
/// into segments of at most 90 bytes regardless of message boundaries.
pub fn write_tcp_pcap(path: &Path, start_s: u32, delay_us: u32, wrap: TcpWrap) {
    let (mut to_server, mut to_client) = (Vec::new(), Vec::new());
    match wrap {
        TcpWrap::RtiTcp { crc } => {
            for (i, (request, response)) in RTI_TCP_CONTROL.iter().take(2).enumerate() {
                to_server.extend(rti_tcp_control(*request, i as u8, crc));
                to_client.extend(rti_tcp_control(*response, i as u8, crc));
            }
            for (i, m) in messages().iter().enumerate() {
                to_server.extend(rti_tcp_message(m, crc));
                if i == 2 {
                    let (request, response) = RTI_TCP_CONTROL[2];
                    to_server.extend(rti_tcp_control(request, 9, crc));
                    to_client.extend(rti_tcp_control(response, 9, crc));
                }
            }
        }
        TcpWrap::LengthPrefixed => {
            for m in messages() {
                to_server.extend((m.len() as u32).to_be_bytes());
                to_server.extend(m);
            }
        }
    }
    let (isn_client, isn_server) = (1_000_000u32, 7_000_000u32);
    let mut frames = vec![
        tcp_frame(TCP_CLIENT, TCP_SERVER, isn_client, 0x02, &[]),
        tcp_frame(TCP_SERVER, TCP_CLIENT, isn_server, 0x12, &[]),
    ];
    let client_segments = to_server.chunks(SEGMENT).enumerate().map(|(i, c)| {
        tcp_frame(
            TCP_CLIENT,
            TCP_SERVER,
            isn_client + 1 + (i * SEGMENT) as u32,
            0x18,
            c,
        )
    });
    let mut server_segments = to_client.chunks(SEGMENT).enumerate().map(|(i, c)| {
        tcp_frame(
            TCP_SERVER,
            TCP_CLIENT,
            isn_server + 1 + (i * SEGMENT) as u32,
            0x18,
            c,
        )
    });
    // The server's answers interleaved with the client's segments.
    for (i, f) in client_segments.enumerate() {
        frames.push(f);
        if i % 2 == 1 {
            frames.extend(server_segments.next());
        }
    }
    frames.extend(server_segments);
    write_frames(path, start_s, delay_us, &frames);
}
