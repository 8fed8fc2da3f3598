//! The UI state (view, selection, sort, filter, toggles, history) and what every
//! key does to it. Everything here is plain data: the render step reads it
//! together with a [`Snapshot`], and tests drive it with key events.

use std::cmp::Ordering;
use std::collections::{HashMap, VecDeque};

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use crate::state::snapshot::{ParticipantView, ReaderView, TopicView, WriterView};
use crate::state::Snapshot;

/// Points kept per topic for the sparklines (one per snapshot).
pub(crate) const HISTORY: usize = 240;
/// Capture time the Health rates are measured over (at least).
pub(crate) const RATE_SPAN_NS: u64 = 2_000_000_000;
/// Topics whose history is kept.
const MAX_HISTORY_TOPICS: usize = 4096;
/// Replay speeds the `+`/`-` keys step through; `None` = as fast as possible.
pub(crate) const SPEEDS: [Option<f64>; 12] = [
    Some(0.1),
    Some(0.25),
    Some(0.5),
    Some(1.0),
    Some(2.0),
    Some(4.0),
    Some(8.0),
    Some(16.0),
    Some(32.0),
    Some(64.0),
    Some(128.0),
    None,
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    Topics,
    Participants,
    Writers,
    Readers,
    Health,
}

impl View {
    pub const ALL: [View; 5] = [
        View::Topics,
        View::Participants,
        View::Writers,
        View::Readers,
        View::Health,
    ];
    pub fn title(self) -> &'static str {
        match self {
            View::Topics => "Topics",
            View::Participants => "Participants",
            View::Writers => "Writers",
            View::Readers => "Readers",
            View::Health => "Health",
        }
    }
    fn index(self) -> usize {
        View::ALL.iter().position(|v| *v == self).unwrap_or(0)
    }
    fn step(self, forward: bool) -> View {
        let n = View::ALL.len();
        let i = if forward {
            self.index().saturating_add(1) % n
        } else {
            self.index().saturating_add(n.saturating_sub(1)) % n
        };
        View::ALL.get(i).copied().unwrap_or(View::Topics)
    }
}

/// Sortable columns of the Topics table, in display order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopicColumn {
    Name,
    Type,
    Writers,
    Readers,
    Rate,
    /// Standard deviation of the inter-arrival period.
    Jitter,
    Bandwidth,
    MeanSize,
    Fragments,
    Lost,
    Retransmitted,
    Pcp,
}

impl TopicColumn {
    pub const ALL: [TopicColumn; 12] = [
        TopicColumn::Name,
        TopicColumn::Type,
        TopicColumn::Writers,
        TopicColumn::Readers,
        TopicColumn::Rate,
        TopicColumn::Jitter,
        TopicColumn::Bandwidth,
        TopicColumn::MeanSize,
        TopicColumn::Fragments,
        TopicColumn::Lost,
        TopicColumn::Retransmitted,
        TopicColumn::Pcp,
    ];
    pub(crate) fn header(self) -> &'static str {
        match self {
            TopicColumn::Name => "Topic",
            TopicColumn::Type => "Type",
            TopicColumn::Writers => "W",
            TopicColumn::Readers => "R",
            TopicColumn::Rate => "Rate",
            TopicColumn::Jitter => "Jitter",
            TopicColumn::Bandwidth => "B/s",
            TopicColumn::MeanSize => "Size",
            TopicColumn::Fragments => "Frag",
            TopicColumn::Lost => "Lost",
            TopicColumn::Retransmitted => "Retx",
            TopicColumn::Pcp => "PCP",
        }
    }
    /// Text columns sort A→Z first, numbers biggest first.
    fn descending_by_default(self) -> bool {
        !matches!(self, TopicColumn::Name | TopicColumn::Type)
    }
    fn index(self) -> usize {
        TopicColumn::ALL
            .iter()
            .position(|c| *c == self)
            .unwrap_or(0)
    }
}

