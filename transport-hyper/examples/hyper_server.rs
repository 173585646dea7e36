//! A plain hyper SSE server (the README's server example): a JSON tick every second, built
//! without an `unwrap`, keep-alive every 15 s, `Last-Event-ID` resume, HTTP/1.1 and HTTP/2.
//!
//! ```text
//! cargo run -p ssekit-hyper --example hyper_server
//! curl -N http://127.0.0.1:3000/ticks            # or: cargo run -p ssekit-cli -- tail http://127.0.0.1:3000/ticks
//! ```

use std::convert::Infallible;
use std::time::Duration;

use futures_util::StreamExt;
use hyper::service::service_fn;
use serde::Serialize;
use ssekit::{Event, EventName};
use ssekit_hyper::server::{last_event_id, response, serve, Message, SseBody};

#[derive(Serialize)]
struct Tick {
    n: u64,
}

/// Checked at compile time: a name with a line break would not build.
const TICK: EventName = EventName::from_static("tick");

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
    println!("listening on http://{}/ticks", listener.local_addr()?);
    serve(
        listener,
        service_fn(|req| async move {
            // Resume after the client's last id (these ticks are computable, so no replay
            // buffer is needed).
            let start = last_event_id(req.headers())
                .and_then(|id| id.parse::<u64>().ok())
                .map_or(1, |n| n + 1);
            let ticks = futures_util::stream::iter(start..).then(|n| async move {
                tokio::time::sleep(Duration::from_secs(1)).await;
                Event::named_json(TICK, &Tick { n }).map(|ev| Message::from(ev.with_id(n)))
            });
            // A stream of `Result`s: an `Err` ends the body cleanly, reported here.
            let body = SseBody::try_from_stream(ticks, |e| eprintln!("ticks: {e}"));
            Ok::<_, Infallible>(response(body.keep_alive(Duration::from_secs(15))))
        }),
    )
    .await
}
