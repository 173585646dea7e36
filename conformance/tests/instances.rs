//! Several ORS server instances on one real `redis-server`: each test makes two `Server`s
//! (instances A and B), each with its own `RedisStore` connection, as two processes behind
//! a load balancer would have, and checks what a client whose requests land on either one
//! gets. Every test runs on tokio (the Redis connections on tokio) and on smol (under
//! `smol::block_on`, the Redis connections on smol), with runtime-neutral timers.

#[allow(unused_macros)]
mod ors_kit;
mod support;

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use ors_kit::Gsm8k;
use serde_json::{json, Value};
use ssekit::{Decoder, Frame};
use ssekit_http::ors::{Server, ServerConfig, TASK_LOST};
use ssekit_http::runtime::Runtime;
use ssekit_http::store::{SharedBroadcast, Store, TaskScope};
use ssekit_redis::RedisStore;
use support::redis_server::RedisServer;

/// Runs each `async fn name<R: Runtime + Default>(redis: RedisServer)` on tokio and on smol.
macro_rules! on_both_runtimes {
    ($($name:ident),* $(,)?) => {
        mod on_tokio {
            $(
                #[test]
                fn $name() {
                    let Some(redis) = super::RedisServer::start() else { return };
                    tokio::runtime::Builder::new_multi_thread()
                        .worker_threads(2)
                        .enable_all()
                        .build()
                        .unwrap()
                        .block_on(super::within(super::$name::<ssekit_hyper::runtime::Tokio>(redis)))
                }
            )*
        }
        mod on_smol {
            $(
                #[test]
                fn $name() {
                    let Some(redis) = super::RedisServer::start() else { return };
                    smol::block_on(super::within(super::$name::<ssekit_smol::runtime::Smol>(redis)))
                }
            )*
        }
    };
}

/// How long a test may take before it is called hung: far past anything a loaded machine
/// needs, so only a hang fails a test, never a slow run.
const HANG: Duration = Duration::from_secs(60);

/// Fails a test that hangs instead of hanging the suite (runtime-neutral timer, after
/// [`HANG`]). What a test checks about time is what the code decided, never how fast this
/// run was.
async fn within<T>(fut: impl Future<Output = T>) -> T {
    futures_lite::future::or(fut, async {
        async_io::Timer::after(HANG).await;
        panic!("hung: no outcome after {HANG:?}")
    })
    .await
}

async fn sleep(ms: u64) {
    async_io::Timer::after(Duration::from_millis(ms)).await;
}

async fn connect<R: Runtime + Default>(redis: &RedisServer) -> Arc<RedisStore> {
    Arc::new(
        RedisStore::connect(&redis.url(), R::default())
            .await
            .expect("connects"),
    )
}

/// An instance on `redis`, with `config`.
async fn instance<R: Runtime + Default>(redis: &RedisServer, config: ServerConfig) -> Server<R> {
    let store: Arc<dyn Store> = connect::<R>(redis).await;
    Server::with_config(vec![Arc::new(Gsm8k)], config.store(store))
}

/// One response: status, `Retry-After`, and the whole body.
async fn send<R: Runtime>(
    server: &Server<R>,
    method: &str,
    path: &str,
    sid: Option<&str>,
    body: &Value,
) -> (u16, String) {
    let mut req = http::Request::builder().method(method).uri(path);
    if let Some(sid) = sid {
        req = req.header("x-session-id", sid);
    }
    let req = req.body(Full::new(Bytes::from(body.to_string()))).unwrap();
    let resp = server.handle(req).await;
    let status = resp.status().as_u16();
    let wire = resp
        .into_body()
        .collect()
        .await
        .expect("no error")
        .to_bytes();
    (status, String::from_utf8(wire.to_vec()).expect("UTF-8"))
}

/// `(event, data)` of every event in `wire`.
fn events(wire: &str) -> Vec<(String, String)> {
    let mut decoder = Decoder::new();
    decoder.feed_slice(wire.as_bytes()).unwrap();
    decoder.finish();
    let mut out = Vec::new();
    while let Some(frame) = decoder.next_frame().unwrap() {
        if let Frame::Event(ev) = frame {
            out.push((ev.event_type().to_owned(), ev.data().to_owned()));
        }
    }
    out
}

