//! `ssekit serve` at its edge, on both runtimes, over 127.0.0.1: connections that never
//! complete a request head, and idle ones, are closed; a silent stream is not; connections
//! over `--max-connections` get a quick 503 with `Retry-After`; and, under a low `ulimit -n`
//! in a child process, running out of file descriptors neither stops an open stream nor
//! spins the accept loop, and the server serves new clients again once descriptors are back.
mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{serve_on_a_free_port, ssekit, Served};

const RUNTIMES: [&str; 2] = ["hyper", "smol"];

fn addr_of(url: &str) -> SocketAddr {
    url.trim_start_matches("http://").parse().unwrap()
}

/// Reads from `sock` until it is closed (or reset); `Err` if `within` passes first.
fn closed_within(sock: &mut TcpStream, within: Duration) -> Result<Vec<u8>, String> {
    let deadline = Instant::now() + within;
    let mut got = Vec::new();
    let mut buf = [0; 4096];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(format!(
                "still open after {within:?}: {}",
                String::from_utf8_lossy(&got)
            ));
        }
        sock.set_read_timeout(Some(left)).unwrap();
        match sock.read(&mut buf) {
            Ok(0) => return Ok(got),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return Ok(got),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                continue
            }
            Err(e) => return Err(e.to_string()),
        }
    }
}

/// Reads from `sock` until `needle` has arrived (panics after `within` or at a close).
fn read_until(sock: &mut TcpStream, got: &mut Vec<u8>, needle: &str, within: Duration) {
    let deadline = Instant::now() + within;
    let mut buf = [0; 4096];
    while !String::from_utf8_lossy(got).contains(needle) {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(
            !left.is_zero(),
            "no {needle:?} within {within:?}: {}",
            String::from_utf8_lossy(got)
        );
        sock.set_read_timeout(Some(left)).unwrap();
        match sock.read(&mut buf) {
            Ok(0) => panic!("closed before {needle:?}: {}", String::from_utf8_lossy(got)),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(e) => panic!("{e} before {needle:?}"),
        }
    }
}

/// Whether a GET of `path` on a new connection is answered with `needle` within `within`.
fn answers(addr: SocketAddr, path: &str, needle: &str, within: Duration) -> bool {
    let Ok(mut sock) = TcpStream::connect(addr) else {
        return false;
    };
    if write!(sock, "GET {path} HTTP/1.1\r\nhost: x\r\n\r\n").is_err() {
        return false;
    }
    let deadline = Instant::now() + within;
    let (mut got, mut buf) = (Vec::new(), [0; 4096]);
    while !String::from_utf8_lossy(&got).contains(needle) {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        sock.set_read_timeout(Some(left)).unwrap();
        match sock.read(&mut buf) {
            Ok(n) if n > 0 => got.extend_from_slice(&buf[..n]),
            _ => return false,
        }
    }
    true
}

/// A GET of `path` on a new connection, its bytes so far read until `needle`.
fn get(addr: SocketAddr, path: &str, needle: &str) -> (TcpStream, Vec<u8>) {
    let mut sock = TcpStream::connect(addr).unwrap();
    write!(sock, "GET {path} HTTP/1.1\r\nhost: x\r\n\r\n").unwrap();
    let mut got = Vec::new();
    read_until(&mut sock, &mut got, needle, Duration::from_secs(20));
    (sock, got)
}

