//! What the captures saw: participants, their addresses and their samples' Δ per window.

use std::net::IpAddr;

use super::{Cell, HostRule, Participant, Realm, Seen, MAX_ANNOUNCERS};

impl HostRule {
    fn new_node(&mut self) -> Option<u32> {
        if self.parent.len() >= self.cfg.max_nodes {
            self.stats.nodes_not_remembered = self.stats.nodes_not_remembered.saturating_add(1);
            return None;
        }
        self.parent.push()
    }

    fn participant_node(&mut self, p: Participant) -> Option<u32> {
        if let Some(&n) = self.participants.get(&p) {
            return Some(n);
        }
        let n = self.new_node()?;
        self.participants.insert(p, n);
        Some(n)
    }

    fn ip_node(&mut self, ip: (Realm, IpAddr)) -> Option<u32> {
        if let Some(&n) = self.ips.get(&ip) {
            return Some(n);
        }
        let n = self.new_node()?;
        self.ips.insert(ip, n);
        for p in self.announced.remove(&ip).unwrap_or_default() {
            self.parent.union(n, p);
        }
        Some(n)
    }

    fn mac_node(&mut self, mac: (Realm, [u8; 6])) -> Option<u32> {
        if let Some(&n) = self.macs.get(&mac) {
            return Some(n);
        }
        let n = self.new_node()?;
        self.macs.insert(mac, n);
        Some(n)
    }

    /// A participant's SPDP announcement: the unicast addresses of its locators (metatraffic
    /// and default) are its host's. An address ties the participant to the others that use
    /// it only once a datagram came from it, so an address every host has but none sends
    /// from (a container bridge's, say) ties nothing. Addresses count within `realm`.
    pub fn announce(&mut self, participant: Participant, realm: Realm, addrs: &[IpAddr]) {
        let Some(node) = self.participant_node(participant) else {
            return;
        };
        for &addr in addrs {
            if addr.is_unspecified() || addr.is_loopback() || addr.is_multicast() {
                continue;
            }
            let ip = (realm, addr);
            if let Some(&n) = self.ips.get(&ip) {
                self.parent.union(node, n);
                continue;
            }
            if !self.announced.contains_key(&ip) && self.announced.len() >= self.cfg.max_nodes {
                self.stats.nodes_not_remembered = self.stats.nodes_not_remembered.saturating_add(1);
                continue;
            }
            let waiting = self.announced.entry(ip).or_default();
            if !waiting.contains(&node) && waiting.len() < MAX_ANNOUNCERS {
                waiting.push(node);
            }
        }
    }

    /// Forget the evidence of windows before `before(X)`, on capture X's own clock (a
    /// rolling view for the live join: one horizon for all captures would drop every cell
    /// of a capture whose clock is behind the others' by more than the horizon).
    pub fn forget_before(&mut self, before: impl Fn(usize) -> i64) {
        let window = self.cfg.window_ns;
        self.cells
            .retain(|k, _| k.2 >= before(usize::from(k.0)).div_euclid(window));
    }

    /// Forget what capture `c` contributed (its cells and its counts of samples seen and
    /// seen first), so that its index can stand for another capture: decisions and offsets
    /// then come from the other captures' evidence alone.
    pub fn forget_capture(&mut self, c: usize) {
        if let Ok(c16) = u16::try_from(c) {
            self.cells.retain(|k, _| k.0 != c16 && k.1 != c16);
        }
        for counts in [&mut self.first, &mut self.seen_by] {
            for v in counts.values_mut() {
                if let Some(x) = v.get_mut(c) {
                    *x = 0;
                }
            }
            counts.retain(|_, v| v.iter().any(|&x| x > 0));
        }
    }

    /// Add what the captures saw of one sample.
    pub fn observe(&mut self, s: &Seen<'_>) {
        self.stats.samples = self.stats.samples.saturating_add(1);
        let Some(node) = self.participant_node(s.participant) else {
            return;
        };
        let n = self.cfg.captures;
        // The address the participant sent from, as its own capture saw it: every capture
        // sees the same source address, so any sighting will do.
        if let Some(src) = s.sightings.iter().find_map(|x| x.src) {
            if let Some(ipn) = self.ip_node((s.realm, src)) {
                self.parent.union(node, ipn);
            }
        }
        // The Ethernet source is the sending interface's only when every capture saw the
        // same one (one segment; behind a router each side sees another): interfaces of one
        // NIC, such as its VLANs, share it.
        if let [first, rest @ ..] = s.sightings {
            if !rest.is_empty() && rest.iter().all(|x| x.src_mac == first.src_mac) {
                if let Some(macn) = first.src_mac.and_then(|m| self.mac_node((s.realm, m))) {
                    self.parent.union(node, macn);
                }
            }
        }
        let seen = self.seen_by.entry(node).or_insert_with(|| vec![0; n]);
        for x in s.sightings {
            if let Some(c) = seen.get_mut(x.capture) {
                *c = c.saturating_add(1);
            }
        }
        if s.sightings.len() < 2 {
            return;
        }
        self.stats.shared_samples = self.stats.shared_samples.saturating_add(1);
        if let Some(earliest) = s.sightings.iter().min_by_key(|x| (x.t_first, x.capture)) {
            let f = self.first.entry(node).or_insert_with(|| vec![0; n]);
            if let Some(c) = f.get_mut(earliest.capture) {
                *c = c.saturating_add(1);
            }
        }
        for (i, a) in s.sightings.iter().enumerate() {
            for b in s.sightings.iter().skip(i.saturating_add(1)) {
                let (x, y) = if a.capture <= b.capture {
                    (a, b)
                } else {
                    (b, a)
                };
                if x.capture == y.capture {
                    continue;
                }
                let (Ok(xc), Ok(yc)) = (u16::try_from(x.capture), u16::try_from(y.capture)) else {
                    continue;
                };
                let delta = y.t_first.saturating_sub(x.t_first);
                let t = x.t_first;
                let key = (xc, yc, t.div_euclid(self.cfg.window_ns), node);
                let full = self.cells.len() >= self.cfg.max_cells;
                let builtin = u32::from(s.builtin);
                match self.cells.get_mut(&key) {
                    Some(c) => {
                        if delta < c.lo {
                            (c.lo, c.t_lo) = (delta, t);
                        }
                        if delta > c.hi {
                            (c.hi, c.t_hi) = (delta, t);
                        }
                        c.samples = c.samples.saturating_add(1);
                        c.builtin = c.builtin.saturating_add(builtin);
                    }
                    None if !full => {
                        self.cells.insert(
                            key,
                            Cell {
                                lo: delta,
                                t_lo: t,
                                hi: delta,
                                t_hi: t,
                                samples: 1,
                                builtin,
                            },
                        );
                    }
                    None => {
                        self.stats.cells_not_remembered =
                            self.stats.cells_not_remembered.saturating_add(1);
                    }
                }
            }
        }
    }
}
