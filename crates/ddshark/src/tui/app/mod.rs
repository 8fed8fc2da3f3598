//! The UI state (view, selection, sort, filter, toggles, history) and what every
//! key does to it. Everything here is plain data: the render step reads it
//! together with a [`Snapshot`], and tests drive it with key events.

mod columns;
mod history;
mod keys;
mod rows;

use std::collections::{HashMap, VecDeque};

pub use columns::{TopicColumn, View};
use history::Mark;
pub(crate) use history::{HealthRates, TopicHistory};

/// What the event loop must do after a key.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Action {
    None,
    Quit,
    /// Replay pacing changed (speed, pause): apply `UiState::speed/replay_paused`.
    Pace,
}

/// Everything the UI remembers between frames.
#[derive(Debug, Clone)]
pub struct UiState {
    pub view: View,
    /// Selected row per view, by key (topic name, GUID prefix, GUID).
    pub selected: [Option<String>; 5],
    pub sort: TopicColumn,
    pub descending: bool,
    pub filter: String,
    pub editing_filter: bool,
    pub ros_names: bool,
    pub(crate) show_builtin: bool,
    pub help: bool,
    /// The detail pane takes the whole body.
    pub(crate) zoom: bool,
    /// The display is frozen on the snapshot it shows.
    pub(crate) frozen: bool,
    /// Input is a file replay (speed keys apply).
    pub(crate) replay: bool,
    pub speed: Option<f64>,
    pub replay_paused: bool,
    /// Name of the input, for the status line.
    pub(crate) source: String,
    pub(crate) history: HashMap<String, TopicHistory>,
    pub(crate) rates: HealthRates,
    /// Counters of recent snapshots; rates are taken over about [`history::RATE_SPAN_NS`].
    marks: VecDeque<Mark>,
    /// OTLP exporter counters, when exporting (copied in by the event loop).
    /// The latest messages (the program's stderr while the UI is up), oldest first,
    /// and how many came in all.
    pub log: Vec<String>,
    pub log_total: u64,
    pub(crate) export: Option<otel_export::ExportStats>,
    /// Rows the last frame showed per page (Page Up/Down).
    pub(crate) page: usize,
}

impl UiState {
    pub fn new(source: &str, replay: bool, speed: Option<f64>, ros_names: bool) -> Self {
        Self {
            view: View::Topics,
            selected: Default::default(),
            sort: TopicColumn::Bandwidth,
            descending: true,
            filter: String::new(),
            editing_filter: false,
            ros_names,
            show_builtin: false,
            help: false,
            zoom: false,
            frozen: false,
            replay,
            speed,
            replay_paused: false,
            source: source.to_string(),
            history: HashMap::new(),
            rates: HealthRates::default(),
            marks: VecDeque::new(),
            export: None,
            log: Vec::new(),
            log_total: 0,
            page: 10,
        }
    }
}
