//! HTTP/2 and the connection pool on smol, on loopback: the smol server speaks HTTP/2 over
//! TLS (ALPN) and in clear text (h2c, prior knowledge) beside HTTP/1.1; the smol client
//! negotiates `h2` by ALPN and carries every stream to an origin on one connection, also
//! when they start together, against the smol and the hyper server alike; an idle HTTP/1.1
//! connection carries the next request, and one the server closed is replaced.
#[allow(unused_macros, unused_imports)]
#[path = "../../transport-smol/tests/tls_kit/mod.rs"]
mod tls_kit;

use std::convert::Infallible;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures_lite::StreamExt;
use http_body_util::BodyExt;
use hyper::service::service_fn;
use ssekit::Event;
use ssekit_http::io::HttpIo;
use ssekit_smol::client::{ClientOptions, EventSource, HttpClient, SmolHttp};
use ssekit_smol::server::{response, serve_with, ServeOptions, SseBody};
use tls_kit::{once, Certs};

const STREAMS: usize = 10;

type Versions = Arc<Mutex<Vec<http::Version>>>;

/// A service of three events per request (or `ok` on `/json`), recording each request's
/// HTTP version.
fn service(
    versions: Versions,
) -> impl hyper::service::Service<
    http::Request<hyper::body::Incoming>,
    Response = http::Response<ssekit_smol::server::AnyBody>,
    Error = Infallible,
    Future = impl Send,
> + Clone
       + Send
       + 'static {
    service_fn(move |req: http::Request<hyper::body::Incoming>| {
        versions.lock().unwrap().push(req.version());
        let path = req.uri().path().to_owned();
        async move {
            if path == "/json" {
                return Ok::<_, Infallible>(http::Response::new("{\"ok\":true}".into()));
            }
            if path == "/tick" {
                // An event every 50 ms, for ever.
                let ticks = futures_lite::stream::unfold(0u64, |n| async move {
                    async_io::Timer::after(Duration::from_millis(50)).await;
                    Some((Event::message(n.to_string()), n + 1))
                });
                return Ok(response(SseBody::new(ticks).into()));
            }
            let events = (1..=3).map(move |n| Event::message(format!("{path} {n}")));
            Ok(response(
                SseBody::new(futures_lite::stream::iter(events)).into(),
            ))
        }
    })
}

/// The smol server with `options` on a thread of its own.
fn smol_server(options: ServeOptions) -> (SocketAddr, Versions) {
    let listener = smol::block_on(smol::net::TcpListener::bind("127.0.0.1:0")).unwrap();
    let addr = listener.local_addr().unwrap();
    let versions = Versions::default();
    let service = service(versions.clone());
    std::thread::spawn(move || {
        smol::block_on(serve_with(
            listener,
            service,
            std::future::pending(),
            options,
        ))
    });
    (addr, versions)
}

/// The hyper (tokio) server over TLS on a thread of its own.
fn hyper_server() -> (SocketAddr, Versions) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let versions = Versions::default();
    let seen = versions.clone();
    let service = service_fn(move |req: http::Request<hyper::body::Incoming>| {
        seen.lock().unwrap().push(req.version());
        let path = req.uri().path().to_owned();
        async move {
            let events = (1..=3).map(move |n| Event::message(format!("{path} {n}")));
            Ok::<_, Infallible>(ssekit_hyper::server::response(
                ssekit_hyper::server::SseBody::new(futures_util::stream::iter(events)),
            ))
        }
    });
    let options = ssekit_hyper::server::ServeOptions::default().tls(Certs::loopback().server());
    std::thread::spawn(move || {
        runtime.block_on(ssekit_hyper::server::serve_with(
            listener,
            service,
            std::future::pending(),
            options,
        ))
    });
    (addr, versions)
}

/// A TCP forwarder to `to` that counts the connections made through it.
fn counting_forwarder(to: SocketAddr) -> (SocketAddr, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let count = Arc::new(AtomicUsize::new(0));
    let counted = count.clone();
    std::thread::spawn(move || {
        for inbound in listener.incoming() {
            let Ok(inbound) = inbound else { break };
            counted.fetch_add(1, Ordering::SeqCst);
            let Ok(outbound) = TcpStream::connect(to) else {
                continue;
            };
            let pipe = |mut from: TcpStream, mut to: TcpStream| {
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut from, &mut to);
                    let _ = to.shutdown(std::net::Shutdown::Write);
                })
            };
            pipe(inbound.try_clone().unwrap(), outbound.try_clone().unwrap());
            pipe(outbound, inbound);
        }
    });
    (addr, count)
}

