//! A span as it arrives: its strings shared, its host's capture and its writer noted, its
//! row added to the sample or DATA_FRAG waiting for it.

use super::*;

impl SpanJoin {
    pub(super) fn intern(&mut self, s: &str) -> Str {
        if let Some(shared) = self.interned.get(s) {
            return shared.clone();
        }
        let shared = Str::from(s);
        if self.interned.len() < MAX_INTERNED {
            self.interned.insert(shared.clone());
        }
        shared
    }

    /// A span's addresses, shared with the rows that say the same (None if it says none).
    fn addresses(&mut self, span: &SampleSpan<'_>) -> Option<Arc<Addresses>> {
        let addresses = Addresses {
            src: span.src_ip.and_then(|t| t.parse().ok()),
            src_mac: span.src_mac.and_then(mac_bytes),
            announced: span.announced_ips.and_then(parse_ips),
        };
        if addresses.src.is_none() && addresses.src_mac.is_none() && addresses.announced.is_none() {
            return None;
        }
        if let Some(shared) = self.addresses.get(&addresses) {
            return Some(shared.clone());
        }
        let shared = Arc::new(addresses);
        if self.addresses.len() < MAX_INTERNED {
            self.addresses.insert(shared.clone());
        }
        Some(shared)
    }

    pub(super) fn note_capture(&mut self, host: &Str, start: i64, end: i64) -> &mut Capture {
        let (tick, flows) = (self.tick, self.flows);
        self.flowing = true;
        self.fleet_time = self.fleet_time.max(end);
        let fleet_seen = self.fleet_time;
        let capture = self.captures.entry(host.clone()).or_insert(Capture {
            first_start: start,
            last_end: end,
            seen_tick: tick,
            sample_end: i64::MIN,
            flows_seen: flows,
            flows_first: flows,
            fleet_seen,
        });
        capture.first_start = capture.first_start.min(start);
        capture.last_end = capture.last_end.max(end);
        capture.seen_tick = tick;
        capture.flows_seen = flows;
        capture.fleet_seen = fleet_seen;
        capture
    }

    pub(super) fn note_topic(&mut self, writer: &Str, host: &Str, topic: Option<&str>) {
        if let Some(topic) = topic {
            let topic = self.intern(topic);
            self.writers
                .entry(writer.clone())
                .or_default()
                .topics
                .insert(host.clone(), topic);
        }
    }

    /// Counts a line that is not a span the join can use.
    pub fn reject(&mut self) {
        self.counters.spans = self.counters.spans.saturating_add(1);
        self.counters.rejected = self.counters.rejected.saturating_add(1);
    }

    pub fn add_sample(&mut self, span: &SampleSpan<'_>) {
        self.counters.spans = self.counters.spans.saturating_add(1);
        let host = self.intern(span.host);
        let writer = self.intern(span.writer);
        let capture = self.note_capture(&host, span.span_start, span.span_end);
        capture.sample_end = capture.sample_end.max(span.span_end);
        let start = span.start_ns;
        let tick = self.tick;
        let entry = self.writers.entry(writer.clone()).or_default();
        entry
            .hosts
            .entry(host.clone())
            .and_modify(|seen| {
                if start < seen.0 {
                    seen.0 = start;
                } else if start > seen.1 {
                    seen.1 = start;
                }
            })
            .or_insert((start, start));
        entry.seen_tick = Some(tick);
        self.note_topic(&writer, &host, span.topic);
        let row = SampleRow {
            host,
            start,
            end: span.span_end,
            missing: span.fragments_missing,
            size: span.sample_size,
            repairs: span.repairs,
            submessages: span.submessages,
            slot: self.intern(span.slot),
            addresses: self.addresses(span),
        };
        if self.joined_again(joined::sample_identity(&writer, span.sn, &row)) {
            return;
        }
        if let Some(pending) = self.samples.get_mut(&writer, span.sn, 0) {
            if pending.rows.iter().any(|r| r.same_span(&row)) {
                self.counters.duplicates = self.counters.duplicates.saturating_add(1);
            } else {
                pending.rows.push(row);
            }
            return;
        }
        if self.samples.len() >= self.settings.max_pending {
            self.join_oldest_sample();
        }
        let entry = match self.senderless.shift_remove(&(writer.clone(), span.sn)) {
            Some(mut parked) => {
                if parked.rows.iter().any(|r| r.same_span(&row)) {
                    self.counters.duplicates = self.counters.duplicates.saturating_add(1);
                } else {
                    parked.rows.push(row);
                }
                parked.first_tick = tick;
                parked
            }
            None => Pending {
                first_tick: tick,
                rows: vec![row],
                writer,
                sn: span.sn,
                fragment_starting_num: 0,
            },
        };
        self.samples.insert(entry);
    }

