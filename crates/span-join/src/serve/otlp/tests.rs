//! The servers on loopback, a thread standing in for the run loop: what each bad request
//! gets, that it is counted, and that the join goes on.

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::sync::Mutex;

use opentelemetry_proto::tonic::collector::trace::v1::trace_service_client::TraceServiceClient;
use prost::Message;

use super::*;
use crate::otlp::tests::{frag, request, sample};
use crate::JoinSettings;

const W: &str = "0102030405060708090a0b0c00000103";
const T: u64 = 1_700_000_000_000_000_000;

struct Running {
    servers: Servers,
    join: Arc<Mutex<SpanJoin>>,
}

fn running(token: Option<&str>, max_message: usize) -> Running {
    let dir = std::env::temp_dir().join(format!("ddshark-join-otlp-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let token_file = token.map(|t| {
        let path = dir.join(format!("token-{t}"));
        let _ = std::fs::write(&path, format!("{t}\n"));
        path
    });
    let args = OtlpArgs {
        grpc: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
        http: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
        token_file,
        tls_cert: None,
        tls_key: None,
        max_message,
    };
    let (tx, rx) = mpsc::sync_channel(16);
    let servers = match start(&args, tx, None) {
        Ok(s) => s,
        Err(e) => panic!("{e:#}"),
    };
    let join = Arc::new(Mutex::new(SpanJoin::new(JoinSettings::default())));
    let fed = join.clone();
    std::thread::spawn(move || {
        for input in rx {
            if let Input::Export(export) = input {
                let mut join = fed.lock().unwrap_or_else(|e| e.into_inner());
                take(
                    &mut join,
                    &mut None,
                    None,
                    &mut RawLayout::default(),
                    export,
                );
            }
        }
    });
    Running { servers, join }
}

impl Running {
    fn refused(&self) -> u64 {
        self.servers.refused.load(Ordering::Relaxed)
    }

    fn spans(&self) -> (u64, u64) {
        let join = self.join.lock().unwrap_or_else(|e| e.into_inner());
        (join.counters.spans, join.counters.rejected)
    }

