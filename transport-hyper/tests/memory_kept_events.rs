//! The memory events cost that the application keeps (its own test binary, so nothing else
//! runs beside it).

mod common;

use std::time::Duration;

use common::{boxed, spawn, within};
use futures_util::StreamExt;
use ssekit_hyper::client::{http_client, EventSource, Item};
use ssekit_hyper::server::{response, SseBody};

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Events that arrive one at a time (as a model's tokens do) each come in their own body
/// frame, a slice of hyper's read buffer. Kept by the application, they must hold about
/// their own bytes, not that buffer each: before, 3,000 kept 25-byte events held 13 MiB
/// (4.3-4.6 KB each; about 130 now).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_that_arrive_one_at_a_time_hold_their_bytes_not_a_read_buffer_each() {
    const EVENTS: usize = 3000;
    let addr = spawn(|_req| async {
        let events = futures_util::stream::unfold(0, |sent| async move {
            if sent == EVENTS {
                return None;
            }
            tokio::time::sleep(Duration::from_micros(300)).await;
            Some((ssekit::Event::message(r#"{"delta":"hello"}"#), sent + 1))
        });
        boxed(response(SseBody::new(events)))
    })
    .await;
    let mut stream = EventSource::get(&format!("http://{addr}/"))
        .unwrap()
        .client(http_client().unwrap())
        .stream();
    let mut kept = Vec::with_capacity(EVENTS);
    assert!(matches!(
        within(stream.next()).await,
        Some(Ok(Item::Connected { .. }))
    ));
    let before = rss_kib();
    while kept.len() < EVENTS {
        match within(stream.next()).await {
            Some(Ok(Item::Event(event))) => kept.push(event),
            Some(Ok(_)) => {}
            other => panic!("{other:?}"),
        }
    }
    let per_event = (rss_kib().saturating_sub(before) * 1024) / EVENTS as u64;
    eprintln!("{EVENTS} kept events: {per_event} bytes of memory each");
    assert!(per_event < 1024, "{per_event} bytes per kept event");
}
