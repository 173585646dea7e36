//! Servers under load: ssekit-hyper, ssekit-smol and axum's `Sse` side by side, in one run,
//! on 127.0.0.1 (issue 30). `in-axum` is ssekit-hyper's `SseBody` returned from axum
//! handlers: the body under a server that is not ssekit's `serve` (hyper's default 400 KiB
//! write buffer, no write bound of ssekit's).
//!
//! ```text
//! cargo run --release -p ssekit-benches --example load             # 2-3 minutes
//! cargo run --release -p ssekit-benches --example load -- --quick  # about 1.5 minutes
//! cargo run --release -p ssekit-benches --example load -- --only hyper,axum --scenarios fast64
//! cargo run --release -p ssekit-benches --features observe --example load -- --only hyper,hyper+obs
//! ```
//!
//! `hyper+obs` and `smol+obs` (feature `observe`) are the same servers with a `tracing` fmt
//! subscriber at `info` (the access log, written to a sink) and the Prometheus recorder
//! installed: what observing costs. Built with the feature, `hyper` and `smol` carry the
//! instrumentation but install nothing.
//!
//! Each scenario starts a fresh server in a child process (this binary with `--serve NAME`),
//! so its peak RSS (`VmHWM` in `/proc/PID/status`) is that scenario's alone. The client is
//! this process: raw HTTP/1.1 over tokio sockets, counting events by their blank lines, the
//! same client for every server. Every server runs on 2 worker threads (tokio's
//! multi-threaded runtime; ssekit-smol's executor), or as many as the environment's
//! `SMOL_THREADS` says; `LOAD_SERVER_CPUS` pins the server to those cores. Every stream has
//! a 15 s keep-alive. Events are `data: 0123456789abcdef\n\n` (24 bytes).
//!
//! | scenario | what |
//! |---|---|
//! | `fast64` | 64 streams of an always-ready producer (`stream::repeat_with`): events/s, the slowest stream; beside them one 10 ms ticker stream and a new connection every 100 ms (time to its response head; 5 s counts as a timeout) |
//! | `chan64` | 64 streams, each fed by a producer task through a 64-event channel |
//! | `fast1000` | 1 000 always-ready streams: events/s, the slowest stream, peak RSS |
//! | `chan1000` | 1 000 streams, each fed by a producer task through a 64-event channel |
//! | `slow1000` | 1 000 always-ready streams read at 1 KiB/s (client receive buffer 4 KiB): peak RSS |
//! | `idle` | 10 000 idle streams (fewer when the open-file limit is lower; printed): RSS per stream |
//! | `tick100` | 100 streams of a 10 ms ticker, no other load: delivery latency (half the streams since produced, half since due) |
//! | `fanout` | 1 000 subscribers of one broadcast of 100 events/s: publish-to-arrival latency |
//! | `fanout-over` | 8 000 subscribers (fewer when the open-file limit is lower) of 1 000 events/s, more than the client reads: events missed with a gap signal and without one, stream ends; once per slow-subscriber policy |
//!
//! The fan-out servers publish numbered events (`id: N`, the data the publish time) at the
//! scenario's rate. ssekit's serve `/fan?policy=cut|gap|wait` with `Broadcast::resume` after
//! the client's `Last-Event-ID` (replay buffer 1 024 events, 64 queued per client):
//! `Overflow::Disconnect` (`cut`), `Overflow::Gap`, or `publish_wait` (`wait`). axum's is
//! what an axum user writes: a `tokio::sync::broadcast` of 1 024 events whose lagging
//! receivers skip ahead (`Lagged`), the same for every policy row. The client reconnects
//! like a browser (after the `retry:` asked, at most 1 s, with `Last-Event-ID`), and counts a
//! jump in the ids as missed with a signal when a `gap` event came before it, silently
//! otherwise.
//!
//! A ticker stream runs on its server's own timer (`tokio::time::interval`,
//! `async_io::Timer::interval`) and stamps each event with two wall-clock times: when the tick
//! was due and when the body produced it. The client subtracts them from its wall clock on
//! arrival. Beside the fast streams the latency is counted from when the tick was due, so a
//! starved task shows (tokio's timer rounds deadlines up to the next millisecond, so its
//! figures include up to 1 ms of timer lateness); with no other load it is counted from when
//! the event was produced: the write path alone.

use std::convert::Infallible;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ssekit_benches::report::percentile;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const PAYLOAD: &str = "0123456789abcdef";
const KEEP_ALIVE: Duration = Duration::from_secs(15);
const IMPLS: [&str; 4] = ["hyper", "smol", "axum", "in-axum"];
const SCENARIOS: [&str; 9] = [
    "fast64",
    "chan64",
    "fast1000",
    "chan1000",
    "slow1000",
    "idle",
    "tick100",
    "fanout",
    "fanout-over",
];

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let value = |flag: &str| ssekit_benches::report::flag_value(&args, flag);
    if let Some(name) = value("--serve") {
        server::run(&name);
        return;
    }
    let quick = args.iter().any(|a| a == "--quick");
    let only: Vec<String> = value("--only").map_or_else(
        || IMPLS.iter().map(|s| s.to_string()).collect(),
        |v| v.split(',').map(str::to_owned).collect(),
    );
    let scenarios: Vec<String> = value("--scenarios").map_or_else(
        || SCENARIOS.iter().map(|s| s.to_string()).collect(),
        |v| v.split(',').map(str::to_owned).collect(),
    );
    for name in &only {
        let (base, observed) = split_name(name);
        assert!(
            IMPLS.contains(&base),
            "unknown server {name}; one of {IMPLS:?}, or hyper+obs, smol+obs"
        );
        assert!(
            !observed || cfg!(feature = "observe"),
            "{name} needs the benches' `observe` feature (--features observe)"
        );
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    // The ticker readers and the new-connection probes run on a runtime of their own, so
    // they do not queue behind the fast readers of this process.
    let probes = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let plan = Plan::new(quick, probes.handle().clone());
    let started = Instant::now();
    // The machine may be shared: say how busy it was.
    let load_before = load_average();
    let mut table = Table::default();
    for scenario in &scenarios {
        for name in &only {
            eprint!("{scenario:>9} {name:>6} ... ");
            let rows = rt.block_on(run_scenario(&plan, scenario, name));
            for (row, value) in &rows {
                eprint!("{row}: {value}; ");
            }
            eprintln!();
            for (row, value) in rows {
                table.set(&row, name, value);
            }
        }
    }
    println!(
        "\n{} run, {:.0} s, {} cores, load average {} before, {} after\n",
        if quick { "quick" } else { "full" },
        started.elapsed().as_secs_f64(),
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        load_before,
        load_average(),
    );
    print_table(&table, &only);
    rt.shutdown_timeout(Duration::from_secs(1));
}