/// A session made (and created) on `server`.
async fn session<R: Runtime>(server: &Server<R>) -> String {
    let (_, wire) = send(server, "POST", "/create_session", None, &json!({})).await;
    let sid = events(&wire)[0].1.clone();
    let create = json!({"env_name": "gsm8k", "split": "test", "index": 0});
    let (status, _) = send(server, "POST", "/create", Some(&sid), &create).await;
    assert_eq!(status, 200);
    sid
}

async fn call<R: Runtime>(server: &Server<R>, sid: &str, body: &Value) -> (u16, String) {
    send(server, "POST", "/gsm8k/call", Some(sid), body).await
}

/// A `/call` whose stream is read only up to its `task_id` event, then dropped (the client
/// was cut): the task id.
async fn start_call<R: Runtime>(server: &Server<R>, sid: &str, body: &Value) -> String {
    let req = http::Request::post("/gsm8k/call")
        .header("x-session-id", sid)
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap();
    let resp = server.handle(req).await;
    let mut body = Box::pin(resp.into_body());
    let first = body.frame().await.unwrap().unwrap().into_data().unwrap();
    let text = String::from_utf8(first.to_vec()).unwrap();
    let evs = events(&text);
    assert_eq!(evs[0].0, "task_id", "{text}");
    evs[0].1.clone()
}

async fn sessions_made_on_one_instance_work_on_every_other<R: Runtime + Default>(
    redis: RedisServer,
) {
    let a = instance::<R>(&redis, ServerConfig::default()).await;
    let b = instance::<R>(&redis, ServerConfig::default()).await;
    let sid = session(&a).await;
    assert_eq!(
        send(&b, "POST", "/ping", Some(&sid), &json!({})).await.0,
        200
    );
    let (status, prompt) = send(&b, "GET", "/gsm8k/prompt", Some(&sid), &json!({})).await;
    assert_eq!(status, 200);
    assert!(prompt.contains("Tom has 3 baskets"), "{prompt}");
    let (status, tools) = send(&b, "GET", "/gsm8k/task_tools", Some(&sid), &json!({})).await;
    assert!(status == 200 && tools.contains("submit"), "{tools}");
    let (_, wire) = call(
        &b,
        &sid,
        &json!({"name": "submit", "input": {"answer": 33}}),
    )
    .await;
    let evs = events(&wire);
    assert_eq!(evs[1].0, "end", "{wire}");
    assert!(evs[1].1.contains("Correct!"), "{wire}");
    // Deleted on B: gone on A too.
    assert_eq!(
        send(&b, "POST", "/delete", Some(&sid), &json!({})).await.0,
        200
    );
    assert_eq!(
        send(&a, "POST", "/ping", Some(&sid), &json!({})).await.0,
        404
    );
    assert_eq!(
        send(&b, "POST", "/create", Some(&sid), &json!({"task_spec": {}}))
            .await
            .0,
        200
    );
    assert_eq!(
        send(&a, "POST", "/create", Some(&sid), &json!({"task_spec": {}}))
            .await
            .0,
        400,
        "the session exists, made on B"
    );
}

async fn a_finished_call_resumes_identically_on_another_instance<R: Runtime + Default>(
    redis: RedisServer,
) {
    let config = ServerConfig::default().max_chunk(64);
    let a = instance::<R>(&redis, config.clone()).await;
    let b = instance::<R>(&redis, config).await;
    let sid = session(&a).await;
    let work = json!({"name": "work", "input": {"steps": 20}});
    let (_, on_a) = call(&a, &sid, &work).await;
    let task_id = events(&on_a)[0].1.clone();
    assert!(events(&on_a).len() > 10, "chunked: {on_a}");
    let resume = json!({"name": "work", "input": {}, "task_id": task_id});
    // The store write follows the local finish: wait for it (bounded by a hang guard).
    let deadline = Instant::now() + HANG;
    loop {
        let (_, on_b) = call(&b, &sid, &resume).await;
        if on_b == on_a {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "hung: B never served A's result: {on_b}"
        );
        sleep(20).await;
    }
    // From another session, on either instance: unknown.
    let other = session(&b).await;
    for server in [&a, &b] {
        let (_, wire) = call(server, &other, &resume).await;
        assert_eq!(events(&wire), [("error".into(), "unknown task_id".into())]);
    }
}

