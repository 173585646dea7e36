//! How `Reconnect` ends up after what a server does (and what its jitter seed changes),
//! driven by a fake clock: plain `Instant` values, no sleeping, no sockets.

use core::time::Duration;

use ssekit::client::{Action, Disconnect, Reconnect, ReconnectConfig};
use ssekit::time::Instant;

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
