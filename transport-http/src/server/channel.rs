//! [`channel`]: a bounded per-stream queue, the [`Sender`] half for the application, the
//! [`SseBody`] half for the response.

use bytes::{Bytes, BytesMut};
use ssekit::{Encoder, Event};
use tokio::sync::mpsc;

use super::{queue_capacity, SseBody, TrySendError};
use crate::observe;
use crate::runtime::Runtime;

/// A bounded per-stream queue: the [`Sender`] half for the application, the [`SseBody`]
/// half for the response. `capacity` events at most wait in the queue (at least 1, at most
/// [`MAX_QUEUED`](super::MAX_QUEUED)); its memory grows with the events in it, not with
/// `capacity`. The queue is tokio's `mpsc` (its `sync` module needs no tokio runtime), on
/// every runtime.
///
/// # Example
/// ```
/// # async fn doc<R: ssekit_http::runtime::Runtime + Default>() -> Result<(), ssekit_http::server::TrySendError> {
/// use ssekit::Event;
/// let (tx, body) = ssekit_http::server::channel::<R>(16);
/// tx.send(&Event::message("first")).await?;
/// let resp = ssekit_http::server::response(body); // return this from the handler
/// # let _ = resp; Ok(()) }
/// ```
pub fn channel<R: Runtime + Default>(capacity: usize) -> (Sender, SseBody<R>) {
    let (tx, mut rx) = mpsc::channel::<Bytes>(queue_capacity(capacity));
    let queued = futures_lite::stream::poll_fn(move |cx| rx.poll_recv(cx));
    let sender = Sender {
        tx,
        encoder: Encoder::new(),
    };
    (sender, SseBody::from_bytes(queued))
}

/// The application's half of [`channel`]. Cloning it gives another producer on the same
/// stream; the stream ends when every clone is dropped.
///
/// # Example
/// ```
/// # fn doc<R: ssekit_http::runtime::Runtime + Default>() {
/// use ssekit_http::server::{channel, TrySendError};
/// let (tx, body) = channel::<R>(1);
/// assert!(tx.try_send(&ssekit::Event::message("a")).is_ok());
/// assert!(matches!(tx.try_send(&ssekit::Event::message("b")), Err(TrySendError::Full)));
/// drop(body); // the client went away
/// assert!(matches!(tx.try_send(&ssekit::Event::message("c")), Err(TrySendError::Closed)));
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct Sender {
    tx: mpsc::Sender<Bytes>,
    encoder: Encoder,
}

impl Sender {
    fn encode(&self, event: &Event) -> Result<Bytes, TrySendError> {
        let mut out = BytesMut::with_capacity(self.encoder.encoded_len(event));
        self.encoder
            .encode(event, &mut out)
            .map_err(TrySendError::Encode)?;
        Ok(out.freeze())
    }

    /// Queues an event, waiting while the queue is full (backpressure). Fails only when the
    /// client went away (or the event cannot be encoded).
    ///
    /// # Example
    /// See [`channel`].
    pub async fn send(&self, event: &Event) -> Result<(), TrySendError> {
        let bytes = self.encode(event)?;
        self.send_bytes(bytes).await
    }

    /// Queues already encoded SSE blocks, waiting while the queue is full.
    ///
    /// # Example
    /// ```
    /// # async fn doc(tx: ssekit_http::server::Sender) -> Result<(), ssekit_http::server::TrySendError> {
    /// tx.send_bytes(bytes::Bytes::from_static(b": hello\n\n")).await?;
    /// # Ok(()) }
    /// ```
    pub async fn send_bytes(&self, bytes: Bytes) -> Result<(), TrySendError> {
        self.tx.send(bytes).await.map_err(|_| TrySendError::Closed)
    }

    /// Queues an event without waiting: [`TrySendError::Full`] when the client is behind by
    /// `capacity` events. The usual policy for a broadcaster is to drop that subscriber.
    ///
    /// # Example
    /// See [`Sender`].
    pub fn try_send(&self, event: &Event) -> Result<(), TrySendError> {
        let bytes = self.encode(event)?;
        self.try_send_bytes(bytes)
    }

    /// [`try_send`](Self::try_send) for already encoded blocks.
    ///
    /// # Example
    /// ```
    /// # fn doc<R: ssekit_http::runtime::Runtime + Default>() {
    /// let (tx, _body) = ssekit_http::server::channel::<R>(1);
    /// assert!(tx.try_send_bytes(bytes::Bytes::from_static(b"data: x\n\n")).is_ok());
    /// # }
    /// ```
    pub fn try_send_bytes(&self, bytes: Bytes) -> Result<(), TrySendError> {
        self.tx.try_send(bytes).map_err(|e| match e {
            mpsc::error::TrySendError::Full(_) => {
                observe::count_by(observe::SLOW_CONSUMERS_TOTAL, "action", "full", 1);
                TrySendError::Full
            }
            mpsc::error::TrySendError::Closed(_) => TrySendError::Closed,
        })
    }

    /// Resolves when the client went away (the body was dropped).
    ///
    /// # Example
    /// ```
    /// # fn doc<R: ssekit_http::runtime::Runtime + Default>() {
    /// let (tx, body) = ssekit_http::server::channel::<R>(1);
    /// drop(body);
    /// futures_lite::future::block_on(tx.closed());
    /// assert!(tx.is_closed());
    /// # }
    /// ```
    pub async fn closed(&self) {
        self.tx.closed().await
    }

    /// Whether the client went away.
    ///
    /// # Example
    /// See [`closed`](Self::closed).
    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::manual::Manual;

    #[test]
    fn the_queue_holds_capacity_events_then_refuses_and_closes_with_its_body() {
        let (tx, body) = channel::<Manual>(2);
        let event = Event::message("x");
        assert!(tx.try_send(&event).is_ok());
        assert!(tx.try_send(&event).is_ok());
        assert!(matches!(tx.try_send(&event), Err(TrySendError::Full)));
        assert!(!tx.is_closed());
        drop(body);
        assert!(tx.is_closed());
        assert!(matches!(tx.try_send(&event), Err(TrySendError::Closed)));
        futures_lite::future::block_on(tx.closed());
    }
}
