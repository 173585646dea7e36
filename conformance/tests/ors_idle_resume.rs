//! An ORS call whose server goes silent mid-result (after the `task_id` and two chunks,
//! inside the third: no bytes, no pings) for longer than the client's idle timeout: the
//! client drops the connection and resumes by task id, and the result is the whole one,
//! every chunk once and in order. Over every ORS server × client pairing on 127.0.0.1, with
//! a proxy in between that stalls the first connection. And a server silent while its tool
//! runs, its pings further apart than the idle timeout: the same resumption.

mod kit;

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kit::{big_result, each_pair, fast_ors, serve_ors, tokio_rt, within, Side};
use ssekit_http::client::Ended;
use ssekit_http::ors::{CallOptions, Client, OrsIo, Trace};

/// The client's idle timeout: far below the servers' 5 s keep-alive, so only the stall can
/// end a connection (a result the tool answers at once arrives well within it).
const IDLE: Duration = Duration::from_millis(250);

/// Where the first connection stalls: this many bytes into its third `chunk` event (the
/// event name, and part of its data), after the `task_id` event and two whole chunks.
const STALL_AT: (usize, usize) = (3, "event: chunk\ndata: ".len() + 40);

/// Where to stop copying a response, given what was read of it so far.
type Stall = fn(&[u8]) -> Option<usize>;

/// Copies `from` to `to` until either ends (then shuts down `to`'s writing half). With
/// `stall`, stops copying for good at the byte `stall` gives for what was copied so far
/// (leaving both connections open, silent).
fn pipe(mut from: TcpStream, mut to: TcpStream, stall: Option<Stall>) {
    let mut seen = Vec::new();
    let mut buf = [0; 8192];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let Some(stall) = stall else {
            if to.write_all(&buf[..n]).is_err() {
                break;
            }
            continue;
        };
        let before = seen.len();
        seen.extend_from_slice(&buf[..n]);
        // Everything before the stall point goes; nothing after it ever does.
        let end = stall(&seen).map_or(seen.len(), |at| at.min(seen.len()));
        if end > before && to.write_all(&seen[before..end]).is_err() {
            break;
        }
        if end < seen.len() {
            // Silent from now on; the other direction's copy holds both connections open
            // until the client gives up on its own.
            return;
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}

/// The byte of the first response where it stalls ([`STALL_AT`]), once it has been seen.
fn stall_point(seen: &[u8]) -> Option<usize> {
    let (nth, into) = STALL_AT;
    let marker = b"event: chunk\n";
    let start = seen
        .windows(marker.len())
        .enumerate()
        .filter(|(_, w)| *w == marker)
        .map(|(i, _)| i)
        .nth(nth - 1)?;
    Some(start + into)
}

/// A TCP proxy on 127.0.0.1 to `upstream` whose first connection stalls at
/// [`stall_point`]; later connections pass everything. Returns its address and a count of
/// the connections it accepted.
fn stalling_proxy(upstream: SocketAddr) -> (SocketAddr, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(client) = client else { break };
            let first = count.fetch_add(1, Ordering::SeqCst) == 0;
            let Ok(server) = TcpStream::connect(upstream) else {
                break;
            };
            let (client_in, server_in) = (client.try_clone().unwrap(), server.try_clone().unwrap());
            std::thread::spawn(move || pipe(client_in, server, None));
            let stall = first.then_some(stall_point as Stall);
            std::thread::spawn(move || pipe(server_in, client, stall));
        }
    });
    (addr, accepted)
}

/// The kit's ORS server of the given transport ([`serve_ors`]): its address, and the
/// session its calls go in (`no-session` for the smol one, which keeps none).
fn ors_server(side: Side) -> (SocketAddr, String) {
    let (url, headers) = serve_ors(side);
    let addr: SocketAddr = url
        .trim_start_matches("http://")
        .trim_end_matches("/kit/call")
        .parse()
        .unwrap();
    let sid = headers
        .into_iter()
        .find(|(name, _)| name == "x-session-id")
        .map_or("no-session".to_owned(), |(_, sid)| sid);
    (addr, sid)
}

/// A call's result and trace.
type Outcome = (
    Result<ssekit::profile::ors::ToolResult, ssekit_http::Error>,
    Vec<Trace>,
);

/// `call_tool_traced` of the kit's `tool` in session `sid` by `ors`, with idle timeout
/// `idle` and a fast retry.
async fn traced_call<T: OrsIo>(ors: Client<T>, idle: Duration, sid: &str, tool: &str) -> Outcome {
    let ors = ors.idle_timeout(idle).reconnect(fast_ors());
    let mut trace = Vec::new();
    let input = serde_json::json!({});
    let options = CallOptions::default();
    let result = ors
        .call_tool_traced("kit", sid, tool, input, options, |t| trace.push(t))
        .await;
    (result, trace)
}

