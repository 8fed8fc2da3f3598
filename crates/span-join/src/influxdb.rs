//! The join's InfluxDB v2 writer (`--influx-url`): line protocol to
//! `POST /api/v2/write?org=…&bucket=…&precision=ns` (`Authorization: Token …`, gzip body),
//! on a thread of its own (a small tokio runtime with hyper's client).
//!
//! Jobs (an export's raw points, a push's joined points) are gathered per bucket into
//! batches of `--influx-batch-points` points or `--influx-batch-ms`, whichever comes first,
//! and each job's `done` is called with the [`Outcome`] of the batch it went in. A batch is
//! retried with exponential backoff (100 ms doubling to 10 s) while InfluxDB answers 5xx or
//! 429 or cannot be reached, until it is written, the writer is stopped, or the job's
//! deadline passed ([`Outcome::Abandoned`]: nothing is lost, the caller keeps it or has it
//! sent again); any other 4xx is a rejection, counted, with InfluxDB's message logged.
//! What waits is bounded by `--influx-max-queued` points: [`Writer::try_submit`] refuses
//! beyond it (the OTLP intake then answers "retry later").

use std::io::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::TokioExecutor;
use tokio::sync::mpsc as tmpsc;

/// Which bucket a job goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bucket {
    /// Spans and the join's own counters (`--raw-bucket`).
    Raw,
    /// The joined points (`--long-bucket`).
    Long,
}

/// What became of a job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// InfluxDB took it (2xx).
    Written,
    /// InfluxDB refused its batch (4xx but 429): `dropped` points of the batch (all, unless
    /// InfluxDB named how many), `message` its answer.
    Rejected { dropped: u64, message: String },
    /// Not written: the writer stopped, or the job's deadline passed, while InfluxDB could
    /// not take it.
    Abandoned,
}

/// Where and how to write.
#[derive(Debug, Clone)]
pub struct InfluxConfig {
    /// `http://host:port` (a path prefix allowed).
    pub url: String,
    pub org: String,
    pub token: String,
    pub raw_bucket: String,
    pub long_bucket: String,
    pub batch_points: u64,
    pub batch_wait: Duration,
    pub max_queued_points: u64,
}

/// The writer's counters (exported in the `ddshark_join` point).
#[derive(Debug, Default)]
pub struct WriteCounters {
    /// Points InfluxDB took.
    pub written: AtomicU64,
    /// Requests sent again (after a 5xx, a 429 or no connection).
    pub retries: AtomicU64,
    /// Points InfluxDB refused (4xx but 429), its message logged.
    pub rejected: AtomicU64,
    /// Points given up on (stopped, or deadline passed, while InfluxDB could not take them).
    pub abandoned: AtomicU64,
    /// Jobs refused because `max_queued_points` were waiting.
    pub refused_full: AtomicU64,
    /// Points waiting now.
    pub queued: AtomicU64,
}

type Done = Box<dyn FnOnce(Outcome) + Send>;

struct Job {
    bucket: Bucket,
    lines: String,
    points: u64,
    deadline: Option<Instant>,
    done: Done,
}

/// The writer thread's handle.
pub struct Writer {
    tx: tmpsc::UnboundedSender<Job>,
    pub counters: Arc<WriteCounters>,
    stop: Arc<AtomicBool>,
    max_queued: u64,
    thread: Option<thread::JoinHandle<()>>,
}

/// A query value percent-encoded (RFC 3986 unreserved kept).
fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The write endpoint of `url` for `bucket`.
fn write_uri(cfg: &InfluxConfig, bucket: &str) -> Result<hyper::Uri> {
    let base = cfg.url.trim_end_matches('/');
    let Some(rest) = base.strip_prefix("http://") else {
        bail!("--influx-url {}: expected http://HOST:PORT (InfluxDB's HTTP API; https is not supported)", cfg.url);
    };
    if rest.is_empty() {
        bail!("--influx-url {}: no host", cfg.url);
    }
    format!(
        "{base}/api/v2/write?org={}&bucket={}&precision=ns",
        encode(&cfg.org),
        encode(bucket)
    )
    .parse()
    .with_context(|| format!("--influx-url {}", cfg.url))
}

