//! DDS Security traffic: what flowed protected, per participant and per participant pair.
//!
//! A *secured message* is an RTPS message holding an SRTPS_PREFIX (the whole message
//! protected, DDS-Security 7.3.6.6) or a SEC_PREFIX (one submessage protected, 7.3.6.3). Its
//! source is the participant of its RTPS header (SRTPS keeps that header in the clear); its
//! destination the first non-zero INFO_DST in the clear, else "multicast" for a multicast
//! address, else the one participant seen sending from the destination address (else that
//! address). Counted per message: the message, whether it had an SRTPS_PREFIX, its
//! SEC_PREFIX groups (one per protected submessage the wire shows) split by the crypto
//! header's transformation kind (GCM = encrypted, GMAC = signed only), and its bytes: the
//! UDP payload (UDP length - 8; over TCP the framed message's length).
//!
//! What protected discovery hides (the topics, writers and readers behind SEC_BODY) is
//! reported as protected: the distinct transformation key ids a participant's SEC_PREFIXes
//! carry stand for its protected endpoints (each local endpoint has its own key material in
//! the builtin AES-GCM-GMAC plugin).

use std::net::IpAddr;

use super::bounded::{Aged, Bounded};
use super::window::{Tally, Windowed};
use rtps_dissect::{Datagram, GuidPrefix, SubmessageKind, Transport};

/// Secured traffic counters (totals or one window).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SecuredCounts {
    /// RTPS messages holding an SRTPS_PREFIX or a SEC_PREFIX.
    pub messages: u64,
    /// ... of which protected whole (SRTPS_PREFIX).
    pub srtps_messages: u64,
    /// SEC_PREFIX..SEC_POSTFIX groups (protected submessages visible on the wire).
    pub sec_submessages: u64,
    /// ... whose crypto header says AES-GCM (encrypted),
    pub encrypted_submessages: u64,
    /// ... or AES-GMAC (signed, content in the clear inside SEC_BODY).
    pub signed_submessages: u64,
    /// UDP payload of the secured messages (TCP: the framed message).
    pub bytes: u64,
}

impl Tally for SecuredCounts {
    fn add(&mut self, o: &Self) {
        let f = |a: &mut u64, b: u64| *a = a.saturating_add(b);
        f(&mut self.messages, o.messages);
        f(&mut self.srtps_messages, o.srtps_messages);
        f(&mut self.sec_submessages, o.sec_submessages);
        f(&mut self.encrypted_submessages, o.encrypted_submessages);
        f(&mut self.signed_submessages, o.signed_submessages);
        f(&mut self.bytes, o.bytes);
    }
}

/// Where a secured message went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Peer {
    Participant(GuidPrefix),
    Multicast,
    /// A unicast address with no single known participant.
    Address(IpAddr),
}

impl std::fmt::Display for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Peer::Participant(p) => write!(f, "{p}"),
            Peer::Multicast => f.write_str("multicast"),
            Peer::Address(ip) => write!(f, "host:{ip}"),
        }
    }
}

/// Secured traffic from one participant to one peer.
#[derive(Debug, Clone)]
pub(crate) struct SecuredPair {
    pub(crate) src: GuidPrefix,
    pub(crate) dst: Peer,
    pub(crate) first_seen_ns: u64,
    pub(crate) last_seen_ns: u64,
    pub(crate) stats: Windowed<SecuredCounts>,
}

impl Aged for SecuredPair {
    fn last_seen(&self) -> u64 {
        self.last_seen_ns
    }
}

/// Most distinct transformation key ids kept per participant.
pub(crate) const MAX_KEY_IDS: usize = 256;

/// A participant's secured traffic (what it sent).
#[derive(Debug, Clone)]
pub(crate) struct SecuredOf {
    pub(crate) stats: Windowed<SecuredCounts>,
    /// Distinct SEC_PREFIX transformation key ids: its protected endpoints.
    pub(crate) key_ids: Vec<u32>,
    /// Key ids not kept because `MAX_KEY_IDS` were already.
    pub(crate) key_ids_dropped: u64,
}

impl SecuredOf {
    pub fn new(window_ns: u64) -> Self {
        Self {
            stats: Windowed::new(window_ns),
            key_ids: Vec::new(),
            key_ids_dropped: 0,
        }
    }

    pub(crate) fn note_key(&mut self, key: u32) {
        if self.key_ids.contains(&key) {
            return;
        }
        if self.key_ids.len() < MAX_KEY_IDS {
            self.key_ids.push(key);
        } else {
            self.key_ids_dropped = self.key_ids_dropped.saturating_add(1);
        }
    }
}

