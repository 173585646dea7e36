//! Redirects on 127.0.0.1, over every server × client pairing: what each hop sends, where
//! reconnects start, and how a redirect loop ends.

mod kit;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

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
