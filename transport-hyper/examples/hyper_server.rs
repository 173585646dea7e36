//! A plain hyper SSE server: a tick every second, keep-alive every 15 s, `Last-Event-ID` resume.
//!
//! ```text
//! cargo run -p ssekit-hyper --example hyper_server
//! curl -N http://127.0.0.1:3000/ticks            # or: cargo run -p ssekit-cli -- tail http://127.0.0.1:3000/ticks
//! ```

use std::convert::Infallible;
use std::time::Duration;

use hyper::service::service_fn;
use ssekit::Event;
use ssekit_hyper::server::{channel, last_event_id, response, serve};

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
    println!("listening on http://{}/ticks", listener.local_addr()?);
    serve(
        listener,
        service_fn(|req| async move {
            // Resume after the client's last id (these ticks are computable, so no replay buffer is needed).
            let start = last_event_id(req.headers())
                .and_then(|id| id.parse::<u64>().ok())
                .map_or(0, |n| n + 1);
            let (tx, body) = channel(16);
            tokio::spawn(async move {
                for n in start.. {
                    let Ok(builder) = Event::builder()
                        .event("tick")
                        .and_then(|b| b.id(n.to_string()))
                    else {
                        break;
                    };
                    // `send` waits while the client's queue is full; it fails once the client left.
                    if tx
                        .send(&builder.data(format!("{{\"n\":{n}}}")).build())
                        .await
                        .is_err()
                    {
                        break;
                    }
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            });
            Ok::<_, Infallible>(response(body.keep_alive(Duration::from_secs(15))))
        }),
    )
    .await
}
