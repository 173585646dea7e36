//! The ORS server (`ssekit_http::ors::Server`) answering arbitrary requests in process, on a
//! runtime whose clock the input moves and whose `spawn` runs a task to its end at once:
//! arbitrary methods, paths, headers and bodies, interleaved with the official client's
//! sequence (sessions, tool calls with inputs that match their schemas or not) and resumes
//! by the task ids seen so far, from any session. Tight bounds (result cache, sessions,
//! bodies) so that they are hit. No panic, and for every request:
//! - an answer comes without waiting on anything but the clock (no hang);
//! - a JSON answer parses; an event stream decodes without error, ends cleanly (no event
//!   cut short) and, for `/call`, starts with `task_id` and ends with `end` or `error`;
//! - a resume that replays a result replays the very result its call streamed;
//! - memory stays bounded: the input is capped, and so is what the server may keep.
#![no_main]

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use arbitrary::{Arbitrary, Unstructured};
use bytes::Bytes;
use http_body_util::Full;
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};
use ssekit::{Decoder, Frame, Instant};
use ssekit_http::ors::{
    text_result, Environment, Server, ServerConfig, Split, ToolFuture, ToolSpec,
};
use ssekit_http::runtime::Runtime;

/// The longest input run: bounds the requests, hence the memory and time of one run.
const MAX_INPUT: usize = 64 << 10;

/// A clock moved by the input; `spawn` runs the task to its end (every task here is
/// ready at once, or waits for the clock, which does not move inside `spawn`).
#[derive(Clone, Default)]
struct Manual {
    now: Arc<AtomicU64>,
}

struct Sleep {
    now: Arc<AtomicU64>,
    at: u64,
}

impl Future for Sleep {
    type Output = ();
    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if self.now.load(Ordering::SeqCst) >= self.at {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

impl Runtime for Manual {
    type Sleep = Sleep;

    fn now(&self) -> Instant {
        Instant::from_millis(self.now.load(Ordering::SeqCst))
    }

    fn sleep_until(&self, at: Instant) -> Sleep {
        let at = u64::try_from(at.since_origin().as_millis()).unwrap_or(u64::MAX);
        Sleep {
            now: Arc::clone(&self.now),
            at,
        }
    }

    fn spawn<F: Future<Output = ()> + Send + 'static>(&self, future: F) {
        // Tools, setups and teardowns here never wait: polled a bounded number of times.
        let _ = poll_bounded(self, future);
    }
}

/// Polls `future` until it is ready, moving the clock a second whenever it is pending (a
/// keep-alive or a timer); `None` if it is still pending after that many steps: a hang.
fn poll_bounded<F: Future>(rt: &Manual, future: F) -> Option<F::Output> {
    let mut future = std::pin::pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    for _ in 0..64 {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return Some(out);
        }
        rt.now.fetch_add(1_000, Ordering::SeqCst);
    }
    None
}

/// `tools`: `echo` (any input), `big` (`size` bytes of text, so the result cache fills),
/// `spell` (needs a string `word`), `fail` (an `error` event).
struct Tools;

impl Environment for Tools {
    fn name(&self) -> &str {
        "tools"
    }

    fn splits(&self) -> Vec<Split> {
        vec![Split::new("test", "test")]
    }

    fn tasks(&self, split: &str) -> Option<Vec<Value>> {
        (split == "test").then(|| vec![json!({"q": 1}), json!({"q": 2})])
    }

    fn tools(&self) -> Vec<ToolSpec> {
        vec![
            ToolSpec::new("echo", "Echo", None),
            ToolSpec::new(
                "big",
                "Big",
                Some(
                    json!({"type": "object", "properties": {"size": {"type": "integer", "minimum": 0, "maximum": 3000}}}),
                ),
            ),
            ToolSpec::new(
                "spell",
                "Spell",
                Some(
                    json!({"type": "object", "properties": {"word": {"type": "string", "maxLength": 64}}, "required": ["word"]}),
                ),
            ),
            ToolSpec::new("fail", "Fail", Some(json!({"type": "object"}))),
        ]
    }

    fn prompt(&self, task: &Value) -> String {
        task.to_string()
    }

    fn call(&self, _task: &Value, tool: &str, input: Value) -> ToolFuture {
        let tool = tool.to_owned();
        Box::pin(async move {
            match tool.as_str() {
                "big" => {
                    let size = input["size"].as_u64().unwrap_or(0).min(3000) as usize;
                    Ok(text_result(&"x".repeat(size), None, false))
                }
                "spell" => Ok(text_result(
                    &input["word"].as_str().unwrap_or_default().to_uppercase(),
                    Some(1.0),
                    true,
                )),
                "fail" => Err(input.to_string()),
                _ => Ok(text_result(&input.to_string(), None, false)),
            }
        })
    }
}

