//! The ORS workload: clients calling a streaming tool through a balancer in front of several
//! `ors::Server` instances that share one [`FaultyStore`], while the network cuts and refuses
//! connections, an instance is killed and restarted, and the store goes down and comes back.
//!
//! Checked after every run (a violation names the seed and the invariant):
//! - every call ends, within the virtual deadline, in its tool's exact result or a typed
//!   error: never a result that differs from what the tool returned (a fabricated `end`, a
//!   chunk lost or repeated across a resume), and never a stream the client's ORS profile
//!   refuses (chunks out of order, an `end` that does not add up);
//! - the tool ran at most once per fresh `POST` of the call (at most once per task id), and
//!   at least once for a call that got its result;
//! - a call's resumes all name the task id its first `POST` was given;
//! - a drained instance's `shutdown` returns within [`DRAIN`] and a second, and every
//!   stream it served has ended [`STREAM_SLACK`] later;
//! - no instance keeps more result bytes than its cache allows (looked at every 20 ms);
//! - a call is told its task was lost only if an instance running its tool died or the
//!   store failed (lease renewals and result writes can then fail);
//! - no task is resumed from another session: a snooping client presents other sessions'
//!   task ids throughout the run and must never be sent a `chunk` or an `end`;
//! - a call whose tool was running on the killed instance, and which resumed its task after
//!   the kill and kept that connection, ends within [`ORPHAN_SLACK`] of the later of that
//!   connection and the kill's lease plus a second: once connected to a live instance, a
//!   client learns the task was lost when the lease says so.

use std::collections::BTreeMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use serde_json::{json, Value};
use ssekit::client::ReconnectConfig;
use ssekit_http::client::Http;
use ssekit_http::ors::{
    text_result, CallOptions, Client, Environment, Server, ServerConfig, Split, ToolFuture,
    ToolSpec, Trace,
};
use ssekit_http::runtime::Runtime;

use crate::{lock, FaultyStore, NetFaults, Node, Ran, Sim, StoreFaults, World};

/// How the outcome of a call whose stream the client's ORS profile refused begins.
const REFUSED: &str = "the stream broke the ORS profile: ";

/// The deadline a drained instance gives its running tools (`Server::shutdown`).
pub const DRAIN: Duration = Duration::from_secs(5);

/// The task lease of the workload's servers.
pub const LEASE: Duration = Duration::from_secs(2);

/// How long a call whose tool ran on a killed instance may take to end, from the later of
/// the kill's lease running out plus the second a follower takes to notice (documented on
/// `ServerConfig::task_lease`) and the call's last connection: the store's latency and the
/// connection's own exchanges.
pub const ORPHAN_SLACK: Duration = Duration::from_secs(1);

/// How long after a drained instance's `shutdown` returned its last stream may still be
/// ending (the `retry:` line and the end written, the client's read taking the network's
/// delay).
pub const STREAM_SLACK: Duration = Duration::from_secs(1);

/// What one run does: its size and its faults.
///
/// # Example
/// ```
/// let scenario = ssekit_sim::ors_cluster::Scenario::default();
/// assert_eq!(scenario.servers, 3);
/// ```
#[derive(Clone, Debug)]
pub struct Scenario {
    /// ORS server instances behind the balancer.
    pub servers: u32,
    /// Clients, each with its own session.
    pub clients: u32,
    /// Calls each client makes, one after another.
    pub calls: u32,
    /// The network's faults.
    pub net: NetFaults,
    /// The store's faults.
    pub store: StoreFaults,
    /// Stop one instance at a drawn time, killed (SIGKILL) or drained (a rolling restart:
    /// `Server::shutdown` with [`DRAIN`]) as drawn, and restart it a drawn time later.
    pub kill: bool,
    /// Cut one instance off the network (connects refused, connections reset) for a drawn
    /// window; it keeps running and reaching the store.
    pub partition: bool,
    /// Take the store down for a drawn window.
    pub outage: bool,
    /// The share of calls whose tool takes 3-9 s (the others up to 3 s): past a drain's
    /// [`DRAIN`] deadline.
    pub long_calls: f64,
    /// The virtual time by which every call must have ended.
    pub deadline: Duration,
    /// Each instance's result cache (`ServerConfig::max_result_bytes`), and each session's
    /// share of it (`max_session_result_bytes`): small, so that results are evicted and
    /// refused a place.
    pub result_bytes: (usize, usize),
}

