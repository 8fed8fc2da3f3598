//! The Writers view: one row per writer.

use ratatui::layout::Rect;
use ratatui::Frame;

use super::{endpoint_topic, qos_short, Column, TablePane, Text, Width};
use crate::state::snapshot::WriterView;
use crate::state::Snapshot;
use crate::tui::app::UiState;
use crate::tui::fmt;
use crate::tui::style::DIM;

type W<'a> = &'a WriterView;

fn columns<'a>(ui: &'a UiState) -> Vec<Column<'a, W<'a>>> {
    let count = |v: u64| Text::from(fmt::count(v));
    vec![
        Column::left("GUID", Width::Guid, |w: &W| w.guid.clone().into()),
        Column::left("Topic", Width::Fit { min: 10 }, |w: &W| {
            endpoint_topic(&w.ros_topic, &w.topic, ui, "(no discovery)").into()
        }),
        Column::left("QoS", Width::Fit { min: 11 }, |w: &W| {
            w.qos
                .as_ref()
                .map_or("?".into(), |q| qos_short(q, true))
                .into()
        }),
        Column::right("SN", Width::Fixed(6), |w: &W| {
            w.highest_sn.map_or("-".into(), |v| v.to_string()).into()
        }),
        Column::right("HB", Width::Fixed(5), move |w: &W| {
            count(w.totals.heartbeats)
        }),
        Column::right("ACKN", Width::Fixed(5), move |w: &W| {
            count(w.totals.acknacks)
        }),
        Column::right("Rep", Width::Fixed(4), move |w: &W| {
            count(w.totals.repaired)
        }),
        Column::right("Smpl", Width::Fixed(6), move |w: &W| {
            count(w.totals.samples)
        })
        .wide_only(),
        Column::right("Rate", Width::Fixed(6), |w: &W| fmt::rate(&w.rate).into()).wide_only(),
        Column::right("Lost", Width::Fixed(5), move |w: &W| count(w.totals.lost)).wide_only(),
        Column::right("Retx", Width::Fixed(5), move |w: &W| {
            count(w.totals.retransmitted)
        })
        .wide_only(),
        Column::left("Source", Width::Fit { min: 8 }, |w: &W| {
            w.src.clone().unwrap_or_default().into()
        })
        .wide_only(),
    ]
}

pub(in crate::tui) fn writers(f: &mut Frame<'_>, area: Rect, s: &Snapshot, ui: &UiState) {
    let rows = ui.writer_rows(s);
    let keys: Vec<&str> = rows.iter().map(|w| w.guid.as_str()).collect();
    let sel = ui.selected_index(&keys);
    let pane = TablePane {
        columns: columns(ui),
        first: 1,
        title: format!(
            "{} writers · SN = highest seen · HB/ACKN = HEARTBEATs/ACKNACKs · Rep = repairs",
            rows.len()
        ),
        row_style: |w: &W| w.gone.is_some().then_some(DIM),
    };
    pane.draw(f, area, &rows, sel);
}