#[derive(Arbitrary, Debug)]
enum Op {
    /// Anything: a method, a path, headers and a body, as bytes.
    Raw {
        method: Vec<u8>,
        path: Vec<u8>,
        headers: Vec<(Vec<u8>, Vec<u8>)>,
        body: Vec<u8>,
    },
    /// `POST /create_session`.
    NewSession,
    /// `POST /create` for a known session (or a made-up id), with a task by split or spec.
    Create { sid: u8, index: i8, spec: bool },
    /// `POST /tools/call` in a session: a tool, an input, maybe a task id seen before.
    Call {
        sid: u8,
        tool: u8,
        input: Input,
        resume: Option<u8>,
    },
    /// Another route of a session.
    Route { sid: u8, route: u8 },
    /// The clock moves.
    Wait(u16),
}

#[derive(Arbitrary, Debug)]
enum Input {
    Size(u16),
    Word(String),
    Wrong(u8),
    Json(String),
}

impl Input {
    fn value(&self) -> Value {
        match self {
            Input::Size(n) => json!({"size": n}),
            Input::Word(w) => json!({"word": w}),
            Input::Wrong(k) => match k % 4 {
                0 => json!({"wrd": "x"}),
                1 => json!({"word": 7}),
                2 => json!({"size": "33"}),
                _ => json!({"size": -1}),
            },
            Input::Json(text) => serde_json::from_str(text).unwrap_or(Value::Null),
        }
    }
}

const TOOLS: [&str; 5] = ["echo", "big", "spell", "fail", "nope"];
const ROUTES: [(&str, &str); 6] = [
    ("POST", "/ping"),
    ("GET", "/tools/prompt"),
    ("GET", "/tools/task_tools"),
    ("POST", "/delete"),
    ("GET", "/list_environments"),
    ("POST", "/tools/task_range"),
];

/// What one answer was.
enum Answer {
    Json,
    /// The named events of an event stream.
    Events(Vec<(String, String)>),
}

