//! Every rule of every built-in profile, each with a stream that keeps it and one that breaks
//! it. Streams are SSE text run through the real decoder and a `Validator`; a violation is
//! checked for its rule and the index of the offending event.

#![cfg(feature = "json")]

use ssekit::chunk::Chunker;
use ssekit::profile::{agent, chat, ors, responses, workflow};
use ssekit::sequence::{Origin, Profile, Rule, SequenceError, Validator, UNTERMINATED};
use ssekit::{Decoder, Encoder, Event, Frame};

/// Decodes `sse`, validates every frame, then `finish`es.
fn check<P: Profile>(profile: P, sse: &str) -> Result<P, SequenceError> {
    let mut decoder = Decoder::new();
    decoder.feed_slice(sse.as_bytes()).unwrap();
    let mut v = Validator::new(profile);
    while let Some(frame) = decoder.next_frame().unwrap() {
        v.frame(&frame)?;
    }
    v.finish()?;
    Ok(v.into_profile())
}

/// The rule `sse` breaks and the index of the event that broke it.
#[track_caller]
fn broken<P: Profile>(profile: P, sse: &str) -> (Rule, Option<u64>) {
    match check(profile, sse) {
        Ok(_) => panic!("stream was accepted:\n{sse}"),
        Err(err) => (err.rule(), err.index()),
    }
}

#[track_caller]
fn valid<P: Profile>(profile: P, sse: &str) -> P {
    match check(profile, sse) {
        Ok(p) => p,
        Err(err) => panic!("{err}\n{sse}"),
    }
}

/// Named events: `[("task_id", "t"), ...]` → `event: task_id\ndata: t\n\n...`.
fn named(events: &[(&str, &str)]) -> String {
    let mut out = Vec::new();
    for (name, data) in events {
        let ev = Event::builder()
            .event(name.to_string())
            .unwrap()
            .data(data.to_string())
            .build();
        Encoder::new().encode(&ev, &mut out).unwrap();
    }
    String::from_utf8(out).unwrap()
}

/// `data:`-only events, one per JSON text.
fn data(events: &[&str]) -> String {
    events.iter().map(|d| format!("data: {d}\n\n")).collect()
}

// ---------------------------------------------------------------------------------------
// ors::ToolCall

const OK_RESULT: &str = r#"{"ok":true,"output":{"blocks":[{"type":"text","text":"Correct!","detail":null}],"metadata":null,"reward":1.0,"finished":true}}"#;

#[test]
fn ors_valid_streams() {
    // The spec's complete example, with the SDK server's ping comment in the middle.
    let sse = format!(
        "event: task_id\ndata: task-xyz-789\n\n: ping - 2026-11-22 00:03:02\n\nevent: end\ndata: {OK_RESULT}\n\n"
    );
    let p = valid(ors::ToolCall::new(), &sse);
    assert_eq!(p.task_id().unwrap(), "task-xyz-789");
    let result = p.result().unwrap();
    assert!(result.ok && !result.is_tool_error());
    assert_eq!(result.output.as_ref().unwrap().reward, Some(1.0));
    // The same result chunked by ssekit's Chunker at 16 bytes, with CRLF line endings.
    let mut stream = named(&[("task_id", "t")]);
    for piece in Chunker::new().max_chunk(16).chunk(OK_RESULT).unwrap() {
        stream.push_str(&named(&[(piece.event_type(), piece.data())]));
    }
    let p = valid(ors::ToolCall::new(), &stream.replace('\n', "\r\n"));
    assert_eq!(p.terminal(), Some(&ors::Terminal::End(OK_RESULT.into())));
    // /create_session: task_id then an empty end.
    valid(
        ors::ToolCall::new(),
        &named(&[("task_id", "sid"), ("end", "")]),
    );
}

