//! The A2A streaming profile on the streams of the A2A specification, each rule with a
//! stream that keeps it and one that breaks it, cut streams, failures, and property tests
//! over generated streams. Every stream goes through the real decoder, and through both
//! `Validator::event` (owned frames) and `Validator::event_ref` (borrowed frames), which
//! must answer alike.
//!
//! The documented streams are those of the A2A 0.3 specification,
//! <https://a2a-protocol.org/v0.3.0/specification/> (the repository's `docs/specification.md`
//! at tag v0.3.0): §9.3 "Streaming Task Execution (SSE)" (a task, three artifact chunks, a
//! final status update), §9.2's direct reply (a `Message` result) and §8.2's
//! `TaskNotFoundError` (-32001, "Task not found"). The specification prints each event's
//! JSON over several lines; here each is one `data:` line.

#![cfg(feature = "json")]

#[path = "support/both_ways.rs"]
mod both_ways;

use proptest::prelude::*;
use ssekit::profile::a2a::{self, Stream, TaskState};
use ssekit::sequence::{Failure, Profile, Rule, SequenceError, Validator, UNTERMINATED};
use ssekit::Event;

/// Validates `sse` with owned and with borrowed frames ([`both_ways`]); both must agree.
fn check_with(profile: impl Fn() -> Stream, sse: &str) -> (Result<(), SequenceError>, Stream) {
    let (result, owned, borrowed) = both_ways::validate_both_ways(profile, sse);
    assert_eq!(owned.task_id(), borrowed.task_id());
    assert_eq!(owned.state(), borrowed.state());
    (result, owned)
}

#[track_caller]
fn valid_with(profile: impl Fn() -> Stream, sse: &str) -> Stream {
    match check_with(profile, sse) {
        (Ok(()), p) => p,
        (Err(err), _) => panic!("{err}\n{sse}"),
    }
}

#[track_caller]
fn valid(sse: &str) -> Stream {
    valid_with(Stream::new, sse)
}

/// The rule `sse` breaks and the index of the event that broke it.
#[track_caller]
fn broken_with(profile: impl Fn() -> Stream, sse: &str) -> (Rule, Option<u64>) {
    match check_with(profile, sse) {
        (Ok(()), _) => panic!("stream was accepted:\n{sse}"),
        (Err(err), _) => (err.rule(), err.index()),
    }
}

#[track_caller]
fn broken(sse: &str) -> (Rule, Option<u64>) {
    broken_with(Stream::new, sse)
}

/// `data` lines as an SSE stream, one event each.
fn sse(events: &[&str]) -> String {
    events
        .iter()
        .map(|data| format!("data: {data}\n\n"))
        .collect()
}

// ---------------------------------------------------------------------------------------
// The specification's streams.

