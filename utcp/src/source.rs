//! [`ProviderSource`]: the stream of one provider connection, whose OAuth2 token is kept
//! fresh across reconnects.
//!
//! An SSE tool call is long-lived and reconnects, and an OAuth2 token expires. The token is
//! sent by the [`RequestSpec`]'s `on_connect` hook, from a cell the stream around it fills:
//!
//! ```text
//!  ProviderSource::stream ─▶ HttpIo::events ─▶ Item::Reconnecting { after }
//!        │ stale by then? (expires_in − TOKEN_REFRESH_MARGIN)  ─▶ wait `after`, fetch a new token
//!        │ 401 where the token was taken before               ─▶ drop it, fetch a new one, open again
//!        ▼                                                       (Last-Event-ID, retry kept), once
//!  on_connect hook ─▶ Authorization: Bearer <the cell's token>; notes the Last-Event-ID sent
//! ```
//!
//! A token fetch before a reconnect that fails keeps the current token: the server judges
//! it, and its 401 brings a fetch that, failing as well, ends the stream with its error. A
//! 401 to a token just fetched, or a second 401 in a row, ends it with the refusal (its
//! [`Error::status`] is `Some(401)`).

use std::fmt;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use futures_core::Stream;
use futures_util::StreamExt;
use http::{Method, Request};
use ssekit::client::ReconnectConfig;
use ssekit::{Event, Instant};
use ssekit_http::client::{only_events, Ended, Item, RequestSpec};

use super::oauth2::{Grant, TokenCell};
use crate::{Error, HttpIo};

/// What [`ProviderSource::stream`] returns: everything that happens, as a transport's
/// `EventSource::stream` reports it.
pub type Items = Pin<Box<dyn Stream<Item = Result<Item, Error>> + Send>>;

/// Everything a provider connection sends, kept to open it again after a 401.
pub(crate) struct Plan {
    pub(crate) method: Method,
    pub(crate) url: String,
    pub(crate) payload: Bytes,
    /// The `Content-Type` of the payload, when the provider's headers declare none.
    pub(crate) content_type: Option<&'static str>,
    pub(crate) config: ReconnectConfig,
    /// The provider's headers, its header fields and its API key or Basic credentials: all
    /// sent with `secret_header`.
    pub(crate) headers: Vec<(String, String)>,
}

/// Where a stream opened again takes up: the stream's last event ID (set by any block,
/// with data or not, of any event type) and the server's `retry:`.
#[derive(Default)]
struct Resume {
    last_event_id: Option<String>,
    retry: Option<u64>,
}

impl Plan {
    /// The request this plan describes for a transport speaking `schemes`, resuming from
    /// `resume`, with `cell`'s token (if any) put on every request by the `on_connect`
    /// hook, which notes in `sent` the `Last-Event-ID` each request carries.
    fn source(
        &self,
        schemes: &[&str],
        cell: Option<(&TokenCell, &SentId)>,
        resume: &Resume,
    ) -> Result<RequestSpec, Error> {
        let mut config = self.config.clone();
        if let Some(ms) = resume.retry {
            config = config.retry_timeout(Duration::from_millis(ms));
        }
        let mut source = RequestSpec::new(
            self.method.clone(),
            &self.url,
            self.payload.clone(),
            schemes,
        )?
        .reconnect(config);
        if let Some(content_type) = self.content_type {
            source = source.header("Content-Type", content_type)?;
        }
        // The provider's headers and header fields may carry tokens as well (their values
        // are where `$VARIABLES` go): like the auth, none is sent to another origin.
        for (name, value) in &self.headers {
            source = source.secret_header(name, value)?;
        }
        // An id with a control character is valid SSE but no header value: left out, as
        // the session's own reconnects leave it out, rather than failing the reopen.
        if let Some(id) = &resume.last_event_id {
            let sendable = ssekit::client::ReconnectConfig::default()
                .header("Last-Event-ID", id.clone())
                .is_ok();
            if sendable {
                source = source.header("Last-Event-ID", id)?;
            }
        }
        if let Some((cell, sent)) = cell {
            // `Authorization` is a credential header: a redirect to another origin drops
            // it, whoever set it.
            let (cell, sent) = (cell.clone(), sent.clone());
            source = source.on_connect(move |req| {
                cell.authorize(req);
                sent.note(req);
            });
        }
        Ok(source)
    }
}

/// The `Last-Event-ID` of the latest request of a stream (`None`: it had none), noted by
/// its hook. A 401 answers a request, and no event comes between the request and its
/// answer: so at a 401 this is the stream's last event ID as the session holds it (set by
/// blocks without data and events of types not delivered too), or `None` when the session
/// left it out (empty, or no header value).
#[derive(Clone, Default)]
struct SentId(Arc<Mutex<Option<String>>>);

