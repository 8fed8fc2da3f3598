//! IPv4, IPv6 (extension headers included) and UDP through etherparse's lax
//! slices (`LaxIpv4Slice`, `LaxIpv6Slice`, `UdpSlice::from_slice_lax`: a frame cut
//! by the snaplen still yields what it holds), reduced to what the dissector needs;
//! and the ICMP errors that quote them.

use std::net::{IpAddr, Ipv4Addr};

use etherparse::err::{ip_auth, ipv4, ipv6, ipv6_exts};
use etherparse::{Ipv6ExtensionSlice, LaxIpv4Slice, LaxIpv6Slice, UdpSlice};

use crate::bytes::Bytes;
use crate::error::{DissectError, Layer, Result};
use crate::link::len_error;

pub const PROTO_ICMP: u8 = 1;
pub const PROTO_TCP: u8 = 6;
pub const PROTO_UDP: u8 = 17;
pub const PROTO_ICMPV6: u8 = 58;

const UDP_HEADER_LEN: usize = 8;
const IPV6_HEADER_LEN: usize = 40;

/// Where a packet sits in a fragmented datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FragmentInfo {
    /// Identification (IPv4: 16 bits, IPv6 fragment header: 32 bits).
    pub id: u32,
    /// Byte offset of this fragment's payload in the datagram.
    pub offset: usize,
    pub more_fragments: bool,
}

/// One IP packet: addresses, upper protocol, and its payload (possibly a fragment).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpPacket<'a> {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub protocol: u8,
    /// `Some` only when the packet is a fragment of a larger datagram.
    pub fragment: Option<FragmentInfo>,
    pub payload: &'a [u8],
    /// The IP length fields claim more than the capture holds (snaplen).
    pub truncated: bool,
}

fn ipv4_error(e: ipv4::HeaderSliceError) -> DissectError {
    match e {
        ipv4::HeaderSliceError::Len(l) => len_error(Layer::Ipv4, &l),
        ipv4::HeaderSliceError::Content(c) => match c {
            ipv4::HeaderError::UnexpectedVersion { version_number } => DissectError::Invalid {
                layer: Layer::Ipv4,
                offset: 0,
                what: "version",
                value: u64::from(version_number),
            },
            ipv4::HeaderError::HeaderLengthSmallerThanHeader { ihl } => DissectError::Invalid {
                layer: Layer::Ipv4,
                offset: 0,
                what: "header length",
                value: u64::from(ihl).saturating_mul(4),
            },
        },
    }
}

fn ipv6_error(e: ipv6::HeaderSliceError) -> DissectError {
    match e {
        ipv6::HeaderSliceError::Len(l) => len_error(Layer::Ipv6, &l),
        ipv6::HeaderSliceError::Content(ipv6::HeaderError::UnexpectedVersion {
            version_number,
        }) => DissectError::Invalid {
            layer: Layer::Ipv6,
            offset: 0,
            what: "version",
            value: u64::from(version_number),
        },
    }
}

/// Decode an IPv4 header. The payload is cut to the total length (Ethernet padding
/// removed) or to what was captured, whichever is shorter.
pub fn parse_ipv4(data: &[u8]) -> Result<IpPacket<'_>> {
    if let Some(ip) = plain_ipv4(data) {
        return Ok(ip);
    }
    parse_ipv4_lax(data)
}

/// IPv4 header length without options (IHL 5).
const IPV4_PLAIN_HEADER_LEN: usize = 20;
/// IP protocol number of the authentication header, which etherparse steps over.
const PROTO_AUTH: u8 = 51;

/// Nearly every captured IPv4 packet: no options, not a fragment, no authentication
/// header, wholly captured. Read here in a few loads; etherparse's general reading of
/// it (its slices and their checks) was a tenth of the dissector's instructions per
/// small frame. Anything else is `None` and goes the general way, which gives this
/// packet the same reading (the tests compare both).
fn plain_ipv4(data: &[u8]) -> Option<IpPacket<'_>> {
    let header: &[u8; IPV4_PLAIN_HEADER_LEN] =
        data.get(..IPV4_PLAIN_HEADER_LEN)?.try_into().ok()?;
    let [version_ihl, _, len_hi, len_lo, _, _, flags_offset_hi, offset_lo, _, protocol, _, _, s0, s1, s2, s3, d0, d1, d2, d3] =
        *header;
    // Version 4, IHL 5; neither more fragments (0x20) nor a fragment offset.
    if version_ihl != 0x45
        || flags_offset_hi & 0x3f != 0
        || offset_lo != 0
        || protocol == PROTO_AUTH
    {
        return None;
    }
    let total_len = usize::from(u16::from_be_bytes([len_hi, len_lo]));
    // `None` too when the total length is shorter than the header or longer than the capture.
    let payload = data.get(IPV4_PLAIN_HEADER_LEN..total_len)?;
    Some(IpPacket {
        src: IpAddr::V4(Ipv4Addr::new(s0, s1, s2, s3)),
        dst: IpAddr::V4(Ipv4Addr::new(d0, d1, d2, d3)),
        protocol,
        fragment: None,
        payload,
        truncated: false,
    })
}

