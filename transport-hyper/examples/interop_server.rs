//! The server side of the interop suite (`interop/run`): what real peers (a browser's
//! `EventSource`, Node's `eventsource`, `httpx-sse`, the `openai` SDK) are pointed at.
//!
//! ```text
//! cargo run -p ssekit-hyper --example interop_server -- 127.0.0.1:0
//! GET  /                  a page whose EventSource records every event into window.received
//! GET  /events?run=NAME   the reconnect scenario (below), one per NAME
//! GET  /log?run=NAME      what each connection of that run sent: Last-Event-ID, times
//! POST /v1/responses      a Responses-API stream: text deltas, then a function call
//! ```
//!
//! The scenario: the first connection gets `retry: 700`, event 1 (multi-line data), event 2
//! (`greeting`, non-ASCII), event 3 (`custom.update`), with keep-alive comments between them,
//! and then the server ends the response. Events 4 and 5 are published while the client is
//! away (into a `ReplayBuffer`). A reconnect with `Last-Event-ID: 3` is served 4 and 5 from the
//! buffer, then the live event 6 (`done`), and the stream stays open with keep-alives.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use serde_json::{json, Value};
use ssekit::server::ReplayBuffer;
use ssekit::{Encoder, Event};
use ssekit_hyper::server::{channel, last_event_id, response, serve, SseBody};

type Body = http_body_util::combinators::UnsyncBoxBody<Bytes, ssekit_hyper::Error>;

const PAGE: &str = r#"<!doctype html>
<html><head><meta charset="utf-8"><title>ssekit interop</title></head>
<body><pre id="out"></pre>
<script>
window.received = [];
window.errors = 0;
window.finished = false;
const es = new EventSource('/events?run=' + encodeURIComponent(location.hash.slice(1) || 'browser'));
const record = (e) => {
  window.received.push({type: e.type, data: e.data, lastEventId: e.lastEventId});
  document.getElementById('out').textContent += e.type + ' [' + e.lastEventId + '] ' + e.data + '\n';
  if (e.type === 'done') { es.close(); window.finished = true; }
};
for (const t of ['message', 'greeting', 'custom.update', 'done']) es.addEventListener(t, record);
es.onerror = () => { window.errors += 1; };
</script></body></html>
"#;

/// Per run: the replay buffer and each connection's log.
#[derive(Default)]
struct Run {
    replay: Option<ReplayBuffer>,
    connections: Vec<Value>,
    first_ended_ms: Option<u128>,
}

#[derive(Clone)]
struct State {
    runs: Arc<Mutex<HashMap<String, Run>>>,
    started: Instant,
}

impl State {
    fn ms(&self) -> u128 {
        self.started.elapsed().as_millis()
    }
    fn with_run<T>(&self, name: &str, f: impl FnOnce(&mut Run) -> T) -> T {
        let mut runs = self.runs.lock().unwrap_or_else(PoisonError::into_inner);
        f(runs.entry(name.to_owned()).or_default())
    }
}

fn event(id: &str, kind: Option<&str>, data: &str) -> Event {
    let mut b = Event::builder();
    if let Some(kind) = kind {
        b = b.event(kind.to_owned()).expect("a valid event type");
    }
    b.id(id.to_owned())
        .expect("a valid id")
        .data(data.to_owned())
        .build()
}

/// The six events of the scenario, in order.
fn scenario() -> Vec<Event> {
    vec![
        event("1", None, "first line\nsecond line\n\nafter an empty line"),
        event(
            "2",
            Some("greeting"),
            "héllo wörld — ünïcødé ✓ 日本語 🚀 Ελληνικά",
        ),
        event(
            "3",
            Some("custom.update"),
            r#"{"n":3,"text":"spaces  inside and a trailing space "}"#,
        ),
        event("4", Some("custom.update"), r#"{"n":4,"missed":true}"#),
        event("5", None, "  two leading spaces and a tab\tinside"),
        event("6", Some("done"), "bye"),
    ]
}

fn query_run(req: &Request<Incoming>) -> String {
    req.uri()
        .query()
        .and_then(|q| q.split('&').find_map(|kv| kv.strip_prefix("run=")))
        .unwrap_or("default")
        .to_owned()
}

fn full(status: StatusCode, content_type: &str, body: impl Into<Bytes>) -> Response<Body> {
    let mut resp = Response::new(
        Full::new(body.into())
            .map_err(|never: Infallible| match never {})
            .boxed_unsync(),
    );
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        "content-type",
        content_type.parse().expect("a header value"),
    );
    resp
}

