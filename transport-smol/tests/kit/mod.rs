//! The conformance kit: servers and clients of both transports behind one neutral
//! interface, so each scenario is written once and run over every pairing on 127.0.0.1.
//!
//! A scenario's server is a closure from the request ([`Req`]) to a [`Reply`], which each
//! transport serves with its own `SseBody` and `response`. A client run returns what the
//! transport's `EventSource` reported, mapped to [`Seen`].
#![allow(dead_code)]

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use http_body_util::BodyExt;
use ssekit::client::ReconnectConfig;
use ssekit::{Config, Event};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Smol,
    Hyper,
}

pub const PAIRS: [(Side, Side); 4] = [
    (Side::Smol, Side::Smol),
    (Side::Smol, Side::Hyper),
    (Side::Hyper, Side::Smol),
    (Side::Hyper, Side::Hyper),
];

/// What the server saw.
#[derive(Clone, Debug)]
pub struct Req {
    pub method: String,
    pub path: String,
    pub last_event_id: Option<String>,
    pub headers: http::HeaderMap,
    pub body: Bytes,
}

/// What the server answers.
#[derive(Clone, Debug)]
pub enum Reply {
    /// `200 text/event-stream` with these already encoded pieces, each its own body frame;
    /// then the body ends, or (`hang`) stays open.
    Stream {
        frames: Vec<Bytes>,
        keep_alive: Option<Duration>,
        hang: bool,
    },
    /// `200 text/event-stream` with these pieces, then the body fails: the server aborts the
    /// connection without ending the chunked message (the same body for both servers; this
    /// exercises the clients).
    Abort { frames: Vec<Bytes> },
    /// A plain response.
    Plain {
        status: u16,
        content_type: &'static str,
    },
}

impl Reply {
    pub fn events(events: &[Event]) -> Reply {
        Reply::Stream {
            frames: events.iter().map(encode).collect(),
            keep_alive: None,
            hang: false,
        }
    }
}

pub fn encode(event: &Event) -> Bytes {
    let mut out = Vec::new();
    ssekit::Encoder::new().encode(event, &mut out).unwrap();
    out.into()
}

pub type Handler = Arc<dyn Fn(Req) -> Reply + Send + Sync>;

/// What a client reported, the same for both transports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Seen {
    Connected(u32),
    Event(Event),
    Comment(String),
    Retry(u64),
    Disconnected(&'static str),
    Reconnecting(Duration),
    /// The stream ended with this error kind.
    Error(String),
}

fn tokio_rt() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap()
    })
}

