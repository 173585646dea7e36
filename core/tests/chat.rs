//! The Chat Completions profile on streams as OpenAI documents them and as gateways relay
//! them: the documented chunks, the usage-only last chunk of `stream_options:
//! {"include_usage": true}`, and an `error` chunk mid-stream, followed by `[DONE]` or by the
//! end of the stream. Every stream goes through the real decoder, and through both
//! `Validator::event` (owned frames) and `Validator::event_ref` (borrowed frames), which
//! must answer alike.

#![cfg(feature = "json")]

#[path = "support/both_ways.rs"]
mod both_ways;

use proptest::prelude::*;
use ssekit::profile::chat::{self, Completions};
use ssekit::sequence::{Failure, Profile, Rule, SequenceError, UNTERMINATED};

/// Validates `sse` with owned and with borrowed frames ([`both_ways`]); both must agree.
fn check(sse: &str) -> (Result<(), SequenceError>, Completions) {
    let (result, owned, borrowed) = both_ways::validate_both_ways(Completions::new, sse);
    let _ = &borrowed;
    (result, owned)
}

#[track_caller]
fn valid(sse: &str) -> Completions {
    match check(sse) {
        (Ok(()), p) => p,
        (Err(err), _) => panic!("{err}\n{sse}"),
    }
}

#[track_caller]
fn broken(sse: &str) -> (Rule, Option<u64>) {
    match check(sse) {
        (Ok(()), _) => panic!("stream was accepted:\n{sse}"),
        (Err(err), _) => (err.rule(), err.index()),
    }
}

fn sse(events: &[&str]) -> String {
    events
        .iter()
        .map(|data| format!("data: {data}\n\n"))
        .collect()
}

// The chunks of "The chat completion chunk object", OpenAI API reference:
// https://platform.openai.com/docs/api-reference/chat-streaming/streaming
const FIRST: &str = r#"{"id":"chatcmpl-123","object":"chat.completion.chunk","created":1694268190,"model":"gpt-4o-mini", "system_fingerprint": "fp_44709d6fcb", "choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}"#;
const HELLO: &str = r#"{"id":"chatcmpl-123","object":"chat.completion.chunk","created":1694268190,"model":"gpt-4o-mini", "system_fingerprint": "fp_44709d6fcb", "choices":[{"index":0,"delta":{"content":"Hello"},"logprobs":null,"finish_reason":null}]}"#;
const STOP: &str = r#"{"id":"chatcmpl-123","object":"chat.completion.chunk","created":1694268190,"model":"gpt-4o-mini", "system_fingerprint": "fp_44709d6fcb", "choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]}"#;

// `stream_options.include_usage`: "an additional chunk will be streamed before the
// `data: [DONE]` message. The `usage` field on this chunk shows the token usage statistics
// for the entire request, and the `choices` field will always be an empty array. All other
// chunks will also include a `usage` field, but with a null value."
// https://platform.openai.com/docs/api-reference/chat/create#chat-create-stream_options
const USAGE: &str = r#"{"id":"chatcmpl-123","object":"chat.completion.chunk","created":1694268190,"model":"gpt-4o-mini","system_fingerprint":"fp_44709d6fcb","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":12,"total_tokens":21}}"#;

// OpenAI's error object ("message", "type", "param", "code"), as its API sends it in a
// stream that fails after it started; the data line of a captured OpenAI stream, published
// as the fixture `aibridge/fixtures/openai/chatcompletions/stream_error.txtar` of
// https://github.com/coder/coder, and the error object of
// https://platform.openai.com/docs/guides/error-codes
const OPENAI_ERROR: &str = r#"{"error": {"message": "The server had an error while processing your request. Sorry about that!", "type": "server_error"}}"#;

// OpenRouter's error shape ("code": a number, "message", "metadata"), which it emits "as an
// SSE data event" when the model fails after the response started:
// https://openrouter.ai/docs/api-reference/errors
const OPENROUTER_ERROR: &str = r#"{"error":{"code":502,"message":"Provider returned error","metadata":{"provider_name":"OpenAI"}}}"#;

