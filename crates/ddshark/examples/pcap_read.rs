//! The floor for `ddshark stats`: read every packet of a capture through libpcap
//! (nanosecond timestamps, like ddshark) and touch its bytes, nothing else.
//! Used by scripts/bench-stats.sh. Usage: pcap_read FILE

use std::process::ExitCode;

fn main() -> ExitCode {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: pcap_read FILE");
        return ExitCode::FAILURE;
    };
    let mut cap = match pcap::Capture::from_file_with_precision(&path, pcap::Precision::Nano) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("pcap_read: {path}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let (mut frames, mut bytes, mut sum) = (0u64, 0u64, 0u64);
    while let Ok(p) = cap.next_packet() {
        frames += 1;
        bytes += p.data.len() as u64;
        sum = sum.wrapping_add(u64::from(p.data.first().copied().unwrap_or(0)));
    }
    println!("{frames} frames {bytes} bytes ({sum})");
    ExitCode::SUCCESS
}
