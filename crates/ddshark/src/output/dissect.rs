//! One readable, tcpdump-like line per submessage.

use std::fmt::Write;

use crate::record::SubmessageRecord;
use crate::units::timestamp;

pub(crate) fn submessage_line(r: &SubmessageRecord) -> String {
    let mut s = String::with_capacity(160);
    let _ = write!(
        s,
        "{} {} > {} {}",
        timestamp(r.ts_last_ns),
        r.src,
        r.dst,
        r.kind
    );
    if r.kind == "UNKNOWN" {
        let _ = write!(s, "(0x{:02x})", r.submessage_id);
    }
    if let Some(w) = &r.writer_guid {
        let _ = write!(s, " writer={w}");
    }
    if let Some(sn) = r.sn {
        let label = if r.batch.is_some() { "batch_sn" } else { "sn" };
        let _ = write!(s, " {label}={sn}");
    }
    if let Some(sn) = r.session_sn {
        let _ = write!(s, " session_sn={sn}");
    }
    if let (Some(a), Some(b)) = (r.first_sn, r.last_sn) {
        let _ = write!(s, " sn={a}..{b}");
    } else if let Some(a) = r.first_sn {
        let _ = write!(s, " gap_start={a}");
    }
    if let Some(req) = &r.requested_sns {
        if req.is_empty() {
            let _ = write!(s, " ack<{}", r.bitmap_base.unwrap_or(0));
        } else {
            let _ = write!(s, " nack={req:?}");
        }
    }
    if let Some(batch) = &r.batch {
        let _ = write!(s, " samples={}", batch.len());
    }
    if let Some(f) = r.frag_start {
        let n = r.frags_in_submessage.unwrap_or(0);
        let _ = write!(s, " frag={f}+{n}");
    }
    if let Some(sz) = r.sample_size {
        let _ = write!(s, " sample={sz}B");
    }
    if let Some(p) = r.payload_size {
        let _ = write!(s, " payload={p}B");
    }
    if let Some(f) = r.tcp_framing {
        let _ = write!(s, " tcp={f}");
        if let Some(p) = r.tcp_logical_port {
            let _ = write!(s, " logical_port={p}");
        }
    }
    if r.ip_fragments > 1 && r.tcp_framing.is_some() {
        let _ = write!(
            s,
            " segments={} first={}",
            r.ip_fragments,
            timestamp(r.ts_first_ns)
        );
    } else if r.ip_fragments > 1 {
        let _ = write!(
            s,
            " ipfrags={} first={}",
            r.ip_fragments,
            timestamp(r.ts_first_ns)
        );
    }
    if let Some(p) = r.pcp {
        let _ = write!(s, " pcp={p}");
    }
    if let Some(t) = &r.topic {
        let _ = write!(s, " topic={t}");
    }
    if let Some(st) = r.status_info {
        let _ = write!(s, " status=0x{st:x}");
    }
    if let Some(e) = &r.error {
        let _ = write!(s, " ERROR: {e}");
    }
    s.push('\n');
    s
}
