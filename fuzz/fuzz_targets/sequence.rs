//! Arbitrary event sequences through every built-in profile: no panic, the first violation is
//! sticky (every later call and `finish` report it), and `finish` is `Ok` only for a stream
//! that broke nothing and reached its terminal event. The Responses profile runs with its
//! defaults and with small caps (`max_items`, `max_accumulated`) that streams reach.
//!
//! And the other way: a stream Open Responses Server would send for an arbitrary LLM answer
//! (the spec's scenarios 1, 2, 3 and 5: text, modern tool calls with MCP results, the legacy
//! function call, an error at any point; arguments cut anywhere, or none at all, heartbeats
//! between events) is accepted whole by the Responses profile; the stream Anthropic would
//! send for the same answer (a text block, a tool_use block per call with its input cut
//! anywhere, pings, an `overloaded_error` at any point) is accepted whole by the Anthropic
//! Messages profile, which runs the arbitrary sequences too, drawn in its vocabulary; and the
//! stream an A2A agent would send for it (a task, its text as artifact chunks, a status
//! update per call, a final update, a JSON-RPC error at any point) is accepted whole by the
//! A2A profile, which runs the arbitrary sequences too, drawn as A2A responses; and the Chat
//! Completions stream OpenAI would send for it (text chunks, a usage chunk, an `error` chunk
//! at any point, with or without `[DONE]` after it) is accepted whole by the chat profile.
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
        /// The Responses snapshot's status and id, whether the item ids disagree, and whether
        /// the agent and workflow key fields are left out.
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
            // The agent and workflow tables' other key fields, so that those profiles get
            // past their first event; now and then left out, to break `FIELDS`.
            let key_fields = if ids & 4 == 0 {
                r#","run_id":"r","session_id":"s","content":"c","usage":{},"message":"m","result":{},"tool_input":{},"text":"t","summary":"s","context_handler_id":"c","execution_id":"e","block_type":"agent","error":null"#
            } else {
                ""
            };
            format!(
                r#"{{"type":"{ty}","event":"{ty}","output_index":{index},"item_id":"i{index}","id":"i{item_id}","delta":"{text}","arguments":"{text}","tool_call":{{}},"step":{index},"tool_name":"t{index}","block_id":"b{index}","response":{{"id":"r{response_id}","status":"{status}","output":{output},"error":null}},"ok":true,"output":{{"blocks":[],"metadata":null,"reward":1.0,"finished":true}}{key_fields}}}"#
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

/// What the LLM behind Open Responses Server answered, from which the server's stream is
/// built as its `process_chat_completions_stream` builds it.
#[derive(Arbitrary, Debug)]
struct Answer {
    /// Text chunks (sent before any tool call).
    text: Vec<String>,
    /// Tool calls; the legacy `function_call` path takes the first only.
    calls: Vec<Call>,
    legacy: bool,
    /// An exception after this many events of the stream: `response.completed` with an error.
    error_after: Option<u8>,
    /// A `: heartbeat` comment after the events whose bit is set (cycling).
    heartbeats: u64,
}

#[derive(Arbitrary, Debug)]
struct Call {
    /// Its arguments are `{"q": argument}`, cut into deltas at `cuts`; with `None` the
    /// function is called without arguments: `""`, sent as no delta when there are no cuts
    /// (the LLM sent none) or as empty deltas (it sent `"arguments": ""`).
    argument: Option<String>,
    cuts: Vec<u8>,
    /// An MCP tool: its result goes out as a text delta at output_index 0 under the call id.
    mcp: Option<String>,
}

/// `s` as a JSON string.
fn json_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `text` cut at the char boundaries nearest `cuts`, in order (empty pieces included).
fn pieces<'a>(text: &'a str, cuts: &[u8]) -> Vec<&'a str> {
    let mut at: Vec<usize> = cuts
        .iter()
        .map(|c| {
            let mut i = usize::from(*c) % (text.len() + 1);
            while !text.is_char_boundary(i) {
                i -= 1;
            }
            i
        })
        .collect();
    at.sort_unstable();
    let mut out = Vec::new();
    let mut start = 0;
    for i in at {
        out.push(&text[start..i]);
        start = i;
    }
    out.push(&text[start..]);
    out
}

