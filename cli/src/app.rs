//! The demo server: the ORS API over the gsm8k example environment (and a tool that fails),
//! a Responses-API style stream at `POST /v1/responses` (with `"background": true`, kept and
//! resumed by `GET /v1/responses/{id}?stream=true&starting_after=N`), an Anthropic Messages
//! stream at `POST /v1/messages` (in `messages`), a plain event stream at
//! `GET /stream` for `tail`, `decode` and browsers, and a broadcast at `/events` (`POST`
//! publishes, `GET` subscribes). Written once over `ssekit-http`'s [`Runtime`]:
//! `serve --runtime hyper|smol` picks tokio or smol. With a shared store (`--store`),
//! several instances serve one API: sessions, calls and the broadcast are the same on all.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};

use hyper::body::Incoming;
use serde_json::{json, Value};
use ssekit::{Encoder, Event};
use ssekit_http::ors::{OrsBody, Server, ServerConfig};
use ssekit_http::responses::Background;
use ssekit_http::runtime::{Frames, Runtime};
use ssekit_http::server::SseBody;
use ssekit_http::server::{gap_event, last_event_id, response};
use ssekit_http::store::{MemoryStore, PublishError, SharedBroadcast, Store, SubscribeError};

use crate::environment::Demo;

/// The answer the fake model streams, word by word.
const ANSWER: &str = "Natalia sold 48 clips in April and 24 in May, so 72 clips in all.";

/// The largest request body the demo server reads, as the ORS server's default: a larger
/// one is answered 413 once this much has arrived, not read whole.
const MAX_BODY: usize = 1 << 20;

/// A request's body, read up to [`MAX_BODY`]; `Err` is the 413 to answer (or a 400 for a
/// body that broke off).
pub(crate) async fn read_body(body: Incoming) -> Result<Bytes, Response<OrsBody>> {
    match Limited::new(body, MAX_BODY).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(plain(
            StatusCode::PAYLOAD_TOO_LARGE,
            "request body too large",
        )),
        Err(_) => Err(plain(StatusCode::BAD_REQUEST, "request body broke off")),
    }
}

/// A JSON `{"detail": message}` answer, as the ORS server gives its errors.
fn plain(status: StatusCode, message: &str) -> Response<OrsBody> {
    json_response(status, &json!({ "detail": message }))
}

/// `value` as a JSON answer with `status`.
pub(crate) fn json_response(status: StatusCode, value: &Value) -> Response<OrsBody> {
    let mut resp = Response::new(
        Full::new(Bytes::from(value.to_string()))
            .map_err(|never| match never {})
            .boxed_unsync(),
    );
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    resp
}

/// How the demo app behaves.
#[derive(Clone)]
pub struct Settings {
    /// Keep-alive interval of every stream.
    pub keep_alive: Duration,
    /// The pause between two Responses-API events.
    pub delta_pause: Duration,
    /// Fault injection, see [`App::cut_ors_after`].
    pub cut_ors_after: Option<usize>,
    /// `X-API-Key` required on the ORS routes.
    pub api_key: Option<String>,
    /// The store shared with the other instances (`--store`).
    pub store: Option<Arc<dyn Store>>,
}

impl Settings {
    pub fn new(keep_alive: Duration, delta_pause: Duration) -> Self {
        Settings {
            keep_alive,
            delta_pause,
            cut_ors_after: None,
            api_key: None,
            store: None,
        }
    }
}

pub struct App<R> {
    ors: Server<R>,
    events: SharedBroadcast,
    /// Background responses, in the shared store or this process's memory.
    background: Background<R>,
    pub(crate) runtime: R,
    keep_alive: Duration,
    pub(crate) delta_pause: Duration,
    cut_ors_after: Option<usize>,
}

impl<R: Runtime> Clone for App<R> {
    fn clone(&self) -> Self {
        App {
            ors: self.ors.clone(),
            events: self.events.clone(),
            background: self.background.clone(),
            runtime: self.runtime.clone(),
            keep_alive: self.keep_alive,
            delta_pause: self.delta_pause,
            cut_ors_after: self.cut_ors_after,
        }
    }
}