impl Default for Scenario {
    fn default() -> Self {
        Scenario {
            servers: 3,
            clients: 4,
            calls: 3,
            net: NetFaults {
                refuse: 0.05,
                cut: 0.25,
                cut_within: 12 << 10,
                max_read: 4 << 10,
                buffer: 16 << 10,
                delay_ms: 20,
            },
            store: StoreFaults {
                max_latency_ms: 5,
                lost_reply: 0.01,
            },
            kill: true,
            partition: true,
            outage: true,
            long_calls: 0.1,
            deadline: Duration::from_secs(600),
            result_bytes: (96 << 10, 48 << 10),
        }
    }
}

/// What a run did, for the soak's summary and the determinism check.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// Calls that got their tool's result.
    pub results: u32,
    /// Calls that ended in a typed error, by its message's first words.
    pub errors: BTreeMap<String, u32>,
    /// Tool runs in all.
    pub runs: u32,
    /// Connections made, and cut by the network.
    pub connections: (u64, u64),
    /// Task polls, and the virtual time when the last call ended.
    pub polls: u64,
    /// The virtual time (ms) when the last call ended.
    pub ended_ms: u64,
    /// Calls whose tool was running on the killed instance and that resumed it after the
    /// kill (held to the orphan bound).
    pub orphans: u32,
    /// Other sessions' task ids the snoop presented.
    pub snooped: u32,
    /// Instances drained (each within [`DRAIN`] and a second).
    pub drains: u32,
    /// The most result bytes an instance kept.
    pub peak_kept: usize,
}

/// How one call went, as its client saw it.
#[derive(Debug, Default)]
struct CallSeen {
    /// The size asked of the tool.
    size: usize,
    outcome: Option<Result<String, String>>,
    fresh_posts: u32,
    task_ids: Vec<String>,
    resumed_as: Vec<String>,
    /// What the client saw, with the virtual time: the story a violation tells.
    story: Vec<String>,
    /// When the call ended (virtual ms).
    ended_ms: u64,
    /// When each of its connections was made (virtual ms), and whether it resumed a task.
    connects: Vec<(u64, bool)>,
    /// When a connection or an attempt to make one failed (virtual ms).
    disconnects: Vec<u64>,
}

#[derive(Default)]
struct Shared {
    /// Tool runs by call number.
    runs: Mutex<BTreeMap<u64, u32>>,
    /// `POST /sim/call` without a task id that reached a server, by call number: each may
    /// start the tool once (the client may never hear of it, if the answer is cut).
    posts: Mutex<BTreeMap<u64, u32>>,
    /// Calls by number, as their clients saw them.
    calls: Mutex<BTreeMap<u64, CallSeen>>,
    /// Clients done with all their calls.
    clients_done: Mutex<u32>,
    /// Tool runs that have not returned: call number, node, start (virtual ms).
    running: Mutex<Vec<(u64, Node, u64)>>,
    /// Task ids of other sessions the snoop was sent a `chunk` or `end` for.
    stolen: Mutex<Vec<String>>,
    /// Task ids the snoop presented.
    snooped: Mutex<u32>,
    /// Each instance's server, for a drain.
    servers: Mutex<BTreeMap<u32, Server<Sim>>>,
    /// Drains: instance, when it began, when `shutdown` returned (virtual ms).
    drains: Mutex<Vec<(u32, u64, Option<u64>)>>,
    /// The most result bytes an instance was seen to keep, and the first time one kept more
    /// than its cache allows: (instance, bytes, virtual ms).
    peak_kept: Mutex<usize>,
    over: Mutex<Option<(u32, usize, u64)>>,
    /// Response bodies alive, by instance: a stream has ended when its body is dropped.
    streams: Mutex<BTreeMap<u32, usize>>,
    /// Drained instances with streams still open [`STREAM_SLACK`] after `shutdown`
    /// returned: (instance, streams, virtual ms).
    lingering: Mutex<Vec<(u32, usize, u64)>>,
}