async fn a_running_call_is_followed_live_from_another_instance<R: Runtime + Default>(
    redis: RedisServer,
) {
    let config = ServerConfig::default().max_chunk(64);
    let a = instance::<R>(&redis, config.clone()).await;
    let b = instance::<R>(&redis, config).await;
    let sid = session(&a).await;
    let work = json!({"name": "work", "input": {"delay_ms": 700, "steps": 15}});
    // Measured from before the call, so before the tool's 700 ms timer was armed (timers
    // never fire early): B's stream cannot end sooner unless B did not wait for the tool.
    // (Measured from after `start_call`, as before, a slow start could eat the margin.)
    let started = Instant::now();
    let task_id = start_call(&a, &sid, &work).await;
    let resume = json!({"name": "work", "input": {}, "task_id": task_id});
    let (_, on_b) = call(&b, &sid, &resume).await;
    assert!(
        started.elapsed() >= Duration::from_millis(700),
        "B waited for the running tool"
    );
    let (_, on_a) = call(&a, &sid, &resume).await;
    assert_eq!(on_b, on_a, "nothing lost, nothing duplicated");
    let evs = events(&on_b);
    assert_eq!(evs.iter().filter(|(e, _)| e == "end").count(), 1);
    assert_eq!(evs.iter().filter(|(e, _)| e == "task_id").count(), 1);
}

async fn a_call_whose_instance_died_ends_in_an_error<R: Runtime + Default>(redis: RedisServer) {
    let b = instance::<R>(&redis, ServerConfig::default()).await;
    let sid = session(&b).await;
    // What an instance that died leaves: a task started in this session with a lease it
    // renewed no more, and the first chunk of its output.
    let store = connect::<R>(&redis).await;
    let task_id = "0123456789abcdef0123456789abcdef";
    let scope = TaskScope::new(sid.clone(), "work");
    let leased = Instant::now();
    store
        .start_task(task_id, &scope, Duration::from_millis(600))
        .await
        .unwrap();
    let chunk = Bytes::from_static(b"event: chunk\ndata: {\"ok\":\n\n");
    store
        .append_task(task_id, &[chunk], false, Duration::ZERO)
        .await
        .unwrap();
    let resume = json!({"name": "work", "input": {}, "task_id": task_id});
    let (_, wire) = call(&b, &sid, &resume).await;
    assert_eq!(
        events(&wire),
        [
            ("task_id".into(), task_id.into()),
            ("chunk".into(), "{\"ok\":".into()),
            ("error".into(), TASK_LOST.into()),
        ]
    );
    // The lease rule made that decision: not before the 600 ms lease lapsed (a lower
    // bound, from before the lease was set). "Within the lease and a second" is what the
    // follower decided too: it re-reads the task every third of the lease (`recheck` in
    // transport-http's `follow_shared`, at most 1 s for the default 3 s lease) and gives up
    // on the first read that finds the lease gone; `within` fails a follower that never
    // does. How long after 600 ms the error arrived only measures the machine (a
    // `< 2.1 s` bound was asserted before, and could fail on a loaded one).
    assert!(
        leased.elapsed() >= Duration::from_millis(600),
        "gave up before the lease lapsed: {:?}",
        leased.elapsed()
    );
}

