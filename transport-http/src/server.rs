//! The IO-free server pieces: [`response`] headers, the client's [`last_event_id`], and
//! [`TrySendError`] for the transports' bounded queues, and [`Hub`], the state of a broadcast.

use http::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE};

/// Wraps a body in a `200` response with the headers that keep every hop from buffering:
/// `Content-Type: text/event-stream`, `Cache-Control: no-cache`, `X-Accel-Buffering: no`
/// (nginx). No `Content-Encoding` is set: compress an event stream and a proxy will hold it.
///
/// # Example
/// ```
/// let resp = ssekit_http::server::response("body");
/// assert_eq!(resp.status(), 200);
/// assert_eq!(resp.headers()["content-type"], "text/event-stream");
/// assert_eq!(resp.headers()["cache-control"], "no-cache");
/// assert_eq!(resp.headers()["x-accel-buffering"], "no");
/// ```
pub fn response<B>(body: B) -> http::Response<B> {
    let mut resp = http::Response::new(body);
    let headers = resp.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    resp
}

/// The `Last-Event-ID` a reconnecting client sent, if any (empty and non-UTF-8 values count
/// as none). Ids are UTF-8 (the encoder accepts any id without CR, LF or NUL, and a browser
/// sends the id it last saw), so a non-ASCII id is returned too, not only the visible ASCII
/// that [`http::HeaderValue::to_str`] accepts.
///
/// # Example
/// ```
/// let mut headers = http::HeaderMap::new();
/// headers.insert("last-event-id", http::HeaderValue::from_static("41"));
/// assert_eq!(ssekit_http::server::last_event_id(&headers), Some("41"));
/// headers.insert("last-event-id", http::HeaderValue::from_bytes("é1".as_bytes()).unwrap());
/// assert_eq!(ssekit_http::server::last_event_id(&headers), Some("é1"));
/// headers.insert("last-event-id", http::HeaderValue::from_static(""));
/// assert_eq!(ssekit_http::server::last_event_id(&headers), None);
/// ```
pub fn last_event_id(headers: &http::HeaderMap) -> Option<&str> {
    headers
        .get("last-event-id")
        .and_then(|v| core::str::from_utf8(v.as_bytes()).ok())
        .filter(|v| !v.is_empty())
}

/// The most events a transport's per-client queue holds (its `channel` capacity, its
/// `Broadcast`'s `per_client`): larger values are lowered to it. Far above what a client
/// that keeps up needs, it keeps a configured "no limit" (`usize::MAX`) from panicking in
/// the channel underneath, and bounds the smol `channel`, whose queue is allocated whole
/// up front (about 40 bytes a slot: 40 MiB here).
///
/// # Example
/// ```
/// assert_eq!(ssekit_http::server::MAX_QUEUED, 1 << 20);
/// ```
pub const MAX_QUEUED: usize = 1 << 20;

/// The capacity of a per-client queue asked for with `requested`: at least 1, at most
/// [`MAX_QUEUED`].
///
/// # Example
/// ```
/// use ssekit_http::server::{queue_capacity, MAX_QUEUED};
/// assert_eq!((queue_capacity(0), queue_capacity(8)), (1, 8));
/// assert_eq!(queue_capacity(usize::MAX), MAX_QUEUED);
/// ```
pub fn queue_capacity(requested: usize) -> usize {
    requested.clamp(1, MAX_QUEUED)
}

/// Why an event was not queued for a client.
///
/// # Example
/// ```
/// use ssekit_http::server::TrySendError;
/// assert_eq!(TrySendError::Full.to_string(), "the client is not keeping up: its queue is full");
/// assert_eq!(TrySendError::Closed.to_string(), "the client went away");
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum TrySendError {
    /// The queue is full: the client is not reading fast enough.
    Full,
    /// The response body was dropped: the client went away.
    Closed,
    /// The event could not be encoded.
    Encode(ssekit::EncodeError),
}

impl std::fmt::Display for TrySendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TrySendError::Full => f.write_str("the client is not keeping up: its queue is full"),
            TrySendError::Closed => f.write_str("the client went away"),
            TrySendError::Encode(e) => write!(f, "cannot encode event: {e}"),
        }
    }
}

impl std::error::Error for TrySendError {}

/// The IO-free half of a broadcast: one live stream for many subscribers, each event
/// encoded once into a core [`ReplayBuffer`](ssekit::server::ReplayBuffer) and offered to
/// every subscriber's queue; a subscriber resuming with `Last-Event-ID` first gets what it
/// missed. The queue type `S` is the transport's (a bounded channel's sender); the
/// transport wraps a `Hub` in a mutex and makes the response bodies.
///
/// # Example
/// ```
/// use std::sync::mpsc::{sync_channel, SyncSender};
/// use ssekit::{server::ReplayBuffer, Event};
/// use ssekit_http::server::Hub;
///
/// let mut hub: Hub<SyncSender<bytes::Bytes>> = Hub::new(ReplayBuffer::default());
/// let offer = |tx: &SyncSender<bytes::Bytes>, wire| tx.try_send(wire).is_ok();
/// hub.publish(&Event::builder().id("1")?.data("first").build(), offer)?;
/// hub.publish(&Event::builder().id("2")?.data("second").build(), offer)?;
/// // A client that saw "1" reconnects: it is served "2" from the replay buffer, then lives.
/// let (tx, rx) = sync_channel(8);
/// let missed = hub.subscribe(Some("1"), tx, |_| false)?; // a std channel cannot tell
/// assert_eq!(missed, [bytes::Bytes::from_static(b"id: 2\ndata: second\n\n")]);
/// assert_eq!(hub.publish(&Event::builder().id("3")?.data("third").build(), offer)?, 1);
/// assert_eq!(rx.try_recv()?, bytes::Bytes::from_static(b"id: 3\ndata: third\n\n"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Hub<S> {
    replay: ssekit::server::ReplayBuffer,
    subscribers: Vec<S>,
    /// How many subscribers there were after the last sweep of those gone (see
    /// [`subscribe`](Self::subscribe)).
    swept: usize,
}

