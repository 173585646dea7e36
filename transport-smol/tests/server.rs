//! The smol server's own parts over 127.0.0.1: headers on the wire, `Broadcast` resume, and
//! the bounded channel.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use futures_lite::{AsyncReadExt, AsyncWriteExt, StreamExt};
use hyper::service::service_fn;
use ssekit::server::ReplayBuffer;
use ssekit::Event;
use ssekit_smol::client::{EventSource, Item};
use ssekit_smol::server::{channel, last_event_id, response, serve, Broadcast, TrySendError};

fn run<T>(fut: impl Future<Output = T>) -> T {
    smol::block_on(futures_lite::future::or(fut, async {
        smol::Timer::after(Duration::from_secs(10)).await;
        panic!("test timed out")
    }))
}

async fn start_hub(hub: Broadcast) -> SocketAddr {
    let listener = smol::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let service = service_fn(move |req: http::Request<hyper::body::Incoming>| {
        let body = hub.subscribe(last_event_id(req.headers())).unwrap();
        async move { Ok::<_, Infallible>(response(body.keep_alive(Duration::from_secs(5)))) }
    });
    smol::spawn(serve(listener, service)).detach();
    addr
}

fn numbered(i: usize) -> Event {
    Event::builder()
        .id(i.to_string())
        .unwrap()
        .data(format!("n{i}"))
        .build()
}

#[test]
fn the_response_head_on_the_wire_prevents_buffering_and_the_body_is_chunked() {
    run(async {
        let hub = Broadcast::new(ReplayBuffer::default(), 8);
        let addr = start_hub(hub.clone()).await;
        let mut tcp = smol::net::TcpStream::connect(addr).await.unwrap();
        tcp.write_all(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
            .await
            .unwrap();
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            tcp.read_exact(&mut byte).await.unwrap();
            head.push(byte[0]);
        }
        let head = String::from_utf8(head).unwrap().to_ascii_lowercase();
        assert!(head.starts_with("http/1.1 200 ok\r\n"), "{head}");
        for line in [
            "content-type: text/event-stream",
            "cache-control: no-cache",
            "x-accel-buffering: no",
            "transfer-encoding: chunked",
        ] {
            assert!(head.contains(line), "{line} missing in {head}");
        }
        assert!(!head.contains("content-encoding"));
        // The subscriber is registered once the head is out; an event arrives as one chunk.
        while hub.publish(&numbered(1)).unwrap() == 0 {
            smol::Timer::after(Duration::from_millis(5)).await;
        }
        let want = b"id: 1\ndata: n1\n\n";
        let mut chunk = vec![0u8; format!("{:x}\r\n", want.len()).len() + want.len() + 2];
        tcp.read_exact(&mut chunk).await.unwrap();
        assert_eq!(chunk, [&b"10\r\n"[..], want, b"\r\n"].concat());
    });
}

#[test]
fn a_dropped_subscriber_resumes_from_the_broadcast_replay_buffer() {
    run(async {
        let hub = Broadcast::new(ReplayBuffer::new(64, 1 << 20), 8);
        let addr = start_hub(hub.clone()).await;
        let config = ssekit::client::ReconnectConfig::default()
            .retry_timeout(Duration::from_millis(20))
            .jitter(0);
        let mut items = EventSource::get(&format!("http://{addr}/"))
            .unwrap()
            .reconnect(config)
            .stream();
        assert_eq!(
            items.next().await.unwrap().unwrap(),
            Item::Connected { attempt: 0 }
        );
        while hub.publish(&numbered(1)).unwrap() == 0 {
            smol::Timer::after(Duration::from_millis(5)).await;
        }
        hub.publish(&numbered(2)).unwrap();
        hub.disconnect_all(); // the stream ends after what is queued
        hub.publish(&numbered(3)).unwrap(); // nobody is connected: only in the replay buffer
        let mut events = Vec::new();
        let mut publisher = 4;
        while events.len() < 5 {
            match items.next().await.unwrap().unwrap() {
                Item::Event(ev) => events.push(ev),
                Item::Connected { attempt } => {
                    assert_eq!(attempt, 1);
                    // Live events after the replayed ones.
                    while publisher <= 5 {
                        hub.publish(&numbered(publisher)).unwrap();
                        publisher += 1;
                    }
                }
                _ => {}
            }
        }
        assert_eq!(events, (1..=5).map(numbered).collect::<Vec<_>>());
    });
}

#[test]
fn a_full_channel_refuses_and_a_dropped_body_closes_it() {
    let (tx, body) = channel(2);
    tx.try_send(&numbered(1)).unwrap();
    tx.try_send(&numbered(2)).unwrap();
    assert!(matches!(tx.try_send(&numbered(3)), Err(TrySendError::Full)));
    drop(body);
    assert!(tx.is_closed());
    assert!(matches!(
        run(tx.send(&numbered(4))),
        Err(TrySendError::Closed)
    ));
}

#[test]
fn a_client_that_stops_reading_fills_a_bounded_queue_and_then_its_departure_closes_it() {
    run(async {
        let (handoff, senders) = smol::channel::bounded(1);
        let listener = smol::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let service = service_fn(move |_req: http::Request<hyper::body::Incoming>| {
            let handoff = handoff.clone();
            async move {
                let (tx, body) = channel(8);
                handoff.send(tx).await.unwrap();
                Ok::<_, Infallible>(response(body))
            }
        });
        smol::spawn(serve(listener, service)).detach();
        let mut sock = smol::net::TcpStream::connect(addr).await.unwrap();
        sock.write_all(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
            .await
            .unwrap();
        let mut head = [0u8; 64];
        let _ = sock.read(&mut head).await.unwrap(); // the head, then never read again
        let tx = senders.recv().await.unwrap();
        let event = Event::message("x".repeat(16 << 10));
        let mut queued = 0usize;
        loop {
            match tx.try_send(&event) {
                Ok(()) => queued += 1,
                Err(TrySendError::Full) => {
                    // hyper and the kernel may still drain a little: wait and re-check.
                    smol::Timer::after(Duration::from_millis(50)).await;
                    if tx.try_send(&event).is_err() {
                        break;
                    }
                    queued += 1;
                }
                Err(e) => panic!("{e}"),
            }
        }
        // Bounded: queue (8) + hyper's write buffer + the socket buffers, in 16 KiB events.
        assert!(
            queued < 2_000,
            "queued {queued} events of 16 KiB before backpressure"
        );
        drop(sock);
        loop {
            match tx.try_send(&event) {
                Err(TrySendError::Closed) => break,
                _ => {
                    smol::Timer::after(Duration::from_millis(20)).await;
                }
            }
        }
    });
}