async fn a_store_outage_is_a_503_and_recovers_without_a_restart<R: Runtime + Default>(
    mut redis: RedisServer,
) {
    let b = instance::<R>(&redis, ServerConfig::default()).await;
    let sid = session(&b).await;
    redis.stop();
    let (status, body) = send(&b, "POST", "/ping", Some(&sid), &json!({})).await;
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("the shared store is unavailable"), "{body}");
    let (status, _) = call(&b, &sid, &json!({"name": "submit", "input": {"answer": 1}})).await;
    assert_eq!(status, 503);
    let (status, _) = send(&b, "POST", "/create", Some("x"), &json!({"task_spec": {}})).await;
    assert_eq!(status, 503);
    // How soon an outage shows is the store's decision: every request is bounded by its
    // timeout (the README's "within 2 s"), and `within` fails one that hangs. How fast this
    // run was is not asserted (a `< 10 s` bound was, before).
    assert_eq!(ssekit_redis::DEFAULT_TIMEOUT, Duration::from_secs(2));
    redis.restart();
    // Redis came back empty: new sessions and calls work, with no restart of the server.
    let deadline = Instant::now() + HANG;
    let sid = loop {
        let (_, wire) = send(&b, "POST", "/create_session", None, &json!({})).await;
        let sid = events(&wire)[0].1.clone();
        let create = json!({"env_name": "gsm8k", "split": "test", "index": 0});
        if send(&b, "POST", "/create", Some(&sid), &create).await.0 == 200 {
            break sid;
        }
        assert!(Instant::now() < deadline, "hung: the store never came back");
        sleep(100).await;
    };
    let (_, wire) = call(
        &b,
        &sid,
        &json!({"name": "submit", "input": {"answer": 33}}),
    )
    .await;
    assert_eq!(events(&wire)[1].0, "end", "{wire}");
}

async fn every_key_expires<R: Runtime + Default>(redis: RedisServer) {
    let a = instance::<R>(&redis, ServerConfig::default()).await;
    let sid = session(&a).await;
    let (_, _) = call(
        &a,
        &sid,
        &json!({"name": "submit", "input": {"answer": 33}}),
    )
    .await;
    let store: Arc<dyn Store> = connect::<R>(&redis).await;
    SharedBroadcast::new(store, "news")
        .publish(&ssekit::Event::message("x"))
        .await
        .unwrap();
    // The task's store writes follow its local finish: wait for them (bounded by a hang
    // guard), not for 200 ms, as before.
    let deadline = Instant::now() + HANG;
    let keys = loop {
        let keys = redis.cli(&["--scan", "--pattern", "*"]);
        let found = keys.lines().filter(|k| !k.is_empty()).count();
        if found >= 4 {
            break keys;
        }
        assert!(
            Instant::now() < deadline,
            "hung: session, task, log, events never all stored: {keys:?}"
        );
        sleep(20).await;
    };
    for key in keys.lines().filter(|k| !k.is_empty()) {
        assert!(key.starts_with("ssekit:"), "{key}");
        let ttl: i64 = redis.cli(&["pttl", key]).trim().parse().unwrap();
        assert!(ttl > 0, "{key} has no TTL ({ttl})");
    }
}

async fn a_broadcast_reaches_every_instance_and_replays_after_an_id<R: Runtime + Default>(
    redis: RedisServer,
) {
    use futures_lite::StreamExt;
    let (store_a, store_b): (Arc<dyn Store>, Arc<dyn Store>) =
        (connect::<R>(&redis).await, connect::<R>(&redis).await);
    let on_a = SharedBroadcast::new(store_a, "news");
    let on_b = SharedBroadcast::new(store_b, "news");
    let mut live_on_b = on_b.subscribe(None, R::default()).await.unwrap();
    // The subscription started from the latest id, read when `subscribe` returned, and says
    // so first (an `id:` alone: a reconnect resumes from there): what is published now
    // reaches it (no 100 ms sleep needed before publishing).
    let start = live_on_b.next().await.unwrap();
    assert_eq!(start, "id: 0-0\n\n");
    let first_id = on_a
        .publish(&ssekit::Event::message("first"))
        .await
        .unwrap();
    let got = live_on_b.next().await;
    assert_eq!(got.unwrap(), format!("id: {first_id}\ndata: first\n\n"));
    let second = on_a
        .publish(
            &ssekit::Event::builder()
                .event("tick")
                .unwrap()
                .data("second")
                .build(),
        )
        .await
        .unwrap();
    assert_eq!(
        live_on_b.next().await.unwrap(),
        format!("id: {second}\nevent: tick\ndata: second\n\n")
    );
    // A subscriber that saw `first` reconnects to A: it gets `second` from the log.
    let mut resumed = on_a.subscribe(Some(&first_id), R::default()).await.unwrap();
    let replayed = resumed.next().await.unwrap();
    assert!(replayed.starts_with(format!("id: {second}\n").as_bytes()));
    // A subscriber more than the log's length behind meets a gap, not a silent skip (Redis
    // trims `MAXLEN ~` in whole nodes of 100: publish well past that).
    let short: Arc<dyn Store> = connect::<R>(&redis).await;
    let short = SharedBroadcast::new(short, "short").max_events(3);
    let old = short.publish(&ssekit::Event::message("0")).await.unwrap();
    for n in 1..=300 {
        let event = ssekit::Event::message(n.to_string());
        short.publish(&event).await.unwrap();
    }
    let gap = short.subscribe(Some(&old), R::default()).await.err();
    assert_eq!(gap, Some(ssekit_http::store::SubscribeError::Gap));
    let mut rest = short.subscribe(Some("0-0"), R::default()).await.unwrap();
    assert!(rest.next().await.is_some(), "what the log still holds");
}