async fn events(state: State, req: Request<Incoming>) -> Response<Body> {
    let run = query_run(&req);
    let lei = last_event_id(req.headers()).map(str::to_owned);
    let now = state.ms();
    let n = state.with_run(&run, |r| {
        r.connections
            .push(json!({"last_event_id": lei, "at_ms": now, "gap_ms": r.first_ended_ms.map(|e| now.saturating_sub(e))}));
        r.connections.len()
    });
    let (tx, body) = channel(16);
    let body = body.keep_alive(Duration::from_millis(100));
    let all = scenario();
    let pause = Duration::from_millis(350);
    tokio::spawn(async move {
        if n == 1 {
            state.with_run(&run, |r| r.replay = Some(ReplayBuffer::new(64, 1 << 20)));
            for (i, ev) in all.iter().take(3).enumerate() {
                let Some(wire) = state.with_run(&run, |r| r.replay.as_mut()?.push(ev).ok()) else {
                    return;
                };
                let wire = if i == 0 {
                    let mut out = BytesMut::new();
                    let _ = Encoder::new().retry(700, &mut out);
                    out.extend_from_slice(&wire);
                    out.freeze()
                } else {
                    wire
                };
                if tx.send_bytes(wire).await.is_err() {
                    return;
                }
                tokio::time::sleep(pause).await;
            }
            // Published while this client is away: only the replay buffer has them.
            state.with_run(&run, |r| {
                if let Some(replay) = r.replay.as_mut() {
                    for ev in &all[3..5] {
                        let _ = replay.push(ev);
                    }
                }
                r.first_ended_ms = Some(state.ms());
            });
            drop(tx); // the server-side disconnect
        } else if n == 2 {
            let missed: Vec<Bytes> = state.with_run(&run, |r| match (r.replay.as_ref(), &lei) {
                (Some(replay), Some(id)) => {
                    replay.since(id).map(|it| it.collect()).unwrap_or_default()
                }
                _ => Vec::new(),
            });
            for wire in missed {
                if tx.send_bytes(wire).await.is_err() {
                    return;
                }
            }
            tokio::time::sleep(pause).await;
            let Some(wire) = state.with_run(&run, |r| r.replay.as_mut()?.push(&all[5]).ok()) else {
                return;
            };
            if tx.send_bytes(wire).await.is_err() {
                return;
            }
            // Stay open (keep-alives) until the client leaves, 30 s at most.
            let _ = tokio::time::timeout(Duration::from_secs(30), tx.closed()).await;
        }
        // A third connection gets an empty stream that ends at once.
    });
    response(body.boxed_unsync())
}