// §9.3 "Streaming Task Execution (SSE)", the server's events:
// https://a2a-protocol.org/v0.3.0/specification/#93-streaming-task-execution-sse
const SPEC_TASK: &str = r#"{"jsonrpc": "2.0", "id": 1, "result": {"id": "225d6247-06ba-4cda-a08b-33ae35c8dcfa", "contextId": "05217e44-7e9f-473e-ab4f-2c2dde50a2b1", "status": {"state": "submitted", "timestamp":"2025-04-02T16:59:25.331844"}, "history": [{"role": "user", "parts": [{"kind": "text", "text": "write a long paper describing the attached pictures"}, {"kind": "file", "file": {"mimeType": "image/png", "data": "<base64-encoded-content>"}}], "messageId": "bbb7dee1-cf5c-4683-8a6f-4114529da5eb", "taskId": "225d6247-06ba-4cda-a08b-33ae35c8dcfa", "contextId": "05217e44-7e9f-473e-ab4f-2c2dde50a2b1"}], "kind": "task", "metadata": {}}}"#;
const SPEC_CHUNK_1: &str = r#"{"jsonrpc": "2.0", "id": 1, "result": {"taskId": "225d6247-06ba-4cda-a08b-33ae35c8dcfa", "contextId": "05217e44-7e9f-473e-ab4f-2c2dde50a2b1", "artifact": {"artifactId": "9b6934dd-37e3-4eb1-8766-962efaab63a1", "parts": [{"kind":"text", "text": "<section 1...>"}]}, "append": false, "lastChunk": false, "kind":"artifact-update"}}"#;
/// The specification prints this one with a trailing comma after `parts` (not JSON); here
/// without it (see `the_specifications_trailing_comma_is_not_json`).
const SPEC_CHUNK_2: &str = r#"{"jsonrpc": "2.0", "id": 1, "result": {"taskId": "225d6247-06ba-4cda-a08b-33ae35c8dcfa", "contextId": "05217e44-7e9f-473e-ab4f-2c2dde50a2b1", "artifact": {"artifactId": "9b6934dd-37e3-4eb1-8766-962efaab63a1", "parts": [{"kind":"text", "text": "<section 2...>"}]}, "append": true, "lastChunk": false, "kind":"artifact-update"}}"#;
const SPEC_CHUNK_3: &str = r#"{"jsonrpc": "2.0", "id": 1, "result": {"taskId": "225d6247-06ba-4cda-a08b-33ae35c8dcfa", "contextId": "05217e44-7e9f-473e-ab4f-2c2dde50a2b1", "artifact": {"artifactId": "9b6934dd-37e3-4eb1-8766-962efaab63a1", "parts": [{"kind":"text", "text": "<section 3...>"}]}, "append": true, "lastChunk": true, "kind":"artifact-update"}}"#;
const SPEC_FINAL: &str = r#"{"jsonrpc": "2.0", "id": 1, "result": {"taskId": "225d6247-06ba-4cda-a08b-33ae35c8dcfa", "contextId": "05217e44-7e9f-473e-ab4f-2c2dde50a2b1", "status": {"state": "completed", "timestamp":"2025-04-02T16:59:35.331844"}, "final": true, "kind":"status-update"}}"#;

const SPEC_STREAM: [&str; 5] = [
    SPEC_TASK,
    SPEC_CHUNK_1,
    SPEC_CHUNK_2,
    SPEC_CHUNK_3,
    SPEC_FINAL,
];

const TASK_ID: &str = "225d6247-06ba-4cda-a08b-33ae35c8dcfa";
const CONTEXT_ID: &str = "05217e44-7e9f-473e-ab4f-2c2dde50a2b1";

// §9.2 "Basic Execution": the direct reply without a task, as the one result of a stream.
// https://a2a-protocol.org/v0.3.0/specification/#92-basic-execution-synchronous-polling-style
const SPEC_MESSAGE: &str = r#"{"jsonrpc": "2.0", "id": 1, "result": {"messageId": "363422be-b0f9-4692-a24d-278670e7c7f1", "contextId": "c295ea44-7543-4f78-b524-7a38915ad6e4", "parts": [{"kind": "text", "text": "Why did the chicken cross the road? To get to the other side!"}], "kind": "message", "metadata": {}}}"#;

// §8.2 "A2A-Specific Errors": TaskNotFoundError, -32001, "Task not found" (what
// `tasks/resubscribe` answers for an unknown task).
// https://a2a-protocol.org/v0.3.0/specification/#82-a2a-specific-errors
const SPEC_NOT_FOUND: &str =
    r#"{"jsonrpc": "2.0", "id": 1, "error": {"code": -32001, "message": "Task not found"}}"#;

/// The result of the spec's task stream with `edit` applied to event `index`.
fn spec_with(index: usize, edit: impl Fn(&str) -> String) -> String {
    let mut events: Vec<String> = SPEC_STREAM.iter().map(|e| e.to_string()).collect();
    events[index] = edit(&events[index]);
    let refs: Vec<&str> = events.iter().map(String::as_str).collect();
    sse(&refs)
}

#[test]
fn the_specifications_streaming_example_is_valid() {
    let p = valid(&sse(&SPEC_STREAM));
    assert_eq!(p.task_id(), Some(TASK_ID));
    assert_eq!(p.context_id(), Some(CONTEXT_ID));
    assert_eq!(p.state(), Some(TaskState::Completed));
    assert_eq!(p.failure(), None);
    // Keep-alive comments anywhere, and the JSON split over several `data:` lines.
    let with_comments: String = SPEC_STREAM
        .iter()
        .map(|data| format!(": ping\ndata: {}\n\n", data.replacen(", ", ",\ndata: ", 3)))
        .collect();
    valid(&with_comments);
}