/// A response body counted in [`Shared::streams`] while it lives.
struct Counted<B> {
    body: Pin<Box<B>>,
    instance: u32,
    shared: Arc<Shared>,
}

impl<B> Counted<B> {
    fn new(body: B, instance: u32, shared: Arc<Shared>) -> Self {
        *lock(&shared.streams).entry(instance).or_default() += 1;
        Counted {
            body: Box::pin(body),
            instance,
            shared,
        }
    }
}

impl<B> Drop for Counted<B> {
    fn drop(&mut self) {
        if let Some(open) = lock(&self.shared.streams).get_mut(&self.instance) {
            *open = open.saturating_sub(1);
        }
    }
}

impl<B: http_body::Body> http_body::Body for Counted<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<B::Data>, B::Error>>> {
        self.body.as_mut().poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

/// The text the tool returns for call `n`: long enough to need several chunks.
fn expected(n: u64, size: usize) -> String {
    let line = format!("call {n} line ");
    let mut text = String::with_capacity(size + line.len() + 8);
    let mut i = 0u32;
    while text.len() < size {
        text.push_str(&line);
        text.push_str(&i.to_string());
        text.push('\n');
        i += 1;
    }
    text
}

/// The environment of the workload: `work` records its run, takes virtual time and returns
/// [`expected`].
struct Work {
    shared: Arc<Shared>,
}

impl Environment for Work {
    fn name(&self) -> &str {
        "sim"
    }

    fn splits(&self) -> Vec<Split> {
        Vec::new()
    }

    fn tasks(&self, _split: &str) -> Option<Vec<Value>> {
        None
    }

    fn tools(&self) -> Vec<ToolSpec> {
        let schema = json!({
            "type": "object",
            "properties": {"call": {"type": "integer"}, "size": {"type": "integer"}, "ms": {"type": "integer"}},
            "required": ["call", "size", "ms"]
        });
        vec![ToolSpec::new("work", "Works for a while", Some(schema))]
    }

    fn prompt(&self, _task: &Value) -> String {
        String::new()
    }

    fn call(&self, _task: &Value, _tool: &str, input: Value) -> ToolFuture {
        let shared = self.shared.clone();
        Box::pin(async move {
            let n = input["call"].as_u64().unwrap_or(u64::MAX);
            let size = input["size"].as_u64().unwrap_or(0) as usize;
            let ms = input["ms"].as_u64().unwrap_or(0);
            *lock(&shared.runs).entry(n).or_default() += 1;
            let sim = Sim::default();
            let started = sim.now().since_origin().as_millis() as u64;
            let me = (n, Sim::node(), started);
            lock(&shared.running).push(me);
            sim.sleep(Duration::from_millis(ms)).await;
            lock(&shared.running).retain(|run| *run != me);
            Ok(text_result(&expected(n, size), None, false))
        })
    }
}

fn server_node(i: u32) -> Node {
    Node(1 + i)
}

fn client_node(i: u32) -> Node {
    Node(100 + i)
}

/// Starts instance `i` on its node: a server on the shared store, serving its host.
fn start_server(
    world: &World,
    i: u32,
    store: &FaultyStore,
    shared: &Arc<Shared>,
    seed: u64,
    (max_bytes, session_bytes): (usize, usize),
) {
    let sim = world.sim();
    let node = server_node(i);
    let listener = world.net().listen(node, &format!("s{i}"));
    let mut id_seed = [0u8; 32];
    id_seed[..8].copy_from_slice(&seed.to_le_bytes());
    id_seed[8..16].copy_from_slice(&u64::from(i).to_le_bytes());
    id_seed[16..24].copy_from_slice(&world.now().since_origin().as_millis().to_le_bytes()[..8]);
    let config = ServerConfig::default()
        .store(Arc::new(store.clone()))
        .task_lease(LEASE)
        .max_result_bytes(max_bytes)
        .max_session_result_bytes(session_bytes)
        .id_seed(id_seed);
    let env: Arc<dyn Environment> = Arc::new(Work {
        shared: shared.clone(),
    });
    let counted = shared.clone();
    world.spawn_on(node, async move {
        let server = Server::with_runtime(vec![env], config, sim.clone());
        lock(&counted.servers).insert(i, server.clone());
        // Counts each fresh call request as it reaches the server, then hands it on.
        let service =
            hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
                let (server, counted) = (server.clone(), counted.clone());
                async move {
                    let (head, body) = req.into_parts();
                    let bytes = match http_body_util::BodyExt::collect(body).await {
                        Ok(collected) => collected.to_bytes(),
                        Err(e) => return Err(e),
                    };
                    if let Ok(call) = serde_json::from_slice::<Value>(&bytes)
                        && call.get("task_id").is_none()
                        && let Some(n) = call["input"]["call"].as_u64()
                    {
                        *lock(&counted.posts).entry(n).or_default() += 1;
                    }
                    let req = http::Request::from_parts(head, http_body_util::Full::new(bytes));
                    let response = server.handle(req).await;
                    Ok::<_, hyper::Error>(response.map(|body| Counted::new(body, i, counted)))
                }
            });
        listener.serve(sim, service).await;
    });
}

