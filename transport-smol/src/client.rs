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
use ssekit_http::client::{only_events, Drive, Io, RequestSpec, Session, Target};
pub use ssekit_http::client::{Ended, Item};

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
        let io = SmolIo {
            clock: Clock::new(),
            response: None,
        };
        let driver = Drive::new(self.spec.into_session(Target::Origin), io);
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
        Box::pin(self.stream().filter_map(only_events))
    }
}

/// A response body and the task driving its connection (dropping it closes the socket).
type Open = (Incoming, smol::Task<()>);

/// The IO of one stream on smol: the shared [`Session`] decides, [`Drive`] loops, this
/// connects, reads and waits.
struct SmolIo {
    clock: Clock,
    response: Option<Open>,
}

enum Woke {
    Frame(Option<Result<http_body::Frame<Bytes>, hyper::Error>>),
    Timer,
}

/// One TCP connection, one HTTP/1.1 exchange (an event stream holds its connection for its
/// whole life, so there is no pool to share).
async fn send(
    req: Request<Bytes>,
    host: String,
    port: u16,
) -> Result<(http::Response<Incoming>, smol::Task<()>), Error> {
    let tcp = smol::net::TcpStream::connect((host.as_str(), port)).await?;
    let _ = tcp.set_nodelay(true);
    let (mut sender, conn) = hyper::client::conn::http1::handshake(FuturesIo::new(tcp)).await?;
    let task = smol::spawn(async move {
        let _ = conn.await;
    });
    let resp = sender.send_request(req.map(Full::new)).await?;
    Ok((resp, task))
}

impl Io for SmolIo {
    fn now(&self) -> ssekit::Instant {
        self.clock.now()
    }

    async fn connect(&mut self, session: &mut Session, req: Request<Bytes>) -> Result<(), Error> {
        let uri = session.uri();
        let host = uri
            .host()
            .unwrap_or_default()
            .trim_matches(['[', ']'])
            .to_owned();
        let port = uri.port_u16().unwrap_or(80);
        let limit = session.response_timeout();
        let answer = futures_lite::future::or(send(req, host, port), async {
            Timer::after(limit).await;
            Err(Error::no_response(limit))
        })
        .await;
        let now = self.clock.now();
        match answer {
            Err(err) => session.handle_connect_error(now, err),
            Ok((resp, task)) => {
                let content_type = resp
                    .headers()
                    .get(CONTENT_TYPE)
                    .and_then(|v| v.to_str().ok());
                if session.handle_response(now, resp.status().as_u16(), content_type) {
                    self.response = Some((resp.into_body(), task));
                }
            }
        }
        Ok(())
    }

    async fn wait(&mut self, session: &mut Session, read: bool, deadline: Option<ssekit::Instant>) {
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
                    session.handle_data(now, data);
                }
            }
            Woke::Frame(Some(Err(e))) => {
                self.response = None;
                session.handle_end(now, Some(e.to_string()));
            }
            Woke::Frame(None) => {
                self.response = None;
                session.handle_end(now, None);
            }
            Woke::Timer => session.handle_timeout(now),
        }
    }

    fn close(&mut self) {
        self.response = None;
    }
}
