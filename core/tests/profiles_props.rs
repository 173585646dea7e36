//! Malformed streams, generated: random sequences of plausible and broken events for every
//! profile. Whatever arrives, the validator does not panic, the first error sticks (every
//! later call returns it unchanged), and `finish` is `Ok` exactly when no rule broke and the
//! profile saw its terminal event. Borrowed events (`Validator::event_ref`, what
//! `next_frame_ref` hands out) get the same answers as owned ones, call for call.
//!
//! And Responses tool calls laid out as the spec does, with the arguments cut at random (or
//! none: no delta, or empty ones, and `""`): the stream is valid, another item id in any
//! later event of a call breaks `ITEM_ID` there, and a call without its announcing
//! `in_progress` leaves one call unannounced, whose first argument event breaks
//! `TOOL_CALL_ANNOUNCED`.

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
    r#"{"type":"response.created","response":{"id":"r1","status":"in_progress","output":[]}}"#,
    r#"{"type":"response.created","response":{"id":"r1","status":"queued","output":[{}]}}"#,
    r#"{"type":"response.in_progress"}"#,
    r#"{"type":"response.in_progress","response":{"id":"r1","status":"in_progress","output":[{}]}}"#,
    r#"{"type":"response.in_progress","response":{"id":"r2"}}"#,
    r#"{"type":"response.output_text.delta","output_index":0,"delta":"a"}"#,
    r#"{"type":"response.output_text.delta","item_id":"m","output_index":0,"delta":"a"}"#,
    r#"{"type":"response.function_call_arguments.delta","item_id":"f","output_index":1,"delta":"{"}"#,
    r#"{"type":"response.function_call_arguments.delta","item_id":"f","output_index":1,"delta":"}"}"#,
    r#"{"type":"response.function_call_arguments.delta","item_id":"g","output_index":1,"delta":""}"#,
    r#"{"type":"response.function_call_arguments.delta","item_id":"g","output_index":2,"delta":"{}"}"#,
    r#"{"type":"response.function_call_arguments.done","id":"f","output_index":1,"arguments":"{}"}"#,
    r#"{"type":"response.function_call_arguments.done","item_id":"g","output_index":2,"arguments":"{}"}"#,
    r#"{"type":"response.function_call_arguments.done","output_index":1,"arguments":"{}"}"#,
    r#"{"type":"response.tool_calls.created","output_index":1}"#,
    r#"{"type":"response.tool_calls.created","item_id":"f","output_index":1,"tool_call":{}}"#,
    r#"{"type":"response.completed","response":{"error":null}}"#,
    r#"{"type":"response.completed","response":{"id":"r1","status":"completed","error":null}}"#,
    r#"{"type":"response.completed","response":{"status":"completed","error":{"message":"x"}}}"#,
    r#"{"type":"response.completed","response":{"error":{"message":"x"}}}"#,
    r#"{"type":"response.failed","response":{"id":"r1","status":"failed"}}"#,
    r#"{"type":"response.output_item.added"}"#,
    r#"{"type":"response.mcp_call.arguments_delta","output_index":"1","delta":{}}"#,
    r#"{"type":"response.function_call_arguments.done","id":"h","output_index":3,"arguments":""}"#,
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
    // The same events with the key fields the platform's tables list, so that streams get
    // past `start` / `workflow_start`.
    r#"{"event":"start","run_id":"r","session_id":"s"}"#,
    r#"{"event":"tool_call","tool_name":"a","arguments":{}}"#,
    r#"{"event":"tool_result","tool_name":"a","result":null}"#,
    r#"{"event":"approval_requested","tool_name":"a","tool_input":{}}"#,
    r#"{"event":"complete","run_id":"r","content":"x","usage":{}}"#,
    r#"{"event":"workflow_start","execution_id":"e"}"#,
    r#"{"event":"block_started","block_id":"b","block_type":"agent"}"#,
    r#"{"event":"block_chunk","block_id":"b","delta":"x"}"#,
    r#"{"event":"block_output","block_id":"b","output":1}"#,
    r#"{"event":"block_error","block_id":"b","error":"x"}"#,
    r#"{"event":"workflow_complete","execution_id":"e","result":{}}"#,
    r#"{"event":"workflow_error","execution_id":"e","error":"x"}"#,
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
        run(responses::Stream::new, &events)?;
        run(|| responses::Stream::new().max_accumulated(8).max_items(2), &events)?;
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

// ---------------------------------------------------------------------------------------
// Responses tool calls, generated the way the spec lays them out.

/// One event of a generated Responses stream.
#[derive(Clone, Debug)]
struct Step {
    /// The tool call the event belongs to: its argument deltas and `.done`.
    call: Option<usize>,
    /// The `response.in_progress` that announces a tool call.
    announces: bool,
    data: String,
}

fn step(call: Option<usize>, announces: bool, data: String) -> Step {
    Step {
        call,
        announces,
        data,
    }
}

