//! The HTTPS tests on loopback, shared by both transports' `tls` tests (`ssekit-hyper`
//! includes this file by its path): one self-signed certificate per host name, a server
//! configuration that presents the one the client names in its TLS SNI, a client
//! configuration that trusts them all; the test server's answers, its HTTP/1.1 side and the
//! log of what it saw; and the redirect scenarios, each a route for the server and a check
//! of what the client reported and the server saw, which do not depend on the transport.
//! Each transport's test accepts the TLS connections on its own runtime, builds its own
//! client and runs it; the rest is here.
#![allow(dead_code)]

use std::convert::Infallible;
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use bytes::Bytes;
use http_body_util::{Either, Empty};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use ssekit::client::ReconnectConfig;
use ssekit::Event;
use ssekit_http::client::{Ended, Item};
use ssekit_http::Error;

/// The crypto provider of both sides (ring, the one the transports build with).
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Self-signed certificates, one per host name (a DNS name or an IP address), each valid
/// for its name only.
#[derive(Debug)]
pub struct Certs {
    by_name: ByName,
    roots: rustls::RootCertStore,
}

impl Certs {
    /// A certificate for each of `names`; the first is presented when the client names none.
    pub fn new(names: &[&str]) -> Certs {
        let mut by_name = Vec::new();
        let mut roots = rustls::RootCertStore::empty();
        for name in names {
            let cert = rcgen::generate_simple_self_signed(vec![(*name).to_owned()]).unwrap();
            let der: CertificateDer<'static> = cert.cert.der().clone();
            roots.add(der.clone()).unwrap();
            let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(cert.key_pair.serialize_der()));
            let key = CertifiedKey::from_der(vec![der], key, &provider()).unwrap();
            by_name.push(((*name).to_owned(), Arc::new(key)));
        }
        Certs {
            by_name: ByName(by_name),
            roots,
        }
    }

    /// A server configuration presenting the certificate of the name the client sent in its
    /// SNI, or the first one when it sent none (as for an IP address); an unknown name aborts
    /// the handshake.
    pub fn server(&self) -> Arc<rustls::ServerConfig> {
        let config = rustls::ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_cert_resolver(Arc::new(self.by_name.clone()));
        Arc::new(config)
    }

    /// A client configuration that trusts these certificates, and only them.
    pub fn client(&self) -> rustls::ClientConfig {
        rustls::ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(self.roots.clone())
            .with_no_client_auth()
    }
}

/// Certificates by the host name they are for.
#[derive(Clone, Debug)]
struct ByName(Vec<(String, Arc<CertifiedKey>)>);

impl ResolvesServerCert for ByName {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let found = match hello.server_name() {
            Some(sni) => self
                .0
                .iter()
                .find(|(name, _)| name.eq_ignore_ascii_case(sni)),
            None => self.0.first(),
        };
        found.map(|(_, key)| key.clone())
    }
}

/// One request as the HTTPS server saw it.
#[derive(Clone, Debug)]
pub struct Hit {
    /// The host name the client sent in its TLS SNI (none for an IP address).
    pub sni: Option<String>,
    pub path: String,
    pub headers: http::HeaderMap,
}

impl Hit {
    /// The value of header `name`, if it was sent.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// The requests a server saw, in order.
pub type Log = Arc<Mutex<Vec<Hit>>>;

/// What the HTTPS test server answers to a request for a path.
#[derive(Clone, Debug)]
pub enum Answer {
    /// A redirect: this status, this `Location`, in which `{port}` stands for the server's
    /// own port.
    Redirect(u16, String),
    /// `200 text/event-stream` with these events' data, then the end.
    Events(Vec<&'static str>),
}

impl Answer {
    /// This answer of the server on `port`: `{port}` in a `Location` replaced.
    pub fn on_port(self, port: u16) -> Answer {
        match self {
            Answer::Redirect(status, to) => {
                Answer::Redirect(status, to.replace("{port}", &port.to_string()))
            }
            events => events,
        }
    }
}

impl Certs {
    /// The certificates of the tests, made once: one for `127.0.0.1` (presented when the
    /// client sends no SNI) and one for `localhost`, two names of the loopback.
    pub fn loopback() -> &'static Certs {
        static CERTS: OnceLock<Certs> = OnceLock::new();
        CERTS.get_or_init(|| Certs::new(&["127.0.0.1", "localhost"]))
    }
}

/// How the test server answers each path.
pub type Route = Arc<dyn Fn(&str) -> Answer + Send + Sync>;

/// The HTTP/1.1 side of a test HTTPS server on 127.0.0.1: its port, its [`Route`] and its
/// [`Log`]. A transport's test accepts the TLS connections and hands each to
/// [`Site::serve`].
#[derive(Clone)]
pub struct Site {
    pub port: u16,
    route: Route,
    pub log: Log,
}

impl Site {
    pub fn new(port: u16, route: impl Fn(&str) -> Answer + Send + Sync + 'static) -> Site {
        Site {
            port,
            route: Arc::new(route),
            log: Log::default(),
        }
    }

