//! What a server's edge does with request and response heads, on both runtimes, HTTP/1.1 and
//! h2c, over 127.0.0.1: the response head of an event stream leaves at once, before its first
//! event (a proxy in between then sees the stream start), and request heads are bounded by
//! `ServeOptions::max_request_head` (64 KiB by default), not by the 8 KiB write buffer: a
//! 16 KiB cookie and a 60 KiB head are served, a larger head gets 431.

use std::convert::Infallible;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::service::service_fn;
use ssekit_http::runtime::{Frames, Runtime};
use ssekit_http::server::{response, HttpService, ServeOptions, SseBody};

/// When `/slow`'s first event is sent, after its head.
const FIRST_EVENT: Duration = Duration::from_secs(4);
/// How long the head may take, at most: well before the first event.
const HEAD_WITHIN: Duration = Duration::from_secs(2);

/// `/slow`: one event after [`FIRST_EVENT`]; any other path: one event at once.
fn service<R: Runtime + Default>() -> impl HttpService<SseBody<R>> {
    service_fn(|req: http::Request<hyper::body::Incoming>| async move {
        let runtime = R::default();
        let delay = if req.uri().path() == "/slow" {
            FIRST_EVENT
        } else {
            Duration::ZERO
        };
        let sleep = runtime.sleep(delay);
        let frames: Frames = Box::pin(futures_lite::stream::once_future(async move {
            sleep.await;
            Bytes::from_static(b"data: first\n\n")
        }));
        Ok::<_, Infallible>(response(SseBody::from_bytes_on(runtime, frames)))
    })
}

#[derive(Clone, Copy, Debug)]
enum Server {
    Hyper,
    Smol,
}

const SERVERS: [Server; 2] = [Server::Hyper, Server::Smol];

/// The server of `which` with the default options on a thread of its own.
fn start(which: Server) -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    listener.set_nonblocking(true).unwrap();
    let options = ServeOptions::default();
    match which {
        Server::Hyper => {
            std::thread::spawn(move || {
                let runtime = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(1)
                    .enable_all()
                    .build()
                    .unwrap();
                runtime.block_on(async move {
                    let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                    let service = service::<ssekit_hyper::runtime::Tokio>();
                    ssekit_hyper::server::serve_with(
                        listener,
                        service,
                        std::future::pending(),
                        options,
                    )
                    .await
                })
            });
        }
        Server::Smol => {
            std::thread::spawn(move || {
                let listener = smol::net::TcpListener::try_from(listener).unwrap();
                let service = service::<ssekit_smol::runtime::Smol>();
                smol::block_on(ssekit_smol::server::serve_with(
                    listener,
                    service,
                    std::future::pending(),
                    options,
                ))
            });
        }
    }
    addr
}

