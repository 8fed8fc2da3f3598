//! The per-second totals: `dds_latency_1s` (the latencies of the samples first sent in a
//! second, per sender, receiver and topic) and `dds_repairs` (per writer on its own host),
//! rewritten while samples of their second are joined.

use super::*;

/// The latencies of the samples a sender's writers of one topic first sent in one second,
/// at one receiver (latency_core's totals).
#[derive(Debug, Default, Serialize, Deserialize)]
pub(super) struct LatencySecond {
    pub(super) tick: u64,
    #[serde(flatten)]
    pub(super) totals: LatencyTotals,
    pub(super) dirty: bool,
}

impl LatencySecond {
    pub(super) fn add(&mut self, tick: u64, latency_ns: i64) {
        self.tick = tick;
        self.totals.add(latency_ns);
        self.dirty = true;
    }
}

#[derive(Debug, Serialize, Deserialize)]
pub(super) struct RepairSecond {
    pub(super) tick: u64,
    pub(super) topic: Str,
    pub(super) repairs: i64,
    pub(super) submessages: i64,
    pub(super) dirty: bool,
}

impl SpanJoin {
    pub(super) fn count_repairs(
        &mut self,
        writer: &Str,
        home: &Str,
        topic: &Str,
        t_send: i64,
        repairs: i64,
        submessages: i64,
    ) {
        let tick = self.tick;
        let second = t_send.div_euclid(NS);
        let acc = self
            .repairs
            .entry((writer.clone(), home.clone(), second))
            .or_insert_with(|| RepairSecond {
                tick,
                topic: topic.clone(),
                repairs: 0,
                submessages: 0,
                dirty: true,
            });
        acc.tick = tick;
        acc.repairs = acc.repairs.saturating_add(repairs);
        acc.submessages = acc.submessages.saturating_add(submessages);
        acc.dirty = true;
    }

    pub(super) fn write_repairs(&mut self, out: &mut LineWriter) -> u64 {
        let mut points = 0u64;
        for ((writer, sender, second), acc) in &mut self.repairs {
            if acc.dirty {
                acc.dirty = false;
                shard_tag(out.point(measurement::REPAIRS), self.settings.shard)
                    .tag("sender", sender)
                    .tag("topic_name", &acc.topic)
                    .tag("writer_id", writer)
                    .int("repairs", acc.repairs)
                    .int("submessages", acc.submessages)
                    .end(Some(second.saturating_mul(NS)));
                points = points.saturating_add(1);
            }
        }
        points
    }

    pub(super) fn write_latency_seconds(&mut self, out: &mut LineWriter) -> u64 {
        let mut points = 0u64;
        for ((sender, receiver, topic, second), acc) in &mut self.latency_seconds {
            if acc.dirty {
                acc.dirty = false;
                shard_tag(out.point(measurement::LATENCY_1S), self.settings.shard)
                    .tag("receiver", receiver)
                    .tag("sender", sender)
                    .tag("topic_name", topic)
                    .int("samples", as_i64(acc.totals.samples))
                    .int("latency_sum_ns", acc.totals.sum_clamped())
                    .int("latency_min_ns", acc.totals.min_ns)
                    .int("latency_max_ns", acc.totals.max_ns)
                    .end(Some(second.saturating_mul(NS)));
                points = points.saturating_add(1);
            }
        }
        points
    }
}
