//! Bounded stream reassembly on capture time: segments put in sequence order, holes
//! held and given up, streams evicted, and the framed messages cut from the bytes.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::SocketAddr;

use crate::rtps::is_rtps_magic;
use crate::types::KeyHasher;

use super::framing::{detect, Frame};
use super::rtcp::ControlHeader;
use super::rti::RtiControlKind;
use super::*;

/// One direction of a TCP connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StreamKey {
    pub src: SocketAddr,
    pub dst: SocketAddr,
}

/// A framed RTPS message found in a stream: where its bytes are in
/// [`TcpReassembly::stream_bytes`] and when its first and last bytes were captured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpMessage {
    pub framing: TcpFraming,
    /// Logical port of the RTCP header (Fast DDS), if any.
    pub logical_port: Option<u16>,
    /// The RTPS message (framing header excluded) within the stream bytes.
    pub start: usize,
    pub len: usize,
    /// Framed length on the wire (framing header included).
    pub framed_len: usize,
    pub ts_first_ns: u64,
    pub frame_first: u64,
    pub ts_last_ns: u64,
    pub frame_last: u64,
    /// Segments the framed message was carried in.
    pub segments: u32,
}

/// What one segment did.
#[derive(Debug, PartialEq, Eq)]
pub enum TcpPush {
    /// Not (yet) an RTPS stream: no state kept.
    NotRtps,
    /// Part of an RTPS stream; these messages are complete now (maybe none).
    Stream {
        key: StreamKey,
        messages: Vec<TcpMessage>,
    },
    /// A bare RTPS segment: the whole payload is one message.
    Bare,
}

struct Arrival {
    /// Stream offset of the first new byte this segment brought.
    offset: u64,
    ts_ns: u64,
    frame: u64,
}

struct Ahead {
    data: Vec<u8>,
    ts_ns: u64,
    frame: u64,
}

struct Stream {
    framing: TcpFraming,
    /// Sequence number of the next in-order byte.
    next_seq: u32,
    /// In-order bytes from stream offset `start` on; the first `consumed` are framed.
    buf: Vec<u8>,
    start: u64,
    consumed: usize,
    /// At a message boundary (false after a gap or a framing error).
    synced: bool,
    arrivals: VecDeque<Arrival>,
    /// Segments ahead of a hole, by stream offset.
    ahead: BTreeMap<u64, Ahead>,
    ahead_bytes: usize,
    /// Capture time the current hole opened.
    hole_since_ns: Option<u64>,
    last_ts_ns: u64,
}

impl Stream {
    fn end_offset(&self) -> u64 {
        self.start.saturating_add(self.buf.len() as u64)
    }

    fn held(&self) -> usize {
        self.buf.len().saturating_add(self.ahead_bytes)
    }

    /// Drop the bytes already framed (they were lent out until this call).
    fn drain_consumed(&mut self) {
        if self.consumed == 0 {
            return;
        }
        let n = self.consumed.min(self.buf.len());
        self.buf.drain(..n);
        self.start = self.start.saturating_add(n as u64);
        self.consumed = 0;
        // Keep the arrival that covers the new start.
        while self.arrivals.len() > 1
            && self.arrivals.get(1).is_some_and(|a| a.offset <= self.start)
        {
            self.arrivals.pop_front();
        }
    }

    fn append(&mut self, data: &[u8], ts_ns: u64, frame: u64) {
        if data.is_empty() {
            return;
        }
        self.arrivals.push_back(Arrival {
            offset: self.end_offset(),
            ts_ns,
            frame,
        });
        self.buf.extend_from_slice(data);
        self.next_seq = self.next_seq.wrapping_add(data.len() as u32);
    }

    /// Index of the arrival that brought stream offset `at`.
    fn arrival_index(&self, at: u64) -> usize {
        self.arrivals
            .partition_point(|a| a.offset <= at)
            .saturating_sub(1)
    }
}

/// TCP stream reassembly and framing for every tracked stream.
pub struct TcpReassembly {
    limits: TcpLimits,
    streams: HashMap<StreamKey, Stream, KeyHasher>,
    bytes_held: usize,
    stats: TcpStats,
    /// A stream that ended (FIN/RST) with its last messages lent out: removed on the
    /// next push.
    closing: Option<StreamKey>,
    last_sweep_ns: u64,
}

