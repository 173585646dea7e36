//! `SseBody` bounds itself under a server that is not ssekit's `serve`: hyper's own HTTP/1.1
//! connection with its defaults over tokio's socket (the queue of sixteen frames that axum
//! and most hyper servers run with), with a client that stops reading.
//!
//! (Over an IO without vectored writes, such as smol-hyper's `FuturesIo`, hyper copies each
//! frame into its own buffer and drops it at once: there its `max_buf_size` is the bound,
//! and the body has nothing out to count.)
//!
//! Each frame the body yields is wrapped so that the test counts the bytes hyper holds
//! (yielded and not yet dropped). The bound is an upper bound on what the code decided, so
//! the assertion holds however the machine schedules; only how long the test waits for the
//! socket to fill depends on time.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body::{Body, Frame};
use ssekit::Event;
use ssekit_http::server::{FRAME_BYTES, MAX_UNSENT};

/// The bytes of the frames a server holds: now, at most, and handed over in all.
#[derive(Debug, Default)]
struct Held {
    now: AtomicUsize,
    most: AtomicUsize,
    total: AtomicUsize,
}

/// One frame as the server sees it: counted in [`Held`] until the server drops it.
struct Frame_ {
    bytes: Bytes,
    held: Arc<Held>,
}

impl AsRef<[u8]> for Frame_ {
    fn as_ref(&self) -> &[u8] {
        &self.bytes
    }
}

impl Drop for Frame_ {
    fn drop(&mut self) {
        self.held.now.fetch_sub(self.bytes.len(), Ordering::SeqCst);
    }
}

/// `B`, with every data frame counted in `held`.
struct Counted<B> {
    body: B,
    held: Arc<Held>,
}

impl<B> Body for Counted<B>
where
    B: Body<Data = Bytes> + Unpin,
{
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let polled = Pin::new(&mut self.body).poll_frame(cx);
        let held = Arc::clone(&self.held);
        polled.map_ok(|frame| {
            frame.map_data(|bytes| {
                let len = bytes.len();
                let now = held.now.fetch_add(len, Ordering::SeqCst) + len;
                held.most.fetch_max(now, Ordering::SeqCst);
                held.total.fetch_add(len, Ordering::SeqCst);
                Bytes::from_owner(Frame_ {
                    bytes,
                    held: Arc::clone(&held),
                })
            })
        })
    }
}

/// What the server's one stream sends.
#[derive(Clone, Copy)]
enum Source {
    /// ssekit's body of an always-ready event stream.
    SseBody,
    /// The control: always-ready frames of `FRAME_BYTES`, as a body without a bound would
    /// hand them out, to show that the count sees what hyper holds.
    Unbounded,
}

type AnyBody = http_body_util::combinators::UnsyncBoxBody<Bytes, ssekit_http::Error>;

fn body<R: ssekit_http::runtime::Runtime + Default>(source: Source) -> AnyBody {
    use http_body_util::BodyExt;
    match source {
        Source::SseBody => {
            let events = futures_lite::stream::repeat_with(|| Event::message("0123456789abcdef"));
            ssekit_http::server::SseBody::<R>::new(events).boxed_unsync()
        }
        Source::Unbounded => {
            let frames = futures_lite::stream::repeat_with(|| {
                Ok::<_, ssekit_http::Error>(Frame::data(Bytes::from(vec![b':'; FRAME_BYTES])))
            });
            http_body_util::StreamBody::new(frames).boxed_unsync()
        }
    }
}

/// Reads the response head and `warm` bytes of the body, then nothing until hyper stops handing
/// frames over (the socket's buffers are full); returns the most bytes hyper held from the
/// end of those reads on (the bound holds once the server has let go of a frame), and what
/// it holds then.
fn stall(addr: std::net::SocketAddr, held: &Held, warm: usize) -> (usize, usize) {
    use std::io::{Read, Write};
    let mut client = std::net::TcpStream::connect(addr).unwrap();
    client
        .write_all(b"GET / HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
        .unwrap();
    let mut read = 0;
    let mut buf = [0u8; 16 << 10];
    while read < warm {
        let n = client.read(&mut buf).unwrap();
        assert!(n > 0, "the stream ended");
        read += n;
    }
    if warm > 0 {
        held.most
            .store(held.now.load(Ordering::SeqCst), Ordering::SeqCst);
    }
    // Stalled once nothing more was handed over for 500 ms; 30 s at most.
    let started = Instant::now();
    let mut last = (held.total.load(Ordering::SeqCst), Instant::now());
    while started.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(50));
        let total = held.total.load(Ordering::SeqCst);
        if total != last.0 {
            last = (total, Instant::now());
        } else if last.1.elapsed() > Duration::from_millis(500) {
            break;
        }
    }
    let result = (
        held.most.load(Ordering::SeqCst),
        held.now.load(Ordering::SeqCst),
    );
    drop(client);
    result
}

fn on_tokio(source: Source, warm: usize) -> (usize, usize) {
    let held = Arc::new(Held::default());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let counted = Arc::clone(&held);
    rt.spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let service = hyper::service::service_fn(move |_req| {
            let body = Counted {
                body: body::<ssekit_hyper::runtime::Tokio>(source),
                held: Arc::clone(&counted),
            };
            async move { Ok::<_, Infallible>(http::Response::new(body)) }
        });
        let _ = hyper::server::conn::http1::Builder::new()
            .serve_connection(hyper_util::rt::TokioIo::new(tcp), service)
            .await;
    });
    let result = stall(addr, &held, warm);
    rt.shutdown_timeout(Duration::from_secs(1));
    result
}

#[test]
fn under_hyper_on_tokio_a_stalled_stream_holds_at_most_max_unsent() {
    let (most, now) = on_tokio(Source::SseBody, 256 << 10);
    assert!(most <= MAX_UNSENT, "held {most} bytes at most");
    assert!(
        now > 0 && now <= MAX_UNSENT,
        "holds {now} bytes once stalled"
    );
}

#[test]
fn without_the_bound_hyper_holds_sixteen_frames_which_the_count_sees() {
    let (most, _) = on_tokio(Source::Unbounded, 0);
    assert!(most >= 16 * FRAME_BYTES, "held {most} bytes at most");
}
