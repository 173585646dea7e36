//! `ssekit serve --tls-cert/--tls-key` on each runtime, read by `ssekit tail --cacert` on
//! each runtime, with a self-signed certificate made in the test; HTTP/2 offered by ALPN;
//! files that are no certificate or key refused before anything listens.

mod common;

use std::path::{Path, PathBuf};

use common::{output_within, serve_on_a_free_port, text, Served};

/// A certificate for 127.0.0.1 and its key, as PEM files in a directory of their own.
fn certificate(dir: &Path) -> (PathBuf, PathBuf) {
    std::fs::create_dir_all(dir).unwrap();
    let made = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned()]).unwrap();
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert, made.cert.pem()).unwrap();
    std::fs::write(&key, made.key_pair.serialize_pem()).unwrap();
    (cert, key)
}

fn serve_tls(runtime: &str, cert: &Path, key: &Path) -> Served {
    let args: [&std::ffi::OsStr; 6] = [
        "--runtime".as_ref(),
        runtime.as_ref(),
        "--tls-cert".as_ref(),
        cert.as_os_str(),
        "--tls-key".as_ref(),
        key.as_os_str(),
    ];
    let server = serve_on_a_free_port(&args);
    assert!(server.1.starts_with("https://127.0.0.1:"), "{}", server.1);
    server
}

/// The protocol the server picks by ALPN when a client offers `h2` and `http/1.1`.
fn negotiated(url: &str, cert: &Path) -> Option<Vec<u8>> {
    use rustls::pki_types::pem::PemObject;
    let addr = url.strip_prefix("https://").unwrap();
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(rustls::pki_types::CertificateDer::from_pem_file(cert).unwrap())
        .unwrap();
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
    let mut conn = rustls::ClientConnection::new(std::sync::Arc::new(config), name).unwrap();
    let mut tcp = std::net::TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    while conn.is_handshaking() {
        conn.complete_io(&mut tcp).unwrap();
    }
    conn.alpn_protocol().map(<[u8]>::to_vec)
}

#[test]
fn serve_over_tls_offers_http2_and_tail_trusts_the_given_root_on_each_runtime() {
    let dir = std::env::temp_dir().join(format!("ssekit-cli-tls-{}", std::process::id()));
    let (cert, key) = certificate(&dir);
    for server_runtime in ["hyper", "smol"] {
        let server = serve_tls(server_runtime, &cert, &key);
        assert_eq!(negotiated(&server.1, &cert).as_deref(), Some(&b"h2"[..]));
        for tail_runtime in ["hyper", "smol"] {
            let url = format!("{}/v1/responses", server.1);
            let args = [
                "tail",
                &url,
                "-d",
                r#"{"input":"x"}"#,
                "-H",
                "Content-Type: application/json",
                "--profile",
                "responses",
                "--json",
                "--runtime",
                tail_runtime,
                "--cacert",
                cert.to_str().unwrap(),
            ];
            let out = output_within(20, &args);
            let stdout = text(&out.stdout);
            assert!(
                out.status.success(),
                "{server_runtime} <- {tail_runtime}: {}",
                text(&out.stderr)
            );
            assert!(stdout.contains("response.completed"), "{stdout}");
            // Without the root the certificate is refused: a one-line error, exit 1.
            let out = output_within(20, &args[..args.len() - 2]);
            assert!(!out.status.success());
            assert!(
                text(&out.stderr).contains("certificate"),
                "{}",
                text(&out.stderr)
            );
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn files_that_are_no_certificate_or_key_stop_serve_before_it_listens() {
    let dir = std::env::temp_dir().join(format!("ssekit-cli-badtls-{}", std::process::id()));
    let (cert, key) = certificate(&dir);
    let junk = dir.join("junk.pem");
    std::fs::write(&junk, "not pem").unwrap();
    for (c, k, needle) in [
        (&junk, &key, "junk.pem: no certificate"),
        (&cert, &junk, "junk.pem: no private key"),
        (&key, &cert, "no certificate"),
    ] {
        let out = output_within(
            10,
            &[
                "serve",
                "--addr",
                "127.0.0.1:0",
                "--tls-cert",
                c.to_str().unwrap(),
                "--tls-key",
                k.to_str().unwrap(),
            ],
        );
        assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
        assert!(
            text(&out.stderr).contains(needle),
            "{needle}: {}",
            text(&out.stderr)
        );
        assert!(!text(&out.stdout).contains("listening"));
    }
    // One without the other is clap's usage error.
    let out = output_within(10, &["serve", "--tls-cert", cert.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    std::fs::remove_dir_all(&dir).unwrap();
}
