//! The join decides a sample in capture time: it waits until every other host that saw the
//! writer has sent spans past the sample (by the sample window and the lost grace), however
//! many pushes that takes, so a host whose spans are held up (an outage of its export) loses
//! nothing; a host silent for `max_wait_pushes` is waited for no longer (counted `forced`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use span_join::{feed_line, JoinSettings, LineWriter, SpanJoin};

const W: &str = "0110aaaaaaaaaaaaaaaaaaaa000003c2";
const S: i64 = 1_000_000_000;

fn sample(host: &str, sn: i64, start: i64) -> String {
    let end = start + 1_000;
    format!(
        "spans,host.name={host},slot=0,span.name=SAMPLE,topic_name=rt/chatter,writer_id={W} \
         end_time_unix_nano={end}i,sn={sn}i,start_ns={start}i,fragments_missing=0i,\
         sample_size=100i,repairs=0i,submessages=1i {start}"
    )
}

fn count(out: &LineWriter, measurement: &str) -> usize {
    out.buf
        .lines()
        .filter(|l| l.starts_with(&format!("{measurement},")))
        .count()
}

fn last_counter(out: &LineWriter, name: &str) -> i64 {
    let line = out
        .buf
        .lines()
        .rev()
        .find(|l| l.starts_with("ddshark_join "))
        .unwrap();
    line.split([' ', ','])
        .find_map(|f| f.strip_prefix(&format!("{name}="))?.strip_suffix('i'))
        .unwrap()
        .parse()
        .unwrap()
}

/// a sends a sample every 100 ms for 20 s; b (its receiver) receives each 1 ms later. b's
/// spans from second 5 on arrive only after `b_late_pushes` pushes in which a's kept coming.
fn run(settings: JoinSettings, b_late_pushes: usize) -> LineWriter {
    let mut join = SpanJoin::new(settings);
    let mut out = LineWriter::default();
    let mut held = Vec::new();
    for sn in 0..200 {
        let t = 100 + sn * S / 10;
        feed_line(&mut join, &sample("a", sn, t));
        let copy = sample("b", sn, t + 1_000_000);
        if t < 5 * S {
            feed_line(&mut join, &copy);
        } else {
            held.push(copy);
        }
        if sn % 10 == 9 {
            join.push(&mut out);
        }
    }
    for _ in 0..b_late_pushes.saturating_sub(15) {
        join.push(&mut out);
    }
    for copy in &held {
        feed_line(&mut join, copy);
    }
    for _ in 0..4 {
        join.push(&mut out);
    }
    out
}

#[test]
fn a_receivers_spans_held_up_for_many_pushes_are_waited_for() {
    let settings = JoinSettings {
        settle_pushes: 2,
        ..JoinSettings::default()
    };
    // (a's last 15 pushes plus 10 more: 25 pushes late, 5 times the old 2-push settle)
    let out = run(settings, 25);
    assert_eq!(count(&out, "dds_lost"), 0, "{}", out.buf);
    // (each sample has both copies in the end: none waits for more)
    assert_eq!(count(&out, "dds_latency"), 200, "{}", out.buf);
    assert_eq!(last_counter(&out, "forced"), 0);
}

#[test]
fn a_host_silent_beyond_the_backstop_is_no_longer_waited_for_and_that_is_counted() {
    let settings = JoinSettings {
        settle_pushes: 2,
        max_wait_pushes: 6,
        ..JoinSettings::default()
    };
    let out = run(settings, 25);
    // b's late copies came after the samples were joined without them: lost, counted
    // forced; the copies then stand alone (their sender's were joined): senderless
    let forced = last_counter(&out, "forced");
    assert!(forced > 0, "{}", out.buf);
    assert!(count(&out, "dds_lost") > 0, "{}", out.buf);
    assert!(last_counter(&out, "pending_samples") < 200);
}

