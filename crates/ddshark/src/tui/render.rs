//! Rendering: a pure function of (`Snapshot`, `UiState`) → frame. No clock, no
//! I/O, no locks: what is on screen depends only on its two inputs, so the
//! snapshot tests can pin every view.

use std::collections::HashMap;

use ratatui::layout::{Alignment, Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{
    Bar, BarChart, BarGroup, Block, Borders, Cell, Clear, Paragraph, Row, Sparkline, Table,
    TableState, Wrap,
};
use ratatui::Frame;

use super::app::{TopicColumn, UiState, View};
use super::fmt;
use crate::state::snapshot::{QosView, TopicView};
use crate::state::timing::TimingView;
use crate::state::{GoneReason, Snapshot};
use crate::units;

const HEADER: Style = Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD);
const SELECTED: Style = Style::new().add_modifier(Modifier::REVERSED);
const DIM: Style = Style::new().fg(Color::DarkGray);
const BAD: Style = Style::new().fg(Color::Red).add_modifier(Modifier::BOLD);
const GOOD: Style = Style::new().fg(Color::Green);
const WARN: Style = Style::new().fg(Color::Yellow);
const KEY: Style = Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD);

/// Draw one frame.
pub fn render(f: &mut Frame<'_>, snap: Option<&Snapshot>, ui: &UiState) {
    let area = f.area();
    let log_h = u16::from(!ui.log.is_empty());
    let [top, body, log, bottom] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(0),
        Constraint::Length(log_h),
        Constraint::Length(1),
    ])
    .areas(area);
    title_bar(f, top, snap, ui);
    match snap {
        None => {
            let msg = format!("waiting for the first RTPS packet on {} …", ui.source);
            f.render_widget(
                Paragraph::new(msg)
                    .alignment(Alignment::Center)
                    .block(Block::default().borders(Borders::TOP)),
                body,
            );
        }
        Some(s) => match ui.view {
            View::Topics => topics(f, body, s, ui),
            View::Participants => participants(f, body, s, ui),
            View::Writers => writers(f, body, s, ui),
            View::Readers => readers(f, body, s, ui),
            View::Health => health(f, body, s, ui),
        },
    }
    log_line(f, log, ui);
    footer(f, bottom, ui);
    if ui.help {
        help(f, area, ui);
    }
}

fn title_bar(f: &mut Frame<'_>, area: Rect, snap: Option<&Snapshot>, ui: &UiState) {
    let mut spans = vec![Span::styled("ddshark ", HEADER)];
    for (i, v) in View::ALL.iter().enumerate() {
        let style = if *v == ui.view {
            SELECTED.add_modifier(Modifier::BOLD)
        } else {
            Style::new()
        };
        spans.push(Span::styled(
            format!("{} {}", i.saturating_add(1), v.title()),
            style,
        ));
        spans.push(Span::raw(" "));
    }
    let tabs = Line::from(spans);
    let tabs_w = u16::try_from(tabs.width()).unwrap_or(u16::MAX);
    f.render_widget(Paragraph::new(tabs), area);

    // Status on the right: input, pacing, capture time.
    let mut status = Vec::new();
    let finished = snap.is_some_and(|s| {
        !s.health.pipeline.sources.is_empty()
            && s.health.pipeline.sources.iter().all(|x| x.finished)
    });
    let error = snap.and_then(|s| {
        s.health
            .pipeline
            .sources
            .iter()
            .find_map(|x| x.error.as_deref())
    });
    if ui.frozen {
        status.push(Span::styled("FROZEN ", BAD));
    }
    if ui.replay {
        let speed = ui
            .speed
            .map_or_else(|| "max".to_string(), |s| format!("{s}x"));
        if finished {
            status.push(Span::styled("end ", GOOD));
        } else if ui.replay_paused {
            status.push(Span::styled("⏸ ", BAD));
        } else {
            status.push(Span::raw("▶ "));
        }
        status.push(Span::raw(format!("{speed} ")));
    } else {
        status.push(Span::raw("live "));
        if finished {
            status.push(Span::styled("stopped ", BAD));
        }
    }
    if error.is_some() {
        status.push(Span::styled("error ", BAD));
    }
    if let Some(s) = snap {
        status.push(Span::raw(fmt::secs(s.summary.duration_s)));
    }
    let room = area.width.saturating_sub(tabs_w).saturating_sub(1);
    let fixed: usize = status.iter().map(Span::width).sum();
    let name_room = usize::from(room).saturating_sub(fixed).saturating_sub(1);
    if name_room >= 4 {
        status.insert(
            0,
            Span::styled(
                format!("{} ", fmt::truncate_left(&ui.source, name_room)),
                DIM,
            ),
        );
    }
    let right = Rect {
        x: area.x.saturating_add(tabs_w),
        width: area.width.saturating_sub(tabs_w),
        ..area
    };
    f.render_widget(
        Paragraph::new(Line::from(status)).alignment(Alignment::Right),
        right,
    );
}

