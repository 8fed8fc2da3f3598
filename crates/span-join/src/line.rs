//! InfluxDB line protocol, the little of it the join reads and writes:
//! `measurement[,tag=value…] field=value[,field=value…] [timestamp]`.
//!
//! Reading borrows from the line; only a name or value with an escape in it is copied.
//! The input comes from Telegraf, but it is still bytes from another process: nothing
//! here trusts it (every failure is a [`LineError`] naming what and where).

use std::borrow::Cow;
use std::fmt::Write as _;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LineError {
    #[error("line protocol: no field set after the tags (line of {len} bytes)")]
    NoFields { len: usize },
    #[error("line protocol: empty measurement name")]
    NoMeasurement,
    #[error("line protocol: `{what}` without '=' at byte {offset}")]
    NoEquals { what: &'static str, offset: usize },
    #[error("line protocol: unterminated string field value starting at byte {offset}")]
    UnterminatedString { offset: usize },
    #[error("line protocol: bad timestamp `{text}`")]
    BadTimestamp { text: String },
}

/// A field's value as written: numbers are parsed when asked for.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldValue<'a> {
    /// `…i` (the suffix removed)
    Int(&'a str),
    /// `…u`
    UInt(&'a str),
    Float(&'a str),
    Str(Cow<'a, str>),
    Bool(bool),
}

impl FieldValue<'_> {
    /// The value as a whole number (integers, and floats without a fraction), if it is one.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            FieldValue::Int(s) => s.parse().ok(),
            FieldValue::UInt(s) => s.parse::<u64>().ok().and_then(|v| i64::try_from(v).ok()),
            FieldValue::Float(s) => {
                let v: f64 = s.parse().ok()?;
                // (exactly representable whole numbers only: ±2^53)
                (v.fract() == 0.0 && v.abs() <= 9_007_199_254_740_992.0).then_some(v as i64)
            }
            FieldValue::Str(_) | FieldValue::Bool(_) => None,
        }
    }
}

/// One parsed line: the tag and field sections stay unsplit until iterated.
#[derive(Debug, Clone)]
pub struct Line<'a> {
    pub measurement: Cow<'a, str>,
    tags: &'a str,
    fields: &'a str,
    pub timestamp: Option<i64>,
}

impl<'a> Line<'a> {
    /// Parses one line (without its newline). `Ok(None)` for a blank line or a comment.
    pub fn parse(line: &'a str) -> Result<Option<Line<'a>>, LineError> {
        let line = line.trim_end_matches(['\r', '\n']);
        if line.trim_start().is_empty() || line.starts_with('#') {
            return Ok(None);
        }
        let no_fields = LineError::NoFields { len: line.len() };
        let key_end = find_unescaped(line, 0, |c| c == b' ', false).ok_or(no_fields.clone())?;
        let (key, after_key) = cut(line, key_end).ok_or(no_fields.clone())?;
        let (measurement, tags) = match find_unescaped(key, 0, |c| c == b',', false) {
            Some(comma) => cut(key, comma).unwrap_or((key, "")),
            None => (key, ""),
        };
        if measurement.is_empty() {
            return Err(LineError::NoMeasurement);
        }
        let fields_len =
            find_unescaped(after_key, 0, |c| c == b' ', true).unwrap_or(after_key.len());
        let fields_start = key_end.saturating_add(1);
        if let Some(open) = open_quote(after_key, fields_len) {
            return Err(LineError::UnterminatedString {
                offset: fields_start.saturating_add(open),
            });
        }
        let (fields, rest) = cut(after_key, fields_len).unwrap_or((after_key, ""));
        if fields.is_empty() {
            return Err(no_fields);
        }
        let rest = rest.trim();
        let timestamp = if rest.is_empty() {
            None
        } else {
            Some(rest.parse().map_err(|_| LineError::BadTimestamp {
                text: rest.chars().take(32).collect(),
            })?)
        };
        Ok(Some(Line {
            measurement: unescape(measurement),
            tags,
            fields,
            timestamp,
        }))
    }

    /// The tags in the order written.
    pub fn tags(
        &self,
    ) -> impl Iterator<Item = Result<(Cow<'a, str>, Cow<'a, str>), LineError>> + 'a {
        Pairs {
            text: self.tags,
            at: 0,
            quoted: false,
        }
        .map(|pair| {
            let (key, value) = pair?;
            Ok((unescape(key), unescape(value)))
        })
    }