/// Sends one request and checks its answer is well formed.
fn send(server: &Server<Manual>, rt: &Manual, req: http::Request<Full<Bytes>>) -> Answer {
    let resp = poll_bounded(rt, server.handle(req)).expect("the server answered");
    let is_sse = resp
        .headers()
        .get(http::header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    let mut body = resp.into_body();
    let mut wire = Vec::new();
    let mut cx = Context::from_waker(Waker::noop());
    let mut pending = 0;
    loop {
        match http_body::Body::poll_frame(Pin::new(&mut body), &mut cx) {
            Poll::Ready(None) => break,
            Poll::Ready(Some(Ok(frame))) => {
                if let Ok(data) = frame.into_data() {
                    wire.extend_from_slice(&data);
                }
                assert!(wire.len() < 8 << 20, "an answer past any bound");
            }
            Poll::Ready(Some(Err(e))) => panic!("body error: {e}"),
            Poll::Pending => {
                // Only a timer (a keep-alive) may be waited for: move the clock.
                pending += 1;
                assert!(pending < 64, "the body never ended");
                rt.now.fetch_add(1_000, Ordering::SeqCst);
            }
        }
    }
    if !is_sse {
        serde_json::from_slice::<Value>(&wire).expect("a JSON answer parses");
        return Answer::Json;
    }
    let mut decoder = Decoder::new();
    decoder.feed_slice(&wire).expect("the stream decodes");
    let mut events = Vec::new();
    while let Some(frame) = decoder.next_frame().expect("the stream decodes") {
        if let Frame::Event(e) = frame {
            events.push((e.event_type().to_owned(), e.data().to_owned()));
        }
    }
    let end = decoder.finish();
    assert!(
        matches!(end, ssekit::StreamEnd::Clean),
        "the stream ends cleanly: {end:?}"
    );
    Answer::Events(events)
}

fn post(path: &str, sid: Option<&str>, body: Value) -> http::Request<Full<Bytes>> {
    let mut req = http::Request::post(path).header("content-type", "application/json");
    if let Some(sid) = sid {
        req = req.header("x-session-id", sid);
    }
    req.body(Full::new(Bytes::from(body.to_string())))
        .unwrap_or_default()
}

fn raw(
    method: &[u8],
    path: &[u8],
    headers: &[(Vec<u8>, Vec<u8>)],
    body: &[u8],
) -> Option<http::Request<Full<Bytes>>> {
    let method = http::Method::from_bytes(method).ok()?;
    let uri = http::Uri::try_from(path).ok()?;
    let mut req = http::Request::builder().method(method).uri(uri);
    for (name, value) in headers.iter().take(16) {
        let name = http::HeaderName::from_bytes(name).ok()?;
        let value = http::HeaderValue::from_bytes(value).ok()?;
        req = req.header(name, value);
    }
    req.body(Full::new(Bytes::copy_from_slice(body))).ok()
}

/// The result a call stream carries (its `chunk`s and `end`), if it ended in `end`.
fn result_of(events: &[(String, String)]) -> Option<String> {
    let (last, _) = events.last()?;
    (last == "end").then(|| {
        events
            .iter()
            .filter(|(e, _)| e == "chunk" || e == "end")
            .map(|(_, d)| d.as_str())
            .collect()
    })
}

fn run(ops: Vec<Op>) {
    let rt = Manual::default();
    let config = ServerConfig::default()
        .max_body(4096)
        .max_sessions(8)
        .max_task_spec_bytes(8192)
        .max_results(6)
        .max_result_bytes(12 << 10)
        .max_session_results(3)
        .max_session_result_bytes(6 << 10)
        .max_running_calls(4)
        .result_ttl(Duration::from_secs(30))
        .session_timeout(Duration::from_secs(120))
        .keep_alive(Duration::from_secs(5))
        .max_chunk(512);
    let server = Server::with_runtime(vec![Arc::new(Tools)], config, rt.clone());
    let mut sids: Vec<String> = Vec::new();
    // Each task id seen, with the result its call streamed.
    let mut tasks: Vec<(String, Option<String>)> = Vec::new();
    let pick = |list: &[String], i: u8| list.get(usize::from(i) % list.len().max(1)).cloned();
    for op in ops.into_iter().take(64) {
        match op {
            Op::Raw {
                method,
                path,
                headers,
                body,
            } => {
                if let Some(req) = raw(&method, &path, &headers, &body) {
                    send(&server, &rt, req);
                }
            }
            Op::NewSession => {
                let req = post("/create_session", None, Value::Null);
                if let Answer::Events(events) = send(&server, &rt, req) {
                    assert_eq!(events.first().map(|e| e.0.as_str()), Some("task_id"));
                    if let Some((_, sid)) = events.first() {
                        sids.push(sid.clone());
                    }
                }
            }
            Op::Create { sid, index, spec } => {
                let sid = pick(&sids, sid).unwrap_or_else(|| "made-up".to_owned());
                let body = if spec {
                    json!({"env_name": "tools", "task_spec": {"index": index}})
                } else {
                    json!({"env_name": "tools", "split": "test", "index": index})
                };
                send(&server, &rt, post("/create", Some(&sid), body));
            }
            Op::Call {
                sid,
                tool,
                input,
                resume,
            } => {
                let sid = pick(&sids, sid).unwrap_or_else(|| "made-up".to_owned());
                let name = TOOLS[usize::from(tool) % TOOLS.len()];
                let resumed = resume.and_then(|i| {
                    let ids: Vec<String> = tasks.iter().map(|t| t.0.clone()).collect();
                    pick(&ids, i)
                });
                let mut body = json!({"name": name, "input": input.value()});
                if let Some(id) = &resumed {
                    body["task_id"] = json!(id);
                }
                let answer = send(&server, &rt, post("/tools/call", Some(&sid), body));
                let Answer::Events(events) = answer else {
                    continue; // a 4xx or 503 in JSON
                };
                let first = events.first().map(|e| e.0.as_str());
                let last = events.last().map(|e| e.0.as_str());
                // A resume of an unknown id is one `error` event; every other stream
                // starts with `task_id`.
                if first != Some("error") || events.len() != 1 {
                    assert_eq!(first, Some("task_id"), "{events:?}");
                }
                assert!(matches!(last, Some("end" | "error")), "{events:?}");
                let result = result_of(&events);
                match resumed {
                    None => {
                        if let Some((_, id)) = events.first() {
                            tasks.push((id.clone(), result));
                            if tasks.len() > 256 {
                                tasks.remove(0);
                            }
                        }
                    }
                    Some(id) => {
                        // A replayed result is the one the call streamed.
                        if let Some(replayed) = result {
                            let original = tasks.iter().find(|t| t.0 == id);
                            assert_eq!(
                                original.and_then(|t| t.1.as_deref()),
                                Some(replayed.as_str())
                            );
                        }
                    }
                }
            }
            Op::Route { sid, route } => {
                let sid = pick(&sids, sid).unwrap_or_else(|| "made-up".to_owned());
                let (method, path) = ROUTES[usize::from(route) % ROUTES.len()];
                let body = json!({"split": "test", "start": 0, "stop": 1});
                let mut req = post(path, Some(&sid), body);
                *req.method_mut() =
                    http::Method::from_bytes(method.as_bytes()).unwrap_or(http::Method::POST);
                send(&server, &rt, req);
            }
            Op::Wait(ms) => {
                rt.now.fetch_add(u64::from(ms) * 50, Ordering::SeqCst);
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    if data.len() > MAX_INPUT {
        return;
    }
    if let Ok(ops) = Vec::<Op>::arbitrary_take_rest(Unstructured::new(data)) {
        run(ops);
    }
});
