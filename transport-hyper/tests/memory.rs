//! The memory an idle open stream costs (its own test binary, so nothing else runs beside it).

mod common;

use std::time::Duration;

use common::{boxed, spawn, within};
use futures_util::StreamExt;
use ssekit_hyper::client::{http_client, EventSource, Item};
use ssekit_hyper::server::{response, SseBody};

fn rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_per_idle_open_stream_is_small() {
    const IDLE: usize = 500;
    let addr = spawn(|_req| async {
        boxed(response(
            SseBody::new(futures_util::stream::pending()).keep_alive(Duration::from_secs(15)),
        ))
    })
    .await;
    let http = http_client().unwrap();
    let url = format!("http://{addr}/");
    // Warm up allocator and runtime with a few streams first.
    let mut open = Vec::new();
    for _ in 0..10 {
        let mut s = EventSource::get(&url)
            .unwrap()
            .client(http.clone())
            .stream();
        assert!(matches!(s.next().await, Some(Ok(Item::Connected { .. }))));
        open.push(s);
    }
    let before = rss_kib();
    for _ in 0..IDLE {
        let mut s = EventSource::get(&url)
            .unwrap()
            .client(http.clone())
            .stream();
        assert!(matches!(
            within(s.next()).await,
            Some(Ok(Item::Connected { .. }))
        ));
        open.push(s);
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    if let (Some(before), Some(after)) = (before, rss_kib()) {
        let per_stream = (after.saturating_sub(before)) as f64 / IDLE as f64;
        eprintln!(
            "RSS per idle open stream (client + server side, one process): {per_stream:.1} KiB"
        );
        assert!(per_stream < 128.0, "{per_stream} KiB per idle stream");
    }
    drop(open);
}
