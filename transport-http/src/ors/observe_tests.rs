//! The ORS server's metrics and log lines, on the hand-moved clock of
//! [`Manual`](crate::runtime::manual::Manual) (tools run to the end when spawned): a call
//! counted running and then finished, a resume, refusals by reason, evictions, and the
//! `info` line that ends a call. One thread, a local recorder and a local subscriber: no
//! global state, no timing.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::Request;
use http_body_util::{BodyExt, Full};
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use serde_json::{json, Value};
use ssekit::server::TaskConfig;

use super::{text_result, Calls, Environment, Server, ServerConfig, Split, ToolFuture, ToolSpec};
use crate::entropy::os_seed;
use crate::observe::{
    ORS_CALLS_RUNNING, ORS_CALLS_TOTAL, ORS_RESULT_BYTES, ORS_RESULT_EVICTIONS_TOTAL,
    ORS_RESUMES_TOTAL, REFUSED_TOTAL,
};
use crate::runtime::manual::Manual;

/// The recorder's values, summed over snapshots (a snapshot resets what it reads, counters
/// and gauges alike, so the sum is the value), by name and `label=value` (or `""`).
#[derive(Clone)]
struct Meters {
    snapshotter: Snapshotter,
    seen: Arc<Mutex<HashMap<(String, String), f64>>>,
}

impl Meters {
    fn new(recorder: &DebuggingRecorder) -> Self {
        Meters {
            snapshotter: recorder.snapshotter(),
            seen: Arc::default(),
        }
    }

    #[allow(clippy::cast_precision_loss)]
    fn get(&self, name: &str, label: &str) -> f64 {
        let mut seen = self.seen.lock().unwrap();
        for (key, _, _, value) in self.snapshotter.snapshot().into_vec() {
            let labels: Vec<String> = key
                .key()
                .labels()
                .map(|l| format!("{}={}", l.key(), l.value()))
                .collect();
            let entry = seen
                .entry((key.key().name().to_owned(), labels.join(",")))
                .or_default();
            match value {
                DebugValue::Counter(n) => *entry += n as f64,
                DebugValue::Gauge(g) => *entry += g.into_inner(),
                DebugValue::Histogram(_) => {}
            }
        }
        seen.get(&(name.to_owned(), label.to_owned()))
            .copied()
            .unwrap_or(0.0)
    }
}

/// An environment with one tool, `echo`, which notes the running-calls gauge it sees.
struct Echo {
    meters: Option<Meters>,
    running_seen: Arc<Mutex<Vec<f64>>>,
}

impl Environment for Echo {
    fn name(&self) -> &str {
        "echo"
    }
    fn splits(&self) -> Vec<Split> {
        vec![Split::new("test", "test")]
    }
    fn tasks(&self, split: &str) -> Option<Vec<Value>> {
        (split == "test").then(|| vec![json!({})])
    }
    fn tools(&self) -> Vec<ToolSpec> {
        vec![ToolSpec::new("echo", "Echo the input", None)]
    }
    fn prompt(&self, _task: &Value) -> String {
        "Say something.".into()
    }
    fn call(&self, _task: &Value, _tool: &str, input: Value) -> ToolFuture {
        if let Some(meters) = &self.meters {
            let running = meters.get(ORS_CALLS_RUNNING, "");
            self.running_seen.lock().unwrap().push(running);
        }
        Box::pin(async move { Ok(text_result(&input.to_string(), None, true)) })
    }
}

fn server(meters: Option<Meters>, config: ServerConfig) -> (Server<Manual>, Arc<Mutex<Vec<f64>>>) {
    let running_seen = Arc::new(Mutex::new(Vec::new()));
    let echo = Echo {
        meters,
        running_seen: Arc::clone(&running_seen),
    };
    let server = Server::with_runtime(vec![Arc::new(echo)], config, Manual::default());
    (server, running_seen)
}

/// Answers a request; the status and the whole body.
fn send(server: &Server<Manual>, req: Request<Full<Bytes>>) -> (u16, String) {
    futures_lite::future::block_on(async {
        let resp = server.handle(req).await;
        let status = resp.status().as_u16();
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        (status, String::from_utf8(body.to_vec()).unwrap())
    })
}

fn post(path: &str, sid: &str, body: Value) -> Request<Full<Bytes>> {
    Request::post(path)
        .header("x-session-id", sid)
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap()
}

/// A session `sid` of the echo environment.
fn create(server: &Server<Manual>, sid: &str) {
    let (status, _) = send(server, post("/create", sid, json!({"task_spec": {}})));
    assert_eq!(status, 200);
}

/// The `task_id` event's data in a `/call` stream.
fn task_id(stream: &str) -> String {
    let after = stream.split("event: task_id\ndata: ").nth(1).unwrap();
    after.lines().next().unwrap().to_owned()
}