impl Default for TcpReassembly {
    fn default() -> Self {
        Self::new(TcpLimits::default())
    }
}

impl TcpReassembly {
    pub fn new(limits: TcpLimits) -> Self {
        Self {
            limits,
            streams: HashMap::default(),
            bytes_held: 0,
            stats: TcpStats::default(),
            closing: None,
            last_sweep_ns: 0,
        }
    }

    pub fn stats(&self) -> TcpStats {
        TcpStats {
            streams_active: self.streams.len() as u64,
            bytes_held: self.bytes_held as u64,
            ..self.stats
        }
    }

    /// The bytes of a stream, as the messages of its last push index them.
    pub fn stream_bytes(&self, key: &StreamKey) -> &[u8] {
        self.streams.get(key).map_or(&[], |s| s.buf.as_slice())
    }

    /// End of the capture: every stream is given up.
    pub fn flush(&mut self) {
        self.closing = None;
        for (_, s) in self.streams.drain() {
            let left = s.held().saturating_sub(s.consumed);
            add(&mut self.stats.evicted_bytes, left);
        }
        self.bytes_held = 0;
    }

    fn remove(&mut self, key: &StreamKey) -> Option<Stream> {
        let s = self.streams.remove(key)?;
        self.bytes_held = self.bytes_held.saturating_sub(s.held());
        Some(s)
    }

    fn evict(&mut self, key: &StreamKey, idle: bool) {
        if let Some(s) = self.remove(key) {
            inc(if idle {
                &mut self.stats.streams_evicted_idle
            } else {
                &mut self.stats.streams_evicted_capacity
            });
            add(
                &mut self.stats.evicted_bytes,
                s.held().saturating_sub(s.consumed),
            );
        }
    }

    /// Drop streams idle for longer than the timeout (at most once a second of capture time).
    fn sweep(&mut self, now_ns: u64) {
        if now_ns.saturating_sub(self.last_sweep_ns) < 1_000_000_000 {
            return;
        }
        self.last_sweep_ns = now_ns;
        let idle: Vec<StreamKey> = self
            .streams
            .iter()
            .filter(|(_, s)| now_ns.saturating_sub(s.last_ts_ns) > self.limits.idle_timeout_ns)
            .map(|(k, _)| *k)
            .collect();
        for k in idle {
            self.evict(&k, true);
        }
    }

    /// The least recently active stream other than `keep`.
    fn oldest_except(&self, keep: &StreamKey) -> Option<StreamKey> {
        self.streams
            .iter()
            .filter(|(k, _)| *k != keep)
            .min_by_key(|(k, s)| (s.last_ts_ns, **k == *keep))
            .map(|(k, _)| *k)
    }

    /// One TCP segment of the connection `src` → `dst`, captured at `ts_ns` in `frame`.
    pub fn push(
        &mut self,
        src: SocketAddr,
        dst: SocketAddr,
        seg: &TcpSegment<'_>,
        ts_ns: u64,
        frame: u64,
    ) -> TcpPush {
        if let Some(k) = self.closing.take() {
            if self.remove(&k).is_some() {
                inc(&mut self.stats.streams_closed);
            }
        }
        self.sweep(ts_ns);
        let key = StreamKey { src, dst };
        if !self.streams.contains_key(&key) {
            if seg.payload.is_empty() {
                return TcpPush::NotRtps;
            }
            let Some((pos, framing)) = detect(seg.payload, self.limits.max_message) else {
                return TcpPush::NotRtps;
            };
            if framing == TcpFraming::Bare {
                inc(&mut self.stats.segments);
                add(&mut self.stats.bytes, seg.payload.len());
                inc(&mut self.stats.rtps_bare);
                return TcpPush::Bare;
            }
            while self.streams.len() >= self.limits.max_streams.max(1) {
                let Some(old) = self.oldest_except(&key) else {
                    break;
                };
                self.evict(&old, false);
            }
            inc(&mut self.stats.streams_opened);
            add(&mut self.stats.resync_skipped_bytes, pos);
            self.streams.insert(
                key,
                Stream {
                    framing,
                    next_seq: seg.seq.wrapping_add(pos as u32),
                    buf: Vec::new(),
                    start: 0,
                    consumed: 0,
                    synced: true,
                    arrivals: VecDeque::new(),
                    ahead: BTreeMap::new(),
                    ahead_bytes: 0,
                    hole_since_ns: None,
                    last_ts_ns: ts_ns,
                },
            );
        }
        let Some(stream) = self.streams.get_mut(&key) else {
            return TcpPush::NotRtps;
        };
        let before = stream.held();
        stream.drain_consumed();
        stream.last_ts_ns = ts_ns;
        if !seg.payload.is_empty() {
            inc(&mut self.stats.segments);
            insert_segment(stream, seg, ts_ns, frame, &self.limits, &mut self.stats);
        }
        let messages = frame_messages(stream, ts_ns, frame, &self.limits, &mut self.stats);
        let after = stream.held();
        self.bytes_held = self.bytes_held.saturating_add(after).saturating_sub(before);
        if seg.fin_or_rst() {
            self.closing = Some(key);
        }
        while self.bytes_held > self.limits.max_bytes {
            let Some(old) = self.oldest_except(&key) else {
                break;
            };
            self.evict(&old, false);
        }
        TcpPush::Stream { key, messages }
    }
}

