//! ddshark's span schema, defined once: every attribute a span carries (name, type,
//! which spans carry it, whether it can be absent), where the join's raw point puts it in
//! InfluxDB (a bounded tag or a typed field), what the latency join reads,
//! the measurements it writes, and the sample window both sides assume.
//!
//! The encoder (`otel-export`) and the join (`span-join`) use these names; the
//! consumers in other languages are checked against this table by this crate's tests
//! (`tests/consumers.rs`): `docs/span-schema.md`'s tables and the Python checks' `scripts/stack/span_schema.json`
//! (written by `UPDATE_SCHEMA=1 cargo test -p span-schema`). Adding an attribute: a row
//! in [`SPAN_ATTRIBUTES`], the code that fills it (`otel-export/src/schema.rs`), then
//! what the tests name.

/// Attribute keys.
pub mod attr {
    pub const SERVICE_NAME: &str = "service.name";
    pub const SERVICE_VERSION: &str = "service.version";
    pub const HOST_NAME: &str = "host.name";
    /// One ddshark process (a run): a spans' `export_seq` counts within it.
    pub const SERVICE_INSTANCE_ID: &str = "service.instance.id";
    pub const CAPTURE_INTERFACE: &str = "capture.interface";
    pub const TRAFFIC_TYPE: &str = "traffic_type";
    pub const TOPIC_NAME: &str = "topic_name";
    pub const TYPE_NAME: &str = "type_name";
    pub const WRITER_ID: &str = "writer_id";
    pub const SN: &str = "sn";
    pub const EXPORT_SEQ: &str = "export_seq";
    pub const FRAGMENT_STARTING_NUM: &str = "fragment_starting_num";
    pub const FRAGS_IN_SUBMESSAGE: &str = "frags_in_submessage";
    pub const FRAGMENT_SIZE: &str = "fragment_size";
    pub const SAMPLE_SIZE: &str = "sample_size";
    pub const PAYLOAD_SIZE: &str = "payload_size";
    pub const PCP: &str = "pcp";
    pub const VLAN_ID: &str = "vlan_id";
    pub const VENDOR_ID: &str = "vendor_id";
    pub const VENDOR_NAME: &str = "vendor_name";
    pub const SRC: &str = "src";
    pub const DST: &str = "dst";
    pub const DOMAIN_ID: &str = "domain_id";
    pub const SOURCE_TIMESTAMP_NS: &str = "source_timestamp_ns";
    pub const FRAME: &str = "frame";
    pub const FRAME_FIRST: &str = "frame_first";
    pub const IP_FRAGMENTS: &str = "ip_fragments";
    pub const SUBMESSAGE_INDEX: &str = "submessage_index";
    pub const SLOT: &str = "slot";
    pub const START_NS: &str = "start_ns";
    pub const FRAGMENTS: &str = "fragments";
    pub const FRAGMENTS_MISSING: &str = "fragments_missing";
    pub const SUBMESSAGES: &str = "submessages";
    pub const REPAIRS: &str = "repairs";
    /// SAMPLE spans: the source IP address of the first datagram carrying the sample, and
    /// its Ethernet source (a 48-bit integer: 11 B less per span than its text); on the SPDP samples of a participant, the unicast addresses it
    /// announced: the evidence the host rule ties a host's participants by.
    pub const SRC_IP: &str = "src_ip";
    pub const SRC_MAC: &str = "src_mac";
    pub const ANNOUNCED_IPS: &str = "announced_ips";
}

/// What a span's raw point holds besides its attributes.
pub mod influx {
    /// The measurement of the spans.
    pub const SPANS: &str = "spans";
    /// Tag: `DATA`, `DATA_FRAG` or `SAMPLE`.
    pub const SPAN_NAME: &str = "span.name";
    /// Integer field: the span's end (its start is the point's time).
    pub const END_TIME: &str = "end_time_unix_nano";
    /// String fields.
    pub const TRACE_ID: &str = "trace_id";
    pub const SPAN_ID: &str = "span_id";
}

