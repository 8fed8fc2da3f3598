//! The latency join's OTLP intake (span-join): any bytes as an export request's protobuf
//! body, decoded and converted; every span it takes fed to a join, and its journal line
//! (what the join keeps of an acknowledged export) must feed another join the same.
#![no_main]

use libfuzzer_sys::fuzz_target;
use span_join::otlp::{convert, decode, journal_line};
use span_join::{feed_line, JoinSettings, LineWriter, SpanJoin};

fuzz_target!(|data: &[u8]| {
    let Ok(request) = decode(data) else {
        return;
    };
    let converted = convert(&request);
    assert_eq!(converted.refused > 0, converted.first_error.is_some());
    let settings = JoinSettings { settle_pushes: 1, max_pending: 4, forget_pushes: 3, max_participants: 2, ..JoinSettings::default() };
    let (mut direct, mut lines) = (SpanJoin::new(settings), SpanJoin::new(settings));
    let mut journal = LineWriter::default();
    for span in &converted.spans {
        span.feed(&mut direct);
        journal_line(span, &mut journal);
    }
    for text in journal.buf.lines() {
        feed_line(&mut lines, text);
    }
    assert_eq!(lines.counters.rejected, 0, "a journal line the join cannot read: {}", journal.buf);
    assert_eq!(direct.counters, lines.counters);
    let (mut a, mut b) = (LineWriter::default(), LineWriter::default());
    direct.flush(&mut a);
    lines.flush(&mut b);
    assert_eq!(a.buf, b.buf);
});
