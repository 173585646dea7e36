//! Redirects followed by the sans-IO session: the request each hop sends (method, body,
//! headers, target), what ends the stream, and where reconnects start. No sockets: the test
//! plays the transport.

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, Request};
use ssekit::client::ReconnectConfig;
use ssekit::Instant;
use ssekit_http::client::{Item, RequestSpec, Session, Step, Target};
use ssekit_http::redirect::{LocationError, RedirectError};
use ssekit_http::Error;

const NOW: Instant = Instant::ZERO;

fn post(url: &str) -> RequestSpec {
    RequestSpec::post(url, r#"{"call":1}"#, &["http", "https"])
        .unwrap()
        .header("content-type", "application/json")
        .unwrap()
        .header("authorization", "Bearer secret")
        .unwrap()
        .header("cookie", "c=1")
        .unwrap()
        .header("x-trace", "t")
        .unwrap()
        .secret_header("x-api-key", "k")
        .unwrap()
        .reconnect(ReconnectConfig::default().jitter(0))
}

fn location(to: &str) -> HeaderMap {
    let mut head = HeaderMap::new();
    head.insert("location", HeaderValue::from_str(to).unwrap());
    head
}

fn sse() -> HeaderMap {
    let mut head = HeaderMap::new();
    head.insert(
        "content-type",
        HeaderValue::from_static("text/event-stream"),
    );
    head
}

/// The next request, and the items polled before it.
fn next_request(s: &mut Session) -> (Request<Bytes>, u32, Vec<Item>) {
    let mut items = Vec::new();
    loop {
        match s.poll(NOW) {
            Step::Connect { request, attempt } => return (request, attempt, items),
            Step::Item(item) => items.push(item),
            other => panic!("unexpected {other:?} after {items:?}"),
        }
    }
}

/// The error that ends the stream, after any items.
fn end_error(s: &mut Session) -> Error {
    loop {
        match s.poll(NOW) {
            Step::Item(_) => {}
            Step::End(Some(e)) => return e,
            other => panic!("unexpected {other:?}"),
        }
    }
}

fn header<'a>(req: &'a Request<Bytes>, name: &str) -> Option<&'a str> {
    req.headers().get(name).and_then(|v| v.to_str().ok())
}

