use super::*;

fn cfg() -> SeqConfig {
    SeqConfig {
        window: 16,
        ..SeqConfig::default()
    }
}

#[test]
fn holes_become_lost_unless_gapped_or_filled() {
    let c = cfg();
    let mut t = SeqTracker::default();
    for sn in [1, 2, 5, 6, 9] {
        assert_eq!(
            t.observe(sn, 1, 0, None, &c).0,
            Observed::NewSample { late_fill: false }
        );
    }
    // 3 is filled, 4 is gapped, 7 and 8 are lost.
    assert!(matches!(
        t.observe(3, 1, 0, None, &c).0,
        Observed::NewSample { .. }
    ));
    t.gap_range(4, 4, 0, &c);
    let f = t.finish(&c);
    assert_eq!(f.lost, 2);
    assert_eq!(f.irrelevant, 1);
}

#[test]
fn fan_out_finishing_after_a_heartbeat_moved_past_the_sample_is_still_fan_out() {
    // Fast DDS (NXP capture, rt/odom): a sample goes to four unicast readers and the
    // writer's HEARTBEAT no longer offers it before the last copies are sent.
    let c = cfg();
    let mut t = SeqTracker::default();
    t.observe(1, 10, 0, None, &c);
    t.observe(1, 20, 0, None, &c);
    t.observe(2, 10, 0, None, &c);
    t.heartbeat(2, 2, 0, &c);
    let none = Observed::Repeat {
        retransmitted: false,
        repaired: false,
        fanout: false,
        was_fanout: false,
    };
    assert_eq!(t.observe(1, 30, 0, None, &c).0, none);
    // Back to the first destination: a retransmission, no longer fan-out.
    assert_eq!(
        t.observe(1, 10, 0, None, &c).0,
        Observed::Repeat {
            retransmitted: true,
            repaired: false,
            fanout: false,
            was_fanout: true
        }
    );
    assert_eq!(t.observe(1, 10, 0, None, &c).0, none);
}

#[test]
fn repeats_are_retransmissions_or_fanout() {
    let c = cfg();
    let mut t = SeqTracker::default();
    t.observe(1, 1, 0, None, &c);
    // Another destination, nobody asked: fan-out.
    assert_eq!(
        t.observe(1, 2, 0, None, &c).0,
        Observed::Repeat {
            retransmitted: false,
            repaired: false,
            fanout: true,
            was_fanout: false
        }
    );
    t.observe(2, 1, 0, None, &c);
    t.requested(2);
    assert_eq!(
        t.observe(2, 3, 0, None, &c).0,
        Observed::Repeat {
            retransmitted: true,
            repaired: true,
            fanout: false,
            was_fanout: false
        }
    );
    // Counted once per sample.
    assert_eq!(
        t.observe(2, 3, 0, None, &c).0,
        Observed::Repeat {
            retransmitted: false,
            repaired: false,
            fanout: false,
            was_fanout: false
        }
    );
}

#[test]
fn fragments_complete_or_count_incomplete() {
    let c = cfg();
    let mut t = SeqTracker::default();
    let fi = |start| FragmentRange {
        start,
        count: 1,
        fragment_size: 100,
        sample_size: 250,
    };
    assert!(matches!(
        t.observe(1, 1, 0, Some(fi(1)), &c).0,
        Observed::NewSample { .. }
    ));
    assert_eq!(
        t.observe(1, 1, 0, Some(fi(2)), &c).0,
        Observed::MoreFragments
    );
    assert_eq!(
        t.observe(1, 1, 0, Some(fi(3)), &c).0,
        Observed::MoreFragments
    );
    t.observe(2, 1, 0, Some(fi(1)), &c);
    let f = t.finish(&c);
    assert_eq!(f.incomplete, 1);
    assert_eq!(f.lost, 0);
}

#[test]
fn hostile_jumps_stay_bounded() {
    let c = cfg();
    let mut t = SeqTracker::default();
    t.observe(1, 1, 0, None, &c);
    let (_, f) = t.observe(i64::MAX, 1, 0, None, &c);
    assert_eq!(f.jumps, 1);
    t.gap_range(i64::MIN, i64::MAX, 0, &c);
    t.heartbeat(i64::MIN, i64::MAX, 0, &c);
    assert!(t.slots.len() <= c.window);
    assert_eq!(t.observe(-5, 1, 0, None, &c).0, Observed::Invalid);
}

#[test]
fn late_start_extends_downwards() {
    let c = cfg();
    let mut t = SeqTracker::default();
    t.observe(10, 1, 0, None, &c);
    t.observe(9, 1, 0, None, &c);
    // Below the lowest SN seen nothing is lost; between SNs seen it is.
    t.observe(5, 1, 0, None, &c);
    assert_eq!(t.finish(&c).lost, 3);
}
