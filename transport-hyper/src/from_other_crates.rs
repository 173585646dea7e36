//! # Coming from another SSE crate
//!
//! The common calls of axum's `Sse`, `reqwest-eventsource`, `eventsource-client` and
//! `async-sse`, and what to write with ssekit instead. Names on the right are this crate's
//! (`server::…`, `client::…`), the core's (`ssekit::…`) and `ssekit-http`'s; `ssekit-smol`
//! has the same ones on smol.
//!
//! ## axum's `Sse` (server)
//!
//! | axum | ssekit |
//! |---|---|
//! | `Sse::new(stream_of_results)` | `server::SseBody::try_from_stream(stream, on_error)` (an `Err` ends the body cleanly and goes to `on_error`), or `SseBody::new(stream_of_events)`; with feature `axum` it is an `IntoResponse` |
//! | `.keep_alive(KeepAlive::new().interval(d).text("ping"))` | `.keep_alive(d)`, or `.keep_alive_with(ssekit::server::KeepAlive::new(d, Instant::ZERO).with_comment("ping")?)` |
//! | `Event::default().data(s).event("e").id("1")` | `Event::builder().event("e")?.id("1")?.data(s).build()`, or without `?`: `Event::named(E, s).with_id(1u64)` with `const E: EventName = EventName::from_static("e")` |
//! | `Event::default().json_data(&v)?` | `Event::json_data(&v)?`, `Event::named_json(E, &v)?` |
//! | `Event::default().retry(d)`, `.comment(c)` | `server::Message::retry(d)`, `Message::comment(c)?`, in a stream of `Message`s (`SseBody::from_messages`) |
//! | `axum::serve(listener, app)` | `axum::serve` as it is, or `server::serve` / `serve_with(.., ServeOptions)` (HTTP/1.1 and HTTP/2, TLS with ALPN, graceful stop) |
//!
//! ## reqwest-eventsource (client)
//!
//! | reqwest-eventsource | ssekit |
//! |---|---|
//! | `EventSource::get(url)`, `EventSource::new(client.post(url).body(b))?` | `client::EventSource::get(url)?`, `EventSource::post(url, b)?` (the body is sent again on every reconnect) |
//! | a shared `reqwest::Client` (pool, proxies, TLS) | `client::ClientOptions::default().proxy(..).tls(..).build()?` once, then `.client(shared.clone())` on each `EventSource` |
//! | `Ok(Event::Open)`, `Ok(Event::Message(m))` | `.stream()`: `Item::Connected { .. }`, `Item::Event(ev)`, and `Item::Comment`, `Item::Retry`, `Item::Disconnected(why)`, `Item::Reconnecting { after }`; or `.events()` for the events alone |
//! | `es.set_retry_policy(Box::new(ExponentialBackoff::new(..)))` | `.reconnect(ssekit::client::ReconnectConfig::default().min_delay(..).max_delay(..).max_attempts(Some(n)))` |
//! | `Err(Error::InvalidStatusCode(status, response))` | `Err(Error::Refused(r))`: `r.status()`, `r.header_map()`, `r.body()` (its first 4 KiB), `r.retry_after_value()`; 5xx, 408 and 429 are retried first |
//! | `es.close()` | drop the stream |
//! | `serde_json::from_str(&m.data)` | `ev.json::<T>()?` |
//!
//! ## eventsource-client (client)
//!
//! | eventsource-client | ssekit |
//! |---|---|
//! | `ClientBuilder::for_url(url)?.header(k, v)?` | `client::EventSource::get(url)?.header(k, v)?` |
//! | `.method("POST").body(b)` | `EventSource::post(url, b)?` |
//! | `.reconnect(ReconnectOptions::reconnect(true).delay(d).delay_max(m).build())` | `.reconnect(ReconnectConfig::default().min_delay(d).max_delay(m))` |
//! | `client.stream()`: `SSE::Connected(_)`, `SSE::Event(ev)`, `SSE::Comment(c)` | `.stream()`: `Item::Connected { .. }`, `Item::Event(ev)`, `Item::Comment(c)` |
//! | `ev.event_type`, `ev.data`, `ev.id` | `ev.event_type()`, `ev.data()`, `ev.id()` (and the stream's `Last-Event-ID` is sent on reconnects for you) |
//!
//! ## async-sse
//!
//! | async-sse | ssekit |
//! |---|---|
//! | `let (sender, encoder) = async_sse::encode();` then `sender.send("e", "data", Some("1")).await` | `let (tx, body) = server::channel(capacity);` then `tx.send(&event).await?` (bounded: it waits for a slow client) |
//! | `async_sse::decode(reader)`: `Event::Message(m)`, `Event::Retry(d)` | `ssekit::Decoder`: `feed(bytes)?`, then `next_frame()?`: `Frame::Event(ev)`, `Frame::Retry(ms)`, `Frame::Comment(c)`; on smol, `ssekit_smol::io::EventStream::new(reader)` |
//!
//! ## One example: the typed JSON endpoint and its client
//!
//! ```no_run
//! use futures_util::StreamExt;
//! use ssekit::{Event, EventName};
//! use ssekit_hyper::client::{ClientOptions, EventSource};
//! use ssekit_hyper::server::{Message, SseBody};
//!
//! #[derive(serde::Serialize, serde::Deserialize)]
//! struct Tick { n: u64 }
//! const TICK: EventName = EventName::from_static("tick");
//!
//! // Server side: a stream of Results, as with axum's `Sse`.
//! fn ticks() -> SseBody {
//!     let items = futures_util::stream::iter(1..=3u64)
//!         .map(|n| Event::named_json(TICK, &Tick { n }).map(|ev| Message::from(ev.with_id(n))));
//!     SseBody::try_from_stream(items, |e| eprintln!("{e}"))
//! }
//!
//! // Client side: one shared client, typed data.
//! # async fn client() -> Result<(), Box<dyn std::error::Error>> {
//! let shared = ClientOptions::default().build()?;
//! let mut events = EventSource::get("http://127.0.0.1:3000/ticks")?.client(shared).events();
//! while let Some(event) = events.next().await {
//!     println!("tick {}", event?.json::<Tick>()?.n);
//! }
//! # Ok(()) }
//! ```
