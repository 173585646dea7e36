//! HTTPS on loopback with a self-signed certificate made in the test.
#![cfg(feature = "rustls")]

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use hyper::service::service_fn;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use ssekit::client::ReconnectConfig;
use ssekit::Event;
use ssekit_hyper::client::{https_client, EventSource};
use ssekit_hyper::server::{response, SseBody};
use ssekit_hyper::Error;

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

#[tokio::test]
async fn events_over_https_with_a_private_root_and_refused_without_it() {
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
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(server_tls));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (tcp, _) = listener.accept().await.unwrap();
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let service = service_fn(|_req| async {
                    let events = futures_util::stream::iter([
                        Event::message("secret"),
                        Event::message("sauce"),
                    ]);
                    Ok::<_, Infallible>(response(SseBody::new(events)))
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                    .await;
            });
        }
    });

    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert_der).unwrap();
    let client_tls = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let url = format!("https://127.0.0.1:{}/", addr.port());
    let once = ReconnectConfig::default().reconnect(false);
    let events: Vec<_> = tokio::time::timeout(
        Duration::from_secs(10),
        EventSource::get(&url)
            .unwrap()
            .client(https_client(client_tls))
            .reconnect(once.clone())
            .events()
            .collect::<Vec<_>>(),
    )
    .await
    .unwrap();
    let data: Vec<String> = events
        .into_iter()
        .map(|e| e.unwrap().data().to_owned())
        .collect();
    assert_eq!(data, ["secret", "sauce"]);

    // The default client trusts only the public roots: the self-signed certificate is refused.
    let refused: Vec<_> = tokio::time::timeout(
        Duration::from_secs(10),
        EventSource::get(&url)
            .unwrap()
            .reconnect(once)
            .events()
            .collect::<Vec<_>>(),
    )
    .await
    .unwrap();
    assert!(
        matches!(refused.as_slice(), [Err(Error::Http(_))]),
        "{refused:?}"
    );
    let line = refused[0].as_ref().unwrap_err().to_string();
    assert!(line.contains("certificate"), "{line}");
}
