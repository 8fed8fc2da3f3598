//! `--otlp`: export one span per DATA/DATA_FRAG submessage, one `SAMPLE` span per
//! sample once it has been quiet for `--otlp-sample-window`, and per-topic counters as
//! metrics, to an OpenTelemetry collector (OTLP/gRPC or OTLP/HTTP).
//!
//! The `SAMPLE` spans are this host's half of `ddshark latency`'s join (the same
//! [`Join`], over one capture): first send, completion, repairs. The database then
//! joins hosts on one row per sample and host instead of one per submessage.
//!
//! The sink runs on the state thread. Live captures never wait for the exporter:
//! spans go into its bounded queue or are dropped and counted. File replays wait
//! for queue space while the collector accepts exports (nothing is lost by
//! waiting), and stop waiting as soon as exports fail; at their end they deliver
//! what is queued for as long as the collector keeps taking it.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use otel_export::schema::attr;
use otel_export::{
    ExportHandle, ExportStats, Exporter, FlushWait, MetricsSnapshot, SampleKind, SampleSummary,
    SampleTotals, SecuredPairCounters, SpanMapper, SpanRecord, TopicCounters, TrafficType,
};
use rtps_dissect::{Datagram, Guid};

use crate::latency::extract::{observations, ExtractStats, Obs};
use crate::latency::join::{Join, JoinConfig, JoinStats, LocalSample, SampleRow};
use crate::latency::Level;

use crate::pipeline::{Sink, SourceCtx};
use crate::state::Snapshot;

/// A live capture's exit flush without `--otlp-flush-timeout`: ending promptly matters more.
const LIVE_FLUSH_TIMEOUT: Duration = Duration::from_secs(10);
/// A replay's exit flush without `--otlp-flush-timeout` delivers everything unless no span was
/// delivered for this long (the collector went away or hangs).
const REPLAY_FLUSH_STALL: Duration = Duration::from_secs(30);
/// Seconds between the exit flush's progress lines.
const FLUSH_PROGRESS_EVERY_S: u32 = 2;

mod args;

use args::endpoint_label;
pub(crate) use args::system_host_name;
pub use args::OtlpArgs;

/// The capture.interface of a source: the interface name, or a file's base name.
fn interface_of(source_name: &str) -> String {
    let p = Path::new(source_name);
    if p.components().count() > 1 || p.extension().is_some() {
        p.file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_else(|| source_name.to_string())
    } else {
        source_name.to_string()
    }
}

/// The samples of one packet source awaiting their `SAMPLE` span.
struct SampleTracker {
    join: Join,
    obs: Vec<Obs>,
    /// (submessage index, slot) of the datagram's spans, to give samples their first span's slot.
    slots: Vec<(u32, u16)>,
    /// The datagram's DATA/DATA_FRAG span records, until its samples were observed.
    records: Vec<SpanRecord>,
    /// (submessage index, writer, SN) of the datagram's observations that started a sample.
    started: Vec<(u32, Guid, i64)>,
    finalised: Vec<LocalSample>,
    extract: ExtractStats,
    /// Never filled: a join of one capture has no sender/receiver rows.
    rows: Vec<SampleRow>,
}

impl SampleTracker {
    fn new(window_ns: u64, max_bytes: usize) -> Self {
        Self {
            join: Join::new(JoinConfig {
                captures: 1,
                window_ns: i64::try_from(window_ns).unwrap_or(i64::MAX),
                max_pending: 4_000_000,
                max_bytes,
                lost: latency_core::LostRule::default(),
            }),
            obs: Vec::new(),
            slots: Vec::new(),
            records: Vec::new(),
            started: Vec::new(),
            finalised: Vec::new(),
            extract: ExtractStats::default(),
            rows: Vec::new(),
        }
    }

    /// Tracks the samples of `d` whose topic the exporter `wants` (`--otlp-topic`: the
    /// others' SAMPLE spans would only be filtered, so they take no memory).
    fn observe(&mut self, d: &Datagram<'_>, wants: impl Fn(Option<&str>) -> bool) {
        self.obs.clear();
        self.started.clear();
        observations(d, Level::Sample, 0, &mut self.extract, &mut self.obs);
        for mut o in self.obs.drain(..) {
            let builtin = o.key.writer.entity.builtin_topic().map(|b| b.name);
            if !wants(o.topic.as_deref().or(builtin)) {
                continue;
            }
            if let Some(&(_, slot)) = self.slots.iter().find(|(i, _)| *i == o.index) {
                o.slot = slot;
            }
            let (index, writer, sn) = (o.index, o.key.writer, o.key.sn);
            if self.join.push(0, o, &mut self.rows) {
                self.started.push((index, writer, sn));
            }
        }
        self.advance(i64::try_from(d.ts_last_ns).unwrap_or(i64::MAX));
    }

