//! The ORS server against noisy neighbours and bad input (issue 44), over 127.0.0.1 on both
//! runtimes: one session's flood of big results evicts none of another session's inside
//! its TTL, and a result that cannot be kept without doing so still reaches its own call,
//! marked not resumable; a tool input that breaks its `input_schema` is an `error` event
//! naming the path, and the tool never runs; while the store is down, `/create_session`
//! answers 503 instead of an id no instance will know.

#[macro_use]
mod ors_kit;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use ors_kit::{events, within, TestRuntime};
use serde_json::{json, Value};
use ssekit_http::ors::{
    text_result, Environment, Server, ServerConfig, Split, ToolFuture, ToolSpec, NOT_KEPT,
};
use ssekit_http::store::{
    Changed, EventsRead, Log, MemoryStore, SessionRecord, Store, StoreError, StoreFuture, TaskLog,
    TaskScope,
};

/// Sends a request; returns (status, `retry-after`, body).
async fn send(
    base: &str,
    path: &str,
    sid: Option<&str>,
    body: &str,
) -> (u16, Option<String>, String) {
    let client = ssekit_hyper::client::http_client().unwrap();
    let mut req =
        http::Request::post(format!("{base}{path}")).header("content-type", "application/json");
    if let Some(sid) = sid {
        req = req.header("x-session-id", sid);
    }
    let resp = client
        .request(req.body(Full::new(Bytes::from(body.to_owned()))).unwrap())
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let retry = resp
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_owned());
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    (status, retry, String::from_utf8(body.to_vec()).unwrap())
}

