//! Decodes one workload × feed size with one implementation, for profilers and for
//! load-independent instruction counts (the shared bench machine makes timings noisy):
//!
//! ```text
//! cargo build --release -p ssekit-benches --example decode_once
//! valgrind --tool=callgrind --toggle-collect='decode_once::run' \
//!     target/release/examples/decode_once tokens 1 ssekit
//! perf record -g target/release/examples/decode_once tokens 1 ssekit 200
//! ```
//!
//! Arguments: workload, feed size, implementation (a name from the decode bench: ssekit, a
//! peer, memchr2 or memcpy) and optionally a repeat count (default 1). Prints bytes, events,
//! repeats and MB/s to stderr.

#[path = "../benches/common/mod.rs"]
mod common;

use std::hint::black_box;

use bytes::Bytes;
use ssekit_benches::workload;

/// The measured part: `repeats` decodes of `pieces`. Kept out of line so a profiler can
/// collect it alone.
#[inline(never)]
fn run(decode: fn(&[Bytes]) -> usize, pieces: &[Bytes], repeats: usize) -> usize {
    (0..repeats).map(|_| decode(black_box(pieces))).sum()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: decode_once WORKLOAD FEED IMPL [REPEATS]";
    let [load, feed, name, rest @ ..] = args.as_slice() else {
        panic!("{usage}");
    };
    let load = workload::ALL
        .into_iter()
        .find(|w| w.name() == load)
        .unwrap_or_else(|| panic!("unknown workload {load}"));
    let feed: usize = feed.parse().expect(usage);
    let repeats: usize = rest.first().map_or(1, |r| r.parse().expect(usage));
    let (_, decode) = common::DECODERS
        .into_iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("unknown implementation {name}"));
    let (bytes, events) = load.stream_for_feed(feed);
    let whole = Bytes::from(bytes);
    let pieces = workload::pieces(&whole, feed);
    let start = std::time::Instant::now();
    let got = run(decode, &pieces, repeats);
    let elapsed = start.elapsed();
    if !common::is_floor(name) {
        assert_eq!(got, events * repeats, "{name}: events dispatched");
    }
    eprintln!(
        "{} {feed} {name}: {} bytes, {events} events, {repeats} repeats, {:.1} MB/s",
        load.name(),
        whole.len(),
        (whole.len() * repeats) as f64 / elapsed.as_secs_f64() / 1e6
    );
}