    /// The fields in the order written.
    pub fn fields(
        &self,
    ) -> impl Iterator<Item = Result<(Cow<'a, str>, FieldValue<'a>), LineError>> + 'a {
        Pairs {
            text: self.fields,
            at: 0,
            quoted: true,
        }
        .map(|pair| {
            let (key, value) = pair?;
            Ok((unescape(key), field_value(value)))
        })
    }
}

/// `key=value` pairs separated by unescaped commas (commas inside quoted field strings
/// belong to the value when `quoted`).
struct Pairs<'a> {
    text: &'a str,
    at: usize,
    quoted: bool,
}

impl<'a> Iterator for Pairs<'a> {
    type Item = Result<(&'a str, &'a str), LineError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.at >= self.text.len() {
            return None;
        }
        let start = self.at;
        let end =
            find_unescaped(self.text, start, |c| c == b',', self.quoted).unwrap_or(self.text.len());
        self.at = end.saturating_add(1);
        let pair = self.text.get(start..end)?;
        let what = if self.quoted { "field" } else { "tag" };
        match find_unescaped(pair, 0, |c| c == b'=', false).and_then(|eq| cut(pair, eq)) {
            Some(key_value) => Some(Ok(key_value)),
            None => Some(Err(LineError::NoEquals {
                what,
                offset: start,
            })),
        }
    }
}

/// Index of the first byte at or after `from` for which `is_sep` holds and that is
/// neither escaped nor (when `quoted`) inside a double-quoted string.
fn find_unescaped(
    text: &str,
    from: usize,
    is_sep: impl Fn(u8) -> bool,
    quoted: bool,
) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut in_string = false;
    let mut i = from;
    while let Some(&c) = bytes.get(i) {
        if c == b'\\' {
            i = i.saturating_add(2);
            continue;
        }
        if quoted && c == b'"' {
            in_string = !in_string;
        } else if !in_string && is_sep(c) {
            return Some(i);
        }
        i += 1;
    }
    None
}

/// `text` before and after the (one-byte) separator at `at`; None if `at` is not one.
fn cut(text: &str, at: usize) -> Option<(&str, &str)> {
    Some((text.get(..at)?, text.get(at.checked_add(1)?..)?))
}

/// The offset of a string field value's opening quote that is never closed, if any.
fn open_quote(text: &str, to: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut open = None;
    let mut i = 0;
    while i < to {
        match bytes.get(i) {
            Some(b'\\') => i = i.saturating_add(1),
            Some(b'"') => open = if open.is_some() { None } else { Some(i) },
            _ => {}
        }
        i = i.saturating_add(1);
    }
    open
}

fn field_value(text: &str) -> FieldValue<'_> {
    if let Some(inner) = text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
        return FieldValue::Str(unescape(inner));
    }
    match text {
        "t" | "T" | "true" | "True" | "TRUE" => return FieldValue::Bool(true),
        "f" | "F" | "false" | "False" | "FALSE" => return FieldValue::Bool(false),
        _ => {}
    }
    if let Some(int) = text.strip_suffix('i') {
        FieldValue::Int(int)
    } else if let Some(uint) = text.strip_suffix('u') {
        FieldValue::UInt(uint)
    } else {
        FieldValue::Float(text)
    }
}

