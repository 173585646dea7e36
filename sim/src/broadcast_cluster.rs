//! The broadcast workload: a publisher appends numbered events to a `SharedBroadcast` log in
//! the [`FaultyStore`]; several instances serve it at `/events` behind a balancer; clients
//! (`EventSource`, reconnecting with `Last-Event-ID`) read it through cuts, refusals, an
//! instance killed and restarted, and a store outage.
//!
//! Checked after every run (a violation names the seed and the subscriber's story):
//! - each subscriber sees the events in order, never one twice, never one that was not
//!   published, and never a jump without a `gap` event before it;
//! - every subscriber that held a connection for [`SETTLED`] before the last event was
//!   published receives it (liveness) before the virtual deadline: by then the stream told
//!   it where it starts, so no later cut may lose what followed (one that only connects
//!   afterwards, with no id, rightly waits for events from then on).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_lite::StreamExt;
use ssekit::client::ReconnectConfig;
use ssekit::Event;
use ssekit_http::client::{EventSource, Item};
use ssekit_http::runtime::{Frames, Runtime};
use ssekit_http::server::{gap_event, response, AnyBody, SseBody};
use ssekit_http::store::{SharedBroadcast, Store, SubscribeError};

use crate::{lock, FaultyStore, NetFaults, Node, Ran, Sim, StoreFaults, World};

/// What one run does.
///
/// # Example
/// ```
/// assert_eq!(ssekit_sim::broadcast_cluster::Scenario::default().events, 60);
/// ```
#[derive(Clone, Debug)]
pub struct Scenario {
    /// Instances serving `/events`.
    pub servers: u32,
    /// Subscribers.
    pub subscribers: u32,
    /// Events published, one every 20-200 ms.
    pub events: u32,
    /// The log's length (`SharedBroadcast::max_events`): a subscriber further behind meets
    /// a gap.
    pub kept: usize,
    /// The network's faults.
    pub net: NetFaults,
    /// The store's faults.
    pub store: StoreFaults,
}

impl Default for Scenario {
    fn default() -> Self {
        Scenario {
            servers: 3,
            subscribers: 4,
            events: 60,
            kept: 16,
            net: NetFaults {
                refuse: 0.05,
                cut: 0.3,
                cut_within: 600,
                max_read: 256,
                buffer: 4 << 10,
                delay_ms: 20,
            },
            store: StoreFaults {
                max_latency_ms: 5,
                lost_reply: 0.0,
            },
        }
    }
}

/// What a run did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// Events delivered to subscribers, in all.
    pub delivered: u64,
    /// Gap events delivered.
    pub gaps: u64,
    /// Connections made and cut.
    pub connections: (u64, u64),
    /// Task polls.
    pub polls: u64,
}

#[derive(Default)]
struct Seen {
    /// (event type, data) in order of arrival.
    events: Vec<(String, String)>,
    story: Vec<String>,
    /// Its connections: when each was made and, once it ended, when (virtual ms).
    connections: Vec<(u64, Option<u64>)>,
}

const STREAM: &str = "news";

/// How long a connection must have lasted for its first frames (the start position, `id:`)
/// to have reached the subscriber: the store's latency, with room.
pub const SETTLED: Duration = Duration::from_millis(100);

fn start_server(world: &World, i: u32, store: &Arc<dyn Store>, kept: usize) {
    let sim = world.sim();
    let listener = world.net().listen(Node(1 + i), &format!("b{i}"));
    let broadcast = SharedBroadcast::new(Arc::clone(store), STREAM).max_events(kept);
    world.spawn_on(Node(1 + i), async move {
        let service =
            hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
                let (broadcast, sim) = (broadcast.clone(), Sim::default());
                async move {
                    let last = req
                        .headers()
                        .get("last-event-id")
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_owned);
                    let frames: Frames =
                        match broadcast.subscribe(last.as_deref(), sim.clone()).await {
                            Ok(frames) => frames,
                            Err(SubscribeError::Gap) => {
                                // Said, then what the log still holds.
                                let rest = match broadcast.subscribe(Some("0-0"), sim.clone()).await
                                {
                                    Ok(rest) => rest,
                                    Err(_) => return Ok(unavailable()),
                                };
                                let gap = gap_event(None, last.as_deref());
                                Box::pin(futures_lite::stream::once(gap).chain(rest))
                            }
                            Err(_) => return Ok(unavailable()),
                        };
                    let body = SseBody::from_bytes_on(sim, frames);
                    Ok::<_, std::convert::Infallible>(response(body).map(AnyBody::from))
                }
            });
        listener.serve(sim, service).await;
    });
}

