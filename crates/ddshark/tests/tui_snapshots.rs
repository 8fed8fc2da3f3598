//! Rendered TUI frames over real fixture replays, pinned with insta.
//!
//! Each fixture is replayed through the real pipeline (file source → engine →
//! state) with the TUI's snapshot period; every snapshot is fed to the UI state
//! (sparkline history, rates) as the TUI thread would, and the frame is rendered
//! on ratatui's `TestBackend` at 80×24 and at a larger size. Run with
//! `INSTA_UPDATE=no` (or `CI=true`) so that a difference fails instead of
//! writing a `.snap.new`; review changes with `cargo insta review`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::tui::replay;
use ddshark::state::snapshot::TopicView;
use ddshark::state::Snapshot;
use ddshark::tui::{render, TopicColumn, UiState, View};
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;

fn draw(snap: &Snapshot, ui: &UiState, w: u16, h: u16) -> String {
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    term.draw(|f| render(f, Some(snap), ui)).unwrap();
    term.backend().to_string()
}

fn key(ui: &mut UiState, snap: &Snapshot, code: KeyCode) {
    ui.on_key(KeyEvent::new(code, KeyModifiers::NONE), Some(snap));
}

fn type_str(ui: &mut UiState, snap: &Snapshot, s: &str) {
    for c in s.chars() {
        key(ui, snap, KeyCode::Char(c));
    }
}

#[test]
fn every_view_vlan_pcp() {
    let (mut ui, snap) = replay("h_vlan_pcp/a.pcap");
    for view in View::ALL {
        ui.view = view;
        for (w, h) in [(80, 24), (140, 40)] {
            let name = format!("h_vlan_pcp_{}_{w}x{h}", view.title().to_lowercase());
            insta::assert_snapshot!(name, draw(&snap, &ui, w, h));
        }
    }
}

#[test]
fn topics_small_reliable_ros_names_and_detail() {
    let (mut ui, snap) = replay("a_small_reliable/a.pcap");
    // Default: DDS names, sorted by bandwidth.
    insta::assert_snapshot!("a_small_reliable_topics_80x24", draw(&snap, &ui, 80, 24));
    // `d`: ROS 2 names; select /rosout (transient local) with the arrow keys.
    key(&mut ui, &snap, KeyCode::Char('d'));
    assert!(ui.ros_names);
    let rows: Vec<String> = ui
        .topic_rows(&snap)
        .iter()
        .map(|t| t.name.clone())
        .collect();
    let target = rows.iter().position(|n| n == "rt/rosout").unwrap();
    for _ in 0..target {
        key(&mut ui, &snap, KeyCode::Down);
    }
    assert_eq!(ui.selected_topic(&snap).unwrap().name, "rt/rosout");
    insta::assert_snapshot!(
        "a_small_reliable_rosout_ros_80x24",
        draw(&snap, &ui, 80, 24)
    );
    insta::assert_snapshot!(
        "a_small_reliable_rosout_ros_140x40",
        draw(&snap, &ui, 140, 40)
    );
    // Enter: the detail pane full screen.
    key(&mut ui, &snap, KeyCode::Enter);
    insta::assert_snapshot!(
        "a_small_reliable_rosout_zoom_80x24",
        draw(&snap, &ui, 80, 24)
    );
}

#[test]
fn large_fragmented_samples_histogram() {
    let (mut ui, snap) = replay("b_large_frag/a.pcap");
    ui.sort = TopicColumn::MeanSize;
    ui.descending = true;
    insta::assert_snapshot!("b_large_frag_topics_80x24", draw(&snap, &ui, 80, 24));
    insta::assert_snapshot!("b_large_frag_topics_140x40", draw(&snap, &ui, 140, 40));
}

/// Fast DDS with shared memory on: rt/imu and rt/camera/image_raw have a matched writer
/// and reader on one host and nothing on the wire, so they carry the `[shm]` marker and
/// the detail pane says their traffic is invisible here.
#[test]
fn fastdds_shared_memory_only_topics_are_marked() {
    let (mut ui, snap) = replay("k2_fastdds_shm/a.pcap");
    ui.sort = TopicColumn::Name;
    ui.descending = false;
    let wide = draw(&snap, &ui, 140, 40);
    assert_eq!(wide.matches("[shm]").count(), 2, "{wide}");
    assert!(
        wide.contains("shared memory only: traffic invisible here"),
        "{wide}"
    );
    insta::assert_snapshot!("k2_fastdds_shm_topics_140x40", wide);
}

