//! What the client session reports when a server refuses it: the status, the headers, the
//! `Content-Type` and the first 4 KiB of the body, once, in one message; retried statuses wait their
//! `Retry-After`. A fake clock and no sockets.

use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue};
use ssekit::client::ReconnectConfig;
use ssekit::Instant;
use ssekit_http::client::{Ended, Item, RequestSpec, Session, Step, Target};
use ssekit_http::Error;

fn session(config: ReconnectConfig) -> Session {
    RequestSpec::get("http://127.0.0.1:1/events", &["http"])
        .unwrap()
        .reconnect(config.jitter(0))
        .into_session(Target::Absolute)
}

fn head(pairs: &[(&str, &str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        map.append(
            http::header::HeaderName::from_bytes(name.as_bytes()).unwrap(),
            HeaderValue::from_str(value).unwrap(),
        );
    }
    map
}

/// What a session did, step by step, with a server that answers each connection with
/// `answer(n)`: (status, headers, body chunks, whether the body ends).
#[derive(Debug, Default)]
struct Run {
    items: Vec<Item>,
    closes: usize,
    connects: usize,
    end: Option<Option<Error>>,
    /// When each connection was made.
    at: Vec<Instant>,
}

type Answer = (u16, HeaderMap, Vec<&'static [u8]>, bool);

fn run(mut s: Session, answer: impl Fn(usize) -> Answer) -> Run {
    let mut run = Run::default();
    let mut now = Instant::ZERO;
    let mut pending: Vec<&'static [u8]> = Vec::new();
    let mut ends = false;
    let mut reading = false;
    for _ in 0..1_000 {
        match s.poll(now) {
            Step::Item(item) => run.items.push(item),
            Step::Connect { .. } => {
                run.at.push(now);
                let (status, headers, body, end) = answer(run.connects);
                run.connects += 1;
                reading = s.handle_head(now, status, &headers);
                pending = body;
                pending.reverse();
                ends = end;
            }
            Step::Close => {
                run.closes += 1;
                reading = false;
            }
            Step::Wait { read, deadline } => {
                if read && reading {
                    if let Some(chunk) = pending.pop() {
                        s.handle_data(now, Bytes::from_static(chunk));
                        continue;
                    }
                    if ends {
                        reading = false;
                        s.handle_end(now, None);
                        continue;
                    }
                }
                now = deadline.expect("nothing to wait for");
                s.handle_timeout(now);
            }
            Step::End(error) => {
                run.end = Some(error);
                return run;
            }
            other => panic!("{other:?}"),
        }
    }
    panic!("the session did not end: {run:?}");
}

#[test]
fn a_404_ends_at_once_with_its_json_body_in_the_error() {
    let r = run(session(ReconnectConfig::default()), |_| {
        (
            404,
            head(&[
                ("content-type", "application/json"),
                ("x-request-id", "req-7"),
            ]),
            vec![br#"{"detail": "Session not found"}"#],
            true,
        )
    });
    assert_eq!(r.connects, 1);
    let Some(Some(Error::Refused(refused))) = r.end else {
        panic!("{:?}", r.end)
    };
    assert_eq!(refused.status(), 404);
    assert_eq!(
        refused.header_map()["x-request-id"],
        "req-7",
        "every header is kept"
    );
    assert_eq!(refused.content_type(), Some("application/json"));
    assert_eq!(refused.body(), r#"{"detail": "Session not found"}"#);
    assert_eq!(
        refused.to_string(),
        r#"the server answered 404 Not Found: {"detail": "Session not found"}"#
    );
    // Told once: no `Disconnected` before the error that ends the stream.
    assert!(r.items.is_empty(), "{:?}", r.items);
}

#[test]
fn a_503_then_200_is_retried_and_each_refusal_is_told_once() {
    let r = run(session(ReconnectConfig::default()), |n| match n {
        0 => (
            503,
            head(&[("content-type", "text/plain")]),
            vec![b"overloaded, ", b"come back"],
            true,
        ),
        1 => (
            200,
            head(&[("content-type", "text/event-stream")]),
            vec![b"id: 1\ndata: a\n\n"],
            true,
        ),
        _ => (204, HeaderMap::new(), vec![], true),
    });
    assert_eq!(r.connects, 3);
    assert!(matches!(r.end, Some(None)), "{:?}", r.end);
    let refusals: Vec<_> = r
        .items
        .iter()
        .filter_map(|item| match item {
            Item::Disconnected(Ended::Refused(refused)) => Some(refused),
            _ => None,
        })
        .collect();
    assert_eq!(refusals.len(), 1);
    assert_eq!(refusals[0].status(), 503);
    assert_eq!(
        refusals[0].to_string(),
        "the server answered 503 Service Unavailable: overloaded, come back"
    );
    assert!(r
        .items
        .iter()
        .any(|item| matches!(item, Item::Event(e) if e.data() == "a")));
}

#[test]
fn a_503_for_ever_gives_up_within_max_attempts_with_the_body_in_the_error() {
    let r = run(
        session(ReconnectConfig::default().max_attempts(Some(3))),
        |_| (503, HeaderMap::new(), vec![b"overloaded"], true),
    );
    assert_eq!(r.connects, 4, "the first attempt and three retries");
    let Some(Some(error)) = r.end else {
        panic!("{:?}", r.end)
    };
    assert_eq!(
        error.to_string(),
        "stopped reconnecting after 3 retries in a row: the server answered 503 Service Unavailable: overloaded"
    );
    assert_eq!(error.status(), Some(503));
    let told = r
        .items
        .iter()
        .filter(|item| matches!(item, Item::Disconnected(_)))
        .count();
    assert_eq!(told, 3, "the last refusal is told by the error alone");
}

#[test]
fn retry_after_sets_the_wait_and_the_reconnecting_item_says_so() {
    let r = run(session(ReconnectConfig::default()), |n| match n {
        0 => (
            429,
            head(&[("retry-after", "12")]),
            vec![b"slow down"],
            true,
        ),
        _ => (204, HeaderMap::new(), vec![], true),
    });
    assert_eq!(r.at, [Instant::ZERO, Instant::from_secs(12)]);
    assert!(r.items.contains(&Item::Reconnecting {
        after: Duration::from_secs(12)
    }));
}

#[test]
fn only_the_first_4_kib_of_an_endless_body_is_read_then_the_connection_is_dropped() {
    static BIG: [u8; 3_000] = [b'x'; 3_000];
    let r = run(
        session(ReconnectConfig::default().max_attempts(Some(1))),
        |_| (500, HeaderMap::new(), vec![&BIG, &BIG, &BIG, &BIG], false),
    );
    // Each endless answer is dropped after 4 KiB (and a byte, to know it was more).
    assert_eq!(r.closes, 2);
    let error = r.end.flatten().expect("an error ends it");
    let Error::Refused(refused) = exhausted_last(&error) else {
        panic!("{error:?}")
    };
    assert_eq!(refused.body().len(), 4096);
    assert!(refused.is_truncated());
    assert!(refused.to_string().ends_with("x ..."), "{refused}");
}

#[test]
fn a_body_that_never_comes_is_waited_for_two_seconds_at_most() {
    let r = run(session(ReconnectConfig::default().reconnect(false)), |_| {
        (502, HeaderMap::new(), vec![], false)
    });
    let Some(Some(Error::Refused(refused))) = r.end else {
        panic!("{:?}", r.end)
    };
    assert_eq!(refused.body(), "");
    assert_eq!(refused.to_string(), "the server answered 502 Bad Gateway");
    assert_eq!(r.closes, 1, "the silent body is dropped");
}

#[test]
fn a_200_that_is_not_an_event_stream_shows_what_it_was() {
    let r = run(session(ReconnectConfig::default()), |_| {
        (
            200,
            head(&[("content-type", "text/html")]),
            vec![b"<html>\n  <p>Please log in</p>\n</html>"],
            true,
        )
    });
    let Some(Some(error)) = r.end else {
        panic!("{:?}", r.end)
    };
    assert_eq!(
        error.to_string(),
        "the server answered 200 OK with Content-Type text/html, not text/event-stream: <html> <p>Please log in</p> </html>"
    );
}

#[test]
fn invalid_utf8_in_a_refused_body_is_replaced_not_an_error() {
    let r = run(session(ReconnectConfig::default()), |_| {
        (403, HeaderMap::new(), vec![b"no \xff access"], true)
    });
    let Some(Some(Error::Refused(refused))) = r.end else {
        panic!("{:?}", r.end)
    };
    assert_eq!(refused.body(), "no \u{fffd} access");
}

fn exhausted_last(error: &Error) -> Error {
    match error {
        Error::Exhausted { last, .. } => exhausted_last(last),
        Error::Refused(refused) => Error::Refused(refused.clone()),
        other => panic!("{other:?}"),
    }
}
