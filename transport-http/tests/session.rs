//! The sans-IO client session that both transports drive: what it sends as `Last-Event-ID`
//! across reconnects, and what it reports when the decoder hits a limit or reads a block
//! without data. No sockets: the test plays the transport.

use bytes::Bytes;
use ssekit::client::ReconnectConfig;
use ssekit::decode::{Mode, OnLimit};
use ssekit::{Config, DecodeError, Instant, Limits};
use ssekit_http::client::{Ended, Item, RequestSpec, Session, Step, Target};

const SSE: Option<&str> = Some("text/event-stream");

fn session(spec: RequestSpec) -> Session {
    spec.into_session(Target::Absolute)
}

fn get() -> RequestSpec {
    RequestSpec::get("http://127.0.0.1:1/", &["http"])
        .unwrap()
        .reconnect(ReconnectConfig::default().jitter(0))
}

/// Polls until the next request, firing timers and collecting items on the way; returns the
/// request's `Last-Event-ID` and the time.
fn next_connect(
    s: &mut Session,
    mut now: Instant,
    items: &mut Vec<Item>,
) -> (Option<String>, Instant) {
    for _ in 0..50 {
        match s.poll(now) {
            Step::Connect { request, .. } => {
                let id = request
                    .headers()
                    .get("last-event-id")
                    .map(|v| String::from_utf8(v.as_bytes().to_vec()).unwrap());
                return (id, now);
            }
            Step::Wait { deadline, .. } => {
                now = deadline.expect("a reconnect is scheduled");
                s.handle_timeout(now);
            }
            Step::Item(item) => items.push(item),
            Step::Close => {}
            other => panic!("unexpected {other:?} after {items:?}"),
        }
    }
    panic!("no reconnect: {items:?}");
}

/// Polls out the items ready now (and the step after them).
fn items_now(s: &mut Session, now: Instant) -> Vec<Item> {
    let mut items = Vec::new();
    while let Step::Item(item) = s.poll(now) {
        items.push(item);
    }
    items
}

#[test]
fn an_id_set_by_a_block_without_data_is_sent_after_an_idle_timeout_as_after_an_end() {
    // `id: 5` alone dispatches nothing, but sets the browser's last event ID.
    let wire = Bytes::from_static(b"data: a\nid: 4\n\nid: 5\n\n");
    for idle in [false, true] {
        let config = ReconnectConfig::default()
            .jitter(0)
            .idle_timeout(Some(core::time::Duration::from_secs(30)));
        let mut s = session(get().reconnect(config));
        let mut items = Vec::new();
        let (first, now) = next_connect(&mut s, Instant::ZERO, &mut items);
        assert_eq!(first, None);
        assert!(s.handle_response(now, 200, SSE));
        s.handle_data(now, wire.clone());
        if !idle {
            s.handle_end(now, None);
        }
        // Idle: nothing more arrives, and the session closes the connection at 30 s.
        let (id, _) = next_connect(&mut s, now, &mut items);
        assert_eq!(id.as_deref(), Some("5"), "idle timeout: {idle}, {items:?}");
        let why = if idle {
            Ended::IdleTimeout
        } else {
            Ended::Clean
        };
        assert!(items.contains(&Item::Disconnected(why)), "{items:?}");
    }
}

#[test]
fn a_configured_last_event_id_is_the_starting_point_until_the_stream_sets_one() {
    let mut s = session(get().header("Last-Event-ID", "41").unwrap());
    let mut items = Vec::new();
    let (id, now) = next_connect(&mut s, Instant::ZERO, &mut items);
    assert_eq!(id.as_deref(), Some("41"));
    // A connection that delivers no id keeps it ...
    assert!(s.handle_response(now, 200, SSE));
    s.handle_data(now, Bytes::from_static(b"data: x\n\n"));
    s.handle_end(now, None);
    let (id, now) = next_connect(&mut s, now, &mut items);
    assert_eq!(id.as_deref(), Some("41"));
    // ... and one that does replaces it.
    assert!(s.handle_response(now, 200, SSE));
    s.handle_data(
        now,
        Bytes::from_static(b"id: 42\ndata: y\n\nid: 43\ndata: z\n\n"),
    );
    s.handle_end(now, None);
    let (id, _) = next_connect(&mut s, now, &mut items);
    assert_eq!(id.as_deref(), Some("43"));
}

#[test]
fn with_resync_an_event_over_the_limit_is_reported_and_the_stream_goes_on() {
    let limits = Limits::default().max_event(4);
    let config = Config::default().limits(limits).on_limit(OnLimit::Resync);
    let mut s = session(get().decoder(config));
    let mut items = Vec::new();
    let (_, now) = next_connect(&mut s, Instant::ZERO, &mut items);
    assert!(s.handle_response(now, 200, SSE));
    s.handle_data(now, Bytes::from_static(b"data: too long\n\ndata: ok\n\n"));
    let items = items_now(&mut s, now);
    let [Item::Connected { attempt: 0 }, Item::Skipped(skipped), Item::Event(ok)] = &items[..]
    else {
        panic!("{items:?}");
    };
    assert_eq!(
        *skipped,
        DecodeError::EventTooLarge {
            offset: 0,
            size: 8,
            limit: 4
        }
    );
    assert_eq!(ok.data(), "ok");
    assert!(matches!(s.poll(now), Step::Wait { .. }), "still connected");
}

#[test]
fn with_fail_stop_an_event_over_the_limit_ends_the_stream() {
    let limits = Limits::default().max_event(4);
    let mut s = session(get().decoder(Config::default().limits(limits)));
    let mut items = Vec::new();
    let (_, now) = next_connect(&mut s, Instant::ZERO, &mut items);
    assert!(s.handle_response(now, 200, SSE));
    s.handle_data(now, Bytes::from_static(b"data: too long\n\ndata: ok\n\n"));
    assert!(matches!(
        s.poll(now),
        Step::Item(Item::Connected { attempt: 0 })
    ));
    assert!(matches!(
        s.poll(now),
        Step::End(Some(ssekit_http::Error::Decode(
            DecodeError::EventTooLarge { .. }
        )))
    ));
}

#[test]
fn raw_mode_reports_blocks_without_data() {
    let config = Config::default().mode(Mode::Raw);
    let mut s = session(get().decoder(config));
    let mut items = Vec::new();
    let (_, now) = next_connect(&mut s, Instant::ZERO, &mut items);
    assert!(s.handle_response(now, 200, SSE));
    s.handle_data(
        now,
        Bytes::from_static(b"event: ping\nid: 7\n\ndata: x\n\n"),
    );
    let items = items_now(&mut s, now);
    let [Item::Connected { .. }, Item::Dataless(ping), Item::Event(x)] = &items[..] else {
        panic!("{items:?}");
    };
    assert_eq!((ping.event_type(), ping.id()), ("ping", Some("7")));
    assert_eq!(x.data(), "x");
    // In the default (browser) mode the block is not reported.
    let mut s = session(get());
    let (_, now) = next_connect(&mut s, Instant::ZERO, &mut Vec::new());
    assert!(s.handle_response(now, 200, SSE));
    s.handle_data(
        now,
        Bytes::from_static(b"event: ping\nid: 7\n\ndata: x\n\n"),
    );
    let items = items_now(&mut s, now);
    assert!(
        matches!(&items[..], [Item::Connected { .. }, Item::Event(_)]),
        "{items:?}"
    );
}
