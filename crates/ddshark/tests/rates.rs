//! One rate everywhere: the 30 Hz topic of `h_vlan_pcp` (active 0.6 s of its 2.4 s
//! capture) reads 30 ± 1 Hz in `stats` JSON and text, in the `--no-tui` summaries (text
//! and JSON lines) and in the TUI, each marked as taken over its own active span; before,
//! it read `-` (text), `null` beside 18 (JSON) and 18 (TUI).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use ddshark::tui::render;
use ratatui::backend::TestBackend;
use ratatui::Terminal;

const TOPIC: &str = "rt/control/command/control_cmd";

fn vlan_pcp() -> String {
    common::fixture("h_vlan_pcp/a.pcap")
        .to_string_lossy()
        .into_owned()
}

use common::ddshark_stdout as stdout;

fn assert_30_hz(what: &str, hz: f64) {
    assert!((hz - 30.0).abs() <= 1.0, "{what}: {hz} Hz, want 30 ± 1");
}

/// The topic's (and its writer's) rate in a JSON snapshot or `--no-tui` line.
fn json_rate(what: &str, v: &serde_json::Value) {
    let topic = v["topics"]
        .as_array()
        .expect("topics")
        .iter()
        .find(|t| t["name"] == TOPIC)
        .expect("the topic");
    let rate = &topic["rate"];
    assert_30_hz(what, rate["hz"].as_f64().expect("rate.hz"));
    assert_eq!(rate["over_active_span"], true, "{what}: {rate}");
    // Bandwidth is the rate times the mean sample size (48 B).
    let bps = rate["bandwidth_bps"].as_f64().expect("rate.bandwidth_bps");
    assert!(
        (bps - rate["hz"].as_f64().unwrap() * 48.0 * 8.0).abs() < 1e-6,
        "{what}: {rate}"
    );
}

/// The RATE/s cell of the topic's line in a text report: `30.0*`.
fn text_rate(what: &str, report: &str) {
    let line = report
        .lines()
        .find(|l| l.starts_with(TOPIC))
        .unwrap_or_else(|| panic!("{what}: no line for {TOPIC}:\n{report}"));
    let cell = line
        .split_whitespace()
        .nth(6)
        .unwrap_or_else(|| panic!("{what}: {line}"));
    let hz = cell
        .strip_suffix('*')
        .unwrap_or_else(|| panic!("{what}: {cell} is not marked as over its active span"));
    assert_30_hz(what, hz.parse().expect("a rate"));
    assert!(
        report.contains("* rate over the writer's own first→latest sample"),
        "{what}: the mark is not explained"
    );
}

#[test]
fn stats_json_and_text_read_30_hz() {
    let pcap = vlan_pcp();
    let json: serde_json::Value = serde_json::from_str(&stdout(&["stats", &pcap, "-q"])).unwrap();
    json_rate("stats json", &json);
    let writer = json["writers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["topic"] == TOPIC)
        .expect("its writer");
    assert_30_hz("stats json writer", writer["rate"]["hz"].as_f64().unwrap());
    text_rate(
        "stats text",
        &stdout(&["stats", &pcap, "-q", "--format", "text"]),
    );
}

#[test]
fn no_tui_summaries_read_30_hz() {
    let pcap = vlan_pcp();
    let text = stdout(&["-r", &pcap, "--no-tui"]);
    let last = text.rsplit("=== ").next().expect("a summary");
    text_rate("--no-tui text", last);
    let jsonl = stdout(&["-r", &pcap, "--no-tui", "--format", "jsonl"]);
    let last = jsonl.lines().last().expect("a line");
    json_rate("--no-tui jsonl", &serde_json::from_str(last).unwrap());
}

#[test]
fn the_tui_reads_30_hz() {
    let (ui, snap) = common::tui::replay("h_vlan_pcp/a.pcap");
    let mut term = Terminal::new(TestBackend::new(140, 40)).unwrap();
    term.draw(|f| render(f, Some(&snap), &ui)).unwrap();
    let screen = term.backend().to_string();
    let row = screen
        .lines()
        .find(|l| l.contains(TOPIC))
        .unwrap_or_else(|| panic!("no row for {TOPIC}:\n{screen}"));
    // The Rate cell, rounded as the TUI rounds (`30*`), marked.
    let cell = row
        .split_whitespace()
        .find_map(|c| c.strip_suffix('*'))
        .unwrap_or_else(|| panic!("no marked rate: {row}"));
    assert_30_hz("TUI", cell.parse().expect("a rate"));
}
