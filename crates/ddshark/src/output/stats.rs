//! `ddshark stats`'s reports: the snapshot as one JSON document, or as a readable text
//! report (also what the daemon prints), written section by section.

use std::fmt::Write as _;
use std::io::{self, Write};

use crate::output::contract::stats as contract;
use crate::state::rate::RateView;
use crate::state::ros::{display_topic, display_type};
use crate::state::snapshot::{Snapshot, TopicView};
use crate::state::timing::TimingView;
use crate::units;

/// The snapshot as one pretty-printed JSON document (the contract's) and a newline.
pub(crate) fn write_json(out: &mut dyn Write, snap: &Snapshot) -> io::Result<()> {
    // io::Error::from keeps a write error's kind, so a closed pipe still reads as one.
    serde_json::to_writer_pretty(&mut *out, &contract::Document::of(snap))
        .map_err(io::Error::from)
        .and_then(|()| out.write_all(b"\n"))
}

/// The readable report: totals, one line per topic, timing, secured traffic, what needs
/// attention, health.
pub fn text_report(s: &Snapshot, o: &ReportOptions) -> String {
    let mut r = String::new();
    summary(&mut r, s);
    topics_table(&mut r, s, o);
    timing_table(&mut r, s, o);
    secured_table(&mut r, s);
    notes(&mut r, s, o);
    health_line(&mut r, s);
    r
}

/// Totals: what was captured, decoded and discovered; user data and losses.
fn summary(r: &mut String, s: &Snapshot) {
    let h = &s.health;
    let d = &h.dissector;
    let _ = writeln!(
        r,
        "capture {:.3} s: {} frames dissected, {} RTPS datagrams ({} IP fragments reassembled), {} submessages; {} participants, {} writers, {} readers, {} topics (+{} built-in)",
        s.summary.duration_s,
        d.frames,
        d.rtps_datagrams,
        d.ip.reassembled,
        d.submessages,
        h.participants,
        h.writers,
        h.readers,
        s.topics.iter().filter(|t| !t.builtin).count(),
        s.topics.iter().filter(|t| t.builtin).count()
    );
    let _ = writeln!(
        r,
        "user data: {} samples, {}; all writers: {} samples, lost {}, retransmitted {} (repaired {}), incomplete {}",
        s.summary.user_samples,
        units::bytes(s.summary.user_bytes as f64),
        s.summary.totals.samples,
        s.summary.totals.lost,
        s.summary.totals.retransmitted,
        s.summary.totals.repaired,
        s.summary.totals.incomplete
    );
}

/// One line per topic (then the built-in ones, marked, with `builtin`): endpoints,
/// samples, rates, losses, sizes.
fn topics_table(r: &mut String, s: &Snapshot, o: &ReportOptions) {
    let _ = writeln!(
        r,
        "\n{:<40} {:<34} {:>3} {:>3} {:>8} {:>10} {:>8} {:>10} {:>6} {:>6} {:>6} {:>24}",
        "TOPIC",
        "TYPE",
        "W",
        "R",
        "SAMPLES",
        "BYTES",
        "RATE/s",
        "BW",
        "LOST",
        "RETX",
        "INCMP",
        "SIZE min/mean/max"
    );
    let shown = || shown_topics(s, o.builtin);
    for t in shown() {
        let size = match (t.size.min, t.size.mean, t.size.max) {
            (Some(a), Some(m), Some(b)) => format!("{a}/{m:.0}/{b}"),
            _ => "-".into(),
        };
        let _ = writeln!(
            r,
            "{:<40} {:<34} {:>3} {:>3} {:>8} {:>10} {:>8} {:>10} {:>6} {:>6} {:>6} {:>24}",
            trunc(&topic_name(t, o), 40),
            trunc(&display_type(&t.type_name, o.ros), 34),
            t.writers,
            t.readers,
            t.totals.samples,
            units::bytes(t.totals.bytes as f64),
            rate_text(&t.rate),
            bandwidth_text(&t.rate),
            t.totals.lost,
            t.totals.retransmitted,
            t.totals.incomplete,
            size
        );
    }
    if shown().any(|t| t.rate.over_active_span && t.rate.hz.is_some()) {
        let _ = writeln!(r, "{ACTIVE_SPAN_NOTE}");
    }
}

/// Marks a rate taken over a writer's own active span rather than the whole window.
pub(crate) const ACTIVE_SPAN_MARK: &str = "*";

