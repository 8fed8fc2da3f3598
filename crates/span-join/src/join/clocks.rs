//! latency_core's host rule and clock offset estimate inside the join: which host a
//! writer's samples are sent from, and how far two hosts' clocks are apart.

use super::*;

/// Most hosts whose clocks are compared at once (further hosts' samples are not evidence
/// until one of them is forgotten: unseen for [`CLOCK_HORIZON_NS`] of capture time).
pub(super) const MAX_CLOCK_HOSTS: usize = 64;
/// Most (participant, hosts) pairs the host rule tells apart.
pub(super) const MAX_CLOCK_PARTICIPANTS: usize = 65_536;
/// Capture time of evidence kept for hosts and offsets.
pub(super) const CLOCK_HORIZON_NS: i64 = 300 * NS;

/// latency_core's host rule and offset estimate, fed with every joined sample.
///
/// A participant is the rule's participant per set of hosts that saw its samples: the same
/// capture exported again under new host names is new evidence, not a contradiction of the
/// old (one home per participant would stay with the old names, and the new pair would get
/// samples one way only: no offset).
#[derive(Debug)]
pub(super) struct Clocks {
    pub(super) rule: HostRule,
    /// Per capture index of the rule: its host (None: free, its host forgotten).
    pub(super) names: Vec<Option<Str>>,
    /// Per capture index: [`Clocks::newest`] when its host was last seen in a sample.
    pub(super) last_seen: Vec<i64>,
    /// Per capture index: the latest start of its host's samples, on that host's clock
    /// (its evidence is kept for [`CLOCK_HORIZON_NS`] before it).
    pub(super) newest_own: Vec<i64>,
    pub(super) index: HashMap<Str, usize>,
    /// (GUID prefix, bit set of the host indices that saw the sample) → the rule's
    /// participant (at most [`MAX_CLOCK_PARTICIPANTS`]; further ones are not evidence).
    pub(super) participants: HashMap<ParticipantKey, Participant>,
    /// The number of the next participant made (the rule's participant id).
    pub(super) next_participant: u64,
    pub(super) decided: Hosts,
    /// Per pair of host indices (X < Y): the estimate of Y's clock minus X's.
    pub(super) offsets: BTreeMap<(usize, usize), OffsetEstimate>,
    pub(super) newest: i64,
    /// Samples joined early (the table full) since the last push: evidence from the next
    /// push on (so that between pushes the rule holds what it decided from, which is what
    /// the state keeps).
    pub(super) queued: Vec<(Str, Vec<SampleRow>)>,
    /// Hosts forgotten and cells the rule could not hold, not yet counted by the join.
    losses: ClockLosses,
    /// The rule's `cells_not_remembered` already in `losses` or counted.
    cells_reported: u64,
}

/// What the clock table let go since the join last counted it.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) struct ClockLosses {
    /// Hosts forgotten: unseen for [`CLOCK_HORIZON_NS`] of capture time.
    pub(super) hosts_forgotten: u64,
    /// (host pair, 100 ms, participant) cells of evidence the rule could not hold
    /// ([`MAX_CLOCK_CELLS`]).
    pub(super) cells_not_remembered: u64,
}

/// A GUID prefix and the bit set of the host indices that saw its sample.
pub(super) type ParticipantKey = ([u8; 12], u64);

/// [`Clocks`] in the join's state: the evidence, not what is decided from it.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct ClocksState {
    pub(super) names: Vec<Option<Str>>,
    #[serde(default)]
    pub(super) last_seen: Vec<i64>,
    #[serde(default)]
    pub(super) newest_own: Vec<i64>,
    pub(super) participants: Vec<(ParticipantKey, Participant)>,
    #[serde(default)]
    pub(super) next_participant: Option<u64>,
    pub(super) newest: i64,
    pub(super) evidence: HostRuleEvidence,
    pub(super) queued: Vec<(Str, Vec<SampleRow>)>,
}

/// The live rule's cells (capture pair, 100 ms window, participant): they bound the
/// evidence kept over [`CLOCK_HORIZON_NS`], in memory and in the state.
pub(super) const MAX_CLOCK_CELLS: usize = 250_000;

