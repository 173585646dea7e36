//! A smol SSE server and a smol client in one process (the README's smol example):
//! `cargo run -p ssekit-smol --example smol_server`.

use std::convert::Infallible;
use std::time::Duration;

use futures_lite::StreamExt;
use hyper::service::service_fn;
use ssekit::{server::ReplayBuffer, Event};
use ssekit_smol::client::EventSource;
use ssekit_smol::server::{last_event_id, response, serve, Broadcast};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    smol::block_on(async {
        // Server: one live stream for every client, resumed by Last-Event-ID from the replay buffer.
        let hub = Broadcast::new(ReplayBuffer::new(1024, 4 << 20), 64);
        let listener = smol::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let subscribers = hub.clone();
        let service = service_fn(move |req: http::Request<_>| {
            let body = subscribers
                .subscribe(last_event_id(req.headers()))
                // Too far behind to replay: start afresh (a real app sends its state first).
                .or_else(|_gap| subscribers.subscribe(None))
                .expect("subscribing without an id cannot fail");
            async move { Ok::<_, Infallible>(response(body.keep_alive(Duration::from_secs(15)))) }
        });
        smol::spawn(serve(listener, service)).detach();
        smol::spawn(async move {
            for i in 1.. {
                hub.publish(
                    &Event::builder()
                        .id(i.to_string())?
                        .data(format!("tick {i}"))
                        .build(),
                )?;
                smol::Timer::after(Duration::from_millis(100)).await;
            }
            Ok::<(), ssekit::EncodeError>(())
        })
        .detach();

        // Client: reconnects with Last-Event-ID and backoff, as the core's policy decides.
        let mut events = EventSource::get(&format!("http://{addr}/events"))?
            .events()
            .take(3);
        while let Some(event) = events.next().await {
            println!("{}", event?.data());
        }
        Ok(())
    })
}
