//! Wake-ups per task for the connections that follow an ORS call: a finished task wakes
//! its own followers, not every follower of every task (which, with a thousand calls
//! running, woke a thousand connections at each finish to find their task still running).

use std::collections::HashMap;
use std::ops::Deref;
use std::sync::{Arc, Mutex, MutexGuard};

/// Each followed task's signal `N` (a transport's notifier: tokio's `Notify`,
/// `event_listener`'s `Event`), kept while a connection follows the task and dropped with
/// the last one, so the map holds no task nobody follows.
///
/// # Example
/// ```
/// use std::sync::{Arc, atomic::{AtomicUsize, Ordering::Relaxed}};
/// use ssekit_http::ors::TaskSignals;
/// let signals: Arc<TaskSignals<AtomicUsize>> = Arc::default();
/// let following = signals.follow("t1");
/// signals.signal("t1", |woken| { woken.fetch_add(1, Relaxed); });
/// signals.signal("t2", |_| unreachable!("nobody follows t2"));
/// assert_eq!(following.load(Relaxed), 1);
/// drop(following);
/// assert_eq!(signals.followed(), 0);
/// ```
#[derive(Debug)]
pub struct TaskSignals<N> {
    tasks: Mutex<HashMap<String, Followed<N>>>,
}

/// A task's signal and how many connections follow the task.
#[derive(Debug)]
struct Followed<N> {
    signal: Arc<N>,
    followers: usize,
}

impl<N> Default for TaskSignals<N> {
    fn default() -> Self {
        TaskSignals {
            tasks: Mutex::new(HashMap::new()),
        }
    }
}

impl<N: Default> TaskSignals<N> {
    /// Follows `task_id`: its signal, shared with the task's other followers, until the
    /// [`Following`] is dropped. Take it before reading the task, and wait on it only if the
    /// task was still running then, so that a finish in between is not missed.
    ///
    /// # Example
    /// See [`TaskSignals`].
    pub fn follow(self: &Arc<Self>, task_id: &str) -> Following<N> {
        let signal = {
            let mut tasks = self.lock();
            let followed = tasks.entry(task_id.to_owned()).or_insert_with(|| Followed {
                signal: Arc::default(),
                followers: 0,
            });
            followed.followers += 1;
            Arc::clone(&followed.signal)
        };
        Following {
            signals: Arc::clone(self),
            task_id: task_id.to_owned(),
            signal,
        }
    }
}

impl<N> TaskSignals<N> {
    /// Calls `wake` with `task_id`'s signal, if any connection follows the task.
    ///
    /// # Example
    /// See [`TaskSignals`].
    pub fn signal(&self, task_id: &str, wake: impl FnOnce(&N)) {
        let signal = self
            .lock()
            .get(task_id)
            .map(|followed| Arc::clone(&followed.signal));
        if let Some(signal) = signal {
            wake(&signal);
        }
    }

    /// How many tasks are followed now.
    ///
    /// # Example
    /// See [`TaskSignals`].
    pub fn followed(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Followed<N>>> {
        crate::sync::lock(&self.tasks)
    }
}

/// One connection's hold on a task's signal (it derefs to it), from
/// [`TaskSignals::follow`]; dropping the last one for a task drops the task's entry.
///
/// # Example
/// See [`TaskSignals`].
#[derive(Debug)]
pub struct Following<N> {
    signals: Arc<TaskSignals<N>>,
    task_id: String,
    signal: Arc<N>,
}

impl<N> Deref for Following<N> {
    type Target = N;

    fn deref(&self) -> &N {
        &self.signal
    }
}

impl<N> Drop for Following<N> {
    fn drop(&mut self) {
        let mut tasks = self.signals.lock();
        if let Some(followed) = tasks.get_mut(&self.task_id) {
            followed.followers = followed.followers.saturating_sub(1);
            if followed.followers == 0 {
                tasks.remove(&self.task_id);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

    #[test]
    fn a_signal_reaches_every_follower_of_its_task_and_no_other() {
        let signals: Arc<TaskSignals<AtomicUsize>> = Arc::default();
        let (a1, a2, b) = (
            signals.follow("a"),
            signals.follow("a"),
            signals.follow("b"),
        );
        assert_eq!(signals.followed(), 2);
        signals.signal("a", |n| {
            n.fetch_add(1, Relaxed);
        });
        assert_eq!(
            (a1.load(Relaxed), a2.load(Relaxed), b.load(Relaxed)),
            (1, 1, 0)
        );
        drop(a1);
        assert_eq!(signals.followed(), 2, "a is still followed");
        drop(a2);
        assert_eq!(signals.followed(), 1);
        drop(b);
        assert_eq!(signals.followed(), 0);
        signals.signal("a", |_| panic!("nobody follows a any more"));
    }

    #[test]
    fn a_task_followed_again_gets_a_fresh_signal() {
        let signals: Arc<TaskSignals<AtomicUsize>> = Arc::default();
        let first = signals.follow("a");
        signals.signal("a", |n| {
            n.fetch_add(1, Relaxed);
        });
        drop(first);
        assert_eq!(signals.follow("a").load(Relaxed), 0);
    }
}
