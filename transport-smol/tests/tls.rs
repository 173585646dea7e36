//! HTTPS on loopback for the smol client (feature `rustls`): a futures-rustls server with a
//! self-signed certificate made in the test, hyper's HTTP/1.1 on top, both on smol.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use futures_lite::StreamExt;
use hyper::service::service_fn;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use smol_hyper::rt::FuturesIo;
use ssekit::client::ReconnectConfig;
use ssekit::Event;
use ssekit_smol::client::EventSource;
use ssekit_smol::server::{response, SseBody};
use ssekit_smol::Error;

fn run<T>(fut: impl Future<Output = T>) -> T {
    smol::block_on(futures_lite::future::or(fut, async {
        smol::Timer::after(Duration::from_secs(10)).await;
        panic!("test timed out")
    }))
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// An HTTPS server on 127.0.0.1 answering every request with two events; returns its
/// address and the certificate to trust.
async fn https_server() -> (SocketAddr, CertificateDer<'static>) {
    let cert =
        rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
            .unwrap();
    let cert_der: CertificateDer<'static> = cert.cert.der().clone();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(cert.key_pair.serialize_der()));
    let server_tls = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert_der.clone()], key)
        .unwrap();
    let acceptor = futures_rustls::TlsAcceptor::from(Arc::new(server_tls));
    let listener = smol::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    smol::spawn(async move {
        loop {
            let (tcp, _) = listener.accept().await.unwrap();
            let acceptor = acceptor.clone();
            smol::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let service = service_fn(|_req| async {
                    let events = futures_lite::stream::iter([
                        Event::message("secret"),
                        Event::message("sauce"),
                    ]);
                    Ok::<_, Infallible>(response(SseBody::new(events)))
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(FuturesIo::new(tls), service)
                    .await;
            })
            .detach();
        }
    })
    .detach();
    (addr, cert_der)
}

#[test]
fn events_over_https_with_a_private_root_and_refused_without_it() {
    run(async {
        let (addr, cert) = https_server().await;
        let url = format!("https://127.0.0.1:{}/events", addr.port());
        let mut roots = rustls::RootCertStore::empty();
        roots.add(cert).unwrap();
        let trusting = rustls::ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let once = || ReconnectConfig::default().reconnect(false);
        let events: Vec<_> = EventSource::get(&url)
            .unwrap()
            .tls(trusting)
            .reconnect(once())
            .events()
            .collect()
            .await;
        let data: Vec<String> = events
            .into_iter()
            .map(|e| e.unwrap().data().to_owned())
            .collect();
        assert_eq!(data, ["secret", "sauce"]);

        // The Mozilla roots do not include the test's certificate: one network error.
        let refused: Vec<_> = EventSource::get(&url)
            .unwrap()
            .reconnect(once())
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