/// The detail pane's timing line: rate over the active time, period, jitter, and the
/// DEADLINE with the samples that came later than it.
#[test]
fn fastdds_deadline_misses_in_the_detail_pane() {
    let (mut ui, snap) = replay("k3_fastdds_deadline/a.pcap");
    ui.sort = TopicColumn::Name;
    ui.descending = false;
    ui.selected[0] = Some("rt/chatter".into());
    let wide = draw(&snap, &ui, 140, 40);
    assert!(wide.contains("deadline 30.0ms"), "{wide}");
    assert!(wide.contains("missed 19"), "{wide}");
    insta::assert_snapshot!("k3_fastdds_deadline_chatter_140x40", wide);
}

#[test]
fn late_start_without_discovery() {
    let (ui, snap) = replay("i_late_start/a.pcap");
    insta::assert_snapshot!("i_late_start_topics_80x24", draw(&snap, &ui, 80, 24));
    let mut ui = ui;
    ui.view = View::Writers;
    insta::assert_snapshot!("i_late_start_writers_80x24", draw(&snap, &ui, 80, 24));
}

#[test]
fn filter_help_and_sort_keys() {
    let (mut ui, snap) = replay("h_vlan_pcp/a.pcap");
    // `/lidar⏎` keeps one topic.
    key(&mut ui, &snap, KeyCode::Char('/'));
    assert!(ui.editing_filter);
    type_str(&mut ui, &snap, "LIDAR");
    insta::assert_snapshot!("h_vlan_pcp_filter_editing_80x24", draw(&snap, &ui, 80, 24));
    key(&mut ui, &snap, KeyCode::Enter);
    assert!(!ui.editing_filter);
    let rows: Vec<&str> = ui
        .topic_rows(&snap)
        .iter()
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(rows, ["rt/sensing/lidar/points"]);
    // Esc clears it.
    key(&mut ui, &snap, KeyCode::Esc);
    assert!(ui.filter.is_empty());
    assert!(ui.topic_rows(&snap).len() > 1);

    // Sort by every column in turn, both directions: every user topic of the snapshot
    // exactly once, in the order of the column's values read from the snapshot itself.
    let mut user_topics: Vec<&str> = snap
        .topics
        .iter()
        .filter(|t| !t.builtin)
        .map(|t| t.name.as_str())
        .collect();
    user_topics.sort_unstable();
    for _ in 0..TopicColumn::ALL.len() {
        key(&mut ui, &snap, KeyCode::Char('s'));
        for _ in 0..2 {
            let rows = ui.topic_rows(&snap);
            let what = format!("sort {:?} descending={}", ui.sort, ui.descending);
            let shown: Vec<&str> = rows.iter().map(|t| t.name.as_str()).collect();
            let mut names = shown.clone();
            names.sort_unstable();
            assert_eq!(names, user_topics, "{what}: every user topic once");
            if ui.sort == TopicColumn::Name {
                let mut by_name = user_topics.clone();
                if ui.descending {
                    by_name.reverse();
                }
                assert_eq!(shown, by_name, "{what}");
            }
            if let Some(value) = column_value(ui.sort) {
                let values: Vec<f64> = rows.iter().map(|t| value(t)).collect();
                let ordered = values.windows(2).all(|w| {
                    if ui.descending {
                        w[0] >= w[1]
                    } else {
                        w[0] <= w[1]
                    }
                });
                assert!(ordered, "{what}: {values:?}");
            }
            let _ = draw(&snap, &ui, 80, 24);
            key(&mut ui, &snap, KeyCode::Char('r'));
        }
    }
    ui.sort = TopicColumn::Pcp;
    ui.descending = true;
    let first = ui.topic_rows(&snap)[0];
    assert!(
        first.pcp.iter().any(|p| p.pcp == Some(5)),
        "PCP 5 sorts first"
    );

    // `?` shows the help; any key closes it.
    key(&mut ui, &snap, KeyCode::Char('?'));
    insta::assert_snapshot!("h_vlan_pcp_help_80x24", draw(&snap, &ui, 80, 24));
    key(&mut ui, &snap, KeyCode::Char('x'));
    assert!(!ui.help);

    // Built-in topics on `b`.
    let n = ui.topic_rows(&snap).len();
    key(&mut ui, &snap, KeyCode::Char('b'));
    assert!(ui.topic_rows(&snap).len() > n);
}

