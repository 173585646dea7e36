//! `ssekit serve` behind Debian's `nginx` with its default buffering (`proxy_pass`,
//! `proxy_http_version 1.1`, the default `proxy_read_timeout` of 60 s), on both runtimes, over
//! HTTP/1.1 and (nginx's front speaking h2c by prior knowledge, read with `curl`) HTTP/2: the
//! first event arrives at once (the response says `X-Accel-Buffering: no`), and a stream that
//! is silent but for its keep-alive comments for 150 s, far beyond nginx's read timeout, ends
//! with its event. That is the path a slow ORS call's stream takes: the `work` tool sleeps at
//! most 120 s, so `GET /stream?delay_ms=150000` stands in for it.
//!
//! nginx runs as this user, with a configuration generated in a temporary directory. Without
//! nginx the tests are skipped with a message; under `CI=true` that is a failure. Without
//! curl the HTTP/2 half is skipped with a message.
mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::serve_on_a_free_port;

/// nginx's path, if installed; under `CI=true` its absence fails the test.
fn nginx() -> Option<PathBuf> {
    let found = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/usr/local/sbin")])
        .map(|dir| dir.join("nginx"))
        .find(|path| path.is_file());
    if found.is_none() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "nginx is missing (.ci/run installs it)"
        );
        eprintln!("skipped: nginx is not installed (apt-get install nginx)");
    }
    found
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A running nginx in front of `upstream`, stopped (and its directory removed) when dropped:
/// HTTP/1.1 on `h1`, h2c by prior knowledge on `h2`.
struct Nginx {
    child: Child,
    dir: PathBuf,
    h1: SocketAddr,
    h2: SocketAddr,
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn start_nginx(bin: &Path, upstream: &str, tag: &str) -> Nginx {
    let dir = std::env::temp_dir().join(format!("ssekit-nginx-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("logs")).unwrap();
    let (h1, h2) = (free_port(), free_port());
    let d = dir.display();
    // Run as root (a CI container), nginx would hand its workers to `nobody`.
    let user = if std::env::var("USER").as_deref() == Ok("root") || is_root() {
        "user root;"
    } else {
        ""
    };
    let conf = format!(
        "{user}
worker_processes 1;
events {{ worker_connections 256; }}
http {{
    access_log off;
    client_body_temp_path {d}/client_body;
    proxy_temp_path {d}/proxy;
    fastcgi_temp_path {d}/fastcgi;
    uwsgi_temp_path {d}/uwsgi;
    scgi_temp_path {d}/scgi;
    server {{
        listen 127.0.0.1:{h1};
        listen 127.0.0.1:{h2} http2;
        location / {{
            proxy_pass {upstream};
            proxy_http_version 1.1;
        }}
    }}
}}
"
    );
    std::fs::write(dir.join("nginx.conf"), conf).unwrap();
    // One process: killing it on drop leaves no worker behind.
    let globals = format!("daemon off; master_process off; pid {d}/nginx.pid;");
    let child = Command::new(bin)
        .arg("-p")
        .arg(&dir)
        .arg("-c")
        .arg(dir.join("nginx.conf"))
        .args(["-e", "stderr", "-g", &globals])
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let h1: SocketAddr = format!("127.0.0.1:{h1}").parse().unwrap();
    let h2: SocketAddr = format!("127.0.0.1:{h2}").parse().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect(h1).is_err() || TcpStream::connect(h2).is_err() {
        assert!(Instant::now() < deadline, "nginx did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    Nginx { child, dir, h1, h2 }
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("Uid:"))?.to_owned();
            Some(line.split_whitespace().nth(1)? == "0")
        })
        .unwrap_or(false)
}

/// Over HTTP/1.1 through `front`: the status line once the head arrives, then the time from
/// the request to the first `event: tick`, which must come within `within`.
fn first_event_h1(front: SocketAddr, path: &str, within: Duration) -> (String, Duration) {
    let started = Instant::now();
    let mut sock = TcpStream::connect(front).unwrap();
    write!(sock, "GET {path} HTTP/1.1\r\nhost: localhost\r\n\r\n").unwrap();
    let mut got = Vec::new();
    let mut buf = [0; 4096];
    let deadline = started + within;
    while !String::from_utf8_lossy(&got).contains("event: tick") {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(
            !left.is_zero(),
            "no event within {within:?}: {}",
            String::from_utf8_lossy(&got)
        );
        sock.set_read_timeout(Some(left)).unwrap();
        match sock.read(&mut buf) {
            Ok(0) => panic!("closed: {}", String::from_utf8_lossy(&got)),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) => panic!("{e}: {}", String::from_utf8_lossy(&got)),
        }
    }
    let text = String::from_utf8_lossy(&got);
    (
        text.lines().next().unwrap_or_default().to_owned(),
        started.elapsed(),
    )
}

/// Over h2c (prior knowledge) through `front`, with curl: the status line and the time to the
/// first `event: tick`, or `None` when curl is missing.
fn first_event_h2(front: SocketAddr, path: &str, within: Duration) -> Option<(String, Duration)> {
    let started = Instant::now();
    let child = Command::new("curl")
        .args(["-sN", "--http2-prior-knowledge", "-D", "-", "--max-time"])
        .arg((within.as_secs() + 5).to_string())
        .arg(format!("http://{front}{path}"))
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn();
    let Ok(mut child) = child else {
        eprintln!("skipped over HTTP/2: curl is not installed");
        return None;
    };
    let mut status = String::new();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut first = None;
    for line in lines.by_ref() {
        let line = line.unwrap();
        if status.is_empty() {
            status = line.trim().to_owned();
        }
        if line.starts_with("event: tick") {
            first = Some(started.elapsed());
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let first = first.unwrap_or_else(|| panic!("no event over h2 ({status})"));
    assert!(first < within, "over h2 the event took {first:?}");
    Some((status, first))
}

#[test]
fn behind_nginx_the_first_event_arrives_at_once() {
    let Some(bin) = nginx() else { return };
    for runtime in ["hyper", "smol"] {
        let served = serve_on_a_free_port(&["--runtime", runtime]);
        let proxy = start_nginx(&bin, &served.1, &format!("first-{runtime}"));
        // The first tick is sent at once, the next after 5 s: a buffering proxy would hold
        // the first until its buffer fills or the stream ends.
        let (status, _) =
            first_event_h1(proxy.h1, "/stream?interval_ms=5000", Duration::from_secs(2));
        assert!(status.starts_with("HTTP/1.1 200"), "{runtime}: {status}");
        if let Some((status, _)) =
            first_event_h2(proxy.h2, "/stream?interval_ms=5000", Duration::from_secs(2))
        {
            assert!(status.starts_with("HTTP/2 200"), "{runtime}: {status}");
        }
    }
}

#[test]
fn behind_nginx_a_stream_silent_for_150_s_ends_with_its_event() {
    let Some(bin) = nginx() else { return };
    // Both runtimes, both protocols, at once: one 150 s wait in all.
    let path = "/stream?delay_ms=150000&count=1";
    let within = Duration::from_secs(200);
    let handles: Vec<_> = ["hyper", "smol"]
        .into_iter()
        .map(|runtime| {
            let bin = bin.clone();
            std::thread::spawn(move || {
                let served = serve_on_a_free_port(&["--runtime", runtime]);
                let proxy = start_nginx(&bin, &served.1, &format!("silent-{runtime}"));
                let h1 = std::thread::spawn(move || first_event_h1(proxy.h1, path, within));
                let h2 = first_event_h2(proxy.h2, path, within);
                let (status, took) = h1.join().unwrap();
                assert!(status.starts_with("HTTP/1.1 200"), "{runtime}: {status}");
                assert!(took >= Duration::from_secs(150), "{runtime}: {took:?}");
                if let Some((status, took)) = h2 {
                    assert!(status.starts_with("HTTP/2 200"), "{runtime}: {status}");
                    assert!(took >= Duration::from_secs(150), "{runtime}: {took:?}");
                }
                drop(proxy);
                drop(served);
            })
        })
        .collect();
    for handle in handles {
        handle.join().unwrap();
    }
}
