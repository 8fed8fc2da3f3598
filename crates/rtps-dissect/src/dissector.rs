//! The dissector: frames in, RTPS datagrams (with their submessages and discovery
//! records) out. It owns the IP-fragment tracker, the discovery DATA_FRAG
//! reassembly and the GUID → topic map; it never looks at a clock.

use std::net::SocketAddr;

use crate::discovery::{
    decode_discovery, DiscoveryFragLimits, DiscoveryFragStats, DiscoveryReassembly,
    DiscoveryRecord, FragmentPiece, TopicInfo, TopicMap,
};
use crate::error::DissectError;
use crate::frag::{
    FragmentFrame, FragmentLimits, FragmentResult, FragmentStats, FragmentTracker,
    IncompleteDatagram,
};
use crate::link::{parse_link, LinkType, Network};
use crate::net::{
    icmp_quotes_rtps, parse_ipv4, parse_ipv6, parse_udp, IpPacket, PROTO_ICMP, PROTO_ICMPV6,
    PROTO_TCP, PROTO_UDP,
};
use crate::plist::{PID_KEY_HASH, PID_STATUS_INFO};
use crate::rtps::{
    is_rtps_magic, RtpsHeader, SerializedPayload, Submessage, SubmessageBody, SubmessageError,
    SubmessageIter,
};
use crate::tcp::{parse_tcp, TcpFraming, TcpLimits, TcpMessage, TcpPush, TcpReassembly, TcpStats};
use crate::types::{Guid, SequenceNumber, VendorId};

mod decoded;
mod outcome;

use decoded::{discovery_records, DecodedDiscovery};
use outcome::count_outcome;
pub use outcome::{
    Datagram, DissectorStats, Frame, FrameOutcome, SkipReason, TcpSegmentOutcome, Transport,
};

#[derive(Debug, Clone, Copy)]
pub struct DissectorConfig {
    pub fragments: FragmentLimits,
    pub discovery_fragments: DiscoveryFragLimits,
    /// Most endpoints the GUID → topic map holds.
    pub max_endpoints: usize,
    pub tcp: TcpLimits,
}

impl Default for DissectorConfig {
    fn default() -> Self {
        Self {
            fragments: FragmentLimits::default(),
            discovery_fragments: DiscoveryFragLimits::default(),
            tcp: TcpLimits::default(),
            max_endpoints: 65_536,
        }
    }
}

pub struct Dissector {
    fragments: FragmentTracker,
    tcp: TcpReassembly,
    discovery_fragments: DiscoveryReassembly,
    decoded: DecodedDiscovery,
    topics: TopicMap,
    stats: DissectorStats,
    /// The allocations of a returned datagram's lists, for the next one.
    spare: SpareLists,
}

/// The (empty) allocations of a datagram's submessage and discovery lists, free of
/// the frame's lifetime, kept by [`Dissector::process_with`] so that the next
/// datagram needs no allocation.
#[derive(Default)]
struct SpareLists {
    submessages: Vec<Result<Submessage<'static>, SubmessageError<'static>>>,
    discovery: Vec<DiscoveryRecord>,
}

impl SpareLists {
    /// Keep the allocations of a datagram's lists, once its consumers are done with it.
    fn keep(&mut self, d: Datagram<'_>) {
        let Datagram {
            mut submessages,
            mut discovery,
            ..
        } = d;
        // The submessages own nothing, so this is O(1), and the re-typing below then
        // walks an empty list.
        submessages.clear();
        self.submessages = relifetime(submessages);
        // Most datagrams carry no discovery: their list never took the spare one.
        if discovery.capacity() > 0 {
            discovery.clear();
            self.discovery = discovery;
        }
    }
}

/// An emptied list with its allocation, under another lifetime (in-place collect
/// keeps the buffer: same element size and alignment).
// (`filter` cannot change the element's lifetime; `filter_map` to `None` can)
#[allow(clippy::unnecessary_filter_map)]
fn relifetime<'a, 'b>(
    v: Vec<Result<Submessage<'a>, SubmessageError<'a>>>,
) -> Vec<Result<Submessage<'b>, SubmessageError<'b>>> {
    v.into_iter().filter_map(|_| None).collect()
}

impl Default for Dissector {
    fn default() -> Self {
        Self::new(DissectorConfig::default())
    }
}

/// Where the datagram came from and when, before RTPS is looked at.
struct Envelope {
    ts_first_ns: u64,
    frame_first: u64,
    ts_last_ns: u64,
    frame_last: u64,
    ip_fragments: u32,
    pcp: Option<u8>,
    vlan_id: Option<u16>,
    src_mac: Option<[u8; 6]>,
    truncated: bool,
}