/// The measurements the latency join (`span-join`) writes (`dds_*` to the long bucket,
/// `ddshark_join` to the raw one); `docs/span-schema.md` describes each; the Flux queries, the dashboards and the
/// Python checks name only these (checked by `tests/consumers.rs`).
pub mod measurement {
    /// Per sample and receiving host that completed it: its latency.
    pub const LATENCY: &str = "dds_latency";
    /// Per DATA_FRAG and receiving host: its latency.
    pub const SUBMESSAGE_LATENCY: &str = "dds_submessage_latency";
    /// Per sample and receiving host that never completed it.
    pub const LOST: &str = "dds_lost";
    /// Per sample, on its writer's host: its size.
    pub const SAMPLES: &str = "dds_samples";
    /// Per second and writer: repairs.
    pub const REPAIRS: &str = "dds_repairs";
    /// Per second, sender, receiver and topic: the latencies' count, sum, min and max.
    pub const LATENCY_1S: &str = "dds_latency_1s";
    /// Per push and pair of hosts: the clock offset between them.
    pub const CLOCK_OFFSET: &str = "dds_clock_offset";
    /// Per push: the join's own counters (raw bucket).
    pub const JOIN: &str = "ddshark_join";
    /// Tag of what a join shard writes that another shard writes too (its counters, the
    /// per-second totals, the clock offsets): the shard's number (`ddshark-join --shard`),
    /// absent from a lone join. The queries sum (or take the minimum) over it
    /// (docs/fleet.md).
    pub const SHARD_TAG: &str = "shard";
}

/// The join's measurements that go to the long bucket (everything but its counters).
pub const JOIN_MEASUREMENTS: [&str; 7] = [
    measurement::LATENCY,
    measurement::SUBMESSAGE_LATENCY,
    measurement::LOST,
    measurement::SAMPLES,
    measurement::REPAIRS,
    measurement::LATENCY_1S,
    measurement::CLOCK_OFFSET,
];

/// The fields of the join's counters point ([`measurement::JOIN`], one per push, all
/// integers; docs/span-schema.md says what each counts; `flux-queries/join_health.flux` and
/// the health dashboard show them).
pub const JOIN_COUNTERS: [&str; 29] = [
    "spans",
    "rejected",
    "samples",
    "frags",
    "early",
    "points",
    "points_dropped",
    "forgotten",
    "senderless",
    "forced",
    "decided_at_end",
    "hosts_gone_quiet",
    "quiet_hosts",
    "clock_hosts_forgotten",
    "clock_cells_not_remembered",
    "duplicates",
    "otlp_refused",
    "influx_points_written",
    "influx_retries",
    "influx_points_rejected",
    "influx_points_abandoned",
    "influx_queue_full",
    "influx_queued_points",
    "telemetry_points",
    "telemetry_rejected",
    "pending_samples",
    "pending_frags",
    "pending_senderless",
    "writers",
];

/// An attribute's OTLP value type (and its InfluxDB field type when it is a field).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ValueType {
    /// A string (InfluxDB: string).
    Str,
    /// A 64-bit integer (InfluxDB: long).
    Int,
}

impl ValueType {
    /// The word docs/span-schema.md uses.
    pub fn doc_name(self) -> &'static str {
        match self {
            ValueType::Str => "string",
            ValueType::Int => "int",
        }
    }
}

/// Where an attribute ends up in a span's raw point in InfluxDB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stored {
    /// A tag: a property of the writer or of where it was captured, so the series
    /// count stays bounded by the deployment.
    Tag,
    /// A typed field.
    Field,
}

/// Which spans carry an attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Carriers {
    /// DATA and DATA_FRAG spans (one per submessage).
    Submessage,
    /// SAMPLE spans (one per sample and host).
    Sample,
    Both,
}

/// One span attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpanAttribute {
    pub key: &'static str,
    pub ty: ValueType,
    pub stored: Stored,
    pub carriers: Carriers,
    /// Absent when unknown (no SEDP seen, untagged frame, no INFO_TS, …).
    pub optional: bool,
    /// Left out of DATA/DATA_FRAG spans by `--otlp-lean` (detail nothing reads).
    pub lean_drops: bool,
}

