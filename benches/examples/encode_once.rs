//! Encodes one workload's events with ssekit's `Encoder` or the `copy-per-event` floor of the
//! encode bench, for load-independent instruction counts (callgrind) and profilers:
//!
//! ```text
//! cargo build --release -p ssekit-benches --example encode_once
//! valgrind --tool=callgrind --toggle-collect='encode_once::run' \
//!     target/release/examples/encode_once tokens ssekit 20
//! ```
//!
//! Arguments: workload, implementation (`ssekit` or `copy-per-event`) and optionally a
//! repeat count (default 1). The events are those the encode bench encodes (the workload's
//! stream for 16 KiB reads, decoded), into a `Vec` with room for the wire, cleared before
//! each repeat, as in the bench. Prints bytes, events, repeats and MB/s to stderr.

use std::hint::black_box;

use bytes::Bytes;
use ssekit::{Decoder, Encoder, Event, Frame};
use ssekit_benches::workload;

fn ssekit(events: &[Event], out: &mut Vec<u8>) {
    let encoder = Encoder::new();
    for ev in events {
        encoder.encode(ev, out).expect("encode");
    }
}

/// The encode bench's floor: the single-line wire written event by event, no scan.
fn copy_per_event(events: &[Event], out: &mut Vec<u8>) {
    for ev in events {
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(ev.data().as_bytes());
        out.extend_from_slice(b"\n\n");
    }
}

/// The measured part: `repeats` encodes of `events`. Kept out of line so a profiler can
/// collect it alone.
#[inline(never)]
fn run(
    encode: fn(&[Event], &mut Vec<u8>),
    events: &[Event],
    out: &mut Vec<u8>,
    repeats: usize,
) -> usize {
    (0..repeats)
        .map(|_| {
            out.clear();
            encode(black_box(events), out);
            black_box(out.len())
        })
        .sum()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: encode_once WORKLOAD IMPL [REPEATS]";
    let [load, name, rest @ ..] = args.as_slice() else {
        panic!("{usage}");
    };
    let load = workload::ALL
        .into_iter()
        .find(|w| w.name() == load)
        .unwrap_or_else(|| panic!("unknown workload {load}"));
    let repeats: usize = rest.first().map_or(1, |r| r.parse().expect(usage));
    let encode = match name.as_str() {
        "ssekit" => ssekit as fn(&[Event], &mut Vec<u8>),
        "copy-per-event" => copy_per_event,
        other => panic!("unknown implementation {other}"),
    };
    let (bytes, count) = load.stream_for_feed(16384);
    let wire = Bytes::from(bytes);
    let mut decoder = Decoder::new();
    decoder.feed(wire.clone()).expect("feed");
    let events: Vec<Event> = std::iter::from_fn(|| decoder.next_frame().expect("frame"))
        .filter_map(|frame| match frame {
            Frame::Event(ev) => Some(ev),
            _ => None,
        })
        .collect();
    assert_eq!(events.len(), count);
    let mut out = Vec::with_capacity(wire.len());
    let start = std::time::Instant::now();
    let written = run(encode, &events, &mut out, repeats);
    let elapsed = start.elapsed();
    if name == "ssekit" {
        assert_eq!(out, wire, "ssekit wrote other bytes");
    }
    eprintln!(
        "{} {name}: {} bytes, {count} events, {repeats} repeats, {:.1} MB/s",
        load.name(),
        wire.len(),
        written as f64 / elapsed.as_secs_f64() / 1e6
    );
}
