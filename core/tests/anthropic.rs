//! The Anthropic Messages profile on the streams of Anthropic's own documentation, each rule
//! with a stream that keeps it and one that breaks it, and property tests over generated
//! streams. Every stream goes through the real decoder, and through both `Validator::event`
//! (owned frames) and `Validator::event_ref` (borrowed frames), which must answer alike.
//!
//! The documented streams are those of "Streaming Messages",
//! <https://docs.anthropic.com/en/docs/build-with-claude/streaming> (now also served at
//! <https://platform.claude.com/docs/en/build-with-claude/streaming>): the basic text
//! stream, the tool use stream with `input_json_delta`, the extended thinking stream, the
//! web search stream (a server tool and its result block), and the error event example.

#![cfg(feature = "json")]

#[path = "support/both_ways.rs"]
mod both_ways;

use proptest::prelude::*;
use ssekit::profile::anthropic::{self, Messages};
use ssekit::sequence::{Failure, Profile, Rule, SequenceError, Validator, UNTERMINATED};
use ssekit::{Decoder, Event, FrameRef};

/// Validates `sse` with owned and with borrowed frames ([`both_ways`]); both must agree.
fn check_with(profile: impl Fn() -> Messages, sse: &str) -> (Result<(), SequenceError>, Messages) {
    let (result, owned, borrowed) = both_ways::validate_both_ways(profile, sse);
    let _ = &borrowed;
    (result, owned)
}

#[track_caller]
fn valid(sse: &str) -> Messages {
    match check_with(Messages::new, sse) {
        (Ok(()), p) => p,
        (Err(err), _) => panic!("{err}\n{sse}"),
    }
}

/// The rule `sse` breaks and the index of the event that broke it.
#[track_caller]
fn broken_with(profile: impl Fn() -> Messages, sse: &str) -> (Rule, Option<u64>) {
    match check_with(profile, sse) {
        (Ok(()), _) => panic!("stream was accepted:\n{sse}"),
        (Err(err), _) => (err.rule(), err.index()),
    }
}

#[track_caller]
fn broken(sse: &str) -> (Rule, Option<u64>) {
    broken_with(Messages::new, sse)
}

// ---------------------------------------------------------------------------------------
// The documentation's streams.

/// "Basic streaming request": the response.
const DOCS_TEXT: &str = r#"event: message_start
data: {"type": "message_start", "message": {"id": "msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY", "type": "message", "role": "assistant", "content": [], "model": "claude-opus-4-6", "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 25, "output_tokens": 1}}}

event: content_block_start
data: {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}

event: ping
data: {"type": "ping"}

event: content_block_delta
data: {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hello"}}

event: content_block_delta
data: {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "!"}}

event: content_block_stop
data: {"type": "content_block_stop", "index": 0}

event: message_delta
data: {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence":null}, "usage": {"output_tokens": 15}}

event: message_stop
data: {"type": "message_stop"}

"#;

/// "Streaming request with tool use": the response.
const DOCS_TOOL_USE: &str = r#"event: message_start
data: {"type":"message_start","message":{"id":"msg_014p7gG3wDgGV9EUtLvnow3U","type":"message","role":"assistant","model":"claude-opus-4-6","stop_sequence":null,"usage":{"input_tokens":472,"output_tokens":2},"content":[],"stop_reason":null}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: ping
data: {"type": "ping"}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Okay"}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":","}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" let"}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"'s"}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" check"}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" the"}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" weather"}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" for"}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" San"}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" Francisco"}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":","}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" CA"}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":":"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01T1x1fJ34qAmk2tNTrN7Up6","name":"get_weather","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"location\":"}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":" \"San"}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":" Francisc"}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"o,"}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":" CA\""}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":", "}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\"unit\": \"fah"}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"renheit\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":89}}

event: message_stop
data: {"type":"message_stop"}

"#;

/// "Streaming request with extended thinking": the response.
const DOCS_THINKING: &str = r#"event: message_start
data: {"type": "message_start", "message": {"id": "msg_01...", "type": "message", "role": "assistant", "content": [], "model": "claude-opus-4-6", "stop_reason": null, "stop_sequence": null}}

event: content_block_start
data: {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}}

event: content_block_delta
data: {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "I need to find the GCF of 1071 and 462 using the Euclidean algorithm.\n\n1071 = 2 × 462 + 147"}}

event: content_block_delta
data: {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "\n462 = 3 × 147 + 21\n147 = 7 × 21 + 0\n\nSo GCF(1071, 462) = 21"}}

event: content_block_delta
data: {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds..."}}

event: content_block_stop
data: {"type": "content_block_stop", "index": 0}

event: content_block_start
data: {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}}

event: content_block_delta
data: {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "The greatest common divisor of 1071 and 462 is **21**."}}

