//! Events/s from server to client over 127.0.0.1: ssekit's `SseBody` on hyper beside
//! `axum::response::Sse`, the same workload and the same client (ssekit's `EventSource`, so
//! the difference is the server side). Two producers: a ready stream (`loopback_stream`, where
//! ssekit coalesces ready events into one frame) and a one-slot queue fed by a task
//! (`loopback_trickle`, one frame per event on both). Then the memory an idle open stream
//! costs on each.
//!
//! `cargo bench -p ssekit-hyper --bench loopback -- --warm-up-time 1 --measurement-time 3`

// `criterion_group!` generates an undocumented `pub fn`.
#![allow(missing_docs)]

use std::convert::Infallible;
use std::net::SocketAddr;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use futures_util::StreamExt;
use hyper::service::service_fn;
use ssekit::client::ReconnectConfig;
use ssekit::Event;
use ssekit_hyper::client::{http_client, EventSource, HttpClient, Item};
use ssekit_hyper::server::{response, serve, SseBody};

/// LLM-token-like events: a Responses API text delta of a few bytes, ~110 bytes on the wire.
fn delta(i: usize) -> String {
    format!(
        r#"{{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"delta":"tok{i} "}}"#
    )
}

async fn ssekit_server(events: usize) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve(
        listener,
        service_fn(move |_req| async move {
            let stream = futures_util::stream::iter((0..events).map(|i| Event::message(delta(i))));
            Ok::<_, Infallible>(response(
                SseBody::new(stream).keep_alive(Duration::from_secs(15)),
            ))
        }),
    ));
    addr
}

async fn axum_server(events: usize) -> SocketAddr {
    use axum::response::sse::{Event as AxumEvent, KeepAlive, Sse};
    let app = axum::Router::new().route(
        "/",
        axum::routing::get(move || async move {
            let stream = futures_util::stream::iter(
                (0..events).map(|i| Ok::<_, Infallible>(AxumEvent::default().data(delta(i)))),
            );
            Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

/// The same events, handed over one at a time through a one-slot queue by a producer task:
/// no two are ever ready together, so every event is its own frame on both servers.
async fn ssekit_trickle(events: usize) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve(
        listener,
        service_fn(move |_req| async move {
            let (tx, body) = ssekit_hyper::server::channel(1);
            tokio::spawn(async move {
                for i in 0..events {
                    if tx.send(&Event::message(delta(i))).await.is_err() {
                        break;
                    }
                }
            });
            Ok::<_, Infallible>(response(body.keep_alive(Duration::from_secs(15))))
        }),
    ));
    addr
}

async fn axum_trickle(events: usize) -> SocketAddr {
    use axum::response::sse::{Event as AxumEvent, KeepAlive, Sse};
    let app = axum::Router::new().route(
        "/",
        axum::routing::get(move || async move {
            let (tx, mut rx) = tokio::sync::mpsc::channel(1);
            tokio::spawn(async move {
                for i in 0..events {
                    if tx.send(AxumEvent::default().data(delta(i))).await.is_err() {
                        break;
                    }
                }
            });
            let stream =
                futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx)).map(Ok::<_, Infallible>);
            Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

async fn read_all(http: &HttpClient, addr: SocketAddr) -> usize {
    let mut events = EventSource::get(&format!("http://{addr}/"))
        .unwrap()
        .client(http.clone())
        .reconnect(ReconnectConfig::default().reconnect(false))
        .events();
    let mut n = 0;
    while let Some(ev) = events.next().await {
        std::hint::black_box(ev.unwrap());
        n += 1;
    }
    n
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// Opens `n` idle streams to `addr` and returns the RSS growth per stream, in KiB (client and
/// server side: both live in this process).
async fn idle_cost(http: &HttpClient, addr: SocketAddr, n: usize) -> f64 {
    let before = rss_kib();
    let mut open = Vec::with_capacity(n);
    for _ in 0..n {
        let mut s = EventSource::get(&format!("http://{addr}/"))
            .unwrap()
            .client(http.clone())
            .stream();
        assert!(matches!(s.next().await, Some(Ok(Item::Connected { .. }))));
        open.push(s);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let per = rss_kib().saturating_sub(before) as f64 / n as f64;
    drop(open);
    per
}

async fn idle_ssekit() -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve(
        listener,
        service_fn(|_req| async {
            Ok::<_, Infallible>(response(
                SseBody::new(futures_util::stream::pending()).keep_alive(Duration::from_secs(15)),
            ))
        }),
    ));
    addr
}

async fn idle_axum() -> SocketAddr {
    use axum::response::sse::{Event as AxumEvent, KeepAlive, Sse};
    let app = axum::Router::new().route(
        "/",
        axum::routing::get(|| async {
            let stream = futures_util::stream::pending::<Result<AxumEvent, Infallible>>();
            Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let http = rt.block_on(async { http_client().unwrap() });
    let mut group = c.benchmark_group("loopback_stream");
    for events in [1_000usize, 10_000] {
        let (ours, theirs) =
            rt.block_on(async { (ssekit_server(events).await, axum_server(events).await) });
        group.throughput(Throughput::Elements(events as u64));
        group.bench_with_input(
            BenchmarkId::new("ssekit-hyper SseBody", events),
            &events,
            |b, &n| {
                b.to_async(&rt)
                    .iter(|| async { assert_eq!(read_all(&http, ours).await, n) })
            },
        );
        group.bench_with_input(BenchmarkId::new("axum Sse", events), &events, |b, &n| {
            b.to_async(&rt)
                .iter(|| async { assert_eq!(read_all(&http, theirs).await, n) })
        });
    }
    group.finish();

    let mut group = c.benchmark_group("loopback_trickle");
    let events = 10_000usize;
    let (ours, theirs) =
        rt.block_on(async { (ssekit_trickle(events).await, axum_trickle(events).await) });
    group.throughput(Throughput::Elements(events as u64));
    group.bench_with_input(
        BenchmarkId::new("ssekit-hyper channel(1)", events),
        &events,
        |b, &n| {
            b.to_async(&rt)
                .iter(|| async { assert_eq!(read_all(&http, ours).await, n) })
        },
    );
    group.bench_with_input(
        BenchmarkId::new("axum Sse mpsc(1)", events),
        &events,
        |b, &n| {
            b.to_async(&rt)
                .iter(|| async { assert_eq!(read_all(&http, theirs).await, n) })
        },
    );
    group.finish();

    // Memory per idle open stream. axum first, so the allocator's high-water mark from one
    // does not hide the other's cost; each figure is the growth over its own baseline.
    let (axum_kib, ours_kib) = rt.block_on(async {
        let a = idle_axum().await;
        let s = idle_ssekit().await;
        let axum_kib = idle_cost(&http, a, 500).await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        let ours_kib = idle_cost(&http, s, 500).await;
        (axum_kib, ours_kib)
    });
    println!("idle open stream, RSS growth per stream (client + server, 500 streams): axum Sse {axum_kib:.1} KiB, ssekit-hyper SseBody {ours_kib:.1} KiB");
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = bench
}
criterion_main!(benches);
