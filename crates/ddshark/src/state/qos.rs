//! Requested-versus-offered QoS checks between a topic's writers and readers
//! (DDS 1.4 §2.2.3). Partitions are not a mismatch: they only decide matching.

use rtps_dissect::discovery::EndpointQos;
use rtps_dissect::discovery::{Durability, Liveliness, Ownership, Reliability};

/// One incompatible policy between a writer and a reader.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Mismatch {
    pub(crate) policy: &'static str,
    pub(crate) offered: String,
    pub(crate) requested: String,
}

fn dur_name(d: Option<i64>) -> String {
    d.map_or_else(|| "infinite".to_string(), |ns| format!("{ns}ns"))
}

/// Every incompatibility of a writer's offered QoS with a reader's requested QoS.
/// Absent policies take the spec defaults (writer reliable, reader best effort,
/// volatile, shared, infinite deadline, automatic liveliness with infinite lease).
pub(crate) fn mismatches(writer: &EndpointQos, reader: &EndpointQos) -> Vec<Mismatch> {
    let mut out = Vec::new();
    let wr = writer.reliability.unwrap_or(Reliability::Reliable);
    let rr = reader.reliability.unwrap_or(Reliability::BestEffort);
    if wr == Reliability::BestEffort && rr == Reliability::Reliable {
        out.push(Mismatch {
            policy: "reliability",
            offered: wr.name().into(),
            requested: rr.name().into(),
        });
    }
    let wd = writer.durability.unwrap_or(Durability::Volatile);
    let rd = reader.durability.unwrap_or(Durability::Volatile);
    if wd.rank() < rd.rank() {
        out.push(Mismatch {
            policy: "durability",
            offered: wd.name().into(),
            requested: rd.name().into(),
        });
    }
    let wo = writer.ownership.unwrap_or(Ownership::Shared);
    let ro = reader.ownership.unwrap_or(Ownership::Shared);
    if wo != ro {
        out.push(Mismatch {
            policy: "ownership",
            offered: wo.name().into(),
            requested: ro.name().into(),
        });
    }
    // Deadline: offered period must not exceed the requested one (None = infinite).
    let wdl = writer.deadline_ns.unwrap_or(None);
    let rdl = reader.deadline_ns.unwrap_or(None);
    let deadline_bad = match (wdl, rdl) {
        (None, Some(_)) => true,
        (Some(w), Some(r)) => w > r,
        _ => false,
    };
    if deadline_bad {
        out.push(Mismatch {
            policy: "deadline",
            offered: dur_name(wdl),
            requested: dur_name(rdl),
        });
    }
    let wl = writer.liveliness.unwrap_or(Liveliness::Automatic);
    let rl = reader.liveliness.unwrap_or(Liveliness::Automatic);
    let wll = writer.liveliness_lease_ns.unwrap_or(None);
    let rll = reader.liveliness_lease_ns.unwrap_or(None);
    let lease_bad = match (wll, rll) {
        (None, Some(_)) => true,
        (Some(w), Some(r)) => w > r,
        _ => false,
    };
    if wl.rank() < rl.rank() || lease_bad {
        out.push(Mismatch {
            policy: "liveliness",
            offered: format!("{} {}", wl.name(), dur_name(wll)),
            requested: format!("{} {}", rl.name(), dur_name(rll)),
        });
    }
    out
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
mod tests {
    use super::*;

    #[test]
    fn best_effort_writer_and_reliable_reader_mismatch() {
        let w = EndpointQos {
            reliability: Some(Reliability::BestEffort),
            partitions: vec!["a".into()],
            ..EndpointQos::default()
        };
        let r = EndpointQos {
            reliability: Some(Reliability::Reliable),
            durability: Some(Durability::TransientLocal),
            partitions: vec!["b".into()],
            ..EndpointQos::default()
        };
        let m = mismatches(&w, &r);
        let policies: Vec<_> = m.iter().map(|m| m.policy).collect();
        assert_eq!(policies, vec!["reliability", "durability"]);
        assert!(mismatches(&r, &w).is_empty());
    }
}
