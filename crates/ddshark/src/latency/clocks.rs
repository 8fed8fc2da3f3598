//! How each receiving capture's clock is moved onto the first capture's, and what that
//! leaves uncertain: the one place that decides whether `--offset auto` corrects (only when
//! the estimate's bound excludes 0: a correction inside the bound could make a right latency
//! wrong) and how far each corrected latency may be from the truth.

use latency_core::OffsetEstimate;

use super::args::{LatencyArgs, OffsetMode};
use super::input::Shift;
use super::stats::human_ns;

/// What was done to one capture's clock (the first capture's is the reference).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Correction {
    /// Nothing: the reference capture, or no `--offset` given.
    None,
    /// `--offset-ns N`: moved by a known offset.
    Given(i64),
    /// `--offset auto`: moved by the estimate (its line, when drifting).
    Estimated(OffsetEstimate),
    /// `--offset auto`, not applied: the estimate's bound holds 0 over the whole capture, so
    /// the clocks may agree and the raw latencies may be the right ones.
    KeptRaw(OffsetEstimate),
}

impl Correction {
    /// What `--offset auto` does with the estimate of this capture against the first.
    pub(super) fn auto(e: OffsetEstimate) -> Self {
        if e.holds(e.t_ref, 0) && e.holds(e.t_last, 0) {
            Correction::KeptRaw(e)
        } else {
            Correction::Estimated(e)
        }
    }

    /// The correction `args` ask for a receiving capture, given its estimate (if any).
    pub(super) fn asked(args: &LatencyArgs, estimate: Option<OffsetEstimate>) -> Option<Self> {
        match (args.offset, estimate) {
            (Some(OffsetMode::Auto), Some(e)) => Some(Correction::auto(e)),
            (Some(OffsetMode::Auto), None) => None,
            _ if args.offset_ns != 0 => Some(Correction::Given(args.offset_ns)),
            _ => Some(Correction::None),
        }
    }

    pub(super) fn shift(&self) -> Shift {
        match self {
            Correction::Estimated(e) => Shift::Estimated(*e),
            Correction::Given(ns) => Shift::Constant(*ns),
            Correction::None | Correction::KeptRaw(_) => Shift::Constant(0),
        }
    }

    /// The offset subtracted from this capture's timestamps (at the estimate's reference
    /// time when drifting); None when they were left as read.
    pub fn applied_ns(&self) -> Option<i64> {
        match self {
            Correction::Estimated(e) => Some(e.offset_ns),
            Correction::Given(ns) => Some(*ns),
            Correction::None | Correction::KeptRaw(_) => None,
        }
    }

    /// How far this capture's clock may still be from the reference's, when known: the
    /// estimate's half-width once corrected; kept raw, the estimate's distance from 0 plus its
    /// half-width (what a row between it and a corrected capture inherits).
    pub fn residual_ns(&self) -> Option<i64> {
        match self {
            Correction::Estimated(e) => Some(e.half_width_ns),
            Correction::KeptRaw(e) => Some(
                e.offset_at(e.t_ref)
                    .unsigned_abs()
                    .max(e.offset_at(e.t_last).unsigned_abs())
                    .try_into()
                    .unwrap_or(i64::MAX)
                    .saturating_add(e.half_width_ns),
            ),
            Correction::None | Correction::Given(_) => None,
        }
    }
}

/// The uncertainty of a latency from capture `sender` to `receiver` that an estimate
/// corrected: the true latency lies within ± this of the one shown. None when neither
/// capture was corrected by an estimate (raw, or moved by `--offset-ns`).
pub fn latency_uncertainty(
    corrections: &[Correction],
    sender: usize,
    receiver: usize,
) -> Option<i64> {
    let (s, r) = (corrections.get(sender)?, corrections.get(receiver)?);
    let corrected = |c: &Correction| matches!(c, Correction::Estimated(_));
    if !corrected(s) && !corrected(r) {
        return None;
    }
    Some(
        s.residual_ns()
            .unwrap_or(0)
            .saturating_add(r.residual_ns().unwrap_or(0)),
    )
}

/// "B-A: corrected by …" for people: what was done to capture `y`'s clock and why.
pub fn describe(x: &str, y: &str, c: &Correction) -> Option<String> {
    match c {
        Correction::None => None,
        Correction::Given(ns) => Some(format!(
            "clock {y}-{x}: {y}'s timestamps moved by {} (--offset-ns {ns})",
            human_ns(ns.saturating_neg())
        )),
        Correction::Estimated(e) => {
            let drift = if e.drifting {
                format!(
                    " at {}, drifting {:+.1} ppm",
                    crate::units::timestamp(e.t_ref),
                    e.drift_ppb as f64 / 1000.0
                )
            } else {
                String::new()
            };
            Some(format!(
                "clock {y}-{x}: corrected by the estimate {}{drift} (--offset auto): every latency between {x} and {y} is ± {}",
                human_ns(e.offset_ns),
                human_ns(e.half_width_ns)
            ))
        }
        Correction::KeptRaw(e) => Some(format!(
            "clock {y}-{x}: not corrected (--offset auto): {}",
            kept_raw_reason(e)
        )),
    }
}

/// Why `--offset auto` left a pair's latencies raw.
pub(crate) fn kept_raw_reason(e: &OffsetEstimate) -> String {
    let raw_bound = Correction::KeptRaw(*e).residual_ns().unwrap_or(i64::MAX);
    format!(
        "the estimate {} ± {} holds 0, so the clocks may agree and correcting could make right latencies wrong; \
         latencies are raw (within ± {} of the truth, whatever the offset in that bound)",
        human_ns(e.offset_ns),
        human_ns(e.half_width_ns),
        human_ns(raw_bound)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn estimate(offset_ns: i64, half_width_ns: i64) -> OffsetEstimate {
        OffsetEstimate {
            offset_ns,
            half_width_ns,
            t_ref: 0,
            t_last: 10_000_000_000,
            drift_ppb: 0,
            drifting: false,
            min_x_to_y_ns: half_width_ns + offset_ns,
            min_y_to_x_ns: half_width_ns - offset_ns,
            counts: latency_core::offset::Counts::default(),
            windows_both: 1,
            windows: 1,
            outliers: 0,
            windows_dropped: 0,
        }
    }

    #[test]
    fn an_estimate_whose_bound_holds_0_is_not_applied() {
        // a_small_reliable: 970 µs ± 1.045 ms.
        let kept = Correction::auto(estimate(970_000, 1_045_000));
        assert!(matches!(kept, Correction::KeptRaw(_)));
        assert_eq!(kept.applied_ns(), None);
        let cs = [Correction::None, kept];
        assert_eq!(latency_uncertainty(&cs, 0, 1), None);
        let moved = Correction::auto(estimate(37_000_000_000, 1_045_000));
        assert_eq!(moved.applied_ns(), Some(37_000_000_000));
        let cs = [Correction::None, moved, kept];
        assert_eq!(latency_uncertainty(&cs, 1, 0), Some(1_045_000));
        // Between a corrected capture and one kept raw: both residuals.
        assert_eq!(latency_uncertainty(&cs, 1, 2), Some(1_045_000 + 2_015_000));
    }
}