/// [`traced_call`] with the `side` transport's ORS client for the server at `addr`, within
/// 10 s.
fn call(side: Side, addr: SocketAddr, idle: Duration, sid: &str, tool: &str) -> Outcome {
    let base = format!("http://{addr}");
    let limit = Duration::from_secs(60); // a hang guard
    match side {
        Side::Smol => {
            let ors = ssekit_smol::ors::Client::new(&base).unwrap();
            smol::block_on(within(limit, traced_call(ors, idle, sid, tool)))
        }
        Side::Hyper => {
            let ors = ssekit_hyper::ors::Client::new(&base).unwrap();
            tokio_rt().block_on(within(limit, traced_call(ors, idle, sid, tool)))
        }
    }
}

/// The events of each connection in `trace`, as (type, data), split where it connected.
fn connections(trace: &[Trace]) -> Vec<Vec<(String, String)>> {
    let mut out: Vec<Vec<(String, String)>> = Vec::new();
    for t in trace {
        match t {
            Trace::Connected { .. } => out.push(Vec::new()),
            Trace::Event(e) => {
                let event = (e.event_type().to_owned(), e.data().to_owned());
                out.last_mut()
                    .expect("an event before a connection")
                    .push(event);
            }
            _ => {}
        }
    }
    out
}

/// The task id each connection of `trace` resumed (`None` for a new call).
fn resumes(trace: &[Trace]) -> Vec<Option<String>> {
    trace
        .iter()
        .filter_map(|t| match t {
            Trace::Connected { resume, .. } => Some(resume.clone()),
            _ => None,
        })
        .collect()
}

/// Checks that `conn` (a connection's events) is task `task_id` from its start: `task_id`,
/// then [`big_result`] as `chunk`* + `end`, each piece once and in order.
fn assert_whole_task(conn: &[(String, String)], task_id: &str) {
    assert_eq!(conn[0], ("task_id".to_owned(), task_id.to_owned()));
    let pieces = &conn[1..];
    let kinds: Vec<&str> = pieces.iter().map(|e| e.0.as_str()).collect();
    let (last, chunks) = kinds.split_last().expect("a result");
    assert_eq!(*last, "end", "{kinds:?}");
    assert!(
        chunks.len() >= 3 && chunks.iter().all(|k| *k == "chunk"),
        "{kinds:?}"
    );
    let whole: String = pieces.iter().map(|e| e.1.as_str()).collect();
    assert_eq!(whole, serde_json::to_string(&big_result()).unwrap());
}

#[test]
fn a_call_silent_mid_result_past_the_idle_timeout_is_resumed_by_task_id_and_is_whole() {
    each_pair(|server, side| {
        // The kit's `fast` tool answers at once: the stall cuts the result itself.
        let (upstream, sid) = ors_server(server);
        let (proxy, accepted) = stalling_proxy(upstream);
        let started = Instant::now();
        let (result, trace) = call(side, proxy, IDLE, &sid, "fast");
        let result = result.unwrap_or_else(|e| panic!("{e:?} after {trace:?}"));
        // Exact: the same value as the tool's.
        assert_eq!(result, big_result());
        assert!(started.elapsed() >= IDLE);

        let conns = connections(&trace);
        let [stalled, resumed] = &conns[..] else {
            panic!("two connections expected: {trace:?}")
        };
        // The first connection: the task id and two chunks, then silence (the third chunk,
        // cut inside, is never delivered), until the client gives up on it.
        let kinds: Vec<&str> = stalled.iter().map(|e| e.0.as_str()).collect();
        assert_eq!(kinds, ["task_id", "chunk", "chunk"], "{trace:?}");
        assert!(trace.contains(&Trace::Disconnected(Ended::IdleTimeout)));
        // The second resumes the task and gets it whole from its first chunk.
        let task_id = &stalled[0].1;
        assert_eq!(resumes(&trace), [None, Some(task_id.clone())], "{trace:?}");
        assert_whole_task(resumed, task_id);
        assert_eq!(
            resumed[1..3],
            stalled[1..],
            "the replay starts at the first chunk"
        );
        assert_eq!(accepted.load(Ordering::SeqCst), 2, "one resume, no more");
    });
}

#[test]
fn a_call_silent_while_its_tool_runs_is_resumed_by_task_id_and_is_whole() {
    // The kit's `slow` tool answers after 300 ms, twice the idle timeout, and the server
    // pings every 5 s: the first connection hears only the task id.
    let idle = Duration::from_millis(150);
    each_pair(|server, side| {
        let (addr, sid) = ors_server(server);
        let (result, trace) = call(side, addr, idle, &sid, "slow");
        let result = result.unwrap_or_else(|e| panic!("{e:?} after {trace:?}"));
        assert_eq!(result, big_result());
        let conns = connections(&trace);
        assert!(conns.len() >= 2, "{trace:?}");
        assert!(trace.contains(&Trace::Disconnected(Ended::IdleTimeout)));
        let task_id = &conns[0][0].1;
        assert_eq!(conns[0].len(), 1, "only the task id: {trace:?}");
        let resumed = resumes(&trace);
        assert_eq!(resumed[0], None);
        assert!(resumed[1..].iter().all(|r| r.as_ref() == Some(task_id)));
        // Connections before the result came hear only the task id; the last one has it all.
        let (last, before) = conns.split_last().expect("connections");
        assert!(before.iter().all(|c| c.len() == 1), "{trace:?}");
        assert_whole_task(last, task_id);
    });
}
