//! RTPS over TCP: the RTCP, RTCP control and RTI TCP control headers, and stream reassembly and framing fed
//! hostile segments (any sequence numbers, flags, streams and capture times). Each
//! segment is: stream selector, flags, sequence number delta (i16 LE, from the
//! stream's last), time step (u8, in 10 ms), payload length (u16 LE), payload.
#![no_main]

use std::net::SocketAddr;

use libfuzzer_sys::fuzz_target;
use rtps_dissect::tcp::{
    parse_tcp, ControlHeader, RtcpHeader, RtiControlKind, TcpLimits, TcpPush, TcpReassembly,
    TcpSegment, RTCP_HEADER_LEN,
};

fuzz_target!(|data: &[u8]| {
    let _ = parse_tcp(data);
    let _ = RtiControlKind::of_message(data);
    if let Ok(h) = RtcpHeader::parse(data) {
        let _ = h.length;
        let _ = ControlHeader::parse(data.get(RTCP_HEADER_LEN..).unwrap_or_default());
    }
    let limits = TcpLimits {
        max_streams: 3,
        max_bytes: 1 << 18,
        max_ahead_bytes: 1 << 14,
        max_message: 1 << 16,
        gap_timeout_ns: 50_000_000,
        idle_timeout_ns: 2_000_000_000,
    };
    let mut r = TcpReassembly::new(limits);
    let mut seqs = [0u32; 4];
    let mut ts = 0u64;
    let mut rest = data;
    let mut frame = 0u64;
    while rest.len() >= 7 {
        let stream = usize::from(rest[0] % 4);
        let flags = rest[1];
        let delta = i16::from_le_bytes([rest[2], rest[3]]);
        ts += u64::from(rest[4]) * 10_000_000;
        let len = usize::from(u16::from_le_bytes([rest[5], rest[6]])).min(rest.len() - 7);
        let payload = &rest[7..7 + len];
        rest = &rest[7 + len..];
        frame += 1;
        let seq = seqs[stream].wrapping_add(delta as u32);
        seqs[stream] = seq.wrapping_add(len as u32);
        let src = SocketAddr::from(([10, 0, 0, 1], 5100 + stream as u16));
        let dst = SocketAddr::from(([10, 0, 0, 2], 7400));
        let seg = TcpSegment { src_port: src.port(), dst_port: dst.port(), seq, flags, payload };
        if let TcpPush::Stream { key, messages } = r.push(src, dst, &seg, ts, frame) {
            let bytes = r.stream_bytes(&key);
            for m in messages {
                let msg = bytes.get(m.start..m.start + m.len).expect("message within the stream");
                assert!(msg.get(..4).is_some_and(rtps_dissect::rtps::is_rtps_magic));
                assert!(m.framed_len <= limits.max_message + 4);
                assert!(m.ts_first_ns <= m.ts_last_ns && m.segments >= 1);
            }
        }
        let s = r.stats();
        assert!(s.bytes_held <= (limits.max_bytes + (1 << 16) * 2) as u64);
        assert!(s.streams_active <= limits.max_streams as u64);
    }
    r.flush();
    assert_eq!(r.stats().streams_active, 0);
});
