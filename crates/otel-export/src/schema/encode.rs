//! Span records to the SDK's `SpanData` for one export batch ([`SpanDataBuilder`]).

use std::borrow::Cow;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use opentelemetry::trace::{
    SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState,
};
use opentelemetry::{InstrumentationScope, Key, KeyValue, Value};
use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanLinks};
use rtps_dissect::{Guid, KeyHasher, VendorId};

use super::{attr, guid_hex, SampleTotals, SpanRecord};

/// Turns span records into SDK spans for one export batch. The string attributes
/// that repeat from span to span (writer id, addresses, vendor id) are formatted once
/// per batch and shared (`Arc<str>`): the SDK clones every span's attributes for its
/// retries, and shared strings make those clones reference counts, not copies.
/// How much per-datagram detail DATA/DATA_FRAG spans carry.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SpanDetail {
    /// Every attribute of the schema.
    #[default]
    Full,
    /// Without the attributes no dashboard or query reads (`src`, `dst`,
    /// `source_timestamp_ns`, `frame`, `frame_first`, `ip_fragments`, `submessage_index`):
    /// every attribute costs the collector, Telegraf and InfluxDB per span.
    Lean,
}

#[derive(Debug)]
pub struct SpanDataBuilder {
    scope: InstrumentationScope,
    detail: SpanDetail,
    writers: HashMap<Guid, Value, KeyHasher>,
    addresses: HashMap<SocketAddr, Value, KeyHasher>,
    ips: HashMap<IpAddr, Value, KeyHasher>,
    vendors: HashMap<VendorId, Value, KeyHasher>,
}

/// An Ethernet address as `src_mac` says it: the 48-bit number, `02:42:ac:11:00:02` =
/// 0x0242ac110002.
pub fn mac_number(mac: &[u8; 6]) -> i64 {
    mac.iter().fold(0i64, |n, &b| (n << 8) | i64::from(b))
}

/// A string attribute.
fn s(key: &'static str, v: impl Into<Value>) -> KeyValue {
    KeyValue::new(Key::from_static_str(key), v.into())
}

/// An integer attribute.
fn i(key: &'static str, v: impl Into<i64>) -> KeyValue {
    KeyValue::new(Key::from_static_str(key), v.into())
}

