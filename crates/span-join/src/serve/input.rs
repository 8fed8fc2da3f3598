//! Stdin: whole lines read in blocks, fed to the join.

use std::io::{self, BufRead, BufReader, Read};
use std::sync::mpsc;

use super::Input;
use crate::{feed_line, SpanJoin};

/// Longest line read (a span is < 2 KiB); a longer one is replaced by a line the join
/// rejects (counted).
pub(super) const MAX_LINE: usize = 64 << 10;

/// Reads whole lines from `input` in blocks (so one channel message carries many spans).
pub(super) fn read_blocks<R: Read>(mut input: BufReader<R>, blocks: mpsc::SyncSender<Input>) {
    const BLOCK: usize = 256 << 10;
    let mut skipping = false;
    loop {
        let mut block = Vec::with_capacity(BLOCK.saturating_add(MAX_LINE));
        while block.len() < BLOCK {
            let line_start = block.len();
            match (&mut input)
                .take(MAX_LINE as u64)
                .read_until(b'\n', &mut block)
            {
                Ok(0) => {
                    if !block.is_empty() {
                        let _ = blocks.send(Input::Lines(block));
                    }
                    return;
                }
                Ok(_) => {
                    let complete = block.last() == Some(&b'\n');
                    if skipping || (!complete && block.len().saturating_sub(line_start) >= MAX_LINE)
                    {
                        // (the rest of an overlong line, up to its newline: one bad line)
                        block.truncate(line_start);
                        if !skipping {
                            block.extend_from_slice(b"\xff\n");
                        }
                        skipping = !complete;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    eprintln!("ddshark-join: reading the input: {e}");
                    let _ = blocks.send(Input::Lines(block));
                    return;
                }
            }
            // (a block ends early when no more input is buffered, so spans do not sit in
            // a half-full block while the join pushes)
            if input.buffer().is_empty() {
                break;
            }
        }
        if blocks.send(Input::Lines(block)).is_err() {
            return;
        }
    }
}

/// Feeds a block of lines to the join.
pub(super) fn feed_block(join: &mut SpanJoin, block: &[u8]) {
    for text in block.split(|&b| b == b'\n') {
        match std::str::from_utf8(text) {
            Ok(text) => feed_line(join, text),
            Err(_) => join.reject(),
        }
    }
}
