//! `POST /v1/messages`: the demo answer as the Anthropic Messages API gives it, so that
//! Anthropic's SDKs (and anything else that speaks that format) can read `ssekit serve`.
//!
//! The request is a Messages request: a JSON object with `messages` (an array; the text in it
//! is counted as the input tokens), and optionally `model` (echoed back), `max_tokens` and
//! `stream`. The answer is always [`expected_answer`](crate::app::expected_answer):
//!
//! - with `"stream": true`, `200 text/event-stream`: `message_start`, `content_block_start`
//!   (index 0, text), `ping`, one `content_block_delta` (`text_delta`) per word,
//!   `content_block_stop`, `message_delta` (`stop_reason: end_turn`, the output tokens) and
//!   `message_stop`; each `event:` named as its data's `type`, paced by the app's delta
//!   pause, with the app's keep-alive and graceful shutdown;
//! - without it, one `Message` JSON object.
//!
//! `?error_after=N` injects a failure: the stream sends an `error` event
//! (`overloaded_error`, "Overloaded") after N text deltas (all of them if there are fewer)
//! and ends there, as the API does when it is overloaded mid-stream; a request without
//! `"stream": true` is answered `529` with the same error. A body that is not JSON, or has no
//! `messages` array, is answered `400` with an `invalid_request_error`; a body over the app's
//! limit `413` with a `request_too_large` error, both in the API's error shape.

use bytes::{Bytes, BytesMut};
use http::{Request, Response, StatusCode};
use hyper::body::Incoming;
use serde_json::{json, Value};
use ssekit::{Encoder, Event};
use ssekit_http::ors::OrsBody;
use ssekit_http::runtime::Runtime;

use crate::app::{expected_answer, json_response, query_number, read_body, App};

/// The id of every demo message (the answer is a pure function of the request).
const MESSAGE_ID: &str = "msg_ssekit_demo";

/// The model named in the answer when the request names none.
const DEFAULT_MODEL: &str = "ssekit-demo";

/// Answers `POST /v1/messages` (see the [module docs](self)).
pub(crate) async fn handle<R: Runtime>(app: &App<R>, req: Request<Incoming>) -> Response<OrsBody> {
    let error_after = query_number(req.uri(), "error_after").and_then(|n| usize::try_from(n).ok());
    let body = match read_body(req.into_body()).await {
        Ok(body) => body,
        Err(refused) if refused.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            return error(
                StatusCode::PAYLOAD_TOO_LARGE,
                "request_too_large",
                "request body too large",
            );
        }
        Err(_) => {
            return error(
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                "request body broke off",
            );
        }
    };
    let request = match parse(&body) {
        Ok(request) => request,
        Err(message) => {
            return error(StatusCode::BAD_REQUEST, "invalid_request_error", message);
        }
    };
    if !request.stream {
        if error_after.is_some() {
            return error(
                StatusCode::from_u16(529).unwrap_or(StatusCode::SERVICE_UNAVAILABLE),
                "overloaded_error",
                "Overloaded",
            );
        }
        return json_response(StatusCode::OK, &message(&request));
    }
    let frames: Vec<Bytes> = events(&request, error_after)
        .into_iter()
        .filter_map(|data| {
            let kind = data["type"].as_str()?.to_owned();
            let event = Event::builder()
                .event(kind)
                .ok()?
                .data(data.to_string())
                .build();
            let mut out = BytesMut::new();
            Encoder::new().encode(&event, &mut out).ok()?;
            Some(out.freeze())
        })
        .collect();
    let (pause, runtime) = (app.delta_pause, app.runtime.clone());
    let stream = futures_util::stream::unfold(frames.into_iter(), move |mut it| {
        let sleep = runtime.sleep(pause);
        async move {
            let frame = it.next()?;
            sleep.await;
            Some((frame, it))
        }
    });
    app.stream(Box::pin(stream))
}

/// What the demo takes from a Messages request.
#[derive(Debug, PartialEq)]
struct Parsed {
    model: String,
    stream: bool,
    input_tokens: usize,
}

/// The request body, or the message of the 400 that refuses it.
fn parse(body: &[u8]) -> Result<Parsed, &'static str> {
    let Ok(request) = serde_json::from_slice::<Value>(body) else {
        return Err("the request body is not JSON");
    };
    let Some(messages) = request.get("messages").and_then(Value::as_array) else {
        return Err("messages: field required (an array of messages)");
    };
    Ok(Parsed {
        model: request
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or(DEFAULT_MODEL)
            .to_owned(),
        stream: request.get("stream") == Some(&Value::Bool(true)),
        input_tokens: messages.iter().map(|m| words(&m["content"])).sum(),
    })
}

/// The words of a message's content: a string, or the `text` of its text blocks.
fn words(content: &Value) -> usize {
    match content {
        Value::String(text) => text.split_whitespace().count(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|block| block.get("text").and_then(Value::as_str))
            .map(|text| text.split_whitespace().count())
            .sum(),
        _ => 0,
    }
}

