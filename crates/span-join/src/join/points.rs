//! A due sample or DATA_FRAG joined: the sender's copy and each receiver's paired, its
//! points written; and the `ddshark_join` point of each push.

use super::*;

impl SpanJoin {
    pub(super) fn topic_of(&self, writer: &str, home: &str) -> Str {
        self.writers
            .get(writer)
            .and_then(|w| w.topics.get(home))
            .cloned()
            .unwrap_or_else(|| Str::from(""))
    }

    /// latency_core's decision for `host`, from what it holds of a sample sent at `t_send`.
    fn decide(
        &self,
        host: &str,
        receipt: Receipt,
        t_send: i64,
        writer_seen: (i64, i64),
    ) -> Option<Outcome> {
        let rule = LostRule {
            receiver_window_ns: self.settings.receiver_window_ns,
            grace_ns: self.settings.lost_grace_ns,
        };
        let capture = self.captures.get(host).map(|c| (c.first_start, c.last_end));
        rule.decide(receipt, t_send, capture, Some(writer_seen))
    }

    pub(super) fn join_sample(&mut self, p: &Pending<SampleRow>, out: &mut LineWriter) -> u64 {
        self.counters.samples = self.counters.samples.saturating_add(1);
        self.remember_joined(
            p.rows
                .iter()
                .map(|r| joined::sample_identity(&p.writer, p.sn, r)),
        );
        let Some(home) = self.home_of(&p.writer, &p.rows) else {
            return 0;
        };
        let mut sent: Vec<&SampleRow> = p.rows.iter().filter(|r| r.host == home).collect();
        sent.sort_by(|a, b| (a.start, &a.slot).cmp(&(b.start, &b.slot)));
        if sent.is_empty() {
            let key = (p.writer.clone(), p.sn);
            if self.senderless.len() < self.settings.max_pending
                && !self.senderless.contains_key(&key)
            {
                // (a sample once it is joined with its sender's span, or given up)
                self.counters.samples = self.counters.samples.saturating_sub(1);
                let mut parked = p.clone();
                parked.first_tick = self.tick;
                self.senderless.insert(key, parked);
            } else {
                self.counters.senderless = self.counters.senderless.saturating_add(1);
            }
            return 0;
        }
        let topic = self.topic_of(&p.writer, &home);
        let receivers: Vec<(Str, (i64, i64))> = self
            .writers
            .get(&p.writer)
            .map(|w| {
                w.hosts
                    .iter()
                    .filter(|(h, _)| **h != home)
                    .map(|(h, seen)| (h.clone(), *seen))
                    .collect()
            })
            .unwrap_or_default();
        let window = self.settings.sample_window_ns;
        let mut points = 0u64;
        for s in sent {
            let t_send = s.start;
            out.point(measurement::SAMPLES)
                .tag("sender", &home)
                .tag("slot", &s.slot)
                .tag("topic_name", &topic)
                .tag("writer_id", &p.writer)
                .int("sn", p.sn)
                .int("sample_size", s.size)
                .end(Some(t_send));
            points = points.saturating_add(1);
            self.count_repairs(&p.writer, &home, &topic, t_send, s.repairs, s.submessages);
            for (host, seen) in &receivers {
                // the next of this host's copies that started no earlier than the
                // sender's, within the sample window (on the sender's clock, when the
                // traffic shows the receiver's reads otherwise)
                let ahead = self.clocks.receiver_ahead(&home, host, t_send);
                let mut got: Option<&SampleRow> = None;
                for r in &p.rows {
                    let start = r.start.saturating_sub(ahead);
                    if r.host == *host
                        && start >= t_send
                        && start.saturating_sub(t_send) < window
                        && got.is_none_or(|g| r.start < g.start)
                    {
                        got = Some(r);
                    }
                }
                let point = |out: &mut LineWriter, name: &str| {
                    out.point(name)
                        .tag("receiver", host)
                        .tag("sender", &home)
                        .tag("slot", &s.slot)
                        .tag("topic_name", &topic)
                        .tag("writer_id", &p.writer);
                };
                let receipt = match got {
                    Some(r) if r.missing == 0 => Receipt::Complete { t_recv: r.end },
                    Some(_) => Receipt::Partial,
                    None => Receipt::Nothing,
                };
                match self.decide(host, receipt, t_send, *seen) {
                    Some(Outcome::Ok { t_recv, latency_ns }) => {
                        self.latency_seconds
                            .entry((
                                home.clone(),
                                host.clone(),
                                topic.clone(),
                                t_send.div_euclid(NS),
                            ))
                            .or_default()
                            .add(self.tick, latency_ns);
                        point(out, measurement::LATENCY);
                        out.int("latency_ns", latency_ns)
                            .int("t_recv_ns", t_recv)
                            .int("sn", p.sn)
                            .end(Some(t_send));
                    }
                    Some(outcome @ (Outcome::Incomplete | Outcome::Lost)) => {
                        let incomplete = i64::from(outcome == Outcome::Incomplete);
                        point(out, measurement::LOST);
                        out.int("sn", p.sn)
                            .int("incomplete", incomplete)
                            .end(Some(t_send));
                    }
                    None => continue,
                }
                points = points.saturating_add(1);
            }
        }
        points
    }

