//! Both clients through an HTTP `CONNECT` proxy started in the test, on 127.0.0.1: to an
//! `http://` and an `https://` ssekit server (TLS through the tunnel, the certificate made
//! in the test), with and without the proxy's credentials. A proxy that refuses is a typed
//! error with its status; one that needs no tunnel for a host in `NO_PROXY` is not used.

#[allow(unused_macros, unused_imports)]
#[path = "../../transport-smol/tests/tls_kit/mod.rs"]
mod tls_kit;

use std::convert::Infallible;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use futures_lite::StreamExt;
use ssekit::client::ReconnectConfig;
use ssekit::Event;
use ssekit_http::proxy::Proxy;
use tls_kit::Certs;

/// A CONNECT proxy on a thread of its own: the tunnels it opened (`host:port`), and its
/// URL (with `credentials`, it answers 407 to a request without them).
fn connect_proxy(credentials: Option<&'static str>) -> (SocketAddr, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let tunnels = Arc::new(Mutex::new(Vec::new()));
    let log = tunnels.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(client) = conn else { break };
            let log = log.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(client.try_clone().unwrap());
                let mut head = Vec::new();
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    head.push(line.trim_end().to_owned());
                }
                let target = head[0]
                    .strip_prefix("CONNECT ")
                    .and_then(|rest| rest.strip_suffix(" HTTP/1.1"))
                    .unwrap_or_default()
                    .to_owned();
                let mut client = client;
                if let Some(credentials) = credentials {
                    let want = format!("Proxy-Authorization: {credentials}");
                    if !head.contains(&want) {
                        let _ = client.write_all(b"HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"test\"\r\nContent-Length: 7\r\n\r\nwho are");
                        return;
                    }
                }
                let Ok(upstream) = TcpStream::connect(&target) else {
                    let _ = client.write_all(b"HTTP/1.1 502 Bad Gateway\r\n\r\n");
                    return;
                };
                log.lock().unwrap().push(target);
                client
                    .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                    .unwrap();
                let (mut up_read, mut up_write) = (upstream.try_clone().unwrap(), upstream);
                let mut down_write = client.try_clone().unwrap();
                let mut down_read = client;
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut up_read, &mut down_write);
                    let _ = down_write.shutdown(std::net::Shutdown::Write);
                });
                let _ = std::io::copy(&mut down_read, &mut up_write);
                let _ = up_write.shutdown(std::net::Shutdown::Write);
            });
        }
    });
    (addr, tunnels)
}

fn tokio_rt() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| tokio::runtime::Runtime::new().unwrap())
}

/// An ssekit (hyper) server of three events, with TLS or without.
fn server(tls: bool) -> SocketAddr {
    use ssekit_hyper::server::{response, serve_with, ServeOptions, SseBody};
    let rt = tokio_rt();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let service = hyper::service::service_fn(|_req| async {
        let events = ["a", "b", "c"].map(Event::message);
        Ok::<_, Infallible>(response(SseBody::new(futures_lite::stream::iter(events))))
    });
    let mut options = ServeOptions::default();
    if tls {
        options = options.tls(Certs::loopback().server());
    }
    rt.spawn(serve_with(
        listener,
        service,
        std::future::pending(),
        options,
    ));
    addr
}

fn once() -> ReconnectConfig {
    ReconnectConfig::default().reconnect(false)
}

/// The data of the events, or the error, that the smol client reads from `url`.
fn smol_read(url: &str, proxy: Proxy) -> Result<Vec<String>, ssekit_http::Error> {
    smol::block_on(async {
        let source = ssekit_smol::client::EventSource::get(url)?
            .proxy(proxy)
            .tls(Certs::loopback().client())
            .reconnect(once());
        let events: Vec<_> = source.events().collect().await;
        events
            .into_iter()
            .map(|e| e.map(|e| e.data().to_owned()))
            .collect()
    })
}

/// The same with the hyper client.
fn hyper_read(url: &str, proxy: Proxy) -> Result<Vec<String>, ssekit_http::Error> {
    use ssekit_hyper::client::{ClientOptions, EventSource};
    tokio_rt().block_on(async {
        let client = ClientOptions::default()
            .proxy(proxy)
            .tls(Certs::loopback().client())
            .build()?;
        let source = EventSource::get(url)?.client(client).reconnect(once());
        let events: Vec<_> = source.events().collect().await;
        events
            .into_iter()
            .map(|e| e.map(|e| e.data().to_owned()))
            .collect()
    })
}

type Read = fn(&str, Proxy) -> Result<Vec<String>, ssekit_http::Error>;
const CLIENTS: [(&str, Read); 2] = [("smol", smol_read), ("hyper", hyper_read)];

fn within<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    // Only a hang fails: a loaded machine may be slow, never this slow.
    rx.recv_timeout(Duration::from_secs(60))
        .expect("hung: no outcome after 60 s")
}

#[test]
fn both_clients_reach_http_and_https_servers_through_a_connect_proxy() {
    within(|| {
        let (proxy, tunnels) = connect_proxy(Some("Basic dXNlcjpwQHNz"));
        let (http, https) = (server(false), server(true));
        let via = Proxy::all(&format!("http://user:p%40ss@{proxy}")).unwrap();
        for (name, read) in CLIENTS {
            for url in [
                format!("http://{http}/e"),
                format!("https://127.0.0.1:{}/e", https.port()),
            ] {
                assert_eq!(
                    read(&url, via.clone()).unwrap(),
                    ["a", "b", "c"],
                    "{name} {url}"
                );
            }
        }
        let tunnels = tunnels.lock().unwrap();
        let want = [http.to_string(), https.to_string()];
        assert_eq!(*tunnels, [want.clone(), want].concat());
    });
}

#[test]
fn a_proxy_that_refuses_is_a_typed_error_and_no_proxy_hosts_go_direct() {
    within(|| {
        let (proxy, tunnels) = connect_proxy(Some("Basic dXNlcjpwQHNz"));
        let http = server(false);
        let url = format!("http://{http}/e");
        let without_credentials = Proxy::all(&format!("http://{proxy}")).unwrap();
        for (name, read) in CLIENTS {
            let err = read(&url, without_credentials.clone()).unwrap_err();
            let refused = match &err {
                ssekit_http::Error::Refused(r) => r.clone(),
                ssekit_http::Error::Exhausted { last, .. } => match last.as_ref() {
                    ssekit_http::Error::Refused(r) => r.clone(),
                    other => panic!("{name}: {other:?}"),
                },
                other => panic!("{name}: {other:?}"),
            };
            assert_eq!(refused.status(), 407, "{name}");
            assert_eq!(
                refused.header_map()["proxy-authenticate"],
                "Basic realm=\"test\""
            );
            assert_eq!(refused.body(), "who are");
            let direct = without_credentials.clone().no_proxy("127.0.0.1");
            assert_eq!(read(&url, direct).unwrap(), ["a", "b", "c"], "{name}");
        }
        assert!(tunnels.lock().unwrap().is_empty());
    });
}
