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
    SubmessageIter, SubmessageKind,
};
use crate::tcp::{parse_tcp, TcpFraming, TcpLimits, TcpMessage, TcpPush, TcpReassembly, TcpStats};
use crate::types::{Guid, SequenceNumber, VendorId};

/// One captured frame, as any packet source hands it over.
#[derive(Debug, Clone, Copy)]
pub struct Frame<'a> {
    /// 1-based frame number in the capture.
    pub number: u64,
    /// Capture time, nanoseconds since the epoch.
    pub ts_ns: u64,
    pub link: LinkType,
    pub data: &'a [u8],
    /// Length on the wire (may exceed `data.len()` when the snaplen cut it).
    pub orig_len: u32,
}

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

/// Why a frame carried no RTPS.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SkipReason {
    /// Not IPv4/IPv6 (ARP, LLDP, ...).
    NotIp,
    /// IP but not UDP (TCP, IGMP, ICMP that quotes no RTPS, ...).
    NotUdp,
    /// UDP whose payload is not RTPS.
    NotRtps,
    /// An ICMP error quoting an RTPS datagram: not traffic.
    IcmpQuotedRtps,
    /// RTI Connext's 16-byte `NDDSPING` probe: an RTPS header that ends after the
    /// vendor id with "NDDSPING" where the GUID prefix would be, no submessages.
    RtiPing,
}

impl SkipReason {
    pub fn name(self) -> &'static str {
        match self {
            SkipReason::NotIp => "not_ip",
            SkipReason::NotUdp => "not_udp",
            SkipReason::NotRtps => "not_rtps",
            SkipReason::IcmpQuotedRtps => "icmp_quoted_rtps",
            SkipReason::RtiPing => "rti_ping",
        }
    }
}

/// What one frame turned into. Every frame ends in exactly one of these.
#[derive(Debug)]
pub enum FrameOutcome<'a> {
    Skipped(SkipReason),
    /// An IP fragment, held until its datagram is whole.
    FragmentHeld,
    /// An IP fragment that could not belong to a valid datagram.
    FragmentDropped(IncompleteDatagram),
    /// The frame could not be parsed at some layer.
    Malformed(DissectError),
    /// A whole RTPS datagram (this frame, or the fragment that completed it).
    Rtps(Datagram<'a>),
    /// A TCP segment of an RTPS stream: the RTPS messages it completed (none when it
    /// was held for a later message, carried control messages only or repeated bytes).
    Tcp(TcpSegmentOutcome<'a>),
}

/// The RTPS messages one TCP segment completed.
#[derive(Debug, Default)]
pub struct TcpSegmentOutcome<'a> {
    pub datagrams: Vec<Datagram<'a>>,
    /// Framed messages whose RTPS header could not be read.
    pub malformed: Vec<DissectError>,
}

impl<'a> FrameOutcome<'a> {
    /// The RTPS messages this frame completed: one UDP datagram, or any number of
    /// messages of a TCP stream.
    pub fn datagrams(&self) -> &[Datagram<'a>] {
        match self {
            FrameOutcome::Rtps(d) => std::slice::from_ref(d),
            FrameOutcome::Tcp(t) => &t.datagrams,
            _ => &[],
        }
    }
}

/// How an RTPS message reached the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    Udp,
    Tcp {
        framing: TcpFraming,
        /// Fast DDS' logical port (RTCP header).
        logical_port: Option<u16>,
    },
}

/// A whole RTPS datagram with its timing, addresses and submessages.
#[derive(Debug)]
pub struct Datagram<'a> {
    /// Capture time and frame number of the datagram's first IP fragment (TCP: of
    /// the segment that brought the message's first byte).
    pub ts_first_ns: u64,
    pub frame_first: u64,
    /// Capture time and frame number of its last IP fragment (= first when
    /// unfragmented; TCP: of the segment that completed the message).
    pub ts_last_ns: u64,
    pub frame_last: u64,
    /// IP fragments it was made of (1 when unfragmented; TCP: the segments that
    /// carried the framed message).
    pub ip_fragments: u32,
    pub transport: Transport,
    pub src: SocketAddr,
    pub dst: SocketAddr,
    /// Outer 802.1Q PCP of the frame that carried the first fragment.
    pub pcp: Option<u8>,
    pub vlan_id: Option<u16>,
    /// Ethernet source address of the frame that carried the first fragment (the sending
    /// interface's, or a router's when one sits between it and the capture).
    pub src_mac: Option<[u8; 6]>,
    /// UDP length field (header included); TCP: the framed message's length
    /// (framing header included).
    pub udp_len: usize,
    /// The capture holds less than the datagram (snaplen).
    pub truncated: bool,
    pub header: RtpsHeader,
    /// The RTPS message bytes, header included.
    pub message: &'a [u8],
    pub submessages: Vec<Result<Submessage<'a>, SubmessageError<'a>>>,
    /// Discovery records decoded from this datagram (SPDP/SEDP, reassembled DATA_FRAG).
    pub discovery: Vec<DiscoveryRecord>,
    /// How many of `submessages` are errors (counted on the walk).
    submessage_errors: usize,
    topics: &'a TopicMap,
}

