//! The body of each view. A table view (Topics, Participants, Writers, Readers) is one
//! column table — per column its header, width rule and cell — that [`TablePane::draw`]
//! turns into a table sharing the terminal's width; adding a column is adding one row
//! to that table.

mod detail;
mod health;
mod participants;
mod readers;
mod topics;
mod writers;

use ratatui::layout::{Alignment, Constraint, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Row, Table, TableState};
use ratatui::Frame;

pub(super) use health::health;
pub(super) use participants::participants;
pub(super) use readers::readers;
pub(super) use topics::topics;
pub(super) use writers::writers;

use super::app::UiState;
use super::fmt;
use super::style::{BAD, DIM, HEADER, SELECTED};
use crate::state::snapshot::QosView;
use crate::state::GoneReason;

/// From this terminal width on, the tables show their `wide_only` columns.
const WIDE: u16 = 120;

/// How wide a column wants to be, and the least it keeps when the terminal is narrow.
#[derive(Clone, Copy)]
pub(super) enum Width {
    /// Exactly this many cells.
    Fixed(u16),
    /// As wide as its widest cell or its header, down to `min`.
    Fit { min: u16 },
    /// As [`Width::Fit`], with room for a sort mark after the header whether it shows or not.
    FitMarked { min: u16 },
    /// A GUID: all 32 hex digits when the terminal is wide enough for them after the
    /// names, else the last 16 (…prefix:entity, see [`fmt::guid`]).
    Guid,
}

/// What a cell shows: text, a style, and a marker after the text in its own style.
pub(super) struct Text {
    text: String,
    style: Option<Style>,
    marker: Option<(&'static str, Style)>,
}

impl From<String> for Text {
    fn from(text: String) -> Self {
        Text {
            text,
            style: None,
            marker: None,
        }
    }
}

impl Text {
    pub(super) fn styled(mut self, style: Style) -> Self {
        self.style = Some(style);
        self
    }

    pub(super) fn marked(mut self, marker: &'static str, style: Style) -> Self {
        self.marker = Some((marker, style));
        self
    }

    fn width(&self) -> u16 {
        let marker = self.marker.map_or(0, |(m, _)| fmt::cells(m));
        fmt::cells(&self.text).saturating_add(marker)
    }
}

type CellFn<'a, R> = Box<dyn Fn(&R) -> Text + 'a>;

/// One column of a table view.
pub(super) struct Column<'a, R> {
    header: &'static str,
    /// Shown after the header (the sort direction).
    mark: Option<char>,
    right: bool,
    width: Width,
    wide_only: bool,
    cell: CellFn<'a, R>,
}

impl<'a, R> Column<'a, R> {
    /// A left-aligned column (names, text).
    pub(super) fn left(header: &'static str, width: Width, cell: impl Fn(&R) -> Text + 'a) -> Self {
        Column {
            header,
            mark: None,
            right: false,
            width,
            wide_only: false,
            cell: Box::new(cell),
        }
    }

    /// A right-aligned column (numbers).
    pub(super) fn right(
        header: &'static str,
        width: Width,
        cell: impl Fn(&R) -> Text + 'a,
    ) -> Self {
        Column {
            right: true,
            ..Column::left(header, width, cell)
        }
    }

    /// Shown only on a wide terminal.
    pub(super) fn wide_only(self) -> Self {
        Column {
            wide_only: true,
            ..self
        }
    }

    pub(super) fn mark(self, mark: Option<char>) -> Self {
        Column { mark, ..self }
    }
}

/// A table view: its column table, the column served first when the width is shared
/// (a name), the title, and a row's style.
pub(super) struct TablePane<'a, R> {
    pub(super) columns: Vec<Column<'a, R>>,
    pub(super) first: usize,
    pub(super) title: String,
    pub(super) row_style: fn(&R) -> Option<Style>,
}

