//! Line protocol as the latency join reads it (span-join): any bytes, split into lines,
//! through the reader and the join, with a push every few lines; and every point the
//! join writes must read back.
#![no_main]

use libfuzzer_sys::fuzz_target;
use span_join::{feed_line, JoinSettings, Line, LineWriter, SpanJoin};

fuzz_target!(|data: &[u8]| {
    let settings = JoinSettings { settle_pushes: 1, max_pending: 4, forget_pushes: 3, max_participants: 2, ..JoinSettings::default() };
    let mut join = SpanJoin::new(settings);
    let mut out = LineWriter::default();
    for (i, text) in data.split(|&b| b == b'\n').enumerate() {
        if let Ok(text) = std::str::from_utf8(text) {
            if let Ok(Some(line)) = Line::parse(text) {
                for tag in line.tags() {
                    let _ = tag;
                }
                for field in line.fields().flatten() {
                    let _ = field.1.as_i64();
                }
            }
            feed_line(&mut join, text);
        }
        if i % 5 == 4 {
            join.push(&mut out);
        }
    }
    join.flush(&mut out);
    for text in out.buf.lines() {
        let line = Line::parse(text);
        assert!(matches!(line, Ok(Some(_))), "the join wrote a line it cannot read: {text:?}");
        if let Ok(Some(line)) = line {
            assert!(line.tags().all(|t| t.is_ok()) && line.fields().all(|f| f.is_ok()), "{text:?}");
        }
    }
});
