//! OTLP values as Go writes them: pdata's `AsString` of a double, a map or a slice, and
//! `encoding/json`'s `Marshal` of `AsRaw` (what Telegraf put in a log's `attributes` field):
//! keys sorted, numbers as ES6 prints them, bytes in base64, `<`, `>`, `&`, U+2028 and
//! U+2029 escaped when HTML escaping is on (Marshal), not when off (pdata's AsString).

use std::fmt::Write as _;

use opentelemetry_proto::tonic::common::v1::any_value::Value;

/// pdata's `float64AsString`: ES6 number-to-string (exponent below 1e-6 and from 1e21).
pub(super) fn float_as_string(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    es6(f)
}

fn es6(f: f64) -> String {
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        // Rust's `{:e}` is Go's 'e' with -1 precision minus the exponent's sign on
        // positive exponents and its leading zero, which Go's cleanup removes too.
        let s = format!("{f:e}");
        match s.split_once('e') {
            Some((mantissa, exp)) if !exp.starts_with('-') => format!("{mantissa}e+{exp}"),
            _ => s,
        }
    } else {
        format!("{f}")
    }
}

/// Standard base64 with padding.
pub(super) fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk.first().copied().unwrap_or(0),
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18u32, 12, 6, 0].into_iter().enumerate() {
            if i <= chunk.len() {
                let index = usize::try_from((n >> shift) & 63).unwrap_or(0);
                out.push(char::from(ALPHABET.get(index).copied().unwrap_or(b'=')));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// A JSON string as Go's encoder writes it.
fn write_string(out: &mut String, s: &str, html: bool) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\x08' => out.push_str("\\b"),
            '\x0c' => out.push_str("\\f"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            '<' | '>' | '&' if html => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A value as JSON; false when it cannot be written (NaN or infinite: Go's Marshal fails).
pub(super) fn write_value(out: &mut String, value: Option<&Value>, html: bool) -> bool {
    match value {
        None => out.push_str("null"),
        Some(Value::StringValue(s)) => write_string(out, s, html),
        Some(Value::BoolValue(b)) => out.push_str(if *b { "true" } else { "false" }),
        Some(Value::IntValue(i)) => {
            let _ = write!(out, "{i}");
        }
        Some(Value::DoubleValue(d)) => {
            if !d.is_finite() {
                return false;
            }
            out.push_str(&es6(*d));
        }
        Some(Value::BytesValue(b)) => write_string(out, &base64(b), html),
        Some(Value::ArrayValue(a)) => {
            out.push('[');
            for (i, v) in a.values.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                if !write_value(out, v.value.as_ref(), html) {
                    return false;
                }
            }
            out.push(']');
        }
        Some(Value::KvlistValue(kv)) => {
            // (a Go map: sorted keys, the last value of a repeated key)
            let map: std::collections::BTreeMap<&str, Option<&Value>> = kv
                .values
                .iter()
                .map(|kv| {
                    (
                        kv.key.as_str(),
                        kv.value.as_ref().and_then(|v| v.value.as_ref()),
                    )
                })
                .collect();
            if !write_object(out, map.into_iter(), html) {
                return false;
            }
        }
        Some(Value::StringValueStrindex(i)) => {
            let _ = write!(out, "{i}");
        }
    }
    true
}

/// A JSON object of sorted entries; false when a value cannot be written.
pub(super) fn write_object<'a>(
    out: &mut String,
    entries: impl Iterator<Item = (&'a str, Option<&'a Value>)>,
    html: bool,
) -> bool {
    out.push('{');
    for (i, (k, v)) in entries.enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_string(out, k, html);
        out.push(':');
        if !write_value(out, v, html) {
            return false;
        }
    }
    out.push('}');
    true
}
