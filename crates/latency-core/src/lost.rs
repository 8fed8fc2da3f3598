//! What became of a sample at a receiving host (ok, incomplete, lost, or not for it) and when
//! one that never (completely) reached it counts as lost there: one decision for
//! `ddshark latency` and the live join (see the crate docs).

/// Capture time, ns, one second.
const S: i64 = 1_000_000_000;

/// What a receiving host must show for a sample sent at `t_send` to be expected there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LostRule {
    /// The receiver saw some sample of the same writer this close to `t_send` (it is one of
    /// the writer's receivers then, whatever the path: multicast, unicast, a repair).
    pub receiver_window_ns: i64,
    /// Samples sent this close to the end of the receiver's capture are not called lost
    /// (they may still have been on their way).
    pub grace_ns: i64,
}

/// `ddshark latency --receiver-window` and `ddshark join --receiver-window`.
pub const RECEIVER_WINDOW_NS: i64 = 12 * S;
/// `--lost-grace` of both.
pub const LOST_GRACE_NS: i64 = S;

impl Default for LostRule {
    fn default() -> Self {
        Self {
            receiver_window_ns: RECEIVER_WINDOW_NS,
            grace_ns: LOST_GRACE_NS,
        }
    }
}

/// What a receiving host's capture holds of a sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Receipt {
    /// Every fragment (or the whole DATA).
    Complete,
    /// Some but not all of its fragments.
    Partial,
    /// Nothing of it.
    Nothing,
}

/// A sample's fate at one receiving host, as both joins report it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Complete at the receiver: has a latency.
    Ok,
    /// Some but not all of its fragments reached the receiver.
    Incomplete,
    /// Sent towards the receiver, never seen there.
    Lost,
}

impl Status {
    /// The name the outputs use.
    pub fn name(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Incomplete => "incomplete",
            Status::Lost => "lost",
        }
    }
}

impl LostRule {
    /// The decision for one receiving host: `None` when it holds nothing of the sample and
    /// was not expected to ([`LostRule::expected`]), so the sample counts nowhere there.
    pub fn decide(
        &self,
        receipt: Receipt,
        t_send: i64,
        capture: Option<(i64, i64)>,
        writer_seen: Option<(i64, i64)>,
    ) -> Option<Status> {
        match receipt {
            Receipt::Complete => Some(Status::Ok),
            Receipt::Partial => Some(Status::Incomplete),
            Receipt::Nothing => self
                .expected(t_send, capture, writer_seen)
                .then_some(Status::Lost),
        }
    }

    /// Should a host whose capture ran over `capture` (first and last frame) and which saw
    /// the writer's samples over `writer_seen` (first and last of them, as known when the
    /// sample is decided) have received a sample sent at `t_send`? Every time on the
    /// sender's clock, or as close to it as the caller knows.
    pub fn expected(
        &self,
        t_send: i64,
        capture: Option<(i64, i64)>,
        writer_seen: Option<(i64, i64)>,
    ) -> bool {
        let Some((first, last)) = capture else {
            return false;
        };
        let Some((seen_first, seen_last)) = writer_seen else {
            return false;
        };
        first <= t_send
            && t_send <= last.saturating_sub(self.grace_ns)
            && seen_first <= t_send.saturating_add(self.receiver_window_ns)
            && seen_last >= t_send.saturating_sub(self.receiver_window_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lost_only_while_the_receiver_captured_and_received_the_writer() {
        let rule = LostRule::default();
        let capture = Some((0, 100 * S));
        let seen = Some((10 * S, 20 * S));
        assert!(rule.expected(15 * S, capture, seen));
        // within the receiver window of the writer's samples there
        assert!(rule.expected(31 * S, capture, seen));
        assert!(!rule.expected(33 * S, capture, seen));
        // never saw the writer, or not capturing (or in the grace before its end)
        assert!(!rule.expected(15 * S, capture, None));
        assert!(!rule.expected(15 * S, None, seen));
        assert!(!rule.expected(15 * S, Some((16 * S, 100 * S)), seen));
        assert!(!rule.expected(15 * S, Some((0, 15 * S + S / 2)), seen));
    }

    #[test]
    fn a_copy_decides_before_the_rule_and_nothing_unexpected_counts_nowhere() {
        let rule = LostRule::default();
        let capture = Some((0, 100 * S));
        let seen = Some((10 * S, 20 * S));
        // what arrived decides, even where the rule would not expect the sample
        assert_eq!(
            rule.decide(Receipt::Complete, 50 * S, None, None),
            Some(Status::Ok)
        );
        assert_eq!(
            rule.decide(Receipt::Partial, 50 * S, None, None),
            Some(Status::Incomplete)
        );
        assert_eq!(
            rule.decide(Receipt::Nothing, 15 * S, capture, seen),
            Some(Status::Lost)
        );
        assert_eq!(rule.decide(Receipt::Nothing, 33 * S, capture, seen), None);
        assert_eq!(Status::Incomplete.name(), "incomplete");
    }
}
