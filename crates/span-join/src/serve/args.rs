//! `ddshark-join`'s command line.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::influxdb::InfluxConfig;
use crate::JoinSettings;
use time_span::TimeSpan;

const EXAMPLES: &str = "\
Examples:
  (run by Telegraf's outputs.execd, deploy/telegraf/telegraf.conf)
  ddshark-join --output unix:/run/ddshark/join.sock --period 10s
  ddshark-join < spans.lp                  join a file of spans, points on stdout
  ddshark-join --period 1s --settle-pushes 15 --output tcp:127.0.0.1:8094
  ddshark-join --output unix:/run/ddshark/join.sock --state /var/lib/telegraf/ddshark-join.state
  ddshark-join --otlp-grpc 127.0.0.1:4320 --state join.state --output tcp:127.0.0.1:8094
  ddshark-join --otlp-grpc 127.0.0.1:4320 --state join.state --influx-url http://127.0.0.1:8086 --influx-token-file influx-token
";

/// Arguments of `ddshark-join` (and `ddshark join`).
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct JoinArgs {
    /// Where the points go: unix:PATH or tcp:HOST:PORT (a line-protocol listener such as
    /// Telegraf's socket_listener), or - for stdout
    #[arg(long, default_value = "-", value_name = "ADDRESS")]
    pub output: String,
    /// How often the join runs: 10s, 500ms, 1m
    #[arg(long, default_value = "10s", value_parser = parse_period)]
    pub period: Duration,
    /// Periods a sample waits at least after its first span arrived; then until every other
    /// host's capture passed it by the sample window plus --lost-grace (capture time)
    #[arg(long, default_value_t = 3)]
    pub settle_pushes: u64,
    /// Periods a sample waits at most for a host whose spans stopped (counted as forced)
    #[arg(long, default_value_t = 30)]
    pub max_wait_pushes: u64,
    /// Samples (and as many DATA_FRAGs) waiting at most; beyond, the oldest is joined early
    #[arg(long, default_value_t = 500_000)]
    pub max_pending: usize,
    /// Spans of joined samples remembered at most (for --max-wait-pushes periods), so one
    /// delivered again (a resent export, a redelivered batch) counts once; beyond, the oldest
    /// are forgotten (counted joined_evicted)
    #[arg(long, default_value_t = 1_000_000)]
    pub max_joined: usize,
    /// Writers and hosts not seen for this many periods are forgotten
    #[arg(long, default_value_t = 360)]
    pub forget_pushes: u64,
    /// Participants whose host votes are kept
    #[arg(long, default_value_t = 10_000)]
    pub max_participants: usize,
    /// A host that cast no vote for a participant in this many periods is not its host
    #[arg(long, default_value_t = 6)]
    pub vote_pushes: u64,
    /// ddshark's --otlp-sample-window (the span schema's sample window)
    #[arg(long = "sample-window", value_name = "DURATION", default_value = "10s",
          value_parser = positive_span_ns)]
    pub sample_window_ns: i64,
    /// Another host receives a writer if it saw one of its samples this close to t_send
    #[arg(long = "receiver-window", value_name = "DURATION", default_value = "12s",
          value_parser = positive_span_ns)]
    pub receiver_window_ns: i64,
    /// A sample sent this close to the end of a host's capture is not called lost
    #[arg(long = "lost-grace", value_name = "DURATION", default_value = "1s", value_parser = span_ns)]
    pub lost_grace_ns: i64,
    /// Output held while --output cannot take it; beyond, points are dropped (counted)
    #[arg(long, default_value_t = 256 << 20, value_name = "BYTES")]
    pub max_output_bytes: usize,
    /// This join is shard N of several behind the collector's routing tier: its per-second
    /// totals, clock offsets and counters carry the tag shard=N, which the queries sum over
    /// (docs/fleet.md)
    #[arg(long, value_name = "N")]
    pub shard: Option<u16>,
    /// Take the lowest shard number no other join with the same --state holds (a lock on
    /// STATE.K.lock while it runs) and the state STATE.K: for replicas started alike (docker
    /// compose --scale), a distinct shard each, a restarted one takes over a free one's state
    #[arg(long, conflicts_with = "shard", requires = "state")]
    pub shard_auto: bool,
    /// Keep the join across restarts (kill -9 included) in FILE: read at start, written at
    /// every push (the input between pushes in FILE.journal-N), at the end of the input and
    /// on SIGTERM (instead of joining what still waits)
    #[arg(long, value_name = "FILE")]
    pub state: Option<PathBuf>,
    #[command(flatten)]
    pub otlp: OtlpArgs,
    #[command(flatten)]
    pub influx: InfluxArgs,
}

