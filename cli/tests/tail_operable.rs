//! `ssekit tail` fails loudly and never repeats a request that changes something (issue 43):
//! a POST is sent once unless `--follow`; `-v` shows every attempt and wait; the end of the
//! stream is told (text and `--json`); bad URLs are usage errors with a hint. Every server
//! here is a raw one on 127.0.0.1, written for the test.

mod common;

use std::net::TcpStream;
use std::sync::mpsc;
use std::time::Duration;

use common::{
    assert_one_line_error, close_delimited, json_lines as lines, output_within, raw_server_for,
    ssekit, text, SSE,
};

/// Reads the request's body (its `content-length`), so that closing the socket after the
/// response is a clean close, not a reset over unread bytes.
fn read_body(sock: &mut TcpStream, head: &str) {
    use std::io::Read;
    let length = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    sock.read_exact(&mut body).unwrap();
}

/// A server whose every response is one event and a clean end (`retry: 100`), until the
/// `stop_at`th request, answered 204. Each request's head goes to the channel.
fn finite_server(stop_at: usize) -> (String, mpsc::Receiver<String>) {
    let (tx, heads) = mpsc::channel();
    let mut served = 0;
    let url = raw_server_for(
        "/create",
        stop_at,
        Duration::from_secs(20),
        move |mut sock, head| {
            served += 1;
            read_body(&mut sock, &head);
            let _ = tx.send(head);
            if served >= stop_at {
                close_delimited(&mut sock, "204 No Content", "", "");
            } else {
                let body = format!("retry: 100\nid: {served}\ndata: created {served}\n\n");
                close_delimited(&mut sock, "200 OK", SSE, &body);
            }
            true
        },
    );
    (url, heads)
}

/// A URL on 127.0.0.1 where nothing listens (a port just freed).
fn refused_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/stream", listener.local_addr().unwrap());
    drop(listener);
    url
}

