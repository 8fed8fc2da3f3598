//! The TUI's tables share the terminal's width by content: at 120 columns nothing that
//! fits is cut (topic and type names, participant names, writers' topics), a long column
//! does not cut a short one, and bandwidth is in bytes/s as `stats` shows it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;

use common::fixture;
use ddshark::capture::file::FileSource;
use ddshark::pipeline::{run_inline, Engine, EngineConfig};
use ddshark::state::Snapshot;
use ddshark::tui::{render, UiState, View};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

fn replay(rel: &str) -> (UiState, Arc<Snapshot>) {
    let mut engine = Engine::new(EngineConfig::default());
    let mut src = FileSource::open(&fixture(rel)).unwrap();
    run_inline(&mut src, &mut engine).unwrap();
    let last = engine.finish();
    let mut ui = UiState::new(rel, true, None, false);
    ui.ingest(&last);
    (ui, last)
}

/// The rendered lines of `view` at `w`×`h`.
fn lines(snap: &Snapshot, ui: &mut UiState, view: View, w: u16, h: u16) -> Vec<String> {
    ui.view = view;
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    term.draw(|f| render(f, Some(snap), ui)).unwrap();
    let buf = term.backend().buffer().clone();
    (0..h)
        .map(|y| {
            (0..w)
                .map(|x| buf[(x, y)].symbol().to_string())
                .collect::<String>()
        })
        .collect()
}

/// A line holding `first`, then (after spaces) `second`, both whole.
fn row_with(lines: &[String], first: &str, second: &str) -> bool {
    lines.iter().any(|l| {
        l.find(first).is_some_and(|i| {
            let rest = &l[i + first.len()..];
            // (a topic only on shared memory is marked `[shm]`)
            let rest = rest.trim_start();
            rest.strip_prefix("[shm]")
                .unwrap_or(rest)
                .trim_start()
                .starts_with(second)
        })
    })
}

const SMALL_NAMES: [&str; 4] = [
    "k_fastdds/a.pcap",
    "k2_fastdds_shm/a.pcap",
    "d_rustdds_interop/a.pcap",
    "g_dustdds_interop/a.pcap",
];

#[test]
fn topic_and_type_names_that_fit_are_whole_at_120_columns() {
    for rel in SMALL_NAMES {
        let (mut ui, snap) = replay(rel);
        let shown = lines(&snap, &mut ui, View::Topics, 120, 40);
        let rows = ui.topic_rows(&snap);
        assert!(!rows.is_empty(), "{rel}");
        for t in rows {
            assert!(
                row_with(&shown, &t.name, &t.type_name),
                "{rel}: {} {} cut:\n{}",
                t.name,
                t.type_name,
                shown.join("\n")
            );
        }
    }
}

#[test]
fn a_long_type_column_does_not_cut_the_topic_names() {
    // Types up to 63 characters: they take what the names leave.
    for rel in [
        "h_vlan_pcp/a.pcap",
        "a_small_reliable/a.pcap",
        "b_large_frag/a.pcap",
    ] {
        let (mut ui, snap) = replay(rel);
        let shown = lines(&snap, &mut ui, View::Topics, 120, 40);
        for t in ui.topic_rows(&snap) {
            let prefix: String = t.type_name.chars().take(20).collect();
            assert!(
                row_with(&shown, &t.name, &prefix),
                "{rel}: {} cut:\n{}",
                t.name,
                shown.join("\n")
            );
        }
    }
}

#[test]
fn participant_names_and_writer_topics_fit_at_120_columns() {
    for rel in SMALL_NAMES {
        let (mut ui, snap) = replay(rel);
        let shown = lines(&snap, &mut ui, View::Participants, 120, 40);
        for p in ui.participant_rows(&snap) {
            if let Some(name) = &p.entity_name {
                assert!(
                    shown.iter().any(|l| l.contains(name.as_str())),
                    "{rel}: participant {name} cut:\n{}",
                    shown.join("\n")
                );
            }
        }
        let shown = lines(&snap, &mut ui, View::Writers, 120, 40);
        for w in ui.writer_rows(&snap) {
            let topic = w.topic.as_deref().unwrap_or("(no discovery)");
            assert!(
                shown.iter().any(|l| l.contains(topic)),
                "{rel}: writer topic {topic} cut:\n{}",
                shown.join("\n")
            );
        }
    }
}

#[test]
fn bandwidth_is_in_bytes_per_second_as_in_stats() {
    let (mut ui, snap) = replay("b_large_frag/a.pcap");
    let shown = lines(&snap, &mut ui, View::Topics, 120, 40).join("\n");
    assert!(shown.contains("B/s"), "{shown}");
    // No bit rates (`16Mb`) anywhere.
    assert!(
        !shown.contains("Mb ") && !shown.contains("kb "),
        "bits on screen:\n{shown}"
    );
}

#[test]
fn messages_are_on_the_log_line_above_the_keys() {
    let (mut ui, snap) = replay("a_small_reliable/a.pcap");
    ui.log = vec!["ddshark: otlp http://127.0.0.1:9: 422 spans: 0 sent, 422 failed".into()];
    ui.log_total = 3;
    let shown = lines(&snap, &mut ui, View::Topics, 120, 30);
    assert!(shown[0].starts_with("ddshark 1 Topics"), "{}", shown[0]);
    let log = &shown[shown.len() - 2];
    assert!(
        log.starts_with("ddshark: otlp http://127.0.0.1:9: 422 spans")
            && log.contains("(3 messages, all printed at exit)"),
        "{log}"
    );
    assert!(shown[shown.len() - 1].contains("q quit"));
}
