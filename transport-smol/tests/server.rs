//! The smol server's queues without sockets: the bounded channel, and what a `Broadcast`
//! subscriber's queue costs and holds (it grows with its events, so an idle one costs the
//! same whatever `per_client` is, and holds at most `per_client`); capacities past
//! `MAX_QUEUED` are lowered, not a panic. Its response head, `Broadcast` resumption and slow
//! readers are scenarios of the conformance suite (`conformance/tests/conformance.rs`), on
//! every server x client pairing.

#[path = "../../core/tests/support/counting.rs"]
mod counting;

use std::future::Future;
use std::time::Duration;

use http_body_util::BodyExt;
use ssekit::server::ReplayBuffer;
use ssekit::Event;
use ssekit_smol::server::{channel, Broadcast, SseBody, TrySendError};

/// Fails a test that hangs instead of hanging the suite (after 60 s: only a hang fails,
/// never a slow run on a loaded machine).
fn run<T>(fut: impl Future<Output = T>) -> T {
    smol::block_on(futures_lite::future::or(fut, async {
        smol::Timer::after(Duration::from_secs(60)).await;
        panic!("hung: no outcome after 60 s")
    }))
}

fn numbered(i: usize) -> Event {
    Event::builder()
        .id(i.to_string())
        .unwrap()
        .data(format!("n{i}"))
        .build()
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

/// Every byte a body yields until it ends.
async fn drain(mut body: SseBody) -> String {
    let mut out = Vec::new();
    while let Some(frame) = body.frame().await {
        out.extend_from_slice(&frame.unwrap().into_data().unwrap());
    }
    String::from_utf8(out).unwrap()
}

#[test]
fn an_idle_subscriber_costs_the_same_whatever_per_client_is() {
    let _serial = counting::one_at_a_time();
    let per_subscriber = |per_client: usize| {
        let hub = Broadcast::new(ReplayBuffer::default(), per_client);
        let mut bodies = Vec::new();
        let measured = counting::measure(|| {
            for _ in 0..10 {
                bodies.push(hub.subscribe(None).unwrap());
            }
        });
        measured.allocated / 10
    };
    let small = per_subscriber(8);
    let large = per_subscriber(100_000);
    // Before: the queue of 100,000 slots was allocated whole, 4 MB per subscriber.
    assert!(large < 16 << 10, "{large} bytes per idle subscriber");
    assert_eq!(small, large);
}

#[test]
fn a_subscriber_holds_at_most_per_client_events_and_is_dropped_past_them() {
    let hub = Broadcast::new(ReplayBuffer::default(), 2);
    let body = hub.subscribe(None).unwrap();
    assert_eq!(hub.publish(&numbered(1)).unwrap(), 1);
    assert_eq!(hub.publish(&numbered(2)).unwrap(), 1);
    assert_eq!(
        hub.publish(&numbered(3)).unwrap(),
        0,
        "the third finds it full"
    );
    assert_eq!(hub.subscribers(), 0);
    // What was queued arrives, then the stream ends with a `retry:` hint: the client
    // resumes from the ring.
    assert_eq!(
        run(drain(body)),
        "id: 1\ndata: n1\n\nid: 2\ndata: n2\n\nretry: 1000\n\n"
    );
}

#[test]
fn capacities_past_max_queued_are_lowered_not_a_panic() {
    let hub = Broadcast::new(ReplayBuffer::default(), usize::MAX);
    let body = hub.subscribe(None).unwrap();
    assert_eq!(hub.publish(&numbered(1)).unwrap(), 1);
    hub.disconnect_all();
    assert_eq!(run(drain(body)), "id: 1\ndata: n1\n\n");
    let (tx, body) = channel(usize::MAX);
    tx.try_send(&numbered(2)).unwrap();
    drop(tx);
    assert_eq!(run(drain(body)), "id: 2\ndata: n2\n\n");
}
