//! The TUI's event loop, as the program runs it, on ratatui's `TestBackend` with a
//! scripted event stream instead of a terminal: keys reach the replay's pace control,
//! `q` and Ctrl-C stop the capture, the program's quit flag closes the UI, and what is
//! drawn follows the keys. (The real binary in a real terminal: tui_tmux.rs, system tier.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{bail, Result};
use common::fixture;
use ddshark::pipeline::{PaceControl, SnapshotHub};
use ddshark::stats_cmd::{stats_file, StatsOptions};
use ddshark::tui::{event_loop, render, EventSource, LoopInputs, TuiOptions};
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;

/// Hands out its events one per call; running out fails the test instead of hanging.
struct Script(VecDeque<Event>);

impl EventSource for Script {
    fn next_event(&mut self, _timeout: Duration) -> Result<Option<Event>> {
        match self.0.pop_front() {
            Some(e) => Ok(Some(e)),
            None => bail!("the script ran out of events before the UI quit"),
        }
    }
}

fn key(code: KeyCode) -> Event {
    Event::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

fn text(s: &str) -> impl Iterator<Item = Event> + '_ {
    s.chars().map(|c| key(KeyCode::Char(c)))
}

struct Run {
    screen: String,
    stopped: bool,
    pace: PaceControl,
    result: Result<()>,
}

/// Runs the UI loop over the VLAN fixture's final snapshot with `events`.
fn run(events: impl IntoIterator<Item = Event>, quit_flag: bool) -> Run {
    let hub = SnapshotHub::new();
    hub.publish(stats_file(&fixture("h_vlan_pcp/a.pcap"), &StatsOptions::default()).unwrap());
    let stop = AtomicBool::new(false);
    let quit = AtomicBool::new(quit_flag);
    let pace = PaceControl::new(Some(1.0));
    let opts = TuiOptions {
        source: "a.pcap".into(),
        replay: true,
        speed: Some(1.0),
        ros_names: false,
        export: None,
        log: None,
    };
    let mut terminal = Terminal::new(TestBackend::new(120, 32)).unwrap();
    let result = event_loop(
        &mut terminal,
        &mut Script(events.into_iter().collect()),
        render,
        &LoopInputs {
            hub: &hub,
            stop: &stop,
            pace: Some(&pace),
            quit: &quit,
            opts: &opts,
        },
    );
    Run {
        screen: terminal.backend().to_string(),
        stopped: stop.load(Ordering::Relaxed),
        pace,
        result,
    }
}

#[test]
fn q_quits_and_stops_the_capture() {
    let r = run([key(KeyCode::Char('q'))], false);
    r.result.unwrap();
    assert!(r.stopped, "q must stop the capture");
    assert!(r.screen.contains("rt/sensing/lidar/points"), "{}", r.screen);
}

#[test]
fn ctrl_c_quits() {
    let ctrl_c = Event::Key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL));
    let r = run([ctrl_c], false);
    r.result.unwrap();
    assert!(r.stopped, "Ctrl-C must stop the capture");
}

#[test]
fn the_programs_quit_flag_closes_the_ui_without_stopping_the_capture() {
    let r = run([], true);
    r.result.unwrap();
    assert!(!r.stopped);
}

#[test]
fn pace_keys_reach_the_replay() {
    // Space pauses, + steps the speed up to "as fast as possible".
    let mut events = vec![key(KeyCode::Char(' '))];
    events.extend((0..12).map(|_| key(KeyCode::Char('+'))));
    events.push(key(KeyCode::Char('q')));
    let r = run(events, false);
    r.result.unwrap();
    assert!(r.pace.paused(), "Space must pause the replay");
    assert_eq!(r.pace.speed(), None, "12 × + must reach the maximum speed");

    let r = run([key(KeyCode::Char('-')), key(KeyCode::Char('q'))], false);
    r.result.unwrap();
    assert!(!r.pace.paused());
    assert!(
        r.pace.speed().is_some_and(|s| s < 1.0),
        "- must slow the replay down: {:?}",
        r.pace.speed()
    );
}

#[test]
fn views_filter_and_help_follow_the_keys() {
    // The screen is read after the last event before the script runs out.
    let r = run([key(KeyCode::Char('2'))], false);
    assert!(r.result.is_err(), "the script ends without quitting");
    assert!(r.screen.contains("GUID prefix"), "{}", r.screen);

    let mut events = vec![key(KeyCode::Char('/'))];
    events.extend(text("lidar"));
    events.push(key(KeyCode::Enter));
    let r = run(events, false);
    assert!(r.screen.contains("[/lidar]"), "{}", r.screen);
    assert!(!r.screen.contains("velocity_status"), "{}", r.screen);

    let r = run([key(KeyCode::Char('?'))], false);
    assert!(
        r.screen.contains("Keys") && r.screen.contains("this help"),
        "{}",
        r.screen
    );

    let r = run(
        [
            key(KeyCode::Char('?')),
            Event::Resize(120, 32),
            key(KeyCode::Esc),
        ],
        false,
    );
    assert!(!r.screen.contains("this help"), "{}", r.screen);
}
