//! SSE over any byte pipe with `futures-io` types (a socket, a child process's stdio, a
//! file): [`EventStream`] decodes frames from an [`AsyncRead`], [`EventSink`] encodes events
//! onto an [`AsyncWrite`], flushing each one and sending keep-alive comments on a
//! [`Runtime`]'s timer. ssekit-smol names them in its `io` module, ssekit-hyper in its own
//! (tokio's `AsyncRead` and `AsyncWrite` become `futures-io`'s through `tokio-util`'s
//! `compat`).
//!
//! ```text
//!  AsyncRead ──▶ EventStream (Decoder + Limits) ──▶ Stream<Result<Frame>> ; end(): Clean | Truncated
//!  events ──▶ EventSink (Encoder + KeepAlive + Timer) ──▶ AsyncWrite, flushed per event
//! ```

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures_lite::io::{AsyncRead, AsyncWrite};
use futures_lite::{AsyncWriteExt, Stream, StreamExt};
use ssekit::server::KeepAlive;
use ssekit::{Config, Decoder, Encoder, Event, Frame, StreamEnd};

use crate::keep_alive::Pinger;
use crate::runtime::Runtime;
use crate::Error;

/// Bytes asked of the reader per read.
const READ_SIZE: usize = 16 << 10;

/// A `Stream` of decoded [`Frame`]s read from any [`AsyncRead`] (a socket, a pipe, a
/// file). It ends when the reader does; then [`end`](Self::end) tells a clean end from a
/// stream cut inside an event. Decoder limits are the core's ([`Config`]); going over one is
/// an [`Error::Decode`] item, after which the stream ends, or with [`OnLimit::Resync`](ssekit::decode::OnLimit::Resync) goes on
/// from the next blank line.
///
/// # Example
/// ```
/// use futures_lite::StreamExt;
/// use ssekit::{Frame, StreamEnd};
/// # futures_lite::future::block_on(async {
/// let wire: &[u8] = b"event: greet\ndata: hi\n\ndata: cut";
/// let mut frames = ssekit_http::pipe::EventStream::new(wire);
/// let Some(Ok(Frame::Event(ev))) = frames.next().await else { panic!() };
/// assert_eq!((ev.event_type(), ev.data()), ("greet", "hi"));
/// assert!(frames.next().await.is_none());
/// assert!(matches!(frames.end(), Some(StreamEnd::Truncated { .. })));
/// # });
/// ```
#[derive(Debug)]
pub struct EventStream<R> {
    reader: R,
    decoder: Decoder,
    buf: BytesMut,
    end: Option<StreamEnd>,
}

impl<R: AsyncRead + Unpin> EventStream<R> {
    /// Decodes `reader` with the default [`Config`] (browser dispatch, fail-stop, 16 MiB
    /// limits).
    ///
    /// # Example
    /// ```
    /// let frames = ssekit_http::pipe::EventStream::new(&b"data: x\n\n"[..]);
    /// assert!(frames.end().is_none());
    /// ```
    pub fn new(reader: R) -> Self {
        EventStream::with_config(reader, Config::default())
    }

    /// Decodes `reader` with these limits and dispatch mode.
    ///
    /// # Example
    /// ```
    /// use ssekit::{Config, Limits};
    /// let config = Config::default().limits(Limits::default().max_event(1 << 20));
    /// let frames = ssekit_http::pipe::EventStream::with_config(&b""[..], config);
    /// # let _ = frames;
    /// ```
    pub fn with_config(reader: R, config: Config) -> Self {
        EventStream {
            reader,
            decoder: Decoder::with_config(config),
            buf: BytesMut::new(),
            end: None,
        }
    }

    /// How the stream ended, once it has: [`StreamEnd::Clean`] after a complete event,
    /// [`StreamEnd::Truncated`] when the reader stopped inside a line or an event (the partial
    /// event was discarded), [`StreamEnd::Failed`] after a decode error. `None` while running.
    ///
    /// # Example
    /// ```
    /// use futures_lite::StreamExt;
    /// # futures_lite::future::block_on(async {
    /// let mut frames = ssekit_http::pipe::EventStream::new(&b"data: x\n\n"[..]);
    /// while frames.next().await.is_some() {}
    /// assert_eq!(frames.end(), Some(ssekit::StreamEnd::Clean));
    /// # });
    /// ```
    pub fn end(&self) -> Option<StreamEnd> {
        self.end
    }

    /// The last event ID seen (what to send as `Last-Event-ID` when reconnecting).
    ///
    /// # Example
    /// ```
    /// use futures_lite::StreamExt;
    /// # futures_lite::future::block_on(async {
    /// let mut frames = ssekit_http::pipe::EventStream::new(&b"id: 7\ndata: x\n\n"[..]);
    /// while frames.next().await.is_some() {}
    /// assert_eq!(frames.last_event_id(), "7");
    /// # });
    /// ```
    pub fn last_event_id(&self) -> &str {
        self.decoder.last_event_id()
    }