/// Put a segment's bytes in order: appended, held ahead of a hole, or dropped as seen.
fn insert_segment(
    s: &mut Stream,
    seg: &TcpSegment<'_>,
    ts_ns: u64,
    frame: u64,
    limits: &TcpLimits,
    stats: &mut TcpStats,
) {
    let distance = seg.seq.wrapping_sub(s.next_seq) as i32;
    if distance <= 0 {
        let seen = distance.unsigned_abs() as usize;
        match seg.payload.get(seen..) {
            Some(new) if !new.is_empty() => {
                if seen > 0 {
                    inc(&mut stats.overlapping);
                }
                add(&mut stats.bytes, new.len());
                s.append(new, ts_ns, frame);
                take_ahead(s, stats);
            }
            _ => inc(&mut stats.retransmitted),
        }
    } else {
        let offset = s
            .end_offset()
            .saturating_add(distance.unsigned_abs().into());
        let fits = s.ahead_bytes.saturating_add(seg.payload.len()) <= limits.max_ahead_bytes;
        if s.ahead.contains_key(&offset) {
            inc(&mut stats.retransmitted);
        } else if fits {
            inc(&mut stats.out_of_order);
            s.ahead_bytes = s.ahead_bytes.saturating_add(seg.payload.len());
            s.ahead.insert(
                offset,
                Ahead {
                    data: seg.payload.to_vec(),
                    ts_ns,
                    frame,
                },
            );
        } else {
            inc(&mut stats.ahead_dropped);
        }
        let since = *s.hole_since_ns.get_or_insert(ts_ns);
        if !fits || ts_ns.saturating_sub(since) > limits.gap_timeout_ns {
            give_up_hole(s, ts_ns, stats);
        }
    }
}

/// Move segments that are no longer ahead of a hole into the stream.
fn take_ahead(s: &mut Stream, stats: &mut TcpStats) {
    loop {
        let end = s.end_offset();
        let Some(entry) = s.ahead.first_entry() else {
            break;
        };
        let offset = *entry.key();
        if offset > end {
            break;
        }
        let a = entry.remove();
        s.ahead_bytes = s.ahead_bytes.saturating_sub(a.data.len());
        let seen = usize::try_from(end.saturating_sub(offset)).unwrap_or(usize::MAX);
        match a.data.get(seen..) {
            Some(new) if !new.is_empty() => {
                add(&mut stats.bytes, new.len());
                s.append(new, a.ts_ns, a.frame);
            }
            _ => inc(&mut stats.retransmitted),
        }
    }
    if s.ahead.is_empty() {
        s.hole_since_ns = None;
    }
}

/// The hole before the first held segment will not be filled: skip it and look for
/// the framing again after it.
fn give_up_hole(s: &mut Stream, ts_ns: u64, stats: &mut TcpStats) {
    let Some((&offset, _)) = s.ahead.first_key_value() else {
        return;
    };
    let hole = offset.saturating_sub(s.end_offset());
    inc(&mut stats.gaps);
    stats.gap_bytes = stats.gap_bytes.saturating_add(hole);
    // The partial message before the hole can never complete.
    add(
        &mut stats.resync_skipped_bytes,
        s.buf.len().saturating_sub(s.consumed),
    );
    s.buf.clear();
    s.consumed = 0;
    s.arrivals.clear();
    s.start = offset;
    s.next_seq = s.next_seq.wrapping_add(hole as u32);
    s.synced = false;
    take_ahead(s, stats);
    if !s.ahead.is_empty() {
        // A further hole: its time starts now.
        s.hole_since_ns = Some(ts_ns);
    }
}