/// The latest message the program wrote while the UI was up (all of them are written
/// to stderr when it ends).
fn log_line(f: &mut Frame<'_>, area: Rect, ui: &UiState) {
    let Some(last) = ui.log.last() else {
        return;
    };
    let count = if ui.log_total > 1 {
        format!(" ({} messages, all printed at exit)", ui.log_total)
    } else {
        String::new()
    };
    let room = usize::from(area.width).saturating_sub(count.chars().count());
    let line = Line::from(vec![
        Span::styled(fmt::truncate(last, room), WARN),
        Span::styled(count, DIM),
    ]);
    f.render_widget(Paragraph::new(line), area);
}

fn footer(f: &mut Frame<'_>, area: Rect, ui: &UiState) {
    let line = if ui.editing_filter {
        Line::from(vec![
            Span::styled("filter: ", KEY),
            Span::raw(ui.filter.clone()),
            Span::styled("█", KEY),
            Span::styled("  Enter keep · Esc clear", DIM),
        ])
    } else {
        let mut spans = Vec::new();
        if !ui.filter.is_empty() {
            spans.push(Span::styled(format!("[/{}] ", ui.filter), KEY));
        }
        let mut keys: Vec<(&str, &str)> = vec![("q", "quit"), ("?", "help"), ("/", "filter")];
        if ui.view == View::Topics {
            keys.push(("s", "sort"));
            keys.push(("⏎", "detail"));
        }
        keys.push(("d", if ui.ros_names { "dds" } else { "ros" }));
        keys.push(("b", "builtin"));
        if ui.replay {
            keys.push(("␣", "pause"));
            keys.push(("+-", "speed"));
        } else {
            keys.push(("p", "freeze"));
        }
        for (k, what) in keys {
            spans.push(Span::styled(k, KEY));
            spans.push(Span::raw(format!(" {what} ")));
        }
        Line::from(spans)
    };
    f.render_widget(Paragraph::new(line), area);
}

fn right(s: String) -> Cell<'static> {
    Cell::from(Line::from(s).alignment(Alignment::Right))
}

fn pcp_text(t: &TopicView) -> String {
    t.pcp
        .iter()
        .map(|p| p.pcp.map_or_else(|| "-".to_string(), |v| v.to_string()))
        .collect::<Vec<_>>()
        .join(",")
}

fn per_sample(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(x) if x >= 10.0 => format!("{x:.0}"),
        Some(x) => format!("{x:.1}"),
    }
}

/// Column widths that share `width` (a column spacing of 1): per column, the width its
/// content wants and the least it keeps; column 1 (a topic name) is served first
/// (see [`fmt::share_widths`]).
fn shared(width: u16, cols: &[(u16, u16)], first: usize) -> Vec<Constraint> {
    let spacing = u16::try_from(cols.len().saturating_sub(1)).unwrap_or(u16::MAX);
    let wants: Vec<u16> = cols.iter().map(|c| c.0).collect();
    let mins: Vec<u16> = cols.iter().map(|c| c.1).collect();
    fmt::share_widths(width.saturating_sub(spacing), &wants, &mins, Some(first))
        .into_iter()
        .map(Constraint::Length)
        .collect()
}

/// The widest of a column's cells, its header included.
fn widest(header: &str, cells: impl Iterator<Item = u16>) -> u16 {
    cells.fold(fmt::cells(header), u16::max)
}