impl Writer {
    /// Checks the configuration and starts the thread.
    pub fn start(cfg: InfluxConfig) -> Result<Writer> {
        let raw = write_uri(&cfg, &cfg.raw_bucket)?;
        let long = write_uri(&cfg, &cfg.long_bucket)?;
        let auth = hyper::header::HeaderValue::from_str(&format!("Token {}", cfg.token))
            .context("--influx-token-file: the token is no valid header value")?;
        let (tx, rx) = tmpsc::unbounded_channel();
        let counters = Arc::new(WriteCounters::default());
        let stop = Arc::new(AtomicBool::new(false));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("starting the InfluxDB writer's runtime")?;
        let worker = Worker {
            uris: [raw, long],
            auth,
            batch_points: cfg.batch_points.max(1),
            batch_wait: cfg.batch_wait,
            counters: counters.clone(),
            stop: stop.clone(),
        };
        let thread = thread::Builder::new()
            .name("join-influx".into())
            .spawn(move || runtime.block_on(worker.run(rx)))
            .context("starting the InfluxDB writer")?;
        Ok(Writer {
            tx,
            counters,
            stop,
            max_queued: cfg.max_queued_points,
            thread: Some(thread),
        })
    }

    /// Whether `points` more fit in the queue (always when it is empty).
    pub fn has_room(&self, points: u64) -> bool {
        let queued = self.counters.queued.load(Ordering::Relaxed);
        queued == 0 || queued.saturating_add(points) <= self.max_queued
    }

    /// Queues a job within the bound; `done` is called once it is written, refused or
    /// abandoned. Beyond the bound (or once stopped) `done` is called with
    /// [`Outcome::Abandoned`] at once and false returned.
    pub fn try_submit(
        &self,
        bucket: Bucket,
        lines: String,
        points: u64,
        done: impl FnOnce(Outcome) + Send + 'static,
    ) -> bool {
        if !self.has_room(points) {
            self.counters.refused_full.fetch_add(1, Ordering::Relaxed);
            done(Outcome::Abandoned);
            return false;
        }
        self.submit(bucket, lines, points, None, Box::new(done))
    }

    fn submit(
        &self,
        bucket: Bucket,
        lines: String,
        points: u64,
        deadline: Option<Instant>,
        done: Done,
    ) -> bool {
        self.counters.queued.fetch_add(points, Ordering::Relaxed);
        let job = Job {
            bucket,
            lines,
            points,
            deadline,
            done,
        };
        match self.tx.send(job) {
            Ok(()) => true,
            Err(tmpsc::error::SendError(job)) => {
                self.counters.queued.fetch_sub(points, Ordering::Relaxed);
                (job.done)(Outcome::Abandoned);
                false
            }
        }
    }

    /// Writes `lines` (outside the queue's bound: the caller bounds them) and waits for the
    /// outcome; `deadline` bounds the retries.
    pub fn write_blocking(
        &self,
        bucket: Bucket,
        lines: String,
        points: u64,
        deadline: Option<Instant>,
    ) -> Outcome {
        let (tx, rx) = mpsc::channel();
        let done: Done = Box::new(move |o| {
            let _ = tx.send(o);
        });
        self.submit(bucket, lines, points, deadline, done);
        rx.recv().unwrap_or(Outcome::Abandoned)
    }