/// A session of `tools` on `base`.
async fn session(base: &str) -> String {
    let (status, _, wire) = send(base, "/create_session", None, "").await;
    assert_eq!(status, 200, "{wire}");
    let sid = events(&wire)[0].1.clone();
    let (status, _, body) = send(base, "/create", Some(&sid), r#"{"task_spec": {}}"#).await;
    assert_eq!(status, 200, "{body}");
    sid
}

/// A call's whole stream.
async fn call(base: &str, sid: &str, body: Value) -> String {
    let (status, _, wire) = send(base, "/tools/call", Some(sid), &body.to_string()).await;
    assert_eq!(status, 200, "{wire}");
    wire
}

/// The test environment, `tools`: `big` answers `size` bytes of text, `spell` needs a
/// `word` (and counts its runs), `broken` has a schema that does not compile.
#[derive(Default)]
struct Tools {
    spelled: AtomicUsize,
}

impl Environment for Tools {
    fn name(&self) -> &str {
        "tools"
    }

    fn splits(&self) -> Vec<Split> {
        vec![Split::new("test", "test")]
    }

    fn tasks(&self, _split: &str) -> Option<Vec<Value>> {
        Some(vec![json!({})])
    }

    fn tools(&self) -> Vec<ToolSpec> {
        vec![
            ToolSpec::new(
                "big",
                "A big result",
                Some(
                    json!({"type": "object", "properties": {"size": {"type": "integer"}, "tag": {"type": "string"}}}),
                ),
            ),
            ToolSpec::new(
                "spell",
                "Spell a word",
                Some(
                    json!({"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]}),
                ),
            ),
            ToolSpec::new(
                "broken",
                "Never runs",
                Some(json!({"type": "no such type"})),
            ),
        ]
    }

    fn prompt(&self, _task: &Value) -> String {
        String::new()
    }

    fn call(&self, _task: &Value, tool: &str, input: Value) -> ToolFuture {
        if tool == "spell" {
            self.spelled.fetch_add(1, Ordering::SeqCst);
        }
        let tool = tool.to_owned();
        Box::pin(async move {
            match tool.as_str() {
                "big" => {
                    let size = input["size"].as_u64().unwrap_or(0) as usize;
                    let tag = input["tag"].as_str().unwrap_or("").to_owned();
                    Ok(text_result(&(tag + &"x".repeat(size)), None, false))
                }
                "spell" => Ok(text_result(
                    &input["word"].as_str().unwrap_or_default().to_uppercase(),
                    None,
                    false,
                )),
                _ => Err("ran".to_owned()),
            }
        })
    }
}

/// The result a call's stream carries: its chunks and `end` joined.
fn result_of(wire: &str) -> Option<String> {
    let events = events(wire);
    let (last, _) = events.last()?;
    (last == "end").then(|| {
        events
            .iter()
            .filter(|(e, _)| e == "chunk" || e == "end")
            .map(|(_, d)| d.as_str())
            .collect()
    })
}

async fn a_flood_of_results_evicts_no_other_sessions_result<R: TestRuntime>() {
    // 1 MiB of results in all; a session may take all of it, so that only the global
    // bound decides. Each result is ~200 KB: the flood is twenty times the cache.
    let config = ServerConfig::default()
        .max_result_bytes(1 << 20)
        .max_session_result_bytes(1 << 20)
        .result_ttl(Duration::from_secs(600));
    let base = R::serve(Server::with_config(
        vec![Arc::new(Tools::default())],
        config,
    ));
    within(async {
        let (victim, flood) = (session(&base).await, session(&base).await);
        let first = call(
            &base,
            &victim,
            json!({"name": "big", "input": {"size": 200_000, "tag": "victim"}}),
        )
        .await;
        let victim_result = result_of(&first).expect("the victim's call ended with its result");
        let task_id = events(&first)[0].1.clone();
        let mut flood_ids = Vec::new();
        for i in 0..20 {
            let wire = call(
                &base,
                &flood,
                json!({"name": "big", "input": {"size": 200_000, "tag": format!("flood {i}")}}),
            )
            .await;
            assert!(
                result_of(&wire).is_some_and(|r| r.contains(&format!("flood {i}"))),
                "{i}"
            );
            assert!(
                !wire.contains(": not resumable"),
                "the flood evicts its own: {i}"
            );
            flood_ids.push(events(&wire)[0].1.clone());
        }
        // The victim resumes inside its TTL and gets the whole result.
        let body = json!({"name": "big", "input": {}, "task_id": task_id});
        let again = call(&base, &victim, body).await;
        assert_eq!(events(&again)[0].1, task_id);
        assert_eq!(result_of(&again).as_deref(), Some(victim_result.as_str()));
        // The flood's oldest results went for its newer ones; its latest is resumable.
        let oldest = json!({"name": "big", "input": {}, "task_id": flood_ids[0]});
        let gone = call(&base, &flood, oldest).await;
        assert_eq!(
            events(&gone),
            [("error".to_owned(), "unknown task_id".to_owned())]
        );
        let latest = json!({"name": "big", "input": {}, "task_id": flood_ids[19]});
        let kept = call(&base, &flood, latest).await;
        assert!(result_of(&kept).is_some_and(|r| r.contains("flood 19")));
        // A third session's result would need room the other two hold: its own call gets
        // the whole result, marked not resumable, and a resume says it was not kept.
        let third = session(&base).await;
        let wire = call(
            &base,
            &third,
            json!({"name": "big", "input": {"size": 200_000, "tag": "third"}}),
        )
        .await;
        assert!(
            wire.contains(": not resumable: result not kept\n\n"),
            "{}",
            &wire[..200]
        );
        assert!(result_of(&wire).is_some_and(|r| r.contains("third")));
        let resume = json!({"name": "big", "input": {}, "task_id": events(&wire)[0].1});
        let refused = call(&base, &third, resume).await;
        assert_eq!(
            events(&refused)[1],
            ("error".to_owned(), NOT_KEPT.to_owned())
        );
        // And the victim's is still there.
        let body = json!({"name": "big", "input": {}, "task_id": task_id});
        let still = call(&base, &victim, body).await;
        assert_eq!(result_of(&still).as_deref(), Some(victim_result.as_str()));
    })
    .await;
}

async fn a_session_past_its_budget_keeps_only_its_own_newest<R: TestRuntime>() {
    // Per session 300 KB: one ~200 KB result at a time, whoever floods.
    let config = ServerConfig::default()
        .max_result_bytes(1 << 20)
        .max_session_result_bytes(300_000);
    let base = R::serve(Server::with_config(
        vec![Arc::new(Tools::default())],
        config,
    ));
    within(async {
        let (victim, flood) = (session(&base).await, session(&base).await);
        let first = call(
            &base,
            &victim,
            json!({"name": "big", "input": {"size": 200_000}}),
        )
        .await;
        let task_id = events(&first)[0].1.clone();
        for _ in 0..10 {
            call(
                &base,
                &flood,
                json!({"name": "big", "input": {"size": 200_000}}),
            )
            .await;
        }
        let body = json!({"name": "big", "input": {}, "task_id": task_id});
        let again = call(&base, &victim, body).await;
        assert_eq!(result_of(&again), result_of(&first));
        // A result larger than the session's budget reaches its call, not a resume.
        let wire = call(
            &base,
            &victim,
            json!({"name": "big", "input": {"size": 400_000}}),
        )
        .await;
        assert!(wire.contains(": not resumable"));
        assert_eq!(result_of(&wire).map(|r| r.len() > 400_000), Some(true));
        // The victim's earlier result was not evicted for it either.
        let body = json!({"name": "big", "input": {}, "task_id": task_id});
        assert_eq!(
            result_of(&call(&base, &victim, body).await),
            result_of(&first)
        );
    })
    .await;
}

/// The message of a tool error (`{"ok": false, "error": …}`), the data of an `end` event.
fn tool_error(data: &str) -> String {
    let result: serde_json::Value = serde_json::from_str(data).unwrap();
    assert_eq!(result["ok"], false, "{data}");
    result["error"].as_str().unwrap().to_owned()
}

async fn an_input_that_breaks_the_schema_is_a_tool_error_naming_the_path<R: TestRuntime>() {
    let tools = Arc::new(Tools::default());
    let base = R::serve(Server::new(
        vec![Arc::clone(&tools) as Arc<dyn Environment>],
    ));
    within(async {
        let sid = session(&base).await;
        let wire = call(
            &base,
            &sid,
            json!({"name": "spell", "input": {"wrd": "cat"}}),
        )
        .await;
        let got = events(&wire);
        assert_eq!(got.len(), 2, "{wire}");
        assert_eq!(got[0].0, "task_id");
        // As the reference server answers a bad input: `end` with `ok: false`.
        assert_eq!(got[1].0, "end");
        assert_eq!(
            tool_error(&got[1].1),
            r#"Tool input validation error: input/word: "word" is a required property"#
        );
        let wire = call(&base, &sid, json!({"name": "spell", "input": {"word": 7}})).await;
        assert!(
            tool_error(&events(&wire)[1].1).contains("input/word: 7 is not of type"),
            "{wire}"
        );
        assert_eq!(
            tools.spelled.load(Ordering::SeqCst),
            0,
            "the tool never ran"
        );
        // A schema that does not compile refuses its calls; it does not panic.
        let wire = call(&base, &sid, json!({"name": "broken", "input": {}})).await;
        let got = events(&wire);
        assert_eq!(got[1].0, "end");
        assert!(
            tool_error(&got[1].1).contains("does not compile"),
            "{}",
            got[1].1
        );
        // A valid input runs.
        let wire = call(
            &base,
            &sid,
            json!({"name": "spell", "input": {"word": "cat"}}),
        )
        .await;
        assert!(
            result_of(&wire).is_some_and(|r| r.contains("CAT")),
            "{wire}"
        );
        assert_eq!(tools.spelled.load(Ordering::SeqCst), 1);
    })
    .await;
}

/// A [`MemoryStore`] that can be taken down: every call then fails, as a store that does
/// not answer does once its timeout passes.
#[derive(Clone, Default)]
struct Outage {
    store: MemoryStore,
    down: Arc<AtomicBool>,
}

impl Outage {
    fn check(&self) -> Result<(), StoreError> {
        if self.down.load(Ordering::SeqCst) {
            Err(StoreError::new("connection refused"))
        } else {
            Ok(())
        }
    }
}

macro_rules! guarded {
    ($self:ident, $call:expr) => {{
        let up = $self.check();
        Box::pin(async move {
            up?;
            $call.await
        })
    }};
}

impl Store for Outage {
    fn create_session<'a>(
        &'a self,
        sid: &'a str,
        record: &'a SessionRecord,
        ttl: Duration,
    ) -> StoreFuture<'a, bool> {
        guarded!(self, self.store.create_session(sid, record, ttl))
    }
    fn update_session<'a>(
        &'a self,
        sid: &'a str,
        record: &'a SessionRecord,
    ) -> StoreFuture<'a, ()> {
        guarded!(self, self.store.update_session(sid, record))
    }
    fn session<'a>(
        &'a self,
        sid: &'a str,
        ttl: Duration,
    ) -> StoreFuture<'a, Option<SessionRecord>> {
        guarded!(self, self.store.session(sid, ttl))
    }
    fn delete_session<'a>(&'a self, sid: &'a str) -> StoreFuture<'a, Option<SessionRecord>> {
        guarded!(self, self.store.delete_session(sid))
    }
    fn start_task<'a>(
        &'a self,
        task_id: &'a str,
        scope: &'a TaskScope,
        lease: Duration,
    ) -> StoreFuture<'a, ()> {
        guarded!(self, self.store.start_task(task_id, scope, lease))
    }
    fn renew_task<'a>(&'a self, task_id: &'a str, lease: Duration) -> StoreFuture<'a, ()> {
        guarded!(self, self.store.renew_task(task_id, lease))
    }
    fn append_task<'a>(
        &'a self,
        task_id: &'a str,
        frames: &'a [Bytes],
        finished: bool,
        result_ttl: Duration,
    ) -> StoreFuture<'a, ()> {
        guarded!(
            self,
            self.store
                .append_task(task_id, frames, finished, result_ttl)
        )
    }
    fn task_scope<'a>(&'a self, task_id: &'a str) -> StoreFuture<'a, Option<TaskScope>> {
        guarded!(self, self.store.task_scope(task_id))
    }
    fn read_task<'a>(&'a self, task_id: &'a str, after: &'a str) -> StoreFuture<'a, TaskLog> {
        guarded!(self, self.store.read_task(task_id, after))
    }
    fn publish<'a>(
        &'a self,
        stream: &'a str,
        frame: Bytes,
        max_events: usize,
        ttl: Duration,
    ) -> StoreFuture<'a, String> {
        guarded!(self, self.store.publish(stream, frame, max_events, ttl))
    }
    fn read_events<'a>(
        &'a self,
        stream: &'a str,
        after: Option<&'a str>,
        limit: usize,
    ) -> StoreFuture<'a, EventsRead> {
        guarded!(self, self.store.read_events(stream, after, limit))
    }
    fn changed(&self, log: Log<'_>) -> Changed {
        self.store.changed(log)
    }
}