/// What [`ACTIVE_SPAN_MARK`] means, under a table that shows it.
pub(crate) const ACTIVE_SPAN_NOTE: &str =
    "* rate over the writer's own first→latest sample: it was active less than the window (--window)";

/// A rate as the tables show it: `30.0`, `30.0*` over an active span, `-` when none.
fn rate_text(r: &RateView) -> String {
    match r.hz {
        Some(v) if r.over_active_span => format!("{v:.1}{ACTIVE_SPAN_MARK}"),
        Some(v) => format!("{v:.1}"),
        None => "-".into(),
    }
}

fn bandwidth_text(r: &RateView) -> String {
    r.bandwidth_bps
        .map_or("-".into(), |b| format!("{}/s", units::bytes(b / 8.0)))
}

/// The topics a report lists: the user's, then (with `builtin`) the built-in ones, as
/// `stats` JSON has them all.
fn shown_topics(s: &Snapshot, builtin: bool) -> impl Iterator<Item = &TopicView> {
    let user = s.topics.iter().filter(|t| !t.builtin);
    let builtins = s.topics.iter().filter(move |t| t.builtin && builtin);
    user.chain(builtins)
}

/// Marks a built-in (discovery) topic's name in the text tables.
const BUILTIN_MARK: &str = " [built-in]";

fn topic_name(t: &TopicView, o: &ReportOptions) -> String {
    let name = display_topic(&t.name, o.ros);
    if t.builtin {
        format!("{name}{BUILTIN_MARK}")
    } else {
        name
    }
}

#[derive(Debug, Clone, Copy, Default)]
pub struct ReportOptions {
    pub(crate) ros: bool,
    /// List the built-in topics too (`stats` does, as its JSON; `--no-tui` does not).
    pub(crate) builtin: bool,
    /// List writers that need attention (loss, no discovery, shared memory).
    pub(crate) writers: bool,
}