fn inc(c: &mut u64) {
    *c = c.saturating_add(1);
}

impl Dissector {
    pub fn new(config: DissectorConfig) -> Self {
        Self {
            fragments: FragmentTracker::new(config.fragments),
            tcp: TcpReassembly::new(config.tcp),
            discovery_fragments: DiscoveryReassembly::new(config.discovery_fragments),
            decoded: DecodedDiscovery::default(),
            topics: TopicMap::new(config.max_endpoints),
            stats: DissectorStats::default(),
            spare: SpareLists::default(),
        }
    }

    pub fn stats(&self) -> DissectorStats {
        DissectorStats {
            ip: self.fragments.stats(),
            discovery_fragments: self.discovery_fragments.stats(),
            endpoints_known: self.topics.len() as u64,
            endpoints_evicted: self.topics.evicted(),
            tcp: TcpStats {
                frames_held: self.stats.tcp.frames_held,
                messages_malformed: self.stats.tcp.messages_malformed,
                ..self.tcp.stats()
            },
            ..self.stats
        }
    }

    pub fn topics(&self) -> &TopicMap {
        &self.topics
    }

    /// Teach the topic map endpoints learnt elsewhere (a discovery cache).
    pub fn topics_mut(&mut self) -> &mut TopicMap {
        &mut self.topics
    }

    /// End of input: every datagram still missing fragments is given up and returned.
    pub fn finish(&mut self) -> Vec<IncompleteDatagram> {
        self.tcp.flush();
        self.fragments.flush()
    }

    pub fn process<'a>(&'a mut self, frame: &Frame<'a>) -> FrameOutcome<'a> {
        let (layers, stats, spare) = self.split();
        let outcome = process_frame(layers, frame, spare);
        count_outcome(stats, frame, &outcome);
        outcome
    }

    /// [`Dissector::process`] for a caller that only looks at the outcome: `consume`
    /// sees it where it was built, and the datagram's lists stay here for the next
    /// frame. On small frames moving the outcome out (about 200 bytes, twice) and
    /// handing the lists back cost about as much as parsing the frame's headers.
    pub fn process_with<R>(
        &mut self,
        frame: &Frame<'_>,
        consume: impl FnOnce(&FrameOutcome<'_>) -> R,
    ) -> R {
        let (layers, stats, spare) = self.split();
        // Counted here and not by a function shared with `process`: returning the
        // outcome after counting it copies it (rustc does not build a value that was
        // borrowed in its caller's place), once per frame.
        let outcome = process_frame(layers, frame, spare);
        count_outcome(stats, frame, &outcome);
        let result = consume(&outcome);
        if let FrameOutcome::Rtps(d) = outcome {
            spare.keep(d);
        }
        result
    }

    /// The layers a frame goes through, borrowed apart from the counters and the spare
    /// lists (which the outcome does not borrow).
    fn split(&mut self) -> (Layers<'_>, &mut DissectorStats, &mut SpareLists) {
        let Dissector {
            fragments,
            tcp,
            discovery_fragments,
            decoded,
            topics,
            stats,
            spare,
        } = self;
        (
            ((fragments, tcp), (discovery_fragments, decoded), topics),
            stats,
            spare,
        )
    }
}

/// What [`process_frame`] works with: IP fragments and TCP streams, discovery
/// DATA_FRAG reassembly and decoded discovery, the topic map.
type Layers<'a> = (
    (&'a mut FragmentTracker, &'a mut TcpReassembly),
    (&'a mut DiscoveryReassembly, &'a mut DecodedDiscovery),
    &'a mut TopicMap,
);