impl<R: Runtime + Default> App<R> {
    pub fn new(settings: Settings) -> Self {
        let runtime = R::default();
        let mut config = ServerConfig::default()
            .keep_alive(settings.keep_alive)
            .api_key(settings.api_key);
        if let Some(store) = &settings.store {
            config = config.store(Arc::clone(store));
        }
        // The broadcast and background responses live in the shared store, or in this
        // process's memory.
        let events_store = settings
            .store
            .unwrap_or_else(|| Arc::new(MemoryStore::default()));
        App {
            ors: Server::with_runtime(vec![Arc::new(Demo)], config, runtime.clone()),
            events: SharedBroadcast::new(Arc::clone(&events_store), "events"),
            background: Background::new(events_store, runtime.clone()),
            runtime,
            keep_alive: settings.keep_alive,
            delta_pause: settings.delta_pause,
            cut_ors_after: settings.cut_ors_after,
        }
    }
}

impl<R: Runtime> App<R> {
    /// Fault injection (`cut_ors_after`): every ORS call that is not a resume (no `task_id`
    /// in its body) has its stream cut after that many SSE blocks (ended by a blank line:
    /// events, not the server's `: ping` lines) and a few bytes of the next.
    pub async fn handle(&self, req: Request<Incoming>) -> Response<OrsBody> {
        if req.uri().path() == "/v1/responses" && req.method() == Method::POST {
            return self.responses(req).await;
        }
        if let Some(id) = req.uri().path().strip_prefix("/v1/responses/")
            && req.method() == Method::GET
        {
            return self.resume_response(id, req.uri()).await;
        }
        if req.uri().path() == "/v1/messages" && req.method() == Method::POST {
            return crate::messages::handle(self, req).await;
        }
        if req.uri().path() == "/stream" && req.method() == Method::GET {
            return self.ticks(&req);
        }
        if req.uri().path() == "/events" {
            return self.broadcast(req).await;
        }
        match self.cut_ors_after {
            Some(blocks) if req.method() == Method::POST && req.uri().path().ends_with("/call") => {
                let (parts, body) = req.into_parts();
                let bytes = match read_body(body).await {
                    Ok(bytes) => bytes,
                    Err(refused) => return refused,
                };
                let resume = serde_json::from_slice::<Value>(&bytes)
                    .is_ok_and(|v| v.get("task_id").is_some());
                let resp = self
                    .ors
                    .handle(Request::from_parts(parts, Full::new(bytes)))
                    .await;
                if resume {
                    resp
                } else {
                    resp.map(|body| Cut::new(body, blocks).boxed_unsync())
                }
            }
            _ => self.ors.handle(req).await,
        }
    }

    /// A Responses-API stream with ids `1..n`. `Last-Event-ID: k` resumes at `k+1` (the
    /// stream is a pure function of the request, so resuming is recomputing). A first
    /// connection with `?cut_after=N` sends N events and half of the next, then ends the
    /// body: a truncation, on purpose; with `?stop_after=N` it ends cleanly after N events,
    /// before the terminal one.
    async fn responses(&self, req: Request<Incoming>) -> Response<OrsBody> {
        let resume = last_event_id(req.headers()).and_then(|id| id.parse::<usize>().ok());
        let first_connection = |name: &str| {
            query_number(req.uri(), name)
                .and_then(|n| usize::try_from(n).ok())
                .filter(|_| resume.is_none())
        };
        let (cut, stop) = (
            first_connection("cut_after"),
            first_connection("stop_after"),
        );
        let input = match read_body(req.into_body()).await {
            Ok(body) => serde_json::from_slice::<Value>(&body).unwrap_or(Value::Null),
            Err(refused) => return refused,
        };
        let prompt = input["input"].as_str().unwrap_or_default().to_owned();
        if input["background"] == Value::Bool(true) {
            return self.background_response(&prompt, cut).await;
        }
        let mut frames: Vec<Bytes> = encoded(&responses_events("resp_demo", &prompt))
            .into_iter()
            .skip(resume.unwrap_or(0))
            .collect();
        if let Some(n) = stop {
            frames.truncate(n);
        }
        if let Some(n) = cut
            && let Some(next) = frames.get(n)
        {
            let half = next.slice(..next.len() / 2);
            frames.truncate(n);
            frames.push(half);
        }
        self.stream(self.paced(frames))
    }

    /// `frames` one at a time, each after the pause between two events.
    fn paced(&self, frames: Vec<Bytes>) -> Frames {
        let (pause, runtime) = (self.delta_pause, self.runtime.clone());
        Box::pin(futures_util::stream::unfold(
            frames.into_iter(),
            move |mut it| {
                let sleep = runtime.sleep(pause);
                async move {
                    let frame = it.next()?;
                    sleep.await;
                    Some((frame, it))
                }
            },
        ))
    }