event: content_block_stop
data: {"type": "content_block_stop", "index": 1}

event: message_delta
data: {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null}}

event: message_stop
data: {"type": "message_stop"}

"#;

/// "Streaming request with web search tool use", shortened: a server tool block and its
/// result block, which comes whole in its `content_block_start`, without deltas.
const DOCS_WEB_SEARCH: &str = r#"event: message_start
data: {"type":"message_start","message":{"id":"msg_01G...","type":"message","role":"assistant","model":"claude-opus-4-6","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":2679,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":3}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"I'll check"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"id":"srvtoolu_014hJH82Qum7Td6UV8gDXThB","type":"server_tool_use","name":"web_search","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"query"}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\":"}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":" \"weather"}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":" NY"}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"C to"}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"day\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":1 }

event: content_block_start
data: {"type":"content_block_start","index":2,"content_block":{"type":"web_search_tool_result","tool_use_id":"srvtoolu_014hJH82Qum7Td6UV8gDXThB","content":[{"type":"web_search_result","title":"Weather in New York City in May 2025","url":"https://www.timeanddate.com/weather/usa/new-york/historic","encrypted_content":"Ev0DCioIAxgCIiQ3NmU4ZmI4OC1k...","page_age":null}]}}

event: content_block_stop
data: {"type":"content_block_stop","index":2}

event: content_block_start
data: {"type":"content_block_start","index":3,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":3,"delta":{"type":"text_delta","text":"Here's the current weather information for New York"}}

event: content_block_delta
data: {"type":"content_block_delta","index":3,"delta":{"type":"text_delta","text":" City:\n\n# Weather"}}

event: content_block_stop
data: {"type":"content_block_stop","index":3}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"input_tokens":10682,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":510,"server_tool_use":{"web_search_requests":1}}}

event: message_stop
data: {"type":"message_stop"}

"#;

/// "Error events": the example.
const DOCS_ERROR: &str = r#"event: error
data: {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}

"#;

#[test]
fn the_documented_text_stream_is_valid() {
    let p = valid(DOCS_TEXT);
    assert_eq!(p.text(0), Some("Hello!"));
    assert_eq!(
        p.message_id(),
        Some("msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY")
    );
    assert_eq!(p.stop_reason(), Some("end_turn"));
    assert_eq!(p.blocks(), 1);
    assert_eq!(p.failure(), None);
}

#[test]
fn the_documented_tool_use_stream_is_valid_and_its_input_reassembles() {
    let p = valid(DOCS_TOOL_USE);
    assert_eq!(
        p.text(0),
        Some("Okay, let's check the weather for San Francisco, CA:")
    );
    let input = p.tool_input(1).unwrap();
    assert_eq!(
        input,
        r#"{"location": "San Francisco, CA", "unit": "fahrenheit"}"#
    );
    let input: serde_json::Value = serde_json::from_str(input).unwrap();
    assert_eq!(input["unit"], "fahrenheit");
    assert_eq!(p.stop_reason(), Some("tool_use"));
    assert_eq!((p.text(1), p.tool_input(0)), (None, None));
}

#[test]
fn the_documented_thinking_stream_is_valid() {
    let p = valid(DOCS_THINKING);
    let thinking = p.thinking(0).unwrap();
    assert!(thinking.starts_with("I need to find the GCF"));
    assert!(thinking.ends_with("So GCF(1071, 462) = 21"));
    assert_eq!(
        p.text(1),
        Some("The greatest common divisor of 1071 and 462 is **21**.")
    );
}

#[test]
fn the_documented_web_search_stream_is_valid() {
    let p = valid(DOCS_WEB_SEARCH);
    assert_eq!(p.tool_input(1), Some(r#"{"query": "weather NYC today"}"#));
    assert_eq!(p.blocks(), 4);
    assert_eq!(p.tool_input(2), None);
}

#[test]
fn the_documented_error_ends_the_stream_with_a_typed_failure() {
    let p = valid(DOCS_ERROR);
    assert!(p.is_terminated());
    let failure = p.failure().unwrap();
    assert_eq!(
        failure,
        Failure::new("error", Some("overloaded_error".into()), "Overloaded")
    );
}

/// The documented text stream cut after `cut` events, then `error`.
fn error_after(stream: &str, cut: usize) -> String {
    let mut events: Vec<&str> = stream.split_terminator("\n\n").collect();
    events.truncate(cut);
    events.push(DOCS_ERROR.trim_end());
    events.iter().map(|e| format!("{e}\n\n")).collect()
}

#[test]
fn a_mid_stream_error_after_deltas_ends_the_stream_with_its_failure() {
    // After `message_start`, the block's start, a ping and both deltas: the block is open.
    let sse = error_after(DOCS_TEXT, 5);
    let p = valid(&sse);
    let failure = p.failure().unwrap();
    assert_eq!(failure.code.as_deref(), Some("overloaded_error"));
    assert_eq!(failure.message, "Overloaded");
    assert_eq!(failure.event.as_str(), "error");
    assert_eq!(p.text(0), Some("Hello!"));
    // And at every other point of every documented stream.
    for stream in [DOCS_TEXT, DOCS_TOOL_USE, DOCS_THINKING, DOCS_WEB_SEARCH] {
        let events = stream.split_terminator("\n\n").count();
        for cut in 0..events {
            let p = valid(&error_after(stream, cut));
            assert_eq!(
                p.failure().unwrap().code.as_deref(),
                Some("overloaded_error")
            );
        }
    }
    // Nothing follows it.
    let late = format!("{sse}event: ping\ndata: {{\"type\":\"ping\"}}\n\n");
    assert_eq!(broken(&late), (anthropic::AFTER_TERMINAL, Some(6)));
}

#[test]
fn a_successful_stream_reports_no_failure() {
    for stream in [DOCS_TEXT, DOCS_TOOL_USE, DOCS_THINKING, DOCS_WEB_SEARCH] {
        assert_eq!(valid(stream).failure(), None);
    }
}

// ---------------------------------------------------------------------------------------
// Each rule, broken.

/// `stream` with its `n`th event (from 0) replaced by `event`.
fn replace(stream: &str, n: usize, event: &str) -> String {
    let mut events: Vec<String> = stream
        .split_terminator("\n\n")
        .map(str::to_string)
        .collect();
    events[n] = event.to_string();
    events.iter().map(|e| format!("{e}\n\n")).collect()
}

/// `stream` without its `n`th event.
fn remove(stream: &str, n: usize) -> String {
    let mut events: Vec<&str> = stream.split_terminator("\n\n").collect();
    events.remove(n);
    events.iter().map(|e| format!("{e}\n\n")).collect()
}

/// `stream` with `event` inserted before its `n`th event.
fn insert(stream: &str, n: usize, event: &str) -> String {
    let mut events: Vec<&str> = stream.split_terminator("\n\n").collect();
    events.insert(n, event);
    events.iter().map(|e| format!("{e}\n\n")).collect()
}

fn named(name: &str, data: &str) -> String {
    format!("event: {name}\ndata: {data}")
}

#[test]
fn missing_message_start() {
    assert_eq!(
        broken(&remove(DOCS_TEXT, 0)),
        (anthropic::START_FIRST, Some(0))
    );
    // A ping may come first; the first other event is still `message_start`.
    let ping = named("ping", r#"{"type":"ping"}"#);
    valid(&insert(DOCS_TEXT, 0, &ping));
    assert_eq!(
        broken(&insert(&remove(DOCS_TEXT, 0), 0, &ping)),
        (anthropic::START_FIRST, Some(1))
    );
}

#[test]
fn message_start_once() {
    let start = DOCS_TEXT.split_terminator("\n\n").next().unwrap();
    assert_eq!(
        broken(&insert(DOCS_TEXT, 1, start)),
        (anthropic::START_ONCE, Some(1))
    );
}

#[test]
fn a_delta_for_a_closed_index() {
    let late = named(
        "content_block_delta",
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"?"}}"#,
    );
    // After block 0 stopped.
    assert_eq!(
        broken(&insert(DOCS_TEXT, 6, &late)),
        (anthropic::BLOCK_OPEN, Some(6))
    );
    // In block 1 of the tool use stream, naming block 0.
    assert_eq!(
        broken(&insert(DOCS_TOOL_USE, 19, &late)),
        (anthropic::BLOCK_OPEN, Some(19))
    );
    // Before any block started, and a stop of a block never started.
    assert_eq!(
        broken(&insert(DOCS_TEXT, 1, &late)),
        (anthropic::BLOCK_OPEN, Some(1))
    );
    let stop = named(
        "content_block_stop",
        r#"{"type":"content_block_stop","index":1}"#,
    );
    assert_eq!(
        broken(&insert(DOCS_TEXT, 5, &stop)),
        (anthropic::BLOCK_OPEN, Some(5))
    );
}

#[test]
fn blocks_start_in_index_order_one_at_a_time() {
    let start = |index: u64| {
        named(
            "content_block_start",
            &format!(
                r#"{{"type":"content_block_start","index":{index},"content_block":{{"type":"text","text":""}}}}"#
            ),
        )
    };
    // Index 1 first.
    assert_eq!(
        broken(&replace(DOCS_TEXT, 1, &start(1))),
        (anthropic::BLOCK_ORDER, Some(1))
    );
    // Block 1 while block 0 is open.
    assert_eq!(
        broken(&insert(DOCS_TEXT, 3, &start(1))),
        (anthropic::BLOCK_ORDER, Some(3))
    );
    // Block 0 again.
    assert_eq!(
        broken(&insert(DOCS_TEXT, 6, &start(0))),
        (anthropic::BLOCK_ORDER, Some(6))
    );
    // A block after `message_delta`.
    assert_eq!(
        broken(&insert(DOCS_TEXT, 7, &start(1))),
        (anthropic::BLOCK_ORDER, Some(7))
    );
}

#[test]
fn a_block_not_stopped() {
    // `content_block_stop` left out: `message_delta` finds block 0 open.
    assert_eq!(
        broken(&remove(DOCS_TEXT, 5)),
        (anthropic::BLOCK_STOPPED, Some(5))
    );
    // And `message_stop`, without a `message_delta`.
    assert_eq!(
        broken(&remove(&remove(DOCS_TEXT, 6), 5)),
        (anthropic::BLOCK_STOPPED, Some(5))
    );
}

#[test]
fn message_stop_follows_a_message_delta() {
    assert_eq!(
        broken(&remove(DOCS_TEXT, 6)),
        (anthropic::MESSAGE_DELTA, Some(6))
    );
    // The documentation allows more than one.
    let delta = DOCS_TEXT.split_terminator("\n\n").nth(6).unwrap();
    let p = valid(&insert(DOCS_TEXT, 6, delta));
    assert_eq!(p.stop_reason(), Some("end_turn"));
}

#[test]
fn deltas_fit_their_block() {
    let delta = |index: u64, delta: &str| {
        named(
            "content_block_delta",
            &format!(r#"{{"type":"content_block_delta","index":{index},"delta":{delta}}}"#),
        )
    };
    let json = delta(0, r#"{"type":"input_json_delta","partial_json":"{}"}"#);
    assert_eq!(
        broken(&insert(DOCS_TEXT, 3, &json)),
        (anthropic::DELTA_TYPE, Some(3))
    );
    let thinking = delta(0, r#"{"type":"thinking_delta","thinking":"hm"}"#);
    assert_eq!(
        broken(&insert(DOCS_TEXT, 3, &thinking)),
        (anthropic::DELTA_TYPE, Some(3))
    );
    let text = delta(1, r#"{"type":"text_delta","text":"x"}"#);
    assert_eq!(
        broken(&insert(DOCS_TOOL_USE, 18, &text)),
        (anthropic::DELTA_TYPE, Some(18))
    );
    let text = delta(0, r#"{"type":"text_delta","text":"x"}"#);
    assert_eq!(
        broken(&insert(DOCS_THINKING, 2, &text)),
        (anthropic::DELTA_TYPE, Some(2))
    );
    let signature = delta(0, r#"{"type":"signature_delta","signature":"s"}"#);
    assert_eq!(
        broken(&insert(DOCS_TEXT, 3, &signature)),
        (anthropic::DELTA_TYPE, Some(3))
    );
    // A citation goes in a text block; delta types the profile does not know go anywhere.
    let citation = delta(
        0,
        r#"{"type":"citations_delta","citation":{"type":"char_location","cited_text":"x"}}"#,
    );
    valid(&insert(DOCS_TEXT, 3, &citation));
    assert_eq!(
        broken(&insert(
            DOCS_TOOL_USE,
            18,
            &citation.replace("\"index\":0", "\"index\":1")
        )),
        (anthropic::DELTA_TYPE, Some(18))
    );
    let future = delta(0, r#"{"type":"future_delta","x":1}"#);
    valid(&insert(DOCS_THINKING, 2, &future));
    // A block type the profile does not know takes any delta.
    let other = named(
        "content_block_start",
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"future_block"}}"#,
    );
    valid(&replace(DOCS_TEXT, 1, &other));
    // `redacted_thinking` takes none.
    let redacted = named(
        "content_block_start",
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix"}}"#,
    );
    valid(&remove(&remove(&replace(DOCS_TEXT, 1, &redacted), 4), 3));
    assert_eq!(
        broken(&replace(DOCS_TEXT, 1, &redacted)),
        (anthropic::DELTA_TYPE, Some(3))
    );
}

#[test]
fn tool_input_reassembles_into_a_json_object() {
    let piece = |json: &str| {
        named(
            "content_block_delta",
            &format!(
                r#"{{"type":"content_block_delta","index":1,"delta":{{"type":"input_json_delta","partial_json":{}}}}}"#,
                serde_json::to_string(json).unwrap()
            ),
        )
    };
    // The last piece lost: `{"location": "San Francisco, CA", "unit": "fah`.
    assert_eq!(
        broken(&remove(DOCS_TOOL_USE, 26)),
        (anthropic::TOOL_INPUT_JSON, Some(26))
    );
    // One piece too many.
    assert_eq!(
        broken(&insert(DOCS_TOOL_USE, 27, &piece("}"))),
        (anthropic::TOOL_INPUT_JSON, Some(28))
    );
    // Valid JSON, but not an object.
    let only = |json: &str| {
        let mut s = DOCS_TOOL_USE.to_string();
        for n in (18..=26).rev() {
            s = remove(&s, n);
        }
        insert(&s, 18, &piece(json))
    };
    valid(&only(r#"{"location":"Paris"}"#));
    assert_eq!(broken(&only("[1]")), (anthropic::TOOL_INPUT_JSON, Some(19)));
    assert_eq!(
        broken(&only("\"x\"")),
        (anthropic::TOOL_INPUT_JSON, Some(19))
    );
    // No pieces, or only empty ones: `{}`.
    let p = valid(&only(""));
    assert_eq!(p.tool_input(1), Some(""));
    let mut none = DOCS_TOOL_USE.to_string();
    for n in (18..=26).rev() {
        none = remove(&none, n);
    }
    valid(&none);
    // Unchecked, when the caller asks (fine-grained tool streaming).
    let cut = remove(DOCS_TOOL_USE, 26);
    let (result, p) = check_with(|| Messages::new().check_tool_input(false), &cut);
    assert_eq!(result, Ok(()));
    assert_eq!(
        p.tool_input(1),
        Some(r#"{"location": "San Francisco, CA", "unit": "fah"#)
    );
}

#[test]
fn an_event_after_message_stop() {
    let ping = named("ping", r#"{"type":"ping"}"#);
    let sse = format!("{DOCS_TEXT}{ping}\n\n");
    assert_eq!(broken(&sse), (anthropic::AFTER_TERMINAL, Some(8)));
    let sse = format!("{DOCS_TEXT}{}", DOCS_ERROR);
    assert_eq!(broken(&sse), (anthropic::AFTER_TERMINAL, Some(8)));
    // Comments are no events.
    valid(&format!("{DOCS_TEXT}: keep-alive\n\n"));
}

#[test]
fn the_data_type_matches_the_event_name() {
    let mismatch = named(
        "content_block_delta",
        r#"{"type":"content_block_stop","index":0}"#,
    );
    assert_eq!(
        broken(&replace(DOCS_TEXT, 3, &mismatch)),
        (anthropic::TYPE_MISMATCH, Some(3))
    );
    let ping = named("ping", r#"{"type":"pong"}"#);
    assert_eq!(
        broken(&replace(DOCS_TEXT, 2, &ping)),
        (anthropic::TYPE_MISMATCH, Some(2))
    );
    // Without `event:` lines, the JSON `type` names the events.
    let data_only: String = DOCS_TEXT
        .split_terminator("\n\n")
        .map(|e| format!("{}\n\n", e.lines().nth(1).unwrap()))
        .collect();
    valid(&data_only);
}

#[test]
fn the_data_is_a_json_object_with_a_type() {
    let cases = [
        (named("ping", "ping"), anthropic::JSON),
        (named("ping", "[\"ping\"]"), anthropic::JSON),
        (named("ping", r#"{"type":"ping""#), anthropic::JSON),
        (named("ping", "{}"), anthropic::TYPE),
        (named("ping", r#"{"type":null}"#), anthropic::TYPE),
        (
            named("ping", r#"{"type":"ping","type":"ping"}"#),
            anthropic::TYPE,
        ),
        (named("ping", r#"{"type":1}"#), anthropic::TYPE),
    ];
    for (event, rule) in cases {
        assert_eq!(
            broken(&replace(DOCS_TEXT, 2, &event)),
            (rule, Some(2)),
            "{event}"
        );
    }
    // An escaped key is read as what it stands for.
    valid(&replace(
        DOCS_TEXT,
        2,
        &named("ping", r#"{"typ\u0065":"ping"}"#),
    ));
}

#[test]
fn fields_are_read_where_the_profile_needs_them() {
    let cases: [(usize, &str, &str); 12] = [
        (0, "message_start", r#"{"type":"message_start"}"#),
        (
            0,
            "message_start",
            r#"{"type":"message_start","message":[]}"#,
        ),
        (
            0,
            "message_start",
            r#"{"type":"message_start","message":{"id":5}}"#,
        ),
        (
            1,
            "content_block_start",
            r#"{"type":"content_block_start","index":0}"#,
        ),
        (
            1,
            "content_block_start",
            r#"{"type":"content_block_start","index":-1,"content_block":{"type":"text"}}"#,
        ),
        (
            1,
            "content_block_start",
            r#"{"type":"content_block_start","index":0,"content_block":{"text":""}}"#,
        ),
        (
            3,
            "content_block_delta",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta"}}"#,
        ),
        (
            3,
            "content_block_delta",
            r#"{"type":"content_block_delta","index":0,"delta":{"text":"x"}}"#,
        ),
        (
            3,
            "content_block_delta",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":7}}"#,
        ),
        (5, "content_block_stop", r#"{"type":"content_block_stop"}"#),
        (6, "message_delta", r#"{"type":"message_delta","usage":{}}"#),
        (
            6,
            "message_delta",
            r#"{"type":"message_delta","delta":{"stop_reason":1}}"#,
        ),
    ];
    for (n, name, data) in cases {
        let sse = replace(DOCS_TEXT, n, &named(name, data));
        assert_eq!(broken(&sse), (anthropic::FIELDS, Some(n as u64)), "{data}");
    }
    for data in [
        r#"{"type":"error"}"#,
        r#"{"type":"error","error":"Overloaded"}"#,
        r#"{"type":"error","error":{"type":"overloaded_error"}}"#,
        r#"{"type":"error","error":{"message":"Overloaded"}}"#,
    ] {
        assert_eq!(
            broken(&format!("{}\n\n", named("error", data))),
            (anthropic::FIELDS, Some(0)),
            "{data}"
        );
    }
    // Fields of events the profile does not read them for are not looked at.
    valid(&replace(
        DOCS_TEXT,
        2,
        &named("ping", r#"{"type":"ping","index":"x","delta":7}"#),
    ));
    // `null` stop reason: none yet.
    let p = valid(&replace(
        DOCS_TEXT,
        6,
        &named(
            "message_delta",
            r#"{"type":"message_delta","delta":{"stop_reason":null}}"#,
        ),
    ));
    assert_eq!(p.stop_reason(), None);
}

#[test]
fn a_stream_cut_before_message_stop_is_unterminated() {
    let events = DOCS_TEXT.split_terminator("\n\n").count();
    for cut in 0..events {
        let mut parts: Vec<&str> = DOCS_TEXT.split_terminator("\n\n").collect();
        parts.truncate(cut);
        let sse: String = parts.iter().map(|e| format!("{e}\n\n")).collect();
        let (result, _) = check_with(Messages::new, &sse);
        assert_eq!(
            result,
            Err(SequenceError::Unterminated {
                events: cut as u64,
                origin: Default::default()
            })
        );
        assert_eq!(result.unwrap_err().rule(), UNTERMINATED);
    }
}

#[test]
fn unknown_events_are_allowed_with_a_warning() {
    let future = named(
        "future_event",
        r#"{"type":"future_event","payload":{"x":[1]}}"#,
    );
    for n in [0, 1, 3, 6, 7] {
        let sse = insert(DOCS_TEXT, n, &future);
        valid(&sse);
        let mut decoder = Decoder::new();
        decoder.feed_slice(sse.as_bytes()).unwrap();
        let mut v = Validator::new(Messages::new());
        let mut warned = Vec::new();
        while let Some(FrameRef::Event(event)) = decoder.next_frame_ref().unwrap() {
            v.event_ref(event).unwrap();
            warned.extend(
                v.warnings()
                    .iter()
                    .map(|w| (w.index, w.rule, w.event_type.clone())),
            );
        }
        assert_eq!(warned.len(), 1);
        assert_eq!(
            (warned[0].0, warned[0].1),
            (n as u64, anthropic::UNKNOWN_EVENT)
        );
        assert_eq!(warned[0].2.as_str(), "future_event");
    }
    // But not after the terminal event.
    assert_eq!(
        broken(&format!("{DOCS_TEXT}{future}\n\n")),
        (anthropic::AFTER_TERMINAL, Some(8))
    );
}

#[test]
fn memory_is_bounded() {
    // Everything the documented text stream keeps: its id, "Hello!" and "end_turn".
    let id = "msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY".len();
    let kept = id + "Hello!".len() + "end_turn".len();
    let (result, _) = check_with(|| Messages::new().max_accumulated(kept), DOCS_TEXT);
    assert_eq!(result, Ok(()));
    assert_eq!(
        broken_with(|| Messages::new().max_accumulated(kept - 1), DOCS_TEXT),
        (anthropic::TOO_LARGE, Some(6))
    );
    assert_eq!(
        broken_with(|| Messages::new().max_accumulated(id + 2), DOCS_TEXT),
        (anthropic::TOO_LARGE, Some(3))
    );
    // Tool input counts too.
    assert_eq!(
        broken_with(|| Messages::new().max_accumulated(80), DOCS_TOOL_USE).0,
        anthropic::TOO_LARGE
    );
    // Blocks are counted, empty or not.
    let (result, _) = check_with(|| Messages::new().max_blocks(4), DOCS_WEB_SEARCH);
    assert_eq!(result, Ok(()));
    assert_eq!(
        broken_with(|| Messages::new().max_blocks(3), DOCS_WEB_SEARCH),
        (anthropic::TOO_MANY_BLOCKS, Some(15))
    );
}

#[test]
fn violations_name_the_event_by_its_type() {
    let mut v = Validator::new(Messages::new());
    let err = v
        .event(&Event::message(r#"{"type":"message_stop"}"#))
        .unwrap_err();
    let SequenceError::Violation(violation) = err else {
        panic!()
    };
    assert_eq!(violation.event_type.as_str(), "message_stop");
    assert_eq!(violation.rule, anthropic::START_FIRST);
}

// ---------------------------------------------------------------------------------------
// Property tests.

/// A block of a generated answer: its type, its pieces (`partial_json` for a tool block,
/// built from a JSON object cut at arbitrary char boundaries).
#[derive(Clone, Debug)]
enum GenBlock {
    Text(Vec<String>),
    Thinking(Vec<String>),
    Tool { input: String, cuts: Vec<usize> },
    Result,
}

fn gen_block() -> impl Strategy<Value = GenBlock> {
    prop_oneof![
        proptest::collection::vec(".{0,8}", 0..4).prop_map(GenBlock::Text),
        proptest::collection::vec(".{0,8}", 0..4).prop_map(GenBlock::Thinking),
        (
            proptest::collection::btree_map("[a-z]{1,4}", ".{0,6}", 0..3),
            proptest::collection::vec(0usize..64, 0..4)
        )
            .prop_map(|(input, cuts)| GenBlock::Tool {
                input: if input.is_empty() && cuts.is_empty() {
                    String::new()
                } else {
                    serde_json::to_string(&input).unwrap()
                },
                cuts,
            }),
        Just(GenBlock::Result),
    ]
}

/// `text` cut at the char boundaries nearest `cuts`.
fn pieces(text: &str, cuts: &[usize]) -> Vec<String> {
    let mut at: Vec<usize> = cuts
        .iter()
        .map(|c| {
            let mut i = c % (text.len() + 1);
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
        out.push(text[start..i].to_string());
        start = i;
    }
    out.push(text[start..].to_string());
    out
}

fn sse(name: &str, data: serde_json::Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

/// The stream Anthropic sends for `blocks`, with a ping after the events whose bit is set
/// in `pings` and, with `error`, an `error` in place of the events from that one on.
fn answer(blocks: &[GenBlock], pings: u64, error: Option<usize>) -> Vec<String> {
    use serde_json::json;
    let mut events = vec![sse(
        "message_start",
        json!({"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude","usage":{"input_tokens":1,"output_tokens":1}}}),
    )];
    for (index, block) in blocks.iter().enumerate() {
        let (content_block, deltas): (_, Vec<serde_json::Value>) = match block {
            GenBlock::Text(texts) => (
                json!({"type":"text","text":""}),
                texts
                    .iter()
                    .map(|t| json!({"type":"text_delta","text":t}))
                    .collect(),
            ),
            GenBlock::Thinking(texts) => (
                json!({"type":"thinking","thinking":""}),
                texts
                    .iter()
                    .map(|t| json!({"type":"thinking_delta","thinking":t}))
                    .chain([json!({"type":"signature_delta","signature":"sig"})])
                    .collect(),
            ),
            GenBlock::Tool { input, cuts } => (
                json!({"type":"tool_use","id":"toolu_1","name":"f","input":{}}),
                if input.is_empty() {
                    Vec::new()
                } else {
                    pieces(input, cuts)
                        .into_iter()
                        .map(|p| json!({"type":"input_json_delta","partial_json":p}))
                        .collect()
                },
            ),
            GenBlock::Result => (
                json!({"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]}),
                Vec::new(),
            ),
        };
        events.push(sse(
            "content_block_start",
            json!({"type":"content_block_start","index":index,"content_block":content_block}),
        ));
        for delta in deltas {
            events.push(sse(
                "content_block_delta",
                json!({"type":"content_block_delta","index":index,"delta":delta}),
            ));
        }
        events.push(sse(
            "content_block_stop",
            json!({"type":"content_block_stop","index":index}),
        ));
    }
    events.push(sse(
        "message_delta",
        json!({"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":9}}),
    ));
    events.push(sse("message_stop", json!({"type":"message_stop"})));
    if let Some(at) = error {
        // Before `message_stop` (the last event): an error ends the stream instead.
        events.truncate(at % events.len());
        events.push(sse(
            "error",
            json!({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}),
        ));
    }
    let last = events.len() - 1;
    let mut out = Vec::new();
    for (i, event) in events.into_iter().enumerate() {
        out.push(event);
        // Not after the terminal event.
        if i < last && pings & (1 << (i % 64)) != 0 {
            out.push(sse("ping", json!({"type":"ping"})));
        }
    }
    out
}

/// Event data drawn from the protocol's vocabulary, mostly well formed.
fn any_event() -> impl Strategy<Value = (Option<&'static str>, String)> {
    const NAMES: [&str; 9] = [
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
    const BLOCKS: [&str; 5] = ["text", "tool_use", "thinking", "redacted_thinking", "other"];
    const DELTAS: [&str; 6] = [
        "text_delta",
        "input_json_delta",
        "thinking_delta",
        "signature_delta",
        "citations_delta",
        "other_delta",
    ];
    let name = proptest::sample::select(&NAMES[..]);
    (
        proptest::option::weighted(0.9, name.clone()),
        name,
        0u64..4,
        proptest::sample::select(&BLOCKS[..]),
        proptest::sample::select(&DELTAS[..]),
        prop_oneof!["[{}\\[\\]\":a1, ]{0,6}", Just(String::new())],
        0u8..8,
    )
        .prop_map(|(sse_name, ty, index, block, delta, piece, shape)| {
            let piece = serde_json::to_string(&piece).unwrap();
            let data = match shape {
                0 => "not json".to_string(),
                1 => format!(r#"{{"type":"{ty}"}}"#),
                _ => format!(
                    r#"{{"type":"{ty}","index":{index},"message":{{"id":"m"}},"content_block":{{"type":"{block}"}},"delta":{{"type":"{delta}","text":{piece},"partial_json":{piece},"thinking":{piece},"signature":"s","stop_reason":"end_turn"}},"error":{{"type":"overloaded_error","message":"Overloaded"}}}}"#
                ),
            };
            (sse_name, data)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    /// What Anthropic sends for any answer (text, thinking, tool use with input cut
    /// anywhere, server tool results, pings anywhere, an error at any point) is accepted
    /// whole, owned and borrowed alike, and keeps what was sent.
    #[test]
    fn generated_answers_are_accepted(
        blocks in proptest::collection::vec(gen_block(), 0..6),
        pings in any::<u64>(),
        error in proptest::option::of(0usize..64),
    ) {
        let sse: String = answer(&blocks, pings, error).concat();
        let (result, p) = check_with(Messages::new, &sse);
        prop_assert_eq!(result, Ok(()), "{}", sse);
        prop_assert_eq!(p.failure().is_some(), error.is_some());
        if error.is_none() {
            for (index, block) in blocks.iter().enumerate() {
                let index = index as u64;
                match block {
                    GenBlock::Text(texts) => prop_assert_eq!(p.text(index).map(str::to_string), Some(texts.concat())),
                    GenBlock::Thinking(texts) => prop_assert_eq!(p.thinking(index).map(str::to_string), Some(texts.concat())),
                    GenBlock::Tool { input, .. } => prop_assert_eq!(p.tool_input(index), Some(input.as_str())),
                    GenBlock::Result => prop_assert_eq!(p.blocks() > index as usize, true),
                }
            }
        }
    }

    /// Arbitrary sequences: no panic, `event` and `event_ref` agree call for call, the first
    /// violation is sticky, and `finish` is `Ok` only after a terminal event.
    #[test]
    fn arbitrary_sequences_are_judged_alike_and_never_panic(
        events in proptest::collection::vec(any_event(), 0..24),
        max_accumulated in prop_oneof![Just(usize::MAX), 0usize..16],
        max_blocks in prop_oneof![Just(usize::MAX), 0usize..3],
    ) {
        let profile = || Messages::new().max_accumulated(max_accumulated).max_blocks(max_blocks);
        let mut owned = Validator::new(profile());
        let mut borrowed = Validator::new(profile());
        let mut first_error = None;
        for (name, data) in &events {
            let mut builder = Event::builder();
            if let Some(name) = name {
                builder = builder.event(*name).unwrap();
            }
            let event = builder.data(data.clone()).build();
            let result = owned.event(&event);
            prop_assert_eq!(&borrowed.event_ref(event.as_event_ref()), &result);
            prop_assert_eq!(owned.warnings(), borrowed.warnings());
            match (&first_error, result) {
                (None, Err(e)) => first_error = Some(e),
                (Some(first), result) => prop_assert_eq!(result.as_ref(), Err(first)),
                (None, Ok(())) => {}
            }
        }
        let terminated = owned.is_terminated();
        prop_assert_eq!(owned.profile().failure(), borrowed.profile().failure());
        let end = owned.finish();
        prop_assert_eq!(&borrowed.finish(), &end);
        match (first_error, end) {
            (Some(first), end) => prop_assert_eq!(end, Err(first)),
            (None, Ok(())) => prop_assert!(terminated),
            (None, Err(_)) => prop_assert!(!terminated),
        }
    }
}