/// Counts and durations of a run.
struct Plan {
    probes: tokio::runtime::Handle,
    warmup: Duration,
    window: Duration,
    slow_window: Duration,
    idle: usize,
    fan_over: usize,
}

impl Plan {
    fn new(quick: bool, probes: tokio::runtime::Handle) -> Self {
        let limit = open_file_limit().unwrap_or(1024);
        let wanted = if quick { 2_000 } else { 10_000 };
        let idle = wanted.min(limit.saturating_sub(500) as usize);
        let fan_over = 8_000.min(limit.saturating_sub(500) as usize / 2);
        Plan {
            probes,
            warmup: Duration::from_millis(if quick { 500 } else { 1_000 }),
            window: Duration::from_millis(if quick { 1_500 } else { 4_000 }),
            slow_window: Duration::from_millis(if quick { 3_000 } else { 6_000 }),
            idle,
            fan_over,
        }
    }
}

/// The one-minute load average.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "?".into())
}

fn open_file_limit() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}

/// A row per measurement, a column per server; the cells are printed as given.
type Table = ssekit_benches::report::Table<Value>;

#[derive(Clone, Copy)]
enum Value {
    /// A figure and its unit, compared to axum's as a ratio.
    Num(f64, &'static str),
}

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            // A latency that never came (a timeout, no tick within the window).
            Value::Num(v, _) if v.is_infinite() => f.write_str("never"),
            Value::Num(v, _) if v.is_nan() => f.write_str("none"),
            Value::Num(v, unit) if v >= 1e6 && unit.is_empty() => write!(f, "{:.2} M", v / 1e6),
            Value::Num(v, unit) if v >= 1e4 && unit.is_empty() => write!(f, "{:.1} k", v / 1e3),
            Value::Num(v, unit) if v >= 100.0 => write!(f, "{v:.0}{unit}"),
            Value::Num(v, unit) if v >= 10.0 => write!(f, "{v:.1}{unit}"),
            Value::Num(v, unit) => write!(f, "{v:.2}{unit}"),
        }
    }
}

/// A server's name without its `+obs` suffix, and whether it had one.
fn split_name(name: &str) -> (&str, bool) {
    match name.strip_suffix("+obs") {
        Some(base) => (base, true),
        None => (name, false),
    }
}

/// Prints `table` in markdown, with a ratio to axum per other server when axum ran.
fn print_table(table: &Table, names: &[String]) {
    let title = |n: &str| match n {
        "hyper" => "ssekit-hyper",
        "smol" => "ssekit-smol",
        "hyper+obs" => "ssekit-hyper, observed",
        "smol+obs" => "ssekit-smol, observed",
        "axum" => "axum `Sse`",
        "in-axum" => "ssekit-hyper's `SseBody` in axum",
        _ => "?",
    };
    let with_axum = names.iter().any(|n| n == "axum");
    let others: Vec<&String> = names.iter().filter(|n| *n != "axum").collect();
    print!("| measurement |");
    for n in names {
        print!(" {} |", title(n));
    }
    if with_axum {
        for n in &others {
            print!(" {n} / axum |");
        }
    }
    println!();
    print!("|---|");
    for _ in names {
        print!("---:|");
    }
    if with_axum {
        for _ in &others {
            print!("---:|");
        }
    }
    println!();
    for (row, cells) in table.rows() {
        let get = |n: &str| ssekit_benches::report::cell(cells, n).copied();
        print!("| {row} |");
        for n in names {
            match get(n) {
                Some(v) => print!(" {v} |"),
                None => print!(" — |"),
            }
        }
        if with_axum {
            for n in &others {
                match (get(n), get("axum")) {
                    (Some(Value::Num(a, _)), Some(Value::Num(b, _)))
                        if b > 0.0 && a.is_finite() && b.is_finite() =>
                    {
                        print!(" {:.2}x |", a / b)
                    }
                    _ => print!(" — |"),
                }
            }
        }
        println!();
    }
}

/// A server in a child process.
struct Server {
    child: Child,
    addr: SocketAddr,
}

