//! Shared helpers: a server on 127.0.0.1 (ssekit-hyper's, on tokio) with a closure as the
//! handler; the providers under test run on either transport.

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

/// Fails a test that hangs instead of hanging the suite.
pub async fn within<T>(secs: u64, fut: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(secs), fut)
        .await
        .expect("test timed out")
}
