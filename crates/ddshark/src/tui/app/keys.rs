//! What every key does to the UI state.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use super::{Action, TopicColumn, UiState, View};
use crate::state::Snapshot;

/// Replay speeds the `+`/`-` keys step through; `None` = as fast as possible.
const SPEEDS: [Option<f64>; 12] = [
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

impl UiState {
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
