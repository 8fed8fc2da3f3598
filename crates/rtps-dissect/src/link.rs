//! Link layers. Ethernet II and its 802.1Q/802.1ad tags are etherparse's
//! (`Ethernet2Slice`, `SingleVlanSlice`). etherparse has no Linux cooked v2, BSD
//! loopback (NULL/LOOP) or raw-IP entry, and its cooked v1 parser refuses packet
//! types it does not know (a capture on `any` may hold them), so those few fixed
//! headers are ours; their ethertype then goes through the same VLAN walk.

use etherparse::{Ethernet2Slice, SingleVlanSlice};

use crate::bytes::Bytes;
use crate::error::{DissectError, Layer, Result};

/// pcap/pcapng link-layer header types (LINKTYPE_* / DLT_* values) that we decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LinkType {
    /// BSD loopback: 4-byte address family in the capturing host's byte order.
    Null,
    Ethernet,
    /// Raw IP (101, and the platform aliases 12 and 14).
    Raw,
    /// OpenBSD loopback: 4-byte address family in network byte order.
    Loop,
    LinuxSll,
    LinuxSll2,
    Ipv4,
    Ipv6,
    Other(u32),
}

impl LinkType {
    pub fn from_dlt(dlt: u32) -> Self {
        match dlt {
            0 => LinkType::Null,
            1 => LinkType::Ethernet,
            12 | 14 | 101 => LinkType::Raw,
            108 => LinkType::Loop,
            113 => LinkType::LinuxSll,
            228 => LinkType::Ipv4,
            229 => LinkType::Ipv6,
            276 => LinkType::LinuxSll2,
            other => LinkType::Other(other),
        }
    }

    pub fn to_dlt(self) -> u32 {
        match self {
            LinkType::Null => 0,
            LinkType::Ethernet => 1,
            LinkType::Raw => 101,
            LinkType::Loop => 108,
            LinkType::LinuxSll => 113,
            LinkType::Ipv4 => 228,
            LinkType::Ipv6 => 229,
            LinkType::LinuxSll2 => 276,
            LinkType::Other(v) => v,
        }
    }
}

pub const ETHERTYPE_IPV4: u16 = 0x0800;
pub const ETHERTYPE_IPV6: u16 = 0x86dd;
pub const ETHERTYPE_VLAN: u16 = 0x8100;
pub const ETHERTYPE_QINQ: u16 = 0x88a8;
pub const ETHERTYPE_QINQ_OLD: u16 = 0x9100;

/// Destination and source addresses, ethertype.
const ETHERNET_HEADER_LEN: usize = 14;

/// Most VLAN tags one frame may stack before we stop looking.
const MAX_VLAN_TAGS: usize = 4;

/// What the network layer of a frame is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Network {
    Ipv4,
    Ipv6,
    Other(u16),
}

/// The link layer's contribution: the outer 802.1Q tag, and where the network layer starts.
#[derive(Debug, Clone, Copy)]
pub struct LinkInfo<'a> {
    pub network: Network,
    pub payload: &'a [u8],
    /// Priority code point of the outermost VLAN tag (the TSN priority).
    pub pcp: Option<u8>,
    pub vlan_id: Option<u16>,
    /// Ethernet source address (Ethernet frames only).
    pub src_mac: Option<[u8; 6]>,
}

impl<'a> LinkInfo<'a> {
    /// A link layer that carries no VLAN tag and no MAC address.
    fn untagged(network: Network, payload: &'a [u8]) -> Self {
        LinkInfo {
            network,
            payload,
            pcp: None,
            vlan_id: None,
            src_mac: None,
        }
    }
}

fn network_of_ethertype(t: u16) -> Network {
    match t {
        ETHERTYPE_IPV4 => Network::Ipv4,
        ETHERTYPE_IPV6 => Network::Ipv6,
        other => Network::Other(other),
    }
}

