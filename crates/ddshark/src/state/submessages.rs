//! What each user-traffic submessage does to the state: DATA/DATA_FRAG through the
//! writer's sequence tracking and counters, HEARTBEAT, GAP, ACKNACK, NACK_FRAG.

use rtps_dissect::rtps::SequenceNumberSet;
use rtps_dissect::{
    Datagram, Guid, SamplePiece, SequenceNumber, Submessage, SubmessageBody, SubmessageKind,
};

use super::entities::{count_sample_piece, DatagramShare};
use super::seq::{Finalized, Observed};
use super::{deadline_ns, State};

impl State {
    pub(super) fn apply_final(&mut self, guid: &Guid, fin: Finalized) {
        if fin == Finalized::default() {
            return;
        }
        let now = self.now_ns;
        if let Some(w) = self.writers.get_mut(guid) {
            w.apply_final(now, fin);
        }
    }

    pub(super) fn submessage(&mut self, d: &Datagram<'_>, sm: &Submessage<'_>, dst: u32) {
        self.counters.submessages = self.counters.submessages.saturating_add(1);
        // The kinds that matter here are picked before any body is decoded.
        match sm.kind {
            SubmessageKind::Data | SubmessageKind::DataFrag | SubmessageKind::DataSession => {
                if let Some(piece) = sm.sample_piece() {
                    self.sample_piece(d, &piece, dst);
                }
                return;
            }
            SubmessageKind::DataBatch => {
                for piece in sm.sample_pieces() {
                    self.sample_piece(d, &piece, dst);
                }
                return;
            }
            SubmessageKind::Heartbeat | SubmessageKind::HeartbeatBatch => {
                if let (Some(writer), Some((first, last))) = (sm.writer_guid(), sm.heartbeat_sns())
                {
                    self.heartbeat(writer, first, last);
                }
                return;
            }
            SubmessageKind::AckNack => {
                if let Some(set) = sm.acknack_sn_state() {
                    self.acknack(sm.reader_guid(), sm.writer_guid(), &set);
                }
                return;
            }
            SubmessageKind::HeartbeatFrag | SubmessageKind::Gap | SubmessageKind::NackFrag => {}
            SubmessageKind::Pad
            | SubmessageKind::InfoTs
            | SubmessageKind::InfoSrc
            | SubmessageKind::InfoReplyIp4
            | SubmessageKind::InfoDst
            | SubmessageKind::InfoReply
            | SubmessageKind::SecBody
            | SubmessageKind::SecPrefix
            | SubmessageKind::SecPostfix
            | SubmessageKind::SrtpsPrefix
            | SubmessageKind::SrtpsPostfix
            | SubmessageKind::VendorSpecific(_)
            | SubmessageKind::Unknown(_) => return,
        }
        match &sm.body() {
            SubmessageBody::HeartbeatFrag { .. } => {
                if let Some(writer) = sm.writer_guid() {
                    self.heartbeat_frag(writer);
                }
            }
            SubmessageBody::Gap {
                gap_start,
                gap_list,
                ..
            } => {
                if let Some(writer) = sm.writer_guid() {
                    self.gap(writer, *gap_start, gap_list);
                }
            }
            SubmessageBody::NackFrag { writer_sn, .. } => {
                self.nackfrag(sm.reader_guid(), sm.writer_guid(), *writer_sn);
            }
            // (the kinds above returned before the body was decoded)
            SubmessageBody::Pad
            | SubmessageBody::AckNack { .. }
            | SubmessageBody::Heartbeat { .. }
            | SubmessageBody::InfoTs { .. }
            | SubmessageBody::InfoSrc { .. }
            | SubmessageBody::InfoReplyIp4 { .. }
            | SubmessageBody::InfoDst { .. }
            | SubmessageBody::InfoReply { .. }
            | SubmessageBody::Data { .. }
            | SubmessageBody::DataFrag { .. }
            | SubmessageBody::DataBatch { .. }
            | SubmessageBody::HeartbeatBatch { .. }
            | SubmessageBody::Security { .. }
            | SubmessageBody::VendorSpecific { .. }
            | SubmessageBody::Unknown { .. } => {}
        }
    }

