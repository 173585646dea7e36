//! A reconnecting client (the README's client example): prints each event until the stream
//! ends for good.
//!
//! ```text
//! cargo run -p ssekit-cli -- serve &
//! cargo run -p ssekit-hyper --example hyper_client -- 'http://127.0.0.1:8080/stream?count=3'
//! cargo run -p ssekit-hyper --example hyper_client -- http://127.0.0.1:8080/v1/responses '{"input":"hi"}'
//! ```

use futures_util::StreamExt;
use ssekit_hyper::client::EventSource;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), ssekit_hyper::Error> {
    let mut args = std::env::args().skip(1);
    let url = args
        .next()
        .unwrap_or_else(|| "http://127.0.0.1:8080/stream?count=3".to_owned());
    // With a body, a POST (sent again on every reconnect); without one, a GET.
    let source = match args.next() {
        Some(body) => EventSource::post(&url, body)?.header("content-type", "application/json")?,
        None => EventSource::get(&url)?,
    };
    // Reconnects with Last-Event-ID after the server's `retry:` or a backoff with jitter; the
    // stream ends after a 204 (or when the policy gives up, with the error).
    let mut events = source.events();
    while let Some(event) = events.next().await {
        let event = event?;
        let id = event.id().unwrap_or("-");
        println!("{} [{id}]: {}", event.event_type(), event.data());
    }
    Ok(())
}
