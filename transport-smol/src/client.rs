//! The client side on smol: [`EventSource`], a reconnecting SSE client for any request
//! (GET, or POST with a body sent again on every reconnect), as a `Stream` of [`Item`]s.
//!
//! ```text
//!  Session::poll ─▶ Connect{request} ─▶ TCP + hyper http1 on smol ─▶ Session::handle_response(status, type)
//!       ▲                                                        │ accepted
//!       └── handle_timeout ◀── async_io::Timer(deadline) ◀── Wait ──▶ body frame ─▶ Session::handle_data / handle_end
//! ```
//! The [`Session`] (from `ssekit-http`, shared with `ssekit-hyper`) holds the core
//! `Reconnect` and `Decoder`: every decision (headers, `Last-Event-ID`, backoff, `retry:`,
//! idle timeout, 204, giving up, duplicate suppression) is the core's. This module only
//! connects, reads and waits.

use std::pin::Pin;

use async_io::Timer;
use bytes::Bytes;
use futures_lite::{Stream, StreamExt};
use http::header::CONTENT_TYPE;
use http::Request;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use smol_hyper::rt::FuturesIo;
use ssekit::Event;
pub use ssekit_http::client::{Ended, Item};
use ssekit_http::client::{RequestSpec, Session, Step, Target};

use crate::time::Clock;
use crate::Error;

/// A reconnecting SSE client on smol (`http://` only). Build it, then take
/// [`stream`](Self::stream) (everything) or [`events`](Self::events) (events only). The
/// builder and the drive state are `ssekit-http`'s, shared with `ssekit-hyper`.
///
/// # Example
/// ```no_run
/// use futures_lite::StreamExt;
/// # smol::block_on(async {
/// let mut events = ssekit_smol::client::EventSource::get("http://127.0.0.1:8080/events")?.events();
/// while let Some(event) = events.next().await {
///     println!("{}", event?.data());
/// }
/// # Ok::<(), ssekit_smol::Error>(()) }).unwrap();
/// ```
#[derive(Debug)]
pub struct EventSource {
    spec: RequestSpec,
}

impl EventSource {
    fn from_spec(spec: RequestSpec) -> Self {
        EventSource { spec }
    }

    ssekit_http::event_source_builder!(ssekit_smol, &["http"]);

    /// Everything that happens, as a stream: connections, events, comments, `retry:`,
    /// disconnects and waits. It ends after a 204 (without an error) or with the error that
    /// made the policy give up. Dropping it closes the connection.
    ///
    /// # Example
    /// ```no_run
    /// use futures_lite::StreamExt;
    /// use ssekit_smol::client::{EventSource, Item};
    /// # smol::block_on(async {
    /// let mut items = EventSource::get("http://127.0.0.1:8080/events")?.stream();
    /// while let Some(item) = items.next().await {
    ///     if let Item::Disconnected(why) = item? { eprintln!("{why}") }
    /// }
    /// # Ok::<(), ssekit_smol::Error>(()) }).unwrap();
    /// ```
    pub fn stream(self) -> Pin<Box<dyn Stream<Item = Result<Item, Error>> + Send>> {
        let driver = Driver {
            session: self.spec.into_session(Target::Origin),
            clock: Clock::new(),
            response: None,
            done: false,
        };
        Box::pin(futures_lite::stream::unfold(driver, |mut d| async move {
            d.next().await.map(|item| (item, d))
        }))
    }

    /// Only the events.
    ///
    /// # Example
    /// ```no_run
    /// use futures_lite::StreamExt;
    /// # smol::block_on(async {
    /// let mut events = ssekit_smol::client::EventSource::get("http://127.0.0.1:8080/events")?.events();
    /// let first = events.next().await.transpose()?;
    /// # let _ = first; Ok::<(), ssekit_smol::Error>(()) }).unwrap();
    /// ```
    pub fn events(self) -> Pin<Box<dyn Stream<Item = Result<Event, Error>> + Send>> {
        Box::pin(self.stream().filter_map(|item| match item {
            Ok(Item::Event(ev)) => Some(Ok(ev)),
            Ok(_) => None,
            Err(e) => Some(Err(e)),
        }))
    }
}

