//! One conformance suite for both transports: every scenario runs with a smol server and a
//! hyper server, each against a smol client and a hyper client, over 127.0.0.1.

mod kit;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use kit::{
    big_result, build, client, connection_trace, each_pair, encode, events_of, fast, numbered,
    serve, serve_ors, Hub, Producer, Reply, Run, Seen, Side,
};
use ssekit::server::ReplayBuffer;
use ssekit::{Config, Event, Limits};

#[test]
fn events_round_trip_and_a_clean_end_is_not_an_error() {
    each_pair(|server, side| {
        let addr = serve(server, |_| Reply::events(&numbered(20)));
        let mut run = Run::new(addr, 100);
        run.reconnect = fast().reconnect(false);
        let seen = client(side, run);
        assert_eq!(seen.first(), Some(&Seen::Connected(0)));
        assert_eq!(events_of(&seen), numbered(20));
        assert_eq!(seen.last(), Some(&Seen::Disconnected("clean")), "{seen:?}");
    });
}

/// A typed value goes out as a JSON event built without an `unwrap` and comes back as the
/// same value; the server's stream of `Result`s carries a `retry:` and a comment, and its
/// first `Err` ends the body cleanly (the client sees a clean end, not a broken
/// connection), after what was sent, with the error reported to the server's callback.
#[test]
fn a_typed_value_round_trips_as_json_and_an_error_ends_the_stream_cleanly() {
    use ssekit_http::server::Message;
    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Tick {
        n: u32,
        text: String,
    }
    const TICK: ssekit::EventName = ssekit::EventName::from_static("tick");
    each_pair(|server, side| {
        let errors = Arc::new(Mutex::new(Vec::new()));
        let sent: Vec<Tick> = (1..=3)
            .map(|n| Tick {
                n,
                text: format!("line {n}\nand \"quotes\""),
            })
            .collect();
        let mut items = vec![
            Ok(Message::retry(Duration::from_millis(700))),
            Ok(Message::comment("typed").unwrap()),
        ];
        for tick in &sent {
            let event = Event::named_json(TICK, tick).unwrap().with_id(tick.n);
            items.push(Ok(Message::from(event)));
        }
        items.push(Err("the database went away".to_owned()));
        items.push(Ok(Message::from(Event::message("never sent"))));
        let (items, log) = (Mutex::new(Some(items)), errors.clone());
        let addr = serve(server, move |_| Reply::Messages {
            items: items.lock().unwrap().take().unwrap_or_default(),
            errors: log.clone(),
        });
        let mut run = Run::new(addr, 100);
        run.reconnect = fast().reconnect(false);
        let seen = client(side, run);
        assert_eq!(
            seen[1..3],
            [Seen::Retry(700), Seen::Comment("typed".into())]
        );
        let got: Vec<Tick> = events_of(&seen)
            .iter()
            .map(|event| event.json::<Tick>().unwrap())
            .collect();
        assert_eq!(got, sent);
        assert_eq!(seen.last(), Some(&Seen::Disconnected("clean")), "{seen:?}");
        assert_eq!(*errors.lock().unwrap(), ["the database went away"]);
    });
}

#[test]
fn keep_alive_pings_reach_the_client_while_the_server_is_idle() {
    each_pair(|server, side| {
        let addr = serve(server, |_| Reply::Stream {
            frames: Vec::new(),
            keep_alive: Some(Duration::from_millis(80)),
            hang: true,
        });
        let started = std::time::Instant::now();
        let at = Arc::new(Mutex::new(Vec::new()));
        let mut run = Run::new(addr, 4);
        let log = at.clone();
        run.on_item = Some(Arc::new(move |_, _| {
            log.lock().unwrap().push(started.elapsed())
        }));
        let seen = client(side, run);
        let ping = Seen::Comment("ping".into());
        assert_eq!(seen, [Seen::Connected(0), ping.clone(), ping.clone(), ping]);
        // Never sooner than the interval (no busy loop): the k-th ping cannot be seen before
        // k intervals after the body started. Late is allowed on a loaded machine.
        let at = at.lock().unwrap();
        for (k, t) in at[1..].iter().enumerate() {
            let earliest = Duration::from_millis(80) * (k as u32 + 1);
            assert!(*t >= earliest, "pings at {at:?}");
        }
    });
}

/// The other bound of the keep-alive: the test above checks that no ping comes early; here
/// an idle stream keeps pinging, one ping per interval, which is what a peer's idle timeout
/// of a few intervals relies on (ORS: pings every 10 s, the official client's read timeout
/// is 30 s). That each ping is due exactly one interval after the last write is the
/// pinger's decision, checked against a hand-moved clock in `transport-http`'s
/// `a_busy_stream_keeps_one_timer_and_an_idle_one_still_pings_on_time` (the ping is pending
/// at 5999 ms and ready at 6000): over real sockets, how late a ping arrives only measures
/// how loaded the machine is, so it is not asserted here (it used to be, and could fail on a
/// loaded 2-core CI machine).
#[test]
fn keep_alive_pings_keep_coming_while_the_stream_is_idle() {
    const EVERY: Duration = Duration::from_millis(200);
    const PINGS: u32 = 4;
    each_pair(|server, side| {
        let addr = serve(server, |_| Reply::Stream {
            frames: Vec::new(),
            keep_alive: Some(EVERY),
            hang: true,
        });
        let started = std::time::Instant::now();
        let at = Arc::new(Mutex::new(Vec::new()));
        let log = at.clone();
        let mut run = Run::new(addr, 1 + PINGS as usize);
        run.on_item = Some(Arc::new(move |_, _| {
            log.lock().unwrap().push(started.elapsed())
        }));
        // The stream sends nothing but pings: each one re-armed the pinger (a pinger that
        // stopped after one would leave the run to its hang guard).
        let seen = client(side, run);
        let mut want = vec![Seen::Connected(0)];
        want.extend((0..PINGS).map(|_| Seen::Comment("ping".into())));
        assert_eq!(seen, want);
        // The k-th no sooner than k intervals after the request (a lower bound: timers
        // never fire early, and the clock started before the pinger was armed).
        let at = at.lock().unwrap();
        for (k, t) in at[1..].iter().enumerate() {
            assert!(*t >= EVERY * (k as u32 + 1), "pings at {at:?}");
        }
    });
}

