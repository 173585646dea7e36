//! `ssekit serve`'s `POST /v1/messages` (the Anthropic Messages API), on both runtimes, over
//! 127.0.0.1: the streamed event order and text, the `?error_after=N` failure, the
//! non-streamed Message and the error answers.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::serve_on_a_free_port;
use serde_json::{json, Value};

const ANSWER: &str = "Natalia sold 48 clips in April and 24 in May, so 72 clips in all.";

/// One HTTP/1.0 `POST /v1/messages{query}` of `body`; the answer's head and body (the
/// connection closes after it).
fn post(base: &str, query: &str, body: &str) -> (String, String) {
    let addr = base.trim_start_matches("http://").trim_end_matches('/');
    let mut stream = TcpStream::connect(addr).unwrap();
    // A hang guard, not a speed budget.
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    write!(
        stream,
        "POST /v1/messages{query} HTTP/1.0\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    (head.to_ascii_lowercase(), body.to_owned())
}

/// `(event, data as JSON)` of each event of `wire`, decoded by ssekit's decoder, which must
/// find the stream ended cleanly (not inside an event).
fn events(wire: &str) -> Vec<(String, Value)> {
    let mut decoder = ssekit::Decoder::new();
    decoder.feed_slice(wire.as_bytes()).unwrap();
    let mut out = Vec::new();
    while let Some(frame) = decoder.next_frame().unwrap() {
        if let ssekit::Frame::Event(e) = frame {
            out.push((
                e.event_type().to_owned(),
                serde_json::from_str(e.data()).unwrap(),
            ));
        }
    }
    assert_eq!(decoder.finish(), ssekit::StreamEnd::Clean, "{wire}");
    out
}

fn request(stream: bool) -> String {
    json!({
        "model": "claude-test",
        "max_tokens": 64,
        "stream": stream,
        "messages": [{"role": "user", "content": "How many clips did Natalia sell?"}],
    })
    .to_string()
}

/// The event names, each checked against its data's `type`.
fn names(events: &[(String, Value)]) -> Vec<&str> {
    for (name, data) in events {
        assert_eq!(data["type"], name.as_str(), "{data}");
    }
    events.iter().map(|(name, _)| name.as_str()).collect()
}

fn text(events: &[(String, Value)]) -> String {
    events
        .iter()
        .filter(|(name, _)| name == "content_block_delta")
        .map(|(_, data)| {
            assert_eq!(data["delta"]["type"], "text_delta");
            data["delta"]["text"].as_str().unwrap().to_owned()
        })
        .collect()
}

#[test]
fn messages_streams_the_documented_sequence_on_both_runtimes() {
    let words = ANSWER.split(' ').count();
    for runtime in ["hyper", "smol"] {
        let server = serve_on_a_free_port(&["--runtime", runtime, "--keep-alive-ms", "200"]);
        let (head, wire) = post(&server.1, "", &request(true));
        assert!(head.starts_with("http/1.0 200") || head.starts_with("http/1.1 200"));
        assert!(head.contains("content-type: text/event-stream"), "{head}");
        let got = events(&wire);
        let mut expected = vec!["message_start", "content_block_start", "ping"];
        expected.extend(std::iter::repeat_n("content_block_delta", words));
        expected.extend(["content_block_stop", "message_delta", "message_stop"]);
        assert_eq!(names(&got), expected, "{runtime}");
        assert_eq!(text(&got), ANSWER, "{runtime}");
        let start = &got[0].1["message"];
        assert_eq!(start["role"], "assistant");
        assert_eq!(start["model"], "claude-test");
        assert_eq!(start["content"], json!([]));
        assert_eq!(start["stop_reason"], Value::Null);
        assert_eq!(start["usage"]["input_tokens"], 6);
        assert!(start["id"].as_str().unwrap().starts_with("msg_"));
        assert_eq!(
            got[1].1["content_block"],
            json!({"type": "text", "text": ""})
        );
        let delta = &got[got.len() - 2].1;
        assert_eq!(delta["delta"]["stop_reason"], "end_turn", "{runtime}");
        assert_eq!(delta["usage"]["output_tokens"], words, "{runtime}");

        // ?error_after=3: three deltas, then the error event, and the stream ends.
        let (head, wire) = post(&server.1, "?error_after=3", &request(true));
        assert!(head.contains(" 200"), "{head}");
        let got = events(&wire);
        assert_eq!(
            names(&got),
            [
                "message_start",
                "content_block_start",
                "ping",
                "content_block_delta",
                "content_block_delta",
                "content_block_delta",
                "error"
            ],
            "{runtime}"
        );
        assert_eq!(text(&got), "Natalia sold 48 ");
        assert_eq!(
            got[6].1,
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
        );
    }
}

#[test]
fn messages_answers_a_message_without_stream_and_refuses_bad_requests() {
    for runtime in ["hyper", "smol"] {
        let server = serve_on_a_free_port(&["--runtime", runtime]);
        let (head, body) = post(&server.1, "", &request(false));
        assert!(head.contains(" 200"), "{head}");
        assert!(head.contains("content-type: application/json"), "{head}");
        let message: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(message["type"], "message");
        assert_eq!(
            message["content"],
            json!([{"type": "text", "text": ANSWER}])
        );
        assert_eq!(message["stop_reason"], "end_turn");

        let (head, body) = post(&server.1, "?error_after=1", &request(false));
        assert!(head.contains(" 529"), "{runtime}: {head}");
        let error: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(error["error"]["type"], "overloaded_error");

        for bad in [
            "not json",
            r#"{"model":"m","max_tokens":1}"#,
            r#"{"messages":{}}"#,
        ] {
            let (head, body) = post(&server.1, "", bad);
            assert!(head.contains(" 400"), "{runtime}: {bad}: {head}");
            let error: Value = serde_json::from_str(&body).unwrap();
            assert_eq!(error["type"], "error", "{body}");
            assert_eq!(error["error"]["type"], "invalid_request_error", "{body}");
            assert!(error["error"]["message"].is_string(), "{body}");
        }
    }
}

/// What `serve` streams passes ssekit's Anthropic profile, and `tail --profile anthropic`
/// reads it: exit 0 at `message_stop`, and exit 1 with the provider's type and message for
/// the `error` event of `?error_after=3`.
#[test]
fn tail_profile_anthropic_reads_the_stream_and_fails_with_the_providers_error() {
    use ssekit::sequence::{Profile, Validator};
    for runtime in ["hyper", "smol"] {
        let server = serve_on_a_free_port(&["--runtime", runtime]);
        let (_, wire) = post(&server.1, "", &request(true));
        let mut v = Validator::new(ssekit::profile::anthropic::Messages::new());
        let mut decoder = ssekit::Decoder::new();
        decoder.feed_slice(wire.as_bytes()).unwrap();
        while let Some(frame) = decoder.next_frame().unwrap() {
            v.frame(&frame).unwrap();
        }
        v.finish().unwrap();
        assert_eq!(v.profile().failure(), None, "{runtime}");
        assert_eq!(v.profile().text(0), Some(ANSWER), "{runtime}");

        let url = format!("{}/v1/messages", server.1);
        let body = request(true);
        let ok = common::output_within(30, &["tail", &url, "--profile", "anthropic", "-d", &body]);
        assert!(
            ok.status.success(),
            "{runtime}: {}",
            common::text(&ok.stderr)
        );
        let url = format!("{url}?error_after=3");
        let failed =
            common::output_within(30, &["tail", &url, "--profile", "anthropic", "-d", &body]);
        common::assert_one_line_error(
            &failed,
            "the stream ended with the failure event `error` (overloaded_error): Overloaded",
        );
    }
}