/// A sample whose span stays open at its sender for 25 s (the writer re-sent it, to a
/// reader the receiver does not see), while the receiver's copy closed 1 ms after it was
/// sent: the receiver's span arrives ~25 s (25 pushes) before the sender's. The sample is
/// still joined once, with its latency.
#[test]
fn a_senders_span_that_comes_long_after_the_receivers_still_gives_the_latency() {
    const WINDOW: i64 = 10 * S;
    let settings = JoinSettings {
        settle_pushes: 2,
        ..JoinSettings::default()
    };
    // (arrival, span): each span arrives a sample window after it ends, as ddshark sends it
    let mut spans = Vec::new();
    for sn in 0..300 {
        let t = 100 + sn * S / 10;
        let sender_end = if sn == 50 { t + 25 * S } else { t + 1_000 };
        let line = sample("a", sn, t).replace(
            &format!("end_time_unix_nano={}i", t + 1_000),
            &format!("end_time_unix_nano={sender_end}i"),
        );
        spans.push((sender_end + WINDOW, line));
        spans.push((
            t + 1_000_000 + 1_000 + WINDOW,
            sample("b", sn, t + 1_000_000),
        ));
    }
    spans.sort_by_key(|(at, _)| *at);
    let mut join = SpanJoin::new(settings);
    let mut out = LineWriter::default();
    let mut next_push = S;
    for (at, line) in &spans {
        while *at >= next_push {
            join.push(&mut out);
            next_push += S;
        }
        feed_line(&mut join, line);
    }
    join.flush(&mut out);
    let latencies: Vec<&str> = out
        .buf
        .lines()
        .filter(|l| l.starts_with("dds_latency,"))
        .collect();
    assert_eq!(latencies.len(), 300, "{}", out.buf);
    assert!(
        latencies.iter().any(|l| l.contains(",sn=50i ")),
        "no latency for the sample re-sent"
    );
    assert_eq!(count(&out, "dds_lost"), 0, "{}", out.buf);
    assert_eq!(last_counter(&out, "samples"), 300);
    assert_eq!(last_counter(&out, "senderless"), 0);
}

/// 200 samples from a, 0.1 s apart, each but every 10th received by b 1 ms later; with
/// `push`, a push after every 10.
fn every_tenth_sample_lost_at_b(join: &mut SpanJoin, out: &mut LineWriter, push: bool) {
    for sn in 0..200 {
        let t = 100 + sn * S / 10;
        feed_line(join, &sample("a", sn, t));
        if sn % 10 != 5 {
            feed_line(join, &sample("b", sn, t + 1_000_000));
        }
        if push && sn % 10 == 9 {
            join.push(out);
        }
    }
}

/// Every 10th sample is lost at b: each waits until b's capture is 11 s past it. The
/// samples b received are joined meanwhile, not held behind them.
#[test]
fn a_sample_waiting_for_a_host_holds_up_no_other() {
    let settings = JoinSettings {
        settle_pushes: 2,
        ..JoinSettings::default()
    };
    let mut join = SpanJoin::new(settings);
    let mut out = LineWriter::default();
    every_tenth_sample_lost_at_b(&mut join, &mut out, true);
    // 180 received: all but the last push's 9 (the 2 pushes' settle; held behind the
    // first lost one: 86); lost: those b's capture passed by 11 s (up to 8.9 s)
    assert_eq!(count(&out, "dds_latency"), 180 - 9, "{}", out.buf);
    assert_eq!(count(&out, "dds_lost"), 9, "{}", out.buf);
    assert_eq!(last_counter(&out, "forced"), 0);
}

/// The input ends (stdin closed) while samples b lost still wait for b's capture to pass
/// them: they are joined then, counted `decided_at_end`, not `forced` (no host was late);
/// those b's capture had passed are joined as on any push, counted neither.
#[test]
fn samples_joined_at_the_end_of_the_input_are_counted_apart_from_forced() {
    let mut join = SpanJoin::new(JoinSettings::default());
    let mut out = LineWriter::default();
    every_tenth_sample_lost_at_b(&mut join, &mut out, false);
    join.flush(&mut out);
    // b's capture ends at 19.9 s: the lost samples up to 8.5 s are 11 s behind it (9),
    // those from 9.5 s on are not (11)
    assert_eq!(last_counter(&out, "decided_at_end"), 11, "{}", out.buf);
    assert_eq!(last_counter(&out, "forced"), 0);
    assert_eq!(last_counter(&out, "samples"), 200);
    assert_eq!(last_counter(&out, "pending_samples"), 0);
}
