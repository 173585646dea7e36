//! The HTTP client session (`ssekit_http::client::Session`) driven as a transport drives it,
//! with arbitrary response heads (statuses, `Location` fields, content types), body bytes,
//! ends, connection errors and times (even decreasing): no panic, and
//! - polling ends: the items ready at any moment are bounded by the input;
//! - no busy loop: after `handle_timeout(t)`, a deadline the session waits for is after `t`;
//! - every request goes to a URL with a host and a scheme the transport speaks;
//! - a fresh attempt starts from the URL the stream was opened with; a redirected one sends
//!   no credentials (configured, secret or set by the hook) once a hop left the opened
//!   origin (compared here from the URL's text, not with the crate's `same_origin`);
//! - 303, and 301 or 302 after a `POST`, turn the request into a `GET` without a body or
//!   `Content-Type`; other redirects resend the same method and body;
//! - a redirect is followed only when its `Location` fields name one target (the same
//!   non-empty UTF-8 value, spaces and tabs around it aside); one that is to be followed
//!   but names none (several different values, an empty one) ends the stream with
//!   `Error::Redirect`, without a hop;
//! - every request asks for `Accept-Encoding: identity`, and a 200 event stream in another
//!   content coding ends the stream with `Error::ContentEncoding`, without a retry;
//! - a stream ends with `Error::Truncated` only when it does not reconnect.
#![no_main]

use arbitrary::Arbitrary;
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Uri};
use libfuzzer_sys::fuzz_target;
use ssekit::client::ReconnectConfig;
use ssekit::decode::{Mode, OnLimit};
use ssekit::{Config, Instant, Limits};
use ssekit_http::client::{Item, RequestSpec, Session, Step, Target};

const OPENED: &str = "http://127.0.0.1:8/start/here?q";

#[derive(Arbitrary, Debug)]
struct Setup {
    post: bool,
    origin_form: bool,
    max_redirects: u8,
    max_line: u16,
    resync: bool,
    raw: bool,
    max_attempts: Option<u8>,
    idle_ms: Option<u16>,
    /// Without reconnecting.
    once: bool,
}

#[derive(Arbitrary, Debug)]
enum Op {
    /// A response head: a status (folded into 100..=599), `Location` fields (often none or
    /// one, sometimes copies of the first, sometimes others), maybe an event-stream content
    /// type, maybe `Content-Encoding` fields ([`content_encoding`]).
    Head {
        status: u16,
        location: Location,
        more: Vec<More>,
        event_stream: bool,
        encoding: u8,
    },
    Data(Vec<u8>),
    End {
        error: bool,
    },
    ConnectError,
    /// Time moves by this many milliseconds (wrapping into the past when `back`).
    Advance {
        ms: u16,
        back: bool,
    },
}

/// Another `Location` field after the first.
#[derive(Arbitrary, Debug)]
enum More {
    /// The first one again, with spaces or tabs around it (`pad`: bit 0 before, bit 1 after).
    Copy { pad: u8 },
    /// Another value.
    Other(Location),
}

/// A `Location` header: none, any text or bytes, or one built to reach the interesting
/// cases (a path on the same origin, another host, port or scheme).
#[derive(Arbitrary, Debug, Clone)]
enum Location {
    None,
    Raw(String),
    Bytes(Vec<u8>),
    Path(String),
    Url {
        https: bool,
        host: u8,
        port: u8,
        path: String,
    },
}

impl Location {
    fn bytes(self) -> Option<Vec<u8>> {
        match self {
            Location::None => None,
            Location::Raw(text) => Some(text.into_bytes()),
            Location::Bytes(bytes) => Some(bytes),
            Location::Path(path) => Some(format!("/{path}").into_bytes()),
            Location::Url {
                https,
                host,
                port,
                path,
            } => Some(format!(
                "{}://127.0.0.{}:{}/{path}",
                if https { "https" } else { "http" },
                host % 3,
                8 + port % 2
            ))
            .map(String::into_bytes),
        }
    }
}