impl<'a> Datagram<'a> {
    /// Topic and type of a writer or reader, from the SEDP seen so far.
    pub fn topic_of(&self, guid: &Guid) -> Option<&'a TopicInfo> {
        self.topics.get(guid)
    }
}

/// Frame-level counters; every frame is counted in exactly one outcome.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct DissectorStats {
    pub frames: u64,
    pub frames_truncated: u64,
    pub skipped_not_ip: u64,
    pub skipped_not_udp: u64,
    pub skipped_not_rtps: u64,
    pub skipped_icmp_quoted_rtps: u64,
    /// RTI `NDDSPING` probes (RTPS, but no submessage and no participant).
    pub rti_pings: u64,
    pub fragments_held: u64,
    pub fragments_dropped: u64,
    pub malformed: u64,
    /// Frames that yielded an RTPS datagram (unfragmented, or the completing fragment).
    pub rtps_frames: u64,
    pub rtps_datagrams: u64,
    pub submessages: u64,
    pub submessage_errors: u64,
    pub discovery_records: u64,
    pub ip: FragmentStats,
    pub discovery_fragments: DiscoveryFragStats,
    pub endpoints_known: u64,
    pub endpoints_evicted: u64,
    /// RTPS over TCP (left out of reports while no TCP stream carried RTPS).
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "TcpStats::is_zero"))]
    pub tcp: TcpStats,
}

impl DissectorStats {
    /// Every frame is accounted for by exactly one outcome.
    pub fn reconciles(&self) -> bool {
        let outcomes = [
            self.skipped_not_ip,
            self.skipped_not_udp,
            self.skipped_not_rtps,
            self.skipped_icmp_quoted_rtps,
            self.rti_pings,
            self.fragments_held,
            self.fragments_dropped,
            self.malformed,
            self.rtps_frames,
            self.tcp.frames_held,
        ];
        outcomes.iter().fold(0u64, |a, b| a.saturating_add(*b)) == self.frames
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
        self.process_counted(frame).0
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
        let (outcome, spare) = self.process_counted(frame);
        let result = consume(&outcome);
        if let FrameOutcome::Rtps(d) = outcome {
            spare.keep(d);
        }
        result
    }

    /// One frame through every layer, counted; with the spare lists, which the outcome
    /// does not borrow.
    #[inline]
    fn process_counted<'a>(
        &'a mut self,
        frame: &Frame<'a>,
    ) -> (FrameOutcome<'a>, &'a mut SpareLists) {
        let Dissector {
            fragments,
            tcp,
            discovery_fragments,
            decoded,
            topics,
            stats,
            spare,
        } = self;
        let outcome = process_frame(
            (fragments, tcp),
            (discovery_fragments, decoded),
            topics,
            frame,
            spare,
        );
        count_outcome(stats, frame, &outcome);
        (outcome, spare)
    }
}

/// Every frame is counted in exactly one outcome.
fn count_outcome(s: &mut DissectorStats, frame: &Frame<'_>, outcome: &FrameOutcome<'_>) {
    inc(&mut s.frames);
    if u64::from(frame.orig_len) > frame.data.len() as u64 {
        inc(&mut s.frames_truncated);
    }
    match outcome {
        FrameOutcome::Skipped(SkipReason::NotIp) => inc(&mut s.skipped_not_ip),
        FrameOutcome::Skipped(SkipReason::NotUdp) => inc(&mut s.skipped_not_udp),
        FrameOutcome::Skipped(SkipReason::NotRtps) => inc(&mut s.skipped_not_rtps),
        FrameOutcome::Skipped(SkipReason::IcmpQuotedRtps) => inc(&mut s.skipped_icmp_quoted_rtps),
        FrameOutcome::Skipped(SkipReason::RtiPing) => inc(&mut s.rti_pings),
        FrameOutcome::FragmentHeld => inc(&mut s.fragments_held),
        FrameOutcome::FragmentDropped(_) => inc(&mut s.fragments_dropped),
        FrameOutcome::Malformed(_) => inc(&mut s.malformed),
        FrameOutcome::Rtps(d) => {
            inc(&mut s.rtps_frames);
            count_datagram(s, d);
        }
        FrameOutcome::Tcp(t) => {
            s.tcp.messages_malformed = s
                .tcp
                .messages_malformed
                .saturating_add(t.malformed.len() as u64);
            if !t.datagrams.is_empty() {
                inc(&mut s.rtps_frames);
                for d in &t.datagrams {
                    count_datagram(s, d);
                }
            } else if !t.malformed.is_empty() {
                inc(&mut s.malformed);
            } else {
                inc(&mut s.tcp.frames_held);
            }
        }
    }
}

