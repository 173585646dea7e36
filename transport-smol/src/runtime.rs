//! [`Smol`]: `ssekit-http`'s [`Runtime`] on smol and async-io. Everything above it (the
//! response body, the queues, the broadcast, the accept loop, the ORS server, the clients'
//! drive loops) is written once there; this is all of ssekit-smol's runtime.

use std::future::Future;
use std::time::Duration;

use async_io::Timer;
use ssekit::Instant;
use ssekit_http::runtime::Runtime;

/// smol as a [`Runtime`]: tasks on an executor of ssekit-smol's with a thread per core
/// (see [`Runtime::spawn`] below) and `async-io` timers. Works from any thread, inside an
/// executor or not; its clock reads from when the value was made.
///
/// # Example
/// ```
/// use ssekit_http::runtime::Runtime;
/// let smol_rt = ssekit_smol::runtime::Smol::default();
/// smol::block_on(smol_rt.sleep(std::time::Duration::from_millis(1)));
/// assert!(smol_rt.now().as_millis() >= 1);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Smol {
    origin: std::time::Instant,
}

impl Default for Smol {
    fn default() -> Self {
        Smol {
            origin: std::time::Instant::now(),
        }
    }
}

/// hyper's executor hook: the HTTP/2 connections of the client spawn their streams as
/// tasks on ssekit-smol's executor.
///
/// # Example
/// ```
/// use hyper::rt::Executor;
/// let (tx, rx) = smol::channel::bounded(1);
/// ssekit_smol::runtime::Smol::default().execute(async move { let _ = tx.send(7).await; });
/// assert_eq!(smol::block_on(rx.recv()), Ok(7));
/// ```
#[cfg(feature = "http")]
impl<F> hyper::rt::Executor<F> for Smol
where
    F: Future<Output = ()> + Send + 'static,
{
    fn execute(&self, future: F) {
        self.spawn(future);
    }
}

impl Runtime for Smol {
    type Sleep = Timer;

    fn now(&self) -> Instant {
        let elapsed = self.origin.elapsed();
        Instant::from_millis(u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX))
    }

    fn sleep_until(&self, at: Instant) -> Timer {
        // A deadline that does not fit is a year away: it never fires.
        let at = self
            .origin
            .checked_add(at.since_origin())
            .unwrap_or_else(|| std::time::Instant::now() + Duration::from_secs(86_400 * 365));
        Timer::at(at)
    }

    /// Runs `future` on ssekit-smol's executor: `SMOL_THREADS` threads when that is set, as
    /// `smol::spawn` would, and otherwise one per core (`available_parallelism`), as tokio's
    /// runtime has by default. smol's own global executor has one thread unless told
    /// otherwise, so a server on it used one core for every connection: beside busy
    /// streams, a ticker's events waited for the one thread, and 1,000 streams fed by
    /// channels moved fewer events than on tokio.
    fn spawn<F>(&self, future: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        match executor() {
            Some(executor) => executor.spawn(future).detach(),
            // No thread could be started (a process at its thread limit): smol's own.
            None => smol::spawn(future).detach(),
        }
    }
}

/// The executor of the tasks [`Smol`] spawns, and its threads, started on first use.
static EXECUTOR: smol::Executor<'static> = smol::Executor::new();

/// The executor, once its threads run; `None` when none could be started.
fn executor() -> Option<&'static smol::Executor<'static>> {
    static THREADS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    let started = *THREADS.get_or_init(|| {
        let wanted = std::env::var("SMOL_THREADS")
            .ok()
            .and_then(|n| n.parse::<usize>().ok())
            .or_else(|| std::thread::available_parallelism().ok().map(|n| n.get()))
            .unwrap_or(1)
            .max(1);
        (1..=wanted)
            .filter(|n| {
                std::thread::Builder::new()
                    .name(format!("ssekit-smol-{n}"))
                    .spawn(|| loop {
                        // A task that panics unwinds out of `run`; the thread runs on.
                        let run = || smol::block_on(EXECUTOR.run(std::future::pending::<()>()));
                        let _ = std::panic::catch_unwind(run);
                    })
                    .is_ok()
            })
            .count()
    });
    (started > 0).then_some(&EXECUTOR)
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Barrier};

    use super::*;

    #[test]
    fn tasks_run_on_a_thread_per_core_unless_smol_threads_says_otherwise() {
        let threads = std::env::var("SMOL_THREADS")
            .ok()
            .and_then(|n| n.parse::<usize>().ok())
            .or_else(|| std::thread::available_parallelism().ok().map(|n| n.get()))
            .unwrap_or(1);
        if threads < 2 {
            return;
        }
        // Two tasks that each wait for the other: they finish only on two threads at once.
        let barrier = Arc::new(Barrier::new(3));
        for _ in 0..2 {
            let barrier = Arc::clone(&barrier);
            Smol::default().spawn(async move {
                barrier.wait();
            });
        }
        barrier.wait();
    }
}
