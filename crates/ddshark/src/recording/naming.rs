//! File names as tcpdump makes them (see the module above): the numbering, the ring and
//! `-G`'s strftime conversions, in UTC from capture time.

use std::path::{Path, PathBuf};

use super::RecordOptions;

/// How the next file is named.
#[derive(Debug, Clone)]
pub(super) struct Naming {
    template: String,
    has_time: bool,
    /// Ring of this many files, padded to `width` digits.
    ring: Option<(u32, usize)>,
    /// Always number the files after the first (`-C`, or `-G` without a time in the name).
    numbered: bool,
}

impl Naming {
    pub(super) fn new(opts: &RecordOptions) -> Self {
        let template = opts.path.to_string_lossy().into_owned();
        let has_time = opts.rotate_ns.is_some() && template.contains('%');
        let ring = match (opts.rotate_bytes, opts.rotate_ns, opts.max_files) {
            (Some(_), None, Some(n)) if n > 0 => Some((n, n.to_string().len())),
            _ => None,
        };
        Self {
            template,
            has_time,
            ring,
            numbered: opts.rotate_bytes.is_some() || opts.rotate_ns.is_some(),
        }
    }

    /// The base name (strftime expanded) of a file starting at `ts_ns`.
    pub(super) fn base(&self, ts_ns: u64) -> String {
        if self.has_time {
            strftime_utc(&self.template, ts_ns)
        } else {
            self.template.clone()
        }
    }

    /// Name of a file: `index` counts the files under the same base name so far.
    pub(super) fn name(&self, base: &str, index: u64) -> PathBuf {
        match self.ring {
            Some((n, width)) => {
                let slot = index % u64::from(n.max(1));
                PathBuf::from(format!("{base}{slot:0width$}"))
            }
            None if index == 0 || !self.numbered => PathBuf::from(base),
            None => PathBuf::from(format!("{base}{index}")),
        }
    }
}

/// A civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days.saturating_add(719_468);
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

/// strftime's common conversions at `ts_ns` (UTC); others are left as written.
pub(crate) fn strftime_utc(template: &str, ts_ns: u64) -> String {
    let secs = ts_ns / 1_000_000_000;
    let days = i64::try_from(secs / 86_400).unwrap_or(i64::MAX);
    let sod = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    const CUMULATIVE: [u32; 12] = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334];
    let month_start = CUMULATIVE
        .get(m.saturating_sub(1) as usize)
        .copied()
        .unwrap_or(0);
    let yday = month_start + d + u32::from(m > 2 && is_leap(y));
    let mut out = String::with_capacity(template.len().saturating_add(16));
    let mut chars = template.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('Y') => out.push_str(&format!("{y:04}")),
            Some('y') => out.push_str(&format!("{:02}", y.rem_euclid(100))),
            Some('m') => out.push_str(&format!("{m:02}")),
            Some('d') => out.push_str(&format!("{d:02}")),
            Some('j') => out.push_str(&format!("{yday:03}")),
            Some('H') => out.push_str(&format!("{:02}", sod / 3600)),
            Some('M') => out.push_str(&format!("{:02}", sod / 60 % 60)),
            Some('S') => out.push_str(&format!("{:02}", sod % 60)),
            Some('s') => out.push_str(&secs.to_string()),
            Some('%') => out.push('%'),
            Some(other) => {
                out.push('%');
                out.push(other);
            }
            None => out.push('%'),
        }
    }
    out
}

pub(super) fn part_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".part");
    PathBuf::from(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strftime_expands_utc_fields() {
        // 2024-02-29 23:59:58 UTC
        let ts = 1_709_251_198_000_000_000u64;
        assert_eq!(
            strftime_utc("cap-%Y%m%d-%H%M%S-%j-%y-%s-%%-%q.pcapng", ts),
            "cap-20240229-235958-060-24-1709251198-%-%q.pcapng"
        );
        assert_eq!(strftime_utc("%Y-%m-%d", 0), "1970-01-01");
        assert_eq!(strftime_utc("%j", 1_735_603_200_000_000_000), "366"); // 2024-12-31, a leap year
        assert_eq!(strftime_utc("%j", 1_767_139_200_000_000_000), "365"); // 2025-12-31
    }

    fn opts(c: Option<u64>, g: Option<u64>, w: Option<u32>) -> RecordOptions {
        RecordOptions {
            path: PathBuf::from("cap.pcapng"),
            rotate_bytes: c,
            rotate_ns: g,
            max_files: w,
            host_name: "h".into(),
            interfaces: Vec::new(),
        }
    }

    #[test]
    fn names_follow_tcpdump() {
        let n = Naming::new(&opts(Some(1), None, None));
        let names: Vec<_> = (0..3).map(|i| n.name("cap", i)).collect();
        assert_eq!(names, ["cap", "cap1", "cap2"].map(PathBuf::from));
        let ring = Naming::new(&opts(Some(1), None, Some(10)));
        let names: Vec<_> = [0, 9, 10].iter().map(|&i| ring.name("cap", i)).collect();
        assert_eq!(names, ["cap00", "cap09", "cap00"].map(PathBuf::from));
        let plain = Naming::new(&opts(None, None, None));
        assert_eq!(plain.name("cap", 0), PathBuf::from("cap"));
    }
}
