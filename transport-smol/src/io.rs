//! SSE over any `futures-io` byte pipe (a socket, a child's stdio, a file), with or without
//! HTTP: [`EventStream`] decodes frames from an `AsyncRead`, [`EventSink`] encodes events
//! onto an `AsyncWrite` with keep-alive on smol's timers. Both are
//! [`ssekit_http::pipe`]'s, written once for every runtime.

pub use ssekit_http::pipe::EventStream;

/// [`ssekit_http::pipe::EventSink`] on smol: keep-alive comments on `async-io` timers.
///
/// # Example
/// ```
/// use ssekit::Event;
/// # smol::block_on(async {
/// let mut sink = ssekit_smol::io::EventSink::new(Vec::new());
/// sink.send(&Event::builder().event("chunk")?.data("hello").build()).await?;
/// assert_eq!(sink.into_inner(), b"event: chunk\ndata: hello\n\n");
/// # Ok::<(), Box<dyn std::error::Error>>(()) }).unwrap();
/// ```
pub type EventSink<W> = ssekit_http::pipe::EventSink<W, crate::runtime::Smol>;
