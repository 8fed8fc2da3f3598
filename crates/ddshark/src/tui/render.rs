//! Rendering: a pure function of (`Snapshot`, `UiState`) → frame. No clock, no
//! I/O, no locks: what is on screen depends only on its two inputs, so the
//! snapshot tests can pin every view. Here: the title bar, the log line, the footer
//! and the help; each view's body is its pane (`pane/`).

use ratatui::layout::{Alignment, Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
use ratatui::Frame;

use super::app::{UiState, View};
use super::fmt;
use super::pane::{health, participants, readers, topics, writers};
use super::style::{BAD, DIM, GOOD, HEADER, KEY, SELECTED, WARN};
use crate::state::Snapshot;

/// Draw one frame.
pub fn render(f: &mut Frame<'_>, snap: Option<&Snapshot>, ui: &UiState) {
    let area = f.area();
    let log_h = u16::from(!ui.log.is_empty());
    let [top, body, log, bottom] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(0),
        Constraint::Length(log_h),
        Constraint::Length(1),
    ])
    .areas(area);
    title_bar(f, top, snap, ui);
    match snap {
        None => {
            let msg = format!("waiting for the first RTPS packet on {} …", ui.source);
            f.render_widget(
                Paragraph::new(msg)
                    .alignment(Alignment::Center)
                    .block(Block::default().borders(Borders::TOP)),
                body,
            );
        }
        Some(s) => match ui.view {
            View::Topics => topics(f, body, s, ui),
            View::Participants => participants(f, body, s, ui),
            View::Writers => writers(f, body, s, ui),
            View::Readers => readers(f, body, s, ui),
            View::Health => health(f, body, s, ui),
        },
    }
    log_line(f, log, ui);
    footer(f, bottom, ui);
    if ui.help {
        help(f, area, ui);
    }
}

fn title_bar(f: &mut Frame<'_>, area: Rect, snap: Option<&Snapshot>, ui: &UiState) {
    let mut spans = vec![Span::styled("ddshark ", HEADER)];
    for (i, v) in View::ALL.iter().enumerate() {
        let style = if *v == ui.view {
            SELECTED.add_modifier(Modifier::BOLD)
        } else {
            Style::new()
        };
        spans.push(Span::styled(
            format!("{} {}", i.saturating_add(1), v.title()),
            style,
        ));
        spans.push(Span::raw(" "));
    }
    let tabs = Line::from(spans);
    let tabs_w = u16::try_from(tabs.width()).unwrap_or(u16::MAX);
    f.render_widget(Paragraph::new(tabs), area);

    // Status on the right: input, pacing, capture time.
    let mut status = Vec::new();
    let finished = snap.is_some_and(|s| {
        !s.health.pipeline.sources.is_empty()
            && s.health.pipeline.sources.iter().all(|x| x.finished)
    });
    let error = snap.and_then(|s| {
        s.health
            .pipeline
            .sources
            .iter()
            .find_map(|x| x.error.as_deref())
    });
    if ui.frozen {
        status.push(Span::styled("FROZEN ", BAD));
    }
    if ui.replay {
        let speed = ui
            .speed
            .map_or_else(|| "max".to_string(), |s| format!("{s}x"));
        if finished {
            status.push(Span::styled("end ", GOOD));
        } else if ui.replay_paused {
            status.push(Span::styled("⏸ ", BAD));
        } else {
            status.push(Span::raw("▶ "));
        }
        status.push(Span::raw(format!("{speed} ")));
    } else {
        status.push(Span::raw("live "));
        if finished {
            status.push(Span::styled("stopped ", BAD));
        }
    }
    if error.is_some() {
        status.push(Span::styled("error ", BAD));
    }
    if let Some(s) = snap {
        status.push(Span::raw(fmt::secs(s.summary.duration_s)));
    }
    let room = area.width.saturating_sub(tabs_w).saturating_sub(1);
    let fixed: usize = status.iter().map(Span::width).sum();
    let name_room = usize::from(room).saturating_sub(fixed).saturating_sub(1);
    if name_room >= 4 {
        status.insert(
            0,
            Span::styled(
                format!("{} ", fmt::truncate_left(&ui.source, name_room)),
                DIM,
            ),
        );
    }
    let right = Rect {
        x: area.x.saturating_add(tabs_w),
        width: area.width.saturating_sub(tabs_w),
        ..area
    };
    f.render_widget(
        Paragraph::new(Line::from(status)).alignment(Alignment::Right),
        right,
    );
}

