//! Shared helpers: a server on 127.0.0.1 with a closure as the handler.
#![allow(dead_code)]

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::service::service_fn;
use ssekit_hyper::BoxError;

pub type Resp = http::Response<UnsyncBoxBody<Bytes, BoxError>>;

pub fn boxed<B>(resp: http::Response<B>) -> Resp
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    resp.map(|b| b.map_err(Into::into).boxed_unsync())
}

/// Serves `handler` on a fresh 127.0.0.1 port, on the current runtime.
pub async fn spawn<F, Fut>(handler: F) -> SocketAddr
where
    F: Fn(http::Request<Incoming>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Resp> + Send + 'static,
{
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(ssekit_hyper::server::serve(
        listener,
        service_fn(move |req| {
            let handler = handler.clone();
            async move { Ok::<_, Infallible>(handler(req).await) }
        }),
    ));
    addr
}

/// How long a test may take before it is called hung: far past anything a loaded machine
/// needs, so only a hang fails a test, never a slow run.
pub const HANG: Duration = Duration::from_secs(60);

/// Fails a test that hangs instead of hanging the suite (after [`HANG`]). What a test
/// checks about time is what the code decided, never how fast this run was.
pub async fn within<T>(fut: impl Future<Output = T>) -> T {
    tokio::time::timeout(HANG, fut)
        .await
        .unwrap_or_else(|_| panic!("hung: no outcome after {HANG:?}"))
}

/// `(event type, data)` of every event in `wire`.
pub fn events(wire: &str) -> Vec<(String, String)> {
    let mut dec = ssekit::Decoder::new();
    dec.feed_slice(wire.as_bytes()).unwrap();
    let mut out = Vec::new();
    while let Some(frame) = dec.next_frame().unwrap() {
        if let ssekit::Frame::Event(e) = frame {
            out.push((e.event_type().to_owned(), e.data().to_owned()));
        }
    }
    out
}