/// etherparse's length error, in our terms.
pub(crate) fn len_error(layer: Layer, e: &etherparse::err::LenError) -> DissectError {
    DissectError::Truncated {
        layer,
        offset: e.layer_start_offset,
        needed: e.required_len,
        actual: e.len,
    }
}

/// Follow an ethertype through stacked VLAN tags (etherparse's `SingleVlanSlice`);
/// the outermost tag's PCP and VLAN id are the frame's.
fn after_ethertype(mut ethertype: u16, mut payload: &[u8]) -> Result<LinkInfo<'_>> {
    let mut pcp = None;
    let mut vlan_id = None;
    let mut tags = 0usize;
    while matches!(
        ethertype,
        ETHERTYPE_VLAN | ETHERTYPE_QINQ | ETHERTYPE_QINQ_OLD
    ) {
        if tags >= MAX_VLAN_TAGS {
            return Err(DissectError::Invalid {
                layer: Layer::Vlan,
                offset: 0,
                what: "number of stacked VLAN tags",
                value: tags as u64,
            });
        }
        let tag = SingleVlanSlice::from_slice(payload).map_err(|e| len_error(Layer::Vlan, &e))?;
        if pcp.is_none() {
            pcp = Some(tag.priority_code_point().value());
            vlan_id = Some(tag.vlan_identifier().value());
        }
        ethertype = tag.ether_type().0;
        payload = tag.payload_slice();
        tags = tags.saturating_add(1);
    }
    Ok(LinkInfo {
        network: network_of_ethertype(ethertype),
        payload,
        pcp,
        vlan_id,
        src_mac: None,
    })
}

/// BSD address families that mean IPv6 (Linux 10, BSDs 24/28/30).
fn network_of_family(family: u32) -> Network {
    match family {
        2 => Network::Ipv4,
        10 | 24 | 28 | 30 => Network::Ipv6,
        other => Network::Other(u16::try_from(other).unwrap_or(u16::MAX)),
    }
}

/// Raw IP: the version nibble says which.
fn raw_ip(data: &[u8]) -> Result<LinkInfo<'_>> {
    let b = Bytes::big(data, Layer::Link);
    let version = b.u8(0)? >> 4;
    let network = match version {
        4 => Network::Ipv4,
        6 => Network::Ipv6,
        v => Network::Other(u16::from(v)),
    };
    Ok(LinkInfo::untagged(network, data))
}