/// A table with a header, a selection and a highlight.
fn table<'a>(
    rows: Vec<Row<'a>>,
    header: Vec<Cell<'a>>,
    widths: Vec<Constraint>,
    selected: Option<usize>,
    title: String,
) -> (Table<'a>, TableState) {
    let t = Table::new(rows, widths)
        .header(Row::new(header).style(HEADER))
        .column_spacing(1)
        .row_highlight_style(SELECTED)
        .block(
            Block::default()
                .borders(Borders::TOP)
                .title(Span::styled(title, DIM)),
        );
    (t, TableState::default().with_selected(selected))
}

fn topics(f: &mut Frame<'_>, area: Rect, s: &Snapshot, ui: &UiState) {
    let rows = ui.topic_rows(s);
    let names: Vec<&str> = rows.iter().map(|t| t.name.as_str()).collect();
    let sel = ui.selected_index(&names);
    let topic = sel.and_then(|i| rows.get(i).copied());
    if ui.zoom {
        detail(f, area, s, ui, topic);
        return;
    }
    // The table takes what it needs up to about half the body; the detail pane the rest.
    let want = u16::try_from(rows.len())
        .unwrap_or(u16::MAX)
        .saturating_add(2);
    let half = (area.height.saturating_mul(45) / 100).max(6);
    let [top, bottom] =
        Layout::vertical([Constraint::Length(want.min(half)), Constraint::Min(0)]).areas(area);

    let wide = area.width >= 120;
    let cols: Vec<TopicColumn> = TopicColumn::ALL
        .iter()
        .copied()
        .filter(|c| wide || !matches!(c, TopicColumn::Type | TopicColumn::Jitter))
        .collect();
    let name_w = widest(
        "Topic▼",
        rows.iter().map(|t| {
            let marker = if t.shared_memory_only {
                fmt::cells(SHM_MARKER)
            } else {
                0
            };
            fmt::cells(ui.topic_name(t)).saturating_add(marker)
        }),
    );
    let type_w = widest("Type▼", rows.iter().map(|t| fmt::cells(ui.type_name(t))));
    let pcp_w = widest("PCP", rows.iter().map(|t| fmt::cells(&pcp_text(t))));
    let fixed = |n: u16| (n, n);
    let widths = shared(
        area.width,
        &cols
            .iter()
            .map(|c| match c {
                TopicColumn::Name => (name_w, 12),
                TopicColumn::Type => (type_w, 12),
                TopicColumn::Writers | TopicColumn::Readers => fixed(3),
                TopicColumn::Rate | TopicColumn::MeanSize | TopicColumn::Jitter => fixed(6),
                TopicColumn::Bandwidth => fixed(8),
                TopicColumn::Fragments | TopicColumn::Lost | TopicColumn::Retransmitted => {
                    fixed(if wide { 6 } else { 4 })
                }
                TopicColumn::Pcp => (pcp_w, 3),
            })
            .collect::<Vec<_>>(),
        0,
    );
    let header: Vec<Cell<'_>> = cols
        .iter()
        .map(|c| {
            let mut h = c.header().to_string();
            if *c == ui.sort {
                h.push(if ui.descending { '▼' } else { '▲' });
            }
            match c {
                TopicColumn::Name | TopicColumn::Type | TopicColumn::Pcp => Cell::from(h),
                _ => right(h),
            }
        })
        .collect();
    let body: Vec<Row<'_>> = rows
        .iter()
        .map(|t| {
            let cells: Vec<Cell<'_>> = cols
                .iter()
                .map(|c| match c {
                    TopicColumn::Name if t.shared_memory_only => Cell::from(Line::from(vec![
                        Span::raw(ui.topic_name(t).to_string()),
                        Span::styled(SHM_MARKER, WARN),
                    ])),
                    TopicColumn::Name => Cell::from(ui.topic_name(t).to_string()),
                    TopicColumn::Type => Cell::from(ui.type_name(t).to_string()),
                    TopicColumn::Jitter => right(
                        t.timing
                            .period_stddev_ns
                            .map_or("-".into(), fmt::short_duration),
                    ),
                    TopicColumn::Writers => right(t.writers.to_string()),
                    TopicColumn::Readers => right(t.readers.to_string()),
                    TopicColumn::Rate => right(fmt::hz(t.window.rate_hz)),
                    TopicColumn::Bandwidth => right(fmt::bandwidth(t.window.bandwidth_bps)),
                    TopicColumn::MeanSize => right(t.size.mean.map_or("-".into(), units::bytes)),
                    TopicColumn::Fragments => right(per_sample(t.data_frags_per_sample)),
                    TopicColumn::Lost => {
                        let c = right(fmt::count(t.totals.lost));
                        if t.totals.lost > 0 {
                            c.style(BAD)
                        } else {
                            c
                        }
                    }
                    TopicColumn::Retransmitted => right(fmt::count(t.totals.retransmitted)),
                    TopicColumn::Pcp => Cell::from(pcp_text(t)),
                })
                .collect();
            let row = Row::new(cells);
            if t.qos_mismatches.is_empty() && t.other_types.is_empty() {
                row
            } else {
                row.style(Style::new().fg(Color::Magenta))
            }
        })
        .collect();
    let unknown = s.health.writers_unattributed;
    let builtin = if ui.show_builtin { " (+built-in)" } else { "" };
    let title = if unknown > 0 {
        // Writers whose SEDP was not seen (capture started late): no topic yet.
        format!(
            "{} topics{builtin} · {unknown} writers without discovery: see 3 Writers",
            rows.len()
        )
    } else {
        format!(
            "{} topics{builtin} · rate/BW over {} · Size = mean sample · Frag = DATA_FRAGs/sample",
            rows.len(),
            fmt::secs(s.summary.window_s),
        )
    };
    let (t, mut state) = table(body, header, widths, sel, title);
    f.render_stateful_widget(t, top, &mut state);
    detail(f, bottom, s, ui, topic);
}

