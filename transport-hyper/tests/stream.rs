//! SseBody and EventSource over real 127.0.0.1 sockets.

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::{boxed, spawn, within};
use futures_util::StreamExt;
use http_body_util::BodyExt;
use ssekit::client::ReconnectConfig;
use ssekit::server::ReplayBuffer;
use ssekit::Event;
use ssekit_hyper::client::{Ended, EventSource, Item};
use ssekit_hyper::server::{channel, last_event_id, response, SseBody, TrySendError};
use ssekit_hyper::Error;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn fast() -> ReconnectConfig {
    ReconnectConfig::default()
        .retry_timeout(Duration::from_millis(20))
        .min_delay(Duration::from_millis(10))
        .jitter(0)
}

fn numbered(n: usize) -> Vec<Event> {
    (1..=n)
        .map(|i| {
            Event::builder()
                .event("tick")
                .unwrap()
                .id(i.to_string())
                .unwrap()
                .data(format!("event {i}\nsecond line"))
                .build()
        })
        .collect()
}

#[tokio::test]
async fn events_round_trip_and_a_clean_end_is_not_an_error() {
    let addr = spawn(|_req| async {
        boxed(response(SseBody::new(futures_util::stream::iter(
            numbered(100),
        ))))
    })
    .await;
    let items: Vec<_> = within(10, async {
        EventSource::get(&format!("http://{addr}/"))
            .unwrap()
            .reconnect(fast().reconnect(false))
            .stream()
            .collect::<Vec<_>>()
            .await
    })
    .await;
    let items: Vec<Item> = items.into_iter().collect::<Result<_, _>>().unwrap();
    assert_eq!(items.first(), Some(&Item::Connected { attempt: 0 }));
    assert_eq!(items.last(), Some(&Item::Disconnected(Ended::Clean)));
    let events: Vec<Event> = items
        .into_iter()
        .filter_map(|i| match i {
            Item::Event(e) => Some(e),
            _ => None,
        })
        .collect();
    assert_eq!(events, numbered(100));
}

#[tokio::test]
async fn response_headers_prevent_buffering() {
    let addr =
        spawn(|_req| async { boxed(response(SseBody::new(futures_util::stream::empty()))) }).await;
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut send, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .unwrap();
    tokio::spawn(conn);
    let req = http::Request::get("/")
        .body(http_body_util::Empty::<Bytes>::new())
        .unwrap();
    let resp = send.send_request(req).await.unwrap();
    assert_eq!(resp.status(), 200);
    let h = resp.headers();
    assert_eq!(h["content-type"], "text/event-stream");
    assert_eq!(h["cache-control"], "no-cache");
    assert_eq!(h["x-accel-buffering"], "no");
    assert!(h.get("content-encoding").is_none());
    assert!(h.get("content-length").is_none());
}

#[tokio::test]
async fn each_event_is_flushed_on_its_own() {
    // The producer sends event i and then waits until the client has received it before it
    // even creates event i + 1: if the body held events in a buffer, the acknowledgement could
    // never come. Causality, not wall-clock bounds, so a loaded machine cannot fail it.
    let (ack_tx, ack_rx) = tokio::sync::mpsc::unbounded_channel::<usize>();
    let ack_rx = std::sync::Arc::new(tokio::sync::Mutex::new(ack_rx));
    let addr = spawn(move |_req| {
        let ack_rx = ack_rx.clone();
        async move {
            let (tx, body) = channel(4);
            tokio::spawn(async move {
                let mut acks = ack_rx.lock().await;
                for i in 0..3 {
                    tx.send(&Event::message(i.to_string())).await.unwrap();
                    let acked = tokio::time::timeout(Duration::from_secs(5), acks.recv()).await;
                    assert_eq!(acked.ok().flatten(), Some(i), "event {i} sat in a buffer");
                }
            });
            boxed(response(body))
        }
    })
    .await;
    let mut events = EventSource::get(&format!("http://{addr}/"))
        .unwrap()
        .reconnect(fast().reconnect(false))
        .events();
    let mut received = 0;
    while let Some(ev) = within(20, events.next()).await {
        assert_eq!(ev.unwrap().data(), received.to_string());
        ack_tx.send(received).unwrap();
        received += 1;
    }
    assert_eq!(received, 3);
}

