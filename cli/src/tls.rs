//! TLS from PEM files: `serve --tls-cert/--tls-key` (HTTPS with ALPN `h2` and `http/1.1`,
//! so browsers hold their streams to one origin on one HTTP/2 connection) and
//! `tail --cacert` (trust a private root beside the Mozilla ones).

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::CliError;

fn read(path: &Path) -> Result<Vec<u8>, CliError> {
    std::fs::read(path).map_err(|e| CliError::Io(format!("cannot read {}", path.display()), e))
}

/// The certificates of a PEM file (at least one).
fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, CliError> {
    let pem = read(path)?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| CliError::Usage(format!("{}: not PEM certificates: {e}", path.display())))?;
    if certs.is_empty() {
        return Err(CliError::Usage(format!(
            "{}: no certificate (expected -----BEGIN CERTIFICATE-----)",
            path.display()
        )));
    }
    Ok(certs)
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The server's TLS configuration from a certificate chain and its private key (PEM).
pub fn server_config(cert: &Path, key: &Path) -> Result<Arc<rustls::ServerConfig>, CliError> {
    let chain = certificates(cert)?;
    let key_pem = read(key)?;
    let key_der = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| {
        CliError::Usage(format!(
            "{}: no private key (PKCS#8, PKCS#1 or SEC1 PEM): {e}",
            key.display()
        ))
    })?;
    let config = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| CliError::Usage(format!("TLS: {e}")))?
        .with_no_client_auth()
        .with_single_cert(chain, key_der)
        .map_err(|e| {
            CliError::Usage(format!(
                "{} and {} do not make a certificate and its key: {e}",
                cert.display(),
                key.display()
            ))
        })?;
    Ok(Arc::new(config))
}

/// The client's TLS configuration: the Mozilla roots and the certificates of `cacert`.
pub fn client_config(cacert: &Path) -> Result<rustls::ClientConfig, CliError> {
    let mut roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    for cert in certificates(cacert)? {
        roots.add(cert).map_err(|e| {
            CliError::Usage(format!("{}: not a usable root: {e}", cacert.display()))
        })?;
    }
    Ok(rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| CliError::Usage(format!("TLS: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn files_that_are_no_certificate_or_key_are_usage_errors_naming_the_file() {
        let dir = std::env::temp_dir().join(format!("ssekit-cli-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let empty = write(&dir, "empty.pem", "");
        let junk = write(
            &dir,
            "junk.pem",
            "-----BEGIN CERTIFICATE-----\n!!!\n-----END CERTIFICATE-----\n",
        );
        let missing = dir.join("missing.pem");
        let message = |r: Result<Arc<rustls::ServerConfig>, CliError>| r.unwrap_err().to_string();
        assert!(message(server_config(&empty, &empty)).contains("empty.pem: no certificate"));
        assert!(message(server_config(&junk, &empty)).contains("junk.pem: not PEM certificates"));
        assert!(message(server_config(&missing, &empty)).contains("cannot read"));
        let err = client_config(&empty).unwrap_err().to_string();
        assert!(err.contains("empty.pem: no certificate"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