async fn shutdown_lets_running_calls_finish_and_refuses_new_ones<R: Runtime + Default>(
    redis: RedisServer,
) {
    let a = instance::<R>(&redis, ServerConfig::default()).await;
    let b = instance::<R>(&redis, ServerConfig::default()).await;
    let sid = session(&a).await;
    let work = json!({"name": "work", "input": {"delay_ms": 500}});
    // The shutdown starts once the call is running (its `task_id` came), not after 150 ms
    // (which a loaded machine could spend before the call started), and the new call once
    // the shutdown began (its first poll stops new calls), not 50 ms later. Its deadline
    // is the hang guard: the running call finishing first is then the drain's decision,
    // not the machine's speed.
    let req = http::Request::post("/gsm8k/call")
        .header("x-session-id", &sid)
        .body(Full::new(Bytes::from(work.to_string())))
        .unwrap();
    let mut body = Box::pin(a.handle(req).await.into_body());
    let first = body.frame().await.unwrap().unwrap().into_data().unwrap();
    assert_eq!(events(std::str::from_utf8(&first).unwrap())[0].0, "task_id");
    let rest = async { body.collect().await.expect("no error").to_bytes() };
    let submit = json!({"name": "submit", "input": {"answer": 33}});
    let shutdown = futures_lite::future::zip(a.shutdown(HANG), call(&a, &sid, &submit));
    let (rest, (cut, (status, _))) = futures_lite::future::zip(rest, shutdown).await;
    let wire = String::from_utf8([first, rest].concat()).expect("UTF-8");
    assert_eq!(cut, 0, "the running call finished before the deadline");
    assert_eq!(status, 503, "a new call during the drain goes elsewhere");
    let evs = events(&wire);
    assert_eq!(evs.last().unwrap().0, "end", "{wire}");
    // Its result is in the store: the client resumes it on B.
    let resume = json!({"name": "work", "input": {}, "task_id": evs[0].1});
    let (_, on_b) = call(&b, &sid, &resume).await;
    assert_eq!(on_b, wire);
}

/// Waits until the session's setup wrote its outcome to the store. The instance that made
/// the session writes it after answering, so a test counting its requests to Redis waits
/// first, or that write lands in its count.
async fn set_up(store: &dyn Store, sid: &str) {
    let ttl = Duration::from_secs(60);
    while store
        .session(sid, ttl)
        .await
        .unwrap()
        .unwrap()
        .setup
        .is_none()
    {
        sleep(5).await;
    }
}

