//! The live latency join of ddshark's spans across hosts (the definitions: [`join`]'s
//! docs). The join itself is pure: lines in, lines out, the caller decides when a period
//! ends ([`SpanJoin::push`]); no clock, no I/O. [`serve`] is the process around it (stdin,
//! the periods, the output socket) that the `ddshark-join` binary runs, which Telegraf
//! starts (deploy/telegraf/telegraf.conf); `ddshark join` is the same.

pub mod influxdb;
pub mod join;
pub mod line;
pub mod otlp;
pub mod serve;
pub mod telemetry;

use std::borrow::Cow;

use span_schema::{attr, influx};

pub use join::{
    FragSpan, JoinCounters, JoinSettings, JoinState, SampleSpan, SpanJoin, StateError, STATE_FORMAT,
};
pub use line::{FieldValue, Line, LineError, LineWriter};

/// A count as the points' and OTLP's integer (saturating: they are i64).
pub(crate) fn as_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// Feeds one line to the join: a SAMPLE or DATA_FRAG span, else counted as rejected.
/// Blank lines and comments are nothing.
pub fn feed_line(join: &mut SpanJoin, text: &str) {
    match Line::parse(text) {
        Ok(None) => {}
        Ok(Some(line)) => {
            if !feed_span(join, &line) {
                join.reject();
            }
        }
        Err(_) => join.reject(),
    }
}

/// The tags and fields of a span the join reads (`span_schema::JOIN_TAGS` and
/// `JOIN_FIELDS`; everything else on the line is skipped).
#[derive(Default)]
struct SpanParts<'a> {
    span_name: Option<Cow<'a, str>>,
    host: Option<Cow<'a, str>>,
    writer: Option<Cow<'a, str>>,
    topic: Option<Cow<'a, str>>,
    slot: Option<Cow<'a, str>>,
    end: Option<i64>,
    sn: Option<i64>,
    start_ns: Option<i64>,
    fragments_missing: Option<i64>,
    sample_size: Option<i64>,
    repairs: Option<i64>,
    submessages: Option<i64>,
    fragment_starting_num: Option<i64>,
    frags_in_submessage: Option<i64>,
    fragment_size: Option<i64>,
    src_ip: Option<Cow<'a, str>>,
    src_mac: Option<i64>,
    announced_ips: Option<Cow<'a, str>>,
}

fn feed_span(join: &mut SpanJoin, line: &Line<'_>) -> bool {
    if line.measurement != influx::SPANS {
        return false;
    }
    let Some(time) = line.timestamp else {
        return false;
    };
    let mut p = SpanParts::default();
    for tag in line.tags() {
        let Ok((key, value)) = tag else {
            return false;
        };
        let slot = match &*key {
            influx::SPAN_NAME => &mut p.span_name,
            attr::HOST_NAME => &mut p.host,
            attr::WRITER_ID => &mut p.writer,
            attr::TOPIC_NAME => &mut p.topic,
            attr::SLOT => &mut p.slot,
            _ => continue,
        };
        *slot = Some(value);
    }
    for field in line.fields() {
        let Ok((key, value)) = field else {
            return false;
        };
        let text = match &*key {
            attr::SRC_IP => Some(&mut p.src_ip),
            attr::ANNOUNCED_IPS => Some(&mut p.announced_ips),
            _ => None,
        };
        if let Some(text) = text {
            if let FieldValue::Str(v) = value {
                *text = Some(v);
            }
            continue;
        }
        let slot = match &*key {
            influx::END_TIME => &mut p.end,
            attr::SN => &mut p.sn,
            attr::START_NS => &mut p.start_ns,
            attr::FRAGMENTS_MISSING => &mut p.fragments_missing,
            attr::SAMPLE_SIZE => &mut p.sample_size,
            attr::REPAIRS => &mut p.repairs,
            attr::SUBMESSAGES => &mut p.submessages,
            attr::FRAGMENT_STARTING_NUM => &mut p.fragment_starting_num,
            attr::FRAGS_IN_SUBMESSAGE => &mut p.frags_in_submessage,
            attr::FRAGMENT_SIZE => &mut p.fragment_size,
            attr::SRC_MAC => &mut p.src_mac,
            _ => continue,
        };
        *slot = value.as_i64();
    }
    let (Some(host), Some(end)) = (p.host.as_deref(), p.end) else {
        return false;
    };
    match p.span_name.as_deref() {
        Some("SAMPLE") => {
            let (Some(writer), Some(slot), Some(sn), Some(start_ns)) =
                (p.writer.as_deref(), p.slot.as_deref(), p.sn, p.start_ns)
            else {
                return false;
            };
            let (Some(fragments_missing), Some(sample_size), Some(repairs), Some(submessages)) =
                (p.fragments_missing, p.sample_size, p.repairs, p.submessages)
            else {
                return false;
            };
            join.add_sample(&SampleSpan {
                host,
                writer,
                topic: p.topic.as_deref(),
                slot,
                sn,
                span_start: time,
                span_end: end,
                start_ns,
                fragments_missing,
                sample_size,
                repairs,
                submessages,
                src_ip: p.src_ip.as_deref(),
                src_mac: p.src_mac,
                announced_ips: p.announced_ips.as_deref(),
            });
            true
        }
        Some("DATA_FRAG") => {
            join.add_frag(&FragSpan {
                host,
                writer: p.writer.as_deref().unwrap_or(""),
                topic: p.topic.as_deref(),
                slot: p.slot.as_deref().unwrap_or(""),
                sn: p.sn.unwrap_or(0),
                start: time,
                end,
                fragment_starting_num: p.fragment_starting_num.unwrap_or(0),
                frags_in_submessage: p.frags_in_submessage.unwrap_or(0),
                fragment_size: p.fragment_size.unwrap_or(0),
                sample_size: p.sample_size.unwrap_or(0),
            });
            true
        }
        _ => false,
    }
}
