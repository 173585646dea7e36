//! Certificates for the HTTPS tests on loopback, shared by both transports' `tls` tests
//! (`ssekit-hyper` includes this file by its path): one self-signed certificate per host
//! name, a server configuration that presents the one the client names in its TLS SNI, a
//! client configuration that trusts them all, and the log of what the server saw.
#![allow(dead_code)]

use std::sync::{Arc, Mutex};

use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

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