/// Any IPv4 packet, through etherparse's lax slice.
fn parse_ipv4_lax(data: &[u8]) -> Result<IpPacket<'_>> {
    let (ip, auth_error) = LaxIpv4Slice::from_slice(data).map_err(ipv4_error)?;
    let header = ip.header();
    let header_len = header.slice().len();
    let total_len = usize::from(header.total_len());
    if total_len < header_len {
        return Err(DissectError::BadLength {
            layer: Layer::Ipv4,
            offset: 2,
            claimed: total_len,
            available: data.len(),
        });
    }
    if let Some(e) = auth_error {
        return Err(match e {
            ip_auth::HeaderSliceError::Len(l) => len_error(Layer::Ipv4, &l),
            ip_auth::HeaderSliceError::Content(_) => DissectError::Invalid {
                layer: Layer::Ipv4,
                offset: header_len,
                what: "authentication header length",
                value: 0,
            },
        });
    }
    let payload = ip.payload();
    let offset = usize::from(header.fragments_offset().value()).saturating_mul(8);
    let fragment = payload.fragmented.then_some(FragmentInfo {
        id: u32::from(header.identification()),
        offset,
        more_fragments: header.more_fragments(),
    });
    Ok(IpPacket {
        src: IpAddr::V4(header.source_addr()),
        dst: IpAddr::V4(header.destination_addr()),
        protocol: payload.ip_number.0,
        fragment,
        payload: payload.payload,
        truncated: payload.incomplete,
    })
}

/// Decode an IPv6 header and its extension headers up to the upper protocol.
pub fn parse_ipv6(data: &[u8]) -> Result<IpPacket<'_>> {
    let (ip, ext_error) = LaxIpv6Slice::from_slice(data).map_err(ipv6_error)?;
    if let Some((e, _)) = ext_error {
        return Err(match e {
            ipv6_exts::HeaderSliceError::Len(l) => len_error(Layer::Ipv6, &l),
            ipv6_exts::HeaderSliceError::Content(_) => DissectError::Invalid {
                layer: Layer::Ipv6,
                offset: IPV6_HEADER_LEN,
                what: "extension header order",
                value: 0,
            },
        });
    }
    let header = ip.header();
    let payload = ip.payload();
    // etherparse says whether a fragment header fragments the payload (an "atomic
    // fragment", offset 0 and M=0, is a whole datagram); the id and offset are read
    // from that header.
    let fragment = if payload.fragmented {
        ip.extensions()
            .clone()
            .into_iter()
            .find_map(|ext| match ext {
                Ipv6ExtensionSlice::Fragment(f) if f.is_fragmenting_payload() => {
                    Some(FragmentInfo {
                        id: f.identification(),
                        offset: usize::from(f.fragment_offset().value()).saturating_mul(8),
                        more_fragments: f.more_fragments(),
                    })
                }
                _ => None,
            })
    } else {
        None
    };
    Ok(IpPacket {
        src: IpAddr::V6(header.source_addr()),
        dst: IpAddr::V6(header.destination_addr()),
        protocol: payload.ip_number.0,
        fragment,
        payload: payload.payload,
        truncated: payload.incomplete,
    })
}

/// A UDP datagram's ports and payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpDatagram<'a> {
    pub src_port: u16,
    pub dst_port: u16,
    /// The UDP length field (header included).
    pub length: usize,
    pub payload: &'a [u8],
    /// The length field claims more than is present (snaplen, lost fragment).
    pub truncated: bool,
}

pub fn parse_udp(data: &[u8]) -> Result<UdpDatagram<'_>> {
    if let Some(udp) = plain_udp(data) {
        return Ok(udp);
    }
    parse_udp_lax(data)
}

