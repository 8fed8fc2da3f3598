//! ddshark: a passive DDS/RTPS sniffer. The binary's modules live here so that
//! tests and benches drive the same code as the command line.

//!
//! The capture readers, the pipeline, the state and the recorder are the core, always built.
//! The `cli` feature (default) adds the command line and everything only it needs (the TUI,
//! the latency command, the OTLP export, the live join; clap, ratatui, tokio/tonic): the fuzz
//! crate builds the core alone (`default-features = false`).

// Without `cli`, the core's crate-visible helpers that only the command line calls are unused.
#![cfg_attr(not(feature = "cli"), allow(dead_code))]

pub mod capture;
#[cfg(feature = "cli")]
pub mod cli;
#[cfg(feature = "cli")]
pub mod daemon;
#[cfg(feature = "cli")]
pub mod dissect;
#[cfg(feature = "cli")]
pub mod latency;
#[cfg(feature = "cli")]
pub(crate) mod otlp;
#[cfg(feature = "cli")]
pub use otlp::sample_summary;
#[cfg(feature = "cli")]
pub mod output;
pub mod pipeline;
#[cfg(feature = "cli")]
pub(crate) mod privilege;
#[cfg(feature = "cli")]
pub mod record;
pub mod recording;
pub mod state;
#[cfg(feature = "cli")]
pub mod stats_cmd;
#[cfg(feature = "cli")]
pub mod tui;
#[cfg(feature = "cli")]
pub(crate) mod units;
