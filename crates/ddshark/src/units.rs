//! One definition of each unit the command line and the outputs share: durations given
//! as options (the time-span crate, shared with ddshark-join), byte sizes and capture
//! timestamps as people read them.

const NS_PER_S: u64 = 1_000_000_000;

pub(crate) use time_span::TimeSpan;

/// A byte count with decimal (SI) prefixes, 1 kB = 1000 B — the same base as the bit
/// rates (`si`), so a rate in B/s times 8 is the rate in b/s on screen:
/// `512` → `512B`, `23_040` → `23.0kB`, `230_460` → `230kB`, `2_097_152` → `2.1MB`.
pub(crate) fn bytes(v: f64) -> String {
    const UNITS: [&str; 5] = ["B", "kB", "MB", "GB", "TB"];
    if !v.is_finite() || v <= 0.0 {
        return "0B".into();
    }
    let mut n = v;
    let mut unit = 0usize;
    while n >= 1000.0 && unit.saturating_add(1) < UNITS.len() {
        n /= 1000.0;
        unit = unit.saturating_add(1);
    }
    let suffix = UNITS.get(unit).copied().unwrap_or("B");
    if unit == 0 || n >= 100.0 {
        format!("{n:.0}{suffix}")
    } else {
        format!("{n:.1}{suffix}")
    }
}

/// `seconds.nanoseconds` of a capture time (ns since the epoch) or of a signed
/// difference: `1795273347497942000` → `1795273347.497942000`, `-1` → `-1.999999999`.
pub(crate) fn timestamp(ns: impl Into<i128>) -> String {
    let ns: i128 = ns.into();
    let per_s = i128::from(NS_PER_S);
    format!("{}.{:09}", ns.div_euclid(per_s), ns.rem_euclid(per_s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_sizes() {
        assert_eq!(bytes(0.0), "0B");
        assert_eq!(bytes(512.0), "512B");
        assert_eq!(bytes(23_040.0), "23.0kB");
        assert_eq!(bytes(230_460.0), "230kB");
        assert_eq!(bytes(2_097_152.0), "2.1MB");
        assert_eq!(bytes(3.0e15), "3000TB");
    }

    #[test]
    fn timestamps() {
        assert_eq!(
            timestamp(1_795_273_347_497_942_000u64),
            "1795273347.497942000"
        );
        assert_eq!(timestamp(-1i64), "-1.999999999");
        assert_eq!(timestamp(5i64), "0.000000005");
    }
}