pub(super) fn clock_rule_config() -> HostRuleConfig {
    HostRuleConfig {
        max_cells: MAX_CLOCK_CELLS,
        ..HostRuleConfig::new(MAX_CLOCK_HOSTS)
    }
}

impl Default for Clocks {
    fn default() -> Self {
        Self {
            rule: HostRule::new(clock_rule_config()),
            names: Vec::new(),
            last_seen: Vec::new(),
            newest_own: Vec::new(),
            index: HashMap::new(),
            participants: HashMap::new(),
            next_participant: 0,
            decided: Hosts::default(),
            offsets: BTreeMap::new(),
            newest: i64::MIN,
            queued: Vec::new(),
            losses: ClockLosses::default(),
            cells_reported: 0,
        }
    }
}

impl Clocks {
    /// `host`'s capture index, given a free one if it has none (making room by forgetting
    /// the hosts idle for [`CLOCK_HORIZON_NS`] when the table is full).
    pub(super) fn index_of(&mut self, host: &Str) -> Option<usize> {
        if let Some(&i) = self.index.get(host) {
            return Some(i);
        }
        let mut free = self.names.iter().position(Option::is_none);
        if free.is_none() && self.names.len() >= MAX_CLOCK_HOSTS {
            self.forget_idle_hosts();
            free = self.names.iter().position(Option::is_none);
        }
        let i = match free {
            Some(i) => i,
            None if self.names.len() < MAX_CLOCK_HOSTS => {
                self.names.push(None);
                self.last_seen.push(self.newest);
                self.newest_own.push(i64::MIN);
                self.names.len() - 1
            }
            None => return None,
        };
        if let (Some(name), Some(seen)) = (self.names.get_mut(i), self.last_seen.get_mut(i)) {
            *name = Some(host.clone());
            *seen = self.newest;
        }
        if let Some(own) = self.newest_own.get_mut(i) {
            *own = i64::MIN;
        }
        self.index.insert(host.clone(), i);
        Some(i)
    }

    /// Forgets the hosts not seen in a sample for [`CLOCK_HORIZON_NS`] of capture time
    /// (their evidence is past the horizon): their indices are free for other hosts, the
    /// rule's evidence from them and the participants they saw go. Counted.
    fn forget_idle_hosts(&mut self) {
        let before = self.newest.saturating_sub(CLOCK_HORIZON_NS);
        let mut freed = 0u64;
        for (i, (name, &seen)) in self.names.iter_mut().zip(&self.last_seen).enumerate() {
            if seen >= before {
                continue;
            }
            let Some(host) = name.take() else {
                continue;
            };
            self.index.remove(&host);
            self.rule.forget_capture(i);
            freed |= 1u64
                .checked_shl(u32::try_from(i).unwrap_or(u32::MAX))
                .unwrap_or(0);
            self.losses.hosts_forgotten = self.losses.hosts_forgotten.saturating_add(1);
        }
        if freed != 0 {
            self.participants
                .retain(|&(_, hosts), _| hosts & freed == 0);
        }
    }

    /// What was let go since the last call (for the join's counters).
    pub(super) fn take_losses(&mut self) -> ClockLosses {
        let cells = self.rule.stats().cells_not_remembered;
        self.losses.cells_not_remembered = self
            .losses
            .cells_not_remembered
            .saturating_add(cells.saturating_sub(self.cells_reported));
        self.cells_reported = cells;
        std::mem::take(&mut self.losses)
    }

    /// The bit set of the host indices among `rows` (hosts not in the table: None, or left
    /// out with `partial`).
    pub(super) fn host_set(&self, rows: &[SampleRow], partial: bool) -> Option<u64> {
        let mut set = 0u64;
        for r in rows {
            match self.index.get(&r.host) {
                Some(&i) => set |= 1u64.checked_shl(u32::try_from(i).ok()?).unwrap_or(0),
                None if partial => {}
                None => return None,
            }
        }
        Some(set)
    }