    /// A background response: made to its end whether or not the client reads it, kept in
    /// the store, and streamed to this client from its start. Its id is new; a cut client
    /// resumes with `GET /v1/responses/{id}?stream=true&starting_after=N`, on any instance.
    /// With `cut` (`?cut_after=N`) this client's stream is cut inside event N + 1, as a
    /// dropped connection would; the response is still made to its end.
    async fn background_response(&self, prompt: &str, cut: Option<usize>) -> Response<OrsBody> {
        let nonce: [u8; 12] = ssekit_http::entropy::os_seed();
        let id: String = nonce.iter().map(|b| format!("{b:02x}")).collect();
        let id = format!("resp_{id}");
        let frames = encoded(&responses_events(&id, prompt));
        if let Err(e) = self.background.start(&id, self.paced(frames)).await {
            return plain(StatusCode::SERVICE_UNAVAILABLE, &e.to_string());
        }
        match self.background.follow(&id, None).await {
            Ok(Ok(frames)) => match cut {
                Some(n) => {
                    let torn = futures_util::stream::iter([Bytes::from_static(
                        b"event: response.output_text.delta\ndata: {\"ty",
                    )]);
                    let frames = futures_util::StreamExt::chain(
                        futures_util::StreamExt::take(frames, n),
                        torn,
                    );
                    self.stream(Box::pin(frames))
                }
                None => self.stream(frames),
            },
            Ok(Err(unknown)) => plain(StatusCode::SERVICE_UNAVAILABLE, &unknown.to_string()),
            Err(e) => plain(StatusCode::SERVICE_UNAVAILABLE, &e.to_string()),
        }
    }

    /// `GET /v1/responses/{id}?stream=true&starting_after=N`: the events of a background
    /// response after sequence number `N` (all without it), then the rest as they are made.
    async fn resume_response(&self, id: &str, uri: &http::Uri) -> Response<OrsBody> {
        if query_value(uri, "stream") != Some("true") {
            return openai_error(
                StatusCode::BAD_REQUEST,
                "this server keeps background responses as streams: add ?stream=true",
            );
        }
        let after = match query_value(uri, "starting_after") {
            None => None,
            Some(n) => match n.parse::<u64>() {
                Ok(n) => Some(n),
                Err(_) => {
                    return openai_error(
                        StatusCode::BAD_REQUEST,
                        "starting_after is a sequence number (an integer)",
                    )
                }
            },
        };
        match self.background.follow(id, after).await {
            Ok(Ok(frames)) => self.stream(frames),
            Ok(Err(unknown)) => openai_error(StatusCode::NOT_FOUND, &format!("{unknown}: {id:?}")),
            Err(e) => openai_error(StatusCode::SERVICE_UNAVAILABLE, &e.to_string()),
        }
    }
}

/// An error answer in OpenAI's shape (`{"error": {"message", "type"}}`), which its SDK
/// raises with the message.
fn openai_error(status: StatusCode, message: &str) -> Response<OrsBody> {
    let body = json!({"error": {"message": message, "type": "invalid_request_error"}});
    json_response(status, &body)
}

/// Each `(type, data)` as an event whose id is its sequence number plus one.
fn encoded(events: &[(String, Value)]) -> Vec<Bytes> {
    events
        .iter()
        .enumerate()
        .filter_map(|(i, (kind, data))| {
            let event = Event::builder()
                .event(kind.clone())
                .and_then(|b| b.id((i + 1).to_string()))
                .ok()?
                .data(data.to_string())
                .build();
            let mut out = BytesMut::new();
            Encoder::new().encode(&event, &mut out).ok()?;
            Some(out.freeze())
        })
        .collect()
}

impl<R: Runtime> App<R> {
    /// Ends this instance's part in a rolling restart (see [`Server::shutdown`]): new ORS
    /// calls are refused with 503, running ones get `deadline` to finish, then every open
    /// stream ends after `retry: 250`. Returns how many calls were still running.
    pub async fn shutdown(&self, deadline: Duration) -> usize {
        self.ors.shutdown(deadline).await
    }

    /// An event stream of `frames` with the keep-alive, ended by [`shutdown`](Self::shutdown).
    pub(crate) fn stream(&self, frames: Frames) -> Response<OrsBody> {
        let frames = self.ors.until_shutdown(frames);
        response(
            SseBody::from_bytes_on(self.runtime.clone(), frames)
                .keep_alive(self.keep_alive)
                .boxed_unsync(),
        )
    }

