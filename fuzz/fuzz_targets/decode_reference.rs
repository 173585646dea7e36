//! The decoder agrees with the naive WHATWG reference decoder kept in the core's test code
//! (the same one the proptests use), on every input and split, in both modes.
#![no_main]

mod common;
#[path = "../../core/tests/support/reference.rs"]
mod reference;

use arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use ssekit::decode::Mode;
use ssekit::Config;

fuzz_target!(|input: &[u8]| {
    let mut u = Unstructured::new(input);
    let mode = if u.arbitrary().unwrap_or(false) {
        Mode::Raw
    } else {
        Mode::Browser
    };
    let cuts: Vec<u16> = u.arbitrary().unwrap_or_default();
    let stream = u.take_rest();
    let expected = reference::decode(stream, mode);
    // Default limits (16 MiB) are never hit by fuzz-sized inputs.
    let got = common::run(Config::default().mode(mode), &common::split(stream, &cuts));
    let frames: Vec<ssekit::Frame> = got
        .items
        .into_iter()
        .map(|r| r.expect("within limits"))
        .collect();
    assert_eq!(reference::from_frames(&frames), expected.frames);
    assert_eq!(got.last_event_id, expected.last_event_id);
});
