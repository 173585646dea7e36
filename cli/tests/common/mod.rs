//! What the CLI's integration tests share: running the binary, reading what it printed, and
//! raw HTTP servers on 127.0.0.1 that answer as a test tells them.
#![allow(dead_code)] // each test file uses its own part

use std::io::Write;
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::time::Duration;

/// The `ssekit` binary built for the tests.
pub fn ssekit() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ssekit"));
    cmd.env("RUST_BACKTRACE", "1"); // errors must stay one line even so
    cmd
}

/// `ssekit ARGS` with all three streams piped, and its stdin taken out to write to.
pub fn piped(args: &[&str]) -> (Child, ChildStdin) {
    let mut child = ssekit()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    (child, stdin)
}

/// `ssekit ARGS` with `stdin` written to its standard input; what it printed.
pub fn run_with_stdin(args: &[&str], stdin: &[u8]) -> Output {
    let (child, mut input) = piped(args);
    // The command may stop reading early (a limit, a protocol error): a closed pipe is fine.
    let _ = input.write_all(stdin);
    drop(input);
    child.wait_with_output().unwrap()
}

/// Bytes as text, invalid UTF-8 replaced.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A failed command prints exactly one line, `ssekit: error: …`, and exits non-zero.
pub fn assert_one_line_error(out: &Output, needle: &str) {
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.starts_with("--")).collect();
    assert_eq!(lines.len(), 1, "stderr: {stderr}");
    assert!(lines[0].starts_with("ssekit: error: "), "{stderr}");
    assert!(lines[0].contains(needle), "{needle:?} not in {stderr}");
    assert!(!stderr.contains("backtrace") && !stderr.contains("panicked"));
}

/// A server on 127.0.0.1 that takes at most `connections` connections within 10 s and
/// hands each socket, with its request head (lower-cased), to `answer`, which says whether
/// to take the next one. Returns the URL of `path` on it.
pub fn raw_server(
    path: &str,
    connections: usize,
    answer: impl FnMut(std::net::TcpStream, String) -> bool + Send + 'static,
) -> String {
    raw_server_for(path, connections, Duration::from_secs(10), answer)
}

/// [`raw_server`], taking connections for `within` instead of 10 s.
pub fn raw_server_for(
    path: &str,
    connections: usize,
    within: Duration,
    mut answer: impl FnMut(std::net::TcpStream, String) -> bool + Send + 'static,
) -> String {
    use std::io::Read;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}{path}", listener.local_addr().unwrap());
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let deadline = std::time::Instant::now() + within;
        let mut served = 0;
        while served < connections && std::time::Instant::now() < deadline {
            let Ok((mut sock, _)) = listener.accept() else {
                std::thread::sleep(Duration::from_millis(10));
                continue;
            };
            served += 1;
            sock.set_nonblocking(false).unwrap();
            sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && sock.read_exact(&mut byte).is_ok() {
                head.push(byte[0]);
            }
            let head = String::from_utf8_lossy(&head).to_ascii_lowercase();
            if !answer(sock, head) {
                break;
            }
        }
    });
    url
}

/// Runs `ssekit` with `args`, killing it (and failing) if it has not ended within `secs`.
pub fn output_within(secs: u64, args: &[&str]) -> Output {
    let mut child = ssekit()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(secs);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "ssekit {args:?} still running after {secs} s\n{}\n{}",
                text(&out.stdout),
                text(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// A running `ssekit serve`, killed when dropped, and the URL it printed first.
pub struct Served(pub Child, pub String);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `ssekit serve --addr 127.0.0.1:0 ARGS`, once it printed the URL it listens on.
pub fn serve_on_a_free_port<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Served {
    use std::io::BufRead;
    let mut child = ssekit()
        .args(["serve", "--addr", "127.0.0.1:0"])
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let url = first
        .trim()
        .strip_prefix("listening on ")
        .unwrap()
        .to_owned();
    Served(child, url)
}

/// A whole response that ends when the connection closes (no length, no chunks).
pub fn close_delimited(sock: &mut std::net::TcpStream, status: &str, headers: &str, body: &str) {
    let head = format!("HTTP/1.1 {status}\r\n{headers}connection: close\r\n\r\n");
    sock.write_all(head.as_bytes()).unwrap();
    sock.write_all(body.as_bytes()).unwrap();
}

/// The content type of an event stream, as a header line.
pub const SSE: &str = "content-type: text/event-stream\r\n";

/// The JSON lines `tail --json` printed.
pub fn json_lines(stdout: &[u8]) -> Vec<serde_json::Value> {
    text(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}
