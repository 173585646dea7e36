//! The ORS server and client over 127.0.0.1: the official client's sequence, chunking,
//! drop and resume by task id, keep-alives, and every error path.

#[macro_use]
mod ors_kit;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use ors_kit::{events, start, task, within, TestRuntime};
use serde_json::{json, Value};
use ssekit::client::ReconnectConfig;
use ssekit_http::ors::{Server, ServerConfig};
use ssekit_http::ToolError;
use ssekit_hyper::ors::{CallOptions, Client, Trace};
use ssekit_hyper::Error;

fn client(base: &str) -> Client {
    Client::new(base).unwrap().reconnect(
        ReconnectConfig::ors()
            .retry_timeout(Duration::from_millis(20))
            .min_delay(Duration::from_millis(10))
            .jitter(0),
    )
}

/// Sends a raw request and returns (status, content type, body).
async fn raw(
    base: &str,
    method: &str,
    path: &str,
    sid: Option<&str>,
    body: &str,
) -> (u16, String, String) {
    let client = ssekit_hyper::client::http_client().unwrap();
    let mut req = http::Request::builder()
        .method(method)
        .uri(format!("{base}{path}"))
        .header("content-type", "application/json");
    if let Some(sid) = sid {
        req = req.header("x-session-id", sid);
    }
    let resp = client
        .request(req.body(Full::new(Bytes::from(body.to_owned()))).unwrap())
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let ct = resp
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    (status, ct, String::from_utf8(body.to_vec()).unwrap())
}

async fn the_official_clients_sequence_works<R: TestRuntime>() {
    let base = start::<R>(ServerConfig::default()).await;
    within(async {
        let ors = client(&base);
        // Discovery, as env.list_tasks() does it.
        let tasks = ors
            .request_json(
                http::Method::POST,
                "/gsm8k/tasks",
                None,
                Some(&json!({"split": "test"})),
            )
            .await
            .unwrap();
        assert_eq!(tasks["env_name"], "gsm8k");
        let spec = tasks["tasks"][0].clone();
        // create_session is SSE: task_id = sid, then an empty end.
        let sid = ors.create_session().await.unwrap();
        assert_eq!(sid.len(), 32);
        ors.create(&sid, "GSM8K", &spec).await.unwrap();
        ors.ping(&sid).await.unwrap();
        let prompt = ors
            .request_json(http::Method::GET, "/gsm8k/prompt", Some(&sid), None)
            .await
            .unwrap();
        assert!(prompt[0]["text"].as_str().unwrap().contains("apples"));
        assert_eq!(prompt[0]["type"], "text");
        let result = ors
            .call_tool("gsm8k", &sid, "submit", json!({"answer": 33}))
            .await
            .unwrap();
        assert!(result.ok);
        let output = result.output.unwrap();
        assert_eq!((output.reward, output.finished), (Some(1.0), true));
        let wrong = ors
            .call_tool("gsm8k", &sid, "submit", json!({"answer": "34"}))
            .await
            .unwrap();
        assert_eq!(wrong.output.unwrap().reward, Some(0.0));
        ors.delete(&sid).await.unwrap();
        assert!(matches!(ors.ping(&sid).await, Err(ref e) if e.status() == Some(404)));
    })
    .await;
}

