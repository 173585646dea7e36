//! Session logic driven by a fake clock: plain `Instant` values, no sleeping, no sockets.

use core::time::Duration;

use bytes::Bytes;
use ssekit::client::{
    Action, CloseReason, Delivery, Disconnect, Failure, GiveUpReason, Reconnect, ReconnectConfig,
    ResponseError,
};
use ssekit::server::{Gap, KeepAlive, Open, ReplayBuffer, TaskConfig, TaskRegistry, TaskState};
use ssekit::time::Instant;
use ssekit::{Decoder, Encoder, Event, Frame};

const SSE: Option<&str> = Some("text/event-stream");

fn ms(n: u64) -> Instant {
    Instant::from_millis(n)
}

fn ev(id: &str) -> Event {
    Event::builder()
        .id(ssekit::Utf8Bytes::copy_from_str(id))
        .unwrap()
        .data("x")
        .build()
}

fn expect_connect(rc: &mut Reconnect) -> Vec<(String, String)> {
    match rc.poll_action() {
        Some(Action::Connect { headers, .. }) => headers
            .into_iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect(),
        other => panic!("expected Connect, got {other:?}"),
    }
}

/// Fails the outstanding attempt at `now` (a refused connection), returns the wait chosen and
/// fires the timer so the next attempt is due.
fn refused(rc: &mut Reconnect, now: Instant) -> u64 {
    expect_connect(rc);
    rc.handle_closed(now, Disconnect::Error);
    let wake = rc.poll_timeout().expect("a retry is scheduled");
    rc.handle_timeout(wake);
    wake.as_millis() - now.as_millis()
}

fn waits(rc: &mut Reconnect, n: usize) -> Vec<u64> {
    let mut now = Instant::ZERO;
    (0..n)
        .map(|_| {
            let w = refused(rc, now);
            now += Duration::from_millis(w);
            w
        })
        .collect()
}

#[test]
fn backoff_sequence_without_retry_field() {
    let config = ReconnectConfig::default()
        .retry_timeout(Duration::from_millis(1_000))
        .max_delay(Duration::from_millis(8_000))
        .max_attempts(None)
        .jitter(0);
    let mut rc = Reconnect::new(config);
    assert_eq!(
        waits(&mut rc, 6),
        [1_000, 2_000, 4_000, 8_000, 8_000, 8_000]
    );
    assert_eq!(rc.attempts(), 6);
}

#[test]
fn backoff_default_starts_at_three_seconds_as_browsers_do() {
    let mut rc = Reconnect::new(ReconnectConfig::default().max_attempts(None).jitter(0));
    assert_eq!(
        waits(&mut rc, 8),
        [3_000, 6_000, 12_000, 24_000, 48_000, 96_000, 192_000, 300_000]
    );
}

#[test]
fn backoff_sequence_with_retry_field_from_the_stream() {
    let config = ReconnectConfig::default()
        .retry_timeout(Duration::from_millis(1_000))
        .max_delay(Duration::from_millis(20_000))
        .jitter(0);
    let mut rc = Reconnect::new(config);
    expect_connect(&mut rc);
    rc.handle_response(ms(0), 200, SSE).unwrap();
    let mut dec = Decoder::new();
    dec.feed_slice(b"retry: 3000\ndata: x\n\n").unwrap();
    while let Some(frame) = dec.next_frame().unwrap() {
        match frame {
            Frame::Retry(millis) => rc.handle_retry(millis),
            Frame::Event(e) => assert_eq!(rc.handle_event(&e), Delivery::Deliver),
            _ => {}
        }
    }
    rc.handle_closed(ms(100), Disconnect::Eof);
    let first = rc.poll_timeout().unwrap();
    assert_eq!(first, ms(3_100)); // the server's reconnection time replaces retry_timeout
    rc.handle_timeout(first);
    let mut now = first;
    let mut seq = Vec::new();
    for _ in 0..4 {
        let w = refused(&mut rc, now);
        now += Duration::from_millis(w);
        seq.push(w);
    }
    // The clean end after an event was no failure: the first failure waits the server's
    // reconnection time, and only consecutive failures double it.
    assert_eq!(seq, [3_000, 6_000, 12_000, 20_000]);
}

