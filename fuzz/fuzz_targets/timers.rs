//! Arbitrary operation sequences at arbitrary (even decreasing) times into `Reconnect` and
//! `KeepAlive`: no panic, and no busy loop — after `handle_timeout(t)` with `t` at or past the
//! deadline, the next deadline is later than `t` or there is none.
#![no_main]

use arbitrary::Arbitrary;
use core::time::Duration;
use libfuzzer_sys::fuzz_target;
use ssekit::client::{Disconnect, Reconnect, ReconnectConfig, ResponseError};
use ssekit::server::KeepAlive;
use ssekit::time::Instant;
use ssekit::Event;

#[derive(Arbitrary, Debug)]
struct Setup {
    max_attempts: Option<u8>,
    idle_ms: Option<u16>,
    min_delay_ms: u16,
    retry_timeout_ms: u32,
    jitter: u8,
    seed: u64,
    keepalive_ms: u32,
}

#[derive(Arbitrary, Debug)]
enum Op {
    Timeout(u64),
    TimeoutAtDeadline,
    Response {
        now: u64,
        status: u16,
        event_stream: bool,
        encoding: u8,
    },
    Bytes(u64),
    Event {
        id: Option<u8>,
    },
    Retry(u64),
    Closed {
        now: u64,
        how: u8,
    },
    Stop,
    PollAction,
    KeepAliveWrite(u64),
    KeepAliveTimeout(u64),
    KeepAliveAtDeadline,
    KeepAliveTransmit,
}

fn check_reconnect_timeout(rc: &mut Reconnect, t: Instant) {
    let due = rc.poll_timeout().is_some_and(|d| t >= d);
    rc.handle_timeout(t);
    if due {
        // Actions scheduled by the timeout are taken first, as a driver does.
        while rc.poll_action().is_some() {}
        if let Some(next) = rc.poll_timeout() {
            assert!(
                next > t,
                "Reconnect busy loop: deadline {next:?} not after {t:?}"
            );
        }
    }
}

fn check_keepalive_timeout(ka: &mut KeepAlive, t: Instant) {
    let due = ka.poll_timeout().is_some_and(|d| t >= d);
    ka.handle_timeout(t);
    if due {
        if let Some(next) = ka.poll_timeout() {
            assert!(
                next > t,
                "KeepAlive busy loop: deadline {next:?} not after {t:?}"
            );
        }
    }
}

fuzz_target!(|input: (Setup, Vec<Op>)| {
    let (setup, ops) = input;
    let config = ReconnectConfig::default()
        .max_attempts(setup.max_attempts.map(u32::from))
        .idle_timeout(setup.idle_ms.map(|ms| Duration::from_millis(ms.into())))
        .min_delay(Duration::from_millis(setup.min_delay_ms.into()))
        .retry_timeout(Duration::from_millis(setup.retry_timeout_ms.into()))
        .jitter(setup.jitter)
        .jitter_seed(setup.seed);
    let mut rc = Reconnect::new(config);
    let mut ka = KeepAlive::new(
        Duration::from_millis(setup.keepalive_ms.into()),
        Instant::ZERO,
    );
    for op in ops.into_iter().take(256) {
        match op {
            Op::Timeout(t) => check_reconnect_timeout(&mut rc, Instant::from_millis(t)),
            Op::TimeoutAtDeadline => {
                if let Some(d) = rc.poll_timeout() {
                    check_reconnect_timeout(&mut rc, d);
                }
            }
            Op::Response {
                now,
                status,
                event_stream,
                encoding,
            } => {
                let content_type = event_stream.then_some("text/event-stream; charset=utf-8");
                let content_encoding = match encoding % 4 {
                    0 | 1 => None,
                    2 => Some("identity"),
                    _ => Some("gzip"),
                };
                let now = Instant::from_millis(now);
                let verdict = rc.handle_response_head(now, status, content_type, content_encoding);
                if verdict == Err(ResponseError::ContentEncoding) {
                    // Refused for good: no retry is scheduled.
                    assert_eq!(rc.poll_timeout(), None);
                }
            }
            Op::Bytes(t) => rc.handle_bytes(Instant::from_millis(t)),
            Op::Event { id } => {
                let mut builder = Event::builder().data("x");
                if let Some(id) = id {
                    builder = builder
                        .id(ssekit::Utf8Bytes::from(id.to_string()))
                        .expect("digits");
                }
                let _ = rc.handle_event(&builder.build());
            }
            Op::Retry(ms) => rc.handle_retry(ms),
            Op::Closed { now, how } => {
                let how = match how % 3 {
                    0 => Disconnect::Eof,
                    1 => Disconnect::Truncated,
                    _ => Disconnect::Error,
                };
                rc.handle_closed(Instant::from_millis(now), how);
            }
            Op::Stop => rc.stop(),
            Op::PollAction => {
                let _ = rc.poll_action();
            }
            Op::KeepAliveWrite(t) => ka.handle_write(Instant::from_millis(t)),
            Op::KeepAliveTimeout(t) => check_keepalive_timeout(&mut ka, Instant::from_millis(t)),
            Op::KeepAliveAtDeadline => {
                if let Some(d) = ka.poll_timeout() {
                    check_keepalive_timeout(&mut ka, d);
                }
            }
            Op::KeepAliveTransmit => {
                if let Some(bytes) = ka.poll_transmit() {
                    assert!(
                        bytes.starts_with(b":")
                            && bytes.ends_with(b"\n")
                            && !bytes.ends_with(b"\n\n")
                    );
                }
            }
        }
    }
});
