//! Heap allocations per event for ssekit and every peer, and ssekit's bytes scanned per
//! input byte (`Decoder::bytes_scanned`), on every workload × feed size of issue 8.
//!
//! `cargo bench -p ssekit-benches --bench alloc`
//!
//! Not a criterion bench: it decodes each workload twice per implementation (the first run
//! warms up, the second is counted) with a counting global allocator, prints a table and
//! writes `target/criterion/ssekit-benches/alloc.json` for `scripts/bench-table`.
//! Allocations are counted on this thread only, from the first `feed` to the last frame,
//! with the pieces (slices of one `Bytes`) made beforehand; a `realloc` counts as one.

// A counting allocator needs `unsafe` to implement `GlobalAlloc`. It is sound because it only
// forwards each call unchanged to `System` (same layout, same pointer) and keeps counters in
// a thread-local cell and an atomic; it never reads or writes the memory it hands out.
#![allow(unsafe_code)]

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use bytes::Bytes;
use ssekit_benches::workload::{self, FEEDS};

struct Counting;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
}
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

fn counted() -> bool {
    COUNTING.try_with(Cell::get).unwrap_or(false)
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if counted() {
            ALLOCATIONS.fetch_add(1, Relaxed);
        }
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if counted() {
            ALLOCATIONS.fetch_add(1, Relaxed);
        }
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if counted() {
            ALLOCATIONS.fetch_add(1, Relaxed);
        }
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations made by `f` on this thread, and its result.
fn count<T>(f: impl FnOnce() -> T) -> (u64, T) {
    let before = ALLOCATIONS.load(Relaxed);
    COUNTING.with(|c| c.set(true));
    let out = f();
    COUNTING.with(|c| c.set(false));
    (ALLOCATIONS.load(Relaxed) - before, out)
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` would pass nothing: only measure
    // when asked to bench, so a test run never spends time here.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let mut json = String::new();
    println!(
        "{:<16} {:>6} {:<19} {:>7} {:>10} {:>12} {:>13}",
        "workload", "feed", "implementation", "events", "allocs", "allocs/event", "scanned/input"
    );
    for load in workload::ALL {
        for feed in FEEDS {
            let (bytes, events) = load.stream_for_feed(feed);
            let whole = Bytes::from(bytes);
            let pieces = workload::pieces(&whole, feed);
            for (name, decode) in common::DECODERS {
                if common::is_floor(name) {
                    continue;
                }
                let _ = decode(&pieces);
                let (allocs, got) = count(|| decode(&pieces));
                assert_eq!(got, events, "{name} on {}/{feed}", load.name());
                let scanned = if name == "ssekit" {
                    let (_, (got, scanned)) = count(|| common::ssekit_scanned(&pieces));
                    assert_eq!(got, events);
                    Some(scanned as f64 / whole.len() as f64)
                } else {
                    None
                };
                let per_event = allocs as f64 / events as f64;
                println!(
                    "{:<16} {:>6} {:<19} {:>7} {:>10} {:>12.3} {:>13}",
                    load.name(),
                    feed,
                    name,
                    events,
                    allocs,
                    per_event,
                    scanned.map_or(String::new(), |s| format!("{s:.3}"))
                );
                let sep = if json.is_empty() { "" } else { ",\n" };
                let _ = write!(
                    json,
                    "{sep}  {{\"workload\": \"{}\", \"feed\": {feed}, \"impl\": \"{name}\", \
                     \"events\": {events}, \"bytes\": {}, \"allocations\": {allocs}, \
                     \"scanned\": {}}}",
                    load.name(),
                    whole.len(),
                    scanned.map_or("null".to_owned(), |s| format!("{s:.4}"))
                );
            }
        }
    }
    let dir = ssekit_benches::report_dir();
    std::fs::create_dir_all(&dir).expect("report dir");
    std::fs::write(dir.join("alloc.json"), format!("[\n{json}\n]\n")).expect("write alloc.json");
}
