use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use ddshark::dissect::{self, DissectFormat};

const EXAMPLES: &str = "\
Examples:
  ddshark dissect capture.pcap                    one line per RTPS submessage
  ddshark dissect capture.pcapng --format jsonl | jq 'select(.kind==\"DATA\") | .topic'
";

/// Passive DDS/RTPS sniffer: per-topic statistics, loss, repairs and cross-host latency.
#[derive(Debug, Parser)]
#[command(name = "ddshark", version, about, after_help = EXAMPLES)]
struct Cli {
    #[command(subcommand)]
    command: Command,
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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Dissect {
            file,
            format,
            quiet,
        } => dissect::run(&file, format, quiet),
        Command::Latency(args) => ddshark::latency::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ddshark: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
