//! The byte-stream level over real 127.0.0.1 sockets, on smol.

use std::future::Future;
use std::time::{Duration, Instant};

use futures_lite::{AsyncWriteExt, StreamExt};
use smol::net::{TcpListener, TcpStream};
use ssekit::decode::OnLimit;
use ssekit::{Config, Event, Frame, Limits, StreamEnd};
use ssekit_smol::io::{EventSink, EventStream};
use ssekit_smol::Error;

/// Fails a test that hangs instead of hanging the suite (after 60 s: only a hang fails,
/// never a slow run on a loaded machine).
fn run<T>(fut: impl Future<Output = T>) -> T {
    smol::block_on(async {
        futures_lite::future::or(fut, async {
            smol::Timer::after(Duration::from_secs(60)).await;
            panic!("hung: no outcome after 60 s")
        })
        .await
    })
}

async fn pair() -> (TcpStream, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (client, accepted) =
        futures_lite::future::zip(TcpStream::connect(addr), listener.accept()).await;
    (client.unwrap(), accepted.unwrap().0)
}

fn numbered(n: usize) -> Vec<Event> {
    (0..n)
        .map(|i| {
            Event::builder()
                .event("tick")
                .unwrap()
                .id(i.to_string())
                .unwrap()
                .data(format!("line {i}\nsecond line"))
                .build()
        })
        .collect()
}

#[test]
fn events_round_trip_over_a_socket_and_the_end_is_clean() {
    run(async {
        let (read, write) = pair().await;
        let sent = numbered(50);
        let writer = smol::spawn({
            let sent = sent.clone();
            async move {
                let mut sink = EventSink::new(write);
                sink.forward(futures_lite::stream::iter(sent))
                    .await
                    .unwrap();
                sink.into_inner().close().await.unwrap();
            }
        });
        let mut frames = EventStream::new(read);
        let mut got = Vec::new();
        while let Some(frame) = frames.next().await {
            if let Frame::Event(ev) = frame.unwrap() {
                got.push(ev);
            }
        }
        writer.await;
        assert_eq!(got, sent);
        assert_eq!(frames.end(), Some(StreamEnd::Clean));
        assert_eq!(frames.last_event_id(), "49");
    });
}

#[test]
fn a_stream_cut_inside_an_event_is_reported_as_truncated() {
    run(async {
        let (read, mut write) = pair().await;
        write.write_all(b"data: whole\n\ndata: cu").await.unwrap();
        write.close().await.unwrap();
        drop(write);
        let mut frames = EventStream::new(read);
        let first = frames.next().await.unwrap().unwrap();
        assert!(matches!(first, Frame::Event(ref ev) if ev.data() == "whole"));
        assert!(frames.next().await.is_none());
        assert_eq!(
            frames.end(),
            Some(StreamEnd::Truncated {
                unterminated_line: 8,
                open_event: false
            })
        );
    });
}

#[test]
fn each_event_is_flushed_before_the_next_is_produced() {
    run(async {
        let (read, write) = pair().await;
        let (tx, rx) = async_channel_pair();
        let writer = smol::spawn(async move {
            let mut sink = EventSink::new(write);
            sink.forward(rx).await.unwrap();
        });
        let mut frames = EventStream::new(read);
        for i in 0..5 {
            // The next event is only produced after the previous one arrived.
            tx.send(Event::message(i.to_string())).await.unwrap();
            let Some(Ok(Frame::Event(ev))) = frames.next().await else {
                panic!("no event")
            };
            assert_eq!(ev.data(), i.to_string());
        }
        drop(tx);
        writer.await;
    });
}

fn async_channel_pair() -> (smol::channel::Sender<Event>, smol::channel::Receiver<Event>) {
    smol::channel::bounded(1)
}

#[test]
fn keep_alive_pings_while_idle_and_not_while_busy() {
    run(async {
        let (read, write) = pair().await;
        let (tx, rx) = async_channel_pair();
        // Before the writer (and its pinger) can start: the lower bound below is sound.
        // (Taken after the spawn, as before, the writer could start first on smol's own
        // threads and a ping come "early" by how late this thread ran.)
        let start = Instant::now();
        let writer = smol::spawn(async move {
            let mut sink = EventSink::new(write).keep_alive(Duration::from_millis(100));
            sink.forward(rx).await.unwrap();
        });
        let mut frames = EventStream::new(read);
        let mut pings = 0;
        while pings < 3 {
            match frames.next().await.unwrap().unwrap() {
                Frame::Comment(text) => {
                    assert_eq!(text, "ping");
                    pings += 1;
                }
                other => panic!("unexpected {other:?}"),
            }
        }
        let idle = start.elapsed();
        assert!(
            idle >= Duration::from_millis(300),
            "pinged too early: {idle:?}"
        );
        // Busy: an event every 30 ms for 300 ms carries no ping. A ping is due only after
        // 100 ms of silence, so one may come only once 100 ms have passed since the previous
        // event was handed to the sink (its write was no sooner): a loaded machine that
        // stalls this loop past that gets a ping, rightly, and only a ping with less
        // silence is a ping while busy. (Before, any ping failed: a stall could fail it.)
        // Before the first event, a ping continues the idle phase, whenever it comes.
        let mut previous: Option<Instant> = None;
        for i in 0..10 {
            let sent = Instant::now();
            tx.send(Event::message(i.to_string())).await.unwrap();
            loop {
                match frames.next().await.unwrap().unwrap() {
                    Frame::Event(_) => break,
                    Frame::Comment(text) => {
                        assert_eq!(text, "ping");
                        if let Some(previous) = previous {
                            let silence = previous.elapsed();
                            assert!(
                                silence >= Duration::from_millis(100),
                                "ping while busy, {silence:?} after the previous event"
                            );
                        }
                    }
                    other => panic!("unexpected {other:?}"),
                }
            }
            previous = Some(sent);
            smol::Timer::after(Duration::from_millis(30)).await;
        }
        drop(tx);
        writer.await;
    });
}

