//! The reconnect policy, one test per row of the table in `ssekit::client`'s docs, with plain
//! numbers: a fake clock, no sockets. Each scenario is one a production client meets (MCP-style
//! polling, proxies that cap a response's lifetime, overloaded servers, calls that end).

use core::time::Duration;

use ssekit::client::{
    Action, Delivery, Disconnect, Failure, GiveUpReason, Reconnect, ReconnectConfig, ResponseError,
};
use ssekit::time::Instant;
use ssekit::{Decoder, Event, Frame};

const SSE: Option<&str> = Some("text/event-stream");

fn exact(config: ReconnectConfig) -> Reconnect {
    Reconnect::new(config.jitter(0))
}

fn event(id: &str) -> Event {
    Event::builder()
        .id(id.to_owned())
        .unwrap()
        .data("x")
        .build()
}

/// Takes the `Connect` that must be due, and returns its attempt number.
fn connect(rc: &mut Reconnect) -> u32 {
    match rc.poll_action() {
        Some(Action::Connect { attempt, .. }) => attempt,
        other => panic!("expected a connect, got {other:?}"),
    }
}

/// The wait scheduled after something happened at `now`, in ms; the timer then fires.
fn wait_after(rc: &mut Reconnect, now: Instant) -> u64 {
    let wake = rc.poll_timeout().expect("a reconnect is scheduled");
    rc.handle_timeout(wake);
    (wake - now).as_millis() as u64
}

/// One accepted connection at `now` that delivers `events` (by id) and then ends `how`;
/// returns the wait before the next one.
fn stream(rc: &mut Reconnect, now: Instant, events: &[&str], how: Disconnect) -> u64 {
    connect(rc);
    rc.handle_response(now, 200, SSE).unwrap();
    for id in events {
        rc.handle_bytes(now);
        rc.handle_event(&event(id));
    }
    rc.handle_closed(now, how);
    wait_after(rc, now)
}

#[test]
fn a_polling_server_is_followed_for_ever_at_its_retry_time() {
    // MCP-style SSE polling: one event per connection, `retry: 300`, then a clean end.
    let mut rc = exact(ReconnectConfig::default().max_attempts(Some(0)));
    let mut now = Instant::ZERO;
    let mut decoder = Decoder::new();
    for n in 1..=100u32 {
        let first = if n == 1 { 0 } else { 1 };
        assert_eq!(connect(&mut rc), first, "a clean end is no failure");
        rc.handle_response(now, 200, SSE).unwrap();
        decoder.reset();
        decoder
            .feed_slice(format!("retry: 300\nid: {n}\ndata: poll\n\n").as_bytes())
            .unwrap();
        while let Some(frame) = decoder.next_frame().unwrap() {
            if let Frame::Event(ev) = &frame {
                assert_eq!(rc.handle_event(ev), Delivery::Deliver);
            } else {
                rc.handle_frame(&frame);
            }
        }
        rc.handle_closed(now, Disconnect::Eof);
        let waited = wait_after(&mut rc, now);
        assert_eq!(waited, 300, "connection {n}: the server's retry, no growth");
        now += Duration::from_millis(waited);
    }
    assert_eq!(rc.last_event_id(), "100");
    assert_eq!(rc.attempts(), 0);
}

#[test]
fn clean_ends_without_events_are_no_failures_and_never_grow() {
    let mut rc = exact(ReconnectConfig::default().max_attempts(Some(0)));
    let mut now = Instant::ZERO;
    for _ in 0..50 {
        let waited = stream(&mut rc, now, &[], Disconnect::Eof);
        assert_eq!(waited, 3_000);
        now += Duration::from_millis(waited);
    }
    assert!(!rc.is_stopped());
}

#[test]
fn a_stream_cut_after_events_every_time_never_gives_up() {
    // A proxy that cuts every response after a second: each connection delivers events, so
    // each cut is the first failure since progress, and waits the reconnection time.
    let mut rc = exact(ReconnectConfig::default().max_attempts(Some(1)));
    let mut now = Instant::ZERO;
    for n in 0..20 {
        let ids = [format!("{n}a"), format!("{n}b")];
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        let waited = stream(&mut rc, now, &ids, Disconnect::Truncated);
        assert_eq!(waited, 3_000);
        assert_eq!(rc.attempts(), 1);
        now += Duration::from_millis(waited + 1_000);
    }
    assert!(!rc.is_stopped());
}

#[test]
fn cuts_before_any_event_back_off_and_give_up() {
    let mut rc = exact(ReconnectConfig::default().max_attempts(Some(3)));
    let mut now = Instant::ZERO;
    let mut waits = Vec::new();
    for _ in 0..3 {
        let waited = stream(&mut rc, now, &[], Disconnect::Truncated);
        waits.push(waited);
        now += Duration::from_millis(waited);
    }
    assert_eq!(waits, [3_000, 6_000, 12_000]);
    connect(&mut rc);
    rc.handle_closed(now, Disconnect::Error);
    assert_eq!(
        rc.poll_action(),
        Some(Action::GiveUp(GiveUpReason::MaxAttempts {
            attempts: 3,
            last: Failure::Network
        }))
    );
}

#[test]
fn replayed_events_are_no_progress() {
    // A server that replays what the client has, then cuts: nothing new, so it counts.
    let mut rc = exact(ReconnectConfig::default().max_attempts(Some(2)));
    let mut now = Instant::ZERO;
    let mut waits = Vec::new();
    for ids in [&["1", "2"][..], &["1", "2"], &["1", "2", "3"]] {
        let waited = stream(&mut rc, now, ids, Disconnect::Truncated);
        waits.push((waited, rc.attempts()));
        now += Duration::from_millis(waited);
    }
    // The third connection's new event after the replay is progress again.
    assert_eq!(waits, [(3_000, 1), (6_000, 2), (3_000, 1)]);
}