/// The `Location` fields of a head: `first`, then `more`, those that are valid header
/// values.
fn location_fields(first: Location, more: Vec<More>) -> Vec<HeaderValue> {
    let first = first.bytes();
    let mut fields = Vec::new();
    if let Some(value) = first.clone() {
        fields.push(value);
    }
    for field in more {
        match (field, &first) {
            (More::Copy { pad }, Some(first)) => {
                let mut value = Vec::new();
                if pad & 1 != 0 {
                    value.extend(b" \t");
                }
                value.extend(first);
                if pad & 2 != 0 {
                    value.extend(b"\t ");
                }
                fields.push(value);
            }
            (More::Copy { .. }, None) => {}
            (More::Other(other), _) => fields.extend(other.bytes()),
        }
    }
    fields
        .into_iter()
        .filter_map(|v| HeaderValue::from_bytes(&v).ok())
        .collect()
}

/// Whether these `Location` fields name one target: all the same value, spaces and tabs
/// around it aside, and that value is UTF-8 and not empty (checked here from the bytes,
/// not with the crate's own `redirect::location`).
fn one_target(fields: &[HeaderValue]) -> bool {
    let trimmed = |v: &HeaderValue| {
        let text = v.as_bytes();
        let start = text.iter().position(|b| !b" \t".contains(b));
        let end = text.iter().rposition(|b| !b" \t".contains(b));
        match (start, end) {
            (Some(start), Some(end)) => text[start..=end].to_vec(),
            _ => Vec::new(),
        }
    };
    let Some(first) = fields.first().map(trimmed) else {
        return false;
    };
    !first.is_empty()
        && std::str::from_utf8(&first).is_ok()
        && fields.iter().all(|v| trimmed(v) == first)
}

/// The `Content-Encoding` fields of a head (none most often) and whether they leave the
/// body as it is.
fn content_encoding(pick: u8) -> (&'static [&'static str], bool) {
    match pick % 6 {
        0..=2 => (&[], true),
        3 => (&["identity"], true),
        4 => (&["gzip"], false),
        _ => (&["identity", "br"], false),
    }
}

/// What the transport is doing, from the last step.
enum Phase {
    Connecting,
    Reading,
    Idle,
    Over,
}

/// The origin of an absolute URL, read from its text (not with the crate's own
/// `same_origin`, so that a bug there shows): lower-case scheme and host, and the port, the
/// scheme's default when none is written.
fn origin(url: &str) -> (String, String, u16) {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let scheme = scheme.to_ascii_lowercase();
    let authority = rest.split(['/', '?']).next().unwrap_or_default();
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let (host, port) = match host_port.strip_prefix('[') {
        Some(v6) => {
            let (host, after) = v6.split_once(']').unwrap_or((v6, ""));
            (host, after.strip_prefix(':'))
        }
        None => match host_port.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (host_port, None),
        },
    };
    let default = if scheme == "https" { 443 } else { 80 };
    let port = port
        .filter(|p| !p.is_empty())
        .map_or(default, |p| p.parse().unwrap_or(0));
    (scheme, host.to_ascii_lowercase(), port)
}

/// What the checks remember across requests.
struct Watch {
    opened: Uri,
    /// Whether a hop of this attempt left the opened origin.
    left_origin: bool,
    /// The previous request of this attempt: method and body.
    last: Option<(http::Method, Bytes)>,
    /// Redirects followed so far (all attempts).
    hops: u64,
    /// Whether the stream ended with `Error::Redirect`.
    redirect_refused: bool,
    /// Whether the stream ended with `Error::ContentEncoding`.
    encoding_refused: bool,
    /// Whether the stream ended with `Error::Truncated`.
    truncated: bool,
}

