//! Malformed streams, generated: random sequences of plausible and broken events for every
//! profile. Whatever arrives, the validator does not panic, the first error sticks (every
//! later call returns it unchanged), and `finish` is `Ok` exactly when no rule broke and the
//! profile saw its terminal event. Borrowed events (`Validator::event_ref`, what
//! `next_frame_ref` hands out) get the same answers as owned ones, call for call.

#![cfg(feature = "json")]

use proptest::prelude::*;
use ssekit::profile::{agent, chat, ors, responses};
use ssekit::sequence::{Profile, SequenceError, Validator};
use ssekit::Event;

fn event(name: &str, data: &str) -> Event {
    let builder = if name.is_empty() {
        Event::builder()
    } else {
        Event::builder().event(name.to_owned()).unwrap()
    };
    builder.data(data.to_owned()).build()
}

/// Feeds `events` (with a comment between some of them) and checks the invariants, with a
/// second validator fed the same events borrowed.
fn run<P: Profile>(
    profile: impl Fn() -> P,
    events: &[(String, String)],
) -> Result<(), TestCaseError> {
    let mut v = Validator::new(profile());
    let mut by_ref = Validator::new(profile());
    let mut first: Option<SequenceError> = None;
    for (i, (name, data)) in events.iter().enumerate() {
        let result = if i % 4 == 3 {
            prop_assert_eq!(by_ref.comment("ping"), v.comment("ping"));
            v.comment("ping")
        } else {
            let event = event(name, data);
            let result = v.event(&event);
            prop_assert_eq!(by_ref.event_ref(event.as_event_ref()), result.clone());
            result
        };
        match (&first, result) {
            (None, Err(err)) => first = Some(err),
            (Some(first), result) => prop_assert_eq!(result, Err(first.clone())),
            (None, Ok(())) => {}
        }
    }
    let terminated = v.is_terminated();
    prop_assert_eq!(by_ref.is_terminated(), terminated);
    let finish = v.finish();
    prop_assert_eq!(by_ref.finish(), finish.clone());
    match &first {
        Some(err) => prop_assert_eq!(finish, Err(err.clone())),
        None if terminated => prop_assert_eq!(finish, Ok(())),
        None => {
            let unterminated = matches!(finish, Err(SequenceError::Unterminated { .. }));
            prop_assert!(unterminated);
        }
    }
    Ok(())
}

fn pick(options: &'static [&'static str]) -> impl Strategy<Value = String> {
    prop::sample::select(options).prop_map(str::to_owned)
}

fn stream(
    names: &'static [&'static str],
    datas: &'static [&'static str],
) -> impl Strategy<Value = Vec<(String, String)>> {
    prop::collection::vec((pick(names), pick(datas)), 0..24)
}

const ORS_NAMES: &[&str] = &["task_id", "chunk", "end", "error", "", "message", "ping"];
const ORS_DATA: &[&str] = &[
    "",
    "t-1",
    "{\"ok\":true,",
    "\"output\":{\"blocks\":[],\"metadata\":null,\"reward\":null,\"finished\":true}}",
    "{\"ok\":false,\"error\":\"x\"}",
    "{\"ok\":true}",
    "not json",
    "[DONE]",
];

const JSON_DATA: &[&str] = &[
    r#"{"type":"response.created","response":{"error":null}}"#,
    r#"{"type":"response.in_progress"}"#,
    r#"{"type":"response.output_text.delta","output_index":0,"delta":"a"}"#,
    r#"{"type":"response.function_call_arguments.delta","output_index":1,"delta":"{"}"#,
    r#"{"type":"response.function_call_arguments.delta","output_index":1,"delta":"}"}"#,
    r#"{"type":"response.function_call_arguments.done","output_index":1,"arguments":"{}"}"#,
    r#"{"type":"response.tool_calls.created","output_index":1}"#,
    r#"{"type":"response.completed","response":{"error":null}}"#,
    r#"{"type":"response.completed","response":{"error":{"message":"x"}}}"#,
    r#"{"type":"response.output_item.added"}"#,
    r#"{"event":"start","session_id":"s"}"#,
    r#"{"event":"step_started","step":1}"#,
    r#"{"event":"step_completed","step":1}"#,
    r#"{"event":"tool_call","tool_name":"a"}"#,
    r#"{"event":"tool_result","tool_name":"a"}"#,
    r#"{"event":"approval_requested","tool_name":"a"}"#,
    r#"{"event":"content_delta","delta":"x","block_id":"b"}"#,
    r#"{"event":"complete"}"#,
    r#"{"event":"error","message":"x"}"#,
    r#"{"event":"workflow_start"}"#,
    r#"{"event":"block_started","block_id":"b"}"#,
    r#"{"event":"block_chunk","block_id":"b"}"#,
    r#"{"event":"block_output","block_id":"b"}"#,
    r#"{"event":"block_completed","block_id":"b"}"#,
    r#"{"event":"block_error","block_id":1}"#,
    r#"{"event":"workflow_complete"}"#,
    r#"{"event":"workflow_error"}"#,
    r#"{"type":5}"#,
    r#"{"event":null}"#,
    "[DONE]",
    "[]",
    "{",
    "",
    "\u{fffd}",
];

const JSON_NAMES: &[&str] = &["", "", "", "response.created", "start", "message"];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn ors_tool_call_never_panics_and_fails_stickily(events in stream(ORS_NAMES, ORS_DATA)) {
        run(|| ors::ToolCall::new().max_result(64), &events)?;
    }

    #[test]
    fn responses_stream_never_panics_and_fails_stickily(events in stream(JSON_NAMES, JSON_DATA)) {
        run(|| responses::Stream::new().max_accumulated(8), &events)?;
    }

    #[test]
    fn agent_run_never_panics_and_fails_stickily(events in stream(JSON_NAMES, JSON_DATA)) {
        run(|| agent::Run::new().max_accumulated(8), &events)?;
    }

    #[test]
    fn workflow_never_panics_and_fails_stickily(events in stream(JSON_NAMES, JSON_DATA)) {
        run(|| agent::Workflow::new().max_blocks(2), &events)?;
    }

    #[test]
    fn chat_never_panics_and_fails_stickily(events in stream(JSON_NAMES, JSON_DATA)) {
        run(chat::Completions::new, &events)?;
    }
}
