//! The trace id of a sample and the span ids of its spans: the same on every host and
//! every replay of a capture.

use rtps_dissect::Guid;
use sha2::{Digest, Sha256};

/// Trace id of a sample: the first 16 bytes of SHA-256(writer GUID ‖ SN big-endian).
pub fn trace_id(writer: &Guid, sn: i64) -> [u8; 16] {
    let mut h = Sha256::new();
    h.update(writer.to_bytes());
    h.update(sn.to_be_bytes());
    nonzero_id(&h.finalize())
}

/// The first `N` bytes of a digest as an id, never all-zero (an invalid trace or span id
/// in OTLP; astronomically unlikely).
fn nonzero_id<const N: usize>(digest: &[u8]) -> [u8; N] {
    let mut out = [0u8; N];
    for (o, d) in out.iter_mut().zip(digest) {
        *o = *d;
    }
    if out == [0u8; N] {
        if let Some(last) = out.last_mut() {
            *last = 1;
        }
    }
    out
}

/// Span id of one submessage on one host (see the module docs).
pub fn span_id(
    host: &str,
    interface: &str,
    ts_last_ns: u64,
    frame_last: u64,
    index: u32,
) -> [u8; 8] {
    host_span_id(
        b"ddshark-span",
        host,
        interface,
        &[
            &ts_last_ns.to_be_bytes(),
            &frame_last.to_be_bytes(),
            &index.to_be_bytes(),
        ],
    )
}

/// `SHA-256(kind ‖ host ‖ 0 ‖ interface ‖ 0 ‖ parts…)[0..8]`, never all-zero (invalid in OTLP).
fn host_span_id(kind: &[u8], host: &str, interface: &str, parts: &[&[u8]]) -> [u8; 8] {
    let mut h = Sha256::new();
    h.update(kind);
    h.update(host.as_bytes());
    h.update([0u8]);
    h.update(interface.as_bytes());
    h.update([0u8]);
    for p in parts {
        h.update(p);
    }
    nonzero_id(&h.finalize())
}

/// Span id of one sample on one host: `SHA-256("ddshark-sample" ‖ host.name ‖ 0 ‖
/// capture.interface ‖ 0 ‖ writer GUID ‖ SN ‖ first_ns)[0..8]`.
pub(crate) fn sample_span_id(
    host: &str,
    interface: &str,
    writer: &Guid,
    sn: i64,
    first_ns: u64,
) -> [u8; 8] {
    host_span_id(
        b"ddshark-sample",
        host,
        interface,
        &[
            &writer.to_bytes(),
            &sn.to_be_bytes(),
            &first_ns.to_be_bytes(),
        ],
    )
}

/// Lower-case hex of a GUID: the `writer_id` attribute (32 characters).
pub(crate) fn guid_hex(g: &Guid) -> String {
    g.to_string()
}