#[test]
fn an_advanced_last_event_id_without_data_is_progress() {
    let mut rc = exact(ReconnectConfig::default());
    stream(&mut rc, Instant::ZERO, &[], Disconnect::Error);
    stream(&mut rc, Instant::ZERO, &[], Disconnect::Error);
    assert_eq!(rc.attempts(), 2);
    connect(&mut rc);
    rc.handle_response(Instant::ZERO, 200, SSE).unwrap();
    let mut decoder =
        Decoder::with_config(ssekit::Config::default().mode(ssekit::decode::Mode::Raw));
    decoder.feed_slice(b"id: 9\n\n").unwrap();
    let frame = decoder.next_frame().unwrap().unwrap();
    assert!(matches!(frame, Frame::Dataless(_)));
    rc.handle_frame(&frame);
    assert_eq!(rc.attempts(), 0);
    assert_eq!(rc.last_event_id(), "9");
}

#[test]
fn overload_statuses_are_retried_from_the_first_attempt_and_honour_retry_after() {
    for status in [500, 502, 503, 504, 408, 429] {
        let mut rc = exact(ReconnectConfig::default());
        connect(&mut rc);
        let refused = rc.handle_response(Instant::ZERO, status, Some("text/plain"));
        assert_eq!(refused, Err(ResponseError::Status(status)));
        assert!(refused.unwrap_err().is_retryable());
        rc.handle_retry_after(Duration::from_secs(7));
        assert_eq!(wait_after(&mut rc, Instant::ZERO), 7_000, "{status}");
        assert_eq!(connect(&mut rc), 1);
        rc.handle_response(Instant::from_secs(7), 200, SSE).unwrap();
    }
}

#[test]
fn overload_for_ever_ends_within_max_attempts() {
    let mut rc = exact(ReconnectConfig::default().max_attempts(Some(5)));
    let mut now = Instant::ZERO;
    for attempt in 0..5 {
        assert_eq!(
            connect(&mut rc),
            attempt,
            "the number of failures before it"
        );
        assert!(rc.handle_response(now, 503, None).is_err());
        now += Duration::from_millis(wait_after(&mut rc, now));
    }
    assert_eq!(connect(&mut rc), 5);
    assert!(rc.handle_response(now, 503, None).is_err());
    assert_eq!(
        rc.poll_action(),
        Some(Action::GiveUp(GiveUpReason::MaxAttempts {
            attempts: 5,
            last: Failure::Status(503)
        }))
    );
}

#[test]
fn other_client_errors_end_at_once() {
    for status in [400, 401, 403, 404, 410, 301, 302] {
        let mut rc = exact(ReconnectConfig::default());
        connect(&mut rc);
        assert_eq!(
            rc.handle_response(Instant::ZERO, status, Some("application/json")),
            Err(ResponseError::Status(status))
        );
        assert_eq!(
            rc.poll_action(),
            Some(Action::GiveUp(GiveUpReason::Status(status)))
        );
        assert_eq!(rc.poll_timeout(), None);
    }
}

#[test]
fn no_content_ends_a_finite_stream() {
    let mut rc = exact(ReconnectConfig::default());
    stream(&mut rc, Instant::ZERO, &["1", "2", "3"], Disconnect::Eof);
    connect(&mut rc);
    assert_eq!(
        rc.handle_response(Instant::from_secs(3), 204, None),
        Err(ResponseError::NoContent)
    );
    assert_eq!(
        rc.poll_action(),
        Some(Action::GiveUp(GiveUpReason::NoContent))
    );
}

#[test]
fn a_call_ends_at_a_clean_end_and_resumes_after_a_cut() {
    let config = ReconnectConfig::default().stop_on_clean_end(true);
    let mut rc = exact(config);
    assert_eq!(
        stream(&mut rc, Instant::ZERO, &["1"], Disconnect::Truncated),
        3_000
    );
    connect(&mut rc);
    rc.handle_response(Instant::from_secs(3), 200, SSE).unwrap();
    rc.handle_event(&event("2"));
    rc.handle_closed(Instant::from_secs(4), Disconnect::Eof);
    assert_eq!(rc.poll_action(), Some(Action::GiveUp(GiveUpReason::Ended)));
    assert_eq!(rc.poll_timeout(), None);
}

#[test]
fn without_reconnecting_every_end_stops_and_says_how() {
    for (how, last) in [
        (Disconnect::Eof, Failure::Eof),
        (Disconnect::Truncated, Failure::Truncated),
        (Disconnect::Error, Failure::Network),
    ] {
        let mut rc = exact(ReconnectConfig::default().reconnect(false));
        connect(&mut rc);
        rc.handle_response(Instant::ZERO, 200, SSE).unwrap();
        rc.handle_closed(Instant::ZERO, how);
        assert_eq!(
            rc.poll_action(),
            Some(Action::GiveUp(GiveUpReason::ReconnectDisabled { last }))
        );
    }
}

#[test]
fn jitter_only_lengthens_a_clean_end_s_wait() {
    let mut rc = Reconnect::new(ReconnectConfig::default().jitter_seed(7));
    let mut now = Instant::ZERO;
    for _ in 0..200 {
        let waited = stream(&mut rc, now, &[], Disconnect::Eof);
        assert!((3_000..=3_600).contains(&waited), "{waited}");
        now += Duration::from_millis(waited);
    }
}
