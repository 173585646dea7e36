//! What the client session (and the ORS client on it) does when a server misbehaves, and
//! how its clients draw their reconnect jitter: played with a fake clock and no sockets (the
//! ORS test only connects to a closed port on 127.0.0.1).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue};
use ssekit::client::ReconnectConfig;
use ssekit::Instant;
use ssekit_http::client::{only_events, Ended, Item, RequestSpec, Step, Target};
use ssekit_http::Error;

const SSE: Option<&str> = Some("text/event-stream");

fn get() -> RequestSpec {
    RequestSpec::get("http://127.0.0.1:1/events", &["http"]).unwrap()
}

/// The first `n` reconnect waits of a session whose every connection is refused.
fn refused_waits(spec: RequestSpec, n: usize) -> Vec<Duration> {
    let mut s = spec.into_session(Target::Absolute);
    let mut now = Instant::ZERO;
    let mut waits = Vec::new();
    while waits.len() < n {
        match s.poll(now) {
            Step::Connect { .. } => {
                s.handle_connect_error(now, std::io::Error::other("refused").into());
            }
            Step::Item(Item::Reconnecting { after }) => waits.push(after),
            Step::Item(_) => {}
            Step::Wait { deadline, .. } => {
                now = deadline.expect("a retry is scheduled");
                s.handle_timeout(now);
            }
            other => panic!("{other:?}"),
        }
    }
    waits
}

/// Long waits with full jitter: 3.6 million possible first waits, so two clients drawing
/// from their own seeds agree on all three only by a chance too small to matter.
fn wide_jitter() -> ReconnectConfig {
    ReconnectConfig::default()
        .retry_timeout(Duration::from_secs(3_600))
        .max_delay(Duration::from_secs(3_600))
        .jitter(100)
}

#[test]
fn sessions_built_the_default_way_draw_their_own_jitter() {
    let a = refused_waits(get(), 3);
    let b = refused_waits(get(), 3);
    assert_ne!(a, b, "two clients reconnect in lockstep");
    let a = refused_waits(get().reconnect(wide_jitter()), 3);
    let b = refused_waits(get().reconnect(wide_jitter()), 3);
    assert_ne!(a, b, "two clients reconnect in lockstep");
    for wait in a {
        assert!(wait >= Duration::from_secs(3_600) && wait <= Duration::from_secs(7_200));
    }
}

#[test]
fn a_jitter_seed_the_caller_sets_gives_exactly_its_delays() {
    let seeded = || get().reconnect(wide_jitter().jitter_seed(7));
    assert_eq!(refused_waits(seeded(), 4), refused_waits(seeded(), 4));
    // The same delays as the core machine with that seed draws.
    let mut rc = ssekit::client::Reconnect::new(wide_jitter().jitter_seed(7));
    let mut now = Instant::ZERO;
    let mut core = Vec::new();
    for _ in 0..4 {
        let _connect = rc.poll_action();
        rc.handle_closed(now, ssekit::client::Disconnect::Error);
        let wake = rc.poll_timeout().unwrap();
        core.push(wake - now);
        rc.handle_timeout(wake);
        now = wake;
    }
    assert_eq!(refused_waits(seeded(), 4), core);
}