#[tokio::test]
async fn keep_alive_pings_while_idle_at_the_interval() {
    let addr = spawn(|_req| async {
        let silence = futures_util::stream::once(async {
            tokio::time::sleep(Duration::from_millis(560)).await;
            Event::message("done")
        });
        boxed(response(
            SseBody::new(silence).keep_alive(Duration::from_millis(100)),
        ))
    })
    .await;
    let start = Instant::now();
    let mut items = EventSource::get(&format!("http://{addr}/"))
        .unwrap()
        .reconnect(fast().reconnect(false))
        .stream();
    let mut pings = Vec::new();
    let mut got_event = false;
    while let Some(item) = within(5, items.next()).await {
        match item.unwrap() {
            Item::Comment(text) => {
                assert_eq!(text, "ping");
                pings.push(start.elapsed());
            }
            Item::Event(ev) => {
                assert_eq!(ev.data(), "done");
                got_event = true;
            }
            _ => {}
        }
    }
    assert!(got_event);
    // Never faster than the interval (no busy loop); on a loaded machine pings may come late,
    // so the upper bounds leave room (560 ms of silence at a 100 ms interval: 4-6 when idle).
    assert!((2..=6).contains(&pings.len()), "pings at {pings:?}");
    for pair in pings.windows(2) {
        let gap = pair[1] - pair[0];
        assert!(
            gap >= Duration::from_millis(90) && gap < Duration::from_millis(450),
            "gaps {pings:?}"
        );
    }
}

#[tokio::test]
async fn busy_streams_carry_no_pings() {
    let addr = spawn(|_req| async {
        let (tx, body) = channel(4);
        tokio::spawn(async move {
            for i in 0..10 {
                tx.send(&Event::message(i.to_string())).await.unwrap();
                tokio::time::sleep(Duration::from_millis(30)).await;
            }
        });
        boxed(response(body.keep_alive(Duration::from_millis(100))))
    })
    .await;
    let items: Vec<_> = within(
        5,
        EventSource::get(&format!("http://{addr}/"))
            .unwrap()
            .reconnect(fast().reconnect(false))
            .stream()
            .collect::<Vec<_>>(),
    )
    .await;
    assert!(!items.iter().any(|i| matches!(i, Ok(Item::Comment(_)))));
    assert_eq!(
        items
            .iter()
            .filter(|i| matches!(i, Ok(Item::Event(_))))
            .count(),
        10
    );
}

#[tokio::test]
async fn a_cut_stream_resumes_with_last_event_id_from_the_replay_buffer() {
    let replay = Arc::new(Mutex::new(ReplayBuffer::new(64, 1 << 20)));
    let mut wire = Vec::new();
    for ev in numbered(10) {
        wire.push(replay.lock().unwrap().push(&ev).unwrap());
    }
    let seen_ids = Arc::new(Mutex::new(Vec::new()));
    let (replay2, seen2) = (replay.clone(), seen_ids.clone());
    let addr = spawn(move |req| {
        let (replay, seen, wire) = (replay2.clone(), seen2.clone(), wire.clone());
        async move {
            let id = last_event_id(req.headers()).map(str::to_owned);
            seen.lock().unwrap().push(id.clone());
            let frames: Vec<Bytes> = match id {
                // First connection: five events, then half of the sixth, then the body ends.
                None => {
                    let mut v = wire[..5].to_vec();
                    v.push(wire[5].slice(..10));
                    v
                }
                Some(id) => replay.lock().unwrap().since(&id).unwrap().collect(),
            };
            boxed(response(SseBody::from_bytes(futures_util::stream::iter(
                frames,
            ))))
        }
    })
    .await;
    let mut items = EventSource::get(&format!("http://{addr}/"))
        .unwrap()
        .reconnect(fast())
        .stream();
    let mut events = Vec::new();
    let mut trace = Vec::new();
    while events.len() < 10 {
        match within(5, items.next()).await.unwrap().unwrap() {
            Item::Event(ev) => events.push(ev),
            other => trace.push(other),
        }
    }
    assert_eq!(events, numbered(10));
    assert_eq!(
        trace,
        [
            Item::Connected { attempt: 0 },
            Item::Disconnected(Ended::Truncated),
            Item::Reconnecting {
                after: Duration::from_millis(20)
            },
            Item::Connected { attempt: 1 },
        ]
    );
    assert_eq!(*seen_ids.lock().unwrap(), [None, Some("5".to_owned())]);
}

