//! What became of a sample at a receiving host (ok with its latency, incomplete, lost, or not
//! for it) and when one that never (completely) reached it counts as lost there: one decision
//! for `ddshark latency` and the live join (see the crate docs).

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
    /// Every fragment (or the whole DATA), the last of them at `t_recv`: per DDS fragment the
    /// end (last IP fragment) of the earliest complete datagram carrying it, then the latest
    /// of those (the tshark oracle's t_recv), on the receiver's clock.
    Complete { t_recv: i64 },
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

/// A sample's fate at one receiving host with what it says of the latency: the decision
/// [`LostRule::decide`] hands both joins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Complete at the receiver at `t_recv`; `latency_ns` = `t_recv` − t_send, raw (each on
    /// its host's clock).
    Ok {
        t_recv: i64,
        latency_ns: i64,
    },
    Incomplete,
    Lost,
}

impl Outcome {
    pub fn status(self) -> Status {
        match self {
            Outcome::Ok { .. } => Status::Ok,
            Outcome::Incomplete => Status::Incomplete,
            Outcome::Lost => Status::Lost,
        }
    }

    /// The receive time and latency of an [`Outcome::Ok`].
    pub fn received(self) -> Option<(i64, i64)> {
        match self {
            Outcome::Ok { t_recv, latency_ns } => Some((t_recv, latency_ns)),
            Outcome::Incomplete | Outcome::Lost => None,
        }
    }
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
    /// The decision for one receiving host of a sample its writer's host sent at `t_send`
    /// (the first IP fragment of the earliest datagram carrying it there): `None` when it
    /// holds nothing of the sample and was not expected to ([`LostRule::expected`]), so the
    /// sample counts nowhere there.
    pub fn decide(
        &self,
        receipt: Receipt,
        t_send: i64,
        capture: Option<(i64, i64)>,
        writer_seen: Option<(i64, i64)>,
    ) -> Option<Outcome> {
        match receipt {
            Receipt::Complete { t_recv } => Some(Outcome::Ok {
                t_recv,
                latency_ns: t_recv.saturating_sub(t_send),
            }),
            Receipt::Partial => Some(Outcome::Incomplete),
            Receipt::Nothing => self
                .expected(t_send, capture, writer_seen)
                .then_some(Outcome::Lost),
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
        // what arrived decides, even where the rule would not expect the sample; the
        // latency is raw, negative when the receiver's clock is behind
        let ok = rule.decide(Receipt::Complete { t_recv: 49 * S }, 50 * S, None, None);
        assert_eq!(
            ok,
            Some(Outcome::Ok {
                t_recv: 49 * S,
                latency_ns: -S
            })
        );
        assert_eq!(ok.map(Outcome::status), Some(Status::Ok));
        assert_eq!(ok.and_then(Outcome::received), Some((49 * S, -S)));
        assert_eq!(
            rule.decide(Receipt::Partial, 50 * S, None, None),
            Some(Outcome::Incomplete)
        );
        let lost = rule.decide(Receipt::Nothing, 15 * S, capture, seen);
        assert_eq!(lost, Some(Outcome::Lost));
        assert_eq!(lost.and_then(Outcome::received), None);
        assert_eq!(rule.decide(Receipt::Nothing, 33 * S, capture, seen), None);
        assert_eq!(Outcome::Incomplete.status().name(), "incomplete");
    }
}