    /// The rule's participant for `writer` seen by `rows`' hosts (a new one if `add`).
    pub(super) fn participant(
        &mut self,
        writer: &str,
        rows: &[SampleRow],
        add: bool,
    ) -> Option<Participant> {
        let key = (prefix_bytes(writer)?, self.host_set(rows, add)?);
        if let Some(&p) = self.participants.get(&key) {
            return Some(p);
        }
        if !add || self.participants.len() >= MAX_CLOCK_PARTICIPANTS {
            return None;
        }
        let mut id = [0u8; 12];
        id[..8].copy_from_slice(&self.next_participant.to_be_bytes());
        self.next_participant = self.next_participant.saturating_add(1);
        self.participants.insert(key, id);
        Some(id)
    }

    pub(super) fn observe(&mut self, writer: &str, rows: &[SampleRow]) {
        for r in rows {
            self.newest = self.newest.max(r.start);
        }
        for r in rows {
            if let Some(i) = self.index_of(&r.host) {
                if let Some(seen) = self.last_seen.get_mut(i) {
                    *seen = self.newest;
                }
                if let Some(own) = self.newest_own.get_mut(i) {
                    *own = (*own).max(r.start);
                }
            }
        }
        let (Some(participant), Some(realm)) = (
            self.participant(writer, rows, true),
            self.host_set(rows, true),
        ) else {
            return;
        };
        // (addresses tie participants within the set of hosts that saw the sample, the
        // rule's participant's own: captures exported again under other names are apart)
        let mut sightings: Vec<Sighting> = Vec::new();
        for r in rows {
            let Some(capture) = self.index_of(&r.host) else {
                continue;
            };
            let addresses = r.addresses.as_deref();
            if let Some(ips) = addresses.and_then(|a| a.announced.as_deref()) {
                self.rule.announce(participant, realm, ips);
            }
            let seen = Sighting {
                capture,
                t_first: r.start,
                src: addresses.and_then(|a| a.src),
                src_mac: addresses.and_then(|a| a.src_mac),
            };
            // each host's first sighting, with the addresses of that datagram
            match sightings.iter_mut().find(|x| x.capture == capture) {
                Some(x) if r.start < x.t_first => *x = seen,
                Some(_) => {}
                None => sightings.push(seen),
            }
        }
        self.rule.observe(&Seen {
            participant,
            realm,
            builtin: is_builtin_writer(writer),
            sightings: &sightings,
        });
    }

    /// The host of `writer` seen by `rows`' hosts by the order of events, when that
    /// decided it.
    pub(super) fn home(&mut self, writer: &str, rows: &[SampleRow]) -> Option<&Str> {
        let participant = self.participant(writer, rows, false)?;
        let h = self.decided.home(&participant, None)?;
        if h.basis != Basis::Order {
            return None;
        }
        self.names.get(h.capture)?.as_ref()
    }

    /// New decisions from the evidence of the last [`CLOCK_HORIZON_NS`] (the samples
    /// joined early since the last push included); hosts idle that long are forgotten.
    pub(super) fn decide(&mut self) {
        for (writer, rows) in std::mem::take(&mut self.queued) {
            self.observe(&writer, &rows);
        }
        self.rule
            .forget_before(|capture| match self.newest_own.get(capture) {
                Some(&own) => own.saturating_sub(CLOCK_HORIZON_NS),
                None => i64::MIN,
            });
        self.forget_idle_hosts();
        self.redecide();
    }

    /// The decisions and estimates from the evidence as it is.
    pub(super) fn redecide(&mut self) {
        self.decided = self.rule.decide();
        self.offsets = self
            .rule
            .offsets(&self.decided, OffsetConfig::default())
            .into_iter()
            .filter_map(|(pair, est)| Some((pair, est.estimate().ok()?)))
            .collect();
    }

    pub(super) fn state(&self) -> ClocksState {
        let mut participants: Vec<_> = self.participants.iter().map(|(k, v)| (*k, *v)).collect();
        participants.sort();
        ClocksState {
            names: self.names.clone(),
            last_seen: self.last_seen.clone(),
            newest_own: self.newest_own.clone(),
            participants,
            next_participant: Some(self.next_participant),
            newest: self.newest,
            evidence: self.rule.evidence(),
            queued: self.queued.clone(),
        }
    }

