//! The twin of `axum_server.rs`: the same endpoint with axum's own `Sse`, for comparison.
//!
//! ```text
//! cargo run -p ssekit-hyper --example axum_sse
//! curl -N http://127.0.0.1:3002/ticks
//! ```

use std::time::Duration;

use axum::response::sse::{Event, KeepAlive, Sse};
use axum::routing::get;
use axum::Router;
use futures_util::{Stream, StreamExt};
use serde::Serialize;

#[derive(Serialize)]
struct Tick {
    n: u64,
}

/// `retry: 1000`, a comment, then three `tick` events with ids 1-3 and JSON data.
async fn ticks() -> Sse<impl Stream<Item = Result<Event, axum::Error>>> {
    let first = [
        Ok(Event::default().retry(Duration::from_secs(1))),
        Ok(Event::default().comment("3 ticks")),
    ];
    let ticks = futures_util::stream::iter(1..=3u64).then(|n| async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        Event::default()
            .event("tick")
            .id(n.to_string())
            .json_data(Tick { n })
    });
    Sse::new(futures_util::stream::iter(first).chain(ticks))
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}

/// The app: `GET /ticks`.
pub fn app() -> Router {
    Router::new().route("/ticks", get(ticks))
}

#[allow(dead_code)]
#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:3002").await?;
    println!("listening on http://{}/ticks", listener.local_addr()?);
    axum::serve(listener, app()).await
}