#[test]
fn retry_zero_is_floored_and_still_backs_off() {
    let mut rc = Reconnect::new(ReconnectConfig::default().jitter(0));
    rc.handle_retry(0);
    assert_eq!(waits(&mut rc, 4), [100, 200, 400, 800]);
}

#[test]
fn a_server_retry_above_the_cap_is_still_honoured() {
    let config = ReconnectConfig::default()
        .max_delay(Duration::from_secs(10))
        .jitter(0);
    let mut rc = Reconnect::new(config);
    rc.handle_retry(60_000);
    assert_eq!(waits(&mut rc, 2), [60_000, 60_000]);
}

#[test]
fn a_configured_last_event_id_is_where_the_stream_resumes_not_a_pinned_header() {
    // A client resuming from an id it stored seeds it as a header; once the stream delivers
    // later ids, reconnects must send the newest, not the stored one.
    let config = ReconnectConfig::default()
        .jitter(0)
        .header("last-event-id", "5")
        .unwrap();
    let mut rc = Reconnect::new(config);
    assert_eq!(rc.last_event_id(), "5");
    let lei = |headers: &[(String, String)]| -> Vec<String> {
        headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case("Last-Event-ID"))
            .map(|(_, v)| v.clone())
            .collect()
    };
    assert_eq!(lei(&expect_connect(&mut rc)), ["5"]);
    rc.handle_response(ms(0), 200, SSE).unwrap();
    for id in ["6", "7", "8"] {
        rc.handle_event(&ev(id));
    }
    rc.handle_closed(ms(1_000), Disconnect::Eof);
    rc.handle_timeout(rc.poll_timeout().expect("a retry is scheduled"));
    assert_eq!(lei(&expect_connect(&mut rc)), ["8"]);
    // Set on a live machine, the header is the last event ID too.
    rc.set_header("Last-Event-ID", "2").unwrap();
    assert_eq!(rc.last_event_id(), "2");
    rc.handle_closed(ms(2_000), Disconnect::Error);
    rc.handle_timeout(rc.poll_timeout().expect("a retry is scheduled"));
    assert_eq!(lei(&expect_connect(&mut rc)), ["2"]);
}

#[test]
fn header_values_with_any_control_character_are_refused_and_such_an_id_is_not_sent() {
    use ssekit::client::HeaderError;
    for (value, position) in [("a\x01b", 1), ("ab\x7f", 2), ("\r", 0), ("x\0", 1)] {
        assert_eq!(
            ReconnectConfig::default().header("X-A", value).unwrap_err(),
            HeaderError::InvalidValue { position },
            "{value:?}"
        );
    }
    assert!(ReconnectConfig::default()
        .header("X-A", "tab\there é")
        .is_ok());
    // `a\x01b` is a valid SSE id, but no HTTP header value: the reconnect leaves it out
    // instead of failing the request.
    let mut rc = Reconnect::new(ReconnectConfig::default().jitter(0));
    expect_connect(&mut rc);
    rc.handle_response(ms(0), 200, SSE).unwrap();
    rc.handle_event(&ev("a\x01b"));
    assert_eq!(rc.last_event_id(), "a\x01b");
    rc.handle_closed(ms(1_000), Disconnect::Eof);
    rc.handle_timeout(rc.poll_timeout().expect("a retry is scheduled"));
    let headers = expect_connect(&mut rc);
    assert!(
        !headers.iter().any(|(n, _)| n == "Last-Event-ID"),
        "{headers:?}"
    );
}

