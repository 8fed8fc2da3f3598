//! IPv4, IPv6 (with its fragment extension header), UDP, and the ICMP errors
//! that quote them.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::bytes::Bytes;
use crate::error::{DissectError, Layer, Result};

pub const PROTO_ICMP: u8 = 1;
pub const PROTO_UDP: u8 = 17;
pub const PROTO_ICMPV6: u8 = 58;

const IPV6_HOP_BY_HOP: u8 = 0;
const IPV6_ROUTING: u8 = 43;
const IPV6_FRAGMENT: u8 = 44;
const IPV6_DEST_OPTS: u8 = 60;
const IPV6_HEADER_LEN: usize = 40;
/// Extension headers followed before we give up on a packet.
const MAX_IPV6_EXTENSIONS: usize = 8;

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
#[derive(Debug, Clone, Copy)]
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

fn ipv4_addr(a: [u8; 4]) -> IpAddr {
    IpAddr::V4(Ipv4Addr::from(a))
}

/// Decode an IPv4 header. The payload is cut to the total length (Ethernet padding
/// removed) or to what was captured, whichever is shorter.
pub fn parse_ipv4(data: &[u8]) -> Result<IpPacket<'_>> {
    let b = Bytes::big(data, Layer::Ipv4);
    let vihl = b.u8(0)?;
    if vihl >> 4 != 4 {
        return Err(DissectError::Invalid {
            layer: Layer::Ipv4,
            offset: 0,
            what: "version",
            value: u64::from(vihl >> 4),
        });
    }
    let ihl = usize::from(vihl & 0x0f).saturating_mul(4);
    if ihl < 20 {
        return Err(DissectError::Invalid {
            layer: Layer::Ipv4,
            offset: 0,
            what: "header length",
            value: ihl as u64,
        });
    }
    let total_len = usize::from(b.be_u16(2)?);
    let id = b.be_u16(4)?;
    let flags_frag = b.be_u16(6)?;
    let protocol = b.u8(9)?;
    let src = ipv4_addr(b.array::<4>(12)?);
    let dst = ipv4_addr(b.array::<4>(16)?);
    // Options must be present in full even when the payload is cut short.
    b.slice(0, ihl)?;
    if total_len < ihl {
        return Err(DissectError::BadLength {
            layer: Layer::Ipv4,
            offset: 2,
            claimed: total_len,
            available: data.len(),
        });
    }
    let end = total_len.min(data.len());
    let payload = data.get(ihl..end).unwrap_or_default();
    let more_fragments = flags_frag & 0x2000 != 0;
    let frag_offset = usize::from(flags_frag & 0x1fff).saturating_mul(8);
    let fragment = (more_fragments || frag_offset != 0).then_some(FragmentInfo {
        id: u32::from(id),
        offset: frag_offset,
        more_fragments,
    });
    Ok(IpPacket {
        src,
        dst,
        protocol,
        fragment,
        payload,
        truncated: total_len > data.len(),
    })
}

/// Decode an IPv6 header and its extension headers up to the upper protocol.
pub fn parse_ipv6(data: &[u8]) -> Result<IpPacket<'_>> {
    let b = Bytes::big(data, Layer::Ipv6);
    let version = b.u8(0)? >> 4;
    if version != 6 {
        return Err(DissectError::Invalid {
            layer: Layer::Ipv6,
            offset: 0,
            what: "version",
            value: u64::from(version),
        });
    }
    let payload_len = usize::from(b.be_u16(4)?);
    let mut next = b.u8(6)?;
    let src = IpAddr::V6(Ipv6Addr::from(b.array::<16>(8)?));
    let dst = IpAddr::V6(Ipv6Addr::from(b.array::<16>(24)?));
    let claimed_end = IPV6_HEADER_LEN.saturating_add(payload_len);
    let end = claimed_end.min(data.len());
    let mut offset = IPV6_HEADER_LEN;
    let mut fragment = None;
    for _ in 0..MAX_IPV6_EXTENSIONS {
        match next {
            IPV6_HOP_BY_HOP | IPV6_ROUTING | IPV6_DEST_OPTS => {
                next = b.u8(offset)?;
                let len = usize::from(b.u8(offset.saturating_add(1))?)
                    .saturating_add(1)
                    .saturating_mul(8);
                offset = offset.saturating_add(len);
            }
            IPV6_FRAGMENT => {
                next = b.u8(offset)?;
                let off_flags = b.be_u16(offset.saturating_add(2))?;
                let id = b.be_u32(offset.saturating_add(4))?;
                fragment = Some(FragmentInfo {
                    id,
                    offset: usize::from(off_flags >> 3).saturating_mul(8),
                    more_fragments: off_flags & 1 != 0,
                });
                offset = offset.saturating_add(8);
            }
            _ => break,
        }
    }
    // A fragment with offset 0 and M=0 is an "atomic fragment": a whole datagram.
    let fragment = fragment.filter(|f| f.more_fragments || f.offset != 0);
    if offset > end {
        return Err(DissectError::BadLength {
            layer: Layer::Ipv6,
            offset,
            claimed: offset,
            available: end,
        });
    }
    Ok(IpPacket {
        src,
        dst,
        protocol: next,
        fragment,
        payload: data.get(offset..end).unwrap_or_default(),
        truncated: claimed_end > data.len(),
    })
}

/// A UDP datagram's ports and payload.
#[derive(Debug, Clone, Copy)]
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
    let b = Bytes::big(data, Layer::Udp);
    let src_port = b.be_u16(0)?;
    let dst_port = b.be_u16(2)?;
    let length = usize::from(b.be_u16(4)?);
    if length < 8 && length != 0 {
        return Err(DissectError::Invalid {
            layer: Layer::Udp,
            offset: 4,
            what: "length",
            value: length as u64,
        });
    }
    // Length 0 appears with IPv6 jumbograms: the IP payload length rules.
    let end = if length == 0 {
        data.len()
    } else {
        length.min(data.len())
    };
    Ok(UdpDatagram {
        src_port,
        dst_port,
        length,
        payload: data.get(8..end).unwrap_or_default(),
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
        p.extend_from_slice(&[IPV6_FRAGMENT, 64]);
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
    fn udp_lengths() {
        let d = [0x1c, 0xe8, 0x1c, 0xe9, 0, 12, 0, 0, 1, 2, 3, 4, 5];
        let u = parse_udp(&d).unwrap();
        assert_eq!((u.src_port, u.dst_port), (7400, 7401));
        assert_eq!(u.payload, &[1, 2, 3, 4]);
        let bad = [0, 1, 0, 2, 0, 3, 0, 0];
        assert!(parse_udp(&bad).is_err());
    }
}