/// What a call and a broadcast event cost in requests to Redis (each one round trip),
/// counted by the store: deterministic, unlike their timings.
async fn round_trips_per_call_and_per_event<R: Runtime + Default>(redis: RedisServer) {
    use futures_lite::future::zip;
    let store = connect::<R>(&redis).await;
    let shared: Arc<dyn Store> = store.clone();
    let a = Server::<R>::with_config(
        vec![Arc::new(Gsm8k)],
        // A lease no call outlives here: no renewal joins the count, however slow the machine.
        ServerConfig::default()
            .store(Arc::clone(&shared))
            .task_lease(Duration::from_secs(3600)),
    );
    let sid = session(&a).await;
    let watcher = connect::<R>(&redis).await;
    set_up(&*watcher, &sid).await;
    for _ in 0..3 {
        let before = store.round_trips();
        let submit = json!({"name": "submit", "input": {"answer": 33}});
        let (status, wire) = call(&a, &sid, &submit).await;
        assert_eq!(status, 200, "{wire}");
        let task_id = events(&wire)[0].1.clone();
        // The result is written after the stream ended: wait for it (on another store).
        while !watcher.read_task(&task_id, "0").await.unwrap().finished {
            sleep(5).await;
        }
        // The start (one script: GETEX session, SET lease, SET scope), the end (one script).
        assert_eq!(store.round_trips() - before, 2);
    }
    let news = SharedBroadcast::new(shared, "round-trips");
    // Each change notice forgets the reads in flight: let each arrive before reading.
    let publish = |data: &'static str| {
        let news = &news;
        let noticed = store.changed(ssekit_http::store::Log::Events("round-trips"));
        async move {
            let id = news.publish(&ssekit::Event::message(data)).await.unwrap();
            noticed.await;
            id
        }
    };
    let before = store.round_trips();
    let first = publish("one").await;
    assert_eq!(store.round_trips() - before, 1, "a publish is one script");
    publish("two").await;
    // Four subscribers at one position share their reads of the log. Redis is frozen
    // while they ask, so no answer can come before the last one joined the first read.
    let before = store.round_trips();
    let subscribe = || news.subscribe(Some(&first), R::default());
    let mut four = Box::pin(zip(
        zip(subscribe(), subscribe()),
        zip(subscribe(), subscribe()),
    ));
    redis.freeze();
    let asked = futures_lite::future::poll_once(&mut four).await;
    redis.thaw();
    assert!(asked.is_none(), "no answer while Redis is frozen");
    let ((s1, s2), (s3, s4)) = four.await;
    let reads = store.round_trips() - before;
    assert_eq!(reads, 1, "{reads} reads for 4 subscribers at one position");
    for subscriber in [s1, s2, s3, s4] {
        let mut subscriber = subscriber.unwrap();
        use futures_lite::StreamExt;
        let got = subscriber.next().await.unwrap();
        assert!(got.ends_with(b"data: two\n\n"), "{got:?}");
    }
}

/// Gsm8k under another name: a second environment on one instance.
struct Other;

impl ssekit_http::ors::Environment for Other {
    fn name(&self) -> &str {
        "other"
    }
    fn splits(&self) -> Vec<ssekit_http::ors::Split> {
        Gsm8k.splits()
    }
    fn tasks(&self, split: &str) -> Option<Vec<Value>> {
        Gsm8k.tasks(split)
    }
    fn tools(&self) -> Vec<ssekit_http::ors::ToolSpec> {
        Gsm8k.tools()
    }
    fn prompt(&self, task: &Value) -> String {
        Gsm8k.prompt(task)
    }
    fn call(&self, task: &Value, tool: &str, input: Value) -> ssekit_http::ors::ToolFuture {
        Gsm8k.call(task, tool, input)
    }
}