/// `(type, data)` of a Responses-API stream: a message with text deltas, then a function call.
fn responses_events(model: &str, input: &Value) -> Vec<Value> {
    let id = "resp_interop_1";
    let text_parts = ["The weather ", "in Zürich ", "is — let me ", "check ☀️."];
    let text: String = text_parts.concat();
    let args_parts = [r#"{"city":"#, r#""Zürich","#, r#""unit":"c"}"#];
    let args: String = args_parts.concat();
    let message_item = |status: &str, text: &str| {
        json!({"id": "msg_1", "type": "message", "status": status, "role": "assistant",
               "content": if text.is_empty() { json!([]) } else { json!([{"type": "output_text", "text": text, "annotations": []}]) }})
    };
    let call_item = |status: &str, args: &str| {
        json!({"id": "fc_1", "type": "function_call", "status": status, "call_id": "call_1",
               "name": "get_weather", "arguments": args})
    };
    let response = |status: &str, output: Value| {
        json!({"id": id, "object": "response", "created_at": 1_700_000_000, "status": status,
               "model": model, "output": output, "parallel_tool_calls": true, "tool_choice": "auto",
               "tools": [], "error": null, "incomplete_details": null, "instructions": null,
               "metadata": {}, "temperature": 1.0, "top_p": 1.0, "input": input,
               "usage": if status == "completed" { json!({"input_tokens": 5, "output_tokens": 12, "total_tokens": 17,
                   "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}}) } else { Value::Null }})
    };
    let mut out = vec![
        json!({"type": "response.created", "response": response("in_progress", json!([]))}),
        json!({"type": "response.in_progress", "response": response("in_progress", json!([]))}),
        json!({"type": "response.output_item.added", "output_index": 0, "item": message_item("in_progress", "")}),
        json!({"type": "response.content_part.added", "item_id": "msg_1", "output_index": 0, "content_index": 0,
               "part": {"type": "output_text", "text": "", "annotations": []}}),
    ];
    for d in text_parts {
        out.push(
            json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0,
                        "content_index": 0, "delta": d, "logprobs": []}),
        );
    }
    out.extend([
        json!({"type": "response.output_text.done", "item_id": "msg_1", "output_index": 0, "content_index": 0,
               "text": text, "logprobs": []}),
        json!({"type": "response.content_part.done", "item_id": "msg_1", "output_index": 0, "content_index": 0,
               "part": {"type": "output_text", "text": text, "annotations": []}}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": message_item("completed", &text)}),
        json!({"type": "response.output_item.added", "output_index": 1, "item": call_item("in_progress", "")}),
    ]);
    for d in args_parts {
        out.push(json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 1, "delta": d}));
    }
    out.extend([
        json!({"type": "response.function_call_arguments.done", "item_id": "fc_1", "output_index": 1, "arguments": args}),
        json!({"type": "response.output_item.done", "output_index": 1, "item": call_item("completed", &args)}),
        json!({"type": "response.completed", "response": response("completed",
               json!([message_item("completed", &text), call_item("completed", &args)]))}),
    ]);
    for (i, ev) in out.iter_mut().enumerate() {
        ev["sequence_number"] = json!(i);
    }
    out
}

async fn responses(req: Request<Incoming>) -> Response<Body> {
    let body = req
        .into_body()
        .collect()
        .await
        .map(|c| c.to_bytes())
        .unwrap_or_default();
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let model = body["model"].as_str().unwrap_or("interop-model").to_owned();
    let frames: Vec<Event> = responses_events(&model, &body["input"])
        .into_iter()
        .filter_map(|ev| {
            let kind = ev["type"].as_str()?.to_owned();
            Some(
                Event::builder()
                    .event(kind)
                    .ok()?
                    .data(ev.to_string())
                    .build(),
            )
        })
        .collect();
    let stream = futures_util::stream::unfold(frames.into_iter(), |mut it| async move {
        let ev = it.next()?;
        tokio::time::sleep(Duration::from_millis(5)).await;
        Some((ev, it))
    });
    response(
        SseBody::new(stream)
            .keep_alive(Duration::from_secs(10))
            .boxed_unsync(),
    )
}

async fn handle(state: State, req: Request<Incoming>) -> Response<Body> {
    match (req.method(), req.uri().path()) {
        (&Method::GET, "/") => full(StatusCode::OK, "text/html; charset=utf-8", PAGE),
        (&Method::GET, "/events") => events(state, req).await,
        (&Method::GET, "/log") => {
            let run = query_run(&req);
            let log = state.with_run(&run, |r| json!({"connections": r.connections}));
            full(StatusCode::OK, "application/json", log.to_string())
        }
        (&Method::POST, "/v1/responses") => responses(req).await,
        _ => full(StatusCode::NOT_FOUND, "text/plain", "not found"),
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:0".to_owned());
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    println!("listening on http://{}", listener.local_addr()?);
    let state = State {
        runs: Arc::default(),
        started: Instant::now(),
    };
    serve(
        listener,
        service_fn(move |req| {
            let state = state.clone();
            async move { Ok::<_, Infallible>(handle(state, req).await) }
        }),
    )
    .await
}