impl SentId {
    fn note(&self, req: &Request<Bytes>) {
        let id = req
            .headers()
            .get("last-event-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = id;
    }

    fn get(&self) -> Option<String> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// The OAuth2 side of a connection: the grant to fetch tokens with, the cell the hook
/// reads, and what it takes to open the stream again.
struct Refresh {
    grant: Grant,
    cell: TokenCell,
    sent: SentId,
    plan: Plan,
}

/// One provider connection, not yet opened: what [`SseProvider::connect`](super::SseProvider::connect)
/// returns. Take its [`stream`](Self::stream) or [`events`](Self::events), as of a
/// transport's `EventSource`; `T` is the transport.
///
/// With OAuth2 `auth`, the stream keeps its token fresh: before a reconnect that comes
/// later than [`TOKEN_REFRESH_MARGIN`](super::TOKEN_REFRESH_MARGIN) before the token's
/// expiry (`expires_in`), a new token is fetched first; when the server answers a
/// reconnect with 401, the token it took before is dropped and a new one fetched, once,
/// and the stream opened again from the last event's id (reported as
/// [`Item::Disconnected`] with `HTTP 401`). A failed fetch before a reconnect keeps the
/// current token (a token endpoint down for a moment does not end the stream); a failed
/// fetch after a 401 ends the stream with its error. Its `Debug` output leaves the credentials out.
///
/// # Example
/// ```no_run
/// use futures_util::StreamExt;
/// use ssekit_utcp::{Error, HttpIo, ProviderSource, SseProvider};
/// async fn feed<T: HttpIo>() -> Result<(), Error> {
///     let provider = SseProvider::<T>::from_json(r#"{"name": "feed", "provider_type": "sse",
///         "url": "https://api.example.com/events",
///         "auth": {"auth_type": "oauth2", "token_url": "https://auth.example.com/token",
///                  "client_id": "c", "client_secret": "$FEED_SECRET"}}"#)?
///         .with_variables(|name| std::env::var(name).ok())?;
///     let source: ProviderSource<T> = provider.connect(&serde_json::Map::new()).await?;
///     let mut events = source.events(); // hours long: tokens are renewed as they expire
///     while let Some(event) = events.next().await {
///         println!("{}", event?.data());
///     }
///     Ok(())
/// }
/// ```
#[must_use = "a provider source does nothing until its stream is read"]
pub struct ProviderSource<T> {
    io: T,
    source: RequestSpec,
    refresh: Option<Refresh>,
}

impl<T> fmt::Debug for ProviderSource<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderSource")
            .field("source", &self.source)
            .field("oauth2", &self.refresh.as_ref().map(|r| &r.grant))
            .finish_non_exhaustive()
    }
}

impl<T: HttpIo> ProviderSource<T> {
    /// A source for `plan` on `io`, whose token (with OAuth2) is fetched by `grant` now.
    pub(crate) async fn open(io: T, plan: Plan, grant: Option<Grant>) -> Result<Self, Error> {
        let Some(grant) = grant else {
            let source = plan.source(T::SCHEMES, None, &Resume::default())?;
            return Ok(ProviderSource {
                io,
                source,
                refresh: None,
            });
        };
        // The request is built before the token is asked for: a URL or header that makes no
        // request does not cost a token request.
        let (cell, sent) = (TokenCell::default(), SentId::default());
        let source = plan.source(T::SCHEMES, Some((&cell, &sent)), &Resume::default())?;
        cell.set(Some(grant.fetch(&io).await?));
        Ok(ProviderSource {
            io,
            source,
            refresh: Some(Refresh {
                grant,
                cell,
                sent,
                plan,
            }),
        })
    }

    /// Everything that happens, as a transport's `EventSource::stream` reports it; with
    /// OAuth2, a token refused with 401 and fetched again shows as [`Item::Disconnected`]
    /// (`HTTP 401`) before the stream opens again.
    ///
    /// # Example
    /// ```no_run
    /// use futures_util::StreamExt;
    /// use ssekit_http::client::Item;
    /// use ssekit_utcp::{Error, HttpIo, SseProvider};
    /// async fn watch<T: HttpIo>(provider: &SseProvider<T>) -> Result<(), Error> {
    ///     let mut items = provider.connect(&serde_json::Map::new()).await?.stream();
    ///     while let Some(item) = items.next().await {
    ///         if let Item::Disconnected(why) = item? {
    ///             eprintln!("{why}");
    ///         }
    ///     }
    ///     Ok(())
    /// }
    /// ```
    pub fn stream(self) -> Items {
        let events = self.io.events(self.source);
        let Some(refresh) = self.refresh else {
            return Box::pin(futures_util::stream::unfold(events, |mut events| async {
                T::next(&mut events).await.map(|item| (item, events))
            }));
        };
        let run = Run {
            io: self.io,
            items: events,
            refresh,
            resume: Resume::default(),
            accepted: false,
            started: false,
            due: None,
            done: false,
        };
        Box::pin(futures_util::stream::unfold(run, |mut run| async move {
            run.next().await.map(|item| (item, run))
        }))
    }

