//! What an operator of `ssekit serve` sees, on both runtimes: the access-log line a stream
//! writes at its end (stderr, `info` by default), the Prometheus text at `--metrics-addr`
//! moving when a stream opens and closes, and a bad `RUST_LOG` refused as a usage error.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{ssekit, text};

/// A running `ssekit serve --metrics-addr`, killed when dropped: its app and metrics
/// addresses, and everything it wrote to stderr so far.
struct Operated {
    child: Child,
    app: String,
    metrics: String,
    stderr: Arc<Mutex<String>>,
}

impl Drop for Operated {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn operated(runtime: &str) -> Operated {
    let mut child = ssekit()
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--metrics-addr",
            "127.0.0.1:0",
        ])
        .args(["--runtime", runtime, "--keep-alive-ms", "60000"])
        .env_remove("RUST_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut app = None;
    let mut metrics = None;
    while metrics.is_none() {
        let line = lines.next().expect("serve printed its addresses").unwrap();
        if let Some(url) = line.strip_prefix("listening on http://") {
            app = Some(url.to_owned());
        }
        if let Some(url) = line.trim().strip_prefix("Metrics:   curl http://") {
            metrics = Some(url.trim_end_matches("/metrics").to_owned());
        }
    }
    let stderr = Arc::new(Mutex::new(String::new()));
    let sink = Arc::clone(&stderr);
    let mut err = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = err.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    Operated {
        child,
        app: app.unwrap(),
        metrics: metrics.unwrap(),
        stderr,
    }
}

/// `GET path` over HTTP/1.1 with `Connection: close`: the whole answer.
fn get(addr: &str, path: &str) -> String {
    let mut conn = TcpStream::connect(addr).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        conn,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    conn.read_to_string(&mut answer).unwrap();
    answer
}

/// The value of the sample `name` (no labels) in Prometheus text; 0 when absent.
fn sample(exposition: &str, name: &str) -> f64 {
    exposition
        .lines()
        .filter(|line| !line.starts_with('#'))
        .find_map(|line| {
            line.strip_prefix(name)?
                .strip_prefix(' ')?
                .trim()
                .parse()
                .ok()
        })
        .unwrap_or(0.0)
}

/// Polls `what` until `done` holds of it, for at most 10 s.
fn until<T: std::fmt::Debug>(mut what: impl FnMut() -> T, done: impl Fn(&T) -> bool) -> T {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let now = what();
        if done(&now) {
            return now;
        }
        assert!(Instant::now() < deadline, "still {now:?} after 10 s");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn a_stream_shows_in_the_metrics_and_in_the_access_log(runtime: &str) {
    let server = operated(runtime);
    let before = get(&server.metrics, "/metrics");
    assert!(before.starts_with("HTTP/1.1 200"), "{before}");
    assert!(before.contains("text/plain; version=0.0.4"), "{before}");
    assert_eq!(sample(&before, "ssekit_streams_open"), 0.0);

    // Open a stream and read its first event: the gauge is up while it is open.
    let mut stream = TcpStream::connect(&server.app).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        stream,
        "GET /stream?interval_ms=50 HTTP/1.1\r\nHost: x\r\n\r\n"
    )
    .unwrap();
    let mut seen = String::new();
    let mut buf = [0u8; 1024];
    while !seen.contains("event: tick") {
        let n = stream.read(&mut buf).unwrap();
        assert!(n > 0, "the stream ended: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    let during = get(&server.metrics, "/metrics");
    assert_eq!(sample(&during, "ssekit_streams_open"), 1.0, "{during}");
    assert_eq!(sample(&during, "ssekit_streams_total"), 1.0, "{during}");
    assert!(sample(&during, "ssekit_events_total") >= 1.0, "{during}");
    assert!(during.contains("# HELP ssekit_streams_open"), "{during}");

    // The client goes away: the gauge comes down and the stream writes its access line.
    drop(stream);
    until(
        || sample(&get(&server.metrics, "/metrics"), "ssekit_streams_open"),
        |open| *open == 0.0,
    );
    let line = until(
        || {
            let log = server.stderr.lock().unwrap().clone();
            log.lines()
                .find(|l| l.contains("ssekit::access"))
                .map(str::to_owned)
        },
        Option::is_some,
    )
    .unwrap();
    for needed in [
        " INFO ",
        "method=GET",
        "path=\"/stream\"",
        "peer=127.0.0.1:",
        "stream closed",
        "duration_ms=",
        "events=",
        "bytes=",
        "close=\"client gone\"",
    ] {
        assert!(line.contains(needed), "{needed} missing in: {line}");
    }
    assert_eq!(
        get(&server.metrics, "/nope").lines().next(),
        Some("HTTP/1.1 404 Not Found")
    );
}

#[test]
fn a_stream_shows_in_the_metrics_and_in_the_access_log_on_hyper() {
    a_stream_shows_in_the_metrics_and_in_the_access_log("hyper");
}

#[test]
fn a_stream_shows_in_the_metrics_and_in_the_access_log_on_smol() {
    a_stream_shows_in_the_metrics_and_in_the_access_log("smol");
}

#[test]
fn a_rust_log_that_does_not_parse_is_a_usage_error() {
    let out = ssekit()
        .args(["serve", "--addr", "127.0.0.1:0"])
        .env("RUST_LOG", "ssekit=loud")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("bad RUST_LOG \"ssekit=loud\""),
        "{}",
        text(&out.stderr)
    );
}