#[test]
fn a_retry_past_the_end_of_time_waits_and_never_reconnects_at_once() {
    // `retry: 99999999999999999999` saturates to u64::MAX ms: the wait ends at the end of
    // time. Before, the overflowing deadline made every close reconnect at once, floor or not.
    let mut rc = Reconnect::new(ReconnectConfig::default());
    let now = ms(1_000);
    expect_connect(&mut rc);
    rc.handle_response(now, 200, SSE).unwrap();
    rc.handle_retry(u64::MAX);
    rc.handle_closed(now, Disconnect::Eof);
    assert_eq!(rc.poll_timeout(), Some(Instant::MAX));
    assert!(
        rc.poll_action().is_none(),
        "no connect before the wait ends"
    );
    rc.handle_timeout(now + Duration::from_secs(3_600));
    assert!(rc.poll_action().is_none(), "an hour later, still waiting");
    rc.handle_timeout(Instant::MAX);
    expect_connect(&mut rc);
}

#[test]
fn jitter_bounds_hold_and_depend_only_on_the_seed() {
    let config = |seed| {
        ReconnectConfig::default()
            .retry_timeout(Duration::from_millis(1_000))
            .max_delay(Duration::from_millis(16_000))
            .jitter(25)
            .jitter_seed(seed)
            .max_attempts(None)
    };
    let nominal = [1_000u64, 2_000, 4_000, 8_000, 16_000, 16_000];
    let mut distinct = std::collections::BTreeSet::new();
    for seed in 0..200 {
        let seq = waits(&mut Reconnect::new(config(seed)), nominal.len());
        // Up to a quarter above the nominal wait, but never past the 16 s cap: there the
        // window is the quarter below the cap.
        for (w, d) in seq.iter().zip(nominal) {
            let (lo, hi) = (d.min(16_000 - d / 4), (d + d / 4).min(16_000));
            assert!(
                *w >= lo && *w <= hi,
                "seed {seed}: {w} outside [{lo}, {hi}]"
            );
        }
        assert_eq!(seq, waits(&mut Reconnect::new(config(seed)), nominal.len()));
        distinct.insert(seq);
    }
    assert!(
        distinct.len() > 150,
        "jitter barely varies: {}",
        distinct.len()
    );
}

#[test]
fn no_content_204_stops_for_good() {
    let mut rc = Reconnect::new(ReconnectConfig::default());
    expect_connect(&mut rc);
    assert_eq!(
        rc.handle_response(ms(0), 204, None),
        Err(ResponseError::NoContent)
    );
    assert_eq!(
        rc.poll_action(),
        Some(Action::GiveUp(GiveUpReason::NoContent))
    );
    assert!(rc.is_stopped());
    // Nothing revives it: no timers, no actions, late inputs ignored.
    rc.handle_closed(ms(1), Disconnect::Error);
    rc.handle_timeout(Instant::MAX);
    assert_eq!(rc.poll_action(), None);
    assert_eq!(rc.poll_timeout(), None);
    assert_eq!(
        rc.handle_response(ms(2), 200, SSE),
        Err(ResponseError::NotExpected)
    );
}

#[test]
fn other_statuses_and_content_types_fail_like_eventsource() {
    for (status, ct, reason) in [
        (404, SSE, GiveUpReason::Status(404)),
        (401, SSE, GiveUpReason::Status(401)),
        (301, None, GiveUpReason::Status(301)),
        (200, Some("application/json"), GiveUpReason::ContentType),
        (200, None, GiveUpReason::ContentType),
    ] {
        let mut rc = Reconnect::new(ReconnectConfig::default());
        expect_connect(&mut rc);
        assert!(rc.handle_response(ms(0), status, ct).is_err());
        assert_eq!(rc.poll_action(), Some(Action::GiveUp(reason)));
        assert_eq!(rc.poll_timeout(), None);
    }
}