/// Client `c`: a session (retried while the store is down), then its calls in turn.
async fn client(c: u32, calls: u32, seed: u64, shared: Arc<Shared>, draws: Vec<(u64, u64)>) {
    let sim = Sim::default();
    let reconnect = ReconnectConfig::ors().jitter_seed(seed ^ u64::from(c));
    let Ok(client) = Client::<Http<Sim>>::new("http://lb") else {
        return;
    };
    let client = client.reconnect(reconnect);
    let mut session = None;
    for _ in 0..20 {
        match client.open_session("sim", &json!({})).await {
            Ok(sid) => {
                session = Some(sid);
                break;
            }
            Err(_) => sim.sleep(Duration::from_millis(500)).await,
        }
    }
    for k in 0..calls {
        let n = u64::from(c) * 1000 + u64::from(k);
        let (size, ms) = draws.get(k as usize).copied().unwrap_or((1, 1));
        let Some(sid) = &session else {
            lock(&shared.calls).entry(n).or_default().outcome = Some(Err("no session".into()));
            continue;
        };
        lock(&shared.calls).entry(n).or_default().size = size as usize;
        let input = json!({"call": n, "size": size, "ms": ms});
        let seen = shared.clone();
        let result = client
            .call_tool_traced("sim", sid, "work", input, CallOptions::default(), |trace| {
                let mut calls = lock(&seen.calls);
                let call = calls.entry(n).or_default();
                let at = sim.now().since_origin().as_millis();
                call.story.push(match &trace {
                    Trace::Event(e) => format!(
                        "{at} ms: event {} ({} bytes)",
                        e.event_type(),
                        e.data().len()
                    ),
                    other => format!("{at} ms: {other:?}"),
                });
                match &trace {
                    Trace::Connected { resume, .. } => {
                        call.connects.push((at as u64, resume.is_some()))
                    }
                    Trace::Disconnected(_) => call.disconnects.push(at as u64),
                    _ => {}
                }
                match trace {
                    Trace::Connected { resume: None, .. } => call.fresh_posts += 1,
                    Trace::Connected {
                        resume: Some(id), ..
                    } => call.resumed_as.push(id),
                    Trace::Event(event) if event.event_type() == "task_id" => {
                        call.task_ids.push(event.data().to_owned())
                    }
                    _ => {}
                }
            })
            .await;
        let outcome = match result {
            Ok(result) => match result.output.as_ref().and_then(|o| o.blocks.first()) {
                Some(ssekit_http::ors::Block::Text { text, .. }) => Ok(text.clone()),
                Some(other) => Err(format!("a result that is not text: {other:?}")),
                None => Err(format!("a result without text: {result:?}")),
            },
            // The client's ORS profile refused what a server sent: a server bug, not a fault.
            Err(e @ ssekit_http::Error::Sequence(_)) => Err(format!("{REFUSED}{e:?}")),
            Err(e) => Err(format!("{e:?}")),
        };
        let mut calls = lock(&shared.calls);
        let call = calls.entry(n).or_default();
        call.outcome = Some(outcome);
        call.ended_ms = sim.now().since_origin().as_millis() as u64;
    }
    *lock(&shared.clients_done) += 1;
}

