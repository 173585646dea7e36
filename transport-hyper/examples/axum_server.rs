//! One SSE endpoint in axum, written with ssekit; `axum_sse.rs` is its twin with axum's own
//! `Sse`, and `tests/axum_twins.rs` checks that a client reads the same stream from both.
//! `SseBody` implements `IntoResponse` (feature `axum`), takes a stream of `Message`s
//! (events, comments, `retry:`) or of `Result`s, and builds JSON events without an `unwrap`.
//!
//! ```text
//! cargo run -p ssekit-hyper --features axum --example axum_server
//! curl -N http://127.0.0.1:3001/ticks
//! ```

use std::time::Duration;

use axum::routing::get;
use axum::Router;
use futures_util::StreamExt;
use serde::Serialize;
use ssekit::{Event, EventName};
use ssekit_hyper::server::{Message, SseBody};

#[derive(Serialize)]
struct Tick {
    n: u64,
}

const TICK: EventName = EventName::from_static("tick");

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// `retry: 1000`, a comment, then three `tick` events with ids 1-3 and JSON data. An error
/// (here: a value JSON cannot write) would end the stream cleanly after what was sent.
async fn ticks() -> SseBody {
    let first = [
        Ok(Message::retry(Duration::from_secs(1))),
        Message::comment("3 ticks").map_err(BoxError::from),
    ];
    let ticks = futures_util::stream::iter(1..=3u64).then(|n| async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        let event = Event::named_json(TICK, &Tick { n })?.with_id(n);
        Ok::<_, BoxError>(Message::from(event))
    });
    let stream = futures_util::stream::iter(first).chain(ticks);
    SseBody::try_from_stream(stream, |e| eprintln!("ticks: {e}"))
        .keep_alive(Duration::from_secs(15))
}

/// The app: `GET /ticks`.
pub fn app() -> Router {
    Router::new().route("/ticks", get(ticks))
}

#[allow(dead_code)]
#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:3001").await?;
    println!("listening on http://{}/ticks", listener.local_addr()?);
    axum::serve(listener, app()).await
}