/// A count as an OTLP integer (saturating: OTLP has no unsigned 64-bit type).
fn sat(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// Most distinct strings one builder keeps per kind; a batch has far fewer.
const MAX_CACHED_STRINGS: usize = 4096;

fn shared_string<K: std::hash::Hash + Eq + Copy>(
    cache: &mut HashMap<K, Value, KeyHasher>,
    key: K,
    format: impl FnOnce(K) -> String,
) -> Value {
    if let Some(v) = cache.get(&key) {
        return v.clone();
    }
    let v = Value::String(Arc::<str>::from(format(key)).into());
    if cache.len() >= MAX_CACHED_STRINGS {
        cache.clear();
    }
    cache.insert(key, v.clone());
    v
}

impl SpanDataBuilder {
    pub fn new(scope: InstrumentationScope) -> Self {
        Self::with_detail(scope, SpanDetail::Full)
    }

    pub(crate) fn with_detail(scope: InstrumentationScope, detail: SpanDetail) -> Self {
        Self {
            scope,
            detail,
            writers: HashMap::default(),
            addresses: HashMap::default(),
            ips: HashMap::default(),
            vendors: HashMap::default(),
        }
    }

    /// The span → attribute mapping: every attribute a span carries, in order, as
    /// OpenTelemetry key-values (absent values are left out). The keys, their types and
    /// which spans carry them are `span_schema::SPAN_ATTRIBUTES` (checked by a test below).
    pub fn attributes(&mut self, r: &SpanRecord) -> Vec<KeyValue> {
        let mut a = Vec::with_capacity(span_schema::SPAN_ATTRIBUTES.len());
        self.common_attributes(r, &mut a);
        if let Some(t) = &r.sample {
            return self.sample_attributes(r, t, a);
        }
        a.push(i(attr::FRAGMENT_STARTING_NUM, r.fragment_starting_num));
        a.push(i(attr::FRAGS_IN_SUBMESSAGE, r.frags_in_submessage));
        if let Some(v) = r.fragment_size {
            a.push(i(attr::FRAGMENT_SIZE, v));
        }
        a.push(i(attr::SAMPLE_SIZE, sat(r.sample_size)));
        a.push(i(attr::PAYLOAD_SIZE, sat(r.payload_size)));
        self.datagram_attributes(r, &mut a);
        let full = self.detail == SpanDetail::Full;
        if full {
            let src = shared_string(&mut self.addresses, r.src, |a| a.to_string());
            a.push(s(attr::SRC, src));
            let dst = shared_string(&mut self.addresses, r.dst, |a| a.to_string());
            a.push(s(attr::DST, dst));
        }
        if let Some(v) = r.domain_id {
            a.push(i(attr::DOMAIN_ID, v));
        }
        if let (Some(v), true) = (r.source_timestamp_ns, full) {
            a.push(i(attr::SOURCE_TIMESTAMP_NS, v));
        }
        if let Some(v) = &r.interface {
            a.push(s(attr::CAPTURE_INTERFACE, v.clone()));
        }
        if full {
            a.push(i(attr::FRAME, sat(r.frame)));
            a.push(i(attr::FRAME_FIRST, sat(r.frame_first)));
            a.push(i(attr::IP_FRAGMENTS, r.ip_fragments));
            a.push(i(attr::SUBMESSAGE_INDEX, r.submessage_index));
        }
        a.push(i(attr::SLOT, r.slot));
        a
    }

    /// What the (first) datagram says that every span carries: its 802.1Q PCP and VLAN and
    /// the sender's vendor.
    fn datagram_attributes(&mut self, r: &SpanRecord, a: &mut Vec<KeyValue>) {
        if let Some(v) = r.pcp {
            a.push(i(attr::PCP, v));
        }
        if let Some(v) = r.vlan_id {
            a.push(i(attr::VLAN_ID, v));
        }
        let vendor = shared_string(&mut self.vendors, r.vendor, |v| v.to_string());
        a.push(s(attr::VENDOR_ID, vendor));
        a.push(s(attr::VENDOR_NAME, r.vendor.name()));
    }

    /// What every span carries first: its traffic type, topic, type, writer and SN.
    fn common_attributes(&mut self, r: &SpanRecord, a: &mut Vec<KeyValue>) {
        a.push(s(attr::TRAFFIC_TYPE, r.traffic.name()));
        if let Some(t) = &r.topic {
            a.push(s(attr::TOPIC_NAME, t.clone()));
        }
        if let Some(t) = &r.type_name {
            a.push(s(attr::TYPE_NAME, t.clone()));
        }
        let writer = shared_string(&mut self.writers, r.writer, |g| guid_hex(&g));
        a.push(s(attr::WRITER_ID, writer));
        a.push(i(attr::SN, r.sn));
        a.push(i(attr::EXPORT_SEQ, sat(r.export_seq)));
    }

    /// A `SAMPLE` span's attributes, after its identity: the writer's, the sample's and its
    /// totals, and of its first datagram what a DATA span would say that queries and the
    /// writer series use (PCP, VLAN, vendor: with `--otlp-lean` a sample's first DATA is no
    /// span of its own). No addresses or frames: every attribute costs the collector and
    /// InfluxDB per span.
    fn sample_attributes(
        &mut self,
        r: &SpanRecord,
        t: &SampleTotals,
        mut a: Vec<KeyValue>,
    ) -> Vec<KeyValue> {
        // (the start time again, as a number: a database query joining hosts needs it
        // as one, and converting a timestamp per row is what costs there)
        a.push(i(attr::START_NS, sat(r.start_ns)));
        a.push(i(attr::SAMPLE_SIZE, sat(r.sample_size)));
        a.push(i(attr::FRAGMENTS, t.fragments));
        a.push(i(attr::FRAGMENTS_MISSING, t.fragments_missing));
        a.push(i(attr::SUBMESSAGES, t.submessages));
        a.push(i(attr::REPAIRS, t.repairs));
        self.datagram_attributes(r, &mut a);
        // (the host rule's evidence: what ties a host's participants, docs/latency.md)
        if let Some(ip) = r.src_ip() {
            let ip = shared_string(&mut self.ips, ip, |ip| ip.to_string());
            a.push(s(attr::SRC_IP, ip));
        }
        if let Some(mac) = t.src_mac {
            a.push(i(attr::SRC_MAC, mac_number(&mac)));
        }
        if let Some(v) = &r.announced_ips {
            a.push(s(attr::ANNOUNCED_IPS, v.clone()));
        }
        if let Some(v) = r.domain_id {
            a.push(i(attr::DOMAIN_ID, v));
        }
        if let Some(v) = &r.interface {
            a.push(s(attr::CAPTURE_INTERFACE, v.clone()));
        }
        a.push(i(attr::SLOT, r.slot));
        a
    }

    /// The SDK span a record becomes: explicit ids, capture-time start and end (ns),
    /// kind INTERNAL (a passive observation), no parent.
    pub fn span_data(&mut self, r: &SpanRecord) -> SpanData {
        let at = |ns: u64| UNIX_EPOCH + Duration::from_nanos(ns);
        SpanData {
            span_context: SpanContext::new(
                TraceId::from_bytes(r.trace_id),
                SpanId::from_bytes(r.span_id),
                TraceFlags::SAMPLED,
                false,
                TraceState::NONE,
            ),
            parent_span_id: SpanId::INVALID,
            parent_span_is_remote: false,
            span_kind: SpanKind::Internal,
            name: Cow::Borrowed(r.kind.name()),
            start_time: at(r.start_ns),
            end_time: at(r.end_ns),
            attributes: self.attributes(r),
            dropped_attributes_count: 0,
            events: SpanEvents::default(),
            links: SpanLinks::default(),
            status: Status::Unset,
            instrumentation_scope: self.scope.clone(),
        }
    }
}
