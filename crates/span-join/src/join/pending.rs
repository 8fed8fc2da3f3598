//! The samples and DATA_FRAGs waiting to be joined, in order of arrival; when `max_pending`
//! wait, the oldest is joined early and its points wait for the next push.

use super::*;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Pending<R> {
    pub(super) first_tick: u64,
    pub(super) rows: Vec<R>,
    pub(super) writer: Str,
    pub(super) sn: i64,
    pub(super) fragment_starting_num: i64,
}

/// Pending samples (or DATA_FRAGs) in order of arrival, found by (writer, SN[, fragment]).
/// Entries leave from anywhere when due, the oldest first when full.
#[derive(Debug)]
pub(super) struct PendingQueue<R> {
    /// Sequence number of `entries[0]`.
    pub(super) base: u64,
    pub(super) entries: VecDeque<Pending<R>>,
    pub(super) index: HashMap<(Str, i64, i64), u64>,
}

impl<R> Default for PendingQueue<R> {
    fn default() -> Self {
        PendingQueue {
            base: 0,
            entries: VecDeque::new(),
            index: HashMap::new(),
        }
    }
}

impl<R> PendingQueue<R> {
    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Takes the entries at positions `at` (ascending) out, in order: from the front
    /// cheaply, from anywhere by rebuilding the queue.
    pub(super) fn take(&mut self, at: &[usize]) -> Vec<Pending<R>> {
        if at.iter().enumerate().all(|(n, &i)| n == i) {
            return at.iter().filter_map(|_| self.pop_front()).collect();
        }
        let entries = std::mem::take(&mut self.entries);
        self.index.clear();
        // (sequence numbers after the old ones: none is used twice)
        self.base = self.base.saturating_add(entries.len() as u64);
        let mut taken = Vec::with_capacity(at.len());
        let mut next = at.iter().peekable();
        for (i, entry) in entries.into_iter().enumerate() {
            if next.next_if_eq(&&i).is_some() {
                taken.push(entry);
            } else {
                self.insert(entry);
            }
        }
        taken
    }

    pub(super) fn get_mut(&mut self, writer: &Str, sn: i64, fsn: i64) -> Option<&mut Pending<R>> {
        let seq = *self.index.get(&(writer.clone(), sn, fsn))?;
        let at = usize::try_from(seq.checked_sub(self.base)?).ok()?;
        self.entries.get_mut(at)
    }

    pub(super) fn insert(&mut self, entry: Pending<R>) {
        let seq = self.base.saturating_add(self.entries.len() as u64);
        self.index.insert(
            (entry.writer.clone(), entry.sn, entry.fragment_starting_num),
            seq,
        );
        self.entries.push_back(entry);
    }

    pub(super) fn pop_front(&mut self) -> Option<Pending<R>> {
        let entry = self.entries.pop_front()?;
        self.base = self.base.saturating_add(1);
        self.index
            .remove(&(entry.writer.clone(), entry.sn, entry.fragment_starting_num));
        Some(entry)
    }
}

/// What the join reads of a waiting row of either kind: the host of its copy and when it
/// started there, and the strings it shares with the join (host, slot).
pub(super) trait PendingRow {
    fn seen(&self) -> (&Str, i64);
    fn strings(&mut self) -> [&mut Str; 2];
}

impl PendingRow for SampleRow {
    fn seen(&self) -> (&Str, i64) {
        (&self.host, self.start)
    }

    fn strings(&mut self) -> [&mut Str; 2] {
        [&mut self.host, &mut self.slot]
    }
}

impl PendingRow for FragRow {
    fn seen(&self) -> (&Str, i64) {
        (&self.host, self.start)
    }

    fn strings(&mut self) -> [&mut Str; 2] {
        [&mut self.host, &mut self.slot]
    }
}

impl SpanJoin {
    pub(super) fn join_oldest_sample(&mut self) {
        if let Some(p) = self.samples.pop_front() {
            self.clocks.queued.push((p.writer.clone(), p.rows.clone()));
            self.join_early(|join, out| join.join_sample(&p, out));
        }
    }

    pub(super) fn join_oldest_frag(&mut self) {
        if let Some(p) = self.frags.pop_front() {
            self.join_early(|join, out| join.join_frag(&p, out));
        }
    }

    /// Joins one sample or DATA_FRAG before its time (the table is full); its points wait
    /// for the next push.
    pub(super) fn join_early(&mut self, join: impl FnOnce(&mut Self, &mut LineWriter) -> u64) {
        self.counters.early = self.counters.early.saturating_add(1);
        let mut out = std::mem::take(&mut self.early_out);
        let points = join(self, &mut out);
        self.early_points = self.early_points.saturating_add(points);
        self.early_out = out;
    }

    /// The points of what was joined early since the last push, into `out`; how many.
    pub(super) fn take_early(&mut self, out: &mut LineWriter) -> u64 {
        out.buf.push_str(&self.early_out.buf);
        self.early_out.buf.clear();
        std::mem::take(&mut self.early_points)
    }
}
