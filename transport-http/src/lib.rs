//! # ssekit-http — SSE over HTTP, written once for every runtime
//!
//! Everything about SSE over HTTP that is not a socket or a runtime, written once for
//! [`ssekit-hyper`] (tokio) and [`ssekit-smol`] (smol / async-io), generic over one seam,
//! [`runtime::Runtime`] (a clock, a timer, `spawn`, a cooperative budget). Both transports
//! name these types on their runtime and re-export the rest, so an [`Item`](client::Item) or
//! an [`Error`] is the same type on either. The protocol state machines (the client's
//! [`Session`](client::Session), the ORS task state, the broadcast's [`Hub`](server::Hub))
//! are deterministic: no IO, no clock (callers pass [`ssekit::Instant`]s), and no randomness
//! but [`entropy::os_seed`], for the seeds that must not be guessable where the caller gave
//! none (reconnect jitter, task-id keys).
//!
//! ```text
//!  client:  EventSource<C> ─▶ RequestSpec ─▶ Session ──poll(now)──▶ Step ─▶ Drive ─▶ C's Io::send (the transport's HTTP client)
//!                                             ▲ handle_head / handle_data / handle_end / handle_timeout (Drive, on R's timer)
//!  server:  SseBody<R> (Frames + Pinger on R), channel, Broadcast<R>, serve* over a listener's Accept<R>
//!  ors:     call_frames (Chunker) ─▶ complete (TaskRegistry) ─▶ Follow (one /call connection); Server<R>, Client<T: HttpIo>
//!  pipe:    EventStream (AsyncRead), EventSink<W, R> (AsyncWrite + keep-alive)
//! ```
//!
//! **Why a crate and not a feature of the core.** The core is `no_std` and knows no HTTP
//! types; these pieces need `http`'s `Request`, `HeaderMap` and `Method` (std) and an
//! umbrella error with `std::io::Error` in it, which the core's conventions rule out. A
//! feature would have given the core a second dependency story and a `std`-only corner.
//! As its own crate both transports depend on the same copy, and a third runtime is an
//! `impl Runtime`, an `impl server::Accept` for its listener and an `impl client::Connect`
//! for its HTTP client.
//!
//! [`ssekit-hyper`]: https://docs.rs/ssekit-hyper
//! [`ssekit-smol`]: https://docs.rs/ssekit-smol
//!
//! # Crate features
//! - `hyper`: `From<hyper::Error>` for [`Error`], so `?` works on hyper's results;
//!   `io::collect`, the bounded read of a response body both transports' [`io::HttpIo`]
//!   implementations share; `runtime::Timer` and `runtime::Executor`, a runtime as hyper's
//!   timer and executor; `server::AnyBody`.
//! - `server`: `server::channel` and `server::Broadcast` (their queues are tokio's `mpsc`:
//!   its `sync` module, no runtime).
//! - `hyper-server`: the accept loop (`server::serve*`, `server::Accept`, `ServeOptions`).
//! - `rustls`: TLS for the accept loop and the clients' `ClientOptions::tls`.
//! - `axum`: `IntoResponse` for `server::SseBody` (through `axum-core`).
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
pub mod client;
pub mod entropy;
mod error;
pub mod io;
pub mod keep_alive;
pub mod observe;
pub mod ors;
pub mod pipe;
pub mod proxy;
pub mod redirect;
pub mod responses;
pub mod retry_after;
pub mod runtime;
pub mod server;
#[cfg(feature = "ors-server")]
pub mod store;
mod sync;

pub use error::{
    redacted_url, BoxError, ContentCoding, Error, NoResponse, Refused, RequestError,
    RequestErrorKind, ToolError,
};
pub use redirect::RedirectError;
