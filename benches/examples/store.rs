//! Several instances on a shared store: the in-memory store beside Redis, in one run, over
//! 127.0.0.1 (issue 32).
//!
//! ```text
//! cargo run --release -p ssekit-benches --example store             # about 40 s
//! cargo run --release -p ssekit-benches --example store -- --quick  # about 15 s
//! cargo run --release -p ssekit-benches --example store -- --runtime smol --clients 64
//! ```
//!
//! It starts its own `redis-server` (no persistence) on a free loopback port and `ssekit
//! serve` instances in child processes (`target/release/ssekit`, brought up to date with cargo
//! first; `--ssekit PATH` names another): for the **memory** column one instance without `--store`,
//! for the **redis** column two, A and B, with `--store redis://…`. The clients are this
//! process: hyper's HTTP/1.1 client on keep-alive connections, ssekit's `Decoder`, tokio on
//! 2 threads. With one instance, "A" and "B" below are that instance.
//!
//! | figure | how |
//! |---|---|
//! | ORS calls/s | `--clients` clients (32), each with its own session on A, call `submit` in a loop; calls completed per second after a warm-up, and their latency |
//! | broadcast events/s | 8 publishers `POST /events` on A as fast as they are answered while `--subscribers` (16) subscribers read `GET /events` on B; published events/s, and deliveries/s (events × subscribers, every one checked received) |
//! | publish → receive | one publisher on A, `--subscribers` subscribers on B, one event at a time (the next once every subscriber has read it): from sending the `POST` to the event read by each subscriber on B, p50/p99 |
//! | resume on B | a finished `submit` call on A resumed by `task_id` on B: from sending the resume to its `end` read (and checked identical), p50/p99 |
//! | Redis commands | `INFO commandstats` before and after each figure's window (the `INFO` calls themselves left out), divided by the calls or published events; the busiest commands named. A `MULTI … EXEC` block or a pipeline is one round trip for several commands, so round trips are fewer than commands (see the store's layout in `store-redis/src/lib.rs`). |

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{header, Request, Response};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use ssekit::{Decoder, Event, Frame};
use ssekit_benches::report::{cell, percentile};
use tokio::net::TcpStream;

const TASK: &str = r#"{"question": "Tom has 3 baskets with 14 apples each. He gives away 9 apples. How many apples does he have left?", "answer": 33}"#;
const PUBLISHERS: usize = 8;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let value = |flag: &str| ssekit_benches::report::flag_value(&args, flag);
    let number = |flag: &str, default: usize| {
        value(flag).map_or(default, |v| {
            v.parse()
                .unwrap_or_else(|_| fail(&format!("{flag} {v}: not a number")))
        })
    };
    let plan = Plan {
        quick: args.iter().any(|a| a == "--quick"),
        runtime: value("--runtime").unwrap_or_else(|| "hyper".into()),
        clients: number("--clients", 32),
        subscribers: number("--subscribers", 16),
    };
    let ssekit = value("--ssekit").map_or_else(ssekit_binary, Into::into);
    let redis = Redis::start();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let started = Instant::now();
    let uptime_before = uptime();
    let mut table = Table::default();
    for column in ["memory", "redis"] {
        let store = (column == "redis").then(|| redis.url());
        let a = Instance::start(&ssekit, &plan.runtime, store.as_deref());
        let b = store
            .as_deref()
            .map(|url| Instance::start(&ssekit, &plan.runtime, Some(url)));
        let b_addr = b.as_ref().map_or(a.addr, |b| b.addr);
        let redis = store.is_some().then_some(&redis);
        eprintln!("{column}: A {} B {b_addr}", a.addr);
        rt.block_on(measure(&plan, column, a.addr, b_addr, redis, &mut table));
    }
    println!(
        "\n{} run, {:.0} s, `ssekit serve --runtime {}`, {} clients, {} subscribers, {} cores\n\
         uptime before: {uptime_before}\nuptime after:  {}\n",
        if plan.quick { "quick" } else { "full" },
        started.elapsed().as_secs_f64(),
        plan.runtime,
        plan.clients,
        plan.subscribers,
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        uptime(),
    );
    print_table(&table);
    rt.shutdown_timeout(Duration::from_secs(1));
}

