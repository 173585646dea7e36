//! HTTPS on loopback for the smol client (feature `rustls`): futures-rustls servers with
//! self-signed certificates made in the test (one per host name), hyper's HTTP/1.1 on top,
//! both on smol. A private root, and redirects: within an origin, to another host name (the
//! new name in SNI and `Host`, no credentials), and to `http` (refused before any
//! connection). The certificates, the server's HTTP side and the redirect scenarios' routes
//! and checks are shared with ssekit-hyper's TLS tests (`tls_kit`); here are the smol
//! server, the smol client and the private root's refusal.

mod tls_kit;

use std::future::Future;
use std::time::Duration;

use futures_lite::StreamExt;
use smol_hyper::rt::FuturesIo;
use ssekit::Event;
use ssekit_smol::client::{EventSource, Item};
use ssekit_smol::server::SseBody;
use ssekit_smol::Error;
use tls_kit::{counting_listener, once, source_for, Answer, Certs, Log, Site};
use tls_kit::{other_host, private_root, same_origin, to_http};

/// Runs `fut` on smol, failing the test past 60 s (a hang guard: only a hang fails,
/// never a slow run on a loaded machine).
fn run<T>(fut: impl Future<Output = T>) -> T {
    smol::block_on(futures_lite::future::or(fut, async {
        smol::Timer::after(Duration::from_secs(60)).await;
        panic!("hung: no outcome after 60 s")
    }))
}

/// An HTTPS server on 127.0.0.1 presenting [`Certs::loopback`], a [`Site`] answering by
/// `route` on smol; returns its port and log.
async fn https_server(route: impl Fn(&str) -> Answer + Send + Sync + 'static) -> (u16, Log) {
    let acceptor = futures_rustls::TlsAcceptor::from(Certs::loopback().server());
    let listener = smol::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let site = Site::new(listener.local_addr().unwrap().port(), route);
    let (port, log) = (site.port, site.log.clone());
    let accept = async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let (acceptor, site) = (acceptor.clone(), site.clone());
            let connection = async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let sni = tls.get_ref().1.server_name().map(str::to_owned);
                site.serve(FuturesIo::new(tls), sni, sse).await;
            };
            smol::spawn(connection).detach();
        }
    };
    smol::spawn(accept).detach();
    (port, log)
}

/// The smol crate's event stream body of `events`.
fn sse(events: Vec<Event>) -> SseBody {
    SseBody::new(futures_lite::stream::iter(events))
}

/// Everything `source` reports, trusting [`Certs::loopback`] and never reconnecting, to its
/// end.
async fn items(source: EventSource) -> Vec<Result<Item, Error>> {
    let source = source.tls(Certs::loopback().client());
    source.reconnect(once()).stream().collect().await
}

#[test]
fn events_over_https_with_a_private_root_and_refused_without_it() {
    run(async {
        let (port, _) = https_server(private_root::route).await;
        let got = items(source_for!(EventSource, &private_root::ASK, port)).await;
        private_root::check(&got);

        // The Mozilla roots do not include the test's certificate: one network error.
        let public_roots = source_for!(EventSource, &private_root::ASK, port).reconnect(once());
        let refused: Vec<_> = public_roots.events().collect().await;
        let Some(Err(Error::Io(e))) = refused.last() else {
            panic!("{refused:?}")
        };
        assert!(e.to_string().contains("certificate"), "{e}");
    });
}

/// A refused certificate would be refused again: with the default policy (which retries
/// network errors) the stream still ends after one attempt, with that error.
#[test]
fn a_refused_certificate_ends_the_stream_without_a_retry() {
    run(async {
        let (port, _) = https_server(private_root::route).await;
        let source = source_for!(EventSource, &private_root::ASK, port);
        let items: Vec<_> = source.stream().collect().await;
        let attempts = items
            .iter()
            .filter(|i| matches!(i, Ok(Item::Disconnected(_))))
            .count();
        assert_eq!(attempts, 1, "{items:?}");
        let Some(Err(e)) = items.last() else {
            panic!("{items:?}")
        };
        assert!(e.is_certificate_rejected(), "{e}");
    });
}

/// The protocol clients' IO (`SmolHttp`, under the ORS client and the UTCP provider) takes
/// a private root too, for its streams and its one-shot requests alike.
#[test]
fn the_protocol_clients_io_trusts_a_private_root_for_streams_and_requests() {
    use ssekit_http::client::RequestSpec;
    use ssekit_http::io::HttpIo;
    use ssekit_smol::client::SmolHttp;
    run(async {
        let (port, _) = https_server(private_root::route).await;
        let url = private_root::ASK.url(port);
        let io = SmolHttp::with_tls(Certs::loopback().client()).unwrap();
        let spec = RequestSpec::get(&url, &["http", "https"])
            .unwrap()
            .reconnect(once());
        let mut events = io.events(spec);
        let mut got = Vec::new();
        while let Some(item) = SmolHttp::next(&mut events).await {
            got.push(item);
        }
        private_root::check(&got);
        let answer = io
            .request(http::Request::get(&url).body(bytes::Bytes::new()).unwrap())
            .await
            .unwrap();
        assert_eq!(answer.status(), 200);
        assert!(String::from_utf8_lossy(answer.body()).contains("data: secret"));
        // Without the root, the same request is refused by the certificate check.
        let refused = SmolHttp::new()
            .unwrap()
            .request(http::Request::get(&url).body(bytes::Bytes::new()).unwrap())
            .await
            .unwrap_err();
        assert!(refused.to_string().contains("certificate"), "{refused}");
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
        let (port, log) = https_server(same_origin::route).await;
        let source = source_for!(EventSource, &same_origin::ASK, port);
        same_origin::check(&items(source).await, &log, port);
    });
}

#[test]
fn an_https_redirect_to_another_host_name_names_it_and_sends_no_credentials() {
    run(async {
        let (port, log) = https_server(other_host::route).await;
        let source = source_for!(EventSource, &other_host::ASK, port);
        other_host::check(&items(source).await, &log, port);
    });
}

#[test]
fn an_https_redirect_to_http_is_refused_before_connecting() {
    run(async {
        let (plain, accepted) = counting_listener();
        let to = format!("http://127.0.0.1:{plain}/events");
        let (port, log) = https_server(to_http::route(&to)).await;
        let source = source_for!(EventSource, &to_http::ASK, port);
        let source = source.response_timeout(Duration::from_secs(1));
        to_http::check(&items(source).await, &log, &to, &accepted);
    });
}