    /// `/events`: `POST` publishes the request body as one event's data (`?event=NAME` names
    /// it) and answers `{"id": ...}`; `GET` subscribes, after `Last-Event-ID` when given (a
    /// subscriber that fell more than 1024 events behind gets what the log still holds).
    /// With `--store`, on every instance sharing it.
    async fn broadcast(&self, req: Request<Incoming>) -> Response<OrsBody> {
        if req.method() == Method::GET {
            let after = last_event_id(req.headers()).map(str::to_owned);
            let runtime = self.runtime.clone();
            let subscribed = match self.events.subscribe(after.as_deref(), runtime).await {
                // Fell behind the log (it keeps the latest 1024): a gap event says so, then
                // what the log still holds.
                Err(SubscribeError::Gap) => {
                    let runtime = self.runtime.clone();
                    let gap = gap_event(None, after.as_deref());
                    self.events
                        .subscribe(Some("0-0"), runtime)
                        .await
                        .map(|rest| -> Frames {
                            Box::pin(futures_util::StreamExt::chain(
                                futures_util::stream::iter([gap]),
                                rest,
                            ))
                        })
                }
                other => other,
            };
            return match subscribed {
                Ok(frames) => self.stream(frames),
                Err(e) => plain(StatusCode::SERVICE_UNAVAILABLE, &e.to_string()),
            };
        }
        if req.method() != Method::POST {
            return plain(
                StatusCode::METHOD_NOT_ALLOWED,
                "GET subscribes, POST publishes",
            );
        }
        let name = query_value(req.uri(), "event").map(str::to_owned);
        let body = match read_body(req.into_body()).await {
            Ok(body) => body,
            Err(refused) => return refused,
        };
        let Ok(data) = String::from_utf8(body.to_vec()) else {
            return plain(StatusCode::BAD_REQUEST, "the event data is not UTF-8");
        };
        let mut event = Event::builder();
        if let Some(name) = name {
            event = match event.event(name) {
                Ok(event) => event,
                Err(e) => return plain(StatusCode::BAD_REQUEST, &e.to_string()),
            };
        }
        match self.events.publish(&event.data(data).build()).await {
            Ok(id) => json_response(StatusCode::OK, &json!({ "id": id })),
            Err(PublishError::Store(e)) => plain(StatusCode::SERVICE_UNAVAILABLE, &e.to_string()),
            Err(e) => plain(StatusCode::BAD_REQUEST, &e.to_string()),
        }
    }

    /// `GET /stream`: `retry: 1000`, then `tick` events `{"n": N}` with ids N = 1, 2, 3, …,
    /// the first at once and then one every `?interval_ms=` (default 1000, at most a
    /// minute), resumed after `Last-Event-ID`. With `?count=N` the stream ends cleanly after
    /// event N, and a reconnect from N on is answered `204 No Content`, so that a client
    /// stops, as a browser's `EventSource` does. With `?delay_ms=D` (at most five minutes)
    /// the body says nothing but keep-alives for D ms first: a silent stream, as a slow tool
    /// call's, to test what lies between the server and its client.
    fn ticks(&self, req: &Request<Incoming>) -> Response<OrsBody> {
        let after = last_event_id(req.headers())
            .and_then(|id| id.trim().parse::<u64>().ok())
            .unwrap_or(0);
        let count = query_number(req.uri(), "count");
        let interval = Duration::from_millis(
            query_number(req.uri(), "interval_ms")
                .unwrap_or(1_000)
                .min(60_000),
        );
        if count.is_some_and(|count| after >= count) {
            let mut done = Response::new(empty());
            *done.status_mut() = StatusCode::NO_CONTENT;
            return done;
        }
        let last = count.unwrap_or(u64::MAX);
        let retry = Bytes::from_static(b"retry: 1000\n\n");
        let runtime = self.runtime.clone();
        let ticks = futures_util::stream::unfold(after.saturating_add(1), move |n| {
            let sleep = (n > after.saturating_add(1)).then(|| runtime.sleep(interval));
            async move {
                if n > last {
                    return None;
                }
                if let Some(sleep) = sleep {
                    sleep.await;
                }
                Some((tick(n), n.saturating_add(1)))
            }
        });
        let delay = Duration::from_millis(query_number(req.uri(), "delay_ms").unwrap_or(0))
            .min(Duration::from_secs(300));
        let silence = self.runtime.sleep(delay);
        let frames = futures_util::StreamExt::chain(futures_util::stream::iter([retry]), ticks);
        let frames = futures_util::StreamExt::flatten(futures_util::stream::once(async move {
            silence.await;
            frames
        }));
        self.stream(Box::pin(frames))
    }
}