#[tokio::test]
async fn post_bodies_and_headers_are_sent_again_on_reconnect() {
    let requests = Arc::new(Mutex::new(Vec::new()));
    let seen = requests.clone();
    let addr = spawn(move |req| {
        let seen = seen.clone();
        async move {
            let method = req.method().clone();
            let auth = req
                .headers()
                .get("authorization")
                .map(|v| v.to_str().unwrap().to_owned());
            assert_eq!(req.headers()["x-order"], "header before reconnect is kept");
            let body = req.into_body().collect().await.unwrap().to_bytes();
            seen.lock().unwrap().push((method, auth, body.clone()));
            let ev = Event::builder()
                .id(seen.lock().unwrap().len().to_string())
                .unwrap()
                .data("x")
                .build();
            boxed(response(SseBody::new(futures_util::stream::iter([ev]))))
        }
    })
    .await;
    let mut n = 0;
    let mut events = EventSource::post(&format!("http://{addr}/call"), r#"{"q":1}"#)
        .unwrap()
        .header("x-order", "header before reconnect is kept")
        .unwrap()
        .reconnect(fast())
        .on_connect(move |req| {
            n += 1;
            let token = format!("Bearer {n}");
            req.headers_mut()
                .insert("authorization", token.parse().unwrap());
        })
        .events();
    for _ in 0..3 {
        within(5, events.next()).await.unwrap().unwrap();
    }
    drop(events);
    let requests = requests.lock().unwrap();
    assert!(requests.len() >= 3);
    for (i, (method, auth, body)) in requests.iter().take(3).enumerate() {
        assert_eq!(method, http::Method::POST);
        assert_eq!(auth.as_deref(), Some(format!("Bearer {}", i + 1).as_str()));
        assert_eq!(body.as_ref(), br#"{"q":1}"#);
    }
}

fn plain(status: u16, content_type: &'static str) -> common::Resp {
    let mut resp = http::Response::new(http_body_util::Full::new(Bytes::from_static(b"nope")));
    *resp.status_mut() = http::StatusCode::from_u16(status).unwrap();
    resp.headers_mut()
        .insert("content-type", http::HeaderValue::from_static(content_type));
    boxed(resp)
}

#[tokio::test]
async fn status_and_content_type_are_checked() {
    let addr = spawn(|req| async move {
        match req.uri().path() {
            "/404" => plain(404, "text/plain"),
            "/html" => plain(200, "text/html"),
            "/204" => plain(204, "text/plain"),
            _ => plain(500, "text/plain"),
        }
    })
    .await;
    let last = |path: &'static str, config: ReconnectConfig| async move {
        let items: Vec<_> = within(
            5,
            EventSource::get(&format!("http://{addr}{path}"))
                .unwrap()
                .reconnect(config)
                .stream()
                .collect::<Vec<_>>(),
        )
        .await;
        items
    };
    let items = last("/404", fast()).await;
    assert!(
        matches!(items.as_slice(), [Err(Error::Status(404))]),
        "{items:?}"
    );
    let items = last("/html", fast()).await;
    assert!(
        matches!(items.as_slice(), [Err(Error::ContentType(Some(ct)))] if ct == "text/html"),
        "{items:?}"
    );
    let items = last("/204", fast()).await;
    assert!(
        items.is_empty(),
        "204 ends the stream without an error: {items:?}"
    );
    // 500 is retried, up to the attempt limit.
    let items = last("/500", fast().max_attempts(Some(2))).await;
    let failures = items
        .iter()
        .filter(|i| matches!(i, Ok(Item::Disconnected(Ended::Failed(_)))))
        .count();
    assert_eq!(failures, 3);
    assert!(
        matches!(items.last(), Some(Err(Error::GaveUp(_)))),
        "{items:?}"
    );
}

#[tokio::test]
async fn a_refused_connection_is_one_clear_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let items: Vec<_> = within(
        5,
        EventSource::get(&format!("http://{addr}/"))
            .unwrap()
            .reconnect(fast().max_attempts(Some(1)))
            .stream()
            .collect::<Vec<_>>(),
    )
    .await;
    let Some(Err(err)) = items.last() else {
        panic!("{items:?}")
    };
    assert!(matches!(err, Error::Http(_)));
    let line = err.to_string();
    assert!(line.to_lowercase().contains("refused"), "{line}");
    assert!(!line.contains('\n'));
}