/// The answer's text deltas: its words, each with the space after it.
fn deltas() -> Vec<&'static str> {
    expected_answer().split_inclusive(' ').collect()
}

/// The non-streaming answer: one `Message`.
fn message(request: &Parsed) -> Value {
    json!({
        "id": MESSAGE_ID,
        "type": "message",
        "role": "assistant",
        "model": request.model,
        "content": [{"type": "text", "text": expected_answer()}],
        "stop_reason": "end_turn",
        "stop_sequence": null,
        "usage": {"input_tokens": request.input_tokens, "output_tokens": deltas().len()},
    })
}

/// The data of every event of the stream, in order; each one's `type` is its event name.
/// With `error_after`, the stream ends in an `error` event after that many text deltas.
fn events(request: &Parsed, error_after: Option<usize>) -> Vec<Value> {
    let deltas = deltas();
    let mut out = vec![
        json!({"type": "message_start", "message": {
            "id": MESSAGE_ID,
            "type": "message",
            "role": "assistant",
            "content": [],
            "model": request.model,
            "stop_reason": null,
            "stop_sequence": null,
            "usage": {"input_tokens": request.input_tokens, "output_tokens": 1},
        }}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "ping"}),
    ];
    for (i, word) in deltas.iter().enumerate() {
        if error_after == Some(i) {
            out.push(overloaded());
            return out;
        }
        out.push(json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": word}}));
    }
    if error_after.is_some() {
        out.push(overloaded());
        return out;
    }
    out.extend([
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null}, "usage": {"output_tokens": deltas.len()}}),
        json!({"type": "message_stop"}),
    ]);
    out
}

/// The API's error body for `overloaded_error`, also the data of the stream's `error` event.
fn overloaded() -> Value {
    error_body("overloaded_error", "Overloaded")
}

/// `{"type": "error", "error": {"type": kind, "message": message}}`: the API's error shape.
fn error_body(kind: &str, message: &str) -> Value {
    json!({"type": "error", "error": {"type": kind, "message": message}})
}

/// An error answer in the API's shape.
fn error(status: StatusCode, kind: &str, message: &str) -> Response<OrsBody> {
    json_response(status, &error_body(kind, message))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> Parsed {
        parse(br#"{"model":"m","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"How many clips?"},{"role":"user","content":[{"type":"text","text":"In all?"}]}]}"#).unwrap()
    }

    fn types(events: &[Value]) -> Vec<&str> {
        events.iter().map(|e| e["type"].as_str().unwrap()).collect()
    }

    #[test]
    fn parse_takes_model_stream_and_counts_input_words() {
        assert_eq!(
            request(),
            Parsed {
                model: "m".into(),
                stream: true,
                input_tokens: 5
            }
        );
        let bare = parse(br#"{"messages":[]}"#).unwrap();
        assert_eq!((bare.model.as_str(), bare.stream), (DEFAULT_MODEL, false));
        assert!(parse(b"not json").is_err());
        assert!(parse(br#"{"model":"m"}"#).is_err());
        assert!(parse(br#"{"messages":"hi"}"#).is_err());
        assert!(parse(b"[1]").is_err());
    }

    #[test]
    fn the_stream_is_the_documented_sequence_and_spells_the_answer() {
        let events = events(&request(), None);
        let n = deltas().len();
        let mut expected = vec!["message_start", "content_block_start", "ping"];
        expected.extend(std::iter::repeat_n("content_block_delta", n));
        expected.extend(["content_block_stop", "message_delta", "message_stop"]);
        assert_eq!(types(&events), expected);
        let text: String = events
            .iter()
            .filter_map(|e| e["delta"]["text"].as_str())
            .collect();
        assert_eq!(text, expected_answer());
        assert_eq!(events[0]["message"]["usage"]["input_tokens"], 5);
        assert_eq!(events[0]["message"]["model"], "m");
        assert_eq!(events[n + 4]["delta"]["stop_reason"], "end_turn");
        assert_eq!(events[n + 4]["usage"]["output_tokens"], n);
    }

    #[test]
    fn error_after_ends_the_stream_with_an_overloaded_error() {
        let cut = events(&request(), Some(3));
        let expected = [
            "message_start",
            "content_block_start",
            "ping",
            "content_block_delta",
            "content_block_delta",
            "content_block_delta",
            "error",
        ];
        assert_eq!(types(&cut), expected);
        assert_eq!(cut[6]["error"]["type"], "overloaded_error");
        assert_eq!(cut[6]["error"]["message"], "Overloaded");
        // More than there are deltas: every delta, then the error.
        let all = events(&request(), Some(1000));
        assert_eq!(all.len(), 3 + deltas().len() + 1);
        assert_eq!(all.last().unwrap()["type"], "error");
        // Zero: the error before any text.
        assert_eq!(types(&events(&request(), Some(0)))[3], "error");
    }

    #[test]
    fn the_message_carries_the_answer() {
        let m = message(&request());
        assert_eq!(m["content"][0]["text"], expected_answer());
        assert_eq!(m["stop_reason"], "end_turn");
        assert_eq!(m["type"], "message");
    }
}