fn count_datagram(s: &mut DissectorStats, d: &Datagram<'_>) {
    inc(&mut s.rtps_datagrams);
    let errors = d.submessage_errors as u64;
    let ok = (d.submessages.len() as u64).saturating_sub(errors);
    s.submessages = s.submessages.saturating_add(ok);
    s.submessage_errors = s.submessage_errors.saturating_add(errors);
    s.discovery_records = s.discovery_records.saturating_add(d.discovery.len() as u64);
}

fn process_frame<'a>(
    (fragments, tcp): (&'a mut FragmentTracker, &'a mut TcpReassembly),
    (discovery_fragments, decoded): (&mut DiscoveryReassembly, &mut DecodedDiscovery),
    topics: &'a mut TopicMap,
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
        let discovery = discovery_records(
            &submessages,
            header.vendor,
            envelope.ts_last_ns,
            (discovery_fragments, decoded),
            topics,
            || std::mem::take(&mut spare.discovery),
        );
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
        let discovery = discovery_records(
            &submessages,
            header.vendor,
            m.ts_last_ns,
            (discovery_fragments, decoded),
            topics,
            Vec::new,
        );
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

/// What a discovery DATA's record is decoded from.
struct DecodeInput<'a> {
    writer: Guid,
    sn: SequenceNumber,
    vendor: VendorId,
    status: u32,
    key: Option<Guid>,
    payload: Option<&'a [u8]>,
}

/// Discovery DATA decoded lately, by writer and SN, in a fixed number of slots (a
/// newer entry takes its slot's place): periodic SPDP announcements and SEDP repairs
/// repeat the same bytes, and cloning the record costs a fraction of decoding it again.
#[derive(Default)]
struct DecodedDiscovery {
    slots: Vec<Option<Decoded>>,
}

struct Decoded {
    writer: Guid,
    sn: SequenceNumber,
    vendor: VendorId,
    status: u32,
    key: Option<Guid>,
    payload: Option<Vec<u8>>,
    record: Option<DiscoveryRecord>,
}

impl Decoded {
    fn matches(&self, i: &DecodeInput<'_>) -> bool {
        self.writer == i.writer
            && self.sn == i.sn
            && self.vendor == i.vendor
            && self.status == i.status
            && self.key == i.key
            && self.payload.as_deref() == i.payload
    }
}

/// Slots of [`DecodedDiscovery`].
const DECODED_SLOTS: usize = 64;
/// Larger payloads are decoded every time (the cache holds at most 64 × 4 KiB).
const DECODED_MAX_PAYLOAD: usize = 4096;

impl DecodedDiscovery {
    fn get_or_decode(
        &mut self,
        input: &DecodeInput<'_>,
        decode: impl FnOnce() -> Option<DiscoveryRecord>,
    ) -> Option<DiscoveryRecord> {
        if input.payload.map_or(0, <[u8]>::len) > DECODED_MAX_PAYLOAD {
            return decode();
        }
        if self.slots.is_empty() {
            self.slots.resize_with(DECODED_SLOTS, || None);
        }
        // A fixed seed: which entries share a slot, and so what a replay costs, is the
        // same on every run (a crafted collision only costs a decode).
        let index = (std::hash::BuildHasher::hash_one(
            &foldhash::fast::FixedState::with_seed(0),
            (input.writer, input.sn),
        ) as usize)
            % DECODED_SLOTS;
        let Some(slot) = self.slots.get_mut(index) else {
            return decode();
        };
        if let Some(hit) = slot.as_ref().filter(|d| d.matches(input)) {
            return hit.record.clone();
        }
        let record = decode();
        *slot = Some(Decoded {
            writer: input.writer,
            sn: input.sn,
            vendor: input.vendor,
            status: input.status,
            key: input.key,
            payload: input.payload.map(<[u8]>::to_vec),
            record: record.clone(),
        });
        record
    }
}

/// The UDP length field counts its own 8-byte header.
const UDP_HEADER_LEN: usize = 8;

/// Length of RTI's ping message: magic, version, vendor id, "NDDSPING".
const RTI_PING_LEN: usize = 16;

fn is_rti_ping(udp_payload: &[u8]) -> bool {
    udp_payload.len() == RTI_PING_LEN && udp_payload.get(8..16) == Some(b"NDDSPING".as_slice())
}