#[test]
fn the_specifications_trailing_comma_is_not_json() {
    // As printed in §9.3: `"parts": [...],` then `}`.
    let printed = SPEC_CHUNK_2.replace(r#"<section 2...>"}]}"#, r#"<section 2...>"}],}"#);
    let stream = sse(&[SPEC_TASK, SPEC_CHUNK_1, &printed, SPEC_CHUNK_3, SPEC_FINAL]);
    assert_eq!(broken(&stream), (a2a::JSON, Some(2)));
}

#[test]
fn a_direct_reply_is_one_message() {
    let p = valid(&sse(&[SPEC_MESSAGE]));
    assert_eq!(p.task_id(), None);
    assert_eq!(p.context_id(), Some("c295ea44-7543-4f78-b524-7a38915ad6e4"));
    assert_eq!(p.failure(), None);
    // Nothing follows it.
    assert_eq!(
        broken(&sse(&[SPEC_MESSAGE, SPEC_MESSAGE])),
        (a2a::AFTER_TERMINAL, Some(1))
    );
    // A message after task events ends the stream too.
    let reply = SPEC_MESSAGE.replace(
        "\"contextId\": \"c295ea44-7543-4f78-b524-7a38915ad6e4\"",
        &format!("\"taskId\": \"{TASK_ID}\", \"contextId\": \"{CONTEXT_ID}\", \"role\": \"agent\""),
    );
    valid(&sse(&[SPEC_TASK, SPEC_CHUNK_1, &reply]));
}

#[test]
fn a_json_rpc_error_is_a_terminal_failure() {
    let (result, p) = check_with(Stream::new, &sse(&[SPEC_NOT_FOUND]));
    result.unwrap();
    let failure = p.failure().unwrap();
    assert_eq!(
        failure,
        Failure::new("error", Some("-32001".into()), "Task not found")
    );
    // After events, too; nothing follows it.
    let p = valid(&sse(&[SPEC_TASK, SPEC_CHUNK_1, SPEC_NOT_FOUND]));
    assert_eq!(p.failure().unwrap().message, "Task not found");
    assert_eq!(
        broken(&sse(&[SPEC_TASK, SPEC_NOT_FOUND, SPEC_FINAL])),
        (a2a::AFTER_TERMINAL, Some(2))
    );
    // The reported name of an event after it is the kind; of the error, `error`.
    let mut v = Validator::new(Stream::new());
    v.event(&Event::message(SPEC_NOT_FOUND)).unwrap();
    let SequenceError::Violation(violation) = v.event(&Event::message(SPEC_FINAL)).unwrap_err()
    else {
        panic!()
    };
    assert_eq!(violation.event_type.as_str(), "status-update");
}

#[test]
fn a_failed_or_rejected_final_state_is_a_failure() {
    let failed = SPEC_FINAL.replace(
        r#""state": "completed", "timestamp":"2025-04-02T16:59:35.331844""#,
        r#""state": "failed", "message": {"role": "agent", "messageId": "m9", "kind": "message", "parts": [{"kind": "text", "text": "The image could not be read."}, {"kind": "data", "data": {}}, {"kind": "text", "text": "Try a PNG."}]}"#,
    );
    let p = valid(&sse(&[SPEC_TASK, SPEC_CHUNK_1, &failed]));
    assert_eq!(p.state(), Some(TaskState::Failed));
    assert_eq!(
        p.failure(),
        Some(Failure::new(
            "status-update",
            Some("failed".into()),
            "The image could not be read.\nTry a PNG."
        ))
    );
    // Without a status message, the state says it.
    let rejected = SPEC_FINAL.replace("\"completed\"", "\"rejected\"");
    let p = valid(&sse(&[SPEC_TASK, &rejected]));
    assert_eq!(
        p.failure(),
        Some(Failure::new(
            "status-update",
            Some("rejected".into()),
            "task rejected"
        ))
    );
    // A task in a failed state ends the stream and reports it too.
    let failed_task = SPEC_TASK.replace("\"submitted\"", "\"failed\"");
    let p = valid(&sse(&[&failed_task]));
    assert_eq!(p.failure().unwrap().event.as_str(), "task");
    // Canceled is no failure.
    let canceled = SPEC_FINAL.replace("\"completed\"", "\"canceled\"");
    assert_eq!(valid(&sse(&[SPEC_TASK, &canceled])).failure(), None);
}

#[test]
fn cut_streams_are_unterminated() {
    for cut in 0..SPEC_STREAM.len() {
        assert_eq!(
            broken(&sse(&SPEC_STREAM[..cut])),
            (UNTERMINATED, None),
            "cut after {cut} events"
        );
    }
    // A non-final update in an interrupted state does not end the stream; a final one does.
    let waiting = SPEC_FINAL.replace("\"completed\"", "\"input-required\"");
    valid(&sse(&[SPEC_TASK, &waiting]));
    let not_final = waiting.replace("\"final\": true", "\"final\": false");
    assert_eq!(broken(&sse(&[SPEC_TASK, &not_final])), (UNTERMINATED, None));
}

#[test]
fn a_task_in_an_interrupted_state_may_end_the_stream() {
    // The official Python SDK closes the stream after a task waiting for input.
    let waiting = SPEC_TASK.replace("\"submitted\"", "\"input-required\"");
    assert!(valid(&sse(&[&waiting])).is_terminated());
    // Or goes on.
    valid(&sse(&[&waiting, SPEC_CHUNK_1, SPEC_FINAL]));
    let auth = SPEC_TASK.replace("\"submitted\"", "\"auth-required\"");
    valid(&sse(&[&auth]));
    // A task in a terminal state ends it.
    let done = SPEC_TASK.replace("\"submitted\"", "\"completed\"");
    valid(&sse(&[&done]));
    assert_eq!(
        broken(&sse(&[&done, SPEC_FINAL])),
        (a2a::AFTER_TERMINAL, Some(1))
    );
}

// ---------------------------------------------------------------------------------------
// Each rule broken.

#[test]
fn json() {
    for bad in [
        "[1]",
        "\"x\"",
        "{",
        "",
        "[DONE]",
        "null",
        r#"{"jsonrpc":"2.0"} x"#,
    ] {
        assert_eq!(
            broken(&sse(&[SPEC_TASK, bad])),
            (a2a::JSON, Some(1)),
            "{bad}"
        );
    }
}

#[test]
fn envelope() {
    let edits: [(&str, &str); 10] = [
        (r#""jsonrpc": "2.0", "#, ""),
        (r#""jsonrpc": "2.0""#, r#""jsonrpc": "1.0""#),
        (r#""jsonrpc": "2.0""#, r#""jsonrpc": 2.0"#),
        (
            r#""jsonrpc": "2.0""#,
            r#""jsonrpc": "2.0", "jsonrpc": "2.0""#,
        ),
        (r#""id": 1, "#, ""),
        (r#""id": 1"#, r#""id": {}"#),
        (r#""id": 1"#, r#""id": [1]"#),
        (
            r#""result": "#,
            r#""error": {"code": 1, "message": "x"}, "result": "#,
        ),
        (r#""result": "#, r#""res": "#),
        (r#""id": 1"#, r#""id": 1, "result": 5"#),
    ];
    for (from, to) in edits {
        let stream = spec_with(1, |e| e.replacen(from, to, 1));
        assert_eq!(broken(&stream), (a2a::ENVELOPE, Some(1)), "{from} -> {to}");
    }
    // An error's code is an integer and its message a string.
    for error in [
        r#"{"code": "-32001", "message": "Task not found"}"#,
        r#"{"code": -32001.5, "message": "Task not found"}"#,
        r#"{"code": -32001}"#,
        r#"{"message": "Task not found"}"#,
        r#"{"code": -32001, "message": 1}"#,
        r#""Task not found""#,
    ] {
        let data = format!(r#"{{"jsonrpc": "2.0", "id": 1, "error": {error}}}"#);
        assert_eq!(broken(&sse(&[&data])), (a2a::ENVELOPE, Some(0)), "{error}");
    }
    // `null` for the absent member, `null` as the id, and an error's `data`, are fine.
    valid(&sse(&[
        &SPEC_NOT_FOUND.replace(r#""id": 1, "#, r#""id": 1, "result": null, "#)
    ]));
    valid(&sse(&[
        &SPEC_NOT_FOUND.replace(r#""id": 1"#, r#""id": null"#)
    ]));
    valid(&sse(&[
        &SPEC_NOT_FOUND.replace("found\"", "found\", \"data\": [1]")
    ]));
    let null_error = |e: &str| e.replacen(r#""id": 1, "#, r#""id": 1, "error": null, "#, 1);
    valid(&sse(&SPEC_STREAM
        .map(null_error)
        .each_ref()
        .map(String::as_str)));
}

#[test]
fn same_id() {
    valid(&sse(&SPEC_STREAM
        .map(|e| e.replace(r#""id": 1"#, r#""id": "req-7""#))
        .each_ref()
        .map(String::as_str)));
    for other in [
        r#""id": 2"#,
        r#""id": "1""#,
        r#""id": 1.0"#,
        r#""id": null"#,
    ] {
        let stream = spec_with(3, |e| e.replacen(r#""id": 1"#, other, 1));
        assert_eq!(broken(&stream), (a2a::SAME_ID, Some(3)), "{other}");
    }
}

#[test]
fn kind() {
    for (from, to) in [
        (r#""kind":"artifact-update""#, r#""kind":"artifact""#),
        (r#""kind":"artifact-update""#, r#""kind":1"#),
        (r#", "kind":"artifact-update""#, ""),
    ] {
        let stream = spec_with(1, |e| e.replacen(from, to, 1));
        assert_eq!(broken(&stream), (a2a::KIND, Some(1)), "{to}");
    }
    // A2A 1.0's StreamResponse has no `kind`.
    let v1 = r#"{"jsonrpc": "2.0", "id": 1, "result": {"statusUpdate": {"taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"}}}}"#;
    assert_eq!(broken(&sse(&[v1])), (a2a::KIND, Some(0)));
}

#[test]
fn fields() {
    let cases: [(usize, &str, &str); 15] = [
        // The task.
        (0, r#""id": "225d6247-06ba-4cda-a08b-33ae35c8dcfa", "#, ""),
        (
            0,
            r#""contextId": "05217e44-7e9f-473e-ab4f-2c2dde50a2b1", "status""#,
            r#""status""#,
        ),
        (0, r#""status": {"#, r#""status": 1, "s": {"#),
        (0, r#""state": "submitted""#, r#""state": 1"#),
        (0, r#""kind": "task""#, r#""kind": "task", "artifacts": {}"#),
        (
            0,
            r#""kind": "task""#,
            r#""kind": "task", "artifacts": [{"parts": []}]"#,
        ),
        // An artifact update.
        (
            1,
            r#""taskId": "225d6247-06ba-4cda-a08b-33ae35c8dcfa""#,
            r#""taskId": 7"#,
        ),
        (
            1,
            r#""artifactId": "9b6934dd-37e3-4eb1-8766-962efaab63a1", "#,
            "",
        ),
        (
            1,
            r#""parts": [{"kind":"text", "text": "<section 1...>"}]"#,
            r#""parts": {}"#,
        ),
        (1, r#""append": false"#, r#""append": "no""#),
        (1, r#""lastChunk": false"#, r#""lastChunk": 0"#),
        (
            1,
            r#""append": false"#,
            r#""append": false, "append": false"#,
        ),
        // The final status update.
        (4, r#""final": true"#, r#""final": "true""#),
        (
            4,
            r#""contextId": "05217e44-7e9f-473e-ab4f-2c2dde50a2b1", "#,
            "",
        ),
        (
            4,
            r#""status": {"state": "completed", "timestamp":"2025-04-02T16:59:35.331844"}"#,
            r#""status": null"#,
        ),
    ];
    for (index, from, to) in cases {
        let stream = spec_with(index, |e| {
            assert!(e.contains(from), "{from}");
            e.replacen(from, to, 1)
        });
        let index = u64::try_from(index).unwrap();
        assert_eq!(
            broken(&stream),
            (a2a::FIELDS, Some(index)),
            "{from} -> {to}"
        );
    }
    // The message's fields.
    for (from, to) in [
        (
            r#""messageId": "363422be-b0f9-4692-a24d-278670e7c7f1", "#,
            "",
        ),
        (r#""parts": ["#, r#""parts": 1, "x": ["#),
        (
            r#""kind": "message""#,
            r#""kind": "message", "role": "assistant""#,
        ),
        (r#""kind": "message""#, r#""kind": "message", "taskId": 1"#),
    ] {
        let data = SPEC_MESSAGE.replacen(from, to, 1);
        assert_eq!(broken(&sse(&[&data])), (a2a::FIELDS, Some(0)), "{to}");
    }
    // Fields of other kinds are not read; unknown fields neither.
    let odd = SPEC_FINAL.replace(
        r#""final": true"#,
        r#""final": true, "artifact": 5, "append": "x", "parts": null, "extra": [1]"#,
    );
    valid(&sse(&[SPEC_TASK, &odd]));
    // `final` absent reads as false.
    let no_final = SPEC_FINAL
        .replace(r#""final": true, "#, "")
        .replace("\"completed\"", "\"working\"");
    assert_eq!(broken(&sse(&[SPEC_TASK, &no_final])), (UNTERMINATED, None));
    // A string with an escape that stands for no character.
    let lone = SPEC_CHUNK_1.replace("9b6934dd", "\\ud800");
    assert_eq!(broken(&sse(&[SPEC_TASK, &lone])), (a2a::FIELDS, Some(1)));
    // Escaped keys are read as keys.
    let escaped = SPEC_FINAL.replace(r#""final""#, r#""fin\u0061l""#);
    valid(&sse(&[SPEC_TASK, &escaped]));
}

#[test]
fn state() {
    for state in ["done", "COMPLETED", "TASK_STATE_COMPLETED", ""] {
        let stream = spec_with(4, |e| e.replace("\"completed\"", &format!("\"{state}\"")));
        assert_eq!(broken(&stream), (a2a::STATE, Some(4)), "{state}");
    }
    for state in [
        "submitted",
        "working",
        "input-required",
        "completed",
        "canceled",
        "failed",
        "rejected",
        "auth-required",
        "unknown",
    ] {
        let stream = spec_with(4, |e| e.replace("\"completed\"", &format!("\"{state}\"")));
        valid(&stream);
        assert_eq!(TaskState::of(state).map(TaskState::as_str), Some(state));
    }
}

#[test]
fn same_task() {
    let other_task = spec_with(2, |e| e.replacen("225d6247", "ffffffff", 1));
    assert_eq!(broken(&other_task), (a2a::SAME_TASK, Some(2)));
    let other_context = spec_with(4, |e| e.replacen("05217e44", "ffffffff", 1));
    assert_eq!(broken(&other_context), (a2a::SAME_TASK, Some(4)));
    // The first update fixes them when no task came first.
    let stream = sse(&[
        SPEC_CHUNK_1,
        SPEC_CHUNK_2,
        &SPEC_FINAL.replacen("225d6247", "0", 1),
    ]);
    assert_eq!(broken(&stream), (a2a::SAME_TASK, Some(2)));
    // A message that names another task.
    let reply = SPEC_MESSAGE.replace(
        r#""kind": "message""#,
        r#""kind": "message", "taskId": "t2""#,
    );
    assert_eq!(
        broken(&sse(&[SPEC_TASK, &reply])),
        (a2a::SAME_TASK, Some(1))
    );
}

#[test]
fn terminal_state() {
    for state in ["completed", "failed", "canceled", "rejected"] {
        let update = SPEC_FINAL
            .replace("\"completed\"", &format!("\"{state}\""))
            .replace(r#""final": true"#, r#""final": false"#);
        assert_eq!(
            broken(&sse(&[SPEC_TASK, &update, SPEC_FINAL])),
            (a2a::TERMINAL_STATE, Some(1)),
            "{state}"
        );
    }
    // A final update may carry any state.
    let working = SPEC_FINAL.replace("\"completed\"", "\"working\"");
    valid(&sse(&[SPEC_TASK, &working]));
}

#[test]
fn append() {
    // The second chunk appends to an artifact not seen.
    assert_eq!(
        broken(&sse(&[SPEC_TASK, SPEC_CHUNK_2, SPEC_FINAL])),
        (a2a::APPEND, Some(1))
    );
    let other = SPEC_CHUNK_3.replace("9b6934dd", "00000000");
    assert_eq!(
        broken(&sse(&[SPEC_TASK, SPEC_CHUNK_1, &other, SPEC_FINAL])),
        (a2a::APPEND, Some(2))
    );
    // An artifact in the task counts as seen.
    let task = SPEC_TASK.replace(
        r#""kind": "task""#,
        r#""kind": "task", "artifacts": [{"artifactId": "9b6934dd-37e3-4eb1-8766-962efaab63a1", "parts": []}]"#,
    );
    valid(&sse(&[&task, SPEC_CHUNK_2, SPEC_FINAL]));
}

#[test]
fn after_terminal() {
    let mut events = SPEC_STREAM.to_vec();
    events.push(SPEC_CHUNK_1);
    assert_eq!(broken(&sse(&events)), (a2a::AFTER_TERMINAL, Some(5)));
    let mut events = SPEC_STREAM.to_vec();
    events.push(SPEC_FINAL);
    assert_eq!(broken(&sse(&events)), (a2a::AFTER_TERMINAL, Some(5)));
}

#[test]
fn snapshot_first() {
    // A resubscription that opens with the task's snapshot, with the artifact streamed so
    // far, whose chunks go on.
    let working = SPEC_TASK.replace("\"submitted\"", "\"working\"").replace(
        r#""kind": "task""#,
        r#""kind": "task", "artifacts": [{"artifactId": "9b6934dd-37e3-4eb1-8766-962efaab63a1", "parts": [{"kind":"text", "text": "<section 1...>"}]}]"#,
    );
    let p = valid_with(
        Stream::resubscribe,
        &sse(&[&working, SPEC_CHUNK_2, SPEC_CHUNK_3, SPEC_FINAL]),
    );
    assert_eq!(p.state(), Some(TaskState::Completed));
    // Or the error for an unknown task.
    let p = valid_with(Stream::resubscribe, &sse(&[SPEC_NOT_FOUND]));
    assert_eq!(p.failure().unwrap().code.as_deref(), Some("-32001"));
    // Not an update first.
    assert_eq!(
        broken_with(Stream::resubscribe, &sse(&[SPEC_CHUNK_1, SPEC_FINAL])),
        (a2a::SNAPSHOT_FIRST, Some(0))
    );
    assert_eq!(
        broken_with(Stream::resubscribe, &sse(&[SPEC_MESSAGE])),
        (a2a::SNAPSHOT_FIRST, Some(0))
    );
    // `message/stream` may open with an update.
    valid(&sse(&[SPEC_CHUNK_1, SPEC_FINAL]));
}

#[test]
fn too_large() {
    let chunk = |id: usize| SPEC_CHUNK_1.replace("9b6934dd", &format!("{id:08}"));
    let chunks: Vec<String> = (0..3).map(chunk).collect();
    let mut events: Vec<&str> = vec![SPEC_TASK];
    events.extend(chunks.iter().map(String::as_str));
    events.push(SPEC_FINAL);
    valid_with(|| Stream::new().max_artifacts(3), &sse(&events));
    assert_eq!(
        broken_with(|| Stream::new().max_artifacts(2), &sse(&events)),
        (a2a::TOO_LARGE, Some(3))
    );
    // Ids of 36 bytes each.
    valid_with(|| Stream::new().max_kept(108), &sse(&events));
    assert_eq!(
        broken_with(|| Stream::new().max_kept(107), &sse(&events)),
        (a2a::TOO_LARGE, Some(3))
    );
    // The same artifact again costs nothing.
    let again = [
        SPEC_TASK,
        SPEC_CHUNK_1,
        SPEC_CHUNK_1,
        SPEC_CHUNK_2,
        SPEC_FINAL,
    ];
    valid_with(|| Stream::new().max_artifacts(1), &sse(&again));
}

// ---------------------------------------------------------------------------------------
// Generated streams.

/// The stream an agent sends for a task: a task (or not), artifact chunks, status updates,
/// then a final update, a terminal task, a message or an error.
fn generated() -> impl Strategy<Value = (Vec<String>, bool)> {
    let chunk = (0u8..3, any::<bool>(), "[a-z ]{0,8}");
    let end = 0u8..5;
    (
        any::<bool>(),
        proptest::collection::vec(chunk, 0..8),
        end,
        any::<bool>(),
    )
        .prop_map(|(task_first, chunks, end, string_id)| {
            let id = if string_id { r#""r-1""# } else { "7" };
            let env = |result: String| format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#);
            let mut events = Vec::new();
            if task_first {
                events.push(env(
                    r#"{"kind":"task","id":"t","contextId":"c","status":{"state":"submitted"}}"#
                        .to_string(),
                ));
            }
            let mut seen = [false; 3];
            for (artifact, append, text) in chunks {
                let append = append && seen[usize::from(artifact)];
                seen[usize::from(artifact)] = true;
                events.push(env(format!(
                    r#"{{"kind":"artifact-update","taskId":"t","contextId":"c","artifact":{{"artifactId":"a{artifact}","parts":[{{"kind":"text","text":"{text}"}}]}},"append":{append}}}"#
                )));
                events.push(env(
                    r#"{"kind":"status-update","taskId":"t","contextId":"c","status":{"state":"working"},"final":false}"#
                        .to_string(),
                ));
            }
            let failed = match end {
                0 => {
                    events.push(env(r#"{"kind":"status-update","taskId":"t","contextId":"c","status":{"state":"completed"},"final":true}"#.to_string()));
                    false
                }
                1 => {
                    events.push(env(r#"{"kind":"status-update","taskId":"t","contextId":"c","status":{"state":"failed","message":{"role":"agent","messageId":"m","parts":[{"kind":"text","text":"boom"}]}},"final":true}"#.to_string()));
                    true
                }
                2 => {
                    events.push(env(r#"{"kind":"task","id":"t","contextId":"c","status":{"state":"completed"}}"#.to_string()));
                    false
                }
                3 => {
                    events.push(env(r#"{"kind":"message","messageId":"m","role":"agent","taskId":"t","contextId":"c","parts":[]}"#.to_string()));
                    false
                }
                _ => {
                    events.push(format!(
                        r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32603,"message":"Internal error"}}}}"#
                    ));
                    true
                }
            };
            (events, failed)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Every generated stream is valid whole, reports a failure exactly when it ends in
    /// one, and is unterminated when cut before its last event.
    #[test]
    fn generated_streams_are_valid_and_cut_ones_are_not((events, failed) in generated(), cut in any::<prop::sample::Index>()) {
        let refs: Vec<&str> = events.iter().map(String::as_str).collect();
        let (result, p) = check_with(Stream::new, &sse(&refs));
        prop_assert_eq!(result, Ok(()));
        prop_assert_eq!(p.failure().is_some(), failed);
        let cut = cut.index(refs.len());
        let (result, _) = check_with(Stream::new, &sse(&refs[..cut]));
        prop_assert_eq!(result.map_err(|e| e.rule()), Err(UNTERMINATED));
    }

    /// Arbitrary data never panics, and owned and borrowed events agree.
    #[test]
    fn arbitrary_data_never_panics(datas in proptest::collection::vec(prop_oneof![
        Just(SPEC_TASK.to_string()),
        Just(SPEC_CHUNK_1.to_string()),
        Just(SPEC_CHUNK_2.to_string()),
        Just(SPEC_FINAL.to_string()),
        Just(SPEC_MESSAGE.to_string()),
        Just(SPEC_NOT_FOUND.to_string()),
        "\\PC{0,40}",
        r#"\{"jsonrpc":"2.0","id":(1|"1"|null),"(result|error)":\{"kind":"(task|message|status-update|artifact-update)","(id|taskId|contextId|final|append|status|artifact|parts|code|message)":("t"|1|true|null|\[\]|\{\}|\{"state":"(failed|working)"\}|\{"artifactId":"a"\})\}\}"#,
    ], 0..8)) {
        let refs: Vec<&str> = datas.iter().map(|d| d.as_str()).filter(|d| !d.contains(['\n', '\r'])).collect();
        let _ = check_with(Stream::new, &sse(&refs));
        let _ = check_with(Stream::resubscribe, &sse(&refs));
        let _ = check_with(|| Stream::new().max_artifacts(1).max_kept(4), &sse(&refs));
    }
}
