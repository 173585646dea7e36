//! [`World`]: one simulated cluster's executor and clock, and [`Sim`], the
//! [`Runtime`] its code runs on.
//!
//! Everything runs on the thread that calls [`World::run_until`]: the ready task to poll next
//! is drawn from the world's seeded generator, and when no task is ready the clock jumps to
//! the earliest timer. A task belongs to a [`Node`] (the one that spawned it), so a node can
//! be killed: its tasks are dropped where they stand, as a process's are.
//!
//! ```text
//!  run_until ─▶ ready tasks? ─ yes ─▶ poll one, drawn by the seed ─┐
//!                  │ no                                            │
//!                  └▶ next timer ─▶ clock := its deadline, wake ───┘   (none: quiescent)
//! ```

use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::task::{Context, Poll, Wake, Waker};

use ssekit::Instant;
use ssekit_http::runtime::Runtime;

use crate::net::Net;

type Task = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A simulated process: the harness is node 0, servers and clients take others.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Node(pub u32);

impl Node {
    /// The harness: what runs outside any simulated process.
    pub const HARNESS: Node = Node(0);
}

/// How a [`World::run_until`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ran {
    /// The condition held.
    Done,
    /// No task was ready and no timer set: nothing can happen any more.
    Quiescent,
    /// The virtual deadline passed first.
    TimedOut,
    /// The poll budget ran out first (a livelock: tasks keep waking each other).
    Livelock,
}

struct Slot {
    future: Option<Task>,
    node: Node,
    queued: bool,
    generation: u64,
}

#[derive(Default)]
struct State {
    slots: Vec<Option<Slot>>,
    free: Vec<usize>,
    ready: Vec<usize>,
    spawned: VecDeque<(Node, Task)>,
    timers: BTreeMap<(u64, u64), Option<Waker>>,
    next_timer: u64,
    generation: u64,
    polls: u64,
}

pub(crate) struct Shared {
    now: AtomicU64,
    state: Mutex<State>,
    rng: Mutex<fastrand::Rng>,
    pub(crate) net: Net,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        crate::lock(&self.state)
    }

    /// A number from the world's seeded generator.
    pub(crate) fn draw<T>(&self, f: impl FnOnce(&mut fastrand::Rng) -> T) -> T {
        f(&mut crate::lock(&self.rng))
    }

    pub(crate) fn now_ms(&self) -> u64 {
        self.now.load(Ordering::SeqCst)
    }

    /// Wakes `waker` when the clock reaches `at_ms` (a wake that finds nothing to do is
    /// harmless: the woken poll waits again).
    pub(crate) fn wake_at(&self, at_ms: u64, waker: Waker) {
        let mut state = self.lock();
        state.next_timer += 1;
        let key = (at_ms, state.next_timer);
        state.timers.insert(key, Some(waker));
    }
}

thread_local! {
    /// The world being run on this thread, and the node of the task being polled.
    static CURRENT: RefCell<Option<(Weak<Shared>, Node)>> = const { RefCell::new(None) };
}

/// One simulated cluster: its clock, its tasks, its network, all driven from one seed.
///
/// # Example
/// ```
/// use std::sync::{Arc, atomic::{AtomicBool, Ordering}};
/// use ssekit_http::runtime::Runtime;
/// use ssekit_sim::{Node, Ran, World};
///
/// let world = World::new(7);
/// let sim = world.sim();
/// let done = Arc::new(AtomicBool::new(false));
/// let flag = done.clone();
/// world.spawn_on(Node(1), async move {
///     sim.sleep(std::time::Duration::from_secs(3600)).await;
///     flag.store(true, Ordering::SeqCst);
/// });
/// assert_eq!(world.run_until(7_200_000, || done.load(Ordering::SeqCst)), Ran::Done);
/// assert_eq!(world.now(), ssekit::Instant::from_millis(3_600_000)); // no real hour passed
/// ```
pub struct World {
    shared: Arc<Shared>,
}

impl World {
    /// An empty world at time zero whose every choice comes from `seed`.
    pub fn new(seed: u64) -> Self {
        World {
            shared: Arc::new(Shared {
                now: AtomicU64::new(0),
                state: Mutex::new(State::default()),
                rng: Mutex::new(fastrand::Rng::with_seed(seed)),
                net: Net::default(),
            }),
        }
    }

