//! # ssekit-smol — Server-Sent Events on smol, or any `futures-io` runtime
//!
//! IO for the sans-IO [`ssekit`] core: every SSE decision (encoding, decoding, keep-alive
//! timing, reconnect policy, `Last-Event-ID` replay) is the core's; this crate moves bytes
//! over `futures-io` types and runs timers on [`async_io::Timer`].
//!
//! ```text
//!  io:      AsyncRead ─▶ EventStream (Decoder) ─▶ Stream<Frame>;  events ─▶ EventSink (Encoder + KeepAlive) ─▶ AsyncWrite
//!  server:  Stream<Event> ─▶ SseBody (Encoder + KeepAlive + Timer) ─▶ hyper on smol ─▶ socket
//!  client:  socket ─▶ hyper on smol ─▶ EventSource (Decoder + Reconnect + Timer) ─▶ Stream<Item>
//! ```
//!
//! | module | what |
//! |---|---|
//! | [`io`] | [`EventStream`](io::EventStream) over any `AsyncRead`, [`EventSink`](io::EventSink) over any `AsyncWrite`: for custom runtimes and non-HTTP pipes |
//! | `server` (feature `http`) | `SseBody` with keep-alive, `response` headers, bounded `channel`, `Broadcast` with `Last-Event-ID` replay, `AnyBody`, `serve`/`serve_with` on smol (HTTP/1.1 and HTTP/2: h2c, TLS with ALPN) |
//! | `client` (feature `http`) | `EventSource`: any request, reconnects per core `Reconnect`, a `Stream` of `Item`s; HTTPS with `rustls` (HTTP/2 by ALPN); `HttpClient`, one pool shared by many streams |
//! | `utcp` (feature `utcp`) | UTCP's SSE provider, the same as `ssekit-hyper`'s (`ssekit-utcp` over `client::SmolHttp`): provider objects with auth and OAuth2 refresh, checked tool calls, `/utcp` discovery |
//! | `ors` (feature `http`) | `Server`: the ORS HTTP API over `Environment`s (the same server as `ssekit-hyper`'s, written once in `ssekit-http`), `Calls` its `/call` half alone; `Client`: sessions and tool calls resumed by task id |
//! | [`runtime`] | [`Smol`](runtime::Smol): `ssekit-http`'s `Runtime` (clock, timer, spawn) on smol; everything else is written once over it |
//!
//! ## Crate features
//! - `http` (default): the HTTP server and client, HTTP/1.1 and HTTP/2, on hyper 1 driven by
//!   smol's executor and `async-io` through `smol-hyper`. hyper 1 always depends on tokio's
//!   `sync` module (its channels), and HTTP/2 (the `h2` crate) on its `io-util` traits; no
//!   tokio runtime, reactor, timer or socket is used. Without this feature the crate's
//!   dependency tree has no tokio at all.
//! - `rustls` (default, implies `http`): `https://` for the client through `futures-rustls`
//!   (ring, Mozilla roots from `webpki-roots`, or your own `rustls::ClientConfig` with
//!   `EventSource::tls`).
//! - `utcp` (default, implies `http`): the `utcp` module, UTCP's SSE provider
//!   (`ssekit-utcp`: a JSON Schema checker and an OAuth2 client, written once for both
//!   transports).
//!
//! The IO-free half (the client's request and drive state, the error, the response
//! headers, the broadcast and ORS task state) is `ssekit-http`'s, shared with
//! `ssekit-hyper`; the types it defines are re-exported here.
//!
//! ## Example: events over a pipe
//! ```
//! use futures_lite::StreamExt;
//! use ssekit::{Event, Frame};
//! use ssekit_smol::io::{EventSink, EventStream};
//! # smol::block_on(async {
//! let mut sink = EventSink::new(Vec::new());
//! sink.send(&Event::message("hello")).await?;
//! let wire = sink.into_inner();
//! let mut frames = EventStream::new(&wire[..]);
//! let Some(Ok(Frame::Event(ev))) = frames.next().await else { panic!() };
//! assert_eq!(ev.data(), "hello");
//! # Ok::<(), ssekit_smol::Error>(()) }).unwrap();
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

#[cfg(feature = "http")]
pub mod client;
pub mod io;
#[cfg(feature = "http")]
pub mod ors;
pub mod runtime;
#[cfg(feature = "http")]
pub mod server;
#[cfg(feature = "utcp")]
pub mod utcp;

pub use ssekit_http::{BoxError, Error};
