//! One memory budget for the fragmented samples in progress of all writers together.
//!
//! Each writer tracks at most `SeqConfig::max_frag_samples` samples of at most
//! `max_fragments` fragment flags, which alone bounds a flood of writers only at
//! writers × 128 KiB (2 GiB with the writer table full). The budget
//! (`StateConfig::max_frag_bytes`) bounds their sum: past it, the samples that started
//! first, whatever their writer, are dropped from tracking (counted in their writer's
//! `frag_evicted`, so in `frag_samples_evicted`), and count as incomplete like any other
//! sample dropped from tracking.

use std::collections::VecDeque;

use rtps_dissect::{Guid, SequenceNumber};

use super::bounded::Bounded;
use super::seq::FragUsage;
use super::Writer;

#[derive(Debug, Default)]
pub(crate) struct FragBudget {
    /// What all writers' fragmented samples hold.
    held: FragUsage,
    /// Fragmented samples in the order they started: (writer, SN, birth). Entries of
    /// samples that completed or left tracking since are skipped when met, and swept out
    /// when they outnumber the samples in progress.
    order: VecDeque<(Guid, SequenceNumber, u64)>,
}

impl FragBudget {
    /// A writer's fragmented samples went from `before` to `after`.
    pub(crate) fn settle(&mut self, before: FragUsage, after: FragUsage) {
        // The common case: most submessages and sweeps leave a writer's samples alone.
        if before == after {
            return;
        }
        self.release(before);
        self.held.samples = self.held.samples.saturating_add(after.samples);
        self.held.bytes = self.held.bytes.saturating_add(after.bytes);
    }

    /// A writer and its fragmented samples are gone.
    pub(crate) fn release(&mut self, usage: FragUsage) {
        self.held.samples = self.held.samples.saturating_sub(usage.samples);
        self.held.bytes = self.held.bytes.saturating_sub(usage.bytes);
    }

    /// `writer` started tracking the fragmented sample (`sn`, `birth`).
    pub(crate) fn started(&mut self, writer: Guid, (sn, birth): (SequenceNumber, u64)) {
        self.order.push_back((writer, sn, birth));
    }

    /// Drops the oldest samples until all of them hold at most `max_bytes`.
    #[inline]
    pub(crate) fn enforce(&mut self, max_bytes: usize, writers: &mut Bounded<Guid, Writer>) {
        // Called for every DATA: nearly always within the budget with nothing to sweep.
        if self.held.bytes > max_bytes || self.order_needs_sweep() {
            self.enforce_now(max_bytes, writers);
        }
    }

    fn order_needs_sweep(&self) -> bool {
        self.order.len() > self.held.samples.saturating_mul(2).saturating_add(64)
    }

    #[inline(never)]
    fn enforce_now(&mut self, max_bytes: usize, writers: &mut Bounded<Guid, Writer>) {
        while self.held.bytes > max_bytes {
            let Some((guid, sn, birth)) = self.order.pop_front() else {
                break;
            };
            if let Some(w) = writers.get_mut(&guid) {
                let before = w.seq.frag_usage();
                if w.seq.drop_frag(sn, birth) {
                    self.settle(before, w.seq.frag_usage());
                }
            }
        }
        if self.order_needs_sweep() {
            self.order.retain(|(guid, sn, birth)| {
                writers
                    .get(guid)
                    .is_some_and(|w| w.seq.has_frag(*sn, *birth))
            });
        }
    }
}
