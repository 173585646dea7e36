//! Broadcast without sockets: Last-Event-ID resumption and slow clients dropped. Clients
//! resuming over HTTP across a server-side disconnect is a scenario of the conformance
//! suite (`conformance/tests/conformance.rs`), on every server x client pairing.

mod common;

use common::within;
use http_body_util::BodyExt;
use ssekit::server::{Gap, ReplayBuffer};
use ssekit::Event;
use ssekit_hyper::server::{Broadcast, SseBody};

fn tick(i: u32) -> Event {
    Event::builder()
        .event("tick")
        .unwrap()
        .id(i.to_string())
        .unwrap()
        .data(format!("t{i}"))
        .build()
}

/// All the bytes a body yields until it ends (or `limit` bytes).
async fn drain(mut body: SseBody) -> String {
    let mut out = Vec::new();
    while let Some(frame) = within(body.frame()).await {
        out.extend_from_slice(&frame.unwrap().into_data().unwrap());
    }
    String::from_utf8(out).unwrap()
}

#[tokio::test]
async fn a_resuming_client_gets_the_missed_events_then_the_live_ones_exactly_once() {
    let hub = Broadcast::new(ReplayBuffer::new(64, 1 << 20), 16);
    for i in 1..=5 {
        hub.publish(&tick(i)).unwrap();
    }
    let resumed = hub.subscribe(Some("2")).unwrap();
    let fresh = hub.subscribe(None).unwrap();
    assert_eq!(hub.publish(&tick(6)).unwrap(), 2);
    hub.disconnect_all();
    let wire = |ids: &[u32]| -> String {
        ids.iter()
            .map(|i| format!("event: tick\nid: {i}\ndata: t{i}\n\n"))
            .collect()
    };
    assert_eq!(drain(resumed).await, wire(&[3, 4, 5, 6]));
    // A client without an id is told where it starts, then sent what follows.
    assert_eq!(drain(fresh).await, format!("id: 5\n\n{}", wire(&[6])));
    assert!(matches!(hub.subscribe(Some("99")), Err(Gap::Unknown)));
}

#[tokio::test]
async fn a_client_that_falls_behind_is_dropped_and_the_others_are_not_slowed() {
    let hub = Broadcast::new(ReplayBuffer::new(64, 1 << 20), 4);
    let slow = hub.subscribe(None).unwrap(); // never polled while publishing
    let mut fast = hub.subscribe(None).unwrap();
    let mut fast_got = String::new();
    for i in 1..=10 {
        let reached = hub.publish(&tick(i)).unwrap();
        assert_eq!(reached, if i <= 4 { 2 } else { 1 }, "event {i}");
        // The fast client keeps up.
        let frame = within(fast.frame()).await.unwrap().unwrap();
        fast_got.push_str(std::str::from_utf8(&frame.into_data().unwrap()).unwrap());
    }
    assert_eq!(fast_got.matches("event: tick").count(), 10);
    // The slow one gets what was queued for it, then its stream ends with a `retry:` hint:
    // it reconnects with Last-Event-ID 4 and is served 5.. from the replay buffer.
    let slow_got = drain(slow).await;
    assert_eq!(slow_got.matches("event: tick").count(), 4);
    assert!(
        slow_got.ends_with("id: 4\ndata: t4\n\nretry: 1000\n\n"),
        "{slow_got}"
    );
    let again = hub.subscribe(Some("4")).unwrap();
    hub.disconnect_all();
    assert_eq!(drain(again).await.matches("event: tick").count(), 6);
}

#[tokio::test]
async fn clients_that_leave_before_any_event_are_not_all_kept() {
    // Pruning happened only on publish: a hub with clients but no events kept every one
    // that ever came (200,000 subscribe-and-drop cycles: 326 MB).
    let hub = Broadcast::new(ReplayBuffer::new(64, 1 << 20), 16);
    for _ in 0..10_000 {
        drop(hub.subscribe(None).unwrap());
    }
    assert!(hub.subscribers() <= 32, "{} kept", hub.subscribers());
    let kept = hub.subscribe(None).unwrap();
    assert_eq!(hub.publish(&tick(1)).unwrap(), 1);
    drop(kept);
}

/// A configured "no limit" is lowered to `MAX_QUEUED`: before, tokio's channel panicked at
/// every `subscribe` (a semaphore of more than `MAX_PERMITS`), inside the request handler.
#[tokio::test]
async fn capacities_past_max_queued_are_lowered_not_a_panic() {
    let hub = Broadcast::new(ReplayBuffer::default(), usize::MAX);
    let body = hub.subscribe(None).unwrap();
    assert_eq!(hub.publish(&tick(1)).unwrap(), 1);
    hub.disconnect_all();
    assert_eq!(drain(body).await, "event: tick\nid: 1\ndata: t1\n\n");
    let (tx, body) = ssekit_hyper::server::channel(usize::MAX);
    tx.try_send(&tick(2)).unwrap();
    drop(tx);
    assert_eq!(drain(body).await, "event: tick\nid: 2\ndata: t2\n\n");
}
