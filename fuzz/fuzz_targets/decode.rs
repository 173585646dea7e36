//! Arbitrary bytes in one feed, under small limits, drained with `next_frame` or
//! `next_frame_ref`: no panic, every frame well-formed, and the heap never grows past a
//! constant factor of the limits (a counting allocator checks).
#![no_main]
#![allow(unsafe_code)]

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use arbitrary::Unstructured;
use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use ssekit::{Decoder, Frame, FrameRef};

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
    let borrow: bool = u.arbitrary().unwrap_or(false);
    let stream = Bytes::copy_from_slice(u.take_rest());
    let limits = config.get_limits();
    let base = CURRENT.load(Relaxed);
    PEAK.store(base, Relaxed);
    let mut decoder = Decoder::with_config(config);
    decoder
        .feed(stream.clone())
        .expect("a drained decoder accepts a piece");
    // Either call drains it; a borrowed frame is checked like an owned one.
    let check = |event_type: &str, id: Option<&str>, data: &str| {
        assert!(!event_type.contains(['\r', '\n']));
        assert!(!id.unwrap_or("").contains(['\r', '\n', '\0']));
        // U+FFFD replacement can triple invalid bytes; the raw data is within the limit.
        assert!(data.len() <= 3 * limits.event_limit());
    };
    for _ in 0..=stream.len() + 1 {
        if borrow {
            match decoder.next_frame_ref() {
                Ok(None) => break,
                Ok(Some(FrameRef::Event(ev))) | Ok(Some(FrameRef::Dataless(ev))) => {
                    check(ev.event_type(), ev.id(), ev.data())
                }
                Ok(Some(FrameRef::Comment(c))) => assert!(!c.contains(['\r', '\n'])),
                Ok(Some(_)) | Err(_) => {}
            }
        } else {
            match decoder.next_frame() {
                Ok(None) => break,
                Ok(Some(Frame::Event(ev))) | Ok(Some(Frame::Dataless(ev))) => {
                    check(ev.event_type(), ev.id(), ev.data())
                }
                Ok(Some(Frame::Comment(c))) => assert!(!c.contains(['\r', '\n'])),
                Ok(Some(_)) | Err(_) => {}
            }
        }
    }
    let _ = decoder.finish();
    assert!(decoder.bytes_scanned() <= 2 * stream.len() as u64);
    assert!(decoder.bytes_copied() <= 8 * stream.len() as u64 + 64);
    drop(decoder);
    // The input itself is shared, not copied; what the decoder builds is bounded by the limits
    // (line buffer and joined data, each at most doubling, and one lossy copy at dispatch).
    let grown = PEAK.load(Relaxed) - base;
    let bound = 8 * (limits.line_limit() + limits.event_limit()) + 16 * 1024;
    assert!(grown <= bound, "heap grew by {grown} bytes, bound {bound}");
});