#[test]
fn a_post_that_ends_cleanly_is_sent_once_and_exits_0() {
    for how in [
        &["-X", "POST"][..],
        &["-d", r#"{"input":"hi"}"#][..],
        &["-X", "put", "-d", "{}"][..],
        &["-X", "DELETE"][..],
    ] {
        let (url, heads) = finite_server(3);
        let mut args = vec!["tail", url.as_str(), "--retries", "1"];
        args.extend(how);
        let out = output_within(20, &args);
        assert!(out.status.success(), "{how:?}: {}", text(&out.stderr));
        assert_eq!(text(&out.stdout), "message [1]: created 1\n", "{how:?}");
        let heads: Vec<String> = heads.try_iter().collect();
        assert_eq!(heads.len(), 1, "{how:?}: the request was sent again");
        let method = how
            .get(1)
            .filter(|_| how[0] == "-X")
            .map_or("POST".to_owned(), |m| m.to_ascii_uppercase());
        assert!(
            heads[0].starts_with(&method.to_ascii_lowercase()),
            "{heads:?}"
        );
        let stderr = text(&out.stderr);
        assert!(
            stderr.ends_with(&format!(
                "-- end: the server ended the stream cleanly; a {method} is sent once (--follow sends it again)\n"
            )),
            "{how:?}: {stderr}"
        );
    }
}

#[test]
fn a_post_sent_once_ends_with_a_clean_end_line_in_json() {
    let (url, heads) = finite_server(3);
    let out = output_within(20, &["tail", &url, "-X", "POST", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lines = lines(&out.stdout);
    let end = lines.last().unwrap();
    assert_eq!(end["type"], "end", "{lines:?}");
    assert_eq!(end["reason"], "clean");
    assert_eq!(
        lines.iter().filter(|l| l["type"] == "end").count(),
        1,
        "one end line: {lines:?}"
    );
    assert_eq!(heads.try_iter().count(), 1);
}

#[test]
fn follow_sends_the_post_again_after_each_clean_end() {
    let (url, heads) = finite_server(3);
    let out = output_within(
        20,
        &[
            "tail",
            &url,
            "-d",
            r#"{"n":1}"#,
            "--follow",
            "--retries",
            "1",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "message [1]: created 1\nmessage [2]: created 2\n"
    );
    let heads: Vec<String> = heads.try_iter().collect();
    assert_eq!(heads.len(), 3, "two streams and the 204: {heads:?}");
    assert!(heads.iter().all(|h| h.starts_with("post ")), "{heads:?}");
    assert!(
        text(&out.stderr).ends_with("-- 204: the server closed the stream for good\n"),
        "{}",
        text(&out.stderr)
    );
    // --follow means reconnecting: it contradicts --once.
    let out = ssekit()
        .args(["tail", &url, "-X", "POST", "--follow", "--once"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_204_is_told_in_text_and_in_json() {
    // After a stream, as the end of a finite stream.
    let (url, _) = finite_server(2);
    let out = output_within(20, &["tail", &url]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "message [1]: created 1\n");
    let stderr = text(&out.stderr);
    assert!(
        stderr.ends_with("\n-- 204: the server closed the stream for good\n"),
        "{stderr}"
    );
    // On the first request.
    let (url, _) = finite_server(1);
    let out = output_within(20, &["tail", &url, "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "{\"v\":1,\"type\":\"end\",\"reason\":\"no_content\",\"message\":\"204: the server closed the stream for good\"}\n"
    );
    let (url, _) = finite_server(2);
    let out = output_within(20, &["tail", &url, "--json"]);
    let lines = lines(&out.stdout);
    let kinds: Vec<&str> = lines.iter().map(|l| l["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "connected",
            "retry",
            "event",
            "disconnected",
            "reconnecting",
            "end"
        ]
    );
    assert_eq!(lines[5]["reason"], "no_content");
}

#[test]
fn a_give_up_is_told_with_the_right_number_of_retries_in_text_and_json() {
    let url = refused_url();
    let out = output_within(
        20,
        &["tail", &url, "--retries", "1", "--reconnect-time", "50ms"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert_one_line_error(&out, "gave up after 1 retry: ");
    assert!(
        !text(&out.stderr).contains("retries"),
        "{}",
        text(&out.stderr)
    );
    let out = output_within(
        20,
        &["tail", &url, "--retries", "2", "--reconnect-time", "50ms"],
    );
    assert_one_line_error(&out, "gave up after 2 retries: ");

    let out = output_within(
        20,
        &[
            "tail",
            &url,
            "--json",
            "--retries",
            "1",
            "--reconnect-time",
            "50ms",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let lines = lines(&out.stdout);
    let end = lines.last().unwrap();
    assert_eq!(end["type"], "end", "{lines:?}");
    assert_eq!(end["reason"], "gave_up");
    assert!(
        end["message"].as_str().unwrap().contains("gave up"),
        "{end}"
    );
    let failures = lines
        .iter()
        .filter(|l| l["type"] == "disconnected" && l["reason"] == "failed")
        .count();
    assert_eq!(failures, 2, "the first attempt and one retry: {lines:?}");
}

#[test]
fn verbose_shows_every_attempt_and_every_wait() {
    let url = refused_url();
    for runtime in ["hyper", "smol"] {
        let out = output_within(
            20,
            &[
                "tail",
                &url,
                "-v",
                "--retries",
                "2",
                "--reconnect-time",
                "50ms",
                "--runtime",
                runtime,
            ],
        );
        assert_eq!(out.status.code(), Some(1));
        let stderr = text(&out.stderr);
        let lines: Vec<&str> = stderr.lines().collect();
        let connecting = format!("-- connecting: GET {url}");
        assert_eq!(lines.len(), 9, "{runtime}: {stderr}");
        assert_eq!(lines[0], connecting, "{runtime}");
        assert!(lines[1].starts_with("-- disconnected: the connection failed: "));
        assert!(
            lines[1].to_ascii_lowercase().contains("refused"),
            "the cause: {stderr}"
        );
        assert!(lines[2].starts_with("-- reconnecting in "), "{stderr}");
        assert!(lines[2].ends_with("s (retry 1 of 2)"), "{stderr}");
        assert_eq!(lines[3], format!("{connecting} (retry 1 of 2)"));
        assert!(lines[5].ends_with("s (retry 2 of 2)"), "{stderr}");
        assert_eq!(lines[6], format!("{connecting} (retry 2 of 2)"));
        assert!(lines[8].starts_with("ssekit: error: gave up"), "{stderr}");
    }
    // Without -v, today's view: no request lines, no retry numbers.
    let out = output_within(
        20,
        &["tail", &url, "--retries", "1", "--reconnect-time", "50ms"],
    );
    let stderr = text(&out.stderr);
    assert!(!stderr.contains("-- connecting"), "{stderr}");
    assert!(!stderr.contains("(retry"), "{stderr}");
    assert!(stderr.contains("-- reconnecting in "), "{stderr}");
}

#[test]
fn verbose_says_a_wait_after_a_clean_end_is_no_failure_and_keeps_json_on_stdout() {
    let (url, _) = finite_server(2);
    let out = output_within(20, &["tail", &url, "-v", "--json", "--retries", "1"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    for needle in [
        &format!("-- connecting: GET {url}\n")[..],
        "-- connected\n",
        "-- disconnected: the server ended the stream cleanly\n",
        "(after a clean end, which is no failure)\n",
    ] {
        assert!(stderr.contains(needle), "{needle:?} not in {stderr}");
    }
    assert_eq!(stderr.matches("-- connecting: ").count(), 2, "{stderr}");
    // stdout stays JSON lines only.
    let lines = lines(&out.stdout);
    assert_eq!(lines.last().unwrap()["reason"], "no_content");
}

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
    // A header the library refuses is bad usage too.
    let out = output_within(
        10,
        &["tail", "http://127.0.0.1:1/", "-H", "X-Bad\u{1}: value"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}

#[test]
fn help_documents_follow_verbose_and_the_end() {
    let out = ssekit().args(["tail", "--help"]).output().unwrap();
    let help = text(&out.stdout);
    for needle in [
        "--follow",
        "-v, --verbose",
        "is sent once",
        "-- 204: the server closed the stream for good",
        "a bad URL included",
        "retry 2 of 5",
    ] {
        assert!(help.contains(needle), "{needle:?} not in\n{help}");
    }
}