    fn advance(&mut self, now_ns: i64) {
        self.join.advance(now_ns, &mut self.rows);
        self.join.take_local(&mut self.finalised);
    }

    fn finish(&mut self) {
        self.join.finish(&mut self.rows);
        self.join.take_local(&mut self.finalised);
    }
}

/// Whether the DATA span `r` started its sample in the datagram just observed (`started`:
/// [`SampleTracker::started`]): the sample's SAMPLE span will say all of it that is kept.
fn started_sample(started: &[(u32, Guid, i64)], r: &SpanRecord) -> bool {
    r.kind == SampleKind::Data && started.contains(&(r.submessage_index, r.writer, r.sn))
}

/// What the `SAMPLE` span of a sample a capture saw says (before the mapper's own: ids,
/// slot, domain, announced addresses).
pub fn sample_summary(s: &LocalSample) -> SampleSummary {
    let ns = |t: i64| u64::try_from(t).unwrap_or(0);
    let unspecified = std::net::SocketAddr::from(([0, 0, 0, 0], 0));
    SampleSummary {
        writer: s.key.writer,
        sn: s.key.sn,
        topic: s.topic.clone(),
        sample_size: s.sample_size,
        first_ns: ns(s.t_first),
        end_ns: ns(s.t_complete.unwrap_or(s.t_last)),
        frame_first: s.frame_first,
        frame: s.frame_complete.unwrap_or(s.frame_first),
        slot: s.slot,
        src: s.src.unwrap_or(unspecified),
        dst: s.dst.unwrap_or(unspecified),
        pcp: s.pcp,
        vlan_id: s.vlan_id,
        vendor: s.vendor,
        type_name: s.type_name.clone(),
        totals: SampleTotals {
            fragments: s.units,
            fragments_missing: s.units.saturating_sub(s.units_seen),
            submessages: s.submessages,
            repairs: s.repairs,
            src_mac: s.src_mac,
        },
    }
}

/// One packet source's span mapper and sample tracker.
struct SourceExport {
    mapper: SpanMapper,
    samples: Option<SampleTracker>,
}

/// The pipeline sink that maps datagrams to spans and snapshots to metrics.
pub(crate) struct OtlpSink {
    exporter: Option<Exporter>,
    handle: ExportHandle,
    host: String,
    interface: Option<String>,
    /// One mapper per packet source (their interfaces differ).
    sources: Vec<Option<SourceExport>>,
    /// `SAMPLE` spans: (window ns, memory cap bytes); None with `--otlp-no-samples`.
    samples: Option<(u64, usize)>,
    /// `--otlp-lean`: a sample's first DATA is no span of its own (its SAMPLE span carries
    /// it); DATA spans are sent for the copies after it (repairs, retransmissions).
    first_data_in_sample: bool,
    /// DATA spans left to their SAMPLE span so far.
    data_in_sample: u64,
    /// Samples sent early because the tracker's memory was full, already reported.
    reported_early: u64,
    /// Slot-memory restarts already reported (`SpanMapper::slot_resets`, summed over sources).
    reported_slot_resets: u64,
    /// Participant-memory restarts already reported (`SpanMapper::participant_resets`).
    reported_participant_resets: u64,
    /// Wait for queue space (file replays) instead of dropping.
    wait: Option<Duration>,
    metrics: bool,
    flush_wait: FlushWait,
    reported: ExportStats,
    endpoint: String,
}

impl OtlpSink {
    /// Starts the exporter. `live`: the capture must never wait for it.
    pub(crate) fn start(args: &OtlpArgs, live: bool) -> Result<Self> {
        if !args.otlp_no_samples && args.otlp_sample_window.ns() == 0 {
            anyhow::bail!(
                "--otlp-sample-window must be more than 0 seconds (or use --otlp-no-samples)"
            );
        }
        let cfg = args.config()?;
        let endpoint = endpoint_label(&cfg.traces, |k| std::env::var(k).ok());
        let timeout = cfg.traces.timeout;
        let metrics = !args.otlp_no_metrics;
        let exporter = Exporter::start(cfg, metrics).context("starting the OTLP exporter")?;
        let host = exporter.resource_value(attr::HOST_NAME).unwrap_or_default();
        Ok(Self {
            handle: exporter.handle(),
            exporter: Some(exporter),
            host,
            interface: args.capture_interface.clone(),
            sources: Vec::new(),
            samples: (!args.otlp_no_samples).then(|| {
                (
                    args.otlp_sample_window.ns(),
                    args.otlp_sample_memory.saturating_mul(1 << 20),
                )
            }),
            first_data_in_sample: args.otlp_lean && !args.otlp_no_samples,
            data_in_sample: 0,
            reported_early: 0,
            reported_slot_resets: 0,
            reported_participant_resets: 0,
            wait: (!live).then_some(timeout),
            metrics,
            flush_wait: match args.otlp_flush_timeout {
                Some(limit) => FlushWait::AtMost(limit.duration().min(Duration::from_secs(3600))),
                None if live => FlushWait::AtMost(LIVE_FLUSH_TIMEOUT),
                None => FlushWait::WhileDelivering(REPLAY_FLUSH_STALL),
            },
            reported: ExportStats::default(),
            endpoint,
        })
    }