/// The snoop: its own session, then, every 200-700 ms, another session's task id presented
/// as a resume of its own call; whatever it is sent must not be that task's result.
async fn snoop(shared: Arc<Shared>) {
    let sim = Sim::default();
    let Ok(client) = Client::<Http<Sim>>::new("http://lb") else {
        return;
    };
    let mut session = None;
    while session.is_none() {
        session = client.open_session("sim", &json!({})).await.ok();
        sim.sleep(Duration::from_millis(300)).await;
    }
    let Some(sid) = session else { return };
    let pool = ssekit_http::client::Pool::<Sim>::new();
    loop {
        let wait = sim.shared.draw(|rng| rng.u64(200..700));
        sim.sleep(Duration::from_millis(wait)).await;
        let ids: Vec<String> = lock(&shared.calls)
            .values()
            .flat_map(|c| c.task_ids.iter().cloned())
            .collect();
        if ids.is_empty() {
            continue;
        }
        let at = sim.shared.draw(|rng| rng.usize(..ids.len()));
        let Some(id) = ids.get(at) else { continue };
        *lock(&shared.snooped) += 1;
        let body = json!({"name": "work", "input": {"call": 0, "size": 1, "ms": 0}, "task_id": id});
        let Ok(req) = http::Request::post("http://lb/sim/call")
            .header("x-session-id", &sid)
            .header("content-type", "application/json")
            .body(bytes::Bytes::from(body.to_string()))
        else {
            continue;
        };
        if let Ok(resp) = pool.request_limited(req, 1 << 20).await {
            let text = String::from_utf8_lossy(resp.body());
            if text.contains("event: chunk") || text.contains("event: end") {
                lock(&shared.stolen).push(id.clone());
            }
        }
    }
}

/// Runs `scenario` from `seed` and checks the invariants; `Err` names the seed and what
/// was violated.
///
/// # Example
/// ```
/// let report = ssekit_sim::ors_cluster::run(1, &Default::default()).unwrap();
/// assert_eq!(report.results + report.errors.values().sum::<u32>(), 12);
/// ```
pub fn run(seed: u64, scenario: &Scenario) -> Result<Report, String> {
    let shared = Arc::new(Shared::default());
    let ran = run_with(seed, scenario, &shared);
    // The servers hold the workload's environment, which holds `shared`: a cycle to break
    // once the world (and every task) is gone, or each run would stay in memory.
    lock(&shared.servers).clear();
    ran
}