#[test]
fn server_errors_throttling_and_network_errors_are_retried() {
    for status in [500, 502, 503, 504, 408, 429] {
        let mut rc = Reconnect::new(ReconnectConfig::default());
        expect_connect(&mut rc);
        let err = rc.handle_response(ms(0), status, None).unwrap_err();
        assert!(err.is_retryable());
        assert!(rc.poll_timeout().is_some(), "{status}");
        assert_eq!(rc.poll_action(), None);
    }
    let mut rc = Reconnect::new(ReconnectConfig::default().reconnect(false));
    expect_connect(&mut rc);
    let _ = rc.handle_response(ms(0), 503, None);
    assert_eq!(
        rc.poll_action(),
        Some(Action::GiveUp(GiveUpReason::ReconnectDisabled {
            last: Failure::Status(503)
        }))
    );
}

#[test]
fn idle_timeout_reconnects_when_no_bytes_arrive() {
    let config = ReconnectConfig::default()
        .idle_timeout(Some(Duration::from_secs(30)))
        .retry_timeout(Duration::from_secs(1))
        .jitter(0);
    let mut rc = Reconnect::new(config);
    expect_connect(&mut rc);
    rc.handle_response(ms(0), 200, SSE).unwrap();
    // Keep-alive comments count as bytes: the deadline moves.
    for t in [10_000, 20_000, 30_000] {
        rc.handle_bytes(ms(t));
        rc.handle_timeout(ms(t));
        assert_eq!(rc.poll_action(), None);
        assert_eq!(rc.poll_timeout(), Some(ms(t + 30_000)));
    }
    rc.handle_timeout(ms(59_999));
    assert_eq!(rc.poll_action(), None);
    rc.handle_timeout(ms(60_000));
    assert_eq!(
        rc.poll_action(),
        Some(Action::Close(CloseReason::IdleTimeout))
    );
    assert!(!rc.is_open());
    assert_eq!(rc.poll_timeout(), Some(ms(61_000)));
    rc.handle_timeout(ms(61_000));
    assert!(matches!(rc.poll_action(), Some(Action::Connect { .. })));
}

#[test]
fn dedupe_across_reconnects_delivers_replayed_events_once() {
    let mut rc = Reconnect::new(ReconnectConfig::default().jitter(0));
    let mut dec = Decoder::new();
    let mut delivered = Vec::new();
    let feed = |rc: &mut Reconnect, dec: &mut Decoder, wire: &[u8], out: &mut Vec<String>| {
        dec.feed_slice(wire).unwrap();
        while let Some(frame) = dec.next_frame().unwrap() {
            if let Frame::Event(e) = frame
                && rc.handle_event(&e).is_delivered()
            {
                out.push(e.id().unwrap().to_owned());
            }
        }
    };
    expect_connect(&mut rc);
    rc.handle_response(ms(0), 200, SSE).unwrap();
    feed(
        &mut rc,
        &mut dec,
        b"id: 1\ndata: a\n\nid: 2\ndata: b\n\nid: 3\ndata: c",
        &mut delivered,
    );
    rc.handle_closed(ms(10), Disconnect::Error);
    dec.finish();
    dec.reset();
    let wake = rc.poll_timeout().unwrap();
    rc.handle_timeout(wake);
    let headers = expect_connect(&mut rc);
    assert!(headers.contains(&("Last-Event-ID".into(), "2".into())));
    rc.handle_response(wake, 200, SSE).unwrap();
    // An at-least-once server replays from a checkpoint before the client's id.
    feed(
        &mut rc,
        &mut dec,
        b"id: 1\ndata: a\n\nid: 2\ndata: b\n\nid: 3\ndata: c\n\nid: 4\ndata: d\n\n",
        &mut delivered,
    );
    assert_eq!(delivered, ["1", "2", "3", "4"]);
}