    /// The producer handle (counters for health views).
    pub(crate) fn handle(&self) -> ExportHandle {
        self.handle.clone()
    }

    fn source(&mut self, ctx: &SourceCtx<'_>) -> Option<&mut SourceExport> {
        if self.sources.len() <= ctx.source_index {
            self.sources
                .resize_with(ctx.source_index.saturating_add(1), || None);
        }
        let samples = self.samples;
        let slot = self.sources.get_mut(ctx.source_index)?;
        if slot.is_none() {
            let iface = self
                .interface
                .clone()
                .unwrap_or_else(|| interface_of(ctx.source_name));
            *slot = Some(SourceExport {
                mapper: SpanMapper::new(&self.host, Some(&iface)),
                samples: samples.map(|(window, bytes)| SampleTracker::new(window, bytes)),
            });
        }
        slot.as_mut()
    }

    /// Exports the `SAMPLE` spans of the samples the trackers finalised.
    fn export_samples(&mut self) {
        let handle = self.handle.clone();
        let wait = self.wait;
        for src in self.sources.iter_mut().flatten() {
            let Some(t) = src.samples.as_mut() else {
                continue;
            };
            for s in t.finalised.drain(..) {
                export(&handle, wait, src.mapper.sample(&sample_summary(&s)));
            }
        }
    }

    /// The trackers' join counters, summed over sources.
    fn sample_stats(&self) -> JoinStats {
        let mut total = JoinStats::default();
        for t in self
            .sources
            .iter()
            .flatten()
            .filter_map(|s| s.samples.as_ref())
        {
            let s = t.join.stats();
            total.keys = total.keys.saturating_add(s.keys);
            total.pending = total.pending.saturating_add(s.pending);
            total.bytes_held = total.bytes_held.saturating_add(s.bytes_held);
            total.finalised = total.finalised.saturating_add(s.finalised);
            total.evicted_capacity = total.evicted_capacity.saturating_add(s.evicted_capacity);
            total.pending_peak = total.pending_peak.saturating_add(s.pending_peak);
            total.bytes_peak = total.bytes_peak.saturating_add(s.bytes_peak);
        }
        total
    }

    /// Reports new drops or failures on stderr (once per snapshot at most).
    fn report_problems(&mut self) {
        let early = self.sample_stats().evicted_capacity;
        if early > self.reported_early {
            eprintln!(
                "ddshark: otlp: {early} samples' SAMPLE spans sent before their window ended \
                 (--otlp-sample-memory full; a later copy of such a sample becomes a SAMPLE span of its own)"
            );
            self.reported_early = early;
        }
        let slot_resets = self
            .sources
            .iter()
            .flatten()
            .fold(0u64, |n, s| n.saturating_add(s.mapper.slot_resets()));
        if slot_resets > self.reported_slot_resets {
            eprintln!(
                "ddshark: otlp: the writer -> slot memory was full {slot_resets} time(s) and started over \
                 (more writers than it holds): two spans of one writer with the same start time may now share \
                 a slot, and InfluxDB keeps one of them"
            );
            self.reported_slot_resets = slot_resets;
        }
        let participant_resets = self
            .sources
            .iter()
            .flatten()
            .fold(0u64, |n, s| n.saturating_add(s.mapper.participant_resets()));
        if participant_resets > self.reported_participant_resets {
            eprintln!(
                "ddshark: otlp: the memory of participants' announcements was full {participant_resets} time(s) \
                 and started over (more participants than it holds, 4096): spans go without domain_id (unless \
                 the port says it) and SPDP SAMPLE spans without announced_ips until each participant announces again"
            );
            self.reported_participant_resets = participant_resets;
        }
        let s = self.handle.stats();
        let r = &self.reported;
        if s.dropped > r.dropped || s.failed > r.failed {
            eprintln!(
                "ddshark: otlp {}: {} spans dropped (queue full), {} failed so far; last error: {}",
                self.endpoint,
                s.dropped,
                s.failed,
                s.last_error.as_deref().unwrap_or("none")
            );
        }
        self.reported = s;
    }

