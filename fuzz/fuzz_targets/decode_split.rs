//! Arbitrary bytes cut at arbitrary points, drained with an arbitrary mix of `next_frame` and
//! `next_frame_ref`, after each piece fully, partly or not at all (so pieces queue behind
//! those not yet read): the frames, errors, end and last event ID are identical to feeding
//! the same bytes at once, and the decoder's work is linear (the shared driver asserts at most
//! 2 bytes scanned and 8 copied per input byte).
#![no_main]

mod common;

use arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    let mut u = Unstructured::new(input);
    let config = common::config(&mut u);
    let cuts: Vec<u16> = u.arbitrary().unwrap_or_default();
    let borrow: Vec<bool> = u.arbitrary().unwrap_or_default();
    let takes: Vec<u8> = u.arbitrary().unwrap_or_default();
    let stream = u.take_rest();
    if std::env::var_os("SSEKIT_FUZZ_DEBUG").is_some() {
        eprintln!(
            "config {config:?}\ntakes {takes:?}\ncuts {:?}\nstream {:?}",
            common::split(stream, &cuts)
                .iter()
                .map(|p| p.len())
                .collect::<Vec<_>>(),
            String::from_utf8_lossy(stream)
        );
    }
    let whole = common::run(config, &[stream]);
    let split = common::run_mixed(config, &common::split(stream, &cuts), &borrow, &takes);
    assert_eq!(whole, split);
    let bytewise: Vec<&[u8]> = stream.chunks(1).collect();
    assert_eq!(whole, common::run_mixed(config, &bytewise, &borrow, &takes));
});
