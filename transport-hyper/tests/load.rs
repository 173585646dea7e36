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
    // How many streams have seen a keep-alive. The first event waits until every stream
    // has: the idle gap ends on that observation, not after a time that a loaded machine
    // could outlast (a 1 s gap, before, left "most streams pinged" to the scheduler), and a
    // stream that never pings leaves the test to its hang guard.
    let (pinged_tx, pinged_rx) = tokio::sync::watch::channel(0usize);
    let pinged_tx = Arc::new(pinged_tx);
    let addr = spawn(move |_req| {
        let pinged = pinged_rx.clone();
        async move {
            let events = futures_util::stream::iter(0..EVENTS).then(move |i| {
                let mut pinged = pinged.clone();
                async move {
                    if i == 0 {
                        pinged.wait_for(|n| *n == STREAMS).await.unwrap();
                    }
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    Event::builder()
                        .id(i.to_string())
                        .unwrap()
                        .data(format!("event {i}"))
                        .build()
                }
            });
            boxed(response(
                SseBody::new(events).keep_alive(Duration::from_millis(100)),
            ))
        }
    })
    .await;
    let http = http_client().unwrap();
    let url = format!("http://{addr}/");
    let done = Arc::new(AtomicUsize::new(0));
    let pinged = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let tasks: Vec<_> = (0..STREAMS)
        .map(|_| {
            let (http, url, done, pinged, pinged_tx) = (
                http.clone(),
                url.clone(),
                done.clone(),
                pinged.clone(),
                pinged_tx.clone(),
            );
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
                        Item::Comment(_) => {
                            if pings == 0 {
                                pinged_tx.send_modify(|n| *n += 1);
                            }
                            pings += 1;
                        }
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
    // Every stream saw a keep-alive (the first event waited for it).
    assert_eq!(pinged.load(Ordering::Relaxed), STREAMS);
    eprintln!(
        "{STREAMS} concurrent streams × {EVENTS} events (+ keep-alive) in {:?}",
        started.elapsed()
    );
}
