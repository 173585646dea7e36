//! # ssekit-hyper — Server-Sent Events over hyper 1
//!
//! IO for the sans-IO [`ssekit`] core: every SSE decision (encoding, decoding, keep-alive
//! timing, reconnect policy, chunking, validation, task resumption) is the core's; this
//! crate moves bytes and runs timers.
//!
//! ```text
//!  server:  Stream<Event> ─▶ SseBody (Encoder + KeepAlive + Timer) ─▶ hyper ─▶ socket
//!  client:  socket ─▶ hyper ─▶ EventSource (Decoder + Reconnect + Timer) ─▶ Stream<Item>
//!  ORS:     POST /{env}/call ─▶ TaskRegistry + Chunker ─▶ SseBody;  ors::Client ─▶ Validator<ToolCall>
//!  UTCP:    provider JSON ─▶ utcp::SseProvider::connect ─▶ ProviderSource (an EventSource, OAuth2 token kept fresh)
//!           GET /utcp ─▶ utcp::discover ─▶ Manual ─▶ Tool ─▶ SseProvider::call ─▶ outputs checked against the tool's schema
//! ```
//!
//! The drive loop of every part is the core's: feed it what happened, drain what it wants
//! done, then wait on IO or on the one deadline it names.
//!
//! | module | what |
//! |---|---|
//! | [`server`] | [`SseBody`](server::SseBody) (keep-alive, ready events batched into bounded frames, a bounded turn per poll: fair under load), [`response`](server::response) headers, bounded [`channel`](server::channel), [`Broadcast`](server::Broadcast) with `Last-Event-ID` replay, [`serve`](server::serve) |
//! | [`client`] | [`EventSource`](client::EventSource): any request, reconnects per core `Reconnect`, a `Stream` of [`Item`](client::Item)s; HTTPS with `rustls` |
//! | [`ors`] | the ORS HTTP API as a [`Server`](ors::Server) over [`Environment`](ors::Environment)s, and a [`Client`](ors::Client) whose calls resume by task id (both written once in `ssekit-http`) |
//! | [`io`] | [`EventStream`](io::EventStream) over any `futures-io` reader, [`EventSink`](io::EventSink) over any writer, with keep-alive: SSE over pipes without HTTP |
//! | [`runtime`] | [`Tokio`](runtime::Tokio): `ssekit-http`'s `Runtime` (clock, timer, spawn, cooperative budget) on tokio; everything else is written once over it |
//! | `utcp` (feature `utcp`) | UTCP's SSE provider, `ssekit-utcp` on [`HyperHttp`](client::HyperHttp): provider object → a `ProviderSource` (an event stream whose OAuth2 token is renewed before it expires and after a 401); tool calls whose inputs and event data are checked against the tool's JSON Schemas; `/utcp` discovery, client and server |
//!
//! Slow or vanished clients cannot grow memory without bound: see [`server`] for the policy.
//! Coming from axum's `Sse`, `reqwest-eventsource`, `eventsource-client` or `async-sse`:
//! [`from_other_crates`] puts their common calls beside ssekit's.
//!
//! ## Crate features
//! - `rustls` (default): HTTPS for the client through `hyper-rustls` (ring, Mozilla roots).
//! - `utcp` (default): the `utcp` module, UTCP's SSE provider (`ssekit-utcp`, written once
//!   for both transports: a JSON Schema checker and an OAuth2 client that plain SSE users
//!   need not compile).
//!
//! ## Example: a server
//! ```no_run
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> std::io::Result<()> {
//! use std::time::Duration;
//! use hyper::service::service_fn;
//! use ssekit::Event;
//! use ssekit_hyper::server::{response, serve, SseBody};
//!
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! serve(listener, service_fn(|_req| async {
//!     let ticks = futures_util::stream::iter((0..3).map(|i| Event::message(i.to_string())));
//!     Ok::<_, std::convert::Infallible>(response(SseBody::new(ticks).keep_alive(Duration::from_secs(15))))
//! }))
//! .await
//! # }
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod client;
pub mod from_other_crates;
pub mod io;
pub mod ors;
mod proxy;
pub mod runtime;
pub mod server;
#[cfg(feature = "utcp")]
pub mod utcp;

pub use ssekit_http::{BoxError, Error};
