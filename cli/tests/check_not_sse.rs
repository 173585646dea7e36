//! `ssekit check` on files that are no event stream (issue 43): an HTML error page, a JSON
//! body, an empty capture. Each is an error, exit 1, "not an event stream" with the reason;
//! `--allow-empty` accepts a capture without events, and real captures still pass.

mod common;

use std::path::PathBuf;
use std::process::Output;

use common::{ssekit, text};

/// A file in this test's own directory, with `contents`.
fn file(name: &str, contents: &[u8]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ssekit-check-not-sse-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, contents).unwrap();
    path
}

fn check(path: &PathBuf, extra: &[&str]) -> Output {
    ssekit()
        .arg("check")
        .arg(path)
        .args(extra)
        .output()
        .unwrap()
}

/// The error line of `sse.not-an-event-stream`, and the summary, of a failed check.
fn not_an_event_stream(out: &Output) -> (String, String) {
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    let errors: Vec<&str> = stderr
        .lines()
        .filter(|l| l.ends_with("[sse.not-an-event-stream]"))
        .collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(
        errors[0].contains(": error: not an event stream: "),
        "{stderr}"
    );
    (errors[0].to_owned(), text(&out.stdout))
}

const PAGE: &str = "<!doctype html>\n<html lang=\"en\">\n<head>\n  <meta charset=\"utf-8\">\n  <title>502 Bad Gateway</title>\n</head>\n<body>\n<h1>Bad Gateway</h1>\n<p>The upstream server sent an invalid response: see https://example.com/help</p>\n</body>\n</html>\n";

#[test]
fn an_html_page_is_not_an_event_stream() {
    let page = file("page.html", PAGE.as_bytes());
    let name = page.display().to_string();
    for extra in [&[][..], &["--allow-empty"][..]] {
        let (error, summary) = not_an_event_stream(&check(&page, extra));
        assert_eq!(
            error,
            format!(
                "{name}: byte 0: event 1: error: not an event stream: 0 events; 11 of 11 lines are not SSE fields (first at line 1: `<!doctype html>`) [sse.not-an-event-stream]"
            ),
            "{extra:?}"
        );
        assert!(
            summary.starts_with(&format!("{name}: failed, 0 events, 1 error, ")),
            "{summary}"
        );
        assert!(summary.ends_with(" (not an event stream)\n"), "{summary}");
    }
}

#[test]
fn a_json_document_is_not_an_event_stream() {
    let json = file(
        "data.json",
        b"{\n  \"data\": [1, 2, 3],\n  \"event\": \"created\",\n  \"error\": null\n}\n",
    );
    let (error, _) = not_an_event_stream(&check(&json, &[]));
    assert!(
        error.contains(
            "not an event stream: 0 events; 5 of 5 lines are not SSE fields (first at line 1: `{`)"
        ),
        "{error}"
    );
    // One line of JSON (an API's error body) too; without a line ending, it is also cut.
    let body = file("error.json", br#"{"detail":"Session not found"}"#);
    let out = check(&body, &["--allow-empty"]);
    let (error, _) = not_an_event_stream(&out);
    assert!(
        error.contains(
            r#"0 events; 1 of 1 line is not an SSE field (line 1: `{"detail":"Session not found"}`)"#
        ),
        "{error}"
    );
    assert!(text(&out.stderr).contains("[sse.truncated]"));
}

#[test]
fn an_empty_capture_is_an_error_unless_allowed() {
    let empty = file("empty.sse", b"");
    let name = empty.display().to_string();
    let (error, summary) = not_an_event_stream(&check(&empty, &[]));
    assert_eq!(
        error,
        format!(
            "{name}: byte 0: event 1: error: not an event stream: the input is empty (--allow-empty accepts a capture without events) [sse.not-an-event-stream]"
        )
    );
    assert_eq!(
        summary,
        format!("{name}: failed, 0 events, 1 error, 0 warnings (not an event stream)\n")
    );
    let out = check(&empty, &["--allow-empty"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stderr), "");
    assert_eq!(
        text(&out.stdout),
        format!("{name}: ok, 0 events, 0 errors, 0 warnings\n")
    );
}

#[test]
fn a_keep_alive_only_capture_is_an_error_unless_allowed() {
    let pings = file("pings.sse", ": ping\n\n".repeat(5).as_bytes());
    let (error, _) = not_an_event_stream(&check(&pings, &[]));
    assert!(
        error.contains("not an event stream: 0 events, 5 comments only (--allow-empty accepts a capture without events)"),
        "{error}"
    );
    let out = check(&pings, &["--allow-empty", "--strict"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains(": ok, 0 events, 0 errors, 0 warnings\n"));
}

#[test]
fn a_normal_capture_still_passes() {
    let capture = file(
        "capture.sse",
        b"retry: 3000\n\n: ping\n\nid: 1\nevent: tick\ndata: 1\n\nid: 2\ndata: a\ndata: b\n\n: ping\n\n",
    );
    let name = capture.display().to_string();
    for extra in [&[][..], &["--allow-empty"][..], &["--strict"][..]] {
        let out = check(&capture, extra);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert_eq!(text(&out.stderr), "");
        assert_eq!(
            text(&out.stdout),
            format!("{name}: ok, 2 events, 0 errors, 0 warnings\n")
        );
    }
    // From stdin too.
    let out = common::run_with_stdin(&["check", "-"], b"data: x\n\n");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = common::run_with_stdin(&["check", "-"], PAGE.as_bytes());
    not_an_event_stream(&out);
}

#[test]
fn help_documents_the_rule_and_the_flag() {
    let out = ssekit().args(["check", "--help"]).output().unwrap();
    let help = text(&out.stdout);
    for needle in [
        "sse.not-an-event-stream",
        "--allow-empty",
        "more than half of its",
    ] {
        assert!(help.contains(needle), "{needle:?} not in\n{help}");
    }
}
