//! `ssekit tail`'s reconnect lifecycle against servers written here, on 127.0.0.1, as
//! production streams behave: servers that end each response on purpose (MCP-style polling,
//! proxies that cap a response's lifetime), overloaded servers, refusals with a reason, and
//! finite streams closed by a 204.

mod common;

use std::io::Write;
use std::net::TcpStream;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{
    assert_one_line_error, close_delimited, json_lines as lines, output_within, raw_server_for,
    ssekit, text, SSE,
};

/// The `Last-Event-ID` of a request head (lower-cased), as a number.
fn last_id(head: &str) -> Option<u64> {
    head.lines()
        .find_map(|l| l.strip_prefix("last-event-id:"))
        .and_then(|v| v.trim().parse().ok())
}

fn of<'a>(lines: &'a [serde_json::Value], kind: &str) -> Vec<&'a serde_json::Value> {
    lines.iter().filter(|l| l["type"] == kind).collect()
}

fn ids(lines: &[serde_json::Value]) -> Vec<String> {
    of(lines, "event")
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect()
}

fn numbers(range: std::ops::RangeInclusive<u64>) -> Vec<String> {
    range.map(|n| n.to_string()).collect()
}

#[test]
fn a_polling_server_is_followed_at_its_retry_time_and_never_given_up() {
    // One event per connection, `retry: 300`, then a clean end; the 13th request is told
    // to stop (204). Clean ends are no failures: --retries 1 never runs out.
    let (tx, times) = mpsc::channel();
    let url = raw_server_for(
        "/poll",
        13,
        Duration::from_secs(30),
        move |mut sock, head| {
            let _ = tx.send(Instant::now());
            match last_id(&head).unwrap_or(0) {
                12.. => close_delimited(&mut sock, "204 No Content", "", ""),
                n => close_delimited(
                    &mut sock,
                    "200 OK",
                    SSE,
                    &format!("retry: 300\nid: {}\ndata: poll\n\n", n + 1),
                ),
            }
            true
        },
    );
    let out = output_within(30, &["tail", &url, "--json", "--retries", "1"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lines = lines(&out.stdout);
    assert_eq!(ids(&lines), numbers(1..=12));
    let waits: Vec<u64> = of(&lines, "reconnecting")
        .iter()
        .map(|r| r["after_ms"].as_u64().unwrap())
        .collect();
    assert_eq!(waits.len(), 12, "{lines:?}");
    assert!(
        waits.iter().all(|w| (300..=360).contains(w)),
        "the server's retry with jitter, never growing: {waits:?}"
    );
    let times: Vec<Instant> = times.try_iter().collect();
    assert_eq!(times.len(), 13);
    for pair in times.windows(2) {
        assert!(pair[1] - pair[0] >= Duration::from_millis(290), "{times:?}");
    }
    let reasons: Vec<&str> = of(&lines, "disconnected")
        .iter()
        .map(|d| d["reason"].as_str().unwrap())
        .collect();
    assert_eq!(reasons, ["clean"; 12]);
}

#[test]
fn a_stream_cut_every_second_is_followed_through_eight_cuts_without_loss_or_repeats() {
    // Each connection sends two events after its Last-Event-ID, waits a second, and is cut
    // inside the third; the ninth request is told to stop.
    let url = raw_server_for("/cut", 9, Duration::from_secs(40), move |mut sock, head| {
        let after = last_id(&head).unwrap_or(0);
        if after >= 16 {
            close_delimited(&mut sock, "204 No Content", "", "");
            return true;
        }
        let events = format!(
            "id: {}\ndata: event\n\nid: {}\ndata: event\n\n",
            after + 1,
            after + 2
        );
        close_delimited(&mut sock, "200 OK", SSE, &events);
        std::thread::sleep(Duration::from_secs(1));
        sock.write_all(format!("id: {}\ndata: cut he", after + 3).as_bytes())
            .unwrap();
        true
    });
    let out = output_within(
        40,
        &[
            "tail",
            &url,
            "--json",
            "--retries",
            "1",
            "--reconnect-time",
            "200ms",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lines = lines(&out.stdout);
    assert_eq!(ids(&lines), numbers(1..=16), "nothing lost, nothing twice");
    let reasons: Vec<&str> = of(&lines, "disconnected")
        .iter()
        .map(|d| d["reason"].as_str().unwrap())
        .collect();
    assert_eq!(reasons, ["truncated"; 8]);
    let attempts: Vec<u64> = of(&lines, "connected")
        .iter()
        .map(|c| c["attempt"].as_u64().unwrap())
        .collect();
    // Every connection delivered events, so each cut is the first failure since progress.
    assert_eq!(attempts, [0, 1, 1, 1, 1, 1, 1, 1]);
}

#[test]
fn a_503_then_200_delivers_the_events_and_shows_what_the_server_said() {
    let mut connection = 0;
    let url = raw_server_for(
        "/busy",
        3,
        Duration::from_secs(20),
        move |mut sock, head| {
            connection += 1;
            if connection == 1 {
                close_delimited(
                    &mut sock,
                    "503 Service Unavailable",
                    "content-type: text/plain\r\nretry-after: 1\r\n",
                    "overloaded, come back",
                );
            } else if last_id(&head) == Some(2) {
                close_delimited(&mut sock, "204 No Content", "", "");
            } else {
                close_delimited(
                    &mut sock,
                    "200 OK",
                    SSE,
                    "id: 1\ndata: a\n\nid: 2\ndata: b\n\n",
                );
            }
            true
        },
    );
    let started = Instant::now();
    let out = output_within(20, &["tail", &url, "--reconnect-time", "100ms"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "message [1]: a\nmessage [2]: b\n");
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(
            "-- disconnected: the server answered 503 Service Unavailable: overloaded, come back\n"
        ),
        "{stderr}"
    );
    assert_eq!(
        stderr.matches("overloaded").count(),
        1,
        "told once: {stderr}"
    );
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "Retry-After: 1 was honoured"
    );
}

#[test]
fn a_503_for_ever_ends_within_the_retries_with_the_body_in_the_message() {
    let (tx, count) = mpsc::channel();
    let url = raw_server_for("/down", 10, Duration::from_secs(20), move |mut sock, _| {
        let _ = tx.send(());
        close_delimited(
            &mut sock,
            "503 Service Unavailable",
            "content-type: text/plain\r\n",
            "overloaded, come back",
        );
        true
    });
    let out = output_within(
        20,
        &["tail", &url, "--retries", "2", "--reconnect-time", "100ms"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert_one_line_error(
        &out,
        "gave up after 2 retries: the server answered 503 Service Unavailable: overloaded, come back",
    );
    assert_eq!(
        count.try_iter().count(),
        3,
        "the first attempt and two retries"
    );
    let stderr = text(&out.stderr);
    assert_eq!(
        stderr.matches("overloaded").count(),
        3,
        "each refusal told once: {stderr}"
    );
}

#[test]
fn a_404_ends_at_once_and_shows_its_body() {
    let (tx, count) = mpsc::channel();
    let url = raw_server_for("/gone", 5, Duration::from_secs(10), move |mut sock, _| {
        let _ = tx.send(());
        close_delimited(
            &mut sock,
            "404 Not Found",
            "content-type: application/json\r\n",
            r#"{"detail": "no such stream"}"#,
        );
        true
    });
    let out = output_within(10, &["tail", &url]);
    assert_eq!(out.status.code(), Some(1));
    assert_one_line_error(
        &out,
        r#"the server answered 404 Not Found: {"detail": "no such stream"}"#,
    );
    assert_eq!(text(&out.stderr).matches("no such stream").count(), 1);
    assert_eq!(count.try_iter().count(), 1, "no retry");
}

#[test]
fn a_finite_stream_then_204_exits_0_and_once_stops_at_the_first_clean_end() {
    let (tx, seen) = mpsc::channel();
    let finite = move |mut sock: TcpStream, head: String| {
        let _ = tx.send(last_id(&head));
        match last_id(&head) {
            Some(3) => close_delimited(&mut sock, "204 No Content", "", ""),
            _ => close_delimited(
                &mut sock,
                "200 OK",
                SSE,
                "retry: 100\nid: 1\ndata: a\n\nid: 2\ndata: b\n\nid: 3\ndata: c\n\n",
            ),
        }
        true
    };
    let url = raw_server_for("/finite", 2, Duration::from_secs(10), finite.clone());
    let out = output_within(10, &["tail", &url]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "message [1]: a\nmessage [2]: b\nmessage [3]: c\n"
    );
    assert_eq!(seen.try_iter().collect::<Vec<_>>(), [None, Some(3)]);

    let url = raw_server_for("/finite", 2, Duration::from_secs(10), finite);
    let out = output_within(10, &["tail", &url, "--once"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).lines().count(), 3);
    assert_eq!(seen.try_iter().count(), 1, "--once makes no second request");
}

#[test]
fn help_documents_the_lifecycle_and_the_exit_codes() {
    let out = ssekit().args(["tail", "--help"]).output().unwrap();
    let help = text(&out.stdout);
    for needle in [
        "clean end of the stream is no failure",
        "Exit codes:",
        "0    the stream ended as asked",
        "1    gave up",
        "2    bad usage",
        "130  interrupted",
        "--reconnect-time",
    ] {
        assert!(help.contains(needle), "{needle:?} not in\n{help}");
    }
    let bad = ssekit()
        .args(["tail", "http://127.0.0.1:1/", "-H", "no colon"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2), "a usage error");
}
