//! What `ssekit serve` shows the people who run it: a log on stderr (tracing-subscriber; the
//! `RUST_LOG` filter syntax, `info` by default, which is the access log: one line per stream
//! at its end) and, with `--metrics-addr`, every ssekit metric as Prometheus text at
//! `GET /metrics` on an address of its own.

use std::convert::Infallible;
use std::io::IsTerminal;
use std::time::Duration;

use bytes::Bytes;
use http::{header, Request, Response, StatusCode};
use http_body_util::Full;
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use ssekit_http::runtime::Runtime;
use ssekit_http::server::{serve_on, Accept, HttpService, ServeOptions};
use tracing_subscriber::EnvFilter;

use crate::CliError;

/// The filter when `RUST_LOG` is not set: the access log and every warning.
pub const DEFAULT_FILTER: &str = "info";

/// How often the Prometheus recorder's histograms are folded, scraped or not (bounded memory).
const UPKEEP: Duration = Duration::from_secs(5);

/// Starts the log: `RUST_LOG`'s directives, or [`DEFAULT_FILTER`], to stderr (stdout carries
/// the lines scripts read). A `RUST_LOG` that does not parse is a usage error that says why.
pub fn start_logging() -> Result<(), CliError> {
    let filter = match std::env::var("RUST_LOG") {
        Ok(directives) => EnvFilter::try_new(&directives)
            .map_err(|e| CliError::Usage(format!("bad RUST_LOG {directives:?}: {e}")))?,
        Err(_) => EnvFilter::new(DEFAULT_FILTER),
    };
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .try_init()
        .map_err(|e| CliError::Usage(format!("cannot start the log: {e}")))
}

/// Installs the Prometheus recorder as the process's `metrics` recorder, with ssekit's help
/// texts, and returns the handle that renders it.
pub fn start_metrics() -> Result<PrometheusHandle, CliError> {
    let handle = PrometheusBuilder::new()
        .install_recorder()
        .map_err(|e| CliError::Usage(format!("cannot start the metrics recorder: {e}")))?;
    ssekit_http::observe::describe();
    Ok(handle)
}

/// `GET /metrics`: the recorder's text exposition; any other path is a 404.
fn metrics_service(handle: PrometheusHandle) -> impl HttpService<Full<Bytes>> {
    hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
        let handle = handle.clone();
        async move {
            let mut resp = if req.uri().path() == "/metrics" {
                handle.run_upkeep();
                let mut resp = Response::new(Full::new(Bytes::from(handle.render())));
                resp.headers_mut().insert(
                    header::CONTENT_TYPE,
                    http::HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
                );
                resp
            } else {
                let mut resp = Response::new(Full::new(Bytes::from_static(b"not found\n")));
                *resp.status_mut() = StatusCode::NOT_FOUND;
                resp
            };
            resp.headers_mut().insert(
                header::CACHE_CONTROL,
                http::HeaderValue::from_static("no-cache"),
            );
            Ok::<_, Infallible>(resp)
        }
    })
}

/// Serves [`metrics_service`] on `listener`, and keeps the recorder up, on `runtime`, for as
/// long as the process runs.
pub fn serve_metrics<R: Runtime, L: Accept<R>>(runtime: &R, listener: L, handle: PrometheusHandle) {
    keep_up(runtime, handle.clone());
    let service = metrics_service(handle);
    let rt = runtime.clone();
    runtime.spawn(async move {
        let forever = std::future::pending();
        let _ = serve_on(rt, listener, service, forever, ServeOptions::default()).await;
    });
}

/// Folds the recorder's histograms every [`UPKEEP`], for as long as the server runs.
fn keep_up<R: Runtime>(runtime: &R, handle: PrometheusHandle) {
    let rt = runtime.clone();
    runtime.spawn(async move {
        loop {
            rt.sleep(UPKEEP).await;
            handle.run_upkeep();
        }
    });
}