    /// From now on nothing is retried: what InfluxDB cannot take at once is abandoned.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        self.stop();
        // (the channel closes with the sender: the worker writes what it holds once, ends)
        let (tx, _) = tmpsc::unbounded_channel();
        drop(std::mem::replace(&mut self.tx, tx));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

struct Worker {
    uris: [hyper::Uri; 2],
    auth: hyper::header::HeaderValue,
    batch_points: u64,
    batch_wait: Duration,
    counters: Arc<WriteCounters>,
    stop: Arc<AtomicBool>,
}

/// A batch being gathered.
#[derive(Default)]
struct Pending {
    jobs: Vec<Job>,
    points: u64,
    since: Option<tokio::time::Instant>,
}

/// What one request came to.
enum Attempt {
    Written,
    Retry(String),
    Rejected {
        dropped: Option<u64>,
        message: String,
    },
}

const MAX_BACKOFF: Duration = Duration::from_secs(10);
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// InfluxDB's answer is read up to this many bytes.
const MAX_ANSWER: usize = 64 << 10;

impl Worker {
    async fn run(self, mut rx: tmpsc::UnboundedReceiver<Job>) {
        let client: Client<HttpConnector, Full<Bytes>> =
            Client::builder(TokioExecutor::new()).build_http();
        let mut pending = [Pending::default(), Pending::default()];
        let mut open = true;
        while open || pending.iter().any(|p| !p.jobs.is_empty()) {
            let due = pending
                .iter()
                .filter_map(|p| p.since)
                .min()
                .map(|t| t + self.batch_wait);
            let job = if !open {
                None
            } else if let Some(due) = due {
                match tokio::time::timeout_at(due, rx.recv()).await {
                    Ok(job) => job.or_else(|| {
                        open = false;
                        None
                    }),
                    Err(_) => None,
                }
            } else {
                let job = rx.recv().await;
                open = job.is_some();
                job
            };
            if let Some(job) = job {
                let [raw, long] = &mut pending;
                let p = match job.bucket {
                    Bucket::Raw => raw,
                    Bucket::Long => long,
                };
                p.points = p.points.saturating_add(job.points);
                p.since.get_or_insert_with(tokio::time::Instant::now);
                p.jobs.push(job);
            }
            let now = tokio::time::Instant::now();
            for (i, p) in pending.iter_mut().enumerate() {
                let full = p.points >= self.batch_points;
                let late = p.since.is_some_and(|t| now >= t + self.batch_wait);
                if !p.jobs.is_empty() && (full || late || !open) {
                    let batch = std::mem::take(p);
                    self.flush(&client, i, batch).await;
                }
            }
        }
    }

