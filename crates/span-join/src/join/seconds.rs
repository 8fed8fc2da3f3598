//! The per-second totals: `dds_latency_1s` (the latencies of the samples first sent in a
//! second, per sender, receiver and topic) and `dds_repairs` (per writer on its own host),
//! rewritten while samples of their second are joined.

use super::*;

/// The latencies of the samples a sender's writers of one topic first sent in one second,
/// at one receiver.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct LatencySecond {
    pub(super) tick: u64,
    pub(super) samples: i64,
    pub(super) sum_ns: i64,
    pub(super) min_ns: i64,
    pub(super) max_ns: i64,
    pub(super) dirty: bool,
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
                    .int("samples", acc.samples)
                    .int("latency_sum_ns", acc.sum_ns)
                    .int("latency_min_ns", acc.min_ns)
                    .int("latency_max_ns", acc.max_ns)
                    .end(Some(second.saturating_mul(NS)));
                points = points.saturating_add(1);
            }
        }
        points
    }
}

/// Adds one sample's latency to its second (a free function: the caller holds borrows of
/// the join's other maps).
pub(super) fn count_latency(
    seconds: &mut IndexMap<(Str, Str, Str, i64), LatencySecond>,
    tick: u64,
    (sender, receiver, topic): (&Str, &Str, &Str),
    t_send: i64,
    latency: i64,
) {
    let key = (
        sender.clone(),
        receiver.clone(),
        topic.clone(),
        t_send.div_euclid(NS),
    );
    let acc = seconds.entry(key).or_insert(LatencySecond {
        tick,
        samples: 0,
        sum_ns: 0,
        min_ns: latency,
        max_ns: latency,
        dirty: true,
    });
    acc.tick = tick;
    acc.samples = acc.samples.saturating_add(1);
    acc.sum_ns = acc.sum_ns.saturating_add(latency);
    acc.min_ns = acc.min_ns.min(latency);
    acc.max_ns = acc.max_ns.max(latency);
    acc.dirty = true;
}
