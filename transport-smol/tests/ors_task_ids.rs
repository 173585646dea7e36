//! ORS task ids are capabilities: a `/call` with one, from any session, streams that task's
//! result. Two `Calls` made as documented (a server, then the same server restarted) must
//! not hand out the same ids: with a constant key they did, and a client resuming its task
//! after the restart read another client's result.
#![cfg(feature = "http")]

use http_body_util::BodyExt;
use ssekit::profile::ors::{ToolOutput, ToolResult};
use ssekit::server::TaskConfig;
use ssekit_smol::ors::Calls;
use ssekit_smol::server::SseBody;

/// The first event of a `/call` stream, as `(event, data)`.
fn first_event(body: SseBody) -> (String, String) {
    let mut body = body;
    let frame = smol::block_on(body.frame())
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
fn start(calls: &Calls, answer: &'static str) -> String {
    let body = calls.call(None, async move {
        Ok(ToolResult::success(ToolOutput::text(answer)))
    });
    let (event, id) = first_event(body);
    assert_eq!(event, "task_id");
    id
}

#[test]
fn a_restarted_default_server_hands_out_other_task_ids() {
    let before = Calls::default();
    let old_ids: Vec<String> = (0..3).map(|_| start(&before, "old")).collect();
    let after = Calls::default();
    let new_ids: Vec<String> = (0..3).map(|_| start(&after, "new")).collect();
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
        first_event(resumed),
        ("error".to_owned(), "unknown task_id".to_owned())
    );
}

#[test]
fn calls_keyed_as_documented_hand_out_other_task_ids() {
    let a = Calls::new(TaskConfig::new(ssekit_http::entropy::os_seed()));
    let b = Calls::new(TaskConfig::new(ssekit_http::entropy::os_seed()));
    assert_ne!(start(&a, "a"), start(&b, "b"));
}
