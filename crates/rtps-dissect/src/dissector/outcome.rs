//! What the dissector hands back: the frame it is given, what each frame turned into,
//! the datagrams with their submessages, and the frame-level counters.

use super::*;

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
    pub(super) submessage_errors: usize,
    pub(super) topics: &'a TopicMap,
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

/// Every frame is counted in exactly one outcome.
pub(super) fn count_outcome(s: &mut DissectorStats, frame: &Frame<'_>, outcome: &FrameOutcome<'_>) {
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