impl<R> TablePane<'_, R> {
    pub(super) fn draw(self, f: &mut Frame<'_>, area: Rect, rows: &[R], selected: Option<usize>) {
        let wide = area.width >= WIDE;
        let columns: Vec<&Column<'_, R>> = self
            .columns
            .iter()
            .filter(|c| wide || !c.wide_only)
            .collect();
        let texts: Vec<Vec<Text>> = rows
            .iter()
            .map(|r| columns.iter().map(|c| (c.cell)(r)).collect())
            .collect();
        let wants: Vec<(u16, u16)> = columns
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let cells = texts.iter().filter_map(|t| t.get(i)).map(Text::width);
                match c.width {
                    Width::Fixed(n) => (n, n),
                    Width::Fit { min } => (cells.fold(fmt::cells(c.header), u16::max), min),
                    Width::FitMarked { min } => {
                        let header = fmt::cells(c.header).saturating_add(1);
                        (cells.fold(header, u16::max), min)
                    }
                    Width::Guid if area.width >= 160 => (32, 18),
                    Width::Guid => (18, 18),
                }
            })
            .collect();
        let widths = shared(area.width, &wants, self.first);
        let header: Vec<Cell<'_>> = columns
            .iter()
            .map(|c| {
                let mut h = c.header.to_string();
                h.extend(c.mark);
                if c.right {
                    right(h)
                } else {
                    Cell::from(h)
                }
            })
            .collect();
        let body: Vec<Row<'_>> = rows
            .iter()
            .zip(texts)
            .map(|(r, texts)| {
                let cells: Vec<Cell<'_>> = texts
                    .into_iter()
                    .zip(columns.iter().zip(&widths))
                    .map(|(t, (c, width))| {
                        let text = match c.width {
                            Width::Guid => fmt::guid(&t.text, usize::from(*width)),
                            _ => t.text,
                        };
                        let cell = match (t.marker, c.right) {
                            (Some((marker, style)), _) => Cell::from(Line::from(vec![
                                Span::raw(text),
                                Span::styled(marker, style),
                            ])),
                            (None, true) => right(text),
                            (None, false) => Cell::from(text),
                        };
                        match t.style {
                            Some(s) => cell.style(s),
                            None => cell,
                        }
                    })
                    .collect();
                let row = Row::new(cells);
                match (self.row_style)(r) {
                    Some(s) => row.style(s),
                    None => row,
                }
            })
            .collect();
        let table = Table::new(body, widths.into_iter().map(Constraint::Length))
            .header(Row::new(header).style(HEADER))
            .column_spacing(1)
            .row_highlight_style(SELECTED)
            .block(
                Block::default()
                    .borders(Borders::TOP)
                    .title(Span::styled(self.title, DIM)),
            );
        let mut state = TableState::default().with_selected(selected);
        f.render_stateful_widget(table, area, &mut state);
    }
}

/// Column widths that share `width` (a column spacing of 1): per column, the width its
/// content wants and the least it keeps; column `first` (a name) is served first
/// (see [`fmt::share_widths`]).
fn shared(width: u16, cols: &[(u16, u16)], first: usize) -> Vec<u16> {
    let spacing = u16::try_from(cols.len().saturating_sub(1)).unwrap_or(u16::MAX);
    let wants: Vec<u16> = cols.iter().map(|c| c.0).collect();
    let mins: Vec<u16> = cols.iter().map(|c| c.1).collect();
    fmt::share_widths(width.saturating_sub(spacing), &wants, &mins, Some(first))
}

fn right(s: String) -> Cell<'static> {
    Cell::from(Line::from(s).alignment(Alignment::Right))
}

/// Samples' fragments or IP fragments per sample.
fn per_sample(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(x) if x >= 10.0 => format!("{x:.0}"),
        Some(x) => format!("{x:.1}"),
    }
}

/// `writer`: absent reliability means reliable (the writer default), else best effort.
fn qos_short(q: &QosView, writer: bool) -> String {
    let rel = match q.reliability {
        Some("reliable") => "rel",
        Some("best_effort") => "be",
        Some(o) => o,
        None if writer => "rel",
        None => "be",
    };
    let dur = match q.durability {
        Some("volatile") | None => "vol",
        Some("transient_local") => "tl",
        Some("transient") => "trans",
        Some("persistent") => "pers",
        Some(o) => o,
    };
    let hist = match q.history.as_deref() {
        None => "kl1".to_string(),
        Some("keep_all") => "ka".to_string(),
        Some(h) => h
            .strip_prefix("keep_last(")
            .and_then(|x| x.strip_suffix(')'))
            .map_or_else(|| h.to_string(), |d| format!("kl{d}")),
    };
    let mut out = format!("{rel} {dur} {hist}");
    if !q.partitions.is_empty() {
        out.push_str(&format!(" [{}]", q.partitions.join(",")));
    }
    out
}

fn gone(r: GoneReason) -> &'static str {
    match r {
        GoneReason::Disposed => "disposed",
        GoneReason::Unregistered => "unregistered",
        GoneReason::LeaseExpired => "lease expired",
        GoneReason::ParticipantGone => "participant gone",
    }
}

/// The topic an endpoint is shown with (its ROS 2 name with `d`).
fn endpoint_topic(ros: &Option<String>, dds: &Option<String>, ui: &UiState, none: &str) -> String {
    match (ros, ui.ros_names) {
        (Some(r), true) => r.clone(),
        _ => dds.clone().unwrap_or_else(|| none.into()),
    }
}

/// A count, in red when not zero.
fn count_warn(v: u64) -> Text {
    let t = Text::from(fmt::count(v));
    if v > 0 {
        t.styled(BAD)
    } else {
        t
    }
}