fn run_with(seed: u64, scenario: &Scenario, shared: &Arc<Shared>) -> Result<Report, String> {
    let world = World::new(seed);
    world.net().set_faults(scenario.net);
    let hosts: Vec<String> = (0..scenario.servers).map(|i| format!("s{i}")).collect();
    let names: Vec<&str> = hosts.iter().map(String::as_str).collect();
    world.net().balance("lb", &names);
    let store = FaultyStore::new(world.sim(), scenario.store);
    for i in 0..scenario.servers {
        start_server(&world, i, &store, shared, seed, scenario.result_bytes);
    }
    world.spawn_on(
        Node::HARNESS,
        watch_memory(shared.clone(), scenario.result_bytes.0),
    );
    for c in 0..scenario.clients {
        let draws: Vec<(u64, u64)> = (0..scenario.calls)
            .map(|_| {
                world.draw(|rng| {
                    let size = rng.u64(1..40_000);
                    // Some outlast a drain's deadline: the drain must end their streams.
                    let long = rng.f64() < scenario.long_calls;
                    (size, rng.u64(if long { 3_000..9_000 } else { 0..3_000 }))
                })
            })
            .collect();
        let shared = shared.clone();
        let calls = scenario.calls;
        world.spawn_on(client_node(c), client(c, calls, seed, shared, draws));
    }
    world.spawn_on(Node(200), snoop(shared.clone()));
    // The faults of the run, drawn up front: (when, what).
    let mut plan: Vec<(u64, Fault)> = Vec::new();
    if scenario.kill && scenario.servers > 1 {
        let victim = world.draw(|rng| rng.u32(..scenario.servers));
        let at = world.draw(|rng| rng.u64(100..4_000));
        if world.draw(|rng| rng.bool()) {
            let back = at + world.draw(|rng| rng.u64(500..8_000));
            plan.push((at, Fault::Kill(victim)));
            plan.push((back, Fault::Restart(victim)));
        } else {
            // Back once the drain and its streams' ends are due: the process exits then.
            let drain = (DRAIN + STREAM_SLACK).as_millis() as u64;
            let back = at + drain + world.draw(|rng| rng.u64(1_000..4_000));
            plan.push((at, Fault::Drain(victim)));
            plan.push((back, Fault::Restart(victim)));
        }
    }
    if scenario.partition {
        let away = world.draw(|rng| rng.u32(..scenario.servers));
        let at = world.draw(|rng| rng.u64(0..6_000));
        let back = at + world.draw(|rng| rng.u64(100..4_000));
        plan.push((at, Fault::Partition(away)));
        plan.push((back, Fault::Heal(away)));
    }
    if scenario.outage {
        let at = world.draw(|rng| rng.u64(0..6_000));
        let back = at + world.draw(|rng| rng.u64(100..3_000));
        plan.push((at, Fault::StoreDown));
        plan.push((back, Fault::StoreUp));
    }
    plan.sort_by_key(|(at, _)| *at);
    // Told with every violation: what the network and the store did, when.
    let faults: Vec<String> = plan
        .iter()
        .map(|(at, f)| format!("{at} ms {f:?}"))
        .collect();
    let faults = format!("\n  faults: {}", faults.join(", "));
    let mut orphans: Vec<(u64, u64)> = Vec::new();
    let deadline = u64::try_from(scenario.deadline.as_millis()).unwrap_or(u64::MAX);
    let all_done = || *lock(&shared.clients_done) == scenario.clients;
    for (at, fault) in plan {
        match world.run_until(at, all_done) {
            Ran::TimedOut => {}
            Ran::Done => break,
            other => {
                return Err(format!(
                    "seed {seed}: the run stopped early ({other:?}) at {} ms{faults}",
                    world.now().since_origin().as_millis()
                ))
            }
        }
        match fault {
            Fault::Kill(i) => kill(&world, shared, i, &mut orphans),
            Fault::Drain(i) => {
                // As a rolling restart does it: no new connections, then the drain.
                world.net().stop_listening(server_node(i));
                let server = lock(&shared.servers).get(&i).cloned();
                let (drains, sim) = (shared.clone(), world.sim());
                if let Some(server) = server {
                    world.spawn_on(server_node(i), async move {
                        let began = sim.now().since_origin().as_millis() as u64;
                        lock(&drains.drains).push((i, began, None));
                        server.shutdown(DRAIN).await;
                        let ended = sim.now().since_origin().as_millis() as u64;
                        if let Some(drain) = lock(&drains.drains).last_mut() {
                            drain.2 = Some(ended);
                        }
                        // The process would exit once its streams ended: they must, soon.
                        sim.sleep(STREAM_SLACK).await;
                        let open = lock(&drains.streams).get(&i).copied().unwrap_or(0);
                        if open > 0 {
                            let at = sim.now().since_origin().as_millis() as u64;
                            lock(&drains.lingering).push((i, open, at));
                        }
                    });
                }
            }
            Fault::Restart(i) => {
                // The drained process exits (nothing of a killed one is left to stop); a tool
                // it still ran is orphaned as by a kill.
                kill(&world, shared, i, &mut orphans);
                start_server(&world, i, &store, shared, seed, scenario.result_bytes);
            }
            Fault::Partition(i) => world.net().partition(&format!("s{i}"), true),
            Fault::Heal(i) => world.net().partition(&format!("s{i}"), false),
            Fault::StoreDown => store.set_down(true),
            Fault::StoreUp => store.set_down(false),
        }
    }
    store.set_down(false);
    let ran = world.run_until(deadline, all_done);
    let ended_ms = u64::try_from(world.now().since_origin().as_millis()).unwrap_or(u64::MAX);
    if ran != Ran::Done {
        let open: Vec<String> = lock(&shared.calls)
            .iter()
            .filter(|(_, c)| c.outcome.is_none())
            .map(|(n, c)| format!("call {n}:\n    {}", c.story.join("\n    ")))
            .collect();
        return Err(format!(
            "seed {seed}: calls still open at {ended_ms} ms ({ran:?}):\n  {}\n  tasks by node: {:?}\n  open connections:\n    {}{faults}",
            open.join("\n  "),
            world.tasks_by_node(),
            world.net().open_links().join("\n    ")
        ));
    }
    check(
        seed,
        scenario,
        shared,
        &world,
        ended_ms,
        &orphans,
        store.failures(),
    )
    .map_err(|violation| violation + &faults)
}

