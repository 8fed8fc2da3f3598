//! The detail of one topic (under the Topics table, or full screen): its endpoints and
//! QoS, mismatches, timing, rate and bandwidth sparklines and the sample size histogram.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Bar, BarChart, BarGroup, Block, Borders, Paragraph, Sparkline, Wrap};
use ratatui::Frame;

use super::{gone, per_sample, qos_short};
use crate::state::rate::RateView;
use crate::state::snapshot::{QosView, TopicView};
use crate::state::timing::TimingView;
use crate::state::Snapshot;
use crate::tui::app::UiState;
use crate::tui::fmt;
use crate::tui::style::{BAD, DIM, GOOD, HEADER, KEY, WARN};
use crate::units;

fn qos_long(q: &QosView, writer: bool) -> String {
    let mut out = format!(
        "{} {} {}",
        q.reliability
            .unwrap_or(if writer { "reliable" } else { "best_effort" }),
        q.durability.unwrap_or("volatile"),
        q.history.as_deref().unwrap_or("keep_last(1)")
    );
    if let Some(Some(ns)) = q.deadline_ns {
        out.push_str(&format!(" deadline {}", fmt::short_duration(ns as f64)));
    }
    if let Some(o) = q.ownership.filter(|o| *o != "shared") {
        out.push_str(&format!(" {o}"));
    }
    if !q.partitions.is_empty() {
        out.push_str(&format!(" [{}]", q.partitions.join(",")));
    }
    out
}

