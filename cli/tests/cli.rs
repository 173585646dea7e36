//! The `ssekit` binary, run as a person would, against servers on 127.0.0.1 only.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::{
    assert_one_line_error, output_within, piped, raw_server, run_with_stdin, ssekit, text,
};

/// The child, its URL, and its stdout (kept open: closing it would break the server's pipe).
struct Server(
    Child,
    String,
    #[allow(dead_code)] BufReader<std::process::ChildStdout>,
);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn serve() -> Server {
    serve_with(&[])
}

fn serve_with(extra: &[&str]) -> Server {
    let mut child = ssekit()
        .args(["serve", "--addr", "127.0.0.1:0", "--keep-alive-ms", "200"])
        .args(extra)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    stdout.read_line(&mut first).unwrap();
    let url = first
        .trim()
        .strip_prefix("listening on ")
        .unwrap()
        .to_owned();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    Server(child, url, stdout)
}

#[test]
fn demo_cuts_resumes_and_validates_both_streams() {
    let out = ssekit().arg("demo").output().unwrap();
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    for needle in [
        "1. ORS tool call",
        "← task_id",
        "← : ping",
        "✂  cut: the client drops the connection after 3 events",
        "connected again, body now carries \"task_id\"",
        "✓ validated (ors profile)",
        "reward=1.0",
        "Session not found",
        "2. Responses-API stream",
        "disconnected: the stream was cut inside an event",
        "connected again with Last-Event-ID: 5",
        "✓ validated (responses profile)",
        "2 connections cut mid-stream, 2 resumed",
    ] {
        assert!(
            stdout.contains(needle),
            "{needle:?} missing from:\n{stdout}"
        );
    }
}

#[test]
fn decode_prints_json_lines_and_reports_a_truncated_input() {
    let out = run_with_stdin(
        &["decode"],
        b": hi\nretry: 1000\nevent: a\nid: 7\ndata: x\ndata: y\n\ndata: z\n\n",
    );
    assert!(out.status.success());
    let lines: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        lines,
        [
            serde_json::json!({"v": 1, "type": "comment", "text": "hi"}),
            serde_json::json!({"v": 1, "type": "retry", "ms": 1000}),
            serde_json::json!({"v": 1, "type": "event", "event": "a", "id": "7", "data": "x\ny"}),
            serde_json::json!({"v": 1, "type": "event", "event": "message", "id": null, "data": "z"}),
        ]
    );
    // Each line starts with the version and the type, as cli/JSON-LINES.md shows them.
    assert!(
        text(&out.stdout).starts_with(r#"{"v":1,"type":"comment","text":"hi"}"#),
        "{}",
        text(&out.stdout)
    );
    let cut = run_with_stdin(&["decode"], b"data: whole\n\ndata: half");
    assert_eq!(text(&cut.stdout).lines().count(), 1);
    assert_one_line_error(&cut, "ends inside an event");
    // Invalid UTF-8 is replaced with U+FFFD, as WHATWG decodes it, and is no error.
    let lossy = run_with_stdin(&["decode"], b"data: a\xffb\n\n");
    assert!(lossy.status.success(), "{}", text(&lossy.stderr));
    let line: serde_json::Value = serde_json::from_str(text(&lossy.stdout).trim()).unwrap();
    assert_eq!(line["data"], "a\u{fffd}b");
}