#[test]
fn ors_tool_logic_error_is_not_an_http_error() {
    let logic = valid(
        ors::ToolCall::new(),
        &named(&[
            ("task_id", "t"),
            ("end", r#"{"ok":false,"error":"Invalid answer format"}"#),
        ]),
    );
    assert!(logic.result().unwrap().is_tool_error());
    assert!(matches!(logic.terminal(), Some(ors::Terminal::End(_))));
    let http = valid(
        ors::ToolCall::new(),
        &named(&[("task_id", "t"), ("error", "Session not found")]),
    );
    assert!(http.result().is_none());
    assert_eq!(
        http.terminal(),
        Some(&ors::Terminal::Error("Session not found".into()))
    );
}

#[test]
fn ors_task_id_first() {
    // A lone error is the reply to an unknown task_id on reconnect.
    valid(
        ors::ToolCall::new(),
        &named(&[("error", "unknown task_id")]),
    );
    assert_eq!(
        broken(
            ors::ToolCall::new(),
            &named(&[("chunk", "{"), ("end", "}")])
        ),
        (ors::TASK_ID_FIRST, Some(0))
    );
    assert_eq!(
        broken(ors::ToolCall::new(), &named(&[("end", OK_RESULT)])),
        (ors::TASK_ID_FIRST, Some(0))
    );
}

#[test]
fn ors_task_id_once() {
    valid(
        ors::ToolCall::new(),
        &named(&[("task_id", "a"), ("end", OK_RESULT)]),
    );
    assert_eq!(
        broken(
            ors::ToolCall::new(),
            &named(&[("task_id", "a"), ("task_id", "b"), ("end", OK_RESULT)])
        ),
        (ors::TASK_ID_ONCE, Some(1))
    );
}

#[test]
fn ors_task_id_nonempty() {
    valid(
        ors::ToolCall::new(),
        &named(&[("task_id", "x"), ("end", OK_RESULT)]),
    );
    assert_eq!(
        broken(
            ors::ToolCall::new(),
            &named(&[("task_id", ""), ("end", OK_RESULT)])
        ),
        (ors::TASK_ID_NONEMPTY, Some(0))
    );
}

#[test]
fn ors_unknown_event() {
    valid(
        ors::ToolCall::new(),
        &format!(
            "{}: comment\n\n{}",
            named(&[("task_id", "t")]),
            named(&[("end", OK_RESULT)])
        ),
    );
    // An unnamed event: the official client would silently drop it.
    let sse = format!("{}data: hello\n\n", named(&[("task_id", "t")]));
    assert_eq!(
        broken(ors::ToolCall::new(), &sse),
        (ors::UNKNOWN_EVENT, Some(1))
    );
    assert_eq!(
        broken(
            ors::ToolCall::new(),
            &named(&[("task_id", "t"), ("done", "x")])
        ),
        (ors::UNKNOWN_EVENT, Some(1))
    );
}

#[test]
fn ors_after_terminal() {
    valid(
        ors::ToolCall::new(),
        &named(&[
            ("task_id", "t"),
            ("chunk", "{\"ok\":false,"),
            ("end", "\"error\":\"x\"}"),
        ]),
    );
    assert_eq!(
        broken(
            ors::ToolCall::new(),
            &named(&[("task_id", "t"), ("end", OK_RESULT), ("chunk", "x")])
        ),
        (ors::AFTER_TERMINAL, Some(2))
    );
    assert_eq!(
        broken(
            ors::ToolCall::new(),
            &named(&[("task_id", "t"), ("error", "boom"), ("end", OK_RESULT)])
        ),
        (ors::AFTER_TERMINAL, Some(2))
    );
    assert_eq!(
        broken(
            ors::ToolCall::new(),
            &named(&[("task_id", "t"), ("end", OK_RESULT), ("end", OK_RESULT)])
        ),
        (ors::AFTER_TERMINAL, Some(2))
    );
}

#[test]
fn ors_result_too_large() {
    let sse = named(&[("task_id", "t"), ("chunk", "0123456789"), ("end", "{}")]);
    valid(
        ors::ToolCall::new().max_result(12).check_result(false),
        &sse,
    );
    assert_eq!(
        broken(ors::ToolCall::new().max_result(11), &sse),
        (ors::RESULT_TOO_LARGE, Some(2))
    );
    assert_eq!(
        broken(ors::ToolCall::new().max_result(9), &sse),
        (ors::RESULT_TOO_LARGE, Some(1))
    );
}

#[test]
fn ors_result_shape() {
    valid(
        ors::ToolCall::new(),
        &named(&[("task_id", "t"), ("end", r#"{"ok":false,"error":"x"}"#)]),
    );
    for bad in [
        r#"{"ok":true}"#,
        r#"{"ok":false}"#,
        r#"{"ok":true,"output":{"blocks":[],"finished":true},"error":"x"}"#,
        r#"{"ok":true,"output":{"blocks":[{"type":"video"}],"finished":true}}"#,
        r#"{"ok":true,"output":{"blocks":[]}}"#,
        "Correct!",
        r#"[true,{"blocks":[],"metadata":null,"reward":null,"finished":true}]"#,
        r#"{"ok":true,"output":{"blocks":[],"finished":true}"#,
        r#"{"ok":true,"output":{"blocks":[{"type":"image","data":"AA=="}],"metadata":null,"reward":null,"finished":true}}"#,
        r#"{"ok":true,"output":{"blocks":[{"type":"text"}],"metadata":null,"reward":null,"finished":true}}"#,
        r#"{"ok":true,"output":{"blocks":[],"metadata":null,"reward":"1","finished":true}}"#,
        // `"metadata": obj|null` (ors-http-api.md): anything else fails the official client.
        r#"{"ok":true,"output":{"blocks":[],"metadata":5,"reward":null,"finished":true}}"#,
        r#"{"ok":true,"output":{"blocks":[],"metadata":"x","reward":null,"finished":true}}"#,
        r#"{"ok":true,"output":{"blocks":[],"metadata":[],"reward":null,"finished":true}}"#,
    ] {
        assert_eq!(
            broken(
                ors::ToolCall::new(),
                &named(&[("task_id", "t"), ("end", bad)])
            ),
            (ors::RESULT_SHAPE, Some(1)),
            "{bad}"
        );
    }
    valid(
        ors::ToolCall::new(),
        &named(&[
            ("task_id", "t"),
            (
                "end",
                r#"{"ok":true,"output":{"blocks":[{"type":"image","data":"AA==","mimeType":"image/png","detail":{"w":1}},{"type":"text","text":"a","detail":null}],"metadata":{"n":1},"reward":null,"finished":false}}"#,
            ),
        ]),
    );
    // Truncated JSON split over chunks is caught once reassembled.
    let sse = named(&[
        ("task_id", "t"),
        ("chunk", r#"{"ok":true,"#),
        ("end", r#""output":"#),
    ]);
    assert_eq!(
        broken(ors::ToolCall::new(), &sse),
        (ors::RESULT_SHAPE, Some(2))
    );
    valid(ors::ToolCall::new().check_result(false), &sse);
}

/// Decodes `sse` and validates it (it must pass), collecting every warning as (rule, index).
fn warnings<P: Profile>(profile: P, sse: &str) -> Vec<(Rule, u64)> {
    let mut decoder = Decoder::new();
    decoder.feed_slice(sse.as_bytes()).unwrap();
    let mut v = Validator::new(profile);
    let mut found = Vec::new();
    while let Some(frame) = decoder.next_frame().unwrap() {
        v.frame(&frame).unwrap_or_else(|err| panic!("{err}\n{sse}"));
        found.extend(v.warnings().iter().map(|w| (w.rule, w.index)));
    }
    v.finish().unwrap_or_else(|err| panic!("{err}\n{sse}"));
    found
}

/// What the specification allows but the official client (ors-sdk 0.1.0) fails on is a
/// warning, each reported once, at the event that has it; the validation goes on.
#[test]
fn ors_warnings_are_what_the_official_client_rejects_and_the_spec_allows() {
    let end = |payload: &str| named(&[("task_id", "t"), ("end", payload)]);
    assert_eq!(warnings(ors::ToolCall::new(), &end(OK_RESULT)), []);
    assert_eq!(
        warnings(ors::ToolCall::new(), &end(r#"{"ok":false,"error":"x"}"#)),
        []
    );
    for (payload, expected) in [
        // The spec's own examples have no `metadata`.
        (
            r#"{"ok": true, "output": {"blocks": [{"type": "text", "text": "Correct!"}], "reward": 1.0, "finished": true}}"#,
            &[ors::END_METADATA][..],
        ),
        (
            r#"{"ok":true,"output":{"blocks":[],"metadata":null,"finished":true}}"#,
            &[ors::END_REWARD],
        ),
        (
            r#"{"ok":true,"output":{"blocks":[],"finished":true}}"#,
            &[ors::END_METADATA, ors::END_REWARD],
        ),
        (
            r#"{"ok":true,"output":{"blocks":[],"metadata":null,"reward":1,"finished":true,"x":1}}"#,
            &[ors::END_EXTRA_KEY],
        ),
        (
            r#"{"ok":true,"output":{"blocks":[],"metadata":null,"reward":1,"finished":true},"x":1}"#,
            &[ors::END_EXTRA_KEY],
        ),
        (r#"{"ok":false,"error":"e","x":1}"#, &[ors::END_EXTRA_KEY]),
        (
            r#"{"ok":true,"output":{"blocks":[{"type":"text","text":"a","x":1}],"metadata":null,"reward":null,"finished":true}}"#,
            &[ors::END_EXTRA_KEY],
        ),
        (
            r#"{"ok":true,"output":{"blocks":[{"type":"image","data":"AA==","mimeType":"image/png","text":"a"}],"reward":null,"finished":true}}"#,
            &[ors::END_METADATA, ors::END_EXTRA_KEY],
        ),
    ] {
        let found: Vec<(Rule, u64)> = expected.iter().map(|&rule| (rule, 1)).collect();
        assert_eq!(
            warnings(ors::ToolCall::new(), &end(payload)),
            found,
            "{payload}"
        );
    }
    // A piece after the first that starts with white space loses it in the official
    // client; the first piece (before the JSON) and a line joined by LF do not.
    let chunked = |pieces: &[&str]| {
        let mut events = vec![("task_id", "t")];
        for (i, piece) in pieces.iter().enumerate() {
            events.push((
                if i + 1 == pieces.len() {
                    "end"
                } else {
                    "chunk"
                },
                piece,
            ));
        }
        named(&events)
    };
    assert_eq!(
        warnings(
            ors::ToolCall::new(),
            &chunked(&[r#"{"ok":false,"error":"a"#, r#" b"}"#])
        ),
        [(ors::LEADING_SPACE, 2)]
    );
    assert_eq!(
        warnings(
            ors::ToolCall::new(),
            &chunked(&[r#"{"ok":false,"#, "\t", r#""error":"a b"}"#])
        ),
        [(ors::LEADING_SPACE, 2)]
    );
    assert_eq!(
        warnings(
            ors::ToolCall::new(),
            &chunked(&[r#" {"ok":false,"error":"#, "\n\"a\"}"])
        ),
        []
    );
    // Warnings are not errors: nothing a warning finds ends the validation.
    let mut v = Validator::new(ors::ToolCall::new());
    let mut decoder = Decoder::new();
    decoder
        .feed_slice(end(r#"{"ok":true,"output":{"blocks":[],"finished":true}}"#).as_bytes())
        .unwrap();
    while let Some(frame) = decoder.next_frame().unwrap() {
        v.frame(&frame).unwrap();
    }
    assert!(v.is_terminated() && v.error().is_none());
    assert_eq!(v.warnings().len(), 2);
    assert_eq!(
        v.warnings()[0].to_string(),
        "remote event 2 (`end`) warning ors.end-metadata: end has no metadata; the official ors-sdk client raises on it"
    );
    // The next event replaces the warnings of the last (here it breaks a rule).
    assert!(v
        .event(&Event::builder().event("chunk").unwrap().data("x").build())
        .is_err());
    assert!(v.warnings().is_empty());
}

#[test]
fn ors_unterminated() {
    valid(
        ors::ToolCall::new(),
        &named(&[
            ("task_id", "t"),
            ("chunk", "{\"ok\":false,"),
            ("end", "\"error\":\"x\"}"),
        ]),
    );
    let sse = named(&[("task_id", "t"), ("chunk", "{")]);
    let err = check(ors::ToolCall::new(), &sse).unwrap_err();
    assert_eq!(
        err,
        SequenceError::Unterminated {
            events: 2,
            origin: Origin::Remote
        }
    );
    assert_eq!(err.rule(), UNTERMINATED);
    // A stream cut inside the end event: the decoder drops the partial block.
    let cut = format!("{}event: end\ndata: {{\"ok\"", named(&[("task_id", "t")]));
    assert_eq!(broken(ors::ToolCall::new(), &cut), (UNTERMINATED, None));
}

// ---------------------------------------------------------------------------------------
// responses::Stream

const CREATED: &str = r#"{"type":"response.created","response":{"id":"resp_1","object":"response","status":"in_progress","output":[],"error":null}}"#;
const IN_PROGRESS: &str = r#"{"type":"response.in_progress","response":{"id":"resp_1","status":"in_progress","output":[]}}"#;
const COMPLETED: &str = r#"{"type":"response.completed","response":{"id":"resp_1","status":"completed","error":null,"output":[]}}"#;
/// A `response.in_progress` after the first: the spec's announcement of a new tool call
/// ("first delta with function name; output now contains the tool call").
const TOOL: &str = r#"{"type":"response.in_progress","response":{"id":"resp_1","status":"in_progress","output":[{"type":"function_call","id":"call_1","status":"ready"}]}}"#;
const FAILED: &str = r#"{"type":"response.completed","response":{"id":"resp_1","status":"completed","error":{"message":"upstream timeout"}}}"#;

fn text_delta(index: u64, delta: &str) -> String {
    format!(
        r#"{{"type":"response.output_text.delta","item_id":"msg_1","output_index":{index},"delta":{}}}"#,
        serde_json::to_string(delta).unwrap()
    )
}

fn args_delta(index: u64, delta: &str) -> String {
    format!(
        r#"{{"type":"response.function_call_arguments.delta","item_id":"fc_{index}","output_index":{index},"delta":{}}}"#,
        serde_json::to_string(delta).unwrap()
    )
}

fn args_done(index: u64, arguments: &str) -> String {
    format!(
        r#"{{"type":"response.function_call_arguments.done","id":"fc_{index}","output_index":{index},"arguments":{}}}"#,
        serde_json::to_string(arguments).unwrap()
    )
}

fn stream(events: &[&str]) -> String {
    data(events)
}

/// The rule and event index at which the Responses profile refuses `events`.
#[track_caller]
fn broken_responses(events: &[&str]) -> (Rule, Option<u64>) {
    broken(responses::Stream::new(), &stream(events))
}

#[test]
fn responses_valid_scenarios() {
    // 1: plain text.
    let p = valid(
        responses::Stream::new(),
        &stream(&[
            CREATED,
            IN_PROGRESS,
            &text_delta(0, "Hel"),
            &text_delta(0, "lo \"x\"\n"),
            COMPLETED,
        ]),
    );
    assert_eq!(p.text(0), Some("Hello \"x\"\n"));
    // 2: modern tool calls, with the in_progress snapshot per tool call and an MCP result.
    let p = valid(
        responses::Stream::new(),
        &stream(&[
            CREATED,
            IN_PROGRESS,
            TOOL,
            &args_delta(0, "{\"city\":"),
            &args_delta(0, "\"Paris\"}"),
            TOOL,
            &args_delta(1, "{}"),
            &args_done(0, "{\"city\":\"Paris\"}"),
            &args_done(1, "{}"),
            &text_delta(2, "[\"18C\"]"),
            COMPLETED,
        ]),
    );
    assert_eq!(p.arguments(0), Some("{\"city\":\"Paris\"}"));
    assert_eq!(p.arguments(1), Some("{}"));
    // 3: legacy function_call: tool_calls.created, deltas, no .done.
    valid(
        responses::Stream::new(),
        &stream(&[
            CREATED,
            IN_PROGRESS,
            r#"{"type":"response.tool_calls.created","item_id":"fc_0","output_index":0,"tool_call":{"name":"f"}}"#,
            &args_delta(0, "{}"),
            COMPLETED,
        ]),
    );
    // 5: an error before anything was sent, and one mid-stream.
    assert!(valid(responses::Stream::new(), &stream(&[FAILED])).is_error());
    valid(
        responses::Stream::new(),
        &stream(&[CREATED, IN_PROGRESS, &text_delta(0, "x"), FAILED]),
    );
    // OpenAI's own framing: `event:` lines agreeing with `type`, extra event types, pings.
    let openai = format!(
        "event: response.created\ndata: {CREATED}\n\n: keep-alive\n\nevent: response.in_progress\ndata: {IN_PROGRESS}\n\n\
         event: response.output_item.added\ndata: {{\"type\":\"response.output_item.added\",\"output_index\":0}}\n\n\
         event: response.completed\ndata: {COMPLETED}\n\n"
    );
    valid(responses::Stream::new(), &openai);
}

#[test]
fn responses_openai_terminal_events() {
    // OpenAI's API ends a stream with `response.failed`, `response.incomplete` or `error` as
    // well as `response.completed`; each is the one terminal event.
    let failed = r#"{"type":"response.failed","response":{"id":"resp_1","status":"failed","error":{"code":"server_error","message":"x"}}}"#;
    let incomplete = r#"{"type":"response.incomplete","response":{"id":"resp_1","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"}}}"#;
    let error =
        r#"{"type":"error","code":"rate_limit_exceeded","message":"slow down","param":null}"#;
    let p = valid(
        responses::Stream::new(),
        &stream(&[CREATED, IN_PROGRESS, &text_delta(0, "x"), failed]),
    );
    assert!(p.is_error() && !p.is_incomplete());
    let p = valid(
        responses::Stream::new(),
        &stream(&[CREATED, IN_PROGRESS, &text_delta(0, "x"), incomplete]),
    );
    assert!(!p.is_error() && p.is_incomplete());
    assert_eq!(p.text(0), Some("x"));
    // An error before anything was sent, with OpenAI's `event:` line.
    let p = valid(
        responses::Stream::new(),
        &format!("event: error\ndata: {error}\n\n"),
    );
    assert!(p.is_error());
    assert!(valid(responses::Stream::new(), &stream(&[failed])).is_error());
    // `response.incomplete` is no error, so it cannot come first.
    assert_eq!(
        broken_responses(&[incomplete]),
        (responses::CREATED_FIRST, Some(0))
    );
    // Nothing follows any terminal event.
    for terminal in [failed, incomplete, error, COMPLETED] {
        assert_eq!(
            broken_responses(&[CREATED, IN_PROGRESS, terminal, COMPLETED]),
            (responses::AFTER_TERMINAL, Some(3)),
            "{terminal}"
        );
    }
    // And a stream that stops before one is unterminated.
    let err = check(responses::Stream::new(), &stream(&[CREATED, IN_PROGRESS])).unwrap_err();
    assert!(err.to_string().contains("ended"), "{err}");
}

#[test]
fn responses_json() {
    valid(
        responses::Stream::new(),
        &stream(&[CREATED, IN_PROGRESS, COMPLETED]),
    );
    assert_eq!(
        broken_responses(&[CREATED, IN_PROGRESS, "[DONE]"]),
        (responses::JSON, Some(2))
    );
    assert_eq!(
        broken_responses(&["{\"type\":"]),
        (responses::JSON, Some(0))
    );
    assert_eq!(
        broken_responses(&[r#"["response.created"]"#]),
        (responses::JSON, Some(0))
    );
}

#[test]
fn responses_type() {
    valid(
        responses::Stream::new(),
        &format!(
            "event: response.created\ndata: {{\"response\":{{\"status\":\"in_progress\",\"output\":[]}}}}\n\n{}",
            stream(&[COMPLETED])
        ),
    );
    assert_eq!(
        broken_responses(&[CREATED, "{\"delta\":\"x\"}"]),
        (responses::TYPE, Some(1))
    );
}

#[test]
fn responses_type_mismatch() {
    valid(
        responses::Stream::new(),
        &format!(
            "event: response.created\ndata: {CREATED}\n\n{}",
            stream(&[COMPLETED])
        ),
    );
    let sse = format!("event: response.in_progress\ndata: {CREATED}\n\n");
    assert_eq!(
        broken(responses::Stream::new(), &sse),
        (responses::TYPE_MISMATCH, Some(0))
    );
}

#[test]
fn responses_created_first() {
    valid(
        responses::Stream::new(),
        &stream(&[CREATED, IN_PROGRESS, COMPLETED]),
    );
    valid(responses::Stream::new(), &stream(&[FAILED]));
    assert_eq!(
        broken_responses(&[IN_PROGRESS, COMPLETED]),
        (responses::CREATED_FIRST, Some(0))
    );
    // A completion *without* error cannot come first.
    assert_eq!(
        broken_responses(&[COMPLETED]),
        (responses::CREATED_FIRST, Some(0))
    );
}

#[test]
fn responses_created_once() {
    valid(
        responses::Stream::new(),
        &stream(&[CREATED, IN_PROGRESS, IN_PROGRESS, COMPLETED]),
    );
    assert_eq!(
        broken_responses(&[CREATED, IN_PROGRESS, CREATED, COMPLETED]),
        (responses::CREATED_ONCE, Some(2))
    );
}

/// A `response.{kind}` event whose snapshot is `snapshot` (JSON).
fn with_snapshot(kind: &str, snapshot: &str) -> String {
    format!(r#"{{"type":"response.{kind}","response":{snapshot}}}"#)
}

#[test]
fn responses_status() {
    // The spec: created is "status=in_progress", completed "status=completed", the error
    // path's completed too. OpenAI's background `created` says `queued`.
    let queued = with_snapshot(
        "created",
        r#"{"id":"resp_1","status":"queued","output":[]}"#,
    );
    valid(
        responses::Stream::new(),
        &stream(&[&queued, IN_PROGRESS, COMPLETED]),
    );
    assert!(valid(responses::Stream::new(), &stream(&[FAILED])).is_error());
    // OpenAI's terminal events say what ended the response, as its API reference shows them:
    // `failed` in `response.failed`, `incomplete` in `response.incomplete`.
    let failed = r#"{"type":"response.failed","response":{"id":"resp_1","status":"failed","error":{"code":"server_error","message":"x"}}}"#;
    let incomplete = r#"{"type":"response.incomplete","response":{"id":"resp_1","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"}}}"#;
    for terminal in [failed, incomplete] {
        valid(
            responses::Stream::new(),
            &stream(&[CREATED, IN_PROGRESS, terminal]),
        );
    }
    valid(responses::Stream::new(), &stream(&[failed]));
    let created = |snapshot: &str| with_snapshot("created", snapshot);
    for bad in [
        created(r#"{"id":"resp_1","status":"completed","output":[]}"#),
        created(r#"{"id":"resp_1","status":"In_Progress","output":[]}"#),
        created(r#"{"id":"resp_1","status":null,"output":[]}"#),
        created(r#"{"id":"resp_1","output":[]}"#),
        created("null"),
        r#"{"type":"response.created"}"#.to_owned(),
    ] {
        assert_eq!(
            broken_responses(&[&bad, IN_PROGRESS, COMPLETED]),
            (responses::STATUS, Some(0)),
            "{bad}"
        );
    }
    let completed = |snapshot: &str| with_snapshot("completed", snapshot);
    for bad in [
        completed(r#"{"id":"resp_1","status":"in_progress","error":null}"#),
        completed(r#"{"id":"resp_1","status":"failed","error":{"message":"x"}}"#),
        completed(r#"{"id":"resp_1","error":null}"#),
        r#"{"type":"response.completed"}"#.to_owned(),
    ] {
        assert_eq!(
            broken_responses(&[CREATED, IN_PROGRESS, &bad]),
            (responses::STATUS, Some(2)),
            "{bad}"
        );
    }
    // The error path's completed may come first; its status is still `completed`.
    let failed_first = completed(r#"{"id":"resp_1","status":"failed","error":{"message":"x"}}"#);
    assert_eq!(
        broken_responses(&[&failed_first]),
        (responses::STATUS, Some(0))
    );
    // Every `response.in_progress` carries the "Full ResponseModel snapshot" (the model's
    // status defaults to `in_progress` and is always sent; OpenAI sends `in_progress`): one
    // without a snapshot or a status, or with another status, breaks the rule. These passed.
    let progress = |snapshot: &str| with_snapshot("in_progress", snapshot);
    for bad in [
        progress(r#"{"id":"resp_1","status":"queued"}"#),
        progress(r#"{"id":"resp_1","status":"completed","output":[]}"#),
        progress(r#"{"id":"resp_1","output":[]}"#),
        progress(r#"{"id":"resp_1","status":null}"#),
        progress("null"),
        r#"{"type":"response.in_progress"}"#.to_owned(),
    ] {
        assert_eq!(
            broken_responses(&[CREATED, &bad, COMPLETED]),
            (responses::STATUS, Some(1)),
            "{bad}"
        );
        // The one that announces a tool call too.
        assert_eq!(
            broken_responses(&[CREATED, IN_PROGRESS, &bad, COMPLETED]),
            (responses::STATUS, Some(2)),
            "{bad}"
        );
    }
    // OpenAI's terminal events: `failed` and `incomplete`, not another status, nor none.
    let terminal = |kind: &str, snapshot: &str| with_snapshot(kind, snapshot);
    for bad in [
        terminal(
            "failed",
            r#"{"id":"resp_1","status":"completed","error":{"code":"x"}}"#,
        ),
        terminal(
            "failed",
            r#"{"id":"resp_1","status":"incomplete","error":{"code":"x"}}"#,
        ),
        terminal("failed", r#"{"id":"resp_1","error":{"code":"x"}}"#),
        r#"{"type":"response.failed"}"#.to_owned(),
        terminal("incomplete", r#"{"id":"resp_1","status":"completed"}"#),
        terminal("incomplete", r#"{"id":"resp_1","status":"failed"}"#),
        terminal("incomplete", r#"{"id":"resp_1","status":null}"#),
        r#"{"type":"response.incomplete"}"#.to_owned(),
    ] {
        assert_eq!(
            broken_responses(&[CREATED, IN_PROGRESS, &bad]),
            (responses::STATUS, Some(2)),
            "{bad}"
        );
    }
    // A `response.failed` may come first (a failure before anything was sent); its status
    // is `failed` all the same.
    assert_eq!(
        broken_responses(&[&terminal(
            "failed",
            r#"{"id":"resp_1","status":"completed","error":{"code":"x"}}"#
        )]),
        (responses::STATUS, Some(0))
    );
    // OpenAI's `error` event carries no snapshot, so no status.
    let error = r#"{"type":"error","code":"server_error","message":"x","param":null}"#;
    assert!(valid(
        responses::Stream::new(),
        &stream(&[CREATED, IN_PROGRESS, error])
    )
    .is_error());
    // A status that is not a string is a field of the wrong type.
    assert_eq!(
        broken_responses(&[&created(r#"{"status":1,"output":[]}"#)]),
        (responses::FIELDS, Some(0))
    );
}

/// A `response` snapshot is an object: an array was read by position as one (serde's
/// derived structs take arrays), so `[null, "resp_1", "in_progress", []]` passed for a
/// `created` snapshot.
#[test]
fn responses_a_snapshot_is_an_object() {
    for (kind, snapshot) in [
        ("created", r#"[null,"resp_1","in_progress",[]]"#),
        ("in_progress", r#"[null,"resp_1","in_progress"]"#),
        ("completed", r#"[null,"resp_1","completed"]"#),
        ("completed", "[]"),
        ("completed", "\"resp_1\""),
    ] {
        let event = with_snapshot(kind, snapshot);
        let events: Vec<&str> = match kind {
            "created" => vec![&event],
            "in_progress" => vec![CREATED, &event],
            _ => vec![CREATED, IN_PROGRESS, &event],
        };
        let index = events.len() as u64 - 1;
        assert_eq!(
            broken_responses(&events),
            (responses::FIELDS, Some(index)),
            "{event}"
        );
    }
    // A null snapshot is no snapshot, so no status: every snapshot event needs one (STATUS),
    // OpenAI's `error` none.
    let null = r#"{"type":"response.in_progress","response":null}"#;
    assert_eq!(
        broken_responses(&[CREATED, null, COMPLETED]),
        (responses::STATUS, Some(1))
    );
    let error = r#"{"type":"error","code":"server_error","message":"x","response":null}"#;
    valid(responses::Stream::new(), &stream(&[CREATED, error]));
}

#[test]
fn responses_created_empty() {
    let created = |output: &str| {
        with_snapshot(
            "created",
            &format!(r#"{{"id":"resp_1","status":"in_progress","output":{output}}}"#),
        )
    };
    valid(
        responses::Stream::new(),
        &stream(&[&created("[ \t]"), IN_PROGRESS, COMPLETED]),
    );
    for bad in [
        created(r#"[{"id":"msg_1","type":"message"}]"#),
        created("[[]]"),
        created("null"),
        with_snapshot("created", r#"{"id":"resp_1","status":"in_progress"}"#),
    ] {
        assert_eq!(
            broken_responses(&[&bad, IN_PROGRESS, COMPLETED]),
            (responses::CREATED_EMPTY, Some(0)),
            "{bad}"
        );
    }
    // Later snapshots carry the output as it grows.
    let progress = r#"{"type":"response.in_progress","response":{"id":"resp_1","status":"in_progress","output":[{"type":"function_call"}]}}"#;
    valid(
        responses::Stream::new(),
        &stream(&[CREATED, progress, COMPLETED]),
    );
    // An output that is not an array is a field of the wrong type.
    assert_eq!(
        broken_responses(&[&created("\"[]\"")]),
        (responses::FIELDS, Some(0))
    );
}

#[test]
fn responses_response_id() {
    let in_progress = |id: &str| {
        format!(
            r#"{{"type":"response.in_progress","response":{{"id":"{id}","status":"in_progress"}}}}"#
        )
    };
    // The same id written with an escape is the same id; a snapshot without one is fine.
    valid(
        responses::Stream::new(),
        &stream(&[
            CREATED,
            &in_progress("resp\\u005f1"),
            r#"{"type":"response.in_progress","response":{"status":"in_progress"}}"#,
            COMPLETED,
        ]),
    );
    assert_eq!(
        broken_responses(&[CREATED, &in_progress("resp_2"), COMPLETED]),
        (responses::RESPONSE_ID, Some(1))
    );
    let other = COMPLETED.replace("resp_1", "resp_2");
    assert_eq!(
        broken_responses(&[CREATED, IN_PROGRESS, &other]),
        (responses::RESPONSE_ID, Some(2))
    );
    // OpenAI's terminal events carry the snapshot too.
    let failed = r#"{"type":"response.failed","response":{"id":"resp_9","status":"failed","error":{"code":"server_error"}}}"#;
    assert_eq!(
        broken_responses(&[CREATED, IN_PROGRESS, failed]),
        (responses::RESPONSE_ID, Some(2))
    );
    // When `created` has no id, the first snapshot that has one sets it.
    let anonymous = with_snapshot("created", r#"{"status":"in_progress","output":[]}"#);
    valid(
        responses::Stream::new(),
        &stream(&[
            &anonymous,
            &in_progress("resp_7"),
            &COMPLETED.replace("resp_1", "resp_7"),
        ]),
    );
    assert_eq!(
        broken_responses(&[&anonymous, &in_progress("resp_7"), COMPLETED]),
        (responses::RESPONSE_ID, Some(2))
    );
}

#[test]
fn responses_in_progress_before_output() {
    valid(
        responses::Stream::new(),
        &stream(&[CREATED, IN_PROGRESS, &text_delta(0, "x"), COMPLETED]),
    );
    assert_eq!(
        broken_responses(&[CREATED, &text_delta(0, "x"), COMPLETED]),
        (responses::IN_PROGRESS_BEFORE_OUTPUT, Some(1))
    );
}

#[test]
fn responses_fields() {
    valid(
        responses::Stream::new(),
        &stream(&[
            CREATED,
            IN_PROGRESS,
            &text_delta(0, "x"),
            TOOL,
            &args_delta(1, "{}"),
            &args_done(1, "{}"),
            COMPLETED,
        ]),
    );
    let no_index = r#"{"type":"response.output_text.delta","item_id":"m","delta":"x"}"#;
    let numeric_delta =
        r#"{"type":"response.function_call_arguments.delta","output_index":0,"delta":5}"#;
    let no_arguments = r#"{"type":"response.function_call_arguments.done","output_index":0}"#;
    for bad in [no_index, no_arguments] {
        assert_eq!(
            broken_responses(&[CREATED, IN_PROGRESS, bad, COMPLETED]),
            (responses::FIELDS, Some(2))
        );
    }
    // A field of the wrong JSON type is a field error, not a JSON error.
    let string_index = r#"{"type":"response.output_text.delta","output_index":"0","delta":"x"}"#;
    for bad in [numeric_delta, string_index] {
        assert_eq!(
            broken_responses(&[CREATED, IN_PROGRESS, bad]),
            (responses::FIELDS, Some(2))
        );
    }
}

#[test]
fn responses_fields_of_tool_calls() {
    // The spec's payloads: deltas carry item_id, output_index and delta; `.done` carries id,
    // output_index and arguments; tool_calls.created item_id, output_index and tool_call.
    let created = r#"{"type":"response.tool_calls.created","item_id":"fc_0","output_index":0,"tool_call":{"id":"fc_0","name":"f","arguments":""}}"#;
    valid(
        responses::Stream::new(),
        &stream(&[
            CREATED,
            IN_PROGRESS,
            created,
            &args_delta(0, "{}"),
            COMPLETED,
        ]),
    );
    // OpenAI's `.done` names the item `item_id`, as its deltas do.
    let openai_done = r#"{"type":"response.function_call_arguments.done","item_id":"fc_0","output_index":0,"arguments":"{}"}"#;
    valid(
        responses::Stream::new(),
        &stream(&[
            CREATED,
            IN_PROGRESS,
            TOOL,
            &args_delta(0, "{}"),
            openai_done,
            COMPLETED,
        ]),
    );
    let text_no_item = r#"{"type":"response.output_text.delta","output_index":0,"delta":"x"}"#;
    let text_numeric_item =
        r#"{"type":"response.output_text.delta","item_id":7,"output_index":0,"delta":"x"}"#;
    let args_no_item =
        r#"{"type":"response.function_call_arguments.delta","output_index":0,"delta":"{}"}"#;
    let done_no_id =
        r#"{"type":"response.function_call_arguments.done","output_index":0,"arguments":"{}"}"#;
    let created_no_call =
        r#"{"type":"response.tool_calls.created","item_id":"fc_0","output_index":0}"#;
    let created_string_call = r#"{"type":"response.tool_calls.created","item_id":"fc_0","output_index":0,"tool_call":"f"}"#;
    let created_array_call = r#"{"type":"response.tool_calls.created","item_id":"fc_0","output_index":0,"tool_call":[]}"#;
    let created_no_item =
        r#"{"type":"response.tool_calls.created","output_index":0,"tool_call":{}}"#;
    let created_no_index =
        r#"{"type":"response.tool_calls.created","item_id":"fc_0","tool_call":{}}"#;
    for bad in [
        text_no_item,
        text_numeric_item,
        args_no_item,
        done_no_id,
        created_no_call,
        created_string_call,
        created_array_call,
        created_no_item,
        created_no_index,
    ] {
        assert_eq!(
            broken_responses(&[CREATED, IN_PROGRESS, TOOL, bad, COMPLETED]),
            (responses::FIELDS, Some(3)),
            "{bad}"
        );
    }
}

/// FIELDS reads the fields the table names, in the events it names them for: it type-checked
/// every known field name (`output_index`, `delta`, `item_id`, `id`, `arguments`,
/// `tool_call`, `response`, each once) in every event, so OpenAI event types the profile lets
/// through were refused for carrying a field of that name with another shape.
#[test]
fn responses_fields_only_where_the_profile_reads_them() {
    // Event types the profile does not check: their fields are not read.
    let others = [
        // OpenAI's API reference typed this event's `delta` as an object.
        r#"{"type":"response.mcp_call.arguments_delta","sequence_number":5,"output_index":1,"item_id":"mcp_1","delta":{"query":"x"}}"#,
        r#"{"type":"response.output_item.added","output_index":"1","item":{"id":"fc_1","type":"function_call"}}"#,
        r#"{"type":"response.content_part.added","item_id":"msg_1","item_id":"msg_1","output_index":0,"part":{"type":"output_text","text":""}}"#,
        r#"{"type":"response.some_future_event","output_index":-1,"item_id":7,"id":{"n":1},"delta":["a"],"arguments":{"a":1},"tool_call":"f","response":"resp_1"}"#,
        r#"{"type":"response.reasoning_summary_text.delta","item_id":"rs_1","output_index":0,"delta":"\ud800"}"#,
        // The same through the serde path the scanner hands escaped keys to.
        r#"{"type":"response.mcp_call.arguments_delta","item_\u0069d":"mcp_1","delta":{"q":"x"}}"#,
        r#"{"ty\u0070e":"response.some_future_event","delta":"\ud800","delta":1,"response":[]}"#,
    ];
    for other in others {
        valid(
            responses::Stream::new(),
            &stream(&[CREATED, IN_PROGRESS, other, COMPLETED]),
        );
    }
    // Named by `event:` alone, as OpenAI frames events.
    valid(
        responses::Stream::new(),
        &format!(
            "{}event: response.reasoning_summary_text.delta\ndata: {{\"item_id\":\"rs_1\",\"delta\":{{}}}}\n\n{}",
            stream(&[CREATED, IN_PROGRESS]),
            stream(&[COMPLETED])
        ),
    );
    // OpenAI's `error`: only its `response` snapshot is read.
    let error =
        r#"{"type":"error","code":"server_error","message":"x","param":null,"id":5,"delta":{}}"#;
    assert!(valid(
        responses::Stream::new(),
        &stream(&[CREATED, IN_PROGRESS, error])
    )
    .is_error());
    // The checked events: the fields their row names, not others.
    let text = r#"{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"delta":"x","id":5,"arguments":{},"tool_call":"f","response":[]}"#;
    let done = r#"{"type":"response.function_call_arguments.done","id":"fc_0","output_index":0,"arguments":"{}","delta":5,"tool_call":[]}"#;
    let created = r#"{"type":"response.tool_calls.created","item_id":"fc_1","output_index":1,"tool_call":{"name":"f"},"delta":5,"arguments":null,"id":[]}"#;
    let completed = r#"{"type":"response.completed","output_index":"0","delta":1,"item_id":2,"response":{"id":"resp_1","status":"completed","error":null}}"#;
    let p = valid(
        responses::Stream::new(),
        &stream(&[
            CREATED,
            IN_PROGRESS,
            text,
            TOOL,
            &args_delta(0, "{}"),
            done,
            created,
            &args_delta(1, "{}"),
            completed,
        ]),
    );
    assert_eq!((p.text(0), p.arguments(0)), (Some("x"), Some("{}")));
    // Where FIELDS applies it is unchanged: a field it reads given twice, or of another type.
    let twice = r#"{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"delta":"x","delta":"y"}"#;
    let escaped_twice = r#"{"type":"response.function_call_arguments.done","id":"fc_0","output_index":0,"arguments":"{}","\u0061rguments":"{}"}"#;
    let surrogate = r#"{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"delta":"\ud800"}"#;
    let snapshot_twice = r#"{"type":"response.completed","response":{"id":"resp_1","status":"completed","status":"completed"}}"#;
    for bad in [twice, escaped_twice, surrogate, snapshot_twice] {
        assert_eq!(
            broken_responses(&[CREATED, IN_PROGRESS, TOOL, &args_delta(0, "{}"), bad]),
            (responses::FIELDS, Some(4)),
            "{bad}"
        );
    }
    // A `type` that is not one string names no type: TYPE, whatever the event.
    for bad in [
        r#"{"type":5}"#,
        r#"{"type":["response.completed"]}"#,
        r#"{"type":"response.completed","type":"response.completed"}"#,
        r#"{"type":"\ud800"}"#,
        r#"{"ty\u0070e":{}}"#,
    ] {
        assert_eq!(
            broken_responses(&[CREATED, IN_PROGRESS, bad, COMPLETED]),
            (responses::TYPE, Some(2)),
            "{bad}"
        );
    }
}

#[test]
fn responses_tool_call_announced() {
    // Modern path: one `in_progress` per tool call, before its arguments; the calls'
    // deltas may then interleave.
    let p = valid(
        responses::Stream::new(),
        &stream(&[
            CREATED,
            IN_PROGRESS,
            TOOL,
            TOOL,
            &args_delta(0, "{\"a\""),
            &args_delta(1, "{}"),
            &args_delta(0, ":1}"),
            &args_done(0, "{\"a\":1}"),
            &args_done(1, "{}"),
            COMPLETED,
        ]),
    );
    assert_eq!(p.arguments(0), Some("{\"a\":1}"));
    // Legacy path: `tool_calls.created` announces the call at its output_index.
    let legacy = |index: u64| {
        format!(
            r#"{{"type":"response.tool_calls.created","item_id":"fc_{index}","output_index":{index},"tool_call":{{"name":"f"}}}}"#
        )
    };
    valid(
        responses::Stream::new(),
        &stream(&[
            CREATED,
            IN_PROGRESS,
            &legacy(0),
            &args_delta(0, "{}"),
            COMPLETED,
        ]),
    );
    // OpenAI's streams announce items with `response.output_item.added` (and send one
    // `in_progress`); the interop server's shape.
    let added = r#"{"type":"response.output_item.added","output_index":1,"item":{"id":"fc_1","type":"function_call","status":"in_progress","arguments":""}}"#;
    let openai_done = r#"{"type":"response.function_call_arguments.done","item_id":"fc_1","output_index":1,"arguments":"{}"}"#;
    valid(
        responses::Stream::new(),
        &stream(&[
            CREATED,
            IN_PROGRESS,
            added,
            &args_delta(1, "{}"),
            openai_done,
            COMPLETED,
        ]),
    );
    // The first `in_progress` announces nothing.
    for first in [args_delta(0, "{}"), args_done(0, "{}")] {
        assert_eq!(
            broken_responses(&[CREATED, IN_PROGRESS, &first, COMPLETED]),
            (responses::TOOL_CALL_ANNOUNCED, Some(2)),
            "{first}"
        );
    }
    // One announcement, two tool calls: the second is not announced.
    assert_eq!(
        broken_responses(&[
            CREATED,
            IN_PROGRESS,
            TOOL,
            &args_delta(0, "{}"),
            &args_delta(1, "{}"),
            COMPLETED
        ]),
        (responses::TOOL_CALL_ANNOUNCED, Some(4))
    );
    // An announcement is used by the tool call after it, not one before it.
    assert_eq!(
        broken_responses(&[
            CREATED,
            IN_PROGRESS,
            TOOL,
            &args_delta(0, "{}"),
            &args_done(0, "{}"),
            &args_delta(1, "{}"),
            TOOL,
            COMPLETED
        ]),
        (responses::TOOL_CALL_ANNOUNCED, Some(5))
    );
    // `tool_calls.created` announces its own output_index only, and only a new call.
    assert_eq!(
        broken_responses(&[
            CREATED,
            IN_PROGRESS,
            &legacy(0),
            &args_delta(1, "{}"),
            COMPLETED
        ]),
        (responses::TOOL_CALL_ANNOUNCED, Some(3))
    );
    for again in [
        vec![CREATED, IN_PROGRESS, &legacy(0), &legacy(0)],
        vec![CREATED, IN_PROGRESS, TOOL, &args_delta(0, "{}"), &legacy(0)],
    ] {
        let index = again.len() as u64 - 1;
        assert_eq!(
            broken_responses(&again),
            (responses::TOOL_CALL_ANNOUNCED, Some(index))
        );
    }
}

#[test]
fn responses_item_id() {
    // Open Responses Server sends an MCP tool's result as a text delta at output_index 0
    // under the call's id: text deltas are not tied to the tool calls' ids.
    let result = r#"{"type":"response.output_text.delta","item_id":"call_1","output_index":0,"delta":"[\"18C\"]"}"#;
    valid(
        responses::Stream::new(),
        &stream(&[
            CREATED,
            IN_PROGRESS,
            &text_delta(0, "Let me see."),
            TOOL,
            &args_delta(0, "{}"),
            &args_done(0, "{}"),
            result,
            COMPLETED,
        ]),
    );
    let other_delta = r#"{"type":"response.function_call_arguments.delta","item_id":"fc_9","output_index":0,"delta":"}"}"#;
    let other_done = r#"{"type":"response.function_call_arguments.done","id":"fc_9","output_index":0,"arguments":"{}"}"#;
    let other_openai_done = r#"{"type":"response.function_call_arguments.done","item_id":"fc_9","output_index":0,"arguments":"{}"}"#;
    let disagreeing_done = r#"{"type":"response.function_call_arguments.done","id":"fc_0","item_id":"fc_9","output_index":0,"arguments":"{}"}"#;
    for bad in [other_delta, other_done, other_openai_done, disagreeing_done] {
        assert_eq!(
            broken_responses(&[
                CREATED,
                IN_PROGRESS,
                TOOL,
                &args_delta(0, "{"),
                bad,
                COMPLETED
            ]),
            (responses::ITEM_ID, Some(4)),
            "{bad}"
        );
    }
    // Legacy path: the deltas carry the id `tool_calls.created` gave the call.
    let created = r#"{"type":"response.tool_calls.created","item_id":"call_1","output_index":0,"tool_call":{"name":"f"}}"#;
    assert_eq!(
        broken_responses(&[
            CREATED,
            IN_PROGRESS,
            created,
            &args_delta(0, "{}"),
            COMPLETED
        ]),
        (responses::ITEM_ID, Some(3))
    );
    // One item id names one tool call: not a second one at another output_index (this
    // passed with two announcements).
    let same_id_at_1 = r#"{"type":"response.function_call_arguments.delta","item_id":"fc_0","output_index":1,"delta":"{}"}"#;
    let same_id_done_at_1 = r#"{"type":"response.function_call_arguments.done","id":"fc_0","output_index":1,"arguments":""}"#;
    let same_id_created_at_1 = r#"{"type":"response.tool_calls.created","item_id":"fc_0","output_index":1,"tool_call":{"name":"f"}}"#;
    for bad in [same_id_at_1, same_id_done_at_1, same_id_created_at_1] {
        assert_eq!(
            broken_responses(&[
                CREATED,
                IN_PROGRESS,
                TOOL,
                TOOL,
                &args_delta(0, "{}"),
                bad,
                COMPLETED
            ]),
            (responses::ITEM_ID, Some(5)),
            "{bad}"
        );
    }
    // The same id written with an escape is the same id.
    let escaped = r#"{"type":"response.function_call_arguments.done","id":"fc\u005f0","output_index":0,"arguments":"{}"}"#;
    valid(
        responses::Stream::new(),
        &stream(&[
            CREATED,
            IN_PROGRESS,
            TOOL,
            &args_delta(0, "{}"),
            escaped,
            COMPLETED,
        ]),
    );
}

#[test]
fn responses_arguments_match() {
    valid(
        responses::Stream::new(),
        &stream(&[
            CREATED,
            IN_PROGRESS,
            TOOL,
            &args_delta(0, "{\"a\":"),
            &args_delta(0, "1}"),
            &args_done(0, "{\"a\":1}"),
            COMPLETED,
        ]),
    );
    let sse = stream(&[
        CREATED,
        IN_PROGRESS,
        TOOL,
        &args_delta(0, "{\"a\":"),
        &args_delta(0, "1}"),
        &args_done(0, "{\"a\":2}"),
        COMPLETED,
    ]);
    assert_eq!(
        broken(responses::Stream::new(), &sse),
        (responses::ARGUMENTS_MATCH, Some(5))
    );
    // `.done` for an item that had no deltas: the concatenation is empty.
    assert_eq!(
        broken_responses(&[CREATED, IN_PROGRESS, TOOL, &args_done(3, "{}"), COMPLETED]),
        (responses::ARGUMENTS_MATCH, Some(3))
    );
}

#[test]
fn responses_arguments_json() {
    valid(
        responses::Stream::new(),
        &stream(&[
            CREATED,
            IN_PROGRESS,
            TOOL,
            &args_delta(0, "{\"a\":"),
            &args_delta(0, "[]}"),
            &args_done(0, "{\"a\":[]}"),
            COMPLETED,
        ]),
    );
    let sse = stream(&[
        CREATED,
        IN_PROGRESS,
        TOOL,
        &args_delta(0, "{\"a\":"),
        &args_done(0, "{\"a\":"),
        COMPLETED,
    ]);
    assert_eq!(
        broken(responses::Stream::new(), &sse),
        (responses::ARGUMENTS_JSON, Some(4))
    );
}

/// A tool call without arguments: Open Responses Server sends no delta (or an empty one,
/// when the LLM sends `"arguments": ""` with the function name) and a `.done` whose
/// `arguments` is the empty concatenation, `""`. ARGUMENTS_JSON refused it.
#[test]
fn responses_a_call_without_arguments() {
    let openai_done = r#"{"type":"response.function_call_arguments.done","item_id":"fc_0","output_index":0,"arguments":""}"#;
    let (no_delta, empty_delta) = (args_done(0, ""), args_delta(0, ""));
    for call in [
        vec![no_delta.as_str()],
        vec![&empty_delta, &no_delta],
        vec![openai_done],
    ] {
        let events = [&[CREATED, IN_PROGRESS, TOOL][..], &call, &[COMPLETED]].concat();
        let p = valid(responses::Stream::new(), &stream(&events));
        assert_eq!(p.arguments(0), None, "{call:?}");
    }
    // Beside a call with arguments, and with an MCP result.
    let p = valid(
        responses::Stream::new(),
        &stream(&[
            CREATED,
            IN_PROGRESS,
            TOOL,
            TOOL,
            &args_delta(1, "{\"a\":1}"),
            &args_done(0, ""),
            &args_done(1, "{\"a\":1}"),
            &text_delta(0, "[\"ok\"]"),
            COMPLETED,
        ]),
    );
    assert_eq!((p.arguments(0), p.arguments(1)), (None, Some("{\"a\":1}")));
    // ARGUMENTS_MATCH still holds: "" is the concatenation of no deltas, not of some.
    assert_eq!(
        broken_responses(&[
            CREATED,
            IN_PROGRESS,
            TOOL,
            &args_delta(0, "{}"),
            &args_done(0, ""),
            COMPLETED
        ]),
        (responses::ARGUMENTS_MATCH, Some(4))
    );
    // Only the empty string means "no arguments": deltas that make something else that is
    // not JSON are refused.
    for arguments in [" ", "\n", "{", "{}{}", "null,"] {
        assert_eq!(
            broken_responses(&[
                CREATED,
                IN_PROGRESS,
                TOOL,
                &args_delta(0, arguments),
                &args_done(0, arguments),
                COMPLETED
            ]),
            (responses::ARGUMENTS_JSON, Some(4)),
            "{arguments:?}"
        );
    }
    // And one `.done` per call, empty or not.
    assert_eq!(
        broken_responses(&[
            CREATED,
            IN_PROGRESS,
            TOOL,
            &args_done(0, ""),
            &args_done(0, ""),
            COMPLETED
        ]),
        (responses::DONE_ONCE, Some(4))
    );
}

#[test]
fn responses_done_once() {
    valid(
        responses::Stream::new(),
        &stream(&[
            CREATED,
            IN_PROGRESS,
            TOOL,
            &args_delta(0, "{}"),
            &args_done(0, "{}"),
            TOOL,
            &args_delta(1, "{}"),
            &args_done(1, "{}"),
            COMPLETED,
        ]),
    );
    let twice = stream(&[
        CREATED,
        IN_PROGRESS,
        TOOL,
        &args_delta(0, "{}"),
        &args_done(0, "{}"),
        &args_done(0, "{}"),
        COMPLETED,
    ]);
    assert_eq!(
        broken(responses::Stream::new(), &twice),
        (responses::DONE_ONCE, Some(5))
    );
    let late_delta = stream(&[
        CREATED,
        IN_PROGRESS,
        TOOL,
        &args_delta(0, "{}"),
        &args_done(0, "{}"),
        &args_delta(0, " "),
        COMPLETED,
    ]);
    assert_eq!(
        broken(responses::Stream::new(), &late_delta),
        (responses::DONE_ONCE, Some(5))
    );
}

#[test]
fn responses_after_terminal() {
    valid(
        responses::Stream::new(),
        &stream(&[CREATED, IN_PROGRESS, &text_delta(0, "in time"), COMPLETED]),
    );
    assert_eq!(
        broken_responses(&[CREATED, IN_PROGRESS, COMPLETED, &text_delta(0, "late")]),
        (responses::AFTER_TERMINAL, Some(3))
    );
    assert_eq!(
        broken_responses(&[CREATED, COMPLETED, COMPLETED]),
        (responses::AFTER_TERMINAL, Some(2))
    );
}

#[test]
fn responses_an_error_event_may_be_followed_by_the_responses_failed_event() {
    let error = r#"{"type":"error","code":"server_error","message":"upstream timeout"}"#;
    let failed = r#"{"type":"response.failed","response":{"id":"resp_1","status":"failed","error":{"code":"server_error","message":"upstream timeout"}}}"#;
    let text = text_delta(0, "x");
    // Either ending is an error: `error` alone, or `error` then `response.failed`.
    for ending in [&[error][..], &[error, failed]] {
        let events: Vec<&str> = [CREATED, IN_PROGRESS, &text]
            .into_iter()
            .chain(ending.iter().copied())
            .collect();
        assert!(valid(responses::Stream::new(), &stream(&events)).is_error());
    }
    // The failed response is still checked (its status, its id) ...
    let other_id = failed.replace("resp_1", "resp_2");
    assert_eq!(
        broken_responses(&[CREATED, error, &other_id]),
        (responses::RESPONSE_ID, Some(2))
    );
    // ... and only `response.failed` may follow an `error`, once; nothing follows it.
    for late in [COMPLETED, error, &text] {
        assert_eq!(
            broken_responses(&[CREATED, error, late]),
            (responses::AFTER_TERMINAL, Some(2))
        );
        assert_eq!(
            broken_responses(&[CREATED, error, failed, late]),
            (responses::AFTER_TERMINAL, Some(3))
        );
    }
    assert_eq!(
        broken_responses(&[CREATED, failed, failed]),
        (responses::AFTER_TERMINAL, Some(2))
    );
}

#[test]
fn responses_too_large() {
    let sse = stream(&[
        CREATED,
        IN_PROGRESS,
        &text_delta(0, "abc"),
        &text_delta(1, "de"),
        COMPLETED,
    ]);
    // The response id kept to compare snapshots (`resp_1`, 6 bytes) counts, then 5 of text.
    valid(responses::Stream::new().max_accumulated(11), &sse);
    assert_eq!(
        broken(responses::Stream::new().max_accumulated(10), &sse),
        (responses::TOO_LARGE, Some(3))
    );
    assert_eq!(
        broken(responses::Stream::new().max_accumulated(5), &sse),
        (responses::TOO_LARGE, Some(0))
    );
    // A tool call's id counts too: `resp_1`, `{}` and `fc_0` are 12 bytes.
    let sse = stream(&[
        CREATED,
        IN_PROGRESS,
        TOOL,
        &args_delta(0, "{}"),
        &args_done(0, "{}"),
        COMPLETED,
    ]);
    valid(responses::Stream::new().max_accumulated(12), &sse);
    assert_eq!(
        broken(responses::Stream::new().max_accumulated(11), &sse),
        (responses::TOO_LARGE, Some(3))
    );
}

#[test]
fn responses_too_many_items() {
    let sse = stream(&[
        CREATED,
        IN_PROGRESS,
        &text_delta(0, "a"),
        &text_delta(7, ""),
        &text_delta(0, "b"),
        &text_delta(7, "c"),
        COMPLETED,
    ]);
    let p = valid(responses::Stream::new().max_items(2), &sse);
    assert_eq!((p.text(0), p.text(7)), (Some("ab"), Some("c")));
    assert_eq!(
        broken(responses::Stream::new().max_items(1), &sse),
        (responses::TOO_MANY_ITEMS, Some(3))
    );
    // The default: 1024 items, each named by an empty delta (no text to count), and one
    // more is refused.
    assert_eq!(responses::DEFAULT_MAX_ITEMS, 1024);
    let mut events = vec![CREATED.to_owned(), IN_PROGRESS.to_owned()];
    events.extend((0..1024).map(|i| text_delta(i * 1000, "")));
    events.push(COMPLETED.to_owned());
    let refs: Vec<&str> = events.iter().map(String::as_str).collect();
    valid(responses::Stream::new(), &stream(&refs));
    events.insert(1026, text_delta(u64::MAX, ""));
    let refs: Vec<&str> = events.iter().map(String::as_str).collect();
    assert_eq!(
        broken_responses(&refs),
        (responses::TOO_MANY_ITEMS, Some(1026))
    );
}

#[test]
fn responses_unterminated_and_reported_name() {
    valid(
        responses::Stream::new(),
        &stream(&[CREATED, IN_PROGRESS, &text_delta(0, "x"), COMPLETED]),
    );
    let sse = stream(&[CREATED, IN_PROGRESS, &text_delta(0, "x")]);
    assert_eq!(broken(responses::Stream::new(), &sse), (UNTERMINATED, None));
    // The violation names the event by its JSON type, not `message`.
    let err = check(
        responses::Stream::new(),
        &stream(&[CREATED, &text_delta(0, "x")]),
    )
    .unwrap_err();
    let SequenceError::Violation(v) = err else {
        panic!("{err}")
    };
    assert_eq!(v.event_type, "response.output_text.delta");
}

// ---------------------------------------------------------------------------------------
// agent::Run

const START: &str = r#"{"event":"start","run_id":"r1","session_id":"s1"}"#;
const COMPLETE: &str = r#"{"event":"complete","run_id":"r1","content":"Hi","usage":{"tokens":3}}"#;

#[test]
fn agent_valid_run() {
    let p = valid(
        agent::Run::new(),
        &stream(&[
            START,
            r#"{"event":"step_started","step":1}"#,
            r#"{"event":"reasoning_delta","delta":"think"}"#,
            r#"{"event":"tool_call","tool_name":"search","arguments":{"q":"x"}}"#,
            r#"{"event":"context_handler_created","context_handler_id":"c"}"#,
            r#"{"event":"tool_result","tool_name":"search","result":"r"}"#,
            r#"{"event":"content_delta","delta":"H"}"#,
            r#"{"event":"content_delta","delta":"i"}"#,
            r#"{"event":"step_completed","step":1}"#,
            r#"{"event":"step_started","step":"2"}"#,
            r#"{"event":"step_completed","step":2}"#,
            r#"{"event":"chunk","content":"Hi"}"#,
            COMPLETE,
        ]),
    );
    assert_eq!(
        (p.content(), p.reasoning(), p.session_id()),
        ("Hi", "think", Some("s1"))
    );
    // An error ends a run whatever is open.
    valid(
        agent::Run::new(),
        &stream(&[
            START,
            r#"{"event":"step_started","step":1}"#,
            r#"{"event":"error","message":"boom"}"#,
        ]),
    );
}

#[test]
fn agent_json() {
    valid(agent::Run::new(), &stream(&[START, COMPLETE]));
    assert_eq!(
        broken(agent::Run::new(), &stream(&[START, "hello"])),
        (agent::JSON, Some(1))
    );
    // serde would read an array as the struct's fields in order: refused.
    assert_eq!(
        broken(agent::Run::new(), &stream(&[START, r#"["complete"]"#])),
        (agent::JSON, Some(1))
    );
}

#[test]
fn agent_name() {
    valid(
        agent::Run::new(),
        &format!("event: start\ndata: {START}\n\n{}", stream(&[COMPLETE])),
    );
    assert_eq!(
        broken(agent::Run::new(), &stream(&[START, r#"{"delta":"x"}"#])),
        (agent::NAME, Some(1))
    );
    let mismatch = format!("event: start\ndata: {COMPLETE}\n\n");
    assert_eq!(broken(agent::Run::new(), &mismatch), (agent::NAME, Some(0)));
    // A JSON `event` that is not one string names nothing, whatever the event.
    for bad in [
        r#"{"event":5,"delta":"x"}"#,
        r#"{"event":["content_delta"],"delta":"x"}"#,
        r#"{"event":"content_delta","event":"content_delta","delta":"x"}"#,
        r#"{"event":"\ud800","delta":"x"}"#,
    ] {
        assert_eq!(
            broken(agent::Run::new(), &stream(&[START, bad, COMPLETE])),
            (agent::NAME, Some(1)),
            "{bad}"
        );
    }
    // An escaped name (or key) is read like any other.
    valid(
        agent::Run::new(),
        &stream(&[
            START,
            r#"{"\u0065vent":"content\u005fdelta","delta":"x"}"#,
            COMPLETE,
        ]),
    );
}

#[test]
fn agent_start_first() {
    valid(
        agent::Run::new(),
        &stream(&[
            START,
            r#"{"event":"step_started","step":1}"#,
            r#"{"event":"step_completed","step":1}"#,
            COMPLETE,
        ]),
    );
    assert_eq!(
        broken(
            agent::Run::new(),
            &stream(&[r#"{"event":"step_started","step":1}"#, COMPLETE])
        ),
        (agent::START_FIRST, Some(0))
    );
}

#[test]
fn agent_start_once() {
    valid(agent::Run::new(), &stream(&[START, COMPLETE]));
    assert_eq!(
        broken(agent::Run::new(), &stream(&[START, START, COMPLETE])),
        (agent::START_ONCE, Some(1))
    );
}

#[test]
fn agent_fields() {
    valid(
        agent::Run::new(),
        &stream(&[
            START,
            r#"{"event":"step_started","step":"s"}"#,
            r#"{"event":"tool_call","tool_name":"t","arguments":{}}"#,
            r#"{"event":"tool_result","tool_name":"t","result":null}"#,
            r#"{"event":"content_delta","delta":""}"#,
            r#"{"event":"step_completed","step":"s"}"#,
            COMPLETE,
        ]),
    );
    for bad in [
        r#"{"event":"step_started"}"#,
        r#"{"event":"tool_call","arguments":{}}"#,
        r#"{"event":"content_delta"}"#,
        r#"{"event":"approval_requested","tool_input":{}}"#,
        r#"{"event":"step_started","step":1.5}"#,
        r#"{"event":"tool_call","tool_name":7}"#,
        // The platform's key fields.
        r#"{"event":"tool_call","tool_name":"t"}"#,
        r#"{"event":"approval_requested","tool_name":"t"}"#,
        r#"{"event":"chunk"}"#,
        r#"{"event":"reasoning","summary":"s"}"#,
        r#"{"event":"reasoning_summary","text":"t"}"#,
        r#"{"event":"context_handler_created"}"#,
        r#"{"event":"complete","run_id":"r1","content":"Hi"}"#,
        r#"{"event":"error","error":"boom"}"#,
    ] {
        assert_eq!(
            broken(agent::Run::new(), &stream(&[START, bad, COMPLETE])),
            (agent::FIELDS, Some(1)),
            "{bad}"
        );
    }
}

#[test]
fn agent_fields_only_where_the_profile_reads_them() {
    // Fields of the wrong type that the profile does not read for that event: not looked
    // at (profile/mod.rs: "fields of events the profile does not read are not looked at").
    for complete in [
        r#"{"event":"complete","run_id":"r1","content":"Hi","usage":{},"step":1.5}"#,
        r#"{"event":"complete","run_id":"r1","content":"Hi","usage":{},"delta":{"text":"x"}}"#,
        r#"{"event":"complete","run_id":"r1","content":"Hi","usage":{},"tool_name":["a"]}"#,
        r#"{"event":"complete","run_id":"r1","content":"Hi","usage":{},"session_id":1,"session_id":2}"#,
    ] {
        valid(agent::Run::new(), &stream(&[START, complete]));
    }
    valid(
        agent::Run::new(),
        &stream(&[
            r#"{"event":"start","run_id":"r1","session_id":"s1","step":{},"delta":[]}"#,
            r#"{"event":"delegation_start","delta":{"agent":"a"},"step":1.5,"tool_name":7}"#,
            r#"{"event":"entity_chunk","delta":["x"],"session_id":false}"#,
            r#"{"event":"step_started","step":1,"tool_name":null,"delta":2}"#,
            r#"{"event":"tool_call","tool_name":"t","arguments":{},"step":[],"delta":3}"#,
            r#"{"event":"tool_result","tool_name":"t","result":1,"step":1.5}"#,
            r#"{"event":"content_delta","delta":"Hi","tool_name":{},"step":"x","step":"y"}"#,
            r#"{"event":"step_completed","step":1,"delta":{}}"#,
            COMPLETE,
        ]),
    );
    // Escaped keys and nesting past the scanner's depth are read the same way (by serde).
    let deep = format!("{}1{}", "[".repeat(300), "]".repeat(300));
    let p = valid(
        agent::Run::new(),
        &stream(&[
            r#"{"event":"start","run_id":"r1","session_\u0069d":"s\u0031"}"#,
            &format!(r#"{{"event":"tool_call","tool_name":"t","arguments":{deep},"step":{deep}}}"#),
            &format!(r#"{{"event":"tool_result","tool_n\u0061me":"t","result":{deep}}}"#),
            &format!(r#"{{"event":"content_delta","delta":"Hi","step":{deep}}}"#),
            &format!(
                r#"{{"event":"complete","run_id":"r1","content":{deep},"usage":{{}},"delta":{deep}}}"#
            ),
        ]),
    );
    assert_eq!((p.content(), p.session_id()), ("Hi", Some("s1")));
    let bad = format!(r#"{{"event":"content_delta","delta":"x","usage":{deep},"d\u0065lta":"y"}}"#);
    assert_eq!(
        broken(agent::Run::new(), &stream(&[START, &bad, COMPLETE])),
        (agent::FIELDS, Some(1))
    );
}

#[test]
fn agent_step_paired() {
    let s1 = r#"{"event":"step_started","step":1}"#;
    let c1 = r#"{"event":"step_completed","step":1}"#;
    let c2 = r#"{"event":"step_completed","step":2}"#;
    valid(
        agent::Run::new(),
        &stream(&[START, s1, c1, s1, c1, COMPLETE]),
    );
    assert_eq!(
        broken(agent::Run::new(), &stream(&[START, s1, c2, COMPLETE])),
        (agent::STEP_PAIRED, Some(2))
    );
    assert_eq!(
        broken(agent::Run::new(), &stream(&[START, c1, COMPLETE])),
        (agent::STEP_PAIRED, Some(1))
    );
    assert_eq!(
        broken(agent::Run::new(), &stream(&[START, s1, s1, COMPLETE])),
        (agent::STEP_PAIRED, Some(2))
    );
    assert_eq!(
        broken(agent::Run::new(), &stream(&[START, s1, COMPLETE])),
        (agent::STEP_PAIRED, Some(2))
    );
}

#[test]
fn agent_tool_result_follows_call() {
    let call = r#"{"event":"tool_call","tool_name":"a","arguments":{}}"#;
    let result_a = r#"{"event":"tool_result","tool_name":"a","result":1}"#;
    let result_b = r#"{"event":"tool_result","tool_name":"b","result":1}"#;
    valid(
        agent::Run::new(),
        &stream(&[START, call, call, result_a, result_a, COMPLETE]),
    );
    assert_eq!(
        broken(agent::Run::new(), &stream(&[START, result_a, COMPLETE])),
        (agent::TOOL_RESULT_FOLLOWS_CALL, Some(1))
    );
    assert_eq!(
        broken(
            agent::Run::new(),
            &stream(&[START, call, result_b, COMPLETE])
        ),
        (agent::TOOL_RESULT_FOLLOWS_CALL, Some(2))
    );
    assert_eq!(
        broken(
            agent::Run::new(),
            &stream(&[START, call, result_a, result_a, COMPLETE])
        ),
        (agent::TOOL_RESULT_FOLLOWS_CALL, Some(3))
    );
}

#[test]
fn agent_tool_call_answered() {
    valid(
        agent::Run::new(),
        &stream(&[
            START,
            r#"{"event":"tool_call","tool_name":"a","arguments":{}}"#,
            r#"{"event":"tool_result","tool_name":"a","result":1}"#,
            COMPLETE,
        ]),
    );
    let call = r#"{"event":"tool_call","tool_name":"a","arguments":{}}"#;
    assert_eq!(
        broken(agent::Run::new(), &stream(&[START, call, COMPLETE])),
        (agent::TOOL_CALL_ANSWERED, Some(2))
    );
}

#[test]
fn agent_too_many_calls() {
    let call =
        |tool: &str| format!(r#"{{"event":"tool_call","tool_name":"{tool}","arguments":{{}}}}"#);
    let result =
        |tool: &str| format!(r#"{{"event":"tool_result","tool_name":"{tool}","result":1}}"#);
    let approval = r#"{"event":"approval_requested","tool_name":"c","tool_input":{}}"#;
    let (a, b) = (call("a"), call("b"));
    let (result_a, result_b, result_c) = (result("a"), result("b"), result("c"));
    // Three calls wait at most: the cap counts calls, however many share a tool.
    let three = [
        START, &a, &a, approval, &result_a, &b, &result_c, &result_a, &result_b, COMPLETE,
    ];
    valid(agent::Run::new().max_pending_calls(3), &stream(&three));
    assert_eq!(
        broken(agent::Run::new().max_pending_calls(2), &stream(&three)),
        (agent::TOO_MANY_CALLS, Some(3))
    );
    assert_eq!(
        broken(
            agent::Run::new().max_pending_calls(0),
            &stream(&[START, &a])
        ),
        (agent::TOO_MANY_CALLS, Some(1))
    );
    // The default: 65 536 calls wait, one more does not.
    let mut p = agent::Run::new();
    p.event(&Event::message(START)).unwrap();
    let a = Event::message(a);
    for _ in 0..agent::DEFAULT_MAX_PENDING_CALLS {
        p.event(&a).unwrap();
    }
    assert_eq!(p.pending_calls(), 65_536);
    assert_eq!(p.event(&a), Err(agent::TOO_MANY_CALLS));
    // The names kept for the waiting calls count toward `max_accumulated`, once per tool.
    let long = "x".repeat(8);
    let d = r#"{"event":"content_delta","delta":"abcd"}"#;
    let calls = [
        START,
        d,
        &call(&long),
        &call(&long),
        &result(&long),
        &result(&long),
        d,
        COMPLETE,
    ];
    valid(agent::Run::new().max_accumulated(16), &stream(&calls));
    assert_eq!(
        broken(agent::Run::new().max_accumulated(11), &stream(&calls)),
        (agent::TOO_LARGE, Some(2))
    );
    // Answered calls leave room again: 4 + 8 while the calls wait, 8 after.
    let calls = [START, d, &call(&long), &result(&long), d, COMPLETE];
    valid(agent::Run::new().max_accumulated(12), &stream(&calls));
}

/// 100 000 calls of as many tools, then their 100 000 results in the same order: each
/// answer costs O(log n) (a count per tool in a map), where a list searched and shifted per
/// result made this quadratic (seconds in a debug build; about a second now). Not timed: a
/// quadratic profile makes the test suite visibly slow.
#[test]
fn agent_many_calls_are_answered_in_linear_time() {
    const N: usize = 100_000;
    let call = |i| format!(r#"{{"event":"tool_call","tool_name":"t{i}","arguments":{{}}}}"#);
    let result = |i| format!(r#"{{"event":"tool_result","tool_name":"t{i}","result":1}}"#);
    let mut p = agent::Run::new().max_pending_calls(N);
    p.event(&Event::message(START)).unwrap();
    for i in 0..N {
        p.event(&Event::message(call(i))).unwrap();
    }
    assert_eq!(p.pending_calls(), N);
    for i in 0..N {
        p.event(&Event::message(result(i))).unwrap();
    }
    assert_eq!(p.pending_calls(), 0);
    assert_eq!(p.event(&Event::message(COMPLETE)), Ok(()));
}

#[test]
fn agent_approval_requested_pauses_the_run() {
    let approval = r#"{"event":"approval_requested","tool_name":"rm","tool_input":{"path":"/"}}"#;
    let p = valid(agent::Run::new(), &stream(&[START, approval]));
    assert!(p.is_paused());
    // ... or the run goes on after the approval and answers it.
    let result = r#"{"event":"tool_result","tool_name":"rm","result":"ok"}"#;
    let p = valid(
        agent::Run::new(),
        &stream(&[START, approval, result, COMPLETE]),
    );
    assert!(!p.is_paused());
    // Pausing is only a valid end right after the request.
    let delta = r#"{"event":"content_delta","delta":"x"}"#;
    assert_eq!(
        broken(agent::Run::new(), &stream(&[START, approval, delta])),
        (UNTERMINATED, None)
    );
}

#[test]
fn agent_after_terminal() {
    valid(
        agent::Run::new(),
        &stream(&[START, r#"{"event":"content_delta","delta":"x"}"#, COMPLETE]),
    );
    assert_eq!(
        broken(
            agent::Run::new(),
            &stream(&[START, COMPLETE, r#"{"event":"content_delta","delta":"x"}"#])
        ),
        (agent::AFTER_TERMINAL, Some(2))
    );
    assert_eq!(
        broken(
            agent::Run::new(),
            &stream(&[START, r#"{"event":"error","message":"x"}"#, COMPLETE])
        ),
        (agent::AFTER_TERMINAL, Some(2))
    );
}

#[test]
fn agent_too_large() {
    let d = r#"{"event":"content_delta","delta":"abcd"}"#;
    let r = r#"{"event":"reasoning_delta","delta":"abcd"}"#;
    valid(
        agent::Run::new().max_accumulated(8),
        &stream(&[START, d, r, COMPLETE]),
    );
    assert_eq!(
        broken(
            agent::Run::new().max_accumulated(7),
            &stream(&[START, d, r, COMPLETE])
        ),
        (agent::TOO_LARGE, Some(2))
    );
}

#[test]
fn agent_unterminated() {
    valid(
        agent::Run::new(),
        &stream(&[START, r#"{"event":"content_delta","delta":"x"}"#, COMPLETE]),
    );
    assert_eq!(
        broken(
            agent::Run::new(),
            &stream(&[START, r#"{"event":"content_delta","delta":"x"}"#])
        ),
        (UNTERMINATED, None)
    );
}

// ---------------------------------------------------------------------------------------
// agent::Workflow

const WF_START: &str = r#"{"event":"workflow_start","execution_id":"e1"}"#;
const WF_COMPLETE: &str = r#"{"event":"workflow_complete","execution_id":"e1","result":{}}"#;

fn block(event: &str, id: &str) -> String {
    format!(
        r#"{{"event":"{event}","block_id":"{id}","delta":"x","output":"o","error":"e","block_type":"agent"}}"#
    )
}

#[test]
fn workflow_valid_interleaved_blocks() {
    let p = valid(
        agent::Workflow::new(),
        &stream(&[
            WF_START,
            &block("block_started", "a"),
            &block("block_started", "b"),
            &block("block_chunk", "a"),
            &block("content_delta", "b"),
            &block("reasoning_delta", "a"),
            &block("block_output", "a"),
            &block("block_error", "b"),
            &block("block_completed", "a"),
            &block("block_started", "handler"),
            &block("block_output", "handler"),
            &block("block_completed", "handler"),
            WF_COMPLETE,
        ]),
    );
    assert!(!p.is_error());
    let p = valid(
        agent::Workflow::new(),
        &stream(&[
            WF_START,
            &block("block_started", "a"),
            r#"{"event":"workflow_error","execution_id":"e1","error":"x"}"#,
        ]),
    );
    assert!(p.is_error());
    // Integer block ids work and match across events.
    valid(
        agent::Workflow::new(),
        &stream(&[
            WF_START,
            r#"{"event":"block_started","block_id":7,"block_type":"function"}"#,
            r#"{"event":"block_output","block_id":7,"output":1}"#,
            r#"{"event":"block_completed","block_id":7}"#,
            WF_COMPLETE,
        ]),
    );
}

#[test]
fn workflow_json() {
    valid(agent::Workflow::new(), &stream(&[WF_START, WF_COMPLETE]));
    assert_eq!(
        broken(agent::Workflow::new(), &stream(&[WF_START, "[]"])),
        (workflow::JSON, Some(1))
    );
}

#[test]
fn workflow_name() {
    valid(
        agent::Workflow::new(),
        &format!(
            "event: workflow_start\ndata: {{\"execution_id\":\"e1\"}}\n\n{}",
            stream(&[WF_COMPLETE])
        ),
    );
    assert_eq!(
        broken(agent::Workflow::new(), &stream(&[WF_START, "{}"])),
        (workflow::NAME, Some(1))
    );
    for bad in [
        r#"{"event":{"name":"block_started"},"block_id":"a","block_type":"agent"}"#,
        r#"{"event":"block_started","event":"block_started","block_id":"a","block_type":"agent"}"#,
    ] {
        assert_eq!(
            broken(agent::Workflow::new(), &stream(&[WF_START, bad])),
            (workflow::NAME, Some(1)),
            "{bad}"
        );
    }
}

#[test]
fn workflow_start_first() {
    valid(
        agent::Workflow::new(),
        &stream(&[
            WF_START,
            &block("block_started", "a"),
            &block("block_error", "a"),
            WF_COMPLETE,
        ]),
    );
    assert_eq!(
        broken(
            agent::Workflow::new(),
            &stream(&[&block("block_started", "a")])
        ),
        (workflow::START_FIRST, Some(0))
    );
}

#[test]
fn workflow_start_once() {
    valid(agent::Workflow::new(), &stream(&[WF_START, WF_COMPLETE]));
    assert_eq!(
        broken(
            agent::Workflow::new(),
            &stream(&[WF_START, WF_START, WF_COMPLETE])
        ),
        (workflow::START_ONCE, Some(1))
    );
}

#[test]
fn workflow_fields() {
    valid(
        agent::Workflow::new(),
        &stream(&[
            WF_START,
            r#"{"event":"block_started","block_id":"a","block_type":null}"#,
            r#"{"event":"block_chunk","block_id":"a","delta":""}"#,
            r#"{"event":"content_delta","block_id":"a","delta":"x"}"#,
            r#"{"event":"reasoning_delta","block_id":"a","delta":"y"}"#,
            r#"{"event":"block_output","block_id":"a","output":null}"#,
            r#"{"event":"block_completed","block_id":"a"}"#,
            r#"{"event":"block_started","block_id":2,"block_type":"agent"}"#,
            r#"{"event":"block_error","block_id":2,"error":{"message":"x"}}"#,
            WF_COMPLETE,
        ]),
    );
    valid(
        agent::Workflow::new(),
        &stream(&[
            WF_START,
            r#"{"event":"workflow_error","execution_id":"e1","error":"x"}"#,
        ]),
    );
    let start = r#"{"event":"block_started","block_id":"a","block_type":"agent"}"#;
    // The platform's key fields, each left out or of the wrong type.
    for bad in [
        r#"{"event":"block_started","block_type":"agent"}"#,
        r#"{"event":"block_started","block_id":"b"}"#,
        r#"{"event":"block_started","block_id":1.5,"block_type":"agent"}"#,
        r#"{"event":"block_started","block_id":{"id":"b"},"block_type":"agent"}"#,
        r#"{"event":"block_chunk","block_id":"a"}"#,
        r#"{"event":"content_delta","block_id":"a"}"#,
        r#"{"event":"content_delta","block_id":"a","delta":null}"#,
        r#"{"event":"content_delta","block_id":"a","delta":{"not":"a string"}}"#,
        r#"{"event":"reasoning_delta","block_id":"a","delta":1}"#,
        r#"{"event":"content_delta","delta":"x"}"#,
        r#"{"event":"block_output","block_id":"a"}"#,
        r#"{"event":"block_error","block_id":"a"}"#,
        r#"{"event":"block_completed"}"#,
        r#"{"event":"workflow_complete","result":{}}"#,
        r#"{"event":"workflow_complete","execution_id":"e1"}"#,
        r#"{"event":"workflow_error","error":"x"}"#,
        r#"{"event":"workflow_error","execution_id":"e1"}"#,
        // Given twice: serde's derived structs refuse that, and so does the profile.
        r#"{"event":"block_output","block_id":"a","output":1,"output":2}"#,
    ] {
        assert_eq!(
            broken(agent::Workflow::new(), &stream(&[WF_START, start, bad])),
            (workflow::FIELDS, Some(2)),
            "{bad}"
        );
    }
    for bad in [
        r#"{"event":"workflow_start"}"#,
        r#"{"event":"workflow_start","execution_id":"e1","execution_id":"e2"}"#,
    ] {
        assert_eq!(
            broken(agent::Workflow::new(), &stream(&[bad])),
            (workflow::FIELDS, Some(0)),
            "{bad}"
        );
    }
}

#[test]
fn workflow_fields_only_where_the_profile_reads_them() {
    // Fields of the wrong type that the profile does not read for that event: not looked
    // at (profile/mod.rs: "fields of events the profile does not read are not looked at").
    valid(
        agent::Workflow::new(),
        &stream(&[
            r#"{"event":"workflow_start","execution_id":"e1","block_id":{"id":"x"},"delta":[]}"#,
            r#"{"event":"block_started","block_id":"a","block_type":"agent","delta":{},"block_id ":1.5}"#,
            r#"{"event":"block_output","block_id":"a","output":"o","delta":{"text":"x"},"execution_id":1,"execution_id":2}"#,
            r#"{"event":"block_completed","block_id":"a","delta":7,"output":1,"output":2}"#,
            r#"{"event":"node_progress","block_id":{"id":"x"},"delta":[1],"block_id":1.5}"#,
            r#"{"event":"workflow_complete","execution_id":"e1","result":{},"block_id":{"id":"x"},"delta":1}"#,
        ]),
    );
    // Escaped keys and nesting past the scanner's depth are read the same way (by serde).
    let deep = format!("{}1{}", "[".repeat(300), "]".repeat(300));
    valid(
        agent::Workflow::new(),
        &stream(&[
            r#"{"event":"workflow_st\u0061rt","\u0065xecution_id":"e1"}"#,
            &format!(r#"{{"event":"block_started","block_id":"a","block_type":{deep}}}"#),
            &format!(r#"{{"event":"block_output","block_id":"a","output":{deep},"delta":{deep}}}"#),
            r#"{"event":"block_completed","bl\u006fck_id":"a"}"#,
            &format!(
                r#"{{"event":"workflow_complete","execution_id":"e1","result":{deep},"block_id":{{}}}}"#
            ),
        ]),
    );
    let bad = format!(
        r#"{{"event":"block_output","block_id":"a","output":1,"delta":{deep},"\u006futput":2}}"#
    );
    assert_eq!(
        broken(
            agent::Workflow::new(),
            &stream(&[
                WF_START,
                r#"{"event":"block_started","block_id":"a","block_type":"agent"}"#,
                &bad
            ])
        ),
        (workflow::FIELDS, Some(2))
    );
}

#[test]
fn workflow_block_started_once() {
    valid(
        agent::Workflow::new(),
        &stream(&[
            WF_START,
            &block("block_started", "a"),
            &block("block_started", "b"),
            &block("block_error", "a"),
            &block("block_error", "b"),
            WF_COMPLETE,
        ]),
    );
    let started = block("block_started", "a");
    assert_eq!(
        broken(
            agent::Workflow::new(),
            &stream(&[WF_START, &started, &started])
        ),
        (workflow::BLOCK_STARTED_ONCE, Some(2))
    );
    // Also once finished: a block id names one execution.
    assert_eq!(
        broken(
            agent::Workflow::new(),
            &stream(&[WF_START, &started, &block("block_error", "a"), &started])
        ),
        (workflow::BLOCK_STARTED_ONCE, Some(3))
    );
}

#[test]
fn workflow_block_running() {
    valid(
        agent::Workflow::new(),
        &stream(&[
            WF_START,
            &block("block_started", "a"),
            &block("block_chunk", "a"),
            &block("content_delta", "a"),
            &block("block_output", "a"),
            &block("block_completed", "a"),
            WF_COMPLETE,
        ]),
    );
    for event in [
        "block_chunk",
        "content_delta",
        "block_output",
        "block_completed",
        "block_error",
    ] {
        assert_eq!(
            broken(
                agent::Workflow::new(),
                &stream(&[WF_START, &block(event, "a")])
            ),
            (workflow::BLOCK_RUNNING, Some(1)),
            "{event}"
        );
    }
    let finished = [
        WF_START,
        &block("block_started", "a"),
        &block("block_output", "a"),
        &block("block_completed", "a"),
        &block("block_chunk", "a"),
    ]
    .map(String::from);
    let refs: Vec<&str> = finished.iter().map(String::as_str).collect();
    assert_eq!(
        broken(agent::Workflow::new(), &stream(&refs)),
        (workflow::BLOCK_RUNNING, Some(4))
    );
}

#[test]
fn workflow_output_last() {
    valid(
        agent::Workflow::new(),
        &stream(&[
            WF_START,
            &block("block_started", "a"),
            &block("block_chunk", "a"),
            &block("block_output", "a"),
            &block("block_completed", "a"),
            WF_COMPLETE,
        ]),
    );
    let sse = stream(&[
        WF_START,
        &block("block_started", "a"),
        &block("block_output", "a"),
        &block("block_chunk", "a"),
    ]);
    assert_eq!(
        broken(agent::Workflow::new(), &sse),
        (workflow::OUTPUT_LAST, Some(3))
    );
    let twice = stream(&[
        WF_START,
        &block("block_started", "a"),
        &block("block_output", "a"),
        &block("block_output", "a"),
    ]);
    assert_eq!(
        broken(agent::Workflow::new(), &twice),
        (workflow::OUTPUT_LAST, Some(3))
    );
}

#[test]
fn workflow_output_before_completed() {
    valid(
        agent::Workflow::new(),
        &stream(&[
            WF_START,
            &block("block_started", "a"),
            &block("block_output", "a"),
            &block("block_completed", "a"),
            WF_COMPLETE,
        ]),
    );
    let sse = stream(&[
        WF_START,
        &block("block_started", "a"),
        &block("block_completed", "a"),
    ]);
    assert_eq!(
        broken(agent::Workflow::new(), &sse),
        (workflow::OUTPUT_BEFORE_COMPLETED, Some(2))
    );
}

#[test]
fn workflow_blocks_finished() {
    valid(
        agent::Workflow::new(),
        &stream(&[
            WF_START,
            &block("block_started", "a"),
            &block("block_error", "a"),
            WF_COMPLETE,
        ]),
    );
    let sse = stream(&[WF_START, &block("block_started", "a"), WF_COMPLETE]);
    assert_eq!(
        broken(agent::Workflow::new(), &sse),
        (workflow::BLOCKS_FINISHED, Some(2))
    );
}

#[test]
fn workflow_after_terminal() {
    valid(agent::Workflow::new(), &stream(&[WF_START, WF_COMPLETE]));
    let sse = stream(&[WF_START, WF_COMPLETE, &block("block_started", "a")]);
    assert_eq!(
        broken(agent::Workflow::new(), &sse),
        (workflow::AFTER_TERMINAL, Some(2))
    );
}

#[test]
fn workflow_too_many_blocks() {
    let ev: Vec<String> = (0..3)
        .flat_map(|i| {
            let id = i.to_string();
            [block("block_started", &id), block("block_error", &id)]
        })
        .collect();
    let mut events = vec![WF_START.to_string()];
    events.extend(ev);
    events.push(WF_COMPLETE.to_string());
    let refs: Vec<&str> = events.iter().map(String::as_str).collect();
    valid(agent::Workflow::new().max_blocks(3), &stream(&refs));
    assert_eq!(
        broken(agent::Workflow::new().max_blocks(2), &stream(&refs)),
        (workflow::TOO_MANY_BLOCKS, Some(5))
    );
}

#[test]
fn workflow_unterminated() {
    valid(
        agent::Workflow::new(),
        &stream(&[
            WF_START,
            &block("block_started", "a"),
            &block("block_error", "a"),
            r#"{"event":"workflow_error","execution_id":"e1","error":"e"}"#,
        ]),
    );
    assert_eq!(
        broken(
            agent::Workflow::new(),
            &stream(&[WF_START, &block("block_started", "a")])
        ),
        (UNTERMINATED, None)
    );
}

// ---------------------------------------------------------------------------------------
// Reporting

/// A violation names the event by its JSON name even when the event nests deeper than
/// serde_json's recursion limit (128) or the scanner's depth, where it was named `message`.
#[test]
fn a_violation_names_a_deeply_nested_event_by_its_json_name() {
    fn reported<P: Profile>(profile: P, events: &[&str]) -> (String, Rule) {
        let Err(SequenceError::Violation(v)) = check(profile, &stream(events)) else {
            panic!("no violation: {events:?}")
        };
        (v.event_type.as_str().to_string(), v.rule)
    }
    let deep = format!("{}1{}", "[".repeat(1000), "]".repeat(1000));
    let agent_event =
        format!(r#"{{"event":"complete","run_id":"r1","content":{deep},"usage":{{}}}}"#);
    assert_eq!(
        reported(agent::Run::new(), &[&agent_event]),
        ("complete".to_string(), agent::START_FIRST)
    );
    let workflow_event =
        format!(r#"{{"y":{deep},"event":"block_started","block_id":"a","block_type":"agent"}}"#);
    assert_eq!(
        reported(agent::Workflow::new(), &[&workflow_event]),
        ("block_started".to_string(), workflow::START_FIRST)
    );
    let responses_event = format!(r#"{{"type":"response.in_progress","x":{deep}}}"#);
    assert_eq!(
        reported(responses::Stream::new(), &[&responses_event]),
        ("response.in_progress".to_string(), responses::CREATED_FIRST)
    );
    // An escaped key or name is read too; what is not a string is not a name.
    assert_eq!(
        reported(agent::Run::new(), &[r#"{"ev\u0065nt":"compl\u0065te"}"#]),
        ("complete".to_string(), agent::FIELDS)
    );
    assert_eq!(
        reported(agent::Run::new(), &[r#"{"event":["start"]}"#]),
        ("message".to_string(), agent::NAME)
    );
}

// ---------------------------------------------------------------------------------------
// chat::Completions

const CHAT_CHUNK: &str = r#"{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hi"}}]}"#;

#[test]
fn chat_valid_stream() {
    valid(
        chat::Completions::new(),
        &stream(&[CHAT_CHUNK, CHAT_CHUNK, "[DONE]"]),
    );
    valid(chat::Completions::new(), &stream(&["[DONE]"]));
}

#[test]
fn chat_after_done() {
    valid(chat::Completions::new(), &stream(&[CHAT_CHUNK, "[DONE]"]));
    assert_eq!(
        broken(
            chat::Completions::new(),
            &stream(&[CHAT_CHUNK, "[DONE]", CHAT_CHUNK])
        ),
        (chat::AFTER_DONE, Some(2))
    );
    assert_eq!(
        broken(chat::Completions::new(), &stream(&["[DONE]", "[DONE]"])),
        (chat::AFTER_DONE, Some(1))
    );
}

#[test]
fn chat_chunk_json() {
    valid(
        chat::Completions::new(),
        &stream(&[CHAT_CHUNK, "{}", "[DONE]"]),
    );
    for bad in ["[1]", "\"x\"", "{\"a\":", "DONE", "[DONE] "] {
        assert_eq!(
            broken(
                chat::Completions::new(),
                &stream(&[CHAT_CHUNK, bad, "[DONE]"])
            ),
            (chat::CHUNK_JSON, Some(1)),
            "{bad}"
        );
    }
}

#[test]
fn chat_unterminated() {
    valid(chat::Completions::new(), &stream(&[CHAT_CHUNK, "[DONE]"]));
    assert_eq!(
        broken(chat::Completions::new(), &stream(&[CHAT_CHUNK])),
        (UNTERMINATED, None)
    );
}

// ---------------------------------------------------------------------------------------
// Validator

#[test]
fn validator_failure_is_sticky_and_carries_origin() {
    let mut v = Validator::new(chat::Completions::new()).origin(Origin::Local);
    v.event(&Event::message("[DONE]")).unwrap();
    let err = v.event(&Event::message("{}")).unwrap_err();
    let SequenceError::Violation(violation) = &err else {
        panic!()
    };
    assert_eq!((violation.index, violation.origin), (1, Origin::Local));
    assert_eq!(
        err.to_string(),
        "local event 2 (`message`) breaks chat.after-done: nothing follows `data: [DONE]`"
    );
    // Everything afterwards returns the same error, even valid input and finish.
    assert_eq!(v.comment("ping"), Err(err.clone()));
    assert_eq!(v.frame(&Frame::Retry(5)), Err(err.clone()));
    assert_eq!(v.finish(), Err(err.clone()));
    assert_eq!(v.error(), Some(&err));
    assert!(!v.is_terminated());
}

#[test]
fn comments_and_retry_are_not_counted_as_events() {
    let sse = format!(
        ": hi\n\nretry: 10\n\n{}: ping\n\n{}",
        named(&[("task_id", "t")]),
        named(&[("end", "")])
    );
    let mut decoder = Decoder::new();
    decoder.feed_slice(sse.as_bytes()).unwrap();
    let mut v = Validator::new(ors::ToolCall::new());
    while let Some(frame) = decoder.next_frame().unwrap() {
        v.frame(&frame).unwrap();
    }
    assert_eq!(v.events(), 2);
    assert!(v.finish().is_ok() && v.is_terminated());
}
