use super::*;
use crate::offset::OffsetConfig;

const MS: i64 = 1_000_000;

fn ip(last: u8) -> IpAddr {
    IpAddr::from([10, 0, 0, last])
}

/// Two hosts: participant 1 on capture 0 (address .1), participant 2 on capture 1 (.2);
/// capture 1's clock reads `theta` ahead of capture 0's.
fn rule(theta: i64, ppb: i64, second_host_talks: bool) -> Hosts {
    observed(theta, ppb, second_host_talks).decide()
}

fn observed(theta: i64, ppb: i64, second_host_talks: bool) -> HostRule {
    let mut r = HostRule::new(HostRuleConfig::new(2));
    let y = |t: i64| t + theta + (i128::from(t) * i128::from(ppb) / 1_000_000_000) as i64;
    for i in 0..100i64 {
        let t = i * 20 * MS;
        r.observe(&Seen {
            participant: [1; 12],
            realm: 0,
            builtin: false,
            sightings: &[
                Sighting {
                    capture: 0,
                    t_first: t,
                    src: Some(ip(1)),
                    src_mac: None,
                },
                Sighting {
                    capture: 1,
                    t_first: y(t + 80_000 + (i % 5) * 1_000_000),
                    src: Some(ip(1)),
                    src_mac: None,
                },
            ],
        });
        if second_host_talks && i % 3 == 0 {
            let t = t + 5 * MS;
            r.observe(&Seen {
                participant: [2; 12],
                realm: 0,
                builtin: true,
                sightings: &[
                    Sighting {
                        capture: 1,
                        t_first: y(t),
                        src: Some(ip(2)),
                        src_mac: None,
                    },
                    Sighting {
                        capture: 0,
                        t_first: t + 60_000,
                        src: Some(ip(2)),
                        src_mac: None,
                    },
                ],
            });
        }
    }
    // A participant only capture 0 saw, from host 2's address.
    r.observe(&Seen {
        participant: [3; 12],
        realm: 0,
        builtin: false,
        sightings: &[Sighting {
            capture: 0,
            t_first: 0,
            src: Some(ip(2)),
            src_mac: None,
        }],
    });
    r
}

#[test]
fn a_rule_from_its_evidence_decides_and_estimates_as_the_rule() {
    let r = observed(12 * MS, 50_000, true);
    let evidence = r.evidence();
    assert!(evidence.cells() > 0);
    let again = HostRule::with_evidence(HostRuleConfig::new(2), evidence.clone());
    assert_eq!(again.evidence(), evidence);
    let (hosts, hosts_again) = (r.decide(), again.decide());
    assert_eq!(hosts.participants, hosts_again.participants);
    assert_eq!(hosts.ips, hosts_again.ips);
    let estimate = |rule: &HostRule, hosts: &Hosts| {
        rule.offsets(hosts, OffsetConfig::default())
            .into_iter()
            .map(|(pair, e)| (pair, e.estimate().ok()))
            .collect::<Vec<_>>()
    };
    let want = estimate(&r, &hosts);
    assert!(want.iter().all(|(_, e)| e.is_some()), "{want:?}");
    assert_eq!(estimate(&again, &hosts_again), want);
    // a smaller table keeps what fits, counted
    let small = HostRule::with_evidence(
        HostRuleConfig {
            max_cells: 3,
            ..HostRuleConfig::new(2)
        },
        evidence,
    );
    assert_eq!(small.evidence().cells(), 3);
    assert!(small.stats().cells_not_remembered > 0);
}

#[test]
fn a_forgotten_capture_leaves_no_evidence() {
    let mut r = observed(12 * MS, 0, true);
    assert!(r.evidence().cells() > 0);
    r.forget_capture(1);
    let hosts = r.decide();
    assert!(r.offsets(&hosts, OffsetConfig::default()).is_empty());
    assert_eq!(r.evidence().cells(), 0);
    // only capture 0's sightings are left: every participant is capture 0's
    for p in [1u8, 2, 3] {
        let home = hosts.home(&[p; 12], None);
        assert_eq!(
            home.map(|h| h.capture),
            Some(0),
            "participant {p}: {home:?}"
        );
    }
    // the index serves another capture from scratch
    let mut fresh = observed(12 * MS, 0, true);
    fresh.forget_capture(0);
    fresh.forget_capture(1);
    assert_eq!(fresh.decide().home(&[1; 12], None), None);
}