/// A response body and the task driving its connection (dropping it closes the socket).
type Open = (Incoming, smol::Task<()>);

/// The IO of one stream: the shared [`Session`] decides, this moves bytes and waits.
struct Driver {
    session: Session,
    clock: Clock,
    response: Option<Open>,
    done: bool,
}

enum Woke {
    Frame(Option<Result<http_body::Frame<Bytes>, hyper::Error>>),
    Timer,
}

impl Driver {
    async fn next(&mut self) -> Option<Result<Item, Error>> {
        while !self.done {
            match self.session.poll(self.clock.now()) {
                Step::Item(item) => return Some(Ok(item)),
                Step::Connect { request, .. } => self.connect(request).await,
                Step::Close => self.response = None,
                Step::Wait { read, deadline } => self.wait(read, deadline).await,
                Step::End(error) => {
                    self.done = true;
                    self.response = None;
                    return error.map(Err);
                }
                _ => {}
            }
        }
        None
    }

    /// One TCP connection, one HTTP/1.1 exchange (an event stream holds its connection for
    /// its whole life, so there is no pool to share).
    async fn send(
        req: Request<Bytes>,
        host: String,
        port: u16,
    ) -> Result<(http::Response<Incoming>, smol::Task<()>), Error> {
        let tcp = smol::net::TcpStream::connect((host.as_str(), port)).await?;
        let _ = tcp.set_nodelay(true);
        let (mut sender, conn) = hyper::client::conn::http1::handshake(FuturesIo::new(tcp))
            .await
            .map_err(Error::http)?;
        let task = smol::spawn(async move {
            let _ = conn.await;
        });
        let resp = sender
            .send_request(req.map(Full::new))
            .await
            .map_err(Error::http)?;
        Ok((resp, task))
    }

    async fn connect(&mut self, req: Request<Bytes>) {
        let uri = self.session.uri();
        let host = uri
            .host()
            .unwrap_or_default()
            .trim_matches(['[', ']'])
            .to_owned();
        let port = uri.port_u16().unwrap_or(80);
        let limit = self.session.response_timeout();
        let answer = futures_lite::future::or(Self::send(req, host, port), async {
            Timer::after(limit).await;
            Err(Error::no_response(limit))
        })
        .await;
        let now = self.clock.now();
        match answer {
            Err(err) => self.session.handle_connect_error(now, err),
            Ok((resp, task)) => {
                let content_type = resp
                    .headers()
                    .get(CONTENT_TYPE)
                    .and_then(|v| v.to_str().ok());
                let status = resp.status().as_u16();
                if self.session.handle_response(now, status, content_type) {
                    self.response = Some((resp.into_body(), task));
                }
            }
        }
    }

    /// Waits for the body (when `read`) or the session's deadline, whichever comes first.
    async fn wait(&mut self, read: bool, deadline: Option<ssekit::Instant>) {
        let clock = self.clock;
        let sleep = async move {
            match deadline {
                Some(at) => {
                    Timer::at(clock.at(at)).await;
                }
                None => std::future::pending::<()>().await,
            }
            Woke::Timer
        };
        let woke = match self.response.as_mut().filter(|_| read) {
            Some((body, _)) => {
                futures_lite::future::or(async { Woke::Frame(body.frame().await) }, sleep).await
            }
            None => sleep.await,
        };
        let now = self.clock.now();
        match woke {
            Woke::Frame(Some(Ok(frame))) => {
                if let Ok(data) = frame.into_data() {
                    self.session.handle_data(now, data);
                }
            }
            Woke::Frame(Some(Err(e))) => {
                self.response = None;
                self.session.handle_end(now, Some(e.to_string()));
            }
            Woke::Frame(None) => {
                self.response = None;
                self.session.handle_end(now, None);
            }
            Woke::Timer => self.session.handle_timeout(now),
        }
    }
}
