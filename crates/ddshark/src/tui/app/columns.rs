//! The views, and the Topics table's columns: their headers and how each one sorts.

use std::cmp::Ordering;

use super::UiState;
use crate::state::snapshot::TopicView;

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
    pub(super) fn index(self) -> usize {
        View::ALL.iter().position(|v| *v == self).unwrap_or(0)
    }
    pub(super) fn step(self, forward: bool) -> View {
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
    pub(super) fn descending_by_default(self) -> bool {
        !matches!(self, TopicColumn::Name | TopicColumn::Type)
    }
    pub(super) fn index(self) -> usize {
        TopicColumn::ALL
            .iter()
            .position(|c| *c == self)
            .unwrap_or(0)
    }
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

pub(super) fn compare_topics(
    ui: &UiState,
    key: TopicColumn,
    a: &TopicView,
    b: &TopicView,
) -> Ordering {
    match key {
        TopicColumn::Name => ui.topic_name(a).cmp(ui.topic_name(b)),
        TopicColumn::Type => ui.type_name(a).cmp(ui.type_name(b)),
        TopicColumn::Writers => a.writers.cmp(&b.writers),
        TopicColumn::Readers => a.readers.cmp(&b.readers),
        TopicColumn::Rate => cmp_f64(a.rate.hz.unwrap_or(0.0), b.rate.hz.unwrap_or(0.0)),
        TopicColumn::Jitter => cmp_f64(
            a.timing.period_stddev_ns.unwrap_or(0.0),
            b.timing.period_stddev_ns.unwrap_or(0.0),
        ),
        TopicColumn::Bandwidth => cmp_f64(
            a.rate.bandwidth_bps.unwrap_or(0.0),
            b.rate.bandwidth_bps.unwrap_or(0.0),
        ),
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
