//! Compact number formatting for narrow table cells.

/// `1234` → `1.2k`, with `unit` appended (e.g. `b` for bits/s).
pub fn si(v: f64, unit: &str) -> String {
    if !v.is_finite() || v <= 0.0 {
        return format!("0{unit}");
    }
    let (n, p) = if v >= 1e9 {
        (v / 1e9, "G")
    } else if v >= 1e6 {
        (v / 1e6, "M")
    } else if v >= 1e3 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    if p.is_empty() && v < 10.0 {
        // Small rates keep their decimals: 0.50 Hz, 2.0 Hz.
        if v < 1.0 {
            format!("{n:.2}{unit}")
        } else {
            format!("{n:.1}{unit}")
        }
    } else if n < 10.0 && !p.is_empty() {
        format!("{n:.1}{p}{unit}")
    } else {
        format!("{n:.0}{p}{unit}")
    }
}

/// A rate in Hz.
pub fn hz(v: f64) -> String {
    si(v, "")
}

/// A bandwidth in bits/s.
pub fn bps(v: f64) -> String {
    si(v, "b")
}

/// A counter: exact below 100 000, then `123k`, `1.2M`.
pub fn count(v: u64) -> String {
    if v < 100_000 {
        v.to_string()
    } else {
        si(v as f64, "")
    }
}

/// Bucket label of the size histogram (see `state::size_bucket`).
pub fn size_bucket_label(i: usize, last: usize) -> String {
    if i == 0 {
        return "<64".into();
    }
    let lo = 1u64.checked_shl(u32::try_from(i).unwrap_or(0).saturating_add(5));
    let label = lo.map_or_else(
        || "?".into(),
        |b| crate::units::bytes(b as f64).replace('B', ""),
    );
    if i >= last {
        format!("{label}+")
    } else {
        label
    }
}

/// A GUID (32 hex digits) shortened to the last 4 bytes of its prefix and its
/// entity id, when `width` is too narrow for all of it.
pub fn guid(g: &str, width: usize) -> String {
    if g.len() <= width {
        return g.to_string();
    }
    match (g.get(16..24), g.get(24..)) {
        (Some(p), Some(e)) if width >= 18 => format!("…{p}:{e}"),
        _ => truncate(g, width),
    }
}

/// Cut `s` to `width` characters, marking the cut with `…`.
pub fn truncate(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        return s.to_string();
    }
    if width == 0 {
        return String::new();
    }
    let mut out: String = s.chars().take(width.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// Cut `s` to `width` characters from the left (keeps a file name): `…/a.pcap`.
pub fn truncate_left(s: &str, width: usize) -> String {
    let n = s.chars().count();
    if n <= width {
        return s.to_string();
    }
    if width == 0 {
        return String::new();
    }
    let mut out = String::from("…");
    out.extend(s.chars().skip(n.saturating_sub(width.saturating_sub(1))));
    out
}

/// A short duration (periods, jitter) from nanoseconds: µs, ms or s, three digits.
pub fn short_duration(ns: f64) -> String {
    if !ns.is_finite() || ns < 0.0 {
        "-".into()
    } else if ns < 1e6 {
        format!("{:.0}µs", ns / 1e3)
    } else if ns < 1e9 {
        let ms = ns / 1e6;
        if ms < 10.0 {
            format!("{ms:.2}ms")
        } else if ms < 100.0 {
            format!("{ms:.1}ms")
        } else {
            format!("{ms:.0}ms")
        }
    } else {
        format!("{:.2}s", ns / 1e9)
    }
}

/// Duration in seconds, human scale.
pub fn secs(s: f64) -> String {
    if !s.is_finite() || s < 0.0 {
        "-".into()
    } else if s < 60.0 {
        format!("{s:.1}s")
    } else if s < 3600.0 {
        format!("{}m{:02}s", (s / 60.0) as u64, (s % 60.0) as u64)
    } else {
        format!(
            "{}h{:02}m",
            (s / 3600.0) as u64,
            ((s % 3600.0) / 60.0) as u64
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers() {
        assert_eq!(hz(0.5), "0.50");
        assert_eq!(hz(30.0), "30");
        assert_eq!(hz(1234.0), "1.2k");
        assert_eq!(bps(19_200_000.0), "19Mb");
        assert_eq!(count(123_456), "123k");
        assert_eq!(size_bucket_label(0, 17), "<64");
        assert_eq!(size_bucket_label(1, 17), "64");
        assert_eq!(size_bucket_label(5, 17), "1.0k");
        assert_eq!(size_bucket_label(17, 17), "4.2M+");
        assert_eq!(
            guid("0110aabbccddeeff0011223344556677", 20),
            "…00112233:44556677"
        );
        assert_eq!(truncate("abcdef", 4), "abc…");
        assert_eq!(truncate_left("dir/a.pcap", 7), "…a.pcap");
        assert_eq!(secs(75.0), "1m15s");
    }
}
