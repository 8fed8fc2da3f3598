//! The Health view: traffic rates, drops, evictions and checks of the capture and of
//! the analysis.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};
use ratatui::Frame;

use crate::state::Snapshot;
use crate::tui::app::UiState;
use crate::tui::fmt;
use crate::tui::style::{BAD, DIM, GOOD, HEADER};

fn kv(label: &str, value: String) -> Line<'static> {
    Line::from(vec![
        Span::styled(format!("{label:<22}"), DIM),
        Span::raw(value),
    ])
}

fn kv_warn(label: &str, v: u64) -> Line<'static> {
    Line::from(vec![
        Span::styled(format!("{label:<22}"), DIM),
        Span::styled(fmt::count(v), if v > 0 { BAD } else { Style::new() }),
    ])
}

pub(in crate::tui) fn health(f: &mut Frame<'_>, area: Rect, s: &Snapshot, ui: &UiState) {
    let h = &s.health;
    let d = &h.dissector;
    let st = &h.state;
    let r = &ui.rates;
    let rate = |label: &str, v: f64, total: u64| {
        Line::from(vec![
            Span::styled(format!("{label:<14}"), DIM),
            Span::raw(format!("{:>7}", fmt::hz(v))),
            Span::styled("  total ", DIM),
            Span::raw(fmt::count(total)),
        ])
    };
    let mut left = vec![
        Line::from(Span::styled(
            format!("Traffic (capture time, last {})", fmt::secs(r.over_s)),
            HEADER,
        )),
        rate("frames/s", r.frames_s, d.frames),
        rate("datagrams/s", r.datagrams_s, d.rtps_datagrams),
        rate("submessages/s", r.submessages_s, d.submessages),
        rate("samples/s", r.samples_s, s.summary.totals.samples),
        kv("participants", fmt::count(h.participants)),
        kv(
            "writers / readers",
            format!("{} / {}", fmt::count(h.writers), fmt::count(h.readers)),
        ),
        Line::from(""),
        Line::from(Span::styled("Drops", HEADER)),
        kv_warn("queue (capture→state)", h.pipeline.queue_dropped),
    ];
    for src in &h.pipeline.sources {
        let name = fmt::truncate_left(&src.name, 24);
        match &src.kernel {
            Some(k) => left.push(Line::from(vec![
                Span::styled(format!("{:<22}", "kernel drops"), DIM),
                Span::styled(
                    fmt::count(k.dropped.saturating_add(k.if_dropped)),
                    if k.dropped > 0 || k.if_dropped > 0 {
                        BAD
                    } else {
                        Style::new()
                    },
                ),
                Span::styled(format!(" {name}"), DIM),
            ])),
            None => left.push(kv("kernel drops", "n/a (file)".into())),
        }
        if let Some(e) = &src.error {
            left.push(Line::from(Span::styled(fmt::truncate(e, 60), BAD)));
        }
    }
    match &ui.export {
        None => left.push(kv("export (OTLP)", "off".into())),
        Some(e) => {
            left.push(kv(
                "export queue",
                format!(
                    "{} queued, {} in flight, {} sent",
                    fmt::count(e.queue_len),
                    fmt::count(e.in_flight),
                    fmt::count(e.sent)
                ),
            ));
            left.push(kv_warn("export dropped", e.dropped));
            left.push(kv_warn("export failed", e.failed));
        }
    }
    if let Some(rec) = &h.pipeline.recording {
        left.push(kv(
            "recording (-w)",
            format!(
                "{} frames, {} → {}",
                fmt::count(rec.frames_written),
                crate::units::bytes(rec.bytes_written as f64),
                fmt::truncate_left(rec.current_file.as_deref().unwrap_or(&rec.path), 28)
            ),
        ));
        left.push(kv_warn("not recorded", rec.not_written()));
        if let Some(e) = &rec.error {
            left.push(Line::from(Span::styled(fmt::truncate(e, 60), BAD)));
        }
    }
    left.push(kv_warn("undecodable submsgs", d.submessage_errors));
    left.push(kv_warn("malformed frames", d.malformed));
    left.push(kv_warn("truncated frames", d.frames_truncated));

    let mut right_lines = vec![
        Line::from(Span::styled("Evictions (bounded tables)", HEADER)),
        kv_warn("IP frag idle", d.ip.evicted_idle),
        kv_warn("IP frag capacity", d.ip.evicted_capacity),
        kv_warn("IP frag dropped", d.fragments_dropped),
        kv("IP frag in progress", fmt::count(d.ip.in_progress)),
        kv_warn("discovery reassembly", d.discovery_fragments.evicted),
        kv_warn("endpoint map", d.endpoints_evicted),
        kv_warn(
            "participants",
            st.participants_evicted_idle
                .saturating_add(st.participants_evicted_capacity),
        ),
        kv_warn(
            "writers",
            st.writers_evicted_idle
                .saturating_add(st.writers_evicted_capacity),
        ),
        kv_warn(
            "readers",
            st.readers_evicted_idle
                .saturating_add(st.readers_evicted_capacity),
        ),
        kv_warn("fragmented samples", st.frag_samples_evicted),
        kv("leases expired", fmt::count(st.leases_expired)),
    ];
    if s.secured.totals.messages > 0 {
        right_lines.extend([
            kv_warn("secured pairs", s.secured.pairs_evicted),
            kv_warn("address map", st.hosts_evicted),
        ]);
    }
    let t = &d.tcp;
    if !t.is_zero() {
        right_lines.extend([
            kv_warn(
                "TCP streams",
                t.streams_evicted_idle
                    .saturating_add(t.streams_evicted_capacity),
            ),
            kv_warn("TCP gaps", t.gaps),
            kv_warn("TCP resyncs", t.resyncs),
            kv_warn("TCP ahead dropped", t.ahead_dropped),
            kv(
                "TCP retransmitted",
                format!(
                    "{} of {} segments",
                    fmt::count(t.retransmitted),
                    fmt::count(t.segments)
                ),
            ),
        ]);
    }
    right_lines.extend([Line::from(""), Line::from(Span::styled("Checks", HEADER))]);
    for c in &h.checks {
        right_lines.push(Line::from(vec![
            if c.ok {
                Span::styled("✓ ", GOOD)
            } else {
                Span::styled("✗ ", BAD)
            },
            Span::raw(format!("{} ", c.name)),
            Span::styled(c.detail.clone(), DIM),
        ]));
    }
    let block = Block::default().borders(Borders::TOP).title(Span::styled(
        "health of the capture and of the analysis",
        DIM,
    ));
    let inner = block.inner(area);
    f.render_widget(block, area);
    if inner.width >= 80 {
        let [a, b] = Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)])
            .spacing(1)
            .areas(inner);
        f.render_widget(Paragraph::new(left), a);
        f.render_widget(Paragraph::new(right_lines), b);
    } else {
        left.push(Line::from(""));
        left.extend(right_lines);
        f.render_widget(Paragraph::new(left), inner);
    }
}
