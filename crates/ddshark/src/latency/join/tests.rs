use std::net::SocketAddr;

use super::*;
use rtps_dissect::{EntityId, Guid, GuidPrefix};

const S: i64 = 1_000_000_000;

fn obs(writer: u8, ts: i64) -> Obs {
    let addr: SocketAddr = "10.0.0.1:7400"
        .parse()
        .unwrap_or(SocketAddr::from(([0, 0, 0, 0], 0)));
    Obs {
        key: Key {
            writer: Guid {
                prefix: GuidPrefix([writer; 12]),
                entity: EntityId([0, 0, 1, 2]),
            },
            sn: 1,
            frag_start: 0,
        },
        unit_start: 1,
        unit_count: 1,
        units_total: 1,
        sample_size: 100,
        fragmented: false,
        ts_first: ts,
        ts_last: ts,
        frame_first: 0,
        frame_last: 0,
        src: addr,
        dst: addr,
        src_mac: None,
        pcp: None,
        vlan_id: None,
        vendor: rtps_dissect::VendorId([0, 0]),
        topic: None,
        type_name: None,
        index: 0,
        slot: 0,
    }
}

/// latency_core's lost rule: a sample the other capture missed is lost there only if that
/// capture saw the same writer within the receiver window (not merely its destination).
#[test]
fn a_sample_is_lost_only_at_a_receiver_of_its_writer() {
    let mut join = Join::new(JoinConfig {
        captures: 2,
        window_ns: S,
        max_pending: 1000,
        max_bytes: 1 << 20,
        lost: LostRule::default(),
    });
    let mut rows = Vec::new();
    join.saw_frame(1, 0);
    join.saw_frame(1, 100 * S);
    let with_sn = |mut o: Obs, sn| {
        o.key.sn = sn;
        o
    };
    join.push(0, obs(1, S), &mut rows);
    join.push(1, obs(1, S + 1_000_000), &mut rows);
    join.push(0, with_sn(obs(1, 5 * S), 2), &mut rows);
    // writer 2, to the same destination, never seen by capture 1
    join.push(0, obs(2, 5 * S), &mut rows);
    join.finish(&mut rows);
    let mut got: Vec<(u8, i64, &str)> = rows
        .iter()
        .map(|r| (r.key.writer.prefix.0[0], r.key.sn, r.status.name()))
        .collect();
    got.sort_unstable();
    assert_eq!(got, vec![(1, 1, "ok"), (1, 2, "lost")]);
    assert_eq!(join.stats().not_expected, 1);
}

/// A copy after more than the window of quiet starts a new sample even while the old
/// one's queue entry still waits behind a younger one (it was a "repair" of the old one).
#[test]
fn a_copy_after_a_quiet_window_is_a_new_sample() {
    let mut join = Join::new(JoinConfig {
        captures: 1,
        window_ns: 10 * S,
        max_pending: 1000,
        max_bytes: 1 << 20,
        lost: LostRule::default(),
    });
    let mut rows = Vec::new();
    join.push(0, obs(1, 0), &mut rows);
    join.push(0, obs(1, 5 * S), &mut rows);
    join.push(0, obs(2, 9 * S), &mut rows);
    // writer 1's entry is re-queued behind writer 2's (stamp 5 s behind 9 s)
    join.advance(10 * S + 1, &mut rows);
    join.push(0, obs(2, 14 * S), &mut rows);
    // 12 s after writer 1's last copy
    join.push(0, obs(1, 17 * S), &mut rows);
    join.finish(&mut rows);
    let mut local = Vec::new();
    join.take_local(&mut local);
    let mut firsts: Vec<(u8, i64, u32)> = local
        .iter()
        .map(|l| (l.key.writer.prefix.0[0], l.t_first, l.submessages))
        .collect();
    firsts.sort_unstable();
    assert_eq!(firsts, vec![(1, 0, 2), (1, 17 * S, 1), (2, 9 * S, 2)]);
}
