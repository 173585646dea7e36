//! The ORS server under faults and abuse: every call ends in `end` or `error` (a tool that
//! panics, a task dropped by its runtime), refused calls take no place among the cached
//! results, sessions answer only for their environment, and sessions' task specs and
//! running calls are bounded.

#[macro_use]
mod ors_kit;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use ors_kit::{events, read_for, Gsm8k, TestRuntime};
use serde_json::{json, Value};
use ssekit_http::ors::{
    text_result, Environment, Server, ServerConfig, Split, ToolFuture, ToolSpec,
};
use ssekit_http::store::MemoryStore;

fn req(method: &str, path: &str, sid: Option<&str>, body: &str) -> http::Request<Full<Bytes>> {
    let mut b = http::Request::builder().method(method).uri(path);
    if let Some(sid) = sid {
        b = b.header("x-session-id", sid);
    }
    b.body(Full::new(Bytes::from(body.to_owned()))).unwrap()
}

/// Tools that misbehave: `go` panics before its future exists (as gsm8k's own `call`
/// does its synchronous work first), `poll` panics in its future, `hang` never ends,
/// `wait` takes 300 ms, `ok` answers at once.
struct Boom;
impl Environment for Boom {
    fn name(&self) -> &str {
        "boom"
    }
    fn splits(&self) -> Vec<Split> {
        vec![]
    }
    fn tasks(&self, _: &str) -> Option<Vec<Value>> {
        None
    }
    fn tools(&self) -> Vec<ToolSpec> {
        ["go", "poll", "hang", "wait", "ok"]
            .iter()
            .map(|name| ToolSpec::new(name, "", None))
            .collect()
    }
    fn prompt(&self, _: &Value) -> String {
        "boom".to_owned()
    }
    fn call(&self, task: &Value, tool: &str, _input: Value) -> ToolFuture {
        match tool {
            "go" => {
                let n: u64 = task["n"].as_u64().expect("the task has no n");
                Box::pin(async move { Ok(text_result(&n.to_string(), None, true)) })
            }
            "poll" => {
                let n = task["n"].as_u64();
                Box::pin(async move {
                    Ok(text_result(
                        &n.expect("the task has no n").to_string(),
                        None,
                        true,
                    ))
                })
            }
            "hang" => Box::pin(std::future::pending()),
            "wait" => Box::pin(async {
                async_io::Timer::after(Duration::from_millis(300)).await;
                Ok(text_result("waited", None, true))
            }),
            _ => Box::pin(async { Ok(text_result("ok", None, true)) }),
        }
    }
}

fn server<R: TestRuntime>(config: ServerConfig) -> Server<R> {
    Server::with_config(
        vec![Arc::new(Gsm8k), Arc::new(Boom)],
        config.keep_alive(Duration::from_millis(100)),
    )
}

async fn create<R: TestRuntime>(server: &Server<R>, sid: &str, env: &str, task: &Value) -> u16 {
    let body = json!({"env_name": env, "task_spec": task}).to_string();
    let r = server
        .handle(req("POST", "/create", Some(sid), &body))
        .await;
    r.status().as_u16()
}

async fn call<R: TestRuntime>(
    server: &Server<R>,
    env: &str,
    sid: &str,
    body: Value,
) -> (Vec<(String, String)>, bool) {
    let path = format!("/{env}/call");
    let r = server
        .handle(req("POST", &path, Some(sid), &body.to_string()))
        .await;
    assert_eq!(r.status(), 200);
    let (wire, ended) = read_for(r.into_body(), Duration::from_secs(5)).await;
    (events(&wire), ended)
}

async fn a_tool_that_panics_building_or_polling_its_future_ends_the_call_in_error<
    R: TestRuntime,