/// Participants seen sending from one address (to name unicast destinations).
#[derive(Debug, Clone, Copy)]
pub(crate) struct HostEntry {
    /// The one participant seen there, `None` once several were.
    pub(crate) only: Option<GuidPrefix>,
    pub(crate) last_seen_ns: u64,
}

impl Aged for HostEntry {
    fn last_seen(&self) -> u64 {
        self.last_seen_ns
    }
}

/// What one message holds of DDS Security, gathered on the submessage walk.
#[derive(Debug, Clone, Default)]
pub(crate) struct MessageSecurity {
    pub(crate) srtps: bool,
    pub(crate) counts: SecuredCounts,
    pub(crate) dst: Option<GuidPrefix>,
    /// First key ids of its SEC_PREFIXes (a message rarely holds more than a few).
    pub(crate) keys: [u32; 4],
    pub(crate) nkeys: usize,
}

/// AES-GCM-GMAC transformation kinds (DDS-Security 9.5.2.1.1), last octet.
const GMAC_128: u8 = 1;
const GCM_128: u8 = 2;
const GMAC_256: u8 = 3;
const GCM_256: u8 = 4;

impl MessageSecurity {
    /// Look at one submessage of the walk.
    #[inline]
    pub(crate) fn note(&mut self, sm: &rtps_dissect::Submessage<'_>) {
        if self.dst.is_none() {
            self.dst = sm.ctx.dst_prefix;
        }
        match sm.kind {
            SubmessageKind::SrtpsPrefix => self.srtps = true,
            SubmessageKind::SecPrefix => {
                let c = &mut self.counts;
                c.sec_submessages = c.sec_submessages.saturating_add(1);
                // CryptoHeader: transformation_kind[4], transformation_key_id[4], session_id[4], iv[8]
                let body = sm.body_bytes();
                match body.get(3) {
                    Some(&GCM_128 | &GCM_256) => {
                        c.encrypted_submessages = c.encrypted_submessages.saturating_add(1);
                    }
                    Some(&GMAC_128 | &GMAC_256) => {
                        c.signed_submessages = c.signed_submessages.saturating_add(1);
                    }
                    _ => {}
                }
                if let Some(key) = body
                    .get(4..8)
                    .and_then(|k| <[u8; 4]>::try_from(k).ok())
                    .map(u32::from_be_bytes)
                {
                    if let Some(slot) = self.keys.get_mut(self.nkeys) {
                        *slot = key;
                        self.nkeys = self.nkeys.saturating_add(1);
                    }
                }
            }
            _ => {}
        }
    }

    pub(crate) fn is_secured(&self) -> bool {
        self.srtps || self.counts.sec_submessages > 0
    }

    /// The message's own counters, once the walk is done.
    pub fn finish(&mut self, d: &Datagram<'_>) {
        let bytes = match d.transport {
            Transport::Udp => d.udp_len.saturating_sub(8),
            Transport::Tcp { .. } => d.udp_len,
        };
        self.counts.messages = 1;
        self.counts.srtps_messages = u64::from(self.srtps);
        self.counts.bytes = bytes as u64;
    }

    pub(crate) fn keys(&self) -> &[u32] {
        self.keys.get(..self.nkeys).unwrap_or(&[])
    }
}

/// Secured traffic per participant pair, and who sends from which address.
#[derive(Debug, Clone)]
pub(crate) struct SecuredTraffic {
    pub(crate) pairs: Bounded<(GuidPrefix, Peer), SecuredPair>,
    pub(crate) hosts: Bounded<IpAddr, HostEntry>,
    /// Over the whole capture (survives evictions).
    pub(crate) total: Windowed<SecuredCounts>,
}

impl SecuredTraffic {
    pub fn new(max_pairs: usize, max_hosts: usize, window_ns: u64) -> Self {
        Self {
            pairs: Bounded::new(max_pairs),
            hosts: Bounded::new(max_hosts),
            total: Windowed::new(window_ns),
        }
    }

    /// The destination of a message sent to `dst_ip` without an INFO_DST.
    pub(crate) fn peer_at(&self, dst_ip: IpAddr) -> Peer {
        if dst_ip.is_multicast() {
            return Peer::Multicast;
        }
        match self.hosts.get(&dst_ip).and_then(|h| h.only) {
            Some(p) => Peer::Participant(p),
            None => Peer::Address(dst_ip),
        }
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn peer_names() {
        let p = GuidPrefix([1; 12]);
        assert_eq!(Peer::Participant(p).to_string(), p.to_string());
        assert_eq!(Peer::Multicast.to_string(), "multicast");
        let ip: IpAddr = "10.0.0.1".parse().unwrap();
        assert_eq!(Peer::Address(ip).to_string(), "host:10.0.0.1");
    }
}
