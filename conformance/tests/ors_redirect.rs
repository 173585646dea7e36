//! The ORS client's JSON requests (`request_json`, `ping`, `create`, ...) follow redirects
//! by the rules its event streams follow, with both transports' clients against servers on
//! 127.0.0.1: what each hop sends, the credentials a hop to another origin drops, and how
//! a loop, a refused scheme and a slow chain end.

mod kit;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Method, Response, StatusCode};
use http_body_util::Full;
use kit::{read_request, tokio_rt, within, Side, SIDES};
use serde_json::{json, Value};
use ssekit_http::ors::{Client, OrsIo};
use ssekit_http::Error;

/// A request as a server saw it.
#[derive(Clone, Debug)]
struct Seen {
    method: Method,
    path: String,
    headers: HeaderMap,
    body: Bytes,
}

/// The requests a server saw, in order.
type Log = Arc<Mutex<Vec<Seen>>>;

/// Serves `reply` (given each request and how many came before it, itself included) on a
/// fresh 127.0.0.1 port after `delay`, logging every request.
fn serve(
    delay: Duration,
    reply: impl Fn(&Seen, usize) -> Response<Full<Bytes>> + Send + Sync + 'static,
) -> (SocketAddr, Log) {
    let log = Log::default();
    let record = log.clone();
    let reply = Arc::new(reply);
    let service = hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
        let (record, reply) = (record.clone(), reply.clone());
        async move {
            let (parts, body) = read_request(req).await;
            let seen = Seen {
                method: parts.method,
                path: parts.uri.to_string(),
                headers: parts.headers,
                body,
            };
            let answer = {
                let mut log = record.lock().unwrap();
                log.push(seen.clone());
                reply(&seen, log.len())
            };
            async_io::Timer::after(delay).await;
            Ok::<_, Infallible>(answer)
        }
    });
    let listener = smol::block_on(smol::net::TcpListener::bind("127.0.0.1:0")).unwrap();
    let addr = listener.local_addr().unwrap();
    smol::spawn(ssekit_smol::server::serve(listener, service)).detach();
    (addr, log)
}

fn redirect(status: u16, location: &str) -> Response<Full<Bytes>> {
    let mut resp = Response::new(Full::new(Bytes::new()));
    *resp.status_mut() = StatusCode::from_u16(status).unwrap();
    resp.headers_mut()
        .insert("location", location.parse().unwrap());
    resp
}

fn json_reply(value: &Value) -> Response<Full<Bytes>> {
    let mut resp = Response::new(Full::new(Bytes::from(value.to_string())));
    resp.headers_mut()
        .insert("content-type", "application/json".parse().unwrap());
    resp
}

/// How a test sets up its client.
#[derive(Clone, Copy)]
struct Setup {
    max_redirects: Option<u32>,
    idle_timeout: Duration,
}

const DEFAULT: Setup = Setup {
    max_redirects: None,
    idle_timeout: Duration::from_secs(3),
};

/// `request_json` with session `sid` and API key `k`, by `ors`.
async fn request_with<T: OrsIo>(
    ors: Client<T>,
    setup: Setup,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> Result<Value, Error> {
    let mut ors = ors
        .api_key(Some("k".into()))
        .idle_timeout(setup.idle_timeout);
    if let Some(max) = setup.max_redirects {
        ors = ors.max_redirects(max);
    }
    ors.request_json(method, path, Some("sid"), body.as_ref())
        .await
}

/// `request_json(method, path)` with session `sid`, API key `k` and `body`, by the `side`
/// transport's ORS client for the server at `addr`.
fn request(
    side: Side,
    addr: SocketAddr,
    setup: Setup,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> Result<Value, Error> {
    let base = format!("http://{addr}");
    let limit = Duration::from_secs(60); // a hang guard
    match side {
        Side::Smol => {
            let ors = ssekit_smol::ors::Client::new(&base).unwrap();
            smol::block_on(within(limit, request_with(ors, setup, method, path, body)))
        }
        Side::Hyper => {
            let ors = ssekit_hyper::ors::Client::new(&base).unwrap();
            tokio_rt().block_on(within(limit, request_with(ors, setup, method, path, body)))
        }
    }
}

/// `method path` by the `side` client against a server that answers `reply` at once, which
/// must end in `Error::Redirect`: its reason, and how many requests the server saw.
fn redirect_error(
    side: Side,
    method: Method,
    path: &str,
    reply: impl Fn(&Seen, usize) -> Response<Full<Bytes>> + Send + Sync + 'static,
) -> (String, usize) {
    let (addr, log) = serve(Duration::ZERO, reply);
    let err = request(side, addr, DEFAULT, method, path, None).unwrap_err();
    let Error::Redirect(why) = err else {
        panic!("{side:?}: {err:?}")
    };
    let asked = log.lock().unwrap().len();
    (why.to_string(), asked)
}

fn header<'a>(seen: &'a Seen, name: &str) -> Option<&'a str> {
    seen.headers.get(name).map(|v| v.to_str().unwrap())
}

