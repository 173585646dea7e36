//! # ssekit-http — the IO-free HTTP half shared by the ssekit transports
//!
//! Everything about SSE over HTTP that does not touch a socket, a runtime or a timer,
//! written once for [`ssekit-hyper`] (tokio) and [`ssekit-smol`] (smol / async-io): both
//! re-export these types, so an [`Item`](client::Item) or an [`Error`] is the same type on
//! either runtime. Like the [`ssekit`] core it is deterministic: no IO, no clock (callers
//! pass [`ssekit::Instant`]s), and no randomness but [`entropy::os_seed`], for the seeds that
//! must not be guessable where the caller gave none (reconnect jitter, task-id keys).
//!
//! ```text
//!  EventSource builder ─▶ RequestSpec ─▶ Session ──poll(now)──▶ Step::Connect(request) ─▶ transport: HTTP exchange
//!                                          ▲  handle_head / handle_data / handle_end / handle_timeout
//!                                          └──────────────────────────────── transport: body frames, timer
//!  server:  response(body) headers;  last_event_id(headers);  TrySendError;  Hub (Broadcast state)
//!  ors:     call_frames (Chunker) ─▶ complete (TaskRegistry) ─▶ Follow (one /call connection)
//!  io:      HttpIo (events, request_limited, now, sleep_until): what the ORS client and the UTCP provider need of a transport
//! ```
//!
//! The run loop of a transport's client: call [`Session::poll`](client::Session::poll) with
//! the time, do what the [`Step`](client::Step) says (hand an item to the caller, make the
//! HTTP request, drop the connection, or wait for the next body frame or the deadline),
//! feed back what happened, repeat.
//!
//! **Why a crate and not a feature of the core.** The core is `no_std` and knows no HTTP
//! types; these pieces need `http`'s `Request`, `HeaderMap` and `Method` (std) and an
//! umbrella error with `std::io::Error` in it, which the core's conventions rule out. A
//! feature would have given the core a second dependency story and a `std`-only corner.
//! As its own crate it depends on the core, `http`, `bytes`, `serde_json` (for the
//! error's JSON variant) and `getrandom` (for [`entropy`]) and nothing else, and both
//! transports depend on the same copy.
//! It is also why the builder is a macro: see [`event_source_builder!`].
//!
//! [`ssekit-hyper`]: https://docs.rs/ssekit-hyper
//! [`ssekit-smol`]: https://docs.rs/ssekit-smol
//!
//! # Crate features
//! - `hyper`: `From<hyper::Error>` for [`Error`], so `?` works on hyper's results, and
//!   `io::collect`, the bounded read of a response body both transports' [`io::HttpIo`]
//!   implementations share (no IO is added: `http-body` and `http-body-util` come in).
//! - `hyper-util`: `From<hyper_util::client::legacy::Error>` for [`Error`].
//! - `ors-server`: the ORS server (`ors::Server`, `ors::Calls`), generic over a
//!   [`runtime::Runtime`]; it brings tokio's `sync` module (no tokio runtime), which hyper
//!   depends on anyway. With `hyper` too, the server is a hyper `Service`.
//!
//! # Example
//! ```
//! use ssekit::Instant;
//! use ssekit_http::client::{Item, RequestSpec, Step, Target};
//!
//! let mut session = RequestSpec::get("http://127.0.0.1:1/events", &["http"])?.into_session(Target::Absolute);
//! let Step::Connect { request, .. } = session.poll(Instant::ZERO) else { panic!() };
//! assert_eq!(request.headers()["accept"], "text/event-stream");
//! session.handle_response(Instant::ZERO, 200, Some("text/event-stream"));
//! session.handle_data(Instant::ZERO, bytes::Bytes::from_static(b"data: hi\n\n"));
//! assert!(matches!(session.poll(Instant::ZERO), Step::Item(Item::Connected { attempt: 0 })));
//! let Step::Item(Item::Event(event)) = session.poll(Instant::ZERO) else { panic!() };
//! assert_eq!(event.data(), "hi");
//! # Ok::<(), ssekit_http::Error>(())
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod auth;
mod builder;
pub mod client;
pub mod entropy;
mod error;
pub mod io;
pub mod keep_alive;
pub mod ors;
pub mod pipe;
pub mod proxy;
pub mod redirect;
pub mod retry_after;
pub mod runtime;
pub mod server;
#[cfg(feature = "ors-server")]
pub mod store;

pub use error::{
    redacted_url, BoxError, ContentCoding, Error, NoResponse, Refused, RequestError,
    RequestErrorKind, ToolError,
};
pub use redirect::RedirectError;

/// What [`event_source_builder!`] expands to refers to; not a public API.
#[doc(hidden)]
pub mod __private {
    pub use bytes::Bytes;
    pub use http::{Method, Request};
    pub use ssekit::client::ReconnectConfig;
    pub use ssekit::Config;
}