    /// A raw HTTP/1.1 exchange: the status code and the body.
    fn http(&self, head: &str, body: &[u8]) -> (u16, String) {
        let Some(addr) = self.servers.http else {
            panic!("no HTTP server")
        };
        let mut conn = TcpStream::connect(addr).unwrap_or_else(|e| panic!("{e}"));
        let head = format!(
            "{head}\r\nHost: join\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        let _ = conn.write_all(head.as_bytes());
        let _ = conn.write_all(body);
        let mut answer = Vec::new();
        let _ = conn.read_to_end(&mut answer);
        let text = String::from_utf8_lossy(&answer).into_owned();
        let status = text
            .split(' ')
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let body = text.split("\r\n\r\n").nth(1).unwrap_or("").to_owned();
        (status, body)
    }

    fn grpc(
        &self,
        req: ExportTraceServiceRequest,
        token: Option<&str>,
    ) -> Result<ExportTraceServiceResponse, tonic::Status> {
        let Some(addr) = self.servers.grpc else {
            panic!("no gRPC server")
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        rt.block_on(async move {
            let mut client = TraceServiceClient::connect(format!("http://{addr}"))
                .await
                .unwrap_or_else(|e| panic!("{e}"))
                .max_encoding_message_size(64 << 20);
            let mut req = tonic::Request::new(req);
            if let Some(t) = token {
                if let Ok(v) = format!("Bearer {t}").parse() {
                    req.metadata_mut().insert("authorization", v);
                }
            }
            client.export(req).await.map(|r| r.into_inner())
        })
    }
}

const PROTOBUF: &str = "POST /v1/traces HTTP/1.1\r\nContent-Type: application/x-protobuf";

#[test]
fn http_takes_an_export_and_refuses_bad_requests_naming_why() {
    let r = running(None, 64 << 10);
    let good = request("a", vec![sample(W, 1, T, T + 5), frag(W, 1, 1, T)]).encode_to_vec();
    let (status, body) = r.http(PROTOBUF, &good);
    assert_eq!(status, 200, "{body}");
    assert_eq!(r.spans(), (2, 0));
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let _ = gz.write_all(&request("b", vec![sample(W, 1, T + 9, T + 15)]).encode_to_vec());
    let zipped = gz.finish().unwrap_or_default();
    let (status, _) = r.http(&format!("{PROTOBUF}\r\nContent-Encoding: gzip"), &zipped);
    assert_eq!((status, r.spans()), (200, (3, 0)));
    assert_eq!(r.refused(), 0);

    let truncated = &good[..good.len() - 7];
    let big = request("a", (0..2000).map(|k| sample(W, k, T, T + 1)).collect()).encode_to_vec();
    let mut bomb = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    let _ = bomb.write_all(&vec![0u8; 1 << 20]);
    let bomb = bomb.finish().unwrap_or_default();
    let mut odd = sample(W, 1, T, T);
    odd.name = "GOSSIP".into();
    let odd = request("a", vec![odd]).encode_to_vec();
    let cases: Vec<(String, Vec<u8>, u16, &str)> = vec![
        (
            PROTOBUF.into(),
            truncated.to_vec(),
            400,
            "not an OTLP ExportTraceServiceRequest",
        ),
        (
            PROTOBUF.into(),
            big,
            413,
            "larger than --otlp-max-message (65536 bytes)",
        ),
        (
            format!("{PROTOBUF}\r\nContent-Encoding: gzip"),
            bomb,
            413,
            "larger than --otlp-max-message",
        ),
        (
            format!("{PROTOBUF}\r\nContent-Encoding: gzip"),
            good.clone(),
            400,
            "gzip:",
        ),
        (
            PROTOBUF.into(),
            odd,
            400,
            "1 spans refused, none taken: span name \"GOSSIP\"",
        ),
        (
            "POST /v1/traces HTTP/1.1\r\nContent-Type: application/json".into(),
            b"{}".to_vec(),
            415,
            "only application/x-protobuf",
        ),
        (
            "POST /v1/profiles HTTP/1.1\r\nContent-Type: application/x-protobuf".into(),
            good.clone(),
            404,
            "only /v1/traces, /v1/metrics and /v1/logs",
        ),
        (
            // (metrics are written to InfluxDB: none here)
            "POST /v1/metrics HTTP/1.1\r\nContent-Type: application/x-protobuf".into(),
            Vec::new(),
            400,
            "start the join with --influx-url",
        ),
        (
            "GET /v1/traces HTTP/1.1".into(),
            Vec::new(),
            405,
            "only POST",
        ),
    ];
    for (n, (head, body, want, says)) in cases.into_iter().enumerate() {
        let (status, text) = r.http(&head, &body);
        assert_eq!(status, want, "{head}: {text}");
        assert!(text.contains(says), "{head}: {text}");
        assert_eq!(r.refused(), n as u64 + 1, "{head}: counted");
    }
    // (the GOSSIP span counted rejected; the join goes on)
    assert_eq!(r.spans(), (4, 1));
    let (status, _) = r.http(PROTOBUF, &good);
    assert_eq!((status, r.spans()), (200, (6, 1)));
}

#[test]
fn the_bearer_token_is_required_when_given() {
    let r = running(Some("s3cret"), 1 << 20);
    let good = request("a", vec![sample(W, 1, T, T + 5)]);
    let (status, text) = r.http(PROTOBUF, &good.encode_to_vec());
    assert_eq!(status, 401, "{text}");
    let (status, _) = r.http(
        &format!("{PROTOBUF}\r\nAuthorization: Bearer wrong!"),
        &good.encode_to_vec(),
    );
    assert_eq!(status, 401);
    let (status, _) = r.http(
        &format!("{PROTOBUF}\r\nAuthorization: Bearer s3cret"),
        &good.encode_to_vec(),
    );
    assert_eq!(status, 200);
    let status = r.grpc(good.clone(), None).err().map(|s| s.code());
    assert_eq!(status, Some(tonic::Code::Unauthenticated));
    assert!(r.grpc(good, Some("s3cret")).is_ok());
    assert_eq!((r.refused(), r.spans()), (3, (2, 0)));
}

#[test]
fn grpc_takes_an_export_and_refuses_bad_ones() {
    let r = running(None, 64 << 10);
    let mut bad = frag(W, 1, 2, T);
    bad.attributes
        .retain(|a| a.key != span_schema::attr::WRITER_ID);
    let partly = request("a", vec![sample(W, 1, T, T + 5), bad.clone()]);
    let answer = r.grpc(partly, None).unwrap_or_else(|e| panic!("{e}"));
    let partial = answer.partial_success.unwrap_or_default();
    assert_eq!(partial.rejected_spans, 1);
    assert_eq!(
        partial.error_message,
        "DATA_FRAG span without the attribute `writer_id`"
    );
    assert_eq!((r.refused(), r.spans()), (0, (2, 1)));

    let status = r.grpc(request("a", vec![bad]), None).err();
    assert_eq!(
        status.as_ref().map(|s| s.code()),
        Some(tonic::Code::InvalidArgument)
    );
    assert!(status.is_some_and(|s| s.message().contains("without the attribute `writer_id`")));
    let big = request("a", (0..2000).map(|k| sample(W, k, T, T + 1)).collect());
    let status = r.grpc(big, None).err().map(|s| s.code());
    assert_eq!(status, Some(tonic::Code::OutOfRange));
    assert_eq!((r.refused(), r.spans()), (2, (3, 2)));
    assert!(r
        .grpc(request("b", vec![frag(W, 1, 2, T + 9)]), None)
        .is_ok());
    assert_eq!(r.spans(), (4, 2));
}

#[test]
fn beyond_loopback_the_token_and_tls_are_required() {
    let (tx, _rx) = mpsc::sync_channel(1);
    let mut args = OtlpArgs {
        grpc: Some(SocketAddr::from(([0, 0, 0, 0], 0))),
        http: None,
        token_file: None,
        tls_cert: None,
        tls_key: None,
        max_message: 1 << 20,
    };
    let said = |args: &OtlpArgs| {
        start(args, tx.clone(), None)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    };
    assert!(said(&args).starts_with("--otlp-grpc 0.0.0.0:0 listens beyond loopback: give the bearer token the exporters send with --otlp-token-file FILE"), "{}", said(&args));
    args.token_file = Some("/nonexistent/token".into());
    assert!(
        said(&args).contains("give TLS with --otlp-tls-cert FILE and --otlp-tls-key FILE"),
        "{}",
        said(&args)
    );
}