/// A new call refused for its session or its tool gets the answer it got when the session
/// was read before the start (which a call of a known tool now does in one script with
/// it), and leaves no task: none on the instance, none in Redis, or, for a session of
/// another environment (found by the script, refused after), keys that expire.
async fn calls_refused_for_their_session_or_tool_leave_no_task<R: Runtime + Default>(
    redis: RedisServer,
) {
    let store = connect::<R>(&redis).await;
    let shared: Arc<dyn Store> = store.clone();
    let a = Server::<R>::with_config(
        vec![Arc::new(Gsm8k), Arc::new(Other)],
        ServerConfig::default().store(shared),
    );
    let b = instance::<R>(&redis, ServerConfig::default()).await;
    let task_keys = || -> Vec<String> {
        let keys = redis.cli(&["--scan", "--pattern", "ssekit:*"]);
        keys.lines()
            .filter(|k| ["task:", "lease:", "log:"].iter().any(|p| k.contains(p)))
            .map(str::to_owned)
            .collect()
    };
    // `task_id` (an id never stored), then the refusal.
    let refusal = |wire: &str| {
        let evs = events(wire);
        assert_eq!(evs.len(), 2, "{wire}");
        assert_eq!(evs[0].0, "task_id", "{wire}");
        assert_eq!(evs[1].0, "error", "{wire}");
        evs[1].1.clone()
    };
    let submit = json!({"name": "submit", "input": {"answer": 33}});
    let unknown_tool = json!({"name": "nope", "input": {}});

    // The session deleted on B between its creation on A and a call on A.
    let sid = session(&a).await;
    set_up(&*store, &sid).await;
    let deleted = send(&b, "POST", "/delete", Some(&sid), &json!({})).await;
    assert_eq!(deleted.0, 200);
    let before = store.round_trips();
    let (status, wire) = call(&a, &sid, &submit).await;
    assert_eq!(status, 200);
    assert_eq!(
        store.round_trips() - before,
        1,
        "one script, which wrote nothing"
    );
    let gone = refusal(&wire);
    assert!(gone.contains("Session not found"), "{wire}");
    // As a call whose session is read before anything else (an unknown tool's) is told.
    let before = store.round_trips();
    let (status, wire) = call(&a, &sid, &unknown_tool).await;
    assert_eq!((status, refusal(&wire)), (200, gone.clone()));
    assert_eq!(store.round_trips() - before, 1, "the session read");
    assert_eq!(task_keys(), Vec::<String>::new());
    assert_eq!(a.kept_results(), (0, 0), "no task on the instance");

    // An unknown tool in a live session: refused, nothing started.
    let sid = session(&a).await;
    let (status, wire) = call(&a, &sid, &unknown_tool).await;
    assert_eq!(status, 200);
    assert!(
        refusal(&wire).contains("'nope' is not a valid tool"),
        "{wire}"
    );
    assert_eq!(task_keys(), Vec::<String>::new());
    assert_eq!(a.kept_results(), (0, 0));

    // A live session of another environment: not found there, as before; the task the
    // script recorded never ran, is forgotten on A, and its keys expire unread.
    let (status, wire) = send(&a, "POST", "/other/call", Some(&sid), &submit).await;
    assert_eq!((status, refusal(&wire)), (200, gone));
    assert_eq!(a.kept_results(), (0, 0));
    let keys = task_keys();
    assert_eq!(keys.len(), 2, "the lease and the scope: {keys:?}");
    for key in keys {
        let ttl: i64 = redis.cli(&["pttl", &key]).trim().parse().unwrap();
        assert!(ttl > 0, "{key} has no TTL ({ttl})");
    }

    // The session is still good where it belongs.
    let (status, wire) = call(&a, &sid, &submit).await;
    assert_eq!(status, 200);
    assert_eq!(events(&wire)[1].0, "end", "{wire}");
}

on_both_runtimes!(
    sessions_made_on_one_instance_work_on_every_other,
    a_finished_call_resumes_identically_on_another_instance,
    a_running_call_is_followed_live_from_another_instance,
    a_call_whose_instance_died_ends_in_an_error,
    a_store_outage_is_a_503_and_recovers_without_a_restart,
    every_key_expires,
    a_broadcast_reaches_every_instance_and_replays_after_an_id,
    shutdown_lets_running_calls_finish_and_refuses_new_ones,
    round_trips_per_call_and_per_event,
    calls_refused_for_their_session_or_tool_leave_no_task,
);

#[test]
fn a_password_never_shows_in_errors_or_debug() {
    let Some(redis) = RedisServer::start_with(Some("s3cret-pw")) else {
        return;
    };
    smol::block_on(async {
        let runtime = ssekit_smol::runtime::Smol::default();
        let store = RedisStore::connect(&redis.url(), runtime).await.unwrap();
        assert!(!format!("{store:?}").contains("s3cret-pw"));
        assert!(!store.url().contains("s3cret-pw"));
        let wrong = format!("redis://:wrong-pw@127.0.0.1:{}", redis.port);
        let e = RedisStore::connect(&wrong, runtime).await.unwrap_err();
        let message = e.to_string();
        assert!(!message.contains("wrong-pw"), "{message}");
        assert!(message.contains(":***@127.0.0.1"), "{message}");
        let nowhere = "redis://:s3cret-pw@127.0.0.1:1";
        let e = RedisStore::connect(nowhere, runtime).await.unwrap_err();
        assert!(!e.to_string().contains("s3cret-pw"), "{e}");
    });
}