/// The stream Open Responses Server sends for `answer`: event data, or `None` for a
/// heartbeat comment.
fn ors_stream(answer: &Answer) -> Vec<Option<String>> {
    let id = r#""id":"resp_1""#;
    let mut events = vec![
        format!(
            r#"{{"type":"response.created","response":{{{id},"status":"in_progress","output":[],"error":null}}}}"#
        ),
        format!(
            r#"{{"type":"response.in_progress","response":{{{id},"status":"in_progress","output":[]}}}}"#
        ),
    ];
    for text in &answer.text {
        events.push(format!(
            r#"{{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":{}}}"#,
            json_string(text)
        ));
    }
    let calls = if answer.legacy {
        &answer.calls[..answer.calls.len().min(1)]
    } else {
        &answer.calls[..answer.calls.len().min(16)]
    };
    let arguments: Vec<String> = calls
        .iter()
        .map(|c| match &c.argument {
            Some(argument) => format!(r#"{{"q":{}}}"#, json_string(argument)),
            None => String::new(),
        })
        .collect();
    for (i, (call, arguments)) in calls.iter().zip(&arguments).enumerate() {
        let item = if answer.legacy {
            events.push(r#"{"type":"response.tool_calls.created","item_id":"call_0","output_index":0,"tool_call":{"id":"call_0","name":"f","arguments":""}}"#.to_string());
            "call_0".to_string()
        } else {
            events.push(format!(
                r#"{{"type":"response.in_progress","response":{{{id},"status":"in_progress","output":[{{"type":"function_call","id":"call_{i}","status":"ready"}}]}}}}"#
            ));
            format!("tool_call_{i}")
        };
        if arguments.is_empty() && call.cuts.is_empty() {
            continue;
        }
        for piece in pieces(arguments, &call.cuts) {
            events.push(format!(
                r#"{{"type":"response.function_call_arguments.delta","item_id":"{item}","output_index":{i},"delta":{}}}"#,
                json_string(piece)
            ));
        }
    }
    for (i, (call, arguments)) in calls.iter().zip(&arguments).enumerate() {
        if !answer.legacy {
            events.push(format!(
                r#"{{"type":"response.function_call_arguments.done","id":"tool_call_{i}","output_index":{i},"arguments":{}}}"#,
                json_string(arguments)
            ));
        }
        if let Some(result) = &call.mcp {
            events.push(format!(
                r#"{{"type":"response.output_text.delta","item_id":"call_{i}","output_index":0,"content_index":0,"delta":{}}}"#,
                json_string(result)
            ));
        }
    }
    let completed = |error: &str| {
        format!(
            r#"{{"type":"response.completed","response":{{{id},"status":"completed","error":{error},"output":[]}}}}"#
        )
    };
    match answer.error_after {
        Some(n) if usize::from(n) < events.len() => {
            events.truncate(usize::from(n));
            events.push(completed(r#"{"message":"upstream failed"}"#));
        }
        _ => events.push(completed("null")),
    }
    let mut out = Vec::new();
    for (i, event) in events.into_iter().enumerate() {
        out.push(Some(event));
        if answer.heartbeats & (1 << (i % 64)) != 0 {
            out.push(None);
        }
    }
    out
}

/// The Responses profile accepts what Open Responses Server sends.
fn accepts_ors(answer: &Answer) {
    let mut validator = Validator::new(responses::Stream::new());
    for item in ors_stream(answer) {
        let result = match &item {
            Some(data) => validator.event(&Event::message(data.clone())),
            None => validator.comment("heartbeat"),
        };
        assert_eq!(result, Ok(()), "{item:?} of {answer:?}");
    }
    assert_eq!(validator.finish(), Ok(()), "{answer:?}");
}

// ---------------------------------------------------------------------------------------
// Anthropic Messages (`anthropic::Messages`): the same items, drawn in Anthropic's
// vocabulary, through `check`; and the stream Anthropic sends for the same `Answer`, which
// the profile accepts whole.

const ANTHROPIC_NAMES: &[&str] = &[
    "message_start",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
    "message_delta",
    "message_stop",
    "ping",
    "error",
    "future_event",
];

const ANTHROPIC_BLOCKS: &[&str] = &[
    "text",
    "tool_use",
    "server_tool_use",
    "thinking",
    "redacted_thinking",
    "web_search_tool_result",
];

const ANTHROPIC_DELTAS: &[&str] = &[
    "text_delta",
    "input_json_delta",
    "thinking_delta",
    "signature_delta",
    "citations_delta",
    "future_delta",
];

/// `items` in Anthropic's vocabulary: a known name is mostly the data's own `type` (now and
/// then another), JSON data an Anthropic event with small indices, so that streams get past
/// their first events.
fn anthropic_items(items: &[Item]) -> Vec<Item> {
    items
        .iter()
        .map(|item| match item {
            Item::Event { name, data } => {
                let (ty, data) = match data {
                    Data::Json {
                        kind,
                        index,
                        text,
                        status,
                        ids,
                    } => {
                        let ty = ANTHROPIC_NAMES[usize::from(*kind) % ANTHROPIC_NAMES.len()];
                        let block = ANTHROPIC_BLOCKS[usize::from(*status) % ANTHROPIC_BLOCKS.len()];
                        let delta = ANTHROPIC_DELTAS[usize::from(*ids) % ANTHROPIC_DELTAS.len()];
                        let index = index % 4;
                        let piece = serde_json::to_string(text).unwrap_or_default();
                        let data = format!(
                            r#"{{"type":"{ty}","index":{index},"message":{{"id":"msg_1","content":[]}},"content_block":{{"type":"{block}"}},"delta":{{"type":"{delta}","text":{piece},"partial_json":{piece},"thinking":{piece},"signature":"s","stop_reason":"end_turn"}},"error":{{"type":"overloaded_error","message":"Overloaded"}}}}"#
                        );
                        (Some(ty), data)
                    }
                    Data::Done => (None, "[DONE]".to_string()),
                    Data::Raw(s) => (None, s.clone()),
                };
                let name = match (name, ty) {
                    (Some(Name::Known(i)), Some(ty)) if i % 16 != 0 => Some(ty.to_string()),
                    (Some(Name::Known(i)), _) => {
                        Some(ANTHROPIC_NAMES[usize::from(*i) % ANTHROPIC_NAMES.len()].to_string())
                    }
                    (Some(Name::Other(s)), _) => Some(s.clone()),
                    (None, _) => None,
                };
                Item::Event {
                    name: name.map(Name::Other),
                    data: Data::Raw(data),
                }
            }
            Item::Comment(text) => Item::Comment(text.clone()),
        })
        .collect()
}

/// The stream Anthropic sends for `answer`: a text block of its text chunks, a `tool_use`
/// block per call (its `{"q": argument}` input cut into `partial_json` pieces, or no input),
/// a `ping` after the events whose heartbeat bit is set, and with `error_after` an
/// `overloaded_error` in place of the events from there on.
fn anthropic_stream(answer: &Answer) -> Vec<(&'static str, String)> {
    let mut events = vec![(
        "message_start",
        r#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude","stop_reason":null,"usage":{"input_tokens":1,"output_tokens":1}}}"#.to_string(),
    )];
    let mut index = 0;
    let mut block = |events: &mut Vec<(&'static str, String)>, start: &str, deltas: Vec<String>| {
        events.push((
            "content_block_start",
            format!(r#"{{"type":"content_block_start","index":{index},"content_block":{start}}}"#),
        ));
        for delta in deltas {
            events.push((
                "content_block_delta",
                format!(r#"{{"type":"content_block_delta","index":{index},"delta":{delta}}}"#),
            ));
        }
        events.push((
            "content_block_stop",
            format!(r#"{{"type":"content_block_stop","index":{index}}}"#),
        ));
        index += 1;
    };
    if !answer.text.is_empty() {
        let deltas = answer
            .text
            .iter()
            .map(|t| format!(r#"{{"type":"text_delta","text":{}}}"#, json_string(t)))
            .collect();
        block(&mut events, r#"{"type":"text","text":""}"#, deltas);
    }
    for call in &answer.calls[..answer.calls.len().min(16)] {
        let input = match &call.argument {
            Some(argument) => format!(r#"{{"q":{}}}"#, json_string(argument)),
            None => String::new(),
        };
        let deltas = if input.is_empty() && call.cuts.is_empty() {
            Vec::new()
        } else {
            pieces(&input, &call.cuts)
                .into_iter()
                .map(|p| {
                    format!(
                        r#"{{"type":"input_json_delta","partial_json":{}}}"#,
                        json_string(p)
                    )
                })
                .collect()
        };
        block(
            &mut events,
            r#"{"type":"tool_use","id":"toolu_1","name":"f","input":{}}"#,
            deltas,
        );
    }
    events.push((
        "message_delta",
        r#"{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":9}}"#.to_string(),
    ));
    events.push(("message_stop", r#"{"type":"message_stop"}"#.to_string()));
    if let Some(n) = answer.error_after {
        if usize::from(n) < events.len() {
            events.truncate(usize::from(n));
            events.push((
                "error",
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
                    .to_string(),
            ));
        }
    }
    let last = events.len() - 1;
    let mut out = Vec::new();
    for (i, event) in events.into_iter().enumerate() {
        out.push(event);
        if i < last && answer.heartbeats & (1 << (i % 64)) != 0 {
            out.push(("ping", r#"{"type":"ping"}"#.to_string()));
        }
    }
    out
}

/// The Anthropic profile accepts what Anthropic sends, and reports the error when there is
/// one.
fn accepts_anthropic(answer: &Answer) {
    use ssekit::profile::anthropic;
    let mut validator = Validator::new(anthropic::Messages::new());
    let stream = anthropic_stream(answer);
    let failed = stream.iter().any(|(name, _)| *name == "error");
    for (name, data) in stream {
        let event = Event::builder()
            .event(name)
            .map(|b| b.data(data.clone()).build());
        let result = event.map(|event| validator.event(&event));
        assert!(matches!(result, Ok(Ok(()))), "{name} {data} of {answer:?}");
    }
    assert_eq!(validator.finish(), Ok(()), "{answer:?}");
    assert_eq!(
        validator.profile().failure().is_some(),
        failed,
        "{answer:?}"
    );
}

// ---------------------------------------------------------------------------------------
// A2A streams (`a2a::Stream`): the same items, drawn as A2A JSON-RPC responses, through
// `check`; and the stream an A2A agent sends for the same `Answer`, which the profile
// accepts whole, with and without the resubscription's snapshot rule.

const A2A_KINDS: &[&str] = &[
    "task",
    "message",
    "status-update",
    "artifact-update",
    "error",
    "future-kind",
];

const A2A_STATES: &[&str] = &[
    "submitted",
    "working",
    "input-required",
    "completed",
    "canceled",
    "failed",
    "rejected",
    "auth-required",
    "unknown",
    "TASK_STATE_WORKING",
];

/// `items` as A2A responses: a known kind with mostly one request id, task and context, so
/// that streams get past their first events; now and then another id, task or state.
fn a2a_items(items: &[Item]) -> Vec<Item> {
    items
        .iter()
        .map(|item| match item {
            Item::Event { name, data } => {
                let data = match data {
                    Data::Json {
                        kind,
                        index,
                        text,
                        status,
                        ids,
                    } => {
                        let kind = A2A_KINDS[usize::from(*kind) % A2A_KINDS.len()];
                        let state = A2A_STATES[usize::from(*status) % A2A_STATES.len()];
                        let text = serde_json::to_string(text).unwrap_or_default();
                        let id = if ids & 8 == 0 { "1" } else { "\"1\"" };
                        let task = if ids & 16 == 0 { "t" } else { "u" };
                        let append = ids & 2 != 0;
                        let last = ids & 4 != 0;
                        let artifact = index % 3;
                        if kind == "error" {
                            format!(
                                r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32001,"message":{text}}}}}"#
                            )
                        } else {
                            format!(
                                r#"{{"jsonrpc":"2.0","id":{id},"result":{{"kind":"{kind}","id":"{task}","taskId":"{task}","contextId":"c","messageId":"m","role":"agent","parts":[{{"kind":"text","text":{text}}}],"status":{{"state":"{state}","message":{{"parts":[{{"kind":"text","text":{text}}}]}}}},"final":{last},"artifact":{{"artifactId":"a{artifact}","parts":[]}},"append":{append},"lastChunk":{last}}}}}"#
                            )
                        }
                    }
                    Data::Done => "[DONE]".to_string(),
                    Data::Raw(s) => s.clone(),
                };
                let name = match name {
                    Some(Name::Other(s)) => Some(Name::Other(s.clone())),
                    Some(Name::Known(i)) => Some(Name::Known(*i)),
                    None => None,
                };
                Item::Event {
                    name,
                    data: Data::Raw(data),
                }
            }
            Item::Comment(text) => Item::Comment(text.clone()),
        })
        .collect()
}

/// The stream an A2A agent sends for `answer`: the task, its text as chunks of one
/// artifact, a `working` status update (with the argument as its message) per call, then a
/// final `completed` update; with `error_after` a JSON-RPC error in place of the events from
/// there on (after the task). `None` is a keep-alive comment; the flag says whether the
/// error was sent.
fn a2a_stream(answer: &Answer) -> (Vec<Option<String>>, bool) {
    let env = |result: String| format!(r#"{{"jsonrpc":"2.0","id":"req-1","result":{result}}}"#);
    let mut events = vec![env(
        r#"{"kind":"task","id":"t1","contextId":"c1","status":{"state":"submitted"}}"#.to_string(),
    )];
    for (i, text) in answer.text.iter().enumerate() {
        events.push(env(format!(
            r#"{{"kind":"artifact-update","taskId":"t1","contextId":"c1","artifact":{{"artifactId":"a1","parts":[{{"kind":"text","text":{}}}]}},"append":{},"lastChunk":false}}"#,
            json_string(text),
            i > 0
        )));
    }
    for call in &answer.calls[..answer.calls.len().min(16)] {
        let message = json_string(call.argument.as_deref().unwrap_or(""));
        events.push(env(format!(
            r#"{{"kind":"status-update","taskId":"t1","contextId":"c1","status":{{"state":"working","message":{{"role":"agent","messageId":"m","parts":[{{"kind":"text","text":{message}}}]}}}},"final":false}}"#
        )));
    }
    events.push(env(
        r#"{"kind":"status-update","taskId":"t1","contextId":"c1","status":{"state":"completed"},"final":true}"#.to_string(),
    ));
    let mut failed = false;
    if let Some(n) = answer.error_after {
        let n = usize::from(n).max(1);
        if n < events.len() {
            events.truncate(n);
            events.push(
                r#"{"jsonrpc":"2.0","id":"req-1","error":{"code":-32603,"message":"Internal error"}}"#
                    .to_string(),
            );
            failed = true;
        }
    }
    let mut out = Vec::new();
    for (i, event) in events.into_iter().enumerate() {
        out.push(Some(event));
        if answer.heartbeats & (1 << (i % 64)) != 0 {
            out.push(None);
        }
    }
    (out, failed)
}

/// The A2A profile accepts what an agent sends, as a `message/stream` and as a
/// resubscription (the task comes first), and reports the error when there is one.
fn accepts_a2a(answer: &Answer) {
    use ssekit::profile::a2a;
    let (stream, failed) = a2a_stream(answer);
    for profile in [a2a::Stream::new(), a2a::Stream::resubscribe()] {
        let mut validator = Validator::new(profile);
        for item in &stream {
            let result = match item {
                Some(data) => validator.event(&Event::message(data.clone())),
                None => validator.comment("keep-alive"),
            };
            assert_eq!(result, Ok(()), "{item:?} of {answer:?}");
        }
        assert_eq!(validator.finish(), Ok(()), "{answer:?}");
        assert_eq!(
            validator.profile().failure().is_some(),
            failed,
            "{answer:?}"
        );
    }
}

// ---------------------------------------------------------------------------------------
// Chat Completions as relayed (`chat::Completions`): the stream OpenAI sends for an
// `Answer` (a chunk per text piece, a usage-only last chunk), which the profile accepts
// whole; with `error_after`, an `error` chunk in place of the chunks from there on, then
// `[DONE]` or the end of the stream (relays do both), reported as the failure.

fn accepts_chat(answer: &Answer) {
    let chunk = |delta: String| {
        format!(
            r#"{{"id":"c","object":"chat.completion.chunk","choices":[{{"index":0,"delta":{delta},"finish_reason":null}}],"usage":null}}"#
        )
    };
    let mut events: Vec<String> = answer
        .text
        .iter()
        .map(|text| chunk(format!(r#"{{"content":{}}}"#, json_string(text))))
        .collect();
    events.push(
        r#"{"id":"c","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}"#
            .to_string(),
    );
    let mut failed = false;
    let mut done = true;
    if let Some(n) = answer.error_after {
        let n = usize::from(n);
        if n < events.len() {
            events.truncate(n);
            events.push(
                r#"{"error":{"message":"The server had an error","type":"server_error","param":null,"code":null}}"#
                    .to_string(),
            );
            failed = true;
            done = answer.legacy;
        }
    }
    if done {
        events.push("[DONE]".to_string());
    }
    let mut validator = Validator::new(chat::Completions::new());
    for (i, data) in events.iter().enumerate() {
        let result = validator.event(&Event::message(data.clone()));
        assert_eq!(result, Ok(()), "{data} of {answer:?}");
        if answer.heartbeats & (1 << (i % 64)) != 0 {
            assert_eq!(validator.comment("keep-alive"), Ok(()));
        }
    }
    assert_eq!(validator.finish(), Ok(()), "{answer:?}");
    assert_eq!(
        validator.profile().failure().is_some(),
        failed,
        "{answer:?}"
    );
}

fuzz_target!(|input: (u8, Vec<Item>, Answer)| {
    let (which, items, answer) = input;
    accepts_ors(&answer);
    accepts_anthropic(&answer);
    accepts_a2a(&answer);
    accepts_chat(&answer);
    let items = &items[..items.len().min(64)];
    match which % 10 {
        0 => check(ors::ToolCall::new, items),
        1 => check(responses::Stream::new, items),
        2 => check(agent::Run::new, items),
        3 => check(agent::Workflow::new, items),
        4 => check(chat::Completions::new, items),
        // Anthropic Messages, with its defaults and with caps streams reach.
        6 => check(
            ssekit::profile::anthropic::Messages::new,
            &anthropic_items(items),
        ),
        7 => check(
            || {
                ssekit::profile::anthropic::Messages::new()
                    .max_blocks(2)
                    .max_accumulated(24)
            },
            &anthropic_items(items),
        ),
        // A2A, as a `message/stream` and as a resubscription with caps streams reach.
        8 => check(ssekit::profile::a2a::Stream::new, &a2a_items(items)),
        9 => check(
            || {
                ssekit::profile::a2a::Stream::resubscribe()
                    .max_artifacts(2)
                    .max_kept(3)
            },
            &a2a_items(items),
        ),
        _ => check(
            || responses::Stream::new().max_items(2).max_accumulated(24),
            items,
        ),
    }
});