impl Watch {
    /// Checks `request` to [`Session::uri`]; `redirected`: the status of the redirect
    /// that led to it.
    fn request(
        &mut self,
        session: &Session,
        request: &http::Request<Bytes>,
        redirected: Option<u16>,
    ) {
        let uri = session.uri();
        assert!(uri.host().is_some_and(|h| !h.is_empty()), "{uri}");
        assert!(matches!(uri.scheme_str(), Some("http" | "https")), "{uri}");
        assert_eq!(
            request
                .headers()
                .get_all("accept-encoding")
                .iter()
                .collect::<Vec<_>>(),
            ["identity"],
            "to {uri}"
        );
        let (method, body) = (request.method().clone(), request.body().clone());
        if let Some(status) = redirected {
            self.hops += 1;
            self.left_origin |= origin(&uri.to_string()) != origin(&self.opened.to_string());
            let Some((was, was_body)) = self.last.take() else {
                panic!("a redirect without a request before it")
            };
            let to_get = status == 303 && was != http::Method::HEAD
                || matches!(status, 301 | 302) && was == http::Method::POST;
            if to_get {
                assert_eq!(method, http::Method::GET, "after {status}");
                assert!(body.is_empty(), "a body after {status}");
                assert!(request.headers().get("content-type").is_none());
            } else {
                assert_eq!((&method, &body), (&was, &was_body), "after {status}");
            }
        } else {
            assert_eq!(
                uri, &self.opened,
                "a fresh attempt starts at the opened URL"
            );
            self.left_origin = false;
        }
        self.last = Some((method, body));
        if self.left_origin {
            for name in [
                "authorization",
                "cookie",
                "x-api-key",
                "proxy-authorization",
            ] {
                assert!(
                    request.headers().get(name).is_none(),
                    "{name} sent to {uri} after leaving the opened origin"
                );
            }
        }
    }
}

/// Polls until the session asks for something other than handing out an item.
fn settle(session: &mut Session, now: Instant, budget: usize, watch: &mut Watch) -> Phase {
    let mut redirected = None;
    for _ in 0..budget {
        match session.poll(now) {
            Step::Item(Item::Redirected { status, .. }) => redirected = Some(status),
            Step::Item(_) => {}
            Step::Connect { request, .. } => {
                watch.request(session, &request, redirected);
                return Phase::Connecting;
            }
            Step::Close => {}
            Step::Wait { read: true, .. } => return Phase::Reading,
            Step::Wait { read: false, .. } => return Phase::Idle,
            Step::End(end) => {
                watch.redirect_refused = matches!(end, Some(ssekit_http::Error::Redirect(_)));
                watch.encoding_refused =
                    matches!(end, Some(ssekit_http::Error::ContentEncoding(_)));
                watch.truncated = matches!(end, Some(ssekit_http::Error::Truncated));
                return Phase::Over;
            }
            other => panic!("a step this driver does not know: {other:?}"),
        }
    }
    panic!("more than {budget} items at once");
}

/// `handle_timeout(now)`, then: a deadline the session waits for is after `now`.
fn timeout(session: &mut Session, now: Instant, budget: usize, watch: &mut Watch) -> Phase {
    session.handle_timeout(now);
    let phase = settle(session, now, budget, watch);
    if let Phase::Reading | Phase::Idle = phase {
        if let Step::Wait {
            deadline: Some(at), ..
        } = session.poll(now)
        {
            assert!(at > now, "busy loop: waits until {at:?}, now {now:?}");
        }
    }
    phase
}

