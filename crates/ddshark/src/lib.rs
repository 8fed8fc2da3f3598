//! ddshark: a passive DDS/RTPS sniffer. The binary's modules live here so that
//! tests and benches drive the same code as the command line.

pub(crate) mod atomic_file;
pub mod capture;
pub mod cli;
pub mod daemon;
pub mod dissect;
pub mod latency;
pub(crate) mod otlp;
pub use otlp::sample_summary;
pub mod output;
pub mod pipeline;
pub(crate) mod privilege;
pub mod record;
pub mod recording;
pub mod state;
pub mod stats_cmd;
pub mod tui;
pub(crate) mod units;
