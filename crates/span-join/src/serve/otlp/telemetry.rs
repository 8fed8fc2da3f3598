//! ddshark's OTLP metrics and logs at the same door as the spans (gRPC `MetricsService` and
//! `LogsService`, HTTP `/v1/metrics` and `/v1/logs`; the same token and TLS): converted on
//! the server's runtime in Telegraf's layout ([`crate::telemetry`]) and written to InfluxDB
//! by the join's writer; the export is answered only once InfluxDB took them (else
//! "retry": the collector sends it again, and the same points overwrite themselves).
//! They never reach the join's run loop: nothing of the join depends on them.

use std::sync::atomic::{AtomicU64, Ordering};

use opentelemetry_proto::tonic::collector::logs::v1::logs_service_server::LogsService;
use opentelemetry_proto::tonic::collector::logs::v1::{
    ExportLogsPartialSuccess, ExportLogsServiceRequest, ExportLogsServiceResponse,
};
use opentelemetry_proto::tonic::collector::metrics::v1::metrics_service_server::MetricsService;
use opentelemetry_proto::tonic::collector::metrics::v1::{
    ExportMetricsPartialSuccess, ExportMetricsServiceRequest, ExportMetricsServiceResponse,
};
use tokio::sync::oneshot;

use super::{Door, DoorError, Grpc, Reply};
use crate::influxdb::{Bucket, Outcome};
use crate::telemetry::{convert_logs, convert_metrics, TelemetryLines};

/// What the metrics and logs intake counted (in the join's `ddshark_join` point).
#[derive(Debug, Default)]
pub(in crate::serve) struct TelemetryCounters {
    /// Metric points and log records InfluxDB took.
    pub(in crate::serve) points: AtomicU64,
    /// Data points and log records refused (no timestamp, an exponential histogram, no
    /// field InfluxDB can store, …), each named in the export's answer.
    pub(in crate::serve) rejected: AtomicU64,
}

/// The arrival time (ns since the epoch): a log record without a time gets it, as
/// Telegraf stamped it.
fn arrival_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .ok()
        .and_then(|d| i64::try_from(d.as_nanos()).ok())
        .unwrap_or(0)
}

impl Door {
    pub(super) async fn metrics(
        &self,
        request: &ExportMetricsServiceRequest,
    ) -> Result<Reply, DoorError> {
        self.write_telemetry(convert_metrics(request), "data points")
            .await
    }

    pub(super) async fn logs(
        &self,
        request: &ExportLogsServiceRequest,
    ) -> Result<Reply, DoorError> {
        self.write_telemetry(convert_logs(request, arrival_ns()), "log records")
            .await
    }

    /// The lines written to both buckets; the answer once InfluxDB took both.
    async fn write_telemetry(&self, lines: TelemetryLines, what: &str) -> Result<Reply, DoorError> {
        let Some(writer) = self.influx.clone() else {
            return Err(DoorError::Refused(format!(
                "{what} are written to InfluxDB: start the join with --influx-url"
            )));
        };
        self.telemetry
            .rejected
            .fetch_add(lines.rejected, Ordering::Relaxed);
        let message = lines
            .first_error
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default();
        if lines.points() == 0 && lines.rejected > 0 {
            return Ok(Reply::Refused(format!(
                "{} {what} refused, none taken: {message}",
                lines.rejected
            )));
        }
        let mut answers = Vec::new();
        for (bucket, text, points) in [
            (Bucket::Raw, lines.raw, lines.raw_points),
            (Bucket::Long, lines.long, lines.long_points),
        ] {
            if points == 0 {
                continue;
            }
            let (tx, rx) = oneshot::channel();
            writer.try_submit(bucket, text, points, move |outcome| {
                let _ = tx.send(outcome);
            });
            answers.push((rx, points));
        }
        let mut rejected = lines.rejected;
        let mut message = message;
        for (answer, points) in answers {
            match answer.await.unwrap_or(Outcome::Abandoned) {
                Outcome::Written => {
                    self.telemetry.points.fetch_add(points, Ordering::Relaxed);
                }
                Outcome::Rejected { dropped, message: m } => {
                    rejected = rejected.saturating_add(dropped);
                    message = format!("InfluxDB refused {what}: {m}");
                }
                Outcome::Abandoned => {
                    return Ok(Reply::Retry(format!(
                        "InfluxDB did not take the {what} yet (or --influx-max-queued points wait); send again"
                    )))
                }
            }
        }
        Ok(Reply::Taken { rejected, message })
    }
}

/// The metrics answer to a reply (partial success when some points were refused).
pub(super) fn metrics_response(rejected: u64, message: String) -> ExportMetricsServiceResponse {
    ExportMetricsServiceResponse {
        partial_success: (rejected > 0).then(|| ExportMetricsPartialSuccess {
            rejected_data_points: crate::as_i64(rejected),
            error_message: message,
        }),
    }
}

/// The logs answer to a reply.
pub(super) fn logs_response(rejected: u64, message: String) -> ExportLogsServiceResponse {
    ExportLogsServiceResponse {
        partial_success: (rejected > 0).then(|| ExportLogsPartialSuccess {
            rejected_log_records: crate::as_i64(rejected),
            error_message: message,
        }),
    }
}

/// A reply as a gRPC answer.
fn grpc<T>(
    reply: Result<Reply, DoorError>,
    response: impl FnOnce(u64, String) -> T,
) -> Result<tonic::Response<T>, tonic::Status> {
    match reply {
        Ok(Reply::Taken { rejected, message }) => {
            Ok(tonic::Response::new(response(rejected, message)))
        }
        Ok(Reply::Refused(message)) | Err(DoorError::Refused(message)) => {
            Err(tonic::Status::invalid_argument(message))
        }
        Ok(Reply::Retry(message)) => Err(tonic::Status::unavailable(message)),
        Err(e @ DoorError::Unauthenticated) => Err(tonic::Status::unauthenticated(e.to_string())),
        Err(e @ DoorError::Busy) => Err(tonic::Status::unavailable(e.to_string())),
    }
}

#[tonic::async_trait]
impl MetricsService for Grpc {
    async fn export(
        &self,
        request: tonic::Request<ExportMetricsServiceRequest>,
    ) -> Result<tonic::Response<ExportMetricsServiceResponse>, tonic::Status> {
        let reply = match self.authorised_request(request) {
            Ok(request) => self.0.metrics(&request).await,
            Err(e) => Err(e),
        };
        grpc(reply, metrics_response)
    }
}

#[tonic::async_trait]
impl LogsService for Grpc {
    async fn export(
        &self,
        request: tonic::Request<ExportLogsServiceRequest>,
    ) -> Result<tonic::Response<ExportLogsServiceResponse>, tonic::Status> {
        let reply = match self.authorised_request(request) {
            Ok(request) => self.0.logs(&request).await,
            Err(e) => Err(e),
        };
        grpc(reply, logs_response)
    }
}