#[test]
fn event_type_filter_mirrors_utcp() {
    let mut rc = Reconnect::new(ReconnectConfig::default().event_type("price_update"));
    let wanted = Event::builder()
        .event("price_update")
        .unwrap()
        .data("1")
        .build();
    let other = Event::message("2");
    assert_eq!(rc.handle_event(&wanted), Delivery::Deliver);
    assert_eq!(rc.handle_event(&other), Delivery::Filtered);
}

#[test]
fn max_attempts_counts_retries_and_a_200_alone_does_not_reset_them() {
    let config = ReconnectConfig::default()
        .max_attempts(Some(3))
        .retry_timeout(Duration::from_millis(100))
        .jitter(0);
    let mut rc = Reconnect::new(config);
    let mut now = ms(0);
    for _ in 0..3 {
        // Each attempt is accepted but the stream is cut before any event: no progress.
        expect_connect(&mut rc);
        rc.handle_response(now, 200, SSE).unwrap();
        rc.handle_closed(now, Disconnect::Truncated);
        now = rc.poll_timeout().unwrap();
        rc.handle_timeout(now);
    }
    expect_connect(&mut rc);
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
fn backoff_resets_after_a_healthy_stream() {
    let config = ReconnectConfig::default()
        .retry_timeout(Duration::from_millis(1_000))
        .reset_after(Duration::from_secs(60))
        .jitter(0);
    let mut rc = Reconnect::new(config);
    assert_eq!(waits(&mut rc, 3), [1_000, 2_000, 4_000]);
    let start = ms(7_000);
    expect_connect(&mut rc);
    rc.handle_response(start, 200, SSE).unwrap();
    rc.handle_bytes(start + Duration::from_secs(59));
    rc.handle_closed(start + Duration::from_secs(59), Disconnect::Error);
    // 59 s is not healthy yet: the backoff keeps growing.
    let wake = rc.poll_timeout().unwrap();
    assert_eq!(
        wake - (start + Duration::from_secs(59)),
        Duration::from_millis(8_000)
    );
    rc.handle_timeout(wake);
    expect_connect(&mut rc);
    rc.handle_response(wake, 200, SSE).unwrap();
    rc.handle_bytes(wake + Duration::from_secs(60));
    rc.handle_closed(wake + Duration::from_secs(61), Disconnect::Error);
    assert_eq!(rc.attempts(), 1);
    assert_eq!(
        rc.poll_timeout(),
        Some(wake + Duration::from_secs(61) + Duration::from_millis(1_000))
    );
}

#[test]
fn headers_carry_accept_cache_control_and_last_event_id_once_known() {
    let mut rc = Reconnect::new(
        ReconnectConfig::default()
            .header("X-Session-ID", "abc-123")
            .unwrap(),
    );
    let first = expect_connect(&mut rc);
    let names: Vec<_> = first.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["Accept", "Cache-Control", "X-Session-ID"]);
    assert_eq!(first[0].1, "text/event-stream");
    assert_eq!(first[1].1, "no-cache");
    rc.handle_response(ms(0), 200, SSE).unwrap();
    rc.handle_event(&ev("42"));
    rc.set_header("X-Session-ID", "refreshed").unwrap();
    rc.handle_closed(ms(0), Disconnect::Eof);
    let wake = rc.poll_timeout().unwrap();
    rc.handle_timeout(wake);
    let again = expect_connect(&mut rc);
    assert!(again.contains(&("Last-Event-ID".into(), "42".into())));
    assert!(again.contains(&("X-Session-ID".into(), "refreshed".into())));
    // An empty id resets the last event ID: the header is no longer sent.
    rc.handle_event(&ev(""));
    assert_eq!(rc.last_event_id(), "");
}