async fn the_call_stream_on_the_wire<R: TestRuntime>() {
    let base = start::<R>(ServerConfig::default()).await;
    let ors = client(&base);
    let sid = ors.open_session("gsm8k", &task()).await.unwrap();
    let (status, ct, wire) = within(raw(
        &base,
        "POST",
        "/gsm8k/call",
        Some(&sid),
        r#"{"name":"submit","input":{"answer":33}}"#,
    ))
    .await;
    assert_eq!((status, ct.as_str()), (200, "text/event-stream"));
    let evs = events(&wire);
    assert_eq!(evs.len(), 2);
    assert_eq!(evs[0].0, "task_id");
    assert!(evs[0].1.len() == 32 && evs[0].1.bytes().all(|b| b.is_ascii_hexdigit()));
    assert_eq!(
        wire,
        format!(
            "event: task_id\ndata: {}\n\nevent: end\ndata: {}\n\n",
            evs[0].1,
            r#"{"ok":true,"output":{"blocks":[{"type":"text","text":"Correct!","detail":null}],"metadata":null,"reward":1.0,"finished":true}}"#
        )
    );
    // create_session, as the official client reads it.
    let (status, _, wire) = raw(&base, "POST", "/create_session", None, "{}").await;
    assert_eq!(status, 200);
    let evs = events(&wire);
    assert_eq!(
        evs.iter().map(|e| e.0.as_str()).collect::<Vec<_>>(),
        ["task_id", "end"]
    );
    assert_eq!(evs[1].1, "");
}

async fn a_dropped_call_resumes_by_task_id_without_loss_or_duplication<R: TestRuntime>() {
    let base = start::<R>(ServerConfig::default()).await;
    let ors = client(&base);
    let sid = ors.open_session("gsm8k", &task()).await.unwrap();
    let whole = ors
        .call_tool("gsm8k", &sid, "work", json!({"steps": 300}))
        .await
        .unwrap();
    let mut trace = Vec::new();
    let resumed = within(ors.call_tool_traced(
        "gsm8k",
        &sid,
        "work",
        json!({"steps": 300}),
        CallOptions::default().cut_after(Some(3)),
        |t| trace.push(t),
    ))
    .await
    .unwrap();
    assert_eq!(resumed, whole);
    let cut = trace
        .iter()
        .position(|t| matches!(t, Trace::Cut { after_events: 3 }))
        .expect("cut");
    let Trace::Event(first) = &trace[1] else {
        panic!("{trace:?}")
    };
    assert_eq!(first.event_type(), "task_id");
    let id = first.data().to_owned();
    let reconnect = trace[cut..].iter().find_map(|t| match t {
        Trace::Connected { resume, .. } => Some(resume.clone()),
        _ => None,
    });
    assert_eq!(reconnect, Some(Some(id.clone())));
    // The resumed connection replays the same task from its first chunk.
    let replayed: Vec<&Trace> = trace[cut..]
        .iter()
        .filter(|t| matches!(t, Trace::Event(_)))
        .collect();
    assert!(
        matches!(replayed[0], Trace::Event(e) if e.event_type() == "task_id" && e.data() == id)
    );
}

async fn a_running_task_is_resumed_and_pings_keep_the_call_alive<R: TestRuntime>() {
    let base = start::<R>(ServerConfig::default().keep_alive(Duration::from_millis(100))).await;
    let ors = client(&base);
    let sid = ors.open_session("gsm8k", &task()).await.unwrap();
    let mut trace = Vec::new();
    let result = within(ors.call_tool_traced(
        "gsm8k",
        &sid,
        "work",
        json!({"delay_ms": 700, "steps": 5}),
        CallOptions::default().cut_after(Some(1)),
        |t| trace.push(t),
    ))
    .await
    .unwrap();
    assert!(result.ok);
    let pings = trace
        .iter()
        .filter(|t| matches!(t, Trace::KeepAlive))
        .count();
    assert!((4..=8).contains(&pings), "{pings} pings in {trace:?}");
    let connections = trace
        .iter()
        .filter(|t| matches!(t, Trace::Connected { .. }))
        .count();
    assert_eq!(connections, 2);
}