#[test]
fn a_busy_stream_carries_no_pings() {
    each_pair(|server, side| {
        // An event every 20 ms against a keep-alive as long as the run's hang guard: a ping
        // could only come from a pinger that ignores the interval, never from a loaded
        // machine's stall (a 400 ms keep-alive, as before, pings rightly after a 400 ms
        // stall). That a write restarts the silence is the pinger's decision, checked with a
        // hand-moved clock in `transport-http`'s
        // `a_busy_stream_keeps_one_timer_and_an_idle_one_still_pings_on_time`.
        let addr = serve(server, |_| Reply::Channel {
            capacity: 4,
            keep_alive: Some(Duration::from_secs(60)),
            producer: Arc::new(|tx: Producer| {
                for i in 0..10 {
                    assert!(tx.send(&Event::message(i.to_string())));
                    std::thread::sleep(Duration::from_millis(20));
                }
            }),
        });
        let mut run = Run::new(addr, 100);
        run.reconnect = fast().reconnect(false);
        let seen = client(side, run);
        assert!(
            !seen.iter().any(|s| matches!(s, Seen::Comment(_))),
            "{seen:?}"
        );
        assert_eq!(events_of(&seen).len(), 10);
    });
}

/// A `server` whose every request subscribes to a new Broadcast (a 64-event replay buffer,
/// `per_client` events queued per client), resumed after its `Last-Event-ID`.
fn serve_hub(server: Side, per_client: usize) -> (Hub, std::net::SocketAddr) {
    let hub = Hub::new(server, ReplayBuffer::new(64, 1 << 20), per_client);
    let serving = hub.clone();
    let addr = serve(server, move |req| Reply::Subscribe {
        hub: serving.clone(),
        last_event_id: req.last_event_id,
    });
    (hub, addr)
}

#[test]
fn broadcast_clients_resume_across_a_server_side_disconnect() {
    each_pair(|server, side| {
        let (hub, addr) = serve_hub(server, 16);
        // The test publishes from the client's thread as it sees items, so each step
        // follows from the one before it, not from timing.
        let mut run = Run::new(addr, 10);
        run.on_item = Some(Arc::new(move |_, seen| match seen {
            Seen::Connected(0) => {
                for ev in &numbered(3) {
                    assert_eq!(hub.publish(ev), 1);
                }
            }
            Seen::Event(ev) if ev.id() == Some("3") => {
                // The server drops everyone and keeps publishing while they are away.
                hub.disconnect_all();
                assert_eq!(hub.publish(&numbered(5)[3]), 0);
                assert_eq!(hub.publish(&numbered(5)[4]), 0);
            }
            Seen::Connected(1) => {
                assert_eq!(hub.publish(&numbered(6)[5]), 1);
            }
            _ => {}
        }));
        let seen = client(side, run);
        assert_eq!(events_of(&seen), numbered(6), "{seen:?}");
        assert_eq!(
            connection_trace(&seen),
            [
                &Seen::Connected(0),
                &Seen::Disconnected("clean"),
                &Seen::Reconnecting(Duration::from_millis(20)),
                &Seen::Connected(1),
            ]
        );
    });
}

