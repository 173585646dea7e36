//! A subscriber of `ssekit serve`'s `/events` broadcast that fell further behind than the log
//! keeps (1024 events) is told so with a `gap` event before what is left: never restarted
//! silently. On both runtimes, over 127.0.0.1.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::serve_on_a_free_port;

/// One HTTP/1.1 exchange with `Connection: close`: the whole answer.
fn exchange(addr: &str, request: &str) -> String {
    let mut conn = TcpStream::connect(addr).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    conn.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    conn.read_to_string(&mut answer).unwrap();
    answer
}

fn publish(addr: &str, data: &str) -> String {
    let answer = exchange(
        addr,
        &format!(
            "POST /events HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{data}",
            data.len()
        ),
    );
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let body = &answer[answer.find("\r\n\r\n").unwrap() + 4..];
    let id: serde_json::Value = serde_json::from_str(body.trim()).unwrap();
    id["id"].as_str().unwrap().to_owned()
}

fn a_subscriber_behind_the_log_is_told_of_the_gap(runtime: &str) {
    let server = serve_on_a_free_port(&["--runtime", runtime]);
    let addr = server.1.trim_start_matches("http://").to_owned();
    let first = publish(&addr, "first");
    for n in 0..1100 {
        publish(&addr, &n.to_string());
    }
    let mut conn = TcpStream::connect(&addr).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        conn,
        "GET /events HTTP/1.1\r\nHost: x\r\nLast-Event-ID: {first}\r\n\r\n"
    )
    .unwrap();
    let mut seen = String::new();
    let mut buf = [0u8; 4096];
    while !seen.contains("data: 1099\n") {
        let n = conn.read(&mut buf).unwrap();
        assert!(n > 0, "the stream ended: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    let gap = format!("event: gap\ndata: {{\"missed\":null,\"last_event_id\":\"{first}\"}}\n\n");
    let at = seen
        .find(&gap)
        .unwrap_or_else(|| panic!("no gap event in {seen}"));
    let first_event = seen.find("\nid: ").unwrap_or(usize::MAX);
    assert!(at < first_event, "the gap comes before the events: {seen}");
}

#[test]
fn a_subscriber_behind_the_log_is_told_of_the_gap_on_hyper() {
    a_subscriber_behind_the_log_is_told_of_the_gap("hyper");
}

#[test]
fn a_subscriber_behind_the_log_is_told_of_the_gap_on_smol() {
    a_subscriber_behind_the_log_is_told_of_the_gap("smol");
}