/// Removes the backslash of `\,` `\=` `\ ` `\"` `\\` (any other backslash stays, as in
/// InfluxDB's own parser).
fn unescape(text: &str) -> Cow<'_, str> {
    if !text.contains('\\') {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(&next) = chars.peek() {
                if matches!(next, ',' | '=' | ' ' | '"' | '\\') {
                    out.push(next);
                    chars.next();
                    continue;
                }
            }
        }
        out.push(c);
    }
    Cow::Owned(out)
}

/// Writes lines: `point(name)`, then `tag`s, then `int` fields, then `end(time)`.
#[derive(Debug, Default)]
pub struct LineWriter {
    pub buf: String,
    fields: usize,
}

impl LineWriter {
    pub fn point(&mut self, measurement: &str) -> &mut Self {
        escape_into(&mut self.buf, measurement, false);
        self.fields = 0;
        self
    }

    /// A tag; an empty value is left out (line protocol has no empty tag, and Telegraf
    /// drops them too).
    pub fn tag(&mut self, key: &str, value: &str) -> &mut Self {
        if !value.is_empty() {
            self.buf.push(',');
            escape_into(&mut self.buf, key, true);
            self.buf.push('=');
            escape_into(&mut self.buf, value, true);
        }
        self
    }

    pub fn int(&mut self, key: &str, value: i64) -> &mut Self {
        self.buf.push(if self.fields == 0 { ' ' } else { ',' });
        self.fields += 1;
        escape_into(&mut self.buf, key, true);
        let _ = write!(self.buf, "={value}i");
        self
    }

    /// A string field (`"` and `\` escaped).
    pub fn string(&mut self, key: &str, value: &str) -> &mut Self {
        self.buf.push(if self.fields == 0 { ' ' } else { ',' });
        self.fields += 1;
        escape_into(&mut self.buf, key, true);
        self.buf.push_str("=\"");
        for c in value.chars() {
            if c == '"' || c == '\\' {
                self.buf.push('\\');
            }
            self.buf.push(c);
        }
        self.buf.push('"');
        self
    }

    /// Ends the line; without a time the receiver stamps it on arrival.
    pub fn end(&mut self, time: Option<i64>) {
        if let Some(t) = time {
            let _ = write!(self.buf, " {t}");
        }
        self.buf.push('\n');
    }
}