impl SpanAttribute {
    pub fn on_submessage_spans(&self) -> bool {
        matches!(self.carriers, Carriers::Submessage | Carriers::Both)
    }

    pub fn on_sample_spans(&self) -> bool {
        matches!(self.carriers, Carriers::Sample | Carriers::Both)
    }
}

const fn a(
    key: &'static str,
    ty: ValueType,
    stored: Stored,
    carriers: Carriers,
    optional: bool,
    lean_drops: bool,
) -> SpanAttribute {
    SpanAttribute {
        key,
        ty,
        stored,
        carriers,
        optional,
        lean_drops,
    }
}

use Carriers::{Both, Sample, Submessage};
use Stored::{Field, Tag};
use ValueType::{Int, Str};

/// Every attribute a span may carry itself (not the resource's), in the docs' order.
pub const SPAN_ATTRIBUTES: [SpanAttribute; 33] = [
    a(attr::TRAFFIC_TYPE, Str, Tag, Both, false, false),
    a(attr::TOPIC_NAME, Str, Tag, Both, true, false),
    a(attr::TYPE_NAME, Str, Tag, Both, true, false),
    a(attr::WRITER_ID, Str, Tag, Both, false, false),
    a(attr::SN, Int, Field, Both, false, false),
    a(attr::EXPORT_SEQ, Int, Field, Both, false, false),
    a(
        attr::FRAGMENT_STARTING_NUM,
        Int,
        Field,
        Submessage,
        false,
        false,
    ),
    a(
        attr::FRAGS_IN_SUBMESSAGE,
        Int,
        Field,
        Submessage,
        false,
        false,
    ),
    a(attr::FRAGMENT_SIZE, Int, Field, Submessage, true, false),
    a(attr::SAMPLE_SIZE, Int, Field, Both, false, false),
    a(attr::PAYLOAD_SIZE, Int, Field, Submessage, false, false),
    a(attr::PCP, Int, Field, Submessage, true, false),
    a(attr::VLAN_ID, Int, Field, Submessage, true, false),
    a(attr::VENDOR_ID, Str, Tag, Submessage, false, false),
    a(attr::VENDOR_NAME, Str, Tag, Submessage, false, false),
    a(attr::SRC, Str, Field, Submessage, false, true),
    a(attr::DST, Str, Field, Submessage, false, true),
    a(attr::DOMAIN_ID, Int, Tag, Both, true, false),
    a(
        attr::SOURCE_TIMESTAMP_NS,
        Int,
        Field,
        Submessage,
        true,
        true,
    ),
    a(attr::CAPTURE_INTERFACE, Str, Tag, Both, true, false),
    a(attr::FRAME, Int, Field, Submessage, false, true),
    a(attr::FRAME_FIRST, Int, Field, Submessage, false, true),
    a(attr::IP_FRAGMENTS, Int, Field, Submessage, false, true),
    a(attr::SUBMESSAGE_INDEX, Int, Field, Submessage, false, true),
    a(attr::SLOT, Int, Tag, Both, false, false),
    a(attr::START_NS, Int, Field, Sample, false, false),
    a(attr::FRAGMENTS, Int, Field, Sample, false, false),
    a(attr::FRAGMENTS_MISSING, Int, Field, Sample, false, false),
    a(attr::SUBMESSAGES, Int, Field, Sample, false, false),
    a(attr::REPAIRS, Int, Field, Sample, false, false),
    a(attr::SRC_IP, Str, Field, Sample, true, false),
    a(attr::SRC_MAC, Int, Field, Sample, true, false),
    a(attr::ANNOUNCED_IPS, Str, Field, Sample, true, false),
];

/// Resource attributes ddshark sets (host- or run-wide; tags in InfluxDB).
pub const RESOURCE_ATTRIBUTES: [&str; 3] = [
    attr::SERVICE_NAME,
    attr::HOST_NAME,
    attr::SERVICE_INSTANCE_ID,
];