#[test]
fn a_call_is_counted_running_then_finished_and_its_resume_counted() {
    let recorder = DebuggingRecorder::new();
    let meters = Meters::new(&recorder);
    metrics::with_local_recorder(&recorder, || {
        let (server, running_seen) = server(Some(meters.clone()), ServerConfig::default());
        create(&server, "s1");
        let call = json!({"name": "echo", "input": {"x": 1}});
        let (status, stream) = send(&server, post("/echo/call", "s1", call));
        assert_eq!(status, 200);
        assert!(stream.contains("event: end"), "{stream}");
        assert_eq!(*running_seen.lock().unwrap(), [1.0]);
        assert_eq!(meters.get(ORS_CALLS_RUNNING, ""), 0.0);
        assert_eq!(meters.get(ORS_CALLS_TOTAL, "outcome=finished"), 1.0);
        assert_eq!(meters.get(ORS_CALLS_TOTAL, "outcome=error"), 0.0);
        assert!(meters.get(ORS_RESULT_BYTES, "") > 0.0);

        let resume = json!({"name": "echo", "input": {}, "task_id": task_id(&stream)});
        let (_, again) = send(&server, post("/echo/call", "s1", resume));
        assert!(again.contains("event: end"), "{again}");
        assert_eq!(meters.get(ORS_RESUMES_TOTAL, ""), 1.0);
        // A resume runs nothing.
        assert_eq!(meters.get(ORS_CALLS_TOTAL, "outcome=finished"), 1.0);
        assert_eq!(running_seen.lock().unwrap().len(), 1);
    });
}

#[test]
fn refusals_are_counted_by_reason() {
    let recorder = DebuggingRecorder::new();
    let meters = Meters::new(&recorder);
    metrics::with_local_recorder(&recorder, || {
        let config = ServerConfig::default()
            .api_key(Some("k".into()))
            .max_body(64);
        let (server, _) = server(None, config);
        let keyed = |mut req: Request<Full<Bytes>>| {
            req.headers_mut().insert("x-api-key", "k".parse().unwrap());
            req
        };
        let (status, _) = send(&server, post("/echo/call", "s1", json!({})));
        assert_eq!(status, 401);
        assert_eq!(meters.get(REFUSED_TOTAL, "reason=unauthorized"), 1.0);

        let call = json!({"name": "echo", "input": {}});
        let (status, stream) = send(&server, keyed(post("/echo/call", "nobody", call)));
        assert_eq!(status, 200);
        assert!(stream.contains("Session not found"), "{stream}");
        assert_eq!(meters.get(REFUSED_TOTAL, "reason=unknown_session"), 1.0);

        let big = json!({"task_spec": "x".repeat(100)});
        let (status, _) = send(&server, keyed(post("/create", "s1", big)));
        assert_eq!(status, 413);
        assert_eq!(meters.get(REFUSED_TOTAL, "reason=too_large"), 1.0);

        let (status, _) = send(&server, keyed(post("/echo/call", "s1", json!([]))));
        assert_eq!(status, 422);
        assert_eq!(meters.get(REFUSED_TOTAL, "reason=bad_input"), 1.0);

        let (status, _) = send(
            &server,
            keyed(post("/create", "s1", json!({"task_spec": {}}))),
        );
        assert_eq!(status, 200);
        let call = json!({"name": "nope", "input": {}});
        let (_, stream) = send(&server, keyed(post("/echo/call", "s1", call)));
        assert!(stream.contains("is not a valid tool"), "{stream}");
        assert_eq!(meters.get(REFUSED_TOTAL, "reason=unknown_tool"), 1.0);
    });
}

#[test]
fn results_dropped_for_room_are_evictions_and_expired_ones_are_not() {
    let recorder = DebuggingRecorder::new();
    let meters = Meters::new(&recorder);
    metrics::with_local_recorder(&recorder, || {
        let runtime = Manual::default();
        let config = TaskConfig::new(os_seed())
            .max_tasks(1)
            .result_ttl(std::time::Duration::from_secs(60));
        let calls = Calls::with_runtime(
            config,
            std::time::Duration::from_secs(10),
            4096,
            runtime.clone(),
        );
        let run = || async { Ok(text_result("4", None, true)) };
        let body = |body: crate::server::SseBody<Manual>| {
            futures_lite::future::block_on(body.collect())
                .unwrap()
                .to_bytes()
        };
        body(calls.call(None, run()));
        let one = meters.get(ORS_RESULT_BYTES, "");
        assert!(one > 0.0);
        // The first result makes room for the second call.
        body(calls.call(None, run()));
        assert_eq!(meters.get(ORS_RESULT_EVICTIONS_TOTAL, ""), 1.0);
        assert_eq!(meters.get(ORS_RESULT_BYTES, ""), one);
        // Past its TTL the second result expires: gone, but not evicted.
        runtime.set(61_000);
        body(calls.call(Some("gone"), run()));
        assert_eq!(meters.get(ORS_RESULT_EVICTIONS_TOTAL, ""), 1.0);
        assert_eq!(meters.get(ORS_RESULT_BYTES, ""), 0.0);
        assert_eq!(meters.get(REFUSED_TOTAL, "reason=unknown_task"), 1.0);
        assert_eq!(meters.get(ORS_CALLS_TOTAL, "outcome=finished"), 2.0);
    });
}

#[test]
fn a_call_ends_in_an_info_line_naming_its_task_and_outcome() {
    let (stream, logged) = crate::observe::testing::capture_logs(|| {
        let (server, _) = server(None, ServerConfig::default());
        create(&server, "s1");
        let call = json!({"name": "echo", "input": {}});
        send(&server, post("/echo/call", "s1", call)).1
    });
    let id = task_id(&stream);
    let line = logged
        .lines()
        .find(|l| l.contains("ORS call ended"))
        .unwrap_or_else(|| panic!("no call end in {logged}"));
    assert!(line.contains(" INFO "), "{line}");
    assert!(line.contains(&format!("task_id=\"{id}\"")), "{line}");
    assert!(line.contains("outcome=\"finished\""), "{line}");
    assert!(line.contains("tool=\"echo\""), "{line}");
    // The call's span names the session.
    assert!(line.contains("session=\"s1\""), "{line}");
    // Debug events are below the level asked for.
    assert!(!logged.contains("ORS call started"), "{logged}");
}