/// The discovery records of one message's submessages; the endpoints' topics go into
/// `topics`. `list` gives the list to fill, taken when the first record comes.
#[inline]
fn discovery_records(
    submessages: &[Result<Submessage<'_>, SubmessageError<'_>>],
    vendor: VendorId,
    ts_ns: u64,
    (reassembly, decoded): (&mut DiscoveryReassembly, &mut DecodedDiscovery),
    topics: &mut TopicMap,
    list: impl FnOnce() -> Vec<DiscoveryRecord>,
) -> Vec<DiscoveryRecord> {
    let mut list = Some(list);
    let mut discovery = Vec::new();
    for sm in submessages.iter().flatten() {
        if let Some(rec) = discovery_of(sm, vendor, ts_ns, reassembly, decoded) {
            if let DiscoveryRecord::Endpoint(e) = &rec {
                topics.insert(e.guid, &e.topic, &e.type_name, e.kind);
            }
            if let Some(take) = list.take() {
                discovery = take();
            }
            discovery.push(rec);
        }
    }
    discovery
}

/// Decode the discovery content of a DATA/DATA_FRAG from a built-in discovery writer.
fn discovery_of(
    sm: &Submessage<'_>,
    vendor: VendorId,
    ts_ns: u64,
    reassembly: &mut DiscoveryReassembly,
    decoded: &mut DecodedDiscovery,
) -> Option<DiscoveryRecord> {
    if !matches!(sm.kind, SubmessageKind::Data | SubmessageKind::DataFrag) {
        return None;
    }
    // Most DATA is user data: its body is not decoded here.
    let role = sm.writer_entity()?.builtin_writer_role()?;
    let vendor = if sm.ctx.src_vendor == VendorId::default() {
        vendor
    } else {
        sm.ctx.src_vendor
    };
    match &sm.body() {
        SubmessageBody::Data {
            writer,
            writer_sn,
            inline_qos,
            payload,
            ..
        } => {
            let status = inline_qos
                .and_then(|q| q.find(PID_STATUS_INFO))
                .and_then(|p| p.status_info().ok())
                .unwrap_or(0);
            let key = inline_qos
                .and_then(|q| q.find(PID_KEY_HASH))
                .and_then(|p| p.guid().ok());
            let input = DecodeInput {
                writer: Guid::new(sm.ctx.src_prefix, *writer),
                sn: *writer_sn,
                vendor,
                status,
                key,
                payload: payload.map(|p| p.bytes),
            };
            decoded.get_or_decode(&input, || {
                let plist = payload.and_then(|p| p.parameter_list());
                decode_discovery(role, vendor, plist, status, key)
            })
        }
        SubmessageBody::DataFrag {
            writer,
            writer_sn,
            fragment_starting_num,
            fragment_size,
            sample_size,
            fragments,
            ..
        } => {
            let whole = reassembly.push(FragmentPiece {
                writer: Guid::new(sm.ctx.src_prefix, *writer),
                sn: *writer_sn,
                fragment_starting_num: *fragment_starting_num,
                fragment_size: *fragment_size,
                sample_size: *sample_size,
                data: fragments,
                ts_ns,
            })?;
            let payload = SerializedPayload::new(&whole);
            decode_discovery(role, vendor, payload.parameter_list(), 0, None)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoded_discovery_is_reused_only_for_the_same_input() {
        let mut cache = DecodedDiscovery::default();
        let gone = |status_info| {
            Some(DiscoveryRecord::Gone {
                role: crate::types::BuiltinWriter::Participant,
                guid: None,
                status_info,
            })
        };
        let input = DecodeInput {
            writer: Guid::default(),
            sn: 7,
            vendor: VendorId::default(),
            status: 1,
            key: None,
            payload: Some(&[0, 3, 0, 0]),
        };
        assert_eq!(cache.get_or_decode(&input, || gone(1)), gone(1));
        // Same input: the cached record, the decoder is not called.
        assert_eq!(cache.get_or_decode(&input, || gone(9)), gone(1));
        // Other bytes under the same writer and SN: decoded again.
        let other = DecodeInput {
            payload: Some(&[0, 3, 0, 1]),
            ..input
        };
        assert_eq!(cache.get_or_decode(&other, || gone(2)), gone(2));
    }

    #[test]
    fn relifetime_keeps_the_allocation() {
        let v: Vec<Result<Submessage<'static>, SubmessageError<'static>>> = Vec::with_capacity(8);
        let capacity = v.capacity();
        let w: Vec<Result<Submessage<'_>, SubmessageError<'_>>> = relifetime(v);
        assert!(w.is_empty());
        assert_eq!(w.capacity(), capacity);
    }
}
