//! The Participants view: one row per participant.

use std::collections::HashMap;

use ratatui::layout::Rect;
use ratatui::Frame;

use super::{gone, Column, TablePane, Text, Width, WIDE};
use crate::state::snapshot::{ParticipantView, SecuredParticipantView};
use crate::state::Snapshot;
use crate::tui::app::UiState;
use crate::tui::fmt;
use crate::tui::style::{BAD, GOOD};
use crate::units;

type P<'a> = &'a ParticipantView;

/// `endpoints`: writers and readers per GUID prefix; `wide`: all addresses, else the
/// first and how many more; `secured`: what each sent protected by DDS Security (its
/// columns only when some traffic was).
fn columns<'a>(
    s: &'a Snapshot,
    endpoints: &'a HashMap<&'a str, (u64, u64)>,
    secured: &'a HashMap<&'a str, &'a SecuredParticipantView>,
    wide: bool,
) -> Vec<Column<'a, P<'a>>> {
    let now = s.summary.capture_time_ns;
    let mut columns = vec![
        Column::left("GUID prefix", Width::Fixed(24), |p: &P| {
            p.guid_prefix.clone().into()
        }),
        Column::left("Vendor", Width::Fit { min: 8 }, |p: &P| {
            p.vendor_name
                .map_or_else(|| p.vendor.clone().unwrap_or_default(), str::to_string)
                .into()
        }),
        Column::left("Address", Width::Fit { min: 12 }, move |p: &P| {
            match p.addresses.as_slice() {
                [] => "-".to_string(),
                [a] => a.clone(),
                [a, rest @ ..] if !wide => format!("{a}+{}", rest.len()),
                all => all.join(" "),
            }
            .into()
        }),
        Column::left("Name", Width::Fit { min: 8 }, |p: &P| {
            p.entity_name.clone().unwrap_or_default().into()
        }),
        Column::right("W/R", Width::Fixed(5), |p: &P| {
            let (w, r) = endpoints
                .get(p.guid_prefix.as_str())
                .copied()
                .unwrap_or((0, 0));
            format!("{w}/{r}").into()
        }),
        Column::left("Alive", Width::Fit { min: 5 }, move |p: &P| {
            let quiet_s = now.saturating_sub(p.last_seen_ns) as f64 / 1e9;
            match p.gone {
                Some(g) => Text::from(gone(g.reason).to_string()).styled(BAD),
                None => {
                    let lease = p.lease_ns.flatten().map(|ns| ns as f64 / 1e9);
                    if lease.is_some_and(|l| quiet_s > l) {
                        Text::from(format!("quiet {}", fmt::secs(quiet_s))).styled(BAD)
                    } else {
                        Text::from("alive".to_string()).styled(GOOD)
                    }
                }
            }
        }),
        Column::left("Dom", Width::Fixed(3), |p: &P| {
            p.domain_id.map_or("-".into(), |d| d.to_string()).into()
        })
        .wide_only(),
        Column::right("Dgrams", Width::Fixed(7), |p: &P| {
            fmt::count(p.datagrams).into()
        })
        .wide_only(),
        Column::right("Bytes", Width::Fixed(7), |p: &P| {
            units::bytes(p.bytes as f64).into()
        })
        .wide_only(),
    ];
    if !secured.is_empty() {
        let of = move |p: &P| secured.get(p.guid_prefix.as_str()).copied();
        columns.extend([
            Column::right("Sec/s", Width::Fixed(7), move |p: &P| {
                of(p)
                    .map_or("-".to_string(), |v| fmt::hz(v.window.messages_per_s))
                    .into()
            }),
            Column::right("Sec BW", Width::Fixed(8), move |p: &P| {
                of(p)
                    .map_or("-".to_string(), |v| fmt::bandwidth(v.window.bandwidth_bps))
                    .into()
            }),
            Column::right("Prot", Width::Fixed(4), move |p: &P| {
                of(p)
                    .map_or("-".to_string(), |v| v.protected_endpoints.to_string())
                    .into()
            }),
        ]);
    }
    columns
}

pub(in crate::tui) fn participants(f: &mut Frame<'_>, area: Rect, s: &Snapshot, ui: &UiState) {
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
    let secured: HashMap<&str, &SecuredParticipantView> = s
        .secured
        .participants
        .iter()
        .map(|p| (p.guid_prefix.as_str(), p))
        .collect();
    let title = if secured.is_empty() {
        format!("{} participants · W/R = writers/readers", rows.len())
    } else {
        format!(
            "{} participants · W/R = writers/readers · Sec = DDS Security messages sent, Prot = protected endpoints (topics hidden)",
            rows.len()
        )
    };
    let pane = TablePane {
        columns: columns(s, &endpoints, &secured, area.width >= WIDE),
        first: 3,
        title,
        row_style: |_: &P| None,
    };
    pane.draw(f, area, &rows, sel);
}