/// A UDP datagram wholly captured, its length field at least its header: read in a
/// few loads (etherparse's reading of the common case costs a few times that; the
/// tests compare both). Anything else is `None` and goes the general way.
fn plain_udp(data: &[u8]) -> Option<UdpDatagram<'_>> {
    let header: &[u8; UDP_HEADER_LEN] = data.get(..UDP_HEADER_LEN)?.try_into().ok()?;
    let [src_hi, src_lo, dst_hi, dst_lo, len_hi, len_lo, _, _] = *header;
    let length = usize::from(u16::from_be_bytes([len_hi, len_lo]));
    let payload = data.get(UDP_HEADER_LEN..length)?;
    Some(UdpDatagram {
        src_port: u16::from_be_bytes([src_hi, src_lo]),
        dst_port: u16::from_be_bytes([dst_hi, dst_lo]),
        length,
        payload,
        truncated: false,
    })
}

/// Any UDP datagram, through etherparse's lax slice.
fn parse_udp_lax(data: &[u8]) -> Result<UdpDatagram<'_>> {
    let udp = UdpSlice::from_slice_lax(data).map_err(|e| len_error(Layer::Udp, &e))?;
    let length = usize::from(udp.length());
    if length < UDP_HEADER_LEN && length != 0 {
        return Err(DissectError::Invalid {
            layer: Layer::Udp,
            offset: 4,
            what: "length",
            value: length as u64,
        });
    }
    // Length 0 appears with IPv6 jumbograms: the IP payload length rules (etherparse
    // then takes the whole slice, as it does when the capture holds less than claimed).
    Ok(UdpDatagram {
        src_port: udp.source_port(),
        dst_port: udp.destination_port(),
        length,
        payload: udp.payload(),
        truncated: length > data.len(),
    })
}