    /// A DATA or DATA_FRAG: what it is to its writer's sequence (new sample, more
    /// fragments, repeat, invalid), the sample's size, and the datagram's share.
    pub(super) fn sample_piece(&mut self, d: &Datagram<'_>, piece: &SamplePiece, dst: u32) {
        let now = self.now_ns;
        let seq_cfg = self.config.seq;
        let guid = piece.writer;
        // A datagram's IP fragments and bytes count once per writer it carries.
        let credit = !self.credited.contains(&guid);
        if credit {
            self.credited.push(guid);
        }
        let counters = &mut self.counters;
        counters.data_submessages = counters.data_submessages.saturating_add(1);
        let Some(w) = self.writer_mut(guid) else {
            return;
        };
        let frags_before = w.seq.frag_usage();
        let born_before = w.seq.frags_born();
        let (observed, fin) = w.seq.observe(piece.sn, dst, now, piece.fragments, &seq_cfg);
        let frags_after = w.seq.frag_usage();
        // Most pieces leave the writer's fragmented samples as they were.
        let started = if w.seq.frags_born() == born_before {
            None
        } else {
            w.seq.newest_frag()
        };
        w.last_src = Some(d.src);
        let link = if credit {
            w.credit_datagram(d);
            DatagramShare {
                ip_fragments: u64::from(d.ip_fragments),
                wire_bytes: d.udp_len as u64,
            }
        } else {
            DatagramShare::default()
        };
        match observed {
            Observed::NewSample { late_fill } => {
                w.record_sample_size(piece.sample_size);
                if !late_fill {
                    let deadline = w.endpoint.info.as_deref().and_then(deadline_ns);
                    w.timing.sample(d.ts_first_ns, piece.sn, deadline);
                }
            }
            Observed::Invalid => w.invalid_sn = w.invalid_sn.saturating_add(1),
            Observed::MoreFragments | Observed::Repeat { .. } => {}
        }
        let is_frag = piece.fragments.is_some();
        let new_sample = matches!(observed, Observed::NewSample { .. });
        w.stats.record(now, |c| {
            count_sample_piece(c, observed, is_frag, piece.sample_size, link);
            if new_sample {
                c.sample_times.note(d.ts_first_ns);
            }
        });
        w.apply_final(now, fin);
        self.counters.count_observed(observed);
        self.frag_budget.settle(frags_before, frags_after);
        if let Some(started) = started {
            self.frag_budget.started(guid, started);
        }
        self.frag_budget
            .enforce(self.config.max_frag_bytes, &mut self.writers);
    }

    pub(super) fn heartbeat(
        &mut self,
        writer: Guid,
        first_sn: SequenceNumber,
        last_sn: SequenceNumber,
    ) {
        let now = self.now_ns;
        let seq_cfg = self.config.seq;
        let Some(w) = self.writer_mut(writer) else {
            return;
        };
        w.stats
            .record(now, |c| c.heartbeats = c.heartbeats.saturating_add(1));
        let frags_before = w.seq.frag_usage();
        let fin = w.seq.heartbeat(first_sn, last_sn, now, &seq_cfg);
        let frags_after = w.seq.frag_usage();
        w.apply_final(now, fin);
        self.frag_budget.settle(frags_before, frags_after);
    }

    pub(super) fn heartbeat_frag(&mut self, writer: Guid) {
        let now = self.now_ns;
        if let Some(w) = self.writer_mut(writer) {
            w.stats.record(now, |c| {
                c.heartbeat_frags = c.heartbeat_frags.saturating_add(1)
            });
        }
    }

    /// A GAP: the range [gap_start, gap_list.base) and every SN in gap_list are
    /// irrelevant to readers, so they are not lost.
    pub(super) fn gap(
        &mut self,
        writer: Guid,
        gap_start: SequenceNumber,
        gap_list: &SequenceNumberSet<'_>,
    ) {
        let now = self.now_ns;
        let seq_cfg = self.config.seq;
        let Some(w) = self.writer_mut(writer) else {
            return;
        };
        w.stats.record(now, |c| c.gaps = c.gaps.saturating_add(1));
        let frags_before = w.seq.frag_usage();
        let mut fin = w
            .seq
            .gap_range(gap_start, gap_list.base.saturating_sub(1), now, &seq_cfg);
        for sn in gap_list.iter() {
            let f = w.seq.gap_range(sn, sn, now, &seq_cfg);
            fin.lost = fin.lost.saturating_add(f.lost);
            fin.incomplete = fin.incomplete.saturating_add(f.incomplete);
            fin.jumps = fin.jumps.saturating_add(f.jumps);
        }
        let frags_after = w.seq.frag_usage();
        w.apply_final(now, fin);
        self.frag_budget.settle(frags_before, frags_after);
    }

    pub(super) fn acknack(
        &mut self,
        reader: Option<Guid>,
        writer: Option<Guid>,
        reader_sn_state: &SequenceNumberSet<'_>,
    ) {
        let now = self.now_ns;
        let requested = reader_sn_state.iter().count() as u64;
        if let Some(r) = reader.and_then(|guid| self.reader_mut(guid)) {
            r.acknacks = r.acknacks.saturating_add(1);
            r.acknack_requested_sns = r.acknack_requested_sns.saturating_add(requested);
        }
        let Some(writer) = writer else {
            self.counters.acknacks_unattributed =
                self.counters.acknacks_unattributed.saturating_add(1);
            return;
        };
        if let Some(w) = self.writer_mut(writer) {
            w.stats.record(now, |c| {
                c.acknacks = c.acknacks.saturating_add(1);
                c.acknack_requested_sns = c.acknack_requested_sns.saturating_add(requested);
            });
            for sn in reader_sn_state.iter() {
                w.seq.requested(sn);
            }
        }
    }

    pub(super) fn nackfrag(
        &mut self,
        reader: Option<Guid>,
        writer: Option<Guid>,
        writer_sn: SequenceNumber,
    ) {
        let now = self.now_ns;
        if let Some(r) = reader.and_then(|guid| self.reader_mut(guid)) {
            r.nackfrags = r.nackfrags.saturating_add(1);
        }
        let Some(writer) = writer else {
            self.counters.nackfrags_unattributed =
                self.counters.nackfrags_unattributed.saturating_add(1);
            return;
        };
        if let Some(w) = self.writer_mut(writer) {
            w.stats
                .record(now, |c| c.nackfrags = c.nackfrags.saturating_add(1));
            w.seq.requested(writer_sn);
        }
    }
}
