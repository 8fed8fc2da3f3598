use super::framing::Frame;
use super::rtcp::ControlKind;
use super::rti::{rti_tcp_frame, RTI_CONTROL_COOKIE, RTI_TCP_MAGIC};
use super::*;
use std::net::SocketAddr;

fn a(port: u16) -> SocketAddr {
    SocketAddr::from(([10, 0, 0, 1], port))
}

fn rtps(n: u8, body: usize) -> Vec<u8> {
    let mut m = b"RTPS\x02\x03\x01\x0f".to_vec();
    m.extend_from_slice(&[n; 12]);
    m.extend(std::iter::repeat_n(n, body));
    m
}

fn rtcp(payload: &[u8], port: u16) -> Vec<u8> {
    let mut m = b"RTCP".to_vec();
    m.extend_from_slice(&((payload.len() + RTCP_HEADER_LEN) as u32).to_le_bytes());
    m.extend_from_slice(&0u32.to_le_bytes());
    m.extend_from_slice(&port.to_le_bytes());
    m.extend_from_slice(payload);
    m
}

fn control(kind: u8) -> Vec<u8> {
    let mut c = vec![kind, 0x0e, 16, 0];
    c.extend_from_slice(&[0; 12]);
    rtcp(&c, 0)
}

fn seg(seq: u32, payload: &[u8]) -> TcpSegment<'_> {
    TcpSegment {
        src_port: 1,
        dst_port: 2,
        seq,
        flags: 0,
        payload,
    }
}

/// Push and return the RTPS messages' bytes and (ts_first, ts_last, segments).
fn push(r: &mut TcpReassembly, seq: u32, data: &[u8], ts: u64) -> Vec<(Vec<u8>, u64, u64, u32)> {
    match r.push(a(1), a(2), &seg(seq, data), ts, ts) {
        TcpPush::Stream { key, messages } => messages
            .iter()
            .map(|m| {
                let bytes = r.stream_bytes(&key)[m.start..m.start + m.len].to_vec();
                (bytes, m.ts_first_ns, m.ts_last_ns, m.segments)
            })
            .collect(),
        _ => Vec::new(),
    }
}

#[test]
fn rtcp_header_and_control() {
    let m = control(0xD4);
    let h = RtcpHeader::parse(&m).unwrap();
    assert_eq!(h.length, 30);
    let c = ControlHeader::parse(&m[RTCP_HEADER_LEN..]).unwrap();
    assert_eq!(c.kind, ControlKind::KeepAliveRequest);
    assert!(RtcpHeader::parse(b"RTPS\0\0\0\0\0\0\0\0\0\0").is_err());
    assert!(matches!(
        RtcpHeader::parse(b"RTCP\x01"),
        Err(DissectError::Truncated { offset: 4, .. })
    ));
}

#[test]
fn messages_split_and_coalesced_across_segments() {
    let m1 = rtcp(&rtps(1, 100), 7411);
    let m2 = rtcp(&rtps(2, 3000), 7411);
    let mut stream = control(0xD1);
    stream.extend_from_slice(&m1);
    stream.extend_from_slice(&m2);
    let mut r = TcpReassembly::default();
    // First segment: the control message, m1 and the start of m2.
    let cut = control(0xD1).len() + m1.len() + 40;
    let got = push(&mut r, 1000, &stream[..cut], 10);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].0, rtps(1, 100));
    let got = push(&mut r, 1000 + cut as u32, &stream[cut..cut + 1000], 20);
    assert!(got.is_empty());
    let got = push(&mut r, 1000 + cut as u32 + 1000, &stream[cut + 1000..], 30);
    assert_eq!(got, vec![(rtps(2, 3000), 10, 30, 3)]);
    let s = r.stats();
    assert_eq!((s.rtps_rtcp, s.control_bind), (2, 1));
    assert_eq!(s.retransmitted + s.gaps + s.resyncs, 0);
}

#[test]
fn out_of_order_and_retransmission() {
    let m = rtcp(&rtps(3, 500), 1);
    let mut r = TcpReassembly::default();
    let (p1, p2, p3) = (&m[..100], &m[100..300], &m[300..]);
    assert!(push(&mut r, 0, p1, 1).is_empty());
    assert!(push(&mut r, 300, p3, 2).is_empty()); // ahead of the hole
    assert!(push(&mut r, 0, p1, 3).is_empty()); // retransmission
    let got = push(&mut r, 100, p2, 4);
    assert_eq!(got, vec![(rtps(3, 500), 1, 4, 3)]);
    let s = r.stats();
    assert_eq!((s.out_of_order, s.retransmitted, s.gaps), (1, 1, 0));
    // An overlapping segment brings only its new bytes.
    let m2 = rtcp(&rtps(4, 10), 1);
    let base = m.len() as u32;
    assert!(push(&mut r, base, &m2[..20], 5).is_empty());
    let got = push(&mut r, base + 10, &m2[10..], 6);
    assert_eq!(got, vec![(rtps(4, 10), 5, 6, 2)]);
    assert_eq!(r.stats().overlapping, 1);
}