fn process_frame<'a>(
    ((fragments, tcp), (discovery_fragments, decoded), topics): Layers<'a>,
    frame: &Frame<'a>,
    spare: &mut SpareLists,
) -> FrameOutcome<'a> {
    {
        let link = match parse_link(frame.link, frame.data) {
            Ok(l) => l,
            Err(e) => return FrameOutcome::Malformed(e),
        };
        let ip = match link.network {
            Network::Ipv4 => parse_ipv4(link.payload),
            Network::Ipv6 => parse_ipv6(link.payload),
            Network::Other(_) => return FrameOutcome::Skipped(SkipReason::NotIp),
        };
        let ip: IpPacket<'a> = match ip {
            Ok(ip) => ip,
            Err(e) => return FrameOutcome::Malformed(e),
        };
        let (payload, envelope) = match ip.fragment {
            None => (
                ip.payload,
                Envelope {
                    ts_first_ns: frame.ts_ns,
                    frame_first: frame.number,
                    ts_last_ns: frame.ts_ns,
                    frame_last: frame.number,
                    ip_fragments: 1,
                    pcp: link.pcp,
                    vlan_id: link.vlan_id,
                    src_mac: link.src_mac,
                    truncated: ip.truncated,
                },
            ),
            Some(info) => {
                if ip.truncated {
                    // A fragment cut by the snaplen can never complete its datagram.
                    return FrameOutcome::Malformed(DissectError::BadLength {
                        layer: crate::error::Layer::Ipv4,
                        offset: 2,
                        claimed: ip.payload.len().saturating_add(1),
                        available: ip.payload.len(),
                    });
                }
                let ff = FragmentFrame {
                    ts_ns: frame.ts_ns,
                    frame: frame.number,
                    pcp: link.pcp,
                    vlan_id: link.vlan_id,
                    src_mac: link.src_mac,
                };
                match fragments.push(&ip, info, ff) {
                    FragmentResult::Pending => return FrameOutcome::FragmentHeld,
                    FragmentResult::Dropped(d) => return FrameOutcome::FragmentDropped(d),
                    FragmentResult::Complete(span) => (
                        fragments.completed(),
                        Envelope {
                            ts_first_ns: span.ts_first_ns,
                            frame_first: span.frame_first,
                            ts_last_ns: span.ts_last_ns,
                            frame_last: span.frame_last,
                            ip_fragments: span.fragments,
                            pcp: span.pcp,
                            vlan_id: span.vlan_id,
                            src_mac: span.src_mac,
                            truncated: false,
                        },
                    ),
                }
            }
        };
        match ip.protocol {
            PROTO_UDP => {}
            PROTO_TCP => {
                return process_tcp(
                    tcp,
                    (discovery_fragments, decoded),
                    topics,
                    &ip,
                    payload,
                    &envelope,
                )
            }
            PROTO_ICMP | PROTO_ICMPV6 if icmp_quotes_rtps(ip.protocol, payload) => {
                return FrameOutcome::Skipped(SkipReason::IcmpQuotedRtps)
            }
            _ => return FrameOutcome::Skipped(SkipReason::NotUdp),
        }
        let udp = match parse_udp(payload) {
            Ok(u) => u,
            Err(e) => return FrameOutcome::Malformed(e),
        };
        if !udp.payload.get(..4).is_some_and(is_rtps_magic) {
            return FrameOutcome::Skipped(SkipReason::NotRtps);
        }
        if is_rti_ping(udp.payload) {
            return FrameOutcome::Skipped(SkipReason::RtiPing);
        }
        let header = match RtpsHeader::parse(udp.payload) {
            Ok(h) => h,
            Err(e) => return FrameOutcome::Malformed(e),
        };
        let on_wire = udp.length.saturating_sub(UDP_HEADER_LEN);
        // Taken only now: a frame that yields no datagram leaves the spare list in place.
        let mut submessages = relifetime(std::mem::take(&mut spare.submessages));
        let mut walk = SubmessageIter::with_wire_len(udp.payload, &header, on_wire);
        // (a loop over the inlined step, not `extend`: each submessage is moved once)
        for sm in walk.by_ref() {
            submessages.push(sm);
        }
        let submessage_errors = walk.errors();
        let discovery = if walk.carried_discovery() {
            discovery_records(
                &submessages,
                header.vendor,
                envelope.ts_last_ns,
                (discovery_fragments, decoded),
                topics,
                || std::mem::take(&mut spare.discovery),
            )
        } else {
            Vec::new()
        };
        FrameOutcome::Rtps(Datagram {
            ts_first_ns: envelope.ts_first_ns,
            frame_first: envelope.frame_first,
            ts_last_ns: envelope.ts_last_ns,
            frame_last: envelope.frame_last,
            ip_fragments: envelope.ip_fragments,
            transport: Transport::Udp,
            src: SocketAddr::new(ip.src, udp.src_port),
            dst: SocketAddr::new(ip.dst, udp.dst_port),
            pcp: envelope.pcp,
            vlan_id: envelope.vlan_id,
            src_mac: envelope.src_mac,
            udp_len: udp.length,
            truncated: envelope.truncated || udp.truncated,
            header,
            message: udp.payload,
            submessages,
            discovery,
            submessage_errors,
            topics: &*topics,
        })
    }
}