pub(super) fn detail(
    f: &mut Frame<'_>,
    area: Rect,
    s: &Snapshot,
    ui: &UiState,
    topic: Option<&TopicView>,
) {
    let Some(t) = topic else {
        f.render_widget(
            Paragraph::new("no topic (yet), or none matches the filter")
                .style(DIM)
                .block(Block::default().borders(Borders::TOP)),
            area,
        );
        return;
    };
    let title = format!(" {} · {} ", ui.topic_name(t), ui.type_name(t));
    let block = Block::default()
        .borders(Borders::TOP)
        .title(Span::styled(title, HEADER));
    let inner = block.inner(area);
    f.render_widget(block, area);
    let wide = area.width >= 120;
    let (left, charts, hist) = if wide {
        let [a, b, c] = Layout::horizontal([
            Constraint::Percentage(50),
            Constraint::Percentage(25),
            Constraint::Percentage(25),
        ])
        .spacing(1)
        .areas(inner);
        (a, b, Some(c))
    } else {
        let [a, b] = Layout::horizontal([Constraint::Percentage(55), Constraint::Percentage(45)])
            .spacing(1)
            .areas(inner);
        (a, b, None)
    };

    // Endpoints, QoS, mismatches.
    let gw = if wide { 32 } else { 18 };
    let mut lines = vec![Line::from(vec![
        Span::styled("samples ", DIM),
        Span::raw(fmt::count(t.totals.samples)),
        Span::styled(" lost ", DIM),
        Span::styled(
            fmt::count(t.totals.lost),
            if t.totals.lost > 0 { BAD } else { Style::new() },
        ),
        Span::styled(" retx ", DIM),
        Span::raw(fmt::count(t.totals.retransmitted)),
        Span::styled(" rep ", DIM),
        Span::raw(fmt::count(t.totals.repaired)),
    ])];
    lines.push(Line::from(vec![
        Span::styled("size ", DIM),
        Span::raw(match (t.size.min, t.size.max) {
            (Some(a), Some(b)) if a != b => {
                format!("{}..{}", units::bytes(a as f64), units::bytes(b as f64))
            }
            (Some(a), _) => units::bytes(a as f64),
            _ => "-".into(),
        }),
        Span::styled(" IP frags/sample ", DIM),
        Span::raw(per_sample(t.ip_fragments_per_sample)),
    ]));
    let qos = |q: Option<&QosView>, writer: bool| {
        q.map_or_else(
            || "(not discovered)".to_string(),
            |q| {
                if wide {
                    qos_long(q, writer)
                } else {
                    qos_short(q, writer)
                }
            },
        )
    };
    for w in s
        .writers
        .iter()
        .filter(|w| w.topic.as_deref() == Some(t.name.as_str()))
    {
        let mut spans = vec![
            Span::styled("W ", KEY),
            Span::raw(fmt::guid(&w.guid, gw)),
            Span::raw(" "),
            Span::raw(qos(w.qos.as_ref(), true)),
            Span::styled(format!(" {}Hz", fmt::rate(&w.rate)), DIM),
        ];
        if let Some(g) = w.gone {
            spans.push(Span::styled(format!(" {}", gone(g.reason)), BAD));
        }
        lines.push(Line::from(spans));
    }
    for r in s
        .readers
        .iter()
        .filter(|r| r.topic.as_deref() == Some(t.name.as_str()))
    {
        let mut spans = vec![
            Span::styled("R ", GOOD),
            Span::raw(fmt::guid(&r.guid, gw)),
            Span::raw(" "),
            Span::raw(qos(r.qos.as_ref(), false)),
        ];
        if let Some(g) = r.gone {
            spans.push(Span::styled(format!(" {}", gone(g.reason)), BAD));
        }
        lines.push(Line::from(spans));
    }
    let mut mm: Vec<_> = t.qos_mismatches.iter().collect();
    mm.sort_by(|a, b| {
        (a.mismatch.policy, &a.writer, &a.reader).cmp(&(b.mismatch.policy, &b.writer, &b.reader))
    });
    for m in mm {
        lines.push(Line::from(vec![
            Span::styled(format!("✗ {} ", m.mismatch.policy), BAD),
            Span::raw(format!(
                "W {} offers {}, R {} requests {}",
                fmt::guid(&m.writer, gw),
                m.mismatch.offered,
                fmt::guid(&m.reader, gw),
                m.mismatch.requested
            )),
        ]));
    }
    for o in &t.other_types {
        lines.push(Line::from(Span::styled(format!("✗ also typed {o}"), BAD)));
    }
    lines.push(timing_line(&t.timing, &t.rate));
    if t.shared_memory_only {
        lines.push(Line::from(Span::styled(
            "shared memory only: traffic invisible here (matched writer and reader share a host)",
            WARN,
        )));
    } else if t.shared_memory_only_endpoints > 0 {
        lines.push(Line::from(Span::styled(
            format!(
                "{} endpoint(s) on shared memory only: their data is not on the wire",
                t.shared_memory_only_endpoints
            ),
            DIM,
        )));
    }
    f.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), left);

    // Sparklines of rate and bandwidth, then the size histogram.
    let hist_area = match hist {
        Some(h) => {
            sparklines(f, charts, ui, t, charts.height);
            h
        }
        None => {
            let spark_h = (charts.height.saturating_mul(55) / 100).max(4);
            let [a, b] =
                Layout::vertical([Constraint::Length(spark_h), Constraint::Min(0)]).areas(charts);
            sparklines(f, a, ui, t, spark_h);
            b
        }
    };
    size_histogram(f, hist_area, t);
}

/// After a topic's name: its matched endpoints talk by shared memory, unseen.
pub(super) const SHM_MARKER: &str = " [shm]";

/// Rate (the Topics view's), period, jitter and deadline misses, as one line.
fn timing_line(t: &TimingView, rate: &RateView) -> Line<'static> {
    let ms = fmt::short_duration;
    let mut spans = vec![
        Span::styled("timing ", DIM),
        Span::raw(format!("{}Hz", fmt::rate(rate))),
    ];
    if rate.over_active_span && rate.hz.is_some() {
        // What the `*` means: not the window, the writers' own first → latest sample.
        spans.push(Span::styled(
            format!(
                " over its active {}",
                fmt::short_duration(rate.span_s * 1e9)
            ),
            DIM,
        ));
    }
    if let (Some(min), Some(mean), Some(max)) = (t.period_min_ns, t.period_mean_ns, t.period_max_ns)
    {
        spans.push(Span::styled(" period ", DIM));
        spans.push(Span::raw(format!(
            "{}/{}/{}",
            ms(min as f64),
            ms(mean),
            ms(max as f64)
        )));
    }
    if let Some(sd) = t.period_stddev_ns {
        spans.push(Span::styled(" jitter ", DIM));
        spans.push(Span::raw(ms(sd)));
    }
    if let Some(d) = t.deadline_ns {
        spans.push(Span::styled(" deadline ", DIM));
        spans.push(Span::raw(ms(d as f64)));
        spans.push(Span::styled(" missed ", DIM));
        spans.push(Span::styled(
            fmt::count(t.deadline_misses),
            if t.deadline_misses > 0 {
                BAD
            } else {
                Style::new()
            },
        ));
    }
    Line::from(spans)
}

