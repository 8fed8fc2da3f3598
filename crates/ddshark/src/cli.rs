//! The command line: `ddshark -i IFACE | -r FILE [FILTER…]` and its subcommands, with
//! the exit codes every command shares.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::dissect::DissectFormat;

/// Exit status: the run did what was asked.
pub const EXIT_OK: u8 = 0;
/// Exit status: the run failed (a file, an interface, a filter, the export …).
pub const EXIT_FAILURE: u8 = 1;
/// Exit status: the command line is wrong (clap's own code for usage errors).
pub const EXIT_USAGE: u8 = 2;

/// A command line clap accepted that cannot be run as written (exit status [`EXIT_USAGE`]).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

const EXAMPLES: &str = "\
Examples:
  ddshark -i eth0                                 live, the terminal UI
  ddshark -i any --no-tui                         live, a summary every 2 s
  ddshark -i any --no-tui --format jsonl udp port 7400
                                                  live with a BPF filter, JSON lines
  ddshark -r capture.pcap --no-tui --speed 1      replay at recorded speed
  ddshark -r capture.pcap -c 1000 'host 10.0.0.2' the first 1000 frames from or to 10.0.0.2
  ddshark stats capture.pcap | jq '.topics[] | {name, samples, lost, retransmitted}'
  ddshark dissect capture.pcapng --format jsonl | jq 'select(.kind==\"DATA\") | .topic'
  ddshark latency hostA.pcap hostB.pcap           one-way latency per sample

Durations take a unit: 250ms, 10s, 2m, 1h.
The capture filter (BPF, as tcpdump takes it) is given after the options or, with
-F FILE, read from a file; it applies to files (-r) as to interfaces.

`ddshark join` is not a user's command: it is the stack's live latency join, the same as
the small binary `ddshark-join` that Telegraf runs (deploy/telegraf/telegraf.conf).

Exit status: 0 done, 1 failed (file, interface, filter, export; the message names it),
2 wrong command line.
";

const DISSECT_EXAMPLES: &str = "\
Examples:
  ddshark dissect capture.pcap                    one line per RTPS submessage
  ddshark dissect capture.pcapng --format jsonl | jq 'select(.kind==\"DATA\") | .topic'
  ddshark dissect capture.pcap -q | grep HEARTBEAT
";

/// Passive DDS/RTPS sniffer: per-topic statistics, loss, repairs and cross-host latency.
#[derive(Debug, Parser)]
#[command(name = "ddshark", version, about, after_help = EXAMPLES)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Live capture / replay (when no subcommand is given).
    #[command(flatten)]
    pub daemon: crate::daemon::DaemonArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print every RTPS submessage of a pcap/pcapng file.
    #[command(after_help = DISSECT_EXAMPLES)]
    Dissect {
        /// pcap or pcapng file (µs or ns timestamps)
        file: PathBuf,
        /// Output format: readable text, or JSON lines (one object per submessage)
        #[arg(long, value_enum, default_value = "text")]
        format: DissectFormat,
        /// No summary on stderr
        #[arg(long, short = 'q')]
        quiet: bool,
    },
    /// One-way latency of every DDS sample between captures of two (or more) hosts.
    Latency(crate::latency::LatencyArgs),
    /// Final state and per-topic statistics of a capture (JSON or text).
    Stats(crate::stats_cmd::StatsArgs),
    /// The stack's live latency join (run by Telegraf, deploy/telegraf/telegraf.conf):
    /// hosts' SAMPLE/DATA_FRAG spans in (line protocol on stdin), dds_latency and
    /// friends out.
    #[command(hide = true)]
    Join(Box<span_join::serve::JoinArgs>),
}

/// What `ddshark` alone says (the full help is `--help`).
pub const NOTHING_TO_DO: &str =
    "ddshark: give -i IFACE (live) or -r FILE (replay), or a command: stats, dissect, latency (see --help)";