fn unavailable() -> http::Response<AnyBody> {
    let mut resp = http::Response::new(AnyBody::from("store unavailable"));
    *resp.status_mut() = http::StatusCode::SERVICE_UNAVAILABLE;
    resp
}

async fn subscriber(seen: Arc<Mutex<Seen>>, last: String, seed: u64) {
    let sim = Sim::default();
    let reconnect = ReconnectConfig::default()
        .max_attempts(None)
        .max_delay(Duration::from_secs(2))
        .jitter_seed(seed);
    let Ok(source) = EventSource::<Sim>::get("http://lb/events") else {
        return;
    };
    let mut items = source.reconnect(reconnect).stream();
    while let Some(item) = items.next().await {
        let at = sim.now().since_origin().as_millis();
        let mut seen = lock(&seen);
        match item {
            Ok(Item::Event(event)) => {
                seen.story.push(format!(
                    "{at} ms: {} {:?} id {:?}",
                    event.event_type(),
                    event.data(),
                    event.id()
                ));
                let done = event.event_type() == "message" && event.data() == last;
                seen.events
                    .push((event.event_type().to_owned(), event.data().to_owned()));
                if done {
                    return;
                }
            }
            Ok(Item::Comment(_)) => {}
            Ok(Item::Connected { .. }) => {
                seen.connections.push((at as u64, None));
                seen.story.push(format!("{at} ms: connected"));
            }
            Ok(Item::Disconnected(ended)) => {
                if let Some((_, end @ None)) = seen.connections.last_mut() {
                    *end = Some(at as u64);
                }
                seen.story.push(format!("{at} ms: Disconnected({ended:?})"));
            }
            Ok(other) => seen.story.push(format!("{at} ms: {other:?}")),
            Err(e) => seen.story.push(format!("{at} ms: error {e}")),
        }
    }
}