/// What to run, from the command line.
struct Plan {
    quick: bool,
    runtime: String,
    clients: usize,
    subscribers: usize,
}

impl Plan {
    fn window(&self) -> Duration {
        Duration::from_secs(if self.quick { 3 } else { 8 })
    }

    fn warmup(&self) -> Duration {
        Duration::from_millis(if self.quick { 500 } else { 1_000 })
    }

    fn samples(&self) -> usize {
        if self.quick {
            300
        } else {
            1_000
        }
    }
}

/// The child processes running (redis-server, the instances), stopped by [`fail`] too: exiting
/// runs no `Drop`.
static CHILDREN: Mutex<Vec<u32>> = Mutex::new(Vec::new());

fn children() -> std::sync::MutexGuard<'static, Vec<u32>> {
    CHILDREN.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Stops `child` and forgets it.
fn stop(child: &mut Child) {
    children().retain(|&pid| pid != child.id());
    let _ = child.kill();
    let _ = child.wait();
}

fn fail(message: &str) -> ! {
    eprintln!("store bench: {message}");
    for pid in children().drain(..) {
        let _ = Command::new("kill").arg(pid.to_string()).status();
    }
    std::process::exit(2)
}

/// `uptime`'s line: how busy the (shared) machine was.
fn uptime() -> String {
    Command::new("uptime")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_else(|| "?".into())
}

/// `ssekit` next to this example (`target/release/examples/store` → `target/release/ssekit`),
/// brought up to date by cargo first (so that the figures are of the tree being measured).
fn ssekit_binary() -> std::path::PathBuf {
    let exe = std::env::current_exe().expect("own path");
    let dir = exe
        .parent()
        .and_then(|d| d.parent())
        .expect("the example runs from target/<profile>/examples");
    let ssekit = dir.join("ssekit");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| env!("CARGO").into());
    let mut build = Command::new(cargo);
    build
        .args(["build", "-q", "-p", "ssekit-cli", "--bin", "ssekit"])
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
    if dir.file_name().is_some_and(|n| n == "release") {
        build.arg("--release");
    }
    let ok = build.status().is_ok_and(|s| s.success());
    if !ok || !ssekit.exists() {
        fail(&format!(
            "could not build {}; give --ssekit PATH",
            ssekit.display()
        ));
    }
    ssekit
}

/// A free port on 127.0.0.1 (bound, then released for the child to take).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| fail(&format!("no free port: {e}")))
}

/// This bench's own redis-server, stopped on drop.
struct Redis {
    child: Child,
    port: u16,
}

