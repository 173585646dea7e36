//! Locking that survives a panic elsewhere. Every mutex in this crate guards a few fields
//! that each critical section leaves consistent (no user code runs under a lock), so a
//! thread that panicked while holding one (which poisons it) is no reason for the next
//! holder to fail too: [`lock`] takes the guard either way.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Locks `mutex`, poisoned or not.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A waker that counts its wakes, for tests that check who is woken and how often.
#[cfg(test)]
#[derive(Default)]
pub(crate) struct WakeCount(std::sync::atomic::AtomicUsize);

#[cfg(test)]
impl WakeCount {
    /// The wakes so far.
    pub(crate) fn get(&self) -> usize {
        self.0.load(std::sync::atomic::Ordering::SeqCst)
    }
}

#[cfg(test)]
impl std::task::Wake for WakeCount {
    fn wake(self: std::sync::Arc<Self>) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::lock;

    #[test]
    fn a_poisoned_lock_is_taken_with_its_data() {
        let m = Arc::new(Mutex::new(7));
        let poisoner = Arc::clone(&m);
        let _ = std::thread::spawn(move || {
            let _guard = poisoner.lock().unwrap();
            panic!("poison it");
        })
        .join();
        assert!(m.is_poisoned());
        assert_eq!(*lock(&m), 7);
    }
}