    /// Serves HTTP/1.1 on `io`, a TLS connection whose client sent `sni`: each request is
    /// logged and answered by the route, its events in the body `sse` makes (the transport's
    /// `SseBody`).
    pub async fn serve<IO, B>(self, io: IO, sni: Option<String>, sse: fn(Vec<Event>) -> B)
    where
        IO: hyper::rt::Read + hyper::rt::Write + Unpin,
        B: http_body::Body<Data = Bytes> + Send + 'static,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let service =
            hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
                let path = req.uri().path().to_owned();
                let answer = (self.route)(&path).on_port(self.port);
                let headers = req.headers().clone();
                let sni = sni.clone();
                self.log.lock().unwrap().push(Hit { sni, path, headers });
                let resp = match answer {
                    Answer::Redirect(status, to) => {
                        let mut resp = http::Response::new(Either::Left(Empty::<Bytes>::new()));
                        *resp.status_mut() = http::StatusCode::from_u16(status).unwrap();
                        resp.headers_mut()
                            .insert(http::header::LOCATION, to.parse().unwrap());
                        resp
                    }
                    Answer::Events(data) => {
                        let events = data.into_iter().map(Event::message).collect();
                        ssekit_http::server::response(Either::Right(sse(events)))
                    }
                };
                async move { Ok::<_, Infallible>(resp) }
            });
        let _ = hyper::server::conn::http1::Builder::new()
            .serve_connection(io, service)
            .await;
    }
}

/// A plain TCP listener on 127.0.0.1, on a thread of its own, that counts the connections
/// it accepts and drops them; returns its port and the count.
pub fn counting_listener() -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            if conn.is_err() {
                break;
            }
            count.fetch_add(1, Ordering::SeqCst);
        }
    });
    (port, accepted)
}

/// What a client reported, either transport's (both yield `ssekit_http`'s items and error).
pub type Items = [Result<Item, Error>];

/// Never reconnecting: each test's client runs once.
pub fn once() -> ReconnectConfig {
    ReconnectConfig::default().reconnect(false)
}

/// The data of the events among `items`.
pub fn data(items: &Items) -> Vec<&str> {
    items
        .iter()
        .filter_map(|item| match item {
            Ok(Item::Event(ev)) => Some(ev.data()),
            _ => None,
        })
        .collect()
}

/// Checks that `items` open with a redirect (`status` to `to`), then a connection, carry
/// the events `events` and end cleanly.
fn assert_followed(items: &Items, status: u16, to: &str, events: &[&str]) {
    let opening: Option<Vec<Item>> = items
        .iter()
        .take(2)
        .map(|item| item.as_ref().ok().cloned())
        .collect();
    let redirected = Item::Redirected {
        status,
        to: to.parse().unwrap(),
    };
    assert_eq!(
        opening.unwrap_or_else(|| panic!("{items:?}")),
        [redirected, Item::Connected { attempt: 0 }]
    );
    assert_eq!(data(items), events);
    let clean = matches!(items.last(), Some(Ok(Item::Disconnected(Ended::Clean))));
    assert!(clean, "{items:?}");
}

/// What a scenario's client asks: a path of `https://127.0.0.1:{port}`, with these
/// headers and these secret headers (sent only within the origin).
#[derive(Debug)]
pub struct Ask {
    pub path: &'static str,
    pub headers: &'static [(&'static str, &'static str)],
    pub secret_headers: &'static [(&'static str, &'static str)],
}

impl Ask {
    /// The URL asked of the server on `port`.
    pub fn url(&self, port: u16) -> String {
        format!("https://127.0.0.1:{port}{}", self.path)
    }
}

/// A `$source` (a transport's `EventSource` type) asking `$ask` (an [`Ask`]) of the server
/// on `$port`. The transports' builders are the same methods on two types (each expands
/// `ssekit_http::event_source_builder!`) with no trait in common, so a macro writes the
/// calls once for both.
macro_rules! source_for {
    ($source:ty, $ask:expr, $port:expr) => {{
        let ask: &tls_kit::Ask = $ask;
        let mut source = <$source>::get(&ask.url($port)).unwrap();
        for (name, value) in ask.headers {
            source = source.header(name, value).unwrap();
        }
        for (name, value) in ask.secret_headers {
            source = source.secret_header(name, value).unwrap();
        }
        source
    }};
}
pub(crate) use source_for;

/// HTTPS with the test's own root: the server streams `secret`, `sauce` to any request.
pub mod private_root {
    use super::{data, Answer, Ask, Items};

    pub const ASK: Ask = Ask {
        path: "/events",
        headers: &[],
        secret_headers: &[],
    };

    pub fn route(_path: &str) -> Answer {
        Answer::Events(vec!["secret", "sauce"])
    }

    /// Checks that the client trusting the test's root got the events.
    pub fn check(items: &Items) {
        assert_eq!(data(items), ["secret", "sauce"]);
    }
}

