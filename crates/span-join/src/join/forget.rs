//! What the join forgets (its maps are bounded, every forgetting counted): writers and hosts
//! unseen for `forget_pushes`, samples without a sender's span, excess participants.

use super::*;

impl SpanJoin {
    /// Drops what was not seen for `forget_pushes` pushes, and the oldest participants'
    /// votes beyond `max_participants` (bounded maps, counted).
    pub(super) fn forget(&mut self) {
        // (None: nothing is that old yet)
        let old = self.tick.checked_sub(self.settings.forget_pushes);
        let stale = |tick: u64| old.is_some_and(|old| tick < old);
        let mut forgotten = 0u64;
        self.writers.retain(|_, w| match w.seen_tick {
            Some(t) if stale(t) => {
                forgotten = forgotten.saturating_add(1);
                false
            }
            Some(_) => true,
            // seen only through DATA_FRAGs: their topics are not kept beyond a push
            None => false,
        });
        self.captures.retain(|_, c| {
            let keep = !stale(c.seen_tick);
            forgotten = forgotten.saturating_add(u64::from(!keep));
            keep
        });
        self.repairs.retain(|_, acc| !stale(acc.tick));
        // addresses no waiting row says any more (the set only shares them)
        self.addresses.retain(|a| Arc::strong_count(a) > 1);
        let given_up = self.tick.checked_sub(self.settings.max_wait_pushes);
        self.give_up_senderless(|parked| given_up.is_some_and(|t| parked.first_tick <= t));
        self.latency_seconds.retain(|_, acc| !stale(acc.tick));
        let excess = self
            .votes
            .len()
            .saturating_sub(self.settings.max_participants);
        if excess > 0 {
            self.votes.drain(..excess);
            forgotten = forgotten.saturating_add(excess as u64);
        }
        self.counters.forgotten = self.counters.forgotten.saturating_add(forgotten);
    }

    /// Samples parked without their sender's span that `give_up` picks: joined as they
    /// are (no point), counted `senderless`.
    pub(super) fn give_up_senderless(&mut self, give_up: impl Fn(&Pending<SampleRow>) -> bool) {
        let before = self.senderless.len();
        self.senderless.retain(|_, parked| !give_up(parked));
        let given_up = before.saturating_sub(self.senderless.len()) as u64;
        self.counters.senderless = self.counters.senderless.saturating_add(given_up);
        self.counters.samples = self.counters.samples.saturating_add(given_up);
    }
}
