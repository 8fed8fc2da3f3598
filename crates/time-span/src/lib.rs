//! Durations as ddshark's command lines write them: a number with its unit (`250ms`,
//! `10s`, `2m`, `1.5h`), parsed exactly into nanoseconds. Every duration option of
//! `ddshark` and `ddshark-join` goes through [`TimeSpan`].

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

const NS_PER_S: u64 = 1_000_000_000;

/// A time span given with its unit (`250ms`, `10s`, `2m`, `1.5h`), kept in nanoseconds:
/// the one parser of every duration option (`--interval`, `--window`, `--otlp-timeout`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct TimeSpan {
    ns: u64,
}

/// The units a [`TimeSpan`] takes, with their length in ns.
const SPAN_UNITS: [(&str, u64); 8] = [
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("ms", 1_000_000),
    ("s", NS_PER_S),
    ("m", 60 * NS_PER_S),
    ("min", 60 * NS_PER_S),
    ("h", 3600 * NS_PER_S),
];

impl TimeSpan {
    pub const fn from_ns(ns: u64) -> Self {
        Self { ns }
    }

    pub const fn from_secs(s: u64) -> Self {
        Self {
            ns: s.saturating_mul(NS_PER_S),
        }
    }

    pub const fn ns(self) -> u64 {
        self.ns
    }

    pub const fn duration(self) -> Duration {
        Duration::from_nanos(self.ns)
    }

    /// clap's parser of a span that must be more than zero (`--interval 0s` would
    /// print a summary per frame).
    pub fn positive(s: &str) -> Result<Self, String> {
        let zero = || {
            format!(
                "{s:?} must be more than 0: give e.g. 10s or 250ms (allowed: 1ns or more, with a unit: ns, us, ms, s, m, h)"
            )
        };
        // A bare 0 is refused for being 0, not for its missing unit ("write 0s" would be
        // refused next).
        let t = s.trim();
        if !t.is_empty() && t.chars().all(|c| c == '0' || c == '.') && t.contains('0') {
            return Err(zero());
        }
        let span: Self = s.parse()?;
        if span.ns == 0 {
            return Err(zero());
        }
        Ok(span)
    }
}

/// `N[.F]UNIT` → ns, exactly (no floating point): `1.5s` → 1_500_000_000.
fn parse_span_ns(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    if number.is_empty() {
        return Err(format!(
            "expected a duration with its unit, e.g. 250ms, 10s or 2m; got {text:?}"
        ));
    }
    if unit.is_empty() {
        return Err(format!(
            "{text:?} has no unit: write e.g. {number}s or {number}ms (units: ns, us, ms, s, m, h)"
        ));
    }
    let scale = SPAN_UNITS
        .iter()
        .find(|(u, _)| *u == unit)
        .map(|(_, ns)| *ns)
        .ok_or_else(|| format!("unknown unit {unit:?} in {text:?} (units: ns, us, ms, s, m, h)"))?;
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    let bad = || format!("expected a duration like 10s or 1.5s, got {text:?}");
    if fraction.contains('.') || (whole.is_empty() && fraction.is_empty()) {
        return Err(bad());
    }
    let too_long = || format!("{text:?} is too long");
    let whole_ns = if whole.is_empty() {
        0
    } else {
        whole
            .parse::<u64>()
            .map_err(|_| too_long())?
            .checked_mul(scale)
            .ok_or_else(too_long)?
    };
    // Digits of the fraction beyond the unit's resolution in ns are dropped.
    let mut fraction_ns = 0u64;
    let mut place = scale;
    for digit in fraction.bytes() {
        place /= 10;
        if place == 0 {
            break;
        }
        fraction_ns =
            fraction_ns.saturating_add(u64::from(digit.saturating_sub(b'0')).saturating_mul(place));
    }
    whole_ns.checked_add(fraction_ns).ok_or_else(too_long)
}

impl FromStr for TimeSpan {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        parse_span_ns(s).map(|ns| Self { ns })
    }
}

impl fmt::Display for TimeSpan {
    /// The largest unit that shows it exactly: `10s`, `250ms`, `1500ms`, `7ns`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.ns == 0 {
            return write!(f, "0s");
        }
        for (unit, scale) in [
            ("h", 3600 * NS_PER_S),
            ("m", 60 * NS_PER_S),
            ("s", NS_PER_S),
            ("ms", 1_000_000),
            ("us", 1_000),
        ] {
            if self.ns.is_multiple_of(scale) {
                return write!(f, "{}{unit}", self.ns / scale);
            }
        }
        write!(f, "{}ns", self.ns)
    }
}

/// A signed time span (`-25us`), e.g. a clock offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct SignedTimeSpan {
    ns: i64,
}

impl SignedTimeSpan {
    pub const fn ns(self) -> i64 {
        self.ns
    }
}

impl FromStr for SignedTimeSpan {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let t = s.trim();
        let (negative, rest) = match t.strip_prefix('-') {
            Some(r) => (true, r),
            None => (false, t.strip_prefix('+').unwrap_or(t)),
        };
        let ns = i64::try_from(parse_span_ns(rest)?).map_err(|_| format!("{s:?} is too long"))?;
        Ok(Self {
            ns: if negative { ns.saturating_neg() } else { ns },
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn time_spans_parse_with_their_unit_or_say_why() {
        let ns = |s: &str| s.parse::<TimeSpan>().map(TimeSpan::ns);
        assert_eq!(ns("250ms"), Ok(250_000_000));
        assert_eq!(ns("10s"), Ok(10_000_000_000));
        assert_eq!(ns("1.5s"), Ok(1_500_000_000));
        assert_eq!(ns("2m"), Ok(120_000_000_000));
        assert_eq!(ns("1h"), Ok(3_600_000_000_000));
        assert_eq!(ns("25us"), Ok(25_000));
        assert_eq!(ns("0.000000001s"), Ok(1));
        assert_eq!(ns("0s"), Ok(0));
        let err = ns("10").err().unwrap_or_default();
        assert!(err.contains("no unit") && err.contains("10s"), "{err}");
        for bad in [
            "-1s",
            "",
            "s",
            "1.2.3s",
            "2 parsecs",
            "10x",
            "99999999999999999999s",
        ] {
            assert!(ns(bad).is_err(), "{bad}");
        }
        assert!(TimeSpan::positive("0s").is_err());
        assert!(TimeSpan::positive("0ms").is_err());
        // A bare 0 suggests a valid value and the range, not "0s" (refused too).
        for zero in ["0", "0.0", "00"] {
            let err = TimeSpan::positive(zero).err().unwrap_or_default();
            assert!(
                err.contains("more than 0") && err.contains("10s") && err.contains("1ns or more"),
                "{err}"
            );
            assert!(!err.contains("e.g. 0s"), "{err}");
        }
        assert!(TimeSpan::positive("5")
            .err()
            .unwrap_or_default()
            .contains("no unit"));
        assert_eq!(TimeSpan::positive("1ms").map(TimeSpan::ns), Ok(1_000_000));
        assert_eq!(TimeSpan::from_ns(1_500_000_000).to_string(), "1500ms");
        assert_eq!(TimeSpan::from_secs(10).to_string(), "10s");
        assert_eq!(
            "-25us".parse::<SignedTimeSpan>().map(SignedTimeSpan::ns),
            Ok(-25_000)
        );
        assert_eq!(
            "3ms".parse::<SignedTimeSpan>().map(SignedTimeSpan::ns),
            Ok(3_000_000)
        );
        assert!("-25".parse::<SignedTimeSpan>().is_err());
    }
}
