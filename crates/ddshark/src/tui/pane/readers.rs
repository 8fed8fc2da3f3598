//! The Readers view: one row per reader.

use ratatui::layout::Rect;
use ratatui::Frame;

use super::{endpoint_topic, qos_short, Column, TablePane, Text, Width};
use crate::state::snapshot::ReaderView;
use crate::state::Snapshot;
use crate::tui::app::UiState;
use crate::tui::fmt;
use crate::tui::style::DIM;

type R<'a> = &'a ReaderView;

fn columns<'a>(ui: &'a UiState) -> Vec<Column<'a, R<'a>>> {
    let count = |v: u64| Text::from(fmt::count(v));
    vec![
        Column::left("GUID", Width::Guid, |r: &R| r.guid.clone().into()),
        Column::left("Topic", Width::Fit { min: 10 }, |r: &R| {
            endpoint_topic(&r.ros_topic, &r.topic, ui, "?").into()
        }),
        Column::left("QoS", Width::Fit { min: 11 }, |r: &R| {
            r.qos
                .as_ref()
                .map_or("?".into(), |q| qos_short(q, false))
                .into()
        }),
        Column::right("ACKN", Width::Fixed(6), move |r: &R| count(r.acknacks)),
        Column::right("NackSN", Width::Fixed(6), move |r: &R| {
            count(r.acknack_requested_sns)
        }),
        Column::right("NFrag", Width::Fixed(5), move |r: &R| count(r.nackfrags)),
        Column::left("Locators", Width::Fit { min: 8 }, |r: &R| {
            r.locators.join(" ").into()
        })
        .wide_only(),
    ]
}

pub(in crate::tui) fn readers(f: &mut Frame<'_>, area: Rect, s: &Snapshot, ui: &UiState) {
    let rows = ui.reader_rows(s);
    let keys: Vec<&str> = rows.iter().map(|r| r.guid.as_str()).collect();
    let sel = ui.selected_index(&keys);
    let pane = TablePane {
        columns: columns(ui),
        first: 1,
        title: format!(
            "{} readers · ACKN = ACKNACKs sent · NackSN = SNs they asked again · NFrag = NACK_FRAGs",
            rows.len()
        ),
        row_style: |r: &R| r.gone.is_some().then_some(DIM),
    };
    pane.draw(f, area, &rows, sel);
}
