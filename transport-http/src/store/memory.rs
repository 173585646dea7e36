//! [`MemoryStore`]: the [`Store`] of one process.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use ssekit::Instant;

use crate::runtime::Runtime;

use bytes::Bytes;

use super::{
    Changed, EventsRead, Log, LoggedEvent, SessionRecord, Store, StoreFuture, TaskLog, TaskScope,
    Waiters,
};

/// How long a task's scope and log outlive its last lease renewal, as in `ssekit-redis`.
const LOST_GRACE: Duration = Duration::from_secs(60);

/// A [`Store`] in this process's memory, with the same semantics as the Redis one
/// (expiry, leases, event ids `N-0` in publication order): for tests, for embedding
/// several servers in one process, and for a [`SharedBroadcast`](super::SharedBroadcast)
/// without Redis. Expired entries are dropped when met and in a sweep every 256 writes.
///
/// # Example
/// ```
/// # smol::block_on(async {
/// use std::time::Duration;
/// use ssekit_http::store::{MemoryStore, Store};
/// let store = MemoryStore::default();
/// let id = store.publish("news", "data: hi\n\n".into(), 100, Duration::from_secs(60)).await?;
/// assert_eq!(id, "1-0");
/// let read = store.read_events("news", Some("0-0"), 10).await?;
/// assert_eq!(read.events[0].with_id(), "id: 1-0\ndata: hi\n\n");
/// # Ok::<(), ssekit_http::store::StoreError>(()) }).unwrap();
/// ```
#[derive(Clone)]
pub struct MemoryStore {
    state: Arc<Mutex<State>>,
    waiters: Arc<Waiters>,
    clock: Clock,
}

/// Where a [`MemoryStore`] reads the time: the process's monotonic clock, or a runtime's.
type Clock = Arc<dyn Fn() -> Instant + Send + Sync>;

impl Default for MemoryStore {
    fn default() -> Self {
        let origin = std::time::Instant::now();
        MemoryStore::with_clock(Arc::new(move || {
            Instant::from_millis(u64::try_from(origin.elapsed().as_millis()).unwrap_or(u64::MAX))
        }))
    }
}

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryStore")
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Default)]
struct State {
    sessions: HashMap<String, (SessionRecord, Instant)>,
    tasks: HashMap<String, Task>,
    events: HashMap<String, Events>,
    writes: u32,
}

#[derive(Debug)]
struct Task {
    scope: TaskScope,
    frames: Vec<Bytes>,
    finished: bool,
    lease_until: Instant,
    expires: Instant,
}

#[derive(Debug, Default)]
struct Events {
    log: VecDeque<(u64, Bytes)>,
    last: u64,
    expires: Option<Instant>,
}

fn parse_id(id: &str) -> Option<u64> {
    let (seq, rest) = id.split_once('-')?;
    rest.parse::<u64>().ok()?;
    seq.parse().ok()
}

impl State {
    /// Counts a write; every 256th drops what has expired.
    fn wrote(&mut self, now: Instant) {
        self.writes = self.writes.wrapping_add(1);
        if self.writes.is_multiple_of(256) {
            self.sessions.retain(|_, (_, expires)| *expires > now);
            self.tasks.retain(|_, task| task.expires > now);
            self.events
                .retain(|_, events| events.expires.is_none_or(|e| e > now));
        }
    }

    fn task(&mut self, id: &str, now: Instant) -> Option<&mut Task> {
        if self.tasks.get(id).is_some_and(|t| t.expires <= now) {
            self.tasks.remove(id);
        }
        self.tasks.get_mut(id)
    }
}

impl MemoryStore {
    /// A store whose leases, TTLs and expiries run on `runtime`'s clock instead of the
    /// process's: a simulation's virtual time, a test's manual clock.
    ///
    /// # Example
    /// ```
    /// # fn on<R: ssekit_http::runtime::Runtime>(runtime: R) {
    /// let store = ssekit_http::store::MemoryStore::on(runtime);
    /// # let _ = store; }
    /// ```
    pub fn on<R: Runtime>(runtime: R) -> Self {
        MemoryStore::with_clock(Arc::new(move || runtime.now()))
    }

    fn with_clock(clock: Clock) -> Self {
        MemoryStore {
            state: Arc::default(),
            waiters: Arc::default(),
            clock,
        }
    }

    fn now(&self) -> Instant {
        (self.clock)()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        crate::sync::lock(&self.state)
    }
}