#[test]
fn gap_is_given_up_and_framing_found_again() {
    let m1 = rtcp(&rtps(1, 400), 1);
    let m2 = rtcp(&rtps(2, 50), 1);
    let mut all = m1.clone();
    all.extend_from_slice(&m2);
    let mut r = TcpReassembly::default();
    assert!(push(&mut r, 0, &all[..100], 0).is_empty());
    // Bytes 100..200 are never captured; the rest arrives.
    assert!(push(&mut r, 200, &all[200..], 1).is_empty());
    // Past the gap timeout the hole is given up: m1 is lost, m2 found by its magic.
    let later = 2_000_000_000;
    let got = push(&mut r, 5000, &[], later);
    assert!(got.is_empty(), "an empty segment does not trigger the hole");
    let tail = rtcp(&rtps(3, 5), 1);
    let seq = all.len() as u32 + 1000; // ahead again: the hole test runs
    let got = push(&mut r, seq, &tail, later);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].0, rtps(2, 50));
    let s = r.stats();
    assert_eq!(s.gaps, 1);
    assert_eq!(s.gap_bytes, 100);
    assert!(s.resync_skipped_bytes > 0);
}

#[test]
fn idle_streams_are_evicted_and_capacity_bounds_streams() {
    let limits = TcpLimits {
        max_streams: 2,
        idle_timeout_ns: 5_000_000_000,
        ..TcpLimits::default()
    };
    let mut r = TcpReassembly::new(limits);
    let half = &rtcp(&rtps(1, 10), 1)[..20];
    for (i, port) in [10u16, 11, 12].iter().enumerate() {
        r.push(a(*port), a(2), &seg(0, half), i as u64, 0);
    }
    let s = r.stats();
    assert_eq!(
        (
            s.streams_opened,
            s.streams_evicted_capacity,
            s.streams_active
        ),
        (3, 1, 2)
    );
    assert_eq!(s.evicted_bytes, 20);
    r.push(a(13), a(2), &seg(0, half), 20_000_000_000, 0);
    let s = r.stats();
    assert_eq!((s.streams_evicted_idle, s.streams_active), (2, 1));
    assert_eq!(s.bytes_held, 20);
}

#[test]
fn fin_closes_and_non_rtps_keeps_no_state() {
    let mut r = TcpReassembly::default();
    assert_eq!(
        r.push(a(1), a(2), &seg(0, b"GET / HTTP/1.1\r\n"), 0, 0),
        TcpPush::NotRtps
    );
    let m = rtcp(&rtps(1, 1), 1);
    let mut fin = seg(0, &m);
    fin.flags = TCP_FIN;
    assert!(
        matches!(r.push(a(1), a(2), &fin, 1, 1), TcpPush::Stream { ref messages, .. } if messages.len() == 1)
    );
    r.push(a(3), a(2), &seg(0, b"x"), 2, 2);
    let s = r.stats();
    assert_eq!((s.streams_closed, s.streams_active), (1, 0));
}

#[test]
fn a_stream_picked_up_mid_message_starts_at_its_next_message() {
    let m1 = rtcp(&rtps(1, 40), 1);
    let m2 = rtcp(&rtps(2, 40), 1);
    let mut r = TcpReassembly::default();
    // The capture starts inside m1: no state until a segment starts a message.
    assert_eq!(
        r.push(a(1), a(2), &seg(100, &m1[30..]), 0, 0),
        TcpPush::NotRtps
    );
    let got = push(&mut r, 100 + (m1.len() - 30) as u32, &m2, 1);
    assert_eq!(got, vec![(rtps(2, 40), 1, 1, 1)]);
    assert_eq!(r.stats().streams_opened, 1);
}

/// An RTI TCP message: the 8-byte header (with `CRC2` and a CRC when `crc`), `body`.
fn rti_tcp(body: &[u8], crc: bool) -> Vec<u8> {
    let control_bits = if body.starts_with(b"RTPS") {
        0x4000_0000
    } else {
        0
    };
    let mut m = (body.len() as u32 | control_bits).to_be_bytes().to_vec();
    m.extend_from_slice(RTI_TCP_MAGIC);
    if crc {
        m.extend_from_slice(b"CRC2");
        m.extend_from_slice(&0xdead_beefu32.to_be_bytes());
    }
    m.extend_from_slice(body);
    m
}

/// An RTI TCP control message of `kind` with one attribute (a locator port).
fn rti_control(kind: u16) -> Vec<u8> {
    let mut c = kind.to_be_bytes().to_vec();
    c.extend_from_slice(&8u16.to_be_bytes());
    c.extend_from_slice(&RTI_CONTROL_COOKIE.to_be_bytes());
    c.extend_from_slice(&[7; 12]);
    c.extend_from_slice(&0x3D02u16.to_be_bytes());
    c.extend_from_slice(&4u16.to_be_bytes());
    c.extend_from_slice(&7411u32.to_be_bytes());
    rti_tcp(&c, false)
}