/// The spec's modern tool-call path: created, in_progress; per call an in_progress and its
/// argument deltas (the arguments cut at `cuts`; a call without arguments and without cuts
/// has no delta); every call's `.done`; completed.
fn modern_stream(calls: &[(String, Vec<usize>)]) -> Vec<Step> {
    let snapshot = |kind: &str, status: &str| {
        format!(
            r#"{{"type":"response.{kind}","response":{{"id":"resp_1","status":"{status}","output":[]}}}}"#
        )
    };
    let mut steps = vec![
        step(None, false, snapshot("created", "in_progress")),
        step(None, false, snapshot("in_progress", "in_progress")),
    ];
    for (n, (arguments, cuts)) in calls.iter().enumerate() {
        steps.push(step(None, true, snapshot("in_progress", "in_progress")));
        if arguments.is_empty() && cuts.is_empty() {
            continue;
        }
        let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (arguments.len() + 1)).collect();
        cuts.sort_unstable();
        let mut from = 0;
        for cut in cuts.into_iter().chain([arguments.len()]) {
            let delta = serde_json::json!({
                "type": "response.function_call_arguments.delta",
                "item_id": format!("fc_{n}"),
                "output_index": n,
                "delta": &arguments[from..cut],
            });
            steps.push(step(Some(n), false, delta.to_string()));
            from = cut;
        }
    }
    for (n, (arguments, _)) in calls.iter().enumerate() {
        let done = serde_json::json!({
            "type": "response.function_call_arguments.done",
            "id": format!("fc_{n}"),
            "output_index": n,
            "arguments": arguments,
        });
        steps.push(step(Some(n), false, done.to_string()));
    }
    steps.push(step(None, false, snapshot("completed", "completed")));
    steps
}

/// The first violation of `steps`, as (rule id, event index); `None` when valid.
fn first_violation(steps: &[Step]) -> (Option<(&'static str, u64)>, responses::Stream) {
    let mut v = Validator::new(responses::Stream::new());
    for s in steps {
        if let Err(err) = v.event(&Event::message(s.data.clone())) {
            return (
                Some((err.rule().id(), err.index().unwrap_or(u64::MAX))),
                v.into_profile(),
            );
        }
    }
    let end = v.finish().err().map(|e| (e.rule().id(), u64::MAX));
    (end, v.into_profile())
}

fn tool_calls() -> impl Strategy<Value = Vec<(String, Vec<usize>)>> {
    let arguments = pick(&[
        "",
        "{}",
        r#"{"city":"Paris"}"#,
        r#"{"a":[1,2,{"b":null}],"c":"\u00e9\"x\""}"#,
    ]);
    prop::collection::vec((arguments, prop::collection::vec(0usize..64, 0..4)), 1..5)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Tool calls laid out as the spec does are valid, with any cutting of the arguments.
    #[test]
    fn responses_spec_tool_calls_are_valid(calls in tool_calls()) {
        let (violation, profile) = first_violation(&modern_stream(&calls));
        prop_assert_eq!(violation, None);
        for (n, (arguments, _)) in calls.iter().enumerate() {
            let expected = Some(arguments.as_str()).filter(|a| !a.is_empty());
            prop_assert_eq!(profile.arguments(n as u64), expected);
        }
    }

    /// Any tool-call event but a call's first that names another item id breaks ITEM_ID,
    /// there.
    #[test]
    fn responses_another_item_id_breaks_item_id(calls in tool_calls(), which: prop::sample::Index) {
        let mut steps = modern_stream(&calls);
        let later: Vec<usize> = (0..steps.len())
            .filter(|&i| {
                steps[i].call.is_some()
                    && steps[..i].iter().any(|s| s.call == steps[i].call)
            })
            .collect();
        // Calls without arguments or deltas have one event only.
        prop_assume!(!later.is_empty());
        let at = later[which.index(later.len())];
        let call = steps[at].call.unwrap_or_default();
        steps[at].data = steps[at].data.replace(&format!("\"fc_{call}\""), "\"fc_other\"");
        let (violation, _) = first_violation(&steps);
        prop_assert_eq!(violation, Some((responses::ITEM_ID.id(), at as u64)));
    }

    /// Without one announcing `in_progress`, the first argument event of a call that finds
    /// no announcement left breaks TOOL_CALL_ANNOUNCED: call k's first, when every call
    /// opens with a delta (a call without arguments opens with its `.done`, after the others'
    /// deltas, so a later call may take its announcement).
    #[test]
    fn responses_unannounced_tool_call_breaks_the_rule(calls in tool_calls(), which: prop::sample::Index) {
        let mut steps = modern_stream(&calls);
        let announcements: Vec<usize> =
            (0..steps.len()).filter(|&i| steps[i].announces).collect();
        let k = which.index(announcements.len());
        steps.remove(announcements[k]);
        // Each announcement opens the next new call, in stream order.
        let (mut announced, mut opened) = (0, Vec::new());
        let mut unannounced = None;
        for (i, s) in steps.iter().enumerate() {
            announced += usize::from(s.announces);
            match s.call {
                Some(call) if !opened.contains(&call) && opened.len() == announced => {
                    unannounced = Some(i);
                    break;
                }
                Some(call) if !opened.contains(&call) => opened.push(call),
                _ => {}
            }
        }
        let first = steps.iter().position(|s| s.call == Some(k));
        if calls.iter().all(|(arguments, cuts)| !arguments.is_empty() || !cuts.is_empty()) {
            prop_assert_eq!(unannounced, first);
        }
        let at = unannounced.unwrap_or_default();
        let (violation, _) = first_violation(&steps);
        prop_assert_eq!(violation, Some((responses::TOOL_CALL_ANNOUNCED.id(), at as u64)));
    }
}
