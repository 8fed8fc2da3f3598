//! A sample finalised: whose capture is the writer's, the evidence for the host rule, and a
//! row per other capture (or lost, or not expected there).

use latency_core::hosts::Sighting;
use latency_core::{Receipt, Seen};

use super::pending::{completed_by_repair, local_sample, Pending};
use super::{Join, SampleRow};
use crate::latency::extract::Key;

impl Join {
    /// The writer's capture: the host rule's decision (latency_core::hosts), else the
    /// only capture that saw the sample, else the one that saw it first.
    fn home_of(&self, key: &Key, p: &Pending) -> Option<usize> {
        // (one realm offline: every address counts for every participant)
        let src = p.caps.iter().find_map(|c| c.src).map(|s| (0, s.ip()));
        if let Some(h) = self
            .hosts
            .as_ref()
            .and_then(|h| h.home(&key.writer.prefix.0, src))
        {
            return Some(h.capture);
        }
        p.caps
            .iter()
            .enumerate()
            .filter(|(_, c)| c.seen)
            .min_by_key(|(i, c)| (c.t_first, *i))
            .map(|(i, _)| i)
    }

    fn observe(&mut self, key: &Key, p: &Pending) {
        let Some(rule) = self.rule.as_mut() else {
            return;
        };
        let sightings: Vec<Sighting> = p
            .caps
            .iter()
            .enumerate()
            .filter(|(_, c)| c.seen)
            .map(|(i, c)| Sighting {
                capture: i,
                t_first: c.t_first,
                src: c.src.map(|s| s.ip()),
                src_mac: c.src_mac,
            })
            .collect();
        rule.observe(&Seen {
            participant: key.writer.prefix.0,
            realm: 0,
            builtin: key.writer.entity.is_builtin(),
            sightings: &sightings,
        });
    }

    pub(super) fn finalise(&mut self, key: Key, out: &mut Vec<SampleRow>) -> bool {
        let Some(p) = self.pending.remove(&key) else {
            return false;
        };
        self.stats.bytes_held = self.stats.bytes_held.saturating_sub(p.bytes as u64);
        self.stats.finalised = self.stats.finalised.saturating_add(1);
        if self.cfg.captures == 1 {
            if let Some(c) = p.caps.first().filter(|c| c.seen) {
                self.local.push(local_sample(key, &p, c));
            }
            return true;
        }
        self.observe(&key, &p);
        let Some(home) = self.home_of(&key, &p) else {
            return true;
        };
        let Some(s) = p.caps.get(home) else {
            return true;
        };
        if !s.seen {
            self.stats.receiver_only = self.stats.receiver_only.saturating_add(1);
            return true;
        }
        for (r, c) in p.caps.iter().enumerate() {
            if r == home {
                continue;
            }
            let complete = c.seen && c.filled >= p.units && p.units > 0;
            // (per DDS fragment the earliest complete datagram; the last of those completed it)
            let completed_by = c
                .done
                .iter()
                .max_by_key(|d| (d.t_last, d.frame))
                .filter(|_| complete);
            let receipt = match completed_by {
                Some(d) => Receipt::Complete { t_recv: d.t_last },
                None if c.seen => Receipt::Partial,
                None => Receipt::Nothing,
            };
            let Some(outcome) = self.cfg.lost.decide(
                receipt,
                s.t_first,
                self.range.get(r).copied().flatten(),
                self.writer_seen.get(&(r, key.writer)).copied(),
            ) else {
                self.stats.not_expected = self.stats.not_expected.saturating_add(1);
                continue;
            };
            let received = outcome.received();
            let t_recv_first = c
                .done
                .iter()
                .map(|d| d.t_last)
                .filter(|&t| t != i64::MAX)
                .min();
            let repaired = received.is_some() && completed_by_repair(s, c);
            out.push(SampleRow {
                sender: home,
                receiver: r,
                key,
                fragmented: p.fragmented,
                topic: p.topic.clone(),
                status: outcome.status(),
                t_send: s.t_first,
                frame_send: s.frame_first,
                t_recv: received.map(|(t_recv, _)| t_recv),
                frame_recv: completed_by.map(|d| d.frame),
                t_recv_first,
                latency_ns: received.map(|(_, latency_ns)| latency_ns),
                latency_uncertainty_ns: None,
                tx_sender: s.subs,
                repairs_sender: s.repairs,
                rx_receiver: c.subs,
                repaired,
                sample_size: p.sample_size,
                units: p.units,
                src: s.src,
                dst: if c.seen { c.dst } else { s.dst },
                pcp: s.pcp,
            });
        }
        true
    }
}