#[test]
fn silent_and_idle_connections_are_closed_and_silent_streams_are_not() {
    for runtime in RUNTIMES {
        let served = serve_on_a_free_port(&[
            "--runtime",
            runtime,
            "--request-head-timeout",
            "1s",
            "--idle-timeout",
            "1s",
            "--keep-alive-ms",
            "60000",
        ]);
        let addr = addr_of(&served.1);
        // Never a byte: closed, without a response.
        let mut silent: Vec<TcpStream> =
            (0..20).map(|_| TcpStream::connect(addr).unwrap()).collect();
        // Half a request head, then nothing.
        let mut half = TcpStream::connect(addr).unwrap();
        half.write_all(b"GET /stream HTTP/1.1\r\nhost").unwrap();
        // A silent stream (no event, no keep-alive for 3 s) outlives both timeouts.
        let (mut stream, mut got) = get(addr, "/stream?delay_ms=3000&count=1", "HTTP/1.1 200");
        // A keep-alive connection that served its request and then says nothing.
        let (mut idle, _) = get(addr, "/stream?count=1", "event: tick");
        for sock in silent.iter_mut().chain([&mut half]) {
            let got = closed_within(sock, Duration::from_secs(20))
                .unwrap_or_else(|e| panic!("{runtime}: a silent connection: {e}"));
            assert!(
                got.is_empty(),
                "{runtime}: {}",
                String::from_utf8_lossy(&got)
            );
        }
        closed_within(&mut idle, Duration::from_secs(20))
            .unwrap_or_else(|e| panic!("{runtime}: an idle connection: {e}"));
        read_until(
            &mut stream,
            &mut got,
            "event: tick",
            Duration::from_secs(20),
        );
        // The stream ended (count=1); now it is idle, and closed in turn.
        closed_within(&mut stream, Duration::from_secs(20))
            .unwrap_or_else(|e| panic!("{runtime}: the stream's connection once idle: {e}"));
    }
}