/// An HTTPS redirect within the origin: the client asks `/old` with
/// `authorization: Bearer t`.
pub mod same_origin {
    use super::{assert_followed, Answer, Ask, Items, Log};

    pub const ASK: Ask = Ask {
        path: "/old",
        headers: &[("authorization", "Bearer t")],
        secret_headers: &[],
    };

    /// `/old` is a 308 to `/new/events` (a relative `Location`), which streams `a`, `b`.
    pub fn route(path: &str) -> Answer {
        match path {
            "/old" => Answer::Redirect(308, "/new/events".into()),
            _ => Answer::Events(vec!["a", "b"]),
        }
    }

    /// Checks that the redirect was followed to the events and both requests went to the
    /// same origin, without SNI (an IP address), with the same `Host` and the credentials.
    pub fn check(items: &Items, log: &Log, port: u16) {
        let to = format!("https://127.0.0.1:{port}/new/events");
        assert_followed(items, 308, &to, &["a", "b"]);
        let log = log.lock().unwrap();
        let paths: Vec<_> = log.iter().map(|hit| hit.path.as_str()).collect();
        assert_eq!(paths, ["/old", "/new/events"]);
        let host = format!("127.0.0.1:{port}");
        for hit in log.iter() {
            assert_eq!(hit.sni, None, "no SNI for an IP address");
            assert_eq!(hit.header("host"), Some(host.as_str()));
            assert_eq!(hit.header("authorization"), Some("Bearer t"), "same origin");
        }
    }
}

/// An HTTPS redirect to another host name on the same server and port (`127.0.0.1` to
/// `localhost`: only the host differs): the client asks `/start` with
/// `authorization: Bearer t`, the secret header `x-api-key: k` and `x-trace: t1`.
pub mod other_host {
    use super::{assert_followed, Answer, Ask, Items, Log};

    pub const ASK: Ask = Ask {
        path: "/start",
        headers: &[("authorization", "Bearer t"), ("x-trace", "t1")],
        secret_headers: &[("x-api-key", "k")],
    };

    /// `/start` is a 307 to `https://localhost:{port}/stream`, which streams `moved`.
    pub fn route(path: &str) -> Answer {
        match path {
            "/start" => Answer::Redirect(307, "https://localhost:{port}/stream".into()),
            _ => Answer::Events(vec!["moved"]),
        }
    }

    /// Checks that the redirect was followed to the events, the hop named the new host in
    /// its SNI and `Host`, and sent no credentials (the first request did) but the other
    /// headers.
    pub fn check(items: &Items, log: &Log, port: u16) {
        let to = format!("https://localhost:{port}/stream");
        assert_followed(items, 307, &to, &["moved"]);
        let log = log.lock().unwrap();
        let [asked, hop] = &log[..] else {
            panic!("{log:?}")
        };
        assert_eq!(
            (asked.path.as_str(), hop.path.as_str()),
            ("/start", "/stream")
        );
        assert_eq!(asked.sni, None, "no SNI for an IP address");
        assert_eq!(
            asked.header("host"),
            Some(format!("127.0.0.1:{port}").as_str())
        );
        assert_eq!(asked.header("authorization"), Some("Bearer t"));
        assert_eq!(asked.header("x-api-key"), Some("k"));
        assert_eq!(
            hop.sni.as_deref(),
            Some("localhost"),
            "SNI names the new host"
        );
        assert_eq!(
            hop.header("host"),
            Some(format!("localhost:{port}").as_str())
        );
        assert_eq!(hop.header("authorization"), None, "{hop:?}");
        assert_eq!(hop.header("x-api-key"), None, "a secret header: {hop:?}");
        assert_eq!(hop.header("x-trace"), Some("t1"), "other headers go on");
    }
}

/// An HTTPS redirect to `http`: every request is a 302 to `to`, an http URL of a
/// [`counting_listener`].
pub mod to_http {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::{Answer, Ask, Error, Items, Log};

    pub const ASK: Ask = Ask {
        path: "/events",
        headers: &[],
        secret_headers: &[],
    };

    /// A 302 to `to` for every path.
    pub fn route(to: &str) -> impl Fn(&str) -> Answer + Send + Sync + 'static {
        let to = to.to_owned();
        move |_| Answer::Redirect(302, to.clone())
    }

    /// Checks that the redirect was refused, the only item, after one request, and that
    /// the http listener was never reached.
    pub fn check(items: &Items, log: &Log, to: &str, accepted: &AtomicUsize) {
        let [Err(Error::Redirect(why))] = items else {
            panic!("{items:?}")
        };
        assert!(
            matches!(
                why,
                ssekit_http::RedirectError::Downgrade { status: 302, .. }
            ),
            "{why:?}"
        );
        assert_eq!(
            why.to_string(),
            format!("HTTP 302 from https to {to}: refused")
        );
        assert_eq!(log.lock().unwrap().len(), 1, "asked once, not retried");
        assert_eq!(
            accepted.load(Ordering::SeqCst),
            0,
            "the http listener was not reached"
        );
    }
}
