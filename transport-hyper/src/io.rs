//! SSE over any `futures-io` byte pipe (a socket, a child's stdio, a file), with or without
//! HTTP: [`EventStream`] decodes frames from an `AsyncRead`, [`EventSink`] encodes events
//! onto an `AsyncWrite` with keep-alive on tokio's timer. Both are [`ssekit_http::pipe`]'s,
//! written once for every runtime; tokio's own `AsyncRead` and `AsyncWrite` become
//! `futures-io`'s through `tokio_util::compat`.

pub use ssekit_http::pipe::EventStream;

/// [`ssekit_http::pipe::EventSink`] on tokio: keep-alive comments on tokio's timer.
///
/// # Example
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use ssekit::Event;
/// let mut sink = ssekit_hyper::io::EventSink::new(Vec::new());
/// sink.send(&Event::builder().event("chunk")?.data("hello").build()).await?;
/// assert_eq!(sink.into_inner(), b"event: chunk\ndata: hello\n\n");
/// # Ok(()) }
/// ```
pub type EventSink<W> = ssekit_http::pipe::EventSink<W, crate::runtime::Tokio>;
