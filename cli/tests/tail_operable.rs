//! `ssekit tail` fails loudly and never repeats a request that changes something (issue 43):
//! bad URLs are usage errors with a hint. Every server here is a raw one on 127.0.0.1,
//! written for the test.

mod common;

use common::{assert_one_line_error, output_within, text};

#[test]
fn bad_urls_are_usage_errors_that_say_what_to_fix() {
    for (url, needle) in [
        (
            "localhost:8080/stream",
            "no scheme; add http:// (http://localhost:8080/stream)",
        ),
        ("127.0.0.1:8080", "no scheme; add http://"),
        ("http://127.0.0.1:99999/", "port out of range: 99999"),
        ("http://127.0.0.1:0/", "port out of range: 0"),
        (
            "ftp://127.0.0.1/x",
            "unsupported scheme ftp://; tail speaks http://",
        ),
        ("ws://127.0.0.1/x", "unsupported scheme ws://"),
        ("http:///stream", "no host"),
        (
            "http://127.0.0.1:port/",
            "the port \"port\" is not a number",
        ),
        ("http://a b/", "bad URL"),
    ] {
        let out = output_within(10, &["tail", url]);
        assert_eq!(out.status.code(), Some(2), "{url}: {}", text(&out.stderr));
        assert_one_line_error(&out, needle);
        assert!(out.stdout.is_empty(), "{url}: nothing started");
        let json = output_within(10, &["tail", url, "--json"]);
        assert_eq!(json.status.code(), Some(2));
        assert!(json.stdout.is_empty(), "{url}: no end line for bad usage");
    }
}