/// Event `n` of `GET /stream`, encoded.
fn tick(n: u64) -> Bytes {
    let mut out = BytesMut::new();
    let event = Event::builder()
        .event("tick")
        .and_then(|b| b.id(n.to_string()))
        .map(|b| b.data(format!("{{\"n\":{n}}}")).build());
    if let Ok(event) = event {
        // A tick has no CR or LF to refuse.
        let _ = Encoder::new().encode(&event, &mut out);
    }
    out.freeze()
}

/// An empty body.
fn empty() -> OrsBody {
    Full::new(Bytes::new())
        .map_err(|never| match never {})
        .boxed_unsync()
}

/// The number in query parameter `name` (`?name=12`), if there is one.
pub(crate) fn query_number(uri: &http::Uri, name: &str) -> Option<u64> {
    query_value(uri, name)?.parse().ok()
}

/// The value of query parameter `name` (`?name=value`, taken as it is), if there is one.
fn query_value<'u>(uri: &'u http::Uri, name: &str) -> Option<&'u str> {
    uri.query()
        .into_iter()
        .flat_map(|q| q.split('&'))
        .find_map(|pair| pair.strip_prefix(name)?.strip_prefix('='))
}

/// `(type, data)` of every event of response `id`, each data with its `sequence_number`.
fn responses_events(id: &str, prompt: &str) -> Vec<(String, Value)> {
    let mut out = vec![
        (
            "response.created".to_owned(),
            json!({"type": "response.created", "response": {"id": id, "status": "in_progress", "output": []}, "input": prompt}),
        ),
        (
            "response.in_progress".to_owned(),
            json!({"type": "response.in_progress", "response": {"id": id, "status": "in_progress"}}),
        ),
    ];
    let words: Vec<&str> = ANSWER.split_inclusive(' ').collect();
    for word in words {
        out.push((
            "response.output_text.delta".to_owned(),
            json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "delta": word}),
        ));
    }
    out.push((
        "response.completed".to_owned(),
        json!({"type": "response.completed", "response": {"id": id, "status": "completed", "error": null}}),
    ));
    for (n, (_, data)) in out.iter_mut().enumerate() {
        data["sequence_number"] = json!(n);
    }
    out
}

impl<R: Runtime> hyper::service::Service<Request<Incoming>> for App<R> {
    type Response = Response<OrsBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn call(&self, req: Request<Incoming>) -> Self::Future {
        let app = self.clone();
        Box::pin(async move { Ok(app.handle(req).await) })
    }
}

/// The full answer text, for the demo's check.
pub fn expected_answer() -> &'static str {
    ANSWER
}

/// A body that ends, cleanly at the HTTP level but inside an SSE event, after `blocks` blocks
/// and a few bytes of the next: what a dropped proxy connection looks like to a client.
struct Cut {
    inner: OrsBody,
    blocks_left: usize,
    tail_left: usize,
    after_lf: bool,
    done: bool,
}

impl Cut {
    fn new(inner: OrsBody, blocks: usize) -> Self {
        Cut {
            inner,
            blocks_left: blocks,
            tail_left: 10,
            after_lf: false,
            done: false,
        }
    }
}

impl http_body::Body for Cut {
    type Data = Bytes;
    type Error = ssekit_http::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        use std::task::Poll;
        if self.done {
            return Poll::Ready(None);
        }
        let frame = match Pin::new(&mut self.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => frame,
            other => return other,
        };
        let Ok(data) = frame.into_data() else {
            return Poll::Ready(None);
        };
        let mut keep = data.len();
        for (i, &b) in data.iter().enumerate() {
            if self.blocks_left == 0 {
                if self.tail_left == 0 {
                    keep = i;
                    self.done = true;
                    break;
                }
                self.tail_left -= 1;
                continue;
            }
            if b == b'\n' && self.after_lf {
                self.blocks_left -= 1;
            }
            self.after_lf = b == b'\n';
        }
        Poll::Ready(Some(Ok(http_body::Frame::data(data.slice(..keep)))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn cut_ends_inside_the_block_after_n_blocks() {
        let frames = [
            "event: a\ndata: 1\n",
            "\n: ping\nevent: b\ndata: 2\n\nevent: c\ndata: 3\n\n",
        ];
        let inner = ssekit_hyper::server::SseBody::from_bytes(futures_util::stream::iter(
            frames.map(|s| Bytes::from_static(s.as_bytes())),
        ))
        .boxed_unsync();
        let out = Cut::new(inner, 2).collect().await.unwrap().to_bytes();
        // The server's pings end in no blank line, so they are not blocks.
        assert_eq!(
            &out[..],
            b"event: a\ndata: 1\n\n: ping\nevent: b\ndata: 2\n\nevent: c\nd"
        );
    }
}
