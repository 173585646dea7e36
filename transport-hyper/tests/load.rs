//! 1000 concurrent streams over 127.0.0.1.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{boxed, spawn, within};
use futures_util::StreamExt;
use ssekit::client::ReconnectConfig;
use ssekit::Event;
use ssekit_hyper::client::{http_client, EventSource, Item};
use ssekit_hyper::server::{response, SseBody};

const STREAMS: usize = 1000;
const EVENTS: usize = 10;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_concurrent_streams_each_get_every_event_and_a_keep_alive() {
    let addr = spawn(|_req| async {
        let events = futures_util::stream::iter(0..EVENTS).then(|i| async move {
            // The first gap is ten keep-alive intervals long, so every stream pings even when a
            // loaded machine leaves its task unpolled for a few hundred milliseconds (with a
            // 400 ms gap, 11% of the streams missed their ping on a busy 2-core machine).
            let pause = if i == 0 { 1000 } else { 5 };
            tokio::time::sleep(Duration::from_millis(pause)).await;
            Event::builder()
                .id(i.to_string())
                .unwrap()
                .data(format!("event {i}"))
                .build()
        });
        boxed(response(
            SseBody::new(events).keep_alive(Duration::from_millis(100)),
        ))
    })
    .await;
    let http = http_client().unwrap();
    let url = format!("http://{addr}/");
    let done = Arc::new(AtomicUsize::new(0));
    let pinged = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let tasks: Vec<_> = (0..STREAMS)
        .map(|_| {
            let (http, url, done, pinged) =
                (http.clone(), url.clone(), done.clone(), pinged.clone());
            tokio::spawn(async move {
                let mut items = EventSource::get(&url)
                    .unwrap()
                    .client(http)
                    .reconnect(ReconnectConfig::default().reconnect(false))
                    .stream();
                let (mut events, mut pings) = (0, 0);
                while let Some(item) = items.next().await {
                    match item.unwrap() {
                        Item::Event(e) => {
                            assert_eq!(e.data(), format!("event {events}"));
                            events += 1;
                        }
                        Item::Comment(_) => pings += 1,
                        _ => {}
                    }
                }
                assert_eq!(events, EVENTS);
                if pings > 0 {
                    pinged.fetch_add(1, Ordering::Relaxed);
                }
                done.fetch_add(1, Ordering::Relaxed);
            })
        })
        .collect();
    within(async {
        for t in tasks {
            t.await.unwrap();
        }
    })
    .await;
    assert_eq!(done.load(Ordering::Relaxed), STREAMS);
    // A ping is sent only when the body is polled while silent; on a machine so loaded that a
    // stream's task first runs again after its event is ready, the event itself goes out and
    // no ping is needed. So most streams, not necessarily all, see one.
    let pinged = pinged.load(Ordering::Relaxed);
    assert!(
        pinged >= STREAMS * 9 / 10,
        "{pinged} of {STREAMS} streams saw a keep-alive"
    );
    eprintln!(
        "{STREAMS} concurrent streams × {EVENTS} events (+ keep-alive) in {:?}",
        started.elapsed()
    );
}
