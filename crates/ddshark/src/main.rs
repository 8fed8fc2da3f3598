use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use ddshark::dissect::{self, DissectFormat};

const EXAMPLES: &str = "\
Examples:
  ddshark dissect capture.pcap                    one line per RTPS submessage
  ddshark dissect capture.pcapng --format jsonl | jq 'select(.kind==\"DATA\") | .topic'
  ddshark stats capture.pcap | jq '.topics[] | {name, samples, lost, retransmitted}'
  ddshark -i eth0 --no-tui                        live, a summary every 2 s
  ddshark -i any --no-tui -F jsonl udp port 7400  live with a BPF filter, JSON lines
  ddshark -r capture.pcap --no-tui --speed 1      replay at recorded speed
";

/// Passive DDS/RTPS sniffer: per-topic statistics, loss, repairs and cross-host latency.
#[derive(Debug, Parser)]
#[command(name = "ddshark", version, about, after_help = EXAMPLES)]
#[command(args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Live capture / replay (when no subcommand is given).
    #[command(flatten)]
    daemon: ddshark::daemon::DaemonArgs,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print every RTPS submessage of a pcap/pcapng file.
    #[command(after_help = EXAMPLES)]
    Dissect {
        /// pcap or pcapng file (µs or ns timestamps)
        file: PathBuf,
        /// Output format: readable text, or one JSON object per submessage
        #[arg(long, short = 'F', value_enum, default_value = "text")]
        format: DissectFormat,
        /// No summary on stderr
        #[arg(long, short = 'q')]
        quiet: bool,
    },
    /// One-way latency of every DDS sample between captures of two (or more) hosts.
    Latency(ddshark::latency::LatencyArgs),
    /// Final state and per-topic statistics of a capture (JSON or text).
    Stats(ddshark::stats_cmd::StatsArgs),
    /// The live latency join: hosts' SAMPLE/DATA_FRAG spans in (line protocol on stdin),
    /// dds_latency and friends out (run by Telegraf, deploy/telegraf/telegraf.conf).
    Join(ddshark::spanjoin::JoinArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        None if !cli.daemon.wanted() => {
            let _ = <Cli as clap::CommandFactory>::command().print_help();
            return ExitCode::FAILURE;
        }
        None => ddshark::daemon::run(&cli.daemon),
        Some(Command::Stats(args)) => ddshark::stats_cmd::run(&args),
        Some(Command::Dissect {
            file,
            format,
            quiet,
        }) => dissect::run(&file, format, quiet),
        Some(Command::Latency(args)) => ddshark::latency::run(&args),
        Some(Command::Join(args)) => ddshark::spanjoin::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ddshark: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