fuzz_target!(|input: (Setup, Vec<Op>)| {
    let (setup, ops) = input;
    let mut decoder = Config::default()
        .limits(Limits::default().max_line(usize::from(setup.max_line).max(1)))
        .on_limit(if setup.resync {
            OnLimit::Resync
        } else {
            OnLimit::FailStop
        });
    if setup.raw {
        decoder = decoder.mode(Mode::Raw);
    }
    let mut policy = ReconnectConfig::default()
        .jitter(0)
        .reconnect(!setup.once)
        .max_attempts(setup.max_attempts.map(u32::from));
    if let Some(ms) = setup.idle_ms {
        policy = policy.idle_timeout(Some(core::time::Duration::from_millis(u64::from(ms))));
    }
    let spec = if setup.post {
        RequestSpec::post(OPENED, "{}", &["http", "https"])
    } else {
        RequestSpec::get(OPENED, &["http", "https"])
    };
    let Ok(spec) = spec
        .and_then(|s| s.header("authorization", "Bearer t"))
        .and_then(|s| s.header("cookie", "c=1"))
        .and_then(|s| s.secret_header("x-api-key", "k"))
        .and_then(|s| s.header("proxy-authorization", "Basic p"))
        .and_then(|s| s.header("content-type", "application/json"))
    else {
        panic!("a valid spec")
    };
    // A hook that sets a credential of its own on every request.
    let spec = spec
        .on_connect(|req| {
            req.headers_mut()
                .insert("cookie", HeaderValue::from_static("hook=1"));
        })
        .decoder(decoder)
        .reconnect(policy)
        .max_redirects(u32::from(setup.max_redirects % 8));
    let target = if setup.origin_form {
        Target::Origin
    } else {
        Target::Absolute
    };
    let mut session = spec.into_session(target);
    let mut watch = Watch {
        opened: OPENED.parse().unwrap_or_default(),
        left_origin: false,
        last: None,
        hops: 0,
        redirect_refused: false,
        encoding_refused: false,
        truncated: false,
    };
    let mut now_ms: u64 = 1 << 32;
    let at = |ms: u64| Instant::from_millis(ms);
    // Items ready at once: a few per step, plus at most one per body byte fed since.
    let mut budget = 64;
    let mut phase = settle(&mut session, at(now_ms), budget, &mut watch);
    for op in ops {
        let now = at(now_ms);
        phase = match (phase, op) {
            (Phase::Over, _) => return,
            (
                Phase::Connecting,
                Op::Head {
                    status,
                    location,
                    more,
                    event_stream,
                    encoding,
                },
            ) => {
                let mut head = HeaderMap::new();
                let (codings, identity) = content_encoding(encoding);
                for coding in codings {
                    head.append("content-encoding", HeaderValue::from_static(coding));
                }
                let fields = location_fields(location, more);
                for value in &fields {
                    head.append("location", value.clone());
                }
                if event_stream {
                    head.insert(
                        "content-type",
                        HeaderValue::from_static("text/event-stream"),
                    );
                }
                let status = 100 + status % 500;
                let hops = watch.hops;
                session.handle_head(now, status, &head);
                let phase = settle(&mut session, now, budget, &mut watch);
                let hopped = watch.hops > hops;
                let followed = matches!(status, 301 | 302 | 303 | 307 | 308)
                    && setup.max_redirects % 8 > 0
                    && !fields.is_empty();
                if hopped {
                    assert!(
                        one_target(&fields),
                        "HTTP {status} followed with {fields:?}"
                    );
                }
                if status == 200 && event_stream && !identity {
                    assert!(
                        matches!(phase, Phase::Over) && watch.encoding_refused,
                        "a 200 event stream in {codings:?} was not refused for good"
                    );
                }
                if followed && !one_target(&fields) {
                    assert!(
                        matches!(phase, Phase::Over) && watch.redirect_refused,
                        "HTTP {status} with {fields:?} did not end in Error::Redirect"
                    );
                }
                phase
            }
            (Phase::Connecting, _) => {
                // Refused, or no response within the response timeout.
                session.handle_connect_error(now, std::io::Error::other("refused").into());
                settle(&mut session, now, budget, &mut watch)
            }
            (Phase::Reading, Op::Data(bytes)) => {
                budget += bytes.len();
                session.handle_data(now, Bytes::from(bytes));
                settle(&mut session, now, budget, &mut watch)
            }
            (Phase::Reading, Op::End { error }) => {
                session.handle_end(
                    now,
                    error.then(|| std::io::Error::from(std::io::ErrorKind::ConnectionReset).into()),
                );
                settle(&mut session, now, budget, &mut watch)
            }
            (_, Op::Advance { ms, back }) => {
                now_ms = if back {
                    now_ms.saturating_sub(u64::from(ms))
                } else {
                    now_ms + u64::from(ms)
                };
                timeout(&mut session, at(now_ms), budget, &mut watch)
            }
            (Phase::Idle, _) | (Phase::Reading, _) => {
                // Nothing arrives: the transport waits for the deadline, if there is one.
                match session.poll(now) {
                    Step::Wait {
                        deadline: Some(d), ..
                    } => {
                        now_ms = now_ms.max(d.as_millis());
                        timeout(&mut session, at(now_ms), budget, &mut watch)
                    }
                    _ => settle(&mut session, now, budget, &mut watch),
                }
            }
        };
        assert!(
            !watch.truncated || setup.once,
            "Error::Truncated from a stream that reconnects"
        );
    }
});