/// Publishes probe events to `hub`, one every 10 ms (for at most 60 s, a hang guard), until one is queued
/// for exactly `want` subscribers; returns how many were published. A server lets go of a
/// client that left once it notices (a write to the closed socket fails, hyper drops the
/// body, the queue closes), and the hub when it next publishes.
fn publish_until_it_reaches(hub: &Hub, want: usize) -> usize {
    let started = std::time::Instant::now();
    for probe in 1.. {
        let reached = hub.publish(&Event::message(format!("probe {probe}")));
        if reached == want {
            return probe;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "hung: {probe} probes still reach {reached} subscribers, not {want}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    unreachable!()
}

/// Per-client queues far longer than the probes [`publish_until_it_reaches`] can publish:
/// a subscriber can then only be let go because its client left, never because it fell
/// behind.
const ROOMY: usize = 4096;

#[test]
fn a_broadcast_lets_go_of_a_client_that_left() {
    each_pair(|server, side| {
        let (hub, addr) = serve_hub(server, ROOMY);
        let publisher = hub.clone();
        let mut run = Run::new(addr, 2);
        run.reconnect = fast().reconnect(false);
        run.on_item = Some(Arc::new(move |_, seen| {
            if *seen == Seen::Connected(0) {
                assert_eq!(publisher.publish(&numbered(1)[0]), 1);
            }
        }));
        // The client reads one event and leaves (drops the connection).
        let seen = client(side, run);
        assert_eq!(
            seen,
            [Seen::Connected(0), Seen::Event(numbered(1)[0].clone())]
        );
        let probes = publish_until_it_reaches(&hub, 0);
        assert_eq!(hub.subscribers(), 0, "after {probes} probes");
    });
}

#[test]
fn a_broadcast_lets_go_of_clients_that_timed_out_and_keeps_the_live_one() {
    each_pair(|server, side| {
        let (hub, addr) = serve_hub(server, ROOMY);
        // Nothing is published and there is no keep-alive: the client's idle timeout drops
        // the first two connections, and the hub holds three subscribers, two of them gone.
        let probes = Arc::new(Mutex::new(None));
        let (publisher, reached) = (hub.clone(), probes.clone());
        let mut run = Run::new(addr, 7);
        run.reconnect = fast().idle_timeout(Some(Duration::from_millis(150)));
        run.on_item = Some(Arc::new(move |_, seen| {
            if *seen == Seen::Connected(2) {
                let probes = publish_until_it_reaches(&publisher, 1);
                assert_eq!(publisher.subscribers(), 1, "after {probes} probes");
                *reached.lock().unwrap() = Some(probes);
            }
        }));
        let seen = client(side, run);
        assert_eq!(seen.last(), Some(&Seen::Connected(2)), "{seen:?}");
        let idle = seen.iter().filter(|s| **s == Seen::Disconnected("idle"));
        assert_eq!(idle.count(), 2, "{seen:?}");
        assert!(probes.lock().unwrap().is_some(), "never probed: {seen:?}");
    });
}

#[test]
fn publish_wait_cuts_a_client_that_stopped_reading_instead_of_waiting_forever() {
    use std::io::{Read, Write};
    for server in [Side::Smol, Side::Hyper] {
        let hub = Hub::new(server, ReplayBuffer::new(64, 1 << 20), 4)
            .wait_at_most(Duration::from_millis(300));
        let serving = hub.clone();
        let addr = kit::serve(server, move |req| Reply::Subscribe {
            hub: serving.clone(),
            last_event_id: req.last_event_id,
        });
        // A client that sends its request and then reads nothing.
        let mut stuck = std::net::TcpStream::connect(addr).unwrap();
        stuck
            .write_all(b"GET /events HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
            .unwrap();
        let started = std::time::Instant::now();
        while hub.subscribers() == 0 {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "hung: never subscribed"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        // 64 MiB: more than the kernel's buffers on both ends can hold for it. Without the
        // bound, a `publish_wait` would wait for it forever (the hang guard would fire).
        let (done, finished) = std::sync::mpsc::channel();
        let publisher = hub.clone();
        std::thread::spawn(move || {
            let data = "x".repeat(16 << 10);
            let mut reached = 0;
            for n in 1..=4096 {
                let event = Event::builder()
                    .id(n.to_string())
                    .unwrap()
                    .data(data.clone());
                reached += publisher.publish_wait(&event.build());
            }
            let _ = done.send(reached);
        });
        let reached = finished
            .recv_timeout(Duration::from_secs(120))
            .expect("hung: publish_wait waited for the stuck client (hang guard, 120 s)");
        assert!(reached < 4096, "{server:?}: the stuck client was never cut");
        assert_eq!(hub.subscribers(), 0, "{server:?}");
        // Once it reads: what it had queued, then when to come back, then the body's end.
        stuck
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        let mut got = Vec::new();
        let mut buf = vec![0; 1 << 16];
        while !got.ends_with(b"\r\n0\r\n\r\n") {
            let n = stuck
                .read(&mut buf)
                .expect("the stream ends within the hang guard");
            assert!(n > 0, "{server:?}: closed before the body ended");
            got.extend_from_slice(&buf[..n]);
        }
        let text = String::from_utf8_lossy(&got);
        assert!(text.contains("retry: 1000\n\n"), "{server:?}");
        let last = format!("id: {reached}\ndata: ");
        assert!(
            text.contains(&last),
            "{server:?}: its last queued event, {reached}"
        );
    }
}

/// The `Last-Event-ID` of each request a server saw.
type SeenIds = Arc<Mutex<Vec<Option<String>>>>;

/// Serves `events` from a replay buffer: a first connection gets what `first` makes of their
/// encoded forms, then its body ends (or, with `first_hangs`, stays open and silent); a
/// reconnect gets the events after its `Last-Event-ID`, then its body stays open. Returns the
/// address and the ids the requests carried.
fn serve_resumable(
    server: Side,
    events: &[Event],
    first_hangs: bool,
    first: impl Fn(&[Bytes]) -> Vec<Bytes> + Send + Sync + 'static,
) -> (std::net::SocketAddr, SeenIds) {
    let mut replay = ReplayBuffer::new(64, 1 << 20);
    let wire: Vec<Bytes> = events.iter().map(|ev| replay.push(ev).unwrap()).collect();
    let replay = Mutex::new(replay);
    let ids = SeenIds::default();
    let seen_ids = ids.clone();
    let addr = serve(server, move |req| {
        seen_ids.lock().unwrap().push(req.last_event_id.clone());
        let hang = first_hangs || req.last_event_id.is_some();
        let frames = match req.last_event_id {
            None => first(&wire),
            Some(id) => replay.lock().unwrap().since(&id).unwrap().collect(),
        };
        Reply::Stream {
            frames,
            keep_alive: None,
            hang,
        }
    });
    (addr, ids)
}

#[test]
fn a_cut_stream_resumes_with_last_event_id_from_the_replay_buffer() {
    each_pair(|server, side| {
        // First connection: five events and half of the sixth, then the body ends.
        let (addr, ids) = serve_resumable(server, &numbered(10), false, |wire| {
            let mut v = wire[..5].to_vec();
            v.push(wire[5].slice(..10));
            v
        });
        let seen = client(side, Run::new(addr, 14));
        assert_eq!(events_of(&seen), numbered(10));
        assert_eq!(
            connection_trace(&seen),
            [
                &Seen::Connected(0),
                &Seen::Disconnected("truncated"),
                &Seen::Reconnecting(Duration::from_millis(20)),
                &Seen::Connected(1),
            ]
        );
        assert_eq!(*ids.lock().unwrap(), [None, Some("5".to_owned())]);
    });
}

#[test]
fn a_non_ascii_last_event_id_is_sent_back_and_read_as_utf8() {
    // Ids are UTF-8: the server must read back the one it sent, not only visible ASCII.
    each_pair(|server, side| {
        let events: Vec<Event> = (1..=4)
            .map(|i| {
                let id = format!("é{i}");
                Event::builder().id(id).unwrap().data("x").build()
            })
            .collect();
        let (addr, ids) = serve_resumable(server, &events, false, |wire| wire[..2].to_vec());
        let seen = client(side, Run::new(addr, 8));
        assert_eq!(events_of(&seen), events, "{seen:?}");
        assert_eq!(*ids.lock().unwrap(), [None, Some("é2".to_owned())]);
    });
}

#[test]
fn post_bodies_and_headers_are_sent_again_on_reconnect() {
    each_pair(|server, side| {
        let requests = Arc::new(Mutex::new(Vec::new()));
        let log = requests.clone();
        let addr = serve(server, move |req| {
            let mut log = log.lock().unwrap();
            log.push(req.clone());
            let id = log.len().to_string();
            Reply::events(&[Event::builder().id(id).unwrap().data("x").build()])
        });
        let mut run = Run::new(addr, 10);
        run.post = Some(r#"{"q":1}"#.into());
        run.headers = vec![("authorization".into(), "Bearer t".into())];
        let seen = client(side, run);
        assert_eq!(events_of(&seen).len(), 3, "{seen:?}");
        let requests = requests.lock().unwrap();
        for (i, req) in requests.iter().take(3).enumerate() {
            assert_eq!(req.method, "POST");
            assert_eq!(req.path, "/events");
            assert_eq!(req.body.as_ref(), br#"{"q":1}"#);
            assert_eq!(req.headers["authorization"], "Bearer t");
            assert_eq!(req.headers["accept"], "text/event-stream");
            let want = (i > 0).then(|| i.to_string());
            assert_eq!(req.last_event_id, want);
        }
    });
}

#[test]
fn status_and_content_type_are_checked() {
    each_pair(|server, side| {
        let addr = serve(server, |req| match req.path.as_str() {
            "/missing" => Reply::Plain {
                status: 404,
                content_type: "text/plain",
            },
            "/html" => Reply::Plain {
                status: 200,
                content_type: "text/html",
            },
            "/done" => Reply::Plain {
                status: 204,
                content_type: "text/plain",
            },
            "/bare" => Reply::NoContentType,
            _ => Reply::events(&numbered(1)),
        });
        let at = |path: &str| {
            let mut run = Run::new(addr, 10);
            run.url = format!("http://{addr}{path}");
            client(side, run)
        };
        // The status, and what the server said about it.
        assert_eq!(
            at("/missing"),
            [Seen::Error("status 404: not an event stream".into())]
        );
        assert_eq!(
            at("/html"),
            [Seen::Error("content-type Some(\"text/html\")".into())]
        );
        assert_eq!(at("/bare"), [Seen::Error("content-type None".into())]);
        assert_eq!(at("/done"), [], "204 ends the stream without an error");
    });
}

#[test]
fn a_retryable_status_is_retried_with_backoff() {
    each_pair(|server, side| {
        let calls = Arc::new(Mutex::new(0));
        let count = calls.clone();
        let addr = serve(server, move |_| {
            let mut n = count.lock().unwrap();
            *n += 1;
            if *n == 1 {
                Reply::Plain {
                    status: 503,
                    content_type: "text/plain",
                }
            } else {
                Reply::events(&numbered(1))
            }
        });
        let seen = client(side, Run::new(addr, 4));
        assert_eq!(
            seen,
            [
                Seen::Disconnected("refused"),
                Seen::Reconnecting(Duration::from_millis(20)),
                Seen::Connected(1),
                Seen::Event(numbered(1).remove(0)),
            ]
        );
    });
}

#[test]
fn a_retryable_status_past_the_attempt_limit_gives_up() {
    each_pair(|server, side| {
        let addr = serve(server, |_| Reply::Plain {
            status: 503,
            content_type: "text/plain",
        });
        let mut run = Run::new(addr, 10);
        run.reconnect = fast().max_attempts(Some(1));
        let seen = client(side, run);
        assert_eq!(
            seen,
            [
                // Each refusal is told once: the last by the error that ends the stream.
                Seen::Disconnected("refused"),
                Seen::Reconnecting(Duration::from_millis(20)),
                Seen::Error("gave up: status 503: not an event stream".into()),
            ]
        );
    });
}

#[test]
fn the_servers_retry_field_sets_the_reconnect_delay() {
    each_pair(|server, side| {
        let addr = serve(server, |_| Reply::Stream {
            frames: vec![Bytes::from_static(b"retry: 70\n\n")],
            keep_alive: None,
            hang: false,
        });
        let seen = client(side, Run::new(addr, 4));
        assert_eq!(
            seen,
            [
                Seen::Connected(0),
                Seen::Retry(70),
                Seen::Disconnected("clean"),
                Seen::Reconnecting(Duration::from_millis(70)),
            ]
        );
    });
}

#[test]
fn a_silent_server_trips_the_idle_timeout_and_the_client_reconnects() {
    each_pair(|server, side| {
        let addr = serve(server, |_| Reply::Stream {
            frames: Vec::new(),
            keep_alive: None,
            hang: true,
        });
        let mut run = Run::new(addr, 4);
        run.reconnect = fast().idle_timeout(Some(Duration::from_millis(120)));
        let seen = client(side, run);
        assert_eq!(seen[0], Seen::Connected(0));
        assert_eq!(seen[1], Seen::Disconnected("idle"));
        assert!(matches!(seen[2], Seen::Reconnecting(_)));
        assert_eq!(seen[3], Seen::Connected(1));
    });
}

#[test]
fn a_stall_inside_an_event_shorter_than_the_idle_timeout_loses_neither_connection_nor_event() {
    const STALL: Duration = Duration::from_millis(250);
    each_pair(|server, side| {
        // One event in three pieces with a stall inside a line and one between two of its
        // lines, each far shorter than the client's idle timeout (30 s: no loaded machine
        // turns a 250 ms stall into one past it; at 1.5 s, as before, one could).
        let addr = serve(server, |_| Reply::Channel {
            capacity: 4,
            keep_alive: None,
            producer: Arc::new(|tx: Producer| {
                assert!(tx.send_bytes("event: tick\nid: 1\ndata: pa"));
                std::thread::sleep(STALL);
                assert!(tx.send_bytes("rt one\n"));
                std::thread::sleep(STALL);
                assert!(tx.send_bytes("data: rest\n\n"));
            }),
        });
        let mut run = Run::new(addr, 10);
        run.reconnect = fast()
            .idle_timeout(Some(Duration::from_secs(30)))
            .reconnect(false);
        let seen = client(side, run);
        let whole = Event::builder()
            .event("tick")
            .unwrap()
            .id("1")
            .unwrap()
            .data("part one\nrest")
            .build();
        assert_eq!(
            seen,
            [
                Seen::Connected(0),
                Seen::Event(whole),
                Seen::Disconnected("clean")
            ]
        );
    });
}

#[test]
fn a_stall_inside_an_event_past_the_idle_timeout_reconnects_and_the_event_comes_whole() {
    each_pair(|server, side| {
        // The first connection sends event 1 and the first lines of event 2 (its id among
        // them), then falls silent; a reconnect is served from the replay buffer.
        let (addr, ids) = serve_resumable(server, &numbered(2), true, |wire| {
            vec![wire[0].clone(), wire[1].slice(..wire[1].len() - 8)]
        });
        let mut run = Run::new(addr, 6);
        run.reconnect = fast().idle_timeout(Some(Duration::from_millis(150)));
        let seen = client(side, run);
        // The partial event is dropped with the connection, not delivered; its id was not
        // taken as the last event id (the block never ended), so event 2 is sent again.
        assert_eq!(events_of(&seen), numbered(2), "{seen:?}");
        let trace = connection_trace(&seen);
        assert_eq!(
            trace[..2],
            [&Seen::Connected(0), &Seen::Disconnected("idle")]
        );
        assert!(matches!(trace[2], Seen::Reconnecting(_)), "{seen:?}");
        assert_eq!(trace[3], &Seen::Connected(1));
        assert_eq!(*ids.lock().unwrap(), [None, Some("1".to_owned())]);
    });
}

#[test]
fn an_event_over_the_client_limit_is_a_typed_error() {
    each_pair(|server, side| {
        let big = Event::message("x".repeat(64 << 10));
        let addr = serve(server, move |_| Reply::events(std::slice::from_ref(&big)));
        let mut run = Run::new(addr, 5);
        run.decoder = Config::default().limits(Limits::default().max_event(16 << 10));
        let seen = client(side, run);
        assert_eq!(seen, [Seen::Connected(0), Seen::Error("decode".into())]);
    });
}

#[test]
fn a_large_event_crosses_many_body_frames_intact() {
    each_pair(|server, side| {
        let payload: String = (0..(1 << 20))
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        let big = Event::builder()
            .event("result")
            .unwrap()
            .data(payload)
            .build();
        let wire = encode(&big);
        // Cut into 1000-byte body frames: the client must reassemble across them.
        let frames: Vec<Bytes> = (0..wire.len())
            .step_by(1000)
            .map(|i| wire.slice(i..(i + 1000).min(wire.len())))
            .collect();
        let addr = serve(server, move |_| Reply::Stream {
            frames: frames.clone(),
            keep_alive: None,
            hang: true,
        });
        let seen = client(side, Run::new(addr, 2));
        assert_eq!(seen, [Seen::Connected(0), Seen::Event(big.clone())]);
    });
}

#[test]
fn concurrent_streams_do_not_interfere() {
    each_pair(|server, side| {
        let addr = serve(server, |req| {
            let n: usize = req.path.trim_start_matches("/s").parse().unwrap();
            Reply::events(&numbered(n))
        });
        let runs: Vec<_> = (1..=6)
            .map(|n| {
                std::thread::spawn(move || {
                    let mut run = Run::new(addr, 100);
                    run.url = format!("http://{addr}/s{}", n * 10);
                    run.reconnect = fast().reconnect(false);
                    (n, client(side, run))
                })
            })
            .collect();
        for handle in runs {
            let (n, seen) = handle.join().unwrap();
            assert_eq!(events_of(&seen), numbered(n * 10));
        }
    });
}

#[test]
fn a_refused_connection_is_one_network_error() {
    for side in [Side::Smol, Side::Hyper] {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let mut run = Run::new(port, 10);
        run.reconnect = fast().max_attempts(Some(1));
        let seen = client(side, run);
        assert_eq!(
            seen.last(),
            Some(&Seen::Error("gave up: network: refused".into())),
            "{side:?}: {seen:?}"
        );
    }
}

#[test]
fn a_connection_broken_mid_body_is_a_failure_and_resumes_with_last_event_id() {
    each_pair(|server, side| {
        let ids = Arc::new(Mutex::new(Vec::new()));
        let seen_ids = ids.clone();
        let addr = serve(server, move |req| {
            seen_ids.lock().unwrap().push(req.last_event_id.clone());
            match req.last_event_id {
                None => Reply::Abort {
                    frames: numbered(3).iter().map(encode).collect(),
                },
                Some(_) => Reply::Stream {
                    frames: numbered(5)[3..].iter().map(encode).collect(),
                    keep_alive: None,
                    hang: true,
                },
            }
        });
        let seen = client(side, Run::new(addr, 9));
        assert_eq!(events_of(&seen), numbered(5), "{seen:?}");
        assert_eq!(
            connection_trace(&seen),
            [
                &Seen::Connected(0),
                &Seen::Disconnected("failed"),
                &Seen::Reconnecting(Duration::from_millis(20)),
                &Seen::Connected(1),
            ]
        );
        assert_eq!(*ids.lock().unwrap(), [None, Some("3".to_owned())]);
    });
}

#[test]
fn a_server_that_never_answers_trips_the_response_timeout_and_is_retried() {
    each_pair(|server, side| {
        let addr = serve(server, |_| Reply::Silent);
        let mut run = Run::new(addr, 10);
        run.response_timeout = Some(Duration::from_millis(100));
        run.reconnect = fast().max_attempts(Some(1));
        let seen = client(side, run);
        assert_eq!(
            seen,
            [
                Seen::Disconnected("no response"),
                Seen::Reconnecting(Duration::from_millis(20)),
                Seen::Disconnected("no response"),
                Seen::Error("gave up: no response".into()),
            ]
        );
    });
}

#[test]
fn requests_that_cannot_be_sent_safely_are_refused_before_any_connection() {
    for side in [Side::Smol, Side::Hyper] {
        let url = "http://127.0.0.1:9/events";
        let refused = |url: &str, headers: &[(&str, &str)]| build(side, url, headers);
        assert_eq!(refused(url, &[("authorization", "Bearer t")]), Ok(()));
        assert_eq!(refused("not a url", &[]), Err("request".into()));
        assert_eq!(refused("ftp://127.0.0.1/x", &[]), Err("request".into()));
        for injection in [
            ("last-event-id", "1\r\nx-injected: yes"),
            ("last-event-id", "1\nid: 2"),
            ("authorization", "a\rb"),
            ("x-nul", "a\0b"),
            ("bad name", "v"),
            ("x-injected:", "v"),
        ] {
            assert_eq!(
                refused(url, &[injection]),
                Err("request".into()),
                "{side:?} sent {injection:?}"
            );
        }
    }
}

#[test]
fn the_response_head_prevents_buffering_and_one_event_is_one_chunk() {
    use std::io::{Read, Write};
    for server in [Side::Smol, Side::Hyper] {
        let event = Event::builder().id("1").unwrap().data("n1").build();
        let wire = encode(&event);
        let frames = vec![wire.clone()];
        let addr = serve(server, move |_| Reply::Stream {
            frames: frames.clone(),
            keep_alive: None,
            hang: true,
        });
        let mut tcp = std::net::TcpStream::connect(addr).unwrap();
        tcp.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        tcp.write_all(b"GET /events HTTP/1.1\r\nhost: x\r\n\r\n")
            .unwrap();
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            tcp.read_exact(&mut byte).unwrap();
            head.push(byte[0]);
        }
        let head = String::from_utf8(head).unwrap().to_ascii_lowercase();
        assert!(
            head.starts_with("http/1.1 200 ok\r\n"),
            "{server:?}: {head}"
        );
        for line in [
            "content-type: text/event-stream",
            "cache-control: no-cache",
            "x-accel-buffering: no",
            "transfer-encoding: chunked",
        ] {
            assert!(head.contains(line), "{server:?}: {line} missing in {head}");
        }
        assert!(!head.contains("content-encoding"), "{server:?}: {head}");
        assert!(!head.contains("content-length"), "{server:?}: {head}");
        let mut chunk = vec![0u8; format!("{:x}\r\n", wire.len()).len() + wire.len() + 2];
        tcp.read_exact(&mut chunk).unwrap();
        let want = [format!("{:x}\r\n", wire.len()).as_bytes(), &wire, b"\r\n"].concat();
        assert_eq!(chunk, want, "{server:?}");
    }
}

#[test]
fn each_event_is_flushed_before_the_next_is_produced() {
    // The producer sends event i and then waits until the client has received it before it
    // creates event i + 1: if a server held events in a buffer the acknowledgement could
    // never come. Causality, not wall-clock bounds.
    each_pair(|server, side| {
        let (ack_tx, ack_rx) = std::sync::mpsc::channel::<usize>();
        let ack_rx = Arc::new(Mutex::new(ack_rx));
        let addr = serve(server, move |_| {
            let acks = ack_rx.clone();
            Reply::Channel {
                capacity: 4,
                keep_alive: None,
                producer: Arc::new(move |tx: Producer| {
                    let acks = acks.lock().unwrap();
                    for i in 0..3 {
                        assert!(tx.send(&Event::message(i.to_string())));
                        let acked = acks.recv_timeout(Duration::from_secs(60)); // a hang guard
                        assert_eq!(acked.ok(), Some(i), "event {i} sat in a buffer");
                    }
                }),
            }
        });
        let mut run = Run::new(addr, 5);
        run.reconnect = fast().reconnect(false);
        let acks = Mutex::new(ack_tx);
        run.on_item = Some(Arc::new(move |_, seen| {
            if let Seen::Event(ev) = seen {
                let _ = acks.lock().unwrap().send(ev.data().parse().unwrap());
            }
        }));
        let seen = client(side, run);
        let data: Vec<String> = events_of(&seen)
            .iter()
            .map(|e| e.data().to_owned())
            .collect();
        assert_eq!(data, ["0", "1", "2"]);
        assert_eq!(seen.last(), Some(&Seen::Disconnected("clean")), "{seen:?}");
    });
}

/// A slow reader's queue fills and pushes back on the producer, loses nothing when the
/// reader catches up, and a reader that leaves closes it.
#[test]
fn a_slow_reader_pushes_back_on_the_producer_loses_nothing_and_its_departure_closes_the_queue() {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
    const PAUSE_AT: usize = 10;
    #[derive(Default)]
    struct Progress {
        /// Events queued so far.
        sent: AtomicUsize,
        /// A `try_send` found the queue full (the producer then waits in `send`).
        full: AtomicBool,
        /// The producer stops after this many events (0: not yet known).
        stop_at: AtomicUsize,
        /// A send failed: the client went away.
        closed: AtomicBool,
    }
    each_pair(|server, side| {
        let payload = "x".repeat(16 << 10);
        let progress = Arc::new(Progress::default());
        let shared = progress.clone();
        let addr = serve(server, move |_| {
            let p = shared.clone();
            let payload = payload.clone();
            Reply::Channel {
                capacity: 8,
                keep_alive: None,
                producer: Arc::new(move |tx: Producer| {
                    let started = std::time::Instant::now();
                    for i in 1.. {
                        let ev = Event::builder()
                            .id(i.to_string())
                            .unwrap()
                            .data(payload.clone())
                            .build();
                        let queued = match tx.try_send(&ev) {
                            Ok(true) => true,
                            Ok(false) => {
                                p.full.store(true, SeqCst);
                                tx.send(&ev) // waits: backpressure
                            }
                            Err(()) => false,
                        };
                        if !queued {
                            p.closed.store(true, SeqCst);
                            return;
                        }
                        p.sent.store(i, SeqCst);
                        let stop_at = p.stop_at.load(SeqCst);
                        if stop_at != 0 && i >= stop_at {
                            return; // the stream ends cleanly
                        }
                        assert!(
                            started.elapsed() < Duration::from_secs(60),
                            "hung: never pushed back"
                        );
                    }
                }),
            }
        });
        // After PAUSE_AT items the client stops reading until the producer has found the
        // queue full and stopped; it then ends `extra` events later (0: never, the client
        // leaves).
        let pause = |extra: usize| -> kit::OnItem {
            let p = progress.clone();
            Arc::new(move |i, _: &Seen| {
                if i == PAUSE_AT {
                    p.full.store(false, SeqCst);
                    let waited = std::time::Instant::now();
                    while !p.full.load(SeqCst) {
                        assert!(
                            waited.elapsed() < Duration::from_secs(60),
                            "hung: the queue never filled"
                        );
                        std::thread::sleep(Duration::from_millis(10));
                    }
                    // Then the producer stops: no event queued for 100 ms.
                    let mut stalled = p.sent.load(SeqCst);
                    loop {
                        std::thread::sleep(Duration::from_millis(100));
                        let now = p.sent.load(SeqCst);
                        if now == stalled {
                            break;
                        }
                        assert!(
                            waited.elapsed() < Duration::from_secs(60),
                            "hung: the producer never stopped"
                        );
                        stalled = now;
                    }
                    // Bounded: the queue, hyper's buffers and the sockets', in 16 KiB events.
                    // Measured (the eprintln below; 136 pairing runs on a 2-core VM, 108 with
                    // 3 or 4 copies of the test at once): 274-489 events, median about 300.
                    // `ss -tm` during the pause puts most of it in the kernel: 3.6-4.1 MB in
                    // the server's send buffer (its limit, tcp_wmem's 4 MiB default maximum)
                    // and 0.13-0.9 MB in the client's receive buffer; the rest is the queue
                    // (8) and hyper's write and read buffers (about 400 KiB each at most).
                    // 1,000 events (16 MiB) is twice the worst run; a kernel with a larger
                    // tcp_wmem maximum would need more.
                    assert!(
                        stalled < 1_000,
                        "{stalled} events queued for a paused reader"
                    );
                    if extra > 0 {
                        p.stop_at.store(stalled + extra, SeqCst);
                    }
                }
            })
        };
        let mut run = Run::new(addr, usize::MAX);
        run.reconnect = fast().reconnect(false);
        run.on_item = Some(pause(50));
        let seen = client(side, run);
        let total = progress.sent.load(SeqCst);
        let ids: Vec<usize> = events_of(&seen)
            .iter()
            .map(|e| e.id().unwrap().parse().unwrap())
            .collect();
        assert_eq!(
            ids,
            (1..=total).collect::<Vec<_>>(),
            "every queued event, in order"
        );
        assert_eq!(seen.last(), Some(&Seen::Disconnected("clean")));
        eprintln!("{server:?} server, {side:?} client: the paused reader held up the producer after {} events of 16 KiB", total - 50);

        // The same, but the reader leaves while the producer waits on the full queue.
        progress.stop_at.store(0, SeqCst);
        let mut run = Run::new(addr, PAUSE_AT + 1);
        run.reconnect = fast().reconnect(false);
        run.on_item = Some(pause(0));
        let seen = client(side, run);
        assert_eq!(seen.len(), PAUSE_AT + 1);
        let waited = std::time::Instant::now();
        while !progress.closed.load(SeqCst) {
            assert!(
                waited.elapsed() < Duration::from_secs(60),
                "hung: the departure never closed the queue"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    });
}

/// Reads an ORS call's events until its stream ends (`items` caps the count).
fn ors_call(
    side: Side,
    url: &str,
    headers: &[(String, String)],
    body: String,
    items: usize,
) -> Vec<Event> {
    let mut run = Run::new("127.0.0.1:9".parse().unwrap(), items);
    run.url = url.to_owned();
    run.post = Some(body);
    run.headers = headers.to_vec();
    run.reconnect = fast().reconnect(false);
    let seen = client(side, run);
    assert!(
        !seen.iter().any(|s| matches!(s, Seen::Error(_))),
        "{seen:?}"
    );
    events_of(&seen)
}

#[test]
fn an_ors_call_resumes_by_task_id_and_its_chunked_result_is_whole() {
    use ssekit::chunk::Reassembler;
    use ssekit::profile::ors::{ToolCall, ToolResult};
    use ssekit::sequence::Validator;
    each_pair(|server, side| {
        let (url, headers) = serve_ors(server);
        // First connection: the task id, then the client drops it while the tool still runs.
        let first = ors_call(
            side,
            &url,
            &headers,
            r#"{"name":"slow","input":{}}"#.into(),
            2,
        );
        assert_eq!(first.len(), 1);
        assert_eq!(first[0].event_type(), "task_id");
        let task_id = first[0].data().to_owned();
        // The same call with the task id: the task from its start, then its live output.
        let body = format!(r#"{{"name":"slow","input":{{}},"task_id":"{task_id}"}}"#);
        let resumed = ors_call(side, &url, &headers, body, usize::MAX);
        assert_eq!(resumed[0].event_type(), "task_id");
        assert_eq!(resumed[0].data(), task_id);
        assert!(
            resumed.len() >= 5,
            "a 14 KB result is several chunks: {}",
            resumed.len()
        );
        let mut profile = Validator::new(ToolCall::new());
        let mut whole = Reassembler::new();
        let mut json = None;
        for ev in &resumed {
            profile.event(ev).unwrap();
            if ev.event_type() != "task_id" {
                assert!(ev.data().len() <= 4096, "{} bytes", ev.data().len());
                assert!(
                    !ev.data().starts_with(char::is_whitespace),
                    "{:?}",
                    &ev.data()[..9]
                );
                json = whole.push(ev).unwrap();
            }
        }
        profile.finish().unwrap();
        assert_eq!(resumed.last().unwrap().event_type(), "end");
        let got: ToolResult = serde_json::from_str(&json.expect("no end")).unwrap();
        assert_eq!(got, big_result());
        assert_eq!(profile.profile().result(), Some(&big_result()));
    });
}

#[test]
fn ors_calls_that_cannot_run_are_error_events() {
    each_pair(|server, side| {
        let (url, headers) = serve_ors(server);
        let unknown = r#"{"name":"slow","input":{},"task_id":"no-such-task"}"#;
        let got = ors_call(side, &url, &headers, unknown.into(), 10);
        let got: Vec<_> = got
            .iter()
            .map(|e| (e.event_type().to_owned(), e.data().to_owned()))
            .collect();
        assert_eq!(got, [("error".to_owned(), "unknown task_id".to_owned())]);
        let broken = ors_call(
            side,
            &url,
            &headers,
            r#"{"name":"broken","input":{}}"#.into(),
            10,
        );
        let kinds: Vec<_> = broken.iter().map(|e| e.event_type().to_owned()).collect();
        assert_eq!(kinds, ["task_id", "error"]);
        assert_eq!(broken[1].data(), "'broken' cannot run");
    });
}

/// Both transports' ORS clients against the ORS server (ssekit-hyper's `ors::Server`, the
/// one with sessions): open a session, call a tool whose first connection is cut after two
/// events and resumed by task id (result whole, nothing doubled), ping, delete, and a ping
/// after the delete is refused.
#[test]
fn ors_clients_resume_a_cut_call_by_task_id_and_keep_their_session() {
    use ssekit_http::ors::Trace;
    for side in [Side::Smol, Side::Hyper] {
        let (url, _) = serve_ors(Side::Hyper);
        let base = url.trim_end_matches("/kit/call");
        let run = kit::ors_client(side, base);
        assert_eq!(run.result, Ok(big_result()), "{side:?}");
        let cut = run
            .trace
            .iter()
            .position(|t| matches!(t, Trace::Cut { after_events: 2 }))
            .expect("cut");
        let Some(Trace::Event(first)) = run.trace.get(1) else {
            panic!("{side:?}: {:?}", run.trace)
        };
        assert_eq!(first.event_type(), "task_id");
        let resumed = run.trace[cut..].iter().find_map(|t| match t {
            Trace::Connected { resume, .. } => Some(resume.clone()),
            _ => None,
        });
        assert_eq!(resumed, Some(Some(first.data().to_owned())), "{side:?}");
        assert_eq!(run.ping, Ok(()), "{side:?}");
        assert_eq!(run.ping_after_delete, Err("status 404".into()), "{side:?}");
    }
}

/// Waits with full jitter on an hour: 3.6 million possible first waits.
fn wide_jitter() -> ssekit::client::ReconnectConfig {
    ssekit::client::ReconnectConfig::default()
        .retry_timeout(Duration::from_secs(3_600))
        .max_delay(Duration::from_secs(3_600))
        .jitter(100)
}

/// The port of a listener already closed: connections to it are refused.
fn closed_port() -> std::net::SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

#[test]
fn clients_built_the_default_way_draw_their_own_jitter() {
    for side in kit::SIDES {
        let first_wait = || {
            // No seed set: each EventSource draws its own.
            let mut run = Run::new(closed_port(), 2);
            run.reconnect = wide_jitter();
            match &client(side, run)[..] {
                [Seen::Disconnected("failed"), Seen::Reconnecting(after)] => *after,
                other => panic!("{side:?}: {other:?}"),
            }
        };
        let (a, b) = (first_wait(), first_wait());
        assert_ne!(a, b, "{side:?}: two clients reconnect in lockstep");
        assert!(a >= Duration::from_secs(3_600) && a <= Duration::from_secs(7_200));
    }
}

/// What `events()` of a `side` client reading `url` with `reconnect` yields, within 5 s:
/// the data of each event, or the label of the error that ended the stream.
fn events_from(
    side: Side,
    url: &str,
    reconnect: ssekit::client::ReconnectConfig,
) -> Vec<Result<String, String>> {
    fn label(item: Result<Event, ssekit_smol::Error>) -> Result<String, String> {
        match item {
            Ok(event) => Ok(event.data().to_owned()),
            Err(ssekit_smol::Error::Truncated) => Err("truncated".into()),
            Err(ssekit_smol::Error::ContentEncoding(coding)) => {
                Err(format!("content-encoding {coding}"))
            }
            Err(other) => Err(format!("other: {other}")),
        }
    }
    let limit = Duration::from_secs(60); // a hang guard
    match side {
        Side::Smol => {
            let events = ssekit_smol::client::EventSource::get(url)
                .unwrap()
                .reconnect(reconnect)
                .events();
            let all = futures_lite::StreamExt::collect::<Vec<_>>(events);
            smol::block_on(kit::within(limit, all))
                .into_iter()
                .map(label)
                .collect()
        }
        Side::Hyper => kit::tokio_rt().block_on(async {
            let events = ssekit_hyper::client::EventSource::get(url)
                .unwrap()
                .reconnect(reconnect)
                .events();
            let all = futures_util::StreamExt::collect::<Vec<_>>(events);
            kit::within(limit, all)
                .await
                .into_iter()
                .map(label)
                .collect()
        }),
    }
}

#[test]
fn without_reconnecting_events_end_with_an_error_after_a_cut_and_without_one_after_a_clean_end() {
    each_pair(|server, side| {
        let addr = serve(server, |req| Reply::Stream {
            frames: vec![Bytes::from_static(if req.path == "/cut" {
                b"data: 1\n\ndata: {\"partial\": [1,"
            } else {
                b"data: 1\n\n"
            })],
            keep_alive: None,
            hang: false,
        });
        let once = fast().reconnect(false);
        let clean = events_from(side, &format!("http://{addr}/clean"), once.clone());
        assert_eq!(clean, [Ok("1".to_owned())], "a clean end is no error");
        let cut = events_from(side, &format!("http://{addr}/cut"), once);
        assert_eq!(cut, [Ok("1".to_owned()), Err("truncated".to_owned())]);
        // Reconnecting, a cut stream is resumed as before.
        let mut run = Run::new(addr, 5);
        run.url = format!("http://{addr}/cut");
        let seen = client(side, run);
        assert_eq!(
            seen,
            [
                Seen::Connected(0),
                Seen::Event(Event::message("1")),
                Seen::Disconnected("truncated"),
                Seen::Reconnecting(Duration::from_millis(20)),
                Seen::Connected(1),
            ]
        );
    });
}

/// Five events (ids 0 to 4) gzip-compressed, as a server or a proxy in front of it sends
/// them to a request that names no coding.
const GZIPPED_EVENTS: &[u8] = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\x03\xcb\x4c\xb1\x52\x30\xe0\x4a\x49\x2c\x49\xb4\x52\x48\x2d\x4b\xcd\x2b\x01\xf2\xb8\x32\x81\x82\x86\x28\x82\x86\x10\x41\x23\x14\x41\x23\x88\xa0\x31\x8a\xa0\x31\x44\xd0\x04\x45\xd0\x84\x8b\x0b\x00\xc3\x1f\xfe\xeb\x69\x00\x00\x00";

/// A server on 127.0.0.1 that answers each request (at most 20) with `response`, a whole
/// HTTP/1.1 response, closes the connection, and records the request's head.
fn serve_raw(response: Vec<u8>) -> (std::net::SocketAddr, Arc<Mutex<Vec<String>>>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let heads = Arc::new(Mutex::new(Vec::new()));
    let seen = heads.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming().take(20) {
            let Ok(mut conn) = conn else { continue };
            let _ = conn.set_read_timeout(Some(Duration::from_secs(60)));
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && conn.read(&mut byte).is_ok_and(|n| n == 1) {
                head.push(byte[0]);
            }
            seen.lock()
                .unwrap()
                .push(String::from_utf8_lossy(&head).to_lowercase());
            let _ = conn.write_all(&response);
            let _ = conn.shutdown(std::net::Shutdown::Write);
            // Until the client is done with it, so that the close is no reset.
            let _ = conn.read_to_end(&mut Vec::new());
        }
    });
    (addr, heads)
}

#[test]
fn a_compressed_stream_is_a_typed_error_and_is_not_retried() {
    for side in kit::SIDES {
        let mut response = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Encoding: gzip\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n",
            GZIPPED_EVENTS.len()
        )
        .into_bytes();
        response.extend_from_slice(GZIPPED_EVENTS);
        let (addr, heads) = serve_raw(response);
        // Reconnecting without an attempt limit: the refusal still ends the stream.
        let got = events_from(side, &format!("http://{addr}/events"), fast());
        assert_eq!(got, [Err("content-encoding gzip".to_owned())], "{side:?}");
        let heads = heads.lock().unwrap();
        assert_eq!(heads.len(), 1, "{side:?}: connected again: {heads:?}");
        assert!(
            heads[0].contains("\r\naccept-encoding: identity\r\n"),
            "{side:?}: {}",
            heads[0]
        );
    }
}

/// Event `n` of a numbered stream (`tick`, id `n`), encoded.
fn nth(n: usize) -> Bytes {
    encode(&numbered(n).remove(n - 1))
}

/// The event after the request's `Last-Event-ID` (1 without one).
fn next_after(req: &kit::Req) -> usize {
    req.last_event_id
        .as_deref()
        .map_or(1, |id| id.parse::<usize>().unwrap() + 1)
}

#[test]
fn clean_ends_are_no_failures_and_are_followed_past_max_attempts() {
    // A polling server: one event per connection, then a clean end. With no retry allowed
    // at all, the client still follows it: a clean end is not a failure.
    each_pair(|server, side| {
        let addr = serve(server, |req| Reply::Stream {
            frames: vec![nth(next_after(&req))],
            keep_alive: None,
            hang: false,
        });
        let mut run = Run::new(addr, 20);
        run.reconnect = fast().max_attempts(Some(0));
        let seen = client(side, run);
        assert_eq!(events_of(&seen), numbered(5), "{seen:?}");
        let trace = connection_trace(&seen);
        assert_eq!(trace[0], &Seen::Connected(0));
        for step in trace[1..].chunks(3) {
            assert_eq!(
                step[..step.len().min(3)],
                [
                    &Seen::Disconnected("clean"),
                    &Seen::Reconnecting(Duration::from_millis(20)),
                    &Seen::Connected(1),
                ][..step.len().min(3)],
                "no growth, no failure count: {seen:?}"
            );
        }
    });
}

#[test]
fn a_stream_cut_after_an_event_every_time_waits_without_growth_and_never_gives_up() {
    each_pair(|server, side| {
        let addr = serve(server, |req| Reply::Abort {
            frames: vec![nth(next_after(&req))],
        });
        let mut run = Run::new(addr, 20);
        run.reconnect = fast().max_attempts(Some(1));
        let seen = client(side, run);
        assert_eq!(events_of(&seen), numbered(5), "{seen:?}");
        let waits: Vec<&Seen> = seen
            .iter()
            .filter(|s| matches!(s, Seen::Reconnecting(_)))
            .collect();
        assert!(waits.len() >= 4, "{seen:?}");
        assert!(
            waits
                .iter()
                .all(|w| **w == Seen::Reconnecting(Duration::from_millis(20))),
            "each cut follows progress: {seen:?}"
        );
        assert!(
            !seen.iter().any(|s| matches!(s, Seen::Error(_))),
            "{seen:?}"
        );
    });
}

#[test]
fn cuts_before_any_event_count_and_end_within_max_attempts() {
    each_pair(|server, side| {
        let addr = serve(server, |_| Reply::Abort { frames: vec![] });
        let mut run = Run::new(addr, 20);
        run.reconnect = fast().max_attempts(Some(2));
        let seen = client(side, run);
        let waits: Vec<&Seen> = seen
            .iter()
            .filter(|s| matches!(s, Seen::Reconnecting(_)))
            .collect();
        assert_eq!(
            waits,
            [
                &Seen::Reconnecting(Duration::from_millis(20)),
                &Seen::Reconnecting(Duration::from_millis(40)),
            ],
            "{seen:?}"
        );
        assert!(
            matches!(seen.last(), Some(Seen::Error(e)) if e.starts_with("gave up: ")),
            "{seen:?}"
        );
    });
}