/// Runs `scenario` from `seed` and checks the invariants.
///
/// # Example
/// ```
/// let report = ssekit_sim::broadcast_cluster::run(1, &Default::default()).unwrap();
/// assert!(report.delivered > 0);
/// ```
pub fn run(seed: u64, scenario: &Scenario) -> Result<Report, String> {
    let world = World::new(seed);
    world.net().set_faults(scenario.net);
    let hosts: Vec<String> = (0..scenario.servers).map(|i| format!("b{i}")).collect();
    let names: Vec<&str> = hosts.iter().map(String::as_str).collect();
    world.net().balance("lb", &names);
    let faulty = FaultyStore::new(world.sim(), scenario.store);
    let store: Arc<dyn Store> = Arc::new(faulty.clone());
    for i in 0..scenario.servers {
        start_server(&world, i, &store, scenario.kept);
    }
    let last = (scenario.events - 1).to_string();
    let subs: Vec<Arc<Mutex<Seen>>> = (0..scenario.subscribers)
        .map(|s| {
            let seen = Arc::new(Mutex::new(Seen::default()));
            world.spawn_on(
                Node(100 + s),
                subscriber(seen.clone(), last.clone(), seed ^ u64::from(s)),
            );
            seen
        })
        .collect();
    // The publisher: a first event once subscribers had time to connect, then the rest.
    let published = Arc::new(Mutex::new(0u32));
    let last_at = Arc::new(Mutex::new(0u64));
    let last_published = last_at.clone();
    let (publisher, count, total) = (
        SharedBroadcast::new(Arc::clone(&store), STREAM).max_events(scenario.kept),
        published.clone(),
        scenario.events,
    );
    let waits: Vec<u64> = (0..total)
        .map(|_| world.draw(|rng| rng.u64(20..200)))
        .collect();
    world.spawn_on(Node(50), async move {
        let sim = Sim::default();
        sim.sleep(Duration::from_millis(500)).await;
        for (n, wait) in waits.into_iter().enumerate() {
            let event = Event::message(n.to_string());
            // Retried until the store takes it: the log is the publisher's record.
            while publisher.publish(&event).await.is_err() {
                sim.sleep(Duration::from_millis(100)).await;
            }
            *lock(&count) = n as u32 + 1;
            *lock(&last_published) = sim.now().since_origin().as_millis() as u64;
            sim.sleep(Duration::from_millis(wait)).await;
        }
    });
    let victim = world.draw(|rng| rng.u32(..scenario.servers));
    let kill_at = world.draw(|rng| rng.u64(600..4_000));
    let back_at = kill_at + world.draw(|rng| rng.u64(200..3_000));
    let down_at = world.draw(|rng| rng.u64(600..6_000));
    let up_at = down_at + world.draw(|rng| rng.u64(100..2_000));
    let mut plan = [(kill_at, 0), (back_at, 1), (down_at, 2), (up_at, 3)];
    plan.sort();
    let all_done = || {
        subs.iter()
            .all(|s| lock(s).events.last().is_some_and(|(_, d)| *d == last))
    };
    for (at, what) in plan {
        if world.run_until(at, all_done) == Ran::Done {
            break;
        }
        match what {
            0 => world.kill(Node(1 + victim)),
            1 => start_server(&world, victim, &store, scenario.kept),
            2 => faulty.set_down(true),
            _ => faulty.set_down(false),
        }
    }
    faulty.set_down(false);
    let ran = world.run_until(600_000, all_done);
    let published = *lock(&published);
    let mut report = Report {
        connections: world.net().counts(),
        polls: world.polls(),
        ..Report::default()
    };
    for (s, seen) in subs.iter().enumerate() {
        let seen = lock(seen);
        let story = || seen.story.join("\n    ");
        let mut previous: Option<u32> = None;
        let mut gap_since = false;
        for (kind, data) in &seen.events {
            if kind == "gap" {
                gap_since = true;
                report.gaps += 1;
                continue;
            }
            let Ok(n) = data.parse::<u32>() else {
                return Err(format!(
                    "seed {seed}: subscriber {s} got {data:?}, never published:\n    {}",
                    story()
                ));
            };
            if n >= published {
                return Err(format!(
                    "seed {seed}: subscriber {s} got event {n} of {published} published:\n    {}",
                    story()
                ));
            }
            if let Some(p) = previous {
                if n <= p {
                    return Err(format!(
                        "seed {seed}: subscriber {s} got {n} after {p}:\n    {}",
                        story()
                    ));
                }
                if n > p + 1 && !gap_since {
                    return Err(format!("seed {seed}: subscriber {s} jumped from {p} to {n} without a gap event:\n    {}", story()));
                }
            }
            previous = Some(n);
            gap_since = false;
            report.delivered += 1;
        }
        let settled = SETTLED.as_millis() as u64;
        let last_at = *lock(&last_at);
        let owed = seen.connections.iter().any(|(from, to)| {
            *from + settled <= last_at && to.is_none_or(|to| to >= *from + settled)
        });
        if ran != Ran::Done && owed && previous != Some(published.saturating_sub(1)) {
            return Err(format!(
                "seed {seed}: subscriber {s} did not get the last event ({ran:?} at {} ms):\n    {}",
                world.now().since_origin().as_millis(),
                story()
            ));
        }
    }
    Ok(report)
}
