//! When a sample that never (completely) reached a host counts as lost there: one rule for
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

impl LostRule {
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
}
