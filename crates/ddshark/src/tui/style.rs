//! The TUI's styles, one name per meaning.

use ratatui::style::{Color, Modifier, Style};

pub(super) const HEADER: Style = Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD);
pub(super) const SELECTED: Style = Style::new().add_modifier(Modifier::REVERSED);
pub(super) const DIM: Style = Style::new().fg(Color::DarkGray);
pub(super) const BAD: Style = Style::new().fg(Color::Red).add_modifier(Modifier::BOLD);
pub(super) const GOOD: Style = Style::new().fg(Color::Green);
pub(super) const WARN: Style = Style::new().fg(Color::Yellow);
pub(super) const KEY: Style = Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD);
