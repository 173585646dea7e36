//! [`Drive`]: the run loop of every transport's `EventSource`, and [`Io`], the IO it asks of
//! a transport. The loop makes every [`Session`] call; the transport only sends a request
//! and hands back the response, so no protocol reaction is written in a transport.
//!
//! ```text
//!  Session::poll ─▶ Connect{request} ─▶ Io::send (within response_timeout) ─▶ handle_head / handle_connect_error
//!       ▲                                                                   │ accepted: the body is kept
//!       └── handle_timeout ◀── R::sleep_until(deadline) ◀── Wait ──▶ body frame ─▶ handle_data / handle_end
//! ```

use std::future::Future;
use std::pin::Pin;

use bytes::Bytes;
use http::{Request, Response, Uri};
use http_body::Body;
use ssekit::Instant;

use super::{Ended, Item, Session, Step};
use crate::io::first_of;
use crate::observe::{self, log};
use crate::runtime::Runtime;
use crate::Error;

/// The IO a transport does for an event stream: it sends one request and returns the
/// response head with its body, or the error that kept it from arriving. It decides
/// nothing: [`Drive`] times the exchange, reads the body and tells the [`Session`].
///
/// # Example
/// A transport whose every connection is refused, on a runtime whose clock jumps to each
/// timer's deadline (time flies): the policy retries once, then gives up.
/// ```
/// use std::sync::{Arc, atomic::{AtomicU64, Ordering}};
/// use ssekit::Instant;
/// use ssekit_http::client::{Drive, Io, RequestSpec, Target};
/// use ssekit_http::runtime::Runtime;
///
/// #[derive(Clone, Default)]
/// struct Flies(Arc<AtomicU64>);
/// impl Runtime for Flies {
///     type Sleep = std::future::Ready<()>;
///     fn now(&self) -> Instant { Instant::from_millis(self.0.load(Ordering::SeqCst)) }
///     fn sleep_until(&self, at: Instant) -> Self::Sleep {
///         self.0.fetch_max(at.as_millis(), Ordering::SeqCst);
///         std::future::ready(())
///     }
///     fn spawn<F: std::future::Future<Output = ()> + Send + 'static>(&self, _: F) {}
/// }
///
/// struct Refused(Flies);
/// impl Io for Refused {
///     type Runtime = Flies;
///     type Body = http_body_util::Empty<bytes::Bytes>;
///     fn runtime(&self) -> &Flies { &self.0 }
///     async fn send(&mut self, _: &http::Uri, _: http::Request<bytes::Bytes>)
///         -> Result<http::Response<Self::Body>, ssekit_http::Error> {
///         Err(std::io::Error::from(std::io::ErrorKind::ConnectionRefused).into())
///     }
/// }
///
/// let spec = RequestSpec::get("http://127.0.0.1:1/", &["http"])?
///     .reconnect(ssekit::client::ReconnectConfig::default().max_attempts(Some(1)));
/// let mut drive = Drive::new(spec.into_session(Target::Absolute), Refused(Flies::default()));
/// let mut items = Vec::new();
/// let end = loop {
///     match futures_lite::future::block_on(drive.next()) {
///         Some(Ok(item)) => items.push(item),
///         other => break other,
///     }
/// };
/// let Some(Err(ssekit_http::Error::Exhausted { attempts: 1, last })) = end else { panic!() };
/// assert!(matches!(*last, ssekit_http::Error::Io(_)));
/// assert_eq!(items.len(), 3); // failed, reconnecting, failed; then the error
/// # Ok::<(), ssekit_http::Error>(())
/// ```
pub trait Io: Send {
    /// The runtime whose clock and timers the stream uses.
    type Runtime: Runtime;

    /// A response body (hyper's `Incoming`, with whatever keeps its connection).
    type Body: Body<Data = Bytes, Error: Into<Error>> + Send + Unpin;

    /// The runtime.
    fn runtime(&self) -> &Self::Runtime;

    /// Sends `request` to `uri` and returns the response as soon as its head arrived. An
    /// error is the attempt's (connect, TLS, protocol): the reconnect policy decides what
    /// follows. [`Drive`] bounds the wait with [`Session::response_timeout`].
    fn send(
        &mut self,
        uri: &Uri,
        request: Request<Bytes>,
    ) -> impl Future<Output = Result<Response<Self::Body>, Error>> + Send;
}

/// A [`Session`] and the [`Io`] that carries it out: the run loop of every transport's
/// `EventSource` stream. See [`Io`] for an example.
pub struct Drive<T: Io> {
    session: Session,
    io: T,
    body: Option<T::Body>,
    done: bool,
    /// An `info` span per session (its URL): every event of the session is written in it.
    #[cfg(feature = "tracing")]
    span: tracing::Span,
    /// How the last connection ended, for the line that announces the wait after it.
    #[cfg(feature = "tracing")]
    last_end: Option<Ended>,
}

impl<T: Io> std::fmt::Debug for Drive<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Drive")
            .field("session", &self.session)
            .field("reading", &self.body.is_some())
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

impl<T: Io> Drive<T> {
    /// Drives `session` with `io`.
    ///
    /// # Example
    /// See [`Io`].
    pub fn new(session: Session, io: T) -> Self {
        #[cfg(feature = "tracing")]
        let span =
            tracing::info_span!(target: "ssekit::client", "sse_client", url = %session.uri());
        Drive {
            session,
            io,
            body: None,
            done: false,
            #[cfg(feature = "tracing")]
            span,
            #[cfg(feature = "tracing")]
            last_end: None,
        }
    }

