//! How `Reconnect` ends up after what a server does (and what its jitter seed changes),
//! driven by a fake clock: plain `Instant` values, no sleeping, no sockets.

use core::time::Duration;

use ssekit::client::{
    is_identity_encoding, Action, CloseReason, Disconnect, Failure, GiveUpReason, Reconnect,
    ReconnectConfig, ResponseError,
};
use ssekit::time::Instant;

const SSE: Option<&str> = Some("text/event-stream");

fn secs(n: u64) -> Instant {
    Instant::from_secs(n)
}

fn expect_connect(rc: &mut Reconnect) -> u32 {
    match rc.poll_action() {
        Some(Action::Connect { attempt, .. }) => attempt,
        other => panic!("expected Connect, got {other:?}"),
    }
}

/// Fires the pending reconnect timer; returns when.
fn wait_out(rc: &mut Reconnect) -> Instant {
    let wake = rc.poll_timeout().expect("a retry is scheduled");
    rc.handle_timeout(wake);
    wake
}

#[test]
fn a_server_that_accepts_and_never_sends_runs_out_of_attempts_despite_a_long_idle_timeout() {
    // `ssekit tail URL --idle-timeout 2m --retries 5`: each stream stays open two minutes,
    // longer than reset_after (60 s), but nothing ever arrives on it.
    let config = ReconnectConfig::default()
        .retry_timeout(Duration::from_secs(1))
        .max_delay(Duration::from_secs(30))
        .max_attempts(Some(5))
        .idle_timeout(Some(Duration::from_secs(120)))
        .jitter_seed(1);
    let mut rc = Reconnect::new(config);
    let mut now = Instant::ZERO;
    let mut connects = 0;
    let given_up = loop {
        assert!(
            connects <= 6,
            "still reconnecting after {connects} silent streams"
        );
        match rc.poll_action() {
            Some(Action::Connect { .. }) => {
                connects += 1;
                rc.handle_response(now, 200, SSE).unwrap();
            }
            Some(Action::Close(CloseReason::IdleTimeout)) => {}
            Some(Action::GiveUp(reason)) => break reason,
            Some(other) => panic!("{other:?}"),
            None => now = wait_out(&mut rc),
        }
    };
    assert_eq!(
        given_up,
        GiveUpReason::MaxAttempts {
            attempts: 5,
            last: Failure::IdleTimeout
        }
    );
    assert_eq!(connects, 6, "the first connection and 5 retries");
}

#[test]
fn a_stream_that_received_bytes_for_reset_after_is_healthy_when_the_idle_timeout_ends_it() {
    let config = ReconnectConfig::default()
        .retry_timeout(Duration::from_secs(1))
        .idle_timeout(Some(Duration::from_secs(120)))
        .reset_after(Duration::from_secs(60))
        .jitter(0);
    // Bytes until `last_bytes`, then silence until the idle timeout closes the stream.
    let attempts_after = |last_bytes: u64| {
        let mut rc = Reconnect::new(config.clone());
        expect_connect(&mut rc);
        rc.handle_closed(secs(0), Disconnect::Error);
        let start = wait_out(&mut rc);
        assert_eq!(expect_connect(&mut rc), 1);
        rc.handle_response(start, 200, SSE).unwrap();
        for t in (0..=last_bytes).step_by(10) {
            rc.handle_bytes(start + Duration::from_secs(t));
        }
        let idle = rc.poll_timeout().unwrap();
        assert_eq!(idle, start + Duration::from_secs(last_bytes + 120));
        rc.handle_timeout(idle);
        assert_eq!(
            rc.poll_action(),
            Some(Action::Close(CloseReason::IdleTimeout))
        );
        rc.attempts()
    };
    // Alive 60 s: the count started over before this failure.
    assert_eq!(attempts_after(60), 1);
    // Alive 50 s, open 170 s: not healthy, the count goes on.
    assert_eq!(attempts_after(50), 2);
}

#[test]
fn a_stream_the_server_ends_is_alive_until_its_last_bytes() {
    // However the stream ends, it was alive until its last bytes: 60 s of them is healthy,
    // 60 s of silence before the server (or a proxy's read timeout) closes it is not. A
    // clean end counts no failure either way; a cut or an error counts one.
    for how in [Disconnect::Eof, Disconnect::Truncated, Disconnect::Error] {
        for (bytes_until, healthy) in [(Some(60), true), (Some(59), false), (None, false)] {
            let mut rc = Reconnect::new(
                ReconnectConfig::default()
                    .retry_timeout(Duration::from_secs(1))
                    .jitter(0),
            );
            expect_connect(&mut rc);
            rc.handle_closed(secs(0), Disconnect::Error);
            let start = wait_out(&mut rc);
            expect_connect(&mut rc);
            rc.handle_response(start, 200, SSE).unwrap();
            if let Some(at) = bytes_until {
                rc.handle_bytes(start + Duration::from_secs(at));
            }
            rc.handle_closed(start + Duration::from_secs(61), how);
            let failure = u32::from(how != Disconnect::Eof);
            let attempts = if healthy { failure } else { 1 + failure };
            assert_eq!(rc.attempts(), attempts, "{how:?} {bytes_until:?}");
        }
    }
}

