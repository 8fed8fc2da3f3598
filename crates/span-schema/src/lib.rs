//! ddshark's span schema, defined once: every attribute a span carries (name, type,
//! which spans carry it, whether it can be absent), where the latency join's lean raw
//! points put it ([`Raw`]: a tag or field of the span points, or a fact of the writer's
//! series), what the latency join reads,
//! the measurements it writes, and the sample window both sides assume.
//!
//! The encoder (`otel-export`) and the join (`span-join`) use these names; the
//! consumers in other languages are checked against this table by this crate's tests
//! (`tests/consumers.rs`): `docs/span-schema.md`'s tables and the Python checks' `scripts/stack/span_schema.json`
//! (written by `UPDATE_SCHEMA=1 cargo test -p span-schema`). Adding an attribute: a row
//! in [`SPAN_ATTRIBUTES`], the code that fills it (`otel-export/src/schema.rs`), then
//! what the tests name.

/// Attribute keys.
mod raw;
pub use raw::*;

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

/// What the raw bucket holds of every span besides its attributes.
pub mod influx {
    /// The measurement of the spans.
    pub const SPANS: &str = "spans";
    /// Tag: `DATA`, `DATA_FRAG` or `SAMPLE`.
    pub const SPAN_NAME: &str = "span.name";
    /// Integer field: the span's end (its start is the point's time).
    pub const END_TIME: &str = "end_time_unix_nano";
    /// String fields the raw points no longer carry (the trace id is SHA-256 of
    /// writer_id ‖ sn, docs/span-schema.md).
    pub const TRACE_ID: &str = "trace_id";
    pub const SPAN_ID: &str = "span_id";
    /// The writer series' JSON string field of the resource attributes the schema does not
    /// name (`--otlp-resource K=V`).
    pub const ATTRIBUTES: &str = "attributes";
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
    /// Per writer, host and ddshark run, when first seen and when its facts change: what
    /// follows the writer (raw bucket, [`super::raw_writer_tags`]).
    pub const WRITERS: &str = "dds_writers";
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
pub const JOIN_COUNTERS: [&str; 32] = [
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
    "joined_remembered",
    "joined_expired",
    "joined_evicted",
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

/// Whether an attribute is a bounded tag or a typed field (of the spans' encoding; the
/// join's raw points follow [`Raw`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stored {
    /// A tag: a property of the writer or of where it was captured, so the series
    /// count stays bounded by the deployment.
    Tag,
    /// A typed field.
    Field,
}

/// Which kinds of span point a raw field is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kinds {
    pub sample: bool,
    pub data: bool,
    pub data_frag: bool,
}

impl Kinds {
    pub const ALL: Kinds = Kinds {
        sample: true,
        data: true,
        data_frag: true,
    };
    pub const SAMPLE: Kinds = Kinds {
        sample: true,
        data: false,
        data_frag: false,
    };
    pub const DATA_FRAG: Kinds = Kinds {
        sample: false,
        data: false,
        data_frag: true,
    };
    pub const SAMPLE_AND_FRAG: Kinds = Kinds {
        sample: true,
        data: false,
        data_frag: true,
    };
    pub const SUBMESSAGES: Kinds = Kinds {
        sample: false,
        data: true,
        data_frag: true,
    };

    pub fn has(self, kind: SpanKind) -> bool {
        match kind {
            SpanKind::Sample => self.sample,
            SpanKind::Data => self.data,
            SpanKind::DataFrag => self.data_frag,
        }
    }
}

/// The spans ddshark exports, as the raw bucket's tag `span.name` names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpanKind {
    Sample,
    Data,
    DataFrag,
}

impl SpanKind {
    pub const ALL: [SpanKind; 3] = [SpanKind::Sample, SpanKind::Data, SpanKind::DataFrag];