#[test]
fn a_308_to_the_same_origin_resends_the_post_and_its_body() {
    // As the SDK's server answers a path outside any environment: 308 to
    // `/{first_env}{path}`, a relative Location.
    for side in SIDES {
        let (addr, log) = serve(Duration::ZERO, |req, _| match req.path.as_str() {
            "/tasks" => redirect(308, "/gsm8k/tasks"),
            _ => json_reply(&json!({"tasks": [{"q": 1}], "env_name": "gsm8k"})),
        });
        let body = json!({"split": "test"});
        let answer = request(side, addr, DEFAULT, Method::POST, "/tasks", Some(body));
        assert_eq!(answer.unwrap()["env_name"], "gsm8k", "{side:?}");
        let log = log.lock().unwrap();
        let [first, second] = &log[..] else {
            panic!("{side:?}: {log:?}")
        };
        assert_eq!(
            (&second.method, second.path.as_str()),
            (&Method::POST, "/gsm8k/tasks")
        );
        assert_eq!(second.body, r#"{"split":"test"}"#, "{side:?}");
        assert_eq!(second.body, first.body);
        for name in ["content-type", "x-api-key", "x-session-id"] {
            assert_eq!(header(second, name), header(first, name), "{side:?} {name}");
        }
        assert_eq!(header(second, "x-api-key"), Some("k"));
    }
}

#[test]
fn a_303_turns_the_post_into_a_get_without_its_body() {
    for side in SIDES {
        let (addr, log) = serve(Duration::ZERO, |req, _| match req.path.as_str() {
            "/create" => redirect(303, "/created?sid=1"),
            _ => json_reply(&json!({"sid": "1"})),
        });
        let body = json!({"env_name": "gsm8k", "task_spec": {"q": 1}});
        let answer = request(side, addr, DEFAULT, Method::POST, "/create", Some(body));
        assert_eq!(answer.unwrap(), json!({"sid": "1"}), "{side:?}");
        let log = log.lock().unwrap();
        let [first, second] = &log[..] else {
            panic!("{side:?}: {log:?}")
        };
        assert_eq!(
            (&first.method, first.body.is_empty()),
            (&Method::POST, false)
        );
        assert_eq!(
            (&second.method, second.path.as_str()),
            (&Method::GET, "/created?sid=1"),
            "{side:?}"
        );
        assert!(second.body.is_empty(), "{side:?}");
        assert_eq!(header(second, "content-type"), None, "{side:?}");
        assert!(
            matches!(header(second, "content-length"), None | Some("0")),
            "{side:?}"
        );
        // The same origin: the credentials stay.
        assert_eq!(header(second, "x-api-key"), Some("k"));
        assert_eq!(header(second, "x-session-id"), Some("sid"));
    }
}

#[test]
fn a_hop_to_another_origin_sends_no_api_key_or_session_id_for_the_rest_of_the_request() {
    for side in SIDES {
        // A sends the ping to B, which sends it back to A: the way back does not bring the
        // credentials back either.
        let b_to_a = Arc::new(OnceLock::<String>::new());
        let back = b_to_a.clone();
        let (b, seen_by_b) = serve(Duration::ZERO, move |_, _| {
            redirect(307, back.get().expect("A's address"))
        });
        let to_b = format!("http://{b}/ping");
        let (a, seen_by_a) = serve(Duration::ZERO, move |req, _| match req.path.as_str() {
            "/ping" => redirect(307, &to_b),
            _ => json_reply(&json!({"status": "ok"})),
        });
        b_to_a.set(format!("http://{a}/back")).unwrap();
        let answer = request(side, a, DEFAULT, Method::POST, "/ping", None);
        assert_eq!(answer.unwrap(), json!({"status": "ok"}), "{side:?}");
        let (seen_by_a, seen_by_b) = (seen_by_a.lock().unwrap(), seen_by_b.lock().unwrap());
        let ([ping, back], [at_b]) = (&seen_by_a[..], &seen_by_b[..]) else {
            panic!("{side:?}: {seen_by_a:?} {seen_by_b:?}")
        };
        assert_eq!(header(ping, "x-api-key"), Some("k"));
        assert_eq!(header(ping, "x-session-id"), Some("sid"));
        for (seen, at) in [(at_b, "B"), (back, "A after B")] {
            assert_eq!(seen.method, Method::POST, "{side:?} {at}");
            for name in ["x-api-key", "x-session-id"] {
                assert_eq!(header(seen, name), None, "{side:?}: {name} sent to {at}");
            }
            // Other headers go on.
            assert_eq!(header(seen, "content-type"), Some("application/json"));
        }
        assert_eq!(back.path, "/back");
    }
}

#[test]
fn a_redirect_loop_ends_in_a_redirect_error_after_the_limit() {
    for side in SIDES {
        let hops = |_: &Seen, n: usize| redirect(307, &format!("/hop/{n}"));
        let (why, asked) = redirect_error(side, Method::GET, "/health", hops);
        assert!(why.starts_with("more than 10 redirects"), "{side:?}: {why}");
        assert_eq!(asked, 11, "{side:?}: the first request and 10 hops");

        // The limit is the client's to set; 0 follows none (the redirect is the answer).
        let (addr, log) = serve(Duration::ZERO, hops);
        let two = Setup {
            max_redirects: Some(2),
            ..DEFAULT
        };
        let err = request(side, addr, two, Method::GET, "/health", None).unwrap_err();
        assert!(matches!(&err, Error::Redirect(_)), "{side:?}: {err:?}");
        assert_eq!(log.lock().unwrap().len(), 3, "{side:?}");
        let none = Setup {
            max_redirects: Some(0),
            ..DEFAULT
        };
        let err = request(side, addr, none, Method::GET, "/health", None).unwrap_err();
        assert_eq!(err.status(), Some(307), "{side:?}: {err:?}");
        assert_eq!(log.lock().unwrap().len(), 4, "{side:?}");
    }
}

#[test]
fn a_redirect_to_a_scheme_the_client_cannot_speak_is_refused_at_once() {
    for side in SIDES {
        let to_ftp = |_: &Seen, _| redirect(308, "ftp://127.0.0.1/x");
        let (why, asked) = redirect_error(side, Method::POST, "/ping", to_ftp);
        assert!(why.contains("scheme"), "{side:?}: {why}");
        assert_eq!(asked, 1, "{side:?}: not retried");
    }
}

#[test]
fn location_fields_naming_two_targets_are_refused_without_a_hop() {
    for side in SIDES {
        let (why, asked) = redirect_error(side, Method::GET, "/health", |_, _| {
            let mut resp = redirect(302, "/a");
            resp.headers_mut().append("location", "/b".parse().unwrap());
            resp
        });
        assert!(
            why.contains("2 different Location values"),
            "{side:?}: {why}"
        );
        assert_eq!(asked, 1, "{side:?}: neither target asked");
    }
}

#[test]
fn the_idle_timeout_bounds_the_whole_chain_of_redirects() {
    for side in SIDES {
        // Each hop answers within the timeout, the chain does not.
        let (addr, log) = serve(Duration::from_millis(100), |_, n| {
            redirect(307, &format!("/hop/{n}"))
        });
        let slow = Setup {
            max_redirects: None,
            idle_timeout: Duration::from_millis(350),
        };
        // The outcome is the idle timeout's (a hang guard bounds the run): the chain ends in
        // `TimedOut` after fewer hops than the 10 redirects a per-hop timeout would follow,
        // since each hop takes at least 100 ms (timers never fire early), so at most 4
        // requests start within the chain's 350 ms. How soon after 350 ms the error comes,
        // and whether a loaded machine let more than one hop through, only measure the
        // machine (a `< 2 s` bound and "at least 2 hops" were asserted before).
        let err = request(side, addr, slow, Method::GET, "/health", None).unwrap_err();
        assert!(
            matches!(&err, Error::Io(e) if e.kind() == std::io::ErrorKind::TimedOut),
            "{side:?}: {err:?}"
        );
        let hops = log.lock().unwrap().len();
        assert!((1..=4).contains(&hops), "{side:?}: {hops} requests");
    }
}