#[test]
fn without_reconnecting_a_cut_stream_gives_up_as_truncated_and_a_clean_one_as_an_end() {
    for (how, last) in [
        (Disconnect::Eof, Failure::Eof),
        (Disconnect::Truncated, Failure::Truncated),
        (Disconnect::Error, Failure::Network),
    ] {
        let mut rc = Reconnect::new(ReconnectConfig::default().reconnect(false));
        expect_connect(&mut rc);
        rc.handle_response(secs(0), 200, SSE).unwrap();
        rc.handle_closed(secs(1), how);
        assert_eq!(
            rc.poll_action(),
            Some(Action::GiveUp(GiveUpReason::ReconnectDisabled { last }))
        );
        assert_eq!(rc.poll_action(), None);
        assert!(rc.is_stopped());
    }
    assert_eq!(
        Failure::Truncated.to_string(),
        "the stream was cut inside an event"
    );
}

#[test]
fn with_reconnecting_a_cut_stream_is_a_failure_and_a_clean_end_is_not() {
    let config = ReconnectConfig::default()
        .retry_timeout(Duration::from_secs(2))
        .max_attempts(Some(1))
        .jitter(0);
    // Two streams cut before any event: the second is one failure too many.
    let mut rc = Reconnect::new(config.clone());
    for _ in 0..2 {
        expect_connect(&mut rc);
        rc.handle_response(secs(0), 200, SSE).unwrap();
        rc.handle_closed(secs(1), Disconnect::Truncated);
        if rc.is_stopped() {
            break;
        }
        assert_eq!(wait_out(&mut rc), secs(3));
    }
    assert_eq!(
        rc.poll_action(),
        Some(Action::GiveUp(GiveUpReason::MaxAttempts {
            attempts: 1,
            last: Failure::Truncated
        }))
    );
    // Clean ends, as many as come: the same wait each time, and no give-up.
    let mut rc = Reconnect::new(config);
    let mut now = secs(0);
    for _ in 0..10 {
        expect_connect(&mut rc);
        rc.handle_response(now, 200, SSE).unwrap();
        rc.handle_closed(now + Duration::from_secs(1), Disconnect::Eof);
        let wake = wait_out(&mut rc);
        assert_eq!(wake, now + Duration::from_secs(3));
        now = wake;
    }
    assert!(!rc.is_stopped());
}

#[test]
fn a_compressed_event_stream_is_refused_for_good_even_when_reconnecting() {
    for coding in [
        "gzip",
        "br",
        "deflate",
        "GZIP",
        "identity, gzip",
        "x-custom",
    ] {
        let mut rc = Reconnect::new(ReconnectConfig::default().max_attempts(None));
        expect_connect(&mut rc);
        assert_eq!(
            rc.handle_response_head(secs(0), 200, SSE, Some(coding)),
            Err(ResponseError::ContentEncoding),
            "{coding}"
        );
        assert!(!ResponseError::ContentEncoding.is_retryable());
        assert_eq!(
            rc.poll_action(),
            Some(Action::GiveUp(GiveUpReason::ContentEncoding))
        );
        assert_eq!(rc.poll_action(), None);
        assert_eq!(rc.poll_timeout(), None, "no retry is scheduled");
    }
}

#[test]
fn identity_or_no_content_encoding_is_read_and_other_checks_come_first() {
    for coding in [None, Some("identity"), Some(" IDENTITY "), Some("")] {
        let mut rc = Reconnect::new(ReconnectConfig::default());
        expect_connect(&mut rc);
        assert_eq!(rc.handle_response_head(secs(0), 200, SSE, coding), Ok(()));
        assert!(rc.is_open());
    }
    // The status and the content type are what a response is refused for first.
    let mut rc = Reconnect::new(ReconnectConfig::default());
    expect_connect(&mut rc);
    let html = rc.handle_response_head(secs(0), 200, Some("text/html"), Some("gzip"));
    assert_eq!(html, Err(ResponseError::ContentType));
    let mut rc = Reconnect::new(ReconnectConfig::default());
    expect_connect(&mut rc);
    let busy = rc.handle_response_head(secs(0), 503, None, Some("gzip"));
    assert_eq!(busy, Err(ResponseError::Status(503)));
    assert!(rc.poll_timeout().is_some(), "a 503 is retried");
    assert!(is_identity_encoding("identity,identity"));
    assert!(!is_identity_encoding("identityx"));
}

#[test]
fn the_jitter_seed_is_the_callers_when_set_and_a_fixed_one_otherwise() {
    let config = ReconnectConfig::default()
        .retry_timeout(Duration::from_secs(1))
        .jitter(100)
        .max_attempts(None);
    assert_eq!(config.jitter_seed_value(), None);
    assert_eq!(config.clone().jitter_seed(9).jitter_seed_value(), Some(9));
    let waits = |config: ReconnectConfig| {
        let mut rc = Reconnect::new(config);
        let mut now = Instant::ZERO;
        (0..6)
            .map(|_| {
                expect_connect(&mut rc);
                rc.handle_closed(now, Disconnect::Error);
                let wake = wait_out(&mut rc);
                let wait = wake - now;
                now = wake;
                wait
            })
            .collect::<Vec<_>>()
    };
    // The core draws no randomness: without a seed, every machine waits the same (the
    // transports seed from the OS), and that is the fixed seed it always used.
    assert_eq!(waits(config.clone()), waits(config.clone()));
    assert_eq!(
        waits(config.clone()),
        waits(config.clone().jitter_seed(0x55E4_C17E_2026_0001))
    );
    // A seed that is set gives exactly its sequence, and another seed another one.
    assert_eq!(
        waits(config.clone().jitter_seed(42)),
        waits(config.clone().jitter_seed(42))
    );
    assert_ne!(
        waits(config.clone().jitter_seed(42)),
        waits(config.jitter_seed(43))
    );
}
