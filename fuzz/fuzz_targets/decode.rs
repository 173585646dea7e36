//! Arbitrary bytes in one feed, under small limits: no panic, every frame well-formed, and
//! the heap never grows past a constant factor of the limits (a counting allocator checks).
#![no_main]
#![allow(unsafe_code)]

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use arbitrary::Unstructured;
use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use ssekit::{Decoder, Frame};

struct Counting;
static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// Sound: forwards every call unchanged to `System` and only updates atomic counters.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let now = CURRENT.fetch_add(layout.size(), Relaxed) + layout.size();
        PEAK.fetch_max(now, Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        CURRENT.fetch_sub(layout.size(), Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fuzz_target!(|input: &[u8]| {
    let mut u = Unstructured::new(input);
    let config = common::config(&mut u);
    let stream = Bytes::copy_from_slice(u.take_rest());
    let limits = config.get_limits();
    let base = CURRENT.load(Relaxed);
    PEAK.store(base, Relaxed);
    let mut decoder = Decoder::with_config(config);
    decoder
        .feed(stream.clone())
        .expect("a drained decoder accepts a piece");
    for _ in 0..=stream.len() + 1 {
        match decoder.next_frame() {
            Ok(None) => break,
            Ok(Some(Frame::Event(ev))) | Ok(Some(Frame::Dataless(ev))) => {
                assert!(!ev.event_type().contains(['\r', '\n']));
                assert!(!ev.id().unwrap_or("").contains(['\r', '\n', '\0']));
                // U+FFFD replacement can triple invalid bytes; the raw data is within the limit.
                assert!(ev.data().len() <= 3 * limits.event_limit());
            }
            Ok(Some(Frame::Comment(c))) => assert!(!c.contains(['\r', '\n'])),
            Ok(Some(_)) => {}
            Err(_) => {}
        }
    }
    let _ = decoder.finish();
    assert!(decoder.bytes_scanned() <= 2 * stream.len() as u64);
    drop(decoder);
    // The input itself is shared, not copied; what the decoder builds is bounded by the limits
    // (line buffer and joined data, each at most doubling, and one lossy copy at dispatch).
    let grown = PEAK.load(Relaxed) - base;
    let bound = 8 * (limits.line_limit() + limits.event_limit()) + 16 * 1024;
    assert!(grown <= bound, "heap grew by {grown} bytes, bound {bound}");
});