#[test]
fn check_accepts_a_valid_capture_and_names_the_broken_rule() {
    let dir = std::env::temp_dir().join(format!("ssekit-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = dir.join("good.sse");
    std::fs::write(&good, "event: task_id\ndata: t1\n\n: ping\n\nevent: chunk\ndata: {\"ok\":false,\n\nevent: end\ndata: \"error\":\"no\"}\n\n").unwrap();
    let out = ssekit()
        .args(["check", good.to_str().unwrap(), "--profile", "ors"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("ok, 3 events"));

    let bad = dir.join("bad.sse");
    std::fs::write(&bad, "event: chunk\ndata: x\n\n").unwrap();
    let out = ssekit()
        .args(["check", bad.to_str().unwrap(), "--profile", "ors"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr),
        format!(
            "{}: byte 0: event 1: error: `chunk` breaks the rule: the first event is `task_id` (or a lone `error`) [ors.task-id-first]\n",
            bad.display()
        )
    );

    let cut = dir.join("cut.sse");
    std::fs::write(
        &cut,
        "event: task_id\ndata: t1\n\nevent: chunk\ndata: x\n\n",
    )
    .unwrap();
    let out = ssekit()
        .args(["check", cut.to_str().unwrap(), "--profile", "ors"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).ends_with(
            "byte 47: event 3: error: the stream ends after 2 events without its terminal event [sequence.unterminated]\n"
        ),
        "{}",
        text(&out.stderr)
    );

    let out = run_with_stdin(
        &["check", "-", "--profile", "chat"],
        b"data: {\"choices\":[]}\n\ndata: [DONE]\n\n",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = ssekit()
        .args(["check", "/nonexistent/x.sse", "--profile", "chat"])
        .output()
        .unwrap();
    assert_one_line_error(&out, "cannot read /nonexistent/x.sse");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn tail_streams_validates_and_stops_at_the_terminal_event() {
    let server = serve();
    let out = ssekit()
        .args([
            "tail",
            &format!("{}/v1/responses", server.1),
            "-d",
            r#"{"input":"x"}"#,
            "-H",
            "Content-Type: application/json",
            "--profile",
            "responses",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lines: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["type"], "connected");
    let events: Vec<&serde_json::Value> = lines.iter().filter(|l| l["type"] == "event").collect();
    assert_eq!(events.first().unwrap()["event"], "response.created");
    assert_eq!(events.last().unwrap()["event"], "response.completed");

    // --once: a finite stream ends the command; a cut one is an error.
    let out = ssekit()
        .args([
            "tail",
            &format!("{}/v1/responses", server.1),
            "-d",
            "{}",
            "--once",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout)
            .lines()
            .filter(|l| l.starts_with("response."))
            .count(),
        18
    );
    let out = ssekit()
        .args([
            "tail",
            &format!("{}/v1/responses?cut_after=2", server.1),
            "-d",
            "{}",
            "--once",
        ])
        .output()
        .unwrap();
    assert_one_line_error(&out, "cut inside an event");
    // A stream that ends cleanly before the profile's terminal event is no success either.
    let out = ssekit()
        .args([
            "tail",
            &format!("{}/v1/responses?stop_after=3", server.1),
            "-d",
            "{}",
            "--once",
            "--profile",
            "responses",
        ])
        .output()
        .unwrap();
    assert_one_line_error(&out, "without its terminal event");

    // The human view, with the server cutting the first response: a reconnect, then the rest.
    let out = ssekit()
        .args([
            "tail",
            &format!("{}/v1/responses?cut_after=3", server.1),
            "-d",
            "{}",
            "--profile",
            "responses",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("-- disconnected: the stream was cut inside an event"),
        "{stderr}"
    );
    assert!(stderr.contains("-- connected (retry 1)"), "{stderr}");
    let stdout = text(&out.stdout);
    assert!(
        stdout
            .lines()
            .next()
            .unwrap()
            .starts_with("response.created [1]: {"),
        "{stdout}"
    );
    assert_eq!(
        stdout
            .lines()
            .filter(|l| l.starts_with("response.output_text.delta ["))
            .count(),
        15,
        "each event exactly once:\n{stdout}"
    );
}

#[test]
fn tail_errors_are_one_clear_line() {
    let server = serve();
    let out = ssekit()
        .args(["tail", &format!("{}/health", server.1)])
        .output()
        .unwrap();
    assert_one_line_error(
        &out,
        r#"the server answered 200 OK with Content-Type application/json, not text/event-stream: {"status":"ok"}"#,
    );
    let out = ssekit()
        .args(["tail", &format!("{}/nope/tools", server.1)])
        .output()
        .unwrap();
    assert_one_line_error(&out, r#"the server answered 404 Not Found: {"detail":"#);
    let free = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let out = ssekit()
        .args(["tail", &format!("http://{free}/"), "--retries", "0"])
        .output()
        .unwrap();
    assert_one_line_error(&out, "Connection refused");
    let out = ssekit()
        .args(["tail", "ftp://127.0.0.1/x"])
        .output()
        .unwrap();
    assert_one_line_error(
        &out,
        "unsupported scheme ftp://; tail speaks http:// or https://",
    );
    assert_eq!(out.status.code(), Some(2), "a bad URL is bad usage");
    let out = ssekit()
        .args(["tail", "http://127.0.0.1:1/", "-H", "no colon"])
        .output()
        .unwrap();
    assert_one_line_error(&out, "bad header");
    // A profile violation: the ORS profile on a Responses stream.
    let out = ssekit()
        .args([
            "tail",
            &format!("{}/v1/responses", server.1),
            "-d",
            "{}",
            "--profile",
            "ors",
        ])
        .output()
        .unwrap();
    assert_one_line_error(&out, "ors.");
    let _ = Duration::ZERO;
}

/// The official ORS Python client (`pip install ors-sdk`), unchanged, against `ssekit serve`:
/// discovery, session, prompt, tools, a scored submit, a 55 KB chunked result, a slow call
/// kept alive by pings, and an unknown tool. Runs when `ORS_SDK_PYTHON` names a Python
/// interpreter that has the package; skipped (with a note) otherwise.
///
/// Against both `--runtime hyper` and `--runtime smol`: the same server on either transport.
#[test]
fn the_official_python_client_works_unchanged() {
    let Ok(python) = std::env::var("ORS_SDK_PYTHON") else {
        eprintln!("skipped: set ORS_SDK_PYTHON to a python with `pip install ors-sdk`");
        return;
    };
    for runtime in RUNTIMES {
        official_client_works_on(&python, runtime);
    }
}

/// Both transports `ssekit serve --runtime` takes.
const RUNTIMES: [&str; 2] = ["hyper", "smol"];

fn official_client_works_on(python: &str, runtime: &str) {
    let server = serve_with(&["--runtime", runtime]);
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/ors_sdk_check.py");
    let stdout = run_sdk_script(python, script, &server.1, runtime);
    assert!(stdout.contains("submit: 1.0 True Correct!"), "{stdout}");
    assert!(stdout.contains("work: lines 300"), "{stdout}");
    assert!(stdout.contains("'nope' is not a valid tool"), "{stdout}");
    assert_eq!(stdout.lines().last(), Some("OK"));

    // With `--api-key`, the client's ORS_API_KEY is checked: right key works, wrong key is 401.
    let keyed = serve_with(&["--api-key", "k3y", "--runtime", runtime]);
    let run = |key: &str| {
        Command::new(python)
            .arg(script)
            .arg(&keyed.1)
            .env("ORS_API_KEY", key)
            .output()
            .unwrap()
    };
    let ok = run("k3y");
    assert!(ok.status.success(), "{}", text(&ok.stderr));
    let refused = run("wrong");
    assert!(!refused.status.success());
    assert!(
        text(&refused.stderr).contains("API key"),
        "{}",
        text(&refused.stderr)
    );
}

/// The official client resuming by task id: `ssekit serve --cut-ors-after 3` cuts every new
/// call inside its fourth block; the SDK sees "Stream ended unexpectedly", retries with the
/// saved `task_id`, and must get the whole 300-line result.
/// On both runtimes.
#[test]
fn the_official_python_client_resumes_by_task_id() {
    let Ok(python) = std::env::var("ORS_SDK_PYTHON") else {
        eprintln!("skipped: set ORS_SDK_PYTHON to a python with `pip install ors-sdk`");
        return;
    };
    for runtime in RUNTIMES {
        let server = serve_with(&["--cut-ors-after", "3", "--runtime", runtime]);
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/ors_sdk_resume.py");
        let stdout = run_sdk_script(&python, script, &server.1, runtime);
        assert!(stdout.contains("resumed work: lines 300"), "{stdout}");
        assert_eq!(stdout.lines().last(), Some("OK"));
    }
}

/// Runs an ors-sdk script against `url` (served on `runtime`); its stdout, once it succeeded.
fn run_sdk_script(python: &str, script: &str, url: &str, runtime: &str) -> String {
    let out = Command::new(python).arg(script).arg(url).output().unwrap();
    let stdout = text(&out.stdout);
    assert!(
        out.status.success(),
        "{runtime}: {stdout}\n{}",
        text(&out.stderr)
    );
    stdout
}

/// A plain HTTP/1.1 request to 127.0.0.1 with `Connection: close`; returns the body.
fn http_post(url: &str, path: &str, headers: &[(&str, &str)], body: &str) -> String {
    use std::io::Read;
    let host = url.strip_prefix("http://").unwrap();
    let mut sock = std::net::TcpStream::connect(host).unwrap();
    let mut req = format!("POST {path} HTTP/1.1\r\nhost: {host}\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: {}\r\n", body.len());
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    sock.write_all(req.as_bytes()).unwrap();
    let mut out = String::new();
    sock.read_to_string(&mut out).unwrap();
    out.split_once("\r\n\r\n").unwrap().1.to_owned()
}

/// An ORS session with a gsm8k task: `/create_session` is SSE (`tail` reads it), `/create`
/// is JSON. Returns the session id.
fn ors_session(server: &Server) -> String {
    let out = ssekit()
        .args([
            "tail",
            &format!("{}/create_session", server.1),
            "-d",
            "{}",
            "--profile",
            "ors",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let sid = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|v| v["event"] == "task_id")
        .unwrap()["data"]
        .as_str()
        .unwrap()
        .to_owned();
    let created = http_post(
        &server.1,
        "/create",
        &[("x-session-id", &sid)],
        r#"{"split":"test","index":0}"#,
    );
    assert!(created.contains(&sid), "{created}");
    sid
}

/// `ssekit tail` on the gsm8k task's `/call` in session `sid` with the ORS profile, posting
/// `body`, plus `extra` arguments.
fn tail_tool_call(server: &Server, sid: &str, body: &str, extra: &[&str]) -> std::process::Output {
    let url = format!("{}/gsm8k/call", server.1);
    let session = format!("X-Session-ID: {sid}");
    ssekit()
        .args(["tail", &url, "-H", &session, "-d", body, "--profile", "ors"])
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn tail_resumes_a_cut_ors_call_by_task_id() {
    let server = serve_with(&["--cut-ors-after", "3"]);
    let sid = ors_session(&server);
    let out = tail_tool_call(
        &server,
        &sid,
        r#"{"name":"work","input":{"steps":200}}"#,
        &["--json"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lines: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let connects: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l["type"] == "connected")
        .map(|(i, _)| i)
        .collect();
    assert_eq!(connects.len(), 2, "{lines:?}");
    let events = |from: usize, to: usize| -> Vec<String> {
        lines[from..to]
            .iter()
            .filter(|l| l["type"] == "event")
            .map(|l| l["event"].as_str().unwrap().to_owned())
            .collect()
    };
    let first = events(connects[0], connects[1]);
    let second = events(connects[1], lines.len());
    assert_eq!(first[0], "task_id");
    assert!(first.len() <= 3, "cut after 3 blocks: {first:?}");
    assert_eq!(second[0], "task_id");
    assert_eq!(second.last().map(String::as_str), Some("end"));
    let id = |from: usize| {
        lines[from..]
            .iter()
            .find(|l| l["event"] == "task_id")
            .unwrap()["data"]
            .clone()
    };
    assert_eq!(id(connects[0]), id(connects[1]), "the same task, resumed");
}

#[test]
fn tail_exits_with_an_error_when_the_call_ends_with_an_error_event() {
    let server = serve();
    let sid = ors_session(&server);
    // A tool the environment does not have: a valid ORS stream that ends with `error`.
    let out = tail_tool_call(&server, &sid, r#"{"name":"no_such_tool","input":{}}"#, &[]);
    assert_one_line_error(&out, "the stream ended with the failure event `error`");
}

/// A server on 127.0.0.1 that stalls: each connection gets a `200 text/event-stream` whose
/// body is `retry: 50`, event `n` (1 on a first connection, one after its `Last-Event-ID` on
/// a reconnect) and the first bytes of another event, then nothing, the socket held open.
/// It takes at most `connections` connections, within 10 s.
struct Stalling {
    url: String,
    /// The `Last-Event-ID` of each request, with its socket (dropping it would end the body).
    seen: std::sync::mpsc::Receiver<(Option<String>, std::net::TcpStream)>,
}

fn stalling(connections: usize) -> Stalling {
    let (tx, seen) = std::sync::mpsc::channel();
    let url = raw_server("/events", connections, move |mut sock, head| {
        let last_id = head
            .lines()
            .find_map(|l| l.strip_prefix("last-event-id:"))
            .map(|v| v.trim().to_owned());
        let n = last_id
            .as_deref()
            .map_or(1, |id| id.parse::<u32>().unwrap() + 1);
        let mut out = String::from(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n",
        );
        for piece in [
            "retry: 50\n\n".to_owned(),
            format!("id: {n}\ndata: event {n}\n\n"),
            format!("id: {}\ndata: par", n + 1),
        ] {
            out.push_str(&format!("{:x}\r\n{piece}\r\n", piece.len()));
        }
        sock.write_all(out.as_bytes()).unwrap();
        tx.send((last_id, sock)).is_ok()
    });
    Stalling { url, seen }
}

#[test]
fn tail_idle_timeout_drops_a_stalled_stream_and_resumes_or_stops() {
    // --once: the stall ends the command, exit 1, after the event before it.
    let server = stalling(1);
    let out = output_within(
        10,
        &["tail", &server.url, "--once", "--idle-timeout", "300ms"],
    );
    assert_eq!(text(&out.stdout), "message [1]: event 1\n");
    assert!(
        text(&out.stderr).contains("-- disconnected: no bytes within the idle timeout"),
        "{}",
        text(&out.stderr)
    );
    assert_one_line_error(&out, "the stream stalled: nothing arrived for 300ms");

    // Reconnecting: the stalled connection is dropped, the next resumes after event 1 (the
    // partial event 2 is not printed, nor taken as the last id) and stalls in turn. Each
    // delivered an event, so each stall is the first failure since progress; the third
    // connection is refused (the server is gone), and with --retries 1 the command gives up.
    let server = stalling(2);
    let out = output_within(
        10,
        &[
            "tail",
            &server.url,
            "--idle-timeout",
            "0.3",
            "--retries",
            "1",
            "--json",
        ],
    );
    assert_one_line_error(&out, "gave up after 1 retry: ");
    assert_one_line_error(&out, "Connection refused");
    let lines: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let of = |kind: &str| -> Vec<&serde_json::Value> {
        lines.iter().filter(|l| l["type"] == kind).collect()
    };
    let data: Vec<&str> = of("event")
        .iter()
        .map(|e| e["data"].as_str().unwrap())
        .collect();
    assert_eq!(data, ["event 1", "event 2"], "{lines:?}");
    let attempts: Vec<u64> = of("connected")
        .iter()
        .map(|c| c["attempt"].as_u64().unwrap())
        .collect();
    assert_eq!(attempts, [0, 1], "{lines:?}");
    let why: Vec<(&str, &str)> = of("disconnected")
        .iter()
        .map(|d| {
            (
                d["reason"].as_str().unwrap(),
                d["message"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        why[..2],
        [("idle_timeout", "no bytes within the idle timeout"); 2],
        "{lines:?}"
    );
    assert_eq!(why.len(), 3, "the refused third connection: {lines:?}");
    assert_eq!(why[2].0, "failed", "{lines:?}");
    let ids: Vec<Option<String>> = server.seen.try_iter().map(|(id, _)| id).collect();
    assert_eq!(ids, [None, Some("1".to_owned())]);
}

/// A server on 127.0.0.1 that answers one request, within 10 s, with `308` to `location`.
fn redirecting_once(location: String) -> String {
    raw_server("/old", 1, move |mut sock, _head| {
        let reply = format!(
            "HTTP/1.1 308 Permanent Redirect\r\nlocation: {location}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
        );
        sock.write_all(reply.as_bytes()).unwrap();
        true
    })
}

#[test]
fn tail_follows_a_redirect_and_reports_it() {
    let server = serve();
    let to = format!("{}/v1/responses", server.1);
    let out = output_within(
        20,
        &[
            "tail",
            &redirecting_once(to.clone()),
            "-d",
            r#"{"input":"x"}"#,
            "-H",
            "Content-Type: application/json",
            "--profile",
            "responses",
            "--once",
            "--json",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lines: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["type"], "redirected", "{lines:?}");
    assert_eq!(
        (&lines[0]["status"], &lines[0]["to"]),
        (&308.into(), &to.into())
    );
    assert_eq!(lines[1]["type"], "connected");
    let events: Vec<&serde_json::Value> = lines.iter().filter(|l| l["type"] == "event").collect();
    assert_eq!(events.last().unwrap()["event"], "response.completed");
}

#[test]
fn tail_max_redirects_zero_makes_a_redirect_an_error() {
    let out = output_within(
        10,
        &[
            "tail",
            &redirecting_once("http://127.0.0.1:1/never".to_owned()),
            "--max-redirects",
            "0",
        ],
    );
    assert_one_line_error(&out, "the server answered 308 Permanent Redirect");
}

/// The demo server reads at most 1 MiB of a request body, on every route: a client that
/// announces 400 MB gets 413 once 1 MiB has arrived (before, `/v1/responses` and `/call`
/// under `--cut-ors-after` read all of it into memory).
#[test]
fn serve_answers_413_to_a_body_past_1_mib_without_reading_it_all() {
    use std::io::Read;
    use std::time::Duration;
    let server = serve_with(&["--cut-ors-after", "2"]);
    for path in ["/v1/responses", "/gsm8k/call"] {
        let host = server.1.strip_prefix("http://").unwrap();
        let mut sock = std::net::TcpStream::connect(host).unwrap();
        sock.set_write_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        sock.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let head = format!(
            "POST {path} HTTP/1.1\r\nhost: {host}\r\nx-session-id: s\r\ncontent-type: application/json\r\ncontent-length: 400000000\r\n\r\n"
        );
        sock.write_all(head.as_bytes()).unwrap();
        // 2 MiB of the 400 MB; the server may stop reading or close before all of it.
        let zeros = vec![b'0'; 64 << 10];
        for _ in 0..32 {
            if sock.write_all(&zeros).is_err() {
                break;
            }
        }
        let mut answer = Vec::new();
        let _ = sock.read_to_end(&mut answer);
        let answer = String::from_utf8_lossy(&answer);
        assert!(answer.starts_with("HTTP/1.1 413"), "{path}: {answer}");
    }
}

/// A server on 127.0.0.1 that answers one request, within 10 s, with a `200
/// text/event-stream` whose body is `body`, then closes the connection.
fn serving_once(body: impl Into<String>) -> String {
    let body: String = body.into();
    raw_server("/events", 1, move |mut sock, _head| {
        let reply = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        sock.write_all(reply.as_bytes()).unwrap();
        true
    })
}

/// The agent platform and workflows send `data:`-only JSON named by its `event` field: a
/// run that ends in the agent's `error` or the workflow's `workflow_error` is a failure,
/// exit 1, and one that completes is a success.
#[test]
fn tail_exits_with_an_error_when_an_agent_or_workflow_run_fails() {
    let agent_start = "data: {\"event\":\"start\",\"run_id\":\"r1\",\"session_id\":\"s1\"}\n\n";
    let workflow_start = "data: {\"event\":\"workflow_start\",\"execution_id\":\"e1\"}\n\n";
    // (profile, first event, last event, the error it ends with; `None`: success)
    let runs = [
        (
            "agent",
            agent_start,
            "data: {\"event\":\"error\",\"message\":\"the model crashed\"}\n\n",
            Some("the stream ended with the failure event `error`: the model crashed"),
        ),
        (
            "workflow",
            workflow_start,
            "data: {\"event\":\"workflow_error\",\"execution_id\":\"e1\",\"error\":\"block a failed\"}\n\n",
            Some("the stream ended with the failure event `workflow_error`: block a failed"),
        ),
        (
            "agent",
            agent_start,
            "data: {\"event\":\"complete\",\"run_id\":\"r1\",\"content\":\"hi\",\"usage\":{}}\n\n",
            None,
        ),
        (
            "workflow",
            workflow_start,
            "data: {\"event\":\"workflow_complete\",\"execution_id\":\"e1\",\"result\":{}}\n\n",
            None,
        ),
    ];
    for (profile, first, last, error) in runs {
        let url = serving_once(format!("{first}{last}"));
        let out = output_within(10, &["tail", &url, "--profile", profile]);
        match error {
            Some(needle) => assert_one_line_error(&out, needle),
            None => assert!(out.status.success(), "{}", text(&out.stderr)),
        }
    }
}

/// Ctrl-C stops `tail` (exit 130) even while the stream is busy: before, each loop pass made
/// a new Ctrl-C future, and a SIGINT that arrived between two passes (nearly all of them, on
/// a stream that never pauses) was lost. The server floods events until the client hangs up.
#[cfg(unix)]
#[test]
fn tail_stops_on_ctrl_c_while_the_stream_is_busy() {
    use std::io::Read;
    let url = raw_server("/flood", 1, |mut sock, _head| {
        let head =
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
        if sock.write_all(head.as_bytes()).is_err() {
            return false;
        }
        let mut batch = String::new();
        for n in 0..100 {
            batch.push_str(&format!("id: {n}\ndata: flood\n\n"));
        }
        // Until the client is gone, or 60 s at most.
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while std::time::Instant::now() < deadline && sock.write_all(batch.as_bytes()).is_ok() {}
        false
    });
    let mut child = ssekit()
        .args(["tail", &url, "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Read stdout all along (a full pipe would block `tail` in a write), and say when 1000
    // events have been printed: the stream is busy, and `tail` past its first passes.
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let (busy_tx, busy) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut line = String::new();
        let mut events = 0;
        while stdout.read_line(&mut line).is_ok_and(|n| n > 0) {
            if line.contains(r#""type":"event""#) {
                events += 1;
                if events == 1000 {
                    let _ = busy_tx.send(());
                }
            }
            line.clear();
        }
        let _ = stdout.read_to_end(&mut Vec::new());
    });
    let started = busy.recv_timeout(Duration::from_secs(20)).is_ok();
    if !started {
        let _ = child.kill();
        let _ = child.wait();
        panic!("the flood did not reach `tail`");
    }
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    // A bound only so that a lost signal fails the test instead of hanging it.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("`tail` still running 20 s after SIGINT: the Ctrl-C was lost");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    reader.join().unwrap();
    assert_eq!(status.code(), Some(130), "{status:?}");
}

/// `check` validates as it reads: a violation is reported, with the same message as before,
/// while the input is still open (before, `check` read to the end first, so a live
/// `curl -N … | ssekit check -` reported nothing until the stream ended, and held all of it).
#[test]
fn check_reports_a_violation_before_the_input_ends() {
    let (mut child, mut stdin) = piped(&["check", "-", "--profile", "ors"]);
    stdin.write_all(b"event: chunk\ndata: x\n\n").unwrap();
    stdin.flush().unwrap();
    // stdin stays open: the violation must be reported without its end. The bound only
    // keeps a broken `check` from hanging the test.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("`check -` still waiting for the end of its input 20 s after a violation");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).starts_with("-: byte 0: event 1: error: `chunk` breaks the rule"),
        "{}",
        text(&out.stderr)
    );
    assert!(text(&out.stderr).contains("[ors.task-id-first]"));
    assert!(
        text(&out.stdout).contains("stopped at byte 21"),
        "{}",
        text(&out.stdout)
    );
}

/// A capture read in many pieces (several MiB, events split across reads) is validated whole,
/// from stdin and from a file; a violation after the first MiB is found.
#[test]
fn check_validates_a_capture_larger_than_one_read() {
    let mut capture = String::new();
    for n in 0..40_000 {
        capture.push_str(&format!(
            "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"chunk {n}\"}}}}]}}\r\n\r\n"
        ));
    }
    let mut good = capture.clone();
    good.push_str("data: [DONE]\n\n");
    let out = run_with_stdin(&["check", "-", "--profile", "chat"], good.as_bytes());
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "-: ok, 40001 events, 0 errors, 0 warnings (chat profile)\n"
    );
    let dir = std::env::temp_dir().join(format!("ssekit-cli-big-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("big.sse");
    std::fs::write(&path, &good).unwrap();
    let name = path.to_str().unwrap();
    let out = ssekit()
        .args(["check", name, "--profile", "chat"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        format!("{name}: ok, 40001 events, 0 errors, 0 warnings (chat profile)\n")
    );
    std::fs::remove_dir_all(&dir).unwrap();

    let mut bad = capture;
    bad.push_str("data: [DONE]\n\ndata: late\n\n");
    let out = run_with_stdin(&["check", "-", "--profile", "chat"], bad.as_bytes());
    assert_eq!(out.status.code(), Some(1));
    // The late event is the 40,002nd, counted from 1, and starts after 40,001 events.
    let at = bad.len() - "data: late\n\n".len();
    assert_eq!(
        text(&out.stderr),
        format!("-: byte {at}: event 40002: error: `message` breaks the rule: nothing follows `data: [DONE]` [chat.after-done]\n")
    );
}

/// `ssekit decode | head`: once the reader closes the pipe, `decode` stops quietly, as `cat`
/// does, with 141 (128 + SIGPIPE) and nothing on stderr (before: `cannot write stdout:
/// Broken pipe` and exit 1).
#[test]
fn decode_stops_quietly_when_stdout_is_closed() {
    let (mut child, mut stdin) = piped(&["decode"]);
    stdin.write_all(b"data: 0\n\n").unwrap();
    stdin.flush().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    assert!(first.contains(r#""data":"0""#), "{first}");
    drop(stdout); // `head -1` is done
                  // More input, so that `decode` writes into the closed pipe; it may be gone before all of
                  // it is written.
    let more = "data: more\n\n".repeat(1000);
    for _ in 0..100 {
        if stdin.write_all(more.as_bytes()).is_err() {
            break;
        }
    }
    drop(stdin);
    let mut stderr = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(stderr, "");
    assert_eq!(status.code(), Some(141), "{status:?}");
}

/// The human view of `tail` cannot be forged by the stream and lets no control character
/// through to the terminal; `--json` still prints the fields exactly as they came.
#[test]
fn tail_human_view_escapes_what_could_forge_a_line_or_drive_the_terminal() {
    const STREAM: &str = concat!(
        ": \u{1b}[31mred comment\n",
        "event: tick\nid: 1\ndata: real\n\n",
        "event: tick [999]: forged line\nid: 2\ndata: x\n\n",
        "id: 3\ndata: ok\u{b}message [4]: forged event\u{1b}]0;pwned\u{7}\ndata: second\n\n",
    );
    let out = output_within(10, &["tail", &serving_once(STREAM), "--once"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        concat!(
            "tick [1]: real\n",
            "\"tick [999]: forged line\" [2]: x\n",
            "message [3]: ok\\u{b}message [4]: forged event\\u{1b}]0;pwned\\u{7}\n",
            "    second\n",
        )
    );
    let stderr = text(&out.stderr);
    assert!(stderr.contains(": \\u{1b}[31mred comment\n"), "{stderr}");
    let controls = |s: &str| s.chars().filter(|c| c.is_control() && *c != '\n').count();
    assert_eq!(controls(&text(&out.stdout)), 0);
    assert_eq!(controls(&stderr), 0, "{stderr:?}");

    let out = output_within(10, &["tail", &serving_once(STREAM), "--once", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lines: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[1]["text"], "\u{1b}[31mred comment", "{lines:?}");
    let events: Vec<(&str, &str, &str)> = lines
        .iter()
        .filter(|l| l["type"] == "event")
        .map(|l| {
            let field = |name: &str| l[name].as_str().unwrap();
            (field("event"), field("id"), field("data"))
        })
        .collect();
    assert_eq!(
        events,
        [
            ("tick", "1", "real"),
            ("tick [999]: forged line", "2", "x"),
            (
                "message",
                "3",
                "ok\u{b}message [4]: forged event\u{1b}]0;pwned\u{7}\nsecond"
            ),
        ]
    );

    // An error line that quotes the stream (here a violation naming the event by its JSON
    // `event`, which decodes to an ESC sequence) escapes it too.
    let named = serving_once("data: {\"event\":\"\\u001b]0;pwned\\u0007\"}\n\n");
    let out = output_within(10, &["tail", &named, "--once", "--profile", "agent"]);
    assert_one_line_error(&out, "\\u{1b}]0;pwned\\u{7}");
    assert_eq!(controls(&text(&out.stderr)), 0, "{:?}", text(&out.stderr));
}

/// A background Responses stream cut inside its fifth event is resumed by `tail` with
/// `GET /v1/responses/{id}?stream=true&starting_after=3`: every sequence number once, in
/// order, and the profile sees one whole stream. On both runtimes.
#[test]
fn tail_resumes_a_cut_background_response_by_sequence_number() {
    for runtime in ["hyper", "smol"] {
        let server = serve_with(&["--runtime", runtime]);
        let url = format!("{}/v1/responses?cut_after=4", server.1);
        let body = r#"{"input":"clips?","background":true,"stream":true}"#;
        let out = output_within(
            30,
            &[
                "tail",
                &url,
                "--profile",
                "responses",
                "--json",
                "-d",
                body,
                "-v",
                "--reconnect-time",
                "50ms",
            ],
        );
        let stderr = text(&out.stderr);
        assert!(out.status.success(), "{runtime}: {stderr}");
        assert!(
            stderr.contains("starting_after") || stderr.contains("GET "),
            "{stderr}"
        );
        let seqs: Vec<u64> = text(&out.stdout)
            .lines()
            .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
            .filter_map(|v| {
                let data: serde_json::Value = serde_json::from_str(v["data"].as_str()?).ok()?;
                data["sequence_number"].as_u64()
            })
            .collect();
        assert_eq!(seqs, (0..18).collect::<Vec<_>>(), "{runtime}: {stderr}");
    }
}