    /// The reader back.
    ///
    /// # Example
    /// ```
    /// let wire: &[u8] = b"";
    /// assert!(ssekit_http::pipe::EventStream::new(wire).into_inner().is_empty());
    /// ```
    pub fn into_inner(self) -> R {
        self.reader
    }
}

impl<R: AsyncRead + Unpin> Stream for EventStream<R> {
    type Item = Result<Frame, Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if this.end.is_some() {
                return Poll::Ready(None);
            }
            match this.decoder.next_frame() {
                Ok(Some(frame)) => return Poll::Ready(Some(Ok(frame))),
                Ok(None) => {}
                Err(e) => {
                    // Under Resync the decoder dropped what went over the limit and goes on.
                    if this.decoder.has_stopped() {
                        this.end = Some(this.decoder.finish());
                    }
                    return Poll::Ready(Some(Err(e.into())));
                }
            }
            this.buf.resize(READ_SIZE, 0);
            let read = Pin::new(&mut this.reader).poll_read(cx, &mut this.buf);
            match read {
                Poll::Pending => {
                    this.buf.clear();
                    return Poll::Pending;
                }
                Poll::Ready(Ok(0)) => {
                    this.end = Some(this.decoder.finish());
                    return Poll::Ready(None);
                }
                Poll::Ready(Ok(n)) => {
                    this.buf.truncate(n);
                    // A large read is handed over as it is, without a copy. A short one is
                    // copied (into the decoder's staging buffer, shared by consecutive
                    // short reads) and the read buffer kept: handed over, each short read
                    // would take a fresh 16 KiB buffer, and the events read from it, kept
                    // by the application, would hold all 16 KiB alive.
                    let fed = if n < Decoder::COPY_BELOW {
                        let fed = this.decoder.feed_slice(&this.buf);
                        this.buf.clear();
                        fed
                    } else {
                        this.decoder.feed(this.buf.split().freeze())
                    };
                    if let Err(e) = fed {
                        this.end = Some(this.decoder.finish());
                        return Poll::Ready(Some(Err(e.into())));
                    }
                }
                Poll::Ready(Err(e)) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Poll::Ready(Err(e)) => {
                    this.buf.clear();
                    this.end = Some(this.decoder.finish());
                    return Poll::Ready(Some(Err(e.into())));
                }
            }
        }
    }
}

/// Writes events to any [`AsyncWrite`]: each is encoded by the core [`Encoder`] (which
/// refuses CR/LF injection), written and flushed at once. With a keep-alive interval,
/// [`forward`](Self::forward) sends the core [`KeepAlive`]'s comment whenever nothing was
/// written for that long, timed on the runtime `R` (ssekit-smol names it `EventSink<W>` on smol).
///
/// # Example
/// ```
/// use ssekit::Event;
/// use ssekit_http::{pipe::EventSink, runtime::Runtime};
/// async fn chunk<R: Runtime + Default>() -> Result<(), Box<dyn std::error::Error>> {
///     let mut sink = EventSink::<_, R>::new(Vec::new());
///     sink.send(&Event::builder().event("chunk")?.data("hello").build()).await?;
///     assert_eq!(sink.into_inner(), b"event: chunk\ndata: hello\n\n");
///     Ok(())
/// }
/// ```
#[derive(Debug)]
pub struct EventSink<W, R: Runtime> {
    writer: W,
    encoder: Encoder,
    buf: Vec<u8>,
    runtime: R,
    pinger: Option<Pinger<R>>,
}

impl<W: AsyncWrite + Unpin, R: Runtime + Default> EventSink<W, R> {
    /// A sink without keep-alive.
    ///
    /// # Example
    /// ```
    /// # fn doc<R: ssekit_http::runtime::Runtime + Default>() {
    /// let sink = ssekit_http::pipe::EventSink::<_, R>::new(Vec::new());
    /// # let _ = sink; }
    /// ```
    pub fn new(writer: W) -> Self {
        EventSink {
            writer,
            encoder: Encoder::new(),
            buf: Vec::new(),
            runtime: R::default(),
            pinger: None,
        }
    }
}

impl<W: AsyncWrite + Unpin, R: Runtime> EventSink<W, R> {
    /// Sends `: ping` after `interval` without a write ([`KeepAlive::ORS`] is 10 s).
    ///
    /// # Example
    /// ```
    /// # fn doc<R: ssekit_http::runtime::Runtime + Default>() {
    /// let sink = ssekit_http::pipe::EventSink::<_, R>::new(Vec::new()).keep_alive(std::time::Duration::from_secs(15));
    /// # let _ = sink; }
    /// ```
    pub fn keep_alive(self, interval: Duration) -> Self {
        let now = self.runtime.now();
        self.keep_alive_with(KeepAlive::new(interval, now))
    }