    pub fn add_frag(&mut self, span: &FragSpan<'_>) {
        self.counters.spans = self.counters.spans.saturating_add(1);
        let host = self.intern(span.host);
        self.note_capture(&host, span.start, span.end);
        if !plausible_fragment(span) {
            // impossible numbers are ignored, as by ddshark
            return;
        }
        let writer = self.intern(span.writer);
        self.note_topic(&writer, &host, span.topic);
        let row = FragRow {
            host,
            start: span.start,
            end: span.end,
            slot: self.intern(span.slot),
        };
        let fsn = span.fragment_starting_num;
        if self.joined_again(joined::frag_identity(&writer, span.sn, fsn, &row)) {
            return;
        }
        if let Some(pending) = self.frags.get_mut(&writer, span.sn, fsn) {
            if pending.rows.contains(&row) {
                self.counters.duplicates = self.counters.duplicates.saturating_add(1);
            } else {
                pending.rows.push(row);
            }
            return;
        }
        if self.frags.len() >= self.settings.max_pending {
            self.join_oldest_frag();
        }
        let tick = self.tick;
        self.frags.insert(Pending {
            first_tick: tick,
            rows: vec![row],
            writer,
            sn: span.sn,
            fragment_starting_num: fsn,
        });
    }
}

impl SampleRow {
    /// The same span again (a resent export, a redelivered batch): same host, capture
    /// times and slot.
    fn same_span(&self, other: &SampleRow) -> bool {
        self.host == other.host
            && self.start == other.start
            && self.end == other.end
            && self.slot == other.slot
    }
}

/// ddshark's `src_mac` (the 48-bit address as a number) as bytes; None beyond 48 bits.
pub(super) fn mac_bytes(number: i64) -> Option<[u8; 6]> {
    let bytes = u64::try_from(number).ok()?.to_be_bytes();
    match bytes {
        [0, 0, a, b, c, d, e, f] => Some([a, b, c, d, e, f]),
        _ => None,
    }
}

/// Most addresses of one announcement kept (ddshark sends at most 8).
const MAX_ANNOUNCED: usize = 16;

/// `10.0.0.1,10.0.0.2` (ddshark's `announced_ips`): the addresses that parse, None if none.
pub(super) fn parse_ips(text: &str) -> Option<Arc<[IpAddr]>> {
    let ips: Vec<IpAddr> = text
        .split(',')
        .filter_map(|t| t.trim().parse().ok())
        .take(MAX_ANNOUNCED)
        .collect();
    (!ips.is_empty()).then(|| Arc::from(ips))
}

/// Numbers a DATA_FRAG can carry: fragments from 1, within the sample's fragment count.
pub(super) fn plausible_fragment(span: &FragSpan<'_>) -> bool {
    let (fsn, count, size, sample) = (
        span.fragment_starting_num,
        span.frags_in_submessage,
        span.fragment_size,
        span.sample_size,
    );
    if fsn < 1 || count < 1 || size <= 0 || sample <= 0 {
        return false;
    }
    let last = fsn.checked_add(count).and_then(|v| v.checked_sub(1));
    let fragments = sample
        .checked_add(size)
        .and_then(|v| v.checked_sub(1))
        .map(|v| v / size);
    matches!((last, fragments), (Some(last), Some(fragments)) if last <= fragments)
}
