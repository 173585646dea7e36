//! Fair under load, on both transports: 64 streams whose source is always ready, and a new
//! connection beside them, all make progress. The server runs on one thread (smol's global
//! executor, which has no cooperative budget, one thread unless `SMOL_THREADS` says more;
//! or a current-thread tokio runtime) and its clients on threads of their own, so a body
//! that never yields would keep the accept loop and every other stream waiting for as long
//! as its reader keeps up. Events are counted where they are produced, not timed: once the
//! sockets are full, the server produces more for a stream only when that stream gets its
//! turn.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hyper::service::service_fn;
use ssekit::Event;

const STREAMS: usize = 64;
/// Events every fast stream must produce after the new connection, while the others run.
const EACH: u64 = 1_000;
/// How long a step may take before the test fails instead of hanging (not a timing test).
const HANG: Duration = Duration::from_secs(60);

type Counters = Arc<Mutex<Vec<Arc<AtomicU64>>>>;

/// An always-ready source of 1 KB events (the socket buffers fill after a few thousand),
/// counting what it produces into a new counter of `registry`.
fn fast_events(registry: &Counters) -> impl Iterator<Item = Event> + Send + 'static {
    let count = Arc::new(AtomicU64::new(0));
    registry.lock().unwrap().push(count.clone());
    let event = Event::message("x".repeat(1000));
    std::iter::repeat_with(move || {
        count.fetch_add(1, Ordering::Relaxed);
        event.clone()
    })
}

fn counts(registry: &Counters) -> Vec<u64> {
    let counters = registry.lock().unwrap();
    counters.iter().map(|c| c.load(Ordering::Relaxed)).collect()
}

/// A blocking GET: the stream once the response head has been read, and the body bytes
/// read with it.
fn get(addr: SocketAddr, path: &str) -> (TcpStream, Vec<u8>) {
    let mut stream = TcpStream::connect_timeout(&addr, HANG).unwrap();
    stream.set_read_timeout(Some(HANG)).unwrap();
    write!(stream, "GET {path} HTTP/1.1\r\nhost: x\r\n\r\n").unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = stream.read(&mut buf).expect("a response head");
        assert!(n > 0, "the connection closed before its head");
        got.extend_from_slice(&buf[..n]);
        if let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") {
            assert!(got.starts_with(b"HTTP/1.1 200"));
            return (stream, got.split_off(end + 4));
        }
    }
}

/// The scenario, against a server on `addr` whose `/fast` streams count into `registry` and
/// whose other paths answer one `hello` event. The readers are threads of their own, so
/// the sockets always have room and a body that does not yield by itself never would.
fn sixty_four_fast_streams_and_a_new_connection(addr: SocketAddr, registry: &Counters) {
    // All open before any is read: each fills its socket buffers, then waits.
    let fast: Vec<TcpStream> = (0..STREAMS).map(|_| get(addr, "/fast").0).collect();
    assert_eq!(counts(registry).len(), STREAMS);
    let readers: Vec<_> = fast
        .into_iter()
        .map(|mut stream| {
            let handle = stream.try_clone().unwrap();
            let thread = std::thread::spawn(move || {
                let mut buf = vec![0u8; 64 << 10];
                while matches!(stream.read(&mut buf), Ok(1..)) {}
            });
            (handle, thread)
        })
        .collect();
    // Every fast stream is running; a new connection is answered beside them.
    let (mut stream, mut body) = get(addr, "/one");
    let mut buf = [0u8; 1024];
    while !body.ends_with(b"0\r\n\r\n") {
        let n = stream.read(&mut buf).expect("the whole body");
        assert!(n > 0);
        body.extend_from_slice(&buf[..n]);
    }
    assert!(String::from_utf8_lossy(&body).contains("data: hello\n\n"));
    assert!(
        readers.iter().all(|(_, thread)| !thread.is_finished()),
        "every fast stream is still open beside it"
    );
    // And from here every fast stream moves, none starved by the others.
    let then = counts(registry);
    let give_up = Instant::now() + HANG;
    while counts(registry)
        .iter()
        .zip(&then)
        .any(|(now, then)| *now < then + EACH)
    {
        assert!(
            Instant::now() < give_up,
            "a stream starved: {:?}",
            counts(registry)
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    for (handle, thread) in readers {
        let _ = handle.shutdown(Shutdown::Both);
        thread.join().unwrap();
    }
    let now = counts(registry);
    eprintln!(
        "{STREAMS} always-ready streams, each {EACH} events or more after the new connection: {:?} to {:?}",
        now.iter().min(),
        now.iter().max()
    );
}

/// The routes of both servers: `/fast`, an always-ready stream counted into `counters`;
/// anything else, one event.
macro_rules! fair_service {
    ($transport:ident, $counters:expr) => {{
        use $transport::server::{response, SseBody};
        let counters: Counters = $counters;
        service_fn(move |req: http::Request<hyper::body::Incoming>| {
            let body = match req.uri().path() {
                "/fast" => SseBody::new(futures_lite::stream::iter(fast_events(&counters))),
                _ => SseBody::new(futures_lite::stream::iter([Event::message("hello")])),
            };
            async move { Ok::<_, std::convert::Infallible>(response(body)) }
        })
    }};
}

#[test]
fn on_smol_sixty_four_always_ready_streams_and_a_new_connection_all_make_progress() {
    let registry = Counters::default();
    let listener = smol::block_on(smol::net::TcpListener::bind("127.0.0.1:0")).unwrap();
    let addr = listener.local_addr().unwrap();
    let service = fair_service!(ssekit_smol, registry.clone());
    smol::spawn(ssekit_smol::server::serve(listener, service)).detach();
    sixty_four_fast_streams_and_a_new_connection(addr, &registry);
}

#[test]
fn on_tokio_sixty_four_always_ready_streams_and_a_new_connection_all_make_progress() {
    let registry = Counters::default();
    let counters = registry.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            let service = fair_service!(ssekit_hyper, counters);
            ssekit_hyper::server::serve(listener, service).await
        })
    });
    sixty_four_fast_streams_and_a_new_connection(rx.recv().unwrap(), &registry);
}
