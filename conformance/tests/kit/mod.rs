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

/// Both transports, for a scenario that needs no server of its own transport.
pub const SIDES: [Side; 2] = [Side::Smol, Side::Hyper];

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
#[derive(Clone)]
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
    /// `200` with no `Content-Type` at all.
    NoContentType,
    /// A redirect: `status` with this `Location`, and no body.
    Redirect { status: u16, location: String },
    /// Accept the request and never answer (no response head).
    Silent,
    /// `200 text/event-stream` fed by the transport's own bounded `channel(capacity)`:
    /// `producer` runs on a thread of its own with the [`Producer`] half.
    Channel {
        capacity: usize,
        keep_alive: Option<Duration>,
        producer: Arc<dyn Fn(Producer) + Send + Sync>,
    },
    /// A subscriber of the transport's `Broadcast`, resumed after `last_event_id`.
    Subscribe {
        hub: Hub,
        last_event_id: Option<String>,
    },
    /// `SseBody::try_from_stream` of these items; the error that ends it goes to `errors`.
    Messages {
        items: Vec<Result<ssekit_http::server::Message, String>>,
        errors: Arc<std::sync::Mutex<Vec<String>>>,
    },
}

/// Either transport's `server::Broadcast` (make it with the server's [`Side`]).
#[derive(Clone)]
pub enum Hub {
    Smol(ssekit_smol::server::Broadcast),
    Hyper(ssekit_hyper::server::Broadcast),
}

impl Hub {
    pub fn new(side: Side, replay: ssekit::server::ReplayBuffer, per_client: usize) -> Hub {
        match side {
            Side::Smol => Hub::Smol(ssekit_smol::server::Broadcast::new(replay, per_client)),
            Side::Hyper => Hub::Hyper(ssekit_hyper::server::Broadcast::new(replay, per_client)),
        }
    }

    /// Publishes `event`; returns how many subscribers it was queued for.
    pub fn publish(&self, event: &Event) -> usize {
        match self {
            Hub::Smol(hub) => hub.publish(event).unwrap(),
            Hub::Hyper(hub) => hub.publish(event).unwrap(),
        }
    }

    pub fn disconnect_all(&self) {
        match self {
            Hub::Smol(hub) => hub.disconnect_all(),
            Hub::Hyper(hub) => hub.disconnect_all(),
        }
    }

    /// The hub, whose `publish_wait` cuts clients still full after `bound`.
    pub fn wait_at_most(self, bound: Duration) -> Hub {
        match self {
            Hub::Smol(hub) => Hub::Smol(hub.wait_at_most(bound)),
            Hub::Hyper(hub) => Hub::Hyper(hub.wait_at_most(bound)),
        }
    }

    /// `publish_wait` from a plain thread (on a tokio runtime of its own for hyper's, whose
    /// timer needs one); returns how many subscribers `event` was queued for.
    pub fn publish_wait(&self, event: &Event) -> usize {
        match self {
            Hub::Smol(hub) => smol::block_on(hub.publish_wait(event)).unwrap(),
            Hub::Hyper(hub) => tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .build()
                .unwrap()
                .block_on(hub.publish_wait(event))
                .unwrap(),
        }
    }

    /// The subscribers the hub holds (ones that left count until it lets go of them).
    pub fn subscribers(&self) -> usize {
        match self {
            Hub::Smol(hub) => hub.subscribers(),
            Hub::Hyper(hub) => hub.subscribers(),
        }
    }
}

/// The application's half of either transport's `server::channel`, driven from a plain
/// thread (both senders' futures run on any executor).
pub enum Producer {
    Smol(ssekit_smol::server::Sender),
    Hyper(ssekit_hyper::server::Sender),
}

impl Producer {
    /// Queues `event`, waiting while the queue is full; `false` once the client went away.
    pub fn send(&self, event: &Event) -> bool {
        futures_lite::future::block_on(async {
            match self {
                Producer::Smol(tx) => tx.send(event).await.is_ok(),
                Producer::Hyper(tx) => tx.send(event).await.is_ok(),
            }
        })
    }