/// Every 20 virtual ms, what each live instance keeps: never more result bytes than its
/// cache allows.
async fn watch_memory(shared: Arc<Shared>, max_bytes: usize) {
    let sim = Sim::default();
    loop {
        sim.sleep(Duration::from_millis(20)).await;
        let servers: Vec<(u32, Server<Sim>)> = lock(&shared.servers)
            .iter()
            .map(|(i, s)| (*i, s.clone()))
            .collect();
        for (i, server) in servers {
            let (_, bytes) = server.kept_results();
            let mut peak = lock(&shared.peak_kept);
            *peak = (*peak).max(bytes);
            if bytes > max_bytes {
                let at = sim.now().since_origin().as_millis() as u64;
                lock(&shared.over).get_or_insert((i, bytes, at));
            }
        }
    }
}

/// Kills instance `i`, noting the calls whose tool it was running: (call, when).
fn kill(world: &World, shared: &Shared, i: u32, orphans: &mut Vec<(u64, u64)>) {
    let killed_at = world.now().since_origin().as_millis() as u64;
    lock(&shared.running).retain(|(n, node, _)| {
        if *node == server_node(i) {
            orphans.push((*n, killed_at));
        }
        *node != server_node(i)
    });
    world.kill(server_node(i));
}

#[derive(Clone, Copy, Debug)]
enum Fault {
    Kill(u32),
    Drain(u32),
    Restart(u32),
    Partition(u32),
    Heal(u32),
    StoreDown,
    StoreUp,
}

