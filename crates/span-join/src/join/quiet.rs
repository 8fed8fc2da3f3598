//! Which hosts a sample waits for: only those in its first copy's host's group (hosts that
//! exchanged traffic: tied by writers both saw, as a domain's hosts are by their SPDP
//! samples), and of those not the quiet ones. One robot's capture says nothing of another's
//! samples, so a fleet's robots do not wait for each other; a host switched off or out of
//! range is quiet, not late, once the fleet's capture time has run on without it.

use super::*;

/// A host whose spans stopped (none in more than `settle_pushes` pushes that brought
/// others') while the fleet's capture time ran this far past its last span, and another host
/// of its group still sends, is quiet: not waited for. (Spans held up for less, as by an
/// outage of one host's export, are waited for: late, not quiet; as long as the stack's
/// backstop in arrival, 30 pushes of 10 s, so an outage shorter than that changes no
/// outcome, docs/faults.md.)
pub const QUIET_NS: i64 = 300 * NS;
/// The same when every host of its group stopped too (a robot switched off or out of range,
/// or its captures ended): what its samples wait for can come from none of them.
pub const QUIET_GROUP_NS: i64 = 10 * NS;

impl SpanJoin {
    /// At each push: the hosts' groups from the writers they saw, then which hosts are quiet
    /// (those that became quiet counted `hosts_gone_quiet`).
    pub(super) fn mark_quiet(&mut self) {
        self.groups = host_groups(&self.writers);
        let silent =
            |c: &Capture| self.flows.saturating_sub(c.flows_seen) > self.settings.settle_pushes;
        // group → whether a host of it still sends
        let mut sending: HashMap<usize, bool> = HashMap::new();
        for (host, c) in &self.captures {
            if let Some(&group) = self.groups.get(host) {
                *sending.entry(group).or_default() |= !silent(c);
            }
        }
        let mut quiet = HashSet::new();
        for (host, c) in &self.captures {
            if !silent(c) {
                continue;
            }
            let group_sends = self
                .groups
                .get(host)
                .and_then(|group| sending.get(group))
                .copied()
                .unwrap_or(false);
            let limit = if group_sends {
                QUIET_NS
            } else {
                QUIET_GROUP_NS
            };
            if self.fleet_time.saturating_sub(c.fleet_seen) > limit {
                quiet.insert(host.clone());
            }
        }
        let gone_quiet = quiet.difference(&self.quiet).count() as u64;
        self.counters.hosts_gone_quiet = self.counters.hosts_gone_quiet.saturating_add(gone_quiet);
        self.quiet = quiet;
    }

    /// Whether `a` and `b` exchanged traffic (one group), so `b`'s capture can hold copies of
    /// what `a` saw first.
    pub(super) fn same_group(&self, a: &Str, b: &Str) -> bool {
        a == b
            || matches!(
                (self.groups.get(a), self.groups.get(b)),
                (Some(x), Some(y)) if x == y
            )
    }

    /// Hosts quiet now.
    pub fn quiet_hosts(&self) -> usize {
        self.quiet.len()
    }
}

/// Hosts tied by the writers both saw, transitively: host → its group's number (union-find
/// over the writers' hosts, linear in what the writers map holds).
fn host_groups(writers: &HashMap<Str, Writer>) -> HashMap<Str, usize> {
    let mut index: HashMap<Str, usize> = HashMap::new();
    let mut parent: Vec<usize> = Vec::new();
    fn root(parent: &mut [usize], mut at: usize) -> usize {
        while let Some(&up) = parent.get(at) {
            if up == at {
                break;
            }
            // (path halving: later look-ups are short)
            let grand = parent.get(up).copied().unwrap_or(up);
            if let Some(p) = parent.get_mut(at) {
                *p = grand;
            }
            at = grand;
        }
        at
    }
    for w in writers.values() {
        let mut first: Option<usize> = None;
        for host in w.hosts.keys() {
            let at = *index.entry(host.clone()).or_insert_with(|| {
                parent.push(parent.len());
                parent.len().saturating_sub(1)
            });
            let Some(first) = first else {
                first = Some(at);
                continue;
            };
            let (a, b) = (root(&mut parent, first), root(&mut parent, at));
            if let Some(p) = parent.get_mut(b) {
                *p = a;
            }
        }
    }
    index
        .into_iter()
        .map(|(host, at)| (host, root(&mut parent, at)))
        .collect()
}
