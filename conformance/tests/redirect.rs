//! Redirects on 127.0.0.1, over every server × client pairing: what each hop sends, where
//! reconnects start, and how a redirect loop ends; and, from a server writing raw bytes,
//! how both clients take several `Location` fields.

mod kit;

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kit::{client, each_pair, events_of, fast, numbered, serve, Reply, Req, Run, Seen, Side};
use ssekit::Event;

/// The requests a server saw, in order.
type Log = Arc<Mutex<Vec<Req>>>;

/// Serves `reply` (given each request and how many came before it, itself included) and
/// logs every request.
fn serve_logged(
    server: Side,
    reply: impl Fn(&Req, usize) -> Reply + Send + Sync + 'static,
) -> (SocketAddr, Log) {
    let log = Log::default();
    let record = log.clone();
    let addr = serve(server, move |req| {
        let mut log = record.lock().unwrap();
        let answer = reply(&req, log.len() + 1);
        log.push(req);
        answer
    });
    (addr, log)
}

#[test]
fn a_307_to_another_origin_resends_the_post_without_credentials() {
    each_pair(|server, side| {
        let (b, seen_by_b) = serve_logged(server, |_, _| Reply::events(&numbered(3)));
        let to = format!("http://{b}/stream");
        let location = to.clone();
        let a = serve(server, move |_| Reply::Redirect {
            status: 307,
            location: location.clone(),
        });
        let mut run = Run::new(a, 100);
        run.post = Some(r#"{"q":1}"#.into());
        run.headers = vec![
            ("authorization".into(), "Bearer t".into()),
            ("x-trace".into(), "t1".into()),
        ];
        run.reconnect = fast().reconnect(false);
        let seen = client(side, run);
        assert_eq!(seen[..2], [Seen::Redirected(307, to), Seen::Connected(0)]);
        assert_eq!(events_of(&seen), numbered(3));
        assert_eq!(seen.last(), Some(&Seen::Disconnected("clean")), "{seen:?}");
        let seen_by_b = seen_by_b.lock().unwrap();
        let [req] = &seen_by_b[..] else {
            panic!("{seen_by_b:?}")
        };
        assert_eq!(
            (req.method.as_str(), req.path.as_str()),
            ("POST", "/stream")
        );
        assert_eq!(req.body.as_ref(), br#"{"q":1}"#);
        assert_eq!(req.headers["x-trace"], "t1");
        assert_eq!(req.headers["host"], b.to_string());
        assert!(req.headers.get("authorization").is_none(), "{req:?}");
    });
}

#[test]
fn a_303_turns_the_post_into_a_get_and_each_reconnect_starts_at_the_first_url() {
    each_pair(|server, side| {
        let (addr, requests) = serve_logged(server, |req, n| match req.path.as_str() {
            "/start" => Reply::Redirect {
                status: 303,
                location: "stream".into(),
            },
            _ => Reply::events(&[Event::builder()
                .id(n.to_string())
                .unwrap()
                .data("x")
                .build()]),
        });
        let mut run = Run::new(addr, 9);
        run.url = format!("http://{addr}/start");
        run.post = Some("body".into());
        let seen = client(side, run);
        assert_eq!(events_of(&seen).len(), 2, "{seen:?}");
        let requests = requests.lock().unwrap();
        let sent: Vec<_> = requests
            .iter()
            .take(4)
            .map(|r| {
                (
                    r.method.as_str(),
                    r.path.as_str(),
                    r.body.len(),
                    r.last_event_id.as_deref(),
                )
            })
            .collect();
        assert_eq!(
            sent,
            [
                ("POST", "/start", 4, None),
                ("GET", "/stream", 0, None),
                ("POST", "/start", 4, Some("2")),
                ("GET", "/stream", 0, Some("2")),
            ]
        );
    });
}

#[test]
fn a_redirect_loop_ends_the_stream_after_max_redirects() {
    each_pair(|server, side| {
        let (addr, requests) = serve_logged(server, |_, _| Reply::Redirect {
            status: 302,
            location: "/events".into(),
        });
        let seen = client(side, Run::new(addr, 100));
        let redirects = seen
            .iter()
            .filter(|s| matches!(s, Seen::Redirected(302, _)))
            .count();
        assert_eq!(redirects, 10, "{seen:?}");
        let Some(Seen::Error(why)) = seen.last() else {
            panic!("{seen:?}")
        };
        assert!(why.starts_with("redirect: more than 10 redirects"), "{why}");
        assert_eq!(requests.lock().unwrap().len(), 11, "no reconnect after");
    });
}

/// A server on 127.0.0.1 that answers each request, given its path, with the raw bytes
/// `answer` returns (then closes the connection), and counts the requests it read.
fn raw_server(answer: impl Fn(&str) -> Vec<u8> + Send + 'static) -> (SocketAddr, Arc<AtomicUsize>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let requests = Arc::new(AtomicUsize::new(0));
    let count = requests.clone();
    std::thread::spawn(move || {
        for sock in listener.incoming() {
            let Ok(mut sock) = sock else { return };
            sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && sock.read_exact(&mut byte).is_ok() {
                head.push(byte[0]);
            }
            count.fetch_add(1, Ordering::SeqCst);
            let head = String::from_utf8_lossy(&head).into_owned();
            let path = head.split(' ').nth(1).unwrap_or_default();
            let _ = sock.write_all(&answer(path));
        }
    });
    (addr, requests)
}

/// A raw `302` with these `Location` fields and no body.
fn found(locations: &[&str]) -> Vec<u8> {
    let mut head = String::from("HTTP/1.1 302 Found\r\n");
    for location in locations {
        head.push_str(&format!("Location: {location}\r\n"));
    }
    head.push_str("Content-Length: 0\r\nConnection: close\r\n\r\n");
    head.into_bytes()
}

#[test]
fn two_different_locations_end_the_stream_and_neither_is_requested() {
    for side in [Side::Smol, Side::Hyper] {
        let (elsewhere, asked_elsewhere) = raw_server(|_| found(&["/never"]));
        let other = format!("http://{elsewhere}/b");
        let (addr, requests) = raw_server(move |_| found(&["/a", &other]));
        let mut run = Run::new(addr, 10);
        run.reconnect = fast();
        let seen = client(side, run);
        let [Seen::Error(why)] = &seen[..] else {
            panic!("{side:?}: {seen:?}")
        };
        let expected = format!(
            r#"redirect: HTTP 302 with 2 different Location values: "/a", "http://{elsewhere}/b""#
        );
        assert_eq!(why, &expected, "{side:?}");
        assert_eq!(requests.load(Ordering::SeqCst), 1, "{side:?}: no retry");
        assert_eq!(asked_elsewhere.load(Ordering::SeqCst), 0, "{side:?}");
    }
}

#[test]
fn copies_of_one_location_are_followed_once() {
    for side in [Side::Smol, Side::Hyper] {
        let (addr, requests) = raw_server(|path| match path {
            "/events" => found(&["/stream", "/stream", " /stream"]),
            _ => b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\
                   Content-Length: 9\r\nConnection: close\r\n\r\ndata: x\n\n"
                .to_vec(),
        });
        let mut run = Run::new(addr, 10);
        run.reconnect = fast().reconnect(false);
        let seen = client(side, run);
        let to = format!("http://{addr}/stream");
        assert_eq!(
            seen[..2],
            [Seen::Redirected(302, to), Seen::Connected(0)],
            "{side:?}"
        );
        assert_eq!(events_of(&seen), [Event::message("x")], "{side:?}");
        assert_eq!(requests.load(Ordering::SeqCst), 2, "{side:?}");
    }
}