    /// The clocks as they were when `state` was taken: the same evidence, so the same
    /// decisions and estimates as at the push before.
    pub(super) fn from_state(state: ClocksState) -> Self {
        let mut clocks = Clocks {
            rule: HostRule::with_evidence(clock_rule_config(), state.evidence),
            newest: state.newest,
            queued: state.queued,
            ..Clocks::default()
        };
        // (a state from before hosts were forgotten has no last_seen: seen at its newest)
        clocks.names = state.names;
        clocks.names.truncate(MAX_CLOCK_HOSTS);
        clocks.last_seen = state.last_seen;
        clocks.last_seen.resize(clocks.names.len(), state.newest);
        // (a state from before: every host's evidence was kept from the newest of all)
        clocks.newest_own = state.newest_own;
        clocks.newest_own.resize(clocks.names.len(), state.newest);
        for (i, name) in clocks.names.iter().enumerate() {
            if let Some(name) = name {
                clocks.index.insert(name.clone(), i);
            }
        }
        clocks.next_participant = state
            .next_participant
            .unwrap_or(state.participants.len() as u64);
        clocks.participants = state
            .participants
            .into_iter()
            .take(MAX_CLOCK_PARTICIPANTS)
            .collect();
        clocks.redecide();
        clocks
    }

    /// How far `receiver`'s clock reads ahead of `sender`'s at sender-time `t`, when the
    /// traffic shows the clocks differ (the estimate is further from 0 than its bound); else 0.
    pub(super) fn receiver_ahead(&self, sender: &Str, receiver: &Str, t: i64) -> i64 {
        let (Some(&s), Some(&r)) = (self.index.get(sender), self.index.get(receiver)) else {
            return 0;
        };
        let (pair, sign) = if s < r { ((s, r), 1) } else { ((r, s), -1) };
        match self.offsets.get(&pair) {
            Some(e) if e.offset_at(t).unsigned_abs() > e.half_width_ns.unsigned_abs() => {
                sign * e.offset_at(t)
            }
            _ => 0,
        }
    }

    /// One `dds_clock_offset` point per pair of hosts with an estimate.
    pub(super) fn write(&mut self, out: &mut LineWriter, shard: Option<u16>) -> u64 {
        let mut points = 0u64;
        for (&(x, y), e) in &self.offsets {
            let name = |i: usize| self.names.get(i).and_then(Option::as_ref);
            let (Some(a), Some(b)) = (name(x), name(y)) else {
                continue;
            };
            // (each direction's smallest delay too: with shards, each estimates from its own
            // samples, and the queries take the minimum of the shards' minima)
            shard_tag(out.point(measurement::CLOCK_OFFSET), shard)
                .tag("host_a", a)
                .tag("host_b", b)
                .int("offset_ns", e.offset_at(e.t_last))
                .int("half_width_ns", e.half_width_ns)
                .int("drift_ppb", e.drift_ppb)
                .int("samples_a_to_b", as_i64(e.counts.x_to_y))
                .int("samples_b_to_a", as_i64(e.counts.y_to_x))
                .int("samples_builtin", as_i64(e.counts.builtin))
                .int("outliers", i64::from(e.outliers))
                .int("min_a_to_b_ns", e.min_x_to_y_ns)
                .int("min_b_to_a_ns", e.min_y_to_x_ns)
                .end(Some(e.t_last));
            points = points.saturating_add(1);
        }
        points
    }
}

/// A writer GUID's participant prefix (its first 24 hex digits) as bytes.
pub(super) fn prefix_bytes(writer: &str) -> Option<[u8; 12]> {
    let hex = writer.get(..24)?.as_bytes();
    let mut out = [0u8; 12];
    for (o, pair) in out.iter_mut().zip(hex.chunks_exact(2)) {
        let digit = |c: u8| (c as char).to_digit(16);
        let (Some(hi), Some(lo)) = (
            pair.first().and_then(|&c| digit(c)),
            pair.get(1).and_then(|&c| digit(c)),
        ) else {
            return None;
        };
        *o = u8::try_from(hi * 16 + lo).ok()?;
    }
    Some(out)
}

/// Built-in (discovery) writers: entity kind byte 0xc0..=0xff (the GUID's last two hex digits).
pub(super) fn is_builtin_writer(writer: &str) -> bool {
    writer
        .get(30..32)
        .and_then(|k| u8::from_str_radix(k, 16).ok())
        .is_some_and(|k| k & 0xc0 == 0xc0)
}
