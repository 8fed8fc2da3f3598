//! Cross-host latency rules that do not trust the hosts' clocks. Pure: observations in,
//! outcomes out; no I/O, no clock, no panics on input.
//!
//! Two captures taken on two hosts read two clocks. Their difference (the clock offset θ,
//! receiver's clock minus sender's) is added to every A→B latency and subtracted from every
//! B→A one. This crate holds the two rules that make cross-host latency hold anyway:
//!
//! # A writer's host: from the order of events ([`hosts`])
//!
//! Participants are first grouped into hosts by what the wire says: the source addresses of
//! their datagrams (two participants sending from one address share a host), the unicast
//! addresses of their SPDP locators ([`HostRule::announce`]) and the Ethernet source that
//! every capture saw alike (the sender's NIC); addresses tie participants within one
//! [`hosts::Realm`] (the live join's set of hosts that saw a sample). Then, for every pair of captures X
//! and Y and every sample (writer GUID, SN) both saw, let Δ = t_Y − t_X (each on its own
//! clock). A sample sent from X's host has Δ = θ + d, one sent from Y's host Δ = θ − d, with
//! d > 0 the one-way delay. Whatever θ is, within a short vote window every sample sent from
//! X has a larger Δ than every sample sent from Y. So when, in a window, all of host-group G's
//! Δ lie above all of group H's, G is on X's side and H on Y's: one vote. A group's host is
//! the capture its votes name. Adding any offset to a capture (or a slow drift, tens of ppm)
//! changes no vote. Groups of participants that no sample of the other direction can be
//! compared with (traffic in one direction only) fall back to the capture that saw their
//! samples first, which *does* depend on the clocks; that fallback is reported as such
//! ([`hosts::Basis::Clock`]). Participants no two captures saw in common go with their source
//! address's group, else with the only capture that saw them.
//!
//! # The clock offset: NTP's estimate from minimum one-way delays ([`offset`])
//!
//! For a pair of hosts, with min A→B and min B→A the smallest raw one-way delays (receive time
//! on the receiver's clock minus send time on the sender's) over samples seen on both, the
//! offset is θ̂ = (min A→B − min B→A) / 2 and the true offset lies within
//! ±(min A→B + min B→A) / 2 of it. Where in that interval it lies depends on how the path's
//! delay splits between the two directions, which no passive observer can see: an asymmetric
//! path (a slower link one way) moves the estimate by half the asymmetry, always inside the
//! bound. Drift (clocks running at rates tens of ppm apart) is estimated from per-window
//! minima with a robust (Theil–Sen) line; when it explains the data better than a constant,
//! the offset is reported as a line θ̂(t) and the bound is taken after removing the drift.
//! Samples that would make the bound empty (negative delays on every reading) are outliers:
//! a few are dropped and counted, more are an error.
//!
//! # Lost ([`lost`])
//!
//! A sample its writer's host sent that another host never completed is lost there when
//! that host was capturing at the time (from its first frame to its last, less a grace) and
//! saw some sample of the same writer within a receiver window (12 s) of it: it is one of the
//! writer's receivers. Otherwise the sample was not for it and counts nowhere. A host that
//! saw part of it has it incomplete (lost, incomplete), whatever the rest. The decision
//! ([`LostRule::decide`]: a receiver's [`Receipt`] in, an [`Outcome`] with the latency out)
//! and the totals kept of it ([`totals`]) are the ones both joins report.

pub mod hosts;
pub mod lost;
pub mod offset;
pub mod totals;

pub use hosts::{
    Basis, Home, HostRule, HostRuleConfig, HostRuleEvidence, HostRuleStats, Hosts, Participant,
    Seen, Sighting,
};
pub use lost::{LostRule, Outcome, Receipt, Status};
pub use offset::{
    Crossing, Direction, EstimateError, OffsetConfig, OffsetEstimate, OffsetEstimator,
};
pub use totals::{LatencyTotals, OutcomeTotals};
