//! The same SSE body inside axum: `SseBody` is an `http_body::Body`, so an axum handler returns
//! `response(body)` as it is.
//!
//! ```text
//! cargo run -p ssekit-hyper --example axum_server
//! curl -N http://127.0.0.1:3001/events
//! ```

use std::time::Duration;

use axum::routing::get;
use axum::Router;
use ssekit::Event;
use ssekit_hyper::server::{response, SseBody};

async fn events() -> http::Response<SseBody> {
    let stream = futures_util::stream::unfold(0u64, |n| async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        Some((Event::message(format!("message {n}")), n + 1))
    });
    response(SseBody::new(stream).keep_alive(Duration::from_secs(15)))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let app = Router::new().route("/events", get(events));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:3001").await?;
    println!("listening on http://{}/events", listener.local_addr()?);
    axum::serve(listener, app).await
}