#[test]
fn homes_do_not_depend_on_the_clock_offset() {
    for theta in [-1_000 * MS, -12 * MS, 0, 12_345_678, 1_000 * MS] {
        for ppb in [0, 50_000, -50_000] {
            let h = rule(theta, ppb, true);
            let home = |p: u8| h.home(&[p; 12], None);
            let order = |c| {
                Some(Home {
                    capture: c,
                    basis: Basis::Order,
                })
            };
            assert_eq!(home(1), order(0), "θ {theta} drift {ppb}");
            assert_eq!(home(2), order(1), "θ {theta} drift {ppb}");
            // Same source address as participant 2: same host.
            assert_eq!(home(3), order(1), "θ {theta} drift {ppb}");
        }
    }
}

/// Host X runs participant 1 (address .1) and 2 (address .3, a slower path); host Y
/// runs 3 (.2). Every window shows 2 above 1 above 3: where the split lies is only known
/// once something on the wire ties 1 and 2 (`tie`: an announcement, or a shared MAC).
fn two_addresses(tie: impl Fn(&mut HostRule), macs: [Option<[u8; 6]>; 2]) -> Hosts {
    let mut r = HostRule::new(HostRuleConfig::new(2));
    tie(&mut r);
    let theta = 12 * MS;
    let send = |r: &mut HostRule, p: u8, from: usize, t: i64, delay: i64, src: u8| {
        let at = |c: usize, t: i64| if c == 1 { t + theta } else { t };
        let to = 1 - from;
        let mac = match p {
            1 | 2 => macs.get(usize::from(p - 1)).copied().flatten(),
            _ => Some([9; 6]),
        };
        r.observe(&Seen {
            participant: [p; 12],
            realm: 0,
            builtin: false,
            sightings: &[
                Sighting {
                    capture: from,
                    t_first: at(from, t),
                    src: Some(ip(src)),
                    src_mac: mac,
                },
                Sighting {
                    capture: to,
                    t_first: at(to, t + delay),
                    src: Some(ip(src)),
                    src_mac: mac,
                },
            ],
        });
    };
    for i in 0..50i64 {
        let t = i * 20 * MS;
        send(&mut r, 1, 0, t, MS, 1);
        send(&mut r, 2, 0, t + MS, 5 * MS, 3);
        send(&mut r, 3, 1, t + 2 * MS, 100_000, 2);
    }
    r.decide()
}

#[test]
fn announced_addresses_and_a_shared_mac_tie_a_hosts_participants() {
    let basis = |h: &Hosts, p: u8| h.home(&[p; 12], None).map(|h| (h.capture, h.basis));
    let untied = two_addresses(|_| {}, [None, None]);
    assert_eq!(basis(&untied, 1), Some((0, Basis::Clock)));
    let announced = two_addresses(
        |r| r.announce([1; 12], 0, &[ip(1), ip(3), IpAddr::from([172, 17, 0, 1])]),
        [None, None],
    );
    let shared_mac = two_addresses(|_| {}, [Some([2; 6]), Some([2; 6])]);
    for h in [announced, shared_mac] {
        assert_eq!(basis(&h, 1), Some((0, Basis::Order)));
        assert_eq!(basis(&h, 2), Some((0, Basis::Order)));
        assert_eq!(basis(&h, 3), Some((1, Basis::Order)));
    }
    // Different MACs (two NICs, or a router between) tie nothing.
    let two_macs = two_addresses(|_| {}, [Some([2; 6]), Some([3; 6])]);
    assert_eq!(basis(&two_macs, 1), Some((0, Basis::Clock)));
    // An address ties only within its realm (the live join's other set of hosts).
    let other_realm = two_addresses(|r| r.announce([1; 12], 1, &[ip(1), ip(3)]), [None, None]);
    assert_eq!(basis(&other_realm, 1), Some((0, Basis::Clock)));
}

#[test]
fn one_way_traffic_says_it_fell_back_on_the_clock() {
    let h = rule(0, 0, false);
    assert_eq!(
        h.home(&[1; 12], None),
        Some(Home {
            capture: 0,
            basis: Basis::Clock
        })
    );
    // Participant 3 (address .2) was seen by capture 0 only.
    assert_eq!(
        h.home(&[3; 12], None),
        Some(Home {
            capture: 0,
            basis: Basis::OnlyCapture
        })
    );
}