async fn http_level_failures_are_error_events<R: TestRuntime>() {
    let base = start::<R>(ServerConfig::default()).await;
    let ors = client(&base);
    let sid = ors.open_session("gsm8k", &task()).await.unwrap();
    // Unknown session: task_id, then error (the specification's text, not the SDK server's 404).
    let err = ors
        .call_tool("gsm8k", "no-such-session", "submit", json!({"answer": 1}))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::Tool(ToolError::Reported(m)) if m == "Session not found"),
        "{err}"
    );
    let (status, _, wire) = raw(
        &base,
        "POST",
        "/gsm8k/call",
        Some("no-such-session"),
        r#"{"name":"submit","input":{}}"#,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        events(&wire)
            .iter()
            .map(|e| e.0.as_str())
            .collect::<Vec<_>>(),
        ["task_id", "error"]
    );
    // Unknown tool.
    let err = ors
        .call_tool("gsm8k", &sid, "nope", json!({}))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::Tool(ToolError::Reported(m)) if m == "'nope' is not a valid tool"),
        "{err}"
    );
    // Unknown task id: a lone error, no task_id event.
    let (_, _, wire) = raw(
        &base,
        "POST",
        "/gsm8k/call",
        Some(&sid),
        r#"{"name":"submit","input":{},"task_id":"feedface"}"#,
    )
    .await;
    assert_eq!(
        events(&wire),
        [("error".to_owned(), "unknown task_id".to_owned())]
    );
    // A tool that raises.
    let sid2 = ors
        .open_session("gsm8k", &json!({"question": "?"}))
        .await
        .unwrap();
    let err = ors
        .call_tool("gsm8k", &sid2, "submit", json!({"answer": 1}))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::Tool(ToolError::Reported(m)) if m == "the task has no answer"),
        "{err}"
    );
    // A tool logic error is an `end` with ok: false.
    let r = ors
        .call_tool("gsm8k", &sid, "submit", json!({"answer": "many"}))
        .await
        .unwrap();
    assert!(r.is_tool_error());
    assert!(r.error.unwrap().contains("validation"));
}