    /// The runtime handle of this world, for servers, clients and stores.
    pub fn sim(&self) -> Sim {
        Sim {
            shared: self.shared.clone(),
        }
    }

    /// The virtual time.
    pub fn now(&self) -> Instant {
        Instant::from_millis(self.shared.now_ms())
    }

    /// A number from the world's seeded generator (for a workload's own choices).
    pub fn draw<T>(&self, f: impl FnOnce(&mut fastrand::Rng) -> T) -> T {
        self.shared.draw(f)
    }

    /// The network.
    pub fn net(&self) -> &Net {
        &self.shared.net
    }

    /// Runs `future` as a task of `node`; what it spawns belongs to `node` too.
    pub fn spawn_on(&self, node: Node, future: impl Future<Output = ()> + Send + 'static) {
        self.shared
            .lock()
            .spawned
            .push_back((node, Box::pin(future)));
    }

    /// Kills `node`: its tasks are dropped where they stand (their sockets close, their
    /// timers go) and its listeners stop accepting.
    pub fn kill(&self, node: Node) {
        self.shared.net.stop_listening(node);
        let dropped: Vec<Task> = {
            let mut state = self.shared.lock();
            let mut dropped = Vec::new();
            let State {
                slots,
                free,
                spawned,
                ready,
                ..
            } = &mut *state;
            for (id, slot) in slots.iter_mut().enumerate() {
                if slot.as_ref().is_some_and(|s| s.node == node) {
                    if let Some(future) = slot.take().and_then(|s| s.future) {
                        dropped.push(future);
                    }
                    free.push(id);
                }
            }
            spawned.retain(|(n, _)| *n != node);
            let ids: Vec<usize> = ready
                .iter()
                .copied()
                .filter(|id| slots.get(*id).is_some_and(Option::is_some))
                .collect();
            *ready = ids;
            dropped
        };
        // Dropped outside the lock, as the node (a drop may wake or spawn). A killed process
        // runs nothing more: what its destructors spawn (a last store write, a goodbye) is
        // discarded, as SIGKILL would have it.
        self.enter(node, || drop(dropped));
        let discarded: VecDeque<(Node, Task)> = {
            let mut state = self.shared.lock();
            let (gone, kept) = std::mem::take(&mut state.spawned)
                .into_iter()
                .partition(|(n, _)| *n == node);
            state.spawned = kept;
            gone
        };
        self.enter(node, || drop(discarded));
    }

    /// The tasks alive, by node.
    pub fn tasks_by_node(&self) -> BTreeMap<Node, usize> {
        let state = self.shared.lock();
        let mut count = BTreeMap::new();
        for slot in state.slots.iter().flatten() {
            *count.entry(slot.node).or_default() += 1;
        }
        count
    }

    /// Polls of tasks so far.
    pub fn polls(&self) -> u64 {
        self.shared.lock().polls
    }