/// `writer`: absent reliability means reliable (the writer default), else best effort.
fn qos_short(q: &QosView, writer: bool) -> String {
    let rel = match q.reliability {
        Some("reliable") => "rel",
        Some("best_effort") => "be",
        Some(o) => o,
        None if writer => "rel",
        None => "be",
    };
    let dur = match q.durability {
        Some("volatile") | None => "vol",
        Some("transient_local") => "tl",
        Some("transient") => "trans",
        Some("persistent") => "pers",
        Some(o) => o,
    };
    let hist = match q.history.as_deref() {
        None => "kl1".to_string(),
        Some("keep_all") => "ka".to_string(),
        Some(h) => h
            .strip_prefix("keep_last(")
            .and_then(|x| x.strip_suffix(')'))
            .map_or_else(|| h.to_string(), |d| format!("kl{d}")),
    };
    let mut out = format!("{rel} {dur} {hist}");
    if !q.partitions.is_empty() {
        out.push_str(&format!(" [{}]", q.partitions.join(",")));
    }
    out
}

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

fn detail(f: &mut Frame<'_>, area: Rect, s: &Snapshot, ui: &UiState, topic: Option<&TopicView>) {
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
            Span::styled(format!(" {}Hz", fmt::hz(w.window.rate_hz)), DIM),
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
    lines.push(timing_line(&t.timing));
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
const SHM_MARKER: &str = " [shm]";

/// Rate over the active time, period, jitter and deadline misses, as one line.
fn timing_line(t: &TimingView) -> Line<'static> {
    let ms = fmt::short_duration;
    let mut spans = vec![
        Span::styled("timing ", DIM),
        Span::raw(
            t.rate_hz
                .map_or("-".into(), |r| format!("{}Hz", fmt::hz(r))),
        ),
    ];
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

fn gone(r: GoneReason) -> &'static str {
    match r {
        GoneReason::Disposed => "disposed",
        GoneReason::Unregistered => "unregistered",
        GoneReason::LeaseExpired => "lease expired",
        GoneReason::ParticipantGone => "participant gone",
    }
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
                fmt::hz(t.window.rate_hz),
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
                fmt::bandwidth(t.window.bandwidth_bps),
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

fn participants(f: &mut Frame<'_>, area: Rect, s: &Snapshot, ui: &UiState) {
    let rows = ui.participant_rows(s);
    let keys: Vec<&str> = rows.iter().map(|p| p.guid_prefix.as_str()).collect();
    let sel = ui.selected_index(&keys);
    let mut endpoints: HashMap<&str, (u64, u64)> = HashMap::new();
    for w in &s.writers {
        let e = endpoints.entry(w.participant.as_str()).or_default();
        e.0 = e.0.saturating_add(1);
    }
    for r in &s.readers {
        let e = endpoints.entry(r.participant.as_str()).or_default();
        e.1 = e.1.saturating_add(1);
    }
    let wide = area.width >= 120;
    let now = s.summary.capture_time_ns;
    struct Texts {
        vendor: String,
        addr: String,
        name: String,
        alive: (String, Style),
    }
    let texts: Vec<Texts> = rows
        .iter()
        .map(|p| {
            let addr = match p.addresses.as_slice() {
                [] => "-".to_string(),
                [a] => a.clone(),
                [a, rest @ ..] if !wide => format!("{a}+{}", rest.len()),
                all => all.join(" "),
            };
            let quiet_s = now.saturating_sub(p.last_seen_ns) as f64 / 1e9;
            let alive = match p.gone {
                Some(g) => (gone(g.reason).to_string(), BAD),
                None => {
                    let lease = p.lease_ns.flatten().map(|ns| ns as f64 / 1e9);
                    if lease.is_some_and(|l| quiet_s > l) {
                        (format!("quiet {}", fmt::secs(quiet_s)), BAD)
                    } else {
                        ("alive".to_string(), GOOD)
                    }
                }
            };
            let vendor = p
                .vendor_name
                .map_or_else(|| p.vendor.clone().unwrap_or_default(), str::to_string);
            Texts {
                vendor,
                addr,
                name: p.entity_name.clone().unwrap_or_default(),
                alive,
            }
        })
        .collect();
    let body: Vec<Row<'_>> = rows
        .iter()
        .zip(&texts)
        .map(|(p, t)| {
            let (w, r) = endpoints
                .get(p.guid_prefix.as_str())
                .copied()
                .unwrap_or((0, 0));
            let mut cells = vec![
                Cell::from(p.guid_prefix.clone()),
                Cell::from(t.vendor.clone()),
                Cell::from(t.addr.clone()),
                Cell::from(t.name.clone()),
                right(format!("{w}/{r}")),
                Cell::from(t.alive.0.clone()).style(t.alive.1),
            ];
            if wide {
                cells.push(Cell::from(
                    p.domain_id.map_or("-".into(), |d| d.to_string()),
                ));
                cells.push(right(fmt::count(p.datagrams)));
                cells.push(right(units::bytes(p.bytes as f64)));
            }
            Row::new(cells)
        })
        .collect();
    let mut header = vec![
        Cell::from("GUID prefix"),
        Cell::from("Vendor"),
        Cell::from("Address"),
        Cell::from("Name"),
        right("W/R".into()),
        Cell::from("Alive"),
    ];
    let mut cols = vec![
        (24, 24),
        (
            widest("Vendor", texts.iter().map(|t| fmt::cells(&t.vendor))),
            8,
        ),
        (
            widest("Address", texts.iter().map(|t| fmt::cells(&t.addr))),
            12,
        ),
        (widest("Name", texts.iter().map(|t| fmt::cells(&t.name))), 8),
        (5, 5),
        (
            widest("Alive", texts.iter().map(|t| fmt::cells(&t.alive.0))),
            5,
        ),
    ];
    if wide {
        header.extend([
            Cell::from("Dom"),
            right("Dgrams".into()),
            right("Bytes".into()),
        ]);
        cols.extend([(3, 3), (7, 7), (7, 7)]);
    }
    let widths = shared(area.width, &cols, 3);
    let title = format!("{} participants · W/R = writers/readers", rows.len());
    let (t, mut state) = table(body, header, widths, sel, title);
    f.render_stateful_widget(t, area, &mut state);
}

/// The topic an endpoint is shown with (its ROS 2 name with `d`).
fn endpoint_topic(ros: &Option<String>, dds: &Option<String>, ui: &UiState, none: &str) -> String {
    match (ros, ui.ros_names) {
        (Some(r), true) => r.clone(),
        _ => dds.clone().unwrap_or_else(|| none.into()),
    }
}

/// A GUID column: its last 16 hex digits (…prefix:entity) unless the terminal is wide
/// enough for all 32 after the names.
fn guid_column(width: u16) -> (u16, u16) {
    if width >= 160 {
        (32, 18)
    } else {
        (18, 18)
    }
}

fn writers(f: &mut Frame<'_>, area: Rect, s: &Snapshot, ui: &UiState) {
    let rows = ui.writer_rows(s);
    let keys: Vec<&str> = rows.iter().map(|w| w.guid.as_str()).collect();
    let sel = ui.selected_index(&keys);
    let wide = area.width >= 120;
    let topics: Vec<String> = rows
        .iter()
        .map(|w| endpoint_topic(&w.ros_topic, &w.topic, ui, "(no discovery)"))
        .collect();
    let qos: Vec<String> = rows
        .iter()
        .map(|w| w.qos.as_ref().map_or("?".into(), |q| qos_short(q, true)))
        .collect();
    let mut cols = vec![
        guid_column(area.width),
        (widest("Topic", topics.iter().map(|t| fmt::cells(t))), 10),
        (widest("QoS", qos.iter().map(|q| fmt::cells(q))), 11),
        (6, 6),
        (5, 5),
        (5, 5),
        (4, 4),
    ];
    if wide {
        let src = widest(
            "Source",
            rows.iter()
                .map(|w| fmt::cells(w.src.as_deref().unwrap_or_default())),
        );
        cols.extend([(6, 6), (6, 6), (5, 5), (5, 5), (src, 8)]);
    }
    let widths = shared(area.width, &cols, 1);
    let gw = match widths.first() {
        Some(Constraint::Length(w)) => *w,
        _ => 18,
    };
    let body: Vec<Row<'_>> = rows
        .iter()
        .zip(topics.into_iter().zip(qos))
        .map(|(w, (topic, qos))| {
            let mut cells = vec![
                Cell::from(fmt::guid(&w.guid, usize::from(gw))),
                Cell::from(topic),
                Cell::from(qos),
                right(w.highest_sn.map_or("-".into(), |v| v.to_string())),
                right(fmt::count(w.totals.heartbeats)),
                right(fmt::count(w.totals.acknacks)),
                right(fmt::count(w.totals.repaired)),
            ];
            if wide {
                cells.extend([
                    right(fmt::count(w.totals.samples)),
                    right(fmt::hz(w.window.rate_hz)),
                    right(fmt::count(w.totals.lost)),
                    right(fmt::count(w.totals.retransmitted)),
                    Cell::from(w.src.clone().unwrap_or_default()),
                ]);
            }
            let row = Row::new(cells);
            if w.gone.is_some() {
                row.style(DIM)
            } else {
                row
            }
        })
        .collect();
    let mut header = vec![
        Cell::from("GUID"),
        Cell::from("Topic"),
        Cell::from("QoS"),
        right("SN".into()),
        right("HB".into()),
        right("ACKN".into()),
        right("Rep".into()),
    ];
    if wide {
        header.extend([
            right("Smpl".into()),
            right("Rate".into()),
            right("Lost".into()),
            right("Retx".into()),
            Cell::from("Source"),
        ]);
    }
    let title = format!(
        "{} writers · SN = highest seen · HB/ACKN = HEARTBEATs/ACKNACKs · Rep = repairs",
        rows.len()
    );
    let (t, mut state) = table(body, header, widths, sel, title);
    f.render_stateful_widget(t, area, &mut state);
}

fn readers(f: &mut Frame<'_>, area: Rect, s: &Snapshot, ui: &UiState) {
    let rows = ui.reader_rows(s);
    let keys: Vec<&str> = rows.iter().map(|r| r.guid.as_str()).collect();
    let sel = ui.selected_index(&keys);
    let wide = area.width >= 120;
    let topics: Vec<String> = rows
        .iter()
        .map(|r| endpoint_topic(&r.ros_topic, &r.topic, ui, "?"))
        .collect();
    let qos: Vec<String> = rows
        .iter()
        .map(|r| r.qos.as_ref().map_or("?".into(), |q| qos_short(q, false)))
        .collect();
    let locators: Vec<String> = rows.iter().map(|r| r.locators.join(" ")).collect();
    let mut cols = vec![
        guid_column(area.width),
        (widest("Topic", topics.iter().map(|t| fmt::cells(t))), 10),
        (widest("QoS", qos.iter().map(|q| fmt::cells(q))), 11),
        (6, 6),
        (6, 6),
        (5, 5),
    ];
    if wide {
        cols.push((
            widest("Locators", locators.iter().map(|l| fmt::cells(l))),
            8,
        ));
    }
    let widths = shared(area.width, &cols, 1);
    let gw = match widths.first() {
        Some(Constraint::Length(w)) => *w,
        _ => 18,
    };
    let body: Vec<Row<'_>> = rows
        .iter()
        .zip(topics.into_iter().zip(qos).zip(locators))
        .map(|(r, ((topic, qos), locators))| {
            let mut cells = vec![
                Cell::from(fmt::guid(&r.guid, usize::from(gw))),
                Cell::from(topic),
                Cell::from(qos),
                right(fmt::count(r.acknacks)),
                right(fmt::count(r.acknack_requested_sns)),
                right(fmt::count(r.nackfrags)),
            ];
            if wide {
                cells.push(Cell::from(locators));
            }
            let row = Row::new(cells);
            if r.gone.is_some() {
                row.style(DIM)
            } else {
                row
            }
        })
        .collect();
    let mut header = vec![
        Cell::from("GUID"),
        Cell::from("Topic"),
        Cell::from("QoS"),
        right("ACKN".into()),
        right("NackSN".into()),
        right("NFrag".into()),
    ];
    if wide {
        header.push(Cell::from("Locators"));
    }
    let title = format!(
        "{} readers · ACKN = ACKNACKs sent · NackSN = SNs they asked again · NFrag = NACK_FRAGs",
        rows.len()
    );
    let (t, mut state) = table(body, header, widths, sel, title);
    f.render_stateful_widget(t, area, &mut state);
}

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

fn health(f: &mut Frame<'_>, area: Rect, s: &Snapshot, ui: &UiState) {
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

fn help(f: &mut Frame<'_>, area: Rect, ui: &UiState) {
    let keys: &[(&str, &str)] = &[
        (
            "1-5 Tab ←→",
            "views: Topics Participants Writers Readers Health",
        ),
        ("↑↓ j k PgUp PgDn", "select a row"),
        ("Enter", "Topics: detail pane full screen (Esc back)"),
        ("s / S", "Topics: sort by the next / previous column"),
        ("r", "reverse the sort order"),
        ("/", "filter by name (Enter keeps, Esc clears)"),
        ("d", "ROS 2 names (rt/chatter → /chatter) on/off"),
        ("b", "built-in discovery topics on/off"),
        ("p", "freeze the display (capture goes on)"),
        ("space", "replay: pause / resume (live: freeze)"),
        ("+ / -", "replay: faster / slower"),
        ("?", "this help (any key closes it)"),
        ("q Ctrl-C", "quit"),
    ];
    let mut lines: Vec<Line<'_>> = keys
        .iter()
        .map(|(k, what)| {
            Line::from(vec![
                Span::styled(format!("{k:>16}  "), KEY),
                Span::raw(*what),
            ])
        })
        .collect();
    lines.push(Line::from(""));
    lines.push(Line::from(Span::styled(
        "Rates: over the sliding window, capture time. Jitter: period std dev.",
        DIM,
    )));
    lines.push(Line::from(Span::styled(
        "[shm] after a topic: shared memory only, its traffic is invisible here.",
        DIM,
    )));
    if ui.replay {
        lines.push(Line::from(Span::styled(
            format!(
                "Replay speed: {}",
                ui.speed
                    .map_or_else(|| "max".to_string(), |s| format!("{s}x"))
            ),
            DIM,
        )));
    }
    let h = u16::try_from(lines.len())
        .unwrap_or(u16::MAX)
        .saturating_add(2)
        .min(area.height);
    let w = 76u16.min(area.width);
    let popup = Rect {
        x: area.x.saturating_add(area.width.saturating_sub(w) / 2),
        y: area.y.saturating_add(area.height.saturating_sub(h) / 2),
        width: w,
        height: h,
    };
    f.render_widget(Clear, popup);
    f.render_widget(
        Paragraph::new(lines).block(
            Block::bordered()
                .title(Span::styled(" Keys ", HEADER))
                .border_style(KEY),
        ),
        popup,
    );
}
