//! [`FaultyStore`]: the in-memory [`Store`] on the virtual clock, with seeded faults:
//! latency on every request, windows in which the store is unavailable, and lost replies
//! (the write is done, the caller hears an error), as a shared store over a network fails.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use ssekit_http::runtime::Runtime;
use ssekit_http::store::{
    Changed, EventsRead, Log, MemoryStore, SessionRecord, Store, StoreError, StoreFuture, TaskLog,
    TaskScope,
};

use crate::world::Sim;

/// The faults a [`FaultyStore`] draws for each request.
///
/// # Example
/// ```
/// let faults = ssekit_sim::StoreFaults { lost_reply: 0.01, ..Default::default() };
/// assert_eq!(faults.max_latency_ms, 5);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct StoreFaults {
    /// Each request takes between 0 and this many virtual milliseconds.
    pub max_latency_ms: u64,
    /// The chance a request's reply is lost after the store did it (the caller gets an
    /// error).
    pub lost_reply: f64,
}

impl Default for StoreFaults {
    fn default() -> Self {
        StoreFaults {
            max_latency_ms: 5,
            lost_reply: 0.0,
        }
    }
}

/// A [`MemoryStore`] on a world's clock, behind seeded faults; [`set_down`](Self::set_down)
/// makes it unavailable until set up again.
#[derive(Clone)]
pub struct FaultyStore {
    inner: MemoryStore,
    sim: Sim,
    faults: StoreFaults,
    down: Arc<AtomicBool>,
    failed: Arc<std::sync::atomic::AtomicU64>,
}

impl FaultyStore {
    /// A store on `sim`'s clock with `faults`.
    pub fn new(sim: Sim, faults: StoreFaults) -> Self {
        FaultyStore {
            inner: MemoryStore::on(sim.clone()),
            sim,
            faults,
            down: Arc::default(),
            failed: Arc::default(),
        }
    }

    /// Requests that failed (an outage, a lost reply) so far.
    pub fn failures(&self) -> u64 {
        self.failed.load(Ordering::SeqCst)
    }

    /// Makes the store unavailable (every request fails after its latency) or available.
    pub fn set_down(&self, down: bool) {
        self.down.store(down, Ordering::SeqCst);
    }

    /// Runs `op` as the network would: after a drawn latency, failing while down, its reply
    /// lost with the drawn chance.
    /// `op` is made (and, on a memory store, done) only once the request reaches the store.
    fn request<'a, T: Send + 'a>(
        &'a self,
        op: impl FnOnce() -> StoreFuture<'a, T> + Send + 'a,
    ) -> StoreFuture<'a, T> {
        Box::pin(async move {
            let (latency, lost) = self.sim.shared.draw(|rng| {
                (
                    rng.u64(..=self.faults.max_latency_ms),
                    rng.f64() < self.faults.lost_reply,
                )
            });
            self.sim.sleep(Duration::from_millis(latency)).await;
            if self.down.load(Ordering::SeqCst) {
                self.failed.fetch_add(1, Ordering::SeqCst);
                return Err(StoreError::new("simulated outage"));
            }
            let reply = op().await;
            if lost {
                self.failed.fetch_add(1, Ordering::SeqCst);
                return Err(StoreError::new("simulated lost reply"));
            }
            reply
        })
    }
}

impl Store for FaultyStore {
    fn create_session<'a>(
        &'a self,
        sid: &'a str,
        record: &'a SessionRecord,
        ttl: Duration,
    ) -> StoreFuture<'a, bool> {
        self.request(move || self.inner.create_session(sid, record, ttl))
    }

    fn update_session<'a>(
        &'a self,
        sid: &'a str,
        record: &'a SessionRecord,
    ) -> StoreFuture<'a, ()> {
        self.request(move || self.inner.update_session(sid, record))
    }

    fn session<'a>(
        &'a self,
        sid: &'a str,
        ttl: Duration,
    ) -> StoreFuture<'a, Option<SessionRecord>> {
        self.request(move || self.inner.session(sid, ttl))
    }

    fn delete_session<'a>(&'a self, sid: &'a str) -> StoreFuture<'a, Option<SessionRecord>> {
        self.request(move || self.inner.delete_session(sid))
    }

    fn start_task<'a>(
        &'a self,
        task_id: &'a str,
        scope: &'a TaskScope,
        lease: Duration,
    ) -> StoreFuture<'a, ()> {
        self.request(move || self.inner.start_task(task_id, scope, lease))
    }

    fn start_task_in_session<'a>(
        &'a self,
        task_id: &'a str,
        scope: &'a TaskScope,
        lease: Duration,
        session_ttl: Duration,
    ) -> StoreFuture<'a, Option<SessionRecord>> {
        // One request, as on Redis (one script): a fault hits both or neither.
        self.request(move || {
            self.inner
                .start_task_in_session(task_id, scope, lease, session_ttl)
        })
    }

    fn renew_task<'a>(&'a self, task_id: &'a str, lease: Duration) -> StoreFuture<'a, ()> {
        self.request(move || self.inner.renew_task(task_id, lease))
    }

    fn append_task<'a>(
        &'a self,
        task_id: &'a str,
        frames: &'a [Bytes],
        finished: bool,
        result_ttl: Duration,
    ) -> StoreFuture<'a, ()> {
        self.request(move || {
            self.inner
                .append_task(task_id, frames, finished, result_ttl)
        })
    }

    fn task_scope<'a>(&'a self, task_id: &'a str) -> StoreFuture<'a, Option<TaskScope>> {
        self.request(move || self.inner.task_scope(task_id))
    }

    fn read_task<'a>(&'a self, task_id: &'a str, after: &'a str) -> StoreFuture<'a, TaskLog> {
        self.request(move || self.inner.read_task(task_id, after))
    }

    fn publish<'a>(
        &'a self,
        stream: &'a str,
        frame: Bytes,
        max_len: usize,
        ttl: Duration,
    ) -> StoreFuture<'a, String> {
        self.request(move || self.inner.publish(stream, frame, max_len, ttl))
    }

    fn read_events<'a>(
        &'a self,
        stream: &'a str,
        after: Option<&'a str>,
        max: usize,
    ) -> StoreFuture<'a, EventsRead> {
        self.request(move || self.inner.read_events(stream, after, max))
    }

    fn changed(&self, log: Log<'_>) -> Changed {
        self.inner.changed(log)
    }
}