    /// Runs the world until `done` holds, nothing can happen any more, the virtual clock
    /// passes `deadline_ms`, or 10 million polls were made.
    pub fn run_until(&self, deadline_ms: u64, mut done: impl FnMut() -> bool) -> Ran {
        let budget = self.polls() + 10_000_000;
        loop {
            if done() {
                return Ran::Done;
            }
            self.admit_spawned();
            let next = {
                let mut state = self.shared.lock();
                if state.polls >= budget {
                    return Ran::Livelock;
                }
                if state.ready.is_empty() {
                    None
                } else {
                    let at = self.shared.draw(|rng| rng.usize(..state.ready.len()));
                    let id = state.ready.swap_remove(at);
                    state.polls += 1;
                    // A task killed since it was woken leaves no slot: nothing to poll.
                    Some(
                        state
                            .slots
                            .get_mut(id)
                            .and_then(Option::as_mut)
                            .map(|slot| {
                                slot.queued = false;
                                (id, slot.node, slot.generation, slot.future.take())
                            }),
                    )
                }
            };
            match next {
                Some(Some((id, node, generation, Some(mut future)))) => {
                    let waker = Waker::from(Arc::new(TaskWaker {
                        id,
                        generation,
                        shared: Arc::downgrade(&self.shared),
                    }));
                    let mut cx = Context::from_waker(&waker);
                    let polled = self.enter(node, || future.as_mut().poll(&mut cx));
                    let mut state = self.shared.lock();
                    let alive = state
                        .slots
                        .get(id)
                        .and_then(Option::as_ref)
                        .is_some_and(|s| s.generation == generation);
                    if polled.is_ready() || !alive {
                        if alive && let Some(slot) = state.slots.get_mut(id) {
                            *slot = None;
                            state.free.push(id);
                        }
                        drop(state);
                        self.enter(node, || drop(future));
                    } else if let Some(Some(slot)) = state.slots.get_mut(id) {
                        slot.future = Some(future);
                    }
                }
                Some(_) => {}
                None => {
                    let fired = {
                        let mut state = self.shared.lock();
                        if !state.spawned.is_empty() {
                            continue;
                        }
                        let Some((&(at, _), _)) = state.timers.first_key_value() else {
                            return Ran::Quiescent;
                        };
                        if at > deadline_ms {
                            self.shared.now.store(deadline_ms, Ordering::SeqCst);
                            return Ran::TimedOut;
                        }
                        self.shared.now.store(at, Ordering::SeqCst);
                        let mut fired = Vec::new();
                        while let Some(entry) = state.timers.first_entry() {
                            if entry.key().0 > at {
                                break;
                            }
                            fired.push(entry.remove());
                        }
                        fired
                    };
                    fired.into_iter().flatten().for_each(Waker::wake);
                }
            }
        }
    }

    fn admit_spawned(&self) {
        let mut state = self.shared.lock();
        while let Some((node, future)) = state.spawned.pop_front() {
            state.generation += 1;
            let slot = Slot {
                future: Some(future),
                node,
                queued: true,
                generation: state.generation,
            };
            let id = match state.free.pop() {
                Some(id) => {
                    if let Some(place) = state.slots.get_mut(id) {
                        *place = Some(slot);
                    }
                    id
                }
                None => {
                    state.slots.push(Some(slot));
                    state.slots.len() - 1
                }
            };
            state.ready.push(id);
        }
    }

    /// Runs `f` as `node` inside this world (spawns and `Sim::default()` find it).
    fn enter<T>(&self, node: Node, f: impl FnOnce() -> T) -> T {
        let previous = CURRENT.with(|c| c.replace(Some((Arc::downgrade(&self.shared), node))));
        let out = f();
        CURRENT.with(|c| *c.borrow_mut() = previous);
        out
    }
}

impl Drop for World {
    /// Drops what is left of the run (its tasks hold the world, so it would never be
    /// freed): tasks, what they spawn as they go, timers.
    fn drop(&mut self) {
        loop {
            let (tasks, spawned, timers) = {
                let mut state = self.shared.lock();
                let tasks: Vec<Task> = state
                    .slots
                    .iter_mut()
                    .filter_map(|slot| slot.take().and_then(|s| s.future))
                    .collect();
                (
                    tasks,
                    std::mem::take(&mut state.spawned),
                    std::mem::take(&mut state.timers),
                )
            };
            if tasks.is_empty() && spawned.is_empty() && timers.is_empty() {
                break;
            }
            self.enter(Node::HARNESS, || drop((tasks, spawned, timers)));
        }
    }
}

struct TaskWaker {
    id: usize,
    generation: u64,
    shared: Weak<Shared>,
}

impl Wake for TaskWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let Some(shared) = self.shared.upgrade() else {
            return;
        };
        let mut state = shared.lock();
        if let Some(Some(slot)) = state.slots.get_mut(self.id)
            && slot.generation == self.generation
            && !slot.queued
        {
            slot.queued = true;
            state.ready.push(self.id);
        }
    }
}

/// The [`Runtime`] of a [`World`]: its virtual clock, its timers, its tasks. `Sim::default()`
/// is the world being run on this thread (it panics outside one: a harness bug).
///
/// # Example
/// See [`World`].
#[derive(Clone)]
pub struct Sim {
    pub(crate) shared: Arc<Shared>,
}

impl Sim {
    /// The world being run on this thread, and the node of the task being polled.
    pub(crate) fn current() -> Option<(Sim, Node)> {
        CURRENT.with(|c| {
            c.borrow().as_ref().and_then(|(shared, node)| {
                Some((
                    Sim {
                        shared: shared.upgrade()?,
                    },
                    *node,
                ))
            })
        })
    }

