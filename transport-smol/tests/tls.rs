//! HTTPS on loopback for the smol client (feature `rustls`): futures-rustls servers with
//! self-signed certificates made in the test (one per host name, see `tls_certs`), hyper's
//! HTTP/1.1 on top, both on smol. A private root, and redirects: within an origin, to
//! another host name (the new name in SNI and `Host`, no credentials), and to `http`
//! (refused before any connection).

mod tls_certs;

use std::convert::Infallible;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_lite::StreamExt;
use http_body_util::{Either, Empty};
use hyper::service::service_fn;
use smol_hyper::rt::FuturesIo;
use ssekit::client::ReconnectConfig;
use ssekit::Event;
use ssekit_smol::client::{Ended, EventSource, Item};
use ssekit_smol::server::{response, SseBody};
use ssekit_smol::Error;
use tls_certs::{Answer, Certs, Hit, Log};

/// Runs `fut` on smol, failing the test past 5 s.
fn run<T>(fut: impl Future<Output = T>) -> T {
    smol::block_on(futures_lite::future::or(fut, async {
        smol::Timer::after(Duration::from_secs(5)).await;
        panic!("test timed out")
    }))
}

/// The certificates of the tests: one for `127.0.0.1` (presented when the client sends no
/// SNI) and one for `localhost`, two names of the loopback.
fn certs() -> Certs {
    Certs::new(&["127.0.0.1", "localhost"])
}