>() {
    let server = server::<R>(ServerConfig::default());
    assert_eq!(create(&server, "s", "boom", &json!({})).await, 200);
    for tool in ["go", "poll"] {
        // Before the fix, `go` (a panic in `Environment::call` itself) left the call, and
        // every resume, pinging for ever.
        let (first, ended) = call(&server, "boom", "s", json!({"name": tool, "input": {}})).await;
        assert!(ended, "{tool}: {first:?}");
        assert_eq!(first.len(), 2, "{tool}: {first:?}");
        assert_eq!(first[0].0, "task_id");
        assert_eq!(
            first[1],
            (
                "error".to_owned(),
                ssekit_http::ors::TOOL_PANICKED.to_owned()
            )
        );
        let resume = json!({"name": tool, "input": {}, "task_id": first[0].1});
        let (again, ended) = call(&server, "boom", "s", resume).await;
        assert!(ended, "{tool}: {again:?}");
        assert_eq!(again, first, "{tool}");
    }
}

/// tokio only: the executor where `Smol` runs tasks is never shut down.
#[test]
fn a_call_whose_task_its_runtime_dropped_ends_in_error() {
    let server = server::<ssekit_hyper::runtime::Tokio>(ServerConfig::default());
    let doomed = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let task_id = doomed.block_on(async {
        assert_eq!(create(&server, "s", "boom", &json!({})).await, 200);
        let body = json!({"name": "hang", "input": {}}).to_string();
        let r = server
            .handle(req("POST", "/boom/call", Some("s"), &body))
            .await;
        let (wire, ended) = read_for(r.into_body(), Duration::from_millis(300)).await;
        assert!(!ended, "the tool hangs");
        events(&wire)[0].1.clone()
    });
    // The runtime shuts down, dropping the tool's task before it finished.
    drop(doomed);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let resume = json!({"name": "hang", "input": {}, "task_id": task_id});
        let (events, ended) = call(&server, "boom", "s", resume).await;
        assert!(ended, "{events:?}");
        assert_eq!(
            events,
            [
                ("task_id".to_owned(), task_id.clone()),
                (
                    "error".to_owned(),
                    ssekit_http::ors::CALL_ABANDONED.to_owned()
                )
            ]
        );
    });
}

async fn refused_calls_do_not_evict_other_clients_cached_results<R: TestRuntime>() {
    refused_calls_keep_the_cached_results::<R>(ServerConfig::default()).await;
}

/// With a store a call of a known tool starts in the store with the read of its session,
/// before the server knows whether the session is live: the task a refused call started
/// is forgotten, so refusals take no place here either.
async fn refused_calls_do_not_evict_cached_results_with_a_store<R: TestRuntime>() {
    let store = Arc::new(MemoryStore::default());
    refused_calls_keep_the_cached_results::<R>(ServerConfig::default().store(store)).await;
}

async fn refused_calls_keep_the_cached_results<R: TestRuntime>(config: ServerConfig) {
    let server = server::<R>(config);
    let task = Gsm8k.tasks("test").unwrap()[0].clone();
    assert_eq!(create(&server, "victim", "gsm8k", &task).await, 200);
    let submit = json!({"name": "submit", "input": {"answer": 1}});
    let (first, ended) = call(&server, "gsm8k", "victim", submit.clone()).await;
    assert!(ended && first.last().unwrap().0 == "end", "{first:?}");
    // More refused calls than the registry holds tasks (1024): without a session, and to
    // an unknown tool. Before the fix each took a task slot and the victim's result was
    // evicted long before its 60 s.
    for i in 0..1100 {
        let (sid, name) = if i % 2 == 0 {
            ("no-such-session", "submit")
        } else {
            ("victim", "nope")
        };
        let body = json!({"name": name, "input": {}}).to_string();
        let r = server
            .handle(req("POST", "/gsm8k/call", Some(sid), &body))
            .await;
        if i < 2 {
            let (wire, ended) = read_for(r.into_body(), Duration::from_secs(5)).await;
            let refusal = events(&wire);
            assert!(ended, "{wire}");
            assert_eq!(refusal.len(), 2, "{wire}");
            assert_eq!(refusal[0].0, "task_id");
            let message = ["Session not found", "'nope' is not a valid tool"][i];
            assert_eq!(refusal[1], ("error".to_owned(), message.to_owned()));
            // The refusal's id was never stored.
            let resume = json!({"name": name, "input": {}, "task_id": refusal[0].1});
            let (again, _) = call(&server, "gsm8k", "victim", resume).await;
            assert_eq!(again, [("error".to_owned(), "unknown task_id".to_owned())]);
        }
    }
    let mut resume = submit;
    resume["task_id"] = json!(first[0].1);
    let (again, ended) = call(&server, "gsm8k", "victim", resume).await;
    assert!(ended);
    assert_eq!(again, first, "the victim's result is still cached");
    assert_eq!(server.kept_results().0, 1, "the refusals left no task");
}