/// True when an ICMP/ICMPv6 error message quotes a UDP datagram whose payload starts
/// like RTPS: such quoted RTPS is not traffic.
pub fn icmp_quotes_rtps(protocol: u8, icmp: &[u8]) -> bool {
    let b = Bytes::big(icmp, Layer::Ipv4);
    let Ok(icmp_type) = b.u8(0) else { return false };
    let is_error = match protocol {
        PROTO_ICMP => matches!(icmp_type, 3 | 4 | 5 | 11 | 12),
        PROTO_ICMPV6 => icmp_type < 128,
        _ => false,
    };
    if !is_error {
        return false;
    }
    let Some(quoted) = icmp.get(8..) else {
        return false;
    };
    let inner = match protocol {
        PROTO_ICMP => parse_ipv4(quoted),
        _ => parse_ipv6(quoted),
    };
    let Ok(inner) = inner else { return false };
    if inner.protocol != PROTO_UDP {
        return false;
    }
    inner
        .payload
        .get(8..12)
        .is_some_and(crate::rtps::is_rtps_magic)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ipv4_header(total_len: u16, flags_frag: u16, proto: u8) -> Vec<u8> {
        let mut h = vec![0x45, 0];
        h.extend_from_slice(&total_len.to_be_bytes());
        h.extend_from_slice(&0x1234u16.to_be_bytes());
        h.extend_from_slice(&flags_frag.to_be_bytes());
        h.extend_from_slice(&[64, proto, 0, 0]);
        h.extend_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
        h
    }

    #[test]
    fn ipv4_fragment_fields() {
        let mut p = ipv4_header(28, 0x2000 | 185, PROTO_UDP);
        p.extend_from_slice(&[0u8; 8]);
        p.extend_from_slice(&[0xee; 4]); // ethernet padding beyond total length
        let ip = parse_ipv4(&p).unwrap();
        let f = ip.fragment.unwrap();
        assert_eq!(f.id, 0x1234);
        assert_eq!(f.offset, 1480);
        assert!(f.more_fragments);
        assert_eq!(ip.payload.len(), 8);
        assert!(!ip.truncated);
    }

    #[test]
    fn ipv4_unfragmented_and_truncated() {
        let mut p = ipv4_header(100, 0x4000, PROTO_UDP); // DF
        p.extend_from_slice(&[0u8; 10]);
        let ip = parse_ipv4(&p).unwrap();
        assert!(ip.fragment.is_none());
        assert!(ip.truncated);
        assert_eq!(ip.payload.len(), 10);
    }

    #[test]
    fn ipv4_bad_ihl() {
        let mut p = ipv4_header(20, 0, PROTO_UDP);
        p[0] = 0x42;
        assert!(parse_ipv4(&p).is_err());
    }

    #[test]
    fn ipv6_with_fragment_header() {
        let mut p = vec![0x60, 0, 0, 0];
        p.extend_from_slice(&16u16.to_be_bytes());
        p.extend_from_slice(&[44, 64]); // next header: fragment
        p.extend_from_slice(&[0u8; 32]);
        // fragment header: next UDP, offset 0, M=1, id 7
        p.extend_from_slice(&[PROTO_UDP, 0, 0, 1, 0, 0, 0, 7]);
        p.extend_from_slice(&[0u8; 8]);
        let ip = parse_ipv6(&p).unwrap();
        assert_eq!(ip.protocol, PROTO_UDP);
        let f = ip.fragment.unwrap();
        assert_eq!(f.id, 7);
        assert!(f.more_fragments);
        assert_eq!(ip.payload.len(), 8);
    }

    #[test]
    fn ipv6_hop_by_hop_then_fragment_and_atomic_fragment() {
        let build = |off_flags: [u8; 2]| {
            let mut p = vec![0x60, 0, 0, 0];
            p.extend_from_slice(&32u16.to_be_bytes());
            p.extend_from_slice(&[0, 64]); // next header: hop-by-hop
            p.extend_from_slice(&[0u8; 32]);
            p.extend_from_slice(&[44, 0, 1, 4, 0, 0, 0, 0]); // hop-by-hop, PadN
            p.extend_from_slice(&[PROTO_UDP, 0, off_flags[0], off_flags[1], 0, 0, 0, 9]);
            p.extend_from_slice(&[0u8; 16]);
            p
        };
        let frag = build([0x00, 0xa1]); // offset 20 units = 160 bytes, M=1
        let ip = parse_ipv6(&frag).unwrap();
        assert_eq!(ip.protocol, PROTO_UDP);
        let f = ip.fragment.unwrap();
        assert_eq!((f.id, f.offset, f.more_fragments), (9, 160, true));
        assert_eq!(ip.payload.len(), 16);
        let atomic = build([0, 0]);
        let ip = parse_ipv6(&atomic).unwrap();
        assert!(ip.fragment.is_none());
        assert_eq!(ip.payload.len(), 16);
    }

    /// The plain reading gives what etherparse's gives, over every header byte's
    /// interesting values and lengths around the capture's.
    #[test]
    fn plain_ipv4_reads_as_etherparse_does() {
        let mut plain = 0;
        for version_ihl in [0x45u8, 0x46, 0x44, 0x65] {
            for flags_frag in [0u16, 0x4000, 0x8000, 0x2000, 0x0001, 0x1fff, 0x4001] {
                for proto in [PROTO_UDP, PROTO_TCP, PROTO_AUTH, 0] {
                    for total_len in [0u16, 19, 20, 21, 27, 28, 29, 40, 0xffff] {
                        for captured in [0usize, 19, 20, 24, 28, 32] {
                            let mut p = ipv4_header(total_len, flags_frag, proto);
                            p[0] = version_ihl;
                            p.resize(captured.max(20), 0xab);
                            p.truncate(captured);
                            let fast = plain_ipv4(&p);
                            if let Some(ip) = fast {
                                plain += 1;
                                assert_eq!(Ok(ip), parse_ipv4_lax(&p), "{p:02x?}");
                            }
                            assert_eq!(parse_ipv4(&p), parse_ipv4_lax(&p), "{p:02x?}");
                        }
                    }
                }
            }
        }
        assert!(plain > 0);
    }

    #[test]
    fn plain_udp_reads_as_etherparse_does() {
        let mut plain = 0;
        for length in [0u16, 1, 7, 8, 9, 12, 13, 14, 0xffff] {
            for captured in [0usize, 7, 8, 12, 13, 20] {
                let mut d = vec![0x1c, 0xe8, 0x1c, 0xe9];
                d.extend_from_slice(&length.to_be_bytes());
                d.extend_from_slice(&[0, 0]);
                d.resize(captured.max(8), 0xcd);
                d.truncate(captured);
                if let Some(u) = plain_udp(&d) {
                    plain += 1;
                    assert_eq!(Ok(u), parse_udp_lax(&d), "{d:02x?}");
                }
                assert_eq!(parse_udp(&d), parse_udp_lax(&d), "{d:02x?}");
            }
        }
        assert!(plain > 0);
    }

    #[test]
    fn udp_lengths() {
        let d = [0x1c, 0xe8, 0x1c, 0xe9, 0, 12, 0, 0, 1, 2, 3, 4, 5];
        let u = parse_udp(&d).unwrap();
        assert_eq!((u.src_port, u.dst_port), (7400, 7401));
        assert_eq!(u.payload, &[1, 2, 3, 4]);
        let bad = [0, 1, 0, 2, 0, 3, 0, 0];
        assert!(parse_udp(&bad).is_err());
    }
}