/// The OpenTelemetry SDK's own resource attributes: left out of the points.
pub const SDK_RESOURCE_ATTRIBUTES: [&str; 3] = [
    "telemetry.sdk.language",
    "telemetry.sdk.name",
    "telemetry.sdk.version",
];

/// Is `key` an attribute spans carry themselves? (A resource attribute with such a key
/// is refused: an InfluxDB dimension present twice makes the exporter drop the batch.)
pub fn is_span_attribute(key: &str) -> bool {
    SPAN_ATTRIBUTES.iter().any(|a| a.key == key)
}

/// The span tags the latency join reads.
pub const JOIN_TAGS: [&str; 5] = [
    attr::HOST_NAME,
    influx::SPAN_NAME,
    attr::WRITER_ID,
    attr::TOPIC_NAME,
    attr::SLOT,
];

/// The span fields the latency join reads.
pub const JOIN_FIELDS: [&str; 13] = [
    influx::END_TIME,
    attr::SN,
    attr::START_NS,
    attr::FRAGMENTS_MISSING,
    attr::SAMPLE_SIZE,
    attr::REPAIRS,
    attr::SUBMESSAGES,
    attr::FRAGMENT_STARTING_NUM,
    attr::FRAGS_IN_SUBMESSAGE,
    attr::FRAGMENT_SIZE,
    attr::SRC_IP,
    attr::SRC_MAC,
    attr::ANNOUNCED_IPS,
];

/// The spans the latency join reads (DATA spans add nothing: every DATA belongs to a
/// sample, whose SAMPLE span has it).
pub const JOIN_SPAN_NAMES: [&str; 2] = ["SAMPLE", "DATA_FRAG"];

/// A sample's SAMPLE span leaves once nothing of it was seen for this long (capture
/// time): `ddshark --otlp-sample-window`, `ddshark latency --window` and the join's
/// `--sample-window` default to it.
pub const SAMPLE_WINDOW_NS: i64 = 10_000_000_000;

/// The tags of measurement `spans` in InfluxDB: the resource's, the tag-stored
/// attributes and the span name.
pub fn influx_span_tags() -> Vec<&'static str> {
    let mut v: Vec<&str> = RESOURCE_ATTRIBUTES.to_vec();
    v.extend(
        SPAN_ATTRIBUTES
            .iter()
            .filter(|a| a.stored == Stored::Tag)
            .map(|a| a.key),
    );
    v.push(influx::SPAN_NAME);
    v
}

/// The typed fields of measurement `spans`: the field-stored attributes and the span's
/// own fields ([`influx`]).
pub fn influx_span_fields() -> Vec<(&'static str, ValueType)> {
    let mut v: Vec<(&str, ValueType)> = SPAN_ATTRIBUTES
        .iter()
        .filter(|a| a.stored == Stored::Field)
        .map(|a| (a.key, a.ty))
        .collect();
    v.extend([
        (influx::END_TIME, Int),
        (influx::TRACE_ID, Str),
        (influx::SPAN_ID, Str),
    ]);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_unique() {
        let mut keys: Vec<&str> = SPAN_ATTRIBUTES.iter().map(|a| a.key).collect();
        keys.extend(RESOURCE_ATTRIBUTES);
        let n = keys.len();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), n);
    }

    #[test]
    fn the_join_reads_only_what_spans_carry() {
        let tags = influx_span_tags();
        for t in JOIN_TAGS {
            assert!(tags.contains(&t), "{t}");
        }
        let fields = influx_span_fields();
        for f in JOIN_FIELDS {
            assert!(fields.iter().any(|(k, _)| *k == f), "{f}");
        }
    }

    #[test]
    fn only_submessage_detail_is_lean() {
        for a in SPAN_ATTRIBUTES.iter().filter(|a| a.lean_drops) {
            assert_eq!(a.carriers, Carriers::Submessage, "{}", a.key);
            assert_eq!(a.stored, Stored::Field, "{}", a.key);
        }
    }
}