#[tokio::test]
async fn a_silent_server_trips_the_idle_timeout_and_the_client_reconnects() {
    let connections = Arc::new(Mutex::new(0));
    let count = connections.clone();
    let addr = spawn(move |_req| {
        *count.lock().unwrap() += 1;
        async { boxed(response(SseBody::new(futures_util::stream::pending()))) }
    })
    .await;
    let mut items = EventSource::get(&format!("http://{addr}/"))
        .unwrap()
        .reconnect(fast().idle_timeout(Some(Duration::from_millis(150))))
        .stream();
    let mut trace = Vec::new();
    while trace.len() < 4 {
        trace.push(within(5, items.next()).await.unwrap().unwrap());
    }
    assert_eq!(trace[0], Item::Connected { attempt: 0 });
    assert_eq!(trace[1], Item::Disconnected(Ended::IdleTimeout));
    assert!(matches!(trace[2], Item::Reconnecting { .. }));
    assert_eq!(trace[3], Item::Connected { attempt: 1 });
    assert_eq!(*connections.lock().unwrap(), 2);
}

#[tokio::test]
async fn a_client_that_stops_reading_fills_a_bounded_queue_and_then_its_departure_closes_it() {
    let (sender_tx, mut sender_rx) = tokio::sync::mpsc::channel(1);
    let addr = spawn(move |_req| {
        let sender_tx = sender_tx.clone();
        async move {
            let (tx, body) = channel(8);
            sender_tx.send(tx).await.unwrap();
            boxed(response(body))
        }
    })
    .await;
    let mut sock = tokio::net::TcpStream::connect(addr).await.unwrap();
    sock.write_all(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    let mut head = [0u8; 64];
    let _ = sock.read(&mut head).await.unwrap(); // the response head, then never read again
    let tx = within(5, sender_rx.recv()).await.unwrap();
    let event = Event::message("x".repeat(16 << 10));
    let mut queued = 0usize;
    let full = within(20, async {
        loop {
            match tx.try_send(&event) {
                Ok(()) => queued += 1,
                Err(TrySendError::Full) => {
                    // hyper and the kernel may still drain a little: wait and re-check.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    if tx.try_send(&event).is_err() {
                        break true;
                    }
                    queued += 1;
                }
                Err(e) => panic!("{e}"),
            }
        }
    })
    .await;
    assert!(full);
    eprintln!(
        "a client that stops reading: {queued} events of 16 KiB accepted before the queue was full"
    );
    // Bounded: queue (8) + hyper's write buffer (~400 KiB) + the socket buffers, in 16 KiB events.
    assert!(
        queued < 2_000,
        "queued {queued} events of 16 KiB before backpressure"
    );
    drop(sock);
    within(10, async {
        loop {
            match tx.try_send(&event) {
                Err(TrySendError::Closed) => break,
                _ => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
    })
    .await;
}

#[tokio::test]
async fn the_body_works_inside_axum() {
    async fn handler() -> http::Response<SseBody> {
        response(
            SseBody::new(futures_util::stream::iter(numbered(3)))
                .keep_alive(Duration::from_secs(15)),
        )
    }
    let app = axum::Router::new().route("/events", axum::routing::get(handler));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let events: Vec<_> = within(
        5,
        EventSource::get(&format!("http://{addr}/events"))
            .unwrap()
            .reconnect(fast().reconnect(false))
            .events()
            .collect::<Vec<_>>(),
    )
    .await;
    let events: Vec<Event> = events.into_iter().collect::<Result<_, _>>().unwrap();
    assert_eq!(events, numbered(3));
}

#[tokio::test]
async fn a_burst_of_ready_events_is_coalesced_into_few_frames() {
    let addr = spawn(|_req| async {
        let burst = (0..10_000).map(|i| Event::message(format!("{i:0100}")));
        boxed(response(SseBody::new(futures_util::stream::iter(burst))))
    })
    .await;
    let client = ssekit_hyper::client::http_client().unwrap();
    let resp = client
        .get(format!("http://{addr}/").parse().unwrap())
        .await
        .unwrap();
    let mut body = resp.into_body();
    let (mut frames, mut bytes) = (0, 0);
    while let Some(frame) = within(10, body.frame()).await {
        if let Ok(data) = frame.unwrap().into_data() {
            frames += 1;
            bytes += data.len();
        }
    }
    assert_eq!(bytes, 10_000 * b"data: \n\n".len() + 10_000 * 100);
    assert!(frames <= 100, "{frames} frames for 10 000 ready events");
}

#[tokio::test]
async fn the_servers_retry_field_sets_the_reconnect_delay() {
    let addr = spawn(|_req| async {
        let frames = [bytes::Bytes::from_static(b"retry: 80\n\ndata: x\n\n")];
        boxed(response(SseBody::from_bytes(futures_util::stream::iter(
            frames,
        ))))
    })
    .await;
    let mut items = EventSource::get(&format!("http://{addr}/"))
        .unwrap()
        .reconnect(fast().min_delay(Duration::from_millis(10)))
        .stream();
    let mut trace = Vec::new();
    while trace.len() < 6 {
        trace.push(within(5, items.next()).await.unwrap().unwrap());
    }
    assert_eq!(trace[1], Item::Retry(80));
    assert_eq!(trace[3], Item::Disconnected(Ended::Clean));
    assert_eq!(
        trace[4],
        Item::Reconnecting {
            after: Duration::from_millis(80)
        }
    );
    assert_eq!(trace[5], Item::Connected { attempt: 1 });
}

#[tokio::test]
async fn an_event_over_the_decoder_limit_is_a_typed_error_not_a_silent_drop() {
    let addr = spawn(|_req| async {
        let big = Event::message("x".repeat(64 << 10));
        boxed(response(SseBody::new(futures_util::stream::iter([big]))))
    })
    .await;
    let limits = ssekit::Config::default().limits(ssekit::Limits::default().max_event(16 << 10));
    let items: Vec<_> = within(
        5,
        EventSource::get(&format!("http://{addr}/"))
            .unwrap()
            .decoder(limits)
            .reconnect(fast())
            .stream()
            .collect::<Vec<_>>(),
    )
    .await;
    assert!(
        matches!(
            items.last(),
            Some(Err(Error::Decode(ssekit::DecodeError::EventTooLarge {
                limit: 16384,
                ..
            })))
        ),
        "{items:?}"
    );
}

#[tokio::test]
async fn a_server_that_accepts_and_never_answers_times_out_and_is_retried() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let held = Arc::new(Mutex::new(Vec::new()));
    let keep = held.clone();
    tokio::spawn(async move {
        loop {
            let (sock, _) = listener.accept().await.unwrap();
            keep.lock().unwrap().push(sock); // hold it open, say nothing
        }
    });
    let items: Vec<_> = within(
        5,
        EventSource::get(&format!("http://{addr}/"))
            .unwrap()
            .response_timeout(Duration::from_millis(100))
            .reconnect(fast().max_attempts(Some(1)))
            .stream()
            .collect::<Vec<_>>(),
    )
    .await;
    let failures: Vec<_> = items
        .iter()
        .filter_map(|i| match i {
            Ok(Item::Disconnected(Ended::Failed(why))) => Some(why.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(failures.len(), 2, "{items:?}");
    assert!(
        failures[0].contains("no response within 0.1 s"),
        "{failures:?}"
    );
    assert!(
        matches!(items.last(), Some(Err(Error::Http(_)))),
        "{items:?}"
    );
    assert_eq!(held.lock().unwrap().len(), 2);
}