async fn prompt_and_task_tools_answer_only_for_the_sessions_environment<R: TestRuntime>() {
    let server = server::<R>(ServerConfig::default());
    assert_eq!(create(&server, "s", "boom", &json!({})).await, 200);
    for route in ["prompt", "task_tools"] {
        let r = server
            .handle(req("GET", &format!("/boom/{route}"), Some("s"), ""))
            .await;
        assert_eq!(r.status(), 200, "{route}");
        // Before the fix: 200, gsm8k's prompt over boom's task.
        let r = server
            .handle(req("GET", &format!("/gsm8k/{route}"), Some("s"), ""))
            .await;
        assert_eq!(r.status(), 404, "{route}");
        let body = r.into_body().collect().await.unwrap().to_bytes();
        let body: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(body, json!({"detail": "Active environment not found"}));
    }
}

async fn task_specs_are_bounded_in_bytes_over_all_live_sessions<R: TestRuntime>() {
    let server = server::<R>(ServerConfig::default().max_task_spec_bytes(1000));
    let task = json!({"text": "x".repeat(500)});
    let bytes = json!({"env_name": "boom", "task_spec": task})
        .to_string()
        .len();
    assert!(bytes > 500 && bytes <= 1000 && 2 * bytes > 1000);
    assert_eq!(create(&server, "a", "boom", &task).await, 200);
    // Before the fix any number of sessions could hold up to 1 MiB each.
    let body = json!({"env_name": "boom", "task_spec": task}).to_string();
    let r = server
        .handle(req("POST", "/create", Some("b"), &body))
        .await;
    assert_eq!(r.status(), 503);
    let small = json!({"n": 1});
    assert_eq!(create(&server, "c", "boom", &small).await, 200);
    // Deleting a session releases its bytes.
    let r = server.handle(req("POST", "/delete", Some("a"), "")).await;
    assert_eq!(r.status(), 200);
    assert_eq!(create(&server, "b", "boom", &task).await, 200);
}

async fn ping_and_prompt_go_on_answering_for_a_session_with_a_large_task<R: TestRuntime>() {
    let server = server::<R>(ServerConfig::default());
    // About 1 MiB of JSON, some 16 MiB parsed: before the fix each /ping deep-cloned it
    // (about 20 ms each in a debug build).
    let spec = format!("[{}0]", "0,".repeat((1 << 20) / 2 - 65));
    let task: Value = serde_json::from_str(&spec).unwrap();
    assert_eq!(create(&server, "big", "boom", &task).await, 200);
    // Not timed (no timed assertions in tests): the session holds the task in an `Arc`, so
    // these requests copy a pointer; they must go on answering with the task.
    for _ in 0..400 {
        let r = server.handle(req("POST", "/ping", Some("big"), "")).await;
        assert_eq!(r.status(), 200);
        let r = server
            .handle(req("GET", "/boom/prompt", Some("big"), ""))
            .await;
        assert_eq!(r.status(), 200);
    }
}