async fn create_session_is_a_503_while_the_store_is_down<R: TestRuntime>() {
    let outage = Outage::default();
    let config = ServerConfig::default().store(Arc::new(outage.clone()));
    let base = R::serve(Server::with_config(
        vec![Arc::new(Tools::default())],
        config,
    ));
    within(async {
        let before = session(&base).await;
        outage.down.store(true, Ordering::SeqCst);
        let (status, retry, body) = send(&base, "/create_session", None, "").await;
        assert_eq!(status, 503, "{body}");
        assert_eq!(retry.as_deref(), Some("1"));
        let detail: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            detail["detail"],
            "the shared store is unavailable: connection refused"
        );
        // The other store-dependent routes say the same.
        for (path, sid, body) in [
            ("/create", "fresh", r#"{"task_spec": {}}"#),
            ("/ping", before.as_str(), ""),
        ] {
            let (status, retry, text) = send(&base, path, Some(sid), body).await;
            assert_eq!(
                (status, retry.as_deref()),
                (503, Some("1")),
                "{path}: {text}"
            );
        }
        // Back up: a session made now works.
        outage.down.store(false, Ordering::SeqCst);
        let after = session(&base).await;
        let wire = call(
            &base,
            &after,
            json!({"name": "spell", "input": {"word": "ok"}}),
        )
        .await;
        assert!(result_of(&wire).is_some_and(|r| r.contains("OK")), "{wire}");
    })
    .await;
}

on_both_runtimes!(
    a_flood_of_results_evicts_no_other_sessions_result,
    a_session_past_its_budget_keeps_only_its_own_newest,
    an_input_that_breaks_the_schema_is_a_tool_error_naming_the_path,
    create_session_is_a_503_while_the_store_is_down,
);
