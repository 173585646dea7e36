//! A provider's failure in a terminal event is kept, with its code and message, by every
//! profile that has one (`Profile::failure`): a valid end of the stream, never a success
//! and never dropped. Streams from the providers' documentation pages named in each test.
#![cfg(feature = "json")]

use ssekit::profile::{agent, ors, responses};
use ssekit::sequence::{Failure, Profile, Validator};
use ssekit::Event;

fn failure_of<P: Profile>(profile: P, events: &[Event]) -> Option<Failure> {
    let mut v = Validator::new(profile);
    for event in events {
        v.event(event).unwrap();
    }
    v.finish().unwrap();
    v.profile().failure()
}

fn named(name: &str, data: &str) -> Event {
    let event = Event::builder().event(name.to_owned()).unwrap();
    event.data(data.to_owned()).build()
}

#[test]
fn openai_error_event_keeps_its_code_and_message() {
    // https://platform.openai.com/docs/api-reference/responses-streaming/error
    let error = r#"{"type":"error","code":"ERR_SOMETHING","message":"Something went wrong","param":null,"sequence_number":1}"#;
    let failure = failure_of(responses::Stream::new(), &[named("error", error)]).unwrap();
    assert_eq!(failure.event.as_str(), "error");
    assert_eq!(failure.code.as_deref(), Some("ERR_SOMETHING"));
    assert_eq!(failure.message, "Something went wrong");
}

#[test]
fn response_failed_keeps_the_response_error() {
    // https://platform.openai.com/docs/api-reference/responses-streaming/response/failed
    let created = r#"{"type":"response.created","response":{"id":"resp_1","status":"in_progress","error":null,"output":[]}}"#;
    let failed = r#"{"type":"response.failed","sequence_number":1,"response":{"id":"resp_1","status":"failed","error":{"code":"server_error","message":"The model failed to generate a response."}}}"#;
    let events = [
        named("response.created", created),
        named("response.failed", failed),
    ];
    let failure = failure_of(responses::Stream::new(), &events).unwrap();
    assert_eq!(
        failure.to_string(),
        "`response.failed` (server_error): The model failed to generate a response."
    );
}

#[test]
fn an_error_then_response_failed_keeps_the_first_report() {
    let created =
        r#"{"type":"response.created","response":{"id":"r","status":"in_progress","output":[]}}"#;
    let error = r#"{"type":"error","code":"rate_limit_exceeded","message":"Slow down"}"#;
    let failed = r#"{"type":"response.failed","response":{"id":"r","status":"failed","error":{"code":"x","message":"y"}}}"#;
    let events = [
        named("response.created", created),
        named("error", error),
        named("response.failed", failed),
    ];
    let failure = failure_of(responses::Stream::new(), &events).unwrap();
    assert_eq!(
        (failure.code.as_deref(), failure.message.as_str()),
        (Some("rate_limit_exceeded"), "Slow down")
    );
}

#[test]
fn a_completed_response_is_no_failure() {
    let created =
        r#"{"type":"response.created","response":{"id":"r","status":"in_progress","output":[]}}"#;
    let done =
        r#"{"type":"response.completed","response":{"id":"r","status":"completed","error":null}}"#;
    let events = [
        named("response.created", created),
        named("response.completed", done),
    ];
    assert_eq!(failure_of(responses::Stream::new(), &events), None);
}

#[test]
fn an_ors_error_and_an_agent_error_are_failures() {
    let failure = failure_of(ors::ToolCall::new(), &[named("error", "Session not found")]).unwrap();
    assert_eq!(
        (failure.code, failure.message.as_str()),
        (None, "Session not found")
    );
    let events = [
        Event::message(r#"{"event":"start","run_id":"r1","session_id":"s1"}"#),
        Event::message(r#"{"event":"error","message":"Tool crashed","code":"TOOL_ERROR"}"#),
    ];
    let failure = failure_of(agent::Run::new(), &events).unwrap();
    assert_eq!(failure.to_string(), "`error` (TOOL_ERROR): Tool crashed");
}

#[test]
fn a_workflow_error_keeps_its_error_string_or_object() {
    for (error, want) in [
        (r#""Block 3 timed out""#, "Block 3 timed out"),
        (
            r#"{"message":"Block 3 timed out","code":504}"#,
            "Block 3 timed out",
        ),
    ] {
        let events = [
            Event::message(r#"{"event":"workflow_start","execution_id":"e1"}"#),
            Event::message(format!(
                r#"{{"event":"workflow_error","execution_id":"e1","error":{error}}}"#
            )),
        ];
        let failure = failure_of(agent::Workflow::new(), &events).unwrap();
        assert_eq!(failure.message, want);
    }
}

#[test]
fn a_failure_without_a_readable_message_keeps_the_data() {
    // `error` whose data is not the documented object: still a failure, the data kept.
    let failure = failure_of(
        responses::Stream::new(),
        &[named("error", r#"{"type":"error","detail":"x"}"#)],
    );
    let failure = failure.unwrap();
    assert_eq!(failure.code, None);
    assert_eq!(failure.message, r#"{"type":"error","detail":"x"}"#);
}