fn sparklines(f: &mut Frame<'_>, area: Rect, ui: &UiState, t: &TopicView, height: u16) {
    let each = (height / 2).max(2);
    let [a, b] = Layout::vertical([Constraint::Length(each), Constraint::Length(each)]).areas(area);
    let empty = Default::default();
    let h = ui.history.get(&t.name).unwrap_or(&empty);
    let last = |v: &std::collections::VecDeque<u64>, w: u16| -> Vec<u64> {
        let n = usize::from(w);
        v.iter().skip(v.len().saturating_sub(n)).copied().collect()
    };
    let rate = last(&h.rate_mhz, a.width);
    let bw = last(&h.bps, b.width);
    let rmax = rate.iter().copied().max().unwrap_or(0);
    let bmax = bw.iter().copied().max().unwrap_or(0);
    for (area, label, data, max, color) in [
        (
            a,
            format!(
                "rate {} Hz (max {})",
                fmt::rate(&t.rate),
                fmt::hz(rmax as f64 / 1000.0)
            ),
            rate,
            rmax,
            Color::Green,
        ),
        (
            b,
            format!(
                "bandwidth {} (max {})",
                fmt::rate_bandwidth(&t.rate),
                fmt::bandwidth(bmax as f64)
            ),
            bw,
            bmax,
            Color::Blue,
        ),
    ] {
        let [l, g] = Layout::vertical([Constraint::Length(1), Constraint::Min(0)]).areas(area);
        f.render_widget(Paragraph::new(Span::styled(label, DIM)), l);
        f.render_widget(
            Sparkline::default()
                .data(&data)
                .max(max.max(1))
                .style(Style::new().fg(color)),
            g,
        );
    }
}

fn size_histogram(f: &mut Frame<'_>, area: Rect, t: &TopicView) {
    let [l, g] = Layout::vertical([Constraint::Length(1), Constraint::Min(0)]).areas(area);
    f.render_widget(
        Paragraph::new(Span::styled("sample sizes (count per size)", DIM)),
        l,
    );
    let h = &t.size_histogram;
    let first = h.iter().position(|v| *v > 0);
    let last = h.iter().rposition(|v| *v > 0);
    let (Some(first), Some(last)) = (first, last) else {
        f.render_widget(Paragraph::new("no samples").style(DIM), g);
        return;
    };
    let top = h.len().saturating_sub(1);
    // Bars 4 wide (value + label fit) while they fit, else 3.
    let n = last.saturating_sub(first).saturating_add(1);
    let width = usize::from(g.width);
    let bar_w: u16 = if n.saturating_mul(5) <= width { 4 } else { 3 };
    let fit = width / usize::from(bar_w.saturating_add(1)).max(1);
    let bars: Vec<Bar<'_>> = h
        .iter()
        .enumerate()
        .skip(first)
        .take(n.min(fit.max(1)))
        .map(|(i, v)| {
            Bar::default()
                .value(*v)
                .text_value(fmt::count(*v))
                .label(Line::from(fmt::size_bucket_label(i, top)))
        })
        .collect();
    f.render_widget(
        BarChart::default()
            .data(BarGroup::default().bars(&bars))
            .bar_width(bar_w)
            .bar_gap(1)
            .bar_style(Style::new().fg(Color::Cyan))
            .value_style(Style::new().fg(Color::Black).bg(Color::Cyan)),
        g,
    );
}