/// A TCP segment: into its stream, and every RTPS message it completed dissected.
fn process_tcp<'a>(
    tcp: &'a mut TcpReassembly,
    (discovery_fragments, decoded): (&mut DiscoveryReassembly, &mut DecodedDiscovery),
    topics: &'a mut TopicMap,
    ip: &IpPacket<'a>,
    payload: &'a [u8],
    envelope: &Envelope,
) -> FrameOutcome<'a> {
    let seg = match parse_tcp(payload) {
        Ok(s) => s,
        Err(e) => return FrameOutcome::Malformed(e),
    };
    let src = SocketAddr::new(ip.src, seg.src_port);
    let dst = SocketAddr::new(ip.dst, seg.dst_port);
    let (bytes, messages): (&'a [u8], Vec<TcpMessage>) =
        match tcp.push(src, dst, &seg, envelope.ts_last_ns, envelope.frame_last) {
            TcpPush::NotRtps => return FrameOutcome::Skipped(SkipReason::NotUdp),
            TcpPush::Bare => (
                seg.payload,
                vec![TcpMessage {
                    framing: TcpFraming::Bare,
                    logical_port: None,
                    start: 0,
                    len: seg.payload.len(),
                    framed_len: seg.payload.len(),
                    ts_first_ns: envelope.ts_first_ns,
                    frame_first: envelope.frame_first,
                    ts_last_ns: envelope.ts_last_ns,
                    frame_last: envelope.frame_last,
                    segments: 1,
                }],
            ),
            TcpPush::Stream { key, messages } => {
                let tcp: &'a TcpReassembly = tcp;
                (tcp.stream_bytes(&key), messages)
            }
        };
    let mut out = TcpSegmentOutcome::default();
    // Discovery first, for every message (it teaches the topic map), then the
    // datagrams, which all read the map as it is after this segment.
    let mut walked = Vec::with_capacity(messages.len());
    for m in &messages {
        let message = bytes
            .get(m.start..m.start.saturating_add(m.len))
            .unwrap_or_default();
        let header = match RtpsHeader::parse(message) {
            Ok(h) => h,
            Err(e) => {
                out.malformed.push(e);
                continue;
            }
        };
        let mut walk = SubmessageIter::with_wire_len(message, &header, message.len());
        let submessages: Vec<_> = walk.by_ref().collect();
        let submessage_errors = walk.errors();
        let discovery = if walk.carried_discovery() {
            discovery_records(
                &submessages,
                header.vendor,
                m.ts_last_ns,
                (discovery_fragments, decoded),
                topics,
                Vec::new,
            )
        } else {
            Vec::new()
        };
        walked.push((
            m,
            header,
            message,
            submessages,
            submessage_errors,
            discovery,
        ));
    }
    let topics: &'a TopicMap = topics;
    out.datagrams = walked
        .into_iter()
        .map(
            |(m, header, message, submessages, submessage_errors, discovery)| Datagram {
                ts_first_ns: m.ts_first_ns,
                frame_first: m.frame_first,
                ts_last_ns: m.ts_last_ns,
                frame_last: m.frame_last,
                ip_fragments: m.segments,
                transport: Transport::Tcp {
                    framing: m.framing,
                    logical_port: m.logical_port,
                },
                src,
                dst,
                pcp: envelope.pcp,
                vlan_id: envelope.vlan_id,
                src_mac: envelope.src_mac,
                udp_len: m.framed_len,
                truncated: false,
                header,
                message,
                submessages,
                discovery,
                submessage_errors,
                topics,
            },
        )
        .collect();
    FrameOutcome::Tcp(out)
}

/// The UDP length field counts its own 8-byte header.
const UDP_HEADER_LEN: usize = 8;

/// Length of RTI's ping message: magic, version, vendor id, "NDDSPING".
const RTI_PING_LEN: usize = 16;

fn is_rti_ping(udp_payload: &[u8]) -> bool {
    udp_payload.len() == RTI_PING_LEN && udp_payload.get(8..16) == Some(b"NDDSPING".as_slice())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relifetime_keeps_the_allocation() {
        let v: Vec<Result<Submessage<'static>, SubmessageError<'static>>> = Vec::with_capacity(8);
        let capacity = v.capacity();
        let w: Vec<Result<Submessage<'_>, SubmessageError<'_>>> = relifetime(v);
        assert!(w.is_empty());
        assert_eq!(w.capacity(), capacity);
    }
}