/// An HTTPS server on 127.0.0.1 presenting `certs`, answering each request with
/// `route(path)` and logging it; returns its port and the log.
async fn https_server(
    certs: &Certs,
    route: impl Fn(&str) -> Answer + Send + Sync + 'static,
) -> (u16, Log) {
    let acceptor = futures_rustls::TlsAcceptor::from(certs.server());
    let listener = smol::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let log = Log::default();
    let route = Arc::new(route);
    let record = log.clone();
    smol::spawn(async move {
        loop {
            let (tcp, _) = listener.accept().await.unwrap();
            let (acceptor, route, record) = (acceptor.clone(), route.clone(), record.clone());
            smol::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let sni = tls.get_ref().1.server_name().map(str::to_owned);
                let service = service_fn(move |req: http::Request<hyper::body::Incoming>| {
                    let path = req.uri().path().to_owned();
                    let answer = route(&path).on_port(port);
                    let headers = req.headers().clone();
                    let sni = sni.clone();
                    record.lock().unwrap().push(Hit { sni, path, headers });
                    async move { Ok::<_, Infallible>(respond(answer)) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(FuturesIo::new(tls), service)
                    .await;
            })
            .detach();
        }
    })
    .detach();
    (port, log)
}

fn respond(answer: Answer) -> http::Response<Either<Empty<Bytes>, SseBody>> {
    match answer {
        Answer::Redirect(status, to) => {
            let mut resp = http::Response::new(Either::Left(Empty::new()));
            *resp.status_mut() = http::StatusCode::from_u16(status).unwrap();
            resp.headers_mut()
                .insert(http::header::LOCATION, to.parse().unwrap());
            resp
        }
        Answer::Events(data) => {
            let events = futures_lite::stream::iter(data.into_iter().map(Event::message));
            response(SseBody::new(events)).map(Either::Right)
        }
    }
}

/// Everything `source` reports, trusting `certs` and never reconnecting, to its end.
async fn items(source: EventSource, certs: &Certs) -> Vec<Result<Item, Error>> {
    let once = ReconnectConfig::default().reconnect(false);
    source
        .tls(certs.client())
        .reconnect(once)
        .stream()
        .collect()
        .await
}

/// The data of the events among `items`.
fn data(items: &[Result<Item, Error>]) -> Vec<&str> {
    items
        .iter()
        .filter_map(|item| match item {
            Ok(Item::Event(ev)) => Some(ev.data()),
            _ => None,
        })
        .collect()
}

/// The first two items, which must be `Ok`.
fn opening(items: &[Result<Item, Error>]) -> Vec<Item> {
    let first = items.iter().take(2).map(|item| item.as_ref().ok().cloned());
    first
        .collect::<Option<_>>()
        .unwrap_or_else(|| panic!("{items:?}"))
}

/// Whether `items` end with a clean end of the stream.
fn ends_clean(items: &[Result<Item, Error>]) -> bool {
    matches!(items.last(), Some(Ok(Item::Disconnected(Ended::Clean))))
}

fn redirected(status: u16, to: &str) -> Item {
    Item::Redirected {
        status,
        to: to.parse().unwrap(),
    }
}

#[test]
fn events_over_https_with_a_private_root_and_refused_without_it() {
    run(async {
        let certs = certs();
        let (port, _) = https_server(&certs, |_| Answer::Events(vec!["secret", "sauce"])).await;
        let url = format!("https://127.0.0.1:{port}/events");
        let got = items(EventSource::get(&url).unwrap(), &certs).await;
        assert_eq!(data(&got), ["secret", "sauce"]);

        // The Mozilla roots do not include the test's certificate: one network error.
        let refused: Vec<_> = EventSource::get(&url)
            .unwrap()
            .reconnect(ReconnectConfig::default().reconnect(false))
            .events()
            .collect()
            .await;
        let Some(Err(Error::Io(e))) = refused.last() else {
            panic!("{refused:?}")
        };
        assert!(e.to_string().contains("certificate"), "{e}");
    });
}

#[test]
fn https_urls_are_accepted_and_other_schemes_refused() {
    assert!(EventSource::get("https://127.0.0.1:1/").is_ok());
    assert!(EventSource::get("ftp://127.0.0.1:1/").is_err());
}

#[test]
fn an_https_redirect_within_the_origin_is_followed_with_its_credentials() {
    run(async {
        let certs = certs();
        let (port, log) = https_server(&certs, |path| match path {
            "/old" => Answer::Redirect(308, "/new/events".into()),
            _ => Answer::Events(vec!["a", "b"]),
        })
        .await;
        let source = EventSource::get(&format!("https://127.0.0.1:{port}/old"))
            .unwrap()
            .header("authorization", "Bearer t")
            .unwrap();
        let got = items(source, &certs).await;
        let to = format!("https://127.0.0.1:{port}/new/events");
        assert_eq!(
            opening(&got),
            [redirected(308, &to), Item::Connected { attempt: 0 }]
        );
        assert_eq!(data(&got), ["a", "b"]);
        assert!(ends_clean(&got), "{got:?}");
        let log = log.lock().unwrap();
        let paths: Vec<_> = log.iter().map(|hit| hit.path.as_str()).collect();
        assert_eq!(paths, ["/old", "/new/events"]);
        let host = format!("127.0.0.1:{port}");
        for hit in log.iter() {
            assert_eq!(hit.sni, None, "no SNI for an IP address");
            assert_eq!(hit.header("host"), Some(host.as_str()));
            assert_eq!(hit.header("authorization"), Some("Bearer t"), "same origin");
        }
    });
}

#[test]
fn an_https_redirect_to_another_host_name_names_it_and_sends_no_credentials() {
    run(async {
        let certs = certs();
        // The same server and port under another name: only the host differs.
        let (port, log) = https_server(&certs, |path| match path {
            "/start" => Answer::Redirect(307, "https://localhost:{port}/stream".into()),
            _ => Answer::Events(vec!["moved"]),
        })
        .await;
        let source = EventSource::get(&format!("https://127.0.0.1:{port}/start"))
            .unwrap()
            .header("authorization", "Bearer t")
            .unwrap()
            .secret_header("x-api-key", "k")
            .unwrap()
            .header("x-trace", "t1")
            .unwrap();
        let got = items(source, &certs).await;
        let to = format!("https://localhost:{port}/stream");
        assert_eq!(
            opening(&got),
            [redirected(307, &to), Item::Connected { attempt: 0 }]
        );
        assert_eq!(data(&got), ["moved"]);
        assert!(ends_clean(&got), "{got:?}");
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
    });
}

/// A plain TCP listener on 127.0.0.1 that counts the connections it accepts and drops
/// them; returns its port and the count.
async fn counting_listener() -> (u16, Arc<AtomicUsize>) {
    let listener = smol::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    smol::spawn(async move {
        while listener.accept().await.is_ok() {
            count.fetch_add(1, Ordering::SeqCst);
        }
    })
    .detach();
    (port, accepted)
}

#[test]
fn an_https_redirect_to_http_is_refused_before_connecting() {
    run(async {
        let certs = certs();
        let (plain, accepted) = counting_listener().await;
        let to = format!("http://127.0.0.1:{plain}/events");
        let location = to.clone();
        let (port, log) =
            https_server(&certs, move |_| Answer::Redirect(302, location.clone())).await;
        let source = EventSource::get(&format!("https://127.0.0.1:{port}/events"))
            .unwrap()
            .response_timeout(Duration::from_secs(1));
        let got = items(source, &certs).await;
        let [Err(Error::Redirect(why))] = &got[..] else {
            panic!("{got:?}")
        };
        assert_eq!(why, &format!("HTTP 302 from https to {to}: refused"));
        assert_eq!(log.lock().unwrap().len(), 1, "asked once, not retried");
        assert_eq!(
            accepted.load(Ordering::SeqCst),
            0,
            "the http listener was not reached"
        );
    });
}