    pub(super) fn join_frag(&mut self, p: &Pending<FragRow>, out: &mut LineWriter) -> u64 {
        self.counters.frags = self.counters.frags.saturating_add(1);
        self.remember_joined(
            p.rows
                .iter()
                .map(|r| joined::frag_identity(&p.writer, p.sn, p.fragment_starting_num, r)),
        );
        // (DATA_FRAG spans come before their sample's SAMPLE span: the sample's vote may
        // not be cast yet; among the hosts that saw the DATA_FRAG, the voted one, else the
        // first)
        let mut first: Option<&FragRow> = None;
        for r in &p.rows {
            if first.is_none_or(|f| r.start < f.start) {
                first = Some(r);
            }
        }
        let Some(first) = first else {
            return 0;
        };
        let home = self
            .best_vote(participant_of(&p.writer), |h| {
                p.rows.iter().any(|r| &r.host == h)
            })
            .unwrap_or_else(|| first.host.clone());
        let mut sender: Option<&FragRow> = None;
        let mut ends: BTreeMap<&Str, i64> = BTreeMap::new();
        for r in &p.rows {
            if r.host == home {
                if sender.is_none_or(|s| (r.start, &r.slot) < (s.start, &s.slot)) {
                    sender = Some(r);
                }
            } else {
                ends.entry(&r.host)
                    .and_modify(|e| *e = (*e).min(r.end))
                    .or_insert(r.end);
            }
        }
        let Some(sender) = sender else {
            self.counters.senderless = self.counters.senderless.saturating_add(1);
            return 0;
        };
        let topic = self.topic_of(&p.writer, &home);
        let mut points = 0u64;
        for (receiver, t_recv) in ends {
            out.point(measurement::SUBMESSAGE_LATENCY)
                .tag("receiver", receiver)
                .tag("sender", &home)
                .tag("slot", &sender.slot)
                .tag("topic_name", &topic)
                .tag("writer_id", &p.writer)
                .int("latency_ns", t_recv.saturating_sub(sender.start))
                .int("t_recv_ns", t_recv)
                .int("sn", p.sn)
                .int("fragment_starting_num", p.fragment_starting_num)
                .end(Some(sender.start));
            points = points.saturating_add(1);
        }
        points
    }

    pub(super) fn finish_push(&mut self, out: &mut LineWriter, points: u64) -> u64 {
        self.counters.points = self.counters.points.saturating_add(points);
        let c = self.counters;
        shard_tag(out.point(measurement::JOIN), self.settings.shard)
            .int("spans", as_i64(c.spans))
            .int("rejected", as_i64(c.rejected))
            .int("samples", as_i64(c.samples))
            .int("frags", as_i64(c.frags))
            .int("early", as_i64(c.early))
            .int("points", as_i64(c.points))
            .int("points_dropped", as_i64(c.points_dropped))
            .int("forgotten", as_i64(c.forgotten))
            .int("senderless", as_i64(c.senderless))
            .int("forced", as_i64(c.forced))
            .int("decided_at_end", as_i64(c.decided_at_end))
            .int("hosts_gone_quiet", as_i64(c.hosts_gone_quiet))
            .int("quiet_hosts", as_i64(self.quiet.len() as u64))
            .int("clock_hosts_forgotten", as_i64(c.clock_hosts_forgotten))
            .int(
                "clock_cells_not_remembered",
                as_i64(c.clock_cells_not_remembered),
            )
            .int("duplicates", as_i64(c.duplicates))
            .int("joined_remembered", as_i64(self.joined.len() as u64))
            .int("joined_expired", as_i64(c.joined_expired))
            .int("joined_evicted", as_i64(c.joined_evicted))
            .int("otlp_refused", as_i64(c.otlp_refused))
            .int("influx_points_written", as_i64(c.influx_points_written))
            .int("influx_retries", as_i64(c.influx_retries))
            .int("influx_points_rejected", as_i64(c.influx_points_rejected))
            .int("influx_points_abandoned", as_i64(c.influx_points_abandoned))
            .int("influx_queue_full", as_i64(c.influx_queue_full))
            .int("influx_queued_points", as_i64(c.influx_queued_points))
            .int("telemetry_points", as_i64(c.telemetry_points))
            .int("telemetry_rejected", as_i64(c.telemetry_rejected))
            .int("pending_samples", as_i64(self.samples.len() as u64))
            .int("pending_frags", as_i64(self.frags.len() as u64))
            .int("pending_senderless", as_i64(self.senderless.len() as u64))
            .int(
                "writers",
                as_i64(
                    self.writers
                        .values()
                        .filter(|w| !w.hosts.is_empty())
                        .count() as u64,
                ),
            )
            .end(None);
        points
    }
}
