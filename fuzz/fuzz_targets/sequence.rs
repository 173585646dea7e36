//! Arbitrary event sequences through every built-in profile: no panic, the first violation is
//! sticky (every later call and `finish` report it), and `finish` is `Ok` only for a stream
//! that broke nothing and reached its terminal event. The Responses profile runs with its
//! defaults and with small caps (`max_items`, `max_accumulated`) that streams reach.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use ssekit::profile::{agent, chat, ors, responses};
use ssekit::sequence::{Profile, Validator};
use ssekit::Event;

#[derive(Arbitrary, Debug)]
enum Item {
    Event { name: Option<Name>, data: Data },
    Comment(String),
}

/// Event names drawn mostly from the protocols' own vocabulary.
#[derive(Arbitrary, Debug)]
enum Name {
    Known(u8),
    Other(String),
}

/// Data drawn mostly from shapes the profiles parse.
#[derive(Arbitrary, Debug)]
enum Data {
    Json {
        kind: u8,
        index: u8,
        text: String,
        /// The Responses snapshot's status and id, and whether the item ids disagree.
        status: u8,
        ids: u8,
    },
    Done,
    Raw(String),
}

const NAMES: &[&str] = &[
    "task_id",
    "chunk",
    "end",
    "error",
    "message",
    "response.created",
    "response.in_progress",
    "response.output_text.delta",
    "response.function_call_arguments.delta",
    "response.function_call_arguments.done",
    "response.tool_calls.created",
    "response.output_item.added",
    "response.completed",
    "response.failed",
    "response.incomplete",
    "start",
    "step_started",
    "step_completed",
    "tool_call",
    "tool_result",
    "content_delta",
    "reasoning_delta",
    "approval_requested",
    "complete",
    "workflow_start",
    "block_started",
    "block_chunk",
    "block_output",
    "block_completed",
    "block_error",
    "workflow_complete",
    "workflow_error",
];

const STATUSES: &[&str] = &["in_progress", "completed", "queued", "failed", "incomplete"];

fn name(n: &Name) -> String {
    match n {
        Name::Known(i) => NAMES[usize::from(*i) % NAMES.len()].to_string(),
        Name::Other(s) => s.clone(),
    }
}

fn data(d: &Data) -> String {
    match d {
        Data::Json {
            kind,
            index,
            text,
            status,
            ids,
        } => {
            let ty = NAMES[usize::from(*kind) % NAMES.len()];
            let text = text.replace(['"', '\\'], "");
            let status = STATUSES[usize::from(*status) % STATUSES.len()];
            // Mostly one response id and agreeing item ids; now and then not.
            let response_id = ids & 1;
            let item_id = index.wrapping_add(ids >> 6);
            let output = if ids & 2 == 0 { "[]" } else { "[{}]" };
            format!(
                r#"{{"type":"{ty}","event":"{ty}","output_index":{index},"item_id":"i{index}","id":"i{item_id}","delta":"{text}","arguments":"{text}","tool_call":{{}},"step":{index},"tool_name":"t{index}","block_id":"b{index}","response":{{"id":"r{response_id}","status":"{status}","output":{output},"error":null}},"ok":true,"output":{{"blocks":[],"metadata":null,"reward":1.0,"finished":true}}}}"#
            )
        }
        Data::Done => "[DONE]".to_string(),
        Data::Raw(s) => s.clone(),
    }
}

/// Feeds `items` to a validator, and to a second one the same events borrowed
/// (`event_ref`): both must answer alike, call for call.
fn check<P: Profile>(profile: impl Fn() -> P, items: &[Item]) {
    let mut validator = Validator::new(profile());
    let mut by_ref = Validator::new(profile());
    let mut first_error = None;
    for item in items {
        let result = match item {
            Item::Event { name: n, data: d } => {
                let mut builder = Event::builder().data(data(d));
                if let Some(n) = n {
                    match builder.clone().event(name(n)) {
                        Ok(b) => builder = b,
                        Err(_) => continue,
                    }
                }
                let event = builder.build();
                let result = validator.event(&event);
                assert_eq!(by_ref.event_ref(event.as_event_ref()), result);
                result
            }
            Item::Comment(text) => {
                let result = validator.comment(text);
                assert_eq!(by_ref.comment(text), result);
                result
            }
        };
        match (&first_error, result) {
            (None, Err(e)) => first_error = Some(e),
            (Some(first), result) => {
                assert_eq!(result.as_ref(), Err(first), "failure must be sticky")
            }
            (None, Ok(())) => {}
        }
    }
    let terminated = validator.is_terminated();
    assert_eq!(by_ref.is_terminated(), terminated);
    let end = validator.finish();
    assert_eq!(by_ref.finish(), end);
    match (first_error, end) {
        (Some(first), end) => assert_eq!(end, Err(first)),
        (None, Ok(())) => assert!(terminated),
        (None, Err(_)) => assert!(!terminated),
    }
}

fuzz_target!(|input: (u8, Vec<Item>)| {
    let (which, items) = input;
    let items = &items[..items.len().min(64)];
    match which % 6 {
        0 => check(ors::ToolCall::new, items),
        1 => check(responses::Stream::new, items),
        2 => check(agent::Run::new, items),
        3 => check(agent::Workflow::new, items),
        4 => check(chat::Completions::new, items),
        _ => check(
            || responses::Stream::new().max_items(2).max_accumulated(24),
            items,
        ),
    }
});
