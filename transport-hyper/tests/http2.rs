//! HTTP/2 on loopback: the server speaks it over TLS (ALPN) and in clear text (h2c, prior
//! knowledge), and many event streams share one connection: a browser holds at most six
//! HTTP/1.1 connections per origin, and each `EventSource` keeps one. The hyper client
//! negotiates HTTP/2 by ALPN and carries every stream to the origin on one connection.
#![cfg(feature = "rustls")]

#[allow(unused_macros, unused_imports)]
#[path = "../../transport-smol/tests/tls_kit/mod.rs"]
mod tls_kit;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use http_body_util::BodyExt;
use hyper::service::service_fn;
use ssekit::Event;
use ssekit_hyper::client::{https_client, EventSource};
use ssekit_hyper::server::{response, serve_with, ServeOptions, SseBody};
use tls_kit::{once, Certs};

const STREAMS: usize = 10;

/// A server of three events per request, recording each request's HTTP version.
async fn server(options: ServeOptions) -> (SocketAddr, Arc<Mutex<Vec<http::Version>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let versions = Arc::new(Mutex::new(Vec::new()));
    let seen = versions.clone();
    let service = service_fn(move |req: http::Request<hyper::body::Incoming>| {
        seen.lock().unwrap().push(req.version());
        let path = req.uri().path().to_owned();
        async move {
            let events = (1..=3).map(move |n| Event::message(format!("{path} {n}")));
            Ok::<_, Infallible>(response(SseBody::new(futures_util::stream::iter(events))))
        }
    });
    tokio::spawn(serve_with(
        listener,
        service,
        std::future::pending(),
        options,
    ));
    (addr, versions)
}

/// A TCP forwarder to `to` that counts the connections made through it.
async fn counting_forwarder(to: SocketAddr) -> (SocketAddr, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let count = Arc::new(AtomicUsize::new(0));
    let counted = count.clone();
    tokio::spawn(async move {
        while let Ok((mut inbound, _)) = listener.accept().await {
            counted.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                if let Ok(mut outbound) = tokio::net::TcpStream::connect(to).await {
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                }
            });
        }
    });
    (addr, count)
}

async fn within<T>(fut: impl std::future::Future<Output = T>) -> T {
    // Only a hang fails: a loaded machine may be slow, never this slow.
    tokio::time::timeout(Duration::from_secs(60), fut)
        .await
        .expect("hung: no outcome after 60 s")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn event_streams_share_one_http2_connection_over_tls() {
    within(async {
        let options = ServeOptions::default().tls(Certs::loopback().server());
        let (server, versions) = server(options).await;
        let (through, connections) = counting_forwarder(server).await;
        let client = https_client(Certs::loopback().client());
        let read = |path: String| {
            let url = format!("https://127.0.0.1:{}{path}", through.port());
            let source = EventSource::get(&url).unwrap().client(client.clone());
            source.reconnect(once()).events().collect::<Vec<_>>()
        };
        // The first stream sets up the connection; the others then open on it, together.
        let first = read("/s0".into()).await;
        assert_eq!(first.len(), 3, "{first:?}");
        let rest =
            futures_util::future::join_all((1..STREAMS).map(|i| read(format!("/s{i}")))).await;
        for (i, events) in rest.iter().enumerate() {
            let data: Vec<_> = events
                .iter()
                .map(|e| e.as_ref().unwrap().data().to_owned())
                .collect();
            let path = format!("/s{}", i + 1);
            assert_eq!(data, [1, 2, 3].map(|n| format!("{path} {n}")));
        }
        assert_eq!(connections.load(Ordering::SeqCst), 1, "one TCP connection");
        let versions = versions.lock().unwrap();
        assert_eq!(versions.len(), STREAMS);
        assert!(
            versions.iter().all(|v| *v == http::Version::HTTP_2),
            "{versions:?}"
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_speaks_h2c_by_prior_knowledge_and_http1_on_the_same_port() {
    within(async {
        let (server, versions) = server(ServeOptions::default()).await;
        let tcp = tokio::net::TcpStream::connect(server).await.unwrap();
        let io = hyper_util::rt::TokioIo::new(tcp);
        let (sender, conn) =
            hyper::client::conn::http2::handshake(hyper_util::rt::TokioExecutor::new(), io)
                .await
                .unwrap();
        tokio::spawn(conn);
        let bodies = (0..STREAMS).map(|i| {
            let mut sender = sender.clone();
            async move {
                let req = http::Request::get(format!("http://{server}/h{i}"))
                    .body(http_body_util::Empty::<Bytes>::new())
                    .unwrap();
                let resp = sender.send_request(req).await.unwrap();
                assert_eq!(resp.headers()["content-type"], "text/event-stream");
                resp.into_body().collect().await.unwrap().to_bytes()
            }
        });
        for (i, body) in futures_util::future::join_all(bodies)
            .await
            .into_iter()
            .enumerate()
        {
            let want = format!("data: /h{i} 1\n\ndata: /h{i} 2\n\ndata: /h{i} 3\n\n");
            assert_eq!(body, want.as_bytes());
        }
        // HTTP/1.1 on the same port.
        let tcp = tokio::net::TcpStream::connect(server).await.unwrap();
        let (mut sender, conn) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tcp))
                .await
                .unwrap();
        tokio::spawn(conn);
        let req = http::Request::get("/one")
            .header("host", "127.0.0.1")
            .body(http_body_util::Empty::<Bytes>::new())
            .unwrap();
        let body = sender
            .send_request(req)
            .await
            .unwrap()
            .into_body()
            .collect()
            .await;
        assert!(body.unwrap().to_bytes().starts_with(b"data: /one 1\n\n"));
        let versions = versions.lock().unwrap();
        assert_eq!(
            versions
                .iter()
                .filter(|v| **v == http::Version::HTTP_2)
                .count(),
            STREAMS
        );
        assert_eq!(versions.last(), Some(&http::Version::HTTP_11));
    })
    .await;
}
