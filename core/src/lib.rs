//! # ssekit — Server-Sent Events, sans IO
//!
//! A deterministic core for Server-Sent Events: it does no IO, reads no clock and draws no
//! random numbers. You hand it bytes (and, for the timer-driven parts, the current time);
//! it hands back frames, bytes to send, and deadlines. Servers, clients and runtimes supply
//! the sockets; `ssekit-hyper` and `ssekit-smol` are two such adapters.
//!
//! ```text
//!            feed(Bytes)            next_frame()
//!  socket ──────────────▶ Decoder ──────────────▶ Frame::{Event, Comment, Retry}
//!                                                        │
//!  socket ◀────────────── Encoder ◀──────────────── Event │ comment │ retry
//!            BufMut                  encode()
//! ```
//!
//! ## The run loop
//! Feed what the socket gave you, then drain frames until the decoder asks for more:
//!
//! ```
//! use bytes::Bytes;
//! use ssekit::{Decoder, Frame, StreamEnd};
//!
//! let mut decoder = Decoder::new();
//! for piece in [&b"event: delta\ndata: Hel"[..], b"lo\n\n: keep-alive\n\n"] {
//!     decoder.feed(Bytes::copy_from_slice(piece))?;
//!     while let Some(frame) = decoder.next_frame()? {
//!         match frame {
//!             Frame::Event(ev) => assert_eq!((ev.event_type(), ev.data()), ("delta", "Hello")),
//!             Frame::Comment(text) => assert_eq!(text, "keep-alive"),
//!             _ => {}
//!         }
//!     }
//! }
//! assert_eq!(decoder.finish(), StreamEnd::Clean);
//! # Ok::<(), ssekit::DecodeError>(())
//! ```
//!
//! Encoding writes into any [`bytes::BufMut`] and refuses, with a typed error, anything that
//! would inject a field:
//!
//! ```
//! use ssekit::{EncodeError, Encoder, Event};
//!
//! let mut out = Vec::new();
//! let event = Event::builder().event("chunk")?.id("42")?.data("line 1\nline 2").build();
//! Encoder::new().encode(&event, &mut out)?;
//! assert_eq!(out, b"event: chunk\nid: 42\ndata: line 1\ndata: line 2\n\n");
//!
//! assert!(matches!(Event::builder().id("1\nevent: x"), Err(EncodeError::LineBreak { .. })));
//! # Ok::<(), EncodeError>(())
//! ```
//!
//! ## What else is in the box
//!
//! | module | concept | main types |
//! |---|---|---|
//! | [`decode`], [`encode`] | the codec above | [`Decoder`], [`Frame`], [`FrameRef`], [`Limits`], [`Encoder`] |
//! | [`chunk`] | ORS 4096-byte chunking on UTF-8 boundaries, and reassembly with a cap | [`chunk::Chunker`], [`chunk::Reassembler`] |
//! | [`sequence`], [`profile`] | event-order validation: ORS tool calls, Responses API, agent runs, workflows, chat completions | [`sequence::Validator`], [`sequence::Profile`] |
//! | [`client`] | reconnect policy: headers, response check, `retry:`, backoff with jitter, idle timeout, duplicate suppression | [`client::Reconnect`] |
//! | [`server`] | keep-alive, `Last-Event-ID` replay, ORS task registry with a result TTL | [`server::KeepAlive`], [`server::ReplayBuffer`], [`server::TaskRegistry`] |
//! | [`time`] | the caller's clock | [`Instant`] |
//!
//! ## Sessions: time comes from the caller
//! The timer-driven machines follow quinn-proto's shape: `handle_*` takes input and `now`,
//! `poll_*` yields what to do, and `poll_timeout` says when to call `handle_timeout` next. A
//! transport sleeps until that deadline or until IO arrives, whichever is first. Core never
//! reads a clock, so every machine is tested with plain numbers:
//!
//! ```
//! use core::time::Duration;
//! use ssekit::{server::KeepAlive, Instant};
//!
//! let start = Instant::ZERO;
//! let mut keep_alive = KeepAlive::new(Duration::from_secs(10), start);
//! assert_eq!(keep_alive.poll_timeout(), Some(start + Duration::from_secs(10)));
//!
//! keep_alive.handle_write(start + Duration::from_secs(4)); // an event went out: silence restarts
//! let due = start + Duration::from_secs(14);
//! assert_eq!(keep_alive.poll_timeout(), Some(due));
//! keep_alive.handle_timeout(due);
//! assert_eq!(keep_alive.poll_transmit().as_deref(), Some(&b": ping\n"[..]));
//! assert_eq!(keep_alive.poll_timeout(), Some(due + Duration::from_secs(10)));
//! ```
//!
//! ## Decisions worth knowing
//! - **Exactness.** The decoder follows the WHATWG HTML "interpretation of the event stream"
//!   (LF, CR and CRLF endings, a CR/LF pair split across reads, BOM only at stream start, one
//!   leading space stripped, `retry:` only when all ASCII digits, NUL ids ignored, data-less
//!   blocks not dispatched, incomplete final event discarded, U+FFFD for invalid UTF-8).
//! - **Reconnects.** A fresh [`Decoder`] starts with an empty last event ID buffer, as the
//!   specification says for a new stream. [`Decoder::reset`], meant for a reconnect of the
//!   same source, seeds the new stream's buffer with the last event ID, which is what
//!   Chromium does; otherwise the first id-less event after a reconnect would erase the ID
//!   that resumption depends on.
//! - **Two ways out of the decoder.** The first design had owned frames only: each field
//!   a zero-copy [`Utf8Bytes`] slice of the input. Profiling showed the price of that shape:
//!   each slice is an atomic reference-count update when made and another when dropped,
//!   20-30% of decode time on large reads. [`Decoder::next_frame_ref`] adds the `httparse`
//!   shape beside it: a [`FrameRef`] borrows the decoder's buffers until its next use, with
//!   no reference count, no copy of multi-line data and no allocation. Both read the same
//!   state, so they can be mixed call by call (a property test and a fuzz target check that
//!   they yield the same frames); use `next_frame` to keep frames, `next_frame_ref` to read
//!   and let go. A [`Validator`](sequence::Validator) checks either kind
//!   ([`frame`](sequence::Validator::frame), [`frame_ref`](sequence::Validator::frame_ref)):
//!   the built-in profiles read an [`EventRef`], which an owned [`Event`] lends with
//!   [`Event::as_event_ref`], except ORS, which keeps chunks and ids as shared bytes.
//! - **`Event::id`** is the `id:` sent in that event's block; the browser's `lastEventId`
//!   (which persists across events) is [`Decoder::last_event_id`]. This keeps
//!   `decode(encode(events)) == events` exact.
//! - **Twelve `unsafe` blocks.** Three are `from_utf8_unchecked` in `text.rs`.
//!   [`Utf8Bytes::as_str`]: every constructor validates (or starts from a `str`, or from
//!   bytes the line scan found all ASCII), so checking again on each access would only make
//!   every `Event::data()` call O(n). The ASCII fast path of the check behind
//!   [`Decoder::next_frame_ref`]: bytes all below 0x80 are UTF-8, and `core::str::from_utf8`
//!   costs 8x more on a 4 KiB chunk. And values the line scan already found ASCII, which
//!   need no second pass. The other three are in the SSE2 line scan (`line_scan.rs`):
//!   calling two functions that need SSE2 where the crate is compiled for it (the scan, and
//!   the masks of a tiny piece, which touch no memory), and an unaligned 16-byte load from a
//!   `&[u8; 16]`. With `std`, two more in the AVX2 scan of long lines: calling it after
//!   `is_x86_feature_detected!("avx2")` said the CPU has AVX2, and an unaligned 32-byte load
//!   from a `&[u8; 32]`. And four in the copy fused with that scan (`line_copy.rs`), which
//!   puts the encoder's data lines and the pieces of a line cut by piece boundaries into a
//!   buffer's spare room as it looks for the line's end: calling the AVX2 copy after the
//!   same detection, an unaligned 32-byte store into a `&mut [MaybeUninit<u8>; 32]`, viewing
//!   the room `BufMut::chunk_mut` offers as `MaybeUninit` bytes (only copies of initialized
//!   bytes are written there), and `BufMut::advance_mut` over exactly the bytes before the
//!   line's end, which the copy wrote. The soundness argument is at each block; debug
//!   builds, and so the fuzz targets, assert every "found ASCII" claim, every line end the
//!   fused copy reports and the bytes it puts into the decoder's line buffer; the rest of
//!   the crate denies `unsafe` (forbidding it outright, as first designed, would cost
//!   a re-validation per access on a zero-copy type, or a second pass over every line).
//! - **Bounded.** Every buffer the peer can grow is capped by [`Limits`] (16 MiB defaults),
//!   and overflow is a [`DecodeError`] with the stream offset, never a silent drop.
//!
//! ## Crate features
//! - `std` (default): `std` support in `bytes` and `memchr` (runtime SIMD detection).
//!   Without it the crate is `#![no_std]` and needs only `alloc`, which `bytes` requires.
//! - `json` (default): the JSON-carried protocol profiles (Responses API, agent, workflow) and
//!   the typed ORS result, with `serde` and `serde_json` (no_std + alloc as well).
//! - `tasks` (default): the ORS task registry ([`server::TaskRegistry`]), whose unguessable
//!   task ids come from ChaCha20 keyed by the caller (the `chacha20` crate, no_std): the
//!   crate's only RNG. Reconnect jitter needs none: a caller-seeded SplitMix64 of a few lines.
//!   `default-features = false` gives the codec, profiles and timers with no RNG at all.
#![no_std]
#![deny(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::indexing_slicing
    )
)]

extern crate alloc;
// Run-time CPU feature detection for the long-line scan (`line_scan::scan_long`).
#[cfg(feature = "std")]
extern crate std;

pub mod chunk;
pub mod client;
pub mod decode;
pub mod encode;
mod event;
mod event_parts;
mod frame_ref;
#[cfg(feature = "json")]
mod json;
mod line_copy;
mod line_scan;
pub mod profile;
mod rng;
pub mod sequence;
pub mod server;
mod text;
pub mod time;

pub use decode::{Config, DecodeError, Decoder, Frame, Limits, StreamEnd};
pub use encode::{EncodeError, Encoder};
pub use event::{Event, EventBuilder};
pub use event_parts::{EventId, EventName};
pub use frame_ref::{EventRef, FrameRef};
#[cfg(feature = "json")]
pub use json::JsonError;
pub use text::Utf8Bytes;
pub use time::Instant;

/// The crate README's example, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