#[test]
fn keep_alive_cadence() {
    let mut ka = KeepAlive::new(KeepAlive::ORS, ms(0));
    let mut pings = Vec::new();
    let writes = [3_000u64, 25_000, 26_000];
    // Step the clock 1 s at a time over a minute, writing events at `writes`.
    for t in (0..=60_000).step_by(1_000) {
        if writes.contains(&t) {
            ka.handle_write(ms(t));
        }
        if ka.poll_timeout().is_some_and(|d| d <= ms(t)) {
            ka.handle_timeout(ms(t));
        }
        if let Some(bytes) = ka.poll_transmit() {
            assert_eq!(&bytes[..], b": ping\n");
            pings.push(t);
        }
    }
    assert_eq!(pings, [13_000, 23_000, 36_000, 46_000, 56_000]);
    for interval in [KeepAlive::OPEN_RESPONSES, KeepAlive::AGENT_PLATFORM] {
        let mut ka = KeepAlive::new(interval, ms(0));
        assert_eq!(ka.poll_timeout(), Some(Instant::ZERO + interval));
        ka.handle_timeout(Instant::ZERO + interval);
        assert!(ka.poll_transmit().is_some());
    }
}

#[test]
fn replay_after_eviction_reports_a_gap() {
    let mut replay = ReplayBuffer::new(3, 1 << 20);
    for i in 1..=5 {
        replay.push(&ev(&i.to_string())).unwrap();
    }
    // 1 and 2 were evicted; 3..=5 remain.
    assert_eq!(replay.since("2").unwrap_err(), Gap::Evicted);
    assert_eq!(replay.since("1").unwrap_err(), Gap::Evicted);
    let replayed: Vec<Bytes> = replay.since("3").unwrap().collect();
    assert_eq!(replayed.concat(), b"id: 4\ndata: x\n\nid: 5\ndata: x\n\n");
    assert_eq!(replay.since("5").unwrap().len(), 0);
    assert_eq!(replay.evicted(), 2);
    let fresh = ReplayBuffer::new(3, 1 << 20);
    assert_eq!(fresh.since("9").unwrap_err(), Gap::Unknown);
}

#[test]
fn task_result_expires_at_exactly_ttl() {
    let ttl = Duration::from_secs(60);
    let mut tasks: TaskRegistry<Bytes> =
        TaskRegistry::new(TaskConfig::new([7; 32]).result_ttl(ttl));
    let Open::Started(c) = tasks.open(None, ms(0)) else {
        panic!()
    };
    let id = c.task_id().to_owned();
    tasks
        .push(&id, Bytes::from_static(b"event: end\ndata: {}\n\n"))
        .unwrap();
    tasks.finish(&id, ms(5_000)).unwrap();
    let expiry = ms(5_000) + ttl;
    assert_eq!(tasks.poll_timeout(), Some(expiry));
    // One millisecond before: still served, at once and whole.
    let Open::Resumed(mut cursor) = tasks.open(Some(&id), ms(64_999)) else {
        panic!()
    };
    let progress = tasks.read(&mut cursor).unwrap();
    assert_eq!(
        (progress.items.len(), progress.state),
        (1, TaskState::Finished)
    );
    tasks.handle_timeout(ms(64_999));
    assert_eq!(tasks.len(), 1);
    // At exactly finish + ttl: gone, even without a timer call first.
    assert_eq!(tasks.open(Some(&id), expiry), Open::Unknown);
    tasks.handle_timeout(expiry);
    assert!(tasks.is_empty());
    assert_eq!(tasks.poll_timeout(), None);
}

