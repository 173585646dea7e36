//! One conformance suite for both transports: every scenario runs with a smol server and a
//! hyper server, each against a smol client and a hyper client, over 127.0.0.1.

mod kit;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use kit::{client, each_pair, encode, events_of, fast, numbered, serve, Reply, Run, Seen};
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

#[test]
fn keep_alive_pings_reach_the_client_while_the_server_is_idle() {
    each_pair(|server, side| {
        let addr = serve(server, |_| Reply::Stream {
            frames: Vec::new(),
            keep_alive: Some(Duration::from_millis(80)),
            hang: true,
        });
        let started = std::time::Instant::now();
        let seen = client(side, Run::new(addr, 3));
        assert_eq!(
            seen,
            [
                Seen::Connected(0),
                Seen::Comment("ping".into()),
                Seen::Comment("ping".into())
            ]
        );
        assert!(started.elapsed() >= Duration::from_millis(150));
    });
}

#[test]
fn a_cut_stream_resumes_with_last_event_id_from_the_replay_buffer() {
    each_pair(|server, side| {
        let mut replay = ReplayBuffer::new(64, 1 << 20);
        let wire: Vec<Bytes> = numbered(10)
            .iter()
            .map(|ev| replay.push(ev).unwrap())
            .collect();
        let replay = Arc::new(Mutex::new(replay));
        let ids = Arc::new(Mutex::new(Vec::new()));
        let seen_ids = ids.clone();
        let addr = serve(server, move |req| {
            seen_ids.lock().unwrap().push(req.last_event_id.clone());
            let hang = req.last_event_id.is_some();
            let frames = match req.last_event_id {
                // First connection: five events and half of the sixth, then the body ends.
                None => {
                    let mut v = wire[..5].to_vec();
                    v.push(wire[5].slice(..10));
                    v
                }
                Some(id) => replay.lock().unwrap().since(&id).unwrap().collect(),
            };
            Reply::Stream {
                frames,
                keep_alive: None,
                hang,
            }
        });
        let seen = client(side, Run::new(addr, 14));
        assert_eq!(events_of(&seen), numbered(10));
        let trace: Vec<_> = seen
            .iter()
            .filter(|s| !matches!(s, Seen::Event(_)))
            .collect();
        assert_eq!(
            trace,
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
        run.post = Some(r#"{"q":1}"#);
        run.headers = vec![("authorization", "Bearer t")];
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
            _ => Reply::events(&numbered(1)),
        });
        let at = |path: &str| {
            let mut run = Run::new(addr, 10);
            run.url = format!("http://{addr}{path}");
            client(side, run)
        };
        assert_eq!(at("/missing"), [Seen::Error("status 404".into())]);
        assert_eq!(
            at("/html"),
            [Seen::Error("content-type Some(\"text/html\")".into())]
        );
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
                Seen::Disconnected("failed"),
                Seen::Reconnecting(Duration::from_millis(20)),
                Seen::Connected(1),
                Seen::Event(numbered(1).remove(0)),
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
    for side in [kit::Side::Smol, kit::Side::Hyper] {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let mut run = Run::new(port, 10);
        run.reconnect = fast().max_attempts(Some(1));
        let seen = client(side, run);
        assert_eq!(
            seen.last(),
            Some(&Seen::Error("network".into())),
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
        let trace: Vec<_> = seen
            .iter()
            .filter(|s| !matches!(s, Seen::Event(_)))
            .collect();
        assert_eq!(
            trace,
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