fn check(
    seed: u64,
    scenario: &Scenario,
    shared: &Shared,
    world: &World,
    ended_ms: u64,
    orphans: &[(u64, u64)],
    store_failures: u64,
) -> Result<Report, String> {
    let runs = lock(&shared.runs);
    let posts = lock(&shared.posts);
    let calls = lock(&shared.calls);
    let mut report = Report {
        runs: runs.values().sum(),
        connections: world.net().counts(),
        polls: world.polls(),
        ended_ms,
        ..Report::default()
    };
    if let Some((i, bytes, at)) = *lock(&shared.over) {
        return Err(format!(
            "seed {seed}: instance {i} kept {bytes} result bytes at {at} ms, past its {} byte cache",
            scenario.result_bytes.0
        ));
    }
    report.peak_kept = *lock(&shared.peak_kept);
    let drain_bound = (DRAIN + Duration::from_secs(1)).as_millis() as u64;
    for (i, began, ended) in lock(&shared.drains).iter() {
        match ended {
            Some(ended) if ended - began <= drain_bound => report.drains += 1,
            // Still draining when the last call ended: not yet due.
            None if ended_ms < began + drain_bound => {}
            _ => {
                return Err(format!(
                    "seed {seed}: the drain of instance {i} begun at {began} ms {}",
                    ended.map_or("never ended".to_owned(), |e| format!(
                        "took {} ms, past {drain_bound} ms",
                        e - began
                    ))
                ))
            }
        }
    }
    if let Some((i, open, at)) = lock(&shared.lingering).first() {
        return Err(format!(
            "seed {seed}: {open} streams of drained instance {i} were still open at {at} ms, {} ms after its shutdown returned",
            STREAM_SLACK.as_millis()
        ));
    }
    if let Some(id) = lock(&shared.stolen).first() {
        return Err(format!("seed {seed}: task {id} of another session was resumed by the snoop and sent its result"));
    }
    let noticed = (LEASE + Duration::from_secs(1)).as_millis() as u64;
    let slack = ORPHAN_SLACK.as_millis() as u64;
    for (n, killed_at) in orphans {
        let Some(call) = calls.get(n) else { continue };
        // Only a call that follows its task after the kill is bound: one that never
        // connected again ran out of retries, and one whose last connection was a fresh
        // POST runs a new task (the orphan was a task it never learned the id of).
        let Some(&(last, true)) = call.connects.last() else {
            continue;
        };
        // Nor one that lost that connection before it learned anything, and failed to
        // connect again until it gave up: its end is the retry policy's, not the lease's.
        if last < *killed_at || call.disconnects.iter().any(|at| *at >= last) {
            continue;
        }
        let bound = (killed_at + noticed).max(last) + slack;
        report.orphans += 1;
        if call.ended_ms > bound {
            return Err(format!(
                "seed {seed}: call {n}, whose tool was running on the instance killed at {killed_at} ms, ended at {} ms, past {bound} ms (its last connection at {last} ms):\n    {}",
                call.ended_ms,
                call.story.join("\n    ")
            ));
        }
    }
    report.snooped = *lock(&shared.snooped);
    let want = scenario.clients * scenario.calls;
    if calls.len() != want as usize {
        return Err(format!(
            "seed {seed}: {} calls seen, {want} made",
            calls.len()
        ));
    }
    for (n, call) in calls.iter() {
        let ran = runs.get(n).copied().unwrap_or(0);
        let posted = posts.get(n).copied().unwrap_or(0);
        if ran > posted {
            return Err(format!(
                "seed {seed}: call {n}: the tool ran {ran} times for {posted} fresh POSTs received ({} sent; task ids {:?})",
                call.fresh_posts, call.task_ids
            ));
        }
        if let Some(first) = call.task_ids.first()
            && let Some(other) = call
                .resumed_as
                .iter()
                .find(|id| *id != first && !call.task_ids.contains(id))
        {
            return Err(format!(
                "seed {seed}: call {n}: resumed as {other}, a task id it was never given"
            ));
        }
        match &call.outcome {
            Some(Ok(text)) => {
                if ran == 0 {
                    return Err(format!(
                        "seed {seed}: call {n}: a result, but the tool never ran"
                    ));
                }
                let want = expected(*n, call.size);
                if *text != want {
                    return Err(format!(
                        "seed {seed}: call {n}: the result differs from the tool's ({} bytes, first difference at byte {})",
                        text.len(),
                        text.bytes().zip(want.bytes()).position(|(a, b)| a != b).unwrap_or(text.len().min(want.len()))
                    ));
                }
                report.results += 1;
            }
            Some(Err(message)) if message.starts_with(REFUSED) => {
                return Err(format!(
                    "seed {seed}: call {n}: {message}:\n    {}",
                    call.story.join("\n    ")
                ));
            }
            Some(Err(message))
                if store_failures == 0
                    && message.contains("task lost")
                    && !orphans.iter().any(|(o, _)| o == n) =>
            {
                return Err(format!(
                    "seed {seed}: call {n} was told its task was lost, but no instance running its tool died and the store never failed:\n    {}",
                    call.story.join("\n    ")
                ));
            }
            Some(Err(message)) => {
                let kind: String = message.chars().take(100).collect();
                *report.errors.entry(kind).or_default() += 1;
            }
            None => return Err(format!("seed {seed}: call {n} never ended")),
        }
    }
    Ok(report)
}