impl<S> Hub<S> {
    /// A hub that keeps recent events in `replay`.
    ///
    /// # Example
    /// ```
    /// let hub: ssekit_http::server::Hub<()> = ssekit_http::server::Hub::new(Default::default());
    /// assert_eq!(hub.subscribers(), 0);
    /// ```
    pub fn new(replay: ssekit::server::ReplayBuffer) -> Self {
        Hub {
            replay,
            subscribers: Vec::new(),
            swept: 0,
        }
    }

    /// Encodes `event` once, keeps it for replay, and `offer`s it to every subscriber;
    /// a subscriber whose offer fails (its queue is full, or it is gone) is dropped.
    /// Returns how many subscribers took it.
    ///
    /// # Example
    /// ```
    /// let mut hub: ssekit_http::server::Hub<()> = ssekit_http::server::Hub::new(Default::default());
    /// assert_eq!(hub.publish(&ssekit::Event::message("nobody listens"), |_, _| true)?, 0);
    /// # Ok::<(), ssekit::EncodeError>(())
    /// ```
    pub fn publish(
        &mut self,
        event: &ssekit::Event,
        mut offer: impl FnMut(&S, bytes::Bytes) -> bool,
    ) -> Result<usize, ssekit::EncodeError> {
        let wire = self.replay.push(event)?;
        self.subscribers.retain(|s| offer(s, wire.clone()));
        self.swept = self.subscribers.len();
        Ok(self.subscribers.len())
    }

    /// Registers `subscriber` and returns the encoded events after `last_event_id` (none
    /// for `None`), read under the same borrow, so no event falls between the replay and
    /// the live ones. `Err(Gap)` (and no registration) when they can no longer all be
    /// replayed.
    ///
    /// Subscribers whose client left (`gone`, such as a closed channel) are let go here
    /// too, whenever their number has doubled since the last sweep: a hub that gets clients
    /// but no events does not keep every one that ever came (amortized O(1) per call).
    ///
    /// # Example
    /// ```
    /// use ssekit::server::Gap;
    /// let mut hub = ssekit_http::server::Hub::new(Default::default());
    /// assert!(matches!(hub.subscribe(Some("never-sent"), (), |_| false), Err(Gap::Unknown)));
    /// assert_eq!(hub.subscribe(None, (), |_| false).map(|m| m.len()), Ok(0));
    /// assert_eq!(hub.subscribers(), 1);
    /// // Clients that come and go with no event published are not all kept.
    /// let mut hub = ssekit_http::server::Hub::new(Default::default());
    /// for _ in 0..1000 {
    ///     let _ = hub.subscribe(None, false, |open| !open);
    /// }
    /// assert!(hub.subscribers() <= 32);
    /// ```
    pub fn subscribe(
        &mut self,
        last_event_id: Option<&str>,
        subscriber: S,
        gone: impl FnMut(&S) -> bool,
    ) -> Result<Vec<bytes::Bytes>, ssekit::server::Gap> {
        let missed = match last_event_id {
            Some(id) => self.replay.since(id)?.collect(),
            None => Vec::new(),
        };
        if self.subscribers.len() >= 2 * self.swept.max(16) {
            self.sweep(gone);
        }
        self.subscribers.push(subscriber);
        Ok(missed)
    }

    /// Lets go of the subscribers whose client left.
    fn sweep(&mut self, mut gone: impl FnMut(&S) -> bool) {
        self.subscribers.retain(|s| !gone(s));
        self.swept = self.subscribers.len();
    }

    /// Forgets every subscriber (their streams end after what is queued).
    ///
    /// # Example
    /// ```
    /// let mut hub = ssekit_http::server::Hub::new(Default::default());
    /// let _ = hub.subscribe(None, (), |_| false);
    /// hub.disconnect_all();
    /// assert_eq!(hub.subscribers(), 0);
    /// ```
    pub fn disconnect_all(&mut self) {
        self.subscribers.clear();
        self.swept = 0;
    }

    /// Subscribers (including ones that left since the last publish).
    ///
    /// # Example
    /// ```
    /// let hub: ssekit_http::server::Hub<()> = ssekit_http::server::Hub::new(Default::default());
    /// assert_eq!(hub.subscribers(), 0);
    /// ```
    pub fn subscribers(&self) -> usize {
        self.subscribers.len()
    }
}
