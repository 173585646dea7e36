//! [`Waiters`]: the local waiters of each log, for a [`Store`](super::Store)'s
//! [`changed`](super::Store::changed).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;

use super::Changed;

/// The futures waiting for a change of each named log, woken by name; an entry lives while
/// someone waits on it. A store implementation keeps one and wakes it when a change is
/// announced (Redis: a `PUBLISH` on the instance's subscription).
///
/// # Example
/// ```
/// # smol::block_on(async {
/// use std::sync::Arc;
/// let waiters = Arc::new(ssekit_http::store::Waiters::default());
/// let changed = waiters.wait("task:1"); // registered now, before any poll
/// waiters.wake("task:2");
/// assert_eq!(waiters.waiting(), 1);
/// waiters.wake("task:1");
/// changed.await;
/// assert_eq!(waiters.waiting(), 0);
/// # });
/// ```
#[derive(Debug, Default)]
pub struct Waiters {
    map: Mutex<HashMap<String, (Arc<Notify>, usize)>>,
}

impl Waiters {
    /// A future that completes at the next [`wake`](Self::wake) of `name` (or
    /// [`wake_all`](Self::wake_all)) after this call, polled or not.
    ///
    /// # Example
    /// See [`Waiters`].
    pub fn wait(self: &Arc<Self>, name: impl Into<String>) -> Changed {
        let name = name.into();
        let notify = {
            let mut map = self.lock();
            let entry = map
                .entry(name.clone())
                .or_insert_with(|| (Arc::new(Notify::new()), 0));
            entry.1 += 1;
            Arc::clone(&entry.0)
        };
        let guard = Waiting {
            waiters: Arc::clone(self),
            name,
        };
        // Registered now: `notify_waiters` reaches every future made before it.
        let notified = notify.notified_owned();
        Box::pin(async move {
            let _guard = guard;
            notified.await;
        })
    }

    /// Wakes the waiters of `name`.
    ///
    /// # Example
    /// See [`Waiters`].
    pub fn wake(&self, name: &str) {
        if let Some((notify, _)) = self.lock().get(name) {
            notify.notify_waiters();
        }
    }

    /// Wakes every waiter (their logs may have changed unseen: the store reconnected).
    ///
    /// # Example
    /// ```
    /// # smol::block_on(async {
    /// let waiters = std::sync::Arc::new(ssekit_http::store::Waiters::default());
    /// let changed = waiters.wait("events:news");
    /// waiters.wake_all();
    /// changed.await;
    /// # });
    /// ```
    pub fn wake_all(&self) {
        for (notify, _) in self.lock().values() {
            notify.notify_waiters();
        }
    }

    /// How many logs are waited on now.
    ///
    /// # Example
    /// See [`Waiters`].
    pub fn waiting(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, (Arc<Notify>, usize)>> {
        crate::sync::lock(&self.map)
    }
}

/// A waiter's place in [`Waiters`], given back when its future is dropped.
struct Waiting {
    waiters: Arc<Waiters>,
    name: String,
}

impl Drop for Waiting {
    fn drop(&mut self) {
        let mut map = self.waiters.lock();
        if let Some(entry) = map.get_mut(&self.name) {
            entry.1 = entry.1.saturating_sub(1);
            if entry.1 == 0 {
                map.remove(&self.name);
            }
        }
    }
}