/// Backslashes are doubled: the reader (as InfluxDB's) takes `\\` for one, and a name
/// ending in a backslash would otherwise escape the separator after it.
fn escape_into(out: &mut String, text: &str, escape_equals: bool) {
    for c in text.chars() {
        if c == ',' || c == ' ' || c == '\\' || (escape_equals && c == '=') {
            out.push('\\');
        }
        // (a newline cannot be escaped: it would end the line)
        out.push(if c == '\n' { ' ' } else { c });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Line<'_> {
        match Line::parse(line) {
            Ok(Some(l)) => l,
            other => panic!("{line}: {other:?}"),
        }
    }

    #[test]
    fn reads_a_span_as_telegraf_writes_it() {
        let text = "spans,host.name=host\\ a,span.name=SAMPLE,topic_name=rt/a\\,b\\=c,writer_id=0102 \
                    end_time_unix_nano=1700000000000000123i,sn=7i,trace_id=\"ab, \\\"c d\",ok=t,x=1.5 1700000000000000000\n";
        let line = parse(text);
        assert_eq!(line.measurement, "spans");
        assert_eq!(line.timestamp, Some(1_700_000_000_000_000_000));
        let tags: Vec<_> = line.tags().map(|t| t.unwrap()).collect();
        assert_eq!(tags[0], (Cow::from("host.name"), Cow::from("host a")));
        assert_eq!(tags[2].1, "rt/a,b=c");
        let fields: Vec<_> = line.fields().map(|f| f.unwrap()).collect();
        assert_eq!(fields[0].1.as_i64(), Some(1_700_000_000_000_000_123));
        assert_eq!(fields[1].1.as_i64(), Some(7));
        assert_eq!(fields[2].1, FieldValue::Str(Cow::from("ab, \"c d")));
        assert_eq!(fields[3].1, FieldValue::Bool(true));
        assert_eq!(fields[4].1.as_i64(), None);
    }

    #[test]
    fn what_it_writes_it_reads_back() {
        let mut w = LineWriter::default();
        w.point("dds_latency")
            .tag("sender", "host a,1")
            .tag("topic_name", "")
            .tag("writer_id", "w=1");
        w.int("latency_ns", -5).int("sn", 3).end(Some(42));
        w.point("ddshark_join").int("spans", 1).end(None);
        let mut lines = w.buf.lines();
        let line = parse(lines.next().unwrap());
        let tags: Vec<_> = line.tags().map(|t| t.unwrap()).collect();
        assert_eq!(
            tags,
            vec![
                (Cow::from("sender"), Cow::from("host a,1")),
                (Cow::from("writer_id"), Cow::from("w=1"))
            ]
        );
        let fields: Vec<_> = line
            .fields()
            .map(|f| f.unwrap())
            .map(|(k, v)| (k, v.as_i64()))
            .collect();
        assert_eq!(
            fields,
            vec![
                (Cow::from("latency_ns"), Some(-5)),
                (Cow::from("sn"), Some(3))
            ]
        );
        assert_eq!(line.timestamp, Some(42));
        assert_eq!(parse(lines.next().unwrap()).timestamp, None);
    }

    #[test]
    fn backslashes_in_names_and_values_read_back() {
        for value in ["rt/a\\", "a\\b", "a\\\\", "a\\,b", "\\ \\="] {
            let mut w = LineWriter::default();
            w.point("dds\\samples")
                .tag("topic_name", value)
                .tag("sender", "b");
            w.int("sn", 2).end(Some(1));
            let line = parse(w.buf.trim_end());
            assert_eq!(line.measurement, "dds\\samples", "{}", w.buf);
            let tags: Vec<_> = line.tags().map(|t| t.unwrap()).collect();
            assert_eq!(
                tags,
                vec![
                    (Cow::from("topic_name"), Cow::from(value)),
                    (Cow::from("sender"), Cow::from("b"))
                ],
                "{}",
                w.buf
            );
        }
    }

    #[test]
    fn bad_lines_are_errors_not_panics() {
        for bad in [
            "spans",
            "spans,a=b",
            ",a=b x=1i",
            "spans x",
            "spans x=\"open",
            "spans x=1i 12ab",
            "spans,a x=1i",
        ] {
            let parsed = Line::parse(bad).and_then(|l| match l {
                Some(l) => l
                    .tags()
                    .chain(l.fields().map(|f| f.map(|(k, _)| (k.clone(), k))))
                    .collect::<Result<Vec<_>, _>>()
                    .map(|_| ()),
                None => Ok(()),
            });
            assert!(parsed.is_err(), "{bad} parsed");
        }
        assert!(Line::parse("# a comment").unwrap().is_none());
        assert!(Line::parse("   ").unwrap().is_none());
        // A trailing backslash escapes nothing, an escaped space belongs to the name, a quote
        // opened after a closed string is unterminated, multibyte names are names.
        for (odd, expected) in [
            ("spans\\", "Err(NoFields { len: 6 })"),
            ("sp\\ ans x=\"\\", "Err(UnterminatedString { offset: 10 })"),
            (
                "späns,ü=ö x=1i 1",
                r#"Ok(Some(("späns", [Ok(("ü", "ö"))], [Ok(("x", Int("1")))], Some(1))))"#,
            ),
            ("s x=\"a\"b\" 1", "Err(UnterminatedString { offset: 8 })"),
        ] {
            let seen = Line::parse(odd).map(|l| {
                l.map(|l| {
                    (
                        l.measurement.to_string(),
                        l.tags().collect::<Vec<_>>(),
                        l.fields().collect::<Vec<_>>(),
                        l.timestamp,
                    )
                })
            });
            assert_eq!(format!("{seen:?}"), expected, "{odd:?}");
        }
    }
}