#[test]
fn connections_over_the_cap_get_503_with_retry_after_while_the_others_flow() {
    for runtime in RUNTIMES {
        let served = serve_on_a_free_port(&["--runtime", runtime, "--max-connections", "3"]);
        let addr = addr_of(&served.1);
        let mut streams: Vec<(TcpStream, Vec<u8>)> = (0..3)
            .map(|_| get(addr, "/stream?interval_ms=100", "event: tick"))
            .collect();
        let mut over = TcpStream::connect(addr).unwrap();
        let _ = over.write_all(b"GET /stream HTTP/1.1\r\nhost: x\r\n\r\n");
        let answer = closed_within(&mut over, Duration::from_secs(20))
            .unwrap_or_else(|e| panic!("{runtime}: the connection over the cap: {e}"));
        let answer = String::from_utf8_lossy(&answer).to_ascii_lowercase();
        assert!(answer.starts_with("http/1.1 503"), "{runtime}: {answer}");
        assert!(
            answer.contains("\r\nretry-after: 1\r\n"),
            "{runtime}: {answer}"
        );
        // The first three keep flowing.
        for (sock, got) in &mut streams {
            let n = String::from_utf8_lossy(got).matches("event: tick").count();
            read_until(
                sock,
                got,
                &format!("id: {}\n", n + 2),
                Duration::from_secs(20),
            );
        }
        // One goes: a new client is served again.
        drop(streams.pop());
        let deadline = Instant::now() + Duration::from_secs(20);
        while !answers(
            addr,
            "/stream?count=1",
            "event: tick",
            Duration::from_secs(5),
        ) {
            assert!(
                Instant::now() < deadline,
                "{runtime}: still shed after a slot was freed"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// `ssekit serve ARGS` under `ulimit -n LIMIT` (a child shell that execs it), once it printed
/// its URL and its metrics' URL.
fn serve_with_open_files(limit: u32, args: &[&str]) -> (Served, SocketAddr, SocketAddr) {
    let bin = env!("CARGO_BIN_EXE_ssekit");
    let script = format!("ulimit -n {limit} && exec \"$0\" \"$@\"");
    let mut child = std::process::Command::new("sh")
        .args(["-c", &script, bin, "serve", "--addr", "127.0.0.1:0"])
        .args(["--metrics-addr", "127.0.0.1:0"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut url = None;
    let mut metrics = None;
    for line in lines.by_ref() {
        let line = line.unwrap();
        if let Some(at) = line.strip_prefix("listening on http://") {
            url = Some(at.parse().unwrap());
        }
        if let Some(at) = line.trim().strip_prefix("Metrics:   curl http://") {
            metrics = Some(at.trim_end_matches("/metrics").parse().unwrap());
            break;
        }
    }
    // Keep stdout drained, so that the server never blocks on it.
    std::thread::spawn(move || lines.for_each(drop));
    (Served(child, String::new()), url.unwrap(), metrics.unwrap())
}

/// The value of the metric `name` (without labels) at `metrics`' `/metrics`.
fn metric(metrics: SocketAddr, name: &str) -> f64 {
    let mut sock = TcpStream::connect(metrics).unwrap();
    sock.write_all(b"GET /metrics HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
        .unwrap();
    let text = closed_within(&mut sock, Duration::from_secs(20)).unwrap();
    let text = String::from_utf8_lossy(&text).into_owned();
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
        .unwrap_or(0.0)
}

#[test]
fn out_of_file_descriptors_streams_flow_the_accept_loop_backs_off_and_it_recovers() {
    for runtime in RUNTIMES {
        // No cap: this is about `accept` failing with EMFILE.
        let (served, addr, metrics) =
            serve_with_open_files(64, &["--runtime", runtime, "--max-connections", "100000"]);
        let (mut stream, mut got) = get(addr, "/stream?interval_ms=100", "event: tick");
        // More connections than descriptors: the kernel queues them, `accept` fails.
        let extra: Vec<TcpStream> = (0..100)
            .map(|_| TcpStream::connect(addr).unwrap())
            .collect();
        let window = Instant::now();
        // The open stream keeps flowing while the server is out of descriptors.
        for _ in 0..10 {
            let n = String::from_utf8_lossy(&got).matches("event: tick").count();
            read_until(
                &mut stream,
                &mut got,
                &format!("id: {}\n", n + 2),
                Duration::from_secs(20),
            );
        }
        let window = window.elapsed();
        drop(extra);
        // Descriptors come back: a new client is served, metrics included.
        let deadline = Instant::now() + Duration::from_secs(30);
        while !answers(
            addr,
            "/stream?count=1",
            "event: tick",
            Duration::from_secs(5),
        ) {
            assert!(Instant::now() < deadline, "{runtime}: not served again");
            std::thread::sleep(Duration::from_millis(100));
        }
        let errors = metric(metrics, "ssekit_accept_errors_total");
        // It did run out; and it backed off (10 ms doubling to 1 s) instead of spinning:
        // a spinning loop counts hundreds of thousands in this window.
        assert!(
            errors >= 1.0,
            "{runtime}: accept never failed: ulimit not applied?"
        );
        let bound = 10.0 + window.as_secs_f64() * 2.0;
        assert!(
            errors < bound.max(300.0),
            "{runtime}: {errors} accept errors in {window:?}"
        );
        drop(served);
    }
}

#[test]
fn under_a_low_open_file_limit_the_default_cap_sheds_before_descriptors_run_out() {
    for runtime in RUNTIMES {
        // The default cap: 128 less 32.
        let (served, addr, metrics) = serve_with_open_files(128, &["--runtime", runtime]);
        let (mut stream, mut got) = get(addr, "/stream?interval_ms=100", "event: tick");
        let mut extra: Vec<TcpStream> = (0..150)
            .map(|_| TcpStream::connect(addr).unwrap())
            .collect();
        // Those over the cap (96 = 128 less 32, the first stream included) are answered 503
        // or closed at once, not left waiting.
        let mut refused = vec![false; extra.len()];
        let mut answered_503 = 0;
        for sock in &mut extra {
            sock.set_read_timeout(Some(Duration::from_millis(1)))
                .unwrap();
        }
        let deadline = Instant::now() + Duration::from_secs(20);
        while refused.iter().filter(|r| **r).count() < 150 - 95 && Instant::now() < deadline {
            for (sock, refused) in extra.iter_mut().zip(&mut refused) {
                let mut buf = [0; 64];
                match sock.read(&mut buf) {
                    Ok(n) if !*refused => {
                        *refused = true;
                        answered_503 += usize::from(buf[..n].starts_with(b"HTTP/1.1 503"));
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => *refused = true,
                    _ => {}
                }
            }
        }
        let refused = refused.iter().filter(|r| **r).count();
        assert!(refused >= 150 - 95, "{runtime}: {refused} refused");
        assert!(answered_503 >= 1, "{runtime}: none answered 503");
        let n = String::from_utf8_lossy(&got).matches("event: tick").count();
        read_until(
            &mut stream,
            &mut got,
            &format!("id: {}\n", n + 3),
            Duration::from_secs(20),
        );
        drop(extra);
        assert!(metric(metrics, "ssekit_connections_shed_total") >= (150 - 95) as f64);
        drop(served);
    }
}

#[test]
fn serve_documents_its_limits() {
    let out = ssekit().args(["serve", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "--request-head-timeout",
        "--idle-timeout",
        "--max-connections",
        "--max-request-head",
    ] {
        assert!(help.contains(flag), "{flag} missing from\n{help}");
    }
}