    fn metrics_of(snap: &Snapshot) -> MetricsSnapshot {
        MetricsSnapshot {
            start_ns: snap
                .summary
                .first_ts_ns
                .unwrap_or(snap.summary.capture_time_ns),
            time_ns: snap.summary.capture_time_ns,
            tcp: snap.health.dissector.tcp,
            topics: snap
                .topics
                .iter()
                .map(|t| TopicCounters {
                    topic: t.name.clone(),
                    type_name: (!t.type_name.is_empty()).then(|| t.type_name.clone()),
                    traffic: if t.builtin {
                        TrafficType::Discovery
                    } else {
                        TrafficType::User
                    },
                    samples: t.totals.samples,
                    bytes: t.totals.bytes,
                    lost: t.totals.lost,
                    retransmitted: t.totals.retransmitted,
                    deadline_misses: t.timing.deadline_misses,
                    rate_hz: t.rate.hz,
                    period_jitter_ns: t.timing.period_stddev_ns,
                    shared_memory_only: t.shared_memory_only,
                })
                .collect(),
            secured: snap
                .secured
                .pairs
                .iter()
                .map(|p| SecuredPairCounters {
                    src: p.src.clone(),
                    src_name: p.src_name.clone(),
                    dst: p.dst.clone(),
                    dst_name: p.dst_name.clone(),
                    messages: p.totals.messages,
                    submessages: p.totals.sec_submessages,
                    bytes: p.totals.bytes,
                })
                .collect(),
        }
    }
}

/// One line about what the exporter did, for stderr at exit.
pub(crate) fn summary_line(endpoint: &str, s: &ExportStats) -> String {
    format!(
        "ddshark: otlp {endpoint}: {} spans: {} sent, {} filtered, {} dropped (queue full), {} failed, {} abandoned at exit; {} requests ({} failed after the exporter's retries); metrics {}",
        s.offered,
        s.sent,
        s.filtered,
        s.dropped,
        s.failed,
        s.abandoned,
        s.requests_ok + s.requests_failed,
        s.requests_failed,
        metrics_outcome(s),
    )
}

/// What became of the metrics reports: sent, failed, dropped, and whether a later
/// export superseded the ones that did not get through (metrics are cumulative).
fn metrics_outcome(s: &ExportStats) -> String {
    let mut out = format!("{} sent, {} failed", s.metrics_sent, s.metrics_failed);
    if s.metrics_dropped > 0 {
        out += &format!(", {} dropped (queue full)", s.metrics_dropped);
    }
    if s.metrics_failed + s.metrics_dropped > 0 {
        out += &if s.metrics_undelivered == 0 {
            " (all superseded: a later export carried their totals)".to_string()
        } else if s.metrics_sent == 0 {
            " (none got through)".to_string()
        } else {
            format!(
                " ({} after the last one exported: the totals since then are lost)",
                s.metrics_undelivered
            )
        };
    }
    out
}

fn export(handle: &ExportHandle, wait: Option<Duration>, rec: SpanRecord) {
    match wait {
        Some(w) => handle.export_or_wait(rec, w),
        None => handle.try_export(rec),
    };
}

impl Sink for OtlpSink {
    fn on_datagram(&mut self, d: &Datagram<'_>, ctx: &SourceCtx<'_>) {
        let handle = self.handle.clone();
        let wait = self.wait;
        let first_data_in_sample = self.first_data_in_sample;
        let Some(src) = self.source(ctx) else {
            return;
        };
        let Some(t) = src.samples.as_mut() else {
            src.mapper.map(d, |rec| export(&handle, wait, rec));
            return;
        };
        t.slots.clear();
        t.records.clear();
        let (slots, records) = (&mut t.slots, &mut t.records);
        src.mapper.map(d, |rec| {
            slots.push((rec.submessage_index, rec.slot));
            records.push(rec);
        });
        // (the spans go after the samples were observed: whether a DATA started its sample
        // is known then)
        t.observe(d, |topic| handle.wants(topic));
        let mut in_sample = 0u64;
        let started = &t.started;
        for rec in t.records.drain(..) {
            if first_data_in_sample && started_sample(started, &rec) {
                in_sample = in_sample.saturating_add(1);
            } else {
                export(&handle, wait, rec);
            }
        }
        let finalised = !t.finalised.is_empty();
        self.data_in_sample = self.data_in_sample.saturating_add(in_sample);
        if finalised {
            self.export_samples();
        }
    }