    /// Uses a configured [`KeepAlive`] (another comment text, say), on the runtime's clock
    /// (its [`ssekit::Instant::ZERO`] is when the sink was created).
    ///
    /// # Example
    /// ```
    /// # fn doc<R: ssekit_http::runtime::Runtime + Default>() -> Result<(), ssekit::EncodeError> {
    /// use ssekit::{server::KeepAlive, Instant};
    /// let ka = KeepAlive::new(KeepAlive::ORS, Instant::ZERO).with_comment("keep-alive")?;
    /// let sink = ssekit_http::pipe::EventSink::<_, R>::new(Vec::new()).keep_alive_with(ka);
    /// # let _ = sink; Ok(()) }
    /// ```
    pub fn keep_alive_with(mut self, keep_alive: KeepAlive) -> Self {
        self.pinger = Some(Pinger::new(keep_alive, self.runtime.clone()));
        self
    }

    /// Encodes, writes and flushes one event.
    ///
    /// # Example
    /// ```
    /// # async fn doc<R: ssekit_http::runtime::Runtime + Default>() -> Result<(), ssekit_http::Error> {
    /// let mut sink = ssekit_http::pipe::EventSink::<_, R>::new(Vec::new());
    /// sink.send(&ssekit::Event::message("x")).await?;
    /// # Ok(()) }
    /// ```
    pub async fn send(&mut self, event: &Event) -> Result<(), Error> {
        self.buf.clear();
        self.encoder.encode(event, &mut self.buf)?;
        let wire = std::mem::take(&mut self.buf);
        let sent = self.send_bytes(&wire).await;
        self.buf = wire;
        sent
    }

    /// Writes and flushes already encoded SSE blocks (from a
    /// [`ReplayBuffer`](ssekit::server::ReplayBuffer) or your own [`Encoder`]).
    ///
    /// # Example
    /// ```
    /// # async fn doc<R: ssekit_http::runtime::Runtime + Default>() -> Result<(), ssekit_http::Error> {
    /// let mut sink = ssekit_http::pipe::EventSink::<_, R>::new(Vec::new());
    /// sink.send_bytes(b": hello\n\n").await?;
    /// assert_eq!(sink.into_inner(), b": hello\n\n");
    /// # Ok(()) }
    /// ```
    pub async fn send_bytes(&mut self, wire: &[u8]) -> Result<(), Error> {
        self.writer.write_all(wire).await?;
        self.writer.flush().await?;
        if let Some(pinger) = self.pinger.as_mut() {
            pinger.wrote();
        }
        Ok(())
    }

    /// Sends every event of `events`, pinging while it is silent, until it ends. Returns
    /// the first write or encode error (a vanished peer shows up within one interval).
    ///
    /// # Example
    /// ```
    /// # async fn doc<R: ssekit_http::runtime::Runtime + Default>() -> Result<(), ssekit_http::Error> {
    /// let events = futures_lite::stream::iter(vec![ssekit::Event::message("a")]);
    /// let mut sink = ssekit_http::pipe::EventSink::<_, R>::new(Vec::new()).keep_alive(std::time::Duration::from_secs(10));
    /// sink.forward(events).await?;
    /// assert_eq!(sink.into_inner(), b"data: a\n\n");
    /// # Ok(()) }
    /// ```
    pub async fn forward<S>(&mut self, events: S) -> Result<(), Error>
    where
        S: Stream<Item = Event>,
    {
        let mut events = std::pin::pin!(events);
        loop {
            enum Next {
                Event(Option<Event>),
                Ping(Bytes),
            }
            let pinger = &mut self.pinger;
            let next =
                futures_lite::future::or(async { Next::Event(events.next().await) }, async {
                    match pinger.as_mut() {
                        Some(p) => Next::Ping(std::future::poll_fn(|cx| p.poll_ping(cx)).await),
                        None => std::future::pending().await,
                    }
                })
                .await;
            match next {
                Next::Event(Some(event)) => self.send(&event).await?,
                Next::Event(None) => return Ok(()),
                Next::Ping(ping) => self.send_bytes(&ping).await?,
            }
        }
    }

    /// The writer back.
    ///
    /// # Example
    /// ```
    /// # fn doc<R: ssekit_http::runtime::Runtime + Default>() {
    /// assert!(ssekit_http::pipe::EventSink::<_, R>::new(Vec::new()).into_inner().is_empty());
    /// # }
    /// ```
    pub fn into_inner(self) -> W {
        self.writer
    }
}