impl Redis {
    fn start() -> Redis {
        let port = free_port();
        let child = Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                fail(&format!(
                    "cannot start redis-server ({e}); install it (Debian: apt-get install redis-server)"
                ))
            });
        children().push(child.id());
        let redis = Redis { child, port };
        for _ in 0..100 {
            if redis.cli(&["PING"]).is_some_and(|r| r.trim() == "PONG") {
                return redis;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        fail("redis-server did not answer PING within 5 s")
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    fn cli(&self, args: &[&str]) -> Option<String> {
        let out = Command::new("redis-cli")
            .args(["-p", &self.port.to_string()])
            .args(args)
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Calls per command so far (`INFO commandstats`), without `INFO` itself.
    fn commands(&self) -> BTreeMap<String, u64> {
        let text = self
            .cli(&["INFO", "commandstats"])
            .unwrap_or_else(|| fail("redis-cli INFO commandstats failed"));
        text.lines()
            .filter_map(|line| {
                let (name, rest) = line.strip_prefix("cmdstat_")?.split_once(':')?;
                let calls = rest
                    .strip_prefix("calls=")?
                    .split(',')
                    .next()?
                    .parse()
                    .ok()?;
                (name != "info").then(|| (name.to_owned(), calls))
            })
            .collect()
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        stop(&mut self.child);
    }
}

/// Redis commands between two [`Redis::commands`] snapshots, per unit of work.
fn per_unit(
    before: &BTreeMap<String, u64>,
    after: &BTreeMap<String, u64>,
    units: u64,
) -> (f64, String) {
    let mut delta: Vec<(String, u64)> = after
        .iter()
        .map(|(name, n)| (name.clone(), n - before.get(name).copied().unwrap_or(0)))
        .filter(|(_, n)| *n > 0)
        .collect();
    delta.sort_by_key(|d| std::cmp::Reverse(d.1));
    let units = units.max(1) as f64;
    let total = delta.iter().map(|(_, n)| *n).sum::<u64>() as f64 / units;
    let top = delta
        .iter()
        .take(8)
        .map(|(name, n)| format!("{name} {:.2}", *n as f64 / units))
        .collect::<Vec<_>>()
        .join(", ");
    (total, top)
}

/// An `ssekit serve` child process, stopped on drop.
struct Instance {
    child: Child,
    addr: SocketAddr,
}

impl Instance {
    fn start(ssekit: &std::path::Path, runtime: &str, store: Option<&str>) -> Instance {
        let mut cmd = Command::new(ssekit);
        cmd.args(["serve", "--addr", "127.0.0.1:0", "--runtime", runtime]);
        if let Some(url) = store {
            cmd.args(["--store", url]);
        }
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| fail(&format!("cannot start {}: {e}", ssekit.display())));
        children().push(child.id());
        let stdout = child.stdout.take().expect("piped stdout");
        let mut first = String::new();
        let _ = BufReader::new(stdout).read_line(&mut first);
        let addr = first
            .trim()
            .strip_prefix("listening on http://")
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| fail(&format!("ssekit serve did not start: {first:?}")));
        Instance { child, addr }
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        stop(&mut self.child);
    }
}

/// One keep-alive HTTP/1.1 connection.
struct Conn {
    send: SendRequest<Full<Bytes>>,
    addr: SocketAddr,
}