#[test]
fn a_308_resends_the_same_method_body_and_headers_to_the_resolved_url() {
    let mut s = post("http://127.0.0.1:1/a/call").into_session(Target::Absolute);
    let _first = next_request(&mut s);
    assert!(!s.handle_head(NOW, 308, &location("../v2/call?x=1")));
    let (req, attempt, items) = next_request(&mut s);
    assert_eq!(
        items,
        [Item::Redirected {
            status: 308,
            to: "http://127.0.0.1:1/v2/call?x=1".parse().unwrap()
        }]
    );
    assert_eq!(attempt, 0, "a redirect is part of its attempt");
    assert_eq!(req.method(), Method::POST);
    assert_eq!(req.uri(), "http://127.0.0.1:1/v2/call?x=1");
    assert_eq!(s.uri(), req.uri(), "the transport connects to the new URL");
    assert_eq!(req.body().as_ref(), br#"{"call":1}"#);
    assert_eq!(header(&req, "content-type"), Some("application/json"));
    assert_eq!(header(&req, "authorization"), Some("Bearer secret"));
    assert_eq!(header(&req, "cookie"), Some("c=1"));
    assert_eq!(header(&req, "x-api-key"), Some("k"));
    // Credentials are marked sensitive (kept out of Debug output and HPACK tables).
    assert!(req.headers()["authorization"].is_sensitive());
    assert!(req.headers()["x-api-key"].is_sensitive());
    assert!(!req.headers()["x-trace"].is_sensitive());
    assert!(s.handle_head(NOW, 200, &sse()), "the final answer is read");
    let (connected, _) = (s.poll(NOW), ());
    assert!(matches!(
        connected,
        Step::Item(Item::Connected { attempt: 0 })
    ));
}

#[test]
fn a_303_and_a_302_after_a_post_become_a_get_without_the_body() {
    for status in [303, 302, 301] {
        let mut s = post("http://127.0.0.1:1/call").into_session(Target::Absolute);
        let _first = next_request(&mut s);
        assert!(!s.handle_head(NOW, status, &location("/result")));
        let (req, _, _) = next_request(&mut s);
        assert_eq!(req.method(), Method::GET, "{status}");
        assert!(req.body().is_empty(), "{status}");
        assert_eq!(header(&req, "content-type"), None, "{status}");
        assert_eq!(header(&req, "x-trace"), Some("t"), "{status}");
        assert_eq!(header(&req, "authorization"), Some("Bearer secret"));
    }
    // 307 keeps the POST; 303 after a GET stays a GET.
    let mut s = post("http://127.0.0.1:1/call").into_session(Target::Absolute);
    let _first = next_request(&mut s);
    assert!(!s.handle_head(NOW, 307, &location("/again")));
    assert_eq!(next_request(&mut s).0.method(), Method::POST);
}

#[test]
fn another_origin_gets_no_credentials_and_its_own_host_header() {
    let mut s = post("http://127.0.0.1:1/call").into_session(Target::Origin);
    let (first, _, _) = next_request(&mut s);
    assert_eq!(header(&first, "host"), Some("127.0.0.1:1"));
    assert!(!s.handle_head(NOW, 307, &location("http://127.0.0.1:2/call")));
    let (req, _, _) = next_request(&mut s);
    assert_eq!(req.uri(), "/call", "origin form");
    assert_eq!(header(&req, "host"), Some("127.0.0.1:2"));
    assert_eq!(s.uri(), "http://127.0.0.1:2/call");
    assert_eq!(header(&req, "authorization"), None);
    assert_eq!(header(&req, "cookie"), None);
    assert_eq!(header(&req, "x-api-key"), None, "a secret header");
    assert_eq!(header(&req, "x-trace"), Some("t"), "other headers go on");
    assert_eq!(req.body().as_ref(), br#"{"call":1}"#);
}

#[test]
fn dropped_headers_stay_dropped_for_the_rest_of_the_attempt() {
    // To another origin, then within it, then back: no hop brings the credentials back.
    let mut s = post("http://127.0.0.1:1/call").into_session(Target::Absolute);
    let _first = next_request(&mut s);
    for to in [
        "http://127.0.0.1:2/a",
        "http://127.0.0.1:2/b",
        "http://127.0.0.1:1/call",
    ] {
        assert!(!s.handle_head(NOW, 307, &location(to)));
        let (req, _, _) = next_request(&mut s);
        assert_eq!(header(&req, "authorization"), None, "{to}");
        assert_eq!(header(&req, "cookie"), None, "{to}");
    }
    // A 303 drops the body and its headers; a 307 after it keeps the empty body, and no
    // Content-Type comes back.
    let mut s = post("http://127.0.0.1:1/call").into_session(Target::Absolute);
    let _first = next_request(&mut s);
    assert!(!s.handle_head(NOW, 303, &location("/get")));
    let _get = next_request(&mut s);
    assert!(!s.handle_head(NOW, 307, &location("/again")));
    let (req, _, _) = next_request(&mut s);
    assert_eq!(req.method(), Method::GET);
    assert!(req.body().is_empty());
    assert_eq!(header(&req, "content-type"), None);
    assert_eq!(
        header(&req, "authorization"),
        Some("Bearer secret"),
        "same origin"
    );
}

#[test]
fn the_hook_sees_every_hop_whole_and_its_credentials_stay_on_the_origin() {
    for target in [Target::Absolute, Target::Origin] {
        let mut s = post("http://127.0.0.1:1/call")
            .on_connect(|req| {
                let to = req.uri().to_string();
                let headers = req.headers_mut();
                headers.insert("x-hop", HeaderValue::from_str(&to).unwrap());
                headers.insert("authorization", HeaderValue::from_static("Bearer hook"));
                headers.insert("proxy-authorization", HeaderValue::from_static("Basic p"));
            })
            .into_session(target);
        let (first, _, _) = next_request(&mut s);
        assert_eq!(header(&first, "x-hop"), Some("http://127.0.0.1:1/call"));
        assert_eq!(header(&first, "authorization"), Some("Bearer hook"));
        assert!(!s.handle_head(NOW, 307, &location("https://other.invalid/x")));
        let (req, _, _) = next_request(&mut s);
        // The hook saw the absolute URL, scheme included, whatever form is sent.
        assert_eq!(header(&req, "x-hop"), Some("https://other.invalid/x"));
        assert_eq!(header(&req, "authorization"), None, "{target:?}");
        assert_eq!(header(&req, "proxy-authorization"), None, "{target:?}");
        if target == Target::Origin {
            assert_eq!(req.uri(), "/x");
            assert_eq!(header(&req, "host"), Some("other.invalid"));
        }
    }
}

#[test]
fn an_origin_is_scheme_host_and_effective_port() {
    let hop = |from: &str, to: &str| {
        let mut s = post(from).into_session(Target::Absolute);
        let _first = next_request(&mut s);
        assert!(!s.handle_head(NOW, 307, &location(to)));
        let (req, _, _) = next_request(&mut s);
        header(&req, "authorization").is_some()
    };
    assert!(
        hop("http://h.example/a", "http://h.example:80/b"),
        "default port"
    );
    assert!(hop("http://h.example/a", "http://H.EXAMPLE/b"), "case");
    assert!(!hop("http://h.example/a", "https://h.example/a"), "scheme");
    assert!(
        !hop("http://h.example/a", "http://h.example:8080/a"),
        "port"
    );
    assert!(
        !hop("http://h.example/a", "http://h.example./a"),
        "trailing dot"
    );
}

#[test]
fn a_configured_host_header_stays_on_its_origin() {
    for target in [Target::Absolute, Target::Origin] {
        let mut s = post("http://127.0.0.1:1/call")
            .header("host", "a.internal")
            .unwrap()
            .into_session(target);
        let (first, _, _) = next_request(&mut s);
        assert_eq!(header(&first, "host"), Some("a.internal"), "{target:?}");
        assert!(!s.handle_head(NOW, 307, &location("/same")));
        let (same, _, _) = next_request(&mut s);
        assert_eq!(header(&same, "host"), Some("a.internal"), "{target:?}");
        assert!(!s.handle_head(NOW, 307, &location("http://127.0.0.1:2/x")));
        let (other, _, _) = next_request(&mut s);
        let expected = (target == Target::Origin).then_some("127.0.0.1:2");
        assert_eq!(header(&other, "host"), expected, "{target:?}");
    }
}

#[test]
fn methods_other_than_post_keep_their_body_and_head_stays_head() {
    let mut s = RequestSpec::new(Method::PUT, "http://127.0.0.1:1/x", "put", &["http"])
        .unwrap()
        .into_session(Target::Absolute);
    let _first = next_request(&mut s);
    assert!(!s.handle_head(NOW, 301, &location("/y")));
    let (req, _, _) = next_request(&mut s);
    assert_eq!(
        (req.method(), req.body().as_ref()),
        (&Method::PUT, &b"put"[..])
    );
    let mut s = RequestSpec::new(Method::HEAD, "http://127.0.0.1:1/x", "", &["http"])
        .unwrap()
        .into_session(Target::Absolute);
    let _first = next_request(&mut s);
    assert!(!s.handle_head(NOW, 303, &location("/y")));
    assert_eq!(next_request(&mut s).0.method(), Method::HEAD);
}

#[test]
fn redirects_past_the_limit_end_the_stream() {
    let mut s = post("http://127.0.0.1:1/0")
        .max_redirects(3)
        .into_session(Target::Absolute);
    let _first = next_request(&mut s);
    for hop in 1..=3 {
        assert!(!s.handle_head(NOW, 302, &location(&format!("/{hop}"))));
        let (req, _, _) = next_request(&mut s);
        assert_eq!(req.uri().path(), format!("/{hop}"));
    }
    assert!(!s.handle_head(NOW, 302, &location("/4")));
    let err = end_error(&mut s);
    assert!(
        matches!(&err, Error::Redirect(RedirectError::TooMany { max: 3, .. }))
            && err.to_string().contains("more than 3 redirects"),
        "{err}"
    );
}

#[test]
fn with_max_redirects_zero_a_redirect_is_a_status_error() {
    let mut s = post("http://127.0.0.1:1/")
        .max_redirects(0)
        .into_session(Target::Absolute);
    let _first = next_request(&mut s);
    assert!(
        s.handle_head(NOW, 301, &location("/elsewhere")),
        "its body is read"
    );
    s.handle_end(NOW, None);
    assert_eq!(end_error(&mut s).status(), Some(301));
}

#[test]
fn statuses_that_are_not_followed_and_a_missing_location_are_status_errors() {
    for (status, head) in [
        (300, location("/x")),
        (304, location("/x")),
        (302, HeaderMap::new()),
    ] {
        let mut s = post("http://127.0.0.1:1/").into_session(Target::Absolute);
        let _first = next_request(&mut s);
        assert!(s.handle_head(NOW, status, &head), "its body is read");
        s.handle_end(NOW, None);
        assert!(matches!(end_error(&mut s), Error::Refused(r) if r.status() == status));
    }
}

#[test]
fn unsafe_or_unusable_locations_are_refused() {
    let cases = [
        ("https://127.0.0.1:1/", "http://127.0.0.1:1/x", "from https"),
        ("http://127.0.0.1:1/", "ftp://127.0.0.1/x", "scheme"),
        ("http://127.0.0.1:1/", "http:///nohost", "names no host"),
        ("http://127.0.0.1:1/", "//", "names no host"),
        ("http://127.0.0.1:1/", "http://[::1/", "resolves to"),
        (
            "http://127.0.0.1:1/",
            "http://127.0.0.1:65616/",
            "port out of range",
        ),
        ("http://127.0.0.1:1/", "http://bücher.example/", "not ASCII"),
        ("http://127.0.0.1:1/", "mailto:a@b", "names no host"),
    ];
    for (from, to, why) in cases {
        let mut s = post(from).into_session(Target::Absolute);
        let _first = next_request(&mut s);
        assert!(!s.handle_head(NOW, 307, &location(to)));
        let err = end_error(&mut s);
        assert!(
            matches!(&err, Error::Redirect(w) if w.to_string().contains(why)),
            "{from} -> {to}: {err}"
        );
    }
    // A Location that is not UTF-8.
    let mut s = post("http://127.0.0.1:1/").into_session(Target::Absolute);
    let _first = next_request(&mut s);
    let mut head = HeaderMap::new();
    head.insert("location", HeaderValue::from_bytes(b"/\xff").unwrap());
    assert!(!s.handle_head(NOW, 307, &head));
    assert!(matches!(
        end_error(&mut s),
        Error::Redirect(RedirectError::Location {
            error: LocationError::NotUtf8,
            ..
        })
    ));
}

/// URLs can carry credentials in their user info and query: errors about a URL or a
/// `Location` quote it without them.
#[test]
fn url_errors_leave_user_info_and_queries_out() {
    for bad in [
        "http://user:S3-pw@127.0.0.1:65616/?key=S3-key",
        "ftp://user:S3-pw@127.0.0.1/x?key=S3-key",
        "http://user:S3-pw@[::1/x#S3-key",
    ] {
        let Err(err) = RequestSpec::get(bad, &["http"]) else {
            panic!("{bad} accepted")
        };
        let err = err.to_string();
        assert!(!err.contains("S3-"), "{err}");
        assert!(err.contains("?<redacted>"), "{err}");
    }
    for (to, why) in [
        (
            "http://u:S3-pw@127.0.0.1:65616/?S3-key",
            "port out of range",
        ),
        ("http://u:S3-pw@bücher.example/?S3-key", "not ASCII"),
        ("http://u:S3-pw@/?S3-key", "resolves to"),
    ] {
        let mut s = post("http://127.0.0.1:1/").into_session(Target::Absolute);
        let _first = next_request(&mut s);
        assert!(!s.handle_head(NOW, 307, &location(to)));
        let err = end_error(&mut s).to_string();
        assert!(err.contains(why) && !err.contains("S3-"), "{to}: {err}");
    }
}

#[test]
fn a_reconnect_starts_again_from_the_url_the_stream_was_opened_with() {
    let mut s = post("http://127.0.0.1:1/start").into_session(Target::Absolute);
    let _first = next_request(&mut s);
    assert!(!s.handle_head(NOW, 303, &location("/moved")));
    let (moved, _, _) = next_request(&mut s);
    assert_eq!(moved.method(), Method::GET);
    assert!(s.handle_head(NOW, 200, &sse()));
    s.handle_data(NOW, Bytes::from_static(b"id: 7\ndata: x\n\n"));
    s.handle_end(NOW, None);
    // Reconnect (after the policy's wait): the opened request, with the event's id.
    let mut now = NOW;
    let req = loop {
        match s.poll(now) {
            Step::Connect { request, .. } => break request,
            Step::Wait { deadline, .. } => {
                now = deadline.expect("a reconnect is scheduled");
                s.handle_timeout(now);
            }
            Step::Item(_) | Step::Close => {}
            other => panic!("unexpected {other:?}"),
        }
    };
    assert_eq!(req.method(), Method::POST);
    assert_eq!(req.uri(), "http://127.0.0.1:1/start");
    assert_eq!(s.uri(), "http://127.0.0.1:1/start");
    assert_eq!(req.body().as_ref(), br#"{"call":1}"#);
    assert_eq!(header(&req, "last-event-id"), Some("7"));
    // And its redirects are counted afresh, Last-Event-ID going along.
    assert!(!s.handle_head(now, 307, &location("/moved")));
    let (again, _, _) = next_request(&mut s);
    assert_eq!(header(&again, "last-event-id"), Some("7"));
}

/// A head with one `Location` field per value, in order.
fn locations(values: &[&[u8]]) -> HeaderMap {
    let mut head = HeaderMap::new();
    for value in values {
        head.append("location", HeaderValue::from_bytes(value).unwrap());
    }
    head
}

/// The items polled up to the end, and the error that ended the stream.
fn items_and_error(s: &mut Session) -> (Vec<Item>, Error) {
    let mut items = Vec::new();
    loop {
        match s.poll(NOW) {
            Step::Item(item) => items.push(item),
            Step::End(Some(e)) => return (items, e),
            other => panic!("unexpected {other:?} after {items:?}"),
        }
    }
}

#[test]
fn several_different_locations_end_the_stream_without_a_hop() {
    let cases: [(&[&[u8]], &str); 5] = [
        (
            &[b"/a", b"/b"],
            r#"2 different Location values: "/a", "/b""#,
        ),
        (
            &[b"/a", b"/a", b"http://127.0.0.1:2/a"],
            r#"2 different Location values: "/a", "http://127.0.0.1:2/a""#,
        ),
        // The same target written two ways is still two values (as in Chrome).
        (
            &[b"/a", b"http://127.0.0.1:1/a"],
            "2 different Location values",
        ),
        (&[b"", b"/a"], r#"2 different Location values: "", "/a""#),
        (
            &[b"/\xff", b"/a"],
            "2 different Location values: \"/\u{fffd}\"",
        ),
    ];
    for status in [301, 302, 303, 307, 308] {
        for (values, why) in cases {
            let mut s = post("http://127.0.0.1:1/").into_session(Target::Absolute);
            let _first = next_request(&mut s);
            assert!(!s.handle_head(NOW, status, &locations(values)));
            let (items, err) = items_and_error(&mut s);
            assert_eq!(items, [], "no Redirected item for {values:?}");
            assert!(
                matches!(&err, Error::Redirect(w) if w.to_string().starts_with(&format!("HTTP {status} with")) && w.to_string().contains(why)),
                "{values:?}: {err}"
            );
            assert!(matches!(s.poll(NOW), Step::End(None)), "the stream is over");
        }
    }
}

#[test]
fn copies_of_one_location_are_one_target() {
    let mut s = post("http://127.0.0.1:1/a/call").into_session(Target::Absolute);
    let _first = next_request(&mut s);
    // Optional whitespace around a value is not part of it.
    let head = locations(&[b"../moved", b" ../moved", b"../moved\t"]);
    assert!(!s.handle_head(NOW, 307, &head));
    let (req, _, items) = next_request(&mut s);
    assert_eq!(req.uri(), "http://127.0.0.1:1/moved");
    assert_eq!(
        items,
        [Item::Redirected {
            status: 307,
            to: "http://127.0.0.1:1/moved".parse().unwrap()
        }]
    );
    // A later hop of the same attempt with two targets ends it, after the first hop.
    assert!(!s.handle_head(NOW, 307, &locations(&[b"/x", b"/y"])));
    let (items, err) = items_and_error(&mut s);
    assert_eq!(items, []);
    assert!(
        matches!(&err, Error::Redirect(RedirectError::Location { error: LocationError::Conflicting(values), .. }) if values.len() == 2),
        "{err}"
    );
}

#[test]
fn an_empty_location_ends_the_stream_instead_of_a_hop_to_the_same_url() {
    for values in [&[&b""[..]][..], &[b" \t"], &[b"", b""], &[b"", b" "]] {
        let mut s = post("http://127.0.0.1:1/start").into_session(Target::Absolute);
        let _first = next_request(&mut s);
        assert!(!s.handle_head(NOW, 302, &locations(values)));
        let (items, err) = items_and_error(&mut s);
        assert_eq!(items, [], "{values:?}");
        assert!(
            matches!(&err, Error::Redirect(w) if w.to_string() == "HTTP 302 with an empty Location"),
            "{values:?}: {err}"
        );
    }
}

#[test]
fn locations_are_only_read_on_a_redirect_that_is_followed() {
    // Not a redirect status: the answer is taken as it is.
    let mut s = post("http://127.0.0.1:1/").into_session(Target::Absolute);
    let _first = next_request(&mut s);
    let mut head = locations(&[b"/a", b"/b"]);
    head.extend(sse());
    assert!(s.handle_head(NOW, 200, &head), "a 200 is read");
    // No redirects followed: a redirect is a status error, whatever its Locations.
    let mut s = post("http://127.0.0.1:1/")
        .max_redirects(0)
        .into_session(Target::Absolute);
    let _first = next_request(&mut s);
    assert!(s.handle_head(NOW, 302, &locations(&[b"/a", b"/b"])));
    s.handle_end(NOW, None);
    assert_eq!(end_error(&mut s).status(), Some(302));
}