fn within<T>(fut: impl std::future::Future<Output = T>) -> T {
    smol::block_on(futures_lite::future::or(fut, async {
        // Only a hang fails: a loaded machine may be slow, never this slow.
        async_io::Timer::after(Duration::from_secs(60)).await;
        panic!("hung: no outcome after 60 s")
    }))
}

fn tls_client() -> HttpClient {
    ClientOptions::default()
        .tls(Certs::loopback().client())
        .build()
        .unwrap()
}

/// `STREAMS` streams opened at once through one client: every one gets its events.
async fn read_together(client: &HttpClient, port: u16) {
    let read = |i: usize| {
        let url = format!("https://127.0.0.1:{port}/s{i}");
        let source = EventSource::get(&url).unwrap().client(client.clone());
        source.reconnect(once()).events().collect::<Vec<_>>()
    };
    let tasks: Vec<_> = (0..STREAMS).map(|i| smol::spawn(read(i))).collect();
    let mut all = Vec::new();
    for task in tasks {
        all.push(task.await);
    }
    for (i, events) in all.iter().enumerate() {
        let data: Vec<_> = events
            .iter()
            .map(|e| e.as_ref().unwrap().data().to_owned())
            .collect();
        assert_eq!(data, [1, 2, 3].map(|n| format!("/s{i} {n}")), "stream {i}");
    }
}

#[test]
fn streams_started_together_share_one_http2_connection_to_the_smol_server() {
    let (server, versions) = smol_server(ServeOptions::default().tls(Certs::loopback().server()));
    let (through, connections) = counting_forwarder(server);
    within(read_together(&tls_client(), through.port()));
    assert_eq!(connections.load(Ordering::SeqCst), 1, "one TCP connection");
    let versions = versions.lock().unwrap();
    assert_eq!(versions.len(), STREAMS);
    assert!(
        versions.iter().all(|v| *v == http::Version::HTTP_2),
        "{versions:?}"
    );
}

#[test]
fn the_smol_client_shares_one_http2_connection_to_the_hyper_server() {
    let (server, versions) = hyper_server();
    let (through, connections) = counting_forwarder(server);
    within(read_together(&tls_client(), through.port()));
    assert_eq!(connections.load(Ordering::SeqCst), 1, "one TCP connection");
    let versions = versions.lock().unwrap();
    assert!(
        versions.iter().all(|v| *v == http::Version::HTTP_2),
        "{versions:?}"
    );
}

#[test]
fn the_hyper_client_speaks_http2_to_the_smol_server() {
    let (server, versions) = smol_server(ServeOptions::default().tls(Certs::loopback().server()));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = ssekit_hyper::client::https_client(Certs::loopback().client());
    runtime.block_on(async {
        let url = format!("https://127.0.0.1:{}/from-hyper", server.port());
        let events: Vec<_> = ssekit_hyper::client::EventSource::get(&url)
            .unwrap()
            .client(client)
            .reconnect(once())
            .events()
            .collect()
            .await;
        assert_eq!(events.len(), 3, "{events:?}");
    });
    assert_eq!(*versions.lock().unwrap(), [http::Version::HTTP_2]);
}

#[test]
fn a_server_offering_only_http1_gets_http1_from_the_smol_client() {
    let mut tls = (*Certs::loopback().server()).clone();
    tls.alpn_protocols = vec![b"http/1.1".to_vec()];
    let (server, versions) = smol_server(ServeOptions::default().tls(Arc::new(tls)));
    let client = tls_client();
    within(async {
        for i in 0..2 {
            let url = format!("https://127.0.0.1:{}/h1-{i}", server.port());
            let events: Vec<_> = EventSource::get(&url)
                .unwrap()
                .client(client.clone())
                .reconnect(once())
                .events()
                .collect()
                .await;
            assert_eq!(events.len(), 3, "{events:?}");
        }
    });
    assert_eq!(
        *versions.lock().unwrap(),
        [http::Version::HTTP_11, http::Version::HTTP_11]
    );
}

