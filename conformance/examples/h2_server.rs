//! An HTTPS server on 127.0.0.1 with a certificate made at start (self-signed), serving a page
//! that opens `STREAMS` `EventSource`s to itself and holds them open: over HTTP/1.1 a browser
//! opens at most six connections per origin, so the seventh stream would never start; over
//! HTTP/2 (ALPN) they share one connection. `GET /stats` says how many streams were open at
//! once and over which HTTP versions they came. `interop/node/check_browser_h2.mjs` drives
//! Chromium against it, on each runtime: the same routes served by `ssekit_smol::server::
//! serve_with` or by `ssekit_hyper::server::serve_with` (tokio).
//!
//! ```text
//! cargo run -p ssekit-conformance --example h2_server -- 127.0.0.1:0 smol    # or: hyper
//! # prints: listening on https://127.0.0.1:PORT
//! ```

use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::stream::BoxStream;
use futures_util::StreamExt;
use hyper::service::service_fn;
use ssekit::Event;
use ssekit_http::server::{response, AnyBody, ServeOptions};

/// How many streams the page opens at once.
const STREAMS: usize = 10;

const PAGE: &str = r#"<!doctype html><meta charset="utf-8"><title>ssekit over HTTP/2</title>
<script>
const STREAMS = __STREAMS__;
window.counts = new Array(STREAMS).fill(0);
window.finished = false;
for (let i = 0; i < STREAMS; i++) {
  const source = new EventSource(`/stream?i=${i}`);
  source.onmessage = () => {
    window.counts[i] += 1;
    if (window.counts.every((n) => n >= 3)) window.finished = true;
  };
}
</script>"#;

#[derive(Default)]
struct Stats {
    open: AtomicUsize,
    max_open: AtomicUsize,
    versions: Mutex<Vec<String>>,
}

/// Counts a stream as open until dropped.
struct Open(Arc<Stats>);

impl Drop for Open {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::SeqCst);
    }
}

fn certificate() -> Arc<rustls::ServerConfig> {
    let cert = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned()])
        .expect("a self-signed certificate");
    let der = cert.cert.der().clone();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(rustls::pki_types::PrivatePkcs8KeyDer::from(
        cert.key_pair.serialize_der(),
    ));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_no_client_auth()
        .with_single_cert(vec![der], key)
        .expect("the certificate and its key");
    Arc::new(config)
}

/// The runtime's `SseBody` for `events`, with keep-alive comments.
type MakeBody = fn(BoxStream<'static, Event>) -> AnyBody;

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:0".to_owned());
    let runtime = args.next().unwrap_or_else(|| "smol".to_owned());
    let options = ServeOptions::default().tls(certificate());
    let stats = Arc::new(Stats::default());
    match runtime.as_str() {
        "smol" => smol::block_on(async {
            let listener = smol::net::TcpListener::bind(&addr).await?;
            println!("listening on https://{} (smol)", listener.local_addr()?);
            let sse: MakeBody = |events| {
                let body = ssekit_smol::server::SseBody::new(events);
                body.keep_alive(Duration::from_secs(5)).into()
            };
            let service = service_fn(move |req| route(req, stats.clone(), sse));
            ssekit_smol::server::serve_with(listener, service, std::future::pending(), options)
                .await
        }),
        "hyper" => {
            let tokio = tokio::runtime::Runtime::new()?;
            tokio.block_on(async {
                let listener = tokio::net::TcpListener::bind(&addr).await?;
                println!("listening on https://{} (hyper)", listener.local_addr()?);
                let sse: MakeBody = |events| {
                    let body = ssekit_hyper::server::SseBody::new(events);
                    body.keep_alive(Duration::from_secs(5)).into()
                };
                let service = service_fn(move |req| route(req, stats.clone(), sse));
                let stop = std::future::pending();
                ssekit_hyper::server::serve_with(listener, service, stop, options).await
            })
        }
        other => Err(std::io::Error::other(format!(
            "unknown runtime {other:?}: smol or hyper"
        ))),
    }
}

/// The page, its streams and `/stats`.
async fn route(
    req: http::Request<hyper::body::Incoming>,
    stats: Arc<Stats>,
    sse: MakeBody,
) -> Result<http::Response<AnyBody>, Infallible> {
    let resp = match req.uri().path() {
        "/" => {
            let page = PAGE.replace("__STREAMS__", &STREAMS.to_string());
            let mut resp = http::Response::new(AnyBody::from(page));
            resp.headers_mut().insert(
                http::header::CONTENT_TYPE,
                http::HeaderValue::from_static("text/html; charset=utf-8"),
            );
            resp
        }
        "/stream" => {
            stats
                .versions
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(format!("{:?}", req.version()));
            let open = stats.open.fetch_add(1, Ordering::SeqCst) + 1;
            stats.max_open.fetch_max(open, Ordering::SeqCst);
            let guard = Open(stats.clone());
            // Three events, then the stream stays open (holding its connection, or its
            // HTTP/2 stream) until the page goes away.
            let events = futures_util::stream::iter(1..=3)
                .then(|n| async move {
                    async_io::Timer::after(Duration::from_millis(50)).await;
                    Event::message(n.to_string())
                })
                .chain(futures_util::stream::pending())
                .map(move |event| {
                    let _held = &guard;
                    event
                });
            response(sse(events.boxed()))
        }
        "/stats" => {
            let versions = stats
                .versions
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone();
            let json = serde_json::json!({
                "max_open": stats.max_open.load(Ordering::SeqCst),
                "versions": versions,
            });
            http::Response::new(AnyBody::from(json.to_string()))
        }
        _ => {
            let mut resp = http::Response::new(AnyBody::from("not found"));
            *resp.status_mut() = http::StatusCode::NOT_FOUND;
            resp
        }
    };
    Ok(resp)
}