/// Writing InfluxDB itself: the joined points (instead of --output) and, with the OTLP
/// intake, every span's raw point; an export is answered once its raw points are written.
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "InfluxDB")]
pub struct InfluxArgs {
    /// Write to the InfluxDB 2 at URL (http://127.0.0.1:8086) instead of --output
    #[arg(id = "influx_url", long = "influx-url", value_name = "URL")]
    pub url: Option<String>,
    /// Its organisation
    #[arg(long = "influx-org", value_name = "ORG", default_value = "ddshark")]
    pub org: String,
    /// A file whose first line is the API token (never on the command line)
    #[arg(
        id = "influx_token_file",
        long = "influx-token-file",
        value_name = "FILE"
    )]
    pub token_file: Option<PathBuf>,
    /// Bucket of the raw span points and the join's counters (ddshark_join)
    #[arg(long = "raw-bucket", value_name = "BUCKET", default_value = "ddshark")]
    pub raw_bucket: String,
    /// Bucket of the joined points (dds_latency, ...)
    #[arg(
        long = "long-bucket",
        value_name = "BUCKET",
        default_value = "ddshark_long"
    )]
    pub long_bucket: String,
    /// Points per write request at most
    #[arg(
        long = "influx-batch-points",
        value_name = "POINTS",
        default_value_t = 5000
    )]
    pub batch_points: u64,
    /// How long points wait for a fuller batch at most: 200ms, 1s
    #[arg(long = "influx-batch-wait", value_name = "DURATION", default_value = "200ms",
          value_parser = parse_period)]
    pub batch_wait: Duration,
    /// Raw points waiting for InfluxDB at most; beyond, exports are answered "retry later"
    #[arg(
        long = "influx-max-queued",
        value_name = "POINTS",
        default_value_t = 200_000
    )]
    pub max_queued: u64,
}

impl InfluxArgs {
    /// The writer's configuration, if --influx-url is given (the token read from its file).
    pub fn config(&self) -> anyhow::Result<Option<InfluxConfig>> {
        let Some(url) = &self.url else {
            if self.token_file.is_some() {
                anyhow::bail!("--influx-token-file needs --influx-url");
            }
            return Ok(None);
        };
        let Some(path) = &self.token_file else {
            anyhow::bail!("--influx-url {url} needs --influx-token-file FILE (the API token)");
        };
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("--influx-token-file {}: {e}", path.display()))?;
        let token = text.lines().next().unwrap_or("").trim();
        if token.is_empty() {
            anyhow::bail!("--influx-token-file {}: empty", path.display());
        }
        Ok(Some(InfluxConfig {
            url: url.clone(),
            org: self.org.clone(),
            token: token.to_owned(),
            raw_bucket: self.raw_bucket.clone(),
            long_bucket: self.long_bucket.clone(),
            batch_points: self.batch_points,
            batch_wait: self.batch_wait,
            max_queued_points: self.max_queued,
        }))
    }
}

/// The OTLP intake: with either address the join serves trace exports (from the collector)
/// instead of reading stdin, and runs until SIGTERM/SIGINT.
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "OTLP intake")]
pub struct OtlpArgs {
    /// Serve OTLP/gRPC trace exports on ADDR (127.0.0.1:4320); beyond loopback only with
    /// --otlp-token-file and --otlp-tls-cert/--otlp-tls-key
    #[arg(long = "otlp-grpc", value_name = "ADDR")]
    pub grpc: Option<SocketAddr>,
    /// Serve OTLP/HTTP (protobuf, POST /v1/traces) on ADDR (127.0.0.1:4321); beyond
    /// loopback as --otlp-grpc
    #[arg(long = "otlp-http", value_name = "ADDR")]
    pub http: Option<SocketAddr>,
    /// Require `authorization: Bearer TOKEN`, TOKEN the file's first line (the collector's
    /// DDSHARK_OTLP_TOKEN_FILE)
    #[arg(long = "otlp-token-file", value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// TLS certificate chain (PEM) of both servers
    #[arg(long = "otlp-tls-cert", value_name = "FILE")]
    pub tls_cert: Option<PathBuf>,
    /// Its private key (PEM)
    #[arg(long = "otlp-tls-key", value_name = "FILE")]
    pub tls_key: Option<PathBuf>,
    /// Largest export request taken, before and after decompression (the collector's
    /// receivers: 16 MiB)
    #[arg(long = "otlp-max-message", value_name = "BYTES", default_value_t = 16 << 20)]
    pub max_message: usize,
}

impl OtlpArgs {
    /// Whether the join takes OTLP (and not stdin).
    pub fn enabled(&self) -> bool {
        self.grpc.is_some() || self.http.is_some()
    }
}

impl JoinArgs {
    pub fn settings(&self) -> JoinSettings {
        JoinSettings {
            settle_pushes: self.settle_pushes,
            max_wait_pushes: self.max_wait_pushes,
            max_pending: self.max_pending,
            forget_pushes: self.forget_pushes,
            max_participants: self.max_participants,
            vote_pushes: self.vote_pushes,
            sample_window_ns: self.sample_window_ns,
            receiver_window_ns: self.receiver_window_ns,
            lost_grace_ns: self.lost_grace_ns,
            max_joined: self.max_joined,
            shard: self.shard,
        }
    }
}

/// `10s`, `500ms`, `1m`, `2h`, `250us`, `1000ns`; a bare number is seconds. More than 0.
/// How often the join runs: a duration more than zero (`10s`, `500ms`).
pub fn parse_period(text: &str) -> Result<Duration, String> {
    TimeSpan::positive(text).map(TimeSpan::duration)
}

/// A duration (`10s`) in ns.
fn span_ns(text: &str) -> Result<i64, String> {
    let span: TimeSpan = text.parse()?;
    i64::try_from(span.ns()).map_err(|_| format!("{text:?} is too long"))
}

/// A duration more than zero, in ns.
fn positive_span_ns(text: &str) -> Result<i64, String> {
    TimeSpan::positive(text)?;
    span_ns(text)
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        j: super::JoinArgs,
    }

    #[test]
    fn the_sample_window_default_is_the_span_schemas() {
        let t = T::try_parse_from(["join"]).map(|t| t.j.sample_window_ns);
        assert_eq!(t.ok(), Some(span_schema::SAMPLE_WINDOW_NS));
    }
}