/// Per-snapshot history of one topic.
#[derive(Debug, Clone, Default)]
pub(crate) struct TopicHistory {
    /// Sliding-window rate, milli-Hz.
    pub(crate) rate_mhz: VecDeque<u64>,
    /// Sliding-window bandwidth, bits/s.
    pub(crate) bps: VecDeque<u64>,
}

/// Counter rates between the last two snapshots (capture time).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct HealthRates {
    pub(crate) frames_s: f64,
    pub(crate) datagrams_s: f64,
    pub(crate) submessages_s: f64,
    pub(crate) samples_s: f64,
    /// Capture-time span the rates cover.
    pub(crate) over_s: f64,
}

#[derive(Debug, Clone, Copy, Default)]
struct Mark {
    ts_ns: u64,
    frames: u64,
    datagrams: u64,
    submessages: u64,
    samples: u64,
}

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
    /// Counters of recent snapshots; rates are taken over about [`RATE_SPAN_NS`].
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

    /// Take in a new snapshot: sparkline history and counter rates.
    pub fn ingest(&mut self, s: &Snapshot) {
        for t in &s.topics {
            if !self.history.contains_key(&t.name) && self.history.len() >= MAX_HISTORY_TOPICS {
                continue;
            }
            let h = self.history.entry(t.name.clone()).or_default();
            push_capped(&mut h.rate_mhz, (t.window.rate_hz * 1000.0).max(0.0) as u64);
            push_capped(&mut h.bps, t.window.bandwidth_bps.max(0.0) as u64);
        }
        if self.history.len() > s.topics.len() {
            let names: std::collections::HashSet<&str> =
                s.topics.iter().map(|t| t.name.as_str()).collect();
            self.history.retain(|k, _| names.contains(k.as_str()));
        }
        let d = &s.health.dissector;
        let mark = Mark {
            ts_ns: s.summary.capture_time_ns,
            frames: d.frames,
            datagrams: d.rtps_datagrams,
            submessages: d.submessages,
            samples: s.summary.totals.samples,
        };
        if self
            .marks
            .back()
            .is_some_and(|m| m.ts_ns >= mark.ts_ns && m.frames == mark.frames)
        {
            return; // Same capture time and counters (e.g. the final snapshot).
        }
        self.marks.push_back(mark);
        // Keep the newest mark at least RATE_SPAN_NS older than this one.
        while self.marks.len() > 2
            && self
                .marks
                .get(1)
                .is_some_and(|m| mark.ts_ns.saturating_sub(m.ts_ns) >= RATE_SPAN_NS)
        {
            self.marks.pop_front();
        }
        if let Some(prev) = self.marks.front().copied() {
            let dt = mark.ts_ns.saturating_sub(prev.ts_ns) as f64 / 1e9;
            if dt > 0.0 {
                let r = |a: u64, b: u64| a.saturating_sub(b) as f64 / dt;
                self.rates = HealthRates {
                    frames_s: r(mark.frames, prev.frames),
                    datagrams_s: r(mark.datagrams, prev.datagrams),
                    submessages_s: r(mark.submessages, prev.submessages),
                    samples_s: r(mark.samples, prev.samples),
                    over_s: dt,
                };
            }
        }
    }

    /// The name a topic is shown with.
    pub(crate) fn topic_name<'a>(&self, t: &'a TopicView) -> &'a str {
        match (&t.ros_name, self.ros_names) {
            (Some(n), true) => n,
            _ => &t.name,
        }
    }

    /// The type name a topic is shown with.
    pub(crate) fn type_name<'a>(&self, t: &'a TopicView) -> &'a str {
        match (&t.ros_type, self.ros_names) {
            (Some(n), true) => n,
            _ => &t.type_name,
        }
    }

    fn matches(&self, fields: &[&str]) -> bool {
        if self.filter.is_empty() {
            return true;
        }
        let f = self.filter.to_lowercase();
        fields.iter().any(|s| s.to_lowercase().contains(&f))
    }

    /// Topics as the table shows them: filtered, then sorted.
    pub fn topic_rows<'a>(&self, s: &'a Snapshot) -> Vec<&'a TopicView> {
        let mut rows: Vec<&TopicView> = s
            .topics
            .iter()
            .filter(|t| self.show_builtin || !t.builtin)
            .filter(|t| {
                self.matches(&[
                    &t.name,
                    &t.type_name,
                    t.ros_name.as_deref().unwrap_or(""),
                    t.ros_type.as_deref().unwrap_or(""),
                ])
            })
            .collect();
        let key = self.sort;
        rows.sort_by(|a, b| {
            let o = compare_topics(self, key, a, b);
            let o = if self.descending { o.reverse() } else { o };
            o.then_with(|| a.name.cmp(&b.name))
        });
        rows
    }

    pub fn participant_rows<'a>(&self, s: &'a Snapshot) -> Vec<&'a ParticipantView> {
        s.participants
            .iter()
            .filter(|p| {
                self.matches(&[
                    &p.guid_prefix,
                    p.entity_name.as_deref().unwrap_or(""),
                    p.vendor_name.unwrap_or(""),
                    &p.addresses.join(" "),
                ])
            })
            .collect()
    }

    pub fn writer_rows<'a>(&self, s: &'a Snapshot) -> Vec<&'a WriterView> {
        s.writers
            .iter()
            .filter(|w| self.show_builtin || !w.builtin)
            .filter(|w| {
                self.matches(&[
                    &w.guid,
                    w.topic.as_deref().unwrap_or(""),
                    w.ros_topic.as_deref().unwrap_or(""),
                    w.type_name.as_deref().unwrap_or(""),
                ])
            })
            .collect()
    }

    pub(crate) fn reader_rows<'a>(&self, s: &'a Snapshot) -> Vec<&'a ReaderView> {
        s.readers
            .iter()
            .filter(|r| self.show_builtin || !is_builtin_reader(r))
            .filter(|r| {
                self.matches(&[
                    &r.guid,
                    r.topic.as_deref().unwrap_or(""),
                    r.ros_topic.as_deref().unwrap_or(""),
                    r.type_name.as_deref().unwrap_or(""),
                ])
            })
            .collect()
    }

    /// Keys of the rows of the current view, in display order.
    fn row_keys(&self, s: &Snapshot) -> Vec<String> {
        match self.view {
            View::Topics => self.topic_rows(s).iter().map(|t| t.name.clone()).collect(),
            View::Participants => self
                .participant_rows(s)
                .iter()
                .map(|p| p.guid_prefix.clone())
                .collect(),
            View::Writers => self.writer_rows(s).iter().map(|w| w.guid.clone()).collect(),
            View::Readers => self.reader_rows(s).iter().map(|r| r.guid.clone()).collect(),
            View::Health => Vec::new(),
        }
    }

    /// Index of the selected row among `keys` (the first row if none).
    pub(crate) fn selected_index<S: AsRef<str>>(&self, keys: &[S]) -> Option<usize> {
        if keys.is_empty() {
            return None;
        }
        let sel = self
            .selected
            .get(self.view.index())
            .and_then(|s| s.as_ref());
        Some(
            sel.and_then(|k| keys.iter().position(|x| x.as_ref() == k))
                .unwrap_or(0),
        )
    }

    /// The topic the detail pane shows.
    pub fn selected_topic<'a>(&self, s: &'a Snapshot) -> Option<&'a TopicView> {
        let rows = self.topic_rows(s);
        let names: Vec<&str> = rows.iter().map(|t| t.name.as_str()).collect();
        let sel = self
            .selected
            .get(View::Topics.index())
            .and_then(|x| x.as_ref());
        let i = sel
            .and_then(|k| names.iter().position(|n| n == k))
            .unwrap_or(0);
        rows.get(i).copied()
    }

    fn move_selection(&mut self, s: &Snapshot, delta: isize) {
        let keys = self.row_keys(s);
        let Some(cur) = self.selected_index(&keys) else {
            return;
        };
        let last = keys.len().saturating_sub(1);
        let next = if delta < 0 {
            cur.saturating_sub(delta.unsigned_abs())
        } else {
            cur.saturating_add(delta.unsigned_abs()).min(last)
        };
        if let (Some(k), Some(slot)) = (keys.get(next), self.selected.get_mut(self.view.index())) {
            *slot = Some(k.clone());
        }
    }

    fn step_speed(&mut self, faster: bool) {
        let cur = SPEEDS
            .iter()
            .position(|s| match (s, self.speed) {
                (None, None) => true,
                (Some(a), Some(b)) => *a >= b,
                _ => false,
            })
            .unwrap_or(SPEEDS.len().saturating_sub(1));
        let next = if faster {
            cur.saturating_add(1).min(SPEEDS.len().saturating_sub(1))
        } else {
            cur.saturating_sub(1)
        };
        self.speed = SPEEDS.get(next).copied().unwrap_or(None);
    }

    /// Apply one key. `snap` is the snapshot on screen (selection moves over its rows).
    pub fn on_key(&mut self, key: KeyEvent, snap: Option<&Snapshot>) -> Action {
        if key.kind == KeyEventKind::Release {
            return Action::None;
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl && matches!(key.code, KeyCode::Char('c') | KeyCode::Char('d')) {
            return Action::Quit;
        }
        if self.editing_filter {
            match key.code {
                KeyCode::Enter => self.editing_filter = false,
                KeyCode::Esc => {
                    self.editing_filter = false;
                    self.filter.clear();
                }
                KeyCode::Backspace => {
                    self.filter.pop();
                }
                KeyCode::Char('u') if ctrl => self.filter.clear(),
                KeyCode::Char(c) if !ctrl && self.filter.chars().count() < 128 => {
                    self.filter.push(c);
                }
                _ => {}
            }
            return Action::None;
        }
        if self.help {
            // Any key closes the help; `q` still quits.
            self.help = false;
            return if key.code == KeyCode::Char('q') {
                Action::Quit
            } else {
                Action::None
            };
        }
        match key.code {
            KeyCode::Char('q') => return Action::Quit,
            KeyCode::Char('?') | KeyCode::F(1) => self.help = true,
            KeyCode::Tab | KeyCode::Right => self.view = self.view.step(true),
            KeyCode::BackTab | KeyCode::Left => self.view = self.view.step(false),
            KeyCode::Char(c @ '1'..='5') => {
                let i = usize::from(u8::try_from(c).unwrap_or(b'1').saturating_sub(b'1'));
                self.view = View::ALL.get(i).copied().unwrap_or(View::Topics);
            }
            KeyCode::Char('/') => self.editing_filter = true,
            KeyCode::Esc => {
                if self.zoom {
                    self.zoom = false;
                } else {
                    self.filter.clear();
                }
            }
            KeyCode::Enter => self.zoom = !self.zoom && self.view == View::Topics,
            KeyCode::Char('s') | KeyCode::Char('S') => {
                let n = TopicColumn::ALL.len();
                let i = if key.code == KeyCode::Char('s') {
                    self.sort.index().saturating_add(1) % n
                } else {
                    self.sort.index().saturating_add(n.saturating_sub(1)) % n
                };
                self.sort = TopicColumn::ALL
                    .get(i)
                    .copied()
                    .unwrap_or(TopicColumn::Name);
                self.descending = self.sort.descending_by_default();
            }
            KeyCode::Char('r') => self.descending = !self.descending,
            KeyCode::Char('d') => self.ros_names = !self.ros_names,
            KeyCode::Char('b') => self.show_builtin = !self.show_builtin,
            KeyCode::Char('p') => self.frozen = !self.frozen,
            KeyCode::Char(' ') => {
                if self.replay {
                    self.replay_paused = !self.replay_paused;
                    return Action::Pace;
                }
                self.frozen = !self.frozen;
            }
            KeyCode::Char('+') | KeyCode::Char('=') if self.replay => {
                self.step_speed(true);
                return Action::Pace;
            }
            KeyCode::Char('-') | KeyCode::Char('_') if self.replay => {
                self.step_speed(false);
                return Action::Pace;
            }
            KeyCode::Up | KeyCode::Char('k') => {
                if let Some(s) = snap {
                    self.move_selection(s, -1);
                }
            }
            KeyCode::Down | KeyCode::Char('j') => {
                if let Some(s) = snap {
                    self.move_selection(s, 1);
                }
            }
            KeyCode::PageUp => {
                if let Some(s) = snap {
                    let p = isize::try_from(self.page.max(1)).unwrap_or(10);
                    self.move_selection(s, -p);
                }
            }
            KeyCode::PageDown => {
                if let Some(s) = snap {
                    let p = isize::try_from(self.page.max(1)).unwrap_or(10);
                    self.move_selection(s, p);
                }
            }
            KeyCode::Home | KeyCode::Char('g') => {
                if let Some(s) = snap {
                    self.move_selection(s, isize::MIN);
                }
            }
            KeyCode::End | KeyCode::Char('G') => {
                if let Some(s) = snap {
                    self.move_selection(s, isize::MAX);
                }
            }
            _ => {}
        }
        Action::None
    }
}