#[test]
fn reconnect_to_a_running_task_streams_what_was_produced_then_the_rest() {
    let mut tasks: TaskRegistry<Event> = TaskRegistry::new(TaskConfig::new([7; 32]));
    let Open::Started(mut first) = tasks.open(None, ms(0)) else {
        panic!()
    };
    let id = first.task_id().to_owned();
    let chunk = |d: &'static str| Event::builder().event("chunk").unwrap().data(d).build();
    tasks.push(&id, chunk("part 1")).unwrap();
    assert_eq!(tasks.read(&mut first).unwrap().items.len(), 1);
    tasks.push(&id, chunk("part 2")).unwrap();
    // The first connection drops here, before reading part 2.
    let Open::Resumed(mut second) = tasks.open(Some(&id), ms(1_000)) else {
        panic!()
    };
    let so_far: Vec<_> = tasks.read(&mut second).unwrap().items.to_vec();
    assert_eq!(so_far, [chunk("part 1"), chunk("part 2")]);
    let end = Event::builder().event("end").unwrap().data("{}").build();
    tasks.push(&id, end.clone()).unwrap();
    tasks.finish(&id, ms(2_000)).unwrap();
    let rest = tasks.read(&mut second).unwrap();
    assert_eq!(rest.items, [end]);
    assert_eq!(rest.state, TaskState::Finished);
    // The task_id event comes first on every stream of the task.
    let task_id = TaskRegistry::<Event>::task_id_event(&second).unwrap();
    let mut out = Vec::new();
    Encoder::new().encode(&task_id, &mut out).unwrap();
    assert_eq!(out, format!("event: task_id\ndata: {id}\n\n").into_bytes());
}

#[test]
fn unknown_task_id_yields_the_error_event_and_no_task() {
    let mut tasks: TaskRegistry<Bytes> = TaskRegistry::new(TaskConfig::new([7; 32]));
    assert_eq!(tasks.open(Some("no-such-task"), ms(0)), Open::Unknown);
    assert!(tasks.is_empty());
    let mut out = Vec::new();
    Encoder::new()
        .encode(&TaskRegistry::<Bytes>::unknown_task_event(), &mut out)
        .unwrap();
    assert_eq!(out, b"event: error\ndata: unknown task_id\n\n");
}

#[test]
fn repeated_ids_within_one_stream_are_not_suppressed() {
    // Some servers put one id on every delta of a message; without a reconnect nothing is a
    // replay, and after one only the replayed prefix is.
    let mut rc = Reconnect::new(ReconnectConfig::default());
    expect_connect(&mut rc);
    rc.handle_response(ms(0), 200, SSE).unwrap();
    for _ in 0..3 {
        assert_eq!(rc.handle_event(&ev("msg_1")), Delivery::Deliver);
    }
    rc.handle_closed(ms(0), Disconnect::Error);
    let wake = rc.poll_timeout().unwrap();
    rc.handle_timeout(wake);
    expect_connect(&mut rc);
    rc.handle_response(wake, 200, SSE).unwrap();
    assert_eq!(rc.handle_event(&ev("msg_1")), Delivery::Duplicate);
    assert_eq!(rc.handle_event(&ev("msg_2")), Delivery::Deliver);
    assert_eq!(rc.handle_event(&ev("msg_2")), Delivery::Deliver);
    assert_eq!(rc.handle_event(&ev("msg_1")), Delivery::Deliver);
}

#[test]
fn time_going_backwards_is_treated_as_the_latest_time_seen() {
    let config = ReconnectConfig::default()
        .idle_timeout(Some(Duration::from_secs(30)))
        .retry_timeout(Duration::from_secs(1))
        .jitter(0);
    let mut rc = Reconnect::new(config);
    expect_connect(&mut rc);
    rc.handle_response(ms(100_000), 200, SSE).unwrap();
    rc.handle_bytes(ms(5)); // an earlier clock reading: ignored, the deadline stays put
    assert_eq!(rc.poll_timeout(), Some(ms(130_000)));
    rc.handle_timeout(ms(0));
    assert_eq!(rc.poll_action(), None);
    rc.handle_closed(ms(0), Disconnect::Eof);
    // The retry is scheduled from the latest time seen, not from the stale reading.
    assert_eq!(rc.poll_timeout(), Some(ms(101_000)));
    rc.handle_timeout(ms(100_999));
    assert_eq!(rc.poll_action(), None);
    rc.handle_timeout(ms(101_000));
    assert!(matches!(rc.poll_action(), Some(Action::Connect { .. })));
}