#[test]
fn an_event_over_the_limit_is_a_typed_error_and_ends_the_stream() {
    run(async {
        let (read, write) = pair().await;
        let writer = smol::spawn(async move {
            let mut sink = EventSink::new(write);
            let _ = sink.send(&Event::message("x".repeat(4096))).await;
            let _ = sink.send(&Event::message("after")).await;
        });
        let config = Config::default().limits(Limits::default().max_event(1024));
        let mut frames = EventStream::with_config(read, config);
        let Some(Err(Error::Decode(_))) = frames.next().await else {
            panic!("expected a decode error")
        };
        assert!(frames.next().await.is_none());
        assert!(matches!(frames.end(), Some(StreamEnd::Failed(_))));
        writer.await;
    });
}

#[test]
fn with_resync_an_event_over_the_limit_is_an_error_item_and_the_stream_goes_on() {
    run(async {
        let (read, write) = pair().await;
        let writer = smol::spawn(async move {
            let mut sink = EventSink::new(write);
            sink.send(&Event::message("x".repeat(4096))).await.unwrap();
            sink.send(&Event::message("after")).await.unwrap();
        });
        let limits = Limits::default().max_event(1024);
        let config = Config::default().limits(limits).on_limit(OnLimit::Resync);
        let mut frames = EventStream::with_config(read, config);
        let Some(Err(Error::Decode(_))) = frames.next().await else {
            panic!("expected a decode error")
        };
        let Some(Ok(Frame::Event(after))) = frames.next().await else {
            panic!("the stream goes on after the dropped event")
        };
        assert_eq!(after.data(), "after");
        writer.await;
        assert!(frames.next().await.is_none());
        assert_eq!(frames.end(), Some(StreamEnd::Clean));
    });
}

#[test]
fn a_write_to_a_vanished_peer_is_an_io_error() {
    run(async {
        let (read, write) = pair().await;
        drop(read);
        let mut sink = EventSink::new(write).keep_alive(Duration::from_millis(20));
        let never = futures_lite::stream::pending::<Event>();
        let result = sink.forward(never).await;
        assert!(matches!(result, Err(Error::Io(_))), "{result:?}");
    });
}

#[test]
fn an_event_that_would_inject_a_field_is_refused_before_any_write() {
    run(async {
        let mut sink = EventSink::new(Vec::new());
        let bad = Event::builder().id("1\nevent: x");
        assert!(bad.is_err());
        sink.send(&Event::message("ok")).await.unwrap();
        assert_eq!(sink.into_inner(), b"data: ok\n\n");
    });
}

/// Hands out `event` once per read, `left` times: a peer that sends events one at a time.
struct OnePerRead {
    left: usize,
    event: &'static [u8],
}

impl futures_lite::AsyncRead for OnePerRead {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
        buf: &mut [u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        if self.left == 0 {
            return std::task::Poll::Ready(Ok(0));
        }
        self.left -= 1;
        buf[..self.event.len()].copy_from_slice(self.event);
        std::task::Poll::Ready(Ok(self.event.len()))
    }
}

/// The resident memory of this process, in KiB.
fn resident_kib() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|kib| kib.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// Events read one per read and kept by the application hold about their own bytes, not
/// the 16 KiB read buffer each came in (before: 20,000 events of 25 bytes held 324 MB).
#[test]
fn events_of_short_reads_do_not_hold_a_read_buffer_each() {
    let before = resident_kib();
    let kept: Vec<Frame> = run(async {
        let event: &[u8] = b"data: {\"delta\":\"hello\"}\n\n";
        let stream = EventStream::new(OnePerRead {
            left: 20_000,
            event,
        });
        stream.map(Result::unwrap).collect().await
    });
    let grown = resident_kib().saturating_sub(before);
    assert_eq!(kept.len(), 20_000);
    assert!(
        grown < 64 << 10,
        "20,000 kept events grew memory by {grown} KiB"
    );
}