impl Store for MemoryStore {
    fn create_session<'a>(
        &'a self,
        sid: &'a str,
        record: &'a SessionRecord,
        ttl: Duration,
    ) -> StoreFuture<'a, bool> {
        let now = self.now();
        let mut state = self.lock();
        state.wrote(now);
        let live = state.sessions.get(sid).is_some_and(|(_, e)| *e > now);
        if !live {
            state
                .sessions
                .insert(sid.to_owned(), (record.clone(), now.saturating_add(ttl)));
        }
        Box::pin(std::future::ready(Ok(!live)))
    }

    fn update_session<'a>(
        &'a self,
        sid: &'a str,
        record: &'a SessionRecord,
    ) -> StoreFuture<'a, ()> {
        let now = self.now();
        if let Some((stored, expires)) = self.lock().sessions.get_mut(sid)
            && *expires > now
        {
            *stored = record.clone();
        }
        Box::pin(std::future::ready(Ok(())))
    }

    fn session<'a>(
        &'a self,
        sid: &'a str,
        ttl: Duration,
    ) -> StoreFuture<'a, Option<SessionRecord>> {
        let now = self.now();
        let mut state = self.lock();
        let found = match state.sessions.get_mut(sid) {
            Some((record, expires)) if *expires > now => {
                *expires = now.saturating_add(ttl);
                Some(record.clone())
            }
            Some(_) => {
                state.sessions.remove(sid);
                None
            }
            None => None,
        };
        Box::pin(std::future::ready(Ok(found)))
    }

    fn delete_session<'a>(&'a self, sid: &'a str) -> StoreFuture<'a, Option<SessionRecord>> {
        let now = self.now();
        let removed = self.lock().sessions.remove(sid);
        let live = removed.filter(|(_, e)| *e > now).map(|(record, _)| record);
        Box::pin(std::future::ready(Ok(live)))
    }

    fn start_task<'a>(
        &'a self,
        task_id: &'a str,
        scope: &'a TaskScope,
        lease: Duration,
    ) -> StoreFuture<'a, ()> {
        let now = self.now();
        let mut state = self.lock();
        state.wrote(now);
        state.tasks.insert(
            task_id.to_owned(),
            Task {
                scope: scope.clone(),
                frames: Vec::new(),
                finished: false,
                lease_until: now.saturating_add(lease),
                expires: now.saturating_add(lease + LOST_GRACE),
            },
        );
        Box::pin(std::future::ready(Ok(())))
    }

    fn renew_task<'a>(&'a self, task_id: &'a str, lease: Duration) -> StoreFuture<'a, ()> {
        let now = self.now();
        if let Some(task) = self.lock().task(task_id, now)
            && !task.finished
        {
            task.lease_until = now.saturating_add(lease);
            task.expires = now.saturating_add(lease + LOST_GRACE);
        }
        Box::pin(std::future::ready(Ok(())))
    }

    fn append_task<'a>(
        &'a self,
        task_id: &'a str,
        frames: &'a [Bytes],
        finished: bool,
        result_ttl: Duration,
    ) -> StoreFuture<'a, ()> {
        let now = self.now();
        if let Some(task) = self.lock().task(task_id, now) {
            task.frames.extend_from_slice(frames);
            if finished {
                task.finished = true;
                task.lease_until = now;
                task.expires = now.saturating_add(result_ttl);
            }
        }
        self.waiters.wake(&Log::Task(task_id).name());
        Box::pin(std::future::ready(Ok(())))
    }

    fn task_scope<'a>(&'a self, task_id: &'a str) -> StoreFuture<'a, Option<TaskScope>> {
        let scope = self
            .lock()
            .task(task_id, self.now())
            .map(|t| t.scope.clone());
        Box::pin(std::future::ready(Ok(scope)))
    }

    fn read_task<'a>(&'a self, task_id: &'a str, after: &'a str) -> StoreFuture<'a, TaskLog> {
        let now = self.now();
        let from = after.parse::<usize>().unwrap_or(0);
        let log = match self.lock().task(task_id, now) {
            Some(task) => TaskLog {
                frames: task.frames.get(from..).unwrap_or_default().to_vec(),
                next: task.frames.len().max(from).to_string(),
                finished: task.finished,
                producer_alive: !task.finished && task.lease_until > now,
            },
            // Gone (expired with its producer): nothing more will come.
            None => TaskLog {
                frames: Vec::new(),
                next: after.to_owned(),
                finished: false,
                producer_alive: false,
            },
        };
        Box::pin(std::future::ready(Ok(log)))
    }

    fn publish<'a>(
        &'a self,
        stream: &'a str,
        frame: Bytes,
        max_events: usize,
        ttl: Duration,
    ) -> StoreFuture<'a, String> {
        let now = self.now();
        let mut state = self.lock();
        state.wrote(now);
        let events = state.events.entry(stream.to_owned()).or_default();
        if events.expires.is_some_and(|e| e <= now) {
            events.log.clear();
        }
        events.last += 1;
        events.log.push_back((events.last, frame));
        while events.log.len() > max_events.max(1) {
            events.log.pop_front();
        }
        events.expires = Some(now.saturating_add(ttl));
        let id = format!("{}-0", events.last);
        drop(state);
        self.waiters.wake(&Log::Events(stream).name());
        Box::pin(std::future::ready(Ok(id)))
    }

    fn read_events<'a>(
        &'a self,
        stream: &'a str,
        after: Option<&'a str>,
        limit: usize,
    ) -> StoreFuture<'a, EventsRead> {
        let state = self.lock();
        let events = state.events.get(stream);
        let last_id = events.map_or(0, |e| e.last);
        let read = match after.map(|a| parse_id(a).unwrap_or(0)) {
            None => EventsRead {
                events: Vec::new(),
                last: format!("{last_id}-0"),
                gap: false,
            },
            Some(after) => {
                let first = events.and_then(|e| e.log.front()).map(|(seq, _)| *seq);
                let found: Vec<LoggedEvent> = events
                    .into_iter()
                    .flat_map(|e| e.log.iter())
                    .filter(|(seq, _)| *seq > after)
                    .take(limit.max(1))
                    .map(|(seq, frame)| LoggedEvent {
                        id: format!("{seq}-0"),
                        frame: frame.clone(),
                    })
                    .collect();
                let last = found
                    .last()
                    .map_or_else(|| format!("{after}-0"), |e| e.id.clone());
                EventsRead {
                    events: found,
                    last,
                    gap: after != 0 && first.is_some_and(|first| first > after.saturating_add(1)),
                }
            }
        };
        Box::pin(std::future::ready(Ok(read)))
    }

    fn changed(&self, log: Log<'_>) -> Changed {
        self.waiters.wait(log.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block<T>(f: StoreFuture<'_, T>) -> T {
        futures_lite::future::block_on(f).unwrap()
    }

    #[test]
    fn sessions_expire_and_are_refreshed_by_use() {
        let store = MemoryStore::default();
        let record = SessionRecord {
            env: "e".into(),
            task: serde_json::json!(1),
            setup: None,
        };
        let short = Duration::from_millis(30);
        assert!(block(store.create_session("s", &record, short)));
        assert!(!block(store.create_session("s", &record, short)));
        std::thread::sleep(Duration::from_millis(20));
        assert!(block(store.session("s", short)).is_some(), "refreshed");
        std::thread::sleep(Duration::from_millis(20));
        assert!(block(store.session("s", short)).is_some(), "still live");
        std::thread::sleep(Duration::from_millis(40));
        assert!(block(store.session("s", short)).is_none(), "expired");
    }

    #[test]
    fn a_task_log_reads_in_order_and_its_lease_lapses() {
        let store = MemoryStore::default();
        let scope = TaskScope::new("s", "t");
        block(store.start_task("t1", &scope, Duration::from_millis(30)));
        block(store.append_task("t1", &["a".into()], false, Duration::ZERO));
        let log = block(store.read_task("t1", "0"));
        assert_eq!((log.frames.len(), log.is_running()), (1, true));
        let next = block(store.read_task("t1", &log.next));
        assert!(next.frames.is_empty());
        std::thread::sleep(Duration::from_millis(40));
        let lapsed = block(store.read_task("t1", &log.next));
        assert!(!lapsed.producer_alive && !lapsed.finished);
        block(store.start_task("t2", &scope, Duration::from_secs(5)));
        block(store.append_task(
            "t2",
            &["a".into(), "end".into()],
            true,
            Duration::from_secs(5),
        ));
        let done = block(store.read_task("t2", "0"));
        assert!(done.finished && !done.producer_alive && done.frames.len() == 2);
    }

    #[test]
    fn events_keep_the_latest_and_replay_after_an_id() {
        let store = MemoryStore::default();
        let ttl = Duration::from_secs(5);
        for n in 0..5 {
            block(store.publish("s", Bytes::from(format!("data: {n}\n\n")), 3, ttl));
        }
        let all = block(store.read_events("s", Some("0-0"), 10));
        let ids: Vec<_> = all.events.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(ids, ["3-0", "4-0", "5-0"]);
        assert_eq!(
            block(store.read_events("s", Some("4-0"), 10)).events.len(),
            1
        );
        assert_eq!(block(store.read_events("s", None, 10)).last, "5-0");
    }
}
