//! An HTTPS server on 127.0.0.1 with a certificate made at start (self-signed), serving a page
//! that opens `STREAMS` `EventSource`s to itself and holds them open: over HTTP/1.1 a browser
//! opens at most six connections per origin, so the seventh stream would never start; over
//! HTTP/2 (ALPN) they share one connection. `GET /stats` says how many streams were open at
//! once and over which HTTP versions they came. `interop/node/check_browser_h2.mjs` drives
//! Chromium against it.
//!
//! ```text
//! cargo run -p ssekit-hyper --example h2_server     # prints: listening on https://127.0.0.1:PORT
//! ```

use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use hyper::service::service_fn;
use ssekit::Event;
use ssekit_hyper::server::{response, serve_with, AnyBody, ServeOptions, SseBody};

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

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> std::io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:0".to_owned());
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    println!("listening on https://{}", listener.local_addr()?);
    let stats = Arc::new(Stats::default());
    let service = service_fn(move |req: http::Request<hyper::body::Incoming>| {
        let stats = stats.clone();
        async move {
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
                    // Three events, then the stream stays open (holding its connection, or
                    // its HTTP/2 stream) until the page goes away.
                    let events = futures_util::stream::iter(1..=3)
                        .then(|n| async move {
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            Event::message(n.to_string())
                        })
                        .chain(futures_util::stream::pending())
                        .map(move |event| {
                            let _held = &guard;
                            event
                        });
                    let body = SseBody::new(events).keep_alive(Duration::from_secs(5));
                    response(body.into())
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
            Ok::<_, Infallible>(resp)
        }
    });
    let options = ServeOptions::default().tls(certificate());
    serve_with(listener, service, std::future::pending(), options).await
}