async fn calls_past_max_running_calls_are_503_and_admitted_again_later<R: TestRuntime>() {
    let server = server::<R>(ServerConfig::default().max_running_calls(2));
    assert_eq!(create(&server, "s", "boom", &json!({})).await, 200);
    let wait = json!({"name": "wait", "input": {}}).to_string();
    let mut running = Vec::new();
    for _ in 0..2 {
        let r = server
            .handle(req("POST", "/boom/call", Some("s"), &wait))
            .await;
        assert_eq!(r.status(), 200);
        running.push(r);
    }
    // Before the fix running calls were unbounded.
    let r = server
        .handle(req("POST", "/boom/call", Some("s"), &wait))
        .await;
    assert_eq!(r.status(), 503);
    assert_eq!(r.headers()["retry-after"], "1");
    for r in running {
        let (wire, ended) = read_for(r.into_body(), Duration::from_secs(5)).await;
        assert!(ended && wire.contains("event: end"), "{wire}");
    }
    let (events, ended) = call(&server, "boom", "s", json!({"name": "ok", "input": {}})).await;
    assert!(ended && events.last().unwrap().0 == "end", "{events:?}");
}

/// A call refused before its session is read (busy, shutting down) reads it then: a call
/// without a live session is `Session not found` whether or not the server is busy, as when
/// the session was read first (with a store, a call's start reads it now).
async fn a_call_without_a_live_session_is_told_so_when_busy_or_draining<R: TestRuntime>() {
    for store in [false, true] {
        let mut config = ServerConfig::default().max_running_calls(1);
        if store {
            config = config.store(Arc::new(MemoryStore::default()));
        }
        let server = server::<R>(config);
        assert_eq!(create(&server, "s", "boom", &json!({})).await, 200);
        let wait = json!({"name": "wait", "input": {}});
        let running = server
            .handle(req("POST", "/boom/call", Some("s"), &wait.to_string()))
            .await;
        assert_eq!(running.status(), 200);
        let busy = server
            .handle(req("POST", "/boom/call", Some("s"), &wait.to_string()))
            .await;
        assert_eq!(busy.status(), 503, "store: {store}");
        for (env, sid) in [("boom", "gone"), ("gsm8k", "s")] {
            let submit = json!({"name": "submit", "input": {"answer": 1}});
            let (events, ended) = call(&server, env, sid, submit).await;
            assert!(ended, "store: {store}");
            assert_eq!(events.len(), 2, "store: {store}: {events:?}");
            assert_eq!(
                events[1],
                ("error".to_owned(), "Session not found".to_owned()),
                "store: {store}, {env}/{sid}"
            );
        }
        let (wire, ended) = read_for(running.into_body(), Duration::from_secs(5)).await;
        assert!(ended && wire.contains("event: end"), "{wire}");
        let drained = server.shutdown(Duration::from_secs(5)).await;
        assert_eq!(drained, 0);
        let (events, _) = call(&server, "boom", "gone", json!({"name": "ok", "input": {}})).await;
        assert_eq!(events[1].1, "Session not found", "store: {store}");
        let r = server
            .handle(req(
                "POST",
                "/boom/call",
                Some("s"),
                &json!({"name": "ok", "input": {}}).to_string(),
            ))
            .await;
        assert_eq!(r.status(), 503, "store: {store}: shutting down");
        assert_eq!(
            server.kept_results().0,
            1,
            "store: {store}: the wait call's result only"
        );
    }
}

on_both_runtimes!(
    a_tool_that_panics_building_or_polling_its_future_ends_the_call_in_error,
    refused_calls_do_not_evict_other_clients_cached_results,
    refused_calls_do_not_evict_cached_results_with_a_store,
    a_call_without_a_live_session_is_told_so_when_busy_or_draining,
    prompt_and_task_tools_answer_only_for_the_sessions_environment,
    task_specs_are_bounded_in_bytes_over_all_live_sessions,
    ping_and_prompt_go_on_answering_for_a_session_with_a_large_task,
    calls_past_max_running_calls_are_503_and_admitted_again_later,
);