    /// The session it drives, to read its state (its [`last_event_id`](Session::last_event_id)).
    ///
    /// # Example
    /// See [`Io`].
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// The next item; `None` after the end (a 204, or a clean end without reconnecting),
    /// `Some(Err(..))` once when an error ended the stream (a cut end without reconnecting
    /// is [`Error::Truncated`]).
    ///
    /// # Example
    /// See [`Io`].
    pub async fn next(&mut self) -> Option<Result<Item, Error>> {
        #[cfg(feature = "tracing")]
        {
            use tracing::Instrument;
            let span = self.span.clone();
            self.step().instrument(span).await
        }
        #[cfg(not(feature = "tracing"))]
        self.step().await
    }

    async fn step(&mut self) -> Option<Result<Item, Error>> {
        while !self.done {
            let now = self.io.runtime().now();
            match self.session.poll(now) {
                Step::Item(item) => {
                    self.observe(&item);
                    return Some(Ok(item));
                }
                Step::Connect { request, .. } => self.connect(request).await,
                Step::Close => self.body = None,
                Step::Wait { read, deadline } => self.wait(read, deadline).await,
                Step::End(error) => {
                    self.done = true;
                    self.body = None;
                    if let Some(error) = &error {
                        observe::count(observe::CLIENT_GIVE_UPS_TOTAL, 1);
                        log!(warn, target: "ssekit::client", url = %self.session.uri(), %error, "gave up");
                        let _ = error;
                    } else {
                        log!(debug, target: "ssekit::client", "the stream ended for good");
                    }
                    return error.map(Err);
                }
            }
        }
        None
    }

    /// Counts an item and logs what it says about the connection.
    fn observe(&mut self, item: &Item) {
        match item {
            Item::Connected { attempt } => {
                observe::count_by(observe::CLIENT_ATTEMPTS_TOTAL, "outcome", "connected", 1);
                log!(debug, target: "ssekit::client", attempt, last_event_id = self.session.last_event_id(), "connected");
                let _ = attempt;
            }
            Item::Disconnected(ended) => {
                let outcome = match ended {
                    Ended::Clean => None,
                    Ended::Refused(_) => Some("refused"),
                    _ => Some("failed"),
                };
                if let Some(outcome) = outcome {
                    observe::count_by(observe::CLIENT_ATTEMPTS_TOTAL, "outcome", outcome, 1);
                }
                #[cfg(feature = "tracing")]
                {
                    self.last_end = Some(ended.clone());
                }
            }
            Item::Reconnecting { after } => {
                #[cfg(feature = "tracing")]
                match self.last_end.take() {
                    None | Some(Ended::Clean) => tracing::debug!(
                        target: "ssekit::client",
                        wait_ms = after.as_millis() as u64,
                        "the stream ended cleanly; reconnecting"
                    ),
                    Some(cause) => tracing::warn!(
                        target: "ssekit::client",
                        %cause,
                        wait_ms = after.as_millis() as u64,
                        "attempt failed; retrying"
                    ),
                }
                let _ = after;
            }
            Item::Redirected { status, to } => {
                log!(debug, target: "ssekit::client", status, to = %to, "redirected");
                let _ = (status, to);
            }
            Item::Skipped(error) => {
                log!(warn, target: "ssekit::client", %error, "an event over a decoder limit was skipped");
                let _ = error;
            }
            _ => {}
        }
    }

    /// Sends the attempt's request within the session's response timeout; keeps the body
    /// when the session accepts the head.
    async fn connect(&mut self, request: Request<Bytes>) {
        let rt = self.io.runtime().clone();
        let limit = self.session.response_timeout();
        let uri = self.session.uri().clone();
        let timeout = rt.sleep(limit);
        let sent = first_of(self.io.send(&uri, request), async {
            timeout.await;
        })
        .await;
        let now = rt.now();
        match sent {
            None => self
                .session
                .handle_connect_error(now, Error::no_response(limit)),
            Some(Err(err)) => self.session.handle_connect_error(now, err),
            Some(Ok(response)) => {
                let (head, body) = response.into_parts();
                if self
                    .session
                    .handle_head(now, head.status.as_u16(), &head.headers)
                {
                    self.body = Some(body);
                }
            }
        }
    }

    /// Waits for the next body frame (when `read`) or until `deadline`, whichever comes
    /// first. A frame that is waiting wins over an expired deadline: the deadline passes
    /// while the application is slow to ask for the next item, and the stream is not idle
    /// then.
    async fn wait(&mut self, read: bool, deadline: Option<Instant>) {
        let rt = self.io.runtime().clone();
        let timer = deadline.map(|at| rt.sleep_until(at));
        let sleep = async move {
            match timer {
                Some(timer) => {
                    timer.await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        let Some(body) = self.body.as_mut().filter(|_| read) else {
            sleep.await;
            self.session.handle_timeout(rt.now());
            return;
        };
        let frame = std::future::poll_fn(|cx| Pin::new(&mut *body).poll_frame(cx));
        let woke = first_of(frame, sleep).await;
        let now = rt.now();
        match woke {
            Some(Some(Ok(frame))) => {
                if let Ok(data) = frame.into_data() {
                    self.session.handle_data(now, data);
                }
            }
            Some(Some(Err(e))) => {
                self.body = None;
                self.session.handle_end(now, Some(e.into()));
            }
            Some(None) => {
                self.body = None;
                self.session.handle_end(now, None);
            }
            None => self.session.handle_timeout(now),
        }
    }
}