    fn on_snapshot(&mut self, snapshot: &Arc<Snapshot>) {
        // A quiet live capture still finalises its samples: snapshots follow capture time.
        let now = i64::try_from(snapshot.summary.capture_time_ns).unwrap_or(i64::MAX);
        for t in self
            .sources
            .iter_mut()
            .flatten()
            .filter_map(|s| s.samples.as_mut())
        {
            t.advance(now);
        }
        self.export_samples();
        if self.metrics {
            self.handle.export_metrics(Self::metrics_of(snapshot));
        }
        self.report_problems();
    }

    fn finish(&mut self, snapshot: &Arc<Snapshot>) {
        for t in self
            .sources
            .iter_mut()
            .flatten()
            .filter_map(|s| s.samples.as_mut())
        {
            t.finish();
        }
        self.export_samples();
        if self.samples.is_some() {
            let s = self.sample_stats();
            eprintln!(
                "ddshark: otlp: {} SAMPLE spans ({} sent early: --otlp-sample-memory full); at most {} samples awaiting theirs, ~{} MiB",
                s.finalised,
                s.evicted_capacity,
                s.pending_peak,
                s.bytes_peak >> 20
            );
        }
        if self.first_data_in_sample {
            eprintln!(
                "ddshark: otlp: {} DATA spans not sent: each was its sample's first copy, which its SAMPLE span carries (--otlp-lean)",
                self.data_in_sample
            );
        }
        if self.metrics {
            self.handle.export_metrics(Self::metrics_of(snapshot));
        }
        self.shut_down();
    }
}

impl OtlpSink {
    /// Delivers what is queued (as `flush_wait` says, with progress on stderr) and says how
    /// the export went.
    fn shut_down(&mut self) {
        let Some(e) = self.exporter.take() else {
            return;
        };
        let endpoint = &self.endpoint;
        let mut seconds = 0u32;
        let stats = e.shutdown(self.flush_wait, &mut |left| {
            seconds = seconds.saturating_add(1);
            if seconds.is_multiple_of(FLUSH_PROGRESS_EVERY_S) {
                eprintln!(
                    "ddshark: otlp: delivering the spans still queued to {endpoint}: {left} left (a second Ctrl-C abandons them)"
                );
            }
        });
        eprintln!("{}", summary_line(endpoint, &stats));
    }
}

impl Drop for OtlpSink {
    fn drop(&mut self) {
        self.shut_down();
    }
}

/// An error naming the endpoint when spans or the last metrics were not delivered (the
/// collector refused them or was not there): the run exits non-zero. Spans dropped on
/// a full queue (live capture, collector too slow) are counted and reported, not
/// failures; so is a failed metrics report a later export superseded (metrics are
/// cumulative: that export carried its totals).
pub(crate) fn check_delivered(args: &OtlpArgs, s: &ExportStats) -> Result<()> {
    let lost = s.failed.saturating_add(s.abandoned);
    if lost == 0 && s.metrics_undelivered == 0 {
        return Ok(());
    }
    // Only metrics lost: name where they went.
    let endpoint = args
        .config()
        .map(|c| {
            let signal = if lost == 0 { &c.metrics } else { &c.traces };
            endpoint_label(signal, |k| std::env::var(k).ok())
        })
        .unwrap_or_else(|_| "the OTLP endpoint".into());
    anyhow::bail!(
        "OTLP export to {endpoint} failed: {} of {} spans not delivered ({} failed, {} abandoned at exit); metrics {}; last error: {}",
        lost,
        s.offered.saturating_sub(s.filtered),
        s.failed,
        s.abandoned,
        metrics_outcome(s),
        s.last_error.as_deref().unwrap_or("none")
    )
}

/// The sink for the daemon, when `--otlp` was given, and the exporter's handle, whose
/// counters the TUI's Health view shows.
pub(crate) fn sink_with_handle(
    args: &OtlpArgs,
    live: bool,
) -> Result<Option<(Box<dyn Sink>, ExportHandle)>> {
    if !args.enabled() {
        return Ok(None);
    }
    let s = OtlpSink::start(args, live)?;
    eprintln!("ddshark: exporting spans over OTLP to {}", s.endpoint);
    let h = s.handle();
    Ok(Some((Box::new(s), h)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interface_names() {
        assert_eq!(interface_of("eth0"), "eth0");
        assert_eq!(interface_of("/x/y/a.pcap"), "a.pcap");
        assert_eq!(interface_of("a.pcap"), "a.pcap");
    }
}