/// The latest message the program wrote while the UI was up (all of them are written
/// to stderr when it ends).
fn log_line(f: &mut Frame<'_>, area: Rect, ui: &UiState) {
    let Some(last) = ui.log.last() else {
        return;
    };
    let count = if ui.log_total > 1 {
        format!(" ({} messages, all printed at exit)", ui.log_total)
    } else {
        String::new()
    };
    let room = usize::from(area.width).saturating_sub(count.chars().count());
    let line = Line::from(vec![
        Span::styled(fmt::truncate(last, room), WARN),
        Span::styled(count, DIM),
    ]);
    f.render_widget(Paragraph::new(line), area);
}

fn footer(f: &mut Frame<'_>, area: Rect, ui: &UiState) {
    let line = if ui.editing_filter {
        Line::from(vec![
            Span::styled("filter: ", KEY),
            Span::raw(ui.filter.clone()),
            Span::styled("█", KEY),
            Span::styled("  Enter keep · Esc clear", DIM),
        ])
    } else {
        let mut spans = Vec::new();
        if !ui.filter.is_empty() {
            spans.push(Span::styled(format!("[/{}] ", ui.filter), KEY));
        }
        let mut keys: Vec<(&str, &str)> = vec![("q", "quit"), ("?", "help"), ("/", "filter")];
        if ui.view == View::Topics {
            keys.push(("s", "sort"));
            keys.push(("⏎", "detail"));
        }
        keys.push(("d", if ui.ros_names { "dds" } else { "ros" }));
        keys.push(("b", "builtin"));
        if ui.replay {
            keys.push(("␣", "pause"));
            keys.push(("+-", "speed"));
        } else {
            keys.push(("p", "freeze"));
        }
        for (k, what) in keys {
            spans.push(Span::styled(k, KEY));
            spans.push(Span::raw(format!(" {what} ")));
        }
        Line::from(spans)
    };
    f.render_widget(Paragraph::new(line), area);
}

fn help(f: &mut Frame<'_>, area: Rect, ui: &UiState) {
    let keys: &[(&str, &str)] = &[
        (
            "1-5 Tab ←→",
            "views: Topics Participants Writers Readers Health",
        ),
        ("↑↓ j k PgUp PgDn", "select a row"),
        ("Enter", "Topics: detail pane full screen (Esc back)"),
        ("s / S", "Topics: sort by the next / previous column"),
        ("r", "reverse the sort order"),
        ("/", "filter by name (Enter keeps, Esc clears)"),
        ("d", "ROS 2 names (rt/chatter → /chatter) on/off"),
        ("b", "built-in discovery topics on/off"),
        ("p", "freeze the display (capture goes on)"),
        ("space", "replay: pause / resume (live: freeze)"),
        ("+ / -", "replay: faster / slower"),
        ("?", "this help (any key closes it)"),
        ("q Ctrl-C", "quit"),
    ];
    let mut lines: Vec<Line<'_>> = keys
        .iter()
        .map(|(k, what)| {
            Line::from(vec![
                Span::styled(format!("{k:>16}  "), KEY),
                Span::raw(*what),
            ])
        })
        .collect();
    lines.push(Line::from(""));
    lines.push(Line::from(Span::styled(
        "Rates: over the window, capture time; 30* over a newer writer's own span",
        DIM,
    )));
    lines.push(Line::from(Span::styled(
        "(its first to latest sample: active < a window). Jitter: period std dev.",
        DIM,
    )));
    lines.push(Line::from(Span::styled(
        "[shm] after a topic: shared memory only, its traffic is invisible here.",
        DIM,
    )));
    if ui.replay {
        lines.push(Line::from(Span::styled(
            format!(
                "Replay speed: {}",
                ui.speed
                    .map_or_else(|| "max".to_string(), |s| format!("{s}x"))
            ),
            DIM,
        )));
    }
    let h = u16::try_from(lines.len())
        .unwrap_or(u16::MAX)
        .saturating_add(2)
        .min(area.height);
    let w = 76u16.min(area.width);
    let popup = Rect {
        x: area.x.saturating_add(area.width.saturating_sub(w) / 2),
        y: area.y.saturating_add(area.height.saturating_sub(h) / 2),
        width: w,
        height: h,
    };
    f.render_widget(Clear, popup);
    f.render_widget(
        Paragraph::new(lines).block(
            Block::bordered()
                .title(Span::styled(" Keys ", HEADER))
                .border_style(KEY),
        ),
        popup,
    );
}