#[test]
fn the_documented_stream_is_valid() {
    let p = valid(&sse(&[FIRST, HELLO, STOP, "[DONE]"]));
    assert_eq!(p.failure(), None);
    // With `include_usage`: a `usage: null` on every chunk, and the usage-only last chunk.
    let with_usage = |chunk: &str| chunk.replacen("]}", r#"],"usage":null}"#, 1);
    let (first, hello, stop) = (with_usage(FIRST), with_usage(HELLO), with_usage(STOP));
    let p = valid(&sse(&[&first, &hello, &stop, USAGE, "[DONE]"]));
    assert_eq!(p.failure(), None);
}

#[test]
fn cut_streams_are_unterminated() {
    let events = [FIRST, HELLO, STOP, USAGE, "[DONE]"];
    for cut in 0..events.len() {
        assert_eq!(
            broken(&sse(&events[..cut])),
            (UNTERMINATED, None),
            "cut after {cut}"
        );
    }
}

#[test]
fn an_error_chunk_ends_the_stream_with_a_failure() {
    // The captured stream: chunks, then the error, then the end of the stream.
    let (result, p) = check(&sse(&[FIRST, HELLO, OPENAI_ERROR]));
    result.unwrap();
    assert_eq!(
        p.failure(),
        Some(Failure::new(
            "error",
            Some("server_error".into()),
            "The server had an error while processing your request. Sorry about that!"
        ))
    );
    // Relays that send `[DONE]` after it.
    let p = valid(&sse(&[FIRST, HELLO, OPENAI_ERROR, "[DONE]"]));
    assert_eq!(p.failure().unwrap().code.as_deref(), Some("server_error"));
    // The first event may be the error.
    valid(&sse(&[OPENAI_ERROR]));
    // A numeric code wins over the type; a string error is its message.
    let p = valid(&sse(&[FIRST, OPENROUTER_ERROR, "[DONE]"]));
    assert_eq!(
        p.failure(),
        Some(Failure::new(
            "error",
            Some("502".into()),
            "Provider returned error"
        ))
    );
    let coded = r#"{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}"#;
    let p = valid(&sse(&[coded]));
    assert_eq!(
        p.failure().unwrap().to_string(),
        "`error` (rate_limit_exceeded): Rate limit reached"
    );
    let p = valid(&sse(&[r#"{"error":"upstream timed out"}"#]));
    assert_eq!(
        p.failure(),
        Some(Failure::new("error", None, "upstream timed out"))
    );
    // A gateway's chunk that carries the error beside its choices.
    let beside = r#"{"id":"gen-1","object":"chat.completion.chunk","created":1,"model":"m","error":{"code":"server_error","message":"Provider disconnected"},"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}]}"#;
    let p = valid(&sse(&[FIRST, beside]));
    assert_eq!(p.failure().unwrap().message, "Provider disconnected");
}

#[test]
fn after_error() {
    assert_eq!(
        broken(&sse(&[FIRST, OPENAI_ERROR, HELLO])),
        (chat::AFTER_ERROR, Some(2))
    );
    assert_eq!(
        broken(&sse(&[OPENAI_ERROR, OPENAI_ERROR])),
        (chat::AFTER_ERROR, Some(1))
    );
    assert_eq!(
        broken(&sse(&[OPENAI_ERROR, "[DONE]", HELLO])),
        (chat::AFTER_DONE, Some(2))
    );
    assert_eq!(
        broken(&sse(&[OPENAI_ERROR, "[DONE]", "[DONE]"])),
        (chat::AFTER_DONE, Some(2))
    );
}

#[test]
fn what_is_not_an_error_chunk() {
    // `error: null`, an error below the top level, and other types are ordinary chunks.
    for chunk in [
        r#"{"choices":[],"error":null}"#,
        r#"{"choices":[{"delta":{"error":{"message":"x"}}}]}"#,
        r#"{"error":1}"#,
        r#"{"error":[]}"#,
        r#"{"error":false}"#,
    ] {
        let (result, p) = check(&sse(&[chunk]));
        assert_eq!(
            result,
            Err(SequenceError::Unterminated {
                events: 1,
                origin: Default::default()
            }),
            "{chunk}"
        );
        assert_eq!(p.failure(), None);
    }
    // An escaped key, and the last of a key given twice (as serde's maps keep it).
    let p = valid(&sse(&[r#"{"\u0065rror":{"message":"m","code":"c"}}"#]));
    assert_eq!(p.failure().unwrap().code.as_deref(), Some("c"));
    assert_eq!(
        broken(&sse(&[r#"{"error":{"message":"m"},"error":null}"#])),
        (UNTERMINATED, None)
    );
    valid(&sse(&[r#"{"error":null,"error":{"message":"m"}}"#]));
    // Deep nesting before the `error`.
    let deep = format!(
        r#"{{"x":{}1{},"error":{{"message":"deep"}}}}"#,
        "[".repeat(100),
        "]".repeat(100)
    );
    let p = valid(&sse(&[&deep]));
    assert_eq!(p.failure().unwrap().message, "deep");
}

#[test]
fn chunk_json_still_holds() {
    for bad in ["[1]", "\"error\"", "{\"error\":", "DONE"] {
        assert_eq!(
            broken(&sse(&[FIRST, bad, "[DONE]"])),
            (chat::CHUNK_JSON, Some(1)),
            "{bad}"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Arbitrary data never panics; owned and borrowed events agree; an error chunk is
    /// reported exactly when the stream has one before `[DONE]`.
    #[test]
    fn arbitrary_streams(datas in proptest::collection::vec(prop_oneof![
        Just(FIRST.to_string()),
        Just(HELLO.to_string()),
        Just(USAGE.to_string()),
        Just(OPENAI_ERROR.to_string()),
        Just(OPENROUTER_ERROR.to_string()),
        Just("[DONE]".to_string()),
        "\\PC{0,24}",
        r#"\{"(error|choices|\\u0065rror)":("x"|null|1|\{\}|\{"message":"m","code":(1|"c"|null)\}|\[\])\}"#,
    ], 0..8)) {
        let refs: Vec<&str> = datas.iter().map(String::as_str).filter(|d| !d.contains(['\n', '\r'])).collect();
        let (result, p) = check(&sse(&refs));
        if result.is_ok() {
            let is_error = |data: &&str| {
                let value: Option<serde_json::Value> = serde_json::from_str(data).ok();
                value
                    .as_ref()
                    .and_then(|v| v.get("error"))
                    .is_some_and(|e| e.is_object() || e.is_string())
            };
            let errored = refs.iter().take_while(|d| **d != "[DONE]").any(is_error);
            prop_assert_eq!(p.failure().is_some(), errored);
        }
    }
}