fn req_of(parts: http::request::Parts, body: Bytes) -> Req {
    Req {
        method: parts.method.to_string(),
        path: parts.uri.path().to_owned(),
        last_event_id: parts
            .headers
            .get("last-event-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
        headers: parts.headers,
        body,
    }
}

type Boxed =
    http_body_util::combinators::UnsyncBoxBody<Bytes, Box<dyn std::error::Error + Send + Sync>>;

fn plain(status: u16, content_type: &'static str) -> http::Response<Boxed> {
    let body = http_body_util::Full::new(Bytes::from_static(b"not an event stream"))
        .map_err(|never: Infallible| match never {})
        .boxed_unsync();
    let mut resp = http::Response::new(body);
    *resp.status_mut() = http::StatusCode::from_u16(status).unwrap();
    resp.headers_mut()
        .insert("content-type", http::HeaderValue::from_static(content_type));
    resp
}

fn abort(frames: Vec<Bytes>) -> http::Response<Boxed> {
    let data =
        futures_util::stream::iter(frames.into_iter().map(|b| Ok(http_body::Frame::data(b))));
    // The failure comes after the data had time to go out (hyper polls bodies eagerly).
    let fail = futures_util::stream::once(async {
        async_io::Timer::after(Duration::from_millis(50)).await;
        Err("server aborted".into())
    });
    let body = http_body_util::StreamBody::new(data.chain(fail));
    let mut resp = http::Response::new(BodyExt::boxed_unsync(body));
    resp.headers_mut().insert(
        "content-type",
        http::HeaderValue::from_static("text/event-stream"),
    );
    resp
}

fn smol_reply(reply: Reply) -> http::Response<Boxed> {
    use ssekit_smol::server::{response, SseBody};
    match reply {
        Reply::Abort { frames } => abort(frames),
        Reply::Plain {
            status,
            content_type,
        } => plain(status, content_type),
        Reply::Stream {
            frames,
            keep_alive,
            hang,
        } => {
            let frames = futures_lite::stream::iter(frames);
            let mut body = if hang {
                SseBody::from_bytes(futures_lite::StreamExt::chain(
                    frames,
                    futures_lite::stream::pending(),
                ))
            } else {
                SseBody::from_bytes(frames)
            };
            if let Some(every) = keep_alive {
                body = body.keep_alive(every);
            }
            response(body).map(|b| b.map_err(Into::into).boxed_unsync())
        }
    }
}

fn hyper_reply(reply: Reply) -> http::Response<Boxed> {
    use ssekit_hyper::server::{response, SseBody};
    match reply {
        Reply::Abort { frames } => abort(frames),
        Reply::Plain {
            status,
            content_type,
        } => plain(status, content_type),
        Reply::Stream {
            frames,
            keep_alive,
            hang,
        } => {
            let frames = futures_util::stream::iter(frames);
            let mut body = if hang {
                SseBody::from_bytes(frames.chain(futures_util::stream::pending()))
            } else {
                SseBody::from_bytes(frames)
            };
            if let Some(every) = keep_alive {
                body = body.keep_alive(every);
            }
            response(body).map(|b| b.map_err(Into::into).boxed_unsync())
        }
    }
}

/// Serves `handler` on a fresh 127.0.0.1 port with the given transport.
pub fn serve(side: Side, handler: impl Fn(Req) -> Reply + Send + Sync + 'static) -> SocketAddr {
    let handler: Handler = Arc::new(handler);
    let service = move |is_smol: bool| {
        let handler = handler.clone();
        hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
            let handler = handler.clone();
            async move {
                let (parts, body) = req.into_parts();
                let body = body
                    .collect()
                    .await
                    .map(|b| b.to_bytes())
                    .unwrap_or_default();
                let reply = handler(req_of(parts, body));
                Ok::<_, Infallible>(if is_smol {
                    smol_reply(reply)
                } else {
                    hyper_reply(reply)
                })
            }
        })
    };
    match side {
        Side::Smol => {
            let listener = smol::block_on(smol::net::TcpListener::bind("127.0.0.1:0")).unwrap();
            let addr = listener.local_addr().unwrap();
            smol::spawn(ssekit_smol::server::serve(listener, service(true))).detach();
            addr
        }
        Side::Hyper => {
            let rt = tokio_rt();
            let listener = rt
                .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
                .unwrap();
            let addr = listener.local_addr().unwrap();
            rt.spawn(ssekit_hyper::server::serve(listener, service(false)));
            addr
        }
    }
}

/// How a client run is set up.
#[derive(Clone)]
pub struct Run {
    pub url: String,
    pub post: Option<&'static str>,
    pub headers: Vec<(&'static str, &'static str)>,
    pub reconnect: ReconnectConfig,
    pub decoder: Config,
    /// Stop after this many items (or when the stream ends, or after 5 s).
    pub items: usize,
}

impl Run {
    pub fn new(addr: SocketAddr, items: usize) -> Run {
        Run {
            url: format!("http://{addr}/events"),
            post: None,
            headers: Vec::new(),
            reconnect: fast(),
            decoder: Config::default(),
            items,
        }
    }
}

pub fn fast() -> ReconnectConfig {
    ReconnectConfig::default()
        .retry_timeout(Duration::from_millis(20))
        .min_delay(Duration::from_millis(10))
        .jitter(0)
}

fn smol_error(e: ssekit_smol::Error) -> String {
    use ssekit_smol::Error as E;
    match e {
        E::Status(s) => format!("status {s}"),
        E::ContentType(ct) => format!("content-type {ct:?}"),
        E::Decode(_) => "decode".into(),
        E::Io(_) | E::Http(_) => "network".into(),
        other => format!("other: {other}"),
    }
}

fn hyper_error(e: ssekit_hyper::Error) -> String {
    use ssekit_hyper::Error as E;
    match e {
        E::Status(s) => format!("status {s}"),
        E::ContentType(ct) => format!("content-type {ct:?}"),
        E::Decode(_) => "decode".into(),
        E::Io(_) | E::Http(_) => "network".into(),
        other => format!("other: {other}"),
    }
}

fn ended(text: &str) -> &'static str {
    match text {
        t if t.starts_with("Clean") => "clean",
        t if t.starts_with("Truncated") => "truncated",
        t if t.starts_with("IdleTimeout") => "idle",
        _ => "failed",
    }
}