/// Sends `head` (a whole HTTP/1.1 request head) and reads the response head; `None` if the
/// server closed the connection (or reset it) first.
fn h1_head(addr: SocketAddr, head: &[u8]) -> Option<String> {
    let mut sock = TcpStream::connect(addr).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    sock.write_all(head).unwrap();
    let mut got = Vec::new();
    let mut buf = [0; 4096];
    while !got.windows(4).any(|w| w == b"\r\n\r\n") {
        match sock.read(&mut buf) {
            Ok(0) | Err(_) => return None,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    Some(String::from_utf8_lossy(&got).into_owned())
}

/// A request head of about `size` bytes: `Cookie: c=` of `cookie` bytes, then 4 KiB
/// `x-pad-N` headers up to `size`.
fn request_head(path: &str, cookie: usize, size: usize) -> Vec<u8> {
    let mut head = format!(
        "GET {path} HTTP/1.1\r\nhost: x\r\ncookie: c={}\r\n",
        "a".repeat(cookie)
    );
    let mut n = 0;
    while head.len() + 2 < size {
        let pad = (size - head.len()).clamp(1, 4096);
        head.push_str(&format!("x-pad-{n}: {}\r\n", "p".repeat(pad)));
        n += 1;
    }
    head.push_str("\r\n");
    head.into_bytes()
}

fn status(head: &str) -> &str {
    head.split(' ').nth(1).unwrap_or_default()
}

#[test]
fn the_response_head_leaves_before_the_first_event_over_http1() {
    for which in SERVERS {
        let addr = start(which);
        let mut sock = TcpStream::connect(addr).unwrap();
        sock.write_all(b"GET /slow HTTP/1.1\r\nhost: x\r\n\r\n")
            .unwrap();
        // The head must come well before the first event, which is FIRST_EVENT away.
        sock.set_read_timeout(Some(HEAD_WITHIN)).unwrap();
        let started = Instant::now();
        let mut got = Vec::new();
        let mut buf = [0; 1024];
        while !got.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = sock
                .read(&mut buf)
                .unwrap_or_else(|e| panic!("{which:?}: no head within {HEAD_WITHIN:?}: {e}"));
            assert!(n > 0, "{which:?}: closed");
            got.extend_from_slice(&buf[..n]);
        }
        let head = String::from_utf8_lossy(&got);
        assert!(head.starts_with("HTTP/1.1 200"), "{which:?}: {head}");
        assert!(!head.contains("data: first"), "{which:?}: {head}");
        assert!(started.elapsed() < FIRST_EVENT, "{which:?}");
        // And the event follows.
        sock.set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        while !String::from_utf8_lossy(&got).contains("data: first") {
            let n = sock.read(&mut buf).unwrap();
            assert!(n > 0, "{which:?}: closed before the event");
            got.extend_from_slice(&buf[..n]);
        }
    }
}

#[test]
fn the_response_head_leaves_before_the_first_event_over_h2c() {
    for which in SERVERS {
        let addr = start(which);
        smol::block_on(async {
            let tcp = smol::net::TcpStream::connect(addr).await.unwrap();
            let (mut sender, conn) = hyper::client::conn::http2::handshake(
                ssekit_smol::runtime::Smol::default(),
                smol_hyper::rt::FuturesIo::new(tcp),
            )
            .await
            .unwrap();
            smol::spawn(conn).detach();
            let req = http::Request::get(format!("http://{addr}/slow"))
                .body(http_body_util::Empty::<Bytes>::new())
                .unwrap();
            let started = Instant::now();
            let resp =
                futures_lite::future::or(async { Some(sender.send_request(req).await) }, async {
                    async_io::Timer::after(HEAD_WITHIN).await;
                    None
                })
                .await
                .unwrap_or_else(|| panic!("{which:?}: no h2 head within {HEAD_WITHIN:?}"))
                .unwrap();
            assert_eq!(resp.status(), 200, "{which:?}");
            assert!(started.elapsed() < FIRST_EVENT, "{which:?}");
            let body = resp.into_body().collect().await.unwrap().to_bytes();
            assert_eq!(&body[..], b"data: first\n\n", "{which:?}");
        });
    }
}

#[test]
fn request_heads_up_to_64_kib_are_served_over_http1_and_larger_get_431() {
    for which in SERVERS {
        let addr = start(which);
        let cookie = h1_head(addr, &request_head("/ok", 16 << 10, 0)).unwrap();
        assert_eq!(
            status(&cookie),
            "200",
            "{which:?}: a 16 KiB cookie: {cookie}"
        );
        let big = request_head("/ok", 1 << 10, 60 << 10);
        assert!(big.len() >= 60 << 10);
        let head = h1_head(addr, &big).unwrap();
        assert_eq!(status(&head), "200", "{which:?}: a 60 KiB head: {head}");
        let over = request_head("/ok", 1 << 10, 70 << 10);
        match h1_head(addr, &over) {
            Some(head) => assert_eq!(status(&head), "431", "{which:?}: {head}"),
            None => panic!("{which:?}: a 70 KiB head got no 431"),
        }
    }
}

#[test]
fn request_heads_up_to_64_kib_are_served_over_h2c_and_larger_are_refused() {
    for which in SERVERS {
        let addr = start(which);
        smol::block_on(async {
            let tcp = smol::net::TcpStream::connect(addr).await.unwrap();
            let (sender, conn) =
                hyper::client::conn::http2::Builder::new(ssekit_smol::runtime::Smol::default())
                    .max_header_list_size(1 << 20)
                    .handshake(smol_hyper::rt::FuturesIo::new(tcp))
                    .await
                    .unwrap();
            smol::spawn(conn).detach();
            let send = |cookie: usize, pads: usize| {
                let mut sender = sender.clone();
                async move {
                    let mut req = http::Request::get(format!("http://{addr}/ok"));
                    req = req.header("cookie", format!("c={}", "a".repeat(cookie)));
                    for n in 0..pads {
                        req = req.header(format!("x-pad-{n}"), "p".repeat(4000));
                    }
                    let req = req.body(http_body_util::Empty::<Bytes>::new()).unwrap();
                    sender.send_request(req).await.map(|resp| resp.status())
                }
            };
            assert_eq!(
                send(16 << 10, 0).await.unwrap(),
                200,
                "{which:?}: a 16 KiB cookie"
            );
            assert_eq!(
                send(1 << 10, 14).await.unwrap(),
                200,
                "{which:?}: a 58 KiB head"
            );
            match send(1 << 10, 18).await {
                Ok(status) => assert_ne!(status, 200, "{which:?}: a 74 KiB head"),
                Err(_refused) => {}
            }
        });
    }
}

/// Writes `bytes` one at a time, each in its own write (`TCP_NODELAY`), so the server's first
/// reads get a byte or a few.
fn dribble(sock: &mut TcpStream, bytes: &[u8]) {
    sock.set_nodelay(true).unwrap();
    for byte in bytes {
        sock.write_all(std::slice::from_ref(byte)).unwrap();
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn heads_that_arrive_a_byte_at_a_time_are_served_over_http1_and_h2c() {
    const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    for which in SERVERS {
        let addr = start(which);
        // HTTP/1.1, starting with the preface's first letter.
        let mut sock = TcpStream::connect(addr).unwrap();
        sock.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        dribble(
            &mut sock,
            b"POST /ok HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\n\r\n",
        );
        let mut got = [0; 12];
        sock.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"HTTP/1.1 200", "{which:?}");
        // HTTP/2 by prior knowledge: the preface and an empty SETTINGS frame, a byte at a
        // time; the server answers with its own SETTINGS frame (type 4, stream 0).
        let mut sock = TcpStream::connect(addr).unwrap();
        sock.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        dribble(&mut sock, PREFACE);
        dribble(&mut sock, &[0, 0, 0, 4, 0, 0, 0, 0, 0]);
        let mut frame = [0; 9];
        sock.read_exact(&mut frame).unwrap();
        assert_eq!((frame[3], &frame[5..9]), (4, &[0u8; 4][..]), "{which:?}");
    }
}

#[test]
fn connections_that_close_before_or_inside_a_head_leave_the_server_serving() {
    for which in SERVERS {
        let addr = start(which);
        drop(TcpStream::connect(addr).unwrap());
        TcpStream::connect(addr).unwrap().write_all(b"P").unwrap();
        TcpStream::connect(addr)
            .unwrap()
            .write_all(b"PRI * HTTP/2.0\r\n")
            .unwrap();
        let head = h1_head(addr, &request_head("/ok", 0, 0)).unwrap();
        assert_eq!(status(&head), "200", "{which:?}: {head}");
    }
}
