//! Task and session ids of the ORS server are capabilities: a task id lets the session that
//! made the call resume it (for the same tool), a session id lets anyone call its tools. A server made as documented,
//! then the same server restarted, must not hand out the same ones, and a task id from
//! before the restart must not read the result of a call made after it. The same holds for
//! `Calls` alone, made with its defaults or keyed from the OS as documented.

#[macro_use]
mod ors_kit;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use ors_kit::{Gsm8k, TestRuntime};
use serde_json::{json, Value};
use ssekit::profile::ors::{ToolOutput, ToolResult};
use ssekit::server::TaskConfig;
use ssekit::{Decoder, Frame};
use ssekit_http::ors::{Calls, Server};

/// Sends one request to `server` and returns its status and its body's events as
/// `(event, data)`.
async fn send<R: TestRuntime>(
    server: &Server<R>,
    path: &str,
    sid: Option<&str>,
    body: &Value,
) -> (u16, Vec<(String, String)>) {
    let mut req = http::Request::post(path);
    if let Some(sid) = sid {
        req = req.header("x-session-id", sid);
    }
    let req = req
        .body(Full::new(Bytes::from(body.to_string())))
        .expect("a request");
    let resp = server.handle(req).await;
    let status = resp.status().as_u16();
    let wire = tokio::time::timeout(Duration::from_secs(10), resp.into_body().collect())
        .await
        .expect("the stream ends")
        .expect("no error")
        .to_bytes();
    let mut decoder = Decoder::new();
    decoder.feed(wire).expect("fed");
    decoder.finish();
    let mut events = Vec::new();
    while let Some(frame) = decoder.next_frame().expect("an event stream") {
        if let Frame::Event(ev) = frame {
            events.push((ev.event_type().to_owned(), ev.data().to_owned()));
        }
    }
    (status, events)
}

/// Opens a session on `server` and makes one tool call in it: `(session id, task id)`.
async fn session_and_call<R: TestRuntime>(server: &Server<R>) -> (String, String) {
    let (_, events) = send(server, "/create_session", None, &json!({})).await;
    let sid = events[0].1.clone();
    let create = json!({"env_name": "gsm8k", "split": "test", "index": 0});
    assert_eq!(send(server, "/create", Some(&sid), &create).await.0, 200);
    let call = json!({"name": "submit", "input": {"answer": 33}});
    let (_, events) = send(server, "/gsm8k/call", Some(&sid), &call).await;
    assert_eq!(events[0].0, "task_id");
    assert_eq!(events[1].0, "end");
    (sid, events[0].1.clone())
}

async fn a_restarted_server_hands_out_other_task_and_session_ids<R: TestRuntime>() {
    let before = Server::<R>::new(vec![Arc::new(Gsm8k)]);
    let (old_sid, old_task) = session_and_call(&before).await;
    let after = Server::<R>::new(vec![Arc::new(Gsm8k)]);
    let (sid, task) = session_and_call(&after).await;
    for id in [&old_sid, &sid] {
        assert!(
            id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit()),
            "{id}"
        );
    }
    assert_ne!(old_sid, sid);
    assert_ne!(old_task, task);
    // The client of `before` resumes its task on `after`: its result is gone, and it does
    // not get the result of the call made on `after`.
    let resume = json!({"name": "submit", "input": {"answer": 33}, "task_id": old_task});
    let (_, events) = send(&after, "/gsm8k/call", Some(&sid), &resume).await;
    assert_eq!(events, [("error".to_owned(), "unknown task_id".to_owned())]);
}

/// A task id resumes only in the session that started the call, and for the same tool: from
/// another session it is unknown, as a `Last-Event-ID` of another stream is (before, session
/// B resuming with A's task id received A's whole result).
async fn a_task_id_resumes_only_in_its_session_and_tool<R: TestRuntime>() {
    let server = Server::<R>::new(vec![Arc::new(Gsm8k)]);
    let (sid_a, task_a) = session_and_call(&server).await;
    let (sid_b, _) = session_and_call(&server).await;
    let unknown = [("error".to_owned(), "unknown task_id".to_owned())];
    let resume = |name: &str| json!({"name": name, "input": {}, "task_id": task_a});
    let (_, events) = send(&server, "/gsm8k/call", Some(&sid_b), &resume("submit")).await;
    assert_eq!(events, unknown, "another session");
    let (_, events) = send(&server, "/gsm8k/call", Some(&sid_a), &resume("work")).await;
    assert_eq!(events, unknown, "another tool");
    let (_, events) = send(&server, "/gsm8k/call", Some(&sid_a), &resume("submit")).await;
    assert_eq!(events[0], ("task_id".to_owned(), task_a.clone()), "its own");
    assert_eq!(events[1].0, "end");
}

/// The first event of a `/call` stream, as `(event, data)`.
async fn first_event<B>(body: B) -> (String, String)
where
    B: http_body::Body<Data = Bytes>,
    B::Error: std::fmt::Debug,
{
    let frame = Box::pin(body)
        .frame()
        .await
        .expect("a first frame")
        .expect("no error")
        .into_data()
        .expect("a data frame");
    let text = String::from_utf8(frame.to_vec()).expect("UTF-8");
    let (event, data) = text
        .trim_end()
        .split_once('\n')
        .expect("an event and its data");
    (
        event.trim_start_matches("event: ").to_owned(),
        data.trim_start_matches("data: ").to_owned(),
    )
}

/// Starts a call on `calls` and returns its task id.
async fn start<R: TestRuntime>(calls: &Calls<R>, answer: &'static str) -> String {
    let body = calls.call(None, async move {
        Ok(ToolResult::success(ToolOutput::text(answer)))
    });
    let (event, id) = first_event(body).await;
    assert_eq!(event, "task_id");
    id
}

/// `Calls` alone, made with its defaults.
async fn restarted_default_calls_hand_out_other_task_ids<R: TestRuntime>() {
    let before = Calls::<R>::default();
    let after = Calls::<R>::default();
    let (mut old_ids, mut new_ids) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        old_ids.push(start(&before, "old").await);
        new_ids.push(start(&after, "new").await);
    }
    for id in &old_ids {
        assert!(
            !new_ids.contains(id),
            "{id} handed out again after the restart"
        );
    }
    // The client of `before` resumes its task on `after`: its result is gone, and it does
    // not get the result of the call `after` started first.
    let resumed = after.call(Some(&old_ids[0]), async {
        Err("a resumed call does not run".to_owned())
    });
    assert_eq!(
        first_event(resumed).await,
        ("error".to_owned(), "unknown task_id".to_owned())
    );
}

async fn calls_keyed_as_documented_hand_out_other_task_ids<R: TestRuntime>() {
    let a = Calls::<R>::new(TaskConfig::new(ssekit_http::entropy::os_seed()));
    let b = Calls::<R>::new(TaskConfig::new(ssekit_http::entropy::os_seed()));
    assert_ne!(start(&a, "a").await, start(&b, "b").await);
}

on_both_runtimes!(
    a_restarted_server_hands_out_other_task_and_session_ids,
    restarted_default_calls_hand_out_other_task_ids,
    calls_keyed_as_documented_hand_out_other_task_ids,
    a_task_id_resumes_only_in_its_session_and_tool,
);