    /// The node whose task is being polled (the harness outside a poll).
    pub fn node() -> Node {
        Sim::current().map_or(Node::HARNESS, |(_, node)| node)
    }
}

impl Default for Sim {
    fn default() -> Self {
        match Sim::current() {
            Some((sim, _)) => sim,
            None => panic!("Sim::default() outside a running World"),
        }
    }
}

impl std::fmt::Debug for Sim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Sim(t={} ms)", self.shared.now_ms())
    }
}

impl<F: Future<Output = ()> + Send + 'static> hyper::rt::Executor<F> for Sim {
    fn execute(&self, future: F) {
        self.spawn(future);
    }
}

impl Runtime for Sim {
    type Sleep = Sleep;

    fn now(&self) -> Instant {
        Instant::from_millis(self.shared.now_ms())
    }

    fn sleep_until(&self, at: Instant) -> Sleep {
        Sleep {
            shared: self.shared.clone(),
            at: u64::try_from(at.since_origin().as_millis()).unwrap_or(u64::MAX),
            key: None,
        }
    }

    fn spawn<F>(&self, future: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let node = Sim::node();
        self.shared
            .lock()
            .spawned
            .push_back((node, Box::pin(future)));
    }
}

/// A timer of the virtual clock.
pub struct Sleep {
    shared: Arc<Shared>,
    at: u64,
    key: Option<(u64, u64)>,
}

impl Future for Sleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.shared.now_ms() >= self.at {
            self.cancel();
            return Poll::Ready(());
        }
        let mut state = self.shared.lock();
        let key = match self.key {
            Some(key) => key,
            None => {
                state.next_timer += 1;
                (self.at, state.next_timer)
            }
        };
        state.timers.insert(key, Some(cx.waker().clone()));
        drop(state);
        self.key = Some(key);
        Poll::Pending
    }
}

impl Sleep {
    fn cancel(&mut self) {
        if let Some(key) = self.key.take() {
            self.shared.lock().timers.remove(&key);
        }
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        self.cancel();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_task_killed_after_its_wake_does_not_stop_the_others() {
        // Two tasks woken by timers at 5 ms; node 1's is killed before it runs. Node 2's must
        // still run, whichever ready entry the seed draws first.
        for seed in 0..8 {
            let world = World::new(seed);
            let done = Arc::new(AtomicBool::new(false));
            for node in [Node(1), Node(2)] {
                let (sim, flag) = (world.sim(), done.clone());
                world.spawn_on(node, async move {
                    sim.sleep(Duration::from_millis(5)).await;
                    flag.store(node == Node(2), Ordering::SeqCst);
                    std::future::pending::<()>().await;
                });
            }
            let clock = world.sim();
            let woken = world.run_until(1_000, || clock.now() >= Instant::from_millis(5));
            assert_eq!(woken, Ran::Done);
            world.kill(Node(1));
            assert_eq!(world.tasks_by_node().get(&Node(1)), None);
            let ran = world.run_until(1_000, || done.load(Ordering::SeqCst));
            assert_eq!(ran, Ran::Done, "seed {seed}");
        }
    }

    #[test]
    fn a_dropped_world_frees_its_tasks_and_itself() {
        let world = World::new(3);
        let weak = Arc::downgrade(&world.shared);
        for node in [Node(1), Node(2)] {
            let sim = world.sim();
            world.spawn_on(node, async move {
                // Holds the world, spawns more that hold it, and never ends.
                sim.spawn({
                    let sim = sim.clone();
                    async move { sim.sleep(Duration::from_secs(1)).await }
                });
                std::future::pending::<()>().await;
            });
        }
        assert_eq!(world.run_until(10, || false), Ran::TimedOut);
        drop(world);
        assert!(weak.upgrade().is_none(), "a task kept the world alive");
    }

    #[test]
    fn a_world_with_nothing_to_do_is_quiescent_and_time_jumps_to_timers() {
        let world = World::new(1);
        let sim = world.sim();
        world.spawn_on(
            Node(1),
            async move { sim.sleep(Duration::from_secs(90)).await },
        );
        assert_eq!(world.run_until(u64::MAX, || false), Ran::Quiescent);
        assert_eq!(world.now(), Instant::from_millis(90_000));
    }
}
