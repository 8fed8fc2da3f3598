//! The writer's host where latency_core's host rule cannot decide: votes per participant,
//! one per sample first seen by one host, halved with every push.

use super::*;

/// Host → (votes as of the tick of the last vote, that tick).
pub(super) type HostVotes = BTreeMap<Str, (u64, u64)>;

impl SpanJoin {
    /// The writer's host for a sample seen as `rows`: one vote per sample first seen by
    /// one host (a sample two hosts saw at the same nanosecond casts none); among the hosts
    /// that saw it, the participant's most voted one, else the first. None if nobody saw it.
    pub(super) fn home_of(&mut self, writer: &str, rows: &[SampleRow]) -> Option<Str> {
        // The order of events (latency_core's host rule), when it decided, among the hosts
        // that saw the sample; else the votes below.
        if let Some(home) = self.clocks.home(writer, rows) {
            if rows.iter().any(|r| r.host == *home) {
                return Some(home.clone());
            }
        }
        let prefix = participant_of(writer);
        let mut earliest: BTreeMap<&Str, i64> = BTreeMap::new();
        for r in rows {
            earliest
                .entry(&r.host)
                .and_modify(|t| *t = (*t).min(r.start))
                .or_insert(r.start);
        }
        if earliest.len() >= 2 {
            let mut first: Option<(&Str, i64)> = None;
            let mut tie = false;
            for (&host, &t) in &earliest {
                match first {
                    Some((_, best)) if t > best => {}
                    Some((_, best)) if t == best => tie = true,
                    _ => {
                        first = Some((host, t));
                        tie = false;
                    }
                }
            }
            let first = first.map(|(h, _)| h.clone());
            if let (Some(host), false) = (&first, tie) {
                let tick = self.tick;
                let prefix = self.intern(prefix);
                let votes = self.votes.entry(prefix).or_default();
                let vote = votes.entry(host.clone()).or_insert((0, tick));
                *vote = (decayed(*vote, tick).saturating_add(ONE_VOTE), tick);
            }
            // (restricted to the hosts that saw it: the same participants replayed under
            // other host names still carry the old names' votes for a few pushes)
            return self
                .best_vote(prefix, |h| earliest.contains_key(h))
                .or(first);
        }
        // Seen by one host: its sender, or a receiver whose sender's capture missed it.
        self.best_vote(prefix, |_| true)
            .or_else(|| earliest.keys().next().map(|h| (*h).clone()))
    }

    /// Whether spans of `host` arrived since the samples joined now did (a host that is
    /// capturing the writer sends its SAMPLE spans within that time).
    pub(super) fn capturing_now(&self, host: &str) -> bool {
        let since = self
            .tick
            .saturating_sub(self.settings.settle_pushes.saturating_add(1));
        self.captures
            .get(host)
            .is_some_and(|c| c.seen_tick >= since)
    }

    /// The host with most votes for the participant among those that voted within
    /// `vote_pushes` pushes of its latest vote and capture now, each push halving the votes
    /// before it (a participant's host does not change; host names may, when a capture is
    /// replayed under other names: the new name outvotes the old within a push or two),
    /// among the hosts `among` accepts. (Counted from its latest vote, not from now: no
    /// sample may be joined for a while when one waits for a host in capture time.)
    pub(super) fn best_vote(&self, prefix: &str, among: impl Fn(&Str) -> bool) -> Option<Str> {
        let votes = self.votes.get(prefix)?;
        let latest = votes.values().map(|v| v.1).max()?;
        let recent = latest.checked_sub(self.settings.vote_pushes);
        let mut best: Option<(&Str, u64)> = None;
        for (host, &vote) in votes {
            // (a host whose capture fell silent is not the host of a sample joined now: a
            // replay under other host names, or a capture that ended)
            if recent.is_some_and(|r| vote.1 < r) || !among(host) || !self.capturing_now(host) {
                continue;
            }
            let count = decayed(vote, latest);
            if best.is_none_or(|(_, most)| count > most) {
                best = Some((host, count));
            }
        }
        best.map(|(h, _)| h.clone())
    }
}

/// One vote, in the fixed-point units votes decay in (so that a single vote still counts
/// after the `vote_pushes` halvings that keep a host in the running).
pub(super) const ONE_VOTE: u64 = 1 << 16;

/// A host's votes `(count, tick of its last vote)` as they count at `tick`: halved with
/// every push since.
pub(super) fn decayed((count, last): (u64, u64), tick: u64) -> u64 {
    count
        .checked_shr(u32::try_from(tick.saturating_sub(last)).unwrap_or(u32::MAX))
        .unwrap_or(0)
}

/// The participant (GUID prefix, the first 24 hex digits) of a writer id.
pub(super) fn participant_of(writer: &str) -> &str {
    match writer.char_indices().nth(24) {
        Some((at, _)) => writer.get(..at).unwrap_or(writer),
        None => writer,
    }
}
