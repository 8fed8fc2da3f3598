//! `ddshark-join`: the monitoring stack's live latency join, a binary of its own so that
//! the Telegraf image and the stack build only this crate, not the sniffer.

use clap::Parser;

/// The live latency join of ddshark's spans across hosts: SAMPLE and DATA_FRAG spans in
/// (InfluxDB line protocol on stdin, as Telegraf's outputs.execd hands them over),
/// dds_latency and friends out.
#[derive(Parser)]
#[command(name = "ddshark-join", version)]
struct Cli {
    #[command(flatten)]
    args: span_join::serve::JoinArgs,
}

fn main() -> anyhow::Result<()> {
    span_join::serve::run(&Cli::parse().args)
}