#[test]
fn rti_tcp_messages_control_and_crc() {
    let (m1, m2) = (rtps(1, 40), rtps(2, 3000));
    let mut stream = rti_control(0x0C01);
    stream.extend(rti_control(0x0D01));
    stream.extend(rti_control(0x0C02));
    stream.extend(rti_tcp(&m1, false));
    stream.extend(rti_control(0x0C06));
    stream.extend(rti_tcp(&m2, true));
    stream.extend(rti_control(0x0C1F));
    stream.extend(rti_control(0x0C09));
    let mut r = TcpReassembly::default();
    let mut got = Vec::new();
    // Split across segments of 100 bytes: headers and messages straddle them.
    for (i, chunk) in stream.chunks(100).enumerate() {
        got.extend(push(&mut r, (i * 100) as u32, chunk, i as u64 + 1));
    }
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].0, m1);
    assert_eq!(got[1].0, m2);
    assert!(got[1].3 > 30, "segments of the large message: {}", got[1].3);
    let s = r.stats();
    assert_eq!(s.rtps_rti_tcp, 2);
    assert_eq!(
        (
            s.rti_control_bind,
            s.rti_control_logical_port,
            s.rti_control_liveliness,
            s.rti_control_finalize,
            s.rti_control_unknown
        ),
        (2, 1, 1, 1, 1)
    );
    assert_eq!(s.control_messages(), 6);
    assert_eq!((s.resyncs, s.messages_malformed), (0, 0));
    assert_eq!(s.rtps_messages(), 2);
}

#[test]
fn rti_tcp_kinds_and_lengths() {
    assert_eq!(
        RtiControlKind::from_u16(0x0D14),
        RtiControlKind::ConnectionBind
    );
    assert_eq!(RtiControlKind::from_u16(0x0C15), RtiControlKind::SessionId);
    assert_eq!(
        RtiControlKind::from_u16(0x0D03),
        RtiControlKind::ClientLogicalPort
    );
    assert_eq!(
        RtiControlKind::from_u16(0x0E01),
        RtiControlKind::Unknown(0x0E01)
    );
    assert_eq!(
        RtiControlKind::of_message(&[0x0C, 0x06]),
        RtiControlKind::Unknown(0x0C06)
    );
    assert_eq!(RtiControlKind::of_message(&[]), RtiControlKind::Unknown(0));
    let m = rti_tcp(&rtps(1, 4), true);
    assert_eq!(rti_tcp_frame(&m[..11], 1 << 20), Frame::Wait);
    assert_eq!(
        rti_tcp_frame(&m, 1 << 20),
        Frame::Message {
            header_len: 16,
            framed_len: m.len(),
            logical_port: None,
        }
    );
    assert_eq!(rti_tcp_frame(&m, 10), Frame::Lost);
    assert_eq!(
        rti_tcp_frame(b"\0\0\0\x10RTPS\0\0\0\0", 1 << 20),
        Frame::Lost
    );
}

#[test]
fn rti_tcp_framing_is_found_again_after_a_gap() {
    let m = rtps(3, 100);
    let one = rti_tcp(&m, false);
    let mut r = TcpReassembly::default();
    assert_eq!(push(&mut r, 0, &one, 1).len(), 1);
    let n = one.len() as u32;
    // The second message's first 10 bytes never come; the third arrives whole.
    assert!(push(&mut r, n + 10, &one[10..], 2).is_empty());
    let got = push(&mut r, 2 * n, &one, 2_000_000_003);
    assert_eq!(got.len(), 1, "{:?}", r.stats());
    assert_eq!(got[0].0, m);
    let s = r.stats();
    assert_eq!((s.gaps, s.gap_bytes, s.rtps_rti_tcp), (1, 10, 2));
}

#[test]
fn length_prefixed_and_bare() {
    let m = rtps(5, 30);
    let mut framed = (m.len() as u32).to_be_bytes().to_vec();
    framed.extend_from_slice(&m);
    framed.extend_from_slice(&framed.clone());
    let mut r = TcpReassembly::default();
    let got = push(&mut r, 0, &framed, 1);
    assert_eq!(got.len(), 2);
    assert_eq!(got[1].0, m);
    assert_eq!(r.push(a(5), a(6), &seg(0, &m), 1, 1), TcpPush::Bare);
    let s = r.stats();
    assert_eq!((s.rtps_length_prefixed, s.rtps_bare), (2, 1));
}

#[test]
fn tcp_header() {
    let mut h = vec![0x13, 0xec, 0x1c, 0xeb, 0, 0, 0, 5, 0, 0, 0, 0, 0x60, 0x18];
    h.extend_from_slice(&[0; 6]);
    h.extend_from_slice(&[0; 4]); // option
    h.extend_from_slice(b"RTCP");
    let t = parse_tcp(&h).unwrap();
    assert_eq!(
        (t.src_port, t.dst_port, t.seq, t.payload),
        (5100, 7403, 5, &b"RTCP"[..])
    );
    h[12] = 0x40;
    assert!(parse_tcp(&h).is_err());
    assert!(parse_tcp(&h[..10]).is_err());
}