impl Server {
    fn start(name: &str, rate: u64) -> Server {
        let exe = std::env::current_exe().expect("own path");
        let (name, observed) = split_name(name);
        // `LOAD_SERVER_CPUS=0` runs the server on those cores alone (`taskset -c`), so a
        // client pinned to the others (`taskset -c 1 …`) never takes its time slices.
        let mut command = match std::env::var("LOAD_SERVER_CPUS") {
            Ok(cpus) => {
                let mut taskset = Command::new("taskset");
                taskset.args(["-c", &cpus]).arg(exe);
                taskset
            }
            Err(_) => Command::new(exe),
        };
        let mut child = command
            .args(["--serve", name])
            .env("FANOUT_RATE", rate.to_string())
            .env("SSEKIT_LOAD_OBSERVE", if observed { "1" } else { "0" })
            .env("SMOL_THREADS", server::threads().to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the server");
        let mut line = String::new();
        let stdout = child.stdout.take().expect("piped");
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("server's port");
        let port: u16 = line
            .trim()
            .strip_prefix("PORT ")
            .and_then(|p| p.parse().ok())
            .expect("PORT line");
        Server {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
        }
    }

    /// The CPU time (user and system) the server has used so far, in seconds (fields 14 and
    /// 15 of `/proc/PID/stat`, in clock ticks of 10 ms).
    fn cpu_seconds(&self) -> f64 {
        let stat =
            std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).unwrap_or_default();
        // The command name (field 2) is in parentheses and may hold spaces: count after it.
        let after = stat.rsplit_once(") ").map_or("", |(_, rest)| rest);
        let fields: Vec<f64> = after
            .split_whitespace()
            .map(|f| f.parse().unwrap_or(f64::NAN))
            .collect();
        match (fields.get(11), fields.get(12)) {
            (Some(user), Some(system)) => (user + system) / 100.0,
            _ => f64::NAN,
        }
    }

    /// A line of `/proc/PID/status`, in KiB.
    fn status_kib(&self, field: &str) -> f64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find(|l| l.starts_with(field))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(f64::NAN)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Opens `path` and reads up to the end of the response head; returns the stream, the body
/// bytes read with the head, and how long the head took from the connect.
async fn open(
    addr: SocketAddr,
    path: &str,
    recv_buffer: Option<u32>,
) -> std::io::Result<(TcpStream, Vec<u8>, Duration)> {
    open_after(addr, path, recv_buffer, None).await
}

/// [`open`], sending `Last-Event-ID: last` when given.
async fn open_after(
    addr: SocketAddr,
    path: &str,
    recv_buffer: Option<u32>,
    last: Option<u64>,
) -> std::io::Result<(TcpStream, Vec<u8>, Duration)> {
    let started = Instant::now();
    let socket = tokio::net::TcpSocket::new_v4()?;
    if let Some(size) = recv_buffer {
        socket.set_recv_buffer_size(size)?;
    }
    let mut stream = socket.connect(addr).await?;
    stream.set_nodelay(true)?;
    stream
        .write_all(
            match last {
                Some(id) => {
                    format!("GET {path} HTTP/1.1\r\nhost: 127.0.0.1\r\nlast-event-id: {id}\r\n\r\n")
                }
                None => format!("GET {path} HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n"),
            }
            .as_bytes(),
        )
        .await?;
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 1024];
    loop {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        head.extend_from_slice(&buf[..n]);
        if let Some(end) = memchr::memmem::find(&head, b"\r\n\r\n") {
            let rest = head.split_off(end + 4);
            if !head.starts_with(b"HTTP/1.1 200") {
                return Err(std::io::Error::other("not 200"));
            }
            return Ok((stream, rest, started.elapsed()));
        }
    }
}

/// Events in a piece of the body: every SSE block ends with a blank line, and in these
/// bodies every frame holds whole blocks, so a chunk's framing never splits one.
fn blank_lines(bytes: &[u8]) -> u64 {
    memchr::memmem::find_iter(bytes, b"\n\n").count() as u64
}

/// Reads a stream to its end, adding its events to `count`.
async fn count_events(mut stream: TcpStream, first: Vec<u8>, count: Arc<AtomicU64>) {
    count.fetch_add(blank_lines(&first), Ordering::Relaxed);
    let mut buf = vec![0u8; 32 << 10];
    while let Ok(n @ 1..) = stream.read(&mut buf).await {
        count.fetch_add(blank_lines(&buf[..n]), Ordering::Relaxed);
        // A fair client: every reader takes turns, read by read.
        tokio::task::yield_now().await;
    }
}

fn wall_nanos() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// Which stamp of a tick its latency is counted from.
#[derive(Clone, Copy)]
enum Since {
    Due,
    Produced,
}

/// Reads a ticker stream, pushing each tick's delivery latency (µs) while `on` is set.
async fn read_ticks(
    mut stream: TcpStream,
    first: Vec<u8>,
    since: Since,
    on: Arc<AtomicBool>,
    out: Arc<Mutex<Vec<f64>>>,
) {
    let mut pending = first;
    let mut buf = vec![0u8; 4096];
    loop {
        let arrived = wall_nanos();
        let mut last = 0;
        while let Some(nl) = memchr::memchr(b'\n', &pending[last..]) {
            let line = &pending[last..last + nl];
            last += nl + 1;
            if let Some(stamps) = line.strip_prefix(b"data: ") {
                let mut stamps = std::str::from_utf8(stamps).unwrap_or("").split(' ');
                let (due, produced) = (stamps.next(), stamps.next());
                let stamp = match since {
                    Since::Due => due,
                    Since::Produced => produced,
                };
                let stamp: Option<u64> = stamp.and_then(|s| s.parse().ok());
                if let (Some(stamp), true) = (stamp, on.load(Ordering::Relaxed)) {
                    let late = arrived.saturating_sub(stamp) as f64 / 1e3;
                    out.lock().unwrap_or_else(|e| e.into_inner()).push(late);
                }
            }
        }
        pending.drain(..last);
        match stream.read(&mut buf).await {
            Ok(n @ 1..) => pending.extend_from_slice(&buf[..n]),
            _ => return,
        }
    }
}

