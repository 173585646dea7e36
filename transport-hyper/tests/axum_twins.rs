//! The axum example written with ssekit (`examples/axum_server.rs`) and its twin with axum's
//! own `Sse` (`examples/axum_sse.rs`) serve the same stream: a client decodes the same
//! frames from both (the `retry:`, the comment, the named JSON events with their ids), and
//! each event's data reads back as the typed value.
#![cfg(feature = "axum")]

#[path = "../examples/axum_sse.rs"]
mod with_axum;
#[path = "../examples/axum_server.rs"]
mod with_ssekit;

use serde::Deserialize;
use ssekit::{Decoder, Frame};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[derive(Debug, PartialEq, Deserialize)]
struct Tick {
    n: u64,
}

/// Serves `app` on 127.0.0.1 and returns every frame of one `GET /ticks`.
async fn frames(app: axum::Router) -> (String, Vec<Frame>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let mut socket = tokio::net::TcpStream::connect(addr).await.unwrap();
    socket
        .write_all(b"GET /ticks HTTP/1.0\r\nAccept: text/event-stream\r\n\r\n")
        .await
        .unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(
        std::time::Duration::from_secs(10),
        socket.read_to_end(&mut raw),
    )
    .await
    .expect("the stream ends")
    .unwrap();
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    let head = String::from_utf8_lossy(&raw[..split]).to_lowercase();
    let mut decoder = Decoder::new();
    decoder.feed_slice(&raw[split..]).unwrap();
    let mut frames = Vec::new();
    while let Some(frame) = decoder.next_frame().unwrap() {
        frames.push(frame);
    }
    (head, frames)
}

#[tokio::test]
async fn the_ssekit_endpoint_and_its_axum_sse_twin_send_the_same_stream() {
    let (ours_head, ours) = frames(with_ssekit::app()).await;
    let (theirs_head, theirs) = frames(with_axum::app()).await;
    assert_eq!(ours, theirs);
    assert_eq!(ours.len(), 5, "{ours:?}");
    assert_eq!(ours[0], Frame::Retry(1000));
    for head in [&ours_head, &theirs_head] {
        assert!(head.contains("content-type: text/event-stream"), "{head}");
    }
    assert!(ours_head.contains("x-accel-buffering: no"), "{ours_head}");
    let ticks: Vec<Tick> = ours
        .iter()
        .filter_map(|frame| match frame {
            Frame::Event(event) => Some(event.json::<Tick>().unwrap()),
            _ => None,
        })
        .collect();
    assert_eq!(ticks, [Tick { n: 1 }, Tick { n: 2 }, Tick { n: 3 }]);
}