fn push_capped(q: &mut VecDeque<u64>, v: u64) {
    if q.len() >= HISTORY {
        q.pop_front();
    }
    q.push_back(v);
}

/// Built-in readers have no topic of their own: their entity id says so.
fn is_builtin_reader(r: &ReaderView) -> bool {
    // Entity kind byte (last of the GUID) 0xc0..=0xcf: built-in.
    r.guid
        .get(30..32)
        .and_then(|k| u8::from_str_radix(k, 16).ok())
        .is_some_and(|k| k & 0xc0 == 0xc0)
}

fn cmp_f64(a: f64, b: f64) -> Ordering {
    a.partial_cmp(&b).unwrap_or(Ordering::Equal)
}

fn pcp_key(t: &TopicView) -> i16 {
    t.pcp
        .iter()
        .map(|p| p.pcp.map_or(-1, i16::from))
        .max()
        .unwrap_or(-2)
}

fn compare_topics(ui: &UiState, key: TopicColumn, a: &TopicView, b: &TopicView) -> Ordering {
    match key {
        TopicColumn::Name => ui.topic_name(a).cmp(ui.topic_name(b)),
        TopicColumn::Type => ui.type_name(a).cmp(ui.type_name(b)),
        TopicColumn::Writers => a.writers.cmp(&b.writers),
        TopicColumn::Readers => a.readers.cmp(&b.readers),
        TopicColumn::Rate => cmp_f64(a.window.rate_hz, b.window.rate_hz),
        TopicColumn::Jitter => cmp_f64(
            a.timing.period_stddev_ns.unwrap_or(0.0),
            b.timing.period_stddev_ns.unwrap_or(0.0),
        ),
        TopicColumn::Bandwidth => cmp_f64(a.window.bandwidth_bps, b.window.bandwidth_bps),
        TopicColumn::MeanSize => cmp_f64(a.size.mean.unwrap_or(0.0), b.size.mean.unwrap_or(0.0)),
        TopicColumn::Fragments => cmp_f64(
            a.data_frags_per_sample.unwrap_or(0.0),
            b.data_frags_per_sample.unwrap_or(0.0),
        ),
        TopicColumn::Lost => a.totals.lost.cmp(&b.totals.lost),
        TopicColumn::Retransmitted => a.totals.retransmitted.cmp(&b.totals.retransmitted),
        TopicColumn::Pcp => pcp_key(a).cmp(&pcp_key(b)),
    }
}