    /// Only the events.
    ///
    /// # Example
    /// ```no_run
    /// use futures_util::StreamExt;
    /// use ssekit_utcp::{Error, HttpIo, SseProvider};
    /// async fn first<T: HttpIo>(provider: &SseProvider<T>) -> Result<Option<ssekit::Event>, Error> {
    ///     let mut events = provider.connect(&serde_json::Map::new()).await?.events();
    ///     events.next().await.transpose()
    /// }
    /// ```
    pub fn events(self) -> Pin<Box<dyn Stream<Item = Result<Event, Error>> + Send>> {
        Box::pin(
            self.stream()
                .filter_map(|item| std::future::ready(only_events(item))),
        )
    }

    /// The request underneath, to set what the provider object does not say (decoder
    /// limits, the response timeout, the redirect limit) and open it with
    /// [`HttpIo::events`]. It sends the token fetched by
    /// [`connect`](super::SseProvider::connect) and never fetches another: for streams
    /// that end before it expires.
    ///
    /// # Example
    /// ```
    /// use ssekit_utcp::{Error, HttpIo, SseProvider};
    /// async fn open<T: HttpIo>(provider: &SseProvider<T>, io: &T) -> Result<T::Events, Error> {
    ///     let spec = provider.connect(&serde_json::Map::new()).await?
    ///         .into_spec()
    ///         .response_timeout(std::time::Duration::from_secs(5));
    ///     Ok(io.events(spec))
    /// }
    /// ```
    pub fn into_spec(self) -> RequestSpec {
        self.source
    }
}

/// The stream of a connection with OAuth2: the source's items, with the token renewed
/// between them.
struct Run<T: HttpIo> {
    io: T,
    items: T::Events,
    refresh: Refresh,
    resume: Resume,
    /// The server accepted the current token (a connection opened with it).
    accepted: bool,
    /// The first item was asked for.
    started: bool,
    /// A reconnect is due at this moment, and the token is stale by then: fetch a new one
    /// at that moment, before the source connects.
    due: Option<Instant>,
    done: bool,
}

impl<T: HttpIo> Run<T> {
    async fn next(&mut self) -> Option<Result<Item, Error>> {
        if self.done {
            return None;
        }
        if !self.started {
            // The source may be read long after `connect` fetched its token.
            self.started = true;
            let now = self.io.now();
            if self.is_stale_at(now) {
                self.due = Some(now);
            }
        }
        if let Some(at) = self.due.take() {
            self.io.sleep_until(at).await;
            // A token endpoint that fails now (down for a moment) does not end a stream whose
            // token may still be good: it connects with that one, a later reconnect tries
            // again, and a 401 to it comes to the renewal below, which ends the stream if it
            // fails too.
            let _kept_the_current_token = self.renew().await;
        }
        match T::next(&mut self.items).await {
            Some(Ok(item)) => {
                self.observe(&item);
                Some(Ok(item))
            }
            Some(Err(refused)) if self.accepted && refused.status() == Some(401) => {
                // The token the server took before is refused now (expired early, or
                // revoked): drop it, fetch a new one and open the stream again, once.
                self.refresh.cell.set(None);
                if let Err(e) = self.renew().await {
                    return self.end(e);
                }
                // The session's, not the last delivered event's: blocks without data and
                // events of other types set it too.
                self.resume.last_event_id = self.refresh.sent.get();
                let refresh = &self.refresh;
                match refresh.plan.source(
                    T::SCHEMES,
                    Some((&refresh.cell, &refresh.sent)),
                    &self.resume,
                ) {
                    Ok(source) => self.items = self.io.events(source),
                    Err(e) => return self.end(e),
                }
                Some(Ok(Item::Disconnected(match refused {
                    Error::Refused(refused) => Ended::Refused(refused),
                    other => Ended::Failed(other),
                })))
            }
            Some(Err(e)) => self.end(e),
            None => {
                self.done = true;
                None
            }
        }
    }

    fn end(&mut self, e: Error) -> Option<Result<Item, Error>> {
        self.done = true;
        Some(Err(e))
    }

    fn is_stale_at(&self, at: Instant) -> bool {
        self.refresh
            .cell
            .get()
            .is_none_or(|token| token.is_stale_at(at))
    }

    /// Fetches a new token into the cell.
    async fn renew(&mut self) -> Result<(), Error> {
        let token = match self.refresh.grant.fetch(&self.io).await {
            Ok(token) => token,
            Err(e) => {
                crate::observe::log!(warn, error = %e, "UTCP OAuth2 token refresh failed");
                return Err(e);
            }
        };
        crate::observe::log!(debug, "UTCP OAuth2 token refreshed");
        self.refresh.cell.set(Some(token));
        self.accepted = false;
        Ok(())
    }

    /// Keeps what opening the stream again needs, and schedules a token fetch before a
    /// reconnect the token would be stale for.
    fn observe(&mut self, item: &Item) {
        match item {
            Item::Connected { .. } => self.accepted = true,
            Item::Retry(ms) => self.resume.retry = Some(*ms),
            Item::Reconnecting { after } => {
                let at = self.io.now().checked_add(*after);
                if let Some(at) = at.filter(|at| self.is_stale_at(*at)) {
                    self.due = Some(at);
                }
            }
            _ => {}
        }
    }
}
