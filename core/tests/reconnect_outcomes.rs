//! How `Reconnect` ends up after what a server does (and what its jitter seed changes),
//! driven by a fake clock: plain `Instant` values, no sleeping, no sockets.

use core::time::Duration;

use ssekit::client::{Action, Disconnect, Failure, GiveUpReason, Reconnect, ReconnectConfig};
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
fn with_reconnecting_a_cut_stream_is_retried_as_a_clean_end_is() {
    let waits = |how| {
        let mut rc = Reconnect::new(
            ReconnectConfig::default()
                .retry_timeout(Duration::from_secs(2))
                .max_attempts(Some(1))
                .jitter(0),
        );
        expect_connect(&mut rc);
        rc.handle_response(secs(0), 200, SSE).unwrap();
        rc.handle_closed(secs(1), how);
        let wake = wait_out(&mut rc);
        assert_eq!(expect_connect(&mut rc), 1);
        rc.handle_closed(wake, how);
        let Some(Action::GiveUp(reason)) = rc.poll_action() else {
            panic!("no give-up")
        };
        (wake, reason)
    };
    assert_eq!(
        waits(Disconnect::Truncated),
        (
            secs(3),
            GiveUpReason::MaxAttempts {
                attempts: 1,
                last: Failure::Truncated
            }
        )
    );
    assert_eq!(waits(Disconnect::Eof).0, secs(3));
}

#[test]
fn the_jitter_seed_is_the_callers_when_set_and_a_fixed_one_otherwise() {
    let config = ReconnectConfig::default()
        .retry_timeout(Duration::from_secs(1))
        .jitter(100);
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