    /// Queues raw bytes, any piece of a stream (part of a line, say), waiting while the
    /// queue is full; `false` once the client went away.
    pub fn send_bytes(&self, wire: &'static str) -> bool {
        let wire = Bytes::from_static(wire.as_bytes());
        futures_lite::future::block_on(async {
            match self {
                Producer::Smol(tx) => tx.send_bytes(wire).await.is_ok(),
                Producer::Hyper(tx) => tx.send_bytes(wire).await.is_ok(),
            }
        })
    }

    /// Queues `event` without waiting: `Ok(true)` queued, `Ok(false)` full, `Err(())` closed.
    pub fn try_send(&self, event: &Event) -> Result<bool, ()> {
        use ssekit_hyper::server::TrySendError as H;
        use ssekit_smol::server::TrySendError as S;
        match self {
            Producer::Smol(tx) => match tx.try_send(event) {
                Ok(()) => Ok(true),
                Err(S::Full) => Ok(false),
                Err(_) => Err(()),
            },
            Producer::Hyper(tx) => match tx.try_send(event) {
                Ok(()) => Ok(true),
                Err(H::Full) => Ok(false),
                Err(_) => Err(()),
            },
        }
    }
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
    /// A redirect followed: its status and where it went.
    Redirected(u16, String),
    /// The stream ended with this error kind.
    Error(String),
}

/// The tokio runtime the hyper transport's servers and clients run on (two workers).
pub fn tokio_rt() -> &'static tokio::runtime::Runtime {
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
        last_event_id: ssekit_http::server::last_event_id(&parts.headers).map(str::to_owned),
        headers: parts.headers,
        body,
    }
}