fn trunc(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

fn ms(ns: Option<f64>) -> String {
    ns.map_or("-".into(), |v| format!("{:.2}", v / 1e6))
}

/// Per topic (and, with `--writers`, per writer): rate (the topics table's), time active,
/// period min/mean/max, jitter, DEADLINE and the samples later than it.
fn timing_table(r: &mut String, s: &Snapshot, o: &ReportOptions) {
    let _ = writeln!(
        r,
        "\ntiming (capture time of each new sample, as `ros2 topic hz` would see it at this point)\n{:<40} {:>8} {:>8} {:>26} {:>10} {:>10} {:>7}",
        "TOPIC / writer", "RATE/s", "ACTIVE s", "PERIOD ms min/mean/max", "JITTER ms", "DEADLINE", "MISSED"
    );
    let row = |r: &mut String, name: String, t: &TimingView, rate: &RateView| {
        let period = format!(
            "{}/{}/{}",
            ms(t.period_min_ns.map(|v| v as f64)),
            ms(t.period_mean_ns),
            ms(t.period_max_ns.map(|v| v as f64))
        );
        let _ = writeln!(
            r,
            "{:<40} {:>8} {:>8.3} {:>26} {:>10} {:>10} {:>7}",
            trunc(&name, 40),
            rate_text(rate),
            t.active_s,
            period,
            ms(t.period_stddev_ns),
            t.deadline_ns
                .map_or("-".into(), |d| format!("{} ms", ms(Some(d as f64)))),
            t.deadline_misses
        );
    };
    for t in shown_topics(s, o.builtin) {
        row(r, topic_name(t, o), &t.timing, &t.rate);
        if o.writers {
            for w in s
                .writers
                .iter()
                .filter(|w| w.topic.as_deref() == Some(t.name.as_str()))
            {
                row(r, format!("  {}", w.guid), &w.timing, &w.rate);
            }
        }
    }
}

/// DDS Security traffic: totals, what is hidden, and one line per participant pair.
fn secured_table(r: &mut String, s: &Snapshot) {
    let sec = &s.secured;
    if sec.totals.messages == 0 {
        return;
    }
    let t = &sec.totals;
    let _ = writeln!(
        r,
        "\nsecured (DDS Security): {} messages ({} SRTPS-protected), {} protected submessages ({} encrypted, {} signed), {}; last {:.1} s: {:.1} msg/s, {}/s",
        t.messages,
        t.srtps_messages,
        t.sec_submessages,
        t.encrypted_submessages,
        t.signed_submessages,
        units::bytes(t.bytes as f64),
        sec.window.seconds,
        sec.window.messages_per_s,
        units::bytes(sec.window.bandwidth_bps / 8.0)
    );
    if sec.protected_endpoints > 0 {
        let _ = writeln!(
            r,
            "protected: {} endpoint(s) of {} participant(s) send protected submessages (their topics, writers and readers are hidden when discovery is protected)",
            sec.protected_endpoints,
            sec.participants.iter().filter(|p| p.protected_endpoints > 0).count()
        );
    }
    let _ = writeln!(
        r,
        "{:<43} {:<43} {:>8} {:>8} {:>10} {:>8} {:>10}",
        "FROM", "TO", "MESSAGES", "SUBMSGS", "BYTES", "MSG/s", "BW"
    );
    let named = |prefix: &str, name: &Option<String>| match name {
        Some(n) => format!("{prefix} ({})", trunc(n, 16)),
        None => prefix.to_string(),
    };
    for p in &sec.pairs {
        let _ = writeln!(
            r,
            "{:<43} {:<43} {:>8} {:>8} {:>10} {:>8.1} {:>10}",
            named(&p.src, &p.src_name),
            named(&p.dst, &p.dst_name),
            p.totals.messages,
            p.totals.sec_submessages,
            units::bytes(p.totals.bytes as f64),
            p.window.messages_per_s,
            format!("{}/s", units::bytes(p.window.bandwidth_bps / 8.0))
        );
    }
    if sec.pairs_evicted > 0 {
        let _ = writeln!(
            r,
            "({} participant pairs evicted; their traffic is in the totals above)",
            sec.pairs_evicted
        );
    }
}

/// What needs attention: shared memory, QoS mismatches, writers without discovery or
/// with losses, participants gone (at most 200 lines).
fn notes(r: &mut String, s: &Snapshot, o: &ReportOptions) {
    let mut notes = Vec::new();
    for t in &s.topics {
        if t.shared_memory_only {
            let writers = s
                .writers
                .iter()
                .filter(|w| w.topic.as_deref() == Some(t.name.as_str()) && w.shared_memory_only);
            for w in writers {
                notes.push(format!(
                    "{}: shared memory only: traffic invisible here (writer {} and matched reader(s) {} share a host; no sample on the wire)",
                    display_topic(&t.name, o.ros),
                    w.guid,
                    w.shared_memory_peers.join(", ")
                ));
            }
        }
        for m in &t.qos_mismatches {
            notes.push(format!(
                "QoS mismatch on {}: {} offered {} but reader {} requests {} (writer {})",
                display_topic(&t.name, o.ros),
                m.mismatch.policy,
                m.mismatch.offered,
                m.reader,
                m.mismatch.requested,
                m.writer
            ));
        }
        if t.shared_memory_only_endpoints > 0 {
            notes.push(format!(
                "{}: {} endpoint(s) talk by shared memory only (shared-memory locators only, or a matched same-host peer); their traffic never reaches the wire",
                display_topic(&t.name, o.ros),
                t.shared_memory_only_endpoints
            ));
        }
    }
    if o.writers {
        for w in &s.writers {
            if w.topic.is_none() && w.totals.samples > 0 {
                notes.push(format!(
                    "writer {} sent {} samples ({}) but its discovery (SEDP) was not captured; start earlier or use --discovery-cache",
                    w.guid,
                    w.totals.samples,
                    units::bytes(w.totals.bytes as f64)
                ));
            } else if w.samples_before_discovery > 0 && w.discovered {
                notes.push(format!(
                    "writer {} ({}): {} samples seen before its discovery, attributed afterwards",
                    w.guid,
                    w.topic.as_deref().unwrap_or("?"),
                    w.samples_before_discovery
                ));
            }
            if w.totals.lost > 0 || w.totals.incomplete > 0 {
                notes.push(format!(
                    "writer {} ({}): lost {}, incomplete {}, retransmitted {}, NACKed SNs {}",
                    w.guid,
                    w.topic.as_deref().unwrap_or("?"),
                    w.totals.lost,
                    w.totals.incomplete,
                    w.totals.retransmitted,
                    w.totals.acknack_requested_sns
                ));
            }
        }
    }
    for p in &s.participants {
        if let Some(g) = p.gone {
            notes.push(format!(
                "participant {} ({}) gone: {:?}",
                p.guid_prefix,
                p.entity_name.as_deref().unwrap_or("-"),
                g.reason
            ));
        }
    }
    if !notes.is_empty() {
        let _ = writeln!(r);
        for n in notes.iter().take(200) {
            let _ = writeln!(r, "! {n}");
        }
        if notes.len() > 200 {
            let _ = writeln!(r, "! ... {} more", notes.len() - 200);
        }
    }
}

/// The health line: what the dissector skipped, TCP, sources, recording, evictions, and
/// whether the counters reconcile (the checks that fail, if not).
fn health_line(r: &mut String, s: &Snapshot) {
    let h = &s.health;
    let d = &h.dissector;
    let _ = writeln!(r);
    let mut health = format!(
        "health: skipped {} not IP, {} not UDP, {} not RTPS, {} ICMP-quoted RTPS, {} RTI pings; {} malformed; {} IP datagrams incomplete",
        d.skipped_not_ip,
        d.skipped_not_udp,
        d.skipped_not_rtps,
        d.skipped_icmp_quoted_rtps,
        d.rti_pings,
        d.malformed,
        d.ip.evicted_idle.saturating_add(d.ip.evicted_capacity).saturating_add(d.ip.inconsistent)
    );
    if !d.tcp.is_zero() {
        let t = &d.tcp;
        let _ = write!(
            health,
            "; RTPS over TCP: {} messages ({} RTCP-framed, {} RTI TCP, {} length-prefixed, {} bare), {} control, {} streams ({} closed, {} evicted), {} segments of {} bytes ({} out of order, {} retransmitted, {} gaps of {} bytes, {} resyncs)",
            t.rtps_messages(),
            t.rtps_rtcp,
            t.rtps_rti_tcp,
            t.rtps_length_prefixed,
            t.rtps_bare,
            t.control_messages(),
            t.streams_opened,
            t.streams_closed,
            t.streams_evicted_idle.saturating_add(t.streams_evicted_capacity),
            t.segments,
            t.bytes,
            t.out_of_order,
            t.retransmitted,
            t.gaps,
            t.gap_bytes,
            t.resyncs,
        );
    }
    for src in &h.pipeline.sources {
        let _ = write!(health, "; {}: {} frames read", src.name, src.frames);
        if src.queue_dropped > 0 {
            let _ = write!(health, ", {} DROPPED (queue full)", src.queue_dropped);
        }
        if let Some(k) = src.kernel {
            let _ = write!(
                health,
                ", kernel received {} dropped {} if-dropped {}",
                k.received, k.dropped, k.if_dropped
            );
        }
    }
    // The capture threads read ahead of the dissector: until the end, frames read are
    // more than frames dissected (the summary's first line); say by how many.
    let read = h
        .pipeline
        .sources
        .iter()
        .fold(0u64, |n, s| n.saturating_add(s.frames));
    let in_flight = read
        .saturating_sub(h.pipeline.frames_processed)
        .saturating_sub(h.pipeline.queue_dropped);
    if in_flight > 0 {
        let _ = write!(health, " ({in_flight} read, not dissected yet)");
    }
    if let Some(rec) = &h.pipeline.recording {
        let _ = write!(
            health,
            "; recording {}: {} frames written in {} file(s)",
            rec.current_file.as_deref().unwrap_or(&rec.path),
            rec.frames_written,
            rec.files_closed
                .saturating_add(u64::from(rec.current_file.is_some()))
        );
        if rec.not_written() > 0 {
            let _ = write!(
                health,
                ", {} NOT WRITTEN ({} on a full queue)",
                rec.not_written(),
                rec.queue_dropped
            );
        }
        if let Some(e) = &rec.error {
            let _ = write!(health, ", ERROR: {e}");
        }
    }
    let ev = &h.state;
    let evicted = ev
        .writers_evicted_idle
        .saturating_add(ev.writers_evicted_capacity)
        .saturating_add(ev.readers_evicted_idle)
        .saturating_add(ev.readers_evicted_capacity)
        .saturating_add(ev.participants_evicted_idle)
        .saturating_add(ev.participants_evicted_capacity);
    if evicted > 0 {
        let _ = write!(health, "; {evicted} entities evicted");
    }
    let _ = writeln!(
        r,
        "{health}; counters {}",
        if h.reconciles {
            "reconcile"
        } else {
            "DO NOT RECONCILE"
        }
    );
    if !h.reconciles {
        for c in h.checks.iter().filter(|c| !c.ok) {
            let _ = writeln!(r, "  {}: {}", c.name, c.detail);
        }
    }
}
