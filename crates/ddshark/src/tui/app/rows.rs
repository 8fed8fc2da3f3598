//! The rows each view shows (filtered, the Topics table sorted) and the selected one.

use super::columns::compare_topics;
use super::{UiState, View};
use crate::state::snapshot::{ParticipantView, ReaderView, TopicView, WriterView};
use crate::state::Snapshot;

impl UiState {
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
    pub(super) fn row_keys(&self, s: &Snapshot) -> Vec<String> {
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
}

/// Built-in readers have no topic of their own: their entity id says so.
fn is_builtin_reader(r: &ReaderView) -> bool {
    // Entity kind byte (last of the GUID) 0xc0..=0xcf: built-in.
    r.guid
        .get(30..32)
        .and_then(|k| u8::from_str_radix(k, 16).ok())
        .is_some_and(|k| k & 0xc0 == 0xc0)
}