#[test]
fn the_smol_server_speaks_h2c_by_prior_knowledge_and_http1_on_the_same_port() {
    let (server, versions) = smol_server(ServeOptions::default());
    within(async {
        let tcp = smol::net::TcpStream::connect(server).await.unwrap();
        let (sender, conn) = hyper::client::conn::http2::handshake(
            ssekit_smol::runtime::Smol::default(),
            smol_hyper::rt::FuturesIo::new(tcp),
        )
        .await
        .unwrap();
        smol::spawn(conn).detach();
        let bodies: Vec<_> = (0..STREAMS)
            .map(|i| {
                let mut sender = sender.clone();
                smol::spawn(async move {
                    let req = http::Request::get(format!("http://{server}/h{i}"))
                        .body(http_body_util::Empty::<Bytes>::new())
                        .unwrap();
                    let resp = sender.send_request(req).await.unwrap();
                    assert_eq!(resp.headers()["content-type"], "text/event-stream");
                    resp.into_body().collect().await.unwrap().to_bytes()
                })
            })
            .collect();
        for (i, body) in bodies.into_iter().enumerate() {
            let want = format!("data: /h{i} 1\n\ndata: /h{i} 2\n\ndata: /h{i} 3\n\n");
            assert_eq!(body.await, want.as_bytes());
        }
        // HTTP/1.1 on the same port.
        let items: Vec<_> = EventSource::get(&format!("http://{server}/one"))
            .unwrap()
            .reconnect(once())
            .events()
            .collect()
            .await;
        assert_eq!(items.len(), 3, "{items:?}");
    });
    let versions = versions.lock().unwrap();
    let h2 = versions.iter().filter(|v| **v == http::Version::HTTP_2);
    assert_eq!(h2.count(), STREAMS);
    assert_eq!(versions.last(), Some(&http::Version::HTTP_11));
}

#[test]
fn requests_reuse_an_idle_http1_connection() {
    let (server, versions) = smol_server(ServeOptions::default());
    let (through, connections) = counting_forwarder(server);
    let io = SmolHttp::with_client(HttpClient::new());
    within(async {
        for _ in 0..5 {
            let req = http::Request::post(format!("http://{through}/json"))
                .body(Bytes::from_static(b"{}"))
                .unwrap();
            let resp = io.request(req).await.unwrap();
            assert_eq!(resp.body().as_ref(), b"{\"ok\":true}");
        }
    });
    assert_eq!(connections.load(Ordering::SeqCst), 1, "one TCP connection");
    assert_eq!(versions.lock().unwrap().len(), 5);
}

/// A server that answers each connection's first request with keep-alive headers and then
/// closes it, as a server whose idle timeout passed does.
fn closing_server() -> (SocketAddr, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let count = Arc::new(AtomicUsize::new(0));
    let counted = count.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { break };
            counted.fetch_add(1, Ordering::SeqCst);
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && conn.read(&mut byte).unwrap_or(0) == 1 {
                head.push(byte[0]);
            }
            let length = String::from_utf8_lossy(&head)
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().parse::<usize>().unwrap())
                })
                .unwrap_or(0);
            let mut body = vec![0; length];
            conn.read_exact(&mut body).unwrap();
            let _ = conn.write_all(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}",
            );
            std::thread::sleep(Duration::from_millis(20));
            drop(conn);
        }
    });
    (addr, count)
}

#[test]
fn a_pooled_connection_the_server_closed_is_replaced() {
    let (server, connections) = closing_server();
    let io = SmolHttp::with_client(HttpClient::new());
    within(async {
        for _ in 0..3 {
            let req = http::Request::post(format!("http://{server}/call"))
                .body(Bytes::from_static(b"{\"n\":1}"))
                .unwrap();
            let resp = io.request(req).await.unwrap();
            assert_eq!(resp.body().as_ref(), b"{}");
            async_io::Timer::after(Duration::from_millis(100)).await;
        }
    });
    assert_eq!(connections.load(Ordering::SeqCst), 3);
}

#[test]
fn requests_and_streams_share_the_http2_connection() {
    let (server, versions) = smol_server(ServeOptions::default().tls(Certs::loopback().server()));
    let (through, connections) = counting_forwarder(server);
    let client = tls_client();
    let io = SmolHttp::with_client(client.clone());
    within(async {
        let url = format!("https://127.0.0.1:{}", through.port());
        let stream = EventSource::get(&format!("{url}/live"))
            .unwrap()
            .client(client)
            .reconnect(once())
            .events()
            .collect::<Vec<_>>();
        for _ in 0..3 {
            let req = http::Request::post(format!("{url}/json"))
                .header("content-type", "application/json")
                .body(Bytes::from_static(b"{\"a\":1}"))
                .unwrap();
            let resp = io.request(req).await.unwrap();
            assert_eq!(resp.body().as_ref(), b"{\"ok\":true}");
        }
        assert_eq!(stream.await.len(), 3);
    });
    assert_eq!(connections.load(Ordering::SeqCst), 1, "one TCP connection");
    let versions = versions.lock().unwrap();
    assert_eq!(versions.len(), 4);
    assert!(
        versions.iter().all(|v| *v == http::Version::HTTP_2),
        "{versions:?}"
    );
}