    /// The span's name (and its points' `span.name`).
    pub fn name(self) -> &'static str {
        match self {
            SpanKind::Sample => "SAMPLE",
            SpanKind::Data => "DATA",
            SpanKind::DataFrag => "DATA_FRAG",
        }
    }
}

/// Where the latency join stores an attribute in the raw bucket (docs/span-schema.md, "In
/// InfluxDB: lean points"): on the span points (`spans`: one per SAMPLE, DATA and DATA_FRAG
/// span) only what queries select by or compute with, everything that follows the writer
/// once per writer and host in its own series ([`measurement::WRITERS`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Raw {
    /// A tag of the span points and of the writer series: what ad-hoc queries select by.
    Tag,
    /// A tag of the span points only (it differs between the spans of one writer; absent
    /// from the points whose span does not carry it).
    SpanTag,
    /// A field of the span points of these kinds.
    Field(Kinds),
    /// A tag of the writer series (a fact of the writer or of where it was captured).
    WriterTag,
    /// A field of the writer series (the latest value its spans gave).
    WriterField,
    /// Not stored: per-datagram detail no query reads, or what the other values give.
    Dropped,
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
    /// Where the join stores it in the raw bucket.
    pub raw: Raw,
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
    raw: Raw,
) -> SpanAttribute {
    SpanAttribute {
        key,
        ty,
        stored,
        carriers,
        optional,
        lean_drops,
        raw,
    }
}

use Carriers::{Both, Sample, Submessage};
use Raw::{Dropped, SpanTag, WriterField, WriterTag};
use Stored::{Field, Tag};
use ValueType::{Int, Str};

/// Field of every kind of span point.
const ALL: Raw = Raw::Field(Kinds::ALL);
const FRAG: Raw = Raw::Field(Kinds::DATA_FRAG);
const SAMPLE: Raw = Raw::Field(Kinds::SAMPLE);

