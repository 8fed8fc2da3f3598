//! Compact number formatting for narrow table cells.

/// `1234` → `1.2k`, with `unit` appended.
pub(crate) fn si(v: f64, unit: &str) -> String {
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
pub(crate) fn hz(v: f64) -> String {
    si(v, "")
}

/// A writer's or topic's rate as the tables show it: `30.0`, `30.0*` when taken over its
/// own active span (active less than the window; `stats` says so under its table), `-`
/// when none is known yet.
pub(crate) fn rate(r: &crate::state::rate::RateView) -> String {
    match r.hz {
        Some(v) if r.over_active_span => format!("{}*", hz(v)),
        Some(v) => hz(v),
        None => "-".into(),
    }
}

/// The bandwidth over the same span as [`rate`].
pub(crate) fn rate_bandwidth(r: &crate::state::rate::RateView) -> String {
    r.bandwidth_bps.map_or("-".into(), bandwidth)
}

/// A bandwidth given in bits/s, shown in bytes/s as `stats` shows it: `2.4MB/s`.
pub(crate) fn bandwidth(bits_per_s: f64) -> String {
    format!("{}/s", crate::units::bytes(bits_per_s / 8.0))
}

/// Widths of table columns that share `avail` cells: each column gets what its content
/// wants (`wants`) when everything fits; else every column keeps at least its `mins`
/// (or what it wants, if less), the column `first` (the row's name) then gets what it
/// wants of the rest, and what remains is shared evenly, a column that wants less than
/// its share leaving the remainder to the others.
pub(crate) fn share_widths(
    avail: u16,
    wants: &[u16],
    mins: &[u16],
    first: Option<usize>,
) -> Vec<u16> {
    let mut widths: Vec<u16> = wants
        .iter()
        .enumerate()
        .map(|(i, w)| mins.get(i).copied().unwrap_or(0).min(*w))
        .collect();
    let used: u16 = widths.iter().fold(0u16, |a, w| a.saturating_add(*w));
    let mut left = avail.saturating_sub(used);
    if let Some((w, want)) = first.and_then(|i| widths.get_mut(i).zip(wants.get(i))) {
        let add = want.saturating_sub(*w).min(left);
        *w = w.saturating_add(add);
        left = left.saturating_sub(add);
    }
    loop {
        let hungry: Vec<usize> = (0..widths.len())
            .filter(|i| widths.get(*i) < wants.get(*i))
            .collect();
        if hungry.is_empty() || left == 0 {
            break;
        }
        let each = (left / u16::try_from(hungry.len()).unwrap_or(u16::MAX)).max(1);
        for i in hungry {
            let (Some(w), Some(want)) = (widths.get_mut(i), wants.get(i)) else {
                continue;
            };
            let add = each.min(want.saturating_sub(*w)).min(left);
            *w = w.saturating_add(add);
            left = left.saturating_sub(add);
            if left == 0 {
                break;
            }
        }
    }
    widths
}

/// Display width of `s` in terminal cells.
pub(crate) fn cells(s: &str) -> u16 {
    u16::try_from(ratatui::text::Line::from(s).width()).unwrap_or(u16::MAX)
}

/// A counter: exact below 100 000, then `123k`, `1.2M`.
pub(crate) fn count(v: u64) -> String {
    if v < 100_000 {
        v.to_string()
    } else {
        si(v as f64, "")
    }
}

/// Bucket label of the size histogram (see `state::size_bucket`).
pub(crate) fn size_bucket_label(i: usize, last: usize) -> String {
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
pub(crate) fn guid(g: &str, width: usize) -> String {
    if g.len() <= width {
        return g.to_string();
    }
    match (g.get(16..24), g.get(24..)) {
        (Some(p), Some(e)) if width >= 18 => format!("…{p}:{e}"),
        _ => truncate(g, width),
    }
}

/// Cut `s` to `width` characters, marking the cut with `…`.
pub(crate) fn truncate(s: &str, width: usize) -> String {
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
pub(crate) fn truncate_left(s: &str, width: usize) -> String {
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
pub(crate) fn short_duration(ns: f64) -> String {
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
pub(crate) fn secs(s: f64) -> String {
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
        assert_eq!(bandwidth(19_200_000.0), "2.4MB/s");
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

    #[test]
    fn columns_share_the_width() {
        // Everything fits: each gets what it wants.
        assert_eq!(
            share_widths(100, &[20, 30, 5], &[8, 8, 5], None),
            [20, 30, 5]
        );
        // Too narrow: the short column keeps its want, the long ones share the rest.
        assert_eq!(
            share_widths(40, &[10, 50, 50], &[8, 8, 8], None),
            [10, 15, 15]
        );
        // The name column first: whole, the others share what it leaves.
        assert_eq!(share_widths(56, &[33, 63], &[12, 12], Some(0)), [33, 23]);
        assert_eq!(share_widths(40, &[60, 63], &[12, 12], Some(0)), [28, 12]);
        // Narrower than the minimums: the minimums.
        assert_eq!(share_widths(10, &[20, 20], &[8, 8], None), [8, 8]);
    }
}
