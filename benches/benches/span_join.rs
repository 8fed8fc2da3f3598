//! The live latency join (`span-join`, run by `ddshark-join`): spans per second through
//! the line-protocol reader and the join, pushes included. The input has the shape of the
//! Autoware mix on two hosts (every sample seen by its sender and one receiver; one
//! sample in 12 in DATA_FRAGs) and the lines are written as Telegraf's `outputs.execd`
//! writes them (tags sorted, only the tags and fields the join reads).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use span_join::{feed_line, JoinSettings, LineWriter, SpanJoin};

const WRITERS: i64 = 120;
const SAMPLES_PER_WRITER: i64 = 100;
/// Lines per period (one push after each).
const PER_PUSH: usize = 2_000;

fn lines() -> Vec<String> {
    let mut out = Vec::new();
    for sn in 1..=SAMPLES_PER_WRITER {
        for w in 0..WRITERS {
            let writer = format!("01100defba0fcccdd1656a12{:06x}c2", w);
            let topic = format!("rt/autoware/topic_{w}");
            let t = 1_795_276_149_978_710_000 + (sn * WRITERS + w) * 50_000;
            let fragmented = w % 12 == 0;
            for (host, delay) in [("zonal-ecu", 0), ("central-computer", 180_000)] {
                let start = t + delay;
                if fragmented {
                    for fsn in 1..=4 {
                        out.push(format!(
                            "spans,host.name={host},slot=0,span.name=DATA_FRAG,topic_name={topic},writer_id={writer} \
                             end_time_unix_nano={}i,fragment_size=64000i,fragment_starting_num={fsn}i,\
                             frags_in_submessage=1i,sample_size=256000i,sn={sn}i {}",
                            start + fsn * 1000 + 900,
                            start + fsn * 1000
                        ));
                    }
                }
                out.push(format!(
                    "spans,host.name={host},slot=0,span.name=SAMPLE,topic_name={topic},writer_id={writer} \
                     end_time_unix_nano={}i,fragments_missing=0i,repairs=0i,sample_size={}i,sn={sn}i,\
                     start_ns={start}i,submessages={}i {start}",
                    start + 5_000,
                    if fragmented { 256_000 } else { 512 },
                    if fragmented { 4 } else { 1 }
                ));
            }
        }
    }
    out
}

fn run(lines: &[String]) -> usize {
    let mut join = SpanJoin::new(JoinSettings::default());
    let mut written = 0;
    for chunk in lines.chunks(PER_PUSH) {
        for line in chunk {
            feed_line(&mut join, line);
        }
        let mut out = LineWriter::default();
        join.push(&mut out);
        written += out.buf.len();
    }
    let mut out = LineWriter::default();
    join.flush(&mut out);
    written + out.buf.len()
}

fn bench(c: &mut Criterion) {
    let lines = lines();
    let mut group = c.benchmark_group("span_join");
    group.throughput(Throughput::Elements(lines.len() as u64));
    group.bench_function("autoware-shaped, 2 hosts", |b| b.iter(|| run(&lines)));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