/// Frame the complete messages from the unconsumed bytes.
fn frame_messages(
    s: &mut Stream,
    ts_ns: u64,
    frame: u64,
    limits: &TcpLimits,
    stats: &mut TcpStats,
) -> Vec<TcpMessage> {
    let mut out = Vec::new();
    while let Some(rest) = s.buf.get(s.consumed..) {
        if !s.synced {
            let found = s.framing.find_header(rest);
            match found {
                Some(pos) => {
                    add(&mut stats.resync_skipped_bytes, pos);
                    s.consumed = s.consumed.saturating_add(pos);
                    s.synced = true;
                    continue;
                }
                None => {
                    // Keep the last bytes: a magic may straddle the next segment.
                    let keep = 7usize.min(rest.len());
                    let skip = rest.len().saturating_sub(keep);
                    add(&mut stats.resync_skipped_bytes, skip);
                    s.consumed = s.consumed.saturating_add(skip);
                    break;
                }
            }
        }
        let (framed_len, header_len, logical_port) = match s.framing.frame(rest, limits.max_message)
        {
            Frame::Wait => break,
            Frame::Lost => {
                lose_sync(s, stats);
                continue;
            }
            Frame::Message {
                header_len,
                framed_len,
                logical_port,
            } => (framed_len, header_len, logical_port),
        };
        let Some(framed) = rest.get(..framed_len) else {
            break; // wait for the rest of the message
        };
        let body = framed.get(header_len..).unwrap_or_default();
        let message_start = s.consumed.saturating_add(header_len);
        let first_offset = s.start.saturating_add(s.consumed as u64);
        let last_offset = first_offset.saturating_add(framed_len.saturating_sub(1) as u64);
        s.consumed = s.consumed.saturating_add(framed_len);
        if body.get(..4).is_some_and(is_rtps_magic) {
            let first = s.arrival_index(first_offset);
            let last = s.arrival_index(last_offset);
            let (ts_first_ns, frame_first) = s
                .arrivals
                .get(first)
                .map_or((ts_ns, frame), |a| (a.ts_ns, a.frame));
            // Complete when its last missing piece arrived: the latest segment it spans
            // (this one, unless the bytes behind a given-up hole had arrived before).
            let (ts_last_ns, frame_last) = s
                .arrivals
                .range(first..=last.max(first))
                .map(|a| (a.ts_ns, a.frame))
                .max()
                .unwrap_or((ts_ns, frame));
            inc(match s.framing {
                TcpFraming::Rtcp => &mut stats.rtps_rtcp,
                TcpFraming::RtiTcp => &mut stats.rtps_rti_tcp,
                _ => &mut stats.rtps_length_prefixed,
            });
            out.push(TcpMessage {
                framing: s.framing,
                logical_port,
                start: message_start,
                len: body.len(),
                framed_len,
                ts_first_ns,
                frame_first,
                ts_last_ns,
                frame_last,
                segments: u32::try_from(last.saturating_sub(first).saturating_add(1))
                    .unwrap_or(u32::MAX),
            });
        } else if s.framing == TcpFraming::Rtcp {
            match ControlHeader::parse(body) {
                Ok(c) => stats.count_control(c.kind),
                Err(_) => inc(&mut stats.rtcp_unknown_payload),
            }
        } else if s.framing == TcpFraming::RtiTcp {
            stats.count_rti_control(RtiControlKind::of_message(body));
        } else {
            // A length prefix that does not lead to RTPS: not a message boundary.
            s.consumed = s.consumed.saturating_sub(framed_len);
            lose_sync(s, stats);
        }
    }
    out
}

fn lose_sync(s: &mut Stream, stats: &mut TcpStats) {
    inc(&mut stats.resyncs);
    s.synced = false;
    // Past the magic that misled us.
    s.consumed = s.consumed.saturating_add(1).min(s.buf.len());
    add(&mut stats.resync_skipped_bytes, 1);
}