    async fn flush(&self, client: &Client<HttpConnector, Full<Bytes>>, bucket: usize, p: Pending) {
        let mut text = Vec::new();
        for job in &p.jobs {
            text.extend_from_slice(job.lines.as_bytes());
        }
        let body = gzip(&text);
        let deadline = p.jobs.iter().filter_map(|j| j.deadline).min();
        let uri = self.uris.get(bucket).cloned().unwrap_or_default();
        let mut backoff = Duration::from_millis(100);
        let outcome = loop {
            match self.attempt(client, &uri, body.clone()).await {
                Attempt::Written => {
                    self.counters.written.fetch_add(p.points, Ordering::Relaxed);
                    break Outcome::Written;
                }
                Attempt::Rejected { dropped, message } => {
                    let dropped = dropped.unwrap_or(p.points).min(p.points);
                    self.counters.rejected.fetch_add(dropped, Ordering::Relaxed);
                    self.counters
                        .written
                        .fetch_add(p.points.saturating_sub(dropped), Ordering::Relaxed);
                    eprintln!(
                        "ddshark-join: InfluxDB refused {dropped} of {} points ({uri}): {message}",
                        p.points
                    );
                    break Outcome::Rejected { dropped, message };
                }
                Attempt::Retry(why) => {
                    let late = deadline.is_some_and(|d| Instant::now() + backoff > d);
                    if self.stop.load(Ordering::Relaxed) || late {
                        self.counters
                            .abandoned
                            .fetch_add(p.points, Ordering::Relaxed);
                        break Outcome::Abandoned;
                    }
                    if backoff >= MAX_BACKOFF {
                        eprintln!("ddshark-join: InfluxDB: {why}; retrying every {MAX_BACKOFF:?}");
                    }
                    self.counters.retries.fetch_add(1, Ordering::Relaxed);
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
            }
        };
        self.counters.queued.fetch_sub(p.points, Ordering::Relaxed);
        for job in p.jobs {
            (job.done)(outcome.clone());
        }
    }

    async fn attempt(
        &self,
        client: &Client<HttpConnector, Full<Bytes>>,
        uri: &hyper::Uri,
        body: Bytes,
    ) -> Attempt {
        let req = hyper::Request::post(uri.clone())
            .header(hyper::header::AUTHORIZATION, self.auth.clone())
            .header(hyper::header::CONTENT_ENCODING, "gzip")
            .header(hyper::header::CONTENT_TYPE, "text/plain; charset=utf-8")
            .body(Full::new(body));
        let req = match req {
            Ok(r) => r,
            Err(e) => {
                return Attempt::Rejected {
                    dropped: None,
                    message: format!("request not built: {e}"),
                }
            }
        };
        let res = match tokio::time::timeout(REQUEST_TIMEOUT, client.request(req)).await {
            Err(_) => return Attempt::Retry(format!("no answer within {REQUEST_TIMEOUT:?}")),
            Ok(Err(e)) => return Attempt::Retry(format!("{e}")),
            Ok(Ok(res)) => res,
        };
        let status = res.status();
        let answer = match Limited::new(res.into_body(), MAX_ANSWER).collect().await {
            Ok(b) => String::from_utf8_lossy(&b.to_bytes()).into_owned(),
            Err(e) => format!("(answer unreadable: {e})"),
        };
        if status.is_success() {
            return Attempt::Written;
        }
        let message = message(&answer);
        if status.is_server_error() || status == hyper::StatusCode::TOO_MANY_REQUESTS {
            return Attempt::Retry(format!("HTTP {status}: {message}"));
        }
        Attempt::Rejected {
            dropped: dropped_count(&message),
            message: format!("HTTP {status}: {message}"),
        }
    }
}

/// InfluxDB's `{"code":…,"message":…}`, or the answer as it is (at most 500 characters).
fn message(answer: &str) -> String {
    let text = serde_json::from_str::<serde_json::Value>(answer)
        .ok()
        .and_then(|v| v.get("message").and_then(|m| m.as_str().map(String::from)))
        .unwrap_or_else(|| answer.to_owned());
    text.chars().take(500).collect()
}

/// The `dropped=N` of a partial write's message.
fn dropped_count(message: &str) -> Option<u64> {
    let at = message.find("dropped=")?;
    let rest = message.get(at + "dropped=".len()..)?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

fn gzip(text: &[u8]) -> Bytes {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    // (writing to a Vec cannot fail)
    let _ = enc.write_all(text);
    Bytes::from(enc.finish().unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_write_uri_names_org_bucket_and_ns() {
        let cfg = InfluxConfig {
            url: "http://127.0.0.1:8086/".into(),
            org: "my org".into(),
            token: "t".into(),
            raw_bucket: "ddshark".into(),
            long_bucket: "ddshark_long".into(),
            batch_points: 1,
            batch_wait: Duration::from_millis(1),
            max_queued_points: 1,
        };
        assert_eq!(
            write_uri(&cfg, "ddshark").unwrap().to_string(),
            "http://127.0.0.1:8086/api/v2/write?org=my%20org&bucket=ddshark&precision=ns"
        );
        let https = InfluxConfig {
            url: "https://x".into(),
            ..cfg
        };
        assert!(write_uri(&https, "b").is_err());
    }

    #[test]
    fn influxdbs_messages_are_read() {
        let m = message(
            r#"{"code":"unprocessable entity","message":"failure writing points to database: partial write: points beyond retention policy dropped=3"}"#,
        );
        assert!(m.starts_with("failure writing"));
        assert_eq!(dropped_count(&m), Some(3));
        assert_eq!(dropped_count("unable to parse"), None);
    }
}