async fn plain_http_errors_before_the_stream<R: TestRuntime>() {
    let base = start::<R>(ServerConfig::default()).await;
    let ors = client(&base);
    let sid = ors.open_session("gsm8k", &task()).await.unwrap();
    let call = |sid: Option<&'static str>, body: &'static str| {
        let base = base.clone();
        async move { raw(&base, "POST", "/gsm8k/call", sid, body).await }
    };
    let (s, _, b) = call(None, r#"{"name":"submit","input":{}}"#).await;
    assert_eq!(
        (s, b.as_str()),
        (400, r#"{"detail":"X-Session-ID header is required"}"#)
    );
    let leaked: &'static str = Box::leak(sid.clone().into_boxed_str());
    assert_eq!(
        call(Some(leaked), r#"{"name":"submit","input":[1]}"#)
            .await
            .0,
        422
    );
    assert_eq!(
        call(Some(leaked), r#"{"name":"submit","input":{},"extra":1}"#)
            .await
            .0,
        422
    );
    assert_eq!(call(Some(leaked), "not json").await.0, 422);
    assert_eq!(raw(&base, "POST", "/ping", Some("nope"), "").await.0, 404);
    assert_eq!(raw(&base, "POST", "/ping", None, "").await.0, 400);
    assert_eq!(
        raw(&base, "POST", "/create", Some(&sid), r#"{"task_spec":{}}"#).await,
        (
            400,
            "application/json".into(),
            r#"{"detail":"Session already exists"}"#.into()
        )
    );
    // In order: each is one request, and the fourth creates session s2.
    for (sid, body, status) in [
        ("s2", r#"{}"#, 422),
        ("s2", r#"{"split":"nope","index":0}"#, 400),
        ("s2", r#"{"split":"test","index":7}"#, 400),
        (
            "s2",
            r#"{"split":"test","index":-1,"env_name":"gsm8k"}"#,
            200,
        ),
        ("s3", r#"{"task_spec":{},"env_name":"chess"}"#, 404),
    ] {
        let answer = raw(&base, "POST", "/create", Some(sid), body).await;
        assert_eq!(answer.0, status, "{sid} {body}: {answer:?}");
    }
    assert_eq!(raw(&base, "GET", "/chess/tools", None, "").await.0, 404);
    assert_eq!(
        raw(&base, "GET", "/gsm8k/prompt", Some("nope"), "").await.0,
        404
    );
    assert_eq!(
        raw(&base, "POST", "/delete", Some("never-existed"), "")
            .await
            .0,
        200
    );
}

async fn discovery_routes<R: TestRuntime>() {
    let base = start::<R>(ServerConfig::default()).await;
    let ors = client(&base);
    let get = |p: &'static str| ors.request_json(http::Method::GET, p, None, None);
    assert_eq!(get("/health").await.unwrap(), json!({"status": "ok"}));
    assert_eq!(get("/list_environments").await.unwrap(), json!(["gsm8k"]));
    let tools = get("/gsm8k/tools").await.unwrap();
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["submit", "work"]);
    assert_eq!(
        get("/gsm8k/splits").await.unwrap(),
        json!([{"name": "train", "type": "train"}, {"name": "test", "type": "test"}])
    );
    let post = |p: &'static str, b: Value| {
        let ors = ors.clone();
        async move {
            ors.request_json(http::Method::POST, p, None, Some(&b))
                .await
        }
    };
    assert_eq!(
        post("/gsm8k/num_tasks", json!({"split": "test"}))
            .await
            .unwrap(),
        json!({"num_tasks": 2})
    );
    let last = post("/gsm8k/task", json!({"split": "test", "index": -1}))
        .await
        .unwrap();
    assert_eq!(last["task"]["answer"], 150.0);
    let range = post("/gsm8k/task_range", json!({"split": "test", "start": -1}))
        .await
        .unwrap();
    assert_eq!(range["tasks"].as_array().unwrap().len(), 1);
    let range = post("/gsm8k/task_range", json!({"split": "test", "stop": 100}))
        .await
        .unwrap();
    assert_eq!(range["tasks"].as_array().unwrap().len(), 2);
    assert!(matches!(
        post("/gsm8k/tasks", json!({"split": "dev"})).await,
        Err(ref e) if e.status() == Some(400)
    ));
    assert!(matches!(
        post("/gsm8k/task", json!({"split": "test", "index": 2})).await,
        Err(ref e) if e.status() == Some(400)
    ));
}

async fn sessions_and_results_expire<R: TestRuntime>() {
    // Every wait below is a lower bound (a sleep lasts at least as long), and the two upper
    // bounds (resume within the TTL, ping within the session timeout) have seconds to spare,
    // so a loaded machine cannot turn one outcome into the other: with 300 ms and 100 ms
    // margins, as before, a stalled test thread could.
    let config = ServerConfig::default()
        .session_timeout(Duration::from_secs(3))
        .result_ttl(Duration::from_secs(2));
    let base = start::<R>(config).await;
    let ors = client(&base);
    let sid = ors.open_session("gsm8k", &task()).await.unwrap();
    // A finished result can be resumed within its TTL, and not after.
    let (_, _, wire) = raw(
        &base,
        "POST",
        "/gsm8k/call",
        Some(&sid),
        r#"{"name":"submit","input":{"answer":33}}"#,
    )
    .await;
    let id = events(&wire)[0].1.clone();
    let resume = format!(r#"{{"name":"submit","input":{{"answer":33}},"task_id":"{id}"}}"#);
    let (_, _, again) = raw(&base, "POST", "/gsm8k/call", Some(&sid), &resume).await;
    assert_eq!(again, wire);
    tokio::time::sleep(Duration::from_millis(1200)).await;
    ors.ping(&sid).await.unwrap(); // keeps the session alive past its first 3 s
    tokio::time::sleep(Duration::from_millis(1200)).await; // the result's 2 s are over
    let (_, _, gone) = raw(&base, "POST", "/gsm8k/call", Some(&sid), &resume).await;
    assert_eq!(
        events(&gone),
        [("error".to_owned(), "unknown task_id".to_owned())]
    );
    // Idle past the timeout: the session is gone.
    tokio::time::sleep(Duration::from_millis(3500)).await;
    assert!(matches!(ors.ping(&sid).await, Err(ref e) if e.status() == Some(404)));
    let err = ors
        .call_tool("gsm8k", &sid, "submit", json!({"answer": 33}))
        .await
        .unwrap_err();
    assert!(matches!(&err, Error::Tool(ToolError::Reported(m)) if m == "Session not found"));
}

/// An environment whose setup waits for `gate` (when its task says `"gated": true`) or
/// fails, recording in `log` the secrets it was given and the tasks torn down, and in
/// `steps` the order in which setups finished and probes ran.
struct Lab {
    log: Arc<std::sync::Mutex<Vec<Value>>>,
    gate: async_channel::Receiver<()>,
    steps: Arc<std::sync::Mutex<Vec<&'static str>>>,
}

impl Lab {
    /// A lab recording in `log`; its gated setups finish once `gate` gets a message.
    fn new(log: Arc<std::sync::Mutex<Vec<Value>>>, gate: async_channel::Receiver<()>) -> Lab {
        Lab {
            log,
            gate,
            steps: Arc::default(),
        }
    }
}

/// Waits (polling, bounded by `within`'s hang guard) until `done` holds.
async fn until(what: &str, mut done: impl FnMut() -> bool) {
    within(async {
        while !done() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert!(done(), "{what}");
}

impl ssekit_hyper::ors::Environment for Lab {
    fn name(&self) -> &str {
        "lab"
    }
    fn splits(&self) -> Vec<ssekit_hyper::ors::Split> {
        Vec::new()
    }
    fn tasks(&self, _split: &str) -> Option<Vec<Value>> {
        None
    }
    fn tools(&self) -> Vec<ssekit_hyper::ors::ToolSpec> {
        vec![
            ssekit_hyper::ors::ToolSpec::new("probe", "Answer at once", None),
            ssekit_hyper::ors::ToolSpec::new("crash", "Panic", None),
        ]
    }
    fn prompt(&self, _task: &Value) -> String {
        "ready".into()
    }
    fn call(&self, _task: &Value, tool: &str, _input: Value) -> ssekit_hyper::ors::ToolFuture {
        let crash = tool == "crash";
        if tool == "probe" {
            self.steps.lock().unwrap().push("probe ran");
        }
        Box::pin(async move {
            if crash {
                panic!("tool bug");
            }
            Ok(ssekit_hyper::ors::text_result("probed", None, false))
        })
    }
    fn setup(&self, task: &Value, secrets: &Value) -> ssekit_hyper::ors::SetupFuture {
        if let Some(token) = secrets.get("TOKEN") {
            self.log.lock().unwrap().push(json!({ "secret": token }));
        }
        let (gated, fail) = (
            task["gated"].as_bool().unwrap_or(false),
            task["fail"].as_bool().unwrap_or(false),
        );
        let (gate, steps) = (self.gate.clone(), self.steps.clone());
        Box::pin(async move {
            // async-channel: the setup runs on either runtime.
            if gated {
                gate.recv().await.expect("the gate opens");
            }
            steps.lock().unwrap().push("setup finished");
            if fail {
                Err("sandbox failed to start".to_owned())
            } else {
                Ok(())
            }
        })
    }
    fn teardown(&self, task: &Value) -> ssekit_hyper::ors::SetupFuture {
        self.log.lock().unwrap().push(task.clone());
        Box::pin(async { Ok(()) })
    }
}

async fn setup_runs_after_create_answers_calls_wait_for_it_and_teardown_follows_delete_or_expiry<
    R: TestRuntime,
>() {
    let log = Arc::new(std::sync::Mutex::new(Vec::new()));
    let (open, gate) = async_channel::unbounded();
    let lab = Lab::new(log.clone(), gate);
    let steps = lab.steps.clone();
    let server = Server::<R>::with_config(
        vec![Arc::new(lab)],
        ServerConfig::default().session_timeout(Duration::from_millis(1200)),
    );
    let base = R::serve(server);
    let ors = client(&base);

    // A setup that finishes only when the test opens its gate: /create answers while it
    // waits (a /create that waited for it would hang, and `within` would say so), and a
    // call waits for it (the probe runs after the setup finished). No wall-clock bound:
    // before, "/create within 600 ms" and "the call after 800 ms" could fail on a loaded
    // machine.
    let slow = json!({"gated": true});
    let sid = within(ors.open_session("lab", &slow)).await.unwrap();
    assert!(steps.lock().unwrap().is_empty(), "the setup still waits");
    let call = async {
        within(ors.call_tool("lab", &sid, "probe", json!({})))
            .await
            .unwrap()
    };
    let opener = async {
        // A pause, so that the call is waiting when the gate opens: it only gives a server
        // that did not wait the chance to show it, and cannot fail one that does.
        tokio::time::sleep(Duration::from_millis(200)).await;
        open.send(()).await.unwrap();
    };
    let (r, ()) = smol::future::zip(call, opener).await;
    assert!(r.ok);
    assert_eq!(
        *steps.lock().unwrap(),
        ["setup finished", "probe ran"],
        "the call waited for setup"
    );
    let prompt = ors
        .request_json(http::Method::GET, "/lab/prompt", Some(&sid), None)
        .await
        .unwrap();
    assert_eq!(prompt[0]["text"], "ready");
    let err = within(ors.call_tool("lab", &sid, "crash", json!({})))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::Tool(ToolError::Reported(m)) if m == "internal error: the tool panicked"),
        "{err}"
    );
    // Deleted (before the session could time out on a slow run): torn down.
    ors.delete(&sid).await.unwrap();
    until("the deleted session was torn down", || {
        log.lock().unwrap().len() == 1
    })
    .await;
    assert_eq!(*log.lock().unwrap(), [slow]);

    let broken = json!({"fail": true});
    let sid2 = ors.open_session("lab", &broken).await.unwrap();
    let err = ors
        .call_tool("lab", &sid2, "probe", json!({}))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::Tool(ToolError::Reported(m)) if m == "sandbox failed to start"),
        "{err}"
    );
    let (status, _, body) = raw(&base, "GET", "/lab/prompt", Some(&sid2), "").await;
    assert_eq!(
        (status, body.as_str()),
        (500, r#"{"detail":"sandbox failed to start"}"#)
    );

    // sid2 expires (a lower bound: the sleep lasts at least its timeout past its last use);
    // the next request sweeps it and tears it down.
    tokio::time::sleep(Duration::from_millis(1250)).await;
    assert_eq!(raw(&base, "GET", "/health", None, "").await.0, 200);
    let _ = ors.ping(&sid2).await;
    until("the expired session was torn down", || {
        log.lock().unwrap().len() == 2
    })
    .await;
    assert_eq!(log.lock().unwrap()[1], broken);
}

async fn sessions_are_bounded<R: TestRuntime>() {
    let base = start::<R>(ServerConfig::default().max_sessions(2)).await;
    let ors = client(&base);
    let a = ors.open_session("gsm8k", &task()).await.unwrap();
    let _b = ors.open_session("gsm8k", &task()).await.unwrap();
    assert!(matches!(
        ors.open_session("gsm8k", &task()).await,
        Err(ref e) if e.status() == Some(503)
    ));
    ors.delete(&a).await.unwrap();
    assert!(ors.open_session("gsm8k", &task()).await.is_ok());
}

async fn an_api_key_is_required_when_configured<R: TestRuntime>() {
    let base = start::<R>(ServerConfig::default().api_key(Some("s3cret".into()))).await;
    assert_eq!(raw(&base, "GET", "/health", None, "").await.0, 200);
    assert_eq!(
        raw(&base, "GET", "/gsm8k/tools", None, "").await,
        (
            401,
            "application/json".into(),
            r#"{"detail":"invalid or missing X-API-Key"}"#.into()
        )
    );
    assert!(matches!(
        client(&base).create_session().await,
        Err(ref e) if e.status() == Some(401)
    ));
    let ors = client(&base).api_key(Some("s3cret".into()));
    let sid = ors.open_session("gsm8k", &task()).await.unwrap();
    let r = ors
        .call_tool("gsm8k", &sid, "submit", json!({"answer": 33}))
        .await
        .unwrap();
    assert!(r.ok);
    let wrong = client(&base).api_key(Some("guess".into()));
    assert!(matches!(
        wrong
            .call_tool("gsm8k", &sid, "submit", json!({"answer": 33}))
            .await,
        Err(ref e) if e.status() == Some(401)
    ));
}

async fn create_passes_the_secrets_to_setup<R: TestRuntime>() {
    let log = Arc::new(std::sync::Mutex::new(Vec::new()));
    let (_open, gate) = async_channel::unbounded();
    let base = R::serve(Server::<R>::new(vec![Arc::new(Lab::new(
        log.clone(),
        gate,
    ))]));
    let ors = client(&base);
    let sid = ors.create_session().await.unwrap();
    let (status, _, _) = raw(
        &base,
        "POST",
        "/create",
        Some(&sid),
        r#"{"task_spec":{},"env_name":"lab","secrets":{"TOKEN":"abc"}}"#,
    )
    .await;
    assert_eq!(status, 200);
    ors.call_tool("lab", &sid, "probe", json!({}))
        .await
        .unwrap(); // waits for setup
    assert_eq!(*log.lock().unwrap(), [json!({"secret": "abc"})]);
}

#[tokio::test]
async fn a_json_request_to_a_server_that_never_answers_times_out() {
    // The server accepts and reads, but never answers: ping, create and delete used to wait
    // for ever (streams and calls had their idle timeout, JSON requests none).
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let held = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            open.push(socket);
        }
    });
    let client = Client::new(&format!("http://{addr}"))
        .unwrap()
        .idle_timeout(Duration::from_millis(200));
    let started = std::time::Instant::now();
    let err = within(client.ping("sid")).await.unwrap_err();
    assert!(
        matches!(&err, Error::Io(e) if e.kind() == std::io::ErrorKind::TimedOut),
        "{err:?}"
    );
    // The server never answers, so only the client's idle timeout can have ended the
    // request (`within` fails a hang), and not before it was due; how soon after only
    // measures the machine (a `< 3 s` bound was asserted before).
    assert!(started.elapsed() >= Duration::from_millis(200));
    held.abort();
}

#[tokio::test]
async fn a_refused_redirect_ends_the_call_without_retrying() {
    let requests = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = requests.clone();
    let addr = ors_kit::spawn(move |_req: http::Request<hyper::body::Incoming>| {
        count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        async move {
            let mut resp = http::Response::new(Full::new(Bytes::new()));
            *resp.status_mut() = http::StatusCode::TEMPORARY_REDIRECT;
            resp.headers_mut().insert(
                "location",
                http::HeaderValue::from_static("ftp://example.invalid/x"),
            );
            ors_kit::boxed(resp)
        }
    })
    .await;
    let err =
        within(client(&format!("http://{addr}")).call_tool("gsm8k", "s", "submit", json!({})))
            .await;
    assert!(
        matches!(
            &err,
            Err(Error::Redirect(ssekit_http::RedirectError::Scheme { .. }))
        ),
        "{err:?}"
    );
    assert_eq!(
        requests.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "no retry"
    );
}

on_both_runtimes!(
    the_official_clients_sequence_works,
    the_call_stream_on_the_wire,
    a_dropped_call_resumes_by_task_id_without_loss_or_duplication,
    a_running_task_is_resumed_and_pings_keep_the_call_alive,
    http_level_failures_are_error_events,
    plain_http_errors_before_the_stream,
    discovery_routes,
    sessions_and_results_expire,
    setup_runs_after_create_answers_calls_wait_for_it_and_teardown_follows_delete_or_expiry,
    sessions_are_bounded,
    an_api_key_is_required_when_configured,
    create_passes_the_secrets_to_setup,
);