#[test]
fn a_silent_stream_past_the_idle_timeout_does_not_reset_the_attempt_count() {
    // `ssekit tail URL --idle-timeout 2m --retries 5` against a server that accepts every
    // connection and never sends a byte.
    let spec = get().reconnect(
        ReconnectConfig::default()
            .retry_timeout(Duration::from_secs(1))
            .max_delay(Duration::from_secs(30))
            .max_attempts(Some(5))
            .idle_timeout(Some(Duration::from_secs(120))),
    );
    let mut s = spec.into_session(Target::Absolute);
    let mut now = Instant::ZERO;
    let mut connects = 0;
    let end = loop {
        assert!(connects <= 6, "{connects} silent connections and no end");
        match s.poll(now) {
            Step::Connect { attempt, .. } => {
                assert_eq!(attempt, connects);
                connects += 1;
                assert!(s.handle_response(now, 200, SSE));
            }
            Step::Item(_) | Step::Close => {}
            Step::Wait { deadline, .. } => {
                now = deadline.expect("a timer is set");
                s.handle_timeout(now);
            }
            Step::End(end) => break end,
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(connects, 6, "the first connection and 5 retries");
    assert!(
        matches!(
            end,
            Some(Error::GaveUp(ssekit::client::GiveUpReason::MaxAttempts {
                attempts: 5,
                ..
            }))
        ),
        "{end:?}"
    );
}

#[test]
fn an_empty_body_frame_is_no_sign_of_life() {
    let config = ReconnectConfig::default()
        .idle_timeout(Some(Duration::from_secs(30)))
        .jitter(0);
    let mut s = get().reconnect(config).into_session(Target::Absolute);
    let _connect = s.poll(Instant::ZERO);
    assert!(s.handle_response(Instant::ZERO, 200, SSE));
    s.handle_data(Instant::from_secs(20), Bytes::new());
    assert!(matches!(s.poll(Instant::from_secs(20)), Step::Item(_)));
    let Step::Wait { deadline, .. } = s.poll(Instant::from_secs(20)) else {
        panic!()
    };
    assert_eq!(deadline, Some(Instant::from_secs(30)));
}

/// `events()` of a session without reconnecting whose one response body is `body`: what
/// `only_events` keeps of each item, then the end.
fn events_without_reconnecting(body: &'static [u8]) -> Vec<Option<Result<String, String>>> {
    let mut s = get()
        .reconnect(ReconnectConfig::default().reconnect(false))
        .into_session(Target::Absolute);
    let now = Instant::ZERO;
    let mut out = Vec::new();
    let mut fed = false;
    loop {
        let item = match s.poll(now) {
            Step::Connect { .. } => {
                assert!(s.handle_response(now, 200, SSE));
                continue;
            }
            Step::Wait { .. } if !fed => {
                fed = true;
                s.handle_data(now, Bytes::from_static(body));
                s.handle_end(now, None);
                continue;
            }
            Step::Item(item) => Ok(item),
            Step::End(None) => break,
            Step::End(Some(e)) => Err(e),
            other => panic!("{other:?}"),
        };
        let last = item.is_err();
        if let Some(kept) = only_events(item) {
            out.push(Some(kept.map(|ev| ev.data().to_owned()).map_err(
                |e| match e {
                    Error::Truncated => "truncated".to_owned(),
                    other => other.to_string(),
                },
            )));
        }
        if last {
            // The stream's last item: nothing follows an error.
            assert!(matches!(s.poll(now), Step::End(None)));
            break;
        }
    }
    out.push(None);
    out
}

#[test]
fn without_reconnecting_a_cut_stream_ends_with_an_error_and_a_clean_one_without() {
    assert_eq!(
        events_without_reconnecting(b"data: {\"a\":1}\n\n"),
        [Some(Ok("{\"a\":1}".to_owned())), None]
    );
    assert_eq!(
        events_without_reconnecting(b"data: {\"a\":1}\n\ndata: {\"a\":2, \"b\": [1,2"),
        [
            Some(Ok("{\"a\":1}".to_owned())),
            Some(Err("truncated".to_owned())),
            None
        ]
    );
    // A cut inside a comment line is a cut too.
    assert_eq!(
        events_without_reconnecting(b"data: x\n\n: keep-al"),
        [
            Some(Ok("x".to_owned())),
            Some(Err("truncated".to_owned())),
            None
        ]
    );
}

#[test]
fn with_reconnecting_a_cut_stream_reconnects() {
    let mut s = get()
        .reconnect(ReconnectConfig::default().jitter(0))
        .into_session(Target::Absolute);
    let now = Instant::ZERO;
    let _connect = s.poll(now);
    assert!(s.handle_response(now, 200, SSE));
    s.handle_data(now, Bytes::from_static(b"data: whole\n\ndata: cu"));
    s.handle_end(now, None);
    let mut items = Vec::new();
    while let Step::Item(item) = s.poll(now) {
        items.push(item);
    }
    assert!(
        matches!(
            &items[..],
            [
                Item::Connected { attempt: 0 },
                Item::Event(_),
                Item::Disconnected(Ended::Truncated),
                Item::Reconnecting { .. }
            ]
        ),
        "{items:?}"
    );
    let Step::Wait { deadline, .. } = s.poll(now) else {
        panic!()
    };
    let later = deadline.unwrap();
    s.handle_timeout(later);
    assert!(matches!(s.poll(later), Step::Connect { attempt: 1, .. }));
}

#[test]
fn requests_ask_for_identity_encoding_unless_the_caller_asks_otherwise() {
    let accept_encoding = |spec: RequestSpec| {
        let mut s = spec.into_session(Target::Origin);
        let Step::Connect { request, .. } = s.poll(Instant::ZERO) else {
            panic!()
        };
        let values: Vec<_> = request
            .headers()
            .get_all("accept-encoding")
            .iter()
            .map(|v| v.to_str().unwrap().to_owned())
            .collect();
        values
    };
    assert_eq!(accept_encoding(get()), ["identity"]);
    let post = RequestSpec::post("http://127.0.0.1:1/call", "{}", &["http"]).unwrap();
    assert_eq!(accept_encoding(post), ["identity"]);
    let asked = get().header("Accept-Encoding", "gzip").unwrap();
    assert_eq!(accept_encoding(asked), ["gzip"]);
    let hooked = get().on_connect(|req| {
        req.headers_mut()
            .insert("accept-encoding", HeaderValue::from_static("br"));
    });
    assert_eq!(accept_encoding(hooked), ["br"]);
}

/// A session (reconnecting, without an attempt limit) answered 200 `text/event-stream`
/// with these `Content-Encoding` fields: its end and whether it connected again.
fn answered_with(codings: &[&'static str]) -> (Vec<Item>, Option<Error>, bool) {
    let mut s = get()
        .reconnect(ReconnectConfig::default().jitter(0))
        .into_session(Target::Absolute);
    let now = Instant::ZERO;
    let _connect = s.poll(now);
    let mut head = HeaderMap::new();
    head.insert(
        "content-type",
        HeaderValue::from_static("text/event-stream"),
    );
    for coding in codings {
        head.append("content-encoding", HeaderValue::from_static(coding));
    }
    let accepted = s.handle_head(now, 200, &head);
    let mut items = Vec::new();
    loop {
        match s.poll(now) {
            Step::Item(item) => items.push(item),
            Step::End(end) => return (items, end, false),
            Step::Wait { .. } if accepted => return (items, None, false),
            Step::Wait { deadline, .. } => {
                s.handle_timeout(deadline.expect("a retry"));
                let again = matches!(s.poll(deadline.unwrap()), Step::Connect { .. });
                return (items, None, again);
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn a_compressed_response_ends_the_stream_with_a_typed_error_and_no_retry() {
    for (codings, named) in [
        (&["gzip"][..], "gzip"),
        (&["br"][..], "br"),
        (&["identity", "gzip"][..], "identity, gzip"),
    ] {
        let (items, end, again) = answered_with(codings);
        assert!(items.is_empty(), "{items:?}");
        assert!(!again);
        let Some(Error::ContentEncoding(coding)) = end else {
            panic!("{codings:?}: {end:?}")
        };
        assert_eq!(coding, named);
    }
    // Identity is read.
    for codings in [&[][..], &["identity"][..]] {
        let (items, end, again) = answered_with(codings);
        assert!(matches!(items[..], [Item::Connected { attempt: 0 }]));
        assert!(end.is_none() && !again);
    }
}

/// The wait before the first retry of an ORS call with `policy` (`None`: the default) whose
/// connections are refused (the port of a listener already closed).
fn first_ors_retry(policy: Option<ReconnectConfig>) -> Duration {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut ors = ssekit_smol::ors::Client::new(&format!("http://127.0.0.1:{port}")).unwrap();
    if let Some(policy) = policy {
        ors = ors.reconnect(policy);
    }
    let waits = Arc::new(Mutex::new(Vec::new()));
    let seen = waits.clone();
    let call = async move {
        let _ = ors
            .call_tool_traced(
                "env",
                "sid",
                "tool",
                serde_json::json!({}),
                Default::default(),
                move |trace| {
                    if let ssekit_http::ors::Trace::Reconnecting { after } = trace {
                        seen.lock().unwrap().push(after);
                    }
                },
            )
            .await;
        panic!("the call ended before its first retry")
    };
    let first = async {
        for _ in 0..500 {
            if let Some(wait) = waits.lock().unwrap().first() {
                return *wait;
            }
            smol::Timer::after(Duration::from_millis(10)).await;
        }
        panic!("no retry within 5 s")
    };
    smol::block_on(futures_lite::future::or(first, call))
}

#[test]
fn ors_calls_draw_their_own_jitter_unless_a_seed_is_set() {
    let wide = ReconnectConfig::ors()
        .retry_timeout(Duration::from_secs(3_600))
        .max_delay(Duration::from_secs(3_600))
        .jitter(100);
    let a = first_ors_retry(Some(wide.clone()));
    let b = first_ors_retry(Some(wide.clone()));
    assert_ne!(a, b, "two calls retry in lockstep");
    let seeded = wide.jitter_seed(11);
    assert_eq!(
        first_ors_retry(Some(seeded.clone())),
        first_ors_retry(Some(seeded))
    );
    // The default policy too (500 ms with up to 100 ms of jitter): 5 calls all alike would
    // be a chance of 1 in 10^8.
    let waits: std::collections::BTreeSet<_> = (0..5).map(|_| first_ors_retry(None)).collect();
    assert!(waits.len() > 1, "{waits:?}");
}

/// The attempt an ORS call reports when it connects the second time, after its first
/// stream delivered events until `delivered_until` and was cut at 61 s (two refused
/// connections before it).
fn ors_attempt_after_a_cut(delivered_until: Option<u64>) -> u32 {
    use ssekit_http::ors::{Call, CallStep, Flow, Trace};
    let config = ReconnectConfig::default()
        .retry_timeout(Duration::from_secs(1))
        .reset_after(Duration::from_secs(60))
        .jitter(0);
    let mut call = Call::new("t", serde_json::json!({}), config, Default::default());
    let mut attempts = Vec::new();
    let mut trace = |t: Trace| {
        if let Trace::Connected { attempt, .. } = t {
            attempts.push(attempt);
        }
    };
    let mut now = Instant::ZERO;
    let connect = |call: &mut Call, now: &mut Instant| loop {
        match call.poll(*now, &mut |_| {}) {
            CallStep::Connect { .. } => return,
            CallStep::Wait { until } => {
                *now = until;
                call.handle_timeout(until);
            }
            other => panic!("the call did not connect: {other:?}"),
        }
    };
    for _ in 0..2 {
        connect(&mut call, &mut now);
        call.handle_closed(now);
    }
    connect(&mut call, &mut now);
    let start = now;
    call.handle_item(start, Ok(Item::Connected { attempt: 0 }), &mut trace);
    if let Some(at) = delivered_until {
        let task = ssekit::Event::builder()
            .event("task_id")
            .unwrap()
            .data("t1")
            .build();
        let at = start + Duration::from_secs(at);
        let flow = call.handle_item(at, Ok(Item::Event(task)), &mut trace);
        assert!(matches!(flow, Flow::Continue));
    }
    now = start + Duration::from_secs(61);
    let cut = Ok(Item::Disconnected(Ended::Truncated));
    assert!(matches!(
        call.handle_item(now, cut, &mut trace),
        Flow::Close
    ));
    call.handle_closed(now);
    connect(&mut call, &mut now);
    call.handle_item(now, Ok(Item::Connected { attempt: 0 }), &mut trace);
    attempts[1]
}

#[test]
fn an_ors_call_that_delivered_a_new_event_starts_its_attempts_over() {
    // A new event is progress, however early it came: the count starts over (attempt 1);
    // a stream that delivered nothing before its cut is the third failure in a row.
    assert_eq!(ors_attempt_after_a_cut(Some(60)), 1);
    assert_eq!(ors_attempt_after_a_cut(Some(1)), 1);
    assert_eq!(ors_attempt_after_a_cut(None), 3);
}