impl Conn {
    async fn open(addr: SocketAddr) -> Conn {
        // An instance started with --store listens before it has connected to Redis.
        let mut tries = 0;
        let stream = loop {
            match TcpStream::connect(addr).await {
                Ok(stream) => break stream,
                Err(e) if tries > 50 => fail(&format!("connect {addr}: {e}")),
                Err(_) => tries += 1,
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        let _ = stream.set_nodelay(true);
        let (send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .expect("HTTP/1.1 handshake");
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Conn { send, addr }
    }

    async fn post(&mut self, path: &str, sid: Option<&str>, body: String) -> Response<Incoming> {
        self.send.ready().await.expect("connection ready");
        let mut req = Request::post(path)
            .header(header::HOST, self.addr.to_string())
            .header(header::CONTENT_TYPE, "application/json");
        if let Some(sid) = sid {
            req = req.header("x-session-id", sid);
        }
        let req = req.body(Full::new(Bytes::from(body))).expect("request");
        self.send.send_request(req).await.expect("response")
    }

    async fn get(&mut self, path: &str) -> Response<Incoming> {
        self.send.ready().await.expect("connection ready");
        let req = Request::get(path)
            .header(header::HOST, self.addr.to_string())
            .body(Full::new(Bytes::new()))
            .expect("request");
        self.send.send_request(req).await.expect("response")
    }

    /// A new session on this connection's instance, bound to [`TASK`].
    async fn session(&mut self) -> String {
        let mut created = Sse::new(self.post("/create_session", None, "{}".into()).await);
        let sid = created
            .next_named("task_id")
            .await
            .expect("create_session: task_id")
            .data()
            .to_owned();
        created.drain().await;
        let body = format!(r#"{{"env_name": "gsm8k", "task_spec": {TASK}}}"#);
        let resp = self.post("/create", Some(&sid), body).await;
        assert!(resp.status().is_success(), "/create: {}", resp.status());
        let _ = resp.into_body().collect().await;
        sid
    }

    /// An ORS call (`task_id` given: a resume): its task id and the data of its `end`.
    async fn call(&mut self, sid: &str, task_id: Option<&str>) -> (String, String) {
        let body = match task_id {
            None => r#"{"name": "submit", "input": {"answer": 33}}"#.to_owned(),
            Some(id) => {
                format!(r#"{{"name": "submit", "input": {{"answer": 33}}, "task_id": "{id}"}}"#)
            }
        };
        let mut sse = Sse::new(self.post("/gsm8k/call", Some(sid), body).await);
        let (mut id, mut end) = (String::new(), None);
        while let Some(event) = sse.next_event().await {
            match event.event_type() {
                "task_id" => id = event.data().to_owned(),
                "end" => {
                    end = Some(event.data().to_owned());
                    break;
                }
                "error" => fail(&format!("call failed: {}", event.data())),
                _ => {}
            }
        }
        sse.drain().await;
        let end = end.unwrap_or_else(|| fail("a call ended without its `end` event"));
        (id, end)
    }
}

/// An event stream being read.
struct Sse {
    body: Incoming,
    decoder: Decoder,
}

impl Sse {
    fn new(resp: Response<Incoming>) -> Sse {
        assert!(resp.status().is_success(), "status {}", resp.status());
        Sse {
            body: resp.into_body(),
            decoder: Decoder::new(),
        }
    }

    async fn next_event(&mut self) -> Option<Event> {
        loop {
            match self.decoder.next_frame() {
                Ok(Some(Frame::Event(event))) => return Some(event),
                Ok(Some(_)) => continue,
                Ok(None) => {}
                Err(e) => fail(&format!("undecodable stream: {e}")),
            }
            let frame = self.body.frame().await?.ok()?;
            if let Ok(data) = frame.into_data() {
                self.decoder
                    .feed(data)
                    .unwrap_or_else(|e| fail(&format!("undecodable stream: {e}")));
            }
        }
    }

    async fn next_named(&mut self, name: &str) -> Option<Event> {
        while let Some(event) = self.next_event().await {
            if event.event_type() == name {
                return Some(event);
            }
        }
        None
    }

    /// Reads the body to its end, so that the connection serves the next request.
    async fn drain(&mut self) {
        while let Some(Ok(_)) = self.body.frame().await {}
    }
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Every figure of one column.
async fn measure(
    plan: &Plan,
    column: &str,
    a: SocketAddr,
    b: SocketAddr,
    redis: Option<&Redis>,
    table: &mut Table,
) {
    let snapshot = || redis.map(Redis::commands);
    // Redis commands since `before`, per unit, into `row`.
    let commands = |table: &mut Table, row: &str, before: Option<BTreeMap<String, u64>>, units| {
        if let (Some(redis), Some(before)) = (redis, before) {
            let (total, top) = per_unit(&before, &redis.commands(), units);
            table.set(row, column, format!("{total:.1} ({top})"));
        }
    };

    // --- ORS calls/s ---------------------------------------------------------------------
    let mut conns = Vec::new();
    for _ in 0..plan.clients {
        let mut conn = Conn::open(a).await;
        let sid = conn.session().await;
        conns.push((conn, sid));
    }
    // Resumed below: a session of its own would find the registry full of these
    // sessions' results, and an owner evicts only its own (core's fair registry).
    let resume_sid = conns.first().map(|(_, sid)| sid.clone());
    let done = Arc::new(AtomicU64::new(0));
    let counting = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let mut clients = Vec::new();
    for (mut conn, sid) in conns {
        let (done, counting, stop) = (done.clone(), counting.clone(), stop.clone());
        clients.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let t0 = Instant::now();
                let (_, end) = conn.call(&sid, None).await;
                assert!(end.contains("Correct!"), "unexpected result {end}");
                if counting.load(Ordering::Relaxed) {
                    done.fetch_add(1, Ordering::Relaxed);
                    latencies.push(millis(t0.elapsed()));
                }
            }
            latencies
        }));
    }
    tokio::time::sleep(plan.warmup()).await;
    let before = snapshot();
    counting.store(true, Ordering::Relaxed);
    let t0 = Instant::now();
    tokio::time::sleep(plan.window()).await;
    counting.store(false, Ordering::Relaxed);
    let elapsed = t0.elapsed().as_secs_f64();
    let calls = done.load(Ordering::Relaxed);
    commands(table, "Redis commands per call", before, calls);
    stop.store(true, Ordering::Relaxed);
    let mut latencies = Vec::new();
    for client in clients {
        latencies.extend(client.await.expect("client"));
    }
    latencies.sort_by(f64::total_cmp);
    let rate = calls as f64 / elapsed;
    eprintln!("  {calls} calls in {elapsed:.1} s: {rate:.0}/s");
    table.set(
        &format!("ORS calls/s (`submit`, {} clients on A)", plan.clients),
        column,
        format!("{rate:.0}"),
    );
    table.set(
        "call latency p50 / p99 (ms)",
        column,
        format!(
            "{:.2} / {:.2}",
            percentile(&latencies, 0.5),
            percentile(&latencies, 0.99)
        ),
    );

    // --- broadcast events/s ------------------------------------------------------------------
    let tag = format!("{column}-rate-");
    let received = Arc::new(AtomicU64::new(0));
    // Events a subscriber never got: a gap in one publisher's numbers (each publisher's
    // events are in order in the log).
    let skipped = Arc::new(AtomicU64::new(0));
    let mut subscribers = Vec::new();
    for _ in 0..plan.subscribers {
        let mut conn = Conn::open(b).await;
        let mut sse = Sse::new(conn.get("/events").await);
        let (received, skipped, tag) = (received.clone(), skipped.clone(), tag.clone());
        subscribers.push(tokio::spawn(async move {
            let _conn = conn;
            let mut next = [0u64; PUBLISHERS];
            while let Some(event) = sse.next_event().await {
                let Some((p, n)) = event.data().strip_prefix(&tag).and_then(|pn| {
                    let (p, n) = pn.split_once('-')?;
                    Some((p.parse::<usize>().ok()?, n.parse::<u64>().ok()?))
                }) else {
                    continue;
                };
                received.fetch_add(1, Ordering::Relaxed);
                if let Some(next) = next.get_mut(p) {
                    skipped.fetch_add(n.saturating_sub(*next), Ordering::Relaxed);
                    *next = n + 1;
                }
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = snapshot();
    let published = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let mut publishers = Vec::new();
    let t0 = Instant::now();
    for p in 0..PUBLISHERS {
        let mut conn = Conn::open(a).await;
        let (published, stop, tag) = (published.clone(), stop.clone(), tag.clone());
        publishers.push(tokio::spawn(async move {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let resp = conn.post("/events", None, format!("{tag}{p}-{n}")).await;
                assert!(resp.status().is_success(), "publish: {}", resp.status());
                let _ = resp.into_body().collect().await;
                published.fetch_add(1, Ordering::Relaxed);
                n += 1;
            }
        }));
    }
    tokio::time::sleep(plan.window()).await;
    stop.store(true, Ordering::Relaxed);
    for p in publishers {
        p.await.expect("publisher");
    }
    let publish_time = t0.elapsed().as_secs_f64();
    let events = published.load(Ordering::Relaxed);
    let expected = events * plan.subscribers as u64;
    let wait_until = Instant::now() + Duration::from_secs(5);
    let accounted = || received.load(Ordering::Relaxed) + skipped.load(Ordering::Relaxed);
    while accounted() < expected && Instant::now() < wait_until {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let deliver_time = t0.elapsed().as_secs_f64();
    let (got, lost) = (
        received.load(Ordering::Relaxed),
        skipped.load(Ordering::Relaxed),
    );
    commands(
        table,
        &format!(
            "Redis commands per published event ({} subscribers on B)",
            plan.subscribers
        ),
        before,
        events,
    );
    for s in &subscribers {
        s.abort();
    }
    eprintln!(
        "  {events} events published in {publish_time:.1} s, {got} of {expected} deliveries by {deliver_time:.1} s, {lost} skipped"
    );
    table.set(
        &format!("broadcast: published events/s ({PUBLISHERS} publishers on A)"),
        column,
        format!("{:.0}", events as f64 / publish_time),
    );
    table.set(
        &format!(
            "broadcast: deliveries/s ({} subscribers on B), all delivered",
            plan.subscribers
        ),
        column,
        format!(
            "{:.0}{}",
            got as f64 / deliver_time,
            if got == expected {
                String::new()
            } else {
                // Skipped: the subscriber fell more than the broadcast's replay size (1024
                // events) behind, and the log was trimmed past it.
                format!(
                    " (only {got} of {expected}: {lost} skipped, {} late)",
                    expected - got - lost
                )
            }
        ),
    );

    // --- publish on A → receive on B, one event at a time --------------------------------
    let tag = format!("{column}-latency-");
    let (arrivals, mut arrived) = tokio::sync::mpsc::unbounded_channel();
    let mut subscribers = Vec::new();
    for _ in 0..plan.subscribers {
        let mut conn = Conn::open(b).await;
        let mut sse = Sse::new(conn.get("/events").await);
        let (arrivals, tag) = (arrivals.clone(), tag.clone());
        subscribers.push(tokio::spawn(async move {
            let _conn = conn;
            while let Some(event) = sse.next_event().await {
                if let Some(n) = event.data().strip_prefix(&tag) {
                    let n = n.parse::<usize>().unwrap_or(usize::MAX);
                    let _ = arrivals.send((n, Instant::now()));
                }
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut publisher = Conn::open(a).await;
    let before = snapshot();
    let mut latencies = Vec::new();
    for n in 0..plan.samples() {
        let t0 = Instant::now();
        let resp = publisher.post("/events", None, format!("{tag}{n}")).await;
        let _ = resp.into_body().collect().await;
        // Every subscriber reads it once.
        for _ in 0..plan.subscribers {
            let arrival = tokio::time::timeout(Duration::from_secs(5), arrived.recv()).await;
            match arrival {
                Ok(Some((m, at))) if m == n => latencies.push(millis(at - t0)),
                other => fail(&format!("event {n} not received on B: {other:?}")),
            }
        }
    }
    commands(
        table,
        &format!(
            "Redis commands per event published one at a time ({} subscribers on B)",
            plan.subscribers
        ),
        before,
        plan.samples() as u64,
    );
    for s in &subscribers {
        s.abort();
    }
    latencies.sort_by(f64::total_cmp);
    table.set(
        &format!(
            "publish on A → event read on B, p50 / p99 over {} subscribers (ms)",
            plan.subscribers
        ),
        column,
        format!(
            "{:.2} / {:.2}",
            percentile(&latencies, 0.5),
            percentile(&latencies, 0.99)
        ),
    );

    // --- a finished task resumed on B ----------------------------------------------------
    let mut on_a = Conn::open(a).await;
    let mut on_b = Conn::open(b).await;
    let sid = match resume_sid {
        Some(sid) => sid,
        None => on_a.session().await,
    };
    let mut latencies = Vec::new();
    let mut resumes_before = None;
    let samples = plan.samples() / 2;
    for n in 0..samples {
        let (task_id, end) = on_a.call(&sid, None).await;
        if n == 0 {
            resumes_before = snapshot();
        }
        let t0 = Instant::now();
        let (resumed_id, resumed) = on_b.call(&sid, Some(&task_id)).await;
        latencies.push(millis(t0.elapsed()));
        assert!(
            resumed_id == task_id && resumed == end,
            "the resume on B differs"
        );
    }
    commands(
        table,
        "Redis commands per call + resume on B",
        resumes_before,
        samples as u64,
    );
    latencies.sort_by(f64::total_cmp);
    table.set(
        "resume of a finished task on B, p50 / p99 (ms)",
        column,
        format!(
            "{:.2} / {:.2}",
            percentile(&latencies, 0.5),
            percentile(&latencies, 0.99)
        ),
    );
}

/// A row per figure, a column per store.
type Table = ssekit_benches::report::Table<String>;

/// Prints `table` in markdown.
fn print_table(table: &Table) {
    println!("| figure | memory (1 instance) | redis (A and B) |");
    println!("|---|---:|---:|");
    for (row, cells) in table.rows() {
        let get = |c: &str| cell(cells, c).map_or("—", String::as_str);
        println!("| {row} | {} | {} |", get("memory"), get("redis"));
    }
}