/// A TCP forwarder to `to` whose connections can be frozen: from [`Freezer::freeze`] on,
/// the connections made so far swallow what they read in both directions and stay open, as
/// a balancer or NAT that dropped them without a word; later ones forward.
struct Freezer {
    addr: SocketAddr,
    accepted: Arc<AtomicUsize>,
    frozen_up_to: Arc<AtomicUsize>,
}

impl Freezer {
    fn new(to: SocketAddr) -> Freezer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let accepted = Arc::new(AtomicUsize::new(0));
        let frozen_up_to = Arc::new(AtomicUsize::new(0));
        let (count, frozen) = (accepted.clone(), frozen_up_to.clone());
        std::thread::spawn(move || {
            for inbound in listener.incoming() {
                let Ok(inbound) = inbound else { break };
                let number = count.fetch_add(1, Ordering::SeqCst) + 1;
                let Ok(outbound) = TcpStream::connect(to) else {
                    continue;
                };
                let pipe = |mut from: TcpStream, mut to: TcpStream| {
                    let frozen = frozen.clone();
                    std::thread::spawn(move || {
                        let mut buf = [0u8; 16 << 10];
                        while let Ok(n @ 1..) = from.read(&mut buf) {
                            if number > frozen.load(Ordering::SeqCst)
                                && to.write_all(&buf[..n]).is_err()
                            {
                                break;
                            }
                        }
                        let _ = to.shutdown(std::net::Shutdown::Write);
                    })
                };
                pipe(inbound.try_clone().unwrap(), outbound.try_clone().unwrap());
                pipe(outbound, inbound);
            }
        });
        Freezer {
            addr,
            accepted,
            frozen_up_to,
        }
    }

    fn freeze(&self) {
        self.frozen_up_to
            .store(self.accepted.load(Ordering::SeqCst), Ordering::SeqCst);
    }
}

/// Reads `items` until `want` more events came after a reconnect.
async fn events_after_a_reconnect<E: std::fmt::Debug>(
    mut items: impl futures_lite::Stream<Item = Result<ssekit_http::client::Item, E>> + Unpin,
    freezer: &Freezer,
) {
    use ssekit_http::client::Item;
    let (mut before, mut reconnected, mut after) = (0, false, 0);
    while let Some(item) = items.next().await {
        match item.unwrap() {
            Item::Event(_) if reconnected => after += 1,
            Item::Event(_) => {
                before += 1;
                if before == 2 {
                    freezer.freeze();
                }
            }
            Item::Connected { attempt } if attempt > 0 => reconnected = true,
            _ => {}
        }
        if after == 2 {
            return;
        }
    }
    panic!("the stream ended");
}

#[test]
fn an_http2_connection_that_went_silent_is_found_by_pings_and_replaced() {
    let (server, _) = smol_server(ServeOptions::default().tls(Certs::loopback().server()));
    let freezer = Freezer::new(server);
    let url = format!("https://127.0.0.1:{}/tick", freezer.addr.port());
    let reconnect =
        ssekit::client::ReconnectConfig::default().retry_timeout(Duration::from_millis(50));
    // smol: the ping goes unanswered, the connection is closed, the stream reconnects on a
    // new one and goes on after its last event.
    let client = ClientOptions::default()
        .tls(Certs::loopback().client())
        .http2_keep_alive(Duration::from_millis(200), Duration::from_millis(300))
        .build()
        .unwrap();
    let source = EventSource::get(&url)
        .unwrap()
        .client(client)
        .reconnect(reconnect.clone());
    within(events_after_a_reconnect(source.stream(), &freezer));
    assert_eq!(freezer.accepted.load(Ordering::SeqCst), 2);
    // hyper (tokio), the same.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let client = ssekit_hyper::client::ClientOptions::default()
            .tls(Certs::loopback().client())
            .http2_keep_alive(Duration::from_millis(200), Duration::from_millis(300))
            .build()
            .unwrap();
        let source = ssekit_hyper::client::EventSource::get(&url)
            .unwrap()
            .client(client)
            .reconnect(reconnect);
        let read = events_after_a_reconnect(source.stream(), &freezer);
        tokio::time::timeout(Duration::from_secs(60), read)
            .await
            .expect("hung: no outcome after 60 s");
    });
    // (hyper-util's pool may dial twice while it drops the dead connection.)
    assert!(freezer.accepted.load(Ordering::SeqCst) >= 3);
}
