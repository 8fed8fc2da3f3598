//! The state's own counters: every DATA/DATA_FRAG classified once, every eviction counted.

use super::seq::Observed;

/// What the state itself counted; see [`StateCounters::reconciles`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StateCounters {
    pub(crate) datagrams: u64,
    pub(crate) submessages: u64,
    /// DATA + DATA_FRAG submessages of any writer (built-in ones included).
    pub(crate) data_submessages: u64,
    /// ... of which started a new sample,
    pub(crate) new_samples: u64,
    /// ... carried more fragments of a sample already counted,
    pub(crate) more_fragments: u64,
    /// ... repeated something already seen,
    pub(crate) repeat_submessages: u64,
    /// ... or had an invalid SN (≤ 0).
    pub(crate) invalid_sn: u64,
    /// Samples that filled a hole already counted as lost (lost was decremented).
    pub(crate) late_fills: u64,
    pub(crate) discovery_records: u64,
    pub(crate) acknacks_unattributed: u64,
    pub(crate) nackfrags_unattributed: u64,
    pub(crate) participants_evicted_idle: u64,
    pub(crate) participants_evicted_capacity: u64,
    pub(crate) writers_evicted_idle: u64,
    pub(crate) writers_evicted_capacity: u64,
    pub(crate) readers_evicted_idle: u64,
    pub(crate) readers_evicted_capacity: u64,
    /// Samples counted by writers that were evicted since (so totals still reconcile).
    pub(crate) samples_of_evicted_writers: u64,
    pub(crate) frag_samples_evicted: u64,
    pub(crate) leases_expired: u64,
    /// Capture timestamps that went backwards (tolerated: the clock does not go back).
    pub(crate) ts_backwards: u64,
    /// Secured-traffic participant pairs dropped for room or idleness (their traffic
    /// stays in the secured totals).
    pub(crate) secured_pairs_evicted_capacity: u64,
    pub(crate) secured_pairs_evicted_idle: u64,
    /// Address → participant entries dropped (destinations then name the address).
    pub(crate) hosts_evicted: u64,
}

/// The counters tests outside the crate check (the snapshot's JSON shows them all).
impl StateCounters {
    pub fn writers_evicted_capacity(&self) -> u64 {
        self.writers_evicted_capacity
    }

    pub fn frag_samples_evicted(&self) -> u64 {
        self.frag_samples_evicted
    }

    pub fn ts_backwards(&self) -> u64 {
        self.ts_backwards
    }

    pub fn secured_pairs_evicted_capacity(&self) -> u64 {
        self.secured_pairs_evicted_capacity
    }
}

impl StateCounters {
    /// Every DATA/DATA_FRAG submessage is exactly one of new/more/repeat/invalid.
    pub(crate) fn reconciles(&self) -> bool {
        self.new_samples
            .saturating_add(self.more_fragments)
            .saturating_add(self.repeat_submessages)
            .saturating_add(self.invalid_sn)
            == self.data_submessages
    }

    /// Every DATA/DATA_FRAG is exactly one of new/more/repeat/invalid.
    pub(super) fn count_observed(&mut self, observed: Observed) {
        match observed {
            Observed::NewSample { late_fill } => {
                self.new_samples = self.new_samples.saturating_add(1);
                if late_fill {
                    self.late_fills = self.late_fills.saturating_add(1);
                }
            }
            Observed::MoreFragments => self.more_fragments = self.more_fragments.saturating_add(1),
            Observed::Repeat { .. } => {
                self.repeat_submessages = self.repeat_submessages.saturating_add(1);
            }
            Observed::Invalid => self.invalid_sn = self.invalid_sn.saturating_add(1),
        }
    }
}