/// Decode the link layer of one captured frame.
pub fn parse_link(link: LinkType, data: &[u8]) -> Result<LinkInfo<'_>> {
    let b = Bytes::big(data, Layer::Link);
    match link {
        LinkType::Ethernet => {
            // Its fixed 14 bytes read in place (what etherparse's `Ethernet2Slice` reads,
            // at a fraction of the cost per frame); a shorter frame gets its error.
            let Some((header, payload)) = data.split_first_chunk::<ETHERNET_HEADER_LEN>() else {
                let e = Ethernet2Slice::from_slice_without_fcs(data)
                    .err()
                    .map(|e| len_error(Layer::Link, &e));
                return Err(e.unwrap_or(DissectError::Truncated {
                    layer: Layer::Link,
                    offset: 0,
                    needed: ETHERNET_HEADER_LEN,
                    actual: data.len(),
                }));
            };
            let [_, _, _, _, _, _, s0, s1, s2, s3, s4, s5, t0, t1] = *header;
            let info = after_ethertype(u16::from_be_bytes([t0, t1]), payload)?;
            Ok(LinkInfo {
                src_mac: Some([s0, s1, s2, s3, s4, s5]),
                ..info
            })
        }
        LinkType::LinuxSll => {
            let protocol = b.be_u16(14)?;
            after_ethertype(protocol, b.rest(16)?)
        }
        LinkType::LinuxSll2 => {
            let protocol = b.be_u16(0)?;
            after_ethertype(protocol, b.rest(20)?)
        }
        LinkType::Null => {
            // Host byte order of the capturing machine: a family value fits in the
            // low bytes, so whichever order gives a small number is the right one.
            let raw = b.array::<4>(0)?;
            let le = u32::from_le_bytes(raw);
            let be = u32::from_be_bytes(raw);
            let family = le.min(be);
            Ok(LinkInfo::untagged(network_of_family(family), b.rest(4)?))
        }
        LinkType::Loop => {
            let family = b.be_u32(0)?;
            Ok(LinkInfo::untagged(network_of_family(family), b.rest(4)?))
        }
        LinkType::Raw => raw_ip(data),
        LinkType::Ipv4 => Ok(LinkInfo::untagged(Network::Ipv4, data)),
        LinkType::Ipv6 => Ok(LinkInfo::untagged(Network::Ipv6, data)),
        LinkType::Other(v) => Err(DissectError::UnsupportedLinkType(v)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ethernet_with_vlan_keeps_outer_pcp() {
        let frame = hex::decode(concat!(
            "ffffffffffff",
            "020000000001",
            "8100",
            "a00a", // PCP 5, VID 10
            "8100",
            "4014", // inner tag PCP 2, VID 20
            "0800",
            "45"
        ))
        .unwrap();
        let li = parse_link(LinkType::Ethernet, &frame).unwrap();
        assert_eq!(li.pcp, Some(5));
        assert_eq!(li.vlan_id, Some(10));
        assert_eq!(li.network, Network::Ipv4);
        assert_eq!(li.payload, &[0x45]);
    }

    #[test]
    fn null_loopback_both_byte_orders() {
        let le = [2u8, 0, 0, 0, 0x45];
        let be = [0u8, 0, 0, 30, 0x60];
        assert_eq!(
            parse_link(LinkType::Null, &le).unwrap().network,
            Network::Ipv4
        );
        assert_eq!(
            parse_link(LinkType::Null, &be).unwrap().network,
            Network::Ipv6
        );
    }

    #[test]
    fn cooked_v1_and_v2() {
        let mut v1 = vec![0u8; 16];
        v1[14] = 0x08;
        v1.push(0x45);
        assert_eq!(
            parse_link(LinkType::LinuxSll, &v1).unwrap().network,
            Network::Ipv4
        );
        let mut v2 = vec![0u8; 20];
        v2[0] = 0x86;
        v2[1] = 0xdd;
        v2.push(0x60);
        assert_eq!(
            parse_link(LinkType::LinuxSll2, &v2).unwrap().network,
            Network::Ipv6
        );
    }

    #[test]
    fn ethernet_read_in_place_agrees_with_etherparse() {
        for len in 0..40usize {
            for ethertype in [0x0800u16, 0x86dd, 0x8100, 0x88a8, 0x0806] {
                let mut frame: Vec<u8> = (0..len).map(|i| i as u8 ^ 0x5a).collect();
                if let Some(t) = frame.get_mut(12..14) {
                    t.copy_from_slice(&ethertype.to_be_bytes());
                }
                let ours = parse_link(LinkType::Ethernet, &frame);
                let theirs = Ethernet2Slice::from_slice_without_fcs(&frame)
                    .map_err(|e| len_error(Layer::Link, &e))
                    .and_then(|eth| {
                        let info = after_ethertype(eth.ether_type().0, eth.payload_slice())?;
                        Ok(LinkInfo {
                            src_mac: Some(eth.source()),
                            ..info
                        })
                    });
                assert_eq!(format!("{ours:?}"), format!("{theirs:?}"), "{frame:02x?}");
            }
        }
    }

    #[test]
    fn truncated_ethernet_is_an_error_not_a_panic() {
        let err = parse_link(LinkType::Ethernet, &[0u8; 5]).unwrap_err();
        assert_eq!(err.layer(), Layer::Link);
    }

    #[test]
    fn too_many_vlan_tags_rejected() {
        let mut frame = vec![0u8; 12];
        for _ in 0..6 {
            frame.extend_from_slice(&[0x81, 0x00, 0x00, 0x01]);
        }
        frame.extend_from_slice(&[0x08, 0x00]);
        assert!(parse_link(LinkType::Ethernet, &frame).is_err());
    }
}