/// Every attribute a span may carry itself (not the resource's), in the docs' order.
pub const SPAN_ATTRIBUTES: [SpanAttribute; 33] = [
    a(attr::TRAFFIC_TYPE, Str, Tag, Both, false, false, WriterTag),
    a(attr::TOPIC_NAME, Str, Tag, Both, true, false, Raw::Tag),
    a(attr::TYPE_NAME, Str, Tag, Both, true, false, WriterTag),
    a(attr::WRITER_ID, Str, Tag, Both, false, false, Raw::Tag),
    a(attr::SN, Int, Field, Both, false, false, ALL),
    a(attr::EXPORT_SEQ, Int, Field, Both, false, false, ALL),
    a(
        attr::FRAGMENT_STARTING_NUM,
        Int,
        Field,
        Submessage,
        false,
        false,
        FRAG,
    ),
    a(
        attr::FRAGS_IN_SUBMESSAGE,
        Int,
        Field,
        Submessage,
        false,
        false,
        FRAG,
    ),
    a(
        attr::FRAGMENT_SIZE,
        Int,
        Field,
        Submessage,
        true,
        false,
        FRAG,
    ),
    a(
        attr::SAMPLE_SIZE,
        Int,
        Field,
        Both,
        false,
        false,
        Raw::Field(Kinds::SAMPLE_AND_FRAG),
    ),
    a(
        attr::PAYLOAD_SIZE,
        Int,
        Field,
        Submessage,
        false,
        false,
        Raw::Field(Kinds::SUBMESSAGES),
    ),
    // (a frame's, not the writer's: one writer may send on two VLANs with two priorities)
    a(attr::PCP, Int, Field, Both, true, false, SpanTag),
    a(attr::VLAN_ID, Int, Field, Both, true, false, SpanTag),
    a(attr::VENDOR_ID, Str, Tag, Both, false, false, WriterTag),
    a(attr::VENDOR_NAME, Str, Tag, Both, false, false, WriterTag),
    a(attr::SRC, Str, Field, Submessage, false, true, Dropped),
    a(attr::DST, Str, Field, Submessage, false, true, Dropped),
    a(attr::DOMAIN_ID, Int, Tag, Both, true, false, WriterTag),
    a(
        attr::SOURCE_TIMESTAMP_NS,
        Int,
        Field,
        Submessage,
        true,
        true,
        Dropped,
    ),
    a(
        attr::CAPTURE_INTERFACE,
        Str,
        Tag,
        Both,
        true,
        false,
        WriterTag,
    ),
    a(attr::FRAME, Int, Field, Submessage, false, true, Dropped),
    a(
        attr::FRAME_FIRST,
        Int,
        Field,
        Submessage,
        false,
        true,
        Dropped,
    ),
    a(
        attr::IP_FRAGMENTS,
        Int,
        Field,
        Submessage,
        false,
        true,
        Dropped,
    ),
    a(
        attr::SUBMESSAGE_INDEX,
        Int,
        Field,
        Submessage,
        false,
        true,
        Dropped,
    ),
    a(attr::SLOT, Int, Tag, Both, false, false, SpanTag),
    a(attr::START_NS, Int, Field, Sample, false, false, SAMPLE),
    a(attr::FRAGMENTS, Int, Field, Sample, false, false, Dropped),
    a(
        attr::FRAGMENTS_MISSING,
        Int,
        Field,
        Sample,
        false,
        false,
        SAMPLE,
    ),
    a(attr::SUBMESSAGES, Int, Field, Sample, false, false, SAMPLE),
    a(attr::REPAIRS, Int, Field, Sample, false, false, SAMPLE),
    a(attr::SRC_IP, Str, Field, Sample, true, false, WriterField),
    a(attr::SRC_MAC, Int, Field, Sample, true, false, WriterField),
    a(
        attr::ANNOUNCED_IPS,
        Str,
        Field,
        Sample,
        true,
        false,
        WriterField,
    ),
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
        let carried = |k: &str| {
            is_span_attribute(k)
                || RESOURCE_ATTRIBUTES.contains(&k)
                || k == influx::SPAN_NAME
                || k == influx::END_TIME
        };
        for k in JOIN_TAGS.iter().chain(JOIN_FIELDS.iter()) {
            assert!(carried(k), "{k}");
        }
    }

    #[test]
    fn raw_points_are_lean() {
        for kind in SpanKind::ALL {
            let n = raw_span_fields(kind).len();
            assert!(n <= MAX_RAW_FIELDS, "{}: {n} fields", kind.name());
        }
        assert!(raw_writer_fields().len() <= MAX_RAW_FIELDS);
        // one point per span, 6 tags, as InfluxDB's floor was measured; 2 more (PCP, VLAN)
        // only on the DATA/DATA_FRAG of frames with an 802.1Q tag
        assert_eq!(raw_span_tags().len(), 8, "{:?}", raw_span_tags());
        // the writer series is named by the span points' tags it shares
        for t in [attr::HOST_NAME, attr::SERVICE_INSTANCE_ID, attr::WRITER_ID] {
            assert!(raw_writer_tags().contains(&t) && raw_span_tags().contains(&t));
        }
    }

    #[test]
    fn the_join_reads_from_the_raw_points_what_it_joins_on() {
        // (the Flux task and the ad-hoc queries read these from `spans`)
        let tags = raw_span_tags();
        for t in JOIN_TAGS {
            assert!(tags.contains(&t), "{t}");
        }
        for f in [
            attr::SN,
            attr::START_NS,
            attr::FRAGMENTS_MISSING,
            attr::REPAIRS,
        ] {
            assert!(raw_span_fields(SpanKind::Sample)
                .iter()
                .any(|(k, _)| *k == f));
        }
        for f in [
            attr::FRAGMENT_STARTING_NUM,
            attr::FRAGS_IN_SUBMESSAGE,
            attr::FRAGMENT_SIZE,
        ] {
            assert!(raw_span_fields(SpanKind::DataFrag)
                .iter()
                .any(|(k, _)| *k == f));
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
