//! The Topics view: one row per topic (sortable by any column), the selected topic's
//! detail below.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Style};
use ratatui::Frame;

use super::detail::{detail, SHM_MARKER};
use super::{count_warn, per_sample, Column, TablePane, Text, Width, WIDE};
use crate::state::snapshot::TopicView;
use crate::state::Snapshot;
use crate::tui::app::{TopicColumn, UiState};
use crate::tui::fmt;
use crate::tui::style::WARN;
use crate::units;

type T<'a> = &'a TopicView;

/// The Topics table's column for `c`: the table is [`TopicColumn::ALL`] in order (the
/// sort keys), with the sort mark on the sorted one.
fn column<'a>(c: TopicColumn, ui: &'a UiState, wide: bool) -> Column<'a, T<'a>> {
    let counter = Width::Fixed(if wide { 6 } else { 4 });
    let h = c.header();
    let column = match c {
        TopicColumn::Name => Column::left(h, Width::FitMarked { min: 12 }, |t: &T| {
            let name = Text::from(ui.topic_name(t).to_string());
            if t.shared_memory_only {
                name.marked(SHM_MARKER, WARN)
            } else {
                name
            }
        }),
        TopicColumn::Type => Column::left(h, Width::FitMarked { min: 12 }, |t: &T| {
            ui.type_name(t).to_string().into()
        })
        .wide_only(),
        TopicColumn::Writers => {
            Column::right(h, Width::Fixed(3), |t: &T| t.writers.to_string().into())
        }
        TopicColumn::Readers => {
            Column::right(h, Width::Fixed(3), |t: &T| t.readers.to_string().into())
        }
        TopicColumn::Rate => Column::right(h, Width::Fixed(6), |t: &T| fmt::rate(&t.rate).into()),
        TopicColumn::Jitter => Column::right(h, Width::Fixed(6), |t: &T| {
            t.timing
                .period_stddev_ns
                .map_or("-".into(), fmt::short_duration)
                .into()
        })
        .wide_only(),
        TopicColumn::Bandwidth => Column::right(h, Width::Fixed(8), |t: &T| {
            fmt::rate_bandwidth(&t.rate).into()
        }),
        TopicColumn::MeanSize => Column::right(h, Width::Fixed(6), |t: &T| {
            t.size.mean.map_or("-".into(), units::bytes).into()
        }),
        TopicColumn::Fragments => Column::right(h, counter, |t: &T| {
            per_sample(t.data_frags_per_sample).into()
        }),
        TopicColumn::Lost => Column::right(h, counter, |t: &T| count_warn(t.totals.lost)),
        TopicColumn::Retransmitted => Column::right(h, counter, |t: &T| {
            fmt::count(t.totals.retransmitted).into()
        }),
        TopicColumn::Pcp => Column::left(h, Width::Fit { min: 3 }, |t: &T| pcp_text(t).into()),
    };
    let mark = (c == ui.sort).then_some(if ui.descending { '▼' } else { '▲' });
    column.mark(mark)
}

fn pcp_text(t: &TopicView) -> String {
    t.pcp
        .iter()
        .map(|p| p.pcp.map_or_else(|| "-".to_string(), |v| v.to_string()))
        .collect::<Vec<_>>()
        .join(",")
}

pub(in crate::tui) fn topics(f: &mut Frame<'_>, area: Rect, s: &Snapshot, ui: &UiState) {
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
    let wide = area.width >= WIDE;
    let pane = TablePane {
        columns: TopicColumn::ALL
            .iter()
            .map(|c| column(*c, ui, wide))
            .collect(),
        first: 0,
        title,
        row_style: |t: &T| {
            let mismatched = !t.qos_mismatches.is_empty() || !t.other_types.is_empty();
            mismatched.then_some(Style::new().fg(Color::Magenta))
        },
    };
    pane.draw(f, top, &rows, sel);
    detail(f, bottom, s, ui, topic);
}