/// Opens `n` streams of `path`, at most 100 connects at a time.
async fn open_many(
    addr: SocketAddr,
    path: &'static str,
    n: usize,
    recv_buffer: Option<u32>,
) -> Vec<(TcpStream, Vec<u8>)> {
    let mut out = Vec::with_capacity(n);
    let mut pending = tokio::task::JoinSet::new();
    let mut started = 0;
    while out.len() < n {
        while started < n && pending.len() < 100 {
            pending.spawn(async move {
                for _ in 0..5 {
                    if let Ok(Ok((s, first, _))) =
                        tokio::time::timeout(Duration::from_secs(20), open(addr, path, recv_buffer))
                            .await
                    {
                        return Some((s, first));
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                None
            });
            started += 1;
        }
        match pending.join_next().await {
            Some(Ok(Some(conn))) => out.push(conn),
            Some(_) => panic!("could not open a stream of {path}"),
            None => break,
        }
    }
    out
}

fn sorted(v: &Mutex<Vec<f64>>) -> Vec<f64> {
    let mut v = v.lock().unwrap_or_else(|e| e.into_inner()).clone();
    v.sort_by(f64::total_cmp);
    v
}

/// What the subscribers of a fan-out saw while the window was open.
#[derive(Default)]
struct FanOut {
    events: AtomicU64,
    /// Events missed right after a `gap` event (told).
    signalled: AtomicU64,
    /// Events missed with no `gap` event before (never told).
    silent: AtomicU64,
    ends: AtomicU64,
    latency: Mutex<Vec<f64>>,
}

/// Runs `n` subscribers of `/fan?policy=…` through a warm-up and a window; counts the window.
async fn fan_out(addr: SocketAddr, n: usize, policy: &str, plan: &Plan) -> Arc<FanOut> {
    let fan = Arc::new(FanOut::default());
    let (on, stop) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let path: &'static str = match policy {
        "gap" => "/fan?policy=gap",
        "wait" => "/fan?policy=wait",
        _ => "/fan?policy=cut",
    };
    let mut tasks = tokio::task::JoinSet::new();
    for (stream, first) in open_many(addr, path, n, None).await {
        let (fan, on, stop) = (fan.clone(), on.clone(), stop.clone());
        tasks.spawn(subscriber(addr, path, stream, first, fan, on, stop));
    }
    tokio::time::sleep(plan.warmup).await;
    on.store(true, Ordering::Relaxed);
    tokio::time::sleep(plan.window).await;
    on.store(false, Ordering::Relaxed);
    stop.store(true, Ordering::Relaxed);
    tasks.shutdown().await;
    fan
}

/// One subscriber, reconnecting as a browser does until `stop`.
async fn subscriber(
    addr: SocketAddr,
    path: &'static str,
    mut stream: TcpStream,
    mut pending: Vec<u8>,
    fan: Arc<FanOut>,
    on: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
) {
    let (mut last, mut told): (Option<u64>, bool) = (None, false);
    let mut buf = vec![0u8; 16 << 10];
    loop {
        let mut retry = Duration::from_secs(1);
        let (mut id, mut gap, mut data) = (None::<u64>, false, None::<Vec<u8>>);
        loop {
            let mut start = 0;
            while let Some(nl) = memchr::memchr(b'\n', &pending[start..]) {
                let line = &pending[start..start + nl];
                start += nl + 1;
                let counting = on.load(Ordering::Relaxed);
                if line.is_empty() {
                    if gap {
                        told = true;
                    } else if let Some(got) = id.take() {
                        if let (Some(prev), true) = (last, data.is_some() && counting) {
                            let jump = got.saturating_sub(prev + 1);
                            let counter = if told { &fan.signalled } else { &fan.silent };
                            counter.fetch_add(jump, Ordering::Relaxed);
                        }
                        if let (Some(stamp), true) = (&data, counting) {
                            fan.events.fetch_add(1, Ordering::Relaxed);
                            let stamp: u64 = std::str::from_utf8(stamp)
                                .ok()
                                .and_then(|s| s.parse().ok())
                                .unwrap_or(0);
                            let late = wall_nanos().saturating_sub(stamp) as f64 / 1e3;
                            fan.latency
                                .lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .push(late);
                        }
                        if data.is_some() {
                            told = false;
                        }
                        last = Some(got);
                    }
                    (id, gap, data) = (None, false, None);
                } else if let Some(v) = line.strip_prefix(b"id: ") {
                    id = std::str::from_utf8(v).ok().and_then(|v| v.parse().ok());
                } else if line == b"event: gap" {
                    gap = true;
                } else if let Some(v) = line.strip_prefix(b"data: ") {
                    data = Some(v.to_vec());
                } else if let Some(v) = line.strip_prefix(b"retry: ") {
                    let ms = std::str::from_utf8(v).ok().and_then(|v| v.parse().ok());
                    retry = Duration::from_millis(ms.unwrap_or(1_000).min(1_000));
                }
            }
            pending.drain(..start);
            if stop.load(Ordering::Relaxed) {
                return;
            }
            match stream.read(&mut buf).await {
                Ok(n @ 1..) => pending.extend_from_slice(&buf[..n]),
                _ => break,
            }
        }
        fan.ends.fetch_add(1, Ordering::Relaxed);
        tokio::time::sleep(retry).await;
        loop {
            if stop.load(Ordering::Relaxed) {
                return;
            }
            if let Ok((s, first, _)) = open_after(addr, path, None, last).await {
                (stream, pending) = (s, first);
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

type Rows = Vec<(String, Value)>;

async fn run_scenario(plan: &Plan, scenario: &str, name: &str) -> Rows {
    let rate = match scenario {
        "fanout" => 100,
        "fanout-over" => 1_000,
        _ => 0,
    };
    let server = Server::start(name, rate);
    let addr = server.addr;
    let mut rows = Rows::new();
    match scenario {
        "fast64" | "chan64" | "fast1000" | "chan1000" => {
            let (path, n) = match scenario {
                "fast64" => ("/fast", 64),
                "chan64" => ("/chan", 64),
                "chan1000" => ("/chan", 1000),
                _ => ("/fast", 1000),
            };
            let label = match scenario {
                "fast64" => "64 always-ready streams",
                "chan64" => "64 channel-fed streams",
                "chan1000" => "1 000 channel-fed streams",
                _ => "1 000 always-ready streams",
            };
            let counts: Vec<Arc<AtomicU64>> = (0..n).map(|_| Arc::new(AtomicU64::new(0))).collect();
            let mut tasks = tokio::task::JoinSet::new();
            for ((stream, first), count) in open_many(addr, path, n, None)
                .await
                .into_iter()
                .zip(&counts)
            {
                tasks.spawn(count_events(stream, first, count.clone()));
            }
            let probes = scenario == "fast64";
            let on = Arc::new(AtomicBool::new(false));
            let ticks = Arc::new(Mutex::new(Vec::new()));
            let heads = Arc::new(Mutex::new(Vec::new()));
            let timeouts = Arc::new(AtomicU64::new(0));
            let mut ticker = None;
            if probes {
                let (on, ticks) = (on.clone(), ticks.clone());
                ticker = Some(plan.probes.spawn(async move {
                    if let Ok((stream, first, _)) = open(addr, "/tick", None).await {
                        read_ticks(stream, first, Since::Due, on, ticks).await;
                    }
                }));
            }
            tokio::time::sleep(plan.warmup).await;
            on.store(true, Ordering::Relaxed);
            let mut prober = None;
            if probes {
                let (on, heads, timeouts) = (on.clone(), heads.clone(), timeouts.clone());
                prober = Some(plan.probes.spawn(async move {
                    while on.load(Ordering::Relaxed) {
                        let limit = Duration::from_secs(5);
                        match tokio::time::timeout(limit, open(addr, "/idle", None)).await {
                            Ok(Ok((_, _, took))) => heads
                                .lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .push(took.as_secs_f64() * 1e3),
                            _ => {
                                timeouts.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                }));
            }
            let before: Vec<u64> = counts.iter().map(|c| c.load(Ordering::Relaxed)).collect();
            let cpu_before = server.cpu_seconds();
            let t0 = Instant::now();
            tokio::time::sleep(plan.window).await;
            let secs = t0.elapsed().as_secs_f64();
            let cpu = server.cpu_seconds() - cpu_before;
            let after: Vec<u64> = counts.iter().map(|c| c.load(Ordering::Relaxed)).collect();
            on.store(false, Ordering::Relaxed);
            let moved: Vec<f64> = before
                .iter()
                .zip(&after)
                .map(|(b, a)| (a - b) as f64 / secs)
                .collect();
            let total: f64 = moved.iter().sum();
            let slowest = moved.iter().copied().fold(f64::INFINITY, f64::min);
            rows.push((format!("events/s, {label}"), Value::Num(total, "")));
            rows.push((
                format!("server CPU per event, {label}"),
                Value::Num(cpu * 1e9 / (total * secs), " ns"),
            ));
            rows.push((
                format!("slowest stream's events/s, {label}"),
                Value::Num(slowest, ""),
            ));
            rows.push((
                format!("slowest / mean stream, {label}"),
                Value::Num(slowest / (total / n as f64), ""),
            ));
            if probes {
                // The probe under way finishes or times out.
                if let Some(prober) = prober {
                    let _ = prober.await;
                }
                if let Some(ticker) = ticker {
                    ticker.abort();
                }
                let heads = sorted(&heads);
                let timeouts = timeouts.load(Ordering::Relaxed);
                let head = if heads.is_empty() {
                    f64::INFINITY
                } else {
                    percentile(&heads, 0.5)
                };
                rows.push((
                    "new connection's head beside 64 fast streams, median".into(),
                    Value::Num(head, " ms"),
                ));
                rows.push((
                    "new connection's head beside 64 fast streams, max".into(),
                    Value::Num(heads.last().copied().unwrap_or(f64::INFINITY), " ms"),
                ));
                rows.push((
                    "new connections timed out (5 s)".into(),
                    Value::Num(timeouts as f64, ""),
                ));
                let ticks = sorted(&ticks);
                rows.push((
                    "10 ms ticker beside 64 fast streams, p50 (since due)".into(),
                    Value::Num(percentile(&ticks, 0.5), " µs"),
                ));
                rows.push((
                    "10 ms ticker beside 64 fast streams, p99 (since due)".into(),
                    Value::Num(percentile(&ticks, 0.99), " µs"),
                ));
                rows.push((
                    "10 ms ticker beside 64 fast streams, max (since due)".into(),
                    Value::Num(ticks.last().copied().unwrap_or(f64::INFINITY), " µs"),
                ));
            }
            rows.push((
                format!("peak RSS, {label}"),
                Value::Num(server.status_kib("VmHWM:") / 1024.0, " MiB"),
            ));
            tasks.shutdown().await;
        }
        "slow1000" => {
            let mut tasks = tokio::task::JoinSet::new();
            for (mut stream, _) in open_many(addr, "/fast", 1000, Some(4096)).await {
                tasks.spawn(async move {
                    let mut buf = [0u8; 1024];
                    loop {
                        // 1 KiB a second.
                        if !matches!(stream.read(&mut buf).await, Ok(1..)) {
                            return;
                        }
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                });
            }
            tokio::time::sleep(plan.slow_window).await;
            rows.push((
                "peak RSS, 1 000 slow readers (1 KiB/s) of always-ready streams".into(),
                Value::Num(server.status_kib("VmHWM:") / 1024.0, " MiB"),
            ));
            tasks.shutdown().await;
        }
        "idle" => {
            let warm = open_many(addr, "/idle", 100, None).await;
            tokio::time::sleep(Duration::from_millis(300)).await;
            let before = server.status_kib("VmRSS:");
            let open = open_many(addr, "/idle", plan.idle, None).await;
            tokio::time::sleep(Duration::from_millis(500)).await;
            let after = server.status_kib("VmRSS:");
            rows.push((
                format!("idle stream memory, KiB each of {} streams", plan.idle),
                Value::Num((after - before) / plan.idle as f64, " KiB"),
            ));
            drop((warm, open));
        }
        "tick100" => {
            let on = Arc::new(AtomicBool::new(false));
            let ticks = Arc::new(Mutex::new(Vec::new()));
            let due = Arc::new(Mutex::new(Vec::new()));
            let mut tasks = tokio::task::JoinSet::new();
            for (i, (stream, first)) in open_many(addr, "/tick", 100, None)
                .await
                .into_iter()
                .enumerate()
            {
                // Half the streams count from when a tick was due (timer and wake-up
                // included), half from when it was produced (the write path alone).
                let read = if i % 2 == 0 {
                    read_ticks(stream, first, Since::Produced, on.clone(), ticks.clone())
                } else {
                    read_ticks(stream, first, Since::Due, on.clone(), due.clone())
                };
                tasks.spawn_on(read, &plan.probes);
            }
            tokio::time::sleep(plan.warmup).await;
            on.store(true, Ordering::Relaxed);
            tokio::time::sleep(plan.window).await;
            on.store(false, Ordering::Relaxed);
            let ticks = sorted(&ticks);
            rows.push((
                "10 ms ticker, 100 streams, no other load, p50 (since produced)".into(),
                Value::Num(percentile(&ticks, 0.5), " µs"),
            ));
            rows.push((
                "10 ms ticker, 100 streams, no other load, p99 (since produced)".into(),
                Value::Num(percentile(&ticks, 0.99), " µs"),
            ));
            rows.push((
                "10 ms ticker, 100 streams, no other load, max (since produced)".into(),
                Value::Num(ticks.last().copied().unwrap_or(f64::NAN), " µs"),
            ));
            let due = sorted(&due);
            rows.push((
                "10 ms ticker, 100 streams, no other load, p50 (since due)".into(),
                Value::Num(percentile(&due, 0.5), " µs"),
            ));
            rows.push((
                "10 ms ticker, 100 streams, no other load, p99 (since due)".into(),
                Value::Num(percentile(&due, 0.99), " µs"),
            ));
            tasks.shutdown().await;
        }
        "fanout" | "fanout-over" if name == "in-axum" => {}
        "fanout" => {
            let fan = fan_out(addr, 1_000, "cut", plan).await;
            let lat = sorted(&fan.latency);
            rows.push((
                "fan-out 1 000 x 100/s, publish to arrival, p50".into(),
                Value::Num(percentile(&lat, 0.5), " µs"),
            ));
            rows.push((
                "fan-out 1 000 x 100/s, publish to arrival, p99".into(),
                Value::Num(percentile(&lat, 0.99), " µs"),
            ));
            rows.push((
                "fan-out 1 000 x 100/s, events missed silently".into(),
                Value::Num(fan.silent.load(Ordering::Relaxed) as f64, ""),
            ));
        }
        "fanout-over" => {
            let n = plan.fan_over;
            for policy in ["cut", "gap", "wait"] {
                let fan = fan_out(addr, n, policy, plan).await;
                let label = format!("fan-out {n} x 1 000/s, {policy}");
                let events = fan.events.load(Ordering::Relaxed) as f64;
                rows.push((
                    format!("{label}: events/s delivered"),
                    Value::Num(events / plan.window.as_secs_f64(), ""),
                ));
                rows.push((
                    format!("{label}: missed with a gap signal"),
                    Value::Num(fan.signalled.load(Ordering::Relaxed) as f64, ""),
                ));
                rows.push((
                    format!("{label}: missed silently"),
                    Value::Num(fan.silent.load(Ordering::Relaxed) as f64, ""),
                ));
                rows.push((
                    format!("{label}: stream ends"),
                    Value::Num(fan.ends.load(Ordering::Relaxed) as f64, ""),
                ));
                let lat = sorted(&fan.latency);
                rows.push((
                    format!("{label}: publish to arrival, p99"),
                    Value::Num(percentile(&lat, 0.99) / 1e3, " ms"),
                ));
            }
        }
        other => panic!("unknown scenario {other}; one of {SCENARIOS:?}"),
    }
    drop(server);
    rows
}

/// The three servers, each with the same four endpoints: `/fast` (always ready), `/chan` (a
/// producer task through a 64-event channel), `/tick` (the 10 ms ticker), `/idle`.
mod server {
    use super::*;

    /// A tick's event data: when it was due and now, in wall-clock nanoseconds. `due` is a
    /// runtime `Instant`; `base` pairs one such instant with the wall clock.
    fn stamps(due: Instant, base: (Instant, u64)) -> String {
        let due = base.1 + due.saturating_duration_since(base.0).as_nanos() as u64;
        format!("{due} {}", wall_nanos())
    }

    /// A 10 ms ticker on tokio's timer.
    fn tokio_ticks() -> impl futures::Stream<Item = String> + Send {
        let base = (Instant::now(), wall_nanos());
        let interval = tokio::time::interval(Duration::from_millis(10));
        futures::stream::unfold(interval, move |mut interval| async move {
            let due = interval.tick().await.into_std();
            Some((stamps(due, base), interval))
        })
    }

    /// A 10 ms ticker on async-io's timer (it yields when each tick was due).
    fn smol_ticks() -> impl futures::Stream<Item = String> + Send {
        use futures::StreamExt;
        let base = (Instant::now(), wall_nanos());
        smol::Timer::interval(Duration::from_millis(10)).map(move |due| stamps(due, base))
    }

    /// With `SSEKIT_LOAD_OBSERVE=1` (the `+obs` servers): the access log at `info` into a
    /// sink, and the Prometheus recorder, as `ssekit serve` installs them.
    #[cfg(feature = "observe")]
    fn observe() {
        if std::env::var("SSEKIT_LOAD_OBSERVE").as_deref() != Ok("1") {
            return;
        }
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new("info"))
            .with_writer(std::io::sink)
            .init();
        let _handle = metrics_exporter_prometheus::PrometheusBuilder::new()
            .install_recorder()
            .expect("the only recorder");
    }

    pub fn run(name: &str) {
        #[cfg(feature = "observe")]
        observe();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let port = listener.local_addr().expect("addr").port();
        println!("PORT {port}");
        match name {
            "hyper" => hyper(listener),
            "smol" => smol(listener),
            "axum" => axum(listener),
            "in-axum" => in_axum(listener),
            other => panic!("unknown server {other}; one of {IMPLS:?}"),
        }
    }

    /// Every server's worker threads: `SMOL_THREADS`, or 2.
    pub(crate) fn threads() -> usize {
        std::env::var("SMOL_THREADS")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(2)
    }

    fn tokio_rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads())
            .enable_all()
            .build()
            .expect("tokio runtime")
    }

    fn hyper(listener: std::net::TcpListener) {
        use futures::StreamExt;
        use ssekit::Event;
        use ssekit_hyper::server::{channel, response, serve, SseBody};
        let route = |path: &str| {
            let body = match path {
                "/fast" => SseBody::new(futures::stream::repeat_with(|| Event::message(PAYLOAD))),
                "/chan" => {
                    let (tx, body) = channel(64);
                    tokio::spawn(async move {
                        let event = Event::message(PAYLOAD);
                        while tx.send(&event).await.is_ok() {}
                    });
                    body
                }
                "/tick" => SseBody::new(tokio_ticks().map(Event::message)),
                _ => SseBody::new(futures::stream::pending()),
            };
            response(body.keep_alive(KEEP_ALIVE))
        };
        tokio_rt().block_on(async move {
            let hubs = fan::hubs::<ssekit_hyper::runtime::Tokio>(|publisher| {
                tokio::spawn(publisher);
            });
            let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
            let service =
                hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
                    let resp = match req.uri().path() {
                        "/fan" => fan::stream(&hubs, &req),
                        path => route(path),
                    };
                    async move { Ok::<_, Infallible>(resp) }
                });
            serve(listener, service).await.expect("serve");
        });
    }

    fn smol(listener: std::net::TcpListener) {
        use futures::StreamExt;
        use ssekit::Event;
        use ssekit_smol::server::{channel, response, serve, SseBody};
        let route = |path: &str| {
            let body = match path {
                "/fast" => SseBody::new(futures::stream::repeat_with(|| Event::message(PAYLOAD))),
                "/chan" => {
                    let (tx, body) = channel(64);
                    smol::spawn(async move {
                        let event = Event::message(PAYLOAD);
                        while tx.send(&event).await.is_ok() {}
                    })
                    .detach();
                    body
                }
                "/tick" => SseBody::new(smol_ticks().map(Event::message)),
                _ => SseBody::new(futures::stream::pending()),
            };
            response(body.keep_alive(KEEP_ALIVE))
        };
        smol::block_on(async move {
            let hubs = fan::hubs::<ssekit_smol::runtime::Smol>(|publisher| {
                smol::spawn(publisher).detach();
            });
            let listener = smol::net::TcpListener::try_from(listener).expect("listener");
            let service =
                hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
                    let resp = match req.uri().path() {
                        "/fan" => fan::stream(&hubs, &req),
                        path => route(path),
                    };
                    async move { Ok::<_, Infallible>(resp) }
                });
            serve(listener, service).await.expect("serve");
        });
    }

    fn axum(listener: std::net::TcpListener) {
        use axum::response::sse::{Event, KeepAlive, Sse};
        use axum::routing::get;
        use axum::serve::ListenerExt;
        use futures::StreamExt;
        let keep_alive = || KeepAlive::new().interval(KEEP_ALIVE);
        let app = axum::Router::new()
            .route(
                "/fast",
                get(move || async move {
                    Sse::new(futures::stream::repeat_with(|| {
                        Ok::<_, Infallible>(Event::default().data(PAYLOAD))
                    }))
                    .keep_alive(keep_alive())
                }),
            )
            .route(
                "/chan",
                get(move || async move {
                    let (tx, rx) = tokio::sync::mpsc::channel(64);
                    tokio::spawn(async move {
                        while tx.send(Event::default().data(PAYLOAD)).await.is_ok() {}
                    });
                    Sse::new(receiver(rx).map(Ok::<_, Infallible>)).keep_alive(keep_alive())
                }),
            )
            .route(
                "/tick",
                get(move || async move {
                    let ticks =
                        tokio_ticks().map(|t| Ok::<_, Infallible>(Event::default().data(t)));
                    Sse::new(ticks).keep_alive(keep_alive())
                }),
            )
            .route(
                "/idle",
                get(move || async move {
                    Sse::new(futures::stream::pending::<Result<Event, Infallible>>())
                        .keep_alive(keep_alive())
                }),
            );
        tokio_rt().block_on(async move {
            // What an axum user writes for a fan-out: a tokio broadcast, lagging receivers
            // skip ahead.
            let (tx, _) = tokio::sync::broadcast::channel::<(u64, u64)>(1024);
            let per_tick = fan::rate() / 100;
            if per_tick > 0 {
                let tx = tx.clone();
                tokio::spawn(async move {
                    let mut interval = tokio::time::interval(Duration::from_millis(10));
                    let mut n = 0;
                    loop {
                        interval.tick().await;
                        for _ in 0..per_tick {
                            n += 1;
                            let _ = tx.send((n, wall_nanos()));
                        }
                    }
                });
            }
            let app = app.route(
                "/fan",
                get(move || {
                    let rx = tx.subscribe();
                    async move {
                        use tokio::sync::broadcast::error::RecvError;
                        let events = futures::stream::unfold(rx, |mut rx| async move {
                            loop {
                                match rx.recv().await {
                                    Ok((n, at)) => {
                                        let event =
                                            Event::default().id(n.to_string()).data(at.to_string());
                                        return Some((Ok::<_, Infallible>(event), rx));
                                    }
                                    Err(RecvError::Lagged(_)) => continue,
                                    Err(RecvError::Closed) => return None,
                                }
                            }
                        });
                        Sse::new(events).keep_alive(keep_alive())
                    }
                }),
            );
            let listener = tokio::net::TcpListener::from_std(listener)
                .expect("listener")
                .tap_io(|tcp| {
                    let _ = tcp.set_nodelay(true);
                });
            axum::serve(listener, app).await.expect("serve");
        });
    }

    /// ssekit-hyper's `SseBody` returned from axum handlers (its `axum` feature): the body
    /// under someone else's server, with hyper's default write buffer.
    fn in_axum(listener: std::net::TcpListener) {
        use axum::routing::get;
        use axum::serve::ListenerExt;
        use futures::StreamExt;
        use ssekit::Event;
        use ssekit_hyper::server::{channel, SseBody};
        let app = axum::Router::new()
            .route(
                "/fast",
                get(|| async {
                    SseBody::new(futures::stream::repeat_with(|| Event::message(PAYLOAD)))
                        .keep_alive(KEEP_ALIVE)
                }),
            )
            .route(
                "/chan",
                get(|| async {
                    let (tx, body) = channel(64);
                    tokio::spawn(async move {
                        let event = Event::message(PAYLOAD);
                        while tx.send(&event).await.is_ok() {}
                    });
                    body.keep_alive(KEEP_ALIVE)
                }),
            )
            .route(
                "/tick",
                get(|| async {
                    SseBody::new(tokio_ticks().map(Event::message)).keep_alive(KEEP_ALIVE)
                }),
            )
            .route(
                "/idle",
                get(|| async { SseBody::new(futures::stream::pending()).keep_alive(KEEP_ALIVE) }),
            );
        tokio_rt().block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener)
                .expect("listener")
                .tap_io(|tcp| {
                    let _ = tcp.set_nodelay(true);
                });
            axum::serve(listener, app).await.expect("serve");
        });
    }

    /// The fan-out servers' broadcasts: one per slow-subscriber policy.
    mod fan {
        use std::future::Future;
        use std::time::Duration;

        use ssekit_http::runtime::Runtime;
        use ssekit_http::server::{last_event_id, Broadcast, Overflow, SseBody};

        /// Events a second the server publishes (`FANOUT_RATE`, none when 0).
        pub fn rate() -> u64 {
            std::env::var("FANOUT_RATE")
                .ok()
                .and_then(|r| r.parse().ok())
                .unwrap_or(0)
        }

        /// `cut`, `gap` and `wait`, each fed by a publisher `spawn`ed at [`rate`].
        pub fn hubs<R: Runtime + Default>(
            spawn: impl Fn(std::pin::Pin<Box<dyn Future<Output = ()> + Send>>),
        ) -> [Broadcast<R>; 3] {
            let replay = || ssekit::server::ReplayBuffer::new(1024, 16 << 20);
            let hubs = [
                Broadcast::new(replay(), 64),
                Broadcast::new(replay(), 64).overflow(Overflow::Gap),
                Broadcast::new(replay(), 64),
            ];
            let per_tick = rate() / 100;
            if per_tick > 0 {
                for (i, hub) in hubs.iter().enumerate() {
                    let (hub, wait) = (hub.clone(), i == 2);
                    spawn(Box::pin(async move {
                        let runtime = R::default();
                        let (mut at, mut n) = (runtime.now(), 0u64);
                        loop {
                            at = at.saturating_add(Duration::from_millis(10));
                            runtime.sleep_until(at).await;
                            for _ in 0..per_tick {
                                n += 1;
                                let event = ssekit::Event::builder()
                                    .id(n.to_string())
                                    .expect("digits")
                                    .data(super::wall_nanos().to_string())
                                    .build();
                                if wait {
                                    let _ = hub.publish_wait(&event).await;
                                } else {
                                    let _ = hub.publish(&event);
                                }
                            }
                        }
                    }));
                }
            }
            hubs
        }

        /// `/fan?policy=…`: resumed after the client's `Last-Event-ID`.
        pub fn stream<R: Runtime + Default, B>(
            hubs: &[Broadcast<R>; 3],
            req: &http::Request<B>,
        ) -> http::Response<SseBody<R>> {
            let hub = match req.uri().query() {
                Some(q) if q.contains("policy=gap") => &hubs[1],
                Some(q) if q.contains("policy=wait") => &hubs[2],
                _ => &hubs[0],
            };
            let body = hub.resume(last_event_id(req.headers()));
            ssekit_http::server::response(body.keep_alive(super::KEEP_ALIVE))
        }
    }

    fn receiver<T: Send + 'static>(
        rx: tokio::sync::mpsc::Receiver<T>,
    ) -> impl futures::Stream<Item = T> + Send {
        futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|v| (v, rx)) })
    }
}
