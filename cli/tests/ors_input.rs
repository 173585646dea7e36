//! `ssekit serve`'s `gsm8k` refuses an answer of the wrong type before `submit` runs (issue
//! 44: the string `"33"` was scored as correct), on both runtimes, over 127.0.0.1.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::serve_on_a_free_port;

/// One HTTP/1.0 request; the whole answer's body (the connection closes after it).
fn send(base: &str, path: &str, sid: Option<&str>, body: &str) -> String {
    let addr = base.trim_start_matches("http://").trim_end_matches('/');
    let mut stream = TcpStream::connect(addr).unwrap();
    // A hang guard, not a speed budget.
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let sid = sid.map_or(String::new(), |s| format!("X-Session-ID: {s}\r\n"));
    write!(
        stream,
        "POST {path} HTTP/1.0\r\nHost: {addr}\r\n{sid}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    assert!(
        head.starts_with("HTTP/1.0 200") || head.starts_with("HTTP/1.1 200"),
        "{head}"
    );
    body.to_owned()
}

/// `(event, data)` of each event of `wire`.
fn events(wire: &str) -> Vec<(String, String)> {
    let mut decoder = ssekit::Decoder::new();
    decoder.feed_slice(wire.as_bytes()).unwrap();
    let mut out = Vec::new();
    while let Some(frame) = decoder.next_frame().unwrap() {
        if let ssekit::Frame::Event(e) = frame {
            out.push((e.event_type().to_owned(), e.data().to_owned()));
        }
    }
    out
}

#[test]
fn gsm8k_refuses_a_string_answer_before_submit_runs() {
    for runtime in ["hyper", "smol"] {
        let server = serve_on_a_free_port(&["--runtime", runtime]);
        let base = server.1.clone();
        let sid = events(&send(&base, "/create_session", None, ""))[0]
            .1
            .clone();
        let created = send(
            &base,
            "/create",
            Some(&sid),
            r#"{"split":"test","index":0}"#,
        );
        assert!(created.contains(&sid), "{created}");
        // The task's answer is 33: as a string it is refused, naming the path.
        let wire = send(
            &base,
            "/gsm8k/call",
            Some(&sid),
            r#"{"name":"submit","input":{"answer":"33"}}"#,
        );
        let got = events(&wire);
        assert_eq!(got.len(), 2, "{runtime}: {wire}");
        assert_eq!(got[1].0, "end", "{runtime}: {wire}");
        assert_eq!(
            tool_error(&got[1].1),
            r#"Tool input validation error: input/answer: "33" is not of type "number""#,
            "{runtime}"
        );
        let wire = send(
            &base,
            "/gsm8k/call",
            Some(&sid),
            r#"{"name":"submit","input":{}}"#,
        );
        assert!(
            tool_error(&events(&wire)[1].1)
                .contains(r#"input/answer: "answer" is a required property"#),
            "{wire}"
        );
        // As a number it is scored.
        let wire = send(
            &base,
            "/gsm8k/call",
            Some(&sid),
            r#"{"name":"submit","input":{"answer":33}}"#,
        );
        let got = events(&wire);
        assert_eq!(got.last().unwrap().0, "end", "{runtime}: {wire}");
        assert!(
            got.last().unwrap().1.contains("Correct!"),
            "{runtime}: {wire}"
        );
    }
}

/// The message of a tool error (`{"ok": false, "error": …}`), the data of an `end` event.
fn tool_error(data: &str) -> String {
    let result: serde_json::Value = serde_json::from_str(data).unwrap();
    assert_eq!(result["ok"], false, "{data}");
    result["error"].as_str().unwrap().to_owned()
}