/// A request's head and its whole body (empty when it cannot be read).
pub async fn read_request(
    req: http::Request<hyper::body::Incoming>,
) -> (http::request::Parts, Bytes) {
    let (parts, body) = req.into_parts();
    let body = body.collect().await.map(|b| b.to_bytes());
    (parts, body.unwrap_or_default())
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

fn redirect(status: u16, location: &str) -> http::Response<Boxed> {
    let mut resp = plain(status, "text/plain");
    resp.headers_mut()
        .insert("location", http::HeaderValue::from_str(location).unwrap());
    resp
}

fn no_content_type() -> http::Response<Boxed> {
    let mut resp = plain(200, "text/plain");
    resp.headers_mut().remove("content-type");
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

/// `fn $name(Reply) -> Response` serving with `$krate`'s `SseBody`, `channel`, `response`
/// and `Broadcast` (the two transports' server APIs are the same, so one body serves both).
macro_rules! reply_fn {
    ($name:ident, $krate:ident, $side:ident) => {
        fn $name(reply: Reply) -> http::Response<Boxed> {
            use $krate::server::{channel, response, SseBody};
            let body = match reply {
                Reply::Abort { frames } => return abort(frames),
                Reply::NoContentType => return no_content_type(),
                Reply::Redirect { status, location } => return redirect(status, &location),
                Reply::Silent => unreachable!("answered in serve"),
                Reply::Plain {
                    status,
                    content_type,
                } => return plain(status, content_type),
                Reply::Channel {
                    capacity,
                    keep_alive,
                    producer,
                } => {
                    let (tx, body) = channel(capacity);
                    let tx = Producer::$side(tx);
                    std::thread::spawn(move || producer(tx));
                    match keep_alive {
                        Some(every) => body.keep_alive(every),
                        None => body,
                    }
                }
                Reply::Subscribe { hub, last_event_id } => {
                    let Hub::$side(hub) = hub else {
                        panic!("a hub of the other transport")
                    };
                    hub.subscribe(last_event_id.as_deref()).unwrap()
                }
                Reply::Messages { items, errors } => {
                    SseBody::try_from_stream(futures_lite::stream::iter(items), move |e| {
                        errors.lock().unwrap().push(e)
                    })
                }
                Reply::Stream {
                    frames,
                    keep_alive,
                    hang,
                } => {
                    let frames = futures_lite::stream::iter(frames);
                    let body = if hang {
                        let forever = futures_lite::stream::pending();
                        SseBody::from_bytes(futures_lite::StreamExt::chain(frames, forever))
                    } else {
                        SseBody::from_bytes(frames)
                    };
                    match keep_alive {
                        Some(every) => body.keep_alive(every),
                        None => body,
                    }
                }
            };
            response(body).map(|b| b.map_err(Into::into).boxed_unsync())
        }
    };
}

reply_fn!(smol_reply, ssekit_smol, Smol);
reply_fn!(hyper_reply, ssekit_hyper, Hyper);

/// Serves `handler` on a fresh 127.0.0.1 port with the given transport.
pub fn serve(side: Side, handler: impl Fn(Req) -> Reply + Send + Sync + 'static) -> SocketAddr {
    let handler: Handler = Arc::new(handler);
    let service = move |is_smol: bool| {
        let handler = handler.clone();
        hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
            let handler = handler.clone();
            async move {
                let (parts, body) = read_request(req).await;
                let reply = handler(req_of(parts, body));
                if let Reply::Silent = reply {
                    std::future::pending::<()>().await;
                }
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

/// A callback on each item a client run sees (its index and value).
pub type OnItem = Arc<dyn Fn(usize, &Seen) + Send + Sync>;

/// How a client run is set up.
#[derive(Clone)]
pub struct Run {
    pub url: String,
    pub post: Option<String>,
    pub headers: Vec<(String, String)>,
    pub reconnect: ReconnectConfig,
    pub decoder: Config,
    pub response_timeout: Option<Duration>,
    /// Stop after this many items (or when the stream ends, or after `deadline`).
    pub items: usize,
    /// The whole run fails (panics) past this: a hang guard (default 60 s).
    pub deadline: Duration,
    /// Called with each item's index and value as it is seen, on the client's own thread
    /// (blocking in it stops the client reading).
    pub on_item: Option<OnItem>,
}

impl Run {
    pub fn new(addr: SocketAddr, items: usize) -> Run {
        Run {
            url: format!("http://{addr}/events"),
            post: None,
            headers: Vec::new(),
            reconnect: fast(),
            decoder: Config::default(),
            response_timeout: None,
            items,
            // A hang guard, not a speed budget: a loaded machine may be slow.
            deadline: Duration::from_secs(60),
            on_item: None,
        }
    }
}

/// The ORS clients' reconnect policy ([`ReconnectConfig::ors`]) with [`fast`]'s quick
/// retries.
pub fn fast_ors() -> ReconnectConfig {
    ReconnectConfig::ors()
        .retry_timeout(Duration::from_millis(20))
        .min_delay(Duration::from_millis(10))
        .jitter(0)
}

pub fn fast() -> ReconnectConfig {
    ReconnectConfig::default()
        .retry_timeout(Duration::from_millis(20))
        .min_delay(Duration::from_millis(10))
        .jitter(0)
}

/// The neutral label of a client error. Both transports return the same type,
/// `ssekit_http::Error` (re-exported as `ssekit_smol::Error` and `ssekit_hyper::Error`).
fn error_label(e: ssekit_smol::Error) -> String {
    use ssekit_smol::Error as E;
    match e {
        E::Status(s) => format!("status {s}"),
        E::ContentType(ct) => format!("content-type {ct:?}"),
        E::Refused(r) if r.status() == 200 => {
            format!("content-type {:?}", r.content_type().map(str::to_owned))
        }
        E::Refused(r) if r.body().is_empty() => format!("status {}", r.status()),
        E::Refused(r) => format!("status {}: {}", r.status(), r.body()),
        E::Exhausted { last, .. } => format!("gave up: {}", error_label(*last)),
        E::Decode(_) => "decode".into(),
        E::Http(e) if e.is::<ssekit_http::NoResponse>() => "no response".into(),
        e @ (E::Io(_) | E::Http(_)) => network(&e.to_string()),
        E::Request(_) => "request".into(),
        E::GaveUp(_) => "gave up".into(),
        E::Redirect(why) => format!("redirect: {why}"),
        other => format!("other: {other}"),
    }
}

/// What the trace records for one item of either client (both yield `ssekit_http`'s `Item`).
fn seen(item: Result<ssekit_smol::client::Item, ssekit_smol::Error>) -> Seen {
    use ssekit_smol::client::Item;
    match item {
        Ok(Item::Connected { attempt }) => Seen::Connected(attempt),
        Ok(Item::Event(ev)) => Seen::Event(ev),
        Ok(Item::Comment(c)) => Seen::Comment(c.to_string()),
        Ok(Item::Retry(ms)) => Seen::Retry(ms),
        Ok(Item::Disconnected(e)) => Seen::Disconnected(ended(&e)),
        Ok(Item::Reconnecting { after }) => Seen::Reconnecting(after),
        Ok(Item::Redirected { status, to }) => Seen::Redirected(status, to.to_string()),
        Ok(other) => Seen::Error(format!("unknown item {other:?}")),
        Err(e) => Seen::Error(error_label(e)),
    }
}

/// A network error: says "refused" when it does, and must be one line for people.
fn network(text: &str) -> String {
    assert!(!text.contains('\n'), "{text}");
    if text.to_lowercase().contains("refused") {
        "network: refused".into()
    } else {
        "network".into()
    }
}

fn ended(ended: &ssekit_smol::client::Ended) -> &'static str {
    use ssekit_smol::client::Ended;
    match ended {
        Ended::Clean => "clean",
        Ended::Truncated => "truncated",
        Ended::IdleTimeout => "idle",
        Ended::Refused(_) => "refused",
        Ended::Failed(ssekit_smol::Error::Http(e)) if e.is::<ssekit_http::NoResponse>() => {
            "no response"
        }
        _ => "failed",
    }
}

async fn gather<S>(mut items: S, want: usize, on_item: Option<OnItem>) -> Vec<Seen>
where
    S: futures_util::Stream<Item = Result<ssekit_smol::client::Item, ssekit_smol::Error>> + Unpin,
{
    let mut trace = Vec::new();
    while trace.len() < want {
        match items.next().await {
            Some(item) => {
                let item = seen(item);
                let stop = matches!(item, Seen::Error(_));
                if let Some(hook) = &on_item {
                    hook(trace.len(), &item);
                }
                trace.push(item);
                if stop {
                    break;
                }
            }
            None => break,
        }
    }
    trace
}

/// Runs a client of the given transport and returns what it reported.
pub fn client(side: Side, run: Run) -> Vec<Seen> {
    let deadline = run.deadline;
    match side {
        Side::Smol => {
            use ssekit_smol::client::EventSource;
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
            if let Some(limit) = run.response_timeout {
                source = source.response_timeout(limit);
            }
            let stream = source.stream();
            let fut = gather(stream, run.items, run.on_item);
            smol::block_on(within(deadline, fut))
        }
        Side::Hyper => {
            use ssekit_hyper::client::EventSource;
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
                if let Some(limit) = run.response_timeout {
                    source = source.response_timeout(limit);
                }
                let stream = source.stream();
                let fut = gather(stream, run.items, run.on_item);
                within(deadline, fut).await
            })
        }
    }
}

/// Fails a run that hangs instead of hanging the suite (runtime-neutral: async-io's timer).
pub async fn within<T>(limit: Duration, fut: impl Future<Output = T>) -> T {
    futures_lite::future::or(fut, async {
        async_io::Timer::after(limit).await;
        panic!("hung: the client run had no outcome after {limit:?}")
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

/// Everything but the events: the connection's life (connects, ends, reconnect waits).
pub fn connection_trace(seen: &[Seen]) -> Vec<&Seen> {
    seen.iter()
        .filter(|s| !matches!(s, Seen::Event(_)))
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

/// Builds a client of the given transport for `url` with `headers` and reports how the
/// builder refused it (`"request"`), or `Ok` when it was accepted.
pub fn build(side: Side, url: &str, headers: &[(&str, &str)]) -> Result<(), String> {
    match side {
        Side::Smol => {
            let mut source = ssekit_smol::client::EventSource::get(url).map_err(error_label)?;
            for (n, v) in headers {
                source = source.header(n, v).map_err(error_label)?;
            }
            Ok(())
        }
        Side::Hyper => {
            let mut source = ssekit_hyper::client::EventSource::get(url).map_err(error_label)?;
            for (n, v) in headers {
                source = source.header(n, v).map_err(error_label)?;
            }
            Ok(())
        }
    }
}

/// The result the ORS `slow` tool answers: 14 KB of text with spaces, line breaks and
/// multi-byte characters, so the 4096-byte chunks must fall on UTF-8 boundaries and must
/// not start with a space the decoder would strip.
pub fn big_result() -> ssekit::profile::ors::ToolResult {
    use ssekit::profile::ors::{ToolOutput, ToolResult};
    let text: String = (0..12_000)
        .map(|i| match i {
            _ if i % 7 == 0 => 'é',
            _ if i % 11 == 0 => ' ',
            _ if i % 13 == 0 => '\n',
            _ if i % 17 == 0 => '«',
            _ => 'x',
        })
        .collect();
    ToolResult::success(ToolOutput::text(text).reward(1.0).finished(true))
}

/// How long the ORS `slow` tool runs before it answers.
pub const SLOW_TOOL: Duration = Duration::from_millis(300);

/// An ORS `/kit/call` server of the given transport: the smol crate's `ors::Calls`, or the
/// hyper crate's `ors::Server` (a session is opened for it with its `ors::Client`). Tools:
/// `slow` answers [`big_result`] after [`SLOW_TOOL`], `fast` answers it at once, `broken`
/// cannot run. Returns the call URL and the headers a call needs.
pub fn serve_ors(side: Side) -> (String, Vec<(String, String)>) {
    match side {
        Side::Smol => {
            let calls = ssekit_smol::ors::Calls::with_options(
                ssekit::server::TaskConfig::new(ssekit_http::entropy::os_seed()),
                Duration::from_secs(5),
                4096,
            );
            let listener = smol::block_on(smol::net::TcpListener::bind("127.0.0.1:0")).unwrap();
            let addr = listener.local_addr().unwrap();
            let service =
                hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
                    let calls = calls.clone();
                    async move {
                        assert_eq!(req.uri().path(), "/kit/call");
                        let body = req.into_body().collect().await.unwrap().to_bytes();
                        let call: serde_json::Value = serde_json::from_slice(&body).unwrap();
                        let name = call["name"].as_str().unwrap_or_default().to_owned();
                        let body = calls.call(call["task_id"].as_str(), async move {
                            match name.as_str() {
                                "slow" => {
                                    async_io::Timer::after(SLOW_TOOL).await;
                                    Ok(big_result())
                                }
                                "fast" => Ok(big_result()),
                                _ => Err(format!("'{name}' cannot run")),
                            }
                        });
                        Ok::<_, Infallible>(ssekit_smol::server::response(body))
                    }
                });
            smol::spawn(ssekit_smol::server::serve(listener, service)).detach();
            (format!("http://{addr}/kit/call"), Vec::new())
        }
        Side::Hyper => {
            use ssekit_hyper::ors::{Client, Server, ServerConfig};
            let rt = tokio_rt();
            let listener = rt
                .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
                .unwrap();
            let addr = listener.local_addr().unwrap();
            let config = ServerConfig::default().keep_alive(Duration::from_secs(5));
            let server = Server::with_config(vec![Arc::new(KitEnv)], config);
            rt.spawn(ssekit_hyper::server::serve(listener, server));
            let base = format!("http://{addr}");
            let sid = rt
                .block_on(
                    Client::new(&base)
                        .unwrap()
                        .open_session("kit", &serde_json::json!({})),
                )
                .unwrap();
            (
                format!("{base}/kit/call"),
                vec![("x-session-id".to_owned(), sid)],
            )
        }
    }
}

/// The hyper ORS server's environment with the kit's tools.
struct KitEnv;

impl ssekit_hyper::ors::Environment for KitEnv {
    fn name(&self) -> &str {
        "kit"
    }
    fn splits(&self) -> Vec<ssekit_hyper::ors::Split> {
        vec![ssekit_hyper::ors::Split::new("test", "test")]
    }
    fn tasks(&self, split: &str) -> Option<Vec<serde_json::Value>> {
        (split == "test").then(|| vec![serde_json::json!({})])
    }
    fn tools(&self) -> Vec<ssekit_hyper::ors::ToolSpec> {
        use ssekit_hyper::ors::ToolSpec;
        vec![
            ToolSpec::new("slow", "answers a large result after a while", None),
            ToolSpec::new("fast", "answers the same result at once", None),
            ToolSpec::new("broken", "cannot run", None),
        ]
    }
    fn prompt(&self, _task: &serde_json::Value) -> String {
        "kit".into()
    }
    fn call(
        &self,
        _task: &serde_json::Value,
        tool: &str,
        _input: serde_json::Value,
    ) -> ssekit_hyper::ors::ToolFuture {
        let tool = tool.to_owned();
        Box::pin(async move {
            match tool.as_str() {
                "slow" => {
                    tokio::time::sleep(SLOW_TOOL).await;
                    Ok(big_result())
                }
                "fast" => Ok(big_result()),
                _ => Err(format!("'{tool}' cannot run")),
            }
        })
    }
}

/// What an ORS client of either transport did against an ORS server at `base`: opened a
/// session, called the `slow` tool with the first connection cut after two events, pinged,
/// deleted the session and pinged again.
#[derive(Debug)]
pub struct OrsRun {
    pub result: Result<ssekit::profile::ors::ToolResult, String>,
    pub trace: Vec<ssekit_http::ors::Trace>,
    pub ping: Result<(), String>,
    pub ping_after_delete: Result<(), String>,
}

fn ors_error(e: ssekit_http::Error) -> String {
    match e.status() {
        Some(s) => format!("status {s}"),
        None => e.to_string(),
    }
}

/// Runs [`OrsRun`]'s steps with the given transport's `ors::Client`.
pub fn ors_client(side: Side, base: &str) -> OrsRun {
    use ssekit_http::ors::CallOptions;
    let policy = fast_ors();
    let cut = CallOptions::default().cut_after(Some(2));
    let task = serde_json::json!({});
    let input = serde_json::json!({});
    macro_rules! steps {
        ($ors:expr) => {
            async {
                let ors = $ors.reconnect(policy);
                let sid = ors.open_session("kit", &task).await.map_err(ors_error)?;
                let mut trace = Vec::new();
                let result = ors
                    .call_tool_traced("kit", &sid, "slow", input, cut, |t| trace.push(t))
                    .await
                    .map_err(ors_error);
                let ping = ors.ping(&sid).await.map_err(ors_error);
                ors.delete(&sid).await.map_err(ors_error)?;
                let ping_after_delete = ors.ping(&sid).await.map_err(ors_error);
                Ok::<_, String>(OrsRun {
                    result,
                    trace,
                    ping,
                    ping_after_delete,
                })
            }
        };
    }
    let limit = Duration::from_secs(60); // a hang guard
    let run = match side {
        Side::Smol => {
            let ors = ssekit_smol::ors::Client::new(base).unwrap();
            smol::block_on(within(limit, steps!(ors)))
        }
        Side::Hyper => {
            let ors = ssekit_hyper::ors::Client::new(base).unwrap();
            tokio_rt().block_on(within(limit, steps!(ors)))
        }
    };
    run.unwrap()
}