/// The numeric value a topic column sorts by, as the snapshot holds it.
fn column_value(column: TopicColumn) -> Option<fn(&TopicView) -> f64> {
    Some(match column {
        TopicColumn::Writers => |t| t.writers as f64,
        TopicColumn::Readers => |t| t.readers as f64,
        TopicColumn::Rate => |t| t.rate.hz.unwrap_or(0.0),
        TopicColumn::Jitter => |t| t.timing.period_stddev_ns.unwrap_or(0.0),
        TopicColumn::Bandwidth => |t| t.rate.bandwidth_bps.unwrap_or(0.0),
        TopicColumn::MeanSize => |t| t.size.mean.unwrap_or(0.0),
        TopicColumn::Fragments => |t| t.data_frags_per_sample.unwrap_or(0.0),
        TopicColumn::Lost => |t| t.totals.lost as f64,
        TopicColumn::Retransmitted => |t| t.totals.retransmitted as f64,
        TopicColumn::Name | TopicColumn::Type | TopicColumn::Pcp => return None,
    })
}

#[test]
fn replay_speed_keys_and_quit() {
    let (mut ui, snap) = replay("a_small_reliable/a.pcap");
    assert_eq!(ui.speed, Some(1.0));
    let act = ui.on_key(
        KeyEvent::new(KeyCode::Char('+'), KeyModifiers::NONE),
        Some(&snap),
    );
    assert_eq!(act, ddshark::tui::Action::Pace);
    assert_eq!(ui.speed, Some(2.0));
    key(&mut ui, &snap, KeyCode::Char('-'));
    key(&mut ui, &snap, KeyCode::Char('-'));
    assert_eq!(ui.speed, Some(0.5));
    key(&mut ui, &snap, KeyCode::Char(' '));
    assert!(ui.replay_paused);
    let q = ui.on_key(
        KeyEvent::new(KeyCode::Char('q'), KeyModifiers::NONE),
        Some(&snap),
    );
    assert_eq!(q, ddshark::tui::Action::Quit);
    let c = ui.on_key(
        KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL),
        Some(&snap),
    );
    assert_eq!(c, ddshark::tui::Action::Quit);
}

#[test]
fn no_snapshot_yet_and_tiny_terminal() {
    let ui = UiState::new("eth0", false, None, false);
    let mut term = Terminal::new(TestBackend::new(80, 24)).unwrap();
    term.draw(|f| render(f, None, &ui)).unwrap();
    insta::assert_snapshot!("waiting_80x24", term.backend().to_string());
    // Very small terminals must not panic, in any view.
    let (mut ui, snap) = replay("h_vlan_pcp/a.pcap");
    for view in View::ALL {
        ui.view = view;
        for (w, h) in [(1, 1), (10, 3), (40, 10), (79, 23)] {
            let _ = draw(&snap, &ui, w, h);
        }
        ui.help = true;
        let _ = draw(&snap, &ui, 20, 5);
        ui.help = false;
    }
}

#[test]
fn secured_traffic_sros2_participants_and_health() {
    // SROS2's default governance: every user submessage protected, so no topic; the
    // participants show what they sent secured and how many endpoints are protected.
    let (mut ui, snap) = replay("m_fastdds_sros2/a.pcap");
    for view in [View::Participants, View::Health] {
        ui.view = view;
        let name = format!("m_fastdds_sros2_{}_140x40", view.title().to_lowercase());
        insta::assert_snapshot!(name, draw(&snap, &ui, 140, 40));
    }
}
