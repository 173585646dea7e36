//! Task and session ids of the ORS server are capabilities: a task id lets any session read
//! that task's result, a session id lets anyone call its tools. A server made as documented,
//! then the same server restarted, must not hand out the same ones, and a task id from
//! before the restart must not read the result of a call made after it.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use serde_json::{json, Value};
use ssekit::{Decoder, Frame};
use ssekit_hyper::ors::gsm8k::Gsm8k;
use ssekit_hyper::ors::Server;

/// Sends one request to `server` and returns its status and its body's events as
/// `(event, data)`.
async fn send(
    server: &Server,
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
async fn session_and_call(server: &Server) -> (String, String) {
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

#[tokio::test]
async fn a_restarted_server_hands_out_other_task_and_session_ids() {
    let before = Server::new(vec![Arc::new(Gsm8k)]);
    let (old_sid, old_task) = session_and_call(&before).await;
    let after = Server::new(vec![Arc::new(Gsm8k)]);
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