async fn gather<S, I>(mut items: S, want: usize, map: impl Fn(I) -> Seen) -> Vec<Seen>
where
    S: futures_util::Stream<Item = I> + Unpin,
{
    let mut seen = Vec::new();
    while seen.len() < want {
        match items.next().await {
            Some(item) => {
                let item = map(item);
                let stop = matches!(item, Seen::Error(_));
                seen.push(item);
                if stop {
                    break;
                }
            }
            None => break,
        }
    }
    seen
}

/// Runs a client of the given transport and returns what it reported.
pub fn client(side: Side, run: Run) -> Vec<Seen> {
    let deadline = Duration::from_secs(5);
    match side {
        Side::Smol => {
            use ssekit_smol::client::{EventSource, Item};
            let mut source = match run.post {
                Some(body) => EventSource::post(&run.url, body),
                None => EventSource::get(&run.url),
            }
            .unwrap()
            .reconnect(run.reconnect)
            .decoder(run.decoder);
            for (n, v) in &run.headers {
                source = source.header(n, v).unwrap();
            }
            let stream = source.stream();
            let fut = gather(stream, run.items, |item| match item {
                Ok(Item::Connected { attempt }) => Seen::Connected(attempt),
                Ok(Item::Event(ev)) => Seen::Event(ev),
                Ok(Item::Comment(c)) => Seen::Comment(c.to_string()),
                Ok(Item::Retry(ms)) => Seen::Retry(ms),
                Ok(Item::Disconnected(e)) => Seen::Disconnected(ended(&format!("{e:?}"))),
                Ok(Item::Reconnecting { after }) => Seen::Reconnecting(after),
                Ok(other) => Seen::Error(format!("unknown item {other:?}")),
                Err(e) => Seen::Error(smol_error(e)),
            });
            smol::block_on(within(deadline, fut))
        }
        Side::Hyper => {
            use ssekit_hyper::client::{EventSource, Item};
            tokio_rt().block_on(async move {
                let mut source = match run.post {
                    Some(body) => EventSource::post(&run.url, body),
                    None => EventSource::get(&run.url),
                }
                .unwrap()
                .reconnect(run.reconnect)
                .decoder(run.decoder);
                for (n, v) in &run.headers {
                    source = source.header(n, v).unwrap();
                }
                let stream = source.stream();
                let fut = gather(stream, run.items, |item| match item {
                    Ok(Item::Connected { attempt }) => Seen::Connected(attempt),
                    Ok(Item::Event(ev)) => Seen::Event(ev),
                    Ok(Item::Comment(c)) => Seen::Comment(c.to_string()),
                    Ok(Item::Retry(ms)) => Seen::Retry(ms),
                    Ok(Item::Disconnected(e)) => Seen::Disconnected(ended(&format!("{e:?}"))),
                    Ok(Item::Reconnecting { after }) => Seen::Reconnecting(after),
                    Ok(other) => Seen::Error(format!("unknown item {other:?}")),
                    Err(e) => Seen::Error(hyper_error(e)),
                });
                within(deadline, fut).await
            })
        }
    }
}

/// Fails a run that hangs instead of hanging the suite (runtime-neutral: async-io's timer).
pub async fn within<T>(limit: Duration, fut: impl Future<Output = T>) -> T {
    futures_lite::future::or(fut, async {
        async_io::Timer::after(limit).await;
        panic!("client run timed out after {limit:?}")
    })
    .await
}

/// Runs `scenario` over every server × client pairing, naming the pairing on failure.
pub fn each_pair(scenario: impl Fn(Side, Side)) {
    for (server, client) in PAIRS {
        let result =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| scenario(server, client)));
        if let Err(panic) = result {
            eprintln!("failed with a {server:?} server and a {client:?} client");
            std::panic::resume_unwind(panic);
        }
    }
}

pub fn numbered(n: usize) -> Vec<Event> {
    (1..=n)
        .map(|i| {
            Event::builder()
                .event("tick")
                .unwrap()
                .id(i.to_string())
                .unwrap()
                .data(format!("event {i}\nsecond line"))
                .build()
        })
        .collect()
}

pub fn events_of(seen: &[Seen]) -> Vec<Event> {
    seen.iter()
        .filter_map(|s| match s {
            Seen::Event(ev) => Some(ev.clone()),
            _ => None,
        })
        .collect()
}
