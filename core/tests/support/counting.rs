//! A counting global allocator for tests that measure memory: only allocations made on a
//! thread inside [`measure`] are counted (the test harness's own threads allocate
//! concurrently and must not disturb the figures). Shared by test binaries of several
//! crates (`#[path]`): a binary that includes it installs it as its global allocator.

// A test-only counting allocator needs `unsafe` to implement `GlobalAlloc`. It is sound because
// it only forwards each call unchanged to `System` (same layout, same pointer) and keeps
// counters with atomics; it never reads or writes the memory it hands out.
#![allow(unsafe_code, dead_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering::Relaxed};
use std::sync::{Mutex, MutexGuard};

struct Counting;
thread_local! {
    static COUNTING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}
fn counted() -> bool {
    COUNTING.try_with(|c| c.get()).unwrap_or(false)
}
/// Net bytes allocated on the counting thread since `measure` began (negative when it frees
/// blocks allocated before).
static CURRENT: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);
static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);
/// Bytes allocated on the counting thread, freed or not.
static ALLOCATED: AtomicUsize = AtomicUsize::new(0);
static SERIAL: Mutex<()> = Mutex::new(());

/// Holds the lock that keeps the measuring tests from running at once (they share the
/// counters above); a test that failed while holding it does not fail the others.
pub fn one_at_a_time() -> MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if counted() {
            let size = layout.size() as isize;
            let now = CURRENT.fetch_add(size, Relaxed) + size;
            PEAK.fetch_max(now, Relaxed);
            ALLOCATIONS.fetch_add(1, Relaxed);
            ALLOCATED.fetch_add(layout.size(), Relaxed);
        }
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if counted() {
            CURRENT.fetch_sub(layout.size() as isize, Relaxed);
        }
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// What [`measure`] saw.
#[derive(Clone, Copy, Debug)]
pub struct Measured {
    /// The peak heap growth above the starting point, in bytes.
    pub peak: usize,
    /// Allocations made.
    pub allocations: usize,
    /// Bytes allocated, freed or not.
    pub allocated: usize,
}

/// Runs `f` on this thread, counting what it allocates.
pub fn measure(f: impl FnOnce()) -> Measured {
    CURRENT.store(0, Relaxed);
    PEAK.store(0, Relaxed);
    let allocations = ALLOCATIONS.load(Relaxed);
    let allocated = ALLOCATED.load(Relaxed);
    COUNTING.with(|c| c.set(true));
    f();
    COUNTING.with(|c| c.set(false));
    Measured {
        peak: usize::try_from(PEAK.load(Relaxed)).unwrap_or(0),
        allocations: ALLOCATIONS.load(Relaxed) - allocations,
        allocated: ALLOCATED.load(Relaxed) - allocated,
    }
}
