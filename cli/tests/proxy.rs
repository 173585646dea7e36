//! `ssekit tail -x URL` through an HTTP CONNECT proxy started in the test on 127.0.0.1, on
//! each runtime: the tunnel goes to the server, and the events come through it.

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use common::{output_within, serve_on_a_free_port, text};

/// A CONNECT proxy on a thread of its own; the `CONNECT` targets it was asked for.
fn connect_proxy() -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let asked = Arc::new(Mutex::new(Vec::new()));
    let log = asked.clone();
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(mut client) = client else { break };
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && client.read(&mut byte).unwrap_or(0) == 1 {
                head.push(byte[0]);
            }
            let head = String::from_utf8_lossy(&head).into_owned();
            let Some(target) = head
                .strip_prefix("CONNECT ")
                .and_then(|rest| rest.split(' ').next())
            else {
                let _ = client
                    .write_all(b"HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\n\r\n");
                continue;
            };
            log.lock().unwrap().push(target.to_owned());
            let Ok(upstream) = TcpStream::connect(target) else {
                let _ = client.write_all(b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n");
                continue;
            };
            let _ = client.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n");
            let pipe = |mut from: TcpStream, mut to: TcpStream| {
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut from, &mut to);
                    let _ = to.shutdown(std::net::Shutdown::Write);
                })
            };
            pipe(client.try_clone().unwrap(), upstream.try_clone().unwrap());
            pipe(upstream, client);
        }
    });
    (url, asked)
}

#[test]
fn tail_goes_through_the_proxy_it_is_given_on_each_runtime() {
    let server = serve_on_a_free_port::<&str>(&[]);
    let authority = server.1.strip_prefix("http://").unwrap().to_owned();
    for runtime in ["hyper", "smol"] {
        let (proxy, asked) = connect_proxy();
        let url = format!("{}/stream?count=3&interval_ms=10", server.1);
        let out = output_within(20, &["tail", &url, "-x", &proxy, "--runtime", runtime]);
        assert!(out.status.success(), "{runtime}: {}", text(&out.stderr));
        assert_eq!(
            text(&out.stdout).matches("tick").count(),
            3,
            "{}",
            text(&out.stdout)
        );
        let asked = asked.lock().unwrap();
        assert!(
            !asked.is_empty() && asked.iter().all(|t| *t == authority),
            "{asked:?}"
        );
    }
    // `-x none` goes direct; a proxy URL that is none is a usage error.
    let url = format!("{}/stream?count=1&interval_ms=10", server.1);
    let out = output_within(20, &["tail", &url, "-x", "none"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = output_within(20, &["tail", &url, "-x", "ftp://proxy"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("bad --proxy"),
        "{}",
        text(&out.stderr)
    );
}
