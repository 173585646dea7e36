//! Memory is bounded by `Limits`, measured with a counting global allocator: hostile input
//! never makes the decoder hold more than its limits (plus small constant overhead), and a
//! single-line event fed as `Bytes` costs no heap allocation at all.
//!
//! Each test runs alone in this binary (`--test-threads` does not matter: a mutex
//! serializes them) so the counters see only its allocations.

// A test-only counting allocator needs `unsafe` to implement `GlobalAlloc`. It is sound because
// it only forwards each call unchanged to `System` (same layout, same pointer) and keeps
// counters with atomics; it never reads or writes the memory it hands out.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering::Relaxed};
use std::sync::Mutex;

use bytes::Bytes;
use ssekit::decode::OnLimit;
use ssekit::{Config, Decoder, Frame, Limits};

struct Counting;
// Only allocations made on a thread that opted in are counted: the test harness's own threads
// allocate concurrently and must not disturb the figures.
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
static SERIAL: Mutex<()> = Mutex::new(());

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if counted() {
            let size = layout.size() as isize;
            let now = CURRENT.fetch_add(size, Relaxed) + size;
            PEAK.fetch_max(now, Relaxed);
            ALLOCATIONS.fetch_add(1, Relaxed);
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

/// Runs `f` and returns the peak heap growth above the starting point, and allocations made.
fn measure(f: impl FnOnce()) -> (usize, usize) {
    CURRENT.store(0, Relaxed);
    PEAK.store(0, Relaxed);
    let before = ALLOCATIONS.load(Relaxed);
    COUNTING.with(|c| c.set(true));
    f();
    COUNTING.with(|c| c.set(false));
    let peak = usize::try_from(PEAK.load(Relaxed)).unwrap_or(0);
    (peak, ALLOCATIONS.load(Relaxed) - before)
}

#[test]
fn an_endless_line_in_small_pieces_never_holds_more_than_the_line_limit() {
    let _serial = SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let limit = 1 << 20;
    let piece = Bytes::from(vec![b'x'; 4096]);
    let (peak, _) = measure(|| {
        let cfg = Config::default()
            .limits(Limits::default().max_line(limit))
            .on_limit(OnLimit::Resync);
        let mut dec = Decoder::with_config(cfg);
        let mut errors = 0;
        for _ in 0..4096 {
            // 16 MiB in total, 16x the limit.
            dec.feed(piece.clone()).unwrap();
            while let Ok(Some(_)) | Err(_) = dec.next_frame().map_err(|_| errors += 1) {
                if errors > 0 {
                    break;
                }
            }
        }
        assert_eq!(errors, 1);
    });
    // The line buffer grows by doubling: at most 2x the limit, plus the queue's small nodes.
    eprintln!("endless line: peak heap growth {peak} bytes for a {limit}-byte line limit");
    // The line is buffered up to the limit before it is refused: the counter must see that.
    assert!(
        peak >= limit / 2,
        "the counting allocator saw only {peak} bytes"
    );
    assert!(
        peak <= 2 * limit + 64 * 1024,
        "peak {peak} for a {limit}-byte limit"
    );
}

#[test]
fn endless_multiline_data_never_holds_more_than_the_event_limit() {
    let _serial = SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let limit = 1 << 20;
    let line = Bytes::from([&b"data: "[..], &[b'y'; 100], b"\n"].concat());
    let (peak, _) = measure(|| {
        let cfg = Config::default()
            .limits(Limits::default().max_event(limit))
            .on_limit(OnLimit::Resync);
        let mut dec = Decoder::with_config(cfg);
        let mut errors = 0;
        for _ in 0..100_000 {
            dec.feed(line.clone()).unwrap();
            loop {
                match dec.next_frame() {
                    Ok(None) => break,
                    Ok(Some(_)) => {}
                    Err(_) => errors += 1,
                }
            }
        }
        assert_eq!(errors, 1, "resync then skips the rest of the event");
    });
    eprintln!("endless data: peak heap growth {peak} bytes for a {limit}-byte event limit");
    assert!(
        peak >= limit / 2,
        "the counting allocator saw only {peak} bytes"
    );
    assert!(
        peak <= 2 * limit + 64 * 1024,
        "peak {peak} for a {limit}-byte limit"
    );
}

#[test]
fn single_line_events_fed_as_bytes_allocate_nothing_per_event() {
    let _serial = SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let block =
        b"event: response.output_text.delta\nid: 12\ndata: {\"delta\":\"token\"}\n\n: ping\n\n";
    let run = |events: usize| {
        let stream = Bytes::from(block.repeat(events));
        let mut seen = 0;
        let (_, allocations) = measure(|| {
            let mut dec = Decoder::new();
            dec.feed(stream.clone()).unwrap();
            while let Some(frame) = dec.next_frame().unwrap() {
                if let Frame::Event(ev) = frame {
                    seen += usize::from(ev.data().starts_with('{'));
                }
            }
        });
        assert_eq!(seen, events);
        allocations
    };
    run(10); // warm-up: one-time process-wide allocations (memchr's CPU feature detection, ...)
    let (small, large) = (run(1_000), run(100_000));
    // A fixed handful (decoder queue, Bytes' one-time promotion to shared storage), none per event.
    eprintln!("allocations: {small} for 1000 events, {large} for 100000 events");
    assert!(small >= 1, "the counting allocator saw nothing");
    assert_eq!(
        small, large,
        "allocations grew with the event count: {small} vs {large}"
    );
    assert!(small <= 8, "{small} allocations");
}
