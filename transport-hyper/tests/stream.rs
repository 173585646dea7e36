//! What only the hyper transport has, over real 127.0.0.1 sockets: its `SseBody` inside
//! axum, and ready events coalesced into few body frames. Every scenario both transports
//! share (round trip, keep-alive, resume, errors, slow readers, ...) is in the one
//! conformance suite, `conformance/tests/conformance.rs`, which runs it over every
//! smol/hyper server x client pairing.

mod common;

use std::time::Duration;

use common::{boxed, spawn, within};
use futures_util::StreamExt;
use http_body_util::BodyExt;
use ssekit::client::ReconnectConfig;
use ssekit::Event;
use ssekit_hyper::client::EventSource;
use ssekit_hyper::server::{response, SseBody};

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
    while let Some(frame) = within(body.frame()).await {
        if let Ok(data) = frame.unwrap().into_data() {
            frames += 1;
            bytes += data.len();
        }
    }
    assert_eq!(bytes, 10_000 * b"data: \n\n".len() + 10_000 * 100);
    assert!(frames <= 100, "{frames} frames for 10 000 ready events");
}

/// An application slower than the idle timeout does not make a busy stream look idle: the
/// bytes waiting when it asks for the next item are read before the expired deadline counts
/// (before, either could win, and about half the reads ended the connection as idle).
#[tokio::test]
async fn a_consumer_slower_than_the_idle_timeout_gets_no_idle_disconnects() {
    use ssekit_hyper::client::{Ended, Item};
    let addr = spawn(|_req| async {
        let events = futures_util::stream::unfold(0u64, |n| async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            Some((Event::message(n.to_string()), n + 1))
        });
        boxed(response(SseBody::new(events)))
    })
    .await;
    let mut stream = EventSource::get(&format!("http://{addr}/"))
        .unwrap()
        .reconnect(ReconnectConfig::default().idle_timeout(Some(Duration::from_millis(100))))
        .stream();
    let mut events = 0;
    while events < 8 {
        match within(stream.next()).await {
            Some(Ok(Item::Event(_))) => {
                events += 1;
                tokio::time::sleep(Duration::from_millis(200)).await; // the application's work
            }
            Some(Ok(Item::Disconnected(Ended::IdleTimeout))) => {
                panic!("an idle disconnect after {events} events, with bytes waiting")
            }
            Some(Ok(_)) => {}
            other => panic!("{other:?}"),
        }
    }
}
