//! The command line of `ddshark latency`.

use std::path::PathBuf;

/// What one row stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// DDS layer: per sample (writer GUID, SN).
    Sample,
    /// DDS submessage: per DATA_FRAG (writer GUID, SN, fragment starting number); DATA as is.
    Submessage,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LatencyFormat {
    /// Rows, then per-topic statistics and histograms.
    Text,
    /// One tab-separated row per sample, with a header.
    Tsv,
    /// One JSON document: {"samples": [...], "offsets": [...], "topics": [...], "stats": {...}}.
    Json,
    /// JSON lines: one object per sample, then per clock offset and topic, then the run's
    /// statistics (each with its "kind").
    Jsonl,
}

const EXAMPLES: &str = "\
Examples:
  ddshark latency hostA.pcap hostB.pcap                      both directions, per sample
  ddshark latency a.pcap b.pcap --level submessage --format tsv   per DATA_FRAG, tab-separated
  ddshark latency a.pcap b.pcap --format json | jq '.topics[]'    per-topic statistics
  ddshark latency a.pcap b.pcap c.pcap --html report.html    one sender, two receivers
  ddshark latency a.pcap b.pcap --offset auto               correct by the offset estimated from the traffic
  ddshark latency a.pcap b.pcap --offset-ns -25000           B's clock runs 25 µs behind A's
";

/// The sample window's default (span_schema::SAMPLE_WINDOW_NS) as the command line
/// writes it.
const DEFAULT_WINDOW: &str = "10s";

/// A duration (`10s`) in ns.
fn span_ns(s: &str) -> Result<i64, String> {
    let span: crate::units::TimeSpan = s.parse()?;
    i64::try_from(span.ns()).map_err(|_| format!("{s:?} is too long"))
}

/// A duration more than zero, in ns.
fn positive_span_ns(s: &str) -> Result<i64, String> {
    crate::units::TimeSpan::positive(s)?;
    span_ns(s)
}

/// How the receivers' clocks are moved onto the sender's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OffsetMode {
    /// By the offset (and drift) estimated from the traffic between the two hosts.
    Auto,
}

/// Arguments of `ddshark latency`.
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct LatencyArgs {
    /// Capture taken on host A (pcap/pcapng); its clock is the reference. Samples are measured
    /// both ways (A->B and B->A in the output)
    #[arg(value_name = "CAPTURE_A")]
    pub sender: PathBuf,
    /// Capture(s) taken on the other host(s): B, C, … in the output
    #[arg(required = true, value_name = "CAPTURE_B")]
    pub receivers: Vec<PathBuf>,
    /// Sample: DDS layer (first IP fragment of the first datagram → last IP fragment of the
    /// last needed datagram). Submessage: the same per DATA_FRAG.
    #[arg(long, value_enum, default_value = "sample")]
    pub level: Level,
    /// Output: text, tsv (rows), json (one document) or jsonl (JSON lines)
    #[arg(long, value_enum, default_value = "text")]
    pub format: LatencyFormat,
    /// Receiver clock minus sender clock, in ns (subtracted from the receivers' timestamps;
    /// also used to pair samples instead of the coarse alignment ddshark finds by itself)
    #[arg(
        long,
        default_value_t = 0,
        allow_hyphen_values = true,
        conflicts_with = "offset"
    )]
    pub offset_ns: i64,
    /// `auto`: subtract the clock offset estimated from the traffic itself (NTP's estimate
    /// from the minimum one-way delay each way, drift followed; clocks any distance apart),
    /// each corrected latency shown with its ±; when the estimate's bound holds 0 the raw
    /// latencies are kept and the output says why. The estimate is printed either way
    #[arg(long, value_enum, value_name = "MODE")]
    pub offset: Option<OffsetMode>,
    /// Also write a self-contained HTML report (box plot per topic, latency over time, histogram)
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Capture(s) read first only to learn writer → topic from their discovery traffic
    /// (e.g. one started before the participants when CAPTURE_A/CAPTURE_B started late)
    #[arg(long, value_name = "PCAP")]
    pub discovery: Vec<PathBuf>,
    /// Only the per-topic statistics (text format), no per-sample rows
    #[arg(long)]
    pub summary: bool,
    /// Leave out built-in (discovery) writers
    #[arg(long)]
    pub user_only: bool,
    /// Finalise a sample after this much capture time without news of it (e.g. 10s)
    #[arg(long = "window", value_name = "DURATION", value_parser = positive_span_ns,
          default_value = DEFAULT_WINDOW)]
    pub window_ns: i64,
    /// Most samples held in the join at once (oldest finalised early, counted)
    #[arg(long, default_value_t = 1_000_000)]
    pub max_pending: usize,
    /// Most bytes the join holds (oldest finalised early, counted)
    #[arg(long, default_value_t = 1 << 30)]
    pub max_bytes: usize,
    /// A sample sent this close to the end of a receiving capture is not called lost
    #[arg(long = "lost-grace", value_name = "DURATION", value_parser = span_ns, default_value = "1s")]
    pub lost_grace_ns: i64,
    /// A capture is a receiver of a writer (and a sample it missed is lost) if it saw one of
    /// the writer's samples this close to the send time (docs/latency.md)
    #[arg(long = "receiver-window", value_name = "DURATION", value_parser = positive_span_ns,
          default_value = "12s")]
    pub receiver_window_ns: i64,
    /// No statistics on stderr
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_window_default_is_the_span_schemas() {
        assert_eq!(
            super::positive_span_ns(super::DEFAULT_WINDOW),
            Ok(span_schema::SAMPLE_WINDOW_NS)
        );
    }
}
