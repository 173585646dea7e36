//! ORS calls without sockets: the registry's bounds never end a running call's stream in
//! `unknown task_id` (ORS: "If still running, stream events from current state"), a result
//! that does not fit ends its own call in `error`, not another's, and any successful result
//! is sent as `chunk`* + `end` (ORS: "For results > 4KB, sent in chunks").

use bytes::Bytes;
use ssekit::chunk::Chunker;
use ssekit::profile::ors::{ToolOutput, ToolResult};
use ssekit::server::{Cursor, TaskConfig, TaskRegistry, TaskState};
use ssekit::Instant;
use ssekit_http::entropy::os_seed;
use ssekit_http::ors::{call_frames, complete, Follow};

/// The first line of each frame a follower of `cursor` reads now (`event: ...`), and whether
/// it is done.
fn follow(tasks: &TaskRegistry<Bytes>, cursor: &Cursor) -> (Vec<String>, bool) {
    let mut follow = Follow::new(cursor.clone());
    follow.read(tasks);
    let mut kinds = Vec::new();
    while let Some(frame) = follow.next_frame() {
        let text = String::from_utf8_lossy(&frame).into_owned();
        kinds.push(text.lines().next().unwrap_or_default().to_owned());
    }
    (kinds, follow.is_done())
}

fn result(text: String) -> Vec<Bytes> {
    call_frames(
        Ok(ToolResult::success(ToolOutput::text(text))),
        &Chunker::new(),
    )
}

#[test]
fn more_calls_in_flight_than_max_tasks_evict_none_of_them() {
    let mut tasks: TaskRegistry<Bytes> = TaskRegistry::new(TaskConfig::new(os_seed()).max_tasks(4));
    let calls: Vec<Cursor> = (0..6)
        .map(|_| tasks.start(Instant::ZERO).unwrap())
        .collect();
    for call in &calls {
        assert_eq!(tasks.state(call.task_id()), Some(TaskState::Running));
        assert_eq!(
            follow(&tasks, call),
            (vec!["event: task_id".to_owned()], false)
        );
    }
    // Each finishes with its own result, read whole by its follower.
    for call in &calls {
        complete(
            &mut tasks,
            call.task_id(),
            result("ok".into()),
            Instant::ZERO,
        );
        let (kinds, done) = follow(&tasks, call);
        assert_eq!(kinds, ["event: task_id", "event: end"]); // a short result is all in `end`
        assert!(done);
    }
    // Finished calls make room for new ones, oldest first, back down to `max_tasks`.
    let _new = tasks.start(Instant::from_secs(1)).unwrap();
    assert_eq!(tasks.len(), 4);
    for (i, call) in calls.iter().enumerate() {
        let kept = tasks.state(call.task_id()).is_some();
        assert_eq!(kept, i >= 3, "call {i}");
    }
}

#[test]
fn a_result_that_does_not_fit_fails_its_own_call_and_no_other() {
    let mut tasks: TaskRegistry<Bytes> =
        TaskRegistry::new(TaskConfig::new(os_seed()).max_bytes(64 << 10));
    let running = tasks.start(Instant::ZERO).unwrap();
    let big = tasks.start(Instant::ZERO).unwrap();
    // 100 KB of result: 25 chunks, over the 64 KiB bound.
    complete(
        &mut tasks,
        big.task_id(),
        result("x".repeat(100_000)),
        Instant::ZERO,
    );
    let (kinds, done) = follow(&tasks, &big);
    assert!(done);
    assert_eq!(kinds.first().map(String::as_str), Some("event: task_id"));
    assert_eq!(
        kinds.last().map(String::as_str),
        Some("event: error"),
        "{kinds:?}"
    );
    assert!(kinds[1..kinds.len() - 1]
        .iter()
        .all(|k| k == "event: chunk"));
    // The other call is still running, and completes normally once the failed one's output
    // (finished, so evictable) makes room.
    assert_eq!(tasks.state(running.task_id()), Some(TaskState::Running));
    complete(
        &mut tasks,
        running.task_id(),
        result("fits".into()),
        Instant::ZERO,
    );
    let (kinds, done) = follow(&tasks, &running);
    assert_eq!(kinds, ["event: task_id", "event: end"]); // a short result is all in `end`
    assert!(done);
}

#[test]
fn a_result_with_a_whitespace_run_longer_than_a_chunk_is_sent_as_chunks_and_parses_back() {
    // A strip-safe chunker cannot cut such a run (every piece would start or end in
    // whitespace the ORS Python client strips); it was sent as an `error` event.
    for run in [
        " ".repeat(5_000),
        "\u{3000}".repeat(2_000),
        " \t".repeat(3_000),
    ] {
        let text = format!("a{run}b \"quoted\" \\ end");
        let sent = ToolResult::success(ToolOutput::text(text));
        let frames = call_frames(Ok(sent.clone()), &Chunker::new());
        let mut decoder = ssekit::Decoder::new();
        let mut reassembler = ssekit::chunk::Reassembler::new();
        let mut payload = None;
        for frame in frames {
            decoder.feed(frame).unwrap();
            while let Some(ssekit::Frame::Event(ev)) = decoder.next_frame().unwrap() {
                assert!(ev.data().len() <= 4096);
                assert!(
                    !ev.data().starts_with(char::is_whitespace),
                    "a stripped piece"
                );
                payload = reassembler.push(&ev).unwrap().or(payload);
            }
        }
        let payload = payload.expect("chunk* then end");
        let received: ToolResult = serde_json::from_str(&payload).unwrap();
        assert_eq!(received, sent);
    }
}
