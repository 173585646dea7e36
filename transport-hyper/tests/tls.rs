//! HTTPS on loopback: tokio-rustls servers with self-signed certificates made in the test
//! (one per host name), hyper's HTTP/1.1 on top. A private root, and redirects: within an
//! origin, to another host name (the new name in SNI and `Host`, no credentials), and to
//! `http` (refused before any connection). The certificates, the server's HTTP side and
//! the redirect scenarios' routes and checks are shared with ssekit-smol's TLS tests
//! (`tls_kit`); here are the tokio server, hyper's client and the private root's refusal.
#![cfg(feature = "rustls")]

// Shared with ssekit-smol's TLS tests.
#[path = "../../transport-smol/tests/tls_kit/mod.rs"]
mod tls_kit;

use std::future::Future;
use std::time::Duration;

use futures_util::StreamExt;
use hyper_util::rt::TokioIo;
use ssekit::Event;
use ssekit_hyper::client::{https_client, EventSource, Item};
use ssekit_hyper::server::SseBody;
use ssekit_hyper::Error;
use tls_kit::{counting_listener, once, source_for, Answer, Certs, Log, Site};
use tls_kit::{other_host, private_root, same_origin, to_http};

/// `fut`, failing the test past 5 s.
async fn within<T>(fut: impl Future<Output = T>) -> T {
    // Only a hang fails: a loaded machine may be slow, never this slow.
    tokio::time::timeout(Duration::from_secs(60), fut)
        .await
        .expect("hung: no outcome after 60 s")
}

/// An HTTPS server on 127.0.0.1 presenting [`Certs::loopback`], a [`Site`] answering by
/// `route` on tokio; returns its port and log.
async fn https_server(route: impl Fn(&str) -> Answer + Send + Sync + 'static) -> (u16, Log) {
    let acceptor = tokio_rustls::TlsAcceptor::from(Certs::loopback().server());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let site = Site::new(listener.local_addr().unwrap().port(), route);
    let (port, log) = (site.port, site.log.clone());
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let (acceptor, site) = (acceptor.clone(), site.clone());
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let sni = tls.get_ref().1.server_name().map(str::to_owned);
                site.serve(TokioIo::new(tls), sni, sse).await;
            });
        }
    });
    (port, log)
}

/// hyper's event stream body of `events`.
fn sse(events: Vec<Event>) -> SseBody {
    SseBody::new(futures_util::stream::iter(events))
}

/// Everything `source` reports, trusting [`Certs::loopback`] and never reconnecting, to its
/// end.
async fn items(source: EventSource) -> Vec<Result<Item, Error>> {
    let source = source.client(https_client(Certs::loopback().client()));
    source.reconnect(once()).stream().collect().await
}

#[tokio::test]
async fn events_over_https_with_a_private_root_and_refused_without_it() {
    within(async {
        let (port, _) = https_server(private_root::route).await;
        let got = items(source_for!(EventSource, &private_root::ASK, port)).await;
        private_root::check(&got);

        // The default client trusts only the public roots: the self-signed certificate is
        // refused.
        let public_roots = source_for!(EventSource, &private_root::ASK, port).reconnect(once());
        let refused: Vec<_> = public_roots.events().collect().await;
        assert!(
            matches!(refused.as_slice(), [Err(Error::Http(_))]),
            "{refused:?}"
        );
        let line = refused[0].as_ref().unwrap_err().to_string();
        assert!(line.contains("certificate"), "{line}");
    })
    .await;
}

/// A refused certificate would be refused again: with the default policy (which retries
/// network errors) the stream still ends after one attempt, with that error.
#[tokio::test]
async fn a_refused_certificate_ends_the_stream_without_a_retry() {
    within(async {
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
    })
    .await;
}

#[tokio::test]
async fn an_https_redirect_within_the_origin_is_followed_with_its_credentials() {
    within(async {
        let (port, log) = https_server(same_origin::route).await;
        let source = source_for!(EventSource, &same_origin::ASK, port);
        same_origin::check(&items(source).await, &log, port);
    })
    .await;
}

#[tokio::test]
async fn an_https_redirect_to_another_host_name_names_it_and_sends_no_credentials() {
    within(async {
        let (port, log) = https_server(other_host::route).await;
        let source = source_for!(EventSource, &other_host::ASK, port);
        other_host::check(&items(source).await, &log, port);
    })
    .await;
}

#[tokio::test]
async fn an_https_redirect_to_http_is_refused_before_connecting() {
    within(async {
        let (plain, accepted) = counting_listener();
        let to = format!("http://127.0.0.1:{plain}/events");
        let (port, log) = https_server(to_http::route(&to)).await;
        let source = source_for!(EventSource, &to_http::ASK, port);
        let source = source.response_timeout(Duration::from_secs(1));
        to_http::check(&items(source).await, &log, &to, &accepted);
    })
    .await;
}
